//! Tests of the MATCH_RECOGNIZE operator.

use super::pattern::{Pattern, Program};
use super::*;
use crate::testing::{from_pretty, to_rows, to_sorted_rows};
use crate::{change, Operator};
use datafusion::arrow::datatypes::{DataType, Field, Schema};
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::logical_expr::Operator as Op;
use datafusion::physical_expr::expressions::{binary, col};

/// Prices per symbol; the V shape of Flink's documentation:
/// `PATTERN (strt down+ up+) DEFINE down AS price < PREV(price), up AS price > PREV(price)`.
fn ticks() -> RecordBatch {
    from_pretty(
        "sym:utf8 | t:int64 | price:int64
         A        | 1       | 12
         B        | 1       | 50
         A        | 2       | 11
         A        | 3       | 10
         B        | 2       | 40
         A        | 4       | 11
         B        | 3       | 45
         A        | 5       | 13
         A        | 6       | 12
         B        | 4       | 46
         A        | 7       | 14",
    )
}

fn v_shape(rows_per_match: RowsPerMatch) -> MatchRecognizeNode {
    let input = ticks().schema();
    let mut ext: Vec<Field> = input.fields().iter().map(|f| f.as_ref().clone()).collect();
    ext.push(Field::new("__prev_0", DataType::Int64, true));
    let ext = Arc::new(Schema::new(ext));
    let price = col("price", &ext).unwrap();
    let prev = col("__prev_0", &ext).unwrap();
    let down = binary(price.clone(), Op::Lt, prev.clone(), &ext).unwrap();
    let up = binary(price, Op::Gt, prev, &ext).unwrap();
    let plus = |v| Pattern::Repeat {
        inner: Box::new(Pattern::Var(v)),
        min: 1,
        max: None,
        greedy: true,
    };
    let pattern = Pattern::Concat(vec![Pattern::Var(0), plus(1), plus(2)]);
    let one = |kind, data_type, text: &str| Measure {
        reads: vec![Navigation {
            kind,
            running: true,
            data_type,
        }],
        expr: None,
        text: text.into(),
    };
    let measures = vec![
        one(
            MeasureKind::First {
                vars: Some(1 << 0),
                col: 1,
                offset: 0,
                shift: 0,
            },
            DataType::Int64,
            "FIRST(strt.t)",
        ),
        one(
            MeasureKind::Last {
                vars: Some(1 << 1),
                col: 2,
                offset: 0,
                shift: 0,
            },
            DataType::Int64,
            "LAST(down.price)",
        ),
        one(
            MeasureKind::Count {
                vars: Some(1 << 2),
                col: None,
            },
            DataType::Int64,
            "count(up.*)",
        ),
        one(MeasureKind::Classifier, DataType::Utf8, "CLASSIFIER()"),
        one(MeasureKind::MatchNumber, DataType::Int64, "MATCH_NUMBER()"),
    ];
    let mut fields = vec![Field::new("sym", DataType::Utf8, true)];
    if rows_per_match.all_rows() {
        fields.push(Field::new("t", DataType::Int64, true));
    }
    fields.extend([
        Field::new("start_t", DataType::Int64, true),
        Field::new("bottom", DataType::Int64, true),
        Field::new("ups", DataType::Int64, true),
        Field::new("cls", DataType::Utf8, true),
        Field::new("n", DataType::Int64, true),
    ]);
    if rows_per_match.all_rows() {
        fields.push(Field::new("price", DataType::Int64, true));
    }
    MatchRecognizeNode {
        input_schema: input,
        partition: vec![0],
        order: vec![1],
        order_options: vec![ORDER],
        variables: vec!["strt".into(), "down".into(), "up".into()],
        conditions: vec![
            None,
            Some(Condition {
                expr: down,
                reads: Vec::new(),
            }),
            Some(Condition {
                expr: up,
                reads: Vec::new(),
            }),
        ],
        prev: vec![PrevColumn {
            col: 2,
            offset: 1,
            ahead: false,
        }],
        program: Program::compile(&pattern).unwrap(),
        pattern,
        rows_per_match,
        after_match: AfterMatch::PastLastRow,
        measures,
        within: None,
        schema: Arc::new(Schema::new(fields)),
    }
}

