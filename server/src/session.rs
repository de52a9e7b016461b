//! A client session: settings, transaction state and the execution of every statement kind.

use crate::catalog::{ColumnMeta, IndexMeta, RelKind, RelationMeta, WatermarkMeta, DEFAULT_SCHEMA};
use crate::continuous::QueryStats;
use crate::copy::{
    BatchBuilder, CopyFormat, CopyOptions, CopyParser, CopyTarget, RawBatch, BATCH_ROWS,
};
use crate::engine::{Database, Engine, SERVER_VERSION};
use crate::storage::{TableStore, WriteTxn};
use crate::types::PgType;
use brook_common::{BrookError, Result};
use brook_operators::graph::GraphPlan;
use brook_planner::continuous::{plan_continuous, ContinuousOptions};
use brook_planner::{BrookStatement, CreateStream};
use datafusion::arrow::array::{Array, ArrayRef, BooleanArray, RecordBatch, StringArray};
use datafusion::arrow::compute::{cast_with_options, filter_record_batch, CastOptions};
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use datafusion::arrow::row::{RowConverter, SortField};
use datafusion::execution::SendableRecordBatchStream;
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::prelude::SessionContext;
use datafusion::sql::parser::Statement as DFStatement;
use datafusion::sql::sqlparser::ast::{
    self, AlterTableOperation, AssignmentTarget, ColumnOption, CopySource,
    CopyTarget as SqlCopyTarget, Expr, FromTable, Ident, ObjectName, ObjectType, OnConflictAction,
    OnInsert, SelectItem, Statement, TableConstraint, TableFactor, TableObject,
};
use futures::StreamExt;
use std::collections::{BTreeMap, HashSet};
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

/// A COPY FROM STDIN in progress.
pub struct CopyIn {
    parser: CopyParser,
    builder: BatchBuilder,
    writer: CopyWriter,
}

/// Where a COPY's rows are converted and written to the log.
enum CopyWriter {
    /// In the connection's task, as they are read (until the COPY fills a batch).
    Here(Box<BatchWriter>),
    /// On a thread of its own, so that reading and splitting the next rows (this task) and
    /// converting and writing the last ones (that thread) use two cores. Batches arrive in
    /// order; the thread hands the transaction back when the channel closes.
    Thread {
        batches: tokio::sync::mpsc::Sender<RawBatch>,
        done: tokio::task::JoinHandle<Result<BatchWriter>>,
    },
    /// Moved out while switching or finishing (the COPY ends right after).
    Switching,
}

/// Converts a COPY's batches, checks their keys and appends them to its transaction.
struct BatchWriter {
    target: Arc<CopyTarget>,
    txn: WriteTxn,
    keys: Option<KeyCheck>,
}

impl BatchWriter {
    fn write(&mut self, raw: RawBatch) -> Result<()> {
        if raw.is_empty() {
            return Ok(());
        }
        let batch = raw.into_batch(&self.target)?;
        if let Some(k) = self.keys.as_mut() {
            if let Some(row) = k.conflicts(&batch, true)?.iter().position(|&c| c) {
                return Err(k.violation(&batch, row));
            }
        }
        self.txn.append(&batch)
    }

    /// Write what arrives until the sender is dropped.
    fn write_all(mut self, mut batches: tokio::sync::mpsc::Receiver<RawBatch>) -> Result<Self> {
        while let Some(raw) = batches.blocking_recv() {
            self.write(raw)?;
        }
        Ok(self)
    }
}

impl CopyWriter {
    /// Hand over the batches read, starting the writer thread once there are any (a COPY
    /// of less than one batch never starts it).
    async fn send(&mut self, ready: Vec<RawBatch>) -> Result<()> {
        if ready.is_empty() {
            return Ok(());
        }
        if let CopyWriter::Here(_) = self {
            let CopyWriter::Here(w) = std::mem::replace(self, CopyWriter::Switching) else {
                return Err(BrookError::internal("COPY writer vanished"));
            };
            // A few batches in flight: enough to keep both cores busy, bounded so that a
            // fast client cannot make the server buffer its whole input.
            let (tx, rx) = tokio::sync::mpsc::channel(4);
            let done = tokio::task::spawn_blocking(move || w.write_all(rx));
            *self = CopyWriter::Thread { batches: tx, done };
        }
        let CopyWriter::Thread { batches, .. } = self else {
            return Err(BrookError::internal("COPY writer vanished"));
        };
        for raw in ready {
            if batches.send(raw).await.is_err() {
                // The writer stopped on an error: that error is the COPY's.
                return Err(self.finish().await.err().unwrap_or_else(|| {
                    BrookError::internal("COPY writer stopped without an error")
                }));
            }
        }
        Ok(())
    }

    /// Wait for every batch to be written; the writer back.
    async fn finish(&mut self) -> Result<BatchWriter> {
        match std::mem::replace(self, CopyWriter::Switching) {
            CopyWriter::Here(w) => Ok(*w),
            CopyWriter::Thread { batches, done } => {
                drop(batches);
                done.await
                    .map_err(|e| BrookError::internal(format!("COPY writer failed: {e}")))?
            }
            CopyWriter::Switching => Err(BrookError::internal("COPY writer vanished")),
        }
    }
}

/// Primary-key enforcement for one write statement.
struct KeyCheck {
    columns: Vec<usize>,
    converter: RowConverter,
    seen: HashSet<Box<[u8]>>,
    table: String,
    names: Vec<String>,
}

impl KeyCheck {
    /// An empty key set for the primary key of `meta` (None when it has no key).
    fn new(meta: &RelationMeta, table: &str) -> Result<Option<KeyCheck>> {
        if meta.primary_key.is_empty() {
            return Ok(None);
        }
        let schema = meta.schema();
        let fields: Vec<SortField> = meta
            .primary_key
            .iter()
            .map(|&i| SortField::new(schema.field(i).data_type().clone()))
            .collect();
        Ok(Some(KeyCheck {
            columns: meta.primary_key.clone(),
            converter: RowConverter::new(fields)?,
            seen: HashSet::new(),
            table: table.to_string(),
            names: meta
                .primary_key
                .iter()
                .map(|&i| meta.columns[i].name.clone())
                .collect(),
        }))
    }

    /// Rows of `batch` whose key already exists (or repeats within the batch).
    fn conflicts(&mut self, batch: &RecordBatch, insert: bool) -> Result<Vec<bool>> {
        let cols: Vec<ArrayRef> = self
            .columns
            .iter()
            .map(|&i| batch.column(i).clone())
            .collect();
        let rows = self.converter.convert_columns(&cols)?;
        let mut out = Vec::with_capacity(batch.num_rows());
        for r in rows.iter() {
            let key: Box<[u8]> = r.as_ref().into();
            if self.seen.contains(&key) {
                out.push(true);
            } else {
                if insert {
                    self.seen.insert(key);
                }
                out.push(false);
            }
        }
        Ok(out)
    }

    fn violation(&self, batch: &RecordBatch, row: usize) -> BrookError {
        let vals: Vec<String> = self
            .columns
            .iter()
            .map(|&c| {
                datafusion::arrow::util::display::array_value_to_string(batch.column(c), row)
                    .unwrap_or_default()
            })
            .collect();
        BrookError::UniqueViolation(format!(
            "duplicate key value violates unique constraint \"{}_pkey\": Key ({})=({}) already exists.",
            self.table,
            self.names.join(", "),
            vals.join(", ")
        ))
    }
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
    settings: Settings,
    /// COPY FROM STDIN in progress.
    pub copy_in: Option<CopyIn>,
    cursors: std::collections::HashMap<String, Cursor>,
    /// NOTICE messages of the last statement (the wire layer sends and clears them).
    notices: Vec<String>,
}

/// A maintained relation to create: where, its query, and how the catalog records it.
struct Maintained {
    schema: String,
    name: String,
    sql: String,
    kind: RelKind,
    options: BTreeMap<String, String>,
    depends_on: Vec<(String, String)>,
    if_not_exists: bool,
}

/// An open cursor (`DECLARE name CURSOR FOR query`): the query's result stream, read on
/// demand by FETCH so that only what the client asked for is materialized.
struct Cursor {
    schema: SchemaRef,
    /// Behind a mutex only to make the session `Sync`; it is reached through `&mut self`
    /// (`get_mut`), never locked.
    stream: std::sync::Mutex<SendableRecordBatchStream>,
    /// A batch partly handed out, and how many of its rows were.
    pending: Option<(RecordBatch, usize)>,
    /// `WITH HOLD`: survives the end of the transaction.
    hold: bool,
    /// Set for a continuous cursor: its query's statistics. Its stream never ends; FETCH
    /// returns what is ready, waiting up to a timeout for the first rows.
    continuous: Option<Arc<QueryStats>>,
}

impl Cursor {
    /// Up to `n` next rows (all remaining when `n` is None).
    ///
    /// A snapshot cursor (`wait` None) reads until it has `n` rows or its query ends. A
    /// continuous cursor's query never ends: it returns what is ready now, or, when nothing
    /// is, the first rows that arrive within `wait` (none at timeout: an empty result, not
    /// an error).
    async fn fetch(
        &mut self,
        n: Option<usize>,
        wait: Option<std::time::Duration>,
    ) -> Result<Vec<RecordBatch>> {
        use futures::FutureExt;
        let deadline = wait.map(|w| tokio::time::Instant::now() + w);
        let mut out: Vec<RecordBatch> = Vec::new();
        let mut want = n.unwrap_or(usize::MAX);
        while want > 0 {
            let (batch, off) = match self.pending.take() {
                Some(p) => p,
                None => {
                    let stream = self
                        .stream
                        .get_mut()
                        .map_err(|_| BrookError::internal("cursor poisoned"))?;
                    let next = match deadline {
                        None => stream.next().await,
                        Some(d) if out.is_empty() => {
                            match tokio::time::timeout_at(d, stream.next()).await {
                                Ok(next) => next,
                                Err(_) => break,
                            }
                        }
                        Some(_) => match stream.next().now_or_never() {
                            Some(next) => next,
                            None => break,
                        },
                    };
                    match next {
                        Some(b) => (b?, 0),
                        None => break,
                    }
                }
            };
            let left = batch.num_rows() - off;
            let take = left.min(want);
            if take > 0 {
                out.push(batch.slice(off, take));
            }
            want -= take;
            if off + take < batch.num_rows() {
                self.pending = Some((batch, off + take));
            }
        }
        Ok(out)
    }
}

/// A session's settings, shared with its `current_setting()` function.
#[derive(Debug, Clone)]
pub struct Settings(Arc<std::sync::RwLock<BTreeMap<String, String>>>);

impl Default for Settings {
    fn default() -> Self {
        Settings(Arc::new(std::sync::RwLock::new(default_settings())))
    }
}

impl Settings {
    fn read(&self) -> std::sync::RwLockReadGuard<'_, BTreeMap<String, String>> {
        self.0.read().unwrap_or_else(|p| p.into_inner())
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, BTreeMap<String, String>> {
        self.0.write().unwrap_or_else(|p| p.into_inner())
    }

    /// The value of `key` (lower case).
    pub fn get(&self, key: &str) -> Option<String> {
        self.read().get(key).cloned()
    }

    fn set(&self, key: impl Into<String>, value: impl Into<String>) {
        self.write().insert(key.into(), value.into());
    }

    fn remove(&self, key: &str) {
        self.write().remove(key);
    }

    fn contains(&self, key: &str) -> bool {
        self.read().contains_key(key)
    }

    fn reset(&self) {
        *self.write() = default_settings();
    }

    fn entries(&self) -> Vec<(String, String)> {
        self.read()
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect()
    }
}

