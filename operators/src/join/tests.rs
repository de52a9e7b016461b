//! Tests of the join operator.

use super::*;
use crate::{change, NodeSpec};
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::arrow::record_batch::RecordBatch;
// hashbrown with foldhash, as DataFusion's own joins: std's SipHash costs more per key.
use crate::testing::{from_pretty, to_sorted_rows};
use datafusion::arrow::datatypes::Schema;
use datafusion::physical_expr::expressions::col;
use std::sync::Arc;

/// The data schemas of two test inputs, and the schema of their pairs.
fn schemas(l: &RecordBatch, r: &RecordBatch) -> (SchemaRef, SchemaRef, SchemaRef) {
    let (ls, rs) = (
        change::strip(l).unwrap().schema(),
        change::strip(r).unwrap().schema(),
    );
    let fields: Vec<_> = ls
        .fields()
        .iter()
        .chain(rs.fields().iter())
        .cloned()
        .collect();
    (ls, rs, Arc::new(Schema::new(fields)))
}

fn node(l: &RecordBatch, r: &RecordBatch) -> JoinNode {
    let (ls, rs, pair) = schemas(l, r);
    JoinNode {
        left_keys: vec![col("k", &ls).unwrap()],
        right_keys: vec![col("k2", &rs).unwrap()],
        filter: None,
        left_schema: ls,
        right_schema: rs,
        schema: pair,
        updating: true,
        inputs_updating: [true, true],
        kind: JoinKind::Inner,
        bounds: [None, None],
        nulls_equal: false,
        null_aware: false,
    }
}

/// Auctions (open from `t` to `expires`) joined with their bids
/// `ON a = auction AND bt BETWEEN t AND expires`.
fn interval_node() -> JoinNode {
    use datafusion::logical_expr::Operator as Op;
    use datafusion::physical_expr::expressions::binary;
    let (ls, rs, pair) = schemas(&auctions(&[]), &bids(&[]));
    let c = |name: &str, schema: &SchemaRef| col(name, schema).unwrap();
    let cmp = |l, op, r| binary(c(l, &pair), op, c(r, &pair), &pair).unwrap();
    let condition = binary(
        cmp("bt", Op::GtEq, "t"),
        Op::And,
        cmp("bt", Op::LtEq, "expires"),
        &pair,
    )
    .unwrap();
    JoinNode {
        kind: JoinKind::Inner,
        left_keys: vec![c("a", &ls)],
        right_keys: vec![c("auction", &rs)],
        filter: Some(condition),
        schema: pair,
        updating: false,
        inputs_updating: [false, false],
        bounds: [
            Some(TimeBound {
                expiry: c("expires", &ls),
                partner_time: c("bt", &rs),
                partner_updating: false,
            }),
            Some(TimeBound {
                expiry: c("bt", &rs),
                partner_time: c("t", &ls),
                partner_updating: false,
            }),
        ],
        left_schema: ls,
        right_schema: rs,
        nulls_equal: false,
        null_aware: false,
    }
}

fn auctions(rows: &[&str]) -> RecordBatch {
    from_pretty(&format!(
        "a:int64 | t:timestamp | expires:timestamp | _brook_op:int8\n{}",
        rows.join("\n")
    ))
}

fn bids(rows: &[&str]) -> RecordBatch {
    from_pretty(&format!(
        "auction:int64 | bt:timestamp | _brook_op:int8\n{}",
        rows.join("\n")
    ))
}

/// Seconds since the epoch in microseconds.
const S: i64 = 1_000_000;

/// Orders of keys `a`, `b` and NULL (amounts 1, 2, 3), inserted.
fn three_orders() -> RecordBatch {
    from_pretty(
        "k:text | amt:int64 | _brook_op:int8
         a      | 1         | 1
         b      | 2         | 1
         NULL   | 3         | 1",
    )
}

/// Names rows (`k2 | name | _brook_op`) under their header.
fn names(rows: &str) -> RecordBatch {
    from_pretty(&format!("k2:text | name:text | _brook_op:int8\n{rows}"))
}