/// Run the node over `data` cut into batches of `cut` rows; then finish.
fn run(node: &MatchRecognizeNode, data: &RecordBatch, cut: usize) -> (Vec<String>, Vec<String>) {
    let mut op = MatchRecognizeOp::new(node).unwrap();
    feed(&mut op, node, data, cut)
}

/// `data` cut into batches of `cut` rows.
fn cuts(data: &RecordBatch, cut: usize) -> Vec<RecordBatch> {
    (0..data.num_rows())
        .step_by(cut)
        .map(|at| data.slice(at, cut.min(data.num_rows() - at)))
        .collect()
}

/// Push the rows of `part` to `op` as inserts; what it emits (with the change kinds).
fn push(
    op: &mut MatchRecognizeOp,
    node: &MatchRecognizeNode,
    part: &RecordBatch,
) -> Vec<RecordBatch> {
    let kinds = change::constant(change::INSERT, part.num_rows());
    let input = change::attach(&node.input_schema, part.columns().to_vec(), kinds).unwrap();
    op.on_data(0, input).unwrap()
}

/// Feed `data` to `op` in batches of `cut` rows, then finish: the rows streamed and all
/// rows, sorted.
fn feed(
    op: &mut MatchRecognizeOp,
    node: &MatchRecognizeNode,
    data: &RecordBatch,
    cut: usize,
) -> (Vec<String>, Vec<String>) {
    let mut streamed = Vec::new();
    for part in cuts(data, cut) {
        for b in push(op, node, &part) {
            streamed.push(change::strip(&b).unwrap());
        }
    }
    let mut all = streamed.clone();
    all.extend(op.finish().unwrap());
    (to_sorted_rows(&streamed), to_sorted_rows(&all))
}

#[test]
fn one_row_per_match_finds_each_v_shape() {
    let node = v_shape(RowsPerMatch::One);
    let (streamed, all) = run(&node, &ticks(), 100);
    // A: 12 11 10 11 13 | 12 14: matches at t 1..5 (rising run ends at 12) and t 5..7?
    // After the first match (t1..t5, up = 11, 13) the next attempt starts at t6 (12):
    // strt 12, down? 14 is not down: no match. B: 50 40 45 46: one match, still rising.
    assert_eq!(
        all,
        vec!["A | 1 | 10 | 2 | up | 1", "B | 1 | 40 | 2 | up | 1"]
    );
    // While streaming, B's rising run may still go on, and A's could too until 12 < 13.
    assert_eq!(streamed, vec!["A | 1 | 10 | 2 | up | 1"]);
}

#[test]
fn all_rows_per_match_have_running_measures() {
    let node = v_shape(RowsPerMatch::All { unmatched: false });
    let (_, all) = run(&node, &ticks(), 100);
    assert_eq!(
        all,
        vec![
            "A | 1 | 1 | NULL | 0 | strt | 1 | 12",
            "A | 2 | 1 | 11 | 0 | down | 1 | 11",
            "A | 3 | 1 | 10 | 0 | down | 1 | 10",
            "A | 4 | 1 | 10 | 1 | up | 1 | 11",
            "A | 5 | 1 | 10 | 2 | up | 1 | 13",
            "B | 1 | 1 | NULL | 0 | strt | 1 | 50",
            "B | 2 | 1 | 40 | 0 | down | 1 | 40",
            "B | 3 | 1 | 40 | 1 | up | 1 | 45",
            "B | 4 | 1 | 40 | 2 | up | 1 | 46",
        ]
    );
}

#[test]
fn results_do_not_depend_on_batch_boundaries() {
    for rows in [
        RowsPerMatch::One,
        RowsPerMatch::All { unmatched: false },
        RowsPerMatch::All { unmatched: true },
    ] {
        let node = v_shape(rows);
        let whole = run(&node, &ticks(), 100);
        for cut in 1..ticks().num_rows() {
            assert_eq!(run(&node, &ticks(), cut), whole, "{rows:?} cut {cut}");
        }
    }
}

