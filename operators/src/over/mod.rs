//! Window functions (`OVER (PARTITION BY ... ORDER BY ... ROWS/RANGE ...)`, running
//! aggregates, `LAG`/`LEAD`, ranking) over a changelog.
//!
//! Each partition keeps its live rows, sorted by the window's ORDER BY, with the results
//! last emitted for them. When a batch touches a partition, the partition is sorted and
//! DataFusion's window expressions evaluate over it (the same code an ad-hoc query runs);
//! the partition's previous result rows are retracted and the new ones inserted, and
//! unchanged rows cancel out before anything is emitted. An insert at the end of a running
//! sum therefore emits one row, while one in the middle re-emits the rows after it — as the
//! answer changed. Cost per touched partition is its size.
//!
//! Window functions that read a bounded number of earlier rows and no later one (`lag(x,
//! k)`, aggregates over `ROWS BETWEEN n PRECEDING AND CURRENT ROW`) or keep a running value
//! (`sum`, `count`, `min`, `max`, `row_number` from the partition's start: the node's
//! [`Shortcut`]) take a shortcut when a batch only inserts rows that sort after every row
//! of their partition, as rows arriving in time order do: only those rows and the rows
//! before them that a function reads are evaluated (a running value continues from the
//! last row's), and only the new rows' results are emitted, so a row costs the same
//! whatever the partition's size. Rows are kept in chunks merged as a binary
//! counter carries (each row is copied O(log n) times), so appending never copies the
//! whole partition either.
//!
//! Over an input whose rows never change, the node's [`Bound`] says which rows are final —
//! no row still to come sorts before them: every row without ORDER BY (a partition is in
//! arrival order), the rows before the watermark when the ORDER BY starts with the input's
//! event time (a row arriving behind the watermark is late: dropped and counted, as windows
//! and joins drop theirs). With the shortcut, a partition then keeps only its rows after the
//! final ones and the last final rows the functions read back ([`bounded`]): `lag(x, k)`
//! over a whole stream holds k rows plus those within the watermark's delay. Otherwise the
//! rows stay (a later delete or a row from the past needs them).

use crate::{change, NodeSpec, Operator};
use brook_common::{brook_err, Result};
use datafusion::arrow::array::{AsArray, Int8Array, UInt32Array};
use datafusion::arrow::compute::{concat_batches, lexsort_to_indices, SortColumn};
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::arrow::datatypes::{DataType, Float64Type};
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::arrow::row::{RowConverter, SortField};
use datafusion::common::HashMap;
use datafusion::logical_expr::WindowFrameUnits;
use datafusion::physical_expr::window::WindowExpr;
use datafusion::physical_expr::PhysicalExpr;
use datafusion::scalar::ScalarValue;
use partition::Partition;
use shortcut::{Reach, Shortcut};
use std::fmt;
use std::sync::Arc;

mod bounded;
mod partition;
pub mod shortcut;

/// Plan node of window functions sharing one PARTITION BY.
#[derive(Debug)]
pub struct OverNode {
    /// The window expressions (same PARTITION BY, each with its ORDER BY and frame).
    pub exprs: Vec<Arc<dyn WindowExpr>>,
    /// PARTITION BY expressions over the input.
    pub partition_by: Vec<Arc<dyn PhysicalExpr>>,
    /// Input schema.
    pub input_schema: SchemaRef,
    /// Output schema: the input's columns, then one per window expression.
    pub schema: SchemaRef,
    /// How the window functions' values for rows arriving after their partition's last
    /// row follow from few rows, when they all do (see the module's comment).
    pub shortcut: Option<Shortcut>,
    /// Which rows are final, when the input's rows never change (see the module's comment).
    pub bound: Option<Bound>,
}

/// Which rows of a partition no row still to come can sort before.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Bound {
    /// No ORDER BY: a partition is in arrival order, so every row is final once it arrived.
    Arrival,
    /// The ORDER BY starts with input column `time`, the event time, ascending with NULLs
    /// last: the rows before the watermark are final, and a row behind it is late.
    EventTime { time: usize },
}

