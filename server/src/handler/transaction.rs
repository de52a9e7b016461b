//! Transaction blocks: BEGIN opens one; each relation a statement of the block writes keeps
//! one storage transaction open (under the relation's write lock) until COMMIT commits them
//! all or ROLLBACK cuts them from the logs. The block's statements read what it wrote
//! (`TxnOverlay`); other sessions see it only after COMMIT. SAVEPOINT and ROLLBACK TO
//! rewind. DDL is not transactional: it commits at once (see docs/limits.md). And
//! `LOCK TABLE` in the modes that only keep a table from being dropped or altered.

use crate::catalog::table::TxnOverlay;
use crate::catalog::RelationMeta;
use crate::session::transaction::{Held, Savepoint, TxnBlock};
use crate::session::{Outcome, Session};
use crate::storage::{Snapshot, TableStore, WriteTxn};
use brook_common::{brook_err, BrookError, Result};
use datafusion::sql::sqlparser::ast::{Ident, Lock, LockTableMode};
use std::sync::{Arc, Mutex, MutexGuard};

/// How long a block waits for a relation's lock before it looks for a deadlock
/// (PostgreSQL's `deadlock_timeout` default).
const DEADLOCK_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(1);

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    match m.lock() {
        Ok(g) => g,
        Err(p) => p.into_inner(),
    }
}

fn transaction_error(code: &'static str, message: String) -> BrookError {
    BrookError::Transaction { message, code }
}

impl Session {
    /// Whether a transaction block is open (its writes wait for COMMIT). A cluster node's
    /// statements are ordered by the cluster's log one by one, so there a block gives
    /// statement-level atomicity only (see docs/cluster.md).
    pub(crate) fn in_block(&self) -> bool {
        self.applying.is_none()
            && self.engine.cluster.get().is_none()
            && lock(&self.block).is_some()
    }

    /// BEGIN / START TRANSACTION.
    pub(crate) fn begin_block(&mut self) -> Outcome {
        let mut block = lock(&self.block);
        if block.is_some() {
            self.notices
                .push("there is already a transaction in progress".into());
        } else {
            *block = Some(TxnBlock::default());
        }
        Outcome::TxnStart("BEGIN".into())
    }

    /// A statement of the block (if one is open) wrote `name` and committed its rows itself.
    pub(crate) fn block_committed_early(&self, name: &str) {
        if self.applying.is_some() {
            return;
        }
        if let Some(b) = lock(&self.block).as_mut() {
            b.committed_early.insert(name.to_string());
        }
    }

    /// A statement failed: an open block only rolls back from here (ROLLBACK TO SAVEPOINT
    /// excepted). The failed statement's own rows were undone as its transaction dropped.
    ///
    /// Without savepoints there is nothing left to go back to, so the block's writes are
    /// undone and its locks let go now, as PostgreSQL aborts a failed transaction at once
    /// (a deadlock's victim frees the other side without waiting for its ROLLBACK).
    pub(crate) fn block_failed(&self) {
        let mut guard = lock(&self.block);
        let Some(block) = guard.as_mut() else {
            return;
        };
        block.failed = true;
        if block.savepoints.is_empty() && !block.writes.is_empty() {
            block.writes.clear();
            drop(guard);
            self.engine.lock_waits.release_all(self.pid);
            self.set_overlay(TxnOverlay::default());
        }
    }

    /// Whether a statement failed in the open block (only its end may run: 25P02).
    pub(crate) fn block_is_failed(&self) -> bool {
        lock(&self.block).as_ref().is_some_and(|b| b.failed)
    }

