//! The change-kind column every batch of a continuous plan carries last.
//!
//! `+1` marks an insert, `-1` a delete; an update is a delete of the old row followed by an
//! insert of the new one (in that order within a batch).

use brook_common::columns::CHANGE_KIND;
use brook_common::{BrookError, Result};
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

/// The change kinds of a batch of a continuous plan.
pub fn kinds(batch: &RecordBatch) -> Result<&Int8Array> {
    batch
        .columns()
        .last()
        .and_then(|c| c.as_any().downcast_ref::<Int8Array>())
        .ok_or_else(|| BrookError::internal("batch lacks its change-kind column"))
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
        return Err(BrookError::internal("batch lacks its change-kind column"));
    }
    let indices: Vec<usize> = (0..n - 1).collect();
    Ok(batch.project(&indices)?)
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
}
