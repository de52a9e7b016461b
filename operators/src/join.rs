//! Equi-joins of two changelogs (a symmetric hash join with retraction): inner, LEFT/RIGHT/
//! FULL outer, semi (`EXISTS`/`IN` subqueries, and inner joins whose other side only
//! filters) and anti joins (`NOT EXISTS`).
//!
//! Each side keeps its live rows indexed by join key. A change on one side is paired with
//! the other side's live rows of the same key (the extra join condition, if any, decides
//! which pairs match), then updates its own side. An inner join emits the matching pairs
//! with the change's kind. A semi join emits a row of its kept side while it has at least
//! one match: each kept row counts its matches, and a change on the other side that moves a
//! count between zero and non-zero inserts or retracts that row. An anti join emits a kept
//! row while it has none; an outer join emits the pairs and, while it has none, the kept row
//! padded with NULLs (a FULL join keeps both sides). Either way the result stays
//! equal to the join of the two inputs' current contents.
//!
//! State holds every live row of both inputs: the planner admits a join only when that is
//! bounded by what the SQL reads (a side from a table or an aggregate), or when the join
//! condition bounds a stream side in event time. An interval join (`b.ts BETWEEN a.ts AND
//! a.ts + INTERVAL '1 hour'`) says how late a row of the other side may come to still match
//! a row: each such row carries an expiry time (the latest event time a partner can have),
//! and once the watermark passes it nothing still to come can pair with it, so it leaves
//! the state. Rows of a stream that arrive behind the watermark could have paired with rows
//! already dropped; they are counted as late and dropped, as windows drop theirs.

use crate::{change, NodeSpec, Operator};
use brook_common::{BrookError, Result};
use datafusion::arrow::array::{Array, ArrayRef, BooleanArray, Int64Array, Int8Array, UInt32Array};
use datafusion::arrow::compute::filter_record_batch;
use datafusion::arrow::compute::{interleave, take};
use datafusion::arrow::datatypes::{DataType, SchemaRef};
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::arrow::row::{RowConverter, Rows, SortField};
use datafusion::physical_expr::PhysicalExpr;
use std::cmp::Reverse;
// hashbrown with foldhash, as DataFusion's own joins: std's SipHash costs more per key.
use datafusion::common::HashMap;
use std::collections::BinaryHeap;
use std::fmt;
use std::sync::Arc;

/// What a join emits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JoinKind {
    /// Matching pairs (left columns, then right columns).
    Inner,
    /// Rows of input `0` (left) or `1` (right) that have at least one match.
    Semi(usize),
    /// Matching pairs, plus each row of the kept input (`0`: LEFT JOIN, `1`: RIGHT JOIN)
    /// that has no match, with NULLs for the other side's columns.
    Outer(usize),
    /// Matching pairs, plus each row of either input that has no match, NULL-padded.
    Full,
    /// Rows of input `0` (left) or `1` (right) that have no match.
    Anti(usize),
}

impl JoinKind {
    /// Whether rows of input `side` count their matches (they are emitted, or padded, by
    /// whether they have any).
    fn keeps(self, side: usize) -> bool {
        match self {
            JoinKind::Inner => false,
            JoinKind::Full => true,
            JoinKind::Semi(k) | JoinKind::Outer(k) | JoinKind::Anti(k) => k == side,
        }
    }

    /// Whether matching pairs are part of the output.
    fn emits_pairs(self) -> bool {
        matches!(self, JoinKind::Inner | JoinKind::Outer(_) | JoinKind::Full)
    }
}

/// Plan node of an equi-join.
#[derive(Debug)]
pub struct JoinNode {
    /// Inner or semi.
    pub kind: JoinKind,
    /// Key expressions over the left input.
    pub left_keys: Vec<Arc<dyn PhysicalExpr>>,
    /// Key expressions over the right input (same count and types as the left).
    pub right_keys: Vec<Arc<dyn PhysicalExpr>>,
    /// Extra (non-equi) condition over a pair (left columns, then right columns).
    pub filter: Option<Arc<dyn PhysicalExpr>>,
    /// Left input schema.
    pub left_schema: SchemaRef,
    /// Right input schema.
    pub right_schema: SchemaRef,
    /// Output schema: left columns then right columns (inner), or the kept side's (semi).
    pub schema: SchemaRef,
    /// Whether the output retracts: either input retracts, or an outer or anti join has a
    /// kept input without a time bound (its unmatched rows are emitted at once and
    /// retracted when a match comes).
    ///
    /// Invariant: when `false`, an outer or anti join has a time bound on every kept input,
    /// and emits each unmatched kept row once, when the watermark passes its bound (no
    /// match can come after), so the output is append-only (Flink's interval outer join).
    pub updating: bool,
    /// Per input (`[left, right]`), whether it retracts. An append-only input's rows are
    /// never deleted: its side keeps no whole-row index (each copy is an entry of its own).
    pub inputs_updating: [bool; 2],
    /// Per input (`[left, right]`), its time bound in an interval join, if the condition
    /// gives one (see [`TimeBound`]).
    pub bounds: [Option<TimeBound>; 2],
    /// NULL keys match each other (`IS NOT DISTINCT FROM`); by default a NULL matches nothing.
    pub nulls_equal: bool,
    /// `x NOT IN (SELECT y ..)`: a left anti join on one key, without an extra condition or
    /// time bounds, where a NULL on the right hides every left row and a NULL `x` is kept
    /// only while the right is empty (SQL's three-valued `NOT IN`).
    pub null_aware: bool,
}

/// How the join condition bounds one input in event time: a conjunct `other.t <= expiry`
/// (or `<`, or `BETWEEN .. AND expiry`), where `other.t` is the other input's event-time
/// column (the one its watermark is declared on, or a window's end).
///
/// Invariant: only an append-only input has a bound (a retraction of a row already dropped
/// would have nothing to take back), and its partner's rows behind the watermark are
/// dropped as late, so no row still to come can match a dropped one.
#[derive(Debug, Clone)]
pub struct TimeBound {
    /// Over this input's columns: the latest event time a partner row can have.
    pub expiry: Arc<dyn PhysicalExpr>,
    /// Over the other input's columns: its event time (rows behind the watermark are late).
    pub partner_time: Arc<dyn PhysicalExpr>,
    /// The other input retracts (its rows are then never dropped as late: a window's
    /// changes come before the watermark passes its end).
    pub partner_updating: bool,
}