fn default_settings() -> BTreeMap<String, String> {
    [
        ("server_version", SERVER_VERSION),
        ("server_version_num", "160006"),
        ("server_encoding", "UTF8"),
        ("client_encoding", "UTF8"),
        ("datestyle", "ISO, MDY"),
        ("intervalstyle", "postgres"),
        ("timezone", "UTC"),
        ("integer_datetimes", "on"),
        ("standard_conforming_strings", "on"),
        ("extra_float_digits", "1"),
        ("application_name", ""),
        ("search_path", "\"$user\", public"),
        ("transaction_isolation", "read committed"),
        ("default_transaction_isolation", "read committed"),
        ("transaction_read_only", "off"),
        ("default_transaction_read_only", "off"),
        ("statement_timeout", "0"),
        ("lock_timeout", "0"),
        ("idle_in_transaction_session_timeout", "0"),
        ("max_identifier_length", "63"),
        ("lc_collate", "C"),
        ("lc_ctype", "C"),
        ("lc_messages", "C"),
        ("lc_monetary", "C"),
        ("lc_numeric", "C"),
        ("is_superuser", "on"),
        ("bytea_output", "hex"),
        ("client_min_messages", "notice"),
        ("row_security", "on"),
        ("synchronous_commit", "on"),
        ("geqo", "on"),
        ("jit", "off"),
        ("work_mem", "4MB"),
        ("max_connections", "100"),
        ("default_with_oids", "off"),
        (FETCH_TIMEOUT, "1s"),
        (APPROX_ERROR, "0"),
        (APPROX_CONFIDENCE, "0.95"),
        (APPROX_REPORT, "notice"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect()
}

/// Setting: how long FETCH on a continuous cursor waits for rows when none are ready.
pub const FETCH_TIMEOUT: &str = "brook.fetch_timeout";
/// Setting: the accepted error of approximate answers (`0`: every answer exact).
pub const APPROX_ERROR: &str = "approx.error";
/// Setting: how sure the error bound of an approximate answer must be.
pub const APPROX_CONFIDENCE: &str = "approx.confidence";
/// Setting: how approximate answers report their bound (`notice` or `columns`).
pub const APPROX_REPORT: &str = "approx.report";

/// A numeric setting's value (22023 when not a number).
fn parse_setting_f64(name: &str, value: &str) -> Result<f64> {
    value.trim().parse().map_err(|_| {
        BrookError::InvalidParameter(format!(
            "invalid value for parameter \"{name}\": \"{value}\""
        ))
    })
}

/// A duration setting: a number with unit `ms`, `s`, `min` (or their long names); a bare
/// number is milliseconds, as PostgreSQL's `statement_timeout`.
pub fn parse_timeout(text: &str) -> Result<std::time::Duration> {
    let t = text.trim().trim_matches('\'').trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let bad = || {
        BrookError::InvalidParameter(format!(
            "invalid timeout \"{text}\" (use e.g. '500ms' or '2s')"
        ))
    };
    let n: f64 = num.parse().map_err(|_| bad())?;
    let scale = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "ms" | "millisecond" | "milliseconds" => 0.001,
        "s" | "sec" | "secs" | "second" | "seconds" => 1.0,
        "min" | "mins" | "minute" | "minutes" => 60.0,
        _ => return Err(bad()),
    };
    let secs = n * scale;
    if !secs.is_finite() || !(0.0..=86_400.0).contains(&secs) {
        return Err(bad());
    }
    Ok(std::time::Duration::from_secs_f64(secs))
}

/// The continuous plan of `plan` and the stores of its sources (see `Session::continuous`).
/// A materialized view read by the plan is a stream of its changes: its definition is
/// planned in its place (so a cursor over a view over a stream is continuous too).
pub async fn continuous_plan(
    ctx: &SessionContext,
    plan: &datafusion::logical_expr::LogicalPlan,
    options: ContinuousOptions,
    force: bool,
) -> Result<Option<(GraphPlan, Vec<Arc<TableStore>>)>> {
    let state = ctx.state();
    let optimized = state.optimize(plan)?;
    let mut views = crate::continuous::ViewPlans::new();
    crate::continuous::plan_views(ctx, &optimized, &mut views).await?;
    let streams = crate::continuous::reads_stream(&optimized)
        || views
            .values()
            .any(|v| crate::continuous::reads_stream(&v.plan));
    if !force && !streams {
        return Ok(None);
    }
    let resolver = crate::continuous::Resolver::new(&state, views);
    let graph = plan_continuous(&optimized, &state, &resolver, options)?;
    Ok(Some((graph, resolver.stores.into_inner())))
}

/// A view's defining SQL (a query, possibly ending in an EMIT clause) as a query and the
/// options it runs with.
fn parse_view_sql(sql: &str) -> Result<(Statement, ContinuousOptions)> {
    let (stmt, options) = match brook_planner::parser::parse_one(sql)? {
        BrookStatement::Sql(s) => (*s, ContinuousOptions::default()),
        BrookStatement::Emit {
            stmt,
            on_window_close,
        } => (
            *stmt,
            ContinuousOptions {
                emit_on_window_close: on_window_close,
            },
        ),
        _ => return Err(BrookError::Syntax("a view is defined by a query".into())),
    };
    if !matches!(stmt, Statement::Query(_)) {
        return Err(BrookError::Syntax("a view is defined by a query".into()));
    }
    Ok((stmt, options))
}

/// A view's defining SQL as an optimized logical plan, and the options it runs with.
pub async fn view_logical_plan(
    ctx: &SessionContext,
    sql: &str,
) -> Result<(datafusion::logical_expr::LogicalPlan, ContinuousOptions)> {
    let (mut stmt, options) = parse_view_sql(sql)?;
    pg_literals(&mut stmt)?;
    let state = ctx.state();
    let plan = state
        .statement_to_plan(DFStatement::Statement(Box::new(stmt)))
        .await?;
    Ok((state.optimize(&plan)?, options))
}

/// Plan a materialized view's SQL (a query, possibly ending in an EMIT clause): its graph,
/// input stores and result schema with PostgreSQL column names.
pub async fn plan_view_sql(
    ctx: &SessionContext,
    sql: &str,
) -> Result<(GraphPlan, Vec<Arc<TableStore>>, SchemaRef)> {
    let (stmt, options) = parse_view_sql(sql)?;
    let planned = plan_query_continuous(ctx, stmt, options).await?;
    let schema = pg_named(planned.graph.schema().as_ref().clone(), planned.names);
    Ok((planned.graph, planned.stores, schema))
}

/// A query planned to run continuously.
pub struct PlannedContinuous {
    /// The operator graph.
    pub graph: GraphPlan,
    /// The stores of its sources, in source order.
    pub stores: Vec<Arc<TableStore>>,
    /// PostgreSQL's names of its result columns.
    pub names: Option<Vec<brook_planner::rewrite::OutputName>>,
}

/// Plan a query statement to run continuously, over streams and tables alike (what `EMIT`
/// and materialized views ask for).
pub async fn plan_query_continuous(
    ctx: &SessionContext,
    mut q: Statement,
    options: ContinuousOptions,
) -> Result<PlannedContinuous> {
    let names = brook_planner::rewrite::output_names(&q);
    pg_literals(&mut q)?;
    let plan = ctx
        .state()
        .statement_to_plan(DFStatement::Statement(Box::new(q)))
        .await?;
    let (graph, stores) = continuous_plan(ctx, &plan, options, true)
        .await?
        .ok_or_else(|| BrookError::internal("forced continuous plan missing"))?;
    Ok(PlannedContinuous {
        graph,
        stores,
        names,
    })
}

/// Catalog columns for a query result stored by `what` (CREATE TABLE AS, a view): types
/// from `types`, names from `names` (the names the client sees).
fn stored_columns(types: &SchemaRef, names: &SchemaRef, what: &str) -> Result<Vec<ColumnMeta>> {
    types
        .fields()
        .iter()
        .zip(names.fields())
        .map(|(f, named)| {
            let ty = PgType::from_field(f)
                .or_else(|| pg_type_of_arrow(f.data_type()))
                .ok_or_else(|| {
                    BrookError::unsupported(format!(
                        "column \"{}\" has type {} which {what} cannot store",
                        named.name(),
                        f.data_type()
                    ))
                })?;
            Ok(ColumnMeta {
                name: named.name().clone(),
                ty,
                not_null: false,
                default: None,
            })
        })
        .collect()
}

/// The columns a continuous query sends: its own, plus `_brook_op` when it is updating.
fn wire_schema(
    graph: &GraphPlan,
    names: Option<Vec<brook_planner::rewrite::OutputName>>,
) -> SchemaRef {
    let schema = pg_named(graph.schema().as_ref().clone(), names);
    if graph.updating() {
        brook_operators::change::with_change_field(&schema)
    } else {
        schema
    }
}

fn emit_misplaced() -> BrookError {
    BrookError::unsupported(
        "EMIT ON WINDOW CLOSE outside DECLARE CURSOR (it applies to continuous queries)",
    )
}

/// Normalise an identifier as PostgreSQL does: unquoted names fold to lower case.
pub fn ident_name(i: &Ident) -> String {
    if i.quote_style.is_some() {
        i.value.clone()
    } else {
        i.value.to_lowercase()
    }
}

fn object_parts(name: &ObjectName) -> Result<Vec<String>> {
    name.0
        .iter()
        .map(|p| match p.as_ident() {
            Some(i) => Ok(ident_name(i)),
            None => Err(BrookError::Syntax(format!(
                "syntax error: unexpected name {p}"
            ))),
        })
        .collect()
}

fn quote_ident(s: &str) -> String {
    format!("\"{}\"", s.replace('"', "\"\""))
}

impl Session {
    /// A new session on database `db` for role `user`.
    pub fn new(engine: Arc<Engine>, db: Arc<Database>, user: String) -> Session {
        let ctx = SessionContext::new_with_state(db.ctx.state());
        let settings = Settings::default();
        crate::functions::register_session(&ctx, &user, settings.clone());
        Session {
            engine,
            db,
            ctx,
            user,
            settings,
            copy_in: None,
            cursors: Default::default(),
            notices: Vec::new(),
        }
    }

    /// The cancellation token of the statement about to run: plans executed for it stop
    /// when it is cancelled (see [`crate::cancellable`]).
    pub fn set_statement_token(&self, token: tokio_util::sync::CancellationToken) {
        let state = self.ctx.state_ref();
        let mut st = state.write();
        st.config_mut()
            .set_extension(Arc::new(crate::cancellable::StatementCancel(token)));
    }

    /// Report a server-wide setting the server was started with (e.g. `max_connections`),
    /// as `SHOW` and `current_setting()` give it.
    pub fn report_setting(&mut self, name: &str, value: &str) {
        self.settings.set(name, value);
    }

    fn current_schema(&self) -> String {
        self.ctx
            .state()
            .config()
            .options()
            .catalog
            .default_schema
            .clone()
    }

    /// Split a possibly-qualified name into (schema, relation).
    fn resolve(&self, name: &ObjectName) -> Result<(String, String)> {
        let parts = object_parts(name)?;
        match parts.as_slice() {
            [t] => Ok((self.current_schema(), t.clone())),
            [s, t] => Ok((s.clone(), t.clone())),
            [d, s, t] if *d == self.db.name => Ok((s.clone(), t.clone())),
            [d, _, _] => Err(BrookError::unsupported(format!(
                "cross-database references are not implemented: \"{d}\""
            ))),
            _ => Err(BrookError::Syntax(format!(
                "improper qualified name (too many dotted names): {name}"
            ))),
        }
    }

    /// The catalog entry and store of a relation (42P01 when absent).
    fn relation(&self, schema: &str, name: &str) -> Result<(RelationMeta, Arc<TableStore>)> {
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
    fn writable(&self, schema: &str, name: &str) -> Result<(RelationMeta, Arc<TableStore>)> {
        let (meta, store) = self.relation(schema, name)?;
        if meta.kind.is_maintained() {
            return Err(BrookError::WrongObjectType(format!(
                "cannot change {} \"{name}\"",
                meta.kind.noun()
            )));
        }
        Ok((meta, store))
    }

    /// Execute one statement.
    pub async fn execute(&mut self, stmt: BrookStatement) -> Result<Outcome> {
        let (stmt, replaced) = self.approximated(stmt)?;
        self.notices.extend(replaced.iter().map(|r| r.notice()));
        match stmt {
            BrookStatement::CreateStream(cs) => self.create_stream(*cs).await,
            BrookStatement::DropStream {
                names,
                if_exists,
                cascade,
            } => self.drop_relations(&names, RelKind::Stream, if_exists, cascade, "DROP STREAM"),
            BrookStatement::Sql(s) => self.execute_sql(*s).await,
            BrookStatement::CreateSynopsis(cs) => self.create_synopsis(*cs).await,
            BrookStatement::DropSynopsis {
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
            BrookStatement::Approx { .. } => Err(BrookError::Syntax(
                "syntax error: WITH ERROR given twice".into(),
            )),
            BrookStatement::FetchWith { fetch, timeout } => {
                let timeout = match timeout {
                    Some(t) => Some(parse_timeout(&t)?),
                    None => None,
                };
                match *fetch {
                    Statement::Fetch {
                        name, direction, ..
                    } => self.fetch(&name, &direction, timeout).await,
                    _ => Err(BrookError::internal("FETCH WITH is not a FETCH")),
                }
            }
            BrookStatement::Emit {
                stmt,
                on_window_close,
            } => {
                let options = ContinuousOptions {
                    emit_on_window_close: on_window_close,
                };
                self.execute_emit(*stmt, options).await
            }
        }
    }

    /// NOTICE messages of the statements run since the last call.
    pub fn take_notices(&mut self) -> Vec<String> {
        std::mem::take(&mut self.notices)
    }

    /// The session's accuracy budget (`approx.error` > 0), if any.
    fn session_budget(&self) -> Result<Option<brook_planner::approx::Budget>> {
        let error = self.settings.get(APPROX_ERROR).unwrap_or_default();
        let error = error.trim();
        if error.is_empty() || error == "0" || error.eq_ignore_ascii_case("off") {
            return Ok(None);
        }
        let confidence = self.settings.get(APPROX_CONFIDENCE).unwrap_or_default();
        Ok(Some(brook_planner::approx::Budget::new(
            parse_setting_f64(APPROX_ERROR, error)?,
            parse_setting_f64(APPROX_CONFIDENCE, &confidence)?,
        )?))
    }

    /// Apply the accuracy budget (the statement's `WITH ERROR` clause, else the session's):
    /// the statement with exact aggregates replaced by synopses, and what was replaced.
    fn approximated(
        &self,
        stmt: BrookStatement,
    ) -> Result<(BrookStatement, Vec<brook_planner::approx::Replacement>)> {
        use brook_planner::approx::{approximate, Budget, Report};
        let (inner, budget) = match stmt {
            BrookStatement::Approx {
                stmt,
                error,
                confidence,
            } => {
                let confidence = match confidence {
                    Some(c) => c,
                    None => parse_setting_f64(
                        APPROX_CONFIDENCE,
                        &self.settings.get(APPROX_CONFIDENCE).unwrap_or_default(),
                    )?,
                };
                (*stmt, Some(Budget::new(error, confidence)?))
            }
            other => (other, self.session_budget()?),
        };
        let Some(budget) = budget else {
            return Ok((inner, Vec::new()));
        };
        let report = Report::parse(&self.settings.get(APPROX_REPORT).unwrap_or_default())?;
        match inner {
            BrookStatement::Sql(mut s) => {
                let done = approximate(&mut s, budget, report)?;
                Ok((BrookStatement::Sql(s), done))
            }
            BrookStatement::Emit {
                mut stmt,
                on_window_close,
            } => {
                let done = approximate(&mut stmt, budget, report)?;
                Ok((
                    BrookStatement::Emit {
                        stmt,
                        on_window_close,
                    },
                    done,
                ))
            }
            other => Ok((other, Vec::new())),
        }
    }

    async fn execute_sql(&mut self, mut stmt: Statement) -> Result<Outcome> {
        let names = brook_planner::rewrite::output_names(&stmt);
        pg_literals(&mut stmt)?;
        match stmt {
            Statement::Explain { statement, .. }
                if matches!(*statement, Statement::Declare { .. }) =>
            {
                let Statement::Declare { stmts } = *statement else {
                    return Err(BrookError::internal("EXPLAIN DECLARE lost its DECLARE"));
                };
                let [d] = stmts.as_slice() else {
                    return Err(BrookError::Syntax("DECLARE takes one cursor name".into()));
                };
                let q = d
                    .for_query
                    .clone()
                    .ok_or_else(|| BrookError::Syntax("DECLARE CURSOR needs FOR <query>".into()))?;
                let q = Box::pin(self.explain_continuous(
                    Statement::Query(q),
                    ContinuousOptions::default(),
                    false,
                ));
                q.await
            }
            Statement::Query(_) | Statement::Explain { .. } => {
                self.run_query(stmt, "SELECT", names).await
            }
            Statement::CreateView(cv) if cv.materialized => {
                self.create_materialized_view(cv, ContinuousOptions::default())
                    .await
            }
            Statement::Insert(ins) => self.insert(ins).await,
            Statement::Update(u) => self.update(u).await,
            Statement::Delete(d) => self.delete(d).await,
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
            } => match object_type {
                ObjectType::Table => {
                    self.drop_relations(&names, RelKind::Table, if_exists, cascade, "DROP TABLE")
                }
                ObjectType::MaterializedView => self.drop_relations(
                    &names,
                    RelKind::MaterializedView,
                    if_exists,
                    cascade,
                    "DROP MATERIALIZED VIEW",
                ),
                ObjectType::Schema => {
                    for n in &names {
                        let name = object_parts(n)?.join(".");
                        self.engine
                            .drop_schema(&self.db, &name, if_exists, cascade)?;
                    }
                    Ok(Outcome::Command("DROP SCHEMA".into()))
                }
                ObjectType::Database => {
                    for n in &names {
                        let name = object_parts(n)?.join(".");
                        if name == self.db.name {
                            return Err(BrookError::ObjectInUse(format!(
                                "cannot drop the currently open database \"{name}\""
                            )));
                        }
                        self.engine.drop_database(&name, if_exists)?;
                    }
                    Ok(Outcome::Command("DROP DATABASE".into()))
                }
                ObjectType::Index => self.drop_indexes(&names, if_exists),
                other => Err(BrookError::unsupported(format!("DROP {other}"))),
            },
            Statement::CreateSchema {
                schema_name,
                if_not_exists,
                ..
            } => {
                let name = match &schema_name {
                    ast::SchemaName::Simple(n) => object_parts(n)?.join("."),
                    other => return Err(BrookError::unsupported(format!("CREATE SCHEMA {other}"))),
                };
                self.engine.create_schema(&self.db, &name, if_not_exists)?;
                Ok(Outcome::Command("CREATE SCHEMA".into()))
            }
            Statement::CreateDatabase {
                db_name,
                if_not_exists,
                ..
            } => {
                self.engine
                    .create_database(&object_parts(&db_name)?.join("."), if_not_exists)?;
                Ok(Outcome::Command("CREATE DATABASE".into()))
            }
            Statement::CreateIndex(ci) => self.create_index(ci),
            Statement::AlterTable(at) => self.alter_table(at).await,
            Statement::Truncate(t) => self.truncate(t).await,
            Statement::StartTransaction { .. } => Ok(Outcome::TxnStart("BEGIN".into())),
            Statement::Commit { .. } => {
                self.end_transaction();
                Ok(Outcome::TxnEnd("COMMIT".into()))
            }
            Statement::Rollback {
                savepoint: None, ..
            } => {
                self.end_transaction();
                Ok(Outcome::TxnEnd("ROLLBACK".into()))
            }
            Statement::Declare { stmts } => {
                self.declare(stmts, ContinuousOptions::default(), false)
                    .await
            }
            Statement::Fetch {
                name, direction, ..
            } => self.fetch(&name, &direction, None).await,
            Statement::Close { cursor } => {
                match cursor {
                    ast::CloseCursor::All => self.cursors.clear(),
                    ast::CloseCursor::Specific { name } => {
                        let n = ident_name(&name);
                        if self.cursors.remove(&n).is_none() {
                            return Err(BrookError::UndefinedCursor(n));
                        }
                    }
                }
                Ok(Outcome::Command("CLOSE CURSOR".into()))
            }
            Statement::Rollback {
                savepoint: Some(_), ..
            } => Ok(Outcome::Command("ROLLBACK".into())),
            Statement::Savepoint { .. } => Ok(Outcome::Command("SAVEPOINT".into())),
            Statement::ReleaseSavepoint { .. } => Ok(Outcome::Command("RELEASE".into())),
            Statement::Set(set) => self.set(set),
            Statement::ShowVariable { variable } => self.show(&variable),
            Statement::Discard { .. } => {
                self.cursors.clear();
                self.reset_all();
                Ok(Outcome::Command("DISCARD ALL".into()))
            }
            Statement::Reset(r) => {
                match r.reset {
                    ast::Reset::ALL => self.reset_all(),
                    ast::Reset::ConfigurationParameter(name) => {
                        let key = object_parts(&name)?.join(".");
                        match default_settings().get(&key) {
                            Some(v) => {
                                let v = v.clone();
                                self.set_var(&key, &v)?;
                            }
                            None if key.starts_with("datafusion.") || key.contains('.') => {
                                self.settings.remove(&key);
                            }
                            None => {
                                return Err(BrookError::UndefinedObject(format!(
                                    "unrecognized configuration parameter \"{key}\""
                                )))
                            }
                        }
                    }
                }
                Ok(Outcome::Command("RESET".into()))
            }
            Statement::Deallocate { .. } => Ok(Outcome::Command("DEALLOCATE".into())),
            Statement::Analyze(_) => Ok(Outcome::Command("ANALYZE".into())),
            other => Err(BrookError::unsupported(format!(
                "statement not supported: {}",
                first_words(&other.to_string())
            ))),
        }
    }

    /// A statement with an `EMIT` clause: its query runs continuously, over streams and
    /// tables alike (a table contributes its rows, then its changes).
    async fn execute_emit(
        &mut self,
        stmt: Statement,
        options: ContinuousOptions,
    ) -> Result<Outcome> {
        match stmt {
            Statement::Declare { stmts } => self.declare(stmts, options, true).await,
            Statement::CreateView(cv) if cv.materialized => {
                self.create_materialized_view(cv, options).await
            }
            Statement::Explain { statement, .. } => match *statement {
                Statement::Declare { stmts } => {
                    let [d] = stmts.as_slice() else {
                        return Err(BrookError::Syntax("DECLARE takes one cursor name".into()));
                    };
                    let q = d.for_query.clone().ok_or_else(|| {
                        BrookError::Syntax("DECLARE CURSOR needs FOR <query>".into())
                    })?;
                    self.explain_continuous(Statement::Query(q), options, true)
                        .await
                }
                q @ Statement::Query(_) => self.explain_continuous(q, options, true).await,
                _ => Err(emit_misplaced()),
            },
            q @ Statement::Query(_) => {
                let p = plan_query_continuous(&self.ctx, q, options).await?;
                let (schema, stream, _) =
                    self.start_continuous((p.graph, p.stores), p.names, None)?;
                Ok(Outcome::Rows {
                    schema,
                    stream,
                    tag: "SELECT",
                })
            }
            Statement::Copy {
                source: CopySource::Query(q),
                to: true,
                target,
                options: copy_options,
                legacy_options,
                ..
            } => {
                if !matches!(target, SqlCopyTarget::Stdout) {
                    return Err(BrookError::unsupported(
                        "COPY TO a file or program (use COPY ... TO STDOUT)",
                    ));
                }
                let opts = CopyOptions::from_sql(&copy_options, &legacy_options)?;
                let p = plan_query_continuous(&self.ctx, Statement::Query(q), options).await?;
                let (_, stream, _) = self.start_continuous((p.graph, p.stores), p.names, None)?;
                Ok(Outcome::CopyOut { opts, stream })
            }
            _ => Err(emit_misplaced()),
        }
    }

    /// CREATE MATERIALIZED VIEW: plan the query continuously (refusing what cannot run
    /// incrementally), record it in the catalog, and start its maintenance.
    async fn create_materialized_view(
        &mut self,
        cv: ast::CreateView,
        options: ContinuousOptions,
    ) -> Result<Outcome> {
        if cv.or_replace || cv.or_alter {
            return Err(BrookError::unsupported(
                "CREATE OR REPLACE MATERIALIZED VIEW",
            ));
        }
        if !cv.columns.is_empty() {
            return Err(BrookError::unsupported(
                "a column list in CREATE MATERIALIZED VIEW (alias the query's columns)",
            ));
        }
        let (schema, name) = self.resolve(&cv.name)?;
        let mut sql = cv.query.to_string();
        if options.emit_on_window_close {
            sql.push_str(" EMIT ON WINDOW CLOSE");
        }
        let (graph, stores, wire) = plan_view_sql(&self.ctx, &sql).await?;
        let mut seen = HashSet::new();
        for f in wire.fields() {
            if !seen.insert(f.name()) {
                return Err(BrookError::DuplicateObject {
                    what: "column",
                    name: f.name().clone(),
                    code: "42701",
                });
            }
        }
        let depends_on = self.relations_read(&cv.query);
        self.create_maintained(
            Maintained {
                schema,
                name,
                sql,
                kind: RelKind::MaterializedView,
                options: BTreeMap::new(),
                depends_on,
                if_not_exists: cv.if_not_exists,
            },
            (graph, stores, wire),
        )?;
        Ok(Outcome::Command("CREATE MATERIALIZED VIEW".into()))
    }

    /// Record a maintained relation (view or synopsis) in the catalog and start the
    /// continuous query that maintains it (unless it existed and `IF NOT EXISTS` was given).
    fn create_maintained(
        &mut self,
        m: Maintained,
        (graph, stores, wire): (GraphPlan, Vec<Arc<TableStore>>, SchemaRef),
    ) -> Result<()> {
        let columns = stored_columns(&graph.schema(), &wire, "a view")?;
        let meta = RelationMeta {
            id: 0,
            kind: m.kind,
            columns,
            primary_key: vec![],
            watermark: None,
            options: m.options,
            query: Some(m.sql),
            depends_on: m.depends_on,
        };
        if !self
            .engine
            .create_relation(&self.db, &m.schema, &m.name, meta, m.if_not_exists)?
        {
            return Ok(());
        }
        let view = self.engine.view_state(&self.db, &m.schema, &m.name)?;
        let stats = self
            .engine
            .queries
            .register(&self.db.name, m.kind.noun(), &m.name);
        view.start(Arc::new(graph), stores, stats);
        Ok(())
    }

    /// `CREATE SYNOPSIS`: a sketch (or sample) per key, maintained like a materialized view
    /// by the query `brook_planner::synopsis` derives from the statement.
    async fn create_synopsis(
        &mut self,
        cs: brook_planner::parser::CreateSynopsis,
    ) -> Result<Outcome> {
        let (schema, name) = self.resolve(&cs.name)?;
        let plan = brook_planner::synopsis::plan_synopsis(&cs)?;
        // The one relation a synopsis reads (dropping it answers 2BP01).
        let depends_on = vec![self.resolve(&cs.source)?];
        let planned = plan_view_sql(&self.ctx, &plan.sql).await?;
        let options = BTreeMap::from([
            ("synopsis.kind".to_string(), plan.kind.clone()),
            ("synopsis.column".to_string(), plan.column.clone()),
            ("synopsis.parameters".to_string(), plan.parameters.clone()),
            ("synopsis.keys".to_string(), plan.keys.join(", ")),
            ("synopsis.bound".to_string(), plan.bound.clone()),
            ("synopsis.source".to_string(), cs.source.to_string()),
        ]);
        self.create_maintained(
            Maintained {
                schema,
                name,
                sql: plan.sql,
                kind: RelKind::Synopsis,
                options,
                depends_on,
                if_not_exists: cs.if_not_exists,
            },
            planned,
        )?;
        Ok(Outcome::Command("CREATE SYNOPSIS".into()))
    }

    /// COMMIT/ROLLBACK close the cursors not declared WITH HOLD.
    fn end_transaction(&mut self) {
        self.cursors.retain(|_, c| c.hold);
    }

    /// DECLARE: a continuous cursor when the query reads a stream (or `force`, for
    /// `EMIT`), else a cursor over a snapshot.
    async fn declare(
        &mut self,
        stmts: Vec<ast::Declare>,
        options: ContinuousOptions,
        force: bool,
    ) -> Result<Outcome> {
        for d in stmts {
            let [name] = d.names.as_slice() else {
                return Err(BrookError::Syntax("DECLARE takes one cursor name".into()));
            };
            let name = ident_name(name);
            let Some(q) = d.for_query else {
                return Err(BrookError::Syntax(
                    "DECLARE CURSOR needs FOR <query>".into(),
                ));
            };
            if d.scroll == Some(true) {
                return Err(BrookError::unsupported(
                    "SCROLL cursors (cursors scan forward only)",
                ));
            }
            if self.cursors.contains_key(&name) {
                return Err(BrookError::DuplicateObject {
                    what: "cursor",
                    name,
                    code: "42P03",
                });
            }
            let mut stmt = Statement::Query(q);
            let names = brook_planner::rewrite::output_names(&stmt);
            pg_literals(&mut stmt)?;
            let plan = self.plan(stmt).await?;
            let (schema, stream, continuous) = match self.continuous(&plan, options, force).await? {
                Some(graph) => {
                    let (schema, stream, stats) =
                        self.start_continuous(graph, names, Some(&name))?;
                    (schema, stream, Some(stats))
                }
                None => {
                    if options.emit_on_window_close {
                        return Err(BrookError::unsupported(
                            "EMIT ON WINDOW CLOSE over tables only (it applies to queries over streams)",
                        ));
                    }
                    let df = self.ctx.execute_logical_plan(plan).await?;
                    let schema = pg_named(df.schema().as_arrow().clone(), names);
                    (schema, df.execute_stream().await?, None)
                }
            };
            self.cursors.insert(
                name,
                Cursor {
                    schema,
                    stream: std::sync::Mutex::new(stream),
                    pending: None,
                    hold: d.hold == Some(true),
                    continuous,
                },
            );
        }
        Ok(Outcome::Command("DECLARE CURSOR".into()))
    }

    async fn fetch(
        &mut self,
        name: &Ident,
        direction: &ast::FetchDirection,
        timeout: Option<std::time::Duration>,
    ) -> Result<Outcome> {
        use ast::FetchDirection as D;
        let count = |v: &ast::ValueWithSpan| -> Result<usize> {
            match &v.value {
                ast::Value::Number(n, _) => n
                    .parse::<usize>()
                    .map_err(|_| BrookError::Syntax(format!("invalid FETCH count {n}"))),
                other => Err(BrookError::Syntax(format!("invalid FETCH count {other}"))),
            }
        };
        let n = match direction {
            D::Count { limit } => Some(count(limit)?),
            D::Next => Some(1),
            D::Forward { limit: Some(l) } => Some(count(l)?),
            D::Forward { limit: None } => Some(1),
            D::All | D::ForwardAll => None,
            other => {
                return Err(BrookError::ObjectState(format!(
                    "FETCH {other}: cursors can only scan forward"
                )))
            }
        };
        let key = ident_name(name);
        let timeout = match timeout {
            Some(t) => t,
            None => parse_timeout(&self.settings.get(FETCH_TIMEOUT).unwrap_or_default())?,
        };
        let cursor = self
            .cursors
            .get_mut(&key)
            .ok_or_else(|| BrookError::UndefinedCursor(key.clone()))?;
        let wait = cursor.continuous.is_some().then_some(timeout);
        let batches = cursor.fetch(n, wait).await?;
        Ok(rows_outcome(cursor.schema.clone(), batches, "FETCH"))
    }

    /// Plan a statement with DataFusion.
    async fn plan(&self, stmt: Statement) -> Result<datafusion::logical_expr::LogicalPlan> {
        let state = self.ctx.state();
        Ok(state
            .statement_to_plan(DFStatement::Statement(Box::new(stmt)))
            .await?)
    }

    /// The continuous plan of a query that reads a stream (or any query when `force`);
    /// `None` for queries over tables only (they run once, ad hoc).
    async fn continuous(
        &self,
        plan: &datafusion::logical_expr::LogicalPlan,
        options: ContinuousOptions,
        force: bool,
    ) -> Result<Option<(GraphPlan, Vec<Arc<TableStore>>)>> {
        continuous_plan(&self.ctx, plan, options, force).await
    }

    /// Start a continuous query; its wire schema carries `_brook_op` when it is updating.
    fn start_continuous(
        &self,
        (graph, stores): (GraphPlan, Vec<Arc<TableStore>>),
        names: Option<Vec<brook_planner::rewrite::OutputName>>,
        cursor: Option<&str>,
    ) -> Result<(SchemaRef, SendableRecordBatchStream, Arc<QueryStats>)> {
        let schema = wire_schema(&graph, names);
        let stats = match cursor {
            Some(name) => self.engine.queries.register(&self.db.name, "cursor", name),
            None => self.engine.queries.register(&self.db.name, "push", ""),
        };
        let stream =
            crate::continuous::start(Arc::new(graph), stores, schema.clone(), stats.clone());
        Ok((schema, stream, stats))
    }

    /// `EXPLAIN DECLARE c CURSOR FOR q` (and `EXPLAIN q EMIT ...`): the continuous plan of
    /// `q`, or its ad-hoc plan when it runs once (a cursor over tables only).
    async fn explain_continuous(
        &mut self,
        mut stmt: Statement,
        options: ContinuousOptions,
        force: bool,
    ) -> Result<Outcome> {
        let names = brook_planner::rewrite::output_names(&stmt);
        pg_literals(&mut stmt)?;
        let plan = self.plan(stmt.clone()).await?;
        let text = match self.continuous(&plan, options, force).await? {
            Some((graph, _)) => {
                let mut text = graph.explain();
                // Show the result columns by the names the client sees, not the internal
                // aliases that keep duplicate output names apart.
                let shown = pg_named(graph.schema().as_ref().clone(), names);
                for (inner, outer) in graph.schema().fields().iter().zip(shown.fields()) {
                    if inner.name() != outer.name() && inner.name().starts_with("__brook_col_") {
                        let name = outer.name();
                        let plain = name
                            .chars()
                            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
                            && !name.starts_with(|c: char| c.is_ascii_digit());
                        let shown = if plain {
                            name.clone()
                        } else {
                            quote_ident(name)
                        };
                        text =
                            text.replace(&format!("AS {}", inner.name()), &format!("AS {shown}"));
                    }
                }
                format!(
                    "Continuous plan ({} result)\n{text}",
                    if graph.updating() {
                        "updating"
                    } else {
                        "append-only"
                    }
                )
            }
            None => {
                let explain = Statement::Explain {
                    describe_alias: ast::DescribeAlias::Explain,
                    analyze: false,
                    verbose: false,
                    query_plan: false,
                    estimate: false,
                    statement: Box::new(stmt),
                    format: None,
                    options: None,
                };
                return self.run_query(explain, "EXPLAIN", None).await;
            }
        };
        let schema = Arc::new(Schema::new(vec![Field::new(
            "QUERY PLAN",
            DataType::Utf8,
            false,
        )]));
        let lines: Vec<&str> = text.lines().collect();
        let batch = RecordBatch::try_new(
            schema.clone(),
            vec![Arc::new(datafusion::arrow::array::StringArray::from(lines))],
        )?;
        Ok(rows_outcome(schema, vec![batch], "EXPLAIN"))
    }

    /// Run a query and stream its rows.
    pub async fn run_query(
        &self,
        stmt: Statement,
        tag: &'static str,
        names: Option<Vec<brook_planner::rewrite::OutputName>>,
    ) -> Result<Outcome> {
        let plan = self.plan(stmt).await?;
        let df = self.ctx.execute_logical_plan(plan).await?;
        let schema = pg_named(df.schema().as_arrow().clone(), names);
        let stream = df.execute_stream().await?;
        Ok(Outcome::Rows {
            schema,
            stream,
            tag,
        })
    }

    /// The result schema of a query without running it (for Describe).
    pub async fn describe(&self, stmt: &BrookStatement) -> Result<Option<SchemaRef>> {
        let (stmt, _) = self.approximated(stmt.clone())?;
        let stmt = &stmt;
        let plan_schema = || -> SchemaRef {
            Arc::new(Schema::new(vec![Field::new(
                "QUERY PLAN",
                DataType::Utf8,
                false,
            )]))
        };
        match stmt {
            BrookStatement::FetchWith { fetch, .. } => self.describe_fetch(fetch),
            BrookStatement::Emit {
                stmt,
                on_window_close,
            } => match stmt.as_ref() {
                Statement::Explain { .. } => Ok(Some(plan_schema())),
                Statement::Query(_) => {
                    // The continuous result: with the change kind when it is updating.
                    let options = ContinuousOptions {
                        emit_on_window_close: *on_window_close,
                    };
                    let p =
                        plan_query_continuous(&self.ctx, stmt.as_ref().clone(), options).await?;
                    Ok(Some(wire_schema(&p.graph, p.names)))
                }
                _ => Ok(Some(Arc::new(Schema::empty()))),
            },
            BrookStatement::Sql(s) => match s.as_ref() {
                Statement::Fetch { .. } => self.describe_fetch(s),
                Statement::Explain { statement, .. }
                    if matches!(statement.as_ref(), Statement::Declare { .. }) =>
                {
                    Ok(Some(plan_schema()))
                }
                Statement::Query(_) | Statement::Explain { .. } => {
                    self.describe_query(s).await.map(Some)
                }
                Statement::ShowVariable { variable } => {
                    let name = variable
                        .iter()
                        .map(ident_name)
                        .collect::<Vec<_>>()
                        .join(" ");
                    Ok(Some(Arc::new(Schema::new(vec![Field::new(
                        name,
                        DataType::Utf8,
                        true,
                    )]))))
                }
                Statement::Insert(_) | Statement::Update(_) | Statement::Delete(_) => {
                    self.returning_schema(s).await
                }
                _ => Ok(Some(Arc::new(Schema::empty()))),
            },
            _ => Ok(Some(Arc::new(Schema::empty()))),
        }
    }

    /// The row shape of a query (or EXPLAIN) from its plan, with PostgreSQL's column names.
    async fn describe_query(&self, stmt: &Statement) -> Result<SchemaRef> {
        let mut stmt = stmt.clone();
        let names = brook_planner::rewrite::output_names(&stmt);
        pg_literals(&mut stmt)?;
        let plan = self.plan(stmt).await?;
        Ok(pg_named(plan.schema().as_arrow().clone(), names))
    }

    /// The row shape of a FETCH: its cursor's.
    fn describe_fetch(&self, fetch: &Statement) -> Result<Option<SchemaRef>> {
        let Statement::Fetch { name, .. } = fetch else {
            return Err(BrookError::internal("not a FETCH"));
        };
        let key = ident_name(name);
        match self.cursors.get(&key) {
            Some(c) => Ok(Some(c.schema.clone())),
            None => Err(BrookError::UndefinedCursor(key)),
        }
    }

    /// Parameter types and result schema of a prepared statement (for Describe). Declared
    /// types win; others are inferred from the plan (queries) or the target columns (INSERT).
    pub async fn describe_with_params(
        &self,
        stmt: &BrookStatement,
        declared: &[pgwire::api::Type],
    ) -> Result<(Vec<pgwire::api::Type>, Option<SchemaRef>)> {
        use pgwire::api::Type;
        let mut types: Vec<Type> = declared.to_vec();
        let (stmt, _) = self.approximated(stmt.clone())?;
        let stmt = &stmt;
        let BrookStatement::Sql(s) = stmt else {
            return Ok((types, self.describe(stmt).await?));
        };
        let mut inferred: BTreeMap<usize, Type> = BTreeMap::new();
        let schema = match s.as_ref() {
            Statement::Explain { statement, .. }
                if matches!(statement.as_ref(), Statement::Declare { .. }) =>
            {
                self.describe(stmt).await?
            }
            Statement::Query(_) | Statement::Explain { .. } => {
                let mut q = (**s).clone();
                let names = brook_planner::rewrite::output_names(&q);
                pg_literals(&mut q)?;
                let plan = self.plan(q).await?;
                for (k, v) in plan.get_parameter_types()? {
                    if let (Some(i), Some(dt)) =
                        (k.strip_prefix('$').and_then(|n| n.parse::<usize>().ok()), v)
                    {
                        inferred.insert(i, crate::types::arrow_wire_type(&dt));
                    }
                }
                Some(pg_named(plan.schema().as_arrow().clone(), names))
            }
            Statement::Insert(ins) => {
                if let (TableObject::TableName(tn), Some(src)) = (&ins.table, &ins.source) {
                    if let Ok((schema, name)) = self.resolve(tn) {
                        if let Ok((meta, _)) = self.relation(&schema, &name) {
                            let cols: Vec<usize> = if ins.columns.is_empty() {
                                (0..meta.columns.len()).collect()
                            } else {
                                ins.columns
                                    .iter()
                                    .filter_map(|c| {
                                        object_parts(c).ok().and_then(|p| p.last().cloned())
                                    })
                                    .filter_map(|n| meta.columns.iter().position(|m| m.name == n))
                                    .collect()
                            };
                            if let ast::SetExpr::Values(v) = src.body.as_ref() {
                                for row in &v.rows {
                                    for (j, e) in row.iter().enumerate() {
                                        if let (Expr::Value(val), Some(&ci)) = (e, cols.get(j)) {
                                            if let ast::Value::Placeholder(p) = &val.value {
                                                if let Some(i) = p
                                                    .strip_prefix('$')
                                                    .and_then(|n| n.parse::<usize>().ok())
                                                {
                                                    inferred.insert(i, meta.columns[ci].ty.wire());
                                                }
                                            }
                                        }
                                    }
                                }
                            }
                        }
                    }
                }
                self.returning_schema(s).await?
            }
            Statement::ShowVariable { .. } | Statement::Fetch { .. } => self.describe(stmt).await?,
            Statement::Update(_) | Statement::Delete(_) => self.returning_schema(s).await?,
            _ => Some(Arc::new(Schema::empty())),
        };
        let n = brook_planner::rewrite::placeholder_count(s).max(types.len());
        types.resize(n, Type::UNKNOWN);
        for (i, t) in types.iter_mut().enumerate() {
            if *t == Type::UNKNOWN {
                if let Some(x) = inferred.get(&(i + 1)) {
                    *t = x.clone();
                }
            }
        }
        Ok((types, schema))
    }

    /// The result schema of a DML statement: its RETURNING list over the target table, or
    /// none.
    async fn returning_schema(&self, stmt: &Statement) -> Result<Option<SchemaRef>> {
        let (table, items) = match stmt {
            Statement::Insert(i) => match (&i.table, &i.returning) {
                (TableObject::TableName(t), Some(items)) => (t.clone(), items.clone()),
                _ => return Ok(Some(Arc::new(Schema::empty()))),
            },
            Statement::Update(u) => match (&u.table.relation, &u.returning) {
                (TableFactor::Table { name, .. }, Some(items)) => (name.clone(), items.clone()),
                _ => return Ok(Some(Arc::new(Schema::empty()))),
            },
            Statement::Delete(d) => {
                let tables = match &d.from {
                    FromTable::WithFromKeyword(t) | FromTable::WithoutKeyword(t) => t,
                };
                match (tables.first().map(|t| &t.relation), &d.returning) {
                    (Some(TableFactor::Table { name, .. }), Some(items)) => {
                        (name.clone(), items.clone())
                    }
                    _ => return Ok(Some(Arc::new(Schema::empty()))),
                }
            }
            _ => return Ok(Some(Arc::new(Schema::empty()))),
        };
        let (schema, name) = self.resolve(&table)?;
        let from = format!(
            "{}.{} AS {}",
            quote_ident(&schema),
            quote_ident(&name),
            quote_ident(&name)
        );
        let (q, names) = returning_query(&items, &from)?;
        let plan = self.plan(q).await?;
        Ok(Some(pg_named(plan.schema().as_arrow().clone(), names)))
    }

    // ---- DDL ----------------------------------------------------------------------------

    fn columns_from_defs(
        &self,
        defs: &[ast::ColumnDef],
        constraints: &[TableConstraint],
        kind: RelKind,
    ) -> Result<(Vec<ColumnMeta>, Vec<usize>)> {
        let mut columns: Vec<ColumnMeta> = Vec::new();
        let mut pk: Vec<String> = Vec::new();
        for d in defs {
            let name = ident_name(&d.name);
            if brook_common::columns::is_reserved(&name) {
                return Err(BrookError::InvalidDefinition(format!(
                    "column name \"{name}\" is reserved"
                )));
            }
            if columns.iter().any(|c| c.name == name) {
                return Err(BrookError::DuplicateObject {
                    what: "column",
                    name,
                    code: "42701",
                });
            }
            let ty = PgType::from_sql(&d.data_type)?;
            let mut col = ColumnMeta {
                name: name.clone(),
                ty,
                not_null: false,
                default: None,
            };
            for opt in &d.options {
                match &opt.option {
                    ColumnOption::NotNull => col.not_null = true,
                    ColumnOption::Null => {}
                    ColumnOption::Default(e) => col.default = Some(e.to_string()),
                    ColumnOption::PrimaryKey(_) => {
                        if !pk.is_empty() {
                            return Err(BrookError::InvalidDefinition(
                                "multiple primary keys for a table are not allowed".into(),
                            ));
                        }
                        pk.push(name.clone());
                    }
                    other => {
                        return Err(BrookError::unsupported(format!(
                            "column constraint {other} is not supported yet"
                        )))
                    }
                }
            }
            columns.push(col);
        }
        for c in constraints {
            match c {
                TableConstraint::PrimaryKey(p) => {
                    if !pk.is_empty() {
                        return Err(BrookError::InvalidDefinition(
                            "multiple primary keys for a table are not allowed".into(),
                        ));
                    }
                    for ic in &p.columns {
                        match &ic.column.expr {
                            Expr::Identifier(i) => pk.push(ident_name(i)),
                            other => {
                                return Err(BrookError::unsupported(format!(
                                    "primary key on expression {other}"
                                )))
                            }
                        }
                    }
                }
                other => {
                    return Err(BrookError::unsupported(format!(
                        "table constraint {other} is not supported yet"
                    )))
                }
            }
        }
        if !pk.is_empty() && kind == RelKind::Stream {
            return Err(BrookError::InvalidDefinition(
                "a stream is append-only and cannot have a PRIMARY KEY".into(),
            ));
        }
        let mut pk_idx = Vec::new();
        for k in pk {
            let i = columns.iter().position(|c| c.name == k).ok_or_else(|| {
                BrookError::UndefinedColumn(format!("column \"{k}\" named in key does not exist"))
            })?;
            columns[i].not_null = true;
            pk_idx.push(i);
        }
        if columns.is_empty() {
            return Err(BrookError::unsupported("tables without columns"));
        }
        Ok((columns, pk_idx))
    }

    async fn create_table(&mut self, ct: ast::CreateTable) -> Result<Outcome> {
        let (schema, name) = self.resolve(&ct.name)?;
        if ct.temporary {
            return Err(BrookError::unsupported("CREATE TEMPORARY TABLE"));
        }
        if let Some(q) = ct.query {
            return self
                .create_table_as(schema, name, ct.if_not_exists, *q)
                .await;
        }
        let (columns, primary_key) =
            self.columns_from_defs(&ct.columns, &ct.constraints, RelKind::Table)?;
        let meta = RelationMeta {
            id: 0,
            kind: RelKind::Table,
            columns,
            primary_key,
            watermark: None,
            options: BTreeMap::new(),
            query: None,
            depends_on: Vec::new(),
        };
        self.validate_defaults(&meta).await?;
        // IF NOT EXISTS on an existing table answers with the same tag, as PostgreSQL does.
        self.engine
            .create_relation(&self.db, &schema, &name, meta, ct.if_not_exists)?;
        Ok(Outcome::Command("CREATE TABLE".into()))
    }

    async fn create_table_as(
        &mut self,
        schema: String,
        name: String,
        if_not_exists: bool,
        q: ast::Query,
    ) -> Result<Outcome> {
        let plan = self.plan(Statement::Query(Box::new(q))).await?;
        let df = self.ctx.execute_logical_plan(plan).await?;
        let arrow_schema = Arc::new(df.schema().as_arrow().clone());
        let columns = stored_columns(&arrow_schema, &arrow_schema, "a table")?;
        let meta = RelationMeta {
            id: 0,
            kind: RelKind::Table,
            columns,
            primary_key: vec![],
            watermark: None,
            options: BTreeMap::new(),
            query: None,
            depends_on: Vec::new(),
        };
        if !self
            .engine
            .create_relation(&self.db, &schema, &name, meta, if_not_exists)?
        {
            return Ok(Outcome::Command("CREATE TABLE AS".into()));
        }
        let (meta, store) = self.relation(&schema, &name)?;
        let stream = df.execute_stream().await?;
        let n = self
            .write_stream_mapped(&meta, &store, &name, stream, None, WriteMode::Append, None)
            .await?;
        Ok(Outcome::Command(format!("SELECT {n}")))
    }

    async fn create_stream(&mut self, cs: CreateStream) -> Result<Outcome> {
        let (schema, name) = self.resolve(&cs.name)?;
        let (columns, _) = self.columns_from_defs(&cs.columns, &cs.constraints, RelKind::Stream)?;
        let watermark = match cs.watermark {
            Some(w) => {
                let col = columns
                    .iter()
                    .find(|c| c.name == w.column.to_lowercase() || c.name == w.column)
                    .ok_or_else(|| {
                        BrookError::UndefinedColumn(format!(
                            "watermark column \"{}\" does not exist",
                            w.column
                        ))
                    })?;
                if !matches!(col.ty, PgType::Timestamp | PgType::Timestamptz) {
                    return Err(BrookError::DatatypeMismatch(format!(
                        "watermark column \"{}\" must be a timestamp, not {}",
                        col.name,
                        col.ty.name()
                    )));
                }
                Some(WatermarkMeta {
                    column: col.name.clone(),
                    expr: w.expr,
                })
            }
            None => None,
        };
        let options = cs
            .options
            .iter()
            .map(|o| match o {
                ast::SqlOption::KeyValue { key, value } => Ok((
                    ident_name(key),
                    value.to_string().trim_matches('\'').to_string(),
                )),
                other => Err(BrookError::unsupported(format!("stream option {other}"))),
            })
            .collect::<Result<BTreeMap<_, _>>>()?;
        if let Some(text) = options.get(crate::continuous::IDLE_TIMEOUT) {
            parse_timeout(text)?;
            if watermark.is_none() {
                return Err(BrookError::InvalidParameter(
                    "idle_timeout applies to a stream with a WATERMARK FOR clause".into(),
                ));
            }
        }
        let meta = RelationMeta {
            id: 0,
            kind: RelKind::Stream,
            columns,
            primary_key: vec![],
            watermark,
            options,
            query: None,
            depends_on: Vec::new(),
        };
        self.validate_defaults(&meta).await?;
        self.engine
            .create_relation(&self.db, &schema, &name, meta, cs.if_not_exists)?;
        Ok(Outcome::Command("CREATE STREAM".into()))
    }

    /// Check every DEFAULT expression evaluates to the column's type now, not at first insert.
    async fn validate_defaults(&self, meta: &RelationMeta) -> Result<()> {
        for (i, c) in meta.columns.iter().enumerate() {
            if c.default.is_some() {
                self.default_value(meta, i).await?;
            }
        }
        Ok(())
    }

    /// The existing relations a query names, as (schema, name).
    fn relations_read(&self, q: &ast::Query) -> Vec<(String, String)> {
        let mut out = Vec::new();
        let _ = ast::visit_relations(q, |name| {
            if let Ok((schema, rel)) = self.resolve(name) {
                if self.relation(&schema, &rel).is_ok()
                    && !out.contains(&(schema.clone(), rel.clone()))
                {
                    out.push((schema, rel));
                }
            }
            std::ops::ControlFlow::<()>::Continue(())
        });
        out
    }

    /// The materialized views and synopses that read `schema.name` directly.
    fn dependents(&self, schema: &str, name: &str) -> Result<Vec<(String, String, RelKind)>> {
        let doc = self.engine.catalog.read();
        let db = doc.database(&self.db.name)?;
        let mut out = Vec::new();
        for (vschema, s) in &db.schemas {
            for (vname, rel) in &s.relations {
                if rel.depends_on.iter().any(|(a, b)| a == schema && b == name) {
                    out.push((vschema.clone(), vname.clone(), rel.kind));
                }
            }
        }
        Ok(out)
    }

    /// Drop what reads `schema.name`, and what reads those, first (CASCADE), telling the
    /// client each one as PostgreSQL does.
    fn drop_dependents(&mut self, schema: &str, name: &str) -> Result<()> {
        for (vschema, vname, kind) in self.dependents(schema, name)? {
            self.drop_dependents(&vschema, &vname)?;
            if self
                .engine
                .drop_relation(&self.db, &vschema, &vname, kind, true)?
            {
                self.notices
                    .push(format!("drop cascades to {} {vname}", kind.noun()));
            }
        }
        Ok(())
    }

    fn drop_relations(
        &mut self,
        names: &[ObjectName],
        kind: RelKind,
        if_exists: bool,
        cascade: bool,
        tag: &str,
    ) -> Result<Outcome> {
        for n in names {
            let (schema, name) = self.resolve(n)?;
            // Only a relation of the named kind cascades (a wrong kind or a missing one is
            // reported by drop_relation below, with nothing dropped).
            let found = {
                let doc = self.engine.catalog.read();
                doc.database(&self.db.name)?
                    .schemas
                    .get(&schema)
                    .and_then(|s| s.relations.get(&name))
                    .map(|r| r.kind)
            };
            if found.is_some_and(|k| k != kind) {
                // Reports the wrong object type (42809).
                self.engine
                    .drop_relation(&self.db, &schema, &name, kind, if_exists)?;
                continue;
            }
            if cascade && found.is_some() {
                self.drop_dependents(&schema, &name)?;
            } else if let Some((vschema, vname, vkind)) =
                self.dependents(&schema, &name)?.into_iter().next()
            {
                // 2BP01, as PostgreSQL.
                return Err(BrookError::DependentObjects(format!(
                    "cannot drop {} {name} because {} {vschema}.{vname} depends on it \
                     (use DROP ... CASCADE to drop the dependent objects too)",
                    kind.noun(),
                    vkind.noun()
                )));
            }
            self.engine
                .drop_relation(&self.db, &schema, &name, kind, if_exists)?;
        }
        Ok(Outcome::Command(tag.into()))
    }

    fn create_index(&mut self, ci: ast::CreateIndex) -> Result<Outcome> {
        let (schema, table) = self.resolve(&ci.table_name)?;
        let (meta, _) = self.relation(&schema, &table)?;
        let mut columns = Vec::new();
        for c in &ci.columns {
            match &c.column.expr {
                Expr::Identifier(i) => {
                    let n = ident_name(i);
                    if !meta.columns.iter().any(|m| m.name == n) {
                        return Err(BrookError::UndefinedColumn(format!(
                            "column \"{n}\" does not exist"
                        )));
                    }
                    columns.push(n);
                }
                other => {
                    return Err(BrookError::unsupported(format!(
                        "index on expression {other}"
                    )))
                }
            }
        }
        if ci.unique {
            return Err(BrookError::unsupported(
                "CREATE UNIQUE INDEX (use a PRIMARY KEY)",
            ));
        }
        let name = match &ci.name {
            Some(n) => object_parts(n)?.pop().unwrap_or_default(),
            None => format!("{table}_{}_idx", columns.join("_")),
        };
        let if_not_exists = ci.if_not_exists;
        let db = self.db.name.clone();
        self.engine.catalog.update(|doc| {
            let s = doc.schema_mut(&db, &schema)?;
            if s.indexes.contains_key(&name) || s.relations.contains_key(&name) {
                return if if_not_exists {
                    Ok(())
                } else {
                    Err(BrookError::DuplicateTable(name.clone()))
                };
            }
            s.indexes.insert(
                name.clone(),
                IndexMeta {
                    table: table.clone(),
                    columns: columns.clone(),
                    unique: false,
                },
            );
            Ok(())
        })?;
        Ok(Outcome::Command("CREATE INDEX".into()))
    }

    fn drop_indexes(&mut self, names: &[ObjectName], if_exists: bool) -> Result<Outcome> {
        for n in names {
            let (schema, name) = self.resolve(n)?;
            let db = self.db.name.clone();
            self.engine.catalog.update(|doc| {
                let s = doc.schema_mut(&db, &schema)?;
                if s.indexes.remove(&name).is_none() && !if_exists {
                    return Err(BrookError::UndefinedObject(format!(
                        "index \"{name}\" does not exist"
                    )));
                }
                Ok(())
            })?;
        }
        Ok(Outcome::Command("DROP INDEX".into()))
    }

    async fn alter_table(&mut self, at: ast::AlterTable) -> Result<Outcome> {
        let (schema, name) = self.resolve(&at.name)?;
        let (mut meta, store) = match self.writable(&schema, &name) {
            Ok(r) => r,
            Err(BrookError::UndefinedTable(_)) if at.if_exists => {
                return Ok(Outcome::Command("ALTER TABLE".into()))
            }
            Err(e) => return Err(e),
        };
        for op in at.operations {
            match op {
                AlterTableOperation::AddColumn {
                    column_def,
                    if_not_exists,
                    ..
                } => {
                    let cname = ident_name(&column_def.name);
                    if meta.columns.iter().any(|c| c.name == cname) {
                        if if_not_exists {
                            continue;
                        }
                        return Err(BrookError::DuplicateObject {
                            what: "column",
                            name: cname,
                            code: "42701",
                        });
                    }
                    let (mut cols, pk) =
                        self.columns_from_defs(std::slice::from_ref(&column_def), &[], meta.kind)?;
                    if !pk.is_empty() {
                        return Err(BrookError::unsupported("ADD COLUMN ... PRIMARY KEY"));
                    }
                    let col = cols.remove(0);
                    let mut next = meta.clone();
                    next.columns.push(col);
                    let idx = next.columns.len() - 1;
                    // Existing rows get the default (or NULL): rewrite the relation with the
                    // new column, then switch the catalog.
                    let fill = if next.columns[idx].default.is_some() {
                        Some(self.default_value(&next, idx).await?)
                    } else {
                        None
                    };
                    if next.columns[idx].not_null && fill.is_none() && store.row_count() > 0 {
                        return Err(BrookError::NotNullViolation(format!(
                            "column \"{}\" of relation \"{name}\" contains null values",
                            next.columns[idx].name
                        )));
                    }
                    let new_schema = next.schema();
                    let mut txn = self.begin_write(&meta, &store, true).await?;
                    for c in store.snapshot().iter() {
                        let b = store.read(c)?;
                        let b = crate::storage::adapt_batch(b, &meta.schema())?;
                        let mut cols = b.columns().to_vec();
                        cols.push(match &fill {
                            Some(v) => repeat_scalar(v, b.num_rows())?,
                            None => datafusion::arrow::array::new_null_array(
                                new_schema.field(idx).data_type(),
                                b.num_rows(),
                            ),
                        });
                        txn.append(&RecordBatch::try_new(new_schema.clone(), cols)?)?;
                    }
                    // The catalog switches before the next writer may start: one that
                    // waited with the old definition sees the change (40001), none writes
                    // rows of the old shape after it.
                    let _lock = txn.commit_holding_lock()?;
                    self.engine
                        .update_relation(&self.db, &schema, &name, next.clone())?;
                    meta = next;
                }
                other => return Err(BrookError::unsupported(format!("ALTER TABLE {other}"))),
            }
        }
        Ok(Outcome::Command("ALTER TABLE".into()))
    }

    async fn truncate(&mut self, t: ast::Truncate) -> Result<Outcome> {
        for target in &t.table_names {
            let (schema, name) = self.resolve(&target.name)?;
            let (meta, store) = self.writable(&schema, &name)?;
            if meta.kind == RelKind::Stream {
                return Err(BrookError::WrongObjectType(format!(
                    "cannot truncate stream \"{name}\": streams are append-only"
                )));
            }
            let txn = self.begin_write(&meta, &store, true).await?;
            txn.commit()?;
        }
        Ok(Outcome::Command("TRUNCATE TABLE".into()))
    }

    // ---- settings -----------------------------------------------------------------------

    fn set(&mut self, set: ast::Set) -> Result<Outcome> {
        match set {
            ast::Set::SingleAssignment {
                variable, values, ..
            } => {
                let name = object_parts(&variable)?.join(".");
                let value = values
                    .iter()
                    .map(setting_value)
                    .collect::<Vec<_>>()
                    .join(", ");
                self.set_var(&name, &value)?;
            }
            ast::Set::SetTimeZone { value, .. } => {
                self.set_var("timezone", &setting_value(&value))?;
            }
            ast::Set::SetTransaction { .. }
            | ast::Set::SetSessionParam(_)
            | ast::Set::SetNames { .. }
            | ast::Set::SetNamesDefault {} => {}
            ast::Set::SetRole { .. } | ast::Set::SetSessionAuthorization(_) => {}
            other => return Err(BrookError::unsupported(format!("{other}"))),
        }
        Ok(Outcome::Command("SET".into()))
    }

    /// RESET ALL: every setting back to its default, the search path included.
    fn reset_all(&mut self) {
        self.settings.reset();
        let state = self.ctx.state_ref();
        let mut st = state.write();
        st.config_mut().options_mut().catalog.default_schema = DEFAULT_SCHEMA.to_string();
    }

    /// Set a session setting (SET name = value), validating the values Brook acts on.
    pub fn set_var(&mut self, name: &str, value: &str) -> Result<()> {
        let key = name.to_ascii_lowercase();
        if key.starts_with("datafusion.") {
            let state = self.ctx.state_ref();
            let mut st = state.write();
            st.config_mut().options_mut().set(&key, value)?;
            return Ok(());
        }
        match key.as_str() {
            "timezone" | "time zone" => {
                let v = value.trim_matches('\'');
                if !matches!(
                    v.to_ascii_lowercase().as_str(),
                    "utc"
                        | "gmt"
                        | "etc/utc"
                        | "z"
                        | "zulu"
                        | "+00:00"
                        | "0"
                        | "+0"
                        | "default"
                        | "local"
                ) {
                    return Err(BrookError::unsupported(format!(
                        "time zone \"{v}\" (sessions run in UTC)"
                    )));
                }
                self.settings.set("timezone", "UTC");
            }
            "search_path" => {
                let first = value
                    .split(',')
                    .map(|s| s.trim().trim_matches('"').to_string())
                    .find(|s| s != "$user" && !s.is_empty() && s != "pg_catalog");
                let schema = first.unwrap_or_else(|| DEFAULT_SCHEMA.to_string());
                {
                    let state = self.ctx.state_ref();
                    let mut st = state.write();
                    st.config_mut().options_mut().catalog.default_schema = schema;
                }
                self.settings.set(key, value.to_string());
            }
            "client_encoding" | "names" => {
                let v = value
                    .trim_matches('\'')
                    .to_ascii_uppercase()
                    .replace('-', "");
                if v != "UTF8" && v != "UNICODE" && v != "DEFAULT" {
                    return Err(BrookError::unsupported(format!(
                        "client_encoding {value} (only UTF8 is supported)"
                    )));
                }
            }
            "datestyle" => {
                let v = value.to_ascii_lowercase();
                if !v.contains("iso") {
                    return Err(BrookError::unsupported(format!(
                        "DateStyle {value} (only ISO output is supported)"
                    )));
                }
                self.settings.set(key, "ISO, MDY");
            }
            "extra_float_digits" => {
                let v: i32 = value.parse().map_err(|_| {
                    BrookError::InvalidText(format!(
                        "invalid value for parameter \"extra_float_digits\": \"{value}\""
                    ))
                })?;
                if !(-15..=3).contains(&v) {
                    return Err(BrookError::InvalidParameter(format!(
                        "{v} is outside the valid range for parameter \"extra_float_digits\" (-15 .. 3)"
                    )));
                }
                self.settings.set(key, value.to_string());
            }
            "statement_timeout" | "lock_timeout" | "idle_in_transaction_session_timeout" => {
                parse_timeout(value)?;
                self.settings
                    .set(key, value.trim().trim_matches('\'').to_string());
            }
            APPROX_ERROR => {
                let v = value.trim();
                if v != "0" && !v.eq_ignore_ascii_case("off") {
                    brook_synopses::check_error(parse_setting_f64(APPROX_ERROR, v)?)?;
                }
                self.settings.set(key, v.to_string());
            }
            APPROX_CONFIDENCE => {
                brook_synopses::Confidence::new(parse_setting_f64(APPROX_CONFIDENCE, value)?)?;
                self.settings.set(key, value.trim().to_string());
            }
            APPROX_REPORT => {
                brook_planner::approx::Report::parse(value)?;
                self.settings.set(key, value.trim().to_ascii_lowercase());
            }
            _ if self.settings.contains(&key) || key.contains('.') => {
                self.settings.set(key, value.to_string());
            }
            _ => {
                return Err(BrookError::UndefinedObject(format!(
                    "unrecognized configuration parameter \"{name}\""
                )))
            }
        }
        Ok(())
    }

    fn show(&self, variable: &[Ident]) -> Result<Outcome> {
        let name = variable
            .iter()
            .map(ident_name)
            .collect::<Vec<_>>()
            .join(" ");
        let key = match name.as_str() {
            "time zone" => "timezone".to_string(),
            "transaction isolation level" => "transaction_isolation".to_string(),
            other => other.to_string(),
        };
        if key == "all" {
            let (names, values): (Vec<String>, Vec<String>) =
                self.settings.entries().into_iter().unzip();
            let schema = Arc::new(Schema::new(vec![
                Field::new("name", DataType::Utf8, false),
                Field::new("setting", DataType::Utf8, false),
            ]));
            let batch = RecordBatch::try_new(
                schema.clone(),
                vec![
                    Arc::new(StringArray::from(names)),
                    Arc::new(StringArray::from(values)),
                ],
            )?;
            return Ok(rows_outcome(schema, vec![batch], "SHOW"));
        }
        let value = if key.starts_with("datafusion.") {
            let opts = self.ctx.state().config().options().entries();
            opts.into_iter()
                .find(|e| e.key == key)
                .and_then(|e| e.value)
        } else {
            self.settings.get(&key)
        };
        let value = value.ok_or_else(|| {
            BrookError::UndefinedObject(format!("unrecognized configuration parameter \"{name}\""))
        })?;
        let schema = Arc::new(Schema::new(vec![Field::new(key, DataType::Utf8, true)]));
        let batch = RecordBatch::try_new(
            schema.clone(),
            vec![Arc::new(StringArray::from(vec![value]))],
        )?;
        Ok(rows_outcome(schema, vec![batch], "SHOW"))
    }

    // ---- DML ----------------------------------------------------------------------------

    /// The value of column `i`'s DEFAULT as a one-row array of the column's type.
    async fn default_value(&self, meta: &RelationMeta, i: usize) -> Result<ArrayRef> {
        let col = &meta.columns[i];
        let Some(expr) = &col.default else {
            return Ok(datafusion::arrow::array::new_null_array(&col.ty.arrow(), 1));
        };
        let df = self.ctx.sql(&format!("SELECT {expr}")).await?;
        let batches = df.collect().await?;
        let Some(b) = batches.first() else {
            return Err(BrookError::internal("default expression produced no row"));
        };
        let f = b.schema().field(0).clone();
        coerce_column(b.column(0), &f, &col.ty, &col.name)
    }

    async fn insert(&mut self, ins: ast::Insert) -> Result<Outcome> {
        let TableObject::TableName(tn) = &ins.table else {
            return Err(BrookError::unsupported("INSERT INTO TABLE FUNCTION"));
        };
        let (schema, name) = self.resolve(tn)?;
        let (meta, store) = self.writable(&schema, &name)?;
        let mut targets = Vec::new();
        for c in &ins.columns {
            let parts = object_parts(c)?;
            let cname = parts.last().cloned().unwrap_or_default();
            let i = meta.column_index(&cname, &name)?;
            if targets.contains(&i) {
                return Err(BrookError::Syntax(format!(
                    "column \"{cname}\" specified more than once"
                )));
            }
            targets.push(i);
        }
        let mode = match &ins.on {
            None => WriteMode::Append,
            Some(OnInsert::OnConflict(oc)) => match &oc.action {
                OnConflictAction::DoNothing => WriteMode::SkipConflicts,
                OnConflictAction::DoUpdate(du) => {
                    if ins.returning.is_some() {
                        return Err(BrookError::unsupported(
                            "RETURNING with ON CONFLICT DO UPDATE",
                        ));
                    }
                    self.check_conflict_target(&meta, oc.conflict_target.as_ref())?;
                    let Some(q) = ins.source.clone() else {
                        return Err(BrookError::unsupported(
                            "DEFAULT VALUES with ON CONFLICT DO UPDATE",
                        ));
                    };
                    let plan = self.plan(Statement::Query(q)).await?;
                    let stream = self
                        .ctx
                        .execute_logical_plan(plan)
                        .await?
                        .execute_stream()
                        .await?;
                    let targets = if ins.columns.is_empty() {
                        None
                    } else {
                        Some(targets.clone())
                    };
                    let n = self
                        .upsert(&meta, &store, &name, stream, targets, du.clone())
                        .await?;
                    return Ok(Outcome::Command(format!("INSERT 0 {n}")));
                }
            },
            Some(other) => return Err(BrookError::unsupported(format!("INSERT {other}"))),
        };
        if mode == WriteMode::SkipConflicts && meta.primary_key.is_empty() {
            return Err(BrookError::InvalidDefinition(
                "there is no unique or exclusion constraint matching the ON CONFLICT specification"
                    .into(),
            ));
        }
        let stream: SendableRecordBatchStream = match ins.source {
            Some(q) => {
                let plan = self.plan(Statement::Query(q)).await?;
                let df = self.ctx.execute_logical_plan(plan).await?;
                df.execute_stream().await?
            }
            None => {
                // DEFAULT VALUES: one row, every column from its default.
                let schema = Arc::new(Schema::empty());
                let batch = RecordBatch::try_new_with_options(
                    schema.clone(),
                    vec![],
                    &datafusion::arrow::array::RecordBatchOptions::new().with_row_count(Some(1)),
                )?;
                Box::pin(RecordBatchStreamAdapter::new(
                    schema,
                    futures::stream::iter(vec![Ok(batch)]),
                ))
            }
        };
        let targets = if targets.is_empty() && ins.columns.is_empty() {
            None
        } else {
            Some(targets)
        };
        let returning = ins.returning.clone();
        let mut written = Vec::new();
        let n = self
            .write_stream_mapped(
                &meta,
                &store,
                &name,
                stream,
                targets,
                mode,
                returning.as_ref().map(|_| &mut written),
            )
            .await?;
        match returning {
            Some(items) => self.returning(&name, &meta, written, &items).await,
            None => Ok(Outcome::Command(format!("INSERT 0 {n}"))),
        }
    }

    async fn returning(
        &self,
        name: &str,
        meta: &RelationMeta,
        batches: Vec<RecordBatch>,
        items: &[SelectItem],
    ) -> Result<Outcome> {
        let ctx = SessionContext::new_with_state(self.ctx.state());
        let tmp = Arc::new(datafusion::datasource::MemTable::try_new(
            meta.schema(),
            vec![batches],
        )?);
        let tmp_schema = "brook_returning";
        let cat = ctx
            .catalog(&self.db.name)
            .ok_or_else(|| BrookError::internal("session catalog missing"))?;
        // A private catalog view: the RETURNING list sees the written rows under the table's name.
        let provider = Arc::new(datafusion::catalog::MemorySchemaProvider::new());
        datafusion::catalog::SchemaProvider::register_table(
            provider.as_ref(),
            name.to_string(),
            tmp,
        )?;
        let list = Arc::new(datafusion::catalog::MemoryCatalogProviderList::new());
        let c = Arc::new(datafusion::catalog::MemoryCatalogProvider::new());
        datafusion::catalog::CatalogProvider::register_schema(c.as_ref(), tmp_schema, provider)?;
        let _ = cat;
        datafusion::catalog::CatalogProviderList::register_catalog(
            list.as_ref(),
            "brook_returning".into(),
            c,
        );
        let state = datafusion::execution::session_state::SessionStateBuilder::new_from_existing(
            ctx.state(),
        )
        .with_catalog_list(list)
        .build();
        let rctx = SessionContext::new_with_state(state);
        let from = format!(
            "brook_returning.{tmp_schema}.{} AS {}",
            quote_ident(name),
            quote_ident(name)
        );
        let (q, names) = returning_query(items, &from)?;
        let plan = rctx
            .state()
            .statement_to_plan(DFStatement::Statement(Box::new(q)))
            .await?;
        let df = rctx.execute_logical_plan(plan).await?;
        let schema = pg_named(df.schema().as_arrow().clone(), names);
        let out = df.collect().await?;
        Ok(rows_outcome(schema, out, "INSERT"))
    }

    /// Write query output into a relation: map columns, fill defaults, cast, check
    /// constraints, then commit atomically.
    #[allow(clippy::too_many_arguments)]
    async fn write_stream_mapped(
        &self,
        meta: &RelationMeta,
        store: &Arc<TableStore>,
        name: &str,
        mut stream: SendableRecordBatchStream,
        targets: Option<Vec<usize>>,
        mode: WriteMode,
        mut keep: Option<&mut Vec<RecordBatch>>,
    ) -> Result<usize> {
        let mut txn = self.begin_write(meta, store, false).await?;
        let mut keys = self.key_check(meta, store, name).await?;
        let mut defaults: Vec<Option<ArrayRef>> = vec![None; meta.columns.len()];
        let mut total = 0usize;
        while let Some(batch) = stream.next().await {
            let mut out = self
                .shape_batch(meta, name, &batch?, targets.as_deref(), &mut defaults)
                .await?;
            if let Some(k) = keys.as_mut() {
                let conflicts = k.conflicts(&out, true)?;
                if let Some(row) = conflicts.iter().position(|&c| c) {
                    if mode == WriteMode::Append {
                        return Err(k.violation(&out, row));
                    }
                    let keep_mask =
                        BooleanArray::from(conflicts.iter().map(|c| !c).collect::<Vec<_>>());
                    out = filter_record_batch(&out, &keep_mask)?;
                }
            }
            total += out.num_rows();
            txn.append(&out)?;
            if let Some(k) = keep.as_deref_mut() {
                k.push(out);
            }
        }
        txn.commit()?;
        Ok(total)
    }

    /// Turn one batch of INSERT values into a batch of the relation: map to target columns,
    /// fill defaults, cast with PostgreSQL's assignment rules, check NOT NULL.
    async fn shape_batch(
        &self,
        meta: &RelationMeta,
        name: &str,
        batch: &RecordBatch,
        targets: Option<&[usize]>,
        defaults: &mut [Option<ArrayRef>],
    ) -> Result<RecordBatch> {
        let schema = meta.schema();
        let src_schema = batch.schema();
        let width = batch.num_columns();
        let targets: Vec<usize> = match targets {
            Some(t) => {
                if width > t.len() {
                    return Err(BrookError::Syntax(
                        "INSERT has more expressions than target columns".into(),
                    ));
                }
                if width < t.len() {
                    return Err(BrookError::Syntax(
                        "INSERT has more target columns than expressions".into(),
                    ));
                }
                t.to_vec()
            }
            None => {
                if width > meta.columns.len() {
                    return Err(BrookError::Syntax(
                        "INSERT has more expressions than target columns".into(),
                    ));
                }
                (0..width).collect()
            }
        };
        let mut cols: Vec<Option<ArrayRef>> = vec![None; meta.columns.len()];
        for (src, &dst) in targets.iter().enumerate() {
            let c = &meta.columns[dst];
            cols[dst] = Some(coerce_column(
                batch.column(src),
                src_schema.field(src),
                &c.ty,
                &c.name,
            )?);
        }
        let rows = batch.num_rows();
        let mut arrays = Vec::with_capacity(cols.len());
        for (i, c) in cols.into_iter().enumerate() {
            let a = match c {
                Some(a) => a,
                None => {
                    if defaults[i].is_none() {
                        defaults[i] = Some(self.default_value(meta, i).await?);
                    }
                    match &defaults[i] {
                        Some(d) => repeat_scalar(d, rows)?,
                        None => return Err(BrookError::internal("default missing")),
                    }
                }
            };
            if meta.columns[i].not_null && a.null_count() > 0 {
                return Err(BrookError::NotNullViolation(format!(
                    "null value in column \"{}\" of relation \"{name}\" violates not-null constraint",
                    meta.columns[i].name
                )));
            }
            arrays.push(a);
        }
        Ok(RecordBatch::try_new_with_options(
            schema,
            arrays,
            &datafusion::arrow::array::RecordBatchOptions::new().with_row_count(Some(rows)),
        )?)
    }

    /// ON CONFLICT (key): the target must be the primary key (42P10 otherwise).
    fn check_conflict_target(
        &self,
        meta: &RelationMeta,
        target: Option<&ast::ConflictTarget>,
    ) -> Result<()> {
        let no_match = || {
            BrookError::InvalidDefinition(
                "there is no unique or exclusion constraint matching the ON CONFLICT specification"
                    .into(),
            )
        };
        match target {
            Some(ast::ConflictTarget::Columns(cols)) => {
                let mut want: Vec<&str> = meta
                    .primary_key
                    .iter()
                    .map(|&i| meta.columns[i].name.as_str())
                    .collect();
                let mut got: Vec<String> = cols.iter().map(ident_name).collect();
                want.sort_unstable();
                got.sort_unstable();
                if want.is_empty() || got != want {
                    return Err(no_match());
                }
                Ok(())
            }
            Some(ast::ConflictTarget::OnConstraint(_)) => {
                Err(BrookError::unsupported("ON CONFLICT ON CONSTRAINT"))
            }
            None => Err(BrookError::Syntax(
                "ON CONFLICT DO UPDATE requires a conflict target".into(),
            )),
        }
    }

    /// INSERT ... ON CONFLICT (pk) DO UPDATE: new keys are inserted; rows whose key exists
    /// are updated with the SET list, where `excluded.col` is the proposed row. One atomic
    /// replace of the relation (like UPDATE). Returns inserted + updated rows.
    async fn upsert(
        &self,
        meta: &RelationMeta,
        store: &Arc<TableStore>,
        name: &str,
        mut stream: SendableRecordBatchStream,
        targets: Option<Vec<usize>>,
        du: ast::DoUpdate,
    ) -> Result<usize> {
        let schema = meta.schema();
        let mut defaults: Vec<Option<ArrayRef>> = vec![None; meta.columns.len()];
        let mut incoming = Vec::new();
        while let Some(b) = stream.next().await {
            incoming.push(
                self.shape_batch(meta, name, &b?, targets.as_deref(), &mut defaults)
                    .await?,
            );
        }
        let incoming = datafusion::arrow::compute::concat_batches(&schema, &incoming)?;
        let mut txn = self.begin_write(meta, store, true).await?;
        let existing_batches = store
            .snapshot()
            .iter()
            .map(|c| crate::storage::adapt_batch(store.read(c)?, &schema))
            .collect::<Result<Vec<_>>>()?;
        // Split the proposed rows by whether their key exists; a key proposed twice is an
        // error, as in PostgreSQL.
        let fields: Vec<SortField> = meta
            .primary_key
            .iter()
            .map(|&i| SortField::new(schema.field(i).data_type().clone()))
            .collect();
        let converter = RowConverter::new(fields)?;
        let key_cols = |b: &RecordBatch| -> Vec<ArrayRef> {
            meta.primary_key
                .iter()
                .map(|&i| b.column(i).clone())
                .collect()
        };
        let mut existing: HashSet<Box<[u8]>> = HashSet::new();
        for b in &existing_batches {
            for r in converter.convert_columns(&key_cols(b))?.iter() {
                existing.insert(r.as_ref().into());
            }
        }
        let mut proposed: HashSet<Box<[u8]>> = HashSet::new();
        let mut conflict = Vec::with_capacity(incoming.num_rows());
        for r in converter.convert_columns(&key_cols(&incoming))?.iter() {
            let key: Box<[u8]> = r.as_ref().into();
            if !proposed.insert(key.clone()) {
                return Err(BrookError::Cardinality(
                    "ON CONFLICT DO UPDATE command cannot affect row a second time".into(),
                ));
            }
            conflict.push(existing.contains(&key));
        }
        let conflict = BooleanArray::from(conflict);
        let fresh = filter_record_batch(&incoming, &datafusion::arrow::compute::not(&conflict)?)?;
        let excluded = filter_record_batch(&incoming, &conflict)?;
        // Rewrite the relation: each row joined with its proposed replacement, if any.
        let ctx = SessionContext::new();
        ctx.register_batch("excluded", excluded)?;
        let target = Arc::new(datafusion::datasource::MemTable::try_new(
            schema.clone(),
            vec![existing_batches],
        )?);
        ctx.register_table(datafusion::common::TableReference::bare(name), target)?;
        let t = quote_ident(name);
        let sets = assignments(meta, name, &du.assignments, |e| {
            qualify_bare_columns(e, name).to_string()
        })?;
        let cond = match &du.selection {
            Some(w) => format!(
                "excluded.\"__brook_hit\" IS TRUE AND ({}) IS TRUE",
                qualify_bare_columns(w, name)
            ),
            None => "excluded.\"__brook_hit\" IS TRUE".to_string(),
        };
        let mut items = Vec::new();
        for (i, c) in meta.columns.iter().enumerate() {
            let col = format!("{t}.{}", quote_ident(&c.name));
            match sets.get(&i) {
                Some(v) => items.push(format!(
                    "CASE WHEN {cond} THEN {v} ELSE {col} END AS {}",
                    quote_ident(&c.name)
                )),
                None => items.push(format!("{col} AS {}", quote_ident(&c.name))),
            }
        }
        items.push(format!("{cond} AS \"__brook_hit\""));
        let on: Vec<String> = meta
            .primary_key
            .iter()
            .map(|&i| {
                format!(
                    "{t}.{q} = excluded.{q}",
                    q = quote_ident(&meta.columns[i].name)
                )
            })
            .collect();
        let sql = format!(
            "SELECT {} FROM {t} LEFT JOIN (SELECT *, TRUE AS \"__brook_hit\" FROM excluded) AS excluded ON {}",
            items.join(", "),
            on.join(" AND ")
        );
        let rows = ctx.sql(&sql).await?.collect().await?;
        let Some(mut keys) = KeyCheck::new(meta, name)? else {
            return Err(BrookError::internal(
                "upsert on a relation without a primary key",
            ));
        };
        let mut updated = 0usize;
        for b in rows.iter().chain(std::iter::once(&fresh)) {
            // rewritten rows carry the hit flag after the relation's columns; fresh rows do not
            if let Some(hit) = b
                .columns()
                .get(meta.columns.len())
                .and_then(|h| h.as_any().downcast_ref::<BooleanArray>())
            {
                updated += hit.true_count();
            }
            let out = to_relation_batch(meta, name, b)?;
            if let Some(row) = keys.conflicts(&out, true)?.iter().position(|&c| c) {
                return Err(keys.violation(&out, row));
            }
            txn.append(&out)?;
        }
        txn.commit()?;
        Ok(fresh.num_rows() + updated)
    }

    /// Start a write to `meta` (see [`Engine::begin_write`]) under this session's
    /// `lock_timeout`.
    async fn begin_write(
        &self,
        meta: &RelationMeta,
        store: &Arc<TableStore>,
        replace: bool,
    ) -> Result<crate::storage::WriteTxn> {
        let lock_timeout = self.timeout_setting("lock_timeout")?;
        self.engine
            .begin_write(meta, store, replace, lock_timeout)
            .await
    }

    /// A timeout setting (`statement_timeout`, `lock_timeout`, ...): None when 0 (off).
    pub fn timeout_setting(&self, name: &str) -> Result<Option<std::time::Duration>> {
        let v = self.settings.get(name).unwrap_or_default();
        let d = parse_timeout(&v)?;
        Ok((!d.is_zero()).then_some(d))
    }

    /// Primary-key state for a write: the keys already committed.
    async fn key_check(
        &self,
        meta: &RelationMeta,
        store: &Arc<TableStore>,
        name: &str,
    ) -> Result<Option<KeyCheck>> {
        let Some(mut k) = KeyCheck::new(meta, name)? else {
            return Ok(None);
        };
        let schema = meta.schema();
        for c in store.snapshot().iter() {
            let b = crate::storage::adapt_batch(store.read(c)?, &schema)?;
            k.conflicts(&b, true)?;
        }
        Ok(Some(k))
    }

    fn dml_target(&self, tf: &TableFactor, verb: &str) -> Result<DmlTarget> {
        let TableFactor::Table { name, alias, .. } = tf else {
            return Err(BrookError::unsupported(format!(
                "{verb} of a derived table"
            )));
        };
        let (schema, tname) = self.resolve(name)?;
        let (meta, store) = self.writable(&schema, &tname)?;
        if meta.kind == RelKind::Stream {
            return Err(BrookError::WrongObjectType(format!(
                "cannot {} stream \"{tname}\": streams are append-only",
                verb.to_lowercase()
            )));
        }
        Ok(DmlTarget {
            schema,
            name: tname,
            alias: alias.as_ref().map(|a| ident_name(&a.name)),
            meta,
            store,
        })
    }

    async fn update(&mut self, u: ast::Update) -> Result<Outcome> {
        if u.from.is_some() {
            return Err(BrookError::unsupported("UPDATE ... FROM"));
        }
        if !u.table.joins.is_empty() {
            return Err(BrookError::unsupported("UPDATE with joins"));
        }
        let DmlTarget {
            schema,
            name,
            alias,
            meta,
            store,
        } = self.dml_target(&u.table.relation, "UPDATE")?;
        let sets = assignments(&meta, &name, &u.assignments, |e| e.to_string())?;
        let pred = u
            .selection
            .as_ref()
            .map(|e| format!("({e}) IS TRUE"))
            .unwrap_or_else(|| "TRUE".into());
        let mut items = Vec::new();
        for (i, c) in meta.columns.iter().enumerate() {
            let col = quote_ident(&c.name);
            match sets.get(&i) {
                Some(v) if v.eq_ignore_ascii_case("DEFAULT") => {
                    let d = c.default.clone().unwrap_or_else(|| "NULL".into());
                    items.push(format!("CASE WHEN {pred} THEN {d} ELSE {col} END AS {col}"));
                }
                Some(v) => items.push(format!("CASE WHEN {pred} THEN {v} ELSE {col} END AS {col}")),
                None => items.push(col),
            }
        }
        items.push(format!("{pred} AS \"__brook_hit\""));
        let from = format!(
            "{}.{}{}",
            quote_ident(&schema),
            quote_ident(&name),
            alias
                .map(|a| format!(" AS {}", quote_ident(&a)))
                .unwrap_or_default()
        );
        let sql = format!("SELECT {} FROM {from}", items.join(", "));
        self.rewrite_relation(&meta, &store, &name, &sql, true, u.returning.as_deref())
            .await
    }

    async fn delete(&mut self, d: ast::Delete) -> Result<Outcome> {
        if d.using.is_some() {
            return Err(BrookError::unsupported("DELETE ... USING"));
        }
        let tables = match &d.from {
            FromTable::WithFromKeyword(t) | FromTable::WithoutKeyword(t) => t,
        };
        let [twj] = tables.as_slice() else {
            return Err(BrookError::unsupported("DELETE from several tables"));
        };
        let DmlTarget {
            schema,
            name,
            alias,
            meta,
            store,
        } = self.dml_target(&twj.relation, "DELETE FROM")?;
        let pred = d
            .selection
            .as_ref()
            .map(|e| format!("({e}) IS TRUE"))
            .unwrap_or_else(|| "TRUE".into());
        let cols: Vec<String> = meta.columns.iter().map(|c| quote_ident(&c.name)).collect();
        let from = format!(
            "{}.{}{}",
            quote_ident(&schema),
            quote_ident(&name),
            alias
                .map(|a| format!(" AS {}", quote_ident(&a)))
                .unwrap_or_default()
        );
        let sql = format!(
            "SELECT {}, {pred} AS \"__brook_hit\" FROM {from}",
            cols.join(", ")
        );
        self.rewrite_relation(&meta, &store, &name, &sql, false, d.returning.as_deref())
            .await
    }

    /// Rewrite a whole table from `sql` (table columns + a `__brook_hit` flag): UPDATE keeps
    /// every row (changed ones flagged), DELETE keeps the unflagged rows. Atomic: the new
    /// contents replace the old in one commit.
    async fn rewrite_relation(
        &self,
        meta: &RelationMeta,
        store: &Arc<TableStore>,
        name: &str,
        sql: &str,
        keep_hits: bool,
        returning: Option<&[SelectItem]>,
    ) -> Result<Outcome> {
        let mut txn = self.begin_write(meta, store, true).await?;
        let df = self.ctx.sql(sql).await?;
        let mut stream = df.execute_stream().await?;
        let mut keys = KeyCheck::new(meta, name)?;
        let mut hits = 0usize;
        let mut affected = Vec::new();
        while let Some(b) = stream.next().await {
            let b = b?;
            let n = b.num_columns();
            let hit = b
                .column(n - 1)
                .as_any()
                .downcast_ref::<BooleanArray>()
                .ok_or_else(|| BrookError::internal("hit flag is not boolean"))?
                .clone();
            hits += hit.true_count();
            let rows = to_relation_batch(meta, name, &b)?;
            if returning.is_some() {
                affected.push(filter_record_batch(&rows, &hit)?);
            }
            let kept = if keep_hits {
                rows
            } else {
                let not_hit = datafusion::arrow::compute::not(&hit)?;
                filter_record_batch(&rows, &not_hit)?
            };
            if let Some(k) = keys.as_mut() {
                if let Some(row) = k.conflicts(&kept, true)?.iter().position(|&c| c) {
                    return Err(k.violation(&kept, row));
                }
            }
            txn.append(&kept)?;
        }
        txn.commit()?;
        if let Some(items) = returning {
            let mut out = self.returning(name, meta, affected, items).await?;
            if let Outcome::Rows { tag, .. } = &mut out {
                *tag = if keep_hits { "UPDATE" } else { "DELETE" };
            }
            return Ok(out);
        }
        Ok(Outcome::Command(format!(
            "{} {hits}",
            if keep_hits { "UPDATE" } else { "DELETE" }
        )))
    }

    // ---- COPY ---------------------------------------------------------------------------

    async fn copy(
        &mut self,
        source: CopySource,
        to: bool,
        target: SqlCopyTarget,
        options: &[ast::CopyOption],
        legacy: &[ast::CopyLegacyOption],
        values: Vec<Option<String>>,
    ) -> Result<Outcome> {
        let opts = CopyOptions::from_sql(options, legacy)?;
        if to {
            if !matches!(target, SqlCopyTarget::Stdout) {
                return Err(BrookError::unsupported(
                    "COPY TO a file or program (use COPY ... TO STDOUT)",
                ));
            }
            let stmt = match source {
                CopySource::Query(q) => Statement::Query(q),
                CopySource::Table {
                    table_name,
                    columns,
                } => {
                    let (schema, name) = self.resolve(&table_name)?;
                    self.relation(&schema, &name)?;
                    let cols = if columns.is_empty() {
                        "*".to_string()
                    } else {
                        columns
                            .iter()
                            .map(|c| quote_ident(&ident_name(c)))
                            .collect::<Vec<_>>()
                            .join(", ")
                    };
                    let sql = format!(
                        "SELECT {cols} FROM {}.{}",
                        quote_ident(&schema),
                        quote_ident(&name)
                    );
                    match brook_planner::parser::parse_one(&sql)? {
                        BrookStatement::Sql(s) => *s,
                        _ => {
                            return Err(BrookError::internal("COPY TO query did not parse as SQL"))
                        }
                    }
                }
            };
            let plan = self.plan(stmt).await?;
            let df = self.ctx.execute_logical_plan(plan).await?;
            let stream = df.execute_stream().await?;
            return Ok(Outcome::CopyOut { opts, stream });
        }
        if !matches!(target, SqlCopyTarget::Stdin) {
            return Err(BrookError::unsupported(
                "COPY FROM a file or program (use COPY ... FROM STDIN)",
            ));
        }
        if !values.is_empty() {
            return Err(BrookError::unsupported(
                "inline COPY data in the query string",
            ));
        }
        let CopySource::Table {
            table_name,
            columns,
        } = source
        else {
            return Err(BrookError::Syntax(
                "COPY ... FROM does not support a query as a source".into(),
            ));
        };
        let (schema, name) = self.resolve(&table_name)?;
        let (meta, store) = self.writable(&schema, &name)?;
        let field_columns = if columns.is_empty() {
            (0..meta.columns.len()).collect::<Vec<_>>()
        } else {
            let mut v = Vec::new();
            for c in &columns {
                let n = ident_name(c);
                let i = meta.column_index(&n, &name)?;
                if v.contains(&i) {
                    return Err(BrookError::Syntax(format!(
                        "column \"{n}\" specified more than once"
                    )));
                }
                v.push(i);
            }
            v
        };
        let mut defaults = vec![None; meta.columns.len()];
        for (i, d) in defaults.iter_mut().enumerate() {
            if !field_columns.contains(&i) && meta.columns[i].default.is_some() {
                *d = Some(self.default_value(&meta, i).await?);
            }
        }
        let target = Arc::new(CopyTarget {
            schema: meta.schema(),
            types: meta.columns.iter().map(|c| c.ty.clone()).collect(),
            field_columns,
            defaults,
            table: name.clone(),
            not_null: meta.columns.iter().map(|c| c.not_null).collect(),
            binary: opts.format == CopyFormat::Binary,
        });
        let columns = target.field_columns.len();
        let binary = opts.format == CopyFormat::Binary;
        // The existing keys are read under the write lock: a concurrent writer's keys are
        // either committed before (and seen here) or written after this COPY ends.
        let txn = self.begin_write(&meta, &store, false).await?;
        let keys = self.key_check(&meta, &store, &name).await?;
        self.copy_in = Some(CopyIn {
            parser: CopyParser::new(opts),
            builder: BatchBuilder::new(target.clone()),
            writer: CopyWriter::Here(Box::new(BatchWriter { target, txn, keys })),
        });
        Ok(Outcome::CopyIn { columns, binary })
    }

    /// COPY data arrived. On error the COPY is aborted (nothing of it is visible).
    pub async fn copy_data(&mut self, data: &[u8]) -> Result<()> {
        let Some(c) = self.copy_in.as_mut() else {
            return Err(BrookError::Protocol(
                "COPY data received outside of COPY IN".into(),
            ));
        };
        let res = copy_feed(c, data, false).await;
        if res.is_err() {
            self.copy_in = None;
        }
        res
    }

    /// COPY data ended: flush, commit, return the row count.
    pub async fn copy_done(&mut self) -> Result<usize> {
        let Some(mut c) = self.copy_in.take() else {
            return Err(BrookError::Protocol(
                "CopyDone received outside of COPY IN".into(),
            ));
        };
        copy_feed(&mut c, &[], true).await?;
        let mut w = c.writer.finish().await?;
        // Rows of a COPY too small to start the writer thread are still in the builder.
        w.write(c.builder.take_raw())?;
        let n = w.txn.rows();
        w.txn.commit()?;
        Ok(n)
    }

    /// The client aborted the COPY.
    pub fn copy_fail(&mut self) {
        self.copy_in = None;
    }
}

/// Parse `data` (the last of it when `eof`) and pass full batches on to the writer.
async fn copy_feed(c: &mut CopyIn, data: &[u8], eof: bool) -> Result<()> {
    let mut ready = Vec::new();
    let mut sink = CopySink {
        builder: &mut c.builder,
        ready: &mut ready,
    };
    if eof {
        // A last partial batch stays in the builder: `copy_done` writes it after the rest.
        c.parser.finish(&mut sink)?;
    } else {
        c.parser.feed(data, &mut sink)?;
    }
    c.writer.send(ready).await
}

/// Routes parsed COPY fields into the batch builder and sets full batches aside.
struct CopySink<'a> {
    builder: &'a mut BatchBuilder,
    ready: &'a mut Vec<RawBatch>,
}

impl crate::copy::RowSink for CopySink<'_> {
    fn field(&mut self, value: Option<&[u8]>) -> Result<()> {
        self.builder.field(value)
    }

    fn end_row(&mut self, line: u64) -> Result<()> {
        self.builder.end_row(line)?;
        if self.builder.len() >= BATCH_ROWS {
            self.ready.push(self.builder.take_raw());
        }
        Ok(())
    }
}

