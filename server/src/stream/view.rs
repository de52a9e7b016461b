//! Materialized views: a continuous query whose changelog is applied to an in-memory
//! multiset of rows, read by ad-hoc queries. A view whose query never retracts (its result is
//! append-only: projections, filters, windows emitted on close) keeps its rows as the Arrow
//! batches that arrived instead: nothing will ever look a row up to delete it, so indexing
//! each row would only cost time (a hash per row) and memory (a row-format copy).
//!
//! Durability choice: a view's state is rebuilt by replaying its durable inputs when its
//! database opens (after a restart too), never checkpointed. Replay runs the same operators
//! over the same committed batches, so the rebuilt state equals the state before the crash:
//! nothing is lost or counted twice. The cost is replay time proportional to the inputs.
//!
//! Freshness: a scan of the view waits until maintenance has applied every commit of its
//! inputs that was visible when the scan began, so a SELECT after an acknowledged INSERT
//! sees its effect (read-your-writes through views).

use crate::storage::TableStore;
use crate::stream::partitioned_view::{Distribution, Gather, ViewIdentity};
use crate::stream::progress::{covers, Progress};
use async_trait::async_trait;
use brook_common::{brook_err, BrookError, Result};
use brook_operators::change;
use datafusion::arrow::array::ArrayRef;
use datafusion::arrow::compute::concat_batches;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::arrow::row::{RowConverter, SortField};
use datafusion::catalog::{Session as CatalogSession, TableProvider};
use datafusion::datasource::memory::MemorySourceConfig;
use datafusion::error::{DataFusionError, Result as DfResult};
use datafusion::logical_expr::{Expr, TableType};
use datafusion::physical_plan::ExecutionPlan;
// hashbrown with its default (foldhash) hasher, as DataFusion uses: SipHash cost 14% of a
// pass-through view's CPU.
use datafusion::common::HashMap;
use std::sync::{Arc, Mutex};
use tokio_util::sync::CancellationToken;

/// The maintained contents of one materialized view.
#[derive(Debug)]
pub struct ViewState {
    schema: SchemaRef,
    rows: Mutex<Rows>,
    /// The input versions maintenance has fully applied.
    pub(crate) progress: Progress,
    /// Set when maintenance failed; scans report it.
    failed: Mutex<Option<String>>,
    /// The error maintenance failed with, as (SQLSTATE, message).
    cause: Mutex<Option<(&'static str, String)>>,
    /// Stops the maintenance task when the view goes away.
    stop: CancellationToken,
    /// The maintenance task's statistics, renamed with the view.
    stats: Mutex<std::sync::Weak<crate::stream::registry::QueryStats>>,
    /// Set before maintenance starts: whether (and over which partitions) the view is
    /// maintained per partition on this node (`partitioned_view`).
    distribution: std::sync::OnceLock<Option<Distribution>>,
    /// Arrow bytes of the rows the last read gathered from the partitions' owners (a view
    /// maintained per partition, a global synopsis's partial sketches): what a read moves.
    pub gathered_bytes: std::sync::atomic::AtomicU64,
    /// Set once a read found maintenance caught up with its inputs: from then on a synopsis
    /// answers from its state at once ([`ViewState::wait_built`]).
    built: std::sync::atomic::AtomicBool,
}

/// Distinct rows (row-format bytes) with their multiplicity, and the batches of an
/// append-only view.
#[derive(Debug)]
struct Rows {
    converter: RowConverter,
    counts: HashMap<Box<[u8]>, i64>,
    /// Set when maintenance starts, from the plan: the result never retracts, so inserts are
    /// kept in `appended` as they came.
    append_only: bool,
    /// Inserted batches (append-only views).
    appended: Vec<RecordBatch>,
    /// How many batches at the end of `appended` are small (see `APPEND_COALESCE`).
    small_tail: usize,
}

/// Small batches (a few rows per INSERT) are merged once this many are at the end of an
/// append-only view, so that a view fed row by row does not hold one batch per row.
const APPEND_COALESCE: usize = 32;
/// Batches below this many rows count as small.
const SMALL_BATCH: usize = 1024;

impl Drop for ViewState {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

impl ViewState {
    /// Plan the view's defining `sql` with `ctx` and start maintaining it from the start of
    /// its inputs (a server restart rebuilds every view this way); a plan that fails marks
    /// the view failed. With a `distribution`, a partition-local view is maintained over
    /// the partitions it names only (`partitioned_view`).
    pub fn replay(
        self: Arc<Self>,
        ctx: datafusion::prelude::SessionContext,
        sql: String,
        stats: Arc<crate::stream::registry::QueryStats>,
        distribution: Option<Distribution>,
    ) {
        tokio::spawn(async move {
            // Plan with the database's context, then let it go: the maintenance task must
            // not keep the database alive.
            let planned = match &distribution {
                Some(d) => crate::stream::plan::plan_view_sql_in_partitions(&ctx, &sql, d).await,
                None => crate::stream::plan::plan_view_sql(&ctx, &sql)
                    .await
                    .map(|(graph, stores, _)| (graph, stores, false)),
            };
            drop(ctx);
            match planned {
                Ok((graph, stores, restricted)) => {
                    let _ = self.distribution.set(distribution.filter(|_| restricted));
                    self.start(Arc::new(graph), stores, stats)
                }
                Err(e) => {
                    let _ = self.distribution.set(None);
                    self.fail(&e)
                }
            }
        });
    }

