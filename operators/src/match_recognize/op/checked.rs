//! Conditions checked while matching: those that read the match so far (other variables,
//! `FIRST`/`LAST`, aggregates) or rows after the row (`NEXT`), evaluated for one row as
//! the variable it would be — on the row's values where the condition's shape allows
//! ([`RowExpr`]), else over a one-row batch.

use super::super::measure::{states_column, NavState, OutRow, PathStates};
use super::super::row_expr::{int_at, scalar_int, RowValues};
use super::super::{MeasureKind, Navigation};
use super::{MatchRecognizeOp, Partition};
use brook_common::{brook_err, BrookError, Result};
use datafusion::arrow::array::{Array, ArrayRef, BooleanArray, UInt32Array};
use datafusion::arrow::compute::take;
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::common::ScalarValue;
use std::sync::Arc;

impl MatchRecognizeOp {
    /// Whether row `row` of `p` can be variable `v` after `path` (the match from `start`
    /// so far, its first `stable` rows as at the previous check): the condition of `v`,
    /// which reads the match, over a one-row batch of the row, its `PREV` rows and the
    /// values it reads from the path with the row as `v`. `states`: what earlier checks of
    /// this attempt folded, per variable.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn check(
        &self,
        p: &Partition,
        start: usize,
        row: usize,
        v: usize,
        path: &[usize],
        stable: usize,
        states: &mut Vec<PathStates>,
    ) -> Result<bool> {
        if self.interrupt.as_ref().is_some_and(|stop| stop()) {
            return Err(BrookError::Canceled);
        }
        let (Some(Some(cond)), Some(Some(schema))) =
            (self.node.conditions.get(v), self.checked_schemas.get(v))
        else {
            return Ok(true);
        };
        if states.len() < self.node.conditions.len() {
            states.resize_with(self.node.conditions.len(), PathStates::default);
        }
        for s in states.iter_mut() {
            s.forget_after(stable);
        }
        let navs = states[v].after(&cond.reads, &p.rows, start, path)?;
        for (s, r) in navs.iter_mut().zip(&cond.reads) {
            // The row itself, as the variable it would be.
            s.add(&r.kind, &p.rows, row, v, &r.data_type)?;
        }
        if let Some(Some(expr)) = self.row_conditions.get(v) {
            let values = CheckedRow {
                op: self,
                p,
                row,
                reads: &cond.reads,
                navs,
            };
            return Ok(matches!(
                expr.eval(&values)?,
                ScalarValue::Boolean(Some(true))
            ));
        }
        let mut cols: Vec<ArrayRef> = Vec::with_capacity(schema.fields().len());
        let at = UInt32Array::from(vec![row as u32]);
        for c in p.rows.columns() {
            cols.push(take(c.as_ref(), &at, None)?);
        }
        for prev in &self.node.prev {
            // Rows before the attempt's start are kept back as far as PREV reads; before the
            // partition's first row there is none.
            let at = UInt32Array::from(vec![prev.row(row, p.rows.num_rows()).map(|r| r as u32)]);
            cols.push(take(p.rows.column(prev.col).as_ref(), &at, None)?);
        }
        let here = OutRow {
            row,
            matched: Some((start, Arc::default(), p.matches + 1)),
            upto: row,
        };
        for (s, r) in navs.iter().zip(&cond.reads) {
            cols.push(states_column(
                &p.rows,
                std::slice::from_ref(&here),
                &[Some(s.clone())],
                &r.kind,
                &r.data_type,
                &self.node.variables,
            )?);
        }
        let batch = RecordBatch::try_new(schema.clone(), cols)?;
        let result = cond.expr.evaluate(&batch)?.into_array(1)?;
        let result = result
            .as_any()
            .downcast_ref::<BooleanArray>()
            .ok_or_else(|| brook_err!(Internal, "DEFINE condition is not boolean"))?;
        Ok(result.is_valid(0) && result.value(0))
    }

    /// Column `i` of a checked condition's schema for row `row` of `p`: an input column,
    /// a `PREV` column, or the value of the condition's navigation `reads[k]` from its
    /// state `navs[k]` (the row included).
    fn row_cell<'a>(
        &self,
        p: &'a Partition,
        row: usize,
        reads: &[Navigation],
        navs: &[NavState],
        i: usize,
    ) -> Result<Cell<'a>> {
        let inputs = p.rows.num_columns();
        if i < inputs {
            return Ok(Cell::At(p.rows.column(i).as_ref(), Some(row)));
        }
        let i = i - inputs;
        if let Some(prev) = self.node.prev.get(i) {
            // Before the partition's first row (or past its last) there is none.
            let column = p.rows.column(prev.col).as_ref();
            return Ok(Cell::At(column, prev.row(row, p.rows.num_rows())));
        }
        let k = i - self.node.prev.len();
        let (Some(read), Some(state)) = (reads.get(k), navs.get(k)) else {
            return Err(brook_err!(
                Internal,
                "DEFINE condition reads column {i} it has not"
            ));
        };
        match &read.kind {
            MeasureKind::First { col, .. } | MeasureKind::Last { col, .. } => Ok(Cell::At(
                p.rows.column(*col).as_ref(),
                state.row(&read.kind, p.rows.num_rows()),
            )),
            kind => Ok(Cell::Value(state.value(
                kind,
                &p.rows,
                &read.data_type,
                &self.node.variables,
                p.matches + 1,
            )?)),
        }
    }
}

/// A value a checked condition reads: a row of a column (None: before the first row or
/// not in the match, NULL), or a value computed from the match.
enum Cell<'a> {
    At(&'a dyn Array, Option<usize>),
    Value(ScalarValue),
}

/// The row a checked condition is evaluated on: row `row` of partition `p`, its `PREV`
/// rows and the values of the navigations `reads` from their states `navs`.
struct CheckedRow<'a> {
    op: &'a MatchRecognizeOp,
    p: &'a Partition,
    row: usize,
    reads: &'a [Navigation],
    navs: &'a [NavState],
}

impl CheckedRow<'_> {
    fn cell(&self, i: usize) -> Result<Cell<'_>> {
        self.op.row_cell(self.p, self.row, self.reads, self.navs, i)
    }
}

impl RowValues for CheckedRow<'_> {
    fn value(&self, i: usize) -> Result<ScalarValue> {
        match self.cell(i)? {
            Cell::At(column, Some(r)) => Ok(ScalarValue::try_from_array(column, r)?),
            Cell::At(column, None) => Ok(ScalarValue::try_from(column.data_type())?),
            Cell::Value(v) => Ok(v),
        }
    }

    fn int(&self, i: usize) -> Result<Option<i64>> {
        match self.cell(i)? {
            Cell::At(column, Some(r)) => int_at(column, r),
            Cell::At(_, None) => Ok(None),
            Cell::Value(v) => scalar_int(&v),
        }
    }

    fn is_null(&self, i: usize) -> Result<bool> {
        match self.cell(i)? {
            Cell::At(column, Some(r)) => Ok(column.is_null(r)),
            Cell::At(_, None) => Ok(true),
            Cell::Value(v) => Ok(v.is_null()),
        }
    }
}
