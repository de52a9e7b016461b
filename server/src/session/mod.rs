//! One client connection's state: its context, settings, cursors, an open COPY and the
//! notices of its last statement. What statements do is in `crate::handler`.

pub mod cursor;
mod natural_joins;
pub mod notice;
pub mod prepared;
pub mod search_path;
mod table_aliases;
pub mod temp;
pub mod transaction;

use crate::catalog::{RelKind, RelationMeta};
use crate::copy::CopyOptions;
use crate::db::{Database, Engine};
use crate::ident::object_parts;
use crate::session::cursor::Cursor;
pub use crate::session::notice::Notice;
use crate::settings::parse_timeout;
use crate::settings::Settings;
use crate::storage::TableStore;
use crate::write::copy_in::CopyIn;
use brook_common::{brook_err, BrookError, Result};
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::execution::SendableRecordBatchStream;
use datafusion::prelude::SessionContext;
use datafusion::sql::sqlparser::ast::ObjectName;
use std::sync::Arc;

/// What a statement produced, for the wire layer to send.
pub enum Outcome {
    /// Rows (SELECT, SHOW, RETURNING, EXPLAIN).
    Rows {
        schema: SchemaRef,
        stream: SendableRecordBatchStream,
        tag: &'static str,
    },
    /// A command tag such as `CREATE TABLE` or `INSERT 0 3`.
    Command(String),
    /// COPY FROM STDIN is ready for data.
    CopyIn { columns: usize, binary: bool },
    /// COPY TO STDOUT: rows to format.
    CopyOut {
        opts: CopyOptions,
        stream: SendableRecordBatchStream,
    },
    /// BEGIN.
    TxnStart(String),
    /// COMMIT or ROLLBACK.
    TxnEnd(String),
}

/// One client connection's state.
pub struct Session {
    /// The shared engine.
    pub engine: Arc<Engine>,
    /// The database this session is connected to.
    pub db: Arc<Database>,
    /// This session's DataFusion context (its own settings, the database's catalog).
    pub ctx: SessionContext,
    /// Role name.
    pub user: String,
    pub(crate) settings: Settings,
    /// COPY FROM STDIN in progress.
    pub copy_in: Option<CopyIn>,
    pub(crate) cursors: std::collections::HashMap<String, Cursor>,
    /// The statements prepared with SQL `PREPARE`, by name.
    pub(crate) prepared: std::collections::HashMap<String, prepared::Prepared>,
    /// Notices and warnings of the last statement (the wire layer sends and clears them).
    pub(crate) notices: Vec<Notice>,
    /// The `OVERRIDING` clause of the INSERT being executed (set and cleared around it by
    /// `execute_statement`: sqlparser's INSERT has no place for it).
    pub(crate) overriding: Option<brook_planner::statement::Overriding>,
    /// The version of the database's user functions this session registered, and their
    /// names (see [`Session::sync_functions`]).
    functions_version: u64,
    function_names: Vec<String>,
    aggregate_names: Vec<String>,
    /// Set while this session applies the cluster log's entry at this position (the
    /// node's applier): its statements run and commit here instead of going to the log.
    pub(crate) applying: Option<u64>,
    /// The connection's backend pid (0 for the cluster applier's sessions).
    pub(crate) pid: i32,
    /// The transaction block open since BEGIN, if any. (A lock, not a plain field: writes
    /// enter it from statements that hold the session shared.)
    pub(crate) block: std::sync::Mutex<Option<transaction::TxnBlock>>,
    /// The settings the startup packet gave, which RESET goes back to.
    pub(crate) reset_values: std::collections::BTreeMap<String, String>,
    /// Whether this session created its temporary schema (`temp`).
    pub(crate) has_temp_schema: bool,
    /// That schema's name while it exists, for the sequence functions' name lookup.
    pub(crate) temp_schema_slot: Arc<std::sync::Mutex<Option<String>>>,
}

impl Drop for Session {
    fn drop(&mut self) {
        // An open block's transactions roll back as they drop (the log cut back, the locks
        // let go), its DDL is undone, and its entries in the lock graph go.
        let ended = self
            .block
            .get_mut()
            .unwrap_or_else(|p| p.into_inner())
            .take();
        let journal = ended.as_ref().and_then(|b| b.journal);
        drop(ended);
        if let Some(block) = journal {
            if let Err(e) = self.engine.undo_block_ddl(&self.db, block, 0) {
                tracing::error!(block, error = %e, "could not undo a closed session's transaction block's DDL; the next start undoes it");
            }
        }
        if self.pid != 0 {
            self.engine.lock_waits.release_all(self.pid);
        }
        // Temporary tables and views go with the session.
        if let Err(e) = self.drop_temp_schema() {
            tracing::warn!(error = %e, "could not drop a closed session's temporary schema; it is dropped at next start");
        }
    }
}

