//! The aggregate's runtime state and its Operator: groups found by their encoded keys, each
//! input batch's rows assigned to groups and folded into their accumulators (retractions
//! too), changes emitted on update or when a window closes.

use super::*;
use crate::group_index::{BatchKeys, GroupIndex, GroupKey};
use crate::{change, Operator};
use brook_common::{brook_err, Result};
use datafusion::arrow::array::{Array, ArrayRef, AsArray, BooleanArray, Int8Array, UInt32Array};
use datafusion::arrow::compute::kernels::boolean::and;
use datafusion::arrow::compute::{cast, filter, prep_null_mask_filter, take};
use datafusion::arrow::datatypes::{DataType, SchemaRef, TimeUnit, TimestampMicrosecondType};
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::common::ScalarValue;
use datafusion::logical_expr::{Accumulator, EmitTo, GroupsAccumulator};
use std::collections::BTreeMap;
use std::sync::Arc;

/// State of one group.
pub(super) struct Group {
    /// The index's key: to remove the group, and decoded (with other groups') for output.
    pub(super) row: GroupKey,
    /// Bytes the group held when last measured (its part of `AggregateOp::bytes`).
    pub(super) size: usize,
    pub(super) accs: Vec<Box<dyn Accumulator>>,
    /// Net input rows (inserts minus deletes).
    pub(super) rows: i64,
    /// Aggregate values last emitted (so they can be retracted).
    pub(super) emitted: Option<Vec<ScalarValue>>,
    /// Touched since the last barrier (listed in `AggregateOp::pending`).
    pub(super) pending: bool,
    /// Index among the groups of the batch being applied; `NONE` between batches.
    pub(super) local: u32,
    /// Index in the vectorised accumulators (`AggregateOp::delta_slots`); `NONE` when the
    /// group has nothing there.
    pub(super) delta: u32,
    /// Its window's end (windowed grouping), under which `AggregateOp::by_end` lists it.
    pub(super) end: Option<i64>,
}

/// No index (see `Group::local` and `Group::delta`).
pub(super) const NONE: u32 = u32::MAX;

/// The groups one batch touches, and which of them each row belongs to.
pub(super) struct Assignment {
    /// Slots, in order of first appearance in the batch.
    pub(super) slots: Vec<usize>,
    /// Per row, its group's index in `slots`; `NONE` for a late row that is dropped.
    pub(super) local: Vec<u32>,
    /// Whether some row was dropped.
    pub(super) dropped: bool,
}

pub(super) struct AggregateOp {
    pub(super) node: AggregateNode,
    pub(super) index: GroupIndex,
    pub(super) groups: Vec<Option<Group>>,
    pub(super) free: Vec<usize>,
    /// Per aggregate: a vectorised accumulator over the groups touched since the last
    /// barrier, or `None` when the aggregate is fed to each group's own accumulator.
    pub(super) vectorised: Vec<Option<Box<dyn GroupsAccumulator>>>,
    /// Slots of the groups in the vectorised accumulators, by their index there.
    pub(super) delta_slots: Vec<usize>,
    /// Window end → groups of that window (windowed grouping only).
    pub(super) by_end: BTreeMap<i64, Vec<usize>>,
    pub(super) watermark: Option<i64>,
    pub(super) late: u64,
    pub(super) started: bool,
    /// Bytes of all groups' state, brought up to date at each barrier (statistics read it
    /// after every round, so it must not cost a walk over all groups).
    pub(super) bytes: usize,
    /// Groups touched since the last barrier. Invariant: flushed before any group is removed
    /// (by a watermark, or for having no rows left), so every slot here is the group it was.
    pub(super) pending: Vec<usize>,
}

/// Bytes a group holds: its key and its accumulators.
pub(super) fn group_size(g: &Group) -> usize {
    g.row.size() + g.accs.iter().map(|a| a.size()).sum::<usize>()
}