impl fmt::Display for OverNode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<String> = self.exprs.iter().map(|e| e.name().to_string()).collect();
        match &self.shortcut {
            Some(s) => {
                let kept = match self
                    .bound
                    .filter(|_| exact_shortcut(self).ok().flatten().is_some())
                {
                    None => "live rows".to_string(),
                    Some(Bound::Arrival) => {
                        format!("last {}", plural_rows(s.kept_final() + s.lookahead()))
                    }
                    Some(Bound::EventTime { .. }) => format!(
                        "rows after the watermark and the {} before them",
                        plural_rows(s.kept_final() + s.lookahead())
                    ),
                };
                write!(
                    f,
                    "Over: [{}] state={kept} per partition (rows after the last{})",
                    names.join(", "),
                    shortcut_text(s)
                )
            }
            None => write!(
                f,
                "Over: [{}] state=live rows per partition (re-evaluated when touched)",
                names.join(", ")
            ),
        }
    }
}

impl NodeSpec for OverNode {
    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }
    fn updating(&self) -> bool {
        true
    }
    fn instantiate(&self) -> Result<Box<dyn Operator>> {
        Ok(Box::new(OverOp::new(self)?))
    }
}

/// How rows after a partition's last are evaluated, for EXPLAIN.
fn shortcut_text(s: &Shortcut) -> String {
    let mut how = Vec::new();
    if s.reach.iter().any(|r| matches!(r, Reach::Rows(_))) {
        how.push(format!("evaluated with the {} before them", s.lookback()));
    }
    if s.lookahead() > 0 {
        how.push(format!(
            "the last {} evaluated again",
            plural_rows(s.lookahead())
        ));
    }
    if s.reach.iter().any(|r| matches!(r, Reach::Running(_))) {
        how.push("running values continued from the last row".to_string());
    }
    match how.first() {
        None => String::new(),
        Some(first) if first.starts_with("evaluated") => format!(" {}", how.join(", ")),
        Some(_) => format!(": {}", how.join(", ")),
    }
}

/// "1 row", "3 rows".
fn plural_rows(n: usize) -> String {
    if n == 1 {
        "1 row".to_string()
    } else {
        format!("{n} rows")
    }
}

struct OverOp {
    exprs: Vec<Arc<dyn WindowExpr>>,
    partition_by: Vec<Arc<dyn PhysicalExpr>>,
    input_schema: SchemaRef,
    schema: SchemaRef,
    shortcut: Option<Shortcut>,
    /// Which rows are final (only with the shortcut: the values of rows after a partition's
    /// kept rows follow from them alone).
    bound: Option<Bound>,
    /// The input's watermark so far.
    watermark: Option<i64>,
    /// Rows dropped because they arrived behind the watermark (with [`Bound::EventTime`]).
    late: u64,
    /// Row encoding of partition keys (`None`: one partition, no PARTITION BY).
    keys: Option<RowConverter>,
    /// Row encoding of whole input rows (to find the row a delete names).
    rows: RowConverter,
    /// Row encoding of the ORDER BY keys in their order (`None` without ORDER BY: a
    /// partition is in arrival order).
    order: Option<RowConverter>,
    partitions: HashMap<Box<[u8]>, Partition>,
    /// Bytes of all partitions, kept up to date as partitions change (statistics read it
    /// after every round, so it must not cost a walk over all partitions).
    bytes: usize,
    /// Rows given to the window functions so far (what the shortcut saves shows here).
    evaluated: u64,
}

