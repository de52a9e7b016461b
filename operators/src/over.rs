//! Window functions (`OVER (PARTITION BY ... ORDER BY ... ROWS/RANGE ...)`, running
//! aggregates, `LAG`/`LEAD`, ranking) over a changelog.
//!
//! Each partition keeps its live rows. When a batch touches a partition, the partition is
//! sorted by the window's ORDER BY and DataFusion's window expressions evaluate over it
//! (the same code an ad-hoc query runs); the partition's previous result rows are retracted
//! and the new ones inserted, and unchanged rows cancel out before anything is emitted. An
//! insert at the end of a running sum therefore emits one row, while one in the middle
//! re-emits the rows after it — as the answer changed. Cost per touched partition is its
//! size, so state and work are bounded by the largest partition.

use crate::{change, NodeSpec, Operator};
use brook_common::{brook_err, Result};
use datafusion::arrow::array::{ArrayRef, Int8Array, UInt32Array};
use datafusion::arrow::compute::{concat_batches, lexsort_to_indices, take, SortColumn};
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
}

impl fmt::Display for OverNode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<String> = self.exprs.iter().map(|e| e.name().to_string()).collect();
        write!(
            f,
            "Over: [{}] state=live rows per partition (re-evaluated when touched)",
            names.join(", ")
        )
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
        let key_types = self
            .partition_by
            .iter()
            .map(|e| Ok(SortField::new(e.data_type(&self.input_schema)?)))
            .collect::<Result<Vec<_>>>()?;
        let all = self
            .input_schema
            .fields()
            .iter()
            .map(|f| SortField::new(f.data_type().clone()))
            .collect();
        Ok(Box::new(OverOp {
            exprs: self.exprs.clone(),
            partition_by: self.partition_by.clone(),
            input_schema: self.input_schema.clone(),
            schema: self.schema.clone(),
            keys: (!key_types.is_empty())
                .then(|| RowConverter::new(key_types))
                .transpose()?,
            rows: RowConverter::new(all)?,
            partitions: HashMap::new(),
            bytes: 0,
        }))
    }
}

/// A partition's live rows and the result rows last emitted for it.
struct Partition {
    rows: RecordBatch,
    emitted: Option<RecordBatch>,
}

struct OverOp {
    exprs: Vec<Arc<dyn WindowExpr>>,
    partition_by: Vec<Arc<dyn PhysicalExpr>>,
    input_schema: SchemaRef,
    schema: SchemaRef,
    /// Row encoding of partition keys (`None`: one partition, no PARTITION BY).
    keys: Option<RowConverter>,
    /// Row encoding of whole input rows (to find the row a delete names).
    rows: RowConverter,
    partitions: HashMap<Box<[u8]>, Partition>,
    /// Bytes of all partitions, kept up to date as partitions change (statistics read it
    /// after every round, so it must not cost a walk over all partitions).
    bytes: usize,
}

/// Bytes a partition holds: its rows and the result rows last emitted.
fn partition_size(p: &Partition) -> usize {
    p.rows.get_array_memory_size()
        + p.emitted
            .as_ref()
            .map(|e| e.get_array_memory_size())
            .unwrap_or(0)
}

impl OverOp {
    /// The partition's rows sorted by the window's ORDER BY, with the window columns.
    fn evaluate(&self, rows: &RecordBatch) -> Result<RecordBatch> {
        let mut sorted = rows.clone();
        if let Some(first) = self.exprs.first() {
            let order = first.order_by();
            if !order.is_empty() && rows.num_rows() > 1 {
                let columns = order
                    .iter()
                    .map(|o| {
                        Ok(SortColumn {
                            values: o.expr.evaluate(rows)?.into_array(rows.num_rows())?,
                            options: Some(o.options),
                        })
                    })
                    .collect::<Result<Vec<_>>>()?;
                let idx = lexsort_to_indices(&columns, None)?;
                let cols = rows
                    .columns()
                    .iter()
                    .map(|c| Ok(take(c.as_ref(), &idx, None)?))
                    .collect::<Result<Vec<ArrayRef>>>()?;
                sorted = RecordBatch::try_new(self.input_schema.clone(), cols)?;
            }
        }
        let mut cols = sorted.columns().to_vec();
        for e in &self.exprs {
            if e.order_by() != self.exprs[0].order_by() {
                return Err(brook_err!(
                    Unsupported,
                    "window functions with different ORDER BY in one continuous query"
                ));
            }
            cols.push(e.evaluate(&sorted)?);
        }
        Ok(RecordBatch::try_new(self.schema.clone(), cols)?)
    }

    fn with_kind(&self, b: &RecordBatch, kind: i8) -> Result<RecordBatch> {
        change::attach(
            &self.schema,
            b.columns().to_vec(),
            Arc::new(Int8Array::from_value(kind, b.num_rows())),
        )
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
            let old = self.partitions.remove(&key);
            if let Some(p) = &old {
                self.bytes = self.bytes.saturating_sub(partition_size(p));
            }
            let mut rows = match &old {
                Some(p) => p.rows.clone(),
                None => RecordBatch::new_empty(self.input_schema.clone()),
            };
            if !del.is_empty() {
                let gone = take_rows(&data, &del)?;
                rows = remove_rows(&self.rows, &rows, &gone)?;
            }
            if !ins.is_empty() {
                rows = concat_batches(&self.input_schema, &[rows, take_rows(&data, &ins)?])?;
            }
            let new = if rows.num_rows() > 0 {
                Some(self.evaluate(&rows)?)
            } else {
                None
            };
            let mut parts = Vec::new();
            if let Some(e) = old.as_ref().and_then(|p| p.emitted.as_ref()) {
                parts.push(self.with_kind(e, change::DELETE)?);
            }
            if let Some(nb) = &new {
                parts.push(self.with_kind(nb, change::INSERT)?);
            }
            if !parts.is_empty() {
                let all = concat_batches(&change::with_change_field(&self.schema), &parts)?;
                let c = change::consolidate(&all)?;
                if c.num_rows() > 0 {
                    out.push(c);
                }
            }
            if rows.num_rows() > 0 {
                let p = Partition { rows, emitted: new };
                self.bytes += partition_size(&p);
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
}