    /// Whether the view was planned to be maintained whole (its query is not
    /// partition-local, or it did not ask to be maintained per partition).
    pub fn planned_whole(&self) -> bool {
        matches!(self.distribution.get(), Some(None))
    }

    /// How the view is maintained per partition on this node (`None`: whole, as on a
    /// single server; also before its maintenance started).
    pub fn distribution(&self) -> Option<&Distribution> {
        self.distribution.get().and_then(Option::as_ref)
    }

    /// Empty state for rows of `schema`; maintenance begins with [`ViewState::start`].
    pub fn new(schema: SchemaRef) -> Result<Arc<ViewState>> {
        let fields = schema
            .fields()
            .iter()
            .map(|f| SortField::new(f.data_type().clone()))
            .collect();
        Ok(Arc::new(ViewState {
            rows: Mutex::new(Rows {
                converter: RowConverter::new(fields)?,
                counts: HashMap::new(),
                append_only: false,
                appended: Vec::new(),
                small_tail: 0,
            }),
            schema,
            progress: Progress::default(),
            failed: Mutex::new(None),
            cause: Mutex::new(None),
            stop: CancellationToken::new(),
            stats: Mutex::new(std::sync::Weak::new()),
            distribution: std::sync::OnceLock::new(),
            gathered_bytes: std::sync::atomic::AtomicU64::new(0),
            built: std::sync::atomic::AtomicBool::new(false),
        }))
    }

    /// Start maintaining the view with `plan` over `stores` (once).
    pub fn start(
        self: &Arc<Self>,
        plan: Arc<brook_operators::graph::GraphPlan>,
        stores: Vec<Arc<TableStore>>,
        stats: Arc<crate::stream::registry::QueryStats>,
    ) {
        if !self.progress.running_on(&stores) {
            return;
        }
        if let Ok(mut rows) = self.rows.lock() {
            rows.append_only = !plan.updating();
        }
        if let Ok(mut kept) = self.stats.lock() {
            *kept = Arc::downgrade(&stats);
        }
        crate::stream::queries::start_view(plan, stores, self, stats);
    }

    /// The view was renamed: its maintenance is listed under the new name.
    pub fn renamed(&self, new: &str) {
        if let Some(stats) = self.stats.lock().ok().and_then(|s| s.upgrade()) {
            stats.rename(new);
        }
    }

    /// Cancelled when the view is dropped.
    pub fn stop_token(&self) -> CancellationToken {
        self.stop.clone()
    }

    /// Apply a changelog batch (data columns plus change kind).
    pub fn apply(&self, batch: &RecordBatch) -> Result<()> {
        let kinds = change::kinds(batch)?.clone();
        let data = change::strip(batch)?;
        // The catalog's column types win (the plan may carry an equivalent Arrow type).
        let columns = data
            .columns()
            .iter()
            .zip(self.schema.fields())
            .map(|(c, f)| {
                if c.data_type() == f.data_type() {
                    Ok(c.clone())
                } else {
                    Ok(datafusion::arrow::compute::cast(c, f.data_type())?)
                }
            })
            .collect::<Result<Vec<ArrayRef>>>()?;
        let mut rows = self
            .rows
            .lock()
            .map_err(|_| brook_err!(Internal, "view state poisoned"))?;
        if rows.append_only && kinds.values().iter().all(|k| *k == change::INSERT) {
            let batch = RecordBatch::try_new(self.schema.clone(), columns)?;
            return rows.append(batch, &self.schema);
        }
        let encoded = rows.converter.convert_columns(&columns)?;
        for i in 0..batch.num_rows() {
            let key = encoded.row(i).data();
            let n = match rows.counts.get_mut(key) {
                Some(n) => n,
                None => rows.counts.entry(key.into()).or_insert(0),
            };
            *n += i64::from(kinds.value(i));
            if *n == 0 {
                rows.counts.remove(key);
            }
        }
        Ok(())
    }

