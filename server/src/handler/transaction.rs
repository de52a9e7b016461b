//! Transaction blocks: BEGIN opens one; each relation a statement of the block writes keeps
//! one storage transaction open (under the relation's write lock; `block_write.rs`) until
//! COMMIT commits them all or ROLLBACK cuts them from the logs. Other sessions see the
//! writes only after COMMIT. SAVEPOINT and ROLLBACK TO rewind writes, settings and cursors;
//! READ ONLY blocks refuse writes. DDL commits with its block: its catalog changes are
//! recorded as the block's (`catalog::undo`), COMMIT records the block's decision (the
//! commit point of its rows and its DDL together) and ROLLBACK undoes them
//! (`db::block_ddl`). And `LOCK TABLE` in the modes that only keep a table from being
//! dropped or altered.

use crate::catalog::table::TxnOverlay;
use crate::session::transaction::{Savepoint, TxnBlock};
use crate::session::{Notice, Outcome, Session};
use crate::storage::WriteTxn;
use brook_common::{brook_err, BrookError, Result};
use brook_planner::BrookStatement;
use datafusion::sql::sqlparser::ast::{
    CopyTarget, DiscardObject, Ident, Lock, LockTableMode, ObjectType, Statement,
    TransactionAccessMode, TransactionMode,
};
use std::sync::{Mutex, MutexGuard};

pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    match m.lock() {
        Ok(g) => g,
        Err(p) => p.into_inner(),
    }
}

pub(crate) fn transaction_error(code: &'static str, message: String) -> BrookError {
    BrookError::Transaction { message, code }
}

/// A boolean setting's text read as PostgreSQL reads it.
pub(crate) fn is_on(v: &str) -> bool {
    matches!(
        v.trim().to_ascii_lowercase().as_str(),
        "on" | "true" | "yes" | "1"
    )
}

/// The access mode `modes` set, if any (true: READ ONLY).
fn access_mode(modes: &[TransactionMode]) -> Option<bool> {
    modes.iter().rev().find_map(|m| match m {
        TransactionMode::AccessMode(TransactionAccessMode::ReadOnly) => Some(true),
        TransactionMode::AccessMode(TransactionAccessMode::ReadWrite) => Some(false),
        TransactionMode::IsolationLevel(_) => None,
    })
}

/// What a statement writes, named as PostgreSQL's 25006 names it, or None when a READ
/// ONLY block may run it (queries, cursors, settings, transaction control, COPY TO).
pub(crate) fn writes(stmt: &BrookStatement) -> Option<String> {
    let Some(sql) = stmt.as_sql() else {
        // Brook's own statements (CREATE STREAM, CREATE SYNOPSIS, ...) change things, but
        // for `FETCH ... WITH (timeout ...)`.
        if matches!(
            stmt.body,
            brook_planner::StatementBody::FetchWith { .. } | brook_planner::StatementBody::Move(_)
        ) {
            return None;
        }
        return Some("this statement".into());
    };
    if let Some(what) = changes_while_reading(sql) {
        return Some(what);
    }
    match sql {
        Statement::Query(_)
        | Statement::Explain { .. }
        | Statement::Declare { .. }
        | Statement::Fetch { .. }
        | Statement::Close { .. }
        | Statement::Set(_)
        | Statement::ShowVariable { .. }
        | Statement::ShowVariables { .. }
        | Statement::Reset(_)
        | Statement::StartTransaction { .. }
        | Statement::Commit { .. }
        | Statement::Rollback { .. }
        | Statement::Savepoint { .. }
        | Statement::ReleaseSavepoint { .. }
        | Statement::Lock(_)
        | Statement::Prepare { .. }
        | Statement::Execute { .. }
        | Statement::Deallocate { .. }
        | Statement::Discard { .. }
        | Statement::UNLISTEN { .. } => None,
        Statement::Copy {
            target: CopyTarget::Stdout | CopyTarget::File { .. },
            ..
        } => None,
        Statement::Insert(_) => Some("INSERT".into()),
        Statement::Update { .. } => Some("UPDATE".into()),
        Statement::Delete(_) => Some("DELETE".into()),
        Statement::Copy { .. } => Some("COPY FROM".into()),
        Statement::Truncate(_) => Some("TRUNCATE TABLE".into()),
        other => Some(
            crate::handler::query::first_words(&other.to_string())
                .split_whitespace()
                .take(2)
                .collect::<Vec<_>>()
                .join(" ")
                .to_uppercase(),
        ),
    }
}

