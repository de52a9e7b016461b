//! GROUP BY with retraction: a changelog of each group's current aggregate values.
//!
//! Each group keeps one DataFusion `Accumulator` per aggregate: it can be evaluated at any
//! time without losing state, and freed on its own. A batch reaches them in one of two ways:
//! - over an append-only input, an aggregate with a DataFusion `GroupsAccumulator` (sum,
//!   count, avg, min, max, ...) is fed whole batches with a group index per row (no per-group
//!   work per batch); at the barrier its state for the groups touched in the round is merged
//!   into their accumulators, one merge per group and round. (A `GroupsAccumulator` alone
//!   will not do: it can only be read by emptying it, and frees no single group.)
//! - otherwise the batch is sorted by group (a counting sort, then one `take`) and each
//!   group's accumulator gets zero-copy slices of its rows: one `update_batch` /
//!   `retract_batch` call per group and batch, never per row.
//!
//! At the next barrier (the end of a transaction's input) or watermark, every group touched
//! since emits the delete of its previous output row and the insert of its new one, unless
//! the values did not change: a COPY of a million rows in many batches emits each group once,
//! not once per batch (which, for large values such as sketches, cost more than the
//! aggregation). A group whose rows were all retracted is deleted and its state freed. A
//! global aggregate (no GROUP BY) always has its one row, as `SELECT count(*) FROM empty` has
//! in SQL.
//!
//! Windowed grouping (a `window_end` key over event time): once the watermark passes a
//! window's end its state is freed and rows that still arrive for it are counted as late and
//! dropped. With `EMIT ON WINDOW CLOSE` nothing is emitted before that moment, and then only
//! the final insert: an append-only result.

use crate::group_index::{BatchKeys, GroupIndex, GroupKey};
use crate::{change, NodeSpec, Operator};
use brook_common::{BrookError, Result};
use datafusion::arrow::array::{Array, ArrayRef, AsArray, BooleanArray, Int8Array, UInt32Array};
use datafusion::arrow::compute::kernels::boolean::and;
use datafusion::arrow::compute::{cast, filter, prep_null_mask_filter, take};
use datafusion::arrow::datatypes::{DataType, SchemaRef, TimeUnit, TimestampMicrosecondType};
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::common::ScalarValue;
use datafusion::logical_expr::{Accumulator, EmitTo, GroupsAccumulator};
use datafusion::physical_expr::aggregate::AggregateFunctionExpr;
use datafusion::physical_expr::PhysicalExpr;
use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

/// One aggregate call of the node.
#[derive(Debug, Clone)]
pub struct AggregateCall {
    /// The aggregate function with its argument expressions.
    pub expr: Arc<AggregateFunctionExpr>,
    /// `FILTER (WHERE ...)`.
    pub filter: Option<Arc<dyn PhysicalExpr>>,
}

/// Windowed grouping: which group key is the window's end (event-time microseconds).
#[derive(Debug, Clone, Copy)]
pub struct WindowClose {
    /// Index of the `window_end` key among the group expressions.
    pub end_key: usize,
    /// `EMIT ON WINDOW CLOSE`: emit each window once, when the watermark passes its end.
    pub emit_on_close: bool,
}

/// Plan node of a grouped aggregation.
#[derive(Debug)]
pub struct AggregateNode {
    /// Group key expressions over the input schema.
    pub group_exprs: Vec<Arc<dyn PhysicalExpr>>,
    /// The aggregates.
    pub aggs: Vec<AggregateCall>,
    /// Output schema: group keys, then aggregates.
    pub schema: SchemaRef,
    /// Whether the input retracts (accumulators must then support retraction).
    pub input_updating: bool,
    /// Windowed grouping, when a key is a window end over event time.
    pub window: Option<WindowClose>,
}

impl AggregateNode {
    /// Check that every aggregate can run on this input (retraction where the input retracts).
    pub fn validate(&self) -> Result<()> {
        for a in &self.aggs {
            self.accumulator(a)?;
        }
        Ok(())
    }

    /// Whether `a` is fed through a vectorised `GroupsAccumulator` (append-only input only:
    /// those cannot retract).
    fn vectorised(&self, a: &AggregateCall) -> bool {
        !self.input_updating && a.expr.groups_accumulator_supported()
    }

    fn accumulator(&self, a: &AggregateCall) -> Result<Box<dyn Accumulator>> {
        if !self.input_updating {
            return Ok(a.expr.create_accumulator()?);
        }
        // min/max/first/last have sliding accumulators that retract only in arrival order
        // (for window frames); a changelog retracts any row, so they would be wrong.
        let name = a.expr.fun().name().to_ascii_lowercase();
        let order_only = ["min", "max", "first_value", "last_value", "nth_value"];
        let ok = !order_only.contains(&name.as_str());
        match a.expr.create_sliding_accumulator() {
            Ok(acc) if ok && acc.supports_retract_batch() => Ok(acc),
            _ => Err(BrookError::unsupported(format!(
                "{name}() over an updating input in a continuous query (its accumulator cannot retract rows)"
            ))),
        }
    }
}

