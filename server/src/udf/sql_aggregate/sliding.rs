//! A user aggregate over a window frame whose start moves (`ROWS BETWEEN 2 PRECEDING AND
//! CURRENT ROW`), as PostgreSQL runs one: with its moving-aggregate mode when it has one
//! (MSFUNC folds a row in, MINVFUNC takes a leaving row back out: O(1) per row), else by
//! folding the frame again from the initial state once rows have left it (O(frame) per
//! row). The frame's rows are kept either way: a MINVFUNC that returns NULL asks for the
//! fold again. DataFusion's window operator hands over the rows entering a frame before
//! those leaving it; PostgreSQL takes leaving rows out first (a sum of the frame never
//! passes through the sum of both frames, which could overflow, and a frame emptied of
//! rows starts over), so entering rows are folded only when the value is asked for.

use super::fold::Fold;
use super::{Moving, Planned};
use datafusion::arrow::array::ArrayRef;
use datafusion::error::Result;
use datafusion::logical_expr::Accumulator;
use datafusion::scalar::ScalarValue;
use std::collections::VecDeque;
use std::sync::Arc;

#[derive(Debug)]
pub(super) struct Sliding {
    /// The mode folded: the moving one when the aggregate has it.
    planned: Arc<Planned>,
    /// The moving mode, whose inverse takes leaving rows out.
    moving: Option<Arc<Moving>>,
    /// The frame's rows, oldest first: one one-row slice per argument.
    rows: VecDeque<Vec<ArrayRef>>,
    /// The newest rows of `rows` not folded yet.
    pending: usize,
    /// The fold of `rows` but the pending ones (stale while `refold`).
    fold: Fold,
    /// Rows have left the frame since `fold` was made.
    refold: bool,
}

impl Sliding {
    pub(super) fn new(plain: Arc<Planned>) -> Self {
        let moving = plain.moving.clone();
        let planned = moving.as_ref().map_or(plain, |m| m.planned.clone());
        Sliding {
            fold: Fold::new(planned.clone()),
            planned,
            moving,
            rows: VecDeque::new(),
            pending: 0,
            refold: false,
        }
    }
}

impl Sliding {
    /// Where the oldest kept row with these argument values is.
    fn position_of(&self, wanted: &[ScalarValue]) -> Result<Option<usize>> {
        for (at, row) in self.rows.iter().enumerate() {
            let mut same = true;
            for (v, w) in row.iter().zip(wanted) {
                if &ScalarValue::try_from_array(v, 0)? != w {
                    same = false;
                    break;
                }
            }
            if same {
                return Ok(Some(at));
            }
        }
        Ok(None)
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
        self.pending += rows;
        Ok(())
    }

    fn retract_batch(&mut self, values: &[ArrayRef]) -> Result<()> {
        // The rows leaving are found by value: a window frame's are its oldest (found at
        // once), a continuous query's changelog retracts any row (a view over a table
        // whose UPDATE changed one row).
        let values = &values[..self.planned.args.min(values.len())];
        let leaving = values.first().map_or(0, |v| v.len());
        for i in 0..leaving {
            let wanted = values
                .iter()
                .map(|v| ScalarValue::try_from_array(v, i))
                .collect::<Result<Vec<_>>>()?;
            let at = self.position_of(&wanted)?.ok_or_else(|| {
                datafusion::error::DataFusionError::Internal(
                    "a user aggregate retracted a row it never had".to_string(),
                )
            })?;
            let folded = at < self.rows.len() - self.pending;
            let Some(row) = self.rows.remove(at) else {
                continue;
            };
            if !folded {
                // A pending row was never folded in.
                self.pending -= 1;
                continue;
            }
            match &self.moving {
                Some(m) if !self.refold => {
                    if !self.fold.retract_row(&m.inverse, &row)? {
                        self.refold = true;
                    }
                }
                _ => self.refold = true,
            }
        }
        Ok(())
    }

    fn supports_retract_batch(&self) -> bool {
        true
    }

    fn evaluate(&mut self) -> Result<ScalarValue> {
        let from = if self.refold {
            self.fold = Fold::new(self.planned.clone());
            self.refold = false;
            0
        } else {
            self.rows.len() - self.pending
        };
        for row in self.rows.range(from..) {
            self.fold.update_batch(row)?;
        }
        self.pending = 0;
        self.fold.evaluate()
    }

    fn size(&self) -> usize {
        let kept = self.rows.len() * self.planned.args * std::mem::size_of::<ArrayRef>();
        std::mem::size_of_val(self) + self.fold.size() + kept
    }

    fn state(&mut self) -> Result<Vec<ScalarValue>> {
        self.evaluate()?;
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

    /// Each mode's sum of a frame of the last two rows, moved row by row as a window
    /// operator moves it, and whether a fold of the frame again was needed.
    fn frame_sums(inverse: bool) -> (Vec<ScalarValue>, bool) {
        let mut acc = Sliding::new(int4_sum(inverse));
        let mut values = vec![];
        let mut refolded = false;
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
            refolded |= acc.refold;
            values.push(acc.evaluate().unwrap());
            assert_eq!(acc.pending, 0);
        }
        (values, refolded)
    }

    #[test]
    fn a_moving_frame_is_folded_again_or_inverted() {
        let expected: Vec<ScalarValue> = [Some(1), Some(3), Some(5), Some(3), None]
            .into_iter()
            .map(ScalarValue::Int32)
            .collect();
        // Without MINVFUNC the frame is folded again; with it, leaving rows are taken out
        // (the frame of only NULLs starts over).
        assert_eq!(frame_sums(false), (expected.clone(), true));
        assert_eq!(frame_sums(true), (expected, false));
    }

    /// Leaving rows are taken out before entering ones are folded in, as PostgreSQL
    /// does: frames of two rows of 1e9 never hold three (an integer's overflow).
    #[test]
    fn leaving_rows_go_before_entering_ones_come() {
        let billion = Some(1_000_000_000);
        for inverse in [false, true] {
            let mut acc = Sliding::new(int4_sum(inverse));
            acc.update_batch(&[ints(&[billion, billion])]).unwrap();
            assert_eq!(
                acc.evaluate().unwrap(),
                ScalarValue::Int32(Some(2_000_000_000))
            );
            for _ in 0..3 {
                acc.update_batch(&[ints(&[billion])]).unwrap();
                acc.retract_batch(&[ints(&[billion])]).unwrap();
                assert_eq!(
                    acc.evaluate().unwrap(),
                    ScalarValue::Int32(Some(2_000_000_000))
                );
            }
        }
    }
}
