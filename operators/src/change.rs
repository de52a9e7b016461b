//! The change-kind column every batch of a continuous plan carries last.
//!
//! `+1` marks an insert, `-1` a delete; an update is a delete of the old row followed by an
//! insert of the new one (in that order within a batch).

use brook_common::columns::CHANGE_KIND;
use brook_common::{brook_err, Result};
use datafusion::arrow::array::{Array, ArrayRef, Int8Array};
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use datafusion::arrow::record_batch::RecordBatch;
use std::sync::Arc;

/// Change kind of an inserted row.
pub const INSERT: i8 = 1;
/// Change kind of a deleted row.
pub const DELETE: i8 = -1;

/// The field of the change-kind column.
pub fn field() -> Field {
    Field::new(CHANGE_KIND, DataType::Int8, false)
}

/// `schema` with the change-kind column appended.
pub fn with_change_field(schema: &SchemaRef) -> SchemaRef {
    let mut fields: Vec<_> = schema.fields().iter().cloned().collect();
    fields.push(Arc::new(field()));
    Arc::new(Schema::new_with_metadata(fields, schema.metadata().clone()))
}

/// Attach change kinds to data columns (`columns` of `schema`, which lacks the column).
pub fn attach(
    schema: &SchemaRef,
    mut columns: Vec<ArrayRef>,
    ops: ArrayRef,
) -> Result<RecordBatch> {
    let rows = ops.len();
    columns.push(ops);
    let options =
        datafusion::arrow::record_batch::RecordBatchOptions::new().with_row_count(Some(rows));
    Ok(RecordBatch::try_new_with_options(
        with_change_field(schema),
        columns,
        &options,
    )?)
}

/// A change-kind column of `rows` copies of `kind`.
pub fn constant(kind: i8, rows: usize) -> ArrayRef {
    Arc::new(Int8Array::from_value(kind, rows))
}

/// Push the rows of `data` (of `schema`) through `op` as inserts and return what it emits,
/// without the change-kind column: how an ad-hoc query runs a continuous operator over a
/// table's rows.
pub fn push_inserts(
    op: &mut dyn crate::Operator,
    schema: &SchemaRef,
    data: &RecordBatch,
) -> Result<Vec<RecordBatch>> {
    let rows = data.num_rows();
    let input = attach(schema, data.columns().to_vec(), constant(INSERT, rows))?;
    op.on_data(0, input)?.iter().map(strip).collect()
}

/// The change kinds of a batch of a continuous plan.
pub fn kinds(batch: &RecordBatch) -> Result<&Int8Array> {
    batch
        .columns()
        .last()
        .and_then(|c| c.as_any().downcast_ref::<Int8Array>())
        .ok_or_else(|| brook_err!(Internal, "batch lacks its change-kind column"))
}

/// True when every row of the batch is an insert.
pub fn all_inserts(batch: &RecordBatch) -> Result<bool> {
    let k = kinds(batch)?;
    Ok(k.values().iter().all(|v| *v == INSERT))
}

/// The data columns of a batch (without the change kind).
pub fn strip(batch: &RecordBatch) -> Result<RecordBatch> {
    let n = batch.num_columns();
    if n == 0 {
        return Err(brook_err!(Internal, "batch lacks its change-kind column"));
    }
    let indices: Vec<usize> = (0..n - 1).collect();
    Ok(batch.project(&indices)?)
}

/// Cancel out inserts and deletes of identical rows within a changelog batch (a group that
/// changed and changed back, a table rewrite that kept most rows). The result lists the
/// remaining deletes first, then the inserts, each in order of first appearance.
pub fn consolidate(batch: &RecordBatch) -> Result<RecordBatch> {
    use datafusion::arrow::array::UInt32Array;
    use datafusion::arrow::row::{RowConverter, SortField};
    let data = strip(batch)?;
    let kinds = kinds(batch)?;
    let fields = data
        .schema()
        .fields()
        .iter()
        .map(|f| SortField::new(f.data_type().clone()))
        .collect();
    let rows = RowConverter::new(fields)?.convert_columns(data.columns())?;
    // Net count and first position of each distinct row.
    let mut net: datafusion::common::HashMap<&[u8], (i64, u32)> =
        datafusion::common::HashMap::new();
    let mut order: Vec<&[u8]> = Vec::new();
    for i in 0..batch.num_rows() {
        let key = rows.row(i).data();
        let e = net.entry(key).or_insert_with(|| {
            order.push(key);
            (0, i as u32)
        });
        e.0 += i64::from(kinds.value(i));
    }
    let mut take: Vec<u32> = Vec::new();
    let mut out_kinds: Vec<i8> = Vec::new();
    for (want, kind) in [(-1i64, DELETE), (1, INSERT)] {
        for key in &order {
            let (n, at) = net[key];
            if n.signum() == want {
                for _ in 0..n.unsigned_abs() {
                    take.push(at);
                    out_kinds.push(kind);
                }
            }
        }
    }
    let idx = UInt32Array::from(take);
    let columns = data
        .columns()
        .iter()
        .map(|c| Ok(datafusion::arrow::compute::take(c.as_ref(), &idx, None)?))
        .collect::<Result<Vec<_>>>()?;
    attach(
        &data.schema(),
        columns,
        Arc::new(Int8Array::from(out_kinds)),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::from_pretty;

    #[test]
    fn strip_and_kinds() {
        let b = from_pretty(
            "k:int64 | _brook_op:int8
             1       | 1
             2       | -1",
        );
        assert_eq!(kinds(&b).unwrap().values().to_vec(), vec![1, -1]);
        assert!(!all_inserts(&b).unwrap());
        assert_eq!(strip(&b).unwrap().num_columns(), 1);
    }

    #[test]
    fn consolidate_cancels_opposite_changes() {
        let b = from_pretty(
            "k:int64 | _brook_op:int8
             1       | 1
             2       | -1
             1       | -1
             3       | 1
             2       | 1
             4       | -1",
        );
        let c = consolidate(&b).unwrap();
        assert_eq!(
            crate::testing::to_sorted_rows(&[c]),
            vec!["3 | 1", "4 | -1"]
        );
    }
}