impl fmt::Display for JoinNode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let pairs: Vec<String> = self
            .left_keys
            .iter()
            .zip(&self.right_keys)
            .map(|(l, r)| format!("{l} = {r}"))
            .collect();
        let kind = match self.kind {
            JoinKind::Inner => "inner".to_string(),
            JoinKind::Semi(0) => "left semi".to_string(),
            JoinKind::Semi(_) => "right semi".to_string(),
            JoinKind::Outer(0) => "left outer".to_string(),
            JoinKind::Outer(_) => "right outer".to_string(),
            JoinKind::Full => "full outer".to_string(),
            JoinKind::Anti(0) => "left anti".to_string(),
            JoinKind::Anti(_) => "right anti".to_string(),
        };
        let kind = if self.null_aware {
            format!("{kind} (NOT IN: NULL-aware)")
        } else {
            kind
        };
        write!(f, "Join: {kind} on [{}]", pairs.join(", "))?;
        if let Some(c) = &self.filter {
            write!(f, " filter={c}")?;
        }
        write!(f, " state=live rows of both inputs by key")?;
        for (side, b) in ["left", "right"].iter().zip(&self.bounds) {
            if let Some(b) = b {
                write!(
                    f,
                    ", {side} rows dropped once the watermark passes {}",
                    b.expiry
                )?;
            }
        }
        for (side, name) in ["left", "right"].iter().enumerate() {
            if self.defers(side) {
                write!(f, ", unmatched {name} rows emitted then")?;
            }
        }
        Ok(())
    }
}

impl JoinNode {
    /// Whether unmatched rows of input `side` wait for the watermark to pass their bound
    /// (see [`JoinNode::updating`]).
    fn defers(&self, side: usize) -> bool {
        !self.updating
            && self.kind.keeps(side)
            && !matches!(self.kind, JoinKind::Semi(_))
            && self.bounds[side].is_some()
    }
}

impl NodeSpec for JoinNode {
    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }
    fn updating(&self) -> bool {
        self.updating
    }
    fn instantiate(&self) -> Result<Box<dyn Operator>> {
        let key_types =
            |schema: &SchemaRef, keys: &[Arc<dyn PhysicalExpr>]| -> Result<Vec<DataType>> {
                keys.iter().map(|k| Ok(k.data_type(schema)?)).collect()
            };
        let left_types = key_types(&self.left_schema, &self.left_keys)?;
        if left_types != key_types(&self.right_schema, &self.right_keys)? {
            return Err(BrookError::internal("join keys of different types"));
        }
        let left_types: Vec<SortField> = left_types.into_iter().map(SortField::new).collect();
        let all = |schema: &SchemaRef| -> Vec<SortField> {
            schema
                .fields()
                .iter()
                .map(|f| SortField::new(f.data_type().clone()))
                .collect()
        };
        let mut fields: Vec<_> = self.left_schema.fields().iter().cloned().collect();
        fields.extend(self.right_schema.fields().iter().cloned());
        Ok(Box::new(JoinOp {
            kind: self.kind,
            pair_schema: Arc::new(datafusion::arrow::datatypes::Schema::new(fields)),
            keys: [self.left_keys.clone(), self.right_keys.clone()],
            key_rows: RowConverter::new(left_types)?,
            full_rows: [
                RowConverter::new(all(&self.left_schema))?,
                RowConverter::new(all(&self.right_schema))?,
            ],
            widths: [
                self.left_schema.fields().len(),
                self.right_schema.fields().len(),
            ],
            filter: self.filter.clone(),
            schema: self.schema.clone(),
            sides: [
                Side::new(!self.inputs_updating[0]),
                Side::new(!self.inputs_updating[1]),
            ],
            bounds: self.bounds.clone(),
            defer: [self.defers(0), self.defers(1)],
            nulls_equal: self.nulls_equal,
            null_aware: self.null_aware,
            right_rows: 0,
            right_nulls: 0,
            watermark: None,
            late: 0,
        }))
    }
}

/// One live row of a side (with its copies).
struct Entry {
    /// The whole row, row-encoded (the `by_row` key); empty on an append-only side.
    full: Box<[u8]>,
    /// Its join key, row-encoded (the `index` key).
    key: Box<[u8]>,
    /// Where its values are: (batch, row) in the side's batches.
    at: (usize, usize),
    /// How many copies are live.
    count: i64,
    /// Semi join, kept side: how many live rows of the other side match this row.
    matches: i64,
    /// Its key has a NULL (kept only by a NULL-aware anti join, whose NULLs matter).
    null_key: bool,
}

/// The live rows of one input: entries in slots, found by join key (to pair) and, when the
/// input retracts, by whole row (to count a copy or apply a delete without scanning the
/// key's rows).
#[derive(Default)]
struct Side {
    /// The input never retracts: rows are not indexed whole (nothing will look them up),
    /// and a copy of a row is an entry of its own, which pairs as a counted copy would.
    append_only: bool,
    /// Batches holding rows the side has seen (data columns only).
    batches: Vec<RecordBatch>,
    /// Live rows; `None` marks a freed slot.
    slots: Vec<Option<Entry>>,
    /// Freed slots to reuse.
    free: Vec<usize>,
    /// Join key (row-encoded) → slots of the live rows with that key.
    index: HashMap<Box<[u8]>, Vec<usize>>,
    /// Whole row (row-encoded) → its slot.
    by_row: HashMap<Box<[u8]>, usize>,
    /// Bytes of the entries, for statistics.
    bytes: usize,
    /// Bytes of `batches`.
    batch_bytes: usize,
    /// Rows in `batches` (live or not): compaction starts when most are dead.
    held_rows: usize,
    /// Live entries.
    live: usize,
    /// Interval join: (expiry, slot) of every entry, earliest first.
    expiries: BinaryHeap<Reverse<(i64, usize)>>,
}

/// Bytes an entry holds, with its keys in the side's maps.
fn entry_bytes(e: &Entry) -> usize {
    2 * (e.full.len() + e.key.len()) + 48
}

impl Side {
    fn new(append_only: bool) -> Self {
        Side {
            append_only,
            ..Side::default()
        }
    }

    fn entry(&self, slot: usize) -> Result<&Entry> {
        self.slots
            .get(slot)
            .and_then(Option::as_ref)
            .ok_or_else(|| BrookError::internal("join entry vanished"))
    }

