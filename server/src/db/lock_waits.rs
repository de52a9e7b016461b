//! Who waits for whom among transaction blocks. A block keeps the write lock of every
//! relation it wrote until it ends, so two blocks that write the same relations in opposite
//! orders wait for each other forever. A block that has waited `deadlock_timeout` looks for
//! itself at the end of the chain of holders and waiters, and ends with 40P01 if it is
//! there (as PostgreSQL's deadlock detector). Only blocks are in the graph: a single
//! statement takes one relation's lock, so it never holds one while waiting for another.

use std::collections::HashMap;
use std::sync::Mutex;

/// The locks transaction blocks hold and the ones they wait for, by backend pid.
#[derive(Debug, Default)]
pub struct LockWaits {
    inner: Mutex<Graph>,
}

#[derive(Debug, Default)]
struct Graph {
    /// Relation id → the pid of the block holding its write lock.
    holders: HashMap<u64, i32>,
    /// Pid → the relation whose lock it waits for.
    waiting: HashMap<i32, u64>,
}

impl LockWaits {
    fn graph(&self) -> std::sync::MutexGuard<'_, Graph> {
        match self.inner.lock() {
            Ok(g) => g,
            Err(p) => p.into_inner(),
        }
    }

    /// `pid` starts waiting for `relation`'s lock.
    pub fn wait(&self, pid: i32, relation: u64) {
        self.graph().waiting.insert(pid, relation);
    }

    /// `pid` stopped waiting (it got the lock, or gave up).
    pub fn stop_waiting(&self, pid: i32) {
        self.graph().waiting.remove(&pid);
    }

    /// `pid`'s block holds `relation`'s lock until it ends.
    pub fn hold(&self, pid: i32, relation: u64) {
        let mut g = self.graph();
        g.waiting.remove(&pid);
        g.holders.insert(relation, pid);
    }

    /// `pid`'s block ended: it holds nothing and waits for nothing.
    pub fn release_all(&self, pid: i32) {
        let mut g = self.graph();
        g.holders.retain(|_, holder| *holder != pid);
        g.waiting.remove(&pid);
    }

    /// `pid`'s block let go of `relation` (ROLLBACK TO SAVEPOINT before its first write).
    pub fn release(&self, pid: i32, relation: u64) {
        let mut g = self.graph();
        if g.holders.get(&relation) == Some(&pid) {
            g.holders.remove(&relation);
        }
    }

    /// Whether the chain from `pid` (the lock it waits for, that lock's holder, what that
    /// holder waits for, ...) comes back to `pid`.
    pub fn deadlocked(&self, pid: i32) -> bool {
        let g = self.graph();
        let mut at = pid;
        // Each step visits another block; more steps than blocks means a cycle without pid.
        for _ in 0..=g.waiting.len() {
            let Some(holder) = g.waiting.get(&at).and_then(|r| g.holders.get(r)) else {
                return false;
            };
            if *holder == pid {
                return true;
            }
            at = *holder;
        }
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cycle_of_two_blocks_is_a_deadlock_a_chain_is_not() {
        let w = LockWaits::default();
        w.hold(1, 10);
        w.hold(2, 20);
        w.wait(1, 20);
        assert!(!w.deadlocked(1), "1 waits for 2, which waits for nothing");
        w.wait(2, 10);
        assert!(w.deadlocked(1));
        assert!(w.deadlocked(2));
        w.release_all(2);
        assert!(!w.deadlocked(1));
    }

    #[test]
    fn a_cycle_elsewhere_does_not_involve_a_waiter_outside_it() {
        let w = LockWaits::default();
        w.hold(1, 10);
        w.hold(2, 20);
        w.wait(1, 20);
        w.wait(2, 10);
        w.wait(3, 10);
        assert!(!w.deadlocked(3));
    }
}