/// The rows shown after feeding `data` to a fresh operator in batches of `cut` rows: the
/// inserts less the retractions, sorted; after each batch (the first `k` rows), and with
/// whether any row was retracted.
fn partial_rows_shown(
    node: &MatchRecognizeNode,
    data: &RecordBatch,
    cut: usize,
) -> (Vec<Vec<String>>, bool) {
    let mut op = MatchRecognizeOp::new(node).unwrap();
    let mut shown: Vec<String> = Vec::new();
    let mut after_each = Vec::new();
    let mut retracted = false;
    for part in cuts(data, cut) {
        for b in push(&mut op, node, &part) {
            let kinds = change::kinds(&b).unwrap().clone();
            let rows = to_rows(&[change::strip(&b).unwrap()]);
            for (row, kind) in rows.into_iter().zip(kinds.values().iter()) {
                if *kind == change::DELETE {
                    let i = shown.iter().position(|r| *r == row);
                    assert!(i.is_some(), "retracted a row not shown: {row}");
                    shown.swap_remove(i.unwrap());
                    retracted = true;
                } else {
                    shown.push(row);
                }
            }
        }
        let mut sorted = shown.clone();
        sorted.sort();
        after_each.push(sorted);
    }
    assert!(
        op.finish().unwrap().is_empty(),
        "the end decides nothing more"
    );
    (after_each, retracted)
}

#[test]
fn partial_matches_shown_do_not_depend_on_batch_boundaries() {
    let node = v_shape(RowsPerMatch::AllWithPartial);
    let data = ticks();
    // Over all the rows at once: A's match, then its attempt from t 7 (the one from t 6
    // failed: 14 is no fall after 12), and B's rise, still open.
    let (whole, _) = partial_rows_shown(&node, &data, 100);
    assert_eq!(
        whole[0],
        vec![
            "A | 1 | 1 | NULL | 0 | strt | 1 | 12",
            "A | 2 | 1 | 11 | 0 | down | 1 | 11",
            "A | 3 | 1 | 10 | 0 | down | 1 | 10",
            "A | 4 | 1 | 10 | 1 | up | 1 | 11",
            "A | 5 | 1 | 10 | 2 | up | 1 | 13",
            "A | 7 | 7 | NULL | 0 | strt | 2 | 14",
            "B | 1 | 1 | NULL | 0 | strt | 1 | 50",
            "B | 2 | 1 | 40 | 0 | down | 1 | 40",
            "B | 3 | 1 | 40 | 1 | up | 1 | 45",
            "B | 4 | 1 | 40 | 2 | up | 1 | 46",
        ]
    );
    // Row by row, what is shown after each row is what the rows so far show at once; A's
    // attempt from t 6 fails at t 7, so its row is retracted on the way.
    let (each, retracted) = partial_rows_shown(&node, &data, 1);
    assert!(retracted);
    for (k, shown) in each.iter().enumerate() {
        let (prefix, _) = partial_rows_shown(&node, &data.slice(0, k + 1), 100);
        assert_eq!(*shown, prefix[0], "after {} rows", k + 1);
    }
    for cut in 2..data.num_rows() {
        let (each, _) = partial_rows_shown(&node, &data, cut);
        assert_eq!(each.last(), whole.last(), "cut {cut}");
    }
}

#[test]
fn with_unmatched_rows_shows_every_row_once() {
    let node = v_shape(RowsPerMatch::All { unmatched: true });
    let (_, all) = run(&node, &ticks(), 3);
    assert_eq!(all.len(), ticks().num_rows());
    assert!(all.contains(&"A | 6 | NULL | NULL | NULL | NULL | NULL | 12".to_string()));
}

#[test]
fn state_holds_only_rows_of_undecided_matches() {
    let node = v_shape(RowsPerMatch::One);
    let mut op = MatchRecognizeOp::new(&node).unwrap();
    // A long falling run then a rise: everything before the last match's end is freed.
    let mut lines = String::from("sym:utf8 | t:int64 | price:int64\n");
    for t in 0..1000 {
        let price = if t % 10 < 5 {
            100 - t % 10
        } else {
            90 + t % 10
        };
        lines.push_str(&format!("A | {t} | {price}\n"));
    }
    let data = from_pretty(&lines);
    let input = change::attach(
        &node.input_schema,
        data.columns().to_vec(),
        change::constant(change::INSERT, data.num_rows()),
    )
    .unwrap();
    let out = op.on_data(0, input).unwrap();
    assert_eq!(out.iter().map(|b| b.num_rows()).sum::<usize>(), 99);
    let kept: usize = op.partitions.values().map(|p| p.rows.num_rows()).sum();
    assert!(kept <= 12, "kept {kept} rows");
}

