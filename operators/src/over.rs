//! Window functions (`OVER (PARTITION BY ... ORDER BY ... ROWS/RANGE ...)`, running
//! aggregates, `LAG`/`LEAD`, ranking) over a changelog.
//!
//! Each partition keeps its live rows, sorted by the window's ORDER BY, with the results
//! last emitted for them. When a batch touches a partition, the partition is sorted and
//! DataFusion's window expressions evaluate over it (the same code an ad-hoc query runs);
//! the partition's previous result rows are retracted and the new ones inserted, and
//! unchanged rows cancel out before anything is emitted. An insert at the end of a running
//! sum therefore emits one row, while one in the middle re-emits the rows after it — as the
//! answer changed. Cost per touched partition is its size.
//!
//! Window functions that read a bounded number of earlier rows and no later one (`lag(x,
//! k)`, aggregates over `ROWS BETWEEN n PRECEDING AND CURRENT ROW`: the node's `lookback`)
//! take a shortcut when a batch only inserts rows that sort after every row of their
//! partition, as rows arriving in time order do: only those rows and the `lookback` rows
//! before them are evaluated, and only the new rows' results are emitted, so a row costs
//! the same whatever the partition's size. Rows are kept in chunks merged as a binary
//! counter carries (each row is copied O(log n) times), so appending never copies the
//! whole partition either. The rows themselves stay (a later delete or out-of-order row
//! needs them).

use crate::{change, NodeSpec, Operator};
use brook_common::{brook_err, Result};
use datafusion::arrow::array::{Int8Array, UInt32Array};
use datafusion::arrow::compute::{concat_batches, lexsort_to_indices, SortColumn};
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::arrow::row::{RowConverter, SortField};
use datafusion::common::HashMap;
use datafusion::physical_expr::window::WindowExpr;
use datafusion::physical_expr::PhysicalExpr;
use std::fmt;
use std::sync::Arc;

/// Plan node of window functions sharing one PARTITION BY.
#[derive(Debug)]
pub struct OverNode {
    /// The window expressions (same PARTITION BY, each with its ORDER BY and frame).
    pub exprs: Vec<Arc<dyn WindowExpr>>,
    /// PARTITION BY expressions over the input.
    pub partition_by: Vec<Arc<dyn PhysicalExpr>>,
    /// Input schema.
    pub input_schema: SchemaRef,
    /// Output schema: the input's columns, then one per window expression.
    pub schema: SchemaRef,
    /// How many earlier rows of its partition the window functions read for a row, when
    /// that is bounded and no later row changes a row's result (see the module's comment).
    pub lookback: Option<usize>,
}

impl fmt::Display for OverNode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<String> = self.exprs.iter().map(|e| e.name().to_string()).collect();
        match self.lookback {
            Some(k) => write!(
                f,
                "Over: [{}] state=live rows per partition (rows after the last evaluated \
                 with the {k} before them)",
                names.join(", ")
            ),
            None => write!(
                f,
                "Over: [{}] state=live rows per partition (re-evaluated when touched)",
                names.join(", ")
            ),
        }
    }
}

impl NodeSpec for OverNode {
    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }
    fn updating(&self) -> bool {
        true
    }
    fn instantiate(&self) -> Result<Box<dyn Operator>> {
        Ok(Box::new(OverOp::new(self)?))
    }
}

/// A partition's live rows sorted by the window's ORDER BY, each with the window results
/// last emitted for it (the input's columns, then the window columns), in chunks whose
/// sizes fall from first to last.
#[derive(Default)]
struct Partition {
    chunks: Vec<RecordBatch>,
}

impl Partition {
    fn bytes(&self) -> usize {
        self.chunks.iter().map(|c| c.get_array_memory_size()).sum()
    }

    /// Append `chunk`, merging the last two chunks while the newer is at least half the
    /// older.
    fn push(&mut self, chunk: RecordBatch) -> Result<()> {
        self.chunks.push(chunk);
        while let [.., older, newer] = self.chunks.as_slice() {
            if newer.num_rows() * 2 < older.num_rows() {
                break;
            }
            let merged = concat_batches(&older.schema(), [older, newer])?;
            self.chunks.truncate(self.chunks.len() - 2);
            self.chunks.push(merged);
        }
        Ok(())
    }

    /// The last `n` rows (fewer when the partition has fewer), in order.
    fn last_rows(&self, n: usize, schema: &SchemaRef) -> Result<RecordBatch> {
        let mut parts = Vec::new();
        let mut wanted = n;
        for c in self.chunks.iter().rev() {
            if wanted == 0 {
                break;
            }
            let take = wanted.min(c.num_rows());
            parts.push(c.slice(c.num_rows() - take, take));
            wanted -= take;
        }
        parts.reverse();
        Ok(concat_batches(schema, &parts)?)
    }

