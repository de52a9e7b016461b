//! The window operator's tests: results per batch, and the shortcut against a whole
//! evaluation at any batch cuts.
use super::*;
use crate::over::shortcut::{Reach, Running, Shortcut};
use crate::testing::{from_pretty, to_rows, to_sorted_rows};
use datafusion::arrow::compute::SortOptions;
use datafusion::arrow::datatypes::{DataType, Field, Schema};
use datafusion::functions_aggregate::sum::sum_udaf;
use datafusion::logical_expr::WindowFrame;
use datafusion::physical_expr::aggregate::AggregateExprBuilder;
use datafusion::physical_expr::expressions::col;
use datafusion::physical_expr::window::PlainAggregateWindowExpr;
use datafusion::physical_expr::PhysicalSortExpr;

/// `sum(v) OVER (PARTITION BY k ORDER BY t)` with the default (running) frame.
fn running_sum(input: &RecordBatch) -> OverNode {
    let schema = change::strip(input).unwrap().schema();
    let sum = AggregateExprBuilder::new(sum_udaf(), vec![col("v", &schema).unwrap()])
        .schema(schema.clone())
        .alias("running")
        .build()
        .unwrap();
    let order = [PhysicalSortExpr {
        expr: col("t", &schema).unwrap(),
        options: SortOptions::default(),
    }];
    let expr = PlainAggregateWindowExpr::new(
        Arc::new(sum),
        &[col("k", &schema).unwrap()],
        &order,
        Arc::new(WindowFrame::new(Some(true))),
        None,
    );
    let mut fields: Vec<Field> = schema.fields().iter().map(|f| f.as_ref().clone()).collect();
    fields.push(Field::new("running", DataType::Int64, true));
    OverNode {
        exprs: vec![Arc::new(expr)],
        partition_by: vec![col("k", &schema).unwrap()],
        input_schema: schema,
        schema: Arc::new(Schema::new(fields)),
        shortcut: None,
        bound: None,
    }
}

#[test]
fn running_sum_re_emits_only_rows_that_changed() {
    let first = from_pretty(
        "k:text | t:int64 | v:int64 | _brook_op:int8
         a      | 1       | 10      | 1
         a      | 3       | 30      | 1
         b      | 1       | 5       | 1",
    );
    let mut op = running_sum(&first).instantiate().unwrap();
    assert_eq!(
        to_sorted_rows(&op.on_data(0, first).unwrap()),
        vec![
            "a | 1 | 10 | 10 | 1",
            "a | 3 | 30 | 40 | 1",
            "b | 1 | 5 | 5 | 1"
        ]
    );
    // A row in the middle of a's order changes the total after it; b is untouched.
    let middle = from_pretty(
        "k:text | t:int64 | v:int64 | _brook_op:int8
         a      | 2       | 20      | 1",
    );
    assert_eq!(
        to_sorted_rows(&op.on_data(0, middle).unwrap()),
        vec![
            "a | 2 | 20 | 30 | 1",
            "a | 3 | 30 | 40 | -1",
            "a | 3 | 30 | 60 | 1"
        ]
    );
    // Retracting the first row shifts every running total of a.
    let gone = from_pretty(
        "k:text | t:int64 | v:int64 | _brook_op:int8
         a      | 1       | 10      | -1",
    );
    assert_eq!(
        to_sorted_rows(&op.on_data(0, gone).unwrap()),
        vec![
            "a | 1 | 10 | 10 | -1",
            "a | 2 | 20 | 20 | 1",
            "a | 2 | 20 | 30 | -1",
            "a | 3 | 30 | 50 | 1",
            "a | 3 | 30 | 60 | -1",
        ]
    );
}

