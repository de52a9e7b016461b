//! A user aggregate called with `ORDER BY` or `DISTINCT`: the group's rows are kept and
//! folded, in order, when the value is asked for.
//!
//! A transition function sees rows in the order the call gives; DataFusion hands an
//! aggregate its rows in input order with the ORDER BY keys after the arguments, and leaves
//! the sorting (and DISTINCT) to it. The fold is sequential and a later row may sort first,
//! so the whole group is folded again at each evaluation (in a continuous query: once per
//! commit that touched the group).

use super::fold::Fold;
use super::Planned;
use datafusion::arrow::array::{ArrayRef, UInt32Array};
use datafusion::arrow::compute::{concat, lexsort_to_indices, take, SortColumn, SortOptions};
use datafusion::arrow::row::{RowConverter, SortField};
use datafusion::error::{DataFusionError, Result};
use datafusion::logical_expr::Accumulator;
use datafusion::scalar::ScalarValue;
use std::collections::HashSet;
use std::sync::Arc;

#[derive(Debug)]
pub(super) struct Ordered {
    planned: Arc<Planned>,
    /// The ORDER BY keys' directions (they follow the arguments in each batch).
    order: Vec<SortOptions>,
    distinct: bool,
    /// The rows so far: per batch, the arguments then the keys.
    kept: Vec<Vec<ArrayRef>>,
    bytes: usize,
}

impl Ordered {
    pub(super) fn new(planned: Arc<Planned>, order: Vec<SortOptions>, distinct: bool) -> Self {
        Ordered {
            planned,
            order,
            distinct,
            kept: Vec::new(),
            bytes: 0,
        }
    }

    /// Every kept row in one array per column.
    fn columns(&self) -> Result<Vec<ArrayRef>> {
        let width = self.planned.args + self.order.len();
        (0..width)
            .map(|c| {
                let parts: Vec<&dyn datafusion::arrow::array::Array> =
                    self.kept.iter().map(|b| b[c].as_ref()).collect();
                Ok(concat(&parts)?)
            })
            .collect()
    }

    /// The row order to fold in: by the ORDER BY keys (by the arguments for DISTINCT
    /// alone), ties in arrival order.
    fn fold_order(&self, columns: &[ArrayRef]) -> Result<UInt32Array> {
        let rows = columns.first().map_or(0, |c| c.len());
        let arrival = Arc::new(UInt32Array::from_iter_values(0..rows as u32)) as ArrayRef;
        let mut keys: Vec<SortColumn> = if self.order.is_empty() {
            columns[..self.planned.args]
                .iter()
                .map(|c| SortColumn {
                    values: c.clone(),
                    options: Some(SortOptions::default()),
                })
                .collect()
        } else {
            columns[self.planned.args..]
                .iter()
                .zip(&self.order)
                .map(|(c, o)| SortColumn {
                    values: c.clone(),
                    options: Some(*o),
                })
                .collect()
        };
        keys.push(SortColumn {
            values: arrival,
            options: None,
        });
        Ok(lexsort_to_indices(&keys, None)?)
    }

    /// Of `order`, the first row of each distinct argument tuple.
    fn first_of_each(&self, args: &[ArrayRef], order: UInt32Array) -> Result<UInt32Array> {
        let fields = args
            .iter()
            .map(|a| SortField::new(a.data_type().clone()))
            .collect();
        let converter = RowConverter::new(fields)?;
        let rows = converter.convert_columns(args)?;
        let mut seen = HashSet::new();
        Ok(order
            .values()
            .iter()
            .copied()
            .filter(|&i| seen.insert(rows.row(i as usize).as_ref().to_vec()))
            .collect())
    }
}

impl Accumulator for Ordered {
    fn update_batch(&mut self, values: &[ArrayRef]) -> Result<()> {
        let width = self.planned.args + self.order.len();
        if values.len() < width {
            return Err(DataFusionError::Internal(format!(
                "an ordered aggregate got {} columns, expected {width}",
                values.len()
            )));
        }
        self.bytes += values[..width]
            .iter()
            .map(|v| v.get_array_memory_size())
            .sum::<usize>();
        self.kept.push(values[..width].to_vec());
        Ok(())
    }

    fn evaluate(&mut self) -> Result<ScalarValue> {
        let mut fold = Fold::new(self.planned.clone());
        if !self.kept.is_empty() {
            let columns = self.columns()?;
            let mut order = self.fold_order(&columns)?;
            let args = &columns[..self.planned.args];
            if self.distinct {
                order = self.first_of_each(args, order)?;
            }
            let sorted = args
                .iter()
                .map(|a| Ok(take(a.as_ref(), &order, None)?))
                .collect::<Result<Vec<_>>>()?;
            fold.update_batch(&sorted)?;
        }
        fold.evaluate()
    }

    fn size(&self) -> usize {
        std::mem::size_of_val(self) + self.bytes
    }

    fn state(&mut self) -> Result<Vec<ScalarValue>> {
        Err(self.unmergeable())
    }

    fn merge_batch(&mut self, _states: &[ArrayRef]) -> Result<()> {
        Err(self.unmergeable())
    }
}

impl Ordered {
    /// Plans aggregate calls with ORDER BY or DISTINCT in one phase (`single_phase`):
    /// partial states never exist.
    fn unmergeable(&self) -> DataFusionError {
        DataFusionError::Internal(format!(
            "partial states of an aggregate call with ORDER BY or DISTINCT (transition \
             function {})",
            self.planned.sfunc.function
        ))
    }
}