    /// COMMIT (`commit`) or ROLLBACK: end the block, and close the cursors not declared
    /// WITH HOLD. A COMMIT of a failed block rolls back (and says so in its tag).
    pub(crate) fn end_transaction(&mut self, commit: bool) -> Result<Outcome> {
        self.cursors.retain(|_, c| c.hold);
        let block = lock(&self.block).take();
        let Some(block) = block else {
            self.notices
                .push("there is no transaction in progress".into());
            return Ok(Outcome::TxnEnd(
                if commit { "COMMIT" } else { "ROLLBACK" }.into(),
            ));
        };
        let done = if commit && !block.failed {
            self.commit_block(block).map(|()| "COMMIT")
        } else {
            if !block.committed_early.is_empty() {
                let names: Vec<&str> = block.committed_early.iter().map(String::as_str).collect();
                self.notices.push(format!(
                    "the rows this transaction wrote to {} stay: they committed with their statements (a stream's rows always do, and in cluster mode every write does); ROLLBACK undid the other writes",
                    names.join(", ")
                ));
            }
            drop(block);
            Ok("ROLLBACK")
        };
        self.engine.lock_waits.release_all(self.pid);
        self.set_overlay(TxnOverlay::default());
        done.map(|tag| Outcome::TxnEnd(tag.into()))
    }

    /// Commit every relation the block wrote. All definitions are checked first (a relation
    /// dropped or altered meanwhile fails the COMMIT with 40001 and nothing commits); then
    /// each relation's transaction commits in turn.
    fn commit_block(&self, block: TxnBlock) -> Result<()> {
        let mut txns: Vec<(WriteTxn, Held)> = Vec::new();
        for (_, held) in block.writes {
            let txn = lock(&held.slot).take().ok_or_else(|| {
                brook_err!(
                    Internal,
                    "relation {}'s transaction is still in use",
                    held.name
                )
            })?;
            txns.push((txn, held));
        }
        for (_, held) in &txns {
            self.engine.check_definition(&held.meta)?;
        }
        for (txn, _) in txns {
            txn.commit()?;
        }
        Ok(())
    }

    /// SAVEPOINT `name` (25P01 outside a block, as PostgreSQL).
    pub(crate) fn savepoint(&mut self, name: &Ident) -> Result<Outcome> {
        let mut guard = lock(&self.block);
        let Some(block) = guard.as_mut() else {
            return Err(transaction_error(
                "25P01",
                "SAVEPOINT can only be used in transaction blocks".into(),
            ));
        };
        let mut marks = Vec::with_capacity(block.writes.len());
        for (id, held) in &block.writes {
            let mut slot = lock(&held.slot);
            let txn = slot.as_mut().ok_or_else(|| {
                brook_err!(
                    Internal,
                    "relation {}'s transaction is still in use",
                    held.name
                )
            })?;
            marks.push((*id, txn.mark()?));
        }
        block.savepoints.push(Savepoint {
            name: name.value.clone(),
            marks,
        });
        Ok(Outcome::Command("SAVEPOINT".into()))
    }

    /// The newest savepoint called `name` (3B001 when there is none).
    fn savepoint_index(block: &TxnBlock, name: &Ident) -> Result<usize> {
        block
            .savepoints
            .iter()
            .rposition(|s| s.name == name.value)
            .ok_or_else(|| {
                transaction_error(
                    "3B001",
                    format!("savepoint \"{}\" does not exist", name.value),
                )
            })
    }

    /// RELEASE SAVEPOINT `name`: it and the savepoints after it go; the writes stay.
    pub(crate) fn release_savepoint(&mut self, name: &Ident) -> Result<Outcome> {
        let mut guard = lock(&self.block);
        let Some(block) = guard.as_mut() else {
            return Err(transaction_error(
                "25P01",
                "RELEASE SAVEPOINT can only be used in transaction blocks".into(),
            ));
        };
        let at = Self::savepoint_index(block, name)?;
        block.savepoints.truncate(at);
        Ok(Outcome::Command("RELEASE".into()))
    }

