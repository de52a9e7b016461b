//! Runtime state of `MATCH_RECOGNIZE`: per partition, the rows from the first one a match
//! may still start at (plus the rows `PREV` reads back), with the variables each row can be.

use super::pattern::Outcome;
use super::{AfterMatch, Aggregate, MatchRecognizeNode, MeasureKind, RowsPerMatch};
use crate::{change, Operator};
use brook_common::{brook_err, Result};
use datafusion::arrow::array::{
    new_null_array, Array, ArrayRef, BooleanArray, Int64Array, StringArray, UInt32Array,
};
use datafusion::arrow::compute::{cast, concat_batches, interleave, take};
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::arrow::row::{RowConverter, SortField};
use datafusion::common::{HashMap, ScalarValue};
use std::sync::Arc;

/// One partition's rows still needed.
pub(super) struct Partition {
    /// The rows kept, in order.
    pub(super) rows: RecordBatch,
    /// Bit v of `eligible[i]`: row i can be variable v.
    eligible: Vec<u64>,
    /// Rows of the partition dropped before `rows[0]`.
    dropped: u64,
    /// Where the next match attempt starts (index into `rows`).
    next: usize,
    /// Matches found so far.
    matches: i64,
    /// The order key of the last row taken (rows behind it are late).
    last_order: Option<Vec<u8>>,
}

/// One partition's share of a batch.
struct Group {
    key: Vec<u8>,
    /// Its rows of the batch, in order.
    rows: Vec<u32>,
    /// Its kept rows that `PREV` may read (the last ones).
    tail: RecordBatch,
}

/// A row of output: the input row it carries and the rows its measures cover.
struct OutRow {
    /// Input row (index into the partition's rows) whose columns the output row carries.
    row: usize,
    /// The match: its first row, the variable of each row, and its number; None for an
    /// unmatched row.
    matched: Option<(usize, Arc<Vec<usize>>, i64)>,
    /// Rows of the match the measures cover (all of it, or up to the output row).
    upto: usize,
}

/// The operator.
pub struct MatchRecognizeOp {
    node: MatchRecognizeNode,
    keys: Option<RowConverter>,
    order_rows: RowConverter,
    pub(super) partitions: HashMap<Vec<u8>, Partition>,
    /// Extended schema the conditions read: the input's columns, then the `PREV` columns.
    extended: SchemaRef,
    history: usize,
    late: u64,
}

impl MatchRecognizeOp {
    /// Fresh state for `node`.
    pub fn new(node: &MatchRecognizeNode) -> Result<Self> {
        let sort_fields = |cols: &[usize]| -> Vec<SortField> {
            cols.iter()
                .map(|&c| SortField::new(node.input_schema.field(c).data_type().clone()))
                .collect()
        };
        let mut fields: Vec<Field> = node
            .input_schema
            .fields()
            .iter()
            .map(|f| f.as_ref().clone())
            .collect();
        for (i, p) in node.prev.iter().enumerate() {
            let f = node.input_schema.field(p.col);
            fields.push(Field::new(
                format!("__prev_{i}"),
                f.data_type().clone(),
                true,
            ));
        }
        Ok(MatchRecognizeOp {
            node: node.clone(),
            keys: (!node.partition.is_empty())
                .then(|| RowConverter::new(sort_fields(&node.partition)))
                .transpose()?,
            order_rows: RowConverter::new(sort_fields(&node.order))?,
            partitions: HashMap::new(),
            extended: Arc::new(Schema::new(fields)),
            history: node.prev.iter().map(|p| p.offset).max().unwrap_or(0),
            late: 0,
        })
    }

    /// No rows follow: decide every match still open (the ad-hoc form over a table).
    pub fn finish(&mut self) -> Result<Vec<RecordBatch>> {
        let mut out = Vec::new();
        let mut keys: Vec<Vec<u8>> = self.partitions.keys().cloned().collect();
        keys.sort();
        for k in keys {
            if let Some(mut p) = self.partitions.remove(&k) {
                if let Some(b) = self.advance(&mut p, true)? {
                    out.push(b);
                }
            }
        }
        Ok(out)
    }

