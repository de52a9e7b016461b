//! Tests of the aggregate operator.

use super::*;
use crate::testing::{from_pretty, to_sorted_rows};
use datafusion::arrow::datatypes::{DataType, Field, Schema, TimeUnit};
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::functions_aggregate::count::count_udaf;
use datafusion::functions_aggregate::min_max::{max_udaf, min_udaf};
use datafusion::functions_aggregate::sum::sum_udaf;
use datafusion::logical_expr::Operator as BinaryOp;
use datafusion::physical_expr::aggregate::AggregateExprBuilder;
use datafusion::physical_expr::expressions::{binary, col, lit};

fn call(
    udaf: Arc<datafusion::logical_expr::AggregateUDF>,
    arg: &str,
    schema: &SchemaRef,
) -> AggregateCall {
    let expr = AggregateExprBuilder::new(udaf, vec![col(arg, schema).unwrap()])
        .schema(schema.clone())
        .alias(arg)
        .build()
        .unwrap();
    AggregateCall {
        expr: Arc::new(expr),
        filter: None,
    }
}

fn node(input: &RecordBatch, updating: bool) -> AggregateNode {
    let schema = input.schema();
    AggregateNode {
        group_exprs: vec![col("k", &schema).unwrap()],
        aggs: vec![
            call(sum_udaf(), "v", &schema),
            call(count_udaf(), "v", &schema),
        ],
        schema: Arc::new(Schema::new(vec![
            Field::new("k", DataType::Utf8, true),
            Field::new("sum", DataType::Int64, true),
            Field::new("count", DataType::Int64, false),
        ])),
        input_updating: updating,
        window: None,
    }
}

/// One round: the batches, then the barrier that ends it; everything emitted.
fn round(op: &mut Box<dyn Operator>, batches: Vec<RecordBatch>) -> Vec<String> {
    let mut out = Vec::new();
    for b in batches {
        out.extend(op.on_data(0, b).unwrap());
    }
    out.extend(op.on_barrier(0).unwrap());
    to_sorted_rows(&out)
}

#[test]
fn emits_changelog_per_group() {
    let b1 = from_pretty(
        "k:text | v:int64 | _brook_op:int8
         a      | 1       | 1
         b      | 2       | 1
         a      | 3       | 1",
    );
    let mut op = node(&b1, true).instantiate().unwrap();
    // Nothing leaves before the round ends.
    assert!(op.on_data(0, b1.clone()).unwrap().is_empty());
    assert_eq!(
        to_sorted_rows(&op.on_barrier(0).unwrap()),
        vec!["a | 4 | 2 | 1", "b | 2 | 1 | 1"]
    );
    let mut twice = node(&b1, true).instantiate().unwrap();
    assert_eq!(
        round(&mut twice, vec![b1.clone(), b1]),
        vec!["a | 8 | 4 | 1", "b | 4 | 2 | 1"],
        "two batches in one round emit each group once"
    );
    let b2 = from_pretty(
        "k:text | v:int64 | _brook_op:int8
         a      | 1       | -1
         b      | 2       | -1",
    );
    // a changes (delete old, insert new); b is gone.
    assert_eq!(
        round(&mut op, vec![b2]),
        vec!["a | 3 | 1 | 1", "a | 4 | 2 | -1", "b | 2 | 1 | -1"]
    );
    assert!(op.state_size() > 0);
}

