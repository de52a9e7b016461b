//! Statements on a cluster node (see `db/cluster.rs`): a catalog change runs through the
//! cluster's log, and a write is published there instead of committed here. The node's
//! applier (`cluster/apply.rs`) runs the same code with [`Session::applying`] set, which
//! executes and commits locally at the entry's log position.

use crate::catalog::RelationMeta;
use crate::db::cluster::{definition_digest, DdlEntry, Write, WriteEntry};
use crate::session::Session;
use crate::storage::WriteTxn;
use brook_common::Result;
use brook_planner::{BrookStatement, StatementBody};
use datafusion::sql::sqlparser::ast::Statement;

/// Whether a statement changes the catalog (and so runs through a cluster's log). Writes of
/// rows are not: they are published at their commit ([`Session::commit_write`]).
pub(crate) fn changes_catalog(stmt: &BrookStatement) -> bool {
    match &stmt.body {
        StatementBody::Sql(s) => matches!(
            **s,
            Statement::CreateView(_)
                | Statement::CreateTable(_)
                | Statement::Drop { .. }
                | Statement::CreateSchema { .. }
                | Statement::CreateDatabase { .. }
                | Statement::CreateIndex(_)
                | Statement::Comment { .. }
                | Statement::CreateSequence { .. }
                | Statement::AlterTable(_)
                | Statement::Truncate(_)
                | Statement::CreateFunction(_)
                | Statement::DropFunction(_)
        ),
        StatementBody::CreateStream(_)
        | StatementBody::AlterSequence(_)
        | StatementBody::AlterOwner { .. }
        | StatementBody::DropStream { .. }
        | StatementBody::CreateSynopsis(_)
        | StatementBody::DropSynopsis { .. }
        | StatementBody::CreateAggregate(_)
        | StatementBody::DropAggregate { .. } => true,
        StatementBody::FetchWith { .. } | StatementBody::RefreshMaterializedView { .. } => false,
    }
}

impl Session {
    /// On a cluster node, a catalog change not being applied from the log yet: send it to
    /// the log and return the command tag this node's applier got for it. `None` when the
    /// statement is to run here.
    pub(crate) async fn through_cluster_log(
        &self,
        stmt: &BrookStatement,
    ) -> Option<Result<String>> {
        let link = self.engine.cluster.get()?;
        if self.applying.is_some() {
            return None;
        }
        if !changes_catalog(stmt) {
            // Any other statement first waits for this node to have applied what the
            // log holds now: it sees every write acknowledged anywhere before it began.
            return link.sync().await.err().map(Err);
        }
        let Some(sql) = stmt.text.clone() else {
            return Some(Err(brook_common::brook_err!(
                Internal,
                "a catalog change without its text cannot be sent to the cluster's log"
            )));
        };
        let entry = DdlEntry {
            db: self.db.name.clone(),
            user: self.user.clone(),
            search_path: self.settings.get("search_path").unwrap_or_default(),
            sql,
        };
        Some(link.ddl(&entry).await)
    }

    /// Commit a write of relation `meta` (called `name` by the statement). On a single
    /// server, or when applying the cluster's log, it commits here (at the entry's log
    /// position); on a cluster node otherwise it is published to the log, and is committed
    /// (on every node) when the log's order admits it.
    pub(crate) async fn commit_write(
        &self,
        mut txn: WriteTxn,
        meta: &RelationMeta,
        name: &str,
    ) -> Result<()> {
        let link = match (self.engine.cluster.get(), self.applying) {
            (Some(link), None) => link,
            (_, Some(position)) => {
                txn.at_log_position(position);
                return txn.commit();
            }
            (None, None) => return txn.commit(),
        };
        let replace = txn.replaces();
        // The position the rows were computed from (a staged transaction's, read before
        // the statement read any row).
        let based_on = txn.based_on().unwrap_or_else(|| txn.store().log_position());
        let payloads = txn.into_payloads()?;
        if payloads.is_empty() && !replace {
            return Ok(());
        }
        let entry = WriteEntry {
            db: self.db.name.clone(),
            relation: name.to_string(),
            id: meta.id,
            definition: definition_digest(meta),
            replace,
            based_on,
        };
        link.write(Write { entry, payloads }).await
    }

    /// Mark a write a catalog change makes (TRUNCATE, ALTER TABLE's rewrite), committed
    /// here: when the change is applied from a cluster's log, at the change's position.
    pub(crate) fn mark_ddl_write(&self, txn: &mut WriteTxn) {
        if let Some(position) = self.applying {
            txn.at_log_position(position);
        }
    }
}
