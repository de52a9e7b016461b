//! Result rows on the wire: RowDescription fields and DataRow messages, each value written
//! in its column's text or binary format by [`crate::pg::encode`].

use crate::pg::encode::ColumnView;
use crate::pg::types::{wire_type, PgType};
use brook_common::Result;
use bytes::{BufMut, BytesMut};
use datafusion::arrow::record_batch::RecordBatch;
use pgwire::api::results::{FieldFormat, FieldInfo};
use pgwire::messages::data::DataRow;
use std::sync::Arc;

/// Wire description of result columns.
pub fn field_infos(
    schema: &datafusion::arrow::datatypes::Schema,
    formats: &dyn Fn(usize) -> FieldFormat,
) -> Vec<FieldInfo> {
    schema
        .fields()
        .iter()
        .enumerate()
        .map(|(i, f)| {
            let info = FieldInfo::new(f.name().clone(), None, None, wire_type(f), formats(i));
            match PgType::from_field(f) {
                Some(t) => info.with_type_modifier(t.typmod()),
                None => info,
            }
        })
        .collect()
}

/// Encodes result batches into DataRow messages.
pub struct RowEncoder {
    fields: Arc<Vec<FieldInfo>>,
    text: String,
}

impl RowEncoder {
    /// An encoder for rows described by `fields`.
    pub fn new(fields: Arc<Vec<FieldInfo>>) -> Self {
        RowEncoder {
            fields,
            text: String::new(),
        }
    }

    /// Encode every row of `batch`.
    pub fn encode(&mut self, batch: &RecordBatch) -> Result<Vec<DataRow>> {
        let views = ColumnView::of_batch(batch)?;
        let mut rows = Vec::with_capacity(batch.num_rows());
        let n = views.len() as i16;
        for i in 0..batch.num_rows() {
            let mut buf = BytesMut::with_capacity(16 * views.len());
            for (v, info) in views.iter().zip(self.fields.iter()) {
                if v.is_null(i) {
                    buf.put_i32(-1);
                    continue;
                }
                let at = buf.len();
                buf.put_i32(0);
                if info.format() == FieldFormat::Binary {
                    v.write_binary(i, info.datatype(), &mut buf)?;
                } else {
                    self.text.clear();
                    v.write_text(i, &mut self.text);
                    buf.put_slice(self.text.as_bytes());
                }
                let len = (buf.len() - at - 4) as i32;
                buf[at..at + 4].copy_from_slice(&len.to_be_bytes());
            }
            rows.push(DataRow::new(buf, n));
        }
        Ok(rows)
    }
}
