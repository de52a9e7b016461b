//! Values read from a match — the measures of its output rows and the navigations a
//! `DEFINE` condition reads while the match is being decided — computed per batch of
//! output rows.

use super::{in_set, Aggregate, Measure, MeasureKind, Navigation};
use brook_common::{brook_err, Result};
use datafusion::arrow::array::{
    new_null_array, Array, ArrayRef, Int64Array, StringArray, UInt32Array,
};
use datafusion::arrow::compute::{cast, take};
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::common::ScalarValue;
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
pub(super) fn read_columns(
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
    let index = |states: Vec<Option<Option<usize>>>| -> UInt32Array {
        states
            .into_iter()
            .map(|s| s.flatten().map(|r| r as u32))
            .collect()
    };
    match kind {
        MeasureKind::First { vars, col, offset } => {
            let states = fold_spans(out, |s: &mut Vec<usize>, r, v| {
                if s.len() <= *offset && in_set(*vars, v) {
                    s.push(r);
                }
                Ok(())
            })?;
            let at = states
                .into_iter()
                .map(|s| s.map(|s| s.get(*offset).copied()));
            Ok(take(
                rows.column(*col).as_ref(),
                &index(at.collect()),
                None,
            )?)
        }
        MeasureKind::Last { vars, col, offset } => {
            let states = fold_spans(out, |s: &mut Vec<usize>, r, v| {
                if in_set(*vars, v) {
                    if s.len() > *offset {
                        s.remove(0);
                    }
                    s.push(r);
                }
                Ok(())
            })?;
            let at = states
                .into_iter()
                .map(|s| s.map(|s| (s.len() == offset + 1).then(|| s[0])));
            Ok(take(
                rows.column(*col).as_ref(),
                &index(at.collect()),
                None,
            )?)
        }
        MeasureKind::Classifier => {
            let states = fold_spans(out, |s: &mut Option<usize>, _, v| {
                *s = Some(v);
                Ok(())
            })?;
            let names: StringArray = states
                .into_iter()
                .map(|s| s.flatten().map(|v| variables[v].as_str()))
                .collect();
            Ok(cast(&names, ty)?)
        }
        MeasureKind::MatchNumber => Ok(Arc::new(
            out.iter()
                .map(|o| o.matched.as_ref().map(|m| m.2))
                .collect::<Int64Array>(),
        )),
        MeasureKind::Count { vars, col } => {
            let states = fold_spans(out, |n: &mut i64, r, v| {
                if in_set(*vars, v) && col.is_none_or(|c| rows.column(c).is_valid(r)) {
                    *n += 1;
                }
                Ok(())
            })?;
            Ok(Arc::new(states.into_iter().collect::<Int64Array>()))
        }
        MeasureKind::Aggregate { func, vars, col } => {
            let column = rows.column(*col);
            let states = fold_spans(out, |acc: &mut Running, r, v| {
                if in_set(*vars, v) && column.is_valid(r) {
                    acc.add(*func, ScalarValue::try_from_array(column, r)?.cast_to(ty)?)?;
                }
                Ok(())
            })?;
            let null = ScalarValue::try_from(ty)?;
            let values = states
                .into_iter()
                .map(|s| match s {
                    Some(acc) => acc.value(*func, &null),
                    None => Ok(null.clone()),
                })
                .collect::<Result<Vec<_>>>()?;
            if values.is_empty() {
                return Ok(new_null_array(ty, 0));
            }
            Ok(ScalarValue::iter_to_array(values)?)
        }
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
