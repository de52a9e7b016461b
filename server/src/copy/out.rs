//! COPY TO: result batches written in text or CSV format.

use super::*;
use crate::pg::encode::ColumnView;
use brook_common::{brook_err, Result};
use datafusion::arrow::record_batch::RecordBatch;

/// Formats result batches as COPY TO text or CSV.
pub struct CopyOutEncoder {
    opts: CopyOptions,
    header_done: bool,
}

impl CopyOutEncoder {
    /// An encoder with the statement's options.
    pub fn new(opts: CopyOptions) -> Result<Self> {
        if opts.format == CopyFormat::Binary {
            return Err(brook_err!(Unsupported, "COPY TO with FORMAT binary"));
        }
        Ok(CopyOutEncoder {
            opts,
            header_done: false,
        })
    }

    /// One CopyData payload per row of `batch`.
    pub fn encode(&mut self, batch: &RecordBatch) -> Result<Vec<Vec<u8>>> {
        let schema = batch.schema();
        let mut out = Vec::with_capacity(batch.num_rows() + 1);
        if self.opts.header && !self.header_done {
            let names: Vec<String> = schema
                .fields()
                .iter()
                .map(|f| self.csv_field(f.name()))
                .collect();
            out.push(
                format!(
                    "{}\n",
                    names.join(&(self.opts.delimiter as char).to_string())
                )
                .into_bytes(),
            );
        }
        self.header_done = true;
        let views = batch
            .columns()
            .iter()
            .zip(schema.fields())
            .map(|(c, f)| ColumnView::new(c, f))
            .collect::<Result<Vec<_>>>()?;
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