/// The table an UPDATE or DELETE changes.
struct DmlTarget {
    schema: String,
    name: String,
    alias: Option<String>,
    meta: RelationMeta,
    store: Arc<TableStore>,
}

/// How INSERT treats key conflicts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum WriteMode {
    Append,
    SkipConflicts,
}

/// The query `SELECT <items> FROM <from>` of a RETURNING list, ready to plan, with the
/// PostgreSQL names of its columns.
fn returning_query(
    items: &[SelectItem],
    from: &str,
) -> Result<(Statement, Option<Vec<brook_planner::rewrite::OutputName>>)> {
    let items: Vec<String> = items.iter().map(|i| i.to_string()).collect();
    let sql = format!("SELECT {} FROM {from}", items.join(", "));
    let BrookStatement::Sql(q) = brook_planner::parser::parse_one(&sql)? else {
        return Err(BrookError::internal(
            "RETURNING list did not parse as a query",
        ));
    };
    let names = brook_planner::rewrite::output_names(&q);
    let mut q = *q;
    pg_literals(&mut q)?;
    Ok((q, names))
}

/// A planned schema with PostgreSQL's output names applied (when known).
fn pg_named(
    schema: datafusion::arrow::datatypes::Schema,
    names: Option<Vec<brook_planner::rewrite::OutputName>>,
) -> SchemaRef {
    match names {
        Some(n) => brook_planner::rewrite::rename_output(&schema, &n),
        None => Arc::new(schema),
    }
}

