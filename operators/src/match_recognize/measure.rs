//! Values read from a match — the measures of its output rows and the navigations a
//! `DEFINE` condition reads while the match is being decided — computed per batch of
//! output rows.

use super::{in_set, Aggregate, AggregateCall, Measure, MeasureKind, Navigation, VarSet};
use brook_common::{brook_err, Result};
use datafusion::arrow::array::{
    new_null_array, Array, ArrayRef, BooleanArray, Int64Array, StringArray, UInt32Array,
};
use datafusion::arrow::compute::SortOptions;
use datafusion::arrow::compute::{cast, take, take_record_batch};
use datafusion::arrow::datatypes::{DataType, Field, FieldRef, Schema, SchemaRef};
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::common::ScalarValue;
use datafusion::logical_expr::function::AccumulatorArgs;
use datafusion::logical_expr::utils::AggregateOrderSensitivity;
use datafusion::logical_expr::Accumulator;
use datafusion::physical_expr::expressions::{Column, Literal};
use datafusion::physical_expr::PhysicalExpr;
use datafusion::physical_expr::PhysicalSortExpr;
use std::collections::VecDeque;
use std::sync::Arc;

/// A row of output (or a row being classified): the input row it carries and the rows its
/// measures cover.
#[derive(Clone)]
pub(super) struct OutRow {
    /// Input row (index into the partition's rows) whose columns the output row carries.
    pub(super) row: usize,
    /// The match: its first row, the variable of each row, and its number; None for an
    /// unmatched row.
    pub(super) matched: Option<(usize, Arc<Vec<usize>>, i64)>,
    /// Rows of the match running values cover (all of it, or up to the output row).
    pub(super) upto: usize,
}

impl OutRow {
    /// The same row, covering its whole match (FINAL).
    fn whole_match(&self) -> OutRow {
        let mut o = self.clone();
        if let Some((start, vars, _)) = &self.matched {
            o.upto = start + vars.len() - 1;
        }
        o
    }
}

/// The schema an expression over `reads` is planned and evaluated against.
pub fn reads_schema(reads: &[Navigation]) -> SchemaRef {
    Arc::new(Schema::new(
        reads
            .iter()
            .enumerate()
            .map(|(i, r)| Field::new(format!("__nav_{i}"), r.data_type.clone(), true))
            .collect::<Vec<_>>(),
    ))
}

/// The column of `measure` (of type `ty`) for the rows `out` over the partition's `rows`.
pub(super) fn measure_column(
    rows: &RecordBatch,
    out: &[OutRow],
    measure: &Measure,
    ty: &DataType,
    variables: &[String],
) -> Result<ArrayRef> {
    let values = read_columns(rows, out, &measure.reads, variables)?;
    let column = match &measure.expr {
        None => values
            .into_iter()
            .next()
            .ok_or_else(|| brook_err!(Internal, "a measure reads nothing"))?,
        Some(expr) => {
            let batch = RecordBatch::try_new_with_options(
                reads_schema(&measure.reads),
                values,
                &datafusion::arrow::record_batch::RecordBatchOptions::new()
                    .with_row_count(Some(out.len())),
            )?;
            expr.evaluate(&batch)?.into_array(out.len())?
        }
    };
    if column.data_type() == ty {
        return Ok(column);
    }
    Ok(cast(&column, ty)?)
}

/// One column per navigation of `reads`, for the rows `out`.
fn read_columns(
    rows: &RecordBatch,
    out: &[OutRow],
    reads: &[Navigation],
    variables: &[String],
) -> Result<Vec<ArrayRef>> {
    let mut whole: Option<Vec<OutRow>> = None;
    reads
        .iter()
        .map(|r| {
            if r.running {
                return navigation_column(rows, out, &r.kind, &r.data_type, variables);
            }
            let spans = whole.get_or_insert_with(|| out.iter().map(OutRow::whole_match).collect());
            navigation_column(rows, spans, &r.kind, &r.data_type, variables)
        })
        .collect()
}

/// The column of one navigation: its value over each output row's span.
fn navigation_column(
    rows: &RecordBatch,
    out: &[OutRow],
    kind: &MeasureKind,
    ty: &DataType,
    variables: &[String],
) -> Result<ArrayRef> {
    if let MeasureKind::Function { vars, call } = kind {
        return function_column(rows, out, call, *vars, ty);
    }
    let states = fold_spans(out, |s: &mut NavState, r, v| s.add(kind, rows, r, v, ty))?;
    states_column(rows, out, &states, kind, ty, variables)
}