/// What a query a READ ONLY block would run still changes, named as PostgreSQL's 25006
/// names it: the rows it locks (`SELECT FOR UPDATE`, `SELECT FOR SHARE`) or a sequence
/// (`nextval()`, `setval()`).
fn changes_while_reading(sql: &Statement) -> Option<String> {
    use datafusion::sql::sqlparser::ast::{Expr, LockType, Visit, Visitor};
    use std::ops::ControlFlow;
    let query = match sql {
        Statement::Query(q) => Some(q.as_ref()),
        Statement::Declare { stmts } => stmts.iter().find_map(|d| d.for_query.as_deref()),
        Statement::Copy { .. } => None,
        _ => return None,
    };
    if let Some(lock) = query.and_then(|q| q.locks.first()) {
        return Some(match lock.lock_type {
            LockType::Update => "SELECT FOR UPDATE".into(),
            LockType::Share => "SELECT FOR SHARE".into(),
        });
    }
    struct SequenceCall(Option<String>);
    impl Visitor for SequenceCall {
        type Break = ();
        fn pre_visit_expr(&mut self, e: &Expr) -> ControlFlow<()> {
            if let Expr::Function(f) = e {
                let name = f.name.0.last().and_then(|p| p.as_ident());
                let name = name.map(|i| i.value.to_ascii_lowercase());
                if let Some(name) = name.filter(|n| n == "nextval" || n == "setval") {
                    self.0 = Some(format!("{name}()"));
                    return ControlFlow::Break(());
                }
            }
            ControlFlow::Continue(())
        }
    }
    let mut found = SequenceCall(None);
    let _ = sql.visit(&mut found);
    found.0
}

/// A statement PostgreSQL runs only as a transaction of its own (CREATE and DROP
/// DATABASE, DISCARD ALL), named.
pub(crate) fn own_transaction_only(stmt: &BrookStatement) -> Option<&'static str> {
    match stmt.as_sql()? {
        Statement::CreateDatabase { .. } => Some("CREATE DATABASE"),
        Statement::Discard {
            object_type: DiscardObject::ALL,
        } => Some("DISCARD ALL"),
        Statement::Drop {
            object_type: ObjectType::Database,
            ..
        } => Some("DROP DATABASE"),
        _ => None,
    }
}

/// Whether a statement only controls the block (BEGIN, SET TRANSACTION, SAVEPOINT, ...),
/// so that READ WRITE may still follow it.
pub(crate) fn controls_block(stmt: &BrookStatement) -> bool {
    matches!(
        stmt.as_sql(),
        Some(
            Statement::StartTransaction { .. }
                | Statement::Commit { .. }
                | Statement::Rollback { .. }
                | Statement::Savepoint { .. }
                | Statement::ReleaseSavepoint { .. }
                | Statement::Set(_)
        )
    )
}

/// 25006: a write in a READ ONLY block.
pub(crate) fn read_only_error(what: &str) -> BrookError {
    transaction_error(
        "25006",
        format!("cannot execute {what} in a read-only transaction"),
    )
}

/// 25P01: `what` outside a transaction block.
fn outside_block(what: &str) -> BrookError {
    transaction_error(
        "25P01",
        format!("{what} can only be used in transaction blocks"),
    )
}

