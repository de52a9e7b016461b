//! Sequences of a cluster: one counter per sequence that every node takes values from.
//!
//! On a single server a sequence's counter is in its catalog (`sequence.rs`). On a cluster
//! node the catalog is one node's copy, so the counter lives in a store all nodes share
//! ([`SharedSequences`]: a JetStream key-value bucket, `cluster/sequences.rs`) and is
//! advanced by compare-and-set: a node reads the state and its revision, computes the state
//! after the values it needs, and stores it only if the revision is still the one it read
//! (else it reads again). Two nodes therefore never hand out the same value.
//!
//! The definition (increment, bounds, CYCLE) comes from the catalog, which the cluster's
//! log keeps alike on every node. `ALTER SEQUENCE ... RESTART` runs on each node when the
//! log applies it, so it does not write the shared state (every node would, at another
//! time): it sets the state in the catalog and raises the definition's `epoch`, and a
//! shared state of an older epoch counts as absent — the next node to take a value starts
//! from the catalog's state. A node takes `CACHE` values at a time (a statement's rows at
//! least), as a PostgreSQL backend does: with `CACHE 1`, the default, values are handed
//! out in the order nodes take them.

use super::sequence::{find, SequenceMeta, SequenceState};
use super::Catalog;
use brook_common::{brook_err, Result};
use serde::{Deserialize, Serialize};

/// A sequence's state in the shared store.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct SharedState {
    /// The definition's epoch this state belongs to (see the module's comment).
    pub epoch: u64,
    pub last_value: i64,
    pub is_called: bool,
}

/// Where a cluster keeps its sequences' states. Calls block until the store answers.
pub trait SharedSequences: Send + Sync + std::fmt::Debug {
    /// Sequence `id`'s state (None when none is stored) and its revision (0 when the key
    /// was never written).
    fn get(&self, id: u64) -> Result<(Option<SharedState>, u64)>;
    /// Store `state` as sequence `id`'s if its revision is still `revision` (0: none is
    /// stored). False when another node stored one first.
    fn put_if(&self, id: u64, state: SharedState, revision: u64) -> Result<bool>;
}

/// How often a node retries a compare-and-set that another node won before giving up.
const MAX_ATTEMPTS: usize = 1_000;

/// Most values a node takes at a time beyond what a statement needs, whatever `CACHE`
/// says: a block is counted out value by value (as PostgreSQL's is), and a larger one
/// would only make a larger gap when the node stops.
const MAX_BLOCK: u64 = 65_536;

/// The state sequence `meta` continues from: the shared one, unless it is of an older
/// epoch than the definition (a RESTART since) or there is none.
fn current(meta: &SequenceMeta, stored: Option<SharedState>) -> SharedState {
    match stored {
        Some(s) if s.epoch >= meta.epoch => s,
        _ => SharedState {
            epoch: meta.epoch,
            last_value: meta.last_value,
            is_called: meta.is_called,
        },
    }
}

/// Read-modify-write of sequence `meta`'s shared state: `change` maps the current state to
/// the next one (or fails, and nothing is stored); returns (current, next) as stored.
fn compare_and_set(
    shared: &dyn SharedSequences,
    meta: &SequenceMeta,
    mut change: impl FnMut(SharedState) -> Result<SharedState>,
) -> Result<(SharedState, SharedState)> {
    for _ in 0..MAX_ATTEMPTS {
        let (stored, revision) = shared.get(meta.id)?;
        let now = current(meta, stored);
        let next = change(now)?;
        if shared.put_if(meta.id, next, revision)? {
            return Ok((now, next));
        }
    }
    Err(brook_err!(
        SerializationFailure,
        "could not take values of a sequence: {MAX_ATTEMPTS} other nodes' updates came first"
    ))
}

impl Catalog {
    /// Make this catalog's sequences take their values from `shared` (a cluster node).
    pub fn share_sequences(&self, shared: std::sync::Arc<dyn SharedSequences>) -> Result<()> {
        self.shared_sequences
            .set(shared)
            .map_err(|_| brook_err!(Internal, "the catalog's sequences are already shared"))
    }

    pub(super) fn shared_sequences(&self) -> Option<&dyn SharedSequences> {
        self.shared_sequences.get().map(|s| s.as_ref())
    }