    fn entry_mut(&mut self, slot: usize) -> Result<&mut Entry> {
        self.slots
            .get_mut(slot)
            .and_then(Option::as_mut)
            .ok_or_else(|| BrookError::internal("join entry vanished"))
    }

    /// One more copy of the row `row` (whole, row-encoded; `None` on an append-only side)
    /// with key `key` and values at `at`; a new row starts with `matches`. Returns the slot of
    /// a new entry (whose values must then be kept), `None` for a copy.
    fn insert(
        &mut self,
        row: Option<&[u8]>,
        key: &[u8],
        at: (usize, usize),
        matches: i64,
        null_key: bool,
    ) -> Option<usize> {
        if let Some(&slot) = row.and_then(|row| self.by_row.get(row)) {
            if let Some(e) = self.slots[slot].as_mut() {
                e.count += 1;
                return None;
            }
        }
        let entry = Entry {
            full: row.map(Into::into).unwrap_or_default(),
            key: key.into(),
            at,
            count: 1,
            matches,
            null_key,
        };
        self.bytes += entry_bytes(&entry);
        let slot = match self.free.pop() {
            Some(s) => {
                self.slots[s] = Some(entry);
                s
            }
            None => {
                self.slots.push(Some(entry));
                self.slots.len() - 1
            }
        };
        if let Some(row) = row {
            self.by_row.insert(row.into(), slot);
        }
        self.index.entry(key.into()).or_default().push(slot);
        self.live += 1;
        Some(slot)
    }

    /// One copy of `row` fewer; the entry goes when none is left.
    fn delete(&mut self, row: &[u8]) -> Result<()> {
        let slot = *self
            .by_row
            .get(row)
            .ok_or_else(|| BrookError::internal("join input retracted a row it never inserted"))?;
        let e = self.entry_mut(slot)?;
        e.count -= 1;
        if e.count > 0 {
            return Ok(());
        }
        self.remove(slot);
        Ok(())
    }

    /// Drop the entry in `slot`, every copy.
    fn remove(&mut self, slot: usize) {
        let Some(e) = self.slots.get_mut(slot).and_then(Option::take) else {
            return;
        };
        self.live -= 1;
        if !self.append_only {
            self.by_row.remove(&e.full);
        }
        if let Some(slots) = self.index.get_mut(&e.key) {
            slots.retain(|s| *s != slot);
            if slots.is_empty() {
                self.index.remove(&e.key);
            }
        }
        self.bytes = self.bytes.saturating_sub(entry_bytes(&e));
        self.free.push(slot);
    }

    /// Keep `data`'s rows (new entries point into it).
    fn keep(&mut self, data: &RecordBatch) {
        self.batch_bytes += data.get_array_memory_size();
        self.held_rows += data.num_rows();
        self.batches.push(data.clone());
    }

    /// When most held rows are dead (deleted or expired), copy the live ones into one batch
    /// so memory follows the live rows, not everything ever seen.
    fn compact(&mut self) -> Result<()> {
        if self.live == 0 {
            self.batches.clear();
            (self.batch_bytes, self.held_rows) = (0, 0);
            return Ok(());
        }
        if self.held_rows < 4096 || self.held_rows < 2 * self.live {
            return Ok(());
        }
        let Some(schema) = self.batches.first().map(|b| b.schema()) else {
            return Ok(());
        };
        let live: Vec<usize> = (0..self.slots.len())
            .filter(|&s| self.slots[s].is_some())
            .collect();
        let at: Vec<(usize, usize)> = live
            .iter()
            .map(|&s| Ok(self.entry(s)?.at))
            .collect::<Result<_>>()?;
        let mut columns = Vec::with_capacity(schema.fields().len());
        for c in 0..schema.fields().len() {
            let arrays: Vec<&dyn Array> =
                self.batches.iter().map(|b| b.column(c).as_ref()).collect();
            columns.push(interleave(&arrays, &at)?);
        }
        let merged = RecordBatch::try_new(schema, columns)?;
        for (i, &s) in live.iter().enumerate() {
            self.entry_mut(s)?.at = (0, i);
        }
        self.batches.clear();
        (self.batch_bytes, self.held_rows) = (0, 0);
        self.keep(&merged);
        Ok(())
    }
}

struct JoinOp {
    kind: JoinKind,
    /// Schema of a pair: left columns, then right columns (what the condition reads).
    pair_schema: SchemaRef,
    keys: [Vec<Arc<dyn PhysicalExpr>>; 2],
    key_rows: RowConverter,
    full_rows: [RowConverter; 2],
    /// Column counts of the inputs.
    widths: [usize; 2],
    filter: Option<Arc<dyn PhysicalExpr>>,
    schema: SchemaRef,
    sides: [Side; 2],
    bounds: [Option<TimeBound>; 2],
    /// Per input: its unmatched rows are emitted when they expire (see [`JoinNode::updating`]).
    defer: [bool; 2],
    nulls_equal: bool,
    /// See [`JoinNode::null_aware`].
    null_aware: bool,
    /// NULL-aware: live right rows, and how many of them have a NULL key.
    right_rows: i64,
    right_nulls: i64,
    /// The watermark seen so far.
    watermark: Option<i64>,
    /// Rows dropped as late.
    late: u64,
}

impl JoinOp {
    fn encode_keys(&self, side: usize, batch: &RecordBatch) -> Result<(Rows, Vec<bool>)> {
        let n = batch.num_rows();
        let cols: Vec<ArrayRef> = self.keys[side]
            .iter()
            .map(|k| Ok(k.evaluate(batch)?.into_array(n)?))
            .collect::<Result<_>>()?;
        // SQL equality: a NULL key matches nothing (unless NULLs are equal here).
        let mut valid = vec![true; n];
        for c in cols.iter().filter(|_| !self.nulls_equal) {
            if c.null_count() > 0 {
                for (i, v) in valid.iter_mut().enumerate() {
                    *v &= c.is_valid(i);
                }
            }
        }
        Ok((self.key_rows.convert_columns(&cols)?, valid))
    }
}

/// A change row paired with a live row of the other side.
#[derive(Clone, Copy)]
struct Pair {
    /// Row of the change batch.
    row: u32,
    /// Slot of the other side's entry.
    slot: usize,
}

