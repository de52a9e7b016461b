//! `unnest` of list columns: each row becomes one row per list element, the other columns
//! repeated (a top-k sketch's items, `unnest(array)` in SELECT or FROM). Several lists of a
//! row unnest in step (the keys and the values of `jsonb_each`), the shorter padded with
//! NULLs, as DataFusion's unnest does.
//!
//! Stateless: a change to a row is the same change to each of its unnested rows, so a
//! retracted list retracts its elements. Written here because DataFusion's unnest kernel is
//! private to its `UnnestExec`; this covers the depth-1 lists the planner admits.

use crate::{change, NodeSpec, Operator};
use brook_common::{brook_err, Result};
use datafusion::arrow::array::{Array, ArrayRef, AsArray, UInt32Array};
use datafusion::arrow::compute::take;
use datafusion::arrow::datatypes::{DataType, SchemaRef};
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::common::NullHandling;
use std::fmt;
use std::sync::Arc;

/// Plan node of an unnest.
#[derive(Debug)]
pub struct UnnestNode {
    /// Input columns holding the lists (one or more, unnested in step).
    pub list_columns: Vec<usize>,
    /// For each output column, the input column it comes from (a list column: its
    /// elements; any other: its value, repeated).
    pub dependencies: Vec<usize>,
    /// What a row whose lists are all NULL or empty gives.
    pub null_handling: NullHandling,
    /// Output schema.
    pub schema: SchemaRef,
    /// Whether the input retracts.
    pub updating: bool,
}

impl fmt::Display for UnnestNode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let columns: Vec<String> = self.list_columns.iter().map(|c| format!("#{c}")).collect();
        write!(f, "Unnest: column{} state=none", columns.join(", "))
    }
}

impl NodeSpec for UnnestNode {
    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }
    fn updating(&self) -> bool {
        self.updating
    }
    fn cut_invariant(&self) -> bool {
        true
    }
    fn instantiate(&self) -> Result<Box<dyn Operator>> {
        Ok(Box::new(UnnestOp {
            list_columns: self.list_columns.clone(),
            dependencies: self.dependencies.clone(),
            null_handling: self.null_handling,
            schema: self.schema.clone(),
        }))
    }
}

struct UnnestOp {
    list_columns: Vec<usize>,
    dependencies: Vec<usize>,
    null_handling: NullHandling,
    schema: SchemaRef,
}

/// Element positions `start..end` of each input row's list; `None` for a NULL list.
type Spans = Vec<Option<(usize, usize)>>;

/// The spans of each row's list, and the lists' element values.
fn spans(lists: &ArrayRef) -> Result<(Spans, ArrayRef)> {
    let spans_of = |offsets: Vec<usize>, valid: &dyn Fn(usize) -> bool| -> Vec<_> {
        (0..offsets.len().saturating_sub(1))
            .map(|i| valid(i).then(|| (offsets[i], offsets[i + 1])))
            .collect()
    };
    match lists.data_type() {
        DataType::List(_) => {
            let l = lists.as_list::<i32>();
            let offsets = l.value_offsets().iter().map(|o| *o as usize).collect();
            Ok((spans_of(offsets, &|i| l.is_valid(i)), l.values().clone()))
        }
        DataType::LargeList(_) => {
            let l = lists.as_list::<i64>();
            let offsets = l.value_offsets().iter().map(|o| *o as usize).collect();
            Ok((spans_of(offsets, &|i| l.is_valid(i)), l.values().clone()))
        }
        other => Err(brook_err!(Internal, "unnest of a {other} column")),
    }
}

impl UnnestOp {
    /// How many output rows input row `row` gives: its longest list's length, or one
    /// placeholder row (all elements NULL) where the null handling keeps a row whose lists
    /// are all NULL or empty.
    fn row_count(&self, lists: &[Spans], row: usize) -> usize {
        let lengths = lists.iter().map(|spans| spans[row].map(|(a, b)| b - a));
        let longest = lengths.clone().flatten().max();
        match longest {
            Some(n) if n > 0 => n,
            // Some list is empty, none has elements.
            Some(_) => usize::from(self.null_handling == NullHandling::PreserveAndExpandEmpty),
            // Every list is NULL.
            None => usize::from(self.null_handling != NullHandling::Drop),
        }
    }
}