    /// `nextval` for `n` rows on a cluster node: from this node's block when it holds `n`
    /// values, else a block of `max(n, CACHE)` values (at most [`MAX_BLOCK`] more than `n`)
    /// taken from the shared state. The counters' lock is held only while a block is read
    /// or stored, never across a request to the shared store: the log's applier takes it
    /// too (ALTER SEQUENCE), and other sequences' calls.
    pub(super) fn nextval_shared(
        &self,
        shared: &dyn SharedSequences,
        meta: &SequenceMeta,
        name: &str,
        n: usize,
    ) -> Result<Vec<i64>> {
        if let Some(c) = self
            .counters
            .lock()
            .get_mut(&meta.id)
            .filter(|c| c.reserved >= n as u64)
        {
            return c.hand_out(meta, name, n);
        }
        let block = (n as u64).max((meta.cache.max(1) as u64).min(MAX_BLOCK));
        let mut taken = 0u64;
        let (from, _) = compare_and_set(shared, meta, |s| {
            let (mut last, mut called) = (s.last_value, s.is_called);
            taken = 0;
            while taken < block {
                match meta.next_after(last, called) {
                    Some(v) => (last, called, taken) = (v, true, taken + 1),
                    None => break,
                }
            }
            if taken < n as u64 {
                return Err(meta.exhausted(name));
            }
            Ok(SharedState {
                epoch: s.epoch,
                last_value: last,
                is_called: called,
            })
        })?;
        let mut c = super::sequence::Counter {
            last_value: from.last_value,
            is_called: from.is_called,
            reserved: taken,
        };
        let out = c.hand_out(meta, name, n)?;
        if c.reserved > 0 {
            // The rest of the block is this node's to hand out next. A block another
            // statement stored meanwhile is replaced: its values are skipped, as a
            // PostgreSQL backend's cached values are when it ends.
            self.counters.lock().insert(meta.id, c);
        }
        Ok(out)
    }

    /// `setval` on a cluster node: the shared state becomes (`value`, `is_called`). Values
    /// other nodes took before it in their blocks are still handed out there (as other
    /// backends' cached values are in PostgreSQL).
    pub(super) fn setval_shared(
        &self,
        shared: &dyn SharedSequences,
        meta: &SequenceMeta,
        value: i64,
        is_called: bool,
    ) -> Result<()> {
        compare_and_set(shared, meta, |s| {
            Ok(SharedState {
                epoch: s.epoch,
                last_value: value,
                is_called,
            })
        })?;
        self.counters.lock().remove(&meta.id);
        Ok(())
    }