/// The `SET col = expr` list of UPDATE / ON CONFLICT DO UPDATE as column index -> SQL text
/// (42703 for unknown columns, 42601 for a column assigned twice).
fn assignments(
    meta: &RelationMeta,
    name: &str,
    list: &[ast::Assignment],
    render: impl Fn(&Expr) -> String,
) -> Result<BTreeMap<usize, String>> {
    let mut sets = BTreeMap::new();
    for a in list {
        let AssignmentTarget::ColumnName(c) = &a.target else {
            return Err(BrookError::unsupported("assignment to a column tuple"));
        };
        let cname = object_parts(c)?.pop().unwrap_or_default();
        let i = meta.column_index(&cname, name)?;
        if sets.insert(i, render(&a.value)).is_some() {
            return Err(BrookError::Syntax(format!(
                "multiple assignments to same column \"{cname}\""
            )));
        }
    }
    Ok(sets)
}

/// Cast a query result (relation columns first, in order) to the relation's types and
/// check NOT NULL: the rows a rewrite writes back.
fn to_relation_batch(meta: &RelationMeta, name: &str, b: &RecordBatch) -> Result<RecordBatch> {
    let bs = b.schema();
    let mut cols = Vec::with_capacity(meta.columns.len());
    for (i, c) in meta.columns.iter().enumerate() {
        let a = coerce_column(b.column(i), bs.field(i), &c.ty, &c.name)?;
        if c.not_null && a.null_count() > 0 {
            return Err(BrookError::NotNullViolation(format!(
                "null value in column \"{}\" of relation \"{name}\" violates not-null constraint",
                c.name
            )));
        }
        cols.push(a);
    }
    Ok(RecordBatch::try_new_with_options(
        meta.schema(),
        cols,
        &datafusion::arrow::array::RecordBatchOptions::new().with_row_count(Some(b.num_rows())),
    )?)
}

