//! Count windows: windows of `size` consecutive rows (per key), starting every `slide` rows,
//! in arrival order — `TUMBLE_ROWS` (slide = size) and `HOP_ROWS`. Each row of a window is
//! emitted with the window's number (`window_id`, from 0 per key) once the window has all
//! its rows; a window still filling emits nothing, so the result is append-only and final.
//!
//! State: per key, the rows of the windows still filling (at most `size`).
//!
//! Arrival order is the order of the relation's log (a stream's commits, a table's inserts),
//! so the ad-hoc form runs this same operator over the relation's rows in log order and a
//! stream and its table give the same windows.

use crate::{change, NodeSpec, Operator};
use brook_common::{brook_err, Result};
use datafusion::arrow::array::{ArrayRef, Int64Array, UInt32Array};
use datafusion::arrow::compute::{concat_batches, take};
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::arrow::row::{RowConverter, SortField};
use datafusion::common::HashMap;
use std::fmt;
use std::sync::Arc;

/// Plan node of count windows.
#[derive(Debug)]
pub struct CountWindowNode {
    /// Rows per window.
    pub size: u64,
    /// Rows between window starts (`size` for tumbling windows; at most `size`).
    pub slide: u64,
    /// Key columns of the input (each key counts its own rows).
    pub keys: Vec<usize>,
    /// Input schema.
    pub input_schema: SchemaRef,
    /// Output schema: the input's columns, then `window_id` (Int64).
    pub schema: SchemaRef,
}

impl fmt::Display for CountWindowNode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let keys: Vec<&str> = self
            .keys
            .iter()
            .map(|k| self.input_schema.field(*k).name().as_str())
            .collect();
        write!(
            f,
            "CountWindow: size={} slide={} keys=[{}] state=rows of windows still filling",
            self.size,
            self.slide,
            keys.join(", ")
        )
    }
}

impl NodeSpec for CountWindowNode {
    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }
    fn updating(&self) -> bool {
        false
    }
    fn instantiate(&self) -> Result<Box<dyn Operator>> {
        if self.size == 0 || self.slide == 0 || self.slide > self.size {
            return Err(brook_err!(Internal, "count window needs 0 < slide <= size"));
        }
        let fields = self
            .keys
            .iter()
            .map(|&k| SortField::new(self.input_schema.field(k).data_type().clone()))
            .collect::<Vec<_>>();
        Ok(Box::new(CountWindowOp {
            size: self.size,
            slide: self.slide,
            keys: self.keys.clone(),
            schema: self.schema.clone(),
            key_rows: (!fields.is_empty())
                .then(|| RowConverter::new(fields))
                .transpose()?,
            filling: HashMap::new(),
            bytes: 0,
        }))
    }
}

/// A key's rows not yet past every window they belong to.
struct Filling {
    /// Ordinal (within the key) of the first buffered row.
    first: u64,
    /// The buffered rows, in order.
    rows: Option<RecordBatch>,
}

impl Filling {
    fn len(&self) -> u64 {
        self.rows.as_ref().map(|b| b.num_rows() as u64).unwrap_or(0)
    }
}

struct CountWindowOp {
    size: u64,
    slide: u64,
    keys: Vec<usize>,
    schema: SchemaRef,
    key_rows: Option<RowConverter>,
    filling: HashMap<Box<[u8]>, Filling>,
    /// Bytes of the buffered rows.
    bytes: usize,
}

impl CountWindowOp {
    /// Add `rows` (in order) to key `key`; returns the windows they complete.
    fn extend(
        &mut self,
        key: Box<[u8]>,
        rows: RecordBatch,
        out: &mut Vec<RecordBatch>,
    ) -> Result<()> {
        let f = self.filling.entry(key.clone()).or_insert(Filling {
            first: 0,
            rows: None,
        });
        let before = f.first + f.len();
        let all = match f.rows.take() {
            Some(b) => {
                self.bytes = self.bytes.saturating_sub(b.get_array_memory_size());
                concat_batches(&rows.schema(), [&b, &rows])?
            }
            None => rows,
        };
        let total = f.first + all.num_rows() as u64;
        // Windows w end at w * slide + size; emit those ending in (before, total].
        let first_window = (before + 1).saturating_sub(self.size).div_ceil(self.slide);
        let mut w = first_window;
        while w * self.slide + self.size <= total {
            let start = w * self.slide - f.first;
            let window = all.slice(start as usize, self.size as usize);
            let mut cols = window.columns().to_vec();
            cols.push(Arc::new(Int64Array::from_value(
                w as i64,
                window.num_rows(),
            )));
            out.push(change::attach(
                &self.schema,
                cols,
                change::constant(change::INSERT, window.num_rows()),
            )?);
            w += 1;
        }
        // Keep the rows from the start of the first window still filling.
        let keep_from = (w * self.slide).max(f.first);
        if keep_from >= total {
            f.first = total;
            f.rows = None;
        } else {
            let kept = all.slice((keep_from - f.first) as usize, (total - keep_from) as usize);
            // A copy, so the batches the rows came in can be freed.
            let kept = concat_batches(&kept.schema(), [&kept])?;
            self.bytes += kept.get_array_memory_size();
            f.first = keep_from;
            f.rows = Some(kept);
        }
        Ok(())
    }
}

