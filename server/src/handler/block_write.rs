//! A transaction block's writes: the open transaction of each relation it wrote, lent to
//! each write statement and given back when it ends; taking a relation's lock for the
//! block (lock_timeout, and deadlock detection among blocks); what the block's statements
//! read of the relations it wrote (`TxnOverlay`). BEGIN, COMMIT, ROLLBACK and savepoints
//! are in `transaction.rs`.

use super::transaction::{in_use, lock, transaction_error};
use crate::catalog::table::TxnOverlay;
use crate::catalog::RelationMeta;
use crate::session::transaction::{Held, TxnBlock};
use crate::session::Session;
use crate::storage::{Snapshot, TableStore, WriteTxn};
use brook_common::{brook_err, BrookError, Result};
use std::sync::{Arc, Mutex};

/// How long a block waits for a relation's lock before it looks for a deadlock
/// (PostgreSQL's `deadlock_timeout` default).
const DEADLOCK_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(1);

impl Session {
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
        let mut txn = lock(&slot).take().ok_or_else(|| in_use(name))?;
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
        if let Err(e) = self
            .engine
            .check_definition(meta)
            .and_then(|()| self.engine.check_created_visible(meta))
        {
            waits.release(self.pid, meta.id);
            return Err(e);
        }
        Ok(txn)
    }

    /// 0A000 when the block wrote `meta`: a definition change (ALTER TABLE, DROP) would wait
    /// for the lock the block itself holds, or write under it. An implicit transaction
    /// commits its writes instead (see `crate::handler::implicit`).
    pub(crate) fn refuse_ddl_on_block_write(&self, meta: &RelationMeta) -> Result<()> {
        let (written, implicit) = lock(&self.block).as_ref().map_or((false, false), |b| {
            (b.writes.contains_key(&meta.id), b.implicit)
        });
        if written && implicit {
            return self.commit_implicit_writes();
        }
        if written {
            return Err(brook_err!(
                Unsupported,
                "changing a relation this transaction block wrote, where the change takes the relation's write lock the block holds: COMMIT or ROLLBACK first"
            ));
        }
        Ok(())
    }

    /// Whether the open block (explicit or implicit) holds relation `id`'s transaction.
    pub(crate) fn block_holds(&self, id: u64) -> bool {
        lock(&self.block)
            .as_ref()
            .is_some_and(|b| b.writes.contains_key(&id))
    }

    /// The write lock DDL that rewrites no rows takes on `meta` (an empty transaction,
    /// never committed, dropped once the catalog changed): none when the open block holds
    /// it already (waiting for it would wait for itself).
    pub(crate) async fn ddl_lock(
        &self,
        meta: &RelationMeta,
        store: &Arc<TableStore>,
    ) -> Result<Option<WriteTxn>> {
        if self.block_holds(meta.id) && crate::catalog::undo::journal().is_some() {
            return Ok(None);
        }
        self.begin_write(meta, store, false).await.map(Some)
    }

    /// Whether this transaction block (not an implicit one) wrote `meta`, and so holds its
    /// write lock until it ends.
    pub(crate) fn block_wrote(&self, meta: &RelationMeta) -> bool {
        lock(&self.block)
            .as_ref()
            .is_some_and(|b| !b.implicit && b.writes.contains_key(&meta.id))
    }

    /// What the block's statements read of `store`: its own rows when it wrote it,
    /// otherwise the committed ones.
    pub(crate) fn visible_snapshot(&self, meta: &RelationMeta, store: &TableStore) -> Snapshot {
        self.ctx
            .state()
            .config()
            .get_extension::<TxnOverlay>()
            .and_then(|o| o.0.get(&meta.id).map(|r| r.visible(store)))
            .unwrap_or_else(|| store.snapshot())
    }

    /// The rows each relation the block wrote has for its statements.
    pub(crate) fn overlay_of(block: &TxnBlock) -> TxnOverlay {
        TxnOverlay(
            block
                .writes
                .iter()
                .filter_map(|(id, h)| lock(&h.slot).as_ref().map(|t| (*id, t.own_rows())))
                .collect(),
        )
    }

    pub(crate) fn set_overlay(&self, overlay: TxnOverlay) {
        let state = self.ctx.state_ref();
        let mut st = state.write();
        st.config_mut().set_extension(Arc::new(overlay));
    }
}