/// In ON CONFLICT DO UPDATE, unqualified columns mean the target table's (the proposed row
/// is `excluded.col`); qualify them so the rewrite query is unambiguous.
fn qualify_bare_columns(e: &Expr, table: &str) -> Expr {
    let mut e = e.clone();
    let _ = ast::visit_expressions_mut(&mut e, |x| {
        if let Expr::Identifier(i) = x {
            *x = Expr::CompoundIdentifier(vec![Ident::with_quote('"', table), i.clone()]);
        }
        std::ops::ControlFlow::<()>::Continue(())
    });
    e
}

/// PostgreSQL literal typing for statements that evaluate expressions.
fn pg_literals(stmt: &mut Statement) -> Result<()> {
    if matches!(
        stmt,
        Statement::Query(_)
            | Statement::Insert(_)
            | Statement::Update(_)
            | Statement::Delete(_)
            | Statement::Explain { .. }
    ) {
        brook_planner::windows::rewrite_windows(stmt)?;
        brook_planner::rewrite::int4_literals(stmt);
        brook_planner::decorrelate::decorrelate_scalar_subqueries(stmt);
        brook_planner::rewrite::alias_outputs(stmt);
    }
    Ok(())
}

fn setting_value(e: &Expr) -> String {
    match e {
        Expr::Value(v) => match &v.value {
            ast::Value::SingleQuotedString(s) | ast::Value::DoubleQuotedString(s) => s.clone(),
            other => other.to_string(),
        },
        Expr::Identifier(i) => i.value.clone(),
        other => other.to_string(),
    }
}

