//! `brook_partitions`: a row per partition of each partitioned stream of the database (with
//! the stream's key, its columns separated by commas), with the node that owns it in the cluster as this node's copy of the log last recorded
//! (`cluster/partitions.rs`), and whether that node is alive in the node directory. On a
//! single server the partitions are listed without owners.

use super::cluster::ClusterLink;
use super::cluster_nodes::alive_nodes;
use crate::catalog::partitioning::Partitioning;
use crate::catalog::Catalog;
use datafusion::arrow::array::{ArrayRef, BooleanArray, Int32Array, RecordBatch, StringArray};
use datafusion::arrow::datatypes::{DataType, Field, Schema};
use datafusion::catalog::{TableFunctionArgs, TableFunctionImpl, TableProvider};
use std::sync::{Arc, OnceLock};

/// The function behind the view `brook_partitions`.
#[derive(Debug)]
pub struct PartitionsFunction {
    /// The engine's catalog (the streams, and the owners the log recorded).
    pub catalog: Arc<Catalog>,
    /// The database whose streams are listed.
    pub database: String,
    /// The engine's link to its cluster (unset on a single server).
    pub cluster: Arc<OnceLock<Arc<ClusterLink>>>,
}

/// One partition's row.
struct Row {
    schema: String,
    stream: String,
    key: String,
    partition: u32,
    owner: Option<String>,
}

impl PartitionsFunction {
    fn rows(&self) -> Vec<Row> {
        let doc = self.catalog.read();
        let Ok(db) = doc.database(&self.database) else {
            return Vec::new();
        };
        let owners = doc.cluster.as_ref().map(|c| &c.partition_owners);
        let mut rows = Vec::new();
        for (schema, s) in &db.schemas {
            for (name, meta) in &s.relations {
                let Ok(Some(p)) = Partitioning::of(meta) else {
                    continue;
                };
                for partition in 0..p.partitions {
                    rows.push(Row {
                        schema: schema.clone(),
                        stream: name.clone(),
                        key: p.key_names(&meta.columns),
                        partition,
                        owner: owners
                            .and_then(|o| o.get(&meta.id))
                            .and_then(|o| o.get(&partition))
                            .cloned(),
                    });
                }
            }
        }
        rows
    }
}

impl TableFunctionImpl for PartitionsFunction {
    fn call_with_args(
        &self,
        _args: TableFunctionArgs<'_, '_>,
    ) -> datafusion::error::Result<Arc<dyn TableProvider>> {
        let schema = Arc::new(Schema::new(vec![
            Field::new("schema_name", DataType::Utf8, false),
            Field::new("stream_name", DataType::Utf8, false),
            Field::new("partition_key", DataType::Utf8, false),
            Field::new("partition", DataType::Int32, false),
            Field::new("owner", DataType::Utf8, true),
            Field::new("owner_alive", DataType::Boolean, true),
            Field::new("this_node", DataType::Boolean, false),
        ]));
        let rows = self.rows();
        let (members, me) = match self.cluster.get() {
            Some(link) => (link.members(), Some(link.node.clone())),
            None => (Vec::new(), None),
        };
        let alive = alive_nodes(&members);
        let owner_alive = |r: &Row| {
            let owner = r.owner.as_deref()?;
            me.as_ref().map(|_| alive.contains(&owner))
        };
        let columns: Vec<ArrayRef> = vec![
            Arc::new(StringArray::from_iter_values(
                rows.iter().map(|r| &r.schema),
            )),
            Arc::new(StringArray::from_iter_values(
                rows.iter().map(|r| &r.stream),
            )),
            Arc::new(StringArray::from_iter_values(rows.iter().map(|r| &r.key))),
            Arc::new(Int32Array::from_iter_values(
                rows.iter()
                    .map(|r| i32::try_from(r.partition).unwrap_or(i32::MAX)),
            )),
            Arc::new(StringArray::from_iter(
                rows.iter().map(|r| r.owner.as_deref()),
            )),
            Arc::new(BooleanArray::from_iter(rows.iter().map(owner_alive))),
            Arc::new(BooleanArray::from_iter(rows.iter().map(|r| {
                Some(r.owner.is_some() && r.owner.as_ref() == me.as_ref())
            }))),
        ];
        let batch = RecordBatch::try_new(schema.clone(), columns)?;
        Ok(Arc::new(datafusion::datasource::MemTable::try_new(
            schema,
            vec![vec![batch]],
        )?))
    }
}