    /// The variables each row of `data` can be (bit v: variable v), evaluated once over the
    /// whole batch: a `PREV(col, k)` column holds, for each row, the value of the row k before
    /// it in its partition — an earlier row of the batch or one of the partition's kept rows
    /// (`groups`: each partition's rows of the batch in order, with its kept tail).
    fn eligibility(&self, data: &RecordBatch, groups: &[Group]) -> Result<Vec<u64>> {
        let n = data.num_rows();
        let mut cols: Vec<ArrayRef> = data.columns().to_vec();
        if !self.node.prev.is_empty() {
            // Where each row's k-th predecessor is: (source, row); source 0 is the batch,
            // 1 + g the kept tail of group g, the last a single NULL.
            let null_source = 1 + groups.len();
            for p in &self.node.prev {
                let mut at = vec![(null_source, 0usize); n];
                for (g, group) in groups.iter().enumerate() {
                    let h = group.tail.num_rows();
                    for (q, &i) in group.rows.iter().enumerate() {
                        let back = h + q;
                        if back >= p.offset {
                            let before = back - p.offset;
                            at[i as usize] = if before < h {
                                (1 + g, before)
                            } else {
                                (0, group.rows[before - h] as usize)
                            };
                        }
                    }
                }
                let column = data.column(p.col);
                let null = new_null_array(column.data_type(), 1);
                let mut sources: Vec<&dyn Array> = vec![column.as_ref()];
                sources.extend(groups.iter().map(|g| g.tail.column(p.col).as_ref()));
                sources.push(null.as_ref());
                cols.push(interleave(&sources, &at)?);
            }
        }
        let ext = RecordBatch::try_new(self.extended.clone(), cols)?;
        let mut bits = vec![0u64; n];
        for (v, cond) in self.node.conditions.iter().enumerate() {
            let Some(cond) = cond else {
                bits.iter_mut().for_each(|b| *b |= 1 << v);
                continue;
            };
            let mask = cond.evaluate(&ext)?.into_array(n)?;
            let mask = mask
                .as_any()
                .downcast_ref::<BooleanArray>()
                .ok_or_else(|| brook_err!(Internal, "DEFINE condition is not boolean"))?;
            for (i, b) in bits.iter_mut().enumerate() {
                if mask.is_valid(i) && mask.value(i) {
                    *b |= 1 << v;
                }
            }
        }
        Ok(bits)
    }

    /// Decide what the rows seen decide; the output rows, as one batch.
    fn advance(&self, p: &mut Partition, finished: bool) -> Result<Option<RecordBatch>> {
        let mut out: Vec<OutRow> = Vec::new();
        let all = matches!(self.node.rows_per_match, RowsPerMatch::All { .. });
        let unmatched = self.node.rows_per_match == RowsPerMatch::All { unmatched: true };
        while p.next < p.eligible.len() {
            let start = p.next;
            let first = p.dropped == 0 && start == 0;
            match self.node.program.run(&p.eligible, start, first, finished)? {
                Outcome::NeedMore => break,
                Outcome::NoMatch => {
                    if unmatched {
                        out.push(OutRow {
                            row: start,
                            matched: None,
                            upto: start,
                        });
                    }
                    p.next += 1;
                }
                Outcome::Match(vars) => {
                    p.matches += 1;
                    let len = vars.len();
                    let vars = Arc::new(vars);
                    if all {
                        for j in 0..len {
                            out.push(OutRow {
                                row: start + j,
                                matched: Some((start, vars.clone(), p.matches)),
                                upto: start + j,
                            });
                        }
                    } else {
                        out.push(OutRow {
                            row: start,
                            matched: Some((start, vars.clone(), p.matches)),
                            upto: start + len - 1,
                        });
                    }
                    p.next = self.skip_to(start, &vars)?;
                }
            }
        }
        let batch = if out.is_empty() {
            None
        } else {
            Some(self.output(&p.rows, &out)?)
        };
        // Keep rows from the next attempt on, and the rows PREV reads before the newest.
        let keep_from = p.next.min(p.rows.num_rows().saturating_sub(self.history));
        if keep_from > 0 {
            p.rows = p.rows.slice(keep_from, p.rows.num_rows() - keep_from);
            p.eligible.drain(..keep_from);
            p.next -= keep_from;
            p.dropped += keep_from as u64;
        }
        Ok(batch)
    }

