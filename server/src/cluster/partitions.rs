//! Partition ownership: which node owns each partition of each partitioned stream.
//!
//! Ownership is decided in the cluster's log, like the catalog: an ownership entry
//! (`brook.<name>.own`) moves partitions from the owner it names to another node, and the
//! applier applies it only if the partition still has that owner (`apply.rs`), so every
//! node knows the same owners at every position of the log, and two nodes that claim a
//! partition at once are ordered by the log (the second claim names an owner that is no
//! longer the owner, and changes nothing).
//!
//! Which node should own a partition is decided by rendezvous hashing over the live nodes
//! of the node directory: the node with the highest score for (stream, partition) among
//! them. At each heartbeat every node publishes the changes it is responsible for: it
//! claims the partitions it should own that have no owner or a dead one, and hands the
//! partitions it owns but should not (a node came back or joined) to the node that should.
//! A node killed therefore loses its partitions to the survivors once the directory sees
//! it dead (`ALIVE_WITHIN` after its last heartbeat), and gets them back when it returns.

use crate::catalog::partitioning::Partitioning;
use crate::catalog::CatalogDoc;
use crate::db::cluster::{ClusterLink, OwnChange, OwnEntry};
use crate::db::cluster_nodes::alive_nodes;
use crate::db::Engine;
use std::collections::{BTreeMap, BTreeSet};
use std::hash::Hasher;

/// The node of `nodes` that should own partition `partition` of stream `stream`: the one
/// whose rendezvous score is highest (ties, which FNV-1a makes rare, go to the larger id).
pub fn preferred_owner<'a>(nodes: &[&'a str], stream: u64, partition: u32) -> Option<&'a str> {
    nodes
        .iter()
        .map(|node| (score(node, stream, partition), *node))
        .max()
        .map(|(_, node)| node)
}

/// A node's rendezvous score for a partition: 64-bit FNV-1a over the node id, a zero
/// byte, the stream's id and the partition (little-endian).
fn score(node: &str, stream: u64, partition: u32) -> u64 {
    let mut h = fnv::FnvHasher::default();
    h.write(node.as_bytes());
    h.write(&[0]);
    h.write(&stream.to_le_bytes());
    h.write(&partition.to_le_bytes());
    h.finish()
}

/// The ownership changes node `me` should publish, seeing catalog `doc` and live nodes
/// `alive`: claims of the partitions it should own that have no owner or a dead one, and
/// hand-overs of those it owns that another live node should own.
pub fn changes(doc: &CatalogDoc, alive: &[&str], me: &str) -> Vec<OwnChange> {
    let mut out = Vec::new();
    if !alive.contains(&me) {
        // Not seen alive (yet): others may be taking this node's partitions.
        return out;
    }
    let owners = doc.cluster.as_ref().map(|c| &c.partition_owners);
    for db in doc.databases.values() {
        for schema in db.schemas.values() {
            for meta in schema.relations.values() {
                let Ok(Some(partitioning)) = Partitioning::of(meta) else {
                    continue;
                };
                for partition in 0..partitioning.partitions {
                    let current = owners
                        .and_then(|o| o.get(&meta.id))
                        .and_then(|o| o.get(&partition));
                    let Some(preferred) = preferred_owner(alive, meta.id, partition) else {
                        continue;
                    };
                    let responsible = match current {
                        None => preferred == me,
                        Some(owner) if owner == me => preferred != me,
                        Some(owner) => preferred == me && !alive.contains(&owner.as_str()),
                    };
                    if responsible {
                        out.push(OwnChange {
                            stream: meta.id,
                            partition,
                            from: current.cloned(),
                            to: preferred.to_string(),
                        });
                    }
                }
            }
        }
    }
    out
}

/// Publish the ownership changes this node is responsible for now (see [`changes`]), as
/// one entry of the log. A failure (NATS away) is left to the next heartbeat.
pub async fn rebalance(engine: &Engine, link: &ClusterLink) {
    let members = link.members();
    let alive = alive_nodes(&members);
    let changes = {
        let doc = engine.catalog.read();
        changes(&doc, &alive, &link.node)
    };
    if changes.is_empty() {
        return;
    }
    if let Err(e) = link.own(&OwnEntry { changes }).await {
        tracing::warn!(error = %e, "could not send partition ownership changes to the cluster's log (retrying at the next heartbeat)");
    }
}

/// Apply ownership entry `entry` to catalog `doc`: each change whose partition still has
/// the owner it names (and whose stream still has that partition) takes effect.
pub fn apply(doc: &mut CatalogDoc, entry: &OwnEntry) {
    let valid: Vec<bool> = entry
        .changes
        .iter()
        .map(|c| {
            doc.relation_by_id(c.stream)
                .and_then(|meta| Partitioning::of(meta).ok().flatten())
                .is_some_and(|p| c.partition < p.partitions)
        })
        .collect();
    let live: std::collections::BTreeSet<u64> = doc
        .databases
        .values()
        .flat_map(|d| d.schemas.values())
        .flat_map(|s| s.relations.values().map(|r| r.id))
        .collect();
    let Some(cluster) = doc.cluster.as_mut() else {
        return;
    };
    for (change, valid) in entry.changes.iter().zip(valid) {
        if !valid {
            continue;
        }
        let owners = cluster.partition_owners.entry(change.stream).or_default();
        if owners.get(&change.partition) == change.from.as_ref() {
            owners.insert(change.partition, change.to.clone());
        }
    }
    // A dropped stream's partitions have no owners.
    cluster.partition_owners.retain(|id, _| live.contains(id));
}

/// The partitions node `node` owns, by stream.
pub fn owned_by(doc: &CatalogDoc, node: &str) -> BTreeMap<u64, BTreeSet<u32>> {
    let Some(cluster) = doc.cluster.as_ref() else {
        return BTreeMap::new();
    };
    cluster
        .partition_owners
        .iter()
        .map(|(stream, owners)| {
            let mine = owners
                .iter()
                .filter(|(_, owner)| owner.as_str() == node)
                .map(|(p, _)| *p)
                .collect();
            (*stream, mine)
        })
        .collect()
}

/// The streams whose partitions owned differ between `before` and `after`.
pub fn changed(
    before: &BTreeMap<u64, BTreeSet<u32>>,
    after: &BTreeMap<u64, BTreeSet<u32>>,
) -> Vec<u64> {
    let empty = BTreeSet::new();
    let streams: BTreeSet<u64> = before.keys().chain(after.keys()).copied().collect();
    streams
        .into_iter()
        .filter(|s| before.get(s).unwrap_or(&empty) != after.get(s).unwrap_or(&empty))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_preferred_owner_depends_only_on_the_live_nodes() {
        let three = ["n1", "n2", "n3"];
        let owners: Vec<&str> = (0..12)
            .map(|p| preferred_owner(&three, 7, p).unwrap())
            .collect();
        // Independent of the order the nodes are listed in.
        let shuffled = ["n3", "n1", "n2"];
        for (p, owner) in owners.iter().enumerate() {
            assert_eq!(preferred_owner(&shuffled, 7, p as u32), Some(*owner));
        }
        // Every node gets some of twelve partitions.
        for node in three {
            assert!(owners.contains(&node), "{node} owns none of {owners:?}");
        }
        // A node's death moves only its own partitions.
        let two = ["n1", "n2"];
        for (p, owner) in owners.iter().enumerate() {
            let after = preferred_owner(&two, 7, p as u32).unwrap();
            if *owner != "n3" {
                assert_eq!(after, *owner);
            }
        }
        assert_eq!(preferred_owner(&[], 7, 0), None);
    }
}