impl Session {
    /// A new session on database `db` for role `user`.
    pub fn new(engine: Arc<Engine>, db: Arc<Database>, user: String) -> Session {
        // The user functions the context's state holds (read before it is copied: a
        // function created meanwhile makes the version differ, and the next statement
        // registers it).
        let (functions_version, udfs, udafs) = db.user_functions();
        let ctx = SessionContext::new_with_state(db.ctx.state());
        let settings = Settings::default();
        crate::udf::functions::register_session(&ctx, &user, settings.clone());
        // pg_settings lists this session's settings.
        ctx.state_ref()
            .write()
            .config_mut()
            .set_extension(Arc::new(settings.clone()));
        let temp_schema_slot = Arc::new(std::sync::Mutex::new(None));
        crate::udf::sequences::register(
            &ctx,
            engine.catalog.clone(),
            &db.name,
            temp_schema_slot.clone(),
        );
        Session {
            engine,
            db,
            ctx,
            user,
            settings,
            copy_in: None,
            cursors: Default::default(),
            prepared: Default::default(),
            notices: Vec::new(),
            overriding: None,
            functions_version,
            function_names: udfs.iter().map(|u| u.name().to_string()).collect(),
            aggregate_names: udafs.iter().map(|a| a.name().to_string()).collect(),
            applying: None,
            pid: 0,
            block: std::sync::Mutex::new(None),
            reset_values: Default::default(),
            has_temp_schema: false,
            temp_schema_slot,
        }
    }

    /// Make this session apply the cluster log's entry at `position` (see
    /// [`Session::applying`]).
    pub fn apply_log_entry(&mut self, position: u64) {
        self.applying = Some(position);
    }

    /// Register the database's user functions as they are now, when they changed since
    /// this session last did (CREATE or DROP FUNCTION in any session): called before each
    /// statement is planned.
    pub(crate) fn sync_functions(&mut self) {
        let (version, udfs, udafs) = self.db.user_functions();
        if version == self.functions_version {
            return;
        }
        for name in self.function_names.drain(..) {
            self.ctx.deregister_udf(&name);
        }
        for name in self.aggregate_names.drain(..) {
            self.ctx.deregister_udaf(&name);
        }
        for u in &udfs {
            self.ctx.register_udf(u.as_ref().clone());
            self.function_names.push(u.name().to_string());
        }
        for a in &udafs {
            self.ctx.register_udaf(a.as_ref().clone());
            self.aggregate_names.push(a.name().to_string());
        }
        self.functions_version = version;
    }

    /// The connection's backend pid, as `pg_backend_pid()` answers it (the one
    /// `pg_stat_activity`, CancelRequest and `pg_cancel_backend` use).
    pub fn set_backend_pid(&mut self, pid: i32) {
        self.pid = pid;
        use datafusion::arrow::datatypes::DataType;
        use datafusion::logical_expr::{create_udf, ColumnarValue, Volatility};
        self.ctx.register_udf(create_udf(
            "pg_backend_pid",
            vec![],
            DataType::Int32,
            Volatility::Stable,
            Arc::new(move |_args: &[ColumnarValue]| {
                Ok(ColumnarValue::Scalar(
                    datafusion::scalar::ScalarValue::Int32(Some(pid)),
                ))
            }),
        ));
    }

    /// The cancellation token of the statement about to run: plans executed for it stop
    /// when it is cancelled (see [`crate::exec::cancellable`]).
    pub fn set_statement_token(&self, token: tokio_util::sync::CancellationToken) {
        let cancel = crate::exec::cancellable::StatementCancel::new(token);
        let state = self.ctx.state_ref();
        let mut st = state.write();
        st.config_mut().options_mut().extensions.insert(
            crate::exec::cancellable::StatementInterrupt(Some(cancel.clone())),
        );
        st.config_mut().set_extension(Arc::new(cancel));
    }

    /// The running statement's cancellation (see [`Self::set_statement_token`]).
    pub(crate) fn statement_cancel(&self) -> Option<crate::exec::cancellable::StatementCancel> {
        self.ctx
            .state()
            .config()
            .get_extension::<crate::exec::cancellable::StatementCancel>()
            .map(|c| c.as_ref().clone())
    }

    /// Report a server-wide setting the server was started with (e.g. `max_connections`),
    /// as `SHOW` and `current_setting()` give it.
    pub fn report_setting(&mut self, name: &str, value: &str) {
        self.settings.set(name, value);
    }

    pub(crate) fn current_schema(&self) -> String {
        self.ctx
            .state()
            .config()
            .options()
            .catalog
            .default_schema
            .clone()
    }

