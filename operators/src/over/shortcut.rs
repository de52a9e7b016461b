//! Which window functions take the shortcut over rows that arrive in order, and how.
//!
//! A window function's value for a new row that sorts after every row of its partition
//! follows from little: `lag(x, k)` and frames of `ROWS n PRECEDING` read the row and a
//! bounded number of rows before it ([`Reach::Rows`]); `lead(x, k)` reads k rows after it,
//! so the values of a partition's last k rows change as rows follow ([`Reach::Ahead`]); a
//! running `sum`, `count`, `min`, `max`, `row_number` or `first_value` from the partition's
//! first row is the last row's value continued over the new rows ([`Reach::Running`]). The planner derives a [`Shortcut`] from the
//! window functions when every one of them is such; the operator falls back to evaluating
//! the partition for anything else.

use brook_common::Result;
use datafusion::arrow::array::{ArrayRef, Float64Array, Float64Builder};
use datafusion::arrow::datatypes::DataType;
use datafusion::scalar::ScalarValue;
use std::sync::Arc;

/// How a window function's value for a new row follows from the rows before it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reach {
    /// It reads the row and at most this many rows before it.
    Rows(usize),
    /// It reads the row and at most this many rows after it (`lead`): the values of a
    /// partition's last rows change as rows follow them.
    Ahead(usize),
    /// A running value from the partition's first row.
    Running(Running),
}

/// The running functions whose value continues from the last row's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Running {
    Sum,
    Count,
    Min,
    Max,
    RowNumber,
    /// `first_value`: the partition's first row's value.
    First,
}

/// The shortcut of a node's window functions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Shortcut {
    /// One per window function, in order.
    pub reach: Vec<Reach>,
    /// New rows must sort strictly after the partition's last row: a RANGE frame takes in
    /// the current row's peers, whose values a tie would change.
    pub strictly_after: bool,
}

impl Shortcut {
    /// The most rows before a new row that a function reads.
    pub fn lookback(&self) -> usize {
        self.reach
            .iter()
            .map(|r| match r {
                Reach::Rows(k) => *k,
                Reach::Ahead(_) | Reach::Running(_) => 0,
            })
            .max()
            .unwrap_or(0)
    }

    /// The most rows after a row that a function reads: a partition's last rows whose
    /// values change as rows follow.
    pub fn lookahead(&self) -> usize {
        self.reach
            .iter()
            .map(|r| match r {
                Reach::Ahead(k) => *k,
                Reach::Rows(_) | Reach::Running(_) => 0,
            })
            .max()
            .unwrap_or(0)
    }

    /// The rows before a new row the functions read: the most any reads back, and at
    /// least the last row, whose running values continue.
    pub fn kept_final(&self) -> usize {
        self.lookback().max(1)
    }

    /// Whether a running function continues exactly over values of type `t`: a double
    /// precision sum adds each row (peer group) to the last value as a whole evaluation
    /// does ([`float_running_sum`]); other floating point values take the long way (NaN
    /// orders apart for `min`/`max`).
    pub fn exact_for(running: Running, t: &DataType) -> bool {
        matches!(
            running,
            Running::Count | Running::RowNumber | Running::First
        ) || !t.is_floating()
            || (running == Running::Sum && t == &DataType::Float64)
    }
}

/// `partial`, the running values over the new rows alone, continued from `last`, the
/// running value of the partition's last row (the arrays have one row per new row; a
/// function's value is NULL until it has seen a non-NULL input).
pub fn continue_running(kind: Running, last: &ScalarValue, partial: &ArrayRef) -> Result<ArrayRef> {
    let values = (0..partial.len())
        .map(|i| {
            let v = ScalarValue::try_from_array(partial, i)?;
            Ok(match kind {
                // The first row's value, NULL or not.
                Running::First => last.clone(),
                Running::Count | Running::RowNumber => last.add_checked(&v)?,
                _ if last.is_null() => v,
                _ if v.is_null() => last.clone(),
                Running::Sum => last.add_checked(&v)?,
                Running::Min if v < *last => v,
                Running::Max if v > *last => v,
                Running::Min | Running::Max => last.clone(),
            })
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(ScalarValue::iter_to_array(values)?)
}

/// A running double precision `sum` over the new rows' argument values `args`, continued
/// from `last` (NULL: no value yet), in the order a whole evaluation adds them: each frame
/// end (`ends[i]`, the end of row i's peer group, or i + 1 for ROWS) adds the sum of the
/// values it takes in — DataFusion's accumulator adds `arrow::compute::sum` of each slice
/// entering the frame — so floating point rounding is the same as over the whole partition.
pub fn float_running_sum(last: Option<f64>, args: &Float64Array, ends: &[usize]) -> ArrayRef {
    let mut running = last;
    let mut done = 0;
    let mut out = Float64Builder::with_capacity(ends.len());
    for &end in ends {
        if end > done {
            if let Some(s) = datafusion::arrow::compute::sum(&args.slice(done, end - done)) {
                running = Some(running.unwrap_or(0.0) + s);
            }
            done = end;
        }
        out.append_option(running);
    }
    Arc::new(out.finish())
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::arrow::array::{Array, Int64Array};

    fn continued(kind: Running, last: Option<i64>, partial: &[Option<i64>]) -> Vec<Option<i64>> {
        let partial: ArrayRef = Arc::new(Int64Array::from(partial.to_vec()));
        let out = continue_running(kind, &ScalarValue::Int64(last), &partial).unwrap();
        let out = out.as_any().downcast_ref::<Int64Array>().unwrap();
        (0..out.len())
            .map(|i| out.is_valid(i).then(|| out.value(i)))
            .collect()
    }

    #[test]
    fn running_values_continue_from_the_last_row() {
        assert_eq!(
            continued(Running::Sum, Some(10), &[None, Some(2), Some(5)]),
            vec![Some(10), Some(12), Some(15)]
        );
        assert_eq!(
            continued(Running::Sum, None, &[None, Some(2)]),
            vec![None, Some(2)]
        );
        assert_eq!(
            continued(Running::Count, Some(3), &[Some(0), Some(1)]),
            vec![Some(3), Some(4)]
        );
        assert_eq!(
            continued(Running::Min, Some(4), &[Some(7), Some(3)]),
            vec![Some(4), Some(3)]
        );
        assert_eq!(
            continued(Running::Max, None, &[None, Some(3)]),
            vec![None, Some(3)]
        );
        assert_eq!(
            continued(Running::First, None, &[Some(4), Some(4)]),
            vec![None, None]
        );
    }
}
