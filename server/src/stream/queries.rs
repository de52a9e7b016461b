//! Running continuous queries: one task per query feeds committed data of its sources through
//! its operator graph and hands the results to a bounded channel.
//!
//! Sources are read from the durable logs, from the first committed row on (so a continuous
//! query over a stream ends in the same state as the query over a table with the same rows),
//! then as commits happen. A table's UPDATE/DELETE replaces its contents: the task retracts
//! the old rows it no longer has and inserts the new ones it did not (`table_changes`).
//!
//! Backpressure: the result channel holds a few batches; when the reader is slow the task
//! waits before reading more of the log, so a slow cursor never makes the server buffer
//! without bound (the unread input stays on disk).

use crate::catalog::table::BrookTable;
use crate::catalog::RelKind;
use crate::storage::{adapt_batch, Snapshot, TableStore};
use crate::stream::registry::QueryStats;
use crate::stream::table_changes::changed_rows;
use crate::stream::view::ViewState;
use brook_common::{brook_err, Result};
use brook_operators::change;
use brook_operators::graph::{present, Graph, GraphPlan};
use brook_planner::continuous::{
    RowOperatorDefinition, SourceFacts, SourceResolver, ViewDefinition,
};
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::common::tree_node::{TreeNode, TreeNodeRecursion};
use datafusion::common::{DFSchema, TableReference};
use datafusion::datasource::source_as_provider;
use datafusion::error::DataFusionError;
use datafusion::execution::context::SessionState;
use datafusion::execution::SendableRecordBatchStream;
use datafusion::logical_expr::{LogicalPlan, TableSource};
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use std::cell::RefCell;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Weak};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

/// The stream option naming how long a stream may go without rows before it is idle.
pub const IDLE_TIMEOUT: &str = "idle_timeout";

/// Batches of results buffered between a query's task and its reader.
const RESULT_BUFFER: usize = 4;

/// The relation a scan reads, when it is one of Brook's tables or streams.
fn brook_table(
    source: &Arc<dyn TableSource>,
) -> Option<Arc<dyn datafusion::catalog::TableProvider>> {
    let provider = source_as_provider(source).ok()?;
    provider.is::<BrookTable>().then_some(provider)
}

/// The materialized view a scan reads, if it reads one.
fn view_table(
    source: &Arc<dyn TableSource>,
) -> Option<Arc<dyn datafusion::catalog::TableProvider>> {
    let provider = source_as_provider(source).ok()?;
    provider
        .is::<crate::stream::view::ViewTable>()
        .then_some(provider)
}

/// Definitions of the materialized views a continuous plan reads, by scanned name.
pub type ViewPlans = std::collections::HashMap<String, ViewDefinition>;

/// Plan the definitions of the views `plan` reads, and of the views those read, into `out`.
pub async fn plan_views(
    ctx: &datafusion::prelude::SessionContext,
    plan: &LogicalPlan,
    out: &mut ViewPlans,
) -> Result<()> {
    let mut found = Vec::new();
    let _ = plan.apply(|node| {
        if let LogicalPlan::TableScan(scan) = node {
            if let Some(p) = view_table(&scan.source) {
                if let Some(v) = p.downcast_ref::<crate::stream::view::ViewTable>() {
                    let zone = v
                        .options
                        .get(crate::stream::plan::TIME_ZONE_OPTION)
                        .cloned();
                    found.push((scan.table_name.to_string(), v.definition.clone(), zone));
                }
            }
        }
        Ok(TreeNodeRecursion::Continue)
    });
    for (name, definition, zone) in found {
        if out.contains_key(&name) {
            continue;
        }
        let sql =
            definition.ok_or_else(|| brook_err!(Internal, "view {name} has no definition"))?;
        let (plan, options) =
            crate::stream::plan::view_logical_plan(ctx, &sql, zone.as_deref()).await?;
        Box::pin(plan_views(ctx, &plan, out)).await?;
        out.insert(name, ViewDefinition { plan, options });
    }
    Ok(())
}

