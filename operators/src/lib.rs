//! Push-based incremental operators over Arrow `RecordBatch`es (the continuous engine).
//!
//! # Layout
//! - [`Operator`]: the push trait with default hooks. Operators (one per file) arrive with the
//!   continuous-queries work; ad-hoc queries run on DataFusion today.

use datafusion::arrow::record_batch::RecordBatch;

/// A push operator: receives batches, watermarks and barriers, emits batches.
///
/// Invariant: an operator emits only `RecordBatch`es whose schema is its output schema; the
/// change kind and event time travel as reserved columns (see `brook_common::columns`).
pub trait Operator: Send {
    /// A batch of input rows arrived; returns the batches to emit downstream.
    fn on_data(&mut self, batch: RecordBatch) -> brook_common::Result<Vec<RecordBatch>>;
    /// Event time advanced to `watermark` (microseconds since the epoch).
    fn on_watermark(&mut self, _watermark: i64) -> brook_common::Result<Vec<RecordBatch>> {
        Ok(Vec::new())
    }
    /// A checkpoint barrier passed; state must be consistent up to here.
    fn on_barrier(&mut self, _epoch: u64) -> brook_common::Result<()> {
        Ok(())
    }
}