fn first_words(s: &str) -> String {
    s.split_whitespace().take(3).collect::<Vec<_>>().join(" ")
}

fn rows_outcome(schema: SchemaRef, batches: Vec<RecordBatch>, tag: &'static str) -> Outcome {
    let stream = RecordBatchStreamAdapter::new(
        schema.clone(),
        futures::stream::iter(batches.into_iter().map(Ok)),
    );
    Outcome::Rows {
        schema,
        stream: Box::pin(stream),
        tag,
    }
}

fn repeat_scalar(one: &ArrayRef, rows: usize) -> Result<ArrayRef> {
    let idx = datafusion::arrow::array::UInt32Array::from(vec![0u32; rows]);
    Ok(datafusion::arrow::compute::take(one.as_ref(), &idx, None)?)
}

/// The column type a query result column gets in CREATE TABLE AS.
fn pg_type_of_arrow(dt: &DataType) -> Option<PgType> {
    Some(match dt {
        DataType::Boolean => PgType::Bool,
        DataType::Int8 | DataType::Int16 | DataType::UInt8 => PgType::Int2,
        DataType::Int32 | DataType::UInt16 => PgType::Int4,
        DataType::Int64 | DataType::UInt32 => PgType::Int8,
        DataType::UInt64 => PgType::Numeric {
            precision: Some(20),
            scale: Some(0),
        },
        DataType::Float16 | DataType::Float32 => PgType::Float4,
        DataType::Float64 => PgType::Float8,
        DataType::Decimal128(p, s) => PgType::Numeric {
            precision: Some(*p),
            scale: Some(*s),
        },
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View | DataType::Null => PgType::Text,
        DataType::Binary | DataType::LargeBinary | DataType::BinaryView => PgType::Bytea,
        DataType::Date32 | DataType::Date64 => PgType::Date,
        DataType::Timestamp(_, None) => PgType::Timestamp,
        DataType::Timestamp(_, Some(_)) => PgType::Timestamptz,
        DataType::Time64(_) | DataType::Time32(_) => PgType::Time,
        DataType::Interval(_) => PgType::Interval,
        _ => return None,
    })
}