/// True when the plan reads a stream (and so runs continuously when declared as a cursor).
pub fn reads_stream(plan: &LogicalPlan) -> bool {
    let mut found = false;
    let _ = plan.apply(|node| {
        if let LogicalPlan::TableScan(scan) = node {
            let provider = source_as_provider(&scan.source).ok();
            // Count windows read the relation they take.
            let provider = match provider.as_ref() {
                Some(p) => match p.downcast_ref::<crate::stream::row_windows::CountWindowTable>() {
                    Some(cw) => Some(cw.relation.clone()),
                    None => provider,
                },
                None => None,
            };
            if let Some(t) = provider
                .as_ref()
                .and_then(|p| p.downcast_ref::<BrookTable>())
            {
                found |= t.meta.kind == RelKind::Stream;
            }
        }
        Ok(if found {
            TreeNodeRecursion::Stop
        } else {
            TreeNodeRecursion::Continue
        })
    });
    found
}

/// Resolves scans to Brook relations and remembers their stores in source order.
pub struct Resolver<'a> {
    state: &'a SessionState,
    /// The store of each source, in the order the planner asked.
    pub stores: RefCell<Vec<Arc<TableStore>>>,
    /// Definitions of the views the plan reads (see [`plan_views`]).
    views: ViewPlans,
}

impl<'a> Resolver<'a> {
    /// A resolver planning with `state` (for watermark expressions), inlining `views`.
    pub fn new(state: &'a SessionState, views: ViewPlans) -> Self {
        Resolver {
            state,
            stores: RefCell::new(Vec::new()),
            views,
        }
    }
}

impl SourceResolver for Resolver<'_> {
    fn row_operator(&self, source: &Arc<dyn TableSource>) -> Result<Option<RowOperatorDefinition>> {
        let Ok(provider) = source_as_provider(source) else {
            return Ok(None);
        };
        let table = |name: &str| TableReference::from(name);
        let source = |r: &Arc<dyn datafusion::catalog::TableProvider>| {
            datafusion::datasource::provider_as_source(r.clone())
        };
        if let Some(cw) = provider.downcast_ref::<crate::stream::row_windows::CountWindowTable>() {
            return Ok(Some(RowOperatorDefinition {
                relation: table(&cw.name),
                source: source(&cw.relation),
                node: cw.node.clone(),
                what: "count windows",
            }));
        }
        Ok(None)
    }

    fn view(
        &self,
        table: &TableReference,
        source: &Arc<dyn TableSource>,
    ) -> Result<Option<ViewDefinition>> {
        if view_table(source).is_none() {
            return Ok(None);
        }
        match self.views.get(&table.to_string()) {
            Some(v) => Ok(Some(v.clone())),
            None => Err(brook_err!(
                Internal,
                "definition of view {table} was not planned"
            )),
        }
    }

    fn resolve(
        &self,
        table: &TableReference,
        source: &Arc<dyn TableSource>,
    ) -> Result<SourceFacts> {
        let provider = brook_table(source).ok_or_else(|| {
            brook_err!(
                Unsupported,
                "reading {table} (a system view or table function) in a continuous query"
            )
        })?;
        let t = provider
            .downcast_ref::<BrookTable>()
            .ok_or_else(|| brook_err!(Internal, "scan is not a Brook relation"))?;
        let table_schema = t.meta.schema();
        let watermark = match &t.meta.watermark {
            Some(w) => {
                let schema = DFSchema::try_from(table_schema.as_ref().clone())?;
                Some(self.state.create_logical_expr(&w.expr, &schema)?)
            }
            None => None,
        };
        self.stores.borrow_mut().push(t.store.clone());
        Ok(SourceFacts {
            table_schema,
            updating: t.meta.kind == RelKind::Table,
            watermark,
            watermark_sql: t.meta.watermark.as_ref().map(|w| w.expr.clone()),
            idle_timeout: match t.meta.options.get(IDLE_TIMEOUT) {
                Some(text) => Some(crate::settings::parse_timeout(text)?),
                None => None,
            },
        })
    }
}

