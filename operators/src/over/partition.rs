//! A window operator's partition: its rows in ORDER BY order with the results last
//! emitted for them, in chunks merged as a binary counter carries.

use brook_common::Result;
use datafusion::arrow::compute::concat_batches;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::arrow::record_batch::RecordBatch;

/// A partition's live rows sorted by the window's ORDER BY, each with the window results
/// last emitted for it (the input's columns, then the window columns), in chunks whose
/// sizes fall from first to last.
#[derive(Default)]
pub(super) struct Partition {
    pub(super) chunks: Vec<RecordBatch>,
}

impl Partition {
    pub(super) fn bytes(&self) -> usize {
        self.chunks.iter().map(|c| c.get_array_memory_size()).sum()
    }

    /// Rows in all chunks.
    pub(super) fn rows(&self) -> usize {
        self.chunks.iter().map(|c| c.num_rows()).sum()
    }

    /// Append `chunk`, merging the last two chunks while the newer is at least half the
    /// older.
    pub(super) fn push(&mut self, chunk: RecordBatch) -> Result<()> {
        if chunk.num_rows() == 0 {
            return Ok(());
        }
        self.chunks.push(chunk);
        while let [.., older, newer] = self.chunks.as_slice() {
            if newer.num_rows() * 2 < older.num_rows() {
                break;
            }
            let merged = concat_batches(&older.schema(), [older, newer])?;
            self.chunks.truncate(self.chunks.len() - 2);
            self.chunks.push(merged);
        }
        Ok(())
    }

    /// The last `n` rows (fewer when the partition has fewer), in order.
    pub(super) fn last_rows(&self, n: usize, schema: &SchemaRef) -> Result<RecordBatch> {
        let mut parts = Vec::new();
        let mut wanted = n;
        for c in self.chunks.iter().rev() {
            if wanted == 0 {
                break;
            }
            let take = wanted.min(c.num_rows());
            parts.push(c.slice(c.num_rows() - take, take));
            wanted -= take;
        }
        parts.reverse();
        Ok(concat_batches(schema, &parts)?)
    }

    /// Remove the last `n` rows (all when the partition has fewer).
    pub(super) fn drop_last(&mut self, n: usize) {
        let mut left = n;
        while left > 0 {
            let Some(last) = self.chunks.pop() else {
                return;
            };
            if last.num_rows() > left {
                self.chunks.push(last.slice(0, last.num_rows() - left));
                return;
            }
            left -= last.num_rows();
        }
    }

    /// Every row, in one batch.
    pub(super) fn all(&self, schema: &SchemaRef) -> Result<RecordBatch> {
        Ok(concat_batches(schema, &self.chunks)?)
    }
}
