//! A window operator's state over an input whose rows never change: which rows are final
//! (no row still to come sorts before them), dropping those the functions no longer read,
//! late rows, and a row from the past within the watermark's delay.

use super::partition::Partition;
use super::shortcut::Shortcut;
use super::{Bound, OverOp};
use crate::{change, timestamp_micros};
use brook_common::{brook_err, Result};
use datafusion::arrow::array::{Array, Int8Array, UInt32Array};
use datafusion::arrow::compute::{concat_batches, take_record_batch};
use datafusion::arrow::record_batch::RecordBatch;

impl OverOp {
    /// Which rows of a batch to take (`None`: all): under [`Bound::EventTime`] a row behind
    /// the watermark is late, dropped and counted. A bounded operator's input never
    /// retracts (the planner bounds only such inputs): a retraction is an internal error.
    pub(super) fn keep(
        &mut self,
        data: &RecordBatch,
        kinds: &Int8Array,
    ) -> Result<Option<Vec<bool>>> {
        let Some(bound) = self.bound else {
            return Ok(None);
        };
        if kinds.values().contains(&change::DELETE) {
            return Err(brook_err!(
                Internal,
                "a window over rows that never change received a retraction"
            ));
        }
        let (Bound::EventTime { time }, Some(watermark)) = (bound, self.watermark) else {
            return Ok(None);
        };
        let times = timestamp_micros(data.column(time))?;
        let keep: Vec<bool> = (0..times.len())
            .map(|i| times.is_null(i) || times.value(i) >= watermark)
            .collect();
        self.late += keep.iter().filter(|k| !**k).count() as u64;
        Ok(Some(keep))
    }

    /// How many of `p`'s first rows are final.
    fn final_rows(&self, p: &Partition) -> Result<usize> {
        match self.bound {
            None => Ok(0),
            Some(Bound::Arrival) => Ok(p.rows()),
            Some(Bound::EventTime { time }) => {
                let Some(watermark) = self.watermark else {
                    return Ok(0);
                };
                let mut n = 0;
                for chunk in &p.chunks {
                    // Rows are in event-time order with NULLs last.
                    let times = timestamp_micros(chunk.column(time))?;
                    let valid = times.len() - times.null_count();
                    let before = times.values()[..valid].partition_point(|t| *t < watermark);
                    n += before;
                    if before < chunk.num_rows() {
                        break;
                    }
                }
                Ok(n)
            }
        }
    }

    /// Drop `p`'s final rows but the last ones the functions read back, once they are as
    /// many as the rows kept (so each row is copied O(1) times on the way out).
    pub(super) fn prune(&self, p: &mut Partition) -> Result<()> {
        let Some(shortcut) = &self.shortcut else {
            return Ok(());
        };
        let total = p.rows();
        let kept = shortcut.kept_final() + shortcut.lookahead();
        let drop = self.final_rows(p)?.saturating_sub(kept);
        if drop == 0 || drop * 2 < total {
            return Ok(());
        }
        let all = p.all(&self.schema)?;
        // A copy, not a slice: a slice would keep the dropped rows' buffers alive.
        let rest = UInt32Array::from_iter_values(drop as u32..total as u32);
        p.chunks = vec![take_record_batch(&all, &rest)?];
        Ok(())
    }

    /// `new` (sorted, none behind the watermark) inserted among `p`'s rows after its final
    /// ones: only the rows after the final ones are evaluated again, continuing from the
    /// final rows; returns the changed rows.
    pub(super) fn insert_among_live(
        &mut self,
        p: &mut Partition,
        new: &RecordBatch,
        shortcut: &Shortcut,
    ) -> Result<Option<RecordBatch>> {
        let all = p.all(&self.schema)?;
        // The last final rows' values may read rows after them (`lead`).
        let fixed = self.final_rows(p)?.saturating_sub(shortcut.lookahead());
        let before = all.slice(0, fixed);
        let live = all.slice(fixed, all.num_rows() - fixed);
        let rows = concat_batches(&self.input_schema, [&self.input_part(&live)?, new])?;
        let fresh = self.continue_from(&before, &self.sorted(&rows)?, shortcut)?;
        p.chunks.clear();
        p.push(before)?;
        p.push(fresh.clone())?;
        self.changes(&live, &fresh)
    }
}
