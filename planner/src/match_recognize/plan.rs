//! The logical plan node of `MATCH_RECOGNIZE`: the matching (the operator's plan node) over
//! its input's plan.

use brook_operators::match_recognize::MatchRecognizeNode;
use datafusion::arrow::datatypes::Schema;
use datafusion::common::{Column, DFSchemaRef, Result as DfResult};
use datafusion::error::DataFusionError;
use datafusion::logical_expr::{
    cast, Expr, LogicalPlan, LogicalPlanBuilder, UserDefinedLogicalNodeCore,
};
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

/// `input` with the columns' types the node was planned for: the node reads its input's
/// columns by position and type, and the analyzer may coerce the input's types after the
/// node is planned (the rows of a `VALUES` or the branches of a `UNION` to one type).
fn with_types_of(input: LogicalPlan, planned: &Schema) -> DfResult<LogicalPlan> {
    let fields = input.schema().fields();
    if fields.len() != planned.fields().len() {
        return Err(DataFusionError::Internal(
            "MATCH_RECOGNIZE input columns changed while optimizing".to_string(),
        ));
    }
    if fields
        .iter()
        .zip(planned.fields())
        .all(|(f, p)| f.data_type() == p.data_type())
    {
        return Ok(input);
    }
    let exprs: Vec<Expr> = input
        .schema()
        .iter()
        .zip(planned.fields())
        .map(|((qualifier, field), p)| {
            let column = Expr::Column(Column::new(qualifier.cloned(), field.name()));
            if field.data_type() == p.data_type() {
                column
            } else {
                cast(column, p.data_type().clone()).alias(field.name())
            }
        })
        .collect();
    LogicalPlanBuilder::from(input).project(exprs)?.build()
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
            DataFusionError::Internal("MATCH_RECOGNIZE takes one input".to_string())
        })?;
        Ok(MatchRecognizePlan {
            input: with_types_of(input, &self.node.input_schema)?,
            ..self.clone()
        })
    }
}
