//! Materialized views: a continuous query whose changelog is applied to an in-memory
//! multiset of rows, read by ad-hoc queries.
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
use async_trait::async_trait;
use brook_common::{BrookError, Result};
use brook_operators::change;
use datafusion::arrow::array::ArrayRef;
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
use std::sync::{Arc, Mutex, OnceLock};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

/// The maintained contents of one materialized view.
#[derive(Debug)]
pub struct ViewState {
    schema: SchemaRef,
    rows: Mutex<Rows>,
    /// Commit version of each input store that maintenance has fully applied.
    processed: watch::Sender<Vec<u64>>,
    /// The input stores, in the plan's source order (set when maintenance starts).
    stores: OnceLock<Vec<Arc<TableStore>>>,
    /// Set when maintenance failed; scans report it.
    failed: Mutex<Option<String>>,
    /// Stops the maintenance task when the view goes away.
    stop: CancellationToken,
}

/// Distinct rows (row-format bytes) with their multiplicity.
#[derive(Debug)]
struct Rows {
    converter: RowConverter,
    counts: HashMap<Box<[u8]>, i64>,
}

impl Drop for ViewState {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

impl ViewState {
    /// Empty state for rows of `schema`; maintenance begins with [`ViewState::start`].
    pub fn new(schema: SchemaRef) -> Result<Arc<ViewState>> {
        let fields = schema
            .fields()
            .iter()
            .map(|f| SortField::new(f.data_type().clone()))
            .collect();
        let (processed, _) = watch::channel(Vec::new());
        Ok(Arc::new(ViewState {
            rows: Mutex::new(Rows {
                converter: RowConverter::new(fields)?,
                counts: HashMap::new(),
            }),
            schema,
            processed,
            stores: OnceLock::new(),
            failed: Mutex::new(None),
            stop: CancellationToken::new(),
        }))
    }

    /// Start maintaining the view with `plan` over `stores` (once).
    pub fn start(
        self: &Arc<Self>,
        plan: Arc<brook_operators::graph::GraphPlan>,
        stores: Vec<Arc<TableStore>>,
        stats: Arc<crate::continuous::QueryStats>,
    ) {
        if self.stores.set(stores.clone()).is_err() {
            return;
        }
        crate::continuous::start_view(plan, stores, self, stats);
        self.processed.send_modify(|_| {});
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
            .map_err(|_| BrookError::internal("view state poisoned"))?;
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

    /// Maintenance applied everything up to these input versions.
    pub fn processed(&self, versions: Vec<u64>) {
        self.processed.send_replace(versions);
    }

    /// Maintenance stopped with an error.
    pub fn fail(&self, e: &BrookError) {
        tracing::error!(error = %e, "materialized view maintenance failed");
        if let Ok(mut f) = self.failed.lock() {
            *f = Some(e.to_string());
        }
        self.processed.send_modify(|_| {});
    }

    fn check_failed(&self) -> Result<()> {
        match self.failed.lock().ok().and_then(|f| f.clone()) {
            Some(msg) => Err(BrookError::ObjectState(format!(
                "materialized view maintenance failed: {msg}"
            ))),
            None => Ok(()),
        }
    }

    /// Wait until every input commit visible now has been applied.
    pub async fn wait_fresh(&self) -> Result<()> {
        let mut rx = self.processed.subscribe();
        let mut target: Option<Vec<u64>> = None;
        loop {
            self.check_failed()?;
            if target.is_none() {
                target = self
                    .stores
                    .get()
                    .map(|stores| stores.iter().map(|s| s.version()).collect());
            }
            if let Some(t) = &target {
                let p = rx.borrow_and_update().clone();
                if p.len() == t.len() && p.iter().zip(t).all(|(p, t)| p >= t) {
                    return Ok(());
                }
            } else {
                rx.borrow_and_update();
            }
            if rx.changed().await.is_err() {
                return Err(BrookError::internal("view maintenance ended"));
            }
        }
    }

    /// The current rows as one batch.
    pub fn snapshot(&self) -> Result<RecordBatch> {
        let rows = self
            .rows
            .lock()
            .map_err(|_| BrookError::internal("view state poisoned"))?;
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
        Ok(RecordBatch::try_new_with_options(
            self.schema.clone(),
            columns,
            &options,
        )?)
    }

    /// Rows and bytes held (for statistics).
    pub fn size(&self) -> (usize, usize) {
        match self.rows.lock() {
            Ok(r) => (
                r.counts.values().map(|n| (*n).max(0) as usize).sum(),
                r.counts.keys().map(|k| k.len() + 16).sum(),
            ),
            Err(_) => (0, 0),
        }
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
        // state at once: a flood of input must not delay estimates.
        if self.kind != crate::catalog::RelKind::Synopsis {
            self.state.wait_fresh().await.map_err(ext)?;
        }
        let batch = self.state.snapshot().map_err(ext)?;
        let exec = MemorySourceConfig::try_new_exec(
            &[vec![batch]],
            self.state.schema.clone(),
            projection.cloned(),
        )?;
        Ok(exec)
    }
}