    /// Maintenance stopped with an error.
    pub fn fail(&self, e: &BrookError) {
        tracing::error!(error = %e, "materialized view maintenance failed");
        // A data exception (class 22: division by zero, a value out of range) comes from a
        // row of the inputs, which stays: say what to do about it.
        let what = if e.sqlstate().starts_with("22") {
            format!(
                "{e} (a row of its inputs made its query fail: delete or correct that row, \
                 then REFRESH MATERIALIZED VIEW rebuilds the view from its inputs; or create \
                 it again with a query that handles such rows, e.g. NULLIF for a divisor)"
            )
        } else if e.sqlstate() == "54000" {
            // A limit the inputs reached (a recursive query's rounds over a cycle).
            format!(
                "{e} (delete the rows that reach the limit, then REFRESH MATERIALIZED VIEW \
                 rebuilds the view from its inputs)"
            )
        } else {
            e.to_string()
        };
        if let Ok(mut f) = self.failed.lock() {
            *f = Some(what);
        }
        if let Ok(mut c) = self.cause.lock() {
            *c = Some((e.sqlstate(), e.to_string()));
        }
        self.progress.wake();
    }

    /// The error maintenance stopped with, with its own SQLSTATE.
    pub fn failure(&self) -> Option<BrookError> {
        let (code, message) = self.cause.lock().ok()?.clone()?;
        Some(BrookError::Reported { message, code })
    }

    /// Whether maintenance stopped with an error.
    pub fn has_failed(&self) -> bool {
        self.failed.lock().map(|f| f.is_some()).unwrap_or(true)
    }

    fn check_failed(&self) -> Result<()> {
        match self.failed.lock().ok().and_then(|f| f.clone()) {
            Some(msg) => Err(brook_err!(
                ObjectState,
                "materialized view maintenance failed: {msg}"
            )),
            None => Ok(()),
        }
    }

    /// Wait, the first time only, until maintenance has caught up with its inputs: a
    /// synopsis rebuilt after a restart (or just created over existing rows) must not answer
    /// from its empty state, while later reads answer from the latest state at once.
    pub async fn wait_built(&self) -> Result<()> {
        use std::sync::atomic::Ordering;
        if !self.built.load(Ordering::Acquire) {
            self.wait_fresh().await?;
            self.built.store(true, Ordering::Release);
        }
        self.check_failed()
    }

    /// Wait until every input commit visible now has been applied.
    pub async fn wait_fresh(&self) -> Result<()> {
        let mut rx = self.progress.subscribe();
        let mut target: Option<Vec<u64>> = None;
        loop {
            self.check_failed()?;
            if target.is_none() {
                target = self.progress.visible();
            }
            let done = rx.borrow_and_update().clone();
            if target.as_deref().is_some_and(|t| covers(&done, t)) {
                return Ok(());
            }
            // Woken by each step of maintenance and by its failure; asked again after a
            // while anyway, so a wake that raced the subscription cannot leave the reader
            // waiting for good (a REFRESH was once seen waiting on a view that had failed).
            let wait = std::time::Duration::from_millis(250);
            if let Ok(Err(_)) = tokio::time::timeout(wait, rx.changed()).await {
                return Err(brook_err!(Internal, "view maintenance ended"));
            }
        }
    }

    /// The current rows as batches: an append-only view's batches as they were kept (shared,
    /// not copied: a scan of a large view must not first copy all of it), then the counted
    /// rows decoded into one batch, if any.
    pub fn batches(&self) -> Result<Vec<RecordBatch>> {
        let rows = self
            .rows
            .lock()
            .map_err(|_| brook_err!(Internal, "view state poisoned"))?;
        let mut out = rows.appended.clone();
        if rows.counts.is_empty() {
            return Ok(out);
        }
        let parser = rows.converter.parser();
        let mut list = Vec::new();
        for (key, n) in &rows.counts {
            for _ in 0..(*n).max(0) {
                list.push(parser.parse(key));
            }
        }
        let columns: Vec<ArrayRef> = rows.converter.convert_rows(list)?;
        let options = datafusion::arrow::record_batch::RecordBatchOptions::new().with_row_count(
            Some(rows.counts.values().map(|n| (*n).max(0) as usize).sum()),
        );
        out.push(RecordBatch::try_new_with_options(
            self.schema.clone(),
            columns,
            &options,
        )?);
        Ok(out)
    }

