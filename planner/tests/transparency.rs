//! Relational transparency, as a property: the final state of a continuous query's changelog
//! equals the same SQL run ad hoc (by DataFusion) over a table holding the same rows —
//! whatever the batch boundaries of the input, with retractions, and with windows closed by
//! watermarks.

use brook_common::{brook_err, Result};
use brook_operators::change;
use brook_operators::graph::Graph;
use brook_planner::continuous::{plan_continuous, ContinuousOptions, SourceFacts, SourceResolver};
use datafusion::arrow::array::{ArrayRef, Int32Array, StringArray, TimestampMicrosecondArray};
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef, TimeUnit};
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::arrow::util::display::{ArrayFormatter, FormatOptions};
use datafusion::common::TableReference;
use datafusion::datasource::MemTable;
use datafusion::logical_expr::{col, LogicalPlan, TableSource};
use datafusion::prelude::SessionContext;
use datafusion::sql::parser::Statement as DFStatement;
use datafusion::sql::sqlparser::dialect::PostgreSqlDialect;
use datafusion::sql::sqlparser::parser::Parser;
use proptest::prelude::*;
use std::collections::BTreeMap;
use std::sync::Arc;

/// Queries over `t(k text, v int, ts timestamp)`; every one must run continuously.
const QUERIES: &[&str] = &[
    "SELECT k, v FROM t WHERE v > 3",
    "SELECT k, v * 2 + 1 AS w, upper(k) AS u FROM t WHERE v IS NOT NULL",
    "SELECT k, count(*), sum(v), avg(v) FROM t GROUP BY k",
    "SELECT count(*), sum(v), count(v) FROM t",
    "SELECT DISTINCT k FROM t",
    "SELECT k, count(DISTINCT v) FROM t GROUP BY k",
    "SELECT k, sum(v) FROM t GROUP BY k HAVING sum(v) > 10",
    "SELECT k, count(*) FILTER (WHERE v > 2) AS big FROM t GROUP BY k",
    "SELECT v % 3 AS m, count(*) FROM t GROUP BY v % 3",
    "SELECT k, v FROM t WHERE v > 5 UNION ALL SELECT k, v FROM t WHERE v < 2",
    "SELECT c, count(*) FROM (SELECT k, count(*) AS c FROM t GROUP BY k) AS g GROUP BY c",
    "SELECT window_start, window_end, k, sum(v), count(*) FROM TUMBLE(t, ts, INTERVAL '10 seconds') GROUP BY window_start, window_end, k",
    "SELECT window_start, window_end, count(*) FROM HOP(t, ts, INTERVAL '5 seconds', INTERVAL '15 seconds') GROUP BY window_start, window_end",
    "SELECT t.k, d.label, t.v FROM t JOIN d ON t.k = d.k WHERE t.v > 2",
    "SELECT d.label, count(*), sum(t.v) FROM t JOIN d ON t.k = d.k GROUP BY d.label",
    "SELECT t.k, d.label FROM t, d WHERE t.k = d.k AND t.v < d.w",
    "SELECT k, v FROM t WHERE k IN (SELECT k FROM d WHERE w > 4)",
    "SELECT t.k, t.v, d.label FROM t LEFT JOIN d ON t.k = d.k",
    "SELECT d.label, t.v FROM d LEFT JOIN t ON d.k = t.k AND t.v > d.w",
    "SELECT d.label, count(t.v) FROM t RIGHT JOIN d ON t.k = d.k GROUP BY d.label",
    "SELECT d.label FROM d WHERE EXISTS (SELECT 1 FROM t WHERE t.k = d.k AND t.v > d.w)",
    "SELECT d.label FROM d WHERE NOT EXISTS (SELECT 1 FROM t WHERE t.k = d.k AND t.v > d.w)",
    "SELECT k, v FROM t WHERE NOT EXISTS (SELECT 1 FROM d WHERE d.k = t.k AND d.w < t.v)",
    "SELECT t.k, t.v, d.label FROM t FULL JOIN d ON t.k = d.k AND t.v > 3",
    "SELECT d.label, count(t.v) FROM t FULL JOIN d ON t.k = d.k GROUP BY d.label",
    "SELECT k, v FROM t WHERE v NOT IN (SELECT w FROM d)",
    "SELECT label, w FROM d WHERE w NOT IN (SELECT v FROM t)",
    "SELECT label FROM d WHERE w NOT IN (SELECT v + 1 FROM t WHERE k = 'k1')",
    "SELECT k, v FROM t WHERE v NOT IN (SELECT w FROM d WHERE w > 100)",
    "SELECT k, ts, v, sum(v) OVER (PARTITION BY k ORDER BY ts, v ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) FROM t",
    "SELECT k, v, lag(v) OVER (PARTITION BY k ORDER BY ts, v) AS prev, lead(v) OVER (PARTITION BY k ORDER BY ts, v) AS next FROM t",
    "SELECT k, v, count(*) OVER (PARTITION BY k) AS n FROM t",
    "SELECT ts, v, avg(v) OVER (ORDER BY ts, v, k ROWS BETWEEN 2 PRECEDING AND CURRENT ROW) FROM t",
    "SELECT k, v FROM t ORDER BY v DESC, k, ts LIMIT 3",
    "SELECT k, v, ts FROM t ORDER BY v, k, ts LIMIT 2 OFFSET 1",
    "SELECT k, v, rn FROM (SELECT k, v, row_number() OVER (PARTITION BY k ORDER BY v DESC, ts) AS rn FROM t) x WHERE rn <= 2",
    "SELECT k, count(*) FROM (SELECT k, v, row_number() OVER (PARTITION BY k ORDER BY v, ts) AS rn FROM t) x WHERE rn < 3 GROUP BY k",
    // Recursion over the rows of t (chains of values two apart per key), and from d's rows
    // down through t's (both inputs change; multiplicities count derivations).
    "WITH RECURSIVE r(k, v, depth) AS (SELECT k, v, 0 FROM t WHERE v < 3 UNION ALL SELECT r.k, t.v, r.depth + 1 FROM r JOIN t ON t.k = r.k AND t.v = r.v + 2) SELECT k, v, depth FROM r",
    "WITH RECURSIVE r(label, n) AS (SELECT label, w FROM d UNION ALL SELECT r.label, t.v FROM r JOIN t ON t.v = r.n - 1 AND t.k = 'k1') SELECT label, n, count(*) FROM r GROUP BY label, n",
    // Uncorrelated scalar subqueries: a one-row input joined to every row; when it
    // changes, the rows it decided change.
    "SELECT k, v FROM t WHERE v > (SELECT avg(v) FROM t)",
    "SELECT k, v, (SELECT max(w) FROM d) - v AS gap FROM t WHERE v < (SELECT count(*) FROM t WHERE v > 5)",
    "WITH RECURSIVE r(k, n) AS (SELECT k, v FROM t WHERE v > 6 UNION ALL SELECT r.k, d.w FROM r LEFT JOIN d ON d.k = r.k AND d.w < r.n WHERE r.n > 4) SELECT k, n FROM r",
];

