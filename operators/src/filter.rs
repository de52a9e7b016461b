//! Filter: keeps the rows (inserts and deletes alike) whose predicate is true.

use crate::{NodeSpec, Operator};
use brook_common::{brook_err, Result};
use datafusion::arrow::array::AsArray;
use datafusion::arrow::compute::filter_record_batch;
use datafusion::arrow::datatypes::{DataType, SchemaRef};
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::physical_expr::PhysicalExpr;
use std::fmt;
use std::sync::Arc;

/// Plan node of a filter.
#[derive(Debug)]
pub struct FilterNode {
    /// Boolean predicate over the input schema; NULL counts as false, as in WHERE.
    pub predicate: Arc<dyn PhysicalExpr>,
    /// Input (and output) schema.
    pub schema: SchemaRef,
    /// Whether the input retracts.
    pub updating: bool,
}

impl fmt::Display for FilterNode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Filter: {}", self.predicate)
    }
}

impl NodeSpec for FilterNode {
    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }
    fn updating(&self) -> bool {
        self.updating
    }
    fn cut_invariant(&self) -> bool {
        true
    }
    fn instantiate(&self) -> Result<Box<dyn Operator>> {
        Ok(Box::new(FilterOp {
            predicate: self.predicate.clone(),
        }))
    }
}

/// A filter holds no state.
struct FilterOp {
    predicate: Arc<dyn PhysicalExpr>,
}

impl Operator for FilterOp {
    fn on_data(&mut self, _port: usize, batch: RecordBatch) -> Result<Vec<RecordBatch>> {
        let mask = self
            .predicate
            .evaluate(&batch)?
            .into_array(batch.num_rows())?;
        if mask.data_type() != &DataType::Boolean {
            return Err(brook_err!(
                DatatypeMismatch,
                "argument of WHERE must be type boolean, not {}",
                mask.data_type()
            ));
        }
        let out = filter_record_batch(&batch, mask.as_boolean())?;
        Ok(if out.num_rows() == 0 {
            Vec::new()
        } else {
            vec![out]
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{from_pretty, to_sorted_rows};
    use datafusion::logical_expr::Operator as BinOp;
    use datafusion::physical_expr::expressions::{binary, col, lit};

    #[test]
    fn keeps_matching_inserts_and_deletes() {
        let input = from_pretty(
            "v:int64 | _brook_op:int8
             1       | 1
             5       | 1
             NULL    | 1
             7       | -1",
        );
        let schema = input.schema();
        let pred = binary(col("v", &schema).unwrap(), BinOp::Gt, lit(2i64), &schema).unwrap();
        let node = FilterNode {
            predicate: pred,
            schema: schema.clone(),
            updating: true,
        };
        let mut op = node.instantiate().unwrap();
        let out = op.on_data(0, input).unwrap();
        assert_eq!(to_sorted_rows(&out), vec!["5 | 1", "7 | -1"]);
    }
}