/// The window function `fun` over `args`, per k ordered by t, over `frame`.
fn window(
    schema: &SchemaRef,
    fun: datafusion::logical_expr::WindowFunctionDefinition,
    name: &str,
    args: &[Arc<dyn PhysicalExpr>],
    frame: WindowFrame,
) -> Arc<dyn WindowExpr> {
    let order = [PhysicalSortExpr {
        expr: col("t", schema).unwrap(),
        options: SortOptions::default(),
    }];
    datafusion::physical_plan::windows::create_window_expr(
        &fun,
        name.into(),
        args,
        &[col("k", schema).unwrap()],
        &order,
        Arc::new(frame),
        schema.clone(),
        false,
        false,
        None,
    )
    .unwrap()
}

/// `lag(v, 2)`, `sum(v) OVER (ROWS BETWEEN 1 PRECEDING AND CURRENT ROW)`, the running
/// `sum(v)` (RANGE from the start: peers included) and `row_number()`, per k ordered by t,
/// with the shortcut the planner gives them.
fn lag_and_pairs(schema: &SchemaRef) -> OverNode {
    use datafusion::functions_window::{lead_lag::lag_udwf, row_number::row_number_udwf};
    use datafusion::logical_expr::{WindowFrameBound, WindowFrameUnits, WindowFunctionDefinition};
    use datafusion::physical_expr::expressions::lit;
    let v = col("v", schema).unwrap();
    let running_frame = || WindowFrame::new(Some(false));
    let pairs_frame = WindowFrame::new_bounds(
        WindowFrameUnits::Rows,
        WindowFrameBound::Preceding(datafusion::scalar::ScalarValue::UInt64(Some(1))),
        WindowFrameBound::CurrentRow,
    );
    let sum = || WindowFunctionDefinition::AggregateUDF(sum_udaf());
    let lag = WindowFunctionDefinition::WindowUDF(lag_udwf());
    let lag = window(
        schema,
        lag,
        "lag2",
        &[v.clone(), lit(2i64)],
        running_frame(),
    );
    let pairs = window(
        schema,
        sum(),
        "pairs",
        std::slice::from_ref(&v),
        pairs_frame,
    );
    let running = window(schema, sum(), "running", &[v], running_frame());
    let number = WindowFunctionDefinition::WindowUDF(row_number_udwf());
    let number = window(schema, number, "rn", &[], running_frame());
    let k = [col("k", schema).unwrap()];
    let mut fields: Vec<Field> = schema.fields().iter().map(|f| f.as_ref().clone()).collect();
    fields.push(Field::new("lag2", DataType::Int64, true));
    fields.push(Field::new("pairs", DataType::Int64, true));
    fields.push(Field::new("running", DataType::Int64, true));
    fields.push(Field::new("rn", DataType::UInt64, false));
    OverNode {
        exprs: vec![lag, pairs, running, number],
        partition_by: k.to_vec(),
        input_schema: schema.clone(),
        schema: Arc::new(Schema::new(fields)),
        shortcut: Some(Shortcut {
            reach: vec![
                Reach::Rows(2),
                Reach::Rows(1),
                Reach::Running(Running::Sum),
                Reach::Running(Running::RowNumber),
            ],
            strictly_after: true,
        }),
        bound: None,
    }
}

/// The rows a changelog leaves (inserts less deletes), sorted.
fn net(batches: &[RecordBatch]) -> Vec<String> {
    let mut count: std::collections::BTreeMap<String, i64> = Default::default();
    for row in to_sorted_rows(batches) {
        let (values, op) = row.rsplit_once(" | ").unwrap();
        *count.entry(values.to_string()).or_default() += op.parse::<i64>().unwrap();
    }
    let mut out = Vec::new();
    for (row, n) in count {
        assert!(n >= 0, "{row} deleted more often than inserted");
        out.extend(std::iter::repeat_n(row, n as usize));
    }
    out
}

/// Rows `k | t | v | op`, one batch.
fn rows(rows: &[(&str, i64, i64, i8)]) -> RecordBatch {
    let mut text = String::from("k:text | t:int64 | v:int64 | _brook_op:int8\n");
    for (k, t, v, op) in rows {
        text.push_str(&format!("{k} | {t} | {v} | {op}\n"));
    }
    from_pretty(&text)
}

