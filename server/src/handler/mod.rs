//! One file per statement family; `execute` dispatches a statement to its handler, one arm
//! per statement kind.

pub mod aggregate;
pub mod alter;
pub mod alter_column;
pub mod block_write;
pub mod cluster;
pub mod column_shape;
pub mod column_type;
pub mod comment;
pub mod continuous;
pub mod copy;
pub mod create_table;
pub mod cursor;
pub mod describe;
pub mod drop;
pub mod function;
pub mod identity_options;
pub mod implicit;
pub mod index;
pub mod insert;
pub mod prepare;
pub mod query;
pub mod rename;
pub mod schema;
pub mod sequence;
pub mod set_config;
pub mod set_show;
pub mod transaction;
pub mod update_delete;
pub mod upsert;
pub mod view;
pub mod write;

use crate::catalog::RelKind;
use crate::handler::query::first_words;
use crate::pg::sql::pg_literals;
use crate::session::{Outcome, Session};
use brook_common::{brook_err, Result};
use brook_planner::continuous::ContinuousOptions;
use brook_planner::{BrookStatement, StatementBody};
use datafusion::sql::sqlparser::ast::{Query, SetExpr, Statement};

impl Session {
    /// Execute one statement.
    pub async fn execute(&mut self, stmt: BrookStatement) -> Result<Outcome> {
        let ends_block = matches!(
            stmt.as_sql(),
            Some(Statement::Commit { .. } | Statement::Rollback { .. })
        );
        if !ends_block && self.block_is_failed() {
            return Err(brook_common::BrookError::InFailedTransaction);
        }
        let read_only = self.read_only_now();
        if read_only {
            if let Some(what) = transaction::writes(&stmt) {
                return Err(transaction::read_only_error(&what));
            }
        }
        // SHOW, `current_setting('transaction_read_only')` and `pg_settings` give the access
        // mode of the transaction the statement runs in (its block's, or the session's
        // default outside one), as in PostgreSQL.
        let mode = if read_only { "on" } else { "off" };
        if self.settings.get("transaction_read_only").as_deref() != Some(mode) {
            self.settings.set("transaction_read_only", mode);
        }
        if let Some(what) = transaction::own_transaction_only(&stmt) {
            if self.shares_transaction() {
                self.block_failed();
                return Err(transaction::transaction_error(
                    "25001",
                    format!("{what} cannot run inside a transaction block"),
                ));
            }
        }
        if !transaction::controls_block(&stmt) {
            self.block_queried();
        }
        if implicit::builds_from_rows(&stmt) {
            if let Err(e) = self.commit_implicit_writes() {
                self.block_failed();
                return Err(e);
            }
        }
        // In a block, what the statement changes in the catalog is the block's: undone if
        // the block rolls back (transaction control itself is not).
        let journal = if transaction::controls_block(&stmt) {
            None
        } else {
            self.block_journal()
        };
        let outcome = match journal {
            Some(block) => {
                crate::catalog::undo::journaled(block, self.execute_statement(stmt)).await
            }
            None => self.execute_statement(stmt).await,
        };
        if journal.is_some() {
            self.refresh_held_definitions();
        }
        if outcome.is_err() {
            self.block_failed();
        }
        outcome
    }

    async fn execute_statement(&mut self, stmt: BrookStatement) -> Result<Outcome> {
        self.sync_functions();
        if let Some(logged) = self.through_cluster_log(&stmt).await {
            return logged.map(Outcome::Command);
        }
        let stmt = self.table_aliases_completed(self.natural_joins_resolved(stmt));
        let (mut stmt, replaced) = self.approximated(stmt)?;
        if let StatementBody::Sql(s) = &mut stmt.body {
            self.qualify_relations(s)?;
        }
        self.notices
            .extend(replaced.iter().map(|r| r.notice().into()));
        self.overriding = stmt.overriding;
        let outcome = self.execute_body(stmt).await;
        self.overriding = None;
        outcome
    }

    /// Execute a statement's body, with its clauses.
    async fn execute_body(&mut self, stmt: BrookStatement) -> Result<Outcome> {
        if stmt.with_no_data {
            self.notices.push(crate::session::Notice::from(
                "WITH NO DATA ignored: a materialized view is kept up to date from its creation, \
                 so it is populated now",
            ));
        }
        match stmt.body {
            StatementBody::Sql(s) => match stmt.emit {
                None => self.execute_sql(*s).await,
                Some(emit) => {
                    let options = ContinuousOptions {
                        emit_on_window_close: emit.on_window_close(),
                    };
                    self.execute_emit(*s, options).await
                }
            },
            StatementBody::CreateStream(cs) => self.create_stream(*cs).await,
            StatementBody::AlterSequence(a) => self.alter_sequence(*a),
            StatementBody::AlterIdentity(a) => self.alter_identity(*a).await,
            StatementBody::AlterOwner {
                kind,
                name,
                role,
                if_exists,
            } => self.alter_owner(&kind, &name, &role, if_exists),
            StatementBody::Rename {
                kind,
                name,
                to,
                if_exists,
            } => self.rename_object(kind, &name, &to, if_exists),
            StatementBody::DropStream {
                names,
                if_exists,
                cascade,
            } => self.drop_relations(&names, RelKind::Stream, if_exists, cascade, "DROP STREAM"),
            StatementBody::CreateSynopsis(cs) => self.create_synopsis(*cs).await,
            StatementBody::DropSynopsis {
                names,
                if_exists,
                cascade,
            } => self.drop_relations(
                &names,
                RelKind::Synopsis,
                if_exists,
                cascade,
                "DROP SYNOPSIS",
            ),
            StatementBody::FetchWith { fetch, timeout } => self.fetch_with(*fetch, timeout).await,
            StatementBody::Move(fetch) => self.move_cursor(*fetch).await,
            StatementBody::RefreshMaterializedView { name, no_data } => {
                self.refresh_materialized_view(&name, no_data).await
            }
            StatementBody::CreateAggregate(ca) => self.create_aggregate(*ca),
            StatementBody::DropAggregate {
                names,
                if_exists,
                cascade,
            } => self.drop_aggregate(names, if_exists, cascade),
        }
    }

