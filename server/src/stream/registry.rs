//! The registry of running continuous queries: each query's identity, statistics and
//! progress, and the `brook_continuous_queries()` table function that lists them.

use crate::stream::progress::Progress;
use brook_common::{BrookError, Result};
use brook_operators::graph::GraphStats;
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::execution::memory_pool::{MemoryConsumer, MemoryPool, MemoryReservation};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};

/// A running continuous query's identity and statistics (a row of
/// `brook_continuous_queries()`).
#[derive(Debug)]
pub struct QueryStats {
    /// Unique among the server's queries.
    pub id: u64,
    /// Database the query runs in.
    pub database: String,
    /// `cursor`, `push` (SELECT/COPY ... EMIT) or `materialized view`.
    pub kind: &'static str,
    /// Cursor or view name (empty for push queries); a view's follows ALTER ... RENAME.
    name: Mutex<String>,
    /// Start time, microseconds since the epoch.
    pub started: i64,
    /// Input rows processed.
    pub rows_in: AtomicU64,
    /// Result rows produced (changes included).
    pub rows_out: AtomicU64,
    /// Latest statistics of the graph (state size, late rows, watermark).
    pub graph: Mutex<GraphStats>,
    /// The operator state's share of the server's memory pool (see
    /// [`QueryStats::hold_state`]).
    memory: Mutex<Option<MemoryReservation>>,
    /// The input versions the results handed out so far cover (a cursor's FETCH waits
    /// on it).
    pub progress: Progress,
}

impl QueryStats {
    /// The cursor's or view's name (empty for push queries).
    pub fn name(&self) -> String {
        self.name.lock().map(|n| n.clone()).unwrap_or_default()
    }

    /// The view was renamed.
    pub fn rename(&self, new: &str) {
        if let Ok(mut n) = self.name.lock() {
            *n = new.to_string();
        }
    }

    /// Hold `bytes` of operator state in the memory pool every query shares; 53200 when the
    /// pool cannot grant it (the server's `--memory-limit`), which stops the query instead
    /// of letting a join of unbounded streams take the machine's memory.
    pub fn hold_state(&self, bytes: usize) -> Result<()> {
        let Ok(mut memory) = self.memory.lock() else {
            return Ok(());
        };
        let Some(reservation) = memory.as_mut() else {
            return Ok(());
        };
        if reservation.size() == bytes {
            return Ok(());
        }
        reservation
            .try_resize(bytes)
            .map_err(|_| BrookError::Limit {
                message: format!(
                    "out of memory: continuous query {} ({}{}{}) needs {bytes} bytes of \
                     state, more than the server's memory limit leaves (--memory-limit); its \
                     state is what its joins, aggregates and windows keep: bound a join of \
                     streams in time, or aggregate a side first",
                    self.id,
                    self.kind,
                    if self.name().is_empty() { "" } else { " " },
                    self.name()
                ),
                code: "53200",
            })
    }
}

impl Drop for QueryStats {
    /// The query's task and its readers are gone: its last statistics go to the log.
    fn drop(&mut self) {
        tracing::info!(
            id = self.id,
            database = %self.database,
            kind = self.kind,
            name = %self.name(),
            rows_in = self.rows_in.load(Ordering::Relaxed),
            rows_out = self.rows_out.load(Ordering::Relaxed),
            "continuous query stopped"
        );
    }
}

/// Every running continuous query of the server, for the statistics view.
#[derive(Debug, Default)]
pub struct QueryRegistry {
    next: AtomicU64,
    list: Mutex<Vec<Weak<QueryStats>>>,
    /// The memory pool queries' state is reserved in (none: unaccounted, in tests).
    pool: Option<Arc<dyn MemoryPool>>,
}

impl QueryRegistry {
    /// A registry whose queries reserve their state in `pool`.
    pub fn new(pool: Arc<dyn MemoryPool>) -> Self {
        QueryRegistry {
            pool: Some(pool),
            ..Default::default()
        }
    }

