//! UNION ALL: forwards every input's rows under the union's schema.

use crate::{change, NodeSpec, Operator};
use brook_common::Result;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::arrow::record_batch::RecordBatch;
use std::fmt;

/// Plan node of UNION ALL.
#[derive(Debug)]
pub struct UnionNode {
    /// Output schema (inputs were coerced to its types by the logical planner).
    pub schema: SchemaRef,
    /// Whether any input retracts.
    pub updating: bool,
}

impl fmt::Display for UnionNode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Union All")
    }
}

impl NodeSpec for UnionNode {
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
        Ok(Box::new(UnionOp {
            schema: self.schema.clone(),
        }))
    }
}

struct UnionOp {
    schema: SchemaRef,
}

impl Operator for UnionOp {
    fn on_data(&mut self, _port: usize, batch: RecordBatch) -> Result<Vec<RecordBatch>> {
        // Same columns, possibly other names: re-label under the union's schema.
        let mut columns = batch.columns().to_vec();
        let kinds = columns
            .pop()
            .unwrap_or_else(|| change::constant(change::INSERT, 0));
        Ok(vec![change::attach(&self.schema, columns, kinds)?])
    }
}