impl OverOp {
    fn new(node: &OverNode) -> Result<Self> {
        let key_types = node
            .partition_by
            .iter()
            .map(|e| Ok(SortField::new(e.data_type(&node.input_schema)?)))
            .collect::<Result<Vec<_>>>()?;
        let all = node
            .input_schema
            .fields()
            .iter()
            .map(|f| SortField::new(f.data_type().clone()))
            .collect();
        let order_fields = match node.exprs.first() {
            Some(e) => e
                .order_by()
                .iter()
                .map(|o| {
                    Ok(SortField::new_with_options(
                        o.expr.data_type(&node.input_schema)?,
                        o.options,
                    ))
                })
                .collect::<Result<Vec<_>>>()?,
            None => Vec::new(),
        };
        let shortcut = exact_shortcut(node)?;
        Ok(OverOp {
            exprs: node.exprs.clone(),
            partition_by: node.partition_by.clone(),
            input_schema: node.input_schema.clone(),
            schema: node.schema.clone(),
            bound: node.bound.filter(|_| shortcut.is_some()),
            watermark: None,
            late: 0,
            shortcut,
            keys: (!key_types.is_empty())
                .then(|| RowConverter::new(key_types))
                .transpose()?,
            rows: RowConverter::new(all)?,
            order: (!order_fields.is_empty())
                .then(|| RowConverter::new(order_fields))
                .transpose()?,
            partitions: HashMap::new(),
            bytes: 0,
            evaluated: 0,
        })
    }

    /// `rows` sorted by the window's ORDER BY (ties in their order: the sort is stable).
    fn sorted(&self, rows: &RecordBatch) -> Result<RecordBatch> {
        let Some(first) = self.exprs.first() else {
            return Ok(rows.clone());
        };
        let order = first.order_by();
        if order.is_empty() || rows.num_rows() < 2 {
            return Ok(rows.clone());
        }
        let mut columns = order
            .iter()
            .map(|o| {
                Ok(SortColumn {
                    values: o.expr.evaluate(rows)?.into_array(rows.num_rows())?,
                    options: Some(o.options),
                })
            })
            .collect::<Result<Vec<_>>>()?;
        columns.push(SortColumn {
            values: Arc::new(UInt32Array::from_iter_values(0..rows.num_rows() as u32)),
            options: None,
        });
        let idx = lexsort_to_indices(&columns, None)?;
        Ok(datafusion::arrow::compute::take_record_batch(rows, &idx)?)
    }

    /// Sorted rows with the window columns.
    fn evaluate(&mut self, sorted: &RecordBatch) -> Result<RecordBatch> {
        let mut cols = sorted.columns().to_vec();
        for e in &self.exprs {
            if e.order_by() != self.exprs[0].order_by() {
                return Err(brook_err!(
                    Unsupported,
                    "window functions with different ORDER BY in one continuous query"
                ));
            }
            cols.push(e.evaluate(sorted)?);
        }
        self.evaluated += sorted.num_rows() as u64;
        Ok(RecordBatch::try_new(self.schema.clone(), cols)?)
    }

    /// The input columns of result rows.
    fn input_part(&self, results: &RecordBatch) -> Result<RecordBatch> {
        let n = self.input_schema.fields().len();
        Ok(RecordBatch::try_new(
            self.input_schema.clone(),
            results.columns()[..n].to_vec(),
        )?)
    }

    /// Whether every row of `new` (sorted) sorts at or after the partition's last row
    /// (strictly after, when `strictly`).
    fn after_last(&self, p: &Partition, new: &RecordBatch, strictly: bool) -> Result<bool> {
        let Some(conv) = &self.order else {
            return Ok(true);
        };
        let Some(last) = p.chunks.last().filter(|c| c.num_rows() > 0) else {
            return Ok(true);
        };
        let last = self.input_part(&last.slice(last.num_rows() - 1, 1))?;
        let keys = |b: &RecordBatch| -> Result<_> {
            let cols = self.exprs[0]
                .order_by()
                .iter()
                .map(|o| Ok(o.expr.evaluate(b)?.into_array(b.num_rows())?))
                .collect::<Result<Vec<_>>>()?;
            Ok(conv.convert_columns(&cols)?)
        };
        let (last, first) = (keys(&last)?, keys(&new.slice(0, 1))?);
        Ok(if strictly {
            first.row(0) > last.row(0)
        } else {
            first.row(0) >= last.row(0)
        })
    }

