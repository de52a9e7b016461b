//! One side of a join: its rows by key (counted copies, or one entry per row for an
//! append-only input), with the time bound that lets old rows go.

use brook_common::{brook_err, Result};
use datafusion::arrow::array::Array;
use datafusion::arrow::compute::interleave;
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::common::HashMap;
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// One live row of a side (with its copies).
pub(super) struct Entry {
    /// The whole row, row-encoded (the `by_row` key); empty on an append-only side.
    pub(super) full: Box<[u8]>,
    /// Its join key, row-encoded (the `index` key).
    pub(super) key: Box<[u8]>,
    /// Where its values are: (batch, row) in the side's batches.
    pub(super) at: (usize, usize),
    /// How many copies are live.
    pub(super) count: i64,
    /// Semi join, kept side: how many live rows of the other side match this row.
    pub(super) matches: i64,
    /// Its key has a NULL (kept only by a NULL-aware anti join, whose NULLs matter).
    pub(super) null_key: bool,
}

/// The live rows of one input: entries in slots, found by join key (to pair) and, when the
/// input retracts, by whole row (to count a copy or apply a delete without scanning the
/// key's rows).
#[derive(Default)]
pub(super) struct Side {
    /// The input never retracts: rows are not indexed whole (nothing will look them up),
    /// and a copy of a row is an entry of its own, which pairs as a counted copy would.
    pub(super) append_only: bool,
    /// Batches holding rows the side has seen (data columns only).
    pub(super) batches: Vec<RecordBatch>,
    /// Live rows; `None` marks a freed slot.
    pub(super) slots: Vec<Option<Entry>>,
    /// Freed slots to reuse.
    pub(super) free: Vec<usize>,
    /// Join key (row-encoded) → slots of the live rows with that key.
    pub(super) index: HashMap<Box<[u8]>, Vec<usize>>,
    /// Whole row (row-encoded) → its slot.
    pub(super) by_row: HashMap<Box<[u8]>, usize>,
    /// Bytes of the entries, for statistics.
    pub(super) bytes: usize,
    /// Bytes of `batches`.
    pub(super) batch_bytes: usize,
    /// Rows in `batches` (live or not): compaction starts when most are dead.
    pub(super) held_rows: usize,
    /// Live entries.
    pub(super) live: usize,
    /// Interval join: (expiry, slot) of every entry, earliest first.
    pub(super) expiries: BinaryHeap<Reverse<(i64, usize)>>,
}

/// Bytes an entry holds, with its keys in the side's maps.
pub(super) fn entry_bytes(e: &Entry) -> usize {
    2 * (e.full.len() + e.key.len()) + 48
}

impl Side {
    pub(super) fn new(append_only: bool) -> Self {
        Side {
            append_only,
            ..Side::default()
        }
    }

    pub(super) fn entry(&self, slot: usize) -> Result<&Entry> {
        self.slots
            .get(slot)
            .and_then(Option::as_ref)
            .ok_or_else(|| brook_err!(Internal, "join entry vanished"))
    }

    pub(super) fn entry_mut(&mut self, slot: usize) -> Result<&mut Entry> {
        self.slots
            .get_mut(slot)
            .and_then(Option::as_mut)
            .ok_or_else(|| brook_err!(Internal, "join entry vanished"))
    }

    /// One more copy of the row `row` (whole, row-encoded; `None` on an append-only side)
    /// with key `key` and values at `at`; a new row starts with `matches`. Returns the slot of
    /// a new entry (whose values must then be kept), `None` for a copy.
    pub(super) fn insert(
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
    pub(super) fn delete(&mut self, row: &[u8]) -> Result<()> {
        let slot = *self
            .by_row
            .get(row)
            .ok_or_else(|| brook_err!(Internal, "join input retracted a row it never inserted"))?;
        let e = self.entry_mut(slot)?;
        e.count -= 1;
        if e.count > 0 {
            return Ok(());
        }
        self.remove(slot);
        Ok(())
    }

    /// Drop the entry in `slot`, every copy.
    pub(super) fn remove(&mut self, slot: usize) {
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
    pub(super) fn keep(&mut self, data: &RecordBatch) {
        self.batch_bytes += data.get_array_memory_size();
        self.held_rows += data.num_rows();
        self.batches.push(data.clone());
    }

    /// When most held rows are dead (deleted or expired), copy the live ones into one batch
    /// so memory follows the live rows, not everything ever seen.
    pub(super) fn compact(&mut self) -> Result<()> {
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
        let merged = super::op::batch_of(schema, columns, live.len())?;
        for (i, &s) in live.iter().enumerate() {
            self.entry_mut(s)?.at = (0, i);
        }
        self.batches.clear();
        (self.batch_bytes, self.held_rows) = (0, 0);
        self.keep(&merged);
        Ok(())
    }
}