    /// The current rows as one batch (for readers that need them together, such as a
    /// synopsis' merge of its sketches).
    pub fn snapshot(&self) -> Result<RecordBatch> {
        Ok(concat_batches(&self.schema, &self.batches()?)?)
    }

    /// Rows and bytes held (for statistics).
    pub fn size(&self) -> (usize, usize) {
        match self.rows.lock() {
            Ok(r) => (
                r.counts
                    .values()
                    .map(|n| (*n).max(0) as usize)
                    .sum::<usize>()
                    + r.appended.iter().map(RecordBatch::num_rows).sum::<usize>(),
                r.counts.keys().map(|k| k.len() + 16).sum::<usize>()
                    + r.appended
                        .iter()
                        .map(RecordBatch::get_array_memory_size)
                        .sum::<usize>(),
            ),
            Err(_) => (0, 0),
        }
    }
}

impl Rows {
    /// Keep an inserted batch of an append-only view, merging runs of small ones.
    fn append(&mut self, batch: RecordBatch, schema: &SchemaRef) -> Result<()> {
        if batch.num_rows() == 0 {
            return Ok(());
        }
        let small = batch.num_rows() < SMALL_BATCH;
        self.appended.push(batch);
        self.small_tail = if small { self.small_tail + 1 } else { 0 };
        if self.small_tail >= APPEND_COALESCE {
            let tail = self
                .appended
                .split_off(self.appended.len() - self.small_tail);
            let merged = concat_batches(schema, &tail)?;
            // A merged batch still small is merged again with the next run, so batches grow
            // to SMALL_BATCH rows (each row is copied a bounded number of times).
            self.small_tail = usize::from(merged.num_rows() < SMALL_BATCH);
            self.appended.push(merged);
        }
        Ok(())
    }
}

/// A materialized view as DataFusion sees it: a table of its current rows.
#[derive(Debug)]
pub struct ViewTable {
    /// The maintained state.
    pub state: Arc<ViewState>,
    /// A materialized view or a synopsis.
    pub kind: crate::catalog::RelKind,
    /// The catalog's options of the relation (a synopsis' kind, size and bound).
    pub options: std::collections::BTreeMap<String, String>,
    /// The defining query (SQL, possibly ending in an EMIT clause): what a continuous
    /// query reading the view plans in its place.
    pub definition: Option<String>,
    /// Where the view is (what other nodes are asked for when it is read).
    pub identity: ViewIdentity,
    /// In cluster mode, how a view maintained per partition is read from its owners.
    pub gather: Option<Arc<dyn Gather>>,
}

#[async_trait]
impl TableProvider for ViewTable {
    fn schema(&self) -> SchemaRef {
        self.state.schema.clone()
    }

    fn table_type(&self) -> TableType {
        TableType::View
    }