/// Start a continuous query; its results (schema `schema`, with the change-kind column when
/// the plan is updating) arrive on the returned stream, which never ends on its own.
/// Dropping the stream stops the query and frees its state.
pub fn start(
    plan: Arc<GraphPlan>,
    stores: Vec<Arc<TableStore>>,
    schema: SchemaRef,
    stats: Arc<QueryStats>,
) -> SendableRecordBatchStream {
    stats.progress.running_on(&stores);
    let (tx, rx) =
        mpsc::channel::<std::result::Result<RecordBatch, DataFusionError>>(RESULT_BUFFER);
    let out_schema = schema.clone();
    let sink = Sink::Reader(Outbox {
        tx: tx.clone(),
        schema: out_schema,
        updating: plan.updating(),
        pending: Vec::new(),
        rows: 0,
        stats: stats.clone(),
    });
    tokio::spawn(async move {
        if let Err(e) = run_guarded(plan, stores, sink, stats).await {
            let _ = tx.send(Err(DataFusionError::External(Box::new(e)))).await;
        }
    });
    let stream =
        futures::stream::unfold(rx, |mut rx| async move { rx.recv().await.map(|b| (b, rx)) });
    Box::pin(RecordBatchStreamAdapter::new(schema, stream))
}

type Sender = mpsc::Sender<std::result::Result<RecordBatch, DataFusionError>>;

/// Results of one round (what the commits seen so far produced), sent as few batches:
/// a reader that FETCHes after a commit sees all of that commit's changes together.
struct Outbox {
    tx: Sender,
    schema: SchemaRef,
    updating: bool,
    pending: Vec<RecordBatch>,
    rows: usize,
    /// The query's statistics, where a round's end is recorded for FETCH.
    stats: Arc<QueryStats>,
}

/// Rows gathered before a batch goes out even mid-round (bounds memory on big backlogs).
const OUTBOX_ROWS: usize = 8192;

impl Outbox {
    /// Queue results; sends when enough are gathered. False when the reader is gone.
    async fn push(&mut self, batches: Vec<RecordBatch>) -> Result<bool> {
        for b in batches {
            if b.num_rows() == 0 {
                continue;
            }
            self.rows += b.num_rows();
            self.pending.push(present(&b, self.updating)?);
        }
        if self.rows >= OUTBOX_ROWS {
            return self.flush().await;
        }
        Ok(true)
    }

    /// Send what is gathered. False when the reader is gone.
    async fn flush(&mut self) -> Result<bool> {
        if self.pending.is_empty() {
            return Ok(true);
        }
        let parts = std::mem::take(&mut self.pending);
        self.rows = 0;
        let inner = parts[0].schema();
        let mut one = datafusion::arrow::compute::concat_batches(&inner, &parts)?;
        if self.updating {
            one = change::consolidate(&one)?;
            if one.num_rows() == 0 {
                return Ok(true);
            }
        }
        let b = RecordBatch::try_new(self.schema.clone(), one.columns().to_vec())?;
        Ok(self.tx.send(Ok(b)).await.is_ok())
    }
}

/// Where a running query's results go.
enum Sink {
    /// A reader (cursor, push query): batches on a bounded channel.
    Reader(Outbox),
    /// A materialized view's state (held weakly: dropping the view ends the query).
    View(Weak<ViewState>, CancellationToken),
}

impl Sink {
    /// Take results; false when nobody wants them any more.
    async fn push(&mut self, batches: Vec<RecordBatch>) -> Result<bool> {
        match self {
            Sink::Reader(out) => out.push(batches).await,
            Sink::View(view, _) => {
                let Some(view) = view.upgrade() else {
                    return Ok(false);
                };
                for b in batches.iter().filter(|b| b.num_rows() > 0) {
                    view.apply(b)?;
                }
                Ok(true)
            }
        }
    }

    /// A round ended with every source applied up to `versions`.
    async fn end_round(&mut self, versions: &[u64]) -> Result<bool> {
        match self {
            Sink::Reader(out) => {
                let sent = out.flush().await?;
                // The round's results are on the reader's channel.
                out.stats.progress.round_ended(versions);
                Ok(sent)
            }
            Sink::View(view, _) => match view.upgrade() {
                Some(v) => {
                    v.progress.round_ended(versions);
                    Ok(true)
                }
                None => Ok(false),
            },
        }
    }