/// An aggregate function's value over each output row's span: one accumulator per match,
/// fed the rows of `vars` as the spans of consecutive output rows of the match grow
/// (running values under ALL ROWS PER MATCH cost the match's rows once).
fn function_column(
    rows: &RecordBatch,
    out: &[OutRow],
    call: &AggregateCall,
    vars: VarSet,
    ty: &DataType,
) -> Result<ArrayRef> {
    let func = &call.func;
    // Its inputs as an aggregate takes them: the argument, the constants, then the ORDER BY
    // columns.
    let mut fields = vec![Field::new("arg", call.arg_type.clone(), true)];
    let mut exprs: Vec<Arc<dyn PhysicalExpr>> = vec![Arc::new(Column::new("arg", 0))];
    for (i, c) in call.constants.iter().enumerate() {
        fields.push(Field::new(format!("const_{i}"), c.data_type(), true));
        exprs.push(Arc::new(Literal::new(c.clone())));
    }
    // An aggregate whose result no order changes (`sum`, `count`) takes none; with
    // DISTINCT the ORDER BY is the argument's own (the planner checked it), which the
    // accumulator sorts on without another input.
    let order: &[(usize, SortOptions)] = match func.order_sensitivity() {
        AggregateOrderSensitivity::Insensitive => &[],
        _ => &call.order,
    };
    let mut order_bys = Vec::with_capacity(order.len());
    for (i, (col, options)) in order.iter().enumerate() {
        if call.distinct {
            order_bys.push(PhysicalSortExpr {
                expr: Arc::new(Column::new("arg", 0)),
                options: *options,
            });
            continue;
        }
        let name = format!("order_{i}");
        order_bys.push(PhysicalSortExpr {
            expr: Arc::new(Column::new(&name, fields.len())),
            options: *options,
        });
        fields.push(Field::new(
            name,
            rows.schema().field(*col).data_type().clone(),
            true,
        ));
    }
    let schema = Schema::new(fields);
    let expr_fields: Vec<FieldRef> = schema.fields()[..exprs.len()].to_vec();
    let new_accumulator = || {
        func.accumulator(AccumulatorArgs {
            return_field: Arc::new(Field::new(func.name(), ty.clone(), true)),
            schema: &schema,
            ignore_nulls: false,
            order_bys: &order_bys,
            is_reversed: false,
            name: func.name(),
            is_distinct: call.distinct,
            exprs: &exprs,
            expr_fields: &expr_fields,
        })
    };
    // The accumulator's inputs for the rows `taken` (those the FILTER passes), evaluated over
    // those rows only (an argument that fails on a row outside them is not asked).
    let inputs = |taken: &UInt32Array| -> Result<Option<Vec<ArrayRef>>> {
        let mut taken = taken.clone();
        if let Some(filter) = &call.filter {
            let batch = take_record_batch(rows, &taken)?;
            let mask = filter.evaluate(&batch)?.into_array(batch.num_rows())?;
            let mask = mask
                .as_any()
                .downcast_ref::<BooleanArray>()
                .ok_or_else(|| brook_err!(Internal, "FILTER condition is not boolean"))?;
            taken = (0..taken.len())
                .filter(|&i| mask.is_valid(i) && mask.value(i))
                .map(|i| taken.value(i))
                .collect();
        }
        if taken.is_empty() {
            return Ok(None);
        }
        let arg = match call.arg.as_ref().downcast_ref::<Column>() {
            Some(c) => take(rows.column(c.index()).as_ref(), &taken, None)?,
            None => {
                let batch = take_record_batch(rows, &taken)?;
                call.arg.evaluate(&batch)?.into_array(taken.len())?
            }
        };
        let mut values = vec![cast(&arg, &call.arg_type)?];
        for c in &call.constants {
            values.push(c.to_array_of_size(taken.len())?);
        }
        for (col, _) in order.iter().filter(|_| !call.distinct) {
            values.push(take(rows.column(*col).as_ref(), &taken, None)?);
        }
        Ok(Some(values))
    };
    let mut values = Vec::with_capacity(out.len());
    // The match, the last row the accumulator has taken, the accumulator.
    type Open<'a> = (&'a Arc<Vec<usize>>, usize, Box<dyn Accumulator>);
    let mut open: Option<Open<'_>> = None;
    for o in out {
        let Some((start, path, _)) = &o.matched else {
            values.push(ScalarValue::try_from(ty)?);
            continue;
        };
        let (mut acc, from) = match open.take() {
            Some((p, upto, acc)) if Arc::ptr_eq(p, path) && upto <= o.upto => (acc, upto + 1),
            _ => (new_accumulator()?, *start),
        };
        let taken: UInt32Array = (from..=o.upto)
            .filter(|r| in_set(vars, path[r - start]))
            .map(|r| r as u32)
            .collect();
        if let Some(values) = inputs(&taken)? {
            acc.update_batch(&values)?;
        }
        values.push(acc.evaluate()?);
        open = Some((path, o.upto, acc));
    }
    if values.is_empty() {
        return Ok(new_null_array(ty, 0));
    }
    Ok(ScalarValue::iter_to_array(values)?)
}

