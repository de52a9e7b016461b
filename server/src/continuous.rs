//! Running continuous queries: one task per query feeds committed data of its sources through
//! its operator graph and hands the results to a bounded channel.
//!
//! Sources are read from the durable logs, from the first committed row on (so a continuous
//! query over a stream ends in the same state as the query over a table with the same rows),
//! then as commits happen. A table's UPDATE/DELETE replaces its contents: the task retracts
//! the old rows and inserts the new ones.
//!
//! Backpressure: the result channel holds a few batches; when the reader is slow the task
//! waits before reading more of the log, so a slow cursor never makes the server buffer
//! without bound (the unread input stays on disk).

use crate::catalog::RelKind;
use crate::storage::{adapt_batch, Snapshot, TableStore};
use crate::table::BrookTable;
use crate::view::ViewState;
use brook_common::{BrookError, Result};
use brook_operators::change;
use brook_operators::graph::{present, Graph, GraphPlan, GraphStats};
use brook_planner::continuous::{SourceFacts, SourceResolver};
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
use std::sync::{Arc, Mutex, Weak};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

/// Batches of results buffered between a query's task and its reader.
const RESULT_BUFFER: usize = 4;

/// The relation a scan reads, when it is one of Brook's tables or streams.
fn brook_table(
    source: &Arc<dyn TableSource>,
) -> Option<Arc<dyn datafusion::catalog::TableProvider>> {
    let provider = source_as_provider(source).ok()?;
    provider.is::<BrookTable>().then_some(provider)
}

/// True when the plan reads a stream (and so runs continuously when declared as a cursor).
pub fn reads_stream(plan: &LogicalPlan) -> bool {
    let mut found = false;
    let _ = plan.apply(|node| {
        if let LogicalPlan::TableScan(scan) = node {
            if let Some(p) = brook_table(&scan.source) {
                if let Some(t) = p.downcast_ref::<BrookTable>() {
                    found |= t.meta.kind == RelKind::Stream;
                }
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
}

impl<'a> Resolver<'a> {
    /// A resolver planning with `state` (for watermark expressions).
    pub fn new(state: &'a SessionState) -> Self {
        Resolver {
            state,
            stores: RefCell::new(Vec::new()),
        }
    }
}

impl SourceResolver for Resolver<'_> {
    fn resolve(
        &self,
        table: &TableReference,
        source: &Arc<dyn TableSource>,
    ) -> Result<SourceFacts> {
        let provider = brook_table(source).ok_or_else(|| {
            BrookError::unsupported(format!(
                "reading {table} (a system view) in a continuous query"
            ))
        })?;
        let t = provider
            .downcast_ref::<BrookTable>()
            .ok_or_else(|| BrookError::internal("scan is not a Brook relation"))?;
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
        })
    }
}

/// A running continuous query's shared statistics.
#[derive(Debug, Default)]
pub struct QueryStats {
    /// Latest statistics of the graph.
    pub graph: Mutex<GraphStats>,
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
    let (tx, rx) =
        mpsc::channel::<std::result::Result<RecordBatch, DataFusionError>>(RESULT_BUFFER);
    let out_schema = schema.clone();
    let sink = Sink::Reader(Outbox {
        tx: tx.clone(),
        schema: out_schema,
        updating: plan.updating(),
        pending: Vec::new(),
        rows: 0,
    });
    tokio::spawn(async move {
        if let Err(e) = run(plan, stores, sink, stats).await {
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
            Sink::Reader(out) => out.flush().await,
            Sink::View(view, _) => match view.upgrade() {
                Some(v) => {
                    v.processed(versions.to_vec());
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
pub fn start_view(plan: Arc<GraphPlan>, stores: Vec<Arc<TableStore>>, view: &Arc<ViewState>) {
    let weak = Arc::downgrade(view);
    let stop = view.stop_token();
    tokio::spawn(async move {
        let sink = Sink::View(weak.clone(), stop);
        if let Err(e) = run(plan, stores, sink, Arc::new(QueryStats::default())).await {
            if let Some(v) = weak.upgrade() {
                v.fail(&e);
            }
        }
    });
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
    let (mut graph, first) = Graph::new(plan)?;
    if !sink.push(first).await? {
        return Ok(());
    }
    let mut commits: Vec<_> = stores.iter().map(|s| s.subscribe()).collect();
    let mut seen: Vec<Snapshot> = stores.iter().map(|_| Arc::new(Vec::new())).collect();
    let mut versions = vec![0u64; stores.len()];
    loop {
        for (i, store) in stores.iter().enumerate() {
            versions[i] = *commits[i].borrow_and_update();
            let now = store.snapshot();
            let (retract, insert) = diff(&seen[i], &now);
            for (chunks, kind) in [(retract, change::DELETE), (insert, change::INSERT)] {
                for c in chunks {
                    let raw = adapt_batch(store.read(&c)?, &table_schemas[i])?;
                    if !sink.push(graph.push(i, &raw, kind)?).await? {
                        return Ok(());
                    }
                }
            }
            seen[i] = now;
        }
        if !sink.end_round(&versions).await? {
            return Ok(());
        }
        if let Ok(mut g) = stats.graph.lock() {
            *g = graph.stats();
        }
        // Wait for the next commit on any source, or until the results are not wanted.
        let waits = commits.iter_mut().map(|r| Box::pin(r.changed()));
        tokio::select! {
            _ = futures::future::select_all(waits) => {}
            _ = sink.gone() => return Ok(()),
        }
    }
}

/// What changed between two snapshots of a relation: chunks to retract, chunks to insert.
/// Appends share the old chunks as a prefix; anything else was a replacement (UPDATE,
/// DELETE, TRUNCATE) and retracts everything seen before.
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