impl JoinOp {
    /// Pairs of change rows with the other side's live rows of the same key, and whether each
    /// pair satisfies the extra condition.
    fn pairs(
        &self,
        port: usize,
        data: &RecordBatch,
        keys: &Rows,
        valid: &[bool],
    ) -> Result<(Vec<Pair>, Vec<bool>)> {
        let other = &self.sides[1 - port];
        let mut pairs = Vec::new();
        for (i, ok) in valid.iter().enumerate().take(data.num_rows()) {
            if !ok {
                continue;
            }
            if let Some(slots) = other.index.get(keys.row(i).data()) {
                pairs.extend(slots.iter().map(|&slot| Pair {
                    row: i as u32,
                    slot,
                }));
            }
        }
        let matched = match (&self.filter, pairs.is_empty()) {
            (Some(f), false) => {
                let joined = self.pair_batch(port, data, &pairs)?;
                let mask = f.evaluate(&joined)?.into_array(joined.num_rows())?;
                let mask = mask
                    .as_any()
                    .downcast_ref::<datafusion::arrow::array::BooleanArray>()
                    .ok_or_else(|| BrookError::internal("join condition is not boolean"))?
                    .clone();
                (0..mask.len())
                    .map(|i| mask.is_valid(i) && mask.value(i))
                    .collect()
            }
            _ => vec![true; pairs.len()],
        };
        Ok((pairs, matched))
    }

    /// The pairs as rows: left columns, then right columns.
    fn pair_batch(&self, port: usize, data: &RecordBatch, pairs: &[Pair]) -> Result<RecordBatch> {
        let other = &self.sides[1 - port];
        let idx = UInt32Array::from(pairs.iter().map(|p| p.row).collect::<Vec<_>>());
        let mine: Vec<ArrayRef> = data
            .columns()
            .iter()
            .map(|c| Ok(take(c.as_ref(), &idx, None)?))
            .collect::<Result<_>>()?;
        let at: Vec<(usize, usize)> = pairs
            .iter()
            .map(|p| Ok(other.entry(p.slot)?.at))
            .collect::<Result<_>>()?;
        let width = self.widths[1 - port];
        let mut theirs = Vec::with_capacity(width);
        for c in 0..width {
            let arrays: Vec<&dyn Array> =
                other.batches.iter().map(|b| b.column(c).as_ref()).collect();
            theirs.push(interleave(&arrays, &at)?);
        }
        let columns = if port == 0 {
            mine.into_iter().chain(theirs).collect()
        } else {
            theirs.into_iter().chain(mine).collect()
        };
        Ok(RecordBatch::try_new(self.pair_schema.clone(), columns)?)
    }
}

impl Operator for JoinOp {
    fn on_data(&mut self, port: usize, batch: RecordBatch) -> Result<Vec<RecordBatch>> {
        if port > 1 {
            return Err(BrookError::internal("join has two inputs"));
        }
        let batch = self.drop_late(port, batch)?;
        let kinds = change::kinds(&batch)?.clone();
        let data = change::strip(&batch)?;
        let (keys, valid) = self.encode_keys(port, &data)?;
        let (pairs, matched) = self.pairs(port, &data, &keys, &valid)?;
        let expiry = match &self.bounds[port] {
            Some(b) => Some(crate::timestamp_micros(
                &b.expiry.evaluate(&data)?.into_array(data.num_rows())?,
            )?),
            None => None,
        };
        // Rows that can match nothing still to come: no key, no bound, or a bound the
        // watermark has passed. They pair with what is here and are not kept.
        let watermark = self.watermark;
        // NOT IN keeps its left rows with a NULL key: the right side's emptiness decides them.
        let keeps_nulls = self.null_aware && port == 0;
        let done: Vec<bool> = (0..data.num_rows())
            .map(|i| match &expiry {
                _ if !valid[i] => !keeps_nulls,
                Some(e) => e.is_null(i) || watermark.is_some_and(|w| e.value(i) < w),
                None => false,
            })
            .collect();
        let mut out = Vec::new();
        if self.kind.emits_pairs() {
            out.extend(self.emit_pairs(port, &data, &kinds, &pairs, &matched)?);
        }
        // A semi join emits the kept rows that have matches; anti and outer joins the ones
        // that have none (outer: padded with NULLs) — at once, or, deferred, once no match
        // can come (now for the rows already done, on the watermark for the others).
        let want_matched = matches!(self.kind, JoinKind::Semi(_));
        if self.kind.keeps(port) {
            let gate: Vec<bool>;
            let only = if self.null_aware {
                gate = valid
                    .iter()
                    .map(|v| match v {
                        true => self.right_nulls == 0,
                        false => self.right_rows == 0,
                    })
                    .collect();
                Some(gate.as_slice())
            } else {
                self.defer[port].then_some(done.as_slice())
            };
            out.extend(self.emit_kept(
                port,
                &data,
                &kinds,
                &pairs,
                &matched,
                want_matched,
                only,
            )?);
        }
        if self.null_aware && port == 1 {
            out.extend(self.emit_null_aware(&kinds, &valid, &pairs, &matched)?);
        } else if self.kind.keeps(1 - port) {
            out.extend(self.emit_flips(port, &kinds, &pairs, &matched, !want_matched)?);
        }
        self.apply(
            port,
            &data,
            &kinds,
            &keys,
            &valid,
            &done,
            expiry.as_ref(),
            &pairs,
            &matched,
        )?;
        Ok(out)
    }

    fn on_watermark(&mut self, watermark: i64) -> Result<Vec<RecordBatch>> {
        if self.watermark.is_some_and(|w| w >= watermark) {
            return Ok(Vec::new());
        }
        self.watermark = Some(watermark);
        let mut out = Vec::new();
        for s in 0..2 {
            if self.bounds[s].is_none() {
                continue;
            }
            let side = &mut self.sides[s];
            // Deferred: the expiring rows without a match, as (batch, row) per copy.
            let mut unmatched = Vec::new();
            while let Some(&Reverse((t, slot))) = side.expiries.peek() {
                if t >= watermark {
                    break;
                }
                side.expiries.pop();
                if self.defer[s] {
                    let e = side.entry(slot)?;
                    if e.matches == 0 {
                        unmatched.extend(std::iter::repeat_n(e.at, e.count.max(0) as usize));
                    }
                }
                side.remove(slot);
            }
            if !unmatched.is_empty() {
                let kinds = vec![change::INSERT; unmatched.len()];
                out.push(self.held_rows(s, &unmatched, kinds)?);
            }
            self.sides[s].compact()?;
        }
        Ok(out)
    }