    /// ROLLBACK TO SAVEPOINT `name`: every relation goes back to where it was at the
    /// savepoint (one first written after it is let go entirely), the savepoint stays, and
    /// a failed block may go on.
    pub(crate) fn rollback_to_savepoint(&mut self, name: &Ident) -> Result<Outcome> {
        let mut guard = lock(&self.block);
        let Some(block) = guard.as_mut() else {
            return Err(transaction_error(
                "25P01",
                "ROLLBACK TO SAVEPOINT can only be used in transaction blocks".into(),
            ));
        };
        let at = Self::savepoint_index(block, name)?;
        block.savepoints.truncate(at + 1);
        let marks = &block.savepoints[at].marks;
        let mut let_go = Vec::new();
        for (id, held) in &block.writes {
            match marks.iter().find(|(m, _)| m == id) {
                Some((_, mark)) => {
                    let mut slot = lock(&held.slot);
                    let txn = slot.as_mut().ok_or_else(|| {
                        brook_err!(
                            Internal,
                            "relation {}'s transaction is still in use",
                            held.name
                        )
                    })?;
                    txn.rewind(mark)?;
                }
                None => let_go.push(*id),
            }
        }
        for id in let_go {
            // Dropping the transaction cuts its records and lets the relation's lock go.
            block.writes.remove(&id);
            self.engine.lock_waits.release(self.pid, id);
        }
        block.failed = false;
        let overlay = Self::overlay_of(block);
        drop(guard);
        self.set_overlay(overlay);
        Ok(Outcome::Command("ROLLBACK".into()))
    }

    /// The open transaction of `meta` for a write statement of the block, lent to the
    /// statement (see [`WriteTxn::begin_statement`]): the block's own when it wrote the
    /// relation before, otherwise a new one under the relation's lock, kept by the block.
    pub(crate) async fn block_write(
        &self,
        meta: &RelationMeta,
        store: &Arc<TableStore>,
        name: &str,
        replace: bool,
    ) -> Result<WriteTxn> {
        let held = lock(&self.block)
            .as_ref()
            .and_then(|b| b.writes.get(&meta.id).map(|h| h.slot.clone()));
        let slot = match held {
            Some(slot) => slot,
            None => {
                let txn = self.lock_for_block(meta, store, name).await?;
                let slot = Arc::new(Mutex::new(Some(txn)));
                let mut guard = lock(&self.block);
                let block = guard
                    .as_mut()
                    .ok_or_else(|| brook_err!(Internal, "the transaction block ended"))?;
                block.writes.insert(
                    meta.id,
                    Held {
                        slot: slot.clone(),
                        meta: meta.clone(),
                        name: name.to_string(),
                    },
                );
                slot
            }
        };
        let mut txn = lock(&slot).take().ok_or_else(|| {
            brook_err!(
                Internal,
                "relation {name}'s transaction is in use by another statement"
            )
        })?;
        txn.begin_statement(replace, slot)?;
        Ok(txn)
    }

    /// A write statement of the block succeeded: its transaction goes back to the block,
    /// and the block's statements read its rows from now on.
    pub(crate) fn block_statement_done(&self, txn: WriteTxn) -> Result<()> {
        txn.end_statement()?;
        let overlay = match lock(&self.block).as_ref() {
            Some(b) => Self::overlay_of(b),
            None => TxnOverlay::default(),
        };
        self.set_overlay(overlay);
        Ok(())
    }

    /// Take `meta`'s write lock for the block: wait as long as `lock_timeout` allows
    /// (55P03), and after each `DEADLOCK_TIMEOUT` of waiting look for a deadlock among the
    /// blocks (40P01). Then check the definition is still the one planned against (40001).
    async fn lock_for_block(
        &self,
        meta: &RelationMeta,
        store: &Arc<TableStore>,
        name: &str,
    ) -> Result<WriteTxn> {
        let deadline = self
            .timeout_setting("lock_timeout")?
            .map(|t| tokio::time::Instant::now() + t);
        let waits = &self.engine.lock_waits;
        waits.wait(self.pid, meta.id);
        let begin = store.begin(false);
        tokio::pin!(begin);
        let txn = loop {
            let mut step = DEADLOCK_TIMEOUT;
            if let Some(d) = deadline {
                step = step.min(d.saturating_duration_since(tokio::time::Instant::now()));
            }
            match tokio::time::timeout(step, &mut begin).await {
                Ok(txn) => break txn,
                Err(_) if deadline.is_some_and(|d| tokio::time::Instant::now() >= d) => {
                    waits.stop_waiting(self.pid);
                    return Err(BrookError::Timeout {
                        message: "canceling statement due to lock timeout".into(),
                        code: "55P03",
                    });
                }
                Err(_) if waits.deadlocked(self.pid) => {
                    waits.stop_waiting(self.pid);
                    return Err(transaction_error("40P01", format!(
                        "deadlock detected: this transaction waits for relation \"{name}\", held by a transaction that waits for one this transaction holds"
                    )));
                }
                Err(_) => {}
            }
        };
        let txn = match txn {
            Ok(t) => t,
            Err(e) => {
                waits.stop_waiting(self.pid);
                return Err(e);
            }
        };
        waits.hold(self.pid, meta.id);
        if let Err(e) = self.engine.check_definition(meta) {
            waits.release(self.pid, meta.id);
            return Err(e);
        }
        Ok(txn)
    }