/// Joins of `t` with itself without a time bound: over a stream they keep both sides whole,
/// as over a table.
const SELF_JOINS: &[&str] = &[
    "SELECT a.k, count(*) FROM t a JOIN t b ON a.k = b.k AND a.v < b.v GROUP BY a.k",
    "SELECT a.k, a.v, b.v FROM t a LEFT JOIN t b ON a.k = b.k AND a.v < b.v",
    "SELECT a.k, a.v FROM t a WHERE NOT EXISTS (SELECT 1 FROM t b WHERE b.k = a.k AND b.v > a.v)",
    "SELECT a.k, b.k FROM t a FULL JOIN t b ON a.k = b.k AND a.v = b.v + 5",
];

/// `NOT IN` of `t` against itself: admitted only when `t` is a table.
const TABLE_ONLY_QUERIES: &[&str] =
    &["SELECT k, v FROM t WHERE v NOT IN (SELECT v FROM t WHERE k = 'k1')"];

/// Queries whose aggregates have no inverse (min/max, bool_and, median): over a retracting
/// input each group keeps its values.
const NON_INVERTIBLE_QUERIES: &[&str] = &[
    "SELECT k, min(v), max(v) FROM t GROUP BY k",
    "SELECT k, bool_and(v > 3), bool_or(v > 8), median(v) FROM t GROUP BY k",
    "SELECT max(v), min(ts) FROM t",
    "SELECT window_start, window_end, max(v) FROM TUMBLE(t, ts, INTERVAL '10 seconds') GROUP BY window_start, window_end",
];