    fn state_size(&self) -> usize {
        self.sides
            .iter()
            .map(|s| s.bytes + s.batch_bytes + s.expiries.len() * 16)
            .sum()
    }

    fn late_rows(&self) -> u64 {
        self.late
    }
}

impl JoinOp {
    /// Inner join: every matching pair, as often as the other row is live.
    fn emit_pairs(
        &self,
        port: usize,
        data: &RecordBatch,
        kinds: &Int8Array,
        pairs: &[Pair],
        matched: &[bool],
    ) -> Result<Vec<RecordBatch>> {
        let other = &self.sides[1 - port];
        let mut chosen = Vec::new();
        let mut out_kinds = Vec::new();
        for (p, ok) in pairs.iter().zip(matched) {
            if !ok {
                continue;
            }
            let count = other.entry(p.slot)?.count;
            for _ in 0..count.max(0) {
                chosen.push(*p);
                out_kinds.push(kinds.value(p.row as usize));
            }
        }
        if chosen.is_empty() {
            return Ok(Vec::new());
        }
        let joined = self.pair_batch(port, data, &chosen)?;
        Ok(vec![change::attach(
            &self.schema,
            joined.columns().to_vec(),
            Arc::new(Int8Array::from(out_kinds)),
        )?])
    }

    /// A change on the kept side: a semi join emits the rows that have matches
    /// (`want_matched`), an outer join the ones that have none (padded with NULLs); of the
    /// rows marked in `only` alone, when given.
    #[allow(clippy::too_many_arguments)]
    fn emit_kept(
        &self,
        port: usize,
        data: &RecordBatch,
        kinds: &Int8Array,
        pairs: &[Pair],
        matched: &[bool],
        want_matched: bool,
        only: Option<&[bool]>,
    ) -> Result<Vec<RecordBatch>> {
        let other = &self.sides[1 - port];
        let mut has = vec![false; data.num_rows()];
        for (p, ok) in pairs.iter().zip(matched) {
            if *ok && other.entry(p.slot)?.count > 0 {
                has[p.row as usize] = true;
            }
        }
        let rows: Vec<u32> = (0..data.num_rows() as u32)
            .filter(|i| has[*i as usize] == want_matched)
            .filter(|i| only.is_none_or(|o| o[*i as usize]))
            .collect();
        if rows.is_empty() {
            return Ok(Vec::new());
        }
        let idx = UInt32Array::from(rows.clone());
        let cols: Vec<ArrayRef> = data
            .columns()
            .iter()
            .map(|c| Ok(take(c.as_ref(), &idx, None)?))
            .collect::<Result<_>>()?;
        let k: Vec<i8> = rows.iter().map(|i| kinds.value(*i as usize)).collect();
        Ok(vec![change::attach(
            &self.schema,
            self.shape_kept(port, cols),
            Arc::new(Int8Array::from(k)),
        )?])
    }

    /// Columns of kept-side rows as output columns: as they are for a semi join; for an
    /// outer join beside NULLs for the other side.
    fn shape_kept(&self, kept: usize, cols: Vec<ArrayRef>) -> Vec<ArrayRef> {
        if !matches!(self.kind, JoinKind::Outer(_) | JoinKind::Full) {
            return cols;
        }
        let rows = cols.first().map(|c| c.len()).unwrap_or(0);
        let other = 1 - kept;
        let offset = if other == 0 { 0 } else { self.widths[0] };
        let nulls: Vec<ArrayRef> = (0..self.widths[other])
            .map(|c| {
                datafusion::arrow::array::new_null_array(
                    self.schema.field(offset + c).data_type(),
                    rows,
                )
            })
            .collect();
        if kept == 0 {
            cols.into_iter().chain(nulls).collect()
        } else {
            nulls.into_iter().chain(cols).collect()
        }
    }

    /// A change on the other side: kept rows whose match count leaves or reaches zero are
    /// inserted or retracted (as many times as they are live) — for a semi join the row, for
    /// an anti or outer join (`while_unmatched`: in the output while it has no match) the
    /// row or its NULL-padded row, the other way round.
    fn emit_flips(
        &mut self,
        port: usize,
        kinds: &Int8Array,
        pairs: &[Pair],
        matched: &[bool],
        while_unmatched: bool,
    ) -> Result<Vec<RecordBatch>> {
        let kept = 1 - port;
        let delta = match_deltas(kinds, pairs, matched);
        let mut at = Vec::new();
        let mut out_kinds = Vec::new();
        let defer = self.defer[kept];
        let side = &mut self.sides[kept];
        for (slot, d) in delta {
            let e = side.entry_mut(slot)?;
            let before = e.matches;
            e.matches += d;
            if defer {
                // Emitted when it expires, if still unmatched.
                continue;
            }
            let kind = match (before > 0, e.matches > 0, while_unmatched) {
                (false, true, false) | (true, false, true) => change::INSERT,
                (true, false, false) | (false, true, true) => change::DELETE,
                _ => continue,
            };
            for _ in 0..e.count.max(0) {
                at.push(e.at);
                out_kinds.push(kind);
            }
        }
        if at.is_empty() {
            return Ok(Vec::new());
        }
        Ok(vec![self.held_rows(kept, &at, out_kinds)?])
    }

