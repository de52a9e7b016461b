//! How far a continuous query's results have got: the input versions they cover. A reader
//! waits on it for read-your-writes — a view scan until the view has applied every commit
//! visible when the scan began, a cursor's FETCH until its results cover them.

use crate::storage::TableStore;
use std::sync::{Arc, OnceLock};
use tokio::sync::watch;

/// The inputs of one query and the versions of them its results cover.
#[derive(Debug)]
pub struct Progress {
    /// The query's input stores, in its sources' order (set when it starts).
    inputs: OnceLock<Vec<Arc<TableStore>>>,
    /// The input versions the results cover.
    covered: watch::Sender<Vec<u64>>,
}

impl Default for Progress {
    fn default() -> Self {
        Self {
            inputs: OnceLock::new(),
            covered: watch::channel(Vec::new()).0,
        }
    }
}

impl Progress {
    /// The query runs over `inputs`; false when it was started already.
    pub(crate) fn running_on(&self, inputs: &[Arc<TableStore>]) -> bool {
        let started = self.inputs.set(inputs.to_vec()).is_ok();
        self.wake();
        started
    }

    /// A round ended: the results cover input versions `versions`.
    pub(crate) fn round_ended(&self, versions: &[u64]) {
        self.covered.send_replace(versions.to_vec());
    }

    /// Wake the waiters without progress (to look at something else, as a failure).
    pub(crate) fn wake(&self) {
        self.covered.send_modify(|_| {});
    }

    /// The input versions committed now: the commits a reader asking now should see.
    /// `None` before the query runs.
    pub fn visible(&self) -> Option<Vec<u64>> {
        let inputs = self.inputs.get()?;
        Some(inputs.iter().map(|s| s.version()).collect())
    }

    /// Whether the results cover input versions `target`.
    pub fn covers(&self, target: &[u64]) -> bool {
        covers(&self.covered.borrow(), target)
    }

    /// Resolves once the results cover input versions `target` (never, if the query stops
    /// first: wait with a timeout).
    pub async fn covered(&self, target: &[u64]) {
        let mut rx = self.covered.subscribe();
        loop {
            if covers(&rx.borrow_and_update(), target) {
                return;
            }
            if rx.changed().await.is_err() {
                return std::future::pending().await;
            }
        }
    }

    /// Changes of the covered versions (and wake-ups), for a waiter that also checks other
    /// conditions between them.
    pub(crate) fn subscribe(&self) -> watch::Receiver<Vec<u64>> {
        self.covered.subscribe()
    }
}

/// Whether versions `done` reach `target`, input by input.
pub(crate) fn covers(done: &[u64], target: &[u64]) -> bool {
    done.len() == target.len() && done.iter().zip(target).all(|(d, t)| d >= t)
}