/// Queries that need `t` to be a stream with a watermark on `ts`: sessions close and
/// interval joins drop rows as the watermark passes them (outer and anti ones emit their
/// unmatched rows then).
const STREAM_QUERIES: &[&str] = &[
    "SELECT k, window_start, window_end, count(*), sum(v) FROM SESSION(t, ts, INTERVAL '2 seconds', k) GROUP BY k, window_start, window_end",
    "SELECT k, v, ts, window_start, window_end FROM SESSION(t, ts, INTERVAL '3 seconds')",
    "SELECT a.k, a.v, b.v FROM t a JOIN t b ON a.k = b.k AND b.ts BETWEEN a.ts AND a.ts + INTERVAL '3 seconds'",
    "SELECT a.k, count(*) FROM t a JOIN t b ON a.k = b.k AND a.ts - INTERVAL '1 second' <= b.ts AND b.ts < a.ts + INTERVAL '2 seconds' GROUP BY a.k",
    "SELECT a.k, a.v, b.v FROM t a LEFT JOIN t b ON a.k = b.k AND b.ts BETWEEN a.ts + INTERVAL '1 second' AND a.ts + INTERVAL '3 seconds'",
    "SELECT a.k, a.ts, b.ts FROM t a FULL JOIN t b ON a.k = b.k AND a.v < b.v AND b.ts BETWEEN a.ts AND a.ts + INTERVAL '2 seconds'",
    "SELECT a.k, count(b.v), count(*) FROM t a RIGHT JOIN t b ON a.k = b.k AND a.ts BETWEEN b.ts - INTERVAL '2 seconds' AND b.ts - INTERVAL '1 second' GROUP BY a.k",
    "SELECT a.k, a.v FROM t a WHERE NOT EXISTS (SELECT 1 FROM t b WHERE b.k = a.k AND b.ts BETWEEN a.ts + INTERVAL '1 second' AND a.ts + INTERVAL '4 seconds')",
];

/// Windows over a time that is not the watermark's column: they stay open over a stream
/// (rows behind the watermark may still fall into them), so they cannot be emitted on close.
const OPEN_WINDOW_QUERIES: &[&str] = &[
    "SELECT window_start, window_end, count(*), sum(v) FROM TUMBLE((SELECT v, ts - INTERVAL '7 seconds' AS ts FROM t), ts, INTERVAL '5 seconds') GROUP BY window_start, window_end",
    "SELECT window_start, count(*) FROM HOP((SELECT k, ts + INTERVAL '3 seconds' AS ts FROM t), ts, INTERVAL '2 seconds', INTERVAL '4 seconds') GROUP BY window_start, k",
];

