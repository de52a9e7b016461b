//! Inner equi-join of two changelogs (a symmetric hash join with retraction).
//!
//! Each side keeps its live rows indexed by join key. A change on one side joins with the
//! other side's live rows (emitting joined rows with the change's kind), then updates its
//! own side. So inserts and deletes on either side — a stream row arriving, a table row
//! updated — keep the result equal to the join of the two inputs' current contents.
//!
//! State holds every live row of both inputs: the planner admits a join only when that is
//! bounded by what the SQL reads (at least one side comes from a table or an aggregate),
//! never a join of two unbounded streams without a time bound.

use crate::{change, NodeSpec, Operator};
use brook_common::{BrookError, Result};
use datafusion::arrow::array::{Array, ArrayRef, Int8Array, UInt32Array};
use datafusion::arrow::compute::{interleave, take};
use datafusion::arrow::datatypes::{DataType, SchemaRef};
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::arrow::row::{RowConverter, Rows, SortField};
use datafusion::physical_expr::PhysicalExpr;
use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

/// Plan node of an inner equi-join.
#[derive(Debug)]
pub struct JoinNode {
    /// Key expressions over the left input.
    pub left_keys: Vec<Arc<dyn PhysicalExpr>>,
    /// Key expressions over the right input (same count and types as the left).
    pub right_keys: Vec<Arc<dyn PhysicalExpr>>,
    /// Extra (non-equi) condition over the joined row.
    pub filter: Option<Arc<dyn PhysicalExpr>>,
    /// Left input schema.
    pub left_schema: SchemaRef,
    /// Right input schema.
    pub right_schema: SchemaRef,
    /// Output schema: left columns, then right columns.
    pub schema: SchemaRef,
    /// Whether either input retracts.
    pub updating: bool,
}

impl fmt::Display for JoinNode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let pairs: Vec<String> = self
            .left_keys
            .iter()
            .zip(&self.right_keys)
            .map(|(l, r)| format!("{l} = {r}"))
            .collect();
        write!(f, "Join: inner on [{}]", pairs.join(", "))?;
        if let Some(c) = &self.filter {
            write!(f, " filter={c}")?;
        }
        write!(f, " state=live rows of both inputs by key")
    }
}

impl NodeSpec for JoinNode {
    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }
    fn updating(&self) -> bool {
        self.updating
    }
    fn instantiate(&self) -> Result<Box<dyn Operator>> {
        let key_types =
            |schema: &SchemaRef, keys: &[Arc<dyn PhysicalExpr>]| -> Result<Vec<DataType>> {
                keys.iter().map(|k| Ok(k.data_type(schema)?)).collect()
            };
        let left_types = key_types(&self.left_schema, &self.left_keys)?;
        if left_types != key_types(&self.right_schema, &self.right_keys)? {
            return Err(BrookError::internal("join keys of different types"));
        }
        let left_types: Vec<SortField> = left_types.into_iter().map(SortField::new).collect();
        let all = |schema: &SchemaRef| -> Vec<SortField> {
            schema
                .fields()
                .iter()
                .map(|f| SortField::new(f.data_type().clone()))
                .collect()
        };
        Ok(Box::new(JoinOp {
            keys: [self.left_keys.clone(), self.right_keys.clone()],
            key_rows: RowConverter::new(left_types)?,
            full_rows: [
                RowConverter::new(all(&self.left_schema))?,
                RowConverter::new(all(&self.right_schema))?,
            ],
            filter: self.filter.clone(),
            schema: self.schema.clone(),
            sides: [Side::default(), Side::default()],
        }))
    }
}

/// One live row of a side.
struct Entry {
    /// The whole row, row-encoded (to find the row a delete names).
    full: Box<[u8]>,
    /// Where its values are: (batch, row) in the side's batches.
    at: (usize, usize),
    /// How many copies are live.
    count: i64,
}

#[derive(Default)]
struct Side {
    /// Batches holding rows the side has seen (data columns only).
    batches: Vec<RecordBatch>,
    /// Join key (row-encoded) → live rows with that key.
    index: HashMap<Box<[u8]>, Vec<Entry>>,
    /// Bytes held, for statistics.
    bytes: usize,
}

struct JoinOp {
    keys: [Vec<Arc<dyn PhysicalExpr>>; 2],
    key_rows: RowConverter,
    full_rows: [RowConverter; 2],
    filter: Option<Arc<dyn PhysicalExpr>>,
    schema: SchemaRef,
    sides: [Side; 2],
}

impl JoinOp {
    fn encode_keys(&self, side: usize, batch: &RecordBatch) -> Result<(Rows, Vec<bool>)> {
        let n = batch.num_rows();
        let cols: Vec<ArrayRef> = self.keys[side]
            .iter()
            .map(|k| Ok(k.evaluate(batch)?.into_array(n)?))
            .collect::<Result<_>>()?;
        // SQL equality: a NULL key matches nothing.
        let mut valid = vec![true; n];
        for c in &cols {
            if c.null_count() > 0 {
                for (i, v) in valid.iter_mut().enumerate() {
                    *v &= c.is_valid(i);
                }
            }
        }
        Ok((self.key_rows.convert_columns(&cols)?, valid))
    }
}