/// Each row's window end in event-time microseconds (`None`: NULL, or not a timestamp).
pub(super) fn window_ends(end: &ArrayRef) -> Result<Vec<Option<i64>>> {
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
pub(super) fn filter_mask(m: &ArrayRef) -> Result<BooleanArray> {
    let m = m
        .as_any()
        .downcast_ref::<BooleanArray>()
        .ok_or_else(|| brook_err!(Internal, "FILTER is not boolean"))?;
    Ok(if m.null_count() > 0 {
        prep_null_mask_filter(m)
    } else {
        m.clone()
    })
}

/// Row order that puts each group's rows together, inserts before deletes: returns the
/// permutation and, per group `t`, its inserts at `bounds[2t]..bounds[2t+1]` and its deletes
/// at `bounds[2t+1]..bounds[2t+2]` of the permuted rows. A counting sort: O(rows + groups).
pub(super) fn group_order(a: &Assignment, kinds: &Int8Array) -> (UInt32Array, Vec<usize>) {
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
    pub(super) fn global(&self) -> bool {
        self.node.group_exprs.is_empty()
    }

    pub(super) fn emit_on_close(&self) -> bool {
        self.node.window.is_some_and(|w| w.emit_on_close)
    }

    /// A group for row `r` of a batch with keys `keys`, in the window ending at `end`
    /// (windowed grouping).
    pub(super) fn new_group(
        &mut self,
        keys: &BatchKeys,
        r: usize,
        end: Option<i64>,
    ) -> Result<usize> {
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

    pub(super) fn remove_group(&mut self, slot: usize) {
        if let Some(g) = self.groups[slot].take() {
            self.bytes = self.bytes.saturating_sub(g.size);
            self.index.remove(&g.row);
            self.free.push(slot);
        }
    }

    pub(super) fn group(&mut self, slot: usize) -> Result<&mut Group> {
        self.groups[slot]
            .as_mut()
            .ok_or_else(|| brook_err!(Internal, "aggregate group vanished"))
    }

    /// Current aggregate values of a group.
    pub(super) fn evaluate(&mut self, slot: usize) -> Result<Vec<ScalarValue>> {
        let g = self.group(slot)?;
        g.accs.iter_mut().map(|a| Ok(a.evaluate()?)).collect()
    }

    /// Find (or create) the group of every row, dropping rows of windows already closed.
    pub(super) fn assign(&mut self, keys: &[ArrayRef], kinds: &Int8Array) -> Result<Assignment> {
        let n = kinds.len();
        let batch_keys = self.index.encode(keys)?;
        let ends = match self.node.window {
            Some(w) => window_ends(
                keys.get(w.end_key)
                    .ok_or_else(|| brook_err!(Internal, "window end key out of range"))?,
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
    pub(super) fn feed_groups(
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
    pub(super) fn feed_vectorised(
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
    pub(super) fn merge_vectorised(&mut self) -> Result<()> {
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
                return Err(brook_err!(
                    Internal,
                    "vectorised aggregate state does not cover its groups"
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
    pub(super) fn flush(&mut self) -> Result<Vec<RecordBatch>> {
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
    pub(super) fn changes(&mut self, touched: &[usize], out: &mut Rows) -> Result<()> {
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
pub(super) struct Rows {
    pub(super) keys: Vec<GroupKey>,
    /// Per aggregate, its value in each row.
    pub(super) values: Vec<Vec<ScalarValue>>,
    pub(super) kinds: Vec<i8>,
}

impl Rows {
    pub(super) fn new(aggs: usize) -> Self {
        Rows {
            keys: Vec::new(),
            values: vec![Vec::new(); aggs],
            kinds: Vec::new(),
        }
    }

    pub(super) fn push(&mut self, key: &GroupKey, values: Vec<ScalarValue>, kind: i8) {
        self.keys.push(key.clone());
        for (c, v) in self.values.iter_mut().zip(values) {
            c.push(v);
        }
        self.kinds.push(kind);
    }

    /// The rows as a batch of `schema` (keys, then aggregates), keys decoded by `index`.
    pub(super) fn into_batches(
        self,
        index: &GroupIndex,
        schema: &SchemaRef,
    ) -> Result<Vec<RecordBatch>> {
        if self.kinds.is_empty() {
            return Ok(Vec::new());
        }
        let mut arrays = index.decode(&self.keys)?;
        for values in self.values {
            arrays.push(ScalarValue::iter_to_array(values)?);
        }
        if arrays.len() != schema.fields().len() {
            return Err(brook_err!(
                Internal,
                "aggregate output does not match its schema"
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
            // values, as DataFusion's own aggregation passes them; a DISTINCT one orders by
            // its argument itself (DataFusion allows no other ORDER BY there), and its
            // retraction takes the argument alone.
            let order_bys = if a.expr.is_distinct() {
                &[][..]
            } else {
                a.expr.order_bys()
            };
            let vals = a
                .expr
                .expressions()
                .iter()
                .chain(order_bys.iter().map(|s| &s.expr))
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