    /// Where the next attempt starts after a match at `start` of `vars`.
    fn skip_to(&self, start: usize, vars: &[usize]) -> Result<usize> {
        let at = match self.node.after_match {
            AfterMatch::PastLastRow => return Ok(start + vars.len()),
            AfterMatch::ToNextRow => return Ok(start + 1),
            AfterMatch::ToFirst(v) => vars.iter().position(|x| *x == v),
            AfterMatch::ToLast(v) => vars.iter().rposition(|x| *x == v),
        };
        match at {
            Some(i) if i > 0 => Ok(start + i),
            _ => Err(brook_err!(
                InvalidParameter,
                "AFTER MATCH SKIP TO {} would start the next match where this one started \
                 (or at a variable the match does not have)",
                match self.node.after_match {
                    AfterMatch::ToFirst(v) => format!("FIRST {}", self.node.variables[v]),
                    AfterMatch::ToLast(v) => format!("LAST {}", self.node.variables[v]),
                    _ => String::new(),
                }
            )),
        }
    }

    /// The output batch of `out` over the partition's `rows`.
    fn output(&self, rows: &RecordBatch, out: &[OutRow]) -> Result<RecordBatch> {
        let (lead, rest) = self.node.carried_columns();
        let at = UInt32Array::from(out.iter().map(|o| o.row as u32).collect::<Vec<_>>());
        let mut cols: Vec<ArrayRef> = Vec::new();
        for &c in &lead {
            cols.push(take(rows.column(c).as_ref(), &at, None)?);
        }
        for (m, measure) in self.node.measures.iter().enumerate() {
            let ty = self.node.schema.field(lead.len() + m).data_type().clone();
            cols.push(self.measure(rows, out, &measure.kind, &ty)?);
        }
        for &c in &rest {
            cols.push(take(rows.column(c).as_ref(), &at, None)?);
        }
        Ok(RecordBatch::try_new(self.node.schema.clone(), cols)?)
    }

