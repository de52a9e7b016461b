//! A column's DEFAULT as the values of the rows a write leaves it out of.

use brook_common::Result;
use datafusion::arrow::array::{ArrayRef, RecordBatch, RecordBatchOptions, UInt32Array};
use datafusion::arrow::datatypes::Schema;
use datafusion::physical_expr::PhysicalExpr;
use std::sync::Arc;

/// The DEFAULT of one column, ready to fill a batch.
#[derive(Debug, Clone)]
pub enum ColumnDefault {
    /// Computed once per statement (a constant, or a stable expression such as `now()`,
    /// which PostgreSQL also evaluates once per statement): a one-row array.
    Once(ArrayRef),
    /// A volatile expression (`nextval(...)`, `random()`), evaluated for each row: every
    /// row of a multi-row INSERT or COPY gets its own value.
    PerRow(Arc<dyn PhysicalExpr>),
}

impl ColumnDefault {
    /// The values of `rows` rows.
    pub fn values(&self, rows: usize) -> Result<ArrayRef> {
        match self {
            ColumnDefault::Once(one) => {
                let idx = UInt32Array::from(vec![0u32; rows]);
                Ok(datafusion::arrow::compute::take(one.as_ref(), &idx, None)?)
            }
            ColumnDefault::PerRow(expr) => {
                // The expression reads no column: it is evaluated over a batch of `rows`
                // rows without columns.
                let batch = RecordBatch::try_new_with_options(
                    Arc::new(Schema::empty()),
                    vec![],
                    &RecordBatchOptions::new().with_row_count(Some(rows)),
                )?;
                Ok(expr.evaluate(&batch)?.into_array(rows)?)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::arrow::array::{Array, Int32Array};
    use datafusion::physical_expr::expressions::lit;

    #[test]
    fn a_value_once_fills_every_row() {
        let d = ColumnDefault::Once(Arc::new(Int32Array::from(vec![7])));
        let v = d.values(3).unwrap();
        assert_eq!(v.len(), 3);
        let v = d.values(0).unwrap();
        assert_eq!(v.len(), 0);
        let e = ColumnDefault::PerRow(lit(5i64));
        assert_eq!(e.values(4).unwrap().len(), 4);
    }
}