/// Convert a value column to a table column's type with PostgreSQL's assignment rules:
/// text is parsed as input of the type; numbers convert when they fit (22003 otherwise).
pub fn coerce_column(col: &ArrayRef, field: &Field, ty: &PgType, name: &str) -> Result<ArrayRef> {
    let target = ty.arrow();
    if col.data_type() == &target {
        crate::copy::check_lengths(col, ty, &|r| r as u64 + 1, "", name).map_err(|e| match e {
            BrookError::StringTooLong(_) => {
                BrookError::StringTooLong(format!("value too long for type {}", ty.name()))
            }
            other => other,
        })?;
        return Ok(col.clone());
    }
    let _ = field;
    match col.data_type() {
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => {
            let s = cast_with_options(col, &DataType::Utf8, &CastOptions::default())?;
            crate::copy::text_to_column(&s, ty, &|r| r as u64 + 1, "", name).map_err(|e| match e {
                BrookError::InvalidText(m) => {
                    BrookError::InvalidText(m.split(" (COPY").next().unwrap_or(&m).to_string())
                }
                BrookError::OutOfRange(m) => {
                    BrookError::OutOfRange(m.split(" (COPY").next().unwrap_or(&m).to_string())
                }
                BrookError::StringTooLong(_) => {
                    BrookError::StringTooLong(format!("value too long for type {}", ty.name()))
                }
                other => other,
            })
        }
        DataType::Null => Ok(datafusion::arrow::array::new_null_array(&target, col.len())),
        src => {
            if !assignable(src, ty) {
                return Err(BrookError::DatatypeMismatch(format!(
                    "column \"{name}\" is of type {} but expression is of type {}",
                    ty.name(),
                    crate::types::arrow_wire_type(src).name()
                )));
            }
            let rounded = round_floats_for_int(col, ty)?;
            let out = cast_with_options(
                &rounded,
                &target,
                &CastOptions {
                    safe: true,
                    ..Default::default()
                },
            )?;
            if out.null_count() != col.null_count() {
                return Err(BrookError::OutOfRange(format!(
                    "{} out of range",
                    ty.name()
                )));
            }
            Ok(out)
        }
    }
}

