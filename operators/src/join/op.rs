//! The join's runtime state and its Operator: each input batch is matched against the other
//! side, pairs emitted with their change kinds, rows kept or retracted.

use super::side::*;
use super::*;
use crate::{change, Operator};
use brook_common::{brook_err, Result};
use datafusion::arrow::array::{Array, ArrayRef, BooleanArray, Int64Array, Int8Array, UInt32Array};
use datafusion::arrow::compute::filter_record_batch;
use datafusion::arrow::compute::{interleave, take};
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::arrow::record_batch::{RecordBatch, RecordBatchOptions};
use datafusion::arrow::row::{RowConverter, Rows};
use datafusion::common::HashMap;
use datafusion::physical_expr::PhysicalExpr;
use std::cmp::Reverse;
use std::sync::Arc;

pub(super) struct JoinOp {
    pub(super) kind: JoinKind,
    /// Schema of a pair: left columns, then right columns (what the condition reads).
    pub(super) pair_schema: SchemaRef,
    pub(super) keys: [Vec<Arc<dyn PhysicalExpr>>; 2],
    pub(super) key_rows: RowConverter,
    pub(super) full_rows: [RowConverter; 2],
    /// Column counts of the inputs.
    pub(super) widths: [usize; 2],
    pub(super) filter: Option<Arc<dyn PhysicalExpr>>,
    pub(super) schema: SchemaRef,
    pub(super) sides: [Side; 2],
    pub(super) bounds: [Option<TimeBound>; 2],
    /// Per input: its unmatched rows are emitted when they expire (see [`JoinNode::updating`]).
    pub(super) defer: [bool; 2],
    pub(super) nulls_equal: bool,
    /// See [`JoinNode::null_aware`].
    pub(super) null_aware: bool,
    /// NULL-aware: live right rows, and how many of them have a NULL key.
    pub(super) right_rows: i64,
    pub(super) right_nulls: i64,
    /// The watermark seen so far.
    pub(super) watermark: Option<i64>,
    /// Rows dropped as late.
    pub(super) late: u64,
}