    /// Execute a standard SQL statement.
    pub(crate) async fn execute_sql(&mut self, mut stmt: Statement) -> Result<Outcome> {
        let names = brook_planner::rewrite::output_names(&stmt);
        // Before the literal rewrites, which name unnamed outputs for the planner: a
        // set_config output is named `set_config`, as in PostgreSQL.
        if let Some(outputs) = set_config::set_config_outputs(&stmt) {
            return self.set_config(outputs).await;
        }
        pg_literals(&mut stmt)?;
        match stmt {
            Statement::Explain { statement, .. }
                if matches!(*statement, Statement::Declare { .. }) =>
            {
                Box::pin(self.explain_declare(*statement)).await
            }
            // WITH ... UPDATE / WITH ... DELETE
            Statement::Query(q) if matches!(*q.body, SetExpr::Update(_) | SetExpr::Delete(_)) => {
                let Query { with, body, .. } = *q;
                match *body {
                    SetExpr::Update(Statement::Update(u)) => self.update(u, with).await,
                    SetExpr::Delete(Statement::Delete(d)) => self.delete(d, with).await,
                    _ => Err(brook_err!(
                        Unsupported,
                        "a data-modifying statement after WITH"
                    )),
                }
            }
            Statement::Query(q) => match self.select_into(&q).await {
                Some(created) => created,
                None => self.run_query(Statement::Query(q), "SELECT", names).await,
            },
            Statement::Explain { .. } => self.run_query(stmt, "EXPLAIN", names).await,
            Statement::CreateView(cv) if cv.materialized => {
                self.create_materialized_view(cv, ContinuousOptions::default())
                    .await
            }
            Statement::CreateView(cv) => self.create_view(cv).await,
            Statement::Insert(ins) => self.insert(ins).await,
            Statement::Update(u) => self.update(u, None).await,
            Statement::Delete(d) => self.delete(d, None).await,
            Statement::CreateTable(ct) => self.create_table(ct).await,
            Statement::Copy {
                source,
                to,
                target,
                options,
                legacy_options,
                values,
            } => {
                self.copy(source, to, target, &options, &legacy_options, values)
                    .await
            }
            Statement::Drop {
                object_type,
                if_exists,
                names,
                cascade,
                ..
            } => self.drop(object_type, &names, if_exists, cascade),
            Statement::CreateSchema {
                schema_name,
                if_not_exists,
                ..
            } => self.create_schema(&schema_name, if_not_exists),
            Statement::CreateDatabase {
                db_name,
                if_not_exists,
                default_collation,
                ..
            } => self.create_database(&db_name, if_not_exists, default_collation),
            Statement::CreateIndex(ci) => self.create_index(ci),
            Statement::Comment {
                object_type,
                object_name,
                comment,
                ..
            } => self.comment_on(object_type, &object_name, comment),
            Statement::CreateSequence {
                temporary,
                if_not_exists,
                name,
                data_type,
                sequence_options,
                owned_by,
            } => self.create_sequence(sequence::CreateSequence {
                temporary,
                if_not_exists,
                name,
                data_type,
                options: sequence_options,
                owned_by,
            }),
            Statement::AlterTable(at) => self.alter_table(at).await,
            Statement::Truncate(t) => self.truncate(t).await,
            Statement::StartTransaction { modes, .. } => Ok(self.begin_block(&modes)),
            Statement::Commit { chain, .. } => self.end_transaction(true, chain),
            Statement::Rollback {
                savepoint: None,
                chain,
            } => self.end_transaction(false, chain),
            Statement::Rollback {
                savepoint: Some(name),
                ..
            } => self.rollback_to_savepoint(&name),
            Statement::Savepoint { name } => self.savepoint(&name),
            Statement::Lock(lock) => self.lock_tables(lock),
            Statement::ReleaseSavepoint { name } => self.release_savepoint(&name),
            Statement::Declare { stmts } => {
                self.declare(stmts, ContinuousOptions::default(), false)
                    .await
            }
            Statement::Fetch {
                name, direction, ..
            } => self.fetch(&name, &direction, None, true).await,
            Statement::Close { cursor } => self.close(cursor),
            Statement::Set(set) => self.set(set),
            Statement::ShowVariable { variable } => self.show(&variable),
            Statement::Discard { object_type } => self.discard(object_type),
            // LISTEN is refused, so a session listens on no channel and UNLISTEN (asyncpg's
            // pool sends `UNLISTEN *` on release) has nothing to stop, as in PostgreSQL.
            Statement::UNLISTEN { .. } => Ok(Outcome::Command("UNLISTEN".into())),
            Statement::Reset(r) => self.reset(r),
            Statement::Deallocate { name, .. } => Ok(self.deallocate(&name)),
            Statement::Prepare {
                name,
                data_types,
                statement,
            } => self.prepare(name, data_types, *statement).await,
            stmt @ Statement::Execute { .. } => self.execute_prepared(stmt).await,
            Statement::Analyze(_) => Ok(Outcome::Command("ANALYZE".into())),
            Statement::CreateFunction(cf) => self.create_function(cf),
            Statement::DropFunction(df) => self.drop_function(df),
            other => Err(brook_err!(
                Unsupported,
                "statement not supported: {}",
                first_words(&other.to_string())
            )),
        }
    }
}
