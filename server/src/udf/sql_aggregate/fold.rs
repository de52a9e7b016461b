//! One group's state of a user aggregate, folded row by row.
//!
//! A transition function is sequential by definition (each call reads the state the
//! previous one left), so this is the one place Brook works per row: each row's arguments
//! are zero-copy one-row slices, and the function is the expression planned once for the
//! aggregate. PostgreSQL's rules for NULLs hold: a STRICT transition function skips a row
//! with a NULL argument, and without INITCOND the first such row's value becomes the state;
//! a state that became NULL stays NULL for a STRICT function.

use super::{Planned, Step};
use datafusion::arrow::array::{Array, ArrayRef};
use datafusion::error::{DataFusionError, Result};
use datafusion::logical_expr::Accumulator;
use datafusion::scalar::ScalarValue;
use std::sync::Arc;

#[derive(Debug)]
pub(super) struct Fold {
    planned: Arc<Planned>,
    state: ScalarValue,
    /// No INITCOND and no row folded yet: the first row (or partial state) becomes the
    /// state, as PostgreSQL's `noTransValue`.
    unset: bool,
    /// Rows folded into the state (a STRICT function's rows with a NULL argument are not).
    folded: usize,
}

impl Fold {
    pub(super) fn new(planned: Arc<Planned>) -> Self {
        let unset = planned.initial.is_null();
        Fold {
            state: planned.initial.clone(),
            planned,
            unset,
            folded: 0,
        }
    }

    /// Take one folded row (`row`: one-row arrays of the arguments) back out of the state
    /// with the inverse transition function `inverse` (MINVFUNC). False when it cannot: it
    /// returned NULL, which PostgreSQL reads as "fold the frame again". Once no folded row
    /// is left, the state starts over, as PostgreSQL's.
    pub(super) fn retract_row(&mut self, inverse: &Step, row: &[ArrayRef]) -> Result<bool> {
        if inverse.strict && row.iter().any(|v| v.is_null(0)) {
            // Never folded in.
            return Ok(true);
        }
        self.folded = self.folded.saturating_sub(1);
        if self.folded == 0 {
            *self = Fold::new(self.planned.clone());
            return Ok(true);
        }
        if inverse.strict && self.state.is_null() {
            return Ok(false);
        }
        let mut columns = Vec::with_capacity(row.len() + 1);
        columns.push(self.state_array()?);
        columns.extend(row.iter().cloned());
        let state = inverse.call(columns)?;
        if state.is_null() {
            return Ok(false);
        }
        self.state = state;
        Ok(true)
    }

    fn state_array(&self) -> Result<ArrayRef> {
        self.state.to_array_of_size(1)
    }
}

impl Accumulator for Fold {
    fn update_batch(&mut self, values: &[ArrayRef]) -> Result<()> {
        // The keys of an ORDER BY in the call follow the arguments; the rows come sorted.
        let values = &values[..self.planned.args.min(values.len())];
        let rows = values.first().map_or(0, |v| v.len());
        let step = &self.planned.sfunc;
        for row in 0..rows {
            if step.strict {
                if values.iter().any(|v| v.is_null(row)) {
                    continue;
                }
                if self.unset {
                    self.state = ScalarValue::try_from_array(&values[0], row)?
                        .cast_to(&self.planned.stype)?;
                    self.unset = false;
                    self.folded += 1;
                    continue;
                }
                if self.state.is_null() {
                    continue;
                }
            }
            let mut columns = Vec::with_capacity(values.len() + 1);
            columns.push(self.state_array()?);
            columns.extend(values.iter().map(|v| v.slice(row, 1)));
            self.state = step.call(columns)?;
            self.unset = false;
            self.folded += 1;
        }
        Ok(())
    }

    fn evaluate(&mut self) -> Result<ScalarValue> {
        match &self.planned.finalfunc {
            None => Ok(self.state.clone()),
            Some(f) if f.strict && self.state.is_null() => ScalarValue::try_from(&f.returns),
            Some(f) => f.call(vec![self.state_array()?]),
        }
    }

    fn size(&self) -> usize {
        std::mem::size_of_val(self) + self.state.size()
    }

    fn state(&mut self) -> Result<Vec<ScalarValue>> {
        Ok(vec![self.state.clone()])
    }

    fn merge_batch(&mut self, _states: &[ArrayRef]) -> Result<()> {
        // Plans fold a user aggregate in one phase (`single_phase`); reaching here is a
        // planning defect.
        Err(DataFusionError::Internal(format!(
            "partial states of a user aggregate reached a merge (transition function {})",
            self.planned.sfunc.function
        )))
    }
}