/// The dimension table `d(k, label, w)`, always a table, loaded before `t`'s rows.
fn dims() -> RecordBatch {
    let k: StringArray = ["k0", "k1", "k2"].into_iter().map(Some).collect();
    let label: StringArray = ["zero", "one", "two"].into_iter().map(Some).collect();
    let w = Int32Array::from(vec![5, 8, 3]);
    let cols: Vec<ArrayRef> = vec![Arc::new(k), Arc::new(label), Arc::new(w)];
    let schema = Arc::new(Schema::new(vec![
        Field::new("k", DataType::Utf8, true),
        Field::new("label", DataType::Utf8, true),
        Field::new("w", DataType::Int32, true),
    ]));
    RecordBatch::try_new(schema, cols).expect("dims batch")
}

fn schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("k", DataType::Utf8, true),
        Field::new("v", DataType::Int32, true),
        Field::new("ts", DataType::Timestamp(TimeUnit::Microsecond, None), true),
    ]))
}

/// One event: key, value, event time in seconds.
type Row = (u8, Option<i32>, i64);

fn batch(rows: &[Row]) -> RecordBatch {
    let k: StringArray = rows.iter().map(|r| Some(format!("k{}", r.0))).collect();
    let v: Int32Array = rows.iter().map(|r| r.1).collect();
    let ts: TimestampMicrosecondArray = rows.iter().map(|r| Some(r.2 * 1_000_000)).collect();
    let cols: Vec<ArrayRef> = vec![Arc::new(k), Arc::new(v), Arc::new(ts)];
    RecordBatch::try_new(schema(), cols).expect("test batch")
}

struct Facts {
    updating: bool,
    watermark: bool,
}

impl SourceResolver for Facts {
    fn resolve(&self, t: &TableReference, _s: &Arc<dyn TableSource>) -> Result<SourceFacts> {
        if t.table() == "d" {
            return Ok(SourceFacts {
                table_schema: dims().schema(),
                updating: true,
                watermark: None,
                watermark_sql: None,
                idle_timeout: None,
            });
        }
        Ok(SourceFacts {
            table_schema: schema(),
            updating: self.updating,
            watermark: self.watermark.then(|| col("ts")),
            watermark_sql: None,
            idle_timeout: None,
        })
    }
}

fn context(rows: &[Row]) -> SessionContext {
    let ctx = SessionContext::new();
    for f in brook_planner::session_window::session_functions() {
        ctx.register_udwf(f);
    }
    ctx.register_udf(brook_planner::window_start::window_start_function());
    let table = MemTable::try_new(schema(), vec![vec![batch(rows)]]).expect("mem table");
    ctx.register_table("t", Arc::new(table)).expect("register");
    let d = MemTable::try_new(dims().schema(), vec![vec![dims()]]).expect("mem table");
    ctx.register_table("d", Arc::new(d)).expect("register");
    ctx
}

async fn logical(ctx: &SessionContext, sql: &str) -> Result<LogicalPlan> {
    let mut stmts = Parser::parse_sql(&PostgreSqlDialect {}, sql)?;
    let mut stmt = stmts.remove(0);
    brook_planner::windows::rewrite_windows(&mut stmt)?;
    let state = brook_planner::continuous::optimizing_state(ctx.state());
    let plan = state
        .statement_to_plan(DFStatement::Statement(Box::new(stmt)))
        .await?;
    Ok(state.optimize(&plan)?)
}

fn row_strings(b: &RecordBatch) -> Vec<String> {
    let opts = FormatOptions::default().with_null("NULL");
    let fmts: Vec<_> = b
        .columns()
        .iter()
        .map(|c| ArrayFormatter::try_new(c.as_ref(), &opts).expect("formatter"))
        .collect();
    (0..b.num_rows())
        .map(|r| {
            fmts.iter()
                .map(|f| f.value(r).to_string())
                .collect::<Vec<_>>()
                .join("|")
        })
        .collect()
}

/// The ad-hoc answer as a multiset.
async fn adhoc(sql: &str, rows: &[Row]) -> Result<BTreeMap<String, i64>> {
    let ctx = context(rows);
    let plan = logical(&ctx, sql).await?;
    let batches = ctx.execute_logical_plan(plan).await?.collect().await?;
    let mut out = BTreeMap::new();
    for b in &batches {
        for r in row_strings(b) {
            *out.entry(r).or_insert(0) += 1;
        }
    }
    Ok(out)
}