impl Operator for UnnestOp {
    fn on_data(&mut self, _port: usize, batch: RecordBatch) -> Result<Vec<RecordBatch>> {
        let kinds: ArrayRef = Arc::new(change::kinds(&batch)?.clone());
        let data = change::strip(&batch)?;
        let (lists, values): (Vec<Spans>, Vec<ArrayRef>) = self
            .list_columns
            .iter()
            .map(|&c| spans(data.column(c)))
            .collect::<Result<Vec<_>>>()?
            .into_iter()
            .unzip();
        let mut rows: Vec<u32> = Vec::new();
        let mut elements: Vec<Vec<Option<u32>>> = vec![Vec::new(); lists.len()];
        for row in 0..data.num_rows() {
            for i in 0..self.row_count(&lists, row) {
                rows.push(row as u32);
                for (spans, out) in lists.iter().zip(elements.iter_mut()) {
                    let element = spans[row].and_then(|(a, b)| (a + i < b).then_some(a + i));
                    out.push(element.map(|e| e as u32));
                }
            }
        }
        if rows.is_empty() {
            return Ok(Vec::new());
        }
        let rows = UInt32Array::from(rows);
        let unnested = values
            .iter()
            .zip(elements)
            .map(|(v, e)| Ok(take(v.as_ref(), &UInt32Array::from(e), None)?))
            .collect::<Result<Vec<ArrayRef>>>()?;
        let cols = self
            .dependencies
            .iter()
            .map(|&c| match self.list_columns.iter().position(|l| *l == c) {
                Some(i) => Ok(unnested[i].clone()),
                None => Ok(take(data.column(c).as_ref(), &rows, None)?),
            })
            .collect::<Result<Vec<ArrayRef>>>()?;
        let kinds = take(kinds.as_ref(), &rows, None)?;
        Ok(vec![change::attach(&self.schema, cols, kinds)?])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::to_sorted_rows;
    use datafusion::arrow::array::{Int32Builder, Int8Array, ListBuilder, StringArray};
    use datafusion::arrow::datatypes::{Field, Schema};

    /// `(k text, xs int[])` rows, with their change kinds.
    fn lists(rows: &[(&str, Option<Vec<i32>>, i8)]) -> RecordBatch {
        let mut b = ListBuilder::new(Int32Builder::new());
        for (_, xs, _) in rows {
            match xs {
                Some(xs) => {
                    b.values().append_slice(xs);
                    b.append(true);
                }
                None => b.append(false),
            }
        }
        let list = b.finish();
        let schema = Arc::new(Schema::new(vec![
            Field::new("k", DataType::Utf8, true),
            Field::new("xs", list.data_type().clone(), true),
            change::field(),
        ]));
        let k: StringArray = rows.iter().map(|r| Some(r.0)).collect();
        let kinds = Int8Array::from_iter_values(rows.iter().map(|r| r.2));
        RecordBatch::try_new(schema, vec![Arc::new(k), Arc::new(list), Arc::new(kinds)])
            .expect("batch")
    }

    fn node(null_handling: NullHandling) -> UnnestNode {
        UnnestNode {
            list_columns: vec![1],
            dependencies: vec![0, 1],
            null_handling,
            schema: Arc::new(Schema::new(vec![
                Field::new("k", DataType::Utf8, true),
                Field::new("x", DataType::Int32, true),
            ])),
            updating: true,
        }
    }

    #[test]
    fn each_element_is_a_row_with_its_change_kind() {
        let mut op = node(NullHandling::Drop).instantiate().unwrap();
        let out = op
            .on_data(
                0,
                lists(&[
                    ("a", Some(vec![1, 2]), 1),
                    ("b", None, 1),
                    ("c", Some(vec![]), 1),
                    ("d", Some(vec![3]), -1),
                ]),
            )
            .unwrap();
        assert_eq!(
            to_sorted_rows(&out),
            vec!["a | 1 | 1", "a | 2 | 1", "d | 3 | -1"]
        );
    }

    #[test]
    fn several_lists_unnest_in_step_the_shorter_padded_with_nulls() {
        let batch = lists(&[("a", Some(vec![1, 2]), 1), ("b", None, -1)]);
        // The list column twice over: `xs` beside `ys`, where `ys` is `xs` shifted by one.
        let mut ys = ListBuilder::new(Int32Builder::new());
        ys.values().append_slice(&[7]);
        ys.append(true);
        ys.values().append_slice(&[8, 9]);
        ys.append(true);
        let ys = ys.finish();
        let mut fields: Vec<Field> = batch
            .schema()
            .fields()
            .iter()
            .map(|f| f.as_ref().clone())
            .collect();
        fields.insert(2, Field::new("ys", ys.data_type().clone(), true));
        let mut columns = batch.columns().to_vec();
        columns.insert(2, Arc::new(ys));
        let batch = RecordBatch::try_new(Arc::new(Schema::new(fields)), columns).unwrap();
        let node = UnnestNode {
            list_columns: vec![1, 2],
            dependencies: vec![0, 1, 2],
            null_handling: NullHandling::Drop,
            schema: Arc::new(Schema::new(vec![
                Field::new("k", DataType::Utf8, true),
                Field::new("x", DataType::Int32, true),
                Field::new("y", DataType::Int32, true),
            ])),
            updating: true,
        };
        let out = node.instantiate().unwrap().on_data(0, batch).unwrap();
        assert_eq!(
            to_sorted_rows(&out),
            vec![
                "a | 1 | 7 | 1",
                "a | 2 | NULL | 1",
                "b | NULL | 8 | -1",
                "b | NULL | 9 | -1"
            ]
        );
    }

    #[test]
    fn preserved_nulls_give_a_null_row() {
        let mut op = node(NullHandling::Preserve).instantiate().unwrap();
        let out = op
            .on_data(0, lists(&[("b", None, 1), ("c", Some(vec![]), 1)]))
            .unwrap();
        assert_eq!(to_sorted_rows(&out), vec!["b | NULL | 1"]);
    }
}
