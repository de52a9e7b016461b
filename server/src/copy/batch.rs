//! Rows of fields collected column-wise into batches of a relation's columns.

use super::convert::{binary_values, text_to_column};
use super::*;
use crate::exec::column_default::ColumnDefault;
use crate::pg::fast_text::{fast_integers, RawText};
use crate::pg::types::PgType;
use brook_common::{brook_err, BrookError, Result};
use datafusion::arrow::array::{new_null_array, Array, ArrayRef};
use datafusion::arrow::buffer::NullBuffer;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::arrow::record_batch::RecordBatch;
use std::sync::Arc;

/// Target of a COPY IN: which table columns receive the data fields, and their types.
#[derive(Debug, Clone)]
pub struct CopyTarget {
    /// Full table schema.
    pub schema: SchemaRef,
    /// Declared types of the table's columns.
    pub types: Vec<PgType>,
    /// For each data field, the index of the table column it fills.
    pub field_columns: Vec<usize>,
    /// The DEFAULT of each table column not in `field_columns`.
    pub defaults: Vec<Option<ColumnDefault>>,
    /// Table name, for messages.
    pub table: String,
    /// NOT NULL flags of the table's columns.
    pub not_null: Vec<bool>,
    /// The session's time zone, when not UTC (a timestamptz without an offset is local).
    pub zone: Option<String>,
    /// Whether data is in binary format.
    pub binary: bool,
}

/// The raw bytes of one column of buffered rows, laid out as Arrow's variable-width arrays
/// are (one value buffer and offsets), so that text columns become arrays without copying.
pub(super) struct ColBuf {
    data: Vec<u8>,
    offsets: Vec<i32>,
    /// Rows that are NULL, ascending (kept apart: most columns have none, and a flag per
    /// row cost a push per field).
    null_rows: Vec<usize>,
}

impl ColBuf {
    fn new() -> Self {
        // Sized for a whole batch so that filling one does not reallocate.
        let mut offsets = Vec::with_capacity(BATCH_ROWS + 1);
        offsets.push(0);
        ColBuf {
            data: Vec::with_capacity(BATCH_ROWS * 8),
            offsets,
            null_rows: Vec::new(),
        }
    }

    fn push(&mut self, v: Option<&[u8]>) {
        match v {
            Some(v) => self.data.extend_from_slice(v),
            None => self.null_rows.push(self.len()),
        }
        self.offsets.push(self.data.len() as i32);
    }

    fn len(&self) -> usize {
        self.offsets.len() - 1
    }

    /// Which rows are NULL, as Arrow marks them (`None`: none).
    fn nulls(&self) -> Option<NullBuffer> {
        if self.null_rows.is_empty() {
            return None;
        }
        let mut valid = vec![true; self.len()];
        for &r in &self.null_rows {
            valid[r] = false;
        }
        Some(NullBuffer::from(valid))
    }

    /// The bytes of every row, `None` for NULL.
    fn values(&self) -> Vec<Option<&[u8]>> {
        let mut nulls = self.null_rows.iter().peekable();
        self.offsets
            .windows(2)
            .enumerate()
            .map(|(r, w)| {
                if nulls.next_if_eq(&&r).is_some() {
                    None
                } else {
                    Some(&self.data[w[0] as usize..w[1] as usize])
                }
            })
            .collect()
    }
}

/// Collects rows column-wise and converts them to Arrow batches.
pub struct BatchBuilder {
    target: Arc<CopyTarget>,
    cols: Vec<ColBuf>,
    lines: Vec<u64>,
    /// Fields seen so far in the current row.
    cur: usize,
}

impl RowSink for BatchBuilder {
    fn field(&mut self, value: Option<&[u8]>) -> Result<()> {
        if let Some(c) = self.cols.get_mut(self.cur) {
            c.push(value);
        }
        self.cur += 1;
        Ok(())
    }

    fn end_row(&mut self, line: u64) -> Result<()> {
        let want = self.cols.len();
        let got = std::mem::take(&mut self.cur);
        if got != want {
            let msg = if got < want {
                let missing = self
                    .target
                    .schema
                    .field(self.target.field_columns[got])
                    .name()
                    .clone();
                format!(
                    "missing data for column \"{missing}\" (COPY {}, line {line})",
                    self.target.table
                )
            } else {
                format!(
                    "extra data after last expected column (COPY {}, line {line})",
                    self.target.table
                )
            };
            return Err(BrookError::BadCopyFormat(msg));
        }
        self.lines.push(line);
        Ok(())
    }
}

impl BatchBuilder {
    /// An empty builder.
    pub fn new(target: Arc<CopyTarget>) -> Self {
        let n = target.field_columns.len();
        BatchBuilder {
            target,
            cols: (0..n).map(|_| ColBuf::new()).collect(),
            lines: Vec::new(),
            cur: 0,
        }
    }

    /// Rows collected.
    pub fn len(&self) -> usize {
        self.lines.len()
    }

    /// True when no row is buffered.
    pub fn is_empty(&self) -> bool {
        self.lines.is_empty()
    }