impl Operator for JoinOp {
    fn on_data(&mut self, port: usize, batch: RecordBatch) -> Result<Vec<RecordBatch>> {
        if port > 1 {
            return Err(BrookError::internal("join has two inputs"));
        }
        let other = 1 - port;
        let kinds = change::kinds(&batch)?.clone();
        let data = change::strip(&batch)?;
        let (keys, valid) = self.encode_keys(port, &data)?;

        // 1. Join the changes with the other side's live rows.
        let mut mine: Vec<u32> = Vec::new();
        let mut theirs: Vec<(usize, usize)> = Vec::new();
        let mut out_kinds: Vec<i8> = Vec::new();
        for i in 0..data.num_rows() {
            if !valid[i] {
                continue;
            }
            if let Some(entries) = self.sides[other].index.get(keys.row(i).data()) {
                for e in entries {
                    for _ in 0..e.count.max(0) {
                        mine.push(i as u32);
                        theirs.push(e.at);
                        out_kinds.push(kinds.value(i));
                    }
                }
            }
        }
        let mut out = Vec::new();
        if !mine.is_empty() {
            let idx = UInt32Array::from(mine);
            let mine_cols: Vec<ArrayRef> = data
                .columns()
                .iter()
                .map(|c| Ok(take(c.as_ref(), &idx, None)?))
                .collect::<Result<_>>()?;
            let other_side = &self.sides[other];
            let width = other_side
                .batches
                .first()
                .map(|b| b.num_columns())
                .unwrap_or(0);
            let mut their_cols = Vec::with_capacity(width);
            for c in 0..width {
                let arrays: Vec<&dyn Array> = other_side
                    .batches
                    .iter()
                    .map(|b| b.column(c).as_ref())
                    .collect();
                their_cols.push(interleave(&arrays, &theirs)?);
            }
            let columns = if port == 0 {
                mine_cols.into_iter().chain(their_cols).collect()
            } else {
                their_cols.into_iter().chain(mine_cols).collect()
            };
            let joined =
                change::attach(&self.schema, columns, Arc::new(Int8Array::from(out_kinds)))?;
            let joined = match &self.filter {
                Some(f) => {
                    let mask = f.evaluate(&joined)?.into_array(joined.num_rows())?;
                    if mask.data_type() != &DataType::Boolean {
                        return Err(BrookError::internal("join condition is not boolean"));
                    }
                    let mask = mask
                        .as_any()
                        .downcast_ref::<datafusion::arrow::array::BooleanArray>()
                        .ok_or_else(|| BrookError::internal("join condition is not boolean"))?
                        .clone();
                    datafusion::arrow::compute::filter_record_batch(&joined, &mask)?
                }
                None => joined,
            };
            if joined.num_rows() > 0 {
                out.push(joined);
            }
        }

        // 2. Apply the changes to this side's live rows.
        let full = self.full_rows[port].convert_columns(data.columns())?;
        let side = &mut self.sides[port];
        let batch_no = side.batches.len();
        let mut stored = false;
        for i in 0..data.num_rows() {
            if !valid[i] {
                continue;
            }
            let row = full.row(i).data();
            let entries = side.index.entry(keys.row(i).data().into()).or_default();
            let found = entries.iter_mut().find(|e| &*e.full == row);
            if kinds.value(i) == change::DELETE {
                match found {
                    Some(e) => e.count -= 1,
                    None => {
                        return Err(BrookError::internal(
                            "join input retracted a row it never inserted",
                        ))
                    }
                }
                entries.retain(|e| e.count > 0);
            } else {
                match found {
                    Some(e) => e.count += 1,
                    None => {
                        side.bytes += row.len() + 32;
                        entries.push(Entry {
                            full: row.into(),
                            at: (batch_no, i),
                            count: 1,
                        });
                        stored = true;
                    }
                }
            }
        }
        side.index.retain(|_, v| !v.is_empty());
        if stored {
            side.bytes += data.get_array_memory_size();
            side.batches.push(data);
        }
        Ok(out)
    }

    fn state_size(&self) -> usize {
        self.sides.iter().map(|s| s.bytes).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{from_pretty, to_sorted_rows};
    use datafusion::arrow::datatypes::Schema;
    use datafusion::physical_expr::expressions::col;

    fn node(l: &RecordBatch, r: &RecordBatch) -> JoinNode {
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
        JoinNode {
            left_keys: vec![col("k", &ls).unwrap()],
            right_keys: vec![col("k2", &rs).unwrap()],
            filter: None,
            left_schema: ls,
            right_schema: rs,
            schema: Arc::new(Schema::new(fields)),
            updating: true,
        }
    }

    #[test]
    fn joins_both_ways_and_retracts() {
        let orders = from_pretty(
            "k:text | amt:int64 | _brook_op:int8
             a      | 1         | 1
             b      | 2         | 1
             NULL   | 3         | 1",
        );
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
}
