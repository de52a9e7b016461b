//! The implicit transaction, as PostgreSQL runs one: the statements of a query string that
//! holds several, and the extended protocol's statements up to Sync, commit together at
//! its end, or none of them does when one fails — without BEGIN. It is a transaction block
//! (`TxnBlock::implicit`) that the wire layer opens before such statements and ends after
//! them; a BEGIN among them makes it an explicit block that goes on, a COMMIT or ROLLBACK
//! among them ends it (with PostgreSQL's warning), and SAVEPOINT is 25P01 in it.
//!
//! DDL commits with the implicit transaction, but two kinds of it commit the rows written
//! before them first: those that read rows to build something (CREATE MATERIALIZED VIEW, CREATE TABLE
//! AS, SELECT INTO, REFRESH MATERIALIZED VIEW, CREATE SYNOPSIS), so that they see them as
//! in PostgreSQL (a view created after an INSERT of the same string counts the inserted
//! rows), and ALTER or DROP of a table the writes went to (which would otherwise wait for
//! the lock its own transaction holds). Other DDL leaves them to the end of the string.

use super::transaction::{is_on, lock};
use crate::catalog::table::TxnOverlay;
use crate::session::transaction::TxnBlock;
use crate::session::Session;
use brook_common::Result;
use brook_planner::{BrookStatement, StatementBody};
use datafusion::sql::sqlparser::ast::{SetExpr, Statement};

/// Whether a statement builds a relation from the committed rows of others (see the
/// module's comment).
pub(crate) fn builds_from_rows(stmt: &BrookStatement) -> bool {
    match &stmt.body {
        StatementBody::RefreshMaterializedView { .. } | StatementBody::CreateSynopsis(_) => true,
        StatementBody::Sql(s) => match s.as_ref() {
            Statement::CreateView(v) => v.materialized,
            Statement::CreateTable(t) => t.query.is_some(),
            Statement::Query(q) => {
                matches!(q.body.as_ref(), SetExpr::Select(s) if s.into.is_some())
            }
            _ => false,
        },
        _ => false,
    }
}

impl Session {
    /// Open the implicit transaction for the statements about to run (`multi_statement`:
    /// those of a query string of several), unless a block (explicit or implicit) is open
    /// already. Not on a cluster node, whose statements commit one by one in the cluster's
    /// log order (as its explicit blocks' do).
    pub fn begin_implicit(&mut self, multi_statement: bool) {
        if self.applying.is_some() || self.engine.cluster.get().is_some() {
            return;
        }
        let mut block = lock(&self.block);
        if block.is_none() {
            *block = Some(TxnBlock {
                implicit: true,
                multi_statement,
                read_only: self
                    .settings
                    .get("default_transaction_read_only")
                    .is_some_and(|v| is_on(&v)),
                settings_before: self.settings.read().clone(),
                ..TxnBlock::default()
            });
        }
    }

    /// End the implicit transaction, if one is open: commit it when `commit` and none of
    /// its statements failed, otherwise roll it back (its writes, and its settings).
    pub fn end_implicit(&mut self, commit: bool) -> Result<()> {
        let block = {
            let mut guard = lock(&self.block);
            if guard.as_ref().is_some_and(|b| b.implicit) {
                guard.take()
            } else {
                None
            }
        };
        match block {
            Some(b) => self.finish_block(b, commit, false).map(|_| ()),
            None => Ok(()),
        }
    }

    /// Before DDL that needs them committed, in an implicit transaction: commit the rows
    /// written so far (see the module's comment). The transaction goes on.
    pub(crate) fn commit_implicit_writes(&self) -> Result<()> {
        let writes = {
            let mut guard = lock(&self.block);
            match guard.as_mut() {
                Some(b) if b.implicit && !b.writes.is_empty() => std::mem::take(&mut b.writes),
                _ => return Ok(()),
            }
        };
        let done = self.commit_block(TxnBlock {
            writes,
            ..TxnBlock::default()
        });
        self.engine.lock_waits.release_all(self.pid);
        self.set_overlay(TxnOverlay::default());
        done
    }
}
