//! `brook_cluster_nodes`: the nodes of this node's cluster, as they last reported
//! themselves in the cluster's node directory (a JetStream key-value bucket each node
//! writes its record to every [`HEARTBEAT`]; `cluster/nodes.rs`).
//!
//! A node's `last_seen` is the time the NATS server stored its last record, so the nodes'
//! own clocks do not matter; a node is `alive` when its last record is at most
//! [`ALIVE_WITHIN`] older than the newest record in the directory. On a single server the
//! view is empty.

use super::cluster::ClusterLink;
use datafusion::arrow::array::{
    ArrayRef, BooleanArray, Int64Array, RecordBatch, StringArray, TimestampMicrosecondArray,
};
use datafusion::arrow::datatypes::{DataType, Field, Schema, TimeUnit};
use datafusion::catalog::{TableFunctionArgs, TableFunctionImpl, TableProvider};
use serde::{Deserialize, Serialize};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

/// How often a node writes its record (and reads the others').
pub const HEARTBEAT: Duration = Duration::from_secs(2);

/// How much older than the newest record a live node's record may be.
pub const ALIVE_WITHIN: Duration = Duration::from_secs(10);

/// What a node writes about itself.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NodeRecord {
    pub node: String,
    /// Where clients connect to it (`host:port` as it listens).
    pub address: String,
    /// The Brook version it runs.
    pub version: String,
    /// When it started, in microseconds since 1970 (its clock).
    pub started: i64,
    /// The last position of the cluster's log it applied.
    pub applied: u64,
}

/// A node's record as the directory holds it.
#[derive(Debug, Clone, PartialEq)]
pub struct Member {
    pub record: NodeRecord,
    /// When the NATS server stored the record, in microseconds since 1970.
    pub seen: i64,
}

/// The ids of the nodes of `members` that are alive: whose last record is at most
/// [`ALIVE_WITHIN`] older than the newest.
pub fn alive_nodes(members: &[Member]) -> Vec<&str> {
    let newest = members.iter().map(|m| m.seen).max().unwrap_or(0);
    let within = i64::try_from(ALIVE_WITHIN.as_micros()).unwrap_or(i64::MAX);
    members
        .iter()
        .filter(|m| newest - m.seen <= within)
        .map(|m| m.record.node.as_str())
        .collect()
}

/// The function behind the view `brook_cluster_nodes`.
#[derive(Debug)]
pub struct ClusterNodesFunction {
    /// The engine's link to its cluster (unset on a single server).
    pub cluster: Arc<OnceLock<Arc<ClusterLink>>>,
}

impl TableFunctionImpl for ClusterNodesFunction {
    fn call_with_args(
        &self,
        _args: TableFunctionArgs<'_, '_>,
    ) -> datafusion::error::Result<Arc<dyn TableProvider>> {
        let ts = DataType::Timestamp(TimeUnit::Microsecond, Some("+00:00".into()));
        let schema = Arc::new(Schema::new(vec![
            Field::new("node_id", DataType::Utf8, false),
            Field::new("address", DataType::Utf8, false),
            Field::new("version", DataType::Utf8, false),
            Field::new("started", ts.clone(), false),
            Field::new("applied_position", DataType::Int64, false),
            Field::new("last_seen", ts.clone(), false),
            Field::new("alive", DataType::Boolean, false),
            Field::new("this_node", DataType::Boolean, false),
        ]));
        let (members, me) = match self.cluster.get() {
            Some(link) => (link.members(), link.node.clone()),
            None => (Vec::new(), String::new()),
        };
        let alive = alive_nodes(&members);
        let texts = |f: &dyn Fn(&Member) -> &str| -> ArrayRef {
            Arc::new(StringArray::from_iter_values(members.iter().map(f)))
        };
        let times = |f: &dyn Fn(&Member) -> i64| -> ArrayRef {
            Arc::new(
                TimestampMicrosecondArray::from_iter_values(members.iter().map(f))
                    .with_timezone("+00:00"),
            )
        };
        let flags = |f: &dyn Fn(&Member) -> bool| -> ArrayRef {
            Arc::new(BooleanArray::from_iter(members.iter().map(|m| Some(f(m)))))
        };
        let columns = vec![
            texts(&|m| &m.record.node),
            texts(&|m| &m.record.address),
            texts(&|m| &m.record.version),
            times(&|m| m.record.started),
            Arc::new(Int64Array::from_iter_values(
                members
                    .iter()
                    .map(|m| i64::try_from(m.record.applied).unwrap_or(i64::MAX)),
            )) as ArrayRef,
            times(&|m| m.seen),
            flags(&|m| alive.contains(&m.record.node.as_str())),
            flags(&|m| m.record.node == me),
        ];
        let batch = RecordBatch::try_new(schema.clone(), columns)?;
        Ok(Arc::new(datafusion::datasource::MemTable::try_new(
            schema,
            vec![vec![batch]],
        )?))
    }
}