    /// Split a possibly-qualified name into (schema, relation).
    pub(crate) fn resolve(&self, name: &ObjectName) -> Result<(String, String)> {
        let parts = object_parts(name)?;
        match parts.as_slice() {
            // Along the search path, the temporary schema first (`search_path.rs`).
            [t] => Ok((
                self.schema_of(t).unwrap_or_else(|| self.current_schema()),
                t.clone(),
            )),
            [s, t] => Ok((self.schema_named(s)?, t.clone())),
            [d, s, t] if *d == self.db.name => Ok((self.schema_named(s)?, t.clone())),
            [d, _, _] => Err(brook_err!(
                Unsupported,
                "cross-database references are not implemented: \"{d}\""
            )),
            _ => Err(brook_err!(
                Syntax,
                "improper qualified name (too many dotted names): {name}"
            )),
        }
    }

    /// The schema and name a new relation called `name` gets: as [`Session::resolve`],
    /// except that an unqualified name is created in the current schema even when a
    /// temporary relation has it (PostgreSQL's creation namespace), and `temporary`
    /// creates in this session's temporary schema (42P16 for any other schema named).
    pub(crate) fn resolve_new(
        &mut self,
        name: &ObjectName,
        temporary: bool,
    ) -> Result<(String, String)> {
        let parts = object_parts(name)?;
        // `CREATE TABLE pg_temp.t` makes a temporary table, as in PostgreSQL.
        let temporary = temporary || matches!(parts.as_slice(), [s, _] if s == "pg_temp");
        if !temporary {
            return match parts.as_slice() {
                [t] => Ok((self.current_schema(), t.clone())),
                _ => self.resolve(name),
            };
        }
        let (schema, rel) = self.resolve(name)?;
        let temp = self.temp_schema()?;
        if parts.len() > 1 && schema != temp {
            return Err(brook_err!(
                InvalidDefinition,
                "cannot create temporary relation in non-temporary schema"
            ));
        }
        Ok((temp, rel))
    }

    /// The catalog entry and store of a relation (42P01 when absent).
    pub(crate) fn relation(
        &self,
        schema: &str,
        name: &str,
    ) -> Result<(RelationMeta, Arc<TableStore>)> {
        let meta = {
            let doc = self.engine.catalog.read();
            let db = doc.database(&self.db.name)?;
            match db.schemas.get(schema).and_then(|s| s.relations.get(name)) {
                Some(m) => m.clone(),
                None => return Err(BrookError::UndefinedTable(name.into())),
            }
        };
        let store = self.engine.store(meta.id)?;
        Ok((meta, store))
    }

    /// A relation that statements may write (not a materialized view: 42809, as PostgreSQL).
    pub(crate) fn writable(
        &self,
        schema: &str,
        name: &str,
    ) -> Result<(RelationMeta, Arc<TableStore>)> {
        let (meta, store) = match self.relation(schema, name) {
            Err(BrookError::UndefinedTable(_)) if self.is_sequence(schema, name) => {
                return Err(brook_err!(
                    WrongObjectType,
                    "cannot change sequence \"{name}\""
                ))
            }
            other => other?,
        };
        if meta.kind.is_maintained() || meta.kind == RelKind::View {
            return Err(brook_err!(
                WrongObjectType,
                "cannot change {} \"{name}\"",
                meta.kind.noun()
            ));
        }
        Ok((meta, store))
    }

    /// True when `schema.name` is a sequence of this database.
    pub(crate) fn is_sequence(&self, schema: &str, name: &str) -> bool {
        let doc = self.engine.catalog.read();
        doc.database(&self.db.name)
            .ok()
            .and_then(|d| d.schemas.get(schema))
            .is_some_and(|s| s.sequences.contains_key(name))
    }

    /// Notices and warnings of the statements run since the last call, those below the
    /// session's `client_min_messages` left out (`warning` keeps warnings only, `error`
    /// neither; restore scripts from pg_dump set `warning`).
    pub fn take_notices(&mut self) -> Vec<Notice> {
        let mut notices = std::mem::take(&mut self.notices);
        let threshold = self.settings.get("client_min_messages").unwrap_or_default();
        let least = match threshold.as_str() {
            "warning" => 1,
            "error" => 2,
            _ => 0,
        };
        notices.retain(|n| usize::from(n.warning) >= least);
        notices
    }

    /// A timeout setting (`statement_timeout`, `lock_timeout`, ...): None when 0 (off).
    pub fn timeout_setting(&self, name: &str) -> Result<Option<std::time::Duration>> {
        let v = self.settings.get(name).unwrap_or_default();
        let d = parse_timeout(&v)?;
        Ok((!d.is_zero()).then_some(d))
    }
}