impl Operator for CountWindowOp {
    fn on_data(&mut self, _port: usize, batch: RecordBatch) -> Result<Vec<RecordBatch>> {
        if !change::all_inserts(&batch)? {
            return Err(brook_err!(Internal, "count window input retracted a row"));
        }
        let data = change::strip(&batch)?;
        let n = data.num_rows();
        let mut out = Vec::new();
        let Some(conv) = &self.key_rows else {
            self.extend(Box::new([]), data, &mut out)?;
            return Ok(out);
        };
        let cols: Vec<ArrayRef> = self.keys.iter().map(|&k| data.column(k).clone()).collect();
        let keys = conv.convert_columns(&cols)?;
        // Each key's rows, in arrival order.
        let mut order: Vec<Box<[u8]>> = Vec::new();
        let mut rows: HashMap<Box<[u8]>, Vec<u32>> = HashMap::new();
        for i in 0..n {
            let k = keys.row(i).data();
            match rows.get_mut(k) {
                Some(v) => v.push(i as u32),
                None => {
                    order.push(k.into());
                    rows.insert(k.into(), vec![i as u32]);
                }
            }
        }
        for key in order {
            let idx = UInt32Array::from(rows.remove(&key).unwrap_or_default());
            let cols = data
                .columns()
                .iter()
                .map(|c| Ok(take(c.as_ref(), &idx, None)?))
                .collect::<Result<Vec<ArrayRef>>>()?;
            let part = RecordBatch::try_new(data.schema(), cols)?;
            self.extend(key, part, &mut out)?;
        }
        Ok(out)
    }

    fn state_size(&self) -> usize {
        self.bytes
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{from_pretty, to_sorted_rows};
    use datafusion::arrow::datatypes::{DataType, Field, Schema};

    fn node(size: u64, slide: u64, keyed: bool) -> CountWindowNode {
        let input = change::strip(&readings(&[])).unwrap().schema();
        let mut fields: Vec<_> = input.fields().iter().cloned().collect();
        fields.push(Arc::new(Field::new("window_id", DataType::Int64, false)));
        CountWindowNode {
            size,
            slide,
            keys: if keyed { vec![0] } else { vec![] },
            input_schema: input,
            schema: Arc::new(Schema::new(fields)),
        }
    }

    fn readings(rows: &[&str]) -> RecordBatch {
        from_pretty(&format!(
            "s:text | v:int64 | _brook_op:int8\n{}",
            rows.join("\n")
        ))
    }

    #[test]
    fn tumbling_windows_emit_when_full() {
        let mut op = node(2, 2, true).instantiate().unwrap();
        let out = op
            .on_data(0, readings(&["a | 1 | 1", "b | 2 | 1", "a | 3 | 1"]))
            .unwrap();
        assert_eq!(to_sorted_rows(&out), vec!["a | 1 | 0 | 1", "a | 3 | 0 | 1"]);
        let out = op
            .on_data(0, readings(&["a | 5 | 1", "b | 4 | 1", "a | 7 | 1"]))
            .unwrap();
        assert_eq!(
            to_sorted_rows(&out),
            vec![
                "a | 5 | 1 | 1",
                "a | 7 | 1 | 1",
                "b | 2 | 0 | 1",
                "b | 4 | 0 | 1"
            ]
        );
        assert_eq!(op.state_size(), 0, "no window is filling");
    }

    #[test]
    fn hopping_windows_share_rows() {
        let mut op = node(3, 1, false).instantiate().unwrap();
        let mut out = Vec::new();
        for v in 1..=5 {
            out.extend(op.on_data(0, readings(&[&format!("a | {v} | 1")])).unwrap());
        }
        assert_eq!(
            to_sorted_rows(&out),
            vec![
                "a | 1 | 0 | 1",
                "a | 2 | 0 | 1",
                "a | 2 | 1 | 1",
                "a | 3 | 0 | 1",
                "a | 3 | 1 | 1",
                "a | 3 | 2 | 1",
                "a | 4 | 1 | 1",
                "a | 4 | 2 | 1",
                "a | 5 | 2 | 1",
            ]
        );
    }

    /// The windows do not depend on how the rows were cut into batches.
    #[test]
    fn batches_do_not_change_the_windows() {
        let rows: Vec<String> = (0..40)
            .map(|i| format!("{} | {i} | 1", ["a", "b", "c"][(i * 7) % 3]))
            .collect();
        let run = |cut: usize| {
            let mut op = node(4, 2, true).instantiate().unwrap();
            let mut out = Vec::new();
            for chunk in rows.chunks(cut) {
                let refs: Vec<&str> = chunk.iter().map(String::as_str).collect();
                out.extend(op.on_data(0, readings(&refs)).unwrap());
            }
            to_sorted_rows(&out)
        };
        let whole = run(40);
        assert!(!whole.is_empty());
        for cut in [1, 3, 7] {
            assert_eq!(run(cut), whole, "batches of {cut}");
        }
    }
}