thread_local! {
    /// Whether the plan under test says its result retracts (see [`fold`]).
    static UPDATING: std::cell::Cell<bool> = const { std::cell::Cell::new(true) };
}

/// Apply a changelog to a multiset.
fn fold(state: &mut BTreeMap<String, i64>, batches: &[RecordBatch]) -> Result<()> {
    for b in batches {
        let kinds = change::kinds(b)?.clone();
        // A result the plan calls append-only reaches its reader without the change kind:
        // a retraction in it would read as one more row.
        if !UPDATING.with(|u| u.get()) && kinds.values().iter().any(|k| *k < 0) {
            return Err(brook_err!(
                Internal,
                "an append-only result retracted a row"
            ));
        }
        for (i, r) in row_strings(&change::strip(b)?).into_iter().enumerate() {
            *state.entry(r).or_insert(0) += i64::from(kinds.value(i));
        }
    }
    state.retain(|_, n| *n != 0);
    Ok(())
}

/// Run `sql` continuously: insert `rows` cut at `cuts`, then retract `deleted` in batches.
async fn continuous(
    sql: &str,
    rows: &[Row],
    cuts: &[usize],
    deleted: &[bool],
    emit_on_close: bool,
) -> Result<BTreeMap<String, i64>> {
    // A table (it may retract) whenever the case deletes, or asks for one (`deleted` empty
    // but present as a table).
    let updating = !deleted.is_empty();
    let ctx = context(&[]);
    let plan = logical(&ctx, sql).await?;
    // A stream declares its watermark on ts (a table has none).
    let facts = Facts {
        updating,
        watermark: !updating,
    };
    let options = ContinuousOptions {
        emit_on_window_close: emit_on_close,
    };
    let graph_plan = plan_continuous(&plan, &ctx.state(), &facts, options)?;
    UPDATING.with(|u| u.set(graph_plan.updating()));
    let t_source = graph_plan.sources.iter().position(|s| s.relation == "t");
    let d_source = graph_plan.sources.iter().position(|s| s.relation == "d");
    let (mut graph, first) = Graph::new(Arc::new(graph_plan))?;
    let mut state = BTreeMap::new();
    fold(&mut state, &first)?;
    if let Some(d) = d_source {
        let out = graph.push(d, &dims(), change::INSERT)?;
        fold(&mut state, &out)?;
        fold(&mut state, &graph.barrier(0)?)?;
    }
    let feed = |graph: &mut Graph,
                state: &mut BTreeMap<String, i64>,
                part: &[Row],
                kind: i8|
     -> Result<()> {
        let Some(t) = t_source else {
            return Ok(());
        };
        if part.is_empty() {
            return Ok(());
        }
        let out = graph.push(t, &batch(part), kind)?;
        fold(state, &out)?;
        // Some parts end a commit (a barrier); others share one with the next part (the
        // part sizes are random, so which ones is too).
        if part.len().is_multiple_of(2) {
            fold(state, &graph.barrier(0)?)?;
        }
        Ok(())
    };
    let mut at = 0;
    let mut c = 0;
    while at < rows.len() {
        let n = cuts
            .get(c)
            .copied()
            .unwrap_or(3)
            .max(1)
            .min(rows.len() - at);
        feed(&mut graph, &mut state, &rows[at..at + n], change::INSERT)?;
        at += n;
        c += 1;
    }
    let gone: Vec<Row> = rows
        .iter()
        .zip(deleted.iter().chain(std::iter::repeat(&false)))
        .filter(|(_, d)| **d)
        .map(|(r, _)| *r)
        .collect();
    for part in gone.chunks(cuts.first().copied().unwrap_or(2).max(1)) {
        feed(&mut graph, &mut state, part, change::DELETE)?;
    }
    let last = graph.finish()?;
    fold(&mut state, &last)?;
    if let Some((row, n)) = state.iter().find(|(_, n)| **n < 0) {
        return Err(brook_err!(
            Internal,
            "row {row} retracted more than inserted ({n})"
        ));
    }
    Ok(state)
}

