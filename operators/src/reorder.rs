//! Reorder: an append-only input's rows in event-time order, released as the watermark
//! passes them.
//!
//! An operator that decides on each row as it comes (MATCH_RECOGNIZE) needs its rows in
//! their ORDER BY order; a stream's rows arrive out of that order within its watermark's
//! delay. Reorder holds the rows at or after the watermark and, each time it rises, emits
//! those it passed sorted by the ORDER BY (ties in arrival order): what follows sees the
//! order a table's rows have. A row behind the watermark is late (dropped and counted, as
//! windows drop theirs), and so is a row whose event time is NULL: it sorts after every
//! row, so no watermark ever passes it (holding it would hold it forever, passing it on at
//! once would put it before rows still held). State: the rows within the watermark's delay.

use crate::{change, timestamp_micros, NodeSpec, Operator};
use brook_common::{brook_err, Result};
use datafusion::arrow::array::{Array, BooleanArray, UInt32Array};
use datafusion::arrow::compute::{
    concat_batches, filter_record_batch, lexsort_to_indices, take_record_batch, SortColumn,
    SortOptions,
};
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::arrow::record_batch::RecordBatch;
use std::fmt;

/// Plan node of a reorder.
#[derive(Debug)]
pub struct ReorderNode {
    /// Input (and output) schema.
    pub schema: SchemaRef,
    /// The event-time column, the watermark's (and the ORDER BY's first).
    pub time: usize,
    /// The ORDER BY: columns and how each sorts.
    pub order: Vec<(usize, SortOptions)>,
}

impl fmt::Display for ReorderNode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<String> = self
            .order
            .iter()
            .map(|(c, _)| self.schema.field(*c).name().clone())
            .collect();
        write!(
            f,
            "Reorder: by {} as the watermark passes state=rows at or after the watermark",
            names.join(", ")
        )
    }
}

impl NodeSpec for ReorderNode {
    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }
    fn updating(&self) -> bool {
        false
    }
    fn instantiate(&self) -> Result<Box<dyn Operator>> {
        Ok(Box::new(ReorderOp {
            time: self.time,
            order: self.order.clone(),
            ties_released: self.order.len() == 1,
            held: Vec::new(),
            watermark: None,
            late: 0,
        }))
    }
}

/// A batch of rows held, with its earliest event time.
struct Held {
    rows: RecordBatch,
    earliest: i64,
}

struct ReorderOp {
    time: usize,
    order: Vec<(usize, SortOptions)>,
    /// The ORDER BY is the event time alone: rows at the watermark go too (a later row
    /// of the same time is a peer, not before them). Otherwise a later row of that time
    /// may sort before them by the next column.
    ties_released: bool,
    held: Vec<Held>,
    watermark: Option<i64>,
    late: u64,
}

impl ReorderOp {
    /// Whether a row of event time `t` goes out under the watermark `w`.
    fn released(&self, t: i64, w: i64) -> bool {
        t < w || (self.ties_released && t == w)
    }

    /// `rows` sorted by the ORDER BY, ties in their order.
    fn sorted(&self, rows: &RecordBatch) -> Result<RecordBatch> {
        let mut columns: Vec<SortColumn> = self
            .order
            .iter()
            .map(|(c, options)| SortColumn {
                values: rows.column(*c).clone(),
                options: Some(*options),
            })
            .collect();
        columns.push(SortColumn {
            values: std::sync::Arc::new(UInt32Array::from_iter_values(0..rows.num_rows() as u32)),
            options: None,
        });
        let idx = lexsort_to_indices(&columns, None)?;
        Ok(take_record_batch(rows, &idx)?)
    }
}

impl Operator for ReorderOp {
    fn on_data(&mut self, _port: usize, batch: RecordBatch) -> Result<Vec<RecordBatch>> {
        if change::kinds(&batch)?.values().contains(&change::DELETE) {
            return Err(brook_err!(
                Internal,
                "reorder over rows that never change received a retraction"
            ));
        }
        let times = timestamp_micros(batch.column(self.time))?;
        let mut hold = Vec::with_capacity(times.len());
        let mut earliest = i64::MAX;
        for i in 0..times.len() {
            let keep = times.is_valid(i) && self.watermark.is_none_or(|w| times.value(i) >= w);
            if keep {
                earliest = earliest.min(times.value(i));
            } else {
                self.late += 1;
            }
            hold.push(keep);
        }
        if hold.iter().any(|h| *h) {
            let rows = filter_record_batch(&batch, &BooleanArray::from(hold))?;
            self.held.push(Held { rows, earliest });
        }
        Ok(Vec::new())
    }