    /// Resolves when the results are no longer wanted.
    async fn gone(&self) {
        match self {
            Sink::Reader(out) => out.tx.closed().await,
            Sink::View(_, stop) => stop.cancelled().await,
        }
    }
}

/// Maintain a materialized view: run `plan` over `stores` into `view` until it is dropped.
pub fn start_view(
    plan: Arc<GraphPlan>,
    stores: Vec<Arc<TableStore>>,
    view: &Arc<ViewState>,
    stats: Arc<QueryStats>,
) {
    let weak = Arc::downgrade(view);
    let stop = view.stop_token();
    tokio::spawn(async move {
        let sink = Sink::View(weak.clone(), stop);
        if let Err(e) = run_guarded(plan, stores, sink, stats).await {
            if let Some(v) = weak.upgrade() {
                v.fail(&e);
            }
        }
    });
}

/// Run a query until its sink is gone. A panic in an operator is a bug, but its reader (or
/// view) must hear of it: it becomes an internal error (XX000) instead of a result stream
/// that silently ends. The panic hook has already logged where it happened.
async fn run_guarded(
    plan: Arc<GraphPlan>,
    stores: Vec<Arc<TableStore>>,
    sink: Sink,
    stats: Arc<QueryStats>,
) -> Result<()> {
    use futures::FutureExt;
    let running = std::panic::AssertUnwindSafe(run(plan, stores, sink, stats));
    match running.catch_unwind().await {
        Ok(done) => done,
        Err(_) => Err(brook_err!(
            Internal,
            "the continuous query stopped on an internal error (see the server log)"
        )),
    }
}

async fn run(
    plan: Arc<GraphPlan>,
    stores: Vec<Arc<TableStore>>,
    mut sink: Sink,
    stats: Arc<QueryStats>,
) -> Result<()> {
    let table_schemas: Vec<SchemaRef> = plan
        .sources
        .iter()
        .map(|s| s.table_schema.clone())
        .collect();
    let catch_up_rows = if plan.cut_invariant() {
        CATCH_UP_ROWS
    } else {
        0
    };
    let (mut graph, first) = Graph::new(plan)?;
    if !sink.push(first).await? {
        return Ok(());
    }
    let mut commits: Vec<_> = stores.iter().map(|s| s.subscribe()).collect();
    let mut seen: Vec<Snapshot> = stores.iter().map(|_| Arc::new(Vec::new())).collect();
    let mut versions = vec![0u64; stores.len()];
    let mut epoch = 0u64;
    let mut idle = IdleSources::new(&graph);
    loop {
        for (i, store) in stores.iter().enumerate() {
            versions[i] = *commits[i].borrow_and_update();
            let now = store.snapshot();
            let (retract, insert) = diff(&seen[i], &now);
            if !insert.is_empty() {
                idle.active(i);
            }
            let replaced = if retract.is_empty() {
                None
            } else {
                let old = read_run(store, &retract, &table_schemas[i])?;
                let new = read_run(store, &insert, &table_schemas[i])?;
                changed_rows(&old, &new)?
            };
            if let Some((gone, added)) = replaced {
                // A replacement (UPDATE, DELETE): only the rows it changed.
                for (raw, kind) in [(gone, change::DELETE), (added, change::INSERT)] {
                    if raw.num_rows() > 0
                        && !feed(&mut graph, i, &raw, kind, &stats, &mut sink).await?
                    {
                        return Ok(());
                    }
                }
            } else {
                for (chunks, kind) in [(retract, change::DELETE), (insert, change::INSERT)] {
                    for run in coalesced(&chunks, catch_up_rows) {
                        let raw = read_run(store, run, &table_schemas[i])?;
                        if !feed(&mut graph, i, &raw, kind, &stats, &mut sink).await? {
                            return Ok(());
                        }
                    }
                }
            }
            seen[i] = now;
        }
        // Idle sources follow the others' watermark.
        let out = idle.follow(&mut graph)?;
        let produced: usize = out.iter().map(|b| b.num_rows()).sum();
        stats.rows_out.fetch_add(produced as u64, Ordering::Relaxed);
        if !sink.push(out).await? {
            return Ok(());
        }
        // The round's input is complete: operators that hold back output emit it now.
        epoch += 1;
        let out = graph.barrier(epoch)?;
        stats.hold_state(graph.state_bytes())?;
        let produced: usize = out.iter().map(|b| b.num_rows()).sum();
        stats.rows_out.fetch_add(produced as u64, Ordering::Relaxed);
        if !sink.push(out).await? {
            return Ok(());
        }
        if !sink.end_round(&versions).await? {
            return Ok(());
        }
        if let Ok(mut g) = stats.graph.lock() {
            *g = graph.stats();
        }
        // Wait for the next commit on any source, or until the results are not wanted.
        // A source going idle counts as an event too.
        let waits = commits.iter_mut().map(|r| Box::pin(r.changed()));
        let deadline = idle.next_deadline();
        tokio::select! {
            _ = futures::future::select_all(waits) => {}
            _ = sink.gone() => return Ok(()),
            _ = tokio::time::sleep_until(deadline.unwrap_or_else(tokio::time::Instant::now)),
                if deadline.is_some() => idle.expire(),
        }
    }
}