#[test]
fn append_only_input_is_vectorised_and_merged_at_the_barrier() {
    let b1 = from_pretty(
        "k:text | v:int64 | _brook_op:int8
         a      | 1       | 1
         b      | 2       | 1
         a      | 3       | 1
         c      |         | 1",
    );
    let b2 = from_pretty(
        "k:text | v:int64 | _brook_op:int8
         b      | 10      | 1
         a      | 5       | 1",
    );
    let schema = b1.schema();
    let mut n = node(&b1, false);
    // sum(v) FILTER (WHERE v > 1): NULL and false both skip the row.
    n.aggs[0].filter =
        Some(binary(col("v", &schema).unwrap(), BinaryOp::Gt, lit(1i64), &schema).unwrap());
    let mut op = n.instantiate().unwrap();
    assert_eq!(
        round(&mut op, vec![b1, b2.clone()]),
        vec!["a | 8 | 3 | 1", "b | 12 | 2 | 1", "c | NULL | 0 | 1"]
    );
    assert!(op.state_size() > 0);
    // The next round updates from the merged state.
    assert_eq!(
        round(&mut op, vec![b2]),
        vec![
            "a | 13 | 4 | 1",
            "a | 8 | 3 | -1",
            "b | 12 | 2 | -1",
            "b | 22 | 3 | 1"
        ]
    );
}

#[test]
fn rows_of_many_groups_in_one_batch_reach_their_groups() {
    // Interleaved inserts and deletes of three groups in one batch (sorted by group).
    let b = from_pretty(
        "k:text | v:int64 | _brook_op:int8
         a      | 1       | 1
         b      | 2       | 1
         c      | 4       | 1
         a      | 8       | 1
         b      | 2       | -1
         c      | 16      | 1
         a      | 1       | -1",
    );
    let mut op = node(&b, true).instantiate().unwrap();
    assert_eq!(
        round(&mut op, vec![b]),
        vec!["a | 8 | 1 | 1", "c | 20 | 2 | 1"]
    );
}

#[test]
fn global_aggregate_has_a_row_before_data() {
    let b = from_pretty(
        "k:text | v:int64 | _brook_op:int8
         a      | 5       | 1",
    );
    let schema = b.schema();
    let n = AggregateNode {
        group_exprs: vec![],
        aggs: vec![call(count_udaf(), "v", &schema)],
        schema: Arc::new(Schema::new(vec![Field::new(
            "count",
            DataType::Int64,
            false,
        )])),
        input_updating: false,
        window: None,
    };
    let mut op = n.instantiate().unwrap();
    assert_eq!(to_sorted_rows(&op.on_start().unwrap()), vec!["0 | 1"]);
    assert_eq!(round(&mut op, vec![b]), vec!["0 | -1", "1 | 1"]);
}

#[test]
fn min_and_max_over_a_retracting_input_keep_their_values() {
    let b = from_pretty(
        "k:text | v:int64 | _brook_op:int8
         a      | 5       | 1
         a      | 3       | 1
         a      | 7       | 1
         a      | NULL    | 1",
    );
    let schema = b.schema();
    let mut n = node(&b, true);
    n.aggs = vec![
        call(min_udaf(), "v", &schema),
        call(max_udaf(), "v", &schema),
    ];
    n.schema = Arc::new(Schema::new(vec![
        Field::new("k", DataType::Utf8, true),
        Field::new("min", DataType::Int64, true),
        Field::new("max", DataType::Int64, true),
    ]));
    let mut op = n.instantiate().unwrap();
    assert_eq!(round(&mut op, vec![b]), vec!["a | 3 | 7 | 1"]);
    // The minimum and the maximum leave: the next ones answer.
    let gone = from_pretty(
        "k:text | v:int64 | _brook_op:int8
         a      | 3       | -1
         a      | 7       | -1",
    );
    assert_eq!(
        round(&mut op, vec![gone]),
        vec!["a | 3 | 7 | -1", "a | 5 | 5 | 1"]
    );
    // A value kept twice leaves once.
    let twice = from_pretty(
        "k:text | v:int64 | _brook_op:int8
         a      | 9       | 1
         a      | 9       | 1
         a      | 9       | -1",
    );
    assert_eq!(
        round(&mut op, vec![twice]),
        vec!["a | 5 | 5 | -1", "a | 5 | 9 | 1"]
    );
}