impl fmt::Display for AggregateNode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let keys: Vec<String> = self.group_exprs.iter().map(|e| e.to_string()).collect();
        let aggs: Vec<String> = self
            .aggs
            .iter()
            .map(|a| a.expr.name().to_string())
            .collect();
        write!(
            f,
            "Aggregate: keys=[{}] aggs=[{}] state=per-group accumulators{}",
            keys.join(", "),
            aggs.join(", "),
            if self.input_updating {
                " (retracting)"
            } else {
                ""
            }
        )?;
        let vectorised: Vec<&str> = self
            .aggs
            .iter()
            .filter(|a| self.vectorised(a))
            .map(|a| a.expr.name())
            .collect();
        if !vectorised.is_empty() {
            write!(f, " vectorised=[{}]", vectorised.join(", "))?;
        }
        if let Some(w) = &self.window {
            write!(
                f,
                " window_end=key#{} emit={}",
                w.end_key,
                if w.emit_on_close {
                    "on window close"
                } else {
                    "on update"
                }
            )?;
        }
        Ok(())
    }
}

impl NodeSpec for AggregateNode {
    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }
    fn updating(&self) -> bool {
        // Emit-on-close emits final rows only; a pure GROUP BY (DISTINCT) over appends only
        // ever adds groups.
        if self.window.is_some_and(|w| w.emit_on_close) {
            return false;
        }
        self.input_updating || !self.aggs.is_empty()
    }
    fn instantiate(&self) -> Result<Box<dyn Operator>> {
        let key_types: Vec<DataType> = self
            .schema
            .fields()
            .iter()
            .take(self.group_exprs.len())
            .map(|f| f.data_type().clone())
            .collect();
        let index = GroupIndex::new(&key_types)?;
        let vectorised = self
            .aggs
            .iter()
            .map(|a| {
                if !self.vectorised(a) {
                    return Ok(None);
                }
                Ok(Some(a.expr.create_groups_accumulator()?))
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(Box::new(AggregateOp {
            node: AggregateNode {
                group_exprs: self.group_exprs.clone(),
                aggs: self.aggs.clone(),
                schema: self.schema.clone(),
                input_updating: self.input_updating,
                window: self.window,
            },
            index,
            groups: Vec::new(),
            free: Vec::new(),
            vectorised,
            delta_slots: Vec::new(),
            by_end: BTreeMap::new(),
            watermark: None,
            late: 0,
            started: false,
            bytes: 0,
            pending: Vec::new(),
        }))
    }
}

/// State of one group.
struct Group {
    /// The index's key: to remove the group, and decoded (with other groups') for output.
    row: GroupKey,
    /// Bytes the group held when last measured (its part of `AggregateOp::bytes`).
    size: usize,
    accs: Vec<Box<dyn Accumulator>>,
    /// Net input rows (inserts minus deletes).
    rows: i64,
    /// Aggregate values last emitted (so they can be retracted).
    emitted: Option<Vec<ScalarValue>>,
    /// Touched since the last barrier (listed in `AggregateOp::pending`).
    pending: bool,
    /// Index among the groups of the batch being applied; `NONE` between batches.
    local: u32,
    /// Index in the vectorised accumulators (`AggregateOp::delta_slots`); `NONE` when the
    /// group has nothing there.
    delta: u32,
    /// Its window's end (windowed grouping), under which `AggregateOp::by_end` lists it.
    end: Option<i64>,
}

/// No index (see `Group::local` and `Group::delta`).
const NONE: u32 = u32::MAX;

/// The groups one batch touches, and which of them each row belongs to.
struct Assignment {
    /// Slots, in order of first appearance in the batch.
    slots: Vec<usize>,
    /// Per row, its group's index in `slots`; `NONE` for a late row that is dropped.
    local: Vec<u32>,
    /// Whether some row was dropped.
    dropped: bool,
}

struct AggregateOp {
    node: AggregateNode,
    index: GroupIndex,
    groups: Vec<Option<Group>>,
    free: Vec<usize>,
    /// Per aggregate: a vectorised accumulator over the groups touched since the last
    /// barrier, or `None` when the aggregate is fed to each group's own accumulator.
    vectorised: Vec<Option<Box<dyn GroupsAccumulator>>>,
    /// Slots of the groups in the vectorised accumulators, by their index there.
    delta_slots: Vec<usize>,
    /// Window end → groups of that window (windowed grouping only).
    by_end: BTreeMap<i64, Vec<usize>>,
    watermark: Option<i64>,
    late: u64,
    started: bool,
    /// Bytes of all groups' state, brought up to date at each barrier (statistics read it
    /// after every round, so it must not cost a walk over all groups).
    bytes: usize,
    /// Groups touched since the last barrier. Invariant: flushed before any group is removed
    /// (by a watermark, or for having no rows left), so every slot here is the group it was.
    pending: Vec<usize>,
}

/// Bytes a group holds: its key and its accumulators.
fn group_size(g: &Group) -> usize {
    g.row.size() + g.accs.iter().map(|a| a.size()).sum::<usize>()
}

/// Each row's window end in event-time microseconds (`None`: NULL, or not a timestamp).
fn window_ends(end: &ArrayRef) -> Result<Vec<Option<i64>>> {
    let DataType::Timestamp(_, tz) = end.data_type() else {
        return Ok(vec![None; end.len()]);
    };
    let micros = cast(end, &DataType::Timestamp(TimeUnit::Microsecond, tz.clone()))?;
    Ok(micros
        .as_primitive::<TimestampMicrosecondType>()
        .iter()
        .collect())
}

/// A FILTER mask where NULL skips the row, as false does.
fn filter_mask(m: &ArrayRef) -> Result<BooleanArray> {
    let m = m
        .as_any()
        .downcast_ref::<BooleanArray>()
        .ok_or_else(|| BrookError::internal("FILTER is not boolean"))?;
    Ok(if m.null_count() > 0 {
        prep_null_mask_filter(m)
    } else {
        m.clone()
    })
}

/// Row order that puts each group's rows together, inserts before deletes: returns the
/// permutation and, per group `t`, its inserts at `bounds[2t]..bounds[2t+1]` and its deletes
/// at `bounds[2t+1]..bounds[2t+2]` of the permuted rows. A counting sort: O(rows + groups).
fn group_order(a: &Assignment, kinds: &Int8Array) -> (UInt32Array, Vec<usize>) {
    let bucket = |r: usize, t: u32| 2 * t as usize + usize::from(kinds.value(r) == change::DELETE);
    let mut bounds = vec![0usize; 2 * a.slots.len() + 1];
    for (r, &t) in a.local.iter().enumerate() {
        if t != NONE {
            bounds[bucket(r, t) + 1] += 1;
        }
    }
    for b in 1..bounds.len() {
        bounds[b] += bounds[b - 1];
    }
    let mut next = bounds.clone();
    let mut perm = vec![0u32; bounds.last().copied().unwrap_or(0)];
    for (r, &t) in a.local.iter().enumerate() {
        if t != NONE {
            let b = bucket(r, t);
            perm[next[b]] = r as u32;
            next[b] += 1;
        }
    }
    (UInt32Array::from(perm), bounds)
}

impl AggregateOp {
    fn global(&self) -> bool {
        self.node.group_exprs.is_empty()
    }

    fn emit_on_close(&self) -> bool {
        self.node.window.is_some_and(|w| w.emit_on_close)
    }

    /// A group for row `r` of a batch with keys `keys`, in the window ending at `end`
    /// (windowed grouping).
    fn new_group(&mut self, keys: &BatchKeys, r: usize, end: Option<i64>) -> Result<usize> {
        let accs = self
            .node
            .aggs
            .iter()
            .map(|a| self.node.accumulator(a))
            .collect::<Result<Vec<_>>>()?;
        let slot = self.free.pop().unwrap_or(self.groups.len());
        let row = self.index.insert(keys, r, slot)?;
        let mut g = Group {
            row,
            accs,
            rows: 0,
            emitted: None,
            pending: false,
            size: 0,
            local: NONE,
            delta: NONE,
            end,
        };
        g.size = group_size(&g);
        self.bytes += g.size;
        match self.groups.get_mut(slot) {
            Some(free) => *free = Some(g),
            None => self.groups.push(Some(g)),
        }
        if let Some(end) = end {
            self.by_end.entry(end).or_default().push(slot);
        }
        Ok(slot)
    }

    fn remove_group(&mut self, slot: usize) {
        if let Some(g) = self.groups[slot].take() {
            self.bytes = self.bytes.saturating_sub(g.size);
            self.index.remove(&g.row);
            self.free.push(slot);
        }
    }

    fn group(&mut self, slot: usize) -> Result<&mut Group> {
        self.groups[slot]
            .as_mut()
            .ok_or_else(|| BrookError::internal("aggregate group vanished"))
    }

    /// Current aggregate values of a group.
    fn evaluate(&mut self, slot: usize) -> Result<Vec<ScalarValue>> {
        let g = self.group(slot)?;
        g.accs.iter_mut().map(|a| Ok(a.evaluate()?)).collect()
    }

    /// Find (or create) the group of every row, dropping rows of windows already closed.
    fn assign(&mut self, keys: &[ArrayRef], kinds: &Int8Array) -> Result<Assignment> {
        let n = kinds.len();
        let batch_keys = self.index.encode(keys)?;
        let ends = match self.node.window {
            Some(w) => window_ends(
                keys.get(w.end_key)
                    .ok_or_else(|| BrookError::internal("window end key out of range"))?,
            )?,
            None => Vec::new(),
        };
        let mut a = Assignment {
            slots: Vec::new(),
            local: Vec::with_capacity(n),
            dropped: false,
        };
        for r in 0..n {
            let slot = match self.index.get(&batch_keys, r) {
                Some(s) => s,
                None => {
                    let end = ends.get(r).copied().flatten();
                    if end.is_some_and(|end| self.watermark.is_some_and(|wm| end <= wm)) {
                        self.late += 1;
                        a.local.push(NONE);
                        a.dropped = true;
                        continue;
                    }
                    self.new_group(&batch_keys, r, end)?
                }
            };
            let next = a.slots.len() as u32;
            let g = self.group(slot)?;
            if g.local == NONE {
                g.local = next;
            }
            g.rows += if kinds.value(r) == change::DELETE {
                -1
            } else {
                1
            };
            let local = g.local;
            if local == next {
                a.slots.push(slot);
            }
            a.local.push(local);
        }
        Ok(a)
    }

    /// Feed each group's accumulators its rows of the batch: one call per group and
    /// aggregate, on zero-copy slices of the batch sorted by group.
    fn feed_groups(
        &mut self,
        a: &Assignment,
        kinds: &Int8Array,
        args: &[Vec<ArrayRef>],
        masks: &[Option<ArrayRef>],
    ) -> Result<()> {
        let per_group: Vec<usize> = (0..self.node.aggs.len())
            .filter(|&i| self.vectorised[i].is_none())
            .collect();
        if per_group.is_empty() {
            return Ok(());
        }
        let (perm, bounds) = group_order(a, kinds);
        // Rows already in group order (one group, nothing dropped) need no copy.
        let sorted = perm
            .values()
            .iter()
            .enumerate()
            .all(|(i, &r)| i == r as usize);
        let arrange = |x: &ArrayRef| -> Result<ArrayRef> {
            Ok(if sorted {
                x.clone()
            } else {
                take(x, &perm, None)?
            })
        };
        let mut sorted_args: Vec<Vec<ArrayRef>> = vec![Vec::new(); self.node.aggs.len()];
        let mut sorted_masks: Vec<Option<BooleanArray>> = vec![None; self.node.aggs.len()];
        for &i in &per_group {
            sorted_args[i] = args[i].iter().map(arrange).collect::<Result<_>>()?;
            sorted_masks[i] = masks[i]
                .as_ref()
                .map(|m| filter_mask(&arrange(m)?))
                .transpose()?;
        }
        for (t, &slot) in a.slots.iter().enumerate() {
            let g = self.group(slot)?;
            for (part, retract) in [(2 * t, false), (2 * t + 1, true)] {
                let (from, len) = (bounds[part], bounds[part + 1] - bounds[part]);
                if len == 0 {
                    continue;
                }
                for &i in &per_group {
                    let mut vals: Vec<ArrayRef> =
                        sorted_args[i].iter().map(|x| x.slice(from, len)).collect();
                    if let Some(m) = &sorted_masks[i] {
                        let m = m.slice(from, len);
                        vals = vals
                            .iter()
                            .map(|x| Ok(filter(x.as_ref(), &m)?))
                            .collect::<Result<_>>()?;
                    }
                    if retract {
                        g.accs[i].retract_batch(&vals)?;
                    } else {
                        g.accs[i].update_batch(&vals)?;
                    }
                }
            }
        }
        Ok(())
    }

    /// Feed the vectorised accumulators the whole batch (append-only input: inserts only).
    fn feed_vectorised(
        &mut self,
        a: &Assignment,
        args: &[Vec<ArrayRef>],
        masks: &[Option<ArrayRef>],
    ) -> Result<()> {
        if self.vectorised.iter().all(Option::is_none) || a.slots.is_empty() {
            return Ok(());
        }
        let mut delta_of = Vec::with_capacity(a.slots.len());
        for &slot in &a.slots {
            let next = self.delta_slots.len() as u32;
            let g = self.group(slot)?;
            if g.delta == NONE {
                g.delta = next;
            }
            let delta = g.delta;
            if delta == next {
                self.delta_slots.push(slot);
            }
            delta_of.push(delta as usize);
        }
        // Dropped rows go to group 0 under a false mask.
        let indices: Vec<usize> = a
            .local
            .iter()
            .map(|&t| if t == NONE { 0 } else { delta_of[t as usize] })
            .collect();
        let kept = a
            .dropped
            .then(|| BooleanArray::from_iter(a.local.iter().map(|&t| Some(t != NONE))));
        let total = self.delta_slots.len();
        for (i, acc) in self.vectorised.iter_mut().enumerate() {
            let Some(acc) = acc else { continue };
            let mask = match (&masks[i], &kept) {
                (Some(m), Some(k)) => Some(and(&filter_mask(m)?, k)?),
                (Some(m), None) => Some(filter_mask(m)?),
                (None, k) => k.clone(),
            };
            acc.update_batch(&args[i], &indices, mask.as_ref(), total)?;
        }
        Ok(())
    }

    /// Move what the vectorised accumulators gathered into each group's accumulators (one
    /// state merge per group and aggregate since the last barrier).
    fn merge_vectorised(&mut self) -> Result<()> {
        let slots = std::mem::take(&mut self.delta_slots);
        if slots.is_empty() {
            return Ok(());
        }
        for i in 0..self.vectorised.len() {
            let Some(acc) = self.vectorised[i].as_mut() else {
                continue;
            };
            let state = acc.state(EmitTo::All)?;
            if state.iter().any(|s| s.len() != slots.len()) {
                return Err(BrookError::internal(
                    "vectorised aggregate state does not cover its groups",
                ));
            }
            for (d, &slot) in slots.iter().enumerate() {
                let part: Vec<ArrayRef> = state.iter().map(|s| s.slice(d, 1)).collect();
                self.group(slot)?.accs[i].merge_batch(&part)?;
            }
        }
        for &slot in &slots {
            self.group(slot)?.delta = NONE;
        }
        Ok(())
    }

    /// End of a round: bring the touched groups up to date, measure them, free emptied
    /// ones and (on-update mode) emit their changes.
    fn flush(&mut self) -> Result<Vec<RecordBatch>> {
        self.merge_vectorised()?;
        let slots = std::mem::take(&mut self.pending);
        for &slot in &slots {
            if let Some(g) = self.groups[slot].as_mut() {
                g.pending = false;
                let size = group_size(g);
                self.bytes = self.bytes.saturating_sub(g.size) + size;
                g.size = size;
            }
        }
        if self.emit_on_close() {
            // Nothing to emit before the window closes; groups only emptied by retractions
            // still go away.
            for &slot in &slots {
                if self.groups[slot].as_ref().is_some_and(|g| g.rows <= 0) {
                    self.remove_group(slot);
                }
            }
            return Ok(Vec::new());
        }
        let mut out = Rows::new(self.node.aggs.len());
        self.changes(&slots, &mut out)?;
        out.into_batches(&self.index, &self.node.schema)
    }

    /// Emit the change of each touched group (on-update mode), freeing emptied groups.
    fn changes(&mut self, touched: &[usize], out: &mut Rows) -> Result<()> {
        for &slot in touched {
            let Some(g) = self.groups[slot].as_ref() else {
                continue;
            };
            let alive = g.rows > 0 || self.global();
            let new = if alive {
                Some(self.evaluate(slot)?)
            } else {
                None
            };
            let g = self.group(slot)?;
            if new != g.emitted {
                if let Some(old) = g.emitted.take() {
                    out.push(&g.row, old, change::DELETE);
                }
                if let Some(new) = new {
                    out.push(&g.row, new.clone(), change::INSERT);
                    g.emitted = Some(new);
                }
            }
            if !alive {
                self.remove_group(slot);
            }
        }
        Ok(())
    }
}

/// Output rows being collected: each row's group key (decoded into key columns for all rows
/// at once) and its aggregate values.
struct Rows {
    keys: Vec<GroupKey>,
    /// Per aggregate, its value in each row.
    values: Vec<Vec<ScalarValue>>,
    kinds: Vec<i8>,
}

impl Rows {
    fn new(aggs: usize) -> Self {
        Rows {
            keys: Vec::new(),
            values: vec![Vec::new(); aggs],
            kinds: Vec::new(),
        }
    }

    fn push(&mut self, key: &GroupKey, values: Vec<ScalarValue>, kind: i8) {
        self.keys.push(key.clone());
        for (c, v) in self.values.iter_mut().zip(values) {
            c.push(v);
        }
        self.kinds.push(kind);
    }

    /// The rows as a batch of `schema` (keys, then aggregates), keys decoded by `index`.
    fn into_batches(self, index: &GroupIndex, schema: &SchemaRef) -> Result<Vec<RecordBatch>> {
        if self.kinds.is_empty() {
            return Ok(Vec::new());
        }
        let mut arrays = index.decode(&self.keys)?;
        for values in self.values {
            arrays.push(ScalarValue::iter_to_array(values)?);
        }
        if arrays.len() != schema.fields().len() {
            return Err(BrookError::internal(
                "aggregate output does not match its schema",
            ));
        }
        let arrays = arrays
            .into_iter()
            .zip(schema.fields())
            .map(|(a, field)| {
                Ok(if a.data_type() != field.data_type() {
                    cast(&a, field.data_type())?
                } else {
                    a
                })
            })
            .collect::<Result<Vec<_>>>()?;
        let kinds: ArrayRef = Arc::new(Int8Array::from(self.kinds));
        Ok(vec![change::attach(schema, arrays, kinds)?])
    }
}

impl Operator for AggregateOp {
    fn on_start(&mut self) -> Result<Vec<RecordBatch>> {
        if std::mem::replace(&mut self.started, true) || !self.global() {
            return Ok(Vec::new());
        }
        let slot = self.new_group(&BatchKeys::Global, 0, None)?;
        let mut out = Rows::new(self.node.aggs.len());
        self.changes(&[slot], &mut out)?;
        out.into_batches(&self.index, &self.node.schema)
    }

    fn on_data(&mut self, _port: usize, batch: RecordBatch) -> Result<Vec<RecordBatch>> {
        if !self.started {
            // A global aggregate's row exists before any data.
            let mut first = self.on_start()?;
            first.extend(self.on_data(0, batch)?);
            return Ok(first);
        }
        let n = batch.num_rows();
        let kinds = change::kinds(&batch)?.clone();
        let keys: Vec<ArrayRef> = self
            .node
            .group_exprs
            .iter()
            .map(|e| Ok(e.evaluate(&batch)?.into_array(n)?))
            .collect::<Result<_>>()?;
        let assignment = self.assign(&keys, &kinds)?;

        // Aggregate arguments once per batch, with their FILTER masks.
        let mut args: Vec<Vec<ArrayRef>> = Vec::with_capacity(self.node.aggs.len());
        let mut masks: Vec<Option<ArrayRef>> = Vec::with_capacity(self.node.aggs.len());
        for a in &self.node.aggs {
            // Order-sensitive aggregates (`array_agg(x ORDER BY t)`) also take their ORDER BY
            // values, as DataFusion's own aggregation passes them.
            let vals = a
                .expr
                .expressions()
                .iter()
                .chain(a.expr.order_bys().iter().map(|s| &s.expr))
                .map(|e| Ok(e.evaluate(&batch)?.into_array(n)?))
                .collect::<Result<Vec<_>>>()?;
            args.push(vals);
            masks.push(match &a.filter {
                Some(f) => Some(f.evaluate(&batch)?.into_array(n)?),
                None => None,
            });
        }
        self.feed_groups(&assignment, &kinds, &args, &masks)?;
        self.feed_vectorised(&assignment, &args, &masks)?;

        // Nothing leaves here: groups are brought up to date and emit at the barrier,
        // closing windows at the watermark.
        for &slot in &assignment.slots {
            let g = self.group(slot)?;
            g.local = NONE;
            if !std::mem::replace(&mut g.pending, true) {
                self.pending.push(slot);
            }
        }
        Ok(Vec::new())
    }

    fn on_barrier(&mut self, _epoch: u64) -> Result<Vec<RecordBatch>> {
        self.flush()
    }

    fn on_watermark(&mut self, watermark: i64) -> Result<Vec<RecordBatch>> {
        if self.watermark.is_some_and(|w| w >= watermark) {
            return Ok(Vec::new());
        }
        self.watermark = Some(watermark);
        // Touched groups are flushed first: closing windows frees groups (and their slots).
        let mut flushed = self.flush()?;
        let Some(w) = self.node.window else {
            return Ok(flushed);
        };
        let mut out = Rows::new(self.node.aggs.len());
        // Windows whose end is at or before the watermark are complete.
        let open = self.by_end.split_off(&(watermark.saturating_add(1)));
        let closed = std::mem::replace(&mut self.by_end, open);
        for (end, slot) in closed
            .into_iter()
            .flat_map(|(end, slots)| slots.into_iter().map(move |s| (end, s)))
        {
            // The slot may have been freed (all rows retracted) and reused by another window.
            if self.groups[slot]
                .as_ref()
                .is_none_or(|g| g.end != Some(end))
            {
                continue;
            }
            if w.emit_on_close {
                let alive = self.groups[slot].as_ref().is_some_and(|g| g.rows > 0);
                if alive {
                    let values = self.evaluate(slot)?;
                    if let Some(g) = &self.groups[slot] {
                        out.push(&g.row, values, change::INSERT);
                    }
                }
            }
            self.remove_group(slot);
        }
        flushed.extend(out.into_batches(&self.index, &self.node.schema)?);
        Ok(flushed)
    }

    fn state_size(&self) -> usize {
        self.bytes
            + self
                .vectorised
                .iter()
                .flatten()
                .map(|a| a.size())
                .sum::<usize>()
    }

    fn late_rows(&self) -> u64 {
        self.late
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{from_pretty, to_sorted_rows};
    use datafusion::arrow::datatypes::{DataType, Field, Schema, TimeUnit};
    use datafusion::functions_aggregate::count::count_udaf;
    use datafusion::functions_aggregate::min_max::min_udaf;
    use datafusion::functions_aggregate::sum::sum_udaf;
    use datafusion::logical_expr::Operator as BinaryOp;
    use datafusion::physical_expr::aggregate::AggregateExprBuilder;
    use datafusion::physical_expr::expressions::{binary, col, lit};

    fn call(
        udaf: Arc<datafusion::logical_expr::AggregateUDF>,
        arg: &str,
        schema: &SchemaRef,
    ) -> AggregateCall {
        let expr = AggregateExprBuilder::new(udaf, vec![col(arg, schema).unwrap()])
            .schema(schema.clone())
            .alias(arg)
            .build()
            .unwrap();
        AggregateCall {
            expr: Arc::new(expr),
            filter: None,
        }
    }

    fn node(input: &RecordBatch, updating: bool) -> AggregateNode {
        let schema = input.schema();
        AggregateNode {
            group_exprs: vec![col("k", &schema).unwrap()],
            aggs: vec![
                call(sum_udaf(), "v", &schema),
                call(count_udaf(), "v", &schema),
            ],
            schema: Arc::new(Schema::new(vec![
                Field::new("k", DataType::Utf8, true),
                Field::new("sum", DataType::Int64, true),
                Field::new("count", DataType::Int64, false),
            ])),
            input_updating: updating,
            window: None,
        }
    }

    /// One round: the batches, then the barrier that ends it; everything emitted.
    fn round(op: &mut Box<dyn Operator>, batches: Vec<RecordBatch>) -> Vec<String> {
        let mut out = Vec::new();
        for b in batches {
            out.extend(op.on_data(0, b).unwrap());
        }
        out.extend(op.on_barrier(0).unwrap());
        to_sorted_rows(&out)
    }

    #[test]
    fn emits_changelog_per_group() {
        let b1 = from_pretty(
            "k:text | v:int64 | _brook_op:int8
             a      | 1       | 1
             b      | 2       | 1
             a      | 3       | 1",
        );
        let mut op = node(&b1, true).instantiate().unwrap();
        // Nothing leaves before the round ends.
        assert!(op.on_data(0, b1.clone()).unwrap().is_empty());
        assert_eq!(
            to_sorted_rows(&op.on_barrier(0).unwrap()),
            vec!["a | 4 | 2 | 1", "b | 2 | 1 | 1"]
        );
        let mut twice = node(&b1, true).instantiate().unwrap();
        assert_eq!(
            round(&mut twice, vec![b1.clone(), b1]),
            vec!["a | 8 | 4 | 1", "b | 4 | 2 | 1"],
            "two batches in one round emit each group once"
        );
        let b2 = from_pretty(
            "k:text | v:int64 | _brook_op:int8
             a      | 1       | -1
             b      | 2       | -1",
        );
        // a changes (delete old, insert new); b is gone.
        assert_eq!(
            round(&mut op, vec![b2]),
            vec!["a | 3 | 1 | 1", "a | 4 | 2 | -1", "b | 2 | 1 | -1"]
        );
        assert!(op.state_size() > 0);
    }

    #[test]
    fn append_only_input_is_vectorised_and_merged_at_the_barrier() {
        let b1 = from_pretty(
            "k:text | v:int64 | _brook_op:int8
             a      | 1       | 1
             b      | 2       | 1
             a      | 3       | 1
             c      |         | 1",
        );
        let b2 = from_pretty(
            "k:text | v:int64 | _brook_op:int8
             b      | 10      | 1
             a      | 5       | 1",
        );
        let schema = b1.schema();
        let mut n = node(&b1, false);
        // sum(v) FILTER (WHERE v > 1): NULL and false both skip the row.
        n.aggs[0].filter =
            Some(binary(col("v", &schema).unwrap(), BinaryOp::Gt, lit(1i64), &schema).unwrap());
        let mut op = n.instantiate().unwrap();
        assert_eq!(
            round(&mut op, vec![b1, b2.clone()]),
            vec!["a | 8 | 3 | 1", "b | 12 | 2 | 1", "c | NULL | 0 | 1"]
        );
        assert!(op.state_size() > 0);
        // The next round updates from the merged state.
        assert_eq!(
            round(&mut op, vec![b2]),
            vec![
                "a | 13 | 4 | 1",
                "a | 8 | 3 | -1",
                "b | 12 | 2 | -1",
                "b | 22 | 3 | 1"
            ]
        );
    }

    #[test]
    fn rows_of_many_groups_in_one_batch_reach_their_groups() {
        // Interleaved inserts and deletes of three groups in one batch (sorted by group).
        let b = from_pretty(
            "k:text | v:int64 | _brook_op:int8
             a      | 1       | 1
             b      | 2       | 1
             c      | 4       | 1
             a      | 8       | 1
             b      | 2       | -1
             c      | 16      | 1
             a      | 1       | -1",
        );
        let mut op = node(&b, true).instantiate().unwrap();
        assert_eq!(
            round(&mut op, vec![b]),
            vec!["a | 8 | 1 | 1", "c | 20 | 2 | 1"]
        );
    }

    #[test]
    fn global_aggregate_has_a_row_before_data() {
        let b = from_pretty(
            "k:text | v:int64 | _brook_op:int8
             a      | 5       | 1",
        );
        let schema = b.schema();
        let n = AggregateNode {
            group_exprs: vec![],
            aggs: vec![call(count_udaf(), "v", &schema)],
            schema: Arc::new(Schema::new(vec![Field::new(
                "count",
                DataType::Int64,
                false,
            )])),
            input_updating: false,
            window: None,
        };
        let mut op = n.instantiate().unwrap();
        assert_eq!(to_sorted_rows(&op.on_start().unwrap()), vec!["0 | 1"]);
        assert_eq!(round(&mut op, vec![b]), vec!["0 | -1", "1 | 1"]);
    }

    #[test]
    fn min_over_retracting_input_is_refused() {
        let b = from_pretty("k:text | v:int64 | _brook_op:int8");
        let schema = b.schema();
        let mut n = node(&b, true);
        n.aggs = vec![call(min_udaf(), "v", &schema)];
        let err = n.validate().unwrap_err();
        assert_eq!(err.sqlstate(), "0A000");
        n.input_updating = false;
        assert!(n.validate().is_ok());
    }

    fn window_node(input: &RecordBatch, updating: bool) -> AggregateNode {
        let schema = input.schema();
        AggregateNode {
            group_exprs: vec![col("k", &schema).unwrap(), col("w", &schema).unwrap()],
            aggs: vec![call(sum_udaf(), "v", &schema)],
            schema: Arc::new(Schema::new(vec![
                Field::new("k", DataType::Utf8, true),
                Field::new("w", DataType::Timestamp(TimeUnit::Microsecond, None), true),
                Field::new("sum", DataType::Int64, true),
            ])),
            input_updating: updating,
            window: Some(WindowClose {
                end_key: 1,
                emit_on_close: true,
            }),
        }
    }

    /// 2026-01-01T00:01:00 in microseconds since the epoch.
    const MINUTE_1: i64 = 1_767_225_660_000_000;

    #[test]
    fn window_emits_on_close_and_drops_late_rows() {
        let b1 = from_pretty(
            "k:text | w:timestamp          | v:int64 | _brook_op:int8
             a      | 2026-01-01T00:01:00 | 1       | 1
             a      | 2026-01-01T00:01:00 | 2       | 1
             a      | 2026-01-01T00:02:00 | 5       | 1",
        );
        let mut op = window_node(&b1, false).instantiate().unwrap();
        assert!(op.on_data(0, b1).unwrap().is_empty());
        assert_eq!(
            to_sorted_rows(&op.on_watermark(MINUTE_1).unwrap()),
            vec!["a | 2026-01-01T00:01:00 | 3 | 1"]
        );
        let late = from_pretty(
            "k:text | w:timestamp          | v:int64 | _brook_op:int8
             a      | 2026-01-01T00:01:00 | 9       | 1",
        );
        assert!(op.on_data(0, late).unwrap().is_empty());
        assert_eq!(op.late_rows(), 1);
        assert_eq!(
            to_sorted_rows(&op.on_watermark(MINUTE_1 + 60_000_000).unwrap()),
            vec!["a | 2026-01-01T00:02:00 | 5 | 1"]
        );
        assert_eq!(op.state_size(), 0);
    }

    #[test]
    fn a_reused_slot_is_not_closed_with_its_old_window() {
        // (a, 00:01) is retracted entirely and freed; (b, 00:02) takes its slot.
        let b1 = from_pretty(
            "k:text | w:timestamp          | v:int64 | _brook_op:int8
             a      | 2026-01-01T00:01:00 | 1       | 1
             a      | 2026-01-01T00:01:00 | 1       | -1",
        );
        let b2 = from_pretty(
            "k:text | w:timestamp          | v:int64 | _brook_op:int8
             b      | 2026-01-01T00:02:00 | 7       | 1",
        );
        let mut op = window_node(&b1, true).instantiate().unwrap();
        assert!(round(&mut op, vec![b1]).is_empty());
        assert!(round(&mut op, vec![b2]).is_empty());
        assert!(op.on_watermark(MINUTE_1).unwrap().is_empty());
        assert_eq!(
            to_sorted_rows(&op.on_watermark(MINUTE_1 + 60_000_000).unwrap()),
            vec!["b | 2026-01-01T00:02:00 | 7 | 1"]
        );
    }
}
