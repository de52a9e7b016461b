//! The logical plan node of `MATCH_RECOGNIZE`: the matching (the operator's plan node) over
//! its input's plan.

use brook_operators::match_recognize::MatchRecognizeNode;
use datafusion::common::{DFSchemaRef, Result as DfResult};
use datafusion::logical_expr::{Expr, LogicalPlan, UserDefinedLogicalNodeCore};
use std::cmp::Ordering;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::sync::Arc;

/// `MATCH_RECOGNIZE` over `input`.
#[derive(Debug, Clone)]
pub struct MatchRecognizePlan {
    /// The rows matched.
    pub input: LogicalPlan,
    /// The matching, over the input's columns by position.
    pub node: Arc<MatchRecognizeNode>,
    /// The output (the node's schema, unqualified).
    pub schema: DFSchemaRef,
    /// The clause as written: with the input, what makes two such nodes equal.
    pub clause: String,
}

impl PartialEq for MatchRecognizePlan {
    fn eq(&self, other: &Self) -> bool {
        self.clause == other.clause && self.input == other.input
    }
}

impl Eq for MatchRecognizePlan {}

impl Hash for MatchRecognizePlan {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.clause.hash(state);
        self.input.hash(state);
    }
}

impl PartialOrd for MatchRecognizePlan {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        match self.clause.partial_cmp(&other.clause) {
            Some(Ordering::Equal) if self.input != other.input => None,
            order => order,
        }
    }
}

impl UserDefinedLogicalNodeCore for MatchRecognizePlan {
    fn name(&self) -> &str {
        "MatchRecognize"
    }

    fn inputs(&self) -> Vec<&LogicalPlan> {
        vec![&self.input]
    }

    fn schema(&self) -> &DFSchemaRef {
        &self.schema
    }

    // The clause's expressions are planned already, over the node's own schemas: none for
    // the optimizer to rewrite. With no `necessary_children_exprs`, the optimizer keeps
    // every input column and pushes no filter below the node.
    fn expressions(&self) -> Vec<Expr> {
        Vec::new()
    }

    fn fmt_for_explain(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.node)
    }

    fn with_exprs_and_inputs(&self, _exprs: Vec<Expr>, inputs: Vec<LogicalPlan>) -> DfResult<Self> {
        let [input]: [LogicalPlan; 1] = inputs.try_into().map_err(|_| {
            datafusion::error::DataFusionError::Internal(
                "MATCH_RECOGNIZE takes one input".to_string(),
            )
        })?;
        // The node reads the input's columns by position: a rewritten input keeps them.
        let types = |p: &LogicalPlan| -> Vec<datafusion::arrow::datatypes::DataType> {
            p.schema()
                .fields()
                .iter()
                .map(|f| f.data_type().clone())
                .collect()
        };
        if types(&input) != types(&self.input) {
            return Err(datafusion::error::DataFusionError::Internal(
                "MATCH_RECOGNIZE input columns changed while optimizing".to_string(),
            ));
        }
        Ok(MatchRecognizePlan {
            input,
            ..self.clone()
        })
    }
}