#[test]
fn a_float_sum_over_a_retracting_input_is_the_sum_of_what_is_left() {
    let b = from_pretty(
        "k:text | v:float64 | _brook_op:int8
         a      | 1e16      | 1
         a      | 1         | 1",
    );
    let mut n = node(&b, true);
    n.schema = Arc::new(Schema::new(vec![
        Field::new("k", DataType::Utf8, true),
        Field::new("sum", DataType::Float64, true),
        Field::new("count", DataType::Int64, false),
    ]));
    let mut op = n.instantiate().unwrap();
    round(&mut op, vec![b]);
    // 1e16 + 1 rounds the 1 away: subtracting 1e16 again would leave 0.
    let gone = from_pretty(
        "k:text | v:float64 | _brook_op:int8
         a      | 1e16      | -1",
    );
    let out = round(&mut op, vec![gone]);
    assert_eq!(out, vec!["a | 1.0 | 1 | 1", "a | 1e16 | 2 | -1"]);
}

fn window_node(input: &RecordBatch, updating: bool) -> AggregateNode {
    let schema = input.schema();
    AggregateNode {
        group_exprs: vec![col("k", &schema).unwrap(), col("w", &schema).unwrap()],
        aggs: vec![call(sum_udaf(), "v", &schema)],
        schema: Arc::new(Schema::new(vec![
            Field::new("k", DataType::Utf8, true),
            Field::new("w", DataType::Timestamp(TimeUnit::Microsecond, None), true),
            Field::new("sum", DataType::Int64, true),
        ])),
        input_updating: updating,
        window: Some(WindowClose {
            end_key: 1,
            emit_on_close: true,
        }),
    }
}

/// 2026-01-01T00:01:00 in microseconds since the epoch.
const MINUTE_1: i64 = 1_767_225_660_000_000;

#[test]
fn window_emits_on_close_and_drops_late_rows() {
    let b1 = from_pretty(
        "k:text | w:timestamp          | v:int64 | _brook_op:int8
         a      | 2026-01-01T00:01:00 | 1       | 1
         a      | 2026-01-01T00:01:00 | 2       | 1
         a      | 2026-01-01T00:02:00 | 5       | 1",
    );
    let mut op = window_node(&b1, false).instantiate().unwrap();
    assert!(op.on_data(0, b1).unwrap().is_empty());
    assert_eq!(
        to_sorted_rows(&op.on_watermark(MINUTE_1).unwrap()),
        vec!["a | 2026-01-01T00:01:00 | 3 | 1"]
    );
    let late = from_pretty(
        "k:text | w:timestamp          | v:int64 | _brook_op:int8
         a      | 2026-01-01T00:01:00 | 9       | 1",
    );
    assert!(op.on_data(0, late).unwrap().is_empty());
    assert_eq!(op.late_rows(), 1);
    assert_eq!(
        to_sorted_rows(&op.on_watermark(MINUTE_1 + 60_000_000).unwrap()),
        vec!["a | 2026-01-01T00:02:00 | 5 | 1"]
    );
    assert_eq!(op.state_size(), 0);
}

#[test]
fn a_reused_slot_is_not_closed_with_its_old_window() {
    // (a, 00:01) is retracted entirely and freed; (b, 00:02) takes its slot.
    let b1 = from_pretty(
        "k:text | w:timestamp          | v:int64 | _brook_op:int8
         a      | 2026-01-01T00:01:00 | 1       | 1
         a      | 2026-01-01T00:01:00 | 1       | -1",
    );
    let b2 = from_pretty(
        "k:text | w:timestamp          | v:int64 | _brook_op:int8
         b      | 2026-01-01T00:02:00 | 7       | 1",
    );
    let mut op = window_node(&b1, true).instantiate().unwrap();
    assert!(round(&mut op, vec![b1]).is_empty());
    assert!(round(&mut op, vec![b2]).is_empty());
    assert!(op.on_watermark(MINUTE_1).unwrap().is_empty());
    assert_eq!(
        to_sorted_rows(&op.on_watermark(MINUTE_1 + 60_000_000).unwrap()),
        vec!["b | 2026-01-01T00:02:00 | 7 | 1"]
    );
}