#[test]
fn rows_in_order_are_evaluated_with_only_the_rows_they_read() {
    let all: Vec<(&str, i64, i64, i8)> = (0..1000)
        .map(|i| (if i % 2 == 0 { "a" } else { "b" }, i, i * 10, 1))
        .collect();
    let schema = change::strip(&rows(&all[..1])).unwrap().schema();
    let node = lag_and_pairs(&schema);
    let mut op = OverOp::new(&node).unwrap();
    let mut out = Vec::new();
    for chunk in all.chunks(10) {
        out.extend(op.on_data(0, rows(chunk)).unwrap());
    }
    // Each batch puts 5 rows into each of 2 partitions, evaluated with the 2 rows before
    // them and, for the running values, alone.
    assert!(
        op.evaluated <= 100 * 2 * (5 + 2 + 5),
        "evaluated {} rows",
        op.evaluated
    );
    let mut whole = OverOp::new(&node).unwrap();
    let expected = whole.on_data(0, rows(&all)).unwrap();
    assert_eq!(net(&out), net(&expected));
    // Only inserts: no row was emitted twice.
    assert_eq!(to_sorted_rows(&out).len(), 1000);
}

#[test]
fn late_rows_and_deletes_give_the_answer_of_the_final_rows_at_any_batch_cuts() {
    // A fixed pseudo-random order of inserts (some out of order) and deletes of rows
    // inserted before, cut into batches of varying size.
    let mut seed = 7u64;
    let mut next = move |n: u64| {
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (seed >> 33) % n
    };
    let mut live: Vec<(&str, i64, i64)> = Vec::new();
    let mut changes: Vec<(&str, i64, i64, i8)> = Vec::new();
    for i in 0..400i64 {
        if !live.is_empty() && next(10) == 0 {
            let (k, t, v) = live.swap_remove(next(live.len() as u64) as usize);
            changes.push((k, t, v, -1));
            continue;
        }
        let k = if next(3) == 0 { "b" } else { "a" };
        // Mostly increasing times, sometimes one from the past; all distinct (among
        // equal times the order, and so lag's answer, is arbitrary).
        let t = if next(8) == 0 {
            (i - next(30) as i64) * 1000 + i
        } else {
            i * 1000
        };
        live.push((k, t, i));
        changes.push((k, t, i, 1));
    }
    let schema = change::strip(&rows(&changes[..1])).unwrap().schema();
    let node = lag_and_pairs(&schema);
    let finals: Vec<(&str, i64, i64, i8)> = live.iter().map(|(k, t, v)| (*k, *t, *v, 1)).collect();
    let expected = net(&OverOp::new(&node)
        .unwrap()
        .on_data(0, rows(&finals))
        .unwrap());
    for cut in [1usize, 3, 17, 400] {
        let mut op = OverOp::new(&node).unwrap();
        let mut out = Vec::new();
        let mut at = 0;
        let mut size = cut;
        while at < changes.len() {
            let end = (at + size).min(changes.len());
            out.extend(op.on_data(0, rows(&changes[at..end])).unwrap());
            at = end;
            size = 1 + (size * 7 + 3) % cut.max(1);
        }
        assert_eq!(net(&out), expected, "batches of up to {cut}");
    }
}