#[test]
fn rows_out_of_order_are_late() {
    let node = v_shape(RowsPerMatch::One);
    let mut op = MatchRecognizeOp::new(&node).unwrap();
    let data = from_pretty(
        "sym:utf8 | t:int64 | price:int64
         A        | 5       | 10
         A        | 3       | 9",
    );
    let input = change::attach(
        &node.input_schema,
        data.columns().to_vec(),
        change::constant(change::INSERT, 2),
    )
    .unwrap();
    op.on_data(0, input).unwrap();
    assert_eq!(op.late_rows(), 1);
}

#[test]
fn a_null_order_value_holds_no_later_row_back() {
    // NULLs sort last: a row whose t is NULL is taken where it arrives, and the rows after
    // it are measured against the last t that was not NULL (t 4 is on time, t 2 late).
    let node = v_shape(RowsPerMatch::One);
    let mut op = MatchRecognizeOp::new(&node).unwrap();
    for rows in [
        "A | 3    | 10\n A | NULL | 9",
        "A | 4    | 11\n A | 2    | 8",
    ] {
        let data = from_pretty(&format!("sym:utf8 | t:int64 | price:int64\n {rows}"));
        let n = data.num_rows();
        let input = change::attach(
            &node.input_schema,
            data.columns().to_vec(),
            change::constant(change::INSERT, n),
        )
        .unwrap();
        op.on_data(0, input).unwrap();
    }
    assert_eq!(op.late_rows(), 1);
}

/// The schema a V-shape condition over the match reads: the input, `PREV(price)`
/// (`__prev_0`) and `FIRST(strt.price)` (`__nav_0`).
fn with_prev_and_first_price(node: &MatchRecognizeNode) -> SchemaRef {
    let mut ext: Vec<Field> = node
        .input_schema
        .fields()
        .iter()
        .map(|f| f.as_ref().clone())
        .collect();
    ext.push(Field::new("__prev_0", DataType::Int64, true));
    ext.push(Field::new("__nav_0", DataType::Int64, true));
    Arc::new(Schema::new(ext))
}

/// The V shape whose rise may not pass the start's price: `up AS price > PREV(price) AND
/// price <= FIRST(strt.price)` reads the match so far, so it is checked while matching.
fn bounded_v_shape(rows_per_match: RowsPerMatch) -> MatchRecognizeNode {
    let mut node = v_shape(rows_per_match);
    let ext = with_prev_and_first_price(&node);
    let price = col("price", &ext).unwrap();
    let rises = binary(price.clone(), Op::Gt, col("__prev_0", &ext).unwrap(), &ext).unwrap();
    let capped = binary(price, Op::LtEq, col("__nav_0", &ext).unwrap(), &ext).unwrap();
    node.conditions[2] = Some(Condition {
        expr: binary(rises, Op::And, capped, &ext).unwrap(),
        reads: vec![Navigation {
            kind: MeasureKind::First {
                vars: Some(1 << 0),
                col: 2,
                offset: 0,
                shift: 0,
            },
            running: true,
            data_type: DataType::Int64,
        }],
    });
    node
}

#[test]
fn conditions_over_the_match_so_far_do_not_depend_on_batch_boundaries() {
    let node = bounded_v_shape(RowsPerMatch::One);
    let whole = run(&node, &ticks(), 100);
    // A: 12 11 10 11 | 13 > 12 ends the rise at 11 (t 4); B: 50 40 45 46 (all <= 50).
    assert_eq!(
        whole.1,
        vec!["A | 1 | 10 | 1 | up | 1", "B | 1 | 40 | 2 | up | 1"]
    );
    for cut in 1..ticks().num_rows() {
        assert_eq!(run(&node, &ticks(), cut), whole, "cut {cut}");
    }
    let all = bounded_v_shape(RowsPerMatch::All { unmatched: true });
    let whole = run(&all, &ticks(), 100);
    for cut in 1..ticks().num_rows() {
        assert_eq!(run(&all, &ticks(), cut), whole, "cut {cut}");
    }
}

