//! The cluster's node directory: a JetStream key-value bucket (`BROOK_<NAME>_NODES`, one
//! key per node id) where each node writes its record — address, version, start, the log
//! position it applied — every `HEARTBEAT`, and reads the others' for the view
//! `brook_cluster_nodes` (`db/cluster_nodes.rs`). A node that stops writing stays listed,
//! as not alive, until a node of the same id starts again.

use crate::db::cluster::{ClusterLink, Progress};
use crate::db::cluster_nodes::{Member, NodeRecord, ALIVE_WITHIN, HEARTBEAT};
use crate::db::Engine;
use async_nats::jetstream::kv;
use futures::StreamExt;
use std::sync::Arc;

/// Open (or create) the node directory of cluster `name` with `replicas` copies.
pub async fn open(
    js: &async_nats::jetstream::Context,
    name: &str,
    replicas: usize,
) -> anyhow::Result<kv::Store> {
    super::key_value_bucket(
        js,
        &format!("BROOK_{}_NODES", name.to_uppercase()),
        replicas,
    )
    .await
}

/// Refuse to join as `node` while another process runs as it: its record was stored less
/// than `ALIVE_WITHIN` ago (by NATS's clock, read from a probe record stored now) and is
/// stored again within two heartbeats. A node restarted at once after it was killed waits
/// those two heartbeats; one restarted later does not wait.
pub async fn refuse_a_live_namesake(store: &kv::Store, node: &str) -> anyhow::Result<()> {
    let Some(record) = store.entry(node).await? else {
        return Ok(());
    };
    // Node ids have no '.', so the probe's key is no node's.
    let probe = format!("clock.{node}");
    store.put(&probe, bytes::Bytes::new()).await?;
    let now = store
        .entry(probe)
        .await?
        .map(|e| e.created.unix_timestamp_nanos());
    let age = now.map(|now| now - record.created.unix_timestamp_nanos());
    if age.is_some_and(|nanos| nanos > ALIVE_WITHIN.as_nanos() as i128) {
        return Ok(());
    }
    tokio::time::sleep(HEARTBEAT * 2 + std::time::Duration::from_secs(1)).await;
    match store.entry(node).await? {
        Some(again) if again.revision != record.revision => {
            let address = serde_json::from_slice::<NodeRecord>(&again.value)
                .map(|r| r.address)
                .unwrap_or_default();
            anyhow::bail!(
                "another node runs as --node-id {node} (at {address}): each node of a cluster needs its own id"
            )
        }
        _ => Ok(()),
    }
}

/// Write this node's record and read the directory every `HEARTBEAT`, for as long as the
/// process runs, then send the partition ownership changes the directory calls for
/// (`partitions.rs`). A failure (NATS away) is logged once and retried at the next beat.
pub fn spawn_heartbeat(
    store: kv::Store,
    link: Arc<ClusterLink>,
    engine: Arc<Engine>,
    started: i64,
) {
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
                    super::partitions::rebalance(&engine, &link).await;
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
    for key in keys.into_iter().filter(|k| !k.contains('.')) {
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