/// One navigation over the rows of a match so far: what each kind of navigation needs
/// to give its value after them.
#[derive(Default)]
pub(super) struct NavState {
    /// `FIRST(.., k)`: the first k+1 rows of its variables; `LAST(.., k)`: the last k+1.
    rows: VecDeque<usize>,
    /// `CLASSIFIER()`: the variable of the last row.
    variable: Option<usize>,
    /// `count`: the rows (or non-NULL values) counted.
    count: i64,
    /// `sum`, `avg`, `min`, `max`.
    running: Running,
}

// By hand for `clone_from`, which reuses the rows' buffer: a condition checked while
// matching copies its states once per check.
impl Clone for NavState {
    fn clone(&self) -> Self {
        NavState {
            rows: self.rows.clone(),
            variable: self.variable,
            count: self.count,
            running: self.running.clone(),
        }
    }

    fn clone_from(&mut self, source: &Self) {
        self.rows.clone_from(&source.rows);
        self.variable = source.variable;
        self.count = source.count;
        self.running.clone_from(&source.running);
    }
}

impl NavState {
    /// The state after one more row of the match: row `r`, as variable `v`.
    pub(super) fn add(
        &mut self,
        kind: &MeasureKind,
        rows: &RecordBatch,
        r: usize,
        v: usize,
        ty: &DataType,
    ) -> Result<()> {
        match kind {
            MeasureKind::First { vars, offset, .. } => {
                if self.rows.len() <= *offset && in_set(*vars, v) {
                    self.rows.push_back(r);
                }
            }
            MeasureKind::Last { vars, offset, .. } => {
                if in_set(*vars, v) {
                    if self.rows.len() > *offset {
                        self.rows.pop_front();
                    }
                    self.rows.push_back(r);
                }
            }
            MeasureKind::Classifier => self.variable = Some(v),
            MeasureKind::MatchNumber => {}
            MeasureKind::Count { vars, col } => {
                if in_set(*vars, v) && col.is_none_or(|c| rows.column(c).is_valid(r)) {
                    self.count += 1;
                }
            }
            MeasureKind::Aggregate { func, vars, col } => {
                let column = rows.column(*col);
                if in_set(*vars, v) && column.is_valid(r) {
                    let value = ScalarValue::try_from_array(column, r)?.cast_to(ty)?;
                    self.running.add(*func, value)?;
                }
            }
            MeasureKind::Function { .. } => return Err(measures_only(kind)),
        }
        Ok(())
    }
}

impl NavState {
    /// The row whose column a `FIRST`/`LAST` navigation of kind `kind` reads after the
    /// rows folded, shifted as the navigation says within the partition's `len` rows
    /// (None: there is none, the value is NULL; or another kind).
    pub(super) fn row(&self, kind: &MeasureKind, len: usize) -> Option<usize> {
        let (base, shift) = match kind {
            MeasureKind::First { offset, shift, .. } => (self.rows.get(*offset).copied(), shift),
            MeasureKind::Last { offset, shift, .. } => {
                ((self.rows.len() == offset + 1).then(|| self.rows[0]), shift)
            }
            _ => return None,
        };
        // Rows before the partition's first kept row are gone only when no navigation
        // reads them (the operator keeps `MatchRecognizeNode::history` rows back).
        base?
            .checked_add_signed(isize::try_from(*shift).ok()?)
            .filter(|r| *r < len)
    }