    /// NOT IN, a change on the right: a left row is in the output while the right is empty,
    /// or while its key is not NULL, it has no match and the right has no NULL key. Left rows
    /// whose standing changes are inserted or retracted — all of them when the right becomes
    /// (non-)empty or gains (or loses its last) NULL, which is rare; else only those whose
    /// matches changed.
    fn emit_null_aware(
        &mut self,
        kinds: &Int8Array,
        valid: &[bool],
        pairs: &[Pair],
        matched: &[bool],
    ) -> Result<Vec<RecordBatch>> {
        let delta = match_deltas(kinds, pairs, matched);
        let before = (self.right_rows, self.right_nulls);
        for (i, v) in valid.iter().enumerate() {
            let d = i64::from(kinds.value(i));
            self.right_rows += d;
            if !v {
                self.right_nulls += d;
            }
        }
        let after = (self.right_rows, self.right_nulls);
        let shows = |e: &Entry, matches: i64, (rows, nulls): (i64, i64)| match e.null_key {
            true => rows == 0,
            false => matches == 0 && nulls == 0,
        };
        let gates_moved = (before.0 == 0) != (after.0 == 0) || (before.1 == 0) != (after.1 == 0);
        let side = &mut self.sides[0];
        let slots: Vec<usize> = if gates_moved {
            (0..side.slots.len())
                .filter(|s| side.slots[*s].is_some())
                .collect()
        } else {
            delta.keys().copied().collect()
        };
        let mut at = Vec::new();
        let mut out_kinds = Vec::new();
        for slot in slots {
            let d = delta.get(&slot).copied().unwrap_or(0);
            let e = side.entry_mut(slot)?;
            let was = shows(e, e.matches, before);
            e.matches += d;
            let kind = match (was, shows(e, e.matches, after)) {
                (false, true) => change::INSERT,
                (true, false) => change::DELETE,
                _ => continue,
            };
            at.extend(std::iter::repeat_n(e.at, e.count.max(0) as usize));
            out_kinds.extend(std::iter::repeat_n(kind, e.count.max(0) as usize));
        }
        if at.is_empty() {
            return Ok(Vec::new());
        }
        Ok(vec![self.held_rows(0, &at, out_kinds)?])
    }

    /// Held rows of kept input `kept` (at `at` in its batches) as output rows of `kinds`:
    /// the row (semi, anti) or its NULL-padded row (outer).
    fn held_rows(&self, kept: usize, at: &[(usize, usize)], kinds: Vec<i8>) -> Result<RecordBatch> {
        let side = &self.sides[kept];
        let mut cols = Vec::with_capacity(self.widths[kept]);
        for c in 0..self.widths[kept] {
            let arrays: Vec<&dyn Array> =
                side.batches.iter().map(|b| b.column(c).as_ref()).collect();
            cols.push(interleave(&arrays, at)?);
        }
        change::attach(
            &self.schema,
            self.shape_kept(kept, cols),
            Arc::new(Int8Array::from(kinds)),
        )
    }

    /// Apply the changes to this side's live rows (and, on a semi join's kept side, record
    /// each new row's match count).
    #[allow(clippy::too_many_arguments)]
    fn apply(
        &mut self,
        port: usize,
        data: &RecordBatch,
        kinds: &Int8Array,
        keys: &Rows,
        valid: &[bool],
        done: &[bool],
        expiry: Option<&Int64Array>,
        pairs: &[Pair],
        matched: &[bool],
    ) -> Result<()> {
        let mut match_count = vec![0i64; data.num_rows()];
        if self.kind.keeps(port) {
            let other = &self.sides[1 - port];
            for (p, ok) in pairs.iter().zip(matched) {
                if *ok {
                    match_count[p.row as usize] += other.entry(p.slot)?.count;
                }
            }
        }
        let side = &mut self.sides[port];
        let full = match side.append_only {
            true => None,
            false => Some(self.full_rows[port].convert_columns(data.columns())?),
        };
        let batch_no = side.batches.len();
        let mut stored = false;
        for (i, done) in done.iter().enumerate() {
            // Invariant: a retracting input has no bound, so only a row without a key is
            // `done` there — and it was never kept either.
            if *done {
                continue;
            }
            let row = full.as_ref().map(|f| f.row(i).data());
            if kinds.value(i) == change::DELETE {
                let row = row.ok_or_else(|| {
                    BrookError::internal("an append-only join input retracted a row")
                })?;
                side.delete(row)?;
                continue;
            }
            let expires = expiry.map(|e| e.value(i));
            let null_key = !valid[i];
            if let Some(slot) = side.insert(
                row,
                keys.row(i).data(),
                (batch_no, i),
                match_count[i],
                null_key,
            ) {
                stored = true;
                if let Some(t) = expires {
                    side.expiries.push(Reverse((t, slot)));
                }
            }
        }
        if stored {
            side.keep(data);
        }
        side.compact()
    }

    /// Drop rows on `port` behind the watermark (late), and rows without an event time (they
    /// cannot match), when the other side is dropped on the watermark by their time.
    fn drop_late(&mut self, port: usize, batch: RecordBatch) -> Result<RecordBatch> {
        let (Some(bound), Some(w)) = (&self.bounds[1 - port], self.watermark) else {
            return Ok(batch);
        };
        if bound.partner_updating {
            return Ok(batch);
        }
        let times = crate::timestamp_micros(
            &bound
                .partner_time
                .evaluate(&batch)?
                .into_array(batch.num_rows())?,
        )?;
        let keep: BooleanArray = times
            .iter()
            .map(|t| Some(t.is_some_and(|t| t >= w)))
            .collect();
        self.late += times.iter().filter(|t| t.is_some_and(|t| t < w)).count() as u64;
        if keep.true_count() == batch.num_rows() {
            return Ok(batch);
        }
        Ok(filter_record_batch(&batch, &keep)?)
    }
}

