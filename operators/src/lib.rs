//! Push-based incremental operators over Arrow `RecordBatch`es: the continuous engine.
//!
//! Every batch inside a continuous plan carries its change kind as a trailing `Int8` column
//! named [`brook_common::columns::CHANGE_KIND`] (`+1` insert, `-1` delete), so one
//! `RecordBatch` type carries appends and retractions alike. Expressions and accumulators are
//! DataFusion's (`PhysicalExpr`, `Accumulator`); only the incremental bookkeeping is Brook's.
//!
//! # Layout
//! - [`Operator`]: the push trait with default hooks; [`NodeSpec`]: a plan node that builds
//!   an operator's runtime state (plan apart from state, so one plan can run many times).
//! - [`change`]: the change-kind column: add, read, strip, negate.
//! - [`group_index`]: group key → slot, with packed keys for integer-like columns.
//! - One operator per file: [`source`] (projection + change kind + watermark of a scanned
//!   relation), [`filter`], [`project`], [`aggregate`] (GROUP BY with retraction, emit on
//!   update or on window close), [`join`] (inner equi-join with retraction), [`over`] (window
//!   functions: running aggregates, LAG/LEAD, frames), [`session_window`] (SESSION windows),
//!   [`topn`] (ORDER BY .. LIMIT, row_number() <= n per group), [`count_window`]
//!   (TUMBLE_ROWS / HOP_ROWS), [`reorder`] (rows in event-time order as the watermark
//!   passes them, for MATCH_RECOGNIZE), [`union`], [`unnest`], [`recursive`] (WITH RECURSIVE: a
//!   small graph of the recursive term's operators, iterated to a fixpoint per change).
//!   `join/` and `aggregate/` keep the plan node (`mod.rs`), the runtime state and operator
//!   (`op.rs`, and a join side's `side.rs`) and the tests apart.
//! - [`graph`]: a plan graph of nodes and the runtime that pushes batches and watermarks
//!   through it.
//! - `testing` (tests only): `from_pretty`, readable test batches.

pub mod aggregate;
pub mod change;
pub mod count_window;
pub mod filter;
pub mod graph;
pub mod group_index;
pub mod join;
pub mod match_recognize;
pub mod over;
pub mod project;
pub mod recursive;
pub mod reorder;
pub mod session_window;
pub mod source;
#[cfg(test)]
pub mod testing;
pub mod topn;
pub mod union;
pub mod unnest;

use brook_common::Result;
use datafusion::arrow::array::ArrayRef;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::arrow::row::{RowConverter, Rows};
use datafusion::physical_expr::PhysicalExpr;
use std::sync::Arc;

/// Microseconds since the epoch of a timestamp column (any unit or zone; NULL stays NULL):
/// the scale of watermarks and of every event-time comparison in the engine.
pub fn timestamp_micros(values: &ArrayRef) -> Result<datafusion::arrow::array::Int64Array> {
    use datafusion::arrow::array::AsArray;
    use datafusion::arrow::compute::cast;
    use datafusion::arrow::datatypes::{DataType, Int64Type, TimeUnit};
    let us = cast(values, &DataType::Timestamp(TimeUnit::Microsecond, None))?;
    Ok(cast(&us, &DataType::Int64)?
        .as_primitive::<Int64Type>()
        .clone())
}

/// Each row's key (`exprs` over `data`), row-encoded by `conv`; `None` without keys (one
/// group: `conv` is `None` when there are no key expressions).
pub(crate) fn key_rows(
    conv: Option<&RowConverter>,
    exprs: &[Arc<dyn PhysicalExpr>],
    data: &RecordBatch,
) -> Result<Option<Rows>> {
    let Some(conv) = conv else {
        return Ok(None);
    };
    let cols = exprs
        .iter()
        .map(|e| Ok(e.evaluate(data)?.into_array(data.num_rows())?))
        .collect::<Result<Vec<ArrayRef>>>()?;
    Ok(Some(conv.convert_columns(&cols)?))
}

/// A push operator: receives batches, watermarks and barriers, emits batches.
///
/// Invariants: every batch an operator receives or emits ends with the change-kind column;
/// an operator emits only batches whose schema is its node's output schema plus that column.
pub trait Operator: Send {
    /// Rows emitted before any input (a global aggregate's row over nothing).
    fn on_start(&mut self) -> Result<Vec<RecordBatch>> {
        Ok(Vec::new())
    }
    /// A batch arrived on input `port`; returns the batches to emit downstream.
    fn on_data(&mut self, port: usize, batch: RecordBatch) -> Result<Vec<RecordBatch>>;
    /// Event time of every input advanced to `watermark` (microseconds since the epoch):
    /// no row with an earlier event time will follow.
    fn on_watermark(&mut self, _watermark: i64) -> Result<Vec<RecordBatch>> {
        Ok(Vec::new())
    }
    /// A barrier passed: the input of one round of commits is complete. Operators that
    /// batch their output (a grouped aggregate emits each touched group once per barrier)
    /// emit it now; state must be consistent up to here.
    fn on_barrier(&mut self, _epoch: u64) -> Result<Vec<RecordBatch>> {
        Ok(Vec::new())
    }
    /// Bytes of state the operator holds (shown by statistics; bounded by what the SQL needs).
    fn state_size(&self) -> usize {
        0
    }
    /// Rows dropped because they arrived after the watermark closed their window.
    fn late_rows(&self) -> u64 {
        0
    }
}

/// A node of a continuous plan: what to compute, without runtime state.
pub trait NodeSpec: std::fmt::Display + Send + Sync {
    /// Output schema, without the change-kind column.
    fn schema(&self) -> SchemaRef;
    /// True when the output can retract rows it emitted (an updating result).
    fn updating(&self) -> bool;
    /// True when the rows it emits do not depend on how its input is cut into batches (no
    /// watermark, no intermediate results): a query of only such nodes may read several
    /// stored batches as one.
    fn cut_invariant(&self) -> bool {
        false
    }
    /// Build fresh runtime state.
    fn instantiate(&self) -> Result<Box<dyn Operator>>;
}