    /// The value of a navigation of kind `kind` (of type `ty`) after the rows folded, in a
    /// match numbered `match_number`: one row's [`states_column`], for a condition checked
    /// row by row.
    pub(super) fn value(
        &self,
        kind: &MeasureKind,
        rows: &RecordBatch,
        ty: &DataType,
        variables: &[String],
        match_number: i64,
    ) -> Result<ScalarValue> {
        let at = |col: usize, row: Option<usize>| -> Result<ScalarValue> {
            let column = rows.column(col);
            Ok(match row {
                Some(r) => ScalarValue::try_from_array(column, r)?,
                None => ScalarValue::try_from(column.data_type())?,
            })
        };
        match kind {
            MeasureKind::First { col, .. } | MeasureKind::Last { col, .. } => {
                at(*col, self.row(kind, rows.num_rows()))
            }
            MeasureKind::Classifier => {
                Ok(ScalarValue::Utf8(self.variable.map(|v| variables[v].clone())).cast_to(ty)?)
            }
            MeasureKind::MatchNumber => Ok(ScalarValue::Int64(Some(match_number))),
            MeasureKind::Count { .. } => Ok(ScalarValue::Int64(Some(self.count))),
            MeasureKind::Aggregate { func, .. } => {
                self.running.value(*func, &ScalarValue::try_from(ty)?)
            }
            MeasureKind::Function { .. } => Err(measures_only(kind)),
        }
    }
}

/// An aggregate function is read by a measure ([`function_column`]), never folded into a
/// state (the planner keeps such aggregates out of DEFINE).
fn measures_only(kind: &MeasureKind) -> brook_common::BrookError {
    brook_err!(
        Internal,
        "{kind:?} folded as a navigation state (aggregate functions are measures only)"
    )
}

/// The column of a navigation of kind `kind` from its state after each output row's span
/// (None: the row is in no match).
pub(super) fn states_column(
    rows: &RecordBatch,
    out: &[OutRow],
    states: &[Option<NavState>],
    kind: &MeasureKind,
    ty: &DataType,
    variables: &[String],
) -> Result<ArrayRef> {
    match kind {
        MeasureKind::First { col, .. } | MeasureKind::Last { col, .. } => {
            let at: UInt32Array = states
                .iter()
                .map(|s| {
                    s.as_ref()
                        .and_then(|s| s.row(kind, rows.num_rows()))
                        .map(|r| r as u32)
                })
                .collect();
            Ok(take(rows.column(*col).as_ref(), &at, None)?)
        }
        MeasureKind::Classifier => {
            let names: StringArray = states
                .iter()
                .map(|s| {
                    s.as_ref()
                        .and_then(|s| s.variable)
                        .map(|v| variables[v].as_str())
                })
                .collect();
            Ok(cast(&names, ty)?)
        }
        MeasureKind::MatchNumber => Ok(Arc::new(
            out.iter()
                .map(|o| o.matched.as_ref().map(|m| m.2))
                .collect::<Int64Array>(),
        )),
        MeasureKind::Count { .. } => Ok(Arc::new(
            states
                .iter()
                .map(|s| s.as_ref().map(|s| s.count))
                .collect::<Int64Array>(),
        )),
        MeasureKind::Aggregate { func, .. } => {
            let null = ScalarValue::try_from(ty)?;
            let values = states
                .iter()
                .map(|s| match s {
                    Some(s) => s.running.value(*func, &null),
                    None => Ok(null.clone()),
                })
                .collect::<Result<Vec<_>>>()?;
            if values.is_empty() {
                return Ok(new_null_array(ty, 0));
            }
            Ok(ScalarValue::iter_to_array(values)?)
        }
        MeasureKind::Function { .. } => Err(measures_only(kind)),
    }
}

/// Rows of the path between two states [`PathStates`] keeps.
const CHECKPOINT: usize = 64;

/// The states of the navigations one condition reads along the path being matched, kept
/// after every [`CHECKPOINT`]-th row of the path and after the last row folded. A check
/// after backtracking folds again at most `CHECKPOINT` rows plus the new ones, so a long
/// match costs O(n) time and O(n / CHECKPOINT) states, not the O(n²) of folding each
/// check's path from its first row.
#[derive(Default)]
pub(super) struct PathStates {
    /// (rows of the path folded, the state of each read after them), ascending; all but
    /// the last at a multiple of `CHECKPOINT`.
    saved: Vec<(usize, Vec<NavState>)>,
    /// The copy [`PathStates::after`] hands out, its buffers reused from check to check.
    scratch: Vec<NavState>,
}