    fn on_watermark(&mut self, watermark: i64) -> Result<Vec<RecordBatch>> {
        self.watermark = Some(watermark);
        let mut out = Vec::new();
        let mut kept = Vec::with_capacity(self.held.len());
        for h in std::mem::take(&mut self.held) {
            if !self.released(h.earliest, watermark) {
                kept.push(h);
                continue;
            }
            let times = timestamp_micros(h.rows.column(self.time))?;
            let go: BooleanArray = (0..times.len())
                .map(|i| Some(self.released(times.value(i), watermark)))
                .collect();
            let stay = datafusion::arrow::compute::not(&go)?;
            out.push(filter_record_batch(&h.rows, &go)?);
            let rest = filter_record_batch(&h.rows, &stay)?;
            if rest.num_rows() > 0 {
                let rest_times = timestamp_micros(rest.column(self.time))?;
                let earliest = rest_times
                    .values()
                    .iter()
                    .copied()
                    .min()
                    .unwrap_or(i64::MAX);
                kept.push(Held {
                    rows: rest,
                    earliest,
                });
            }
        }
        self.held = kept;
        let Some(first) = out.first() else {
            return Ok(Vec::new());
        };
        let released = concat_batches(&first.schema(), &out)?;
        Ok(vec![self.sorted(&released)?])
    }

    fn state_size(&self) -> usize {
        self.held
            .iter()
            .map(|h| h.rows.get_array_memory_size())
            .sum()
    }

    fn late_rows(&self) -> u64 {
        self.late
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{from_pretty, to_rows};
    use datafusion::arrow::datatypes::Schema;

    fn node(order: &[usize]) -> ReorderNode {
        let schema = from_pretty("k:text | t:int64 | v:int64 | _brook_op:int8").schema();
        let fields: Vec<_> = schema.fields().iter().take(3).cloned().collect();
        ReorderNode {
            schema: std::sync::Arc::new(Schema::new(fields)),
            time: 1,
            order: order.iter().map(|c| (*c, SortOptions::default())).collect(),
        }
    }

    #[test]
    fn rows_go_out_in_order_as_the_watermark_passes_them() {
        let mut op = node(&[1]).instantiate().unwrap();
        let first = from_pretty(
            "k:text | t:int64 | v:int64 | _brook_op:int8
             a      | 5       | 1       | 1
             b      | 3       | 2       | 1
             a      | NULL    | 3       | 1
             a      | 9       | 4       | 1",
        );
        // A NULL time is never passed by the watermark: late. The rest wait for it.
        assert!(op.on_data(0, first).unwrap().is_empty());
        assert_eq!(op.late_rows(), 1);
        assert_eq!(
            to_rows(&op.on_watermark(5).unwrap()),
            vec!["b | 3 | 2 | 1", "a | 5 | 1 | 1"]
        );
        let second = from_pretty(
            "k:text | t:int64 | v:int64 | _brook_op:int8
             a      | 4       | 5       | 1
             b      | 7       | 6       | 1
             b      | 5       | 7       | 1",
        );
        // 4 is behind the watermark: late. 5 is at it, a peer of the row released there.
        assert!(op.on_data(0, second).unwrap().is_empty());
        assert_eq!(op.late_rows(), 2);
        assert_eq!(to_rows(&op.on_watermark(6).unwrap()), vec!["b | 5 | 7 | 1"]);
        assert_eq!(
            to_rows(&op.on_watermark(i64::MAX).unwrap()),
            vec!["b | 7 | 6 | 1", "a | 9 | 4 | 1"]
        );
        assert_eq!(op.state_size(), 0);
    }

    #[test]
    fn with_a_second_order_column_rows_at_the_watermark_wait() {
        let mut op = node(&[1, 2]).instantiate().unwrap();
        let rows = from_pretty(
            "k:text | t:int64 | v:int64 | _brook_op:int8
             a      | 5       | 9       | 1
             a      | 4       | 1       | 1",
        );
        assert!(op.on_data(0, rows).unwrap().is_empty());
        assert_eq!(to_rows(&op.on_watermark(5).unwrap()), vec!["a | 4 | 1 | 1"]);
        let tie = from_pretty(
            "k:text | t:int64 | v:int64 | _brook_op:int8
             a      | 5       | 2       | 1",
        );
        assert!(op.on_data(0, tie).unwrap().is_empty());
        assert_eq!(
            to_rows(&op.on_watermark(6).unwrap()),
            vec!["a | 5 | 2 | 1", "a | 5 | 9 | 1"]
        );
    }
}
