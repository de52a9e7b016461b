//! COPY TO: result batches written in text, CSV or binary format.

use super::*;
use crate::pg::encode::ColumnView;
use brook_common::{brook_err, Result};
use datafusion::arrow::record_batch::RecordBatch;

/// Formats result batches as COPY TO text, CSV or binary.
pub struct CopyOutEncoder {
    opts: CopyOptions,
    header_done: bool,
    /// Binary: whether the signature and header went out (with the first row).
    binary_header_sent: std::sync::Arc<std::sync::atomic::AtomicBool>,
}

impl CopyOutEncoder {
    /// An encoder with the statement's options.
    pub fn new(opts: CopyOptions) -> Result<Self> {
        Ok(CopyOutEncoder {
            opts,
            header_done: false,
            binary_header_sent: Default::default(),
        })
    }

    /// The HEADER line naming `schema`'s columns, once (sent before the first row, also
    /// when there is none, as PostgreSQL's); None without HEADER or once sent.
    pub fn header(&mut self, schema: &datafusion::arrow::datatypes::Schema) -> Option<Vec<u8>> {
        if !self.opts.header || self.header_done || self.is_binary() {
            return None;
        }
        self.header_done = true;
        let names: Vec<String> = schema
            .fields()
            .iter()
            .map(|f| self.csv_field(f.name()))
            .collect();
        Some(
            format!(
                "{}\n",
                names.join(&(self.opts.delimiter as char).to_string())
            )
            .into_bytes(),
        )
    }

    /// Whether the output is PostgreSQL's binary COPY format.
    pub fn is_binary(&self) -> bool {
        self.opts.format == CopyFormat::Binary
    }

    /// For the last CopyData of a binary COPY TO ([`binary_end`]): whether a row carried
    /// the header.
    pub fn binary_header_sent(&self) -> std::sync::Arc<std::sync::atomic::AtomicBool> {
        self.binary_header_sent.clone()
    }

    /// One CopyData payload per row of `batch`.
    pub fn encode(&mut self, batch: &RecordBatch) -> Result<Vec<Vec<u8>>> {
        if self.is_binary() {
            let mut rows = encode_binary(batch)?;
            if let Some(first) = rows.first_mut() {
                use std::sync::atomic::Ordering;
                if !self.binary_header_sent.swap(true, Ordering::Relaxed) {
                    // As PostgreSQL sends it: the header in one message with the first row.
                    let mut with_header = binary_header();
                    with_header.append(first);
                    *first = with_header;
                }
            }
            return Ok(rows);
        }
        let mut out = Vec::with_capacity(batch.num_rows() + 1);
        out.extend(self.header(&batch.schema()));
        let views = ColumnView::of_batch(batch)?;
        let mut cell = String::new();
        for i in 0..batch.num_rows() {
            let mut line = String::new();
            for (j, v) in views.iter().enumerate() {
                if j > 0 {
                    line.push(self.opts.delimiter as char);
                }
                if v.is_null(i) {
                    line.push_str(&self.opts.null);
                    continue;
                }
                cell.clear();
                v.write_text(i, &mut cell);
                match self.opts.format {
                    CopyFormat::Csv => line.push_str(&self.csv_field(&cell)),
                    _ => escape_text(&cell, self.opts.delimiter, &mut line),
                }
            }
            line.push('\n');
            out.push(line.into_bytes());
        }
        Ok(out)
    }

    fn csv_field(&self, s: &str) -> String {
        let q = self.opts.quote as char;
        // the NULL string (empty by default) is quoted so that it reads back as a value
        let needs = s == self.opts.null
            || s.contains(self.opts.delimiter as char)
            || s.contains(q)
            || s.contains('\n')
            || s.contains('\r');
        if !needs {
            return s.to_string();
        }
        let e = self.opts.escape as char;
        let mut out = String::with_capacity(s.len() + 2);
        out.push(q);
        for c in s.chars() {
            if c == q || c == e {
                out.push(e);
            }
            out.push(c);
        }
        out.push(q);
        out
    }
}

/// The binary format's signature, flags (none) and header extension length (none): the
/// first CopyData of a binary COPY TO.
pub fn binary_header() -> Vec<u8> {
    let mut out = b"PGCOPY\n\xff\r\n\0".to_vec();
    out.extend_from_slice(&[0; 8]);
    out
}

/// The binary format's end: a field count of -1.
pub const BINARY_TRAILER: [u8; 2] = [0xFF, 0xFF];

/// The last CopyData of a binary COPY TO: the trailer, after the header when no row
/// carried it (an empty result is one message, header and trailer, as PostgreSQL sends it).
pub fn binary_end(header_sent: &std::sync::atomic::AtomicBool) -> Vec<u8> {
    let mut out = if header_sent.load(std::sync::atomic::Ordering::Relaxed) {
        Vec::new()
    } else {
        binary_header()
    };
    out.extend_from_slice(&BINARY_TRAILER);
    out
}

/// Binary rows: a field count, then each field's length (-1 for NULL) and its value in the
/// binary form of the type a result column has on the wire (what a reader such as
/// connectorx expects from the column types it asked for).
fn encode_binary(batch: &RecordBatch) -> Result<Vec<Vec<u8>>> {
    use bytes::{BufMut, BytesMut};
    let schema = batch.schema();
    let types: Vec<_> = schema
        .fields()
        .iter()
        .map(|f| crate::pg::types::wire_type(f))
        .collect();
    let views = ColumnView::of_batch(batch)?;
    let fields = i16::try_from(views.len())
        .map_err(|_| brook_err!(Unsupported, "binary COPY of more than 32767 columns"))?;
    let mut out = Vec::with_capacity(batch.num_rows());
    let mut cell = BytesMut::new();
    for i in 0..batch.num_rows() {
        let mut row = BytesMut::new();
        row.put_i16(fields);
        for (v, ty) in views.iter().zip(&types) {
            if v.is_null(i) {
                row.put_i32(-1);
                continue;
            }
            cell.clear();
            v.write_binary(i, ty, &mut cell)?;
            let len = i32::try_from(cell.len()).map_err(|_| {
                brook_err!(
                    OutOfRange,
                    "a value over 2 GB cannot be sent in binary COPY"
                )
            })?;
            row.put_i32(len);
            row.put_slice(&cell);
        }
        out.push(row.to_vec());
    }
    Ok(out)
}

pub(super) fn escape_text(s: &str, delim: u8, out: &mut String) {
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' if delim == b'\t' => out.push_str("\\t"),
            c if c as u32 == delim as u32 => {
                out.push('\\');
                out.push(c);
            }
            c => out.push(c),
        }
    }
}