/// Which sources of a query are idle: a source with an idle timeout that has had no new
/// rows for that long stops holding back the watermark; it follows the lowest watermark of
/// the active sources (as Flink's idle sources are left out of the minimum), until rows
/// arrive again. With no active source nothing moves.
struct IdleSources {
    /// Per source: its idle timeout, if it has one.
    timeouts: Vec<Option<std::time::Duration>>,
    /// Per source: when it last had rows (or the query started).
    last_rows: Vec<tokio::time::Instant>,
    /// Per source: idle now.
    idle: Vec<bool>,
}

impl IdleSources {
    fn new(graph: &Graph) -> Self {
        let timeouts: Vec<_> = graph
            .plan()
            .sources
            .iter()
            .map(|s| s.idle_timeout.filter(|_| s.watermark.is_some()))
            .collect();
        let n = timeouts.len();
        IdleSources {
            timeouts,
            last_rows: vec![tokio::time::Instant::now(); n],
            idle: vec![false; n],
        }
    }

    /// Source `i` had rows.
    fn active(&mut self, i: usize) {
        self.last_rows[i] = tokio::time::Instant::now();
        self.idle[i] = false;
    }

    /// When the next active source goes idle, if one can.
    fn next_deadline(&self) -> Option<tokio::time::Instant> {
        (0..self.timeouts.len())
            .filter(|&i| !self.idle[i])
            .filter_map(|i| self.timeouts[i].map(|t| self.last_rows[i] + t))
            .min()
    }

    /// Mark the sources whose timeout passed as idle.
    fn expire(&mut self) {
        let now = tokio::time::Instant::now();
        for i in 0..self.timeouts.len() {
            if self.timeouts[i].is_some_and(|t| self.last_rows[i] + t <= now) {
                self.idle[i] = true;
            }
        }
    }

    /// Raise each idle source's watermark to the lowest of the active sources'.
    fn follow(&self, graph: &mut Graph) -> Result<Vec<RecordBatch>> {
        if !self.idle.iter().any(|i| *i) {
            return Ok(Vec::new());
        }
        let active: Option<i64> = (0..self.idle.len())
            .filter(|&i| !self.idle[i] && graph.plan().sources[i].watermark.is_some())
            .map(|i| graph.source_watermark(i))
            .collect::<Option<Vec<i64>>>()
            .and_then(|w| w.into_iter().min());
        let Some(target) = active else {
            return Ok(Vec::new());
        };
        let mut out = Vec::new();
        for i in (0..self.idle.len()).filter(|&i| self.idle[i]) {
            out.extend(graph.follow(i, target)?);
        }
        Ok(out)
    }
}