    /// Statistics for a new query; it is listed while the returned `Arc` lives.
    pub fn register(&self, database: &str, kind: &'static str, name: &str) -> Arc<QueryStats> {
        let started = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_micros() as i64)
            .unwrap_or(0);
        let id = self.next.fetch_add(1, Ordering::Relaxed) + 1;
        let memory = self.pool.as_ref().map(|pool| {
            MemoryConsumer::new(format!("continuous query {id} ({kind} {name})")).register(pool)
        });
        let stats = Arc::new(QueryStats {
            id,
            database: database.to_string(),
            kind,
            name: Mutex::new(name.to_string()),
            started,
            rows_in: AtomicU64::new(0),
            rows_out: AtomicU64::new(0),
            graph: Mutex::new(GraphStats::default()),
            memory: Mutex::new(memory),
            progress: Progress::default(),
        });
        if let Ok(mut l) = self.list.lock() {
            l.retain(|w| w.strong_count() > 0);
            l.push(Arc::downgrade(&stats));
        }
        tracing::info!(
            id = stats.id,
            database,
            kind,
            name,
            "continuous query started"
        );
        stats
    }

    /// The queries running now.
    pub fn live(&self) -> Vec<Arc<QueryStats>> {
        match self.list.lock() {
            Ok(l) => l.iter().filter_map(Weak::upgrade).collect(),
            Err(_) => Vec::new(),
        }
    }
}

/// `brook_continuous_queries()`: one row per continuous query running in the database.
#[derive(Debug)]
pub struct QueriesFunction {
    /// The server's registry.
    pub registry: Arc<QueryRegistry>,
    /// The database whose queries are listed.
    pub database: String,
}

impl datafusion::catalog::TableFunctionImpl for QueriesFunction {
    fn call_with_args(
        &self,
        _args: datafusion::catalog::TableFunctionArgs<'_, '_>,
    ) -> datafusion::error::Result<Arc<dyn datafusion::catalog::TableProvider>> {
        use datafusion::arrow::array::{Int64Array, StringArray, TimestampMicrosecondArray};
        use datafusion::arrow::datatypes::{DataType, Field, Schema, TimeUnit};
        let ts = DataType::Timestamp(TimeUnit::Microsecond, None);
        let schema = Arc::new(Schema::new(vec![
            Field::new("id", DataType::Int64, false),
            Field::new("kind", DataType::Utf8, false),
            Field::new("name", DataType::Utf8, false),
            Field::new("started", ts.clone(), false),
            Field::new("rows_in", DataType::Int64, false),
            Field::new("rows_out", DataType::Int64, false),
            Field::new("state_bytes", DataType::Int64, false),
            Field::new("late_rows", DataType::Int64, false),
            Field::new("watermark", ts, true),
        ]));
        let mut live = self.registry.live();
        live.retain(|q| q.database == self.database);
        live.sort_by_key(|q| q.id);
        let graphs: Vec<GraphStats> = live
            .iter()
            .map(|q| q.graph.lock().map(|g| g.clone()).unwrap_or_default())
            .collect();
        let i64s = |f: &dyn Fn(usize) -> i64| -> Arc<Int64Array> {
            Arc::new((0..live.len()).map(f).collect::<Vec<_>>().into())
        };
        let columns: Vec<datafusion::arrow::array::ArrayRef> = vec![
            i64s(&|i| live[i].id as i64),
            Arc::new(live.iter().map(|q| Some(q.kind)).collect::<StringArray>()),
            Arc::new(live.iter().map(|q| Some(q.name())).collect::<StringArray>()),
            Arc::new(
                live.iter()
                    .map(|q| Some(q.started))
                    .collect::<TimestampMicrosecondArray>(),
            ),
            i64s(&|i| live[i].rows_in.load(Ordering::Relaxed) as i64),
            i64s(&|i| live[i].rows_out.load(Ordering::Relaxed) as i64),
            i64s(&|i| graphs[i].state_bytes as i64),
            i64s(&|i| graphs[i].late_rows as i64),
            Arc::new(
                graphs
                    .iter()
                    .map(|g| g.watermark.filter(|w| *w != i64::MAX))
                    .collect::<TimestampMicrosecondArray>(),
            ),
        ];
        let batch = RecordBatch::try_new(schema.clone(), columns)?;
        Ok(Arc::new(datafusion::datasource::MemTable::try_new(
            schema,
            vec![vec![batch]],
        )?))
    }
}