    /// 0A000 when the block wrote `meta`: a definition change (ALTER TABLE, DROP) would wait
    /// for the lock the block itself holds, or write under it.
    pub(crate) fn refuse_ddl_on_block_write(&self, meta: &RelationMeta) -> Result<()> {
        let written = lock(&self.block)
            .as_ref()
            .is_some_and(|b| b.writes.contains_key(&meta.id));
        if written {
            return Err(brook_err!(
                Unsupported,
                "changing or dropping a relation this transaction block wrote (Brook's DDL is not transactional): COMMIT or ROLLBACK first"
            ));
        }
        Ok(())
    }

    /// What the block's statements read of `store`: its own rows when it wrote it,
    /// otherwise the committed ones.
    pub(crate) fn visible_snapshot(&self, meta: &RelationMeta, store: &TableStore) -> Snapshot {
        self.ctx
            .state()
            .config()
            .get_extension::<TxnOverlay>()
            .and_then(|o| o.0.get(&meta.id).cloned())
            .unwrap_or_else(|| store.snapshot())
    }

    /// The rows each relation the block wrote has for its statements.
    fn overlay_of(block: &TxnBlock) -> TxnOverlay {
        TxnOverlay(
            block
                .writes
                .iter()
                .filter_map(|(id, h)| lock(&h.slot).as_ref().map(|t| (*id, t.visible())))
                .collect(),
        )
    }

    fn set_overlay(&self, overlay: TxnOverlay) {
        let state = self.ctx.state_ref();
        let mut st = state.write();
        st.config_mut().set_extension(Arc::new(overlay));
    }

    /// `LOCK TABLE t IN ACCESS SHARE MODE` (what pg_dump takes on every table it dumps) and
    /// `ROW SHARE`: the tables must exist (42P01). These modes conflict only with DDL, and
    /// Brook takes no lock for them: a table dropped while pg_dump reads it ends the dump
    /// with 42P01 rather than with wrong data. Modes that would hold writers back are
    /// refused (0A000): accepting them without blocking anyone would be a silent promise.
    pub(crate) fn lock_tables(&self, lock: Lock) -> Result<Outcome> {
        match &lock.lock_mode {
            Some(LockTableMode::AccessShare | LockTableMode::RowShare) => {}
            other => {
                let mode = other
                    .as_ref()
                    .map_or("ACCESS EXCLUSIVE".to_string(), |m| m.to_string());
                return Err(brook_err!(
                    Unsupported,
                    "LOCK TABLE ... IN {mode} MODE (Brook takes no table locks that hold writers back; ACCESS SHARE and ROW SHARE are accepted)"
                ));
            }
        }
        for target in &lock.tables {
            let (schema, name) = self.resolve(&target.name)?;
            let doc = self.engine.catalog.read();
            let exists = doc
                .database(&self.db.name)?
                .schemas
                .get(&schema)
                .is_some_and(|s| s.relations.contains_key(&name));
            if !exists {
                return Err(BrookError::UndefinedTable(name));
            }
        }
        Ok(Outcome::Command("LOCK TABLE".into()))
    }
}