    /// The shortcut: `new` (sorted, after every row of `p`) appended to `p`, evaluated
    /// with the rows before it that each function reads, and the last rows whose values
    /// read rows after them (`lead`) evaluated again; returns the changed rows.
    fn append(
        &mut self,
        p: &mut Partition,
        new: &RecordBatch,
        shortcut: &Shortcut,
    ) -> Result<Option<RecordBatch>> {
        let ahead = shortcut.lookahead().min(p.rows());
        let tail = p.last_rows(shortcut.kept_final() + ahead, &self.schema)?;
        let split = tail.num_rows() - ahead;
        let redo = tail.slice(split, ahead);
        let rows = concat_batches(&self.input_schema, [&self.input_part(&redo)?, new])?;
        let fresh = self.continue_from(&tail.slice(0, split), &rows, shortcut)?;
        p.drop_last(ahead);
        p.push(fresh.clone())?;
        self.changes(&redo, &fresh)
    }

    /// The rows of `new` not in `old` as inserts, those of `old` not in `new` as deletes.
    fn changes(&self, old: &RecordBatch, new: &RecordBatch) -> Result<Option<RecordBatch>> {
        if old.num_rows() == 0 {
            return (new.num_rows() > 0)
                .then(|| self.with_kind(new, change::INSERT))
                .transpose();
        }
        let parts = [
            self.with_kind(old, change::DELETE)?,
            self.with_kind(new, change::INSERT)?,
        ];
        let all = concat_batches(&change::with_change_field(&self.schema), &parts)?;
        let changed = change::consolidate(&all)?;
        Ok((changed.num_rows() > 0).then_some(changed))
    }

    /// The window values of `new` (sorted input rows) following `before`, the rows just
    /// before them with their results (the partition's first rows when `before` is empty;
    /// at least the rows each function reads back otherwise): functions reading rows back
    /// are evaluated over `before`'s last rows and `new`, running ones continue from
    /// `before`'s last row.
    fn continue_from(
        &mut self,
        before: &RecordBatch,
        new: &RecordBatch,
        shortcut: &Shortcut,
    ) -> Result<RecordBatch> {
        let back = shortcut.lookback().min(before.num_rows());
        let context = self.input_part(&before.slice(before.num_rows() - back, back))?;
        let window = concat_batches(&self.input_schema, [&context, new])?;
        let inputs = self.input_schema.fields().len();
        let mut cols = new.columns().to_vec();
        for (i, (e, reach)) in self.exprs.iter().zip(&shortcut.reach).enumerate() {
            cols.push(match reach {
                Reach::Rows(_) | Reach::Ahead(_) => {
                    e.evaluate(&window)?.slice(back, new.num_rows())
                }
                Reach::Running(shortcut::Running::Sum)
                    if self.schema.field(inputs + i).data_type() == &DataType::Float64 =>
                {
                    let last = match before.num_rows().checked_sub(1) {
                        None => None,
                        Some(row) => {
                            match ScalarValue::try_from_array(before.column(inputs + i), row)? {
                                ScalarValue::Float64(v) => v,
                                other => {
                                    return Err(brook_err!(
                                        Internal,
                                        "a double precision running sum was {other:?}"
                                    ))
                                }
                            }
                        }
                    };
                    let args = e
                        .expressions()
                        .first()
                        .ok_or_else(|| brook_err!(Internal, "sum without an argument"))?
                        .evaluate(new)?
                        .into_array(new.num_rows())?;
                    let args = datafusion::arrow::compute::cast(&args, &DataType::Float64)?;
                    let args = args.as_primitive::<Float64Type>();
                    shortcut::float_running_sum(last, args, &self.frame_ends(e.as_ref(), new)?)
                }
                Reach::Running(kind) => {
                    let partial = e.evaluate(new)?;
                    match before.num_rows().checked_sub(1) {
                        None => partial,
                        Some(last) => {
                            let from =
                                ScalarValue::try_from_array(before.column(inputs + i), last)?;
                            shortcut::continue_running(*kind, &from, &partial)?
                        }
                    }
                }
            });
        }
        self.evaluated += (window.num_rows() + new.num_rows()) as u64;
        Ok(RecordBatch::try_new(self.schema.clone(), cols)?)
    }