/// A relation's transaction is not in its slot: a statement of the block still has it.
pub(crate) fn in_use(name: &str) -> BrookError {
    brook_err!(Internal, "relation {name}'s transaction is still in use")
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

    /// BEGIN / START TRANSACTION [READ ONLY | READ WRITE] (isolation levels are accepted;
    /// blocks are READ COMMITTED, see docs/limits.md).
    pub(crate) fn begin_block(&mut self, modes: &[TransactionMode]) -> Outcome {
        let read_only = access_mode(modes).unwrap_or_else(|| {
            self.settings
                .get("default_transaction_read_only")
                .is_some_and(|v| is_on(&v))
        });
        let mut block = lock(&self.block);
        if let Some(b) = block.as_mut().filter(|b| b.implicit) {
            // BEGIN in an implicit transaction makes it a block: the statements before it
            // are part of it, as in PostgreSQL.
            b.implicit = false;
            if let Some(ro) = access_mode(modes) {
                b.read_only = ro;
            }
        } else if let Some(b) = block.as_mut() {
            self.notices.push(Notice::warning(
                "25001",
                "there is already a transaction in progress",
            ));
            if let Some(ro) = access_mode(modes) {
                b.read_only = ro;
            }
        } else {
            *block = Some(TxnBlock {
                read_only,
                settings_before: self.settings.read().clone(),
                ..TxnBlock::default()
            });
        }
        Outcome::TxnStart("BEGIN".into())
    }

    /// `SET TRANSACTION READ ONLY | READ WRITE` in a block (outside one it only warns, as
    /// PostgreSQL).
    pub(crate) fn set_transaction_modes(&mut self, modes: &[TransactionMode]) -> Result<()> {
        let Some(ro) = access_mode(modes) else {
            return Ok(());
        };
        match lock(&self.block).as_mut() {
            // A READ ONLY block stays so once it ran a query or took a savepoint, as in
            // PostgreSQL.
            Some(b) if b.read_only && !ro && (b.queried || !b.savepoints.is_empty()) => {
                Err(transaction_error(
                    "25001",
                    "transaction read-write mode must be set before any query".into(),
                ))
            }
            Some(b) => {
                b.read_only = ro;
                Ok(())
            }
            None => {
                self.notices.push(Notice::warning(
                    "25P01",
                    "SET TRANSACTION can only be used in transaction blocks",
                ));
                Ok(())
            }
        }
    }

    /// `SET LOCAL name`: in a block, the setting goes back at its end (true); outside one
    /// it has no effect, as in PostgreSQL (false, with the warning as a notice).
    pub(crate) fn set_local(&mut self, name: &str) -> bool {
        match lock(&self.block).as_mut() {
            Some(b) => {
                b.local.insert(name.to_ascii_lowercase());
                true
            }
            None => {
                self.notices.push(Notice::warning(
                    "25P01",
                    "SET LOCAL can only be used in transaction blocks",
                ));
                false
            }
        }
    }

    /// Put settings back as they were in `before` (only the `only` ones, when given):
    /// through SET, so that what a setting does (the search path) follows it.
    fn restore_settings(
        &mut self,
        before: &std::collections::BTreeMap<String, String>,
        only: Option<&std::collections::BTreeSet<String>>,
    ) {
        let now = self.settings.read().clone();
        let keys: std::collections::BTreeSet<&String> = now.keys().chain(before.keys()).collect();
        for key in keys {
            if only.is_some_and(|o| !o.contains(key)) {
                continue;
            }
            match (before.get(key), now.get(key)) {
                (Some(b), n) if n != Some(b) => {
                    if let Err(e) = self.set_var(key, b) {
                        tracing::warn!(setting = %key, error = %e, "could not restore a setting at the end of a transaction block");
                    }
                }
                // A custom setting first set in the block stays defined, empty, as
                // PostgreSQL keeps its placeholder.
                (None, Some(_)) if key.contains('.') => self.settings.set(key, ""),
                (None, Some(_)) => self.settings.remove(key),
                _ => {}
            }
        }
    }

    /// Whether the statement about to run is in a READ ONLY transaction: its block's, or
    /// (outside a block, where a statement is a transaction of its own) the session's
    /// `default_transaction_read_only`.
    pub(crate) fn read_only_now(&self) -> bool {
        match lock(&self.block).as_ref() {
            Some(b) => b.read_only,
            None => self
                .settings
                .get("default_transaction_read_only")
                .is_some_and(|v| is_on(&v)),
        }
    }

    /// A statement that is not the block's own control ran in it.
    pub(crate) fn block_queried(&self) {
        if let Some(b) = lock(&self.block).as_mut() {
            b.queried = true;
        }
    }

    /// A plain SET of `name` to `value` in the block: a later SET LOCAL of it goes back to
    /// this value at COMMIT, and an earlier one no longer applies.
    pub(crate) fn block_session_set(&mut self, name: &str, value: &str) {
        if let Some(b) = lock(&self.block).as_mut() {
            let key = name.to_ascii_lowercase();
            b.local.remove(&key);
            b.session_values.insert(key, value.to_string());
        }
    }

    /// How many savepoints the open block has (None: no block): where a cursor declared
    /// now belongs.
    pub(crate) fn block_savepoints(&self) -> Option<usize> {
        lock(&self.block).as_ref().map(|b| b.savepoints.len())
    }

    /// Whether the statement about to run shares its transaction with others: in a block,
    /// in a query string of several statements, or after others before Sync.
    pub(crate) fn shares_transaction(&self) -> bool {
        lock(&self.block)
            .as_ref()
            .is_some_and(|b| !b.implicit || b.multi_statement || b.queried)
    }

    /// Whether a transaction block is open (also on a cluster node, where its writes commit
    /// one by one).
    pub(crate) fn block_open(&self) -> bool {
        lock(&self.block).is_some()
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

    /// COMMIT (`commit`) or ROLLBACK [AND CHAIN]: end the block (a COMMIT of a failed block
    /// rolls back, and says so in its tag). Cursors not declared WITH HOLD close, and so do
    /// those declared in a block that rolls back. AND CHAIN opens the next block at once,
    /// READ ONLY when this one was.
    ///
    /// In an implicit transaction (no BEGIN) COMMIT and ROLLBACK end it with PostgreSQL's
    /// warning that no transaction is in progress, and AND CHAIN is 25P01.
    pub(crate) fn end_transaction(&mut self, commit: bool, chain: bool) -> Result<Outcome> {
        let tag = if commit { "COMMIT" } else { "ROLLBACK" };
        let (block, implicit) = {
            let mut guard = lock(&self.block);
            let implicit = guard.as_ref().is_some_and(|b| b.implicit);
            (
                if implicit && chain {
                    None
                } else {
                    guard.take()
                },
                implicit,
            )
        };
        let Some(block) = block else {
            if chain {
                return Err(outside_block(&format!("{tag} AND CHAIN")));
            }
            self.cursors.retain(|_, c| c.hold);
            self.notices.push(Notice::warning(
                "25P01",
                "there is no transaction in progress",
            ));
            return Ok(Outcome::TxnEnd(tag.into()));
        };
        if implicit {
            self.notices.push(Notice::warning(
                "25P01",
                "there is no transaction in progress",
            ));
        }
        self.finish_block(block, commit, chain)
    }

    /// End `block` (taken from the session): commit it (`commit`, and no statement failed
    /// in it) or roll it back, close its cursors, let its locks go, settle its settings,
    /// and with `chain` open the next block.
    pub(super) fn finish_block(
        &mut self,
        block: TxnBlock,
        commit: bool,
        chain: bool,
    ) -> Result<Outcome> {
        let read_only = block.read_only;
        let implicit = block.implicit;
        let journal = block.journal;
        let committed = commit && !block.failed;
        let mut settings_before = block.settings_before.clone();
        let local = block.local.clone();
        if committed {
            // A SET LOCAL goes back to the last plain SET of the block, if any.
            for (k, v) in &block.session_values {
                settings_before.insert(k.clone(), v.clone());
            }
        }
        let done = if committed {
            self.commit_block(block).map(|()| "COMMIT")
        } else {
            // (An implicit transaction's rows of streams are no news: no BEGIN promised more.)
            if !block.committed_early.is_empty() && !implicit {
                let names: Vec<&str> = block.committed_early.iter().map(String::as_str).collect();
                self.notices.push(format!(
                    "the rows this transaction wrote to {} stay: they committed with their statements (a stream's rows always do, and in cluster mode every write does); ROLLBACK undid the other writes",
                    names.join(", ")
                ).into());
            }
            drop(block);
            Ok("ROLLBACK")
        };
        let kept = committed && done.is_ok();
        if let (Some(block), false) = (journal, kept) {
            self.undo_block_ddl(block, 0);
        }
        if implicit {
            // Cursors declared in an implicit transaction stay the session's when it
            // commits, as one declared outside any block; they close when it rolls back
            // (their rows may be its writes).
            if !kept {
                self.cursors.retain(|_, c| c.in_block.is_none());
            }
        } else {
            self.cursors
                .retain(|_, c| c.hold && (kept || c.in_block.is_none()));
        }
        for c in self.cursors.values_mut() {
            c.in_block = None;
        }
        self.engine.lock_waits.release_all(self.pid);
        self.set_overlay(TxnOverlay::default());
        // Settings: SET LOCAL ends with the block; a rolled-back block's SETs are undone.
        self.restore_settings(
            &settings_before,
            (committed && done.is_ok()).then_some(&local),
        );
        let tag = done?;
        if chain {
            *lock(&self.block) = Some(TxnBlock {
                read_only,
                settings_before: self.settings.read().clone(),
                ..TxnBlock::default()
            });
            return Ok(Outcome::TxnStart(tag.into()));
        }
        Ok(Outcome::TxnEnd(tag.into()))
    }

    /// Commit every relation the block wrote. All definitions are checked first (a relation
    /// dropped or altered meanwhile fails the COMMIT with 40001 and nothing commits). One
    /// relation commits with its commit record; several in two steps, so that a crash
    /// keeps all of them or none: each relation's commit record names the block, then the
    /// block's decision is recorded (the moment it commits), then the rows are shown.
    ///
    /// A block that changed the catalog commits through its decision however many
    /// relations it wrote: the decision commits its DDL too. Rows it wrote to a relation
    /// it then dropped go with the relation.
    pub(super) fn commit_block(&self, block: TxnBlock) -> Result<()> {
        let ddl = block
            .journal
            .filter(|b| self.engine.block_changed_catalog(*b));
        let dropped = ddl.map_or_else(Vec::new, |b| self.engine.dropped_by_block(b));
        let mut txns: Vec<WriteTxn> = Vec::new();
        for (id, held) in block.writes {
            if dropped.contains(&id) {
                continue;
            }
            if self.engine.check_definition(&held.meta).is_err() {
                return Err(brook_err!(SerializationFailure, "could not commit: relation \"{}\" was dropped or altered by another session after this transaction block wrote it; the block was rolled back",
                    held.name));
            }
            txns.push(lock(&held.slot).take().ok_or_else(|| in_use(&held.name))?);
        }
        if let Some(id) = ddl {
            for txn in &mut txns {
                txn.prepare(id)?;
            }
            self.engine.decisions.record(id)?;
            txns.into_iter().for_each(WriteTxn::publish);
            if let Err(e) = self.engine.commit_block_ddl(id) {
                tracing::error!(block = id, error = %e, "a committed block's catalog changes could not be settled now; the next start settles them");
            }
            return Ok(());
        }
        if txns.len() < 2 {
            return txns.into_iter().try_for_each(WriteTxn::commit);
        }
        let decisions = &self.engine.decisions;
        let id = decisions.next_id();
        for txn in &mut txns {
            // On an error the transactions drop: each is cut from its log, record and all.
            txn.prepare(id)?;
        }
        decisions.record(id)?;
        txns.into_iter().for_each(WriteTxn::publish);
        Ok(())
    }

    /// The open block's commit id, under which the statement about to run records its
    /// catalog changes (taken by the block's first statement). None outside a block, and on
    /// a cluster node, whose DDL is ordered by the cluster's log.
    pub(crate) fn block_journal(&self) -> Option<u64> {
        if !self.in_block() {
            return None;
        }
        let mut guard = lock(&self.block);
        let block = guard.as_mut()?;
        Some(
            *block
                .journal
                .get_or_insert_with(|| self.engine.decisions.next_id()),
        )
    }

    /// After a statement of the block: the relations it writes are written against the
    /// definitions its own DDL gave them (their write lock kept anyone else's DDL out).
    pub(crate) fn refresh_held_definitions(&self) {
        let ids: Vec<u64> = match lock(&self.block).as_ref() {
            Some(b) => b.writes.keys().copied().collect(),
            None => return,
        };
        let metas: Vec<(u64, crate::catalog::RelationMeta)> = {
            let doc = self.engine.catalog.read();
            ids.into_iter()
                .filter_map(|id| doc.relation_by_id(id).map(|m| (id, m.clone())))
                .collect()
        };
        if let Some(b) = lock(&self.block).as_mut() {
            for (id, meta) in metas {
                if let Some(held) = b.writes.get_mut(&id) {
                    held.meta = meta;
                }
            }
        }
    }

    /// Undo block `block`'s catalog changes from the `from`th on. A failure leaves them
    /// recorded (the next start undoes them) and is told as a warning: the block's rows
    /// are rolled back all the same.
    pub(crate) fn undo_block_ddl(&mut self, block: u64, from: usize) {
        if let Err(e) = self.engine.undo_block_ddl(&self.db, block, from) {
            tracing::error!(block, error = %e, "could not undo a transaction block's DDL");
            self.notices.push(Notice::warning(
                "XX000",
                format!("could not undo this transaction's DDL now ({e}); the server undoes it when it next starts"),
            ));
        }
    }

    /// SAVEPOINT `name` (25P01 outside a block, as PostgreSQL).
    pub(crate) fn savepoint(&mut self, name: &Ident) -> Result<Outcome> {
        let mut guard = lock(&self.block);
        let Some(block) = guard.as_mut().filter(|b| !b.implicit) else {
            return Err(outside_block("SAVEPOINT"));
        };
        let mut marks = Vec::with_capacity(block.writes.len());
        for (id, held) in &block.writes {
            let mut slot = lock(&held.slot);
            let txn = slot.as_mut().ok_or_else(|| in_use(&held.name))?;
            marks.push((*id, txn.mark()?));
        }
        let ddl_len = block.journal.map_or(0, |b| self.engine.block_ddl_len(b));
        block.savepoints.push(Savepoint {
            name: name.value.clone(),
            marks,
            settings: self.settings.read().clone(),
            read_only: block.read_only,
            ddl_len,
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
        let Some(block) = guard.as_mut().filter(|b| !b.implicit) else {
            return Err(outside_block("RELEASE SAVEPOINT"));
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
        let Some(block) = guard.as_mut().filter(|b| !b.implicit) else {
            return Err(outside_block("ROLLBACK TO SAVEPOINT"));
        };
        let at = Self::savepoint_index(block, name)?;
        block.savepoints.truncate(at + 1);
        let marks = &block.savepoints[at].marks;
        let mut let_go = Vec::new();
        for (id, held) in &block.writes {
            match marks.iter().find(|(m, _)| m == id) {
                Some((_, mark)) => {
                    let mut slot = lock(&held.slot);
                    let txn = slot.as_mut().ok_or_else(|| in_use(&held.name))?;
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
        let settings = block.savepoints[at].settings.clone();
        block.read_only = block.savepoints[at].read_only;
        let ddl = block.journal.map(|b| (b, block.savepoints[at].ddl_len));
        drop(guard);
        if let Some((block, from)) = ddl {
            self.undo_block_ddl(block, from);
            self.refresh_held_definitions();
        }
        self.set_overlay(overlay);
        self.restore_settings(&settings, None);
        // Cursors declared after the savepoint go with it.
        self.cursors
            .retain(|_, c| c.in_block.is_none_or(|n| n <= at));
        Ok(Outcome::Command("ROLLBACK".into()))
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