    /// Every row, in one batch.
    fn all(&self, schema: &SchemaRef) -> Result<RecordBatch> {
        Ok(concat_batches(schema, &self.chunks)?)
    }
}

struct OverOp {
    exprs: Vec<Arc<dyn WindowExpr>>,
    partition_by: Vec<Arc<dyn PhysicalExpr>>,
    input_schema: SchemaRef,
    schema: SchemaRef,
    lookback: Option<usize>,
    /// Row encoding of partition keys (`None`: one partition, no PARTITION BY).
    keys: Option<RowConverter>,
    /// Row encoding of whole input rows (to find the row a delete names).
    rows: RowConverter,
    /// Row encoding of the ORDER BY keys in their order (`None` without ORDER BY: a
    /// partition is in arrival order).
    order: Option<RowConverter>,
    partitions: HashMap<Box<[u8]>, Partition>,
    /// Bytes of all partitions, kept up to date as partitions change (statistics read it
    /// after every round, so it must not cost a walk over all partitions).
    bytes: usize,
    /// Rows given to the window functions so far (what the shortcut saves shows here).
    evaluated: u64,
}

impl OverOp {
    fn new(node: &OverNode) -> Result<Self> {
        let key_types = node
            .partition_by
            .iter()
            .map(|e| Ok(SortField::new(e.data_type(&node.input_schema)?)))
            .collect::<Result<Vec<_>>>()?;
        let all = node
            .input_schema
            .fields()
            .iter()
            .map(|f| SortField::new(f.data_type().clone()))
            .collect();
        let order_fields = match node.exprs.first() {
            Some(e) => e
                .order_by()
                .iter()
                .map(|o| {
                    Ok(SortField::new_with_options(
                        o.expr.data_type(&node.input_schema)?,
                        o.options,
                    ))
                })
                .collect::<Result<Vec<_>>>()?,
            None => Vec::new(),
        };
        Ok(OverOp {
            exprs: node.exprs.clone(),
            partition_by: node.partition_by.clone(),
            input_schema: node.input_schema.clone(),
            schema: node.schema.clone(),
            lookback: node.lookback,
            keys: (!key_types.is_empty())
                .then(|| RowConverter::new(key_types))
                .transpose()?,
            rows: RowConverter::new(all)?,
            order: (!order_fields.is_empty())
                .then(|| RowConverter::new(order_fields))
                .transpose()?,
            partitions: HashMap::new(),
            bytes: 0,
            evaluated: 0,
        })
    }

    /// `rows` sorted by the window's ORDER BY (ties in their order: the sort is stable).
    fn sorted(&self, rows: &RecordBatch) -> Result<RecordBatch> {
        let Some(first) = self.exprs.first() else {
            return Ok(rows.clone());
        };
        let order = first.order_by();
        if order.is_empty() || rows.num_rows() < 2 {
            return Ok(rows.clone());
        }
        let mut columns = order
            .iter()
            .map(|o| {
                Ok(SortColumn {
                    values: o.expr.evaluate(rows)?.into_array(rows.num_rows())?,
                    options: Some(o.options),
                })
            })
            .collect::<Result<Vec<_>>>()?;
        columns.push(SortColumn {
            values: Arc::new(UInt32Array::from_iter_values(0..rows.num_rows() as u32)),
            options: None,
        });
        let idx = lexsort_to_indices(&columns, None)?;
        Ok(datafusion::arrow::compute::take_record_batch(rows, &idx)?)
    }

    /// Sorted rows with the window columns.
    fn evaluate(&mut self, sorted: &RecordBatch) -> Result<RecordBatch> {
        let mut cols = sorted.columns().to_vec();
        for e in &self.exprs {
            if e.order_by() != self.exprs[0].order_by() {
                return Err(brook_err!(
                    Unsupported,
                    "window functions with different ORDER BY in one continuous query"
                ));
            }
            cols.push(e.evaluate(sorted)?);
        }
        self.evaluated += sorted.num_rows() as u64;
        Ok(RecordBatch::try_new(self.schema.clone(), cols)?)
    }

    /// The input columns of result rows.
    fn input_part(&self, results: &RecordBatch) -> Result<RecordBatch> {
        let n = self.input_schema.fields().len();
        Ok(RecordBatch::try_new(
            self.input_schema.clone(),
            results.columns()[..n].to_vec(),
        )?)
    }