/// How the match count of each paired entry (by slot) changes with a batch of changes:
/// +1 per matching insert, -1 per matching delete.
fn match_deltas(kinds: &Int8Array, pairs: &[Pair], matched: &[bool]) -> HashMap<usize, i64> {
    let mut delta: HashMap<usize, i64> = HashMap::new();
    for (p, ok) in pairs.iter().zip(matched) {
        if *ok {
            *delta.entry(p.slot).or_insert(0) += i64::from(kinds.value(p.row as usize));
        }
    }
    delta
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{from_pretty, to_sorted_rows};
    use datafusion::arrow::datatypes::Schema;
    use datafusion::physical_expr::expressions::col;

    /// The data schemas of two test inputs, and the schema of their pairs.
    fn schemas(l: &RecordBatch, r: &RecordBatch) -> (SchemaRef, SchemaRef, SchemaRef) {
        let (ls, rs) = (
            change::strip(l).unwrap().schema(),
            change::strip(r).unwrap().schema(),
        );
        let fields: Vec<_> = ls
            .fields()
            .iter()
            .chain(rs.fields().iter())
            .cloned()
            .collect();
        (ls, rs, Arc::new(Schema::new(fields)))
    }

    fn node(l: &RecordBatch, r: &RecordBatch) -> JoinNode {
        let (ls, rs, pair) = schemas(l, r);
        JoinNode {
            left_keys: vec![col("k", &ls).unwrap()],
            right_keys: vec![col("k2", &rs).unwrap()],
            filter: None,
            left_schema: ls,
            right_schema: rs,
            schema: pair,
            updating: true,
            inputs_updating: [true, true],
            kind: JoinKind::Inner,
            bounds: [None, None],
            nulls_equal: false,
            null_aware: false,
        }
    }

    /// Auctions (open from `t` to `expires`) joined with their bids
    /// `ON a = auction AND bt BETWEEN t AND expires`.
    fn interval_node() -> JoinNode {
        use datafusion::logical_expr::Operator as Op;
        use datafusion::physical_expr::expressions::binary;
        let (ls, rs, pair) = schemas(&auctions(&[]), &bids(&[]));
        let c = |name: &str, schema: &SchemaRef| col(name, schema).unwrap();
        let cmp = |l, op, r| binary(c(l, &pair), op, c(r, &pair), &pair).unwrap();
        let condition = binary(
            cmp("bt", Op::GtEq, "t"),
            Op::And,
            cmp("bt", Op::LtEq, "expires"),
            &pair,
        )
        .unwrap();
        JoinNode {
            kind: JoinKind::Inner,
            left_keys: vec![c("a", &ls)],
            right_keys: vec![c("auction", &rs)],
            filter: Some(condition),
            schema: pair,
            updating: false,
            inputs_updating: [false, false],
            bounds: [
                Some(TimeBound {
                    expiry: c("expires", &ls),
                    partner_time: c("bt", &rs),
                    partner_updating: false,
                }),
                Some(TimeBound {
                    expiry: c("bt", &rs),
                    partner_time: c("t", &ls),
                    partner_updating: false,
                }),
            ],
            left_schema: ls,
            right_schema: rs,
            nulls_equal: false,
            null_aware: false,
        }
    }

    fn auctions(rows: &[&str]) -> RecordBatch {
        from_pretty(&format!(
            "a:int64 | t:timestamp | expires:timestamp | _brook_op:int8\n{}",
            rows.join("\n")
        ))
    }

    fn bids(rows: &[&str]) -> RecordBatch {
        from_pretty(&format!(
            "auction:int64 | bt:timestamp | _brook_op:int8\n{}",
            rows.join("\n")
        ))
    }

    /// Seconds since the epoch in microseconds.
    const S: i64 = 1_000_000;

    #[test]
    fn an_interval_join_drops_rows_the_watermark_passed() {
        let mut op = interval_node().instantiate().unwrap();
        let opened = auctions(&[
            "1 | 1970-01-01T00:00:10 | 1970-01-01T00:00:20 | 1",
            "2 | 1970-01-01T00:00:10 | 1970-01-01T00:00:40 | 1",
        ]);
        assert!(op.on_data(0, opened).unwrap().is_empty());
        let early = bids(&["1 | 1970-01-01T00:00:15 | 1", "2 | 1970-01-01T00:00:05 | 1"]);
        assert_eq!(
            to_sorted_rows(&op.on_data(1, early).unwrap()),
            vec!["1 | 1970-01-01T00:00:10 | 1970-01-01T00:00:20 | 1 | 1970-01-01T00:00:15 | 1"]
        );
        let before = op.state_size();
        // Auction 1 closed at 20 s and both bids are behind 21 s: only auction 2 stays.
        op.on_watermark(21 * S).unwrap();
        assert!(op.state_size() < before, "{} !< {before}", op.state_size());
        let later = bids(&[
            "1 | 1970-01-01T00:00:22 | 1",
            "2 | 1970-01-01T00:00:25 | 1",
            "2 | 1970-01-01T00:00:12 | 1",
        ]);
        assert_eq!(
            to_sorted_rows(&op.on_data(1, later).unwrap()),
            vec!["2 | 1970-01-01T00:00:10 | 1970-01-01T00:00:40 | 2 | 1970-01-01T00:00:25 | 1"]
        );
        assert_eq!(
            op.late_rows(),
            1,
            "the bid at 12 s came behind the watermark"
        );
        // An auction opening behind the watermark is late too, and one that ends before the
        // watermark is matched with what is there but not kept.
        let more = auctions(&[
            "3 | 1970-01-01T00:00:01 | 1970-01-01T00:00:50 | 1",
            "2 | 1970-01-01T00:00:21 | 1970-01-01T00:00:21 | 1",
        ]);
        assert!(op.on_data(0, more).unwrap().is_empty());
        assert_eq!(op.late_rows(), 2);
        op.on_watermark(i64::MAX).unwrap();
        assert_eq!(op.state_size(), 0, "everything expires at the end of input");
    }

    #[test]
    fn an_outer_interval_join_emits_unmatched_rows_once_they_expire() {
        let node = JoinNode {
            kind: JoinKind::Full,
            ..interval_node()
        };
        assert!(node
            .to_string()
            .contains("unmatched left rows emitted then"));
        let mut op = node.instantiate().unwrap();
        let opened = auctions(&[
            "1 | 1970-01-01T00:00:10 | 1970-01-01T00:00:20 | 1",
            "4 | 1970-01-01T00:00:30 | 1970-01-01T00:00:35 | 1",
        ]);
        assert!(
            op.on_data(0, opened).unwrap().is_empty(),
            "a match may still come"
        );
        // A bid without an auction id can never match: out at once.
        let placed = bids(&[
            "1 | 1970-01-01T00:00:15 | 1",
            "3 | 1970-01-01T00:00:16 | 1",
            "NULL | 1970-01-01T00:00:30 | 1",
        ]);
        assert_eq!(
            to_sorted_rows(&op.on_data(1, placed).unwrap()),
            vec![
                "1 | 1970-01-01T00:00:10 | 1970-01-01T00:00:20 | 1 | 1970-01-01T00:00:15 | 1",
                "NULL | NULL | NULL | NULL | 1970-01-01T00:00:30 | 1",
            ]
        );
        // At 21 s bid 3 (no auction 3 can open after it) is final; auction 1 had its bid.
        assert_eq!(
            to_sorted_rows(&op.on_watermark(21 * S).unwrap()),
            vec!["NULL | NULL | NULL | 3 | 1970-01-01T00:00:16 | 1"]
        );
        // Auction 4 closes with no bid; every row is an insert: the output is append-only.
        assert_eq!(
            to_sorted_rows(&op.on_watermark(i64::MAX).unwrap()),
            vec!["4 | 1970-01-01T00:00:30 | 1970-01-01T00:00:35 | NULL | NULL | 1"]
        );
        assert_eq!(op.state_size(), 0);
    }

    #[test]
    fn dead_rows_are_compacted_away() {
        let mut op = interval_node().instantiate().unwrap();
        for round in 0..20i64 {
            let rows: Vec<String> = (0..1000)
                .map(|i| format!("{} | 1970-01-01T00:00:{:02} | 1", i, 10 + round))
                .collect();
            let rows: Vec<&str> = rows.iter().map(String::as_str).collect();
            op.on_data(1, bids(&rows)).unwrap();
            op.on_watermark((10 + round) * S).unwrap();
        }
        // Only the newest round's bids are live; the batches holding the old ones are gone.
        let one_round = {
            let mut fresh = interval_node().instantiate().unwrap();
            let rows: Vec<String> = (0..1000)
                .map(|i| format!("{i} | 1970-01-01T00:00:10 | 1"))
                .collect();
            let rows: Vec<&str> = rows.iter().map(String::as_str).collect();
            fresh.on_data(1, bids(&rows)).unwrap();
            fresh.state_size()
        };
        assert!(
            op.state_size() < 6 * one_round,
            "{} vs one round {one_round}",
            op.state_size()
        );
    }

    #[test]
    fn not_in_follows_the_null_rule() {
        let orders = from_pretty(
            "k:text | amt:int64 | _brook_op:int8
             a      | 1         | 1
             b      | 2         | 1
             NULL   | 3         | 1",
        );
        let names =
            |rows: &str| from_pretty(&format!("k2:text | name:text | _brook_op:int8\n{rows}"));
        let mut node = node(&orders, &names(""));
        node.kind = JoinKind::Anti(0);
        node.null_aware = true;
        node.schema = node.left_schema.clone();
        assert!(node.to_string().contains("left anti (NOT IN: NULL-aware)"));
        let mut op = node.instantiate().unwrap();
        // Nothing to be in yet: every row is NOT IN it, even a NULL one.
        assert_eq!(
            to_sorted_rows(&op.on_data(0, orders).unwrap()),
            vec!["NULL | 3 | 1", "a | 1 | 1", "b | 2 | 1"]
        );
        // Not empty now: NULL IN (...) is unknown; a is in it.
        assert_eq!(
            to_sorted_rows(&op.on_data(1, names("a | Ann | 1")).unwrap()),
            vec!["NULL | 3 | -1", "a | 1 | -1"]
        );
        // A NULL in the subquery makes every comparison unknown.
        assert_eq!(
            to_sorted_rows(&op.on_data(1, names("NULL | Nobody | 1")).unwrap()),
            vec!["b | 2 | -1"]
        );
        let late = from_pretty("k:text | amt:int64 | _brook_op:int8\n c | 4 | 1");
        assert!(op.on_data(0, late).unwrap().is_empty());
        // Both go: the rows come back as they were before either arrived.
        assert_eq!(
            to_sorted_rows(
                &op.on_data(1, names("NULL | Nobody | -1\na | Ann | -1"))
                    .unwrap()
            ),
            vec!["NULL | 3 | 1", "a | 1 | 1", "b | 2 | 1", "c | 4 | 1"]
        );
    }

    #[test]
    fn joins_both_ways_and_retracts() {
        let orders = from_pretty(
            "k:text | amt:int64 | _brook_op:int8
             a      | 1         | 1
             b      | 2         | 1
             NULL   | 3         | 1",
        );
        let names = from_pretty(
            "k2:text | name:text | _brook_op:int8
             a       | Ann       | 1",
        );
        let mut op = node(&orders, &names).instantiate().unwrap();
        assert!(op.on_data(0, orders).unwrap().is_empty());
        assert_eq!(
            to_sorted_rows(&op.on_data(1, names).unwrap()),
            vec!["a | 1 | a | Ann | 1"]
        );
        // The name changes: the joined row is retracted and re-emitted.
        let rename = from_pretty(
            "k2:text | name:text | _brook_op:int8
             a       | Ann       | -1
             a       | Anna      | 1
             b       | Bob       | 1",
        );
        assert_eq!(
            to_sorted_rows(&op.on_data(1, rename).unwrap()),
            vec![
                "a | 1 | a | Ann | -1",
                "a | 1 | a | Anna | 1",
                "b | 2 | b | Bob | 1"
            ]
        );
        let more = from_pretty(
            "k:text | amt:int64 | _brook_op:int8
             b      | 5         | 1
             a      | 1         | -1",
        );
        assert_eq!(
            to_sorted_rows(&op.on_data(0, more).unwrap()),
            vec!["a | 1 | a | Anna | -1", "b | 5 | b | Bob | 1"]
        );
        assert!(op.state_size() > 0);
    }

    /// Append-only inputs keep no whole-row index: a repeated row is an entry of its own,
    /// and pairs exactly as often as a counted copy would.
    #[test]
    fn copies_of_append_only_rows_pair_once_each() {
        let orders = || {
            from_pretty(
                "k:text | amt:int64 | _brook_op:int8
                 a      | 1         | 1
                 a      | 1         | 1",
            )
        };
        let names = from_pretty(
            "k2:text | name:text | _brook_op:int8
             a       | Ann       | 1",
        );
        let both = |updating: bool| JoinNode {
            updating,
            inputs_updating: [updating; 2],
            ..node(&orders(), &names)
        };
        let mut sizes = Vec::new();
        for updating in [true, false] {
            let mut op = both(updating).instantiate().unwrap();
            assert!(op.on_data(0, orders()).unwrap().is_empty());
            assert_eq!(
                to_sorted_rows(&op.on_data(1, names.clone()).unwrap()),
                vec!["a | 1 | a | Ann | 1"; 2],
                "updating inputs: {updating}"
            );
            assert_eq!(
                to_sorted_rows(&op.on_data(0, orders()).unwrap()),
                vec!["a | 1 | a | Ann | 1"; 2],
                "updating inputs: {updating}"
            );
            // Distinct rows: the append-only side holds their keys, not the rows again.
            let before = op.state_size();
            let distinct = from_pretty(
                "k:text | amt:int64 | _brook_op:int8
                 b      | 2         | 1
                 c      | 3         | 1",
            );
            assert!(op.on_data(0, distinct).unwrap().is_empty());
            sizes.push(op.state_size() - before);
        }
        assert!(sizes[1] < sizes[0], "no whole rows held: {sizes:?}");
    }
}