impl PathStates {
    /// Forget what was folded past the first `stable` rows of the path (they changed).
    pub(super) fn forget_after(&mut self, stable: usize) {
        while self.saved.last().is_some_and(|(k, _)| *k > stable) {
            self.saved.pop();
        }
    }

    /// Forget everything: a new match attempt.
    pub(super) fn clear(&mut self) {
        self.saved.clear();
    }

    /// The state of each of `reads` after the rows of `path` (row `start + i` as variable
    /// `path[i]`), as a copy the caller may change.
    pub(super) fn after(
        &mut self,
        reads: &[Navigation],
        rows: &RecordBatch,
        start: usize,
        path: &[usize],
    ) -> Result<&mut [NavState]> {
        // The last state kept, taken to be extended in place unless it is a checkpoint
        // (which stays; then a copy is extended).
        let (mut k, mut states) = match self.saved.last() {
            Some((k, _)) if k % CHECKPOINT != 0 => self
                .saved
                .pop()
                .ok_or_else(|| brook_err!(Internal, "a kept match state vanished"))?,
            Some((k, s)) => (*k, s.clone()),
            None => (0, vec![NavState::default(); reads.len()]),
        };
        while k < path.len() {
            for (s, r) in states.iter_mut().zip(reads) {
                s.add(&r.kind, rows, start + k, path[k], &r.data_type)?;
            }
            k += 1;
            if k % CHECKPOINT == 0 {
                self.saved.push((k, states.clone()));
            }
        }
        self.scratch.clone_from(&states);
        if self.saved.last().map(|(j, _)| *j) != Some(k) {
            self.saved.push((k, states));
        }
        Ok(&mut self.scratch)
    }
}

/// Fold each output row's span — the rows of its match up to `upto` — with `add` (given
/// the state, the row and its variable), from `S::default()`; None for a row in no match.
/// Consecutive output rows of one match (ALL ROWS PER MATCH) extend the previous row's
/// state by their new rows rather than scan the match again: a match of n rows costs O(n),
/// not O(n²).
fn fold_spans<S: Clone + Default>(
    out: &[OutRow],
    mut add: impl FnMut(&mut S, usize, usize) -> Result<()>,
) -> Result<Vec<Option<S>>> {
    let mut states = Vec::with_capacity(out.len());
    let mut previous: Option<(&Arc<Vec<usize>>, usize, S)> = None;
    for o in out {
        let Some((start, vars, _)) = &o.matched else {
            states.push(None);
            continue;
        };
        let (mut state, from) = match previous.take() {
            Some((v, upto, s)) if Arc::ptr_eq(v, vars) && upto <= o.upto => (s, upto + 1),
            _ => (S::default(), *start),
        };
        for r in from..=o.upto {
            add(&mut state, r, vars[r - start])?;
        }
        states.push(Some(state.clone()));
        previous = Some((vars, o.upto, state));
    }
    Ok(states)
}

/// An aggregate measure so far: the combined value and how many values went in.
#[derive(Clone, Default)]
struct Running {
    acc: Option<ScalarValue>,
    n: usize,
}

impl Running {
    fn add(&mut self, func: Aggregate, v: ScalarValue) -> Result<()> {
        self.n += 1;
        self.acc = Some(match self.acc.take() {
            None => v,
            Some(acc) => match func {
                Aggregate::Sum | Aggregate::Avg => acc.add_checked(&v)?,
                Aggregate::Min if v < acc => v,
                Aggregate::Max if v > acc => v,
                Aggregate::Min | Aggregate::Max => acc,
            },
        });
        Ok(())
    }

    /// The measure's value (`null` over no values).
    fn value(&self, func: Aggregate, null: &ScalarValue) -> Result<ScalarValue> {
        match (&self.acc, func) {
            (None, _) => Ok(null.clone()),
            (Some(sum), Aggregate::Avg) => Ok(sum.div(ScalarValue::Float64(Some(self.n as f64)))?),
            (Some(acc), _) => Ok(acc.clone()),
        }
    }
}