/// Push a source's rows through the graph and its output to the sink; false once the sink
/// is gone.
async fn feed(
    graph: &mut Graph,
    source: usize,
    raw: &RecordBatch,
    kind: i8,
    stats: &QueryStats,
    sink: &mut Sink,
) -> Result<bool> {
    let out = graph.push(source, raw, kind)?;
    stats.hold_state(graph.state_bytes())?;
    stats
        .rows_in
        .fetch_add(raw.num_rows() as u64, Ordering::Relaxed);
    let produced: usize = out.iter().map(|b| b.num_rows()).sum();
    stats.rows_out.fetch_add(produced as u64, Ordering::Relaxed);
    sink.push(out).await
}

/// What changed between two snapshots of a relation: chunks to retract, chunks to insert.
/// Appends share the old chunks as a prefix; anything else was a replacement (UPDATE,
/// DELETE, TRUNCATE): every chunk seen before and every chunk now, whose rows
/// [`changed_rows`] compares.
/// A query behind its input whose plan's output does not depend on how its input is cut
/// (a pattern, filters, projections) reads up to this many committed rows as one batch:
/// per-batch costs (a partitioned operator's per-partition work, above all) are paid once
/// for them, not once per stored chunk (8,192 rows of a COPY). Other plans read chunk by
/// chunk, so their results (what a watermark made late) are the same when a view is
/// rebuilt as when it was maintained.
const CATCH_UP_ROWS: usize = 65_536;

/// `chunks` cut into runs of consecutive chunks of at most `rows` rows in all.
fn coalesced(
    chunks: &[Arc<crate::storage::Chunk>],
    rows: usize,
) -> Vec<&[Arc<crate::storage::Chunk>]> {
    runs(chunks.iter().map(|c| c.rows), rows)
        .into_iter()
        .map(|r| &chunks[r])
        .collect()
}

/// Consecutive items of the given sizes grouped into runs of at most `limit` in all (an
/// item larger than that alone; each item alone for `limit` 0).
fn runs(sizes: impl Iterator<Item = usize>, limit: usize) -> Vec<std::ops::Range<usize>> {
    let mut runs = Vec::new();
    let mut start = 0;
    let mut taken = 0;
    let mut end = 0;
    for (i, size) in sizes.enumerate() {
        if i > start && taken + size > limit {
            runs.push(start..i);
            start = i;
            taken = 0;
        }
        taken += size;
        end = i + 1;
    }
    if start < end {
        runs.push(start..end);
    }
    runs
}

/// The rows of a run of chunks as one batch of `schema`.
fn read_run(
    store: &TableStore,
    run: &[Arc<crate::storage::Chunk>],
    schema: &SchemaRef,
) -> Result<RecordBatch> {
    let batches = run
        .iter()
        .map(|c| adapt_batch(store.read(c)?, schema))
        .collect::<Result<Vec<_>>>()?;
    match batches.as_slice() {
        [one] => Ok(one.clone()),
        _ => Ok(datafusion::arrow::compute::concat_batches(
            schema, &batches,
        )?),
    }
}

fn diff(
    old: &Snapshot,
    new: &Snapshot,
) -> (
    Vec<Arc<crate::storage::Chunk>>,
    Vec<Arc<crate::storage::Chunk>>,
) {
    let prefix = old.len() <= new.len()
        && old
            .last()
            .zip(new.get(old.len().wrapping_sub(1)))
            .is_none_or(|(a, b)| Arc::ptr_eq(a, b));
    if prefix {
        (Vec::new(), new[old.len()..].to_vec())
    } else {
        (old.as_ref().clone(), new.as_ref().clone())
    }
}

#[cfg(test)]
mod tests {
    use super::runs;

    #[test]
    fn chunks_are_read_in_runs_of_at_most_the_limit() {
        fn sizes(v: &[usize]) -> impl Iterator<Item = usize> + '_ {
            v.iter().copied()
        }
        assert_eq!(runs(sizes(&[8192; 10]), 65_536), vec![0..8, 8..10]);
        assert_eq!(runs(sizes(&[100_000, 10, 10]), 65_536), vec![0..1, 1..3]);
        assert_eq!(runs(sizes(&[3, 3, 3]), 0), vec![0..1, 1..2, 2..3]);
        assert_eq!(
            runs(sizes(&[]), 65_536),
            Vec::<std::ops::Range<usize>>::new()
        );
    }
}