impl JoinOp {
    pub(super) fn encode_keys(
        &self,
        side: usize,
        batch: &RecordBatch,
    ) -> Result<(Rows, Vec<bool>)> {
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
pub(super) struct Pair {
    /// Row of the change batch.
    pub(super) row: u32,
    /// Slot of the other side's entry.
    pub(super) slot: usize,
}

impl JoinOp {
    /// Pairs of change rows with the other side's live rows of the same key, and whether each
    /// pair satisfies the extra condition.
    pub(super) fn pairs(
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
                    .ok_or_else(|| brook_err!(Internal, "join condition is not boolean"))?
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
    pub(super) fn pair_batch(
        &self,
        port: usize,
        data: &RecordBatch,
        pairs: &[Pair],
    ) -> Result<RecordBatch> {
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
        batch_of(self.pair_schema.clone(), columns, pairs.len())
    }
}

impl Operator for JoinOp {
    fn on_data(&mut self, port: usize, batch: RecordBatch) -> Result<Vec<RecordBatch>> {
        if port > 1 {
            return Err(brook_err!(Internal, "join has two inputs"));
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
        if self.kind == JoinKind::Mark {
            if port == 0 {
                out.extend(self.emit_marked(&data, &kinds, &pairs, &matched)?);
            } else {
                out.extend(self.emit_mark_flips(&kinds, &pairs, &matched)?);
            }
        } else if self.kind.keeps(port) {
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
        if self.kind == JoinKind::Mark {
            // Both sides' changes are emitted above.
        } else if self.null_aware && port == 1 {
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
    pub(super) fn emit_pairs(
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
    pub(super) fn emit_kept(
        &self,
        port: usize,
        data: &RecordBatch,
        kinds: &Int8Array,
        pairs: &[Pair],
        matched: &[bool],
        want_matched: bool,
        only: Option<&[bool]>,
    ) -> Result<Vec<RecordBatch>> {
        let has = self.has_match(port, data.num_rows(), pairs, matched)?;
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

    /// Whether each of the `rows` change rows on `port` has a live match on the other side.
    pub(super) fn has_match(
        &self,
        port: usize,
        rows: usize,
        pairs: &[Pair],
        matched: &[bool],
    ) -> Result<Vec<bool>> {
        let other = &self.sides[1 - port];
        let mut has = vec![false; rows];
        for (p, ok) in pairs.iter().zip(matched) {
            if *ok && other.entry(p.slot)?.count > 0 {
                has[p.row as usize] = true;
            }
        }
        Ok(has)
    }

    /// Columns of kept-side rows as output columns: as they are for a semi join; for an
    /// outer join beside NULLs for the other side.
    pub(super) fn shape_kept(&self, kept: usize, cols: Vec<ArrayRef>) -> Vec<ArrayRef> {
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
    pub(super) fn emit_flips(
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
    pub(super) fn emit_null_aware(
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
    pub(super) fn held_rows(
        &self,
        kept: usize,
        at: &[(usize, usize)],
        kinds: Vec<i8>,
    ) -> Result<RecordBatch> {
        let cols = self.held_columns(kept, at)?;
        change::attach(
            &self.schema,
            self.shape_kept(kept, cols),
            Arc::new(Int8Array::from(kinds)),
        )
    }

    /// The columns of rows `at` (batch, row) held on side `kept`.
    pub(super) fn held_columns(&self, kept: usize, at: &[(usize, usize)]) -> Result<Vec<ArrayRef>> {
        let side = &self.sides[kept];
        let mut cols = Vec::with_capacity(self.widths[kept]);
        for c in 0..self.widths[kept] {
            let arrays: Vec<&dyn Array> =
                side.batches.iter().map(|b| b.column(c).as_ref()).collect();
            cols.push(interleave(&arrays, at)?);
        }
        Ok(cols)
    }

    /// Apply the changes to this side's live rows (and, on a semi join's kept side, record
    /// each new row's match count).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn apply(
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
            false => Some(self.full_rows[port].convert_columns(&full_row_columns(data))?),
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
                    brook_err!(Internal, "an append-only join input retracted a row")
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
    pub(super) fn drop_late(&mut self, port: usize, batch: RecordBatch) -> Result<RecordBatch> {
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

/// A batch of `rows` rows, also when it has no columns (both sides pruned, as under
/// `SELECT count(*) FROM s CROSS JOIN t`).
pub(super) fn batch_of(
    schema: SchemaRef,
    columns: Vec<ArrayRef>,
    rows: usize,
) -> Result<RecordBatch> {
    let options = RecordBatchOptions::new().with_row_count(Some(rows));
    Ok(RecordBatch::try_new_with_options(
        schema, columns, &options,
    )?)
}

/// The columns a whole row of a side is encoded from, for finding it again when it is
/// retracted. A side with no columns (a join that selects none of them, as
/// `SELECT s.x FROM s CROSS JOIN t`) still has rows: each is the same constant, so its
/// copies are counted as a multiset.
fn full_row_columns(data: &RecordBatch) -> Vec<ArrayRef> {
    if data.num_columns() > 0 {
        return data.columns().to_vec();
    }
    vec![Arc::new(BooleanArray::from(vec![true; data.num_rows()]))]
}

/// How the match count of each paired entry (by slot) changes with a batch of changes:
/// +1 per matching insert, -1 per matching delete.
pub(super) fn match_deltas(
    kinds: &Int8Array,
    pairs: &[Pair],
    matched: &[bool],
) -> HashMap<usize, i64> {
    let mut delta: HashMap<usize, i64> = HashMap::new();
    for (p, ok) in pairs.iter().zip(matched) {
        if *ok {
            *delta.entry(p.slot).or_insert(0) += i64::from(kinds.value(p.row as usize));
        }
    }
    delta
}
