//! The cluster's node directory: a JetStream key-value bucket (`BROOK_<NAME>_NODES`, one
//! key per node id) where each node writes its record — address, version, start, the log
//! position it applied — every `HEARTBEAT`, and reads the others' for the view
//! `brook_cluster_nodes` (`db/cluster_nodes.rs`). A node that stops writing stays listed,
//! as not alive, until a node of the same id starts again.

use crate::db::cluster::{ClusterLink, Progress};
use crate::db::cluster_nodes::{Member, NodeRecord, HEARTBEAT};
use async_nats::jetstream::kv;
use futures::StreamExt;
use std::sync::Arc;

/// Open (or create) the node directory of cluster `name` with `replicas` copies.
pub async fn open(
    js: &async_nats::jetstream::Context,
    name: &str,
    replicas: usize,
) -> anyhow::Result<kv::Store> {
    use anyhow::Context;
    let bucket = format!("BROOK_{}_NODES", name.to_uppercase());
    match js.get_key_value(&bucket).await {
        Ok(store) => Ok(store),
        Err(_) => js
            .create_key_value(kv::Config {
                bucket: bucket.clone(),
                history: 1,
                num_replicas: replicas,
                storage: async_nats::jetstream::stream::StorageType::File,
                ..Default::default()
            })
            .await
            .with_context(|| format!("cannot create the cluster's node directory {bucket}")),
    }
}

/// Write this node's record and read the directory every `HEARTBEAT`, for as long as the
/// process runs. A failure (NATS away) is logged once and retried at the next beat.
pub fn spawn_heartbeat(store: kv::Store, link: Arc<ClusterLink>, started: i64) {
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(HEARTBEAT);
        let mut applied = 0;
        let mut failing = false;
        loop {
            tick.tick().await;
            if let Progress::At(p) = link.progress() {
                applied = p;
            }
            let record = NodeRecord {
                node: link.node.clone(),
                address: link.address(),
                version: env!("CARGO_PKG_VERSION").to_string(),
                started,
                applied,
            };
            match beat(&store, &record).await {
                Ok(members) => {
                    link.set_members(members);
                    failing = false;
                }
                Err(e) if !failing => {
                    tracing::warn!(error = %e, "could not update the cluster's node directory (retrying)");
                    failing = true;
                }
                Err(_) => {}
            }
        }
    });
}

/// Write `record`, then read every node's.
async fn beat(store: &kv::Store, record: &NodeRecord) -> anyhow::Result<Vec<Member>> {
    store
        .put(&record.node, serde_json::to_vec(record)?.into())
        .await?;
    let keys: Vec<String> = store
        .keys()
        .await?
        .filter_map(|k| async { k.ok() })
        .collect()
        .await;
    let mut members = Vec::with_capacity(keys.len());
    for key in keys {
        let Some(entry) = store.entry(key).await? else {
            continue;
        };
        if entry.operation != kv::Operation::Put {
            continue;
        }
        // A record this version cannot read is left out rather than failing the others.
        let Ok(record) = serde_json::from_slice::<NodeRecord>(&entry.value) else {
            continue;
        };
        let seen = i64::try_from(entry.created.unix_timestamp_nanos() / 1000).unwrap_or(0);
        members.push(Member { record, seen });
    }
    members.sort_by(|a, b| a.record.node.cmp(&b.record.node));
    Ok(members)
}