    /// Where each row's frame of a running function ends among `rows` (sorted): after the
    /// row under ROWS, after its last peer otherwise.
    fn frame_ends(&self, e: &dyn WindowExpr, rows: &RecordBatch) -> Result<Vec<usize>> {
        let n = rows.num_rows();
        let (Some(conv), WindowFrameUnits::Range | WindowFrameUnits::Groups) =
            (&self.order, e.get_window_frame().units)
        else {
            return Ok((1..=n).collect());
        };
        let cols = e
            .order_by()
            .iter()
            .map(|o| Ok(o.expr.evaluate(rows)?.into_array(n)?))
            .collect::<Result<Vec<_>>>()?;
        let keys = conv.convert_columns(&cols)?;
        let mut ends = vec![n; n];
        for i in (0..n.saturating_sub(1)).rev() {
            ends[i] = if keys.row(i) == keys.row(i + 1) {
                ends[i + 1]
            } else {
                i + 1
            };
        }
        Ok(ends)
    }

    fn with_kind(&self, b: &RecordBatch, kind: i8) -> Result<RecordBatch> {
        change::attach(
            &self.schema,
            b.columns().to_vec(),
            Arc::new(Int8Array::from_value(kind, b.num_rows())),
        )
    }

    /// A partition's change by `ins` and `del` (rows of `data`); the changed rows to emit.
    fn change_partition(
        &mut self,
        p: &mut Partition,
        data: &RecordBatch,
        ins: &[u32],
        del: &[u32],
    ) -> Result<Option<RecordBatch>> {
        if del.is_empty() && !p.chunks.is_empty() {
            if let Some(shortcut) = self.shortcut.clone() {
                let new = self.sorted(&take_rows(data, ins)?)?;
                if self.after_last(p, &new, shortcut.strictly_after)? {
                    return self.append(p, &new, &shortcut);
                }
                if self.bound.is_some() {
                    return self.insert_among_live(p, &new, &shortcut);
                }
            }
        }
        let old = (!p.chunks.is_empty())
            .then(|| p.all(&self.schema))
            .transpose()?;
        let mut rows = match &old {
            Some(o) => self.input_part(o)?,
            None => RecordBatch::new_empty(self.input_schema.clone()),
        };
        // Inserts first: a batch may delete a row it inserts.
        if !ins.is_empty() {
            rows = concat_batches(&self.input_schema, &[rows, take_rows(data, ins)?])?;
        }
        if !del.is_empty() {
            let gone = take_rows(data, del)?;
            rows = remove_rows(&self.rows, &rows, &gone)?;
        }
        let new = if rows.num_rows() > 0 {
            let sorted = self.sorted(&rows)?;
            Some(self.evaluate(&sorted)?)
        } else {
            None
        };
        let mut parts = Vec::new();
        if let Some(o) = &old {
            parts.push(self.with_kind(o, change::DELETE)?);
        }
        if let Some(nb) = &new {
            parts.push(self.with_kind(nb, change::INSERT)?);
        }
        p.chunks = new.into_iter().collect();
        if parts.is_empty() {
            return Ok(None);
        }
        let all = concat_batches(&change::with_change_field(&self.schema), &parts)?;
        let c = change::consolidate(&all)?;
        Ok((c.num_rows() > 0).then_some(c))
    }
}