fn rows_strategy() -> impl Strategy<Value = Vec<Row>> {
    prop::collection::vec(
        (0u8..4, prop::option::weighted(0.9, 0i32..10), 0i64..4),
        0..48,
    )
    .prop_map(|mut v| {
        // Event time moves forward by 0..3 s per row (in order, so no row is late).
        let mut t = 1_767_225_600; // 2026-01-01 00:00:00
        for r in &mut v {
            t += r.2;
            r.2 = t;
        }
        v
    })
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("runtime")
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    #[test]
    fn appends_in_any_batches_end_as_the_table_answer(
        rows in rows_strategy(),
        cuts in prop::collection::vec(1usize..9, 1..20),
    ) {
        let rt = runtime();
        for sql in QUERIES.iter().chain(SELF_JOINS).chain(NON_INVERTIBLE_QUERIES).chain(STREAM_QUERIES).chain(OPEN_WINDOW_QUERIES) {
            let want = rt.block_on(adhoc(sql, &rows)).expect(sql);
            let got = rt.block_on(continuous(sql, &rows, &cuts, &[], false)).expect(sql);
            prop_assert_eq!(&got, &want, "{}", sql);
        }
    }

    #[test]
    fn retractions_end_as_the_table_answer(
        rows in rows_strategy(),
        cuts in prop::collection::vec(1usize..9, 1..20),
        deleted in prop::collection::vec(any::<bool>(), 48),
    ) {
        let rt = runtime();
        let mut deleted = deleted;
        deleted.truncate(rows.len().max(1));
        if !deleted.iter().any(|d| *d) {
            deleted[0] = true;
        }
        let kept: Vec<Row> = rows.iter().zip(&deleted).filter(|(_, d)| !**d).map(|(r, _)| *r).collect();
        for sql in QUERIES.iter().chain(SELF_JOINS).chain(TABLE_ONLY_QUERIES).chain(NON_INVERTIBLE_QUERIES) {
            let want = rt.block_on(adhoc(sql, &kept)).expect(sql);
            let got = rt.block_on(continuous(sql, &rows, &cuts, &deleted, false)).expect(sql);
            prop_assert_eq!(&got, &want, "{}", sql);
        }
    }

    #[test]
    fn windows_emitted_on_close_end_as_the_table_answer(
        rows in rows_strategy(),
        cuts in prop::collection::vec(1usize..9, 1..20),
    ) {
        let rt = runtime();
        for sql in QUERIES
            .iter()
            .chain(NON_INVERTIBLE_QUERIES)
            .chain(STREAM_QUERIES)
            .filter(|q| q.contains("window_end"))
        {
            let want = rt.block_on(adhoc(sql, &rows)).expect(sql);
            let got = rt.block_on(continuous(sql, &rows, &cuts, &[], true)).expect(sql);
            prop_assert_eq!(&got, &want, "{}", sql);
        }
    }
}

#[test]
fn not_in_between_two_streams_is_refused() {
    let rt = runtime();
    let err = rt
        .block_on(continuous(
            TABLE_ONLY_QUERIES[0],
            &[(0, Some(1), 0)],
            &[1],
            &[],
            false,
        ))
        .unwrap_err();
    assert_eq!(err.sqlstate(), "0A000");
}

#[test]
fn session_over_a_table_is_refused() {
    let rt = runtime();
    let err = rt
        .block_on(continuous(
            STREAM_QUERIES[0],
            &[(0, Some(1), 0)],
            &[1],
            &[true],
            false,
        ))
        .unwrap_err();
    assert_eq!(err.sqlstate(), "0A000", "{err}");
}