    /// Convert the buffered rows to a batch of the table's schema and reset.
    pub fn take_batch(&mut self) -> Result<RecordBatch> {
        self.take_raw().into_batch(&self.target)
    }

    /// The buffered rows as they were read (text or binary fields), and reset: converting
    /// them is [`RawBatch::into_batch`], which another thread may do.
    pub fn take_raw(&mut self) -> RawBatch {
        let n = self.target.field_columns.len();
        RawBatch {
            cols: std::mem::replace(&mut self.cols, (0..n).map(|_| ColBuf::new()).collect()),
            lines: std::mem::take(&mut self.lines),
        }
    }
}

/// Rows of a COPY as read: each data field's bytes, column by column, and each row's line.
pub struct RawBatch {
    cols: Vec<ColBuf>,
    lines: Vec<u64>,
}

impl RawBatch {
    /// Rows held.
    pub fn len(&self) -> usize {
        self.lines.len()
    }

    /// True when no row is held.
    pub fn is_empty(&self) -> bool {
        self.lines.is_empty()
    }

    /// The rows as a batch of `t`'s table schema: fields converted to the column types,
    /// omitted columns filled with their defaults, NOT NULL checked.
    pub fn into_batch(self, t: &CopyTarget) -> Result<RecordBatch> {
        let rows = self.lines.len();
        let mut out: Vec<Option<ArrayRef>> = vec![None; t.schema.fields().len()];
        let lines = &self.lines;
        for (values, &ci) in self.cols.into_iter().zip(&t.field_columns) {
            out[ci] = Some(convert(t, lines, values, ci)?);
        }
        let mut arrays = Vec::with_capacity(out.len());
        for (ci, a) in out.into_iter().enumerate() {
            let a = match a {
                Some(a) => a,
                None => match &t.defaults[ci] {
                    Some(d) => d.values(rows)?,
                    None => new_null_array(t.schema.field(ci).data_type(), rows),
                },
            };
            if t.not_null[ci] && a.null_count() > 0 {
                let bad = (0..rows).find(|&r| a.is_null(r)).unwrap_or(0);
                return Err(brook_err!(NotNullViolation, "null value in column \"{}\" of relation \"{}\" violates not-null constraint (line {})",
                    t.schema.field(ci).name(),
                    t.table,
                    lines.get(bad).copied().unwrap_or(0)));
            }
            arrays.push(a);
        }
        Ok(RecordBatch::try_new(t.schema.clone(), arrays)?)
    }
}

/// One column's fields (rows at `lines`) as an array of column `ci`'s type.
pub(super) fn convert(t: &CopyTarget, lines: &[u64], col: ColBuf, ci: usize) -> Result<ArrayRef> {
    let ty = &t.types[ci];
    let name = t.schema.field(ci).name().clone();
    if t.binary {
        return binary_values(&col.values(), ty, lines, &name);
    }
    let nulls = col.nulls();
    // Integers and timestamps in their plain layouts are read from the bytes as they are;
    // a column with any other text goes through the general cast below.
    let raw = RawText {
        data: &col.data,
        offsets: &col.offsets,
        nulls: nulls.clone(),
    };
    let fast = match ty {
        PgType::Timestamp(None) => crate::pg::datetime::fast_timestamps(&raw),
        _ => fast_integers(&raw, ty),
    };
    if let Some(fast) = fast {
        return Ok(fast);
    }
    let strings: ArrayRef = Arc::new(strings(t, lines, col, nulls)?);
    text_to_column(
        &strings,
        ty,
        t.zone.as_deref(),
        &|r| lines.get(r).copied().unwrap_or(0),
        &t.table,
        &name,
    )
}

/// The column's bytes as a string array (no copy); invalid UTF-8 is reported by line.
pub(super) fn strings(
    t: &CopyTarget,
    lines: &[u64],
    col: ColBuf,
    nulls: Option<NullBuffer>,
) -> Result<datafusion::arrow::array::StringArray> {
    use datafusion::arrow::buffer::{Buffer, OffsetBuffer, ScalarBuffer};
    // Arrow checks the whole buffer at once (and that no value splits a character); only
    // when that fails are the values checked one by one, to name the line. The buffers are
    // shared, not copied, to keep them for that.
    let data = Buffer::from_vec(col.data);
    let offsets = OffsetBuffer::new(ScalarBuffer::from(col.offsets));
    datafusion::arrow::array::StringArray::try_new(offsets.clone(), data.clone(), nulls.clone())
        .map_err(|_| {
            let bad = offsets.windows(2).enumerate().find(|(r, w)| {
                nulls.as_ref().is_none_or(|n| n.is_valid(*r))
                    && std::str::from_utf8(&data[w[0] as usize..w[1] as usize]).is_err()
            });
            brook_err!(
                BadEncoding,
                "invalid byte sequence for encoding \"UTF8\" (COPY {}, line {})",
                t.table,
                bad.and_then(|(r, _)| lines.get(r).copied()).unwrap_or(0)
            )
        })
}
