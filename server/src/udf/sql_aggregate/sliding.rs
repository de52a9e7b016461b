//! A user aggregate over a window frame whose start moves (`ROWS BETWEEN 2 PRECEDING AND
//! CURRENT ROW`): the frame's rows are kept; a row entering the frame is folded into the
//! state, and once rows have left it the frame is folded again from the initial state when
//! its value is asked for. That is PostgreSQL's way for an aggregate without an inverse
//! transition function (MINVFUNC): the same answer, O(frame) per row whose frame lost rows.

use super::fold::Fold;
use super::Planned;
use datafusion::arrow::array::ArrayRef;
use datafusion::error::Result;
use datafusion::logical_expr::Accumulator;
use datafusion::scalar::ScalarValue;
use std::collections::VecDeque;
use std::sync::Arc;

#[derive(Debug)]
pub(super) struct Sliding {
    planned: Arc<Planned>,
    /// The frame's rows, oldest first: one one-row slice per argument.
    rows: VecDeque<Vec<ArrayRef>>,
    /// The fold of `rows` (stale while `refold`).
    fold: Fold,
    /// Rows have left the frame since `fold` was made.
    refold: bool,
}

impl Sliding {
    pub(super) fn new(planned: Arc<Planned>) -> Self {
        Sliding {
            fold: Fold::new(planned.clone()),
            planned,
            rows: VecDeque::new(),
            refold: false,
        }
    }
}

impl Accumulator for Sliding {
    fn update_batch(&mut self, values: &[ArrayRef]) -> Result<()> {
        let values = &values[..self.planned.args.min(values.len())];
        let rows = values.first().map_or(0, |v| v.len());
        for row in 0..rows {
            self.rows
                .push_back(values.iter().map(|v| v.slice(row, 1)).collect());
        }
        if !self.refold {
            self.fold.update_batch(values)?;
        }
        Ok(())
    }

    fn retract_batch(&mut self, values: &[ArrayRef]) -> Result<()> {
        // A window frame's rows leave it oldest first.
        let leaving = values.first().map_or(0, |v| v.len()).min(self.rows.len());
        if leaving > 0 {
            self.rows.drain(..leaving);
            self.refold = true;
        }
        Ok(())
    }

    fn supports_retract_batch(&self) -> bool {
        true
    }

    fn evaluate(&mut self) -> Result<ScalarValue> {
        if self.refold {
            self.fold = Fold::new(self.planned.clone());
            for row in &self.rows {
                self.fold.update_batch(row)?;
            }
            self.refold = false;
        }
        self.fold.evaluate()
    }

    fn size(&self) -> usize {
        let kept = self.rows.len() * self.planned.args * std::mem::size_of::<ArrayRef>();
        std::mem::size_of_val(self) + self.fold.size() + kept
    }

    fn state(&mut self) -> Result<Vec<ScalarValue>> {
        self.fold.state()
    }

    fn merge_batch(&mut self, states: &[ArrayRef]) -> Result<()> {
        self.fold.merge_batch(states)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::udf::sql_aggregate::tests::int4_sum;
    use datafusion::arrow::array::Int32Array;

    fn ints(v: &[Option<i32>]) -> ArrayRef {
        Arc::new(Int32Array::from(v.to_vec()))
    }

    /// A frame of the last two rows, moved row by row, as a window operator moves it.
    #[test]
    fn a_moving_frame_is_folded_again_after_rows_leave() {
        let mut acc = Sliding::new(int4_sum());
        let mut values = vec![];
        for (enter, leave) in [
            (Some(1), None),
            (Some(2), None),
            (Some(3), Some(Some(1))),
            (None, Some(Some(2))),
            (None, Some(Some(3))),
        ] {
            if let Some(left) = leave {
                acc.retract_batch(&[ints(&[left])]).unwrap();
            }
            acc.update_batch(&[ints(&[enter])]).unwrap();
            values.push(acc.evaluate().unwrap());
        }
        let expected: Vec<ScalarValue> = [Some(1), Some(3), Some(5), Some(3), None]
            .into_iter()
            .map(ScalarValue::Int32)
            .collect();
        assert_eq!(values, expected);
    }
}