#[test]
fn an_interval_join_drops_rows_the_watermark_passed() {
    let mut op = interval_node().instantiate().unwrap();
    let opened = auctions(&[
        "1 | 1970-01-01T00:00:10 | 1970-01-01T00:00:20 | 1",
        "2 | 1970-01-01T00:00:10 | 1970-01-01T00:00:40 | 1",
    ]);
    assert!(op.on_data(0, opened).unwrap().is_empty());
    let early = bids(&["1 | 1970-01-01T00:00:15 | 1", "2 | 1970-01-01T00:00:05 | 1"]);
    assert_eq!(
        to_sorted_rows(&op.on_data(1, early).unwrap()),
        vec!["1 | 1970-01-01T00:00:10 | 1970-01-01T00:00:20 | 1 | 1970-01-01T00:00:15 | 1"]
    );
    let before = op.state_size();
    // Auction 1 closed at 20 s and both bids are behind 21 s: only auction 2 stays.
    op.on_watermark(21 * S).unwrap();
    assert!(op.state_size() < before, "{} !< {before}", op.state_size());
    let later = bids(&[
        "1 | 1970-01-01T00:00:22 | 1",
        "2 | 1970-01-01T00:00:25 | 1",
        "2 | 1970-01-01T00:00:12 | 1",
    ]);
    assert_eq!(
        to_sorted_rows(&op.on_data(1, later).unwrap()),
        vec!["2 | 1970-01-01T00:00:10 | 1970-01-01T00:00:40 | 2 | 1970-01-01T00:00:25 | 1"]
    );
    assert_eq!(
        op.late_rows(),
        1,
        "the bid at 12 s came behind the watermark"
    );
    // An auction opening behind the watermark is late too, and one that ends before the
    // watermark is matched with what is there but not kept.
    let more = auctions(&[
        "3 | 1970-01-01T00:00:01 | 1970-01-01T00:00:50 | 1",
        "2 | 1970-01-01T00:00:21 | 1970-01-01T00:00:21 | 1",
    ]);
    assert!(op.on_data(0, more).unwrap().is_empty());
    assert_eq!(op.late_rows(), 2);
    op.on_watermark(i64::MAX).unwrap();
    assert_eq!(op.state_size(), 0, "everything expires at the end of input");
}

#[test]
fn an_outer_interval_join_emits_unmatched_rows_once_they_expire() {
    let node = JoinNode {
        kind: JoinKind::Full,
        ..interval_node()
    };
    assert!(node
        .to_string()
        .contains("unmatched left rows emitted then"));
    let mut op = node.instantiate().unwrap();
    let opened = auctions(&[
        "1 | 1970-01-01T00:00:10 | 1970-01-01T00:00:20 | 1",
        "4 | 1970-01-01T00:00:30 | 1970-01-01T00:00:35 | 1",
    ]);
    assert!(
        op.on_data(0, opened).unwrap().is_empty(),
        "a match may still come"
    );
    // A bid without an auction id can never match: out at once.
    let placed = bids(&[
        "1 | 1970-01-01T00:00:15 | 1",
        "3 | 1970-01-01T00:00:16 | 1",
        "NULL | 1970-01-01T00:00:30 | 1",
    ]);
    assert_eq!(
        to_sorted_rows(&op.on_data(1, placed).unwrap()),
        vec![
            "1 | 1970-01-01T00:00:10 | 1970-01-01T00:00:20 | 1 | 1970-01-01T00:00:15 | 1",
            "NULL | NULL | NULL | NULL | 1970-01-01T00:00:30 | 1",
        ]
    );
    // At 21 s bid 3 (no auction 3 can open after it) is final; auction 1 had its bid.
    assert_eq!(
        to_sorted_rows(&op.on_watermark(21 * S).unwrap()),
        vec!["NULL | NULL | NULL | 3 | 1970-01-01T00:00:16 | 1"]
    );
    // Auction 4 closes with no bid; every row is an insert: the output is append-only.
    assert_eq!(
        to_sorted_rows(&op.on_watermark(i64::MAX).unwrap()),
        vec!["4 | 1970-01-01T00:00:30 | 1970-01-01T00:00:35 | NULL | NULL | 1"]
    );
    assert_eq!(op.state_size(), 0);
}

#[test]
fn dead_rows_are_compacted_away() {
    let mut op = interval_node().instantiate().unwrap();
    for round in 0..20i64 {
        let rows: Vec<String> = (0..1000)
            .map(|i| format!("{} | 1970-01-01T00:00:{:02} | 1", i, 10 + round))
            .collect();
        let rows: Vec<&str> = rows.iter().map(String::as_str).collect();
        op.on_data(1, bids(&rows)).unwrap();
        op.on_watermark((10 + round) * S).unwrap();
    }
    // Only the newest round's bids are live; the batches holding the old ones are gone.
    let one_round = {
        let mut fresh = interval_node().instantiate().unwrap();
        let rows: Vec<String> = (0..1000)
            .map(|i| format!("{i} | 1970-01-01T00:00:10 | 1"))
            .collect();
        let rows: Vec<&str> = rows.iter().map(String::as_str).collect();
        fresh.on_data(1, bids(&rows)).unwrap();
        fresh.state_size()
    };
    assert!(
        op.state_size() < 6 * one_round,
        "{} vs one round {one_round}",
        op.state_size()
    );
}