impl Operator for OverOp {
    fn on_data(&mut self, _port: usize, batch: RecordBatch) -> Result<Vec<RecordBatch>> {
        let kinds = change::kinds(&batch)?.clone();
        let data = change::strip(&batch)?;
        let n = data.num_rows();
        let keep = self.keep(&data, &kinds)?;
        let key_rows = crate::key_rows(self.keys.as_ref(), &self.partition_by, &data)?;
        // Rows of the batch per partition, inserts and deletes apart.
        let mut touched: Vec<Box<[u8]>> = Vec::new();
        let mut changes: HashMap<Box<[u8]>, InsertsDeletes> = HashMap::new();
        for i in (0..n).filter(|i| keep.as_ref().is_none_or(|k| k[*i])) {
            let key: Box<[u8]> = match &key_rows {
                Some(r) => r.row(i).data().into(),
                None => Box::new([]),
            };
            let e = changes.entry(key.clone()).or_insert_with(|| {
                touched.push(key);
                (Vec::new(), Vec::new())
            });
            if kinds.value(i) == change::DELETE {
                e.1.push(i as u32);
            } else {
                e.0.push(i as u32);
            }
        }
        let mut out = Vec::new();
        for key in touched {
            let (ins, del) = changes.remove(&key).unwrap_or_default();
            let mut p = self.partitions.remove(&key).unwrap_or_default();
            self.bytes = self.bytes.saturating_sub(p.bytes());
            if let Some(c) = self.change_partition(&mut p, &data, &ins, &del)? {
                out.push(c);
            }
            self.prune(&mut p)?;
            if !p.chunks.is_empty() {
                self.bytes += p.bytes();
                self.partitions.insert(key, p);
            }
        }
        Ok(out)
    }

    fn on_watermark(&mut self, watermark: i64) -> Result<Vec<RecordBatch>> {
        self.watermark = Some(watermark);
        Ok(Vec::new())
    }

    fn state_size(&self) -> usize {
        self.bytes
    }

    fn late_rows(&self) -> u64 {
        self.late
    }
}

/// The node's shortcut, unless a running function of it would not continue exactly over
/// its type (see [`Shortcut::exact_for`]).
fn exact_shortcut(node: &OverNode) -> Result<Option<Shortcut>> {
    let Some(s) = &node.shortcut else {
        return Ok(None);
    };
    if s.reach.len() != node.exprs.len() {
        return Err(brook_err!(
            Internal,
            "window shortcut for {} functions, the node has {}",
            s.reach.len(),
            node.exprs.len()
        ));
    }
    let inputs = node.input_schema.fields().len();
    let exact = s.reach.iter().enumerate().all(|(i, r)| match r {
        Reach::Rows(_) | Reach::Ahead(_) => true,
        Reach::Running(kind) => node
            .schema
            .fields()
            .get(inputs + i)
            .is_some_and(|f| Shortcut::exact_for(*kind, f.data_type())),
    });
    Ok(exact.then(|| s.clone()))
}

/// Rows of a batch (by index) inserted into and deleted from one partition.
type InsertsDeletes = (Vec<u32>, Vec<u32>);

fn take_rows(b: &RecordBatch, idx: &[u32]) -> Result<RecordBatch> {
    let idx = UInt32Array::from(idx.to_vec());
    Ok(datafusion::arrow::compute::take_record_batch(b, &idx)?)
}

/// `rows` without one copy of each row of `gone`.
fn remove_rows(conv: &RowConverter, rows: &RecordBatch, gone: &RecordBatch) -> Result<RecordBatch> {
    let have = conv.convert_columns(rows.columns())?;
    let del = conv.convert_columns(gone.columns())?;
    let mut pending: HashMap<&[u8], usize> = HashMap::new();
    for i in 0..gone.num_rows() {
        *pending.entry(del.row(i).data()).or_insert(0) += 1;
    }
    let mut keep = Vec::with_capacity(rows.num_rows());
    for i in 0..rows.num_rows() {
        match pending.get_mut(have.row(i).data()) {
            Some(n) if *n > 0 => *n -= 1,
            _ => keep.push(i as u32),
        }
    }
    if pending.values().any(|n| *n > 0) {
        return Err(brook_err!(
            Internal,
            "window input retracted a row it never inserted"
        ));
    }
    take_rows(rows, &keep)
}

#[cfg(test)]
mod tests;