/// PREV of rows the match names (`up AS price > PREV(price) AND price <=
/// PREV(FIRST(down.price))`: the rise stays at or below the row before the fall) and a
/// measure that reads the row before the match (`PREV(FIRST(strt.t))`): the rows they read
/// are kept back, whatever the batch cuts.
#[test]
fn navigation_before_the_match_does_not_depend_on_batch_boundaries() {
    let data = from_pretty(
        "sym:utf8 | t:int64 | price:int64
         A        | 0       | 12
         B        | 0       | 50
         A        | 1       | 12
         B        | 1       | 50
         A        | 2       | 11
         A        | 3       | 10
         B        | 2       | 40
         A        | 4       | 11
         B        | 3       | 45
         A        | 5       | 13
         B        | 4       | 46",
    );
    let mut node = v_shape(RowsPerMatch::One);
    let ext = with_prev_and_first_price(&node);
    let price = col("price", &ext).unwrap();
    let rises = binary(price.clone(), Op::Gt, col("__prev_0", &ext).unwrap(), &ext).unwrap();
    let capped = binary(price, Op::LtEq, col("__nav_0", &ext).unwrap(), &ext).unwrap();
    node.conditions[2] = Some(Condition {
        expr: binary(rises, Op::And, capped, &ext).unwrap(),
        reads: vec![Navigation {
            kind: MeasureKind::First {
                vars: Some(1 << 1),
                col: 2,
                offset: 0,
                shift: -1,
            },
            running: true,
            data_type: DataType::Int64,
        }],
    });
    node.measures[0].reads[0].kind = MeasureKind::First {
        vars: Some(1 << 0),
        col: 1,
        offset: 0,
        shift: -1,
    };
    assert_eq!(node.history(), 1);
    let whole = run(&node, &data, 100);
    // A: 12 | 12 11 10 11 (13 passes the 12 before the fall); B: 50 | 50 40 45 46.
    assert_eq!(
        whole.1,
        vec!["A | 0 | 10 | 1 | up | 1", "B | 0 | 40 | 2 | up | 1"]
    );
    for cut in 1..data.num_rows() {
        assert_eq!(run(&node, &data, cut), whole, "cut {cut}");
    }
}

/// `NEXT` over rows that arrive in batches: a row whose condition reads the next row is
/// classified once it has arrived, and a match whose measure reads the row after it is shown
/// then; at the end of the input the next row is NULL.
#[test]
fn next_waits_for_the_rows_it_reads() {
    let mut node = v_shape(RowsPerMatch::One);
    node.prev.push(PrevColumn {
        col: 2,
        offset: 1,
        ahead: true,
    });
    let mut ext: Vec<Field> = (node.input_schema.fields().iter())
        .map(|f| f.as_ref().clone())
        .collect();
    ext.push(Field::new("__prev_0", DataType::Int64, true));
    ext.push(Field::new("__prev_1", DataType::Int64, true));
    let ext = Arc::new(Schema::new(ext));
    // up AS price > PREV(price) AND NEXT(price) > 0: the last row has no next one.
    let price = col("price", &ext).unwrap();
    let rises = binary(price, Op::Gt, col("__prev_0", &ext).unwrap(), &ext).unwrap();
    let zero = Arc::new(datafusion::physical_expr::expressions::Literal::new(
        datafusion::common::ScalarValue::Int64(Some(0)),
    ));
    let followed = binary(col("__prev_1", &ext).unwrap(), Op::Gt, zero, &ext).unwrap();
    node.conditions[2] = Some(Condition {
        expr: binary(rises, Op::And, followed, &ext).unwrap(),
        reads: Vec::new(),
    });
    // The first measure: NEXT(LAST(up.price)), the price after the last rise.
    node.measures[0].reads[0].kind = MeasureKind::Last {
        vars: Some(1 << 2),
        col: 2,
        offset: 0,
        shift: 1,
    };
    let whole = run(&node, &ticks(), 100);
    // A: 12 | 11 10 | 11 13, then 12; B: 50 | 40 | 45, as 46 is last (no next: not up).
    assert_eq!(
        whole.1,
        vec!["A | 12 | 10 | 2 | up | 1", "B | 46 | 40 | 1 | up | 1"]
    );
    // Before the end, B's 46 may yet be followed by a row that makes it a rise.
    assert_eq!(whole.0, vec!["A | 12 | 10 | 2 | up | 1"]);
    for cut in 1..ticks().num_rows() {
        assert_eq!(run(&node, &ticks(), cut), whole, "cut {cut}");
    }
}