#[test]
fn not_in_follows_the_null_rule() {
    let orders = three_orders();
    let mut node = node(&orders, &names(""));
    node.kind = JoinKind::Anti(0);
    node.null_aware = true;
    node.schema = node.left_schema.clone();
    assert!(node.to_string().contains("left anti (NOT IN: NULL-aware)"));
    let mut op = node.instantiate().unwrap();
    // Nothing to be in yet: every row is NOT IN it, even a NULL one.
    assert_eq!(
        to_sorted_rows(&op.on_data(0, orders).unwrap()),
        vec!["NULL | 3 | 1", "a | 1 | 1", "b | 2 | 1"]
    );
    // Not empty now: NULL IN (...) is unknown; a is in it.
    assert_eq!(
        to_sorted_rows(&op.on_data(1, names("a | Ann | 1")).unwrap()),
        vec!["NULL | 3 | -1", "a | 1 | -1"]
    );
    // A NULL in the subquery makes every comparison unknown.
    assert_eq!(
        to_sorted_rows(&op.on_data(1, names("NULL | Nobody | 1")).unwrap()),
        vec!["b | 2 | -1"]
    );
    let late = from_pretty("k:text | amt:int64 | _brook_op:int8\n c | 4 | 1");
    assert!(op.on_data(0, late).unwrap().is_empty());
    // Both go: the rows come back as they were before either arrived.
    assert_eq!(
        to_sorted_rows(
            &op.on_data(1, names("NULL | Nobody | -1\na | Ann | -1"))
                .unwrap()
        ),
        vec!["NULL | 3 | 1", "a | 1 | 1", "b | 2 | 1", "c | 4 | 1"]
    );
}

#[test]
fn joins_both_ways_and_retracts() {
    let orders = three_orders();
    let names = from_pretty(
        "k2:text | name:text | _brook_op:int8
         a       | Ann       | 1",
    );
    let mut op = node(&orders, &names).instantiate().unwrap();
    assert!(op.on_data(0, orders).unwrap().is_empty());
    assert_eq!(
        to_sorted_rows(&op.on_data(1, names).unwrap()),
        vec!["a | 1 | a | Ann | 1"]
    );
    // The name changes: the joined row is retracted and re-emitted.
    let rename = from_pretty(
        "k2:text | name:text | _brook_op:int8
         a       | Ann       | -1
         a       | Anna      | 1
         b       | Bob       | 1",
    );
    assert_eq!(
        to_sorted_rows(&op.on_data(1, rename).unwrap()),
        vec![
            "a | 1 | a | Ann | -1",
            "a | 1 | a | Anna | 1",
            "b | 2 | b | Bob | 1"
        ]
    );
    let more = from_pretty(
        "k:text | amt:int64 | _brook_op:int8
         b      | 5         | 1
         a      | 1         | -1",
    );
    assert_eq!(
        to_sorted_rows(&op.on_data(0, more).unwrap()),
        vec!["a | 1 | a | Anna | -1", "b | 5 | b | Bob | 1"]
    );
    assert!(op.state_size() > 0);
}

/// Append-only inputs keep no whole-row index: a repeated row is an entry of its own,
/// and pairs exactly as often as a counted copy would.
#[test]
fn copies_of_append_only_rows_pair_once_each() {
    let orders = || {
        from_pretty(
            "k:text | amt:int64 | _brook_op:int8
             a      | 1         | 1
             a      | 1         | 1",
        )
    };
    let names = from_pretty(
        "k2:text | name:text | _brook_op:int8
         a       | Ann       | 1",
    );
    let both = |updating: bool| JoinNode {
        updating,
        inputs_updating: [updating; 2],
        ..node(&orders(), &names)
    };
    let mut sizes = Vec::new();
    for updating in [true, false] {
        let mut op = both(updating).instantiate().unwrap();
        assert!(op.on_data(0, orders()).unwrap().is_empty());
        assert_eq!(
            to_sorted_rows(&op.on_data(1, names.clone()).unwrap()),
            vec!["a | 1 | a | Ann | 1"; 2],
            "updating inputs: {updating}"
        );
        assert_eq!(
            to_sorted_rows(&op.on_data(0, orders()).unwrap()),
            vec!["a | 1 | a | Ann | 1"; 2],
            "updating inputs: {updating}"
        );
        // Distinct rows: the append-only side holds their keys, not the rows again.
        let before = op.state_size();
        let distinct = from_pretty(
            "k:text | amt:int64 | _brook_op:int8
             b      | 2         | 1
             c      | 3         | 1",
        );
        assert!(op.on_data(0, distinct).unwrap().is_empty());
        sizes.push(op.state_size() - before);
    }
    assert!(sizes[1] < sizes[0], "no whole rows held: {sizes:?}");
}