    /// Whether every row of `new` (sorted) sorts at or after the partition's last row.
    fn after_last(&self, p: &Partition, new: &RecordBatch) -> Result<bool> {
        let Some(conv) = &self.order else {
            return Ok(true);
        };
        let Some(last) = p.chunks.last().filter(|c| c.num_rows() > 0) else {
            return Ok(true);
        };
        let last = self.input_part(&last.slice(last.num_rows() - 1, 1))?;
        let keys = |b: &RecordBatch| -> Result<_> {
            let cols = self.exprs[0]
                .order_by()
                .iter()
                .map(|o| Ok(o.expr.evaluate(b)?.into_array(b.num_rows())?))
                .collect::<Result<Vec<_>>>()?;
            Ok(conv.convert_columns(&cols)?)
        };
        let (last, first) = (keys(&last)?, keys(&new.slice(0, 1))?);
        Ok(first.row(0) >= last.row(0))
    }

    /// The shortcut: `new` (sorted, after every row of `p`) evaluated with the lookback
    /// rows before it; returns the new rows' results.
    fn append(
        &mut self,
        p: &mut Partition,
        new: &RecordBatch,
        lookback: usize,
    ) -> Result<RecordBatch> {
        let before = self.input_part(&p.last_rows(lookback, &self.schema)?)?;
        let window = concat_batches(&self.input_schema, [&before, new])?;
        let results = self.evaluate(&window)?;
        let fresh = results.slice(before.num_rows(), new.num_rows());
        p.push(fresh.clone())?;
        Ok(fresh)
    }

    fn with_kind(&self, b: &RecordBatch, kind: i8) -> Result<RecordBatch> {
        change::attach(
            &self.schema,
            b.columns().to_vec(),
            Arc::new(Int8Array::from_value(kind, b.num_rows())),
        )
    }

    /// A partition's change by `ins` and `del` (rows of `data`); the changed rows to emit.
    fn change_partition(
        &mut self,
        p: &mut Partition,
        data: &RecordBatch,
        ins: &[u32],
        del: &[u32],
    ) -> Result<Option<RecordBatch>> {
        if del.is_empty() && !p.chunks.is_empty() {
            if let Some(k) = self.lookback {
                let new = self.sorted(&take_rows(data, ins)?)?;
                if self.after_last(p, &new)? {
                    let fresh = self.append(p, &new, k)?;
                    return Ok(Some(self.with_kind(&fresh, change::INSERT)?));
                }
            }
        }
        let old = (!p.chunks.is_empty())
            .then(|| p.all(&self.schema))
            .transpose()?;
        let mut rows = match &old {
            Some(o) => self.input_part(o)?,
            None => RecordBatch::new_empty(self.input_schema.clone()),
        };
        // Inserts first: a batch may delete a row it inserts.
        if !ins.is_empty() {
            rows = concat_batches(&self.input_schema, &[rows, take_rows(data, ins)?])?;
        }
        if !del.is_empty() {
            let gone = take_rows(data, del)?;
            rows = remove_rows(&self.rows, &rows, &gone)?;
        }
        let new = if rows.num_rows() > 0 {
            let sorted = self.sorted(&rows)?;
            Some(self.evaluate(&sorted)?)
        } else {
            None
        };
        let mut parts = Vec::new();
        if let Some(o) = &old {
            parts.push(self.with_kind(o, change::DELETE)?);
        }
        if let Some(nb) = &new {
            parts.push(self.with_kind(nb, change::INSERT)?);
        }
        p.chunks = new.into_iter().collect();
        if parts.is_empty() {
            return Ok(None);
        }
        let all = concat_batches(&change::with_change_field(&self.schema), &parts)?;
        let c = change::consolidate(&all)?;
        Ok((c.num_rows() > 0).then_some(c))
    }
}

impl Operator for OverOp {
    fn on_data(&mut self, _port: usize, batch: RecordBatch) -> Result<Vec<RecordBatch>> {
        let kinds = change::kinds(&batch)?.clone();
        let data = change::strip(&batch)?;
        let n = data.num_rows();
        let key_rows = crate::key_rows(self.keys.as_ref(), &self.partition_by, &data)?;
        // Rows of the batch per partition, inserts and deletes apart.
        let mut touched: Vec<Box<[u8]>> = Vec::new();
        let mut changes: HashMap<Box<[u8]>, InsertsDeletes> = HashMap::new();
        for i in 0..n {
            let key: Box<[u8]> = match &key_rows {
                Some(r) => r.row(i).data().into(),
                None => Box::new([]),
            };
            let e = changes.entry(key.clone()).or_insert_with(|| {
                touched.push(key);
                (Vec::new(), Vec::new())
            });
            if kinds.value(i) == change::DELETE {
                e.1.push(i as u32);
            } else {
                e.0.push(i as u32);
            }
        }
        let mut out = Vec::new();
        for key in touched {
            let (ins, del) = changes.remove(&key).unwrap_or_default();
            let mut p = self.partitions.remove(&key).unwrap_or_default();
            self.bytes = self.bytes.saturating_sub(p.bytes());
            if let Some(c) = self.change_partition(&mut p, &data, &ins, &del)? {
                out.push(c);
            }
            if !p.chunks.is_empty() {
                self.bytes += p.bytes();
                self.partitions.insert(key, p);
            }
        }
        Ok(out)
    }

