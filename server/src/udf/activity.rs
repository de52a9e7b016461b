//! `pg_stat_activity` and `pg_stat_progress_copy` (as the table functions
//! `brook_stat_activity()` and `brook_stat_progress_copy()`, which a reference to the view
//! becomes: see `brook_planner::pg_functions`), `pg_cancel_backend(pid)` and
//! `pg_terminate_backend(pid)`.

use crate::exec::activity::Activity;
use datafusion::arrow::array::{
    new_null_array, ArrayRef, BooleanArray, Int32Array, Int64Array, RecordBatch, StringArray,
    TimestampMicrosecondArray,
};
use datafusion::arrow::datatypes::{DataType, Field, Schema, TimeUnit};
use datafusion::catalog::{TableFunctionArgs, TableFunctionImpl, TableProvider};
use datafusion::logical_expr::{create_udf, Volatility};
use datafusion::prelude::SessionContext;
use std::sync::Arc;

/// Register `brook_stat_activity()`, `pg_cancel_backend(pid)` and `pg_terminate_backend(pid)`
/// on a database context.
pub fn register(ctx: &SessionContext, activity: Arc<Activity>) {
    ctx.register_udtf(
        brook_planner::pg_functions::STAT_ACTIVITY,
        Arc::new(StatActivity {
            activity: activity.clone(),
        }),
    );
    ctx.register_udtf(
        brook_planner::pg_functions::STAT_PROGRESS_COPY,
        Arc::new(StatProgressCopy {
            activity: activity.clone(),
        }),
    );
    let cancel = activity.clone();
    ctx.register_udf(by_pid("pg_cancel_backend", move |p| cancel.cancel(p)));
    ctx.register_udf(by_pid("pg_terminate_backend", move |p| {
        activity.terminate(p)
    }));
}

/// `name(pid) -> boolean`, doing `act` to connection `pid`.
fn by_pid(
    name: &str,
    act: impl Fn(i32) -> bool + Send + Sync + 'static,
) -> datafusion::logical_expr::ScalarUDF {
    create_udf(
        name,
        vec![DataType::Int32],
        DataType::Boolean,
        Volatility::Volatile,
        Arc::new(datafusion::functions::utils::make_scalar_function(
            move |args: &[ArrayRef]| {
                let pids = datafusion::arrow::array::AsArray::as_primitive::<
                    datafusion::arrow::datatypes::Int32Type,
                >(&args[0]);
                let out: BooleanArray = pids.iter().map(|p| p.map(&act)).collect();
                Ok(Arc::new(out) as ArrayRef)
            },
            vec![],
        )),
    )
}

/// One row per connection, with PostgreSQL's column names.
#[derive(Debug)]
struct StatActivity {
    activity: Arc<Activity>,
}

impl TableFunctionImpl for StatActivity {
    fn call_with_args(
        &self,
        _args: TableFunctionArgs<'_, '_>,
    ) -> datafusion::error::Result<Arc<dyn TableProvider>> {
        let ts = DataType::Timestamp(TimeUnit::Microsecond, Some("+00:00".into()));
        // PostgreSQL's columns in its order. Brook has no transaction ids, wait events,
        // query ids, parallel workers or reverse lookups: those columns are NULL, as
        // PostgreSQL's are when they do not apply. `datid`/`usesysid` are NULL as
        // `pg_stat_progress_copy`'s `datid` is (oids are assigned as catalogs are read).
        let schema = Arc::new(Schema::new(vec![
            Field::new("datid", DataType::UInt32, true),
            Field::new("datname", DataType::Utf8, true),
            Field::new("pid", DataType::Int32, false),
            Field::new("leader_pid", DataType::Int32, true),
            Field::new("usesysid", DataType::UInt32, true),
            Field::new("usename", DataType::Utf8, true),
            Field::new("application_name", DataType::Utf8, true),
            Field::new("client_addr", DataType::Utf8, true),
            Field::new("client_hostname", DataType::Utf8, true),
            Field::new("client_port", DataType::Int32, true),
            Field::new("backend_start", ts.clone(), true),
            Field::new("xact_start", ts.clone(), true),
            Field::new("query_start", ts.clone(), true),
            Field::new("state_change", ts.clone(), true),
            Field::new("wait_event_type", DataType::Utf8, true),
            Field::new("wait_event", DataType::Utf8, true),
            Field::new("state", DataType::Utf8, true),
            Field::new("backend_xid", DataType::Utf8, true),
            Field::new("backend_xmin", DataType::Utf8, true),
            Field::new("query_id", DataType::Int64, true),
            Field::new("query", DataType::Utf8, true),
            Field::new("backend_type", DataType::Utf8, false),
        ]));
        let backends = self.activity.backends();
        let doing: Vec<_> = backends.iter().map(|b| b.doing()).collect();
        let text = |f: &dyn Fn(usize) -> String| -> ArrayRef {
            Arc::new(
                (0..backends.len())
                    .map(|i| Some(f(i)))
                    .collect::<StringArray>(),
            )
        };
        let times = |f: &dyn Fn(usize) -> Option<i64>| -> ArrayRef {
            Arc::new(
                (0..backends.len())
                    .map(f)
                    .collect::<TimestampMicrosecondArray>()
                    .with_timezone("+00:00"),
            )
        };
        let addresses: Vec<(Option<String>, Option<i32>)> = backends
            .iter()
            .map(|b| address_and_port(&b.client_addr))
            .collect();
        let columns: Vec<ArrayRef> = vec![
            new_null_array(&DataType::UInt32, backends.len()),
            text(&|i| backends[i].database.clone()),
            Arc::new(backends.iter().map(|b| b.pid).collect::<Int32Array>()),
            new_null_array(&DataType::Int32, backends.len()),
            new_null_array(&DataType::UInt32, backends.len()),
            text(&|i| backends[i].user.clone()),
            text(&|i| doing[i].application_name.clone()),
            Arc::new(
                addresses
                    .iter()
                    .map(|(a, _)| a.clone())
                    .collect::<StringArray>(),
            ),
            new_null_array(&DataType::Utf8, backends.len()),
            Arc::new(addresses.iter().map(|(_, p)| *p).collect::<Int32Array>()),
            times(&|i| Some(backends[i].backend_start)),
            times(&|i| doing[i].xact_start),
            times(&|i| doing[i].query_start),
            times(&|i| Some(doing[i].state_change)),
            new_null_array(&DataType::Utf8, backends.len()),
            new_null_array(&DataType::Utf8, backends.len()),
            text(&|i| doing[i].state.to_string()),
            new_null_array(&DataType::Utf8, backends.len()),
            new_null_array(&DataType::Utf8, backends.len()),
            new_null_array(&DataType::Int64, backends.len()),
            text(&|i| doing[i].query.clone()),
            text(&|_| "client backend".to_string()),
        ];
        let batch = RecordBatch::try_new(schema.clone(), columns)?;
        Ok(Arc::new(datafusion::datasource::MemTable::try_new(
            schema,
            vec![vec![batch]],
        )?))
    }
}

