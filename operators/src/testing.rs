//! Readable test batches: a header of `name:type` cells and rows of `|`-separated cells.
//!
//! ```text
//! k:text | v:int64 | _brook_op:int8
//! a      | 1       | 1
//! b      | NULL    | -1
//! ```
//!
//! Types are Arrow's names as `arrow::datatypes::DataType` parses them lower-cased
//! (`int64`, `float64`, `utf8`/`text`, `boolean`, `timestamp` meaning microseconds).
//! Cells are cast from text by Arrow's cast kernel; `NULL` is null.

use datafusion::arrow::array::{ArrayRef, StringArray};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, Field, Schema, TimeUnit};
use datafusion::arrow::record_batch::RecordBatch;
use std::sync::Arc;

fn parse_type(name: &str) -> DataType {
    match name.trim() {
        "int8" => DataType::Int8,
        "int16" => DataType::Int16,
        "int32" => DataType::Int32,
        "int64" => DataType::Int64,
        "float64" => DataType::Float64,
        "text" | "utf8" => DataType::Utf8,
        "boolean" | "bool" => DataType::Boolean,
        "timestamp" => DataType::Timestamp(TimeUnit::Microsecond, None),
        other => panic!("from_pretty: unknown type {other}"),
    }
}

/// Build a batch from a readable table (panics on malformed input: test code only).
pub fn from_pretty(text: &str) -> RecordBatch {
    let mut lines = text.lines().map(str::trim).filter(|l| !l.is_empty());
    let header = lines.next().expect("from_pretty: header line");
    let fields: Vec<Field> = header
        .split('|')
        .map(|cell| {
            let (name, ty) = cell.trim().split_once(':').expect("from_pretty: name:type");
            Field::new(name.trim(), parse_type(ty), true)
        })
        .collect();
    let rows: Vec<Vec<Option<String>>> = lines
        .map(|l| {
            l.split('|')
                .map(|c| {
                    let c = c.trim();
                    (c != "NULL").then(|| c.to_string())
                })
                .collect()
        })
        .collect();
    let columns: Vec<ArrayRef> = fields
        .iter()
        .enumerate()
        .map(|(i, f)| {
            let text: StringArray = rows.iter().map(|r| r[i].clone()).collect();
            cast(&text, f.data_type()).expect("from_pretty: cell does not cast")
        })
        .collect();
    let fields = fields
        .into_iter()
        .map(|f| {
            let nullable = f.name() != brook_common::columns::CHANGE_KIND;
            f.with_nullable(nullable)
        })
        .collect::<Vec<_>>();
    RecordBatch::try_new(Arc::new(Schema::new(fields)), columns).expect("from_pretty: batch")
}

/// Render batches as a sorted list of `|`-joined rows (order-insensitive comparisons).
pub fn to_sorted_rows(batches: &[RecordBatch]) -> Vec<String> {
    let mut rows = to_rows(batches);
    rows.sort();
    rows
}

/// Render batches as a list of `|`-joined rows, in their order.
pub fn to_rows(batches: &[RecordBatch]) -> Vec<String> {
    use datafusion::arrow::util::display::{ArrayFormatter, FormatOptions};
    let opts = FormatOptions::default().with_null("NULL");
    let mut out = Vec::new();
    for b in batches {
        let fmts: Vec<_> = b
            .columns()
            .iter()
            .map(|c| ArrayFormatter::try_new(c.as_ref(), &opts).expect("formatter"))
            .collect();
        for r in 0..b.num_rows() {
            let cells: Vec<String> = fmts.iter().map(|f| f.value(r).to_string()).collect();
            out.push(cells.join(" | "));
        }
    }
    out
}