    async fn scan(
        &self,
        _state: &dyn CatalogSession,
        projection: Option<&Vec<usize>>,
        _filters: &[Expr],
        _limit: Option<usize>,
    ) -> DfResult<Arc<dyn ExecutionPlan>> {
        let ext = |e: BrookError| DataFusionError::External(Box::new(e));
        // A view reads its writer's writes. A synopsis answers from its latest maintained
        // state at once: a flood of input must not delay estimates; but not a global one
        // in cluster mode, whose reads wait for the partitions' owners anyway, and whose
        // state here is not its answer (until its maintenance started over the node's
        // partitions, its local rows could pass for the merged answer: a node restarted
        // read its empty state).
        let merged_from_owners = self.gather.is_some()
            && self
                .options
                .contains_key(brook_planner::view_merge::MERGE_OPTION);
        if self.kind != crate::catalog::RelKind::Synopsis || merged_from_owners {
            self.state.wait_fresh().await.map_err(ext)?;
        } else {
            // Not waiting once built, but not answering from a state that stopped either,
            // nor from one still being rebuilt (the first read after a restart found an
            // empty synopsis).
            self.state.wait_built().await.map_err(ext)?;
        }
        let batches = match (self.state.distribution(), &self.gather) {
            (Some(d), Some(gather)) => {
                let gathered = gather
                    .gather(&self.identity, d.partitioning.partitions, d.id)
                    .await
                    .map_err(ext)?
                    .into_iter()
                    .map(|b| RecordBatch::try_new(self.state.schema.clone(), b.columns().to_vec()))
                    .collect::<std::result::Result<Vec<_>, _>>()?;
                // The bytes the rows hold (not their buffers' spare capacity).
                let bytes: usize = gathered
                    .iter()
                    .flat_map(|b| b.columns())
                    .map(|c| c.to_data().get_slice_memory_size().unwrap_or(0))
                    .sum();
                self.state
                    .gathered_bytes
                    .store(bytes as u64, std::sync::atomic::Ordering::Relaxed);
                match self.options.get(brook_planner::view_merge::MERGE_OPTION) {
                    Some(merge) if d.merged => crate::stream::partitioned_view::merged_rows(
                        merge,
                        &self.state.schema,
                        gathered,
                    )
                    .await
                    .map_err(ext)?,
                    _ => gathered,
                }
            }
            (Some(_), None) => {
                return Err(ext(brook_err!(
                    Internal,
                    "a view maintained per partition without a way to read the other nodes"
                )))
            }
            (None, _) => self.state.batches().map_err(ext)?,
        };
        let exec = MemorySourceConfig::try_new_exec(
            &[batches],
            self.state.schema.clone(),
            projection.cloned(),
        )?;
        Ok(exec)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::arrow::array::{Int64Array, Int8Array};
    use datafusion::arrow::datatypes::{DataType, Field, Schema};

    fn schema() -> SchemaRef {
        Arc::new(Schema::new(vec![Field::new("v", DataType::Int64, true)]))
    }

    /// A changelog batch of `v` values with their change kinds.
    fn changes(values: &[i64], kinds: &[i8]) -> RecordBatch {
        let v: ArrayRef = Arc::new(Int64Array::from(values.to_vec()));
        let k: ArrayRef = Arc::new(Int8Array::from(kinds.to_vec()));
        change::attach(&schema(), vec![v], k).unwrap()
    }

    fn sorted(state: &ViewState) -> Vec<i64> {
        let batch = state.snapshot().unwrap();
        let mut v: Vec<i64> = batch
            .column(0)
            .as_any()
            .downcast_ref::<Int64Array>()
            .unwrap()
            .values()
            .to_vec();
        v.sort_unstable();
        v
    }

    #[test]
    fn updating_view_keeps_a_multiset() {
        let state = ViewState::new(schema()).unwrap();
        state.apply(&changes(&[1, 2, 2], &[1, 1, 1])).unwrap();
        state.apply(&changes(&[2, 1], &[-1, -1])).unwrap();
        assert_eq!(sorted(&state), vec![2]);
        assert_eq!(state.size().0, 1);
    }

    #[test]
    fn append_only_view_keeps_batches_and_merges_small_ones() {
        let state = ViewState::new(schema()).unwrap();
        state.rows.lock().unwrap().append_only = true;
        for i in 0..(APPEND_COALESCE as i64 + 3) {
            state.apply(&changes(&[i, i], &[1, 1])).unwrap();
        }
        let n = APPEND_COALESCE + 3;
        assert_eq!(state.size().0, 2 * n);
        // The first run of small batches became one batch; three are still apart.
        assert_eq!(state.rows.lock().unwrap().appended.len(), 4);
        assert_eq!(state.rows.lock().unwrap().small_tail, 4);
        let mut want: Vec<i64> = (0..n as i64).flat_map(|i| [i, i]).collect();
        want.sort_unstable();
        assert_eq!(sorted(&state), want);
    }

    /// A scan of an append-only view reads the batches it keeps, not a copy of them.
    #[test]
    fn append_only_view_scans_share_its_batches() {
        let state = ViewState::new(schema()).unwrap();
        state.rows.lock().unwrap().append_only = true;
        let values: Vec<i64> = (0..SMALL_BATCH as i64).collect();
        let input = changes(&values, &vec![1; values.len()]);
        state.apply(&input).unwrap();
        state.apply(&input).unwrap();
        let batches = state.batches().unwrap();
        assert_eq!(batches.len(), 2);
        let kept = batches[0].column(0).to_data();
        let given = input.column(0).to_data();
        assert_eq!(kept.buffers()[0].as_ptr(), given.buffers()[0].as_ptr());
        assert_eq!(state.snapshot().unwrap().num_rows(), 2 * SMALL_BATCH);
    }
}