/// `SELECT s.seq FROM s CROSS JOIN t`: the table's side has no columns left, yet its rows
/// count — inserted and retracted — and the stream's rows pair with each.
#[test]
fn a_cross_join_with_no_column_of_one_side_counts_its_rows() {
    use datafusion::physical_expr::expressions::lit;
    let stream =
        |rows: &[&str]| from_pretty(&format!("seq:int64 | _brook_op:int8\n{}", rows.join("\n")));
    let table = |rows: &[&str]| from_pretty(&format!("_brook_op:int8\n{}", rows.join("\n")));
    let (ls, rs, pair) = schemas(&stream(&[]), &table(&[]));
    assert_eq!(rs.fields().len(), 0);
    let node = JoinNode {
        left_keys: vec![lit(true)],
        right_keys: vec![lit(true)],
        filter: None,
        left_schema: ls,
        right_schema: rs,
        schema: pair,
        updating: true,
        inputs_updating: [false, true],
        kind: JoinKind::Inner,
        bounds: [None, None],
        nulls_equal: false,
        null_aware: false,
    };
    let mut op = node.instantiate().unwrap();
    assert!(op.on_data(1, table(&["1", "1"])).unwrap().is_empty());
    assert_eq!(
        to_sorted_rows(&op.on_data(0, stream(&["1 | 1", "2 | 1", "3 | 1"])).unwrap()),
        vec!["1 | 1", "1 | 1", "2 | 1", "2 | 1", "3 | 1", "3 | 1"]
    );
    // One of the table's two rows is deleted: each stream row loses one pair.
    assert_eq!(
        to_sorted_rows(&op.on_data(1, table(&["-1"])).unwrap()),
        vec!["1 | -1", "2 | -1", "3 | -1"]
    );
    assert_eq!(
        to_sorted_rows(&op.on_data(0, stream(&["4 | 1"])).unwrap()),
        vec!["4 | 1"]
    );
}

#[test]
fn a_mark_join_marks_each_left_row_and_flips_it() {
    use datafusion::arrow::datatypes::{DataType, Field};
    let orders = three_orders();
    let mut node = node(&orders, &names(""));
    node.kind = JoinKind::Mark;
    let mut fields: Vec<_> = node.left_schema.fields().iter().cloned().collect();
    fields.push(Arc::new(Field::new("mark", DataType::Boolean, false)));
    node.schema = Arc::new(Schema::new(fields));
    assert!(node.to_string().contains("left mark"));
    let mut op = node.instantiate().unwrap();
    assert_eq!(
        to_sorted_rows(&op.on_data(1, names("a | Ann | 1")).unwrap()),
        Vec::<String>::new()
    );
    // Each row once, marked; a NULL key matches nothing.
    assert_eq!(
        to_sorted_rows(&op.on_data(0, orders).unwrap()),
        vec![
            "NULL | 3 | false | 1",
            "a | 1 | true | 1",
            "b | 2 | false | 1"
        ]
    );
    // b's first match flips its mark; a second match of a changes nothing.
    assert_eq!(
        to_sorted_rows(&op.on_data(1, names("b | Bo | 1\na | Al | 1")).unwrap()),
        vec!["b | 2 | false | -1", "b | 2 | true | 1"]
    );
    // a keeps a match after losing one, and flips after losing both.
    assert!(op.on_data(1, names("a | Ann | -1")).unwrap().is_empty());
    assert_eq!(
        to_sorted_rows(&op.on_data(1, names("a | Al | -1")).unwrap()),
        vec!["a | 1 | false | 1", "a | 1 | true | -1"]
    );
    // A left row's retraction takes back the row with its mark as it is now.
    let gone = from_pretty("k:text | amt:int64 | _brook_op:int8\n b | 2 | -1");
    assert_eq!(
        to_sorted_rows(&op.on_data(0, gone).unwrap()),
        vec!["b | 2 | true | -1"]
    );
}