    fn state_size(&self) -> usize {
        self.bytes
    }
}

/// Rows of a batch (by index) inserted into and deleted from one partition.
type InsertsDeletes = (Vec<u32>, Vec<u32>);

fn take_rows(b: &RecordBatch, idx: &[u32]) -> Result<RecordBatch> {
    let idx = UInt32Array::from(idx.to_vec());
    Ok(datafusion::arrow::compute::take_record_batch(b, &idx)?)
}

/// `rows` without one copy of each row of `gone`.
fn remove_rows(conv: &RowConverter, rows: &RecordBatch, gone: &RecordBatch) -> Result<RecordBatch> {
    let have = conv.convert_columns(rows.columns())?;
    let del = conv.convert_columns(gone.columns())?;
    let mut pending: HashMap<&[u8], usize> = HashMap::new();
    for i in 0..gone.num_rows() {
        *pending.entry(del.row(i).data()).or_insert(0) += 1;
    }
    let mut keep = Vec::with_capacity(rows.num_rows());
    for i in 0..rows.num_rows() {
        match pending.get_mut(have.row(i).data()) {
            Some(n) if *n > 0 => *n -= 1,
            _ => keep.push(i as u32),
        }
    }
    if pending.values().any(|n| *n > 0) {
        return Err(brook_err!(
            Internal,
            "window input retracted a row it never inserted"
        ));
    }
    take_rows(rows, &keep)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{from_pretty, to_sorted_rows};
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
            lookback: None,
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

    /// `lag(v, 2)` and `sum(v) OVER (ROWS BETWEEN 1 PRECEDING AND CURRENT ROW)`, per k
    /// ordered by t, with the lookback the planner gives them.
    fn lag_and_pairs(schema: &SchemaRef) -> OverNode {
        use datafusion::logical_expr::{
            WindowFrameBound, WindowFrameUnits, WindowFunctionDefinition,
        };
        use datafusion::physical_expr::expressions::lit;
        use datafusion::physical_plan::windows::create_window_expr;
        let order = [PhysicalSortExpr {
            expr: col("t", schema).unwrap(),
            options: SortOptions::default(),
        }];
        let k = [col("k", schema).unwrap()];
        let lag =
            create_window_expr(
                &WindowFunctionDefinition::WindowUDF(
                    datafusion::functions_window::lead_lag::lag_udwf(),
                ),
                "lag2".into(),
                &[col("v", schema).unwrap(), lit(2i64)],
                &k,
                &order,
                Arc::new(WindowFrame::new(Some(false))),
                schema.clone(),
                false,
                false,
                None,
            )
            .unwrap();
        let pairs = create_window_expr(
            &WindowFunctionDefinition::AggregateUDF(sum_udaf()),
            "pairs".into(),
            &[col("v", schema).unwrap()],
            &k,
            &order,
            Arc::new(WindowFrame::new_bounds(
                WindowFrameUnits::Rows,
                WindowFrameBound::Preceding(datafusion::scalar::ScalarValue::UInt64(Some(1))),
                WindowFrameBound::CurrentRow,
            )),
            schema.clone(),
            false,
            false,
            None,
        )
        .unwrap();
        let mut fields: Vec<Field> = schema.fields().iter().map(|f| f.as_ref().clone()).collect();
        fields.push(Field::new("lag2", DataType::Int64, true));
        fields.push(Field::new("pairs", DataType::Int64, true));
        OverNode {
            exprs: vec![lag, pairs],
            partition_by: k.to_vec(),
            input_schema: schema.clone(),
            schema: Arc::new(Schema::new(fields)),
            lookback: Some(2),
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
        // Each batch puts 5 rows into each of 2 partitions, evaluated with 2 rows before
        // them (the first batch has none before it).
        assert!(
            op.evaluated <= 100 * 2 * (5 + 2),
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
        let finals: Vec<(&str, i64, i64, i8)> =
            live.iter().map(|(k, t, v)| (*k, *t, *v, 1)).collect();
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
}