#[test]
fn within_decides_an_attempt_once_a_row_past_the_bound_arrives() {
    // Within 4 units of t (t - first t < 4, open at its end as Flink's): A's first V may
    // take t 1..4 only (12 11 10 11: one rising row), then t 5..7 (13 12 14) is a second;
    // B's t 1..4 fits whole. The answers do not depend on how the rows are cut.
    let mut node = v_shape(RowsPerMatch::One);
    node.within = Some((4, "4".into()));
    let whole = run(&node, &ticks(), 100);
    assert_eq!(
        whole.1,
        vec![
            "A | 1 | 10 | 1 | up | 1",
            "A | 5 | 12 | 1 | up | 2",
            "B | 1 | 40 | 2 | up | 1"
        ]
    );
    for cut in 1..ticks().num_rows() {
        assert_eq!(run(&node, &ticks(), cut), whole, "cut {cut}");
    }
    // While streaming, A's first match is decided by the row at t 5 (1 + 4: past), not by
    // a row that stops the rise; the others wait for a row past their bound.
    assert_eq!(whole.0, vec!["A | 1 | 10 | 1 | up | 1"]);
}

#[test]
fn an_attempt_waiting_for_rows_checks_each_row_once() {
    // `down AS price < PREV(price) AND price < FIRST(strt.price)` reads the match so far,
    // so it is checked while matching. A falling run of 200 rows arriving one per batch:
    // the attempt at its first row waits for more rows after each batch; run again, it
    // answers the checks it made before from its replay, so each row is checked once —
    // not once per batch the attempt spans (about 20,000 checks).
    let mut node = bounded_v_shape(RowsPerMatch::One);
    let (Some(up), Some(down)) = (node.conditions[2].clone(), node.conditions[1].clone()) else {
        panic!("the V shape defines down and up");
    };
    let ext = with_prev_and_first_price(&node);
    let below_start = binary(
        col("price", &ext).unwrap(),
        Op::Lt,
        col("__nav_0", &ext).unwrap(),
        &ext,
    )
    .unwrap();
    node.conditions[1] = Some(Condition {
        expr: binary(down.expr, Op::And, below_start, &ext).unwrap(),
        reads: up.reads.clone(),
    });
    let mut op = MatchRecognizeOp::new(&node).unwrap();
    let mut lines = String::from("sym:utf8 | t:int64 | price:int64\n");
    for t in 0..200 {
        lines.push_str(&format!("A | {t} | {}\n", 1000 - t));
    }
    lines.push_str("A | 200 | 900\n");
    let (_, all) = feed(&mut op, &node, &from_pretty(&lines), 1);
    assert_eq!(all, vec!["A | 0 | 801 | 1 | up | 1"]);
    let evaluated = op.evaluated.load(std::sync::atomic::Ordering::Relaxed);
    assert!(evaluated <= 2 * 201, "{evaluated} conditions evaluated");
}

#[test]
fn partitions_matched_on_several_threads_give_the_rows_of_one() {
    // 4,000 ticks of 40 symbols in one batch (each a random walk), matched with the
    // partitions split over four threads and on one: the same rows, in the same order,
    // batch after batch.
    let mut lines = String::from("sym:utf8 | t:int64 | price:int64\n");
    let mut seed = 7u64;
    let mut prices = [100i64; 40];
    for t in 0..4000 {
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let k = t % 40;
        prices[k] += (seed >> 33) as i64 % 7 - 3;
        lines.push_str(&format!("S{k} | {t} | {}\n", prices[k]));
    }
    let data = from_pretty(&lines);
    let node = bounded_v_shape(RowsPerMatch::All { unmatched: true });
    let rows_of = |threads: usize| {
        let mut op = MatchRecognizeOp::new(&node).unwrap();
        op.threads = threads;
        let mut out = Vec::new();
        for cut in [(0, 3000), (3000, 1000)] {
            let part = data.slice(cut.0, cut.1);
            let input = change::attach(
                &node.input_schema,
                part.columns().to_vec(),
                change::constant(change::INSERT, part.num_rows()),
            )
            .unwrap();
            out.push(to_rows(&op.on_data(0, input).unwrap()));
        }
        out.push(to_rows(&op.finish().unwrap()));
        out
    };
    let one = rows_of(1);
    assert!(
        one[0].len() > 1000,
        "{} rows from the first batch",
        one[0].len()
    );
    assert_eq!(rows_of(4), one);
}