    /// A sequence's state on a cluster node: the shared one.
    pub(super) fn sequence_state_shared(
        &self,
        shared: &dyn SharedSequences,
        db: &str,
        schema: &str,
        name: &str,
    ) -> Result<SequenceState> {
        let meta = find(&self.read(), db, schema, name)?.clone();
        let now = current(&meta, shared.get(meta.id)?.0);
        Ok(SequenceState {
            last_value: now.last_value,
            log_cnt: 0,
            is_called: now.is_called,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::sequence::SequenceOptions;
    use crate::pg::types::PgType;
    use std::collections::HashMap;
    use std::sync::{Arc, Mutex};

    /// The shared store as a map (revision = a counter of writes).
    #[derive(Debug, Default)]
    struct MemoryStore {
        states: Mutex<HashMap<u64, (SharedState, u64)>>,
        /// Compare-and-sets to lose on purpose (another node's write came first).
        lose: Mutex<usize>,
    }

    impl SharedSequences for MemoryStore {
        fn get(&self, id: u64) -> Result<(Option<SharedState>, u64)> {
            Ok(match self.states.lock().unwrap().get(&id) {
                Some((s, r)) => (Some(*s), *r),
                None => (None, 0),
            })
        }
        fn put_if(&self, id: u64, state: SharedState, revision: u64) -> Result<bool> {
            let mut lose = self.lose.lock().unwrap();
            let mut states = self.states.lock().unwrap();
            let stored = states.get(&id).map_or(0, |(_, r)| *r);
            if *lose > 0 {
                *lose -= 1;
                // another node advanced it by one value meanwhile
                let mut other = current_for_test(states.get(&id).map(|(s, _)| *s));
                other.last_value += 1;
                other.is_called = true;
                states.insert(id, (other, stored + 1));
                return Ok(false);
            }
            if stored != revision {
                return Ok(false);
            }
            states.insert(id, (state, stored + 1));
            Ok(true)
        }
    }

    fn current_for_test(s: Option<SharedState>) -> SharedState {
        s.unwrap_or(SharedState {
            epoch: 0,
            last_value: 1,
            is_called: false,
        })
    }

    /// Two catalogs (two nodes) with sequence `s` (START 1, CACHE `cache`) sharing a store.
    fn two_nodes(cache: i64) -> (Vec<tempfile::TempDir>, Vec<Catalog>, Arc<MemoryStore>) {
        let store = Arc::new(MemoryStore::default());
        let mut dirs = Vec::new();
        let mut nodes = Vec::new();
        for _ in 0..2 {
            let (dir, cat) = crate::catalog::sequence::tests::with_sequence(
                SequenceOptions {
                    cache: Some(cache),
                    ..Default::default()
                },
                PgType::Int8,
            );
            cat.share_sequences(store.clone()).unwrap();
            dirs.push(dir);
            nodes.push(cat);
        }
        (dirs, nodes, store)
    }

    #[test]
    fn nodes_never_hand_out_the_same_value() {
        let (_d, nodes, store) = two_nodes(1);
        let a = nodes[0].nextval("brook", "public", "s", 3).unwrap();
        let b = nodes[1].nextval("brook", "public", "s", 2).unwrap();
        *store.lose.lock().unwrap() = 2;
        let c = nodes[0].nextval("brook", "public", "s", 1).unwrap();
        assert_eq!(a, [1, 2, 3]);
        assert_eq!(b, [4, 5]);
        // two values went to "another node" while node 0 retried
        assert_eq!(c, [8]);
        let state = nodes[1].sequence_state("brook", "public", "s").unwrap();
        assert_eq!((state.last_value, state.is_called), (8, true));
    }

    #[test]
    fn a_cache_is_a_block_per_node() {
        let (_d, nodes, _store) = two_nodes(10);
        assert_eq!(nodes[0].nextval("brook", "public", "s", 1).unwrap(), [1]);
        assert_eq!(nodes[1].nextval("brook", "public", "s", 1).unwrap(), [11]);
        assert_eq!(nodes[0].nextval("brook", "public", "s", 2).unwrap(), [2, 3]);
    }

    #[test]
    fn a_huge_cache_takes_a_bounded_block() {
        let (_d, nodes, store) = two_nodes(i64::MAX);
        assert_eq!(nodes[0].nextval("brook", "public", "s", 1).unwrap(), [1]);
        let (stored, _) = store
            .get(nodes[0].read().database("brook").unwrap().schemas["public"].sequences["s"].id)
            .unwrap();
        assert_eq!(stored.unwrap().last_value, MAX_BLOCK as i64);
        assert_eq!(
            nodes[1].nextval("brook", "public", "s", 1).unwrap(),
            [MAX_BLOCK as i64 + 1]
        );
    }

    #[test]
    fn restart_starts_again_from_the_catalog_on_every_node() {
        let (_d, nodes, _store) = two_nodes(1);
        nodes[0].nextval("brook", "public", "s", 5).unwrap();
        // the log applies ALTER SEQUENCE s RESTART 100 on each node
        for n in &nodes {
            n.alter_sequence("brook", "public", "s", |old| {
                let mut next = old.clone();
                next.last_value = 100;
                next.is_called = false;
                next.epoch += 1;
                Ok(next)
            })
            .unwrap();
        }
        assert_eq!(nodes[1].nextval("brook", "public", "s", 1).unwrap(), [100]);
        assert_eq!(nodes[0].nextval("brook", "public", "s", 1).unwrap(), [101]);
    }

    #[test]
    fn setval_is_seen_by_the_other_node() {
        let (_d, nodes, _store) = two_nodes(1);
        nodes[0].setval("brook", "public", "s", 41, true).unwrap();
        assert_eq!(nodes[1].nextval("brook", "public", "s", 1).unwrap(), [42]);
    }

    #[test]
    fn an_exhausted_sequence_stores_nothing() {
        let (_d, nodes, store) = two_nodes(1);
        nodes[0]
            .alter_sequence("brook", "public", "s", |old| {
                let mut next = old.clone();
                next.max = 2;
                Ok(next)
            })
            .unwrap();
        let err = nodes[0].nextval("brook", "public", "s", 3).unwrap_err();
        assert_eq!(err.sqlstate(), "2200H");
        assert!(store.states.lock().unwrap().is_empty());
    }
}