/// A client's `ip:port` (`[v6]:port`) as `pg_stat_activity` shows it: the address
/// (`client_addr`) and the port (`client_port`); a Unix socket has neither.
fn address_and_port(peer: &str) -> (Option<String>, Option<i32>) {
    match peer.parse::<std::net::SocketAddr>() {
        Ok(a) => (Some(a.ip().to_string()), Some(i32::from(a.port()))),
        Err(_) if peer.is_empty() => (None, None),
        Err(_) => (Some(peer.to_string()), None),
    }
}

/// One row per COPY FROM STDIN in progress, with PostgreSQL's columns (`command` is always
/// `COPY FROM` and `type` `PIPE`: COPY TO and server files have no progress rows), the
/// rows counted as they are read. `datid` and `relid` are NULL: Brook's relation oids are
/// assigned by `pg_class` as it is read; `relname` (Brook's own column) names the relation,
/// schema-qualified.
#[derive(Debug)]
struct StatProgressCopy {
    activity: Arc<Activity>,
}

impl TableFunctionImpl for StatProgressCopy {
    fn call_with_args(
        &self,
        _args: TableFunctionArgs<'_, '_>,
    ) -> datafusion::error::Result<Arc<dyn TableProvider>> {
        let schema = Arc::new(Schema::new(vec![
            Field::new("pid", DataType::Int32, false),
            Field::new("datid", DataType::Int32, true),
            Field::new("datname", DataType::Utf8, true),
            Field::new("relid", DataType::Int32, true),
            Field::new("command", DataType::Utf8, false),
            Field::new("type", DataType::Utf8, false),
            Field::new("bytes_processed", DataType::Int64, false),
            Field::new("bytes_total", DataType::Int64, false),
            Field::new("tuples_processed", DataType::Int64, false),
            Field::new("tuples_excluded", DataType::Int64, false),
            Field::new("tuples_skipped", DataType::Int64, false),
            Field::new("relname", DataType::Utf8, false),
        ]));
        let copies: Vec<_> = self
            .activity
            .backends()
            .into_iter()
            .filter_map(|b| b.doing().copy.map(|c| (b, c)))
            .collect();
        let n = copies.len();
        let int = |f: &dyn Fn(usize) -> i64| -> ArrayRef {
            Arc::new((0..n).map(f).collect::<Int64Array>())
        };
        let text = |f: &dyn Fn(usize) -> String| -> ArrayRef {
            Arc::new((0..n).map(|i| Some(f(i))).collect::<StringArray>())
        };
        let count = |v: u64| i64::try_from(v).unwrap_or(i64::MAX);
        let columns: Vec<ArrayRef> = vec![
            Arc::new(copies.iter().map(|(b, _)| b.pid).collect::<Int32Array>()),
            Arc::new(Int32Array::new_null(n)),
            text(&|i| copies[i].0.database.clone()),
            Arc::new(Int32Array::new_null(n)),
            text(&|_| "COPY FROM".to_string()),
            text(&|_| "PIPE".to_string()),
            int(&|i| count(copies[i].1.bytes)),
            int(&|_| 0),
            int(&|i| count(copies[i].1.tuples)),
            int(&|_| 0),
            int(&|_| 0),
            text(&|i| copies[i].1.relation.clone()),
        ];
        let batch = RecordBatch::try_new(schema.clone(), columns)?;
        Ok(Arc::new(datafusion::datasource::MemTable::try_new(
            schema,
            vec![vec![batch]],
        )?))
    }
}