/// A row `k | t | v | op`.
type Row = (&'static str, i64, i64, i8);

/// Rows of partitions a and b with times from `time(i)`, in batches of 10, the watermark
/// `delay` behind the latest time after each batch, as a stream with `WATERMARK FOR t AS t -
/// delay` moves it: returns the output, the rows kept (none behind the watermark when they
/// arrived) and the most rows a partition held.
fn bounded_run(time: impl Fn(i64) -> i64, delay: i64) -> (Vec<RecordBatch>, Vec<Row>, usize) {
    let all: Vec<(&str, i64, i64, i8)> = (0..1000)
        .map(|i| (if i % 2 == 0 { "a" } else { "b" }, time(i), i, 1))
        .collect();
    let schema = change::strip(&rows(&all[..1])).unwrap().schema();
    let mut node = lag_and_pairs(&schema);
    node.bound = Some(Bound::EventTime { time: 1 });
    let mut op = OverOp::new(&node).unwrap();
    let (mut out, mut kept, mut most) = (Vec::new(), Vec::new(), 0);
    let mut watermark: Option<i64> = None;
    for chunk in all.chunks(10) {
        kept.extend(chunk.iter().filter(|r| watermark.is_none_or(|w| r.1 >= w)));
        out.extend(op.on_data(0, rows(chunk)).unwrap());
        let latest = all
            .iter()
            .take_while(|r| r != &&chunk[chunk.len() - 1])
            .map(|r| r.1);
        let latest = latest.chain(chunk.iter().map(|r| r.1)).max().unwrap();
        watermark = Some(latest - delay);
        op.on_watermark(latest - delay).unwrap();
        most = most.max(op.partitions.values().map(|p| p.rows()).max().unwrap_or(0));
    }
    assert_eq!(op.late_rows() as usize, all.len() - kept.len());
    (out, kept, most)
}

#[test]
fn rows_in_time_order_keep_only_the_rows_read_back() {
    let (out, kept, most) = bounded_run(|i| i * 1000, 0);
    assert_eq!(kept.len(), 1000);
    let schema = change::strip(&rows(&kept[..1])).unwrap().schema();
    let expected = OverOp::new(&lag_and_pairs(&schema))
        .unwrap()
        .on_data(0, rows(&kept))
        .unwrap();
    assert_eq!(net(&out), net(&expected));
    // Final rows are dropped once as many as the rest: a partition holds fewer than twice
    // the 2 rows lag(v, 2) reads back, the previous batch's last row and a batch's 5 rows —
    // whatever the stream's length.
    assert!(most < 2 * (2 + 1 + 5), "a partition held {most} rows");
}

#[test]
fn rows_from_the_past_within_the_delay_count_and_late_ones_are_dropped() {
    // Times jump back by up to 19 s every third row; the watermark trails by 10 s, so some
    // rows are late.
    let time = |i: i64| {
        i * 1000
            - if i % 3 == 0 {
                (i * 37) % 20 * 1000 + 1
            } else {
                0
            }
    };
    let (out, kept, most) = bounded_run(time, 10_000);
    assert!(kept.len() < 1000 && kept.len() > 900, "{} kept", kept.len());
    let schema = change::strip(&rows(&kept[..1])).unwrap().schema();
    let expected = OverOp::new(&lag_and_pairs(&schema))
        .unwrap()
        .on_data(0, rows(&kept))
        .unwrap();
    assert_eq!(net(&out), net(&expected));
    // Fewer than twice the 2 rows read back, the rows at or after the watermark (10 s of
    // rows, a row a second: at most 10 in a partition) and a batch's 5 rows — whatever the
    // stream's length.
    assert!(most < 2 * (2 + 10 + 5), "a partition held {most} rows");
}

#[test]
fn without_order_every_row_is_final_once_it_arrived() {
    use datafusion::functions_window::lead_lag::lag_udwf;
    use datafusion::logical_expr::WindowFunctionDefinition;
    let batch = rows(&[("a", 0, 0, 1)]);
    let schema = change::strip(&batch).unwrap().schema();
    let lag = datafusion::physical_plan::windows::create_window_expr(
        &WindowFunctionDefinition::WindowUDF(lag_udwf()),
        "prev".into(),
        &[col("v", &schema).unwrap()],
        &[],
        &[],
        Arc::new(WindowFrame::new(None)),
        schema.clone(),
        false,
        false,
        None,
    )
    .unwrap();
    let mut fields: Vec<Field> = schema.fields().iter().map(|f| f.as_ref().clone()).collect();
    fields.push(Field::new("prev", DataType::Int64, true));
    let node = OverNode {
        exprs: vec![lag],
        partition_by: Vec::new(),
        input_schema: schema.clone(),
        schema: Arc::new(Schema::new(fields)),
        shortcut: Some(Shortcut {
            reach: vec![Reach::Rows(1)],
            strictly_after: false,
        }),
        bound: Some(Bound::Arrival),
    };
    let mut op = OverOp::new(&node).unwrap();
    let mut out = Vec::new();
    for i in 0..100 {
        out.extend(op.on_data(0, rows(&[("a", 0, i, 1)])).unwrap());
    }
    // lag(v) reads the row before: only it stays.
    assert_eq!(op.partitions.values().map(|p| p.rows()).sum::<usize>(), 1);
    let prevs: Vec<String> = to_rows(&out).into_iter().rev().take(2).collect();
    assert_eq!(prevs, vec!["a | 0 | 99 | 98 | 1", "a | 0 | 98 | 97 | 1"]);
}

/// `lead(v, 2)`, `first_value(v)` and `last_value(v)` per k ordered by t (the default
/// frame), with the shortcut the planner gives them.
fn lead_and_firsts(schema: &SchemaRef) -> OverNode {
    use datafusion::functions_window::lead_lag::lead_udwf;
    use datafusion::functions_window::nth_value::{first_value_udwf, last_value_udwf};
    use datafusion::logical_expr::WindowFunctionDefinition;
    use datafusion::physical_expr::expressions::lit;
    let v = col("v", schema).unwrap();
    let frame = || WindowFrame::new(Some(false));
    let udwf = WindowFunctionDefinition::WindowUDF;
    let lead = window(
        schema,
        udwf(lead_udwf()),
        "lead2",
        &[v.clone(), lit(2i64)],
        frame(),
    );
    let first = window(
        schema,
        udwf(first_value_udwf()),
        "first",
        std::slice::from_ref(&v),
        frame(),
    );
    let last = window(schema, udwf(last_value_udwf()), "last", &[v], frame());
    let mut fields: Vec<Field> = schema.fields().iter().map(|f| f.as_ref().clone()).collect();
    for name in ["lead2", "first", "last"] {
        fields.push(Field::new(name, DataType::Int64, true));
    }
    OverNode {
        exprs: vec![lead, first, last],
        partition_by: vec![col("k", schema).unwrap()],
        input_schema: schema.clone(),
        schema: Arc::new(Schema::new(fields)),
        shortcut: Some(Shortcut {
            reach: vec![
                Reach::Ahead(2),
                Reach::Running(Running::First),
                Reach::Rows(0),
            ],
            strictly_after: true,
        }),
        bound: Some(Bound::EventTime { time: 1 }),
    }
}

#[test]
fn lead_changes_the_last_rows_as_rows_follow_and_keeps_few() {
    let all: Vec<Row> = (0..600)
        .map(|i| (if i % 3 == 0 { "b" } else { "a" }, i * 1000, i, 1))
        .collect();
    let schema = change::strip(&rows(&all[..1])).unwrap().schema();
    let node = lead_and_firsts(&schema);
    let expected = net(&OverOp::new(&node).unwrap().on_data(0, rows(&all)).unwrap());
    for cut in [1usize, 4, 25] {
        let mut op = OverOp::new(&node).unwrap();
        let mut out = Vec::new();
        let mut most = 0;
        for chunk in all.chunks(cut) {
            out.extend(op.on_data(0, rows(chunk)).unwrap());
            op.on_watermark(chunk[chunk.len() - 1].1).unwrap();
            most = most.max(op.partitions.values().map(|p| p.rows()).max().unwrap_or(0));
        }
        assert_eq!(net(&out), expected, "batches of {cut}");
        // The 2 rows whose lead still changes, the row before them, twice, and a batch.
        assert!(most < 2 * (2 + 1 + 1 + cut), "a partition held {most} rows");
    }
}

/// Rows `k | t | v | op` with a double precision v (None: NULL), one batch.
fn float_rows(rows: &[(&str, i64, Option<f64>)]) -> RecordBatch {
    let mut text = String::from("k:text | t:int64 | v:float64 | _brook_op:int8\n");
    for (k, t, v) in rows {
        let v = v.map_or("NULL".to_string(), |v| format!("{v:e}"));
        text.push_str(&format!("{k} | {t} | {v} | 1\n"));
    }
    from_pretty(&text)
}

#[test]
fn a_double_precision_running_sum_continues_as_a_whole_evaluation_adds() {
    use datafusion::logical_expr::{WindowFrameBound, WindowFrameUnits, WindowFunctionDefinition};
    // Values whose sum depends on the order of the additions, times with ties (peers).
    let values = [0.1, 1e16, -1e16, 0.3, 1.0 / 3.0, 2.5e-8, 7.0, -0.1];
    let all: Vec<(&str, i64, Option<f64>)> = (0..300)
        .map(|i: i64| {
            let v = (i % 11 != 0).then(|| values[(i * 7 % 8) as usize] * (1 + i % 5) as f64);
            (if i % 4 == 0 { "b" } else { "a" }, i / 3, v)
        })
        .collect();
    let schema = change::strip(&float_rows(&all[..1])).unwrap().schema();
    let v = col("v", &schema).unwrap();
    let sum = || WindowFunctionDefinition::AggregateUDF(sum_udaf());
    let range = window(
        &schema,
        sum(),
        "range",
        std::slice::from_ref(&v),
        WindowFrame::new(Some(false)),
    );
    let rows_frame = WindowFrame::new_bounds(
        WindowFrameUnits::Rows,
        WindowFrameBound::Preceding(datafusion::scalar::ScalarValue::UInt64(None)),
        WindowFrameBound::CurrentRow,
    );
    let by_row = window(&schema, sum(), "by_row", &[v], rows_frame);
    let mut fields: Vec<Field> = schema.fields().iter().map(|f| f.as_ref().clone()).collect();
    fields.push(Field::new("range", DataType::Float64, true));
    fields.push(Field::new("by_row", DataType::Float64, true));
    let node = OverNode {
        exprs: vec![range, by_row],
        partition_by: vec![col("k", &schema).unwrap()],
        input_schema: schema.clone(),
        schema: Arc::new(Schema::new(fields)),
        shortcut: Some(Shortcut {
            reach: vec![Reach::Running(Running::Sum), Reach::Running(Running::Sum)],
            strictly_after: true,
        }),
        bound: Some(Bound::EventTime { time: 1 }),
    };
    let whole = OverNode {
        shortcut: None,
        bound: None,
        exprs: node.exprs.clone(),
        partition_by: node.partition_by.clone(),
        input_schema: node.input_schema.clone(),
        schema: node.schema.clone(),
    };
    let expected = net(&OverOp::new(&whole)
        .unwrap()
        .on_data(0, float_rows(&all))
        .unwrap());
    for cut in [1usize, 2, 7, 50] {
        let mut op = OverOp::new(&node).unwrap();
        assert!(op.shortcut.is_some(), "double sums take the shortcut");
        let mut out = Vec::new();
        for chunk in all.chunks(cut) {
            out.extend(op.on_data(0, float_rows(chunk)).unwrap());
            op.on_watermark(chunk[chunk.len() - 1].1).unwrap();
        }
        // The same digits, not only close ones.
        assert_eq!(net(&out), expected, "batches of {cut}");
        assert!(op.partitions.values().all(|p| p.rows() < 2 * (1 + 3 + cut)));
    }
}