/// PostgreSQL rounds (half to even) when a float is assigned to an integer column.
fn round_floats_for_int(col: &ArrayRef, ty: &PgType) -> Result<ArrayRef> {
    use datafusion::arrow::array::Float64Array;
    if !matches!(ty, PgType::Int2 | PgType::Int4 | PgType::Int8)
        || !matches!(col.data_type(), DataType::Float32 | DataType::Float64)
    {
        return Ok(col.clone());
    }
    let f = cast_with_options(col, &DataType::Float64, &CastOptions::default())?;
    let f = f
        .as_any()
        .downcast_ref::<Float64Array>()
        .ok_or_else(|| BrookError::internal("float cast"))?;
    let r: Float64Array = f.iter().map(|v| v.map(f64::round_ties_even)).collect();
    Ok(Arc::new(r))
}

/// Which value types may be stored into a column of type `ty` without an explicit cast.
fn assignable(src: &DataType, ty: &PgType) -> bool {
    let numeric_src = src.is_numeric();
    match ty {
        PgType::Int2
        | PgType::Int4
        | PgType::Int8
        | PgType::Float4
        | PgType::Float8
        | PgType::Numeric { .. } => numeric_src,
        PgType::Bool => matches!(src, DataType::Boolean),
        PgType::Text
        | PgType::Varchar(_)
        | PgType::Char(_)
        | PgType::Json
        | PgType::Jsonb
        | PgType::Uuid => true,
        PgType::Bytea => matches!(
            src,
            DataType::Binary | DataType::LargeBinary | DataType::BinaryView
        ),
        PgType::Date => matches!(
            src,
            DataType::Date32 | DataType::Date64 | DataType::Timestamp(_, _)
        ),
        PgType::Timestamp | PgType::Timestamptz => matches!(
            src,
            DataType::Timestamp(_, _) | DataType::Date32 | DataType::Date64
        ),
        PgType::Time => matches!(src, DataType::Time32(_) | DataType::Time64(_)),
        PgType::Interval => matches!(src, DataType::Interval(_) | DataType::Duration(_)),
    }
}
