//! Projection: computes the output columns of each row; the change kind passes through.

use crate::{change, NodeSpec, Operator};
use brook_common::Result;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::physical_expr::PhysicalExpr;
use std::fmt;
use std::sync::Arc;

/// Plan node of a projection.
#[derive(Debug)]
pub struct ProjectNode {
    /// One expression per output column, over the input schema.
    pub exprs: Vec<Arc<dyn PhysicalExpr>>,
    /// Output schema.
    pub schema: SchemaRef,
    /// Whether the input retracts.
    pub updating: bool,
}

impl fmt::Display for ProjectNode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let exprs: Vec<String> = self
            .exprs
            .iter()
            .zip(self.schema.fields())
            .map(|(e, field)| format!("{e} AS {}", field.name()))
            .collect();
        write!(f, "Project: {}", exprs.join(", "))
    }
}

impl NodeSpec for ProjectNode {
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
        Ok(Box::new(ProjectOp {
            exprs: self.exprs.clone(),
            schema: self.schema.clone(),
        }))
    }
}

/// A projection holds no state.
struct ProjectOp {
    exprs: Vec<Arc<dyn PhysicalExpr>>,
    schema: SchemaRef,
}

impl Operator for ProjectOp {
    fn on_data(&mut self, _port: usize, batch: RecordBatch) -> Result<Vec<RecordBatch>> {
        let rows = batch.num_rows();
        let mut columns = Vec::with_capacity(self.exprs.len());
        for (e, field) in self.exprs.iter().zip(self.schema.fields()) {
            let mut a = e.evaluate(&batch)?.into_array(rows)?;
            // Literal-derived columns can come out as another type than the plan's field
            // (e.g. NULL); the plan's type is what downstream expects.
            if a.data_type() != field.data_type() {
                a = datafusion::arrow::compute::cast(&a, field.data_type())?;
            }
            columns.push(a);
        }
        let kinds = batch
            .columns()
            .last()
            .cloned()
            .unwrap_or_else(|| change::constant(change::INSERT, rows));
        Ok(vec![change::attach(&self.schema, columns, kinds)?])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{from_pretty, to_sorted_rows};
    use datafusion::arrow::datatypes::{DataType, Field, Schema};
    use datafusion::logical_expr::Operator as BinOp;
    use datafusion::physical_expr::expressions::{binary, col, lit};

    #[test]
    fn computes_columns_and_keeps_kinds() {
        let input = from_pretty(
            "a:int64 | b:int64 | _brook_op:int8
             1       | 10      | 1
             2       | 20      | -1",
        );
        let schema = input.schema();
        let sum = binary(
            col("a", &schema).unwrap(),
            BinOp::Plus,
            col("b", &schema).unwrap(),
            &schema,
        )
        .unwrap();
        let node = ProjectNode {
            exprs: vec![sum, lit(7i64)],
            schema: Arc::new(Schema::new(vec![
                Field::new("s", DataType::Int64, true),
                Field::new("c", DataType::Int64, false),
            ])),
            updating: true,
        };
        let out = node.instantiate().unwrap().on_data(0, input).unwrap();
        assert_eq!(to_sorted_rows(&out), vec!["11 | 7 | 1", "22 | 7 | -1"]);
    }
}