    /// One measure's column.
    fn measure(
        &self,
        rows: &RecordBatch,
        out: &[OutRow],
        kind: &MeasureKind,
        ty: &DataType,
    ) -> Result<ArrayRef> {
        let of_var = |var: &Option<usize>, v: usize| var.is_none_or(|x| x == v);
        let index = |states: Vec<Option<Option<usize>>>| -> UInt32Array {
            states
                .into_iter()
                .map(|s| s.flatten().map(|r| r as u32))
                .collect()
        };
        match kind {
            MeasureKind::First { var, col } => {
                let states = fold_spans(out, |s: &mut Option<usize>, r, v| {
                    if s.is_none() && of_var(var, v) {
                        *s = Some(r);
                    }
                    Ok(())
                })?;
                Ok(take(rows.column(*col).as_ref(), &index(states), None)?)
            }
            MeasureKind::Last { var, col } => {
                let states = fold_spans(out, |s: &mut Option<usize>, r, v| {
                    if of_var(var, v) {
                        *s = Some(r);
                    }
                    Ok(())
                })?;
                Ok(take(rows.column(*col).as_ref(), &index(states), None)?)
            }
            MeasureKind::Classifier => {
                let states = fold_spans(out, |s: &mut Option<usize>, _, v| {
                    *s = Some(v);
                    Ok(())
                })?;
                let names: StringArray = states
                    .into_iter()
                    .map(|s| s.flatten().map(|v| self.node.variables[v].as_str()))
                    .collect();
                Ok(cast(&names, ty)?)
            }
            MeasureKind::MatchNumber => Ok(Arc::new(
                out.iter()
                    .map(|o| o.matched.as_ref().map(|m| m.2))
                    .collect::<Int64Array>(),
            )),
            MeasureKind::Count { var, col } => {
                let states = fold_spans(out, |n: &mut i64, r, v| {
                    if of_var(var, v) && col.is_none_or(|c| rows.column(c).is_valid(r)) {
                        *n += 1;
                    }
                    Ok(())
                })?;
                Ok(Arc::new(states.into_iter().collect::<Int64Array>()))
            }
            MeasureKind::Aggregate { func, var, col } => {
                let column = rows.column(*col);
                let states = fold_spans(out, |acc: &mut Running, r, v| {
                    if of_var(var, v) && column.is_valid(r) {
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
}

/// Fold each output row's span — the rows of its match up to the row it shows — with `add`
/// (given the state, the row and its variable), from `S::default()`; None for a row in no
/// match. Consecutive output rows of one match (ALL ROWS PER MATCH) extend the previous
/// row's state by their new rows rather than scan the match again: a match of n rows costs
/// O(n), not O(n²).
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
            Some((v, upto, s)) if Arc::ptr_eq(v, vars) && upto < o.upto => (s, upto + 1),
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

impl Operator for MatchRecognizeOp {
    fn on_data(&mut self, _port: usize, batch: RecordBatch) -> Result<Vec<RecordBatch>> {
        if !change::all_inserts(&batch)? {
            return Err(brook_err!(
                Internal,
                "MATCH_RECOGNIZE input retracted a row (it reads only append-only inputs)"
            ));
        }
        let data = change::strip(&batch)?;
        let n = data.num_rows();
        // Rows per partition, in arrival order.
        let mut groups: Vec<(Vec<u8>, Vec<u32>)> = Vec::new();
        let key_rows = match &self.keys {
            Some(conv) => {
                let cols: Vec<ArrayRef> = self
                    .node
                    .partition
                    .iter()
                    .map(|&c| data.column(c).clone())
                    .collect();
                Some(conv.convert_columns(&cols)?)
            }
            None => None,
        };
        let order_cols: Vec<ArrayRef> = self
            .node
            .order
            .iter()
            .map(|&c| data.column(c).clone())
            .collect();
        let order = self.order_rows.convert_columns(&order_cols)?;
        let mut slot: HashMap<&[u8], usize> = HashMap::new();
        for i in 0..n {
            let key: &[u8] = key_rows.as_ref().map_or(&[], |k| k.row(i).data());
            let at = *slot.entry(key).or_insert_with(|| {
                groups.push((key.to_vec(), Vec::new()));
                groups.len() - 1
            });
            groups[at].1.push(i as u32);
        }
        // Each partition's rows in order (rows behind its order so far are late: dropped,
        // counted), with the rows PREV reads back from before this batch.
        let mut accepted: Vec<Group> = Vec::with_capacity(groups.len());
        for (key, idx) in groups {
            let schema = self.node.input_schema.clone();
            let p = self
                .partitions
                .entry(key.clone())
                .or_insert_with(|| Partition {
                    rows: RecordBatch::new_empty(schema),
                    eligible: Vec::new(),
                    dropped: 0,
                    next: 0,
                    matches: 0,
                    last_order: None,
                });
            let mut rows: Vec<u32> = Vec::with_capacity(idx.len());
            for i in idx {
                let o = order.row(i as usize).data();
                let behind = match rows.last() {
                    Some(&j) => o < order.row(j as usize).data(),
                    None => p.last_order.as_deref().is_some_and(|last| o < last),
                };
                if behind {
                    self.late += 1;
                    continue;
                }
                rows.push(i);
            }
            if let Some(&j) = rows.last() {
                p.last_order = Some(order.row(j as usize).data().to_vec());
            }
            let h = self.history.min(p.rows.num_rows());
            let tail = p.rows.slice(p.rows.num_rows() - h, h);
            accepted.push(Group { key, rows, tail });
        }
        let bits = self.eligibility(&data, &accepted)?;
        let mut out = Vec::new();
        for group in accepted {
            let Some(mut p) = self.partitions.remove(&group.key) else {
                continue;
            };
            let new = take_batch(&data, &group.rows)?;
            p.rows = concat_batches(&self.node.input_schema, [&p.rows, &new])?;
            p.eligible
                .extend(group.rows.iter().map(|&i| bits[i as usize]));
            if let Some(b) = self.advance(&mut p, false)? {
                out.push(b);
            }
            self.partitions.insert(group.key, p);
        }
        out.into_iter()
            .map(|b| {
                let rows = b.num_rows();
                change::attach(
                    &self.node.schema,
                    b.columns().to_vec(),
                    change::constant(change::INSERT, rows),
                )
            })
            .collect()
    }

    fn state_size(&self) -> usize {
        self.partitions
            .values()
            .map(|p| p.rows.get_array_memory_size() + p.eligible.len() * 8)
            .sum()
    }

    fn late_rows(&self) -> u64 {
        self.late
    }
}

fn take_batch(data: &RecordBatch, idx: &[u32]) -> Result<RecordBatch> {
    let at = UInt32Array::from(idx.to_vec());
    let cols = data
        .columns()
        .iter()
        .map(|c| Ok(take(c.as_ref(), &at, None)?))
        .collect::<Result<Vec<_>>>()?;
    Ok(RecordBatch::try_new(data.schema(), cols)?)
}
