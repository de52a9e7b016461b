//! What a table's UPDATE, DELETE or TRUNCATE changed, row by row.
//!
//! Such a statement commits the table's new contents in place of the old (see
//! `handler/update_delete.rs`), so the committed snapshots only say "everything was
//! replaced". Fed as is to a continuous query, every row would be retracted and inserted
//! again: moving one group of a 33,000-row hierarchy took a recursive view half a second,
//! all of it spent taking back and re-deriving rows that had not changed. The difference
//! of the two multisets of rows is what changed; only it goes through the plan. Written
//! here because arrow has no multiset difference of batches (its row format is the key).

use brook_common::Result;
use datafusion::arrow::array::UInt32Array;
use datafusion::arrow::compute::take_record_batch;
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::arrow::row::{RowConverter, SortField};
use std::collections::HashMap;

/// The rows of `old` not in `new` and the rows of `new` not in `old`, as multisets (a row
/// twice in `new` and once in `old` is inserted once). `None` when the rows' types have no
/// row encoding: the caller then retracts and inserts everything.
pub fn changed_rows(
    old: &RecordBatch,
    new: &RecordBatch,
) -> Result<Option<(RecordBatch, RecordBatch)>> {
    let fields = new
        .schema()
        .fields()
        .iter()
        .map(|f| SortField::new(f.data_type().clone()))
        .collect();
    let Ok(converter) = RowConverter::new(fields) else {
        return Ok(None);
    };
    let old_rows = converter.convert_columns(old.columns())?;
    let new_rows = converter.convert_columns(new.columns())?;
    // Copies of each row in `new` not yet matched by a copy in `old`.
    let mut unmatched: HashMap<&[u8], i64> = HashMap::with_capacity(new.num_rows());
    for row in new_rows.iter() {
        *unmatched.entry(row.data()).or_default() += 1;
    }
    let mut gone = Vec::new();
    for (i, row) in old_rows.iter().enumerate() {
        match unmatched.get_mut(row.data()) {
            Some(n) if *n > 0 => *n -= 1,
            _ => gone.push(i as u32),
        }
    }
    let mut added = Vec::new();
    for (i, row) in new_rows.iter().enumerate() {
        if let Some(n) = unmatched.get_mut(row.data()) {
            if *n > 0 {
                *n -= 1;
                added.push(i as u32);
            }
        }
    }
    Ok(Some((
        take_record_batch(old, &UInt32Array::from(gone))?,
        take_record_batch(new, &UInt32Array::from(added))?,
    )))
}

#[cfg(test)]
mod tests {
    use super::changed_rows;
    use datafusion::arrow::array::{Int64Array, StringArray};
    use datafusion::arrow::datatypes::{DataType, Field, Schema};
    use datafusion::arrow::record_batch::RecordBatch;
    use std::sync::Arc;

    fn rows(v: &[(&str, i64)]) -> RecordBatch {
        let schema = Arc::new(Schema::new(vec![
            Field::new("child", DataType::Utf8, true),
            Field::new("n", DataType::Int64, true),
        ]));
        let child = StringArray::from(v.iter().map(|r| r.0).collect::<Vec<_>>());
        let n = Int64Array::from(v.iter().map(|r| r.1).collect::<Vec<_>>());
        RecordBatch::try_new(schema, vec![Arc::new(child), Arc::new(n)]).unwrap()
    }

    fn pairs(b: &RecordBatch) -> Vec<(String, i64)> {
        let c = b.column(0).as_any().downcast_ref::<StringArray>().unwrap();
        let n = b.column(1).as_any().downcast_ref::<Int64Array>().unwrap();
        (0..b.num_rows())
            .map(|i| (c.value(i).to_string(), n.value(i)))
            .collect()
    }

    #[test]
    fn an_update_of_one_row_changes_one_row() {
        let old = rows(&[("a", 1), ("b", 2), ("c", 3)]);
        let new = rows(&[("a", 1), ("b", 20), ("c", 3)]);
        let (gone, added) = changed_rows(&old, &new).unwrap().unwrap();
        assert_eq!(pairs(&gone), vec![("b".to_string(), 2)]);
        assert_eq!(pairs(&added), vec![("b".to_string(), 20)]);
    }

    #[test]
    fn copies_count_as_a_multiset() {
        let old = rows(&[("a", 1), ("a", 1), ("b", 2)]);
        let new = rows(&[("a", 1), ("b", 2), ("b", 2), ("b", 2)]);
        let (gone, added) = changed_rows(&old, &new).unwrap().unwrap();
        assert_eq!(pairs(&gone), vec![("a".to_string(), 1)]);
        assert_eq!(
            pairs(&added),
            vec![("b".to_string(), 2), ("b".to_string(), 2)]
        );
        let (gone, added) = changed_rows(&old, &rows(&[])).unwrap().unwrap();
        assert_eq!(gone.num_rows(), 3);
        assert_eq!(added.num_rows(), 0);
    }
}
