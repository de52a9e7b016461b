//! `unnest` of one list column: each row becomes one row per list element, the other
//! columns repeated (a top-k sketch's items, `unnest(array)` in SELECT or FROM).
//!
//! Stateless: a change to a row is the same change to each of its unnested rows, so a
//! retracted list retracts its elements. Written here because DataFusion's unnest kernel is
//! private to its `UnnestExec`; this covers the one-list, depth-1 case the planner admits.

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
    /// Input column holding the lists.
    pub list_column: usize,
    /// For each output column, the input column it comes from (the list column: its
    /// elements; any other: its value, repeated).
    pub dependencies: Vec<usize>,
    /// What NULL and empty lists give.
    pub null_handling: NullHandling,
    /// Output schema.
    pub schema: SchemaRef,
    /// Whether the input retracts.
    pub updating: bool,
}

impl fmt::Display for UnnestNode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Unnest: column#{} state=none", self.list_column)
    }
}

impl NodeSpec for UnnestNode {
    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }
    fn updating(&self) -> bool {
        self.updating
    }
    fn instantiate(&self) -> Result<Box<dyn Operator>> {
        Ok(Box::new(UnnestOp {
            list_column: self.list_column,
            dependencies: self.dependencies.clone(),
            null_handling: self.null_handling,
            schema: self.schema.clone(),
        }))
    }
}

struct UnnestOp {
    list_column: usize,
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

impl Operator for UnnestOp {
    fn on_data(&mut self, _port: usize, batch: RecordBatch) -> Result<Vec<RecordBatch>> {
        let kinds: ArrayRef = Arc::new(change::kinds(&batch)?.clone());
        let data = change::strip(&batch)?;
        let (spans, values) = spans(data.column(self.list_column))?;
        let mut rows: Vec<u32> = Vec::new();
        let mut elements: Vec<Option<u32>> = Vec::new();
        for (row, span) in spans.iter().enumerate() {
            let placeholder = match span {
                None => self.null_handling != NullHandling::Drop,
                Some((a, b)) if a == b => {
                    self.null_handling == NullHandling::PreserveAndExpandEmpty
                }
                Some(_) => false,
            };
            if placeholder {
                rows.push(row as u32);
                elements.push(None);
            }
            if let Some((a, b)) = span {
                for e in *a..*b {
                    rows.push(row as u32);
                    elements.push(Some(e as u32));
                }
            }
        }
        if rows.is_empty() {
            return Ok(Vec::new());
        }
        let rows = UInt32Array::from(rows);
        let elements = UInt32Array::from(elements);
        let unnested = take(values.as_ref(), &elements, None)?;
        let cols = self
            .dependencies
            .iter()
            .map(|&c| {
                if c == self.list_column {
                    Ok(unnested.clone())
                } else {
                    Ok(take(data.column(c).as_ref(), &rows, None)?)
                }
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
            list_column: 1,
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
    fn preserved_nulls_give_a_null_row() {
        let mut op = node(NullHandling::Preserve).instantiate().unwrap();
        let out = op
            .on_data(0, lists(&[("b", None, 1), ("c", Some(vec![]), 1)]))
            .unwrap();
        assert_eq!(to_sorted_rows(&out), vec!["b | NULL | 1"]);
    }
}
