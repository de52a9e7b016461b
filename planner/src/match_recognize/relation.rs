//! The SQL planner's relation planner for `brook_match_recognize('clause', (query))`, the
//! form `MATCH_RECOGNIZE` is rewritten into: the query's plan, then the clause planned
//! against the query's columns, as a [`MatchRecognizePlan`] node.

use super::plan::MatchRecognizePlan;
use super::{plan_node, ExprPlanning, MATCH_RECOGNIZE_FUNCTION};
use brook_common::{brook_err, BrookError, Result};
use datafusion::common::{DFSchema, Result as DfResult};
use datafusion::error::DataFusionError;
use datafusion::execution::context::ExecutionProps;
use datafusion::logical_expr::physical_planning_context::PhysicalPlanningContext;
use datafusion::logical_expr::planner::{
    PlannedRelation, RelationPlanner, RelationPlannerContext, RelationPlanning,
};
use datafusion::logical_expr::simplify::SimplifyContext;
use datafusion::logical_expr::{Expr as LogicalExpr, Extension, LogicalPlan};
use datafusion::optimizer::analyzer::type_coercion::TypeCoercion;
use datafusion::optimizer::simplify_expressions::ExprSimplifier;
use datafusion::optimizer::AnalyzerRule;
use datafusion::physical_expr::{create_physical_expr, PhysicalExpr};
use datafusion::sql::sqlparser::ast::{
    Expr, FunctionArg, FunctionArgExpr, TableFactor, Value, ValueWithSpan,
};
use std::sync::Arc;

/// Plans `brook_match_recognize('clause', (query))` in FROM.
#[derive(Debug, Default)]
pub struct MatchRecognizeRelations;

impl RelationPlanner for MatchRecognizeRelations {
    fn plan_relation(
        &self,
        relation: TableFactor,
        context: &mut dyn RelationPlannerContext,
    ) -> DfResult<RelationPlanning> {
        let TableFactor::Table {
            name,
            args: Some(args),
            alias,
            ..
        } = &relation
        else {
            return Ok(RelationPlanning::Original(Box::new(relation)));
        };
        if !name
            .to_string()
            .eq_ignore_ascii_case(MATCH_RECOGNIZE_FUNCTION)
        {
            return Ok(RelationPlanning::Original(Box::new(relation)));
        }
        let (clause, query) = match args.args.as_slice() {
            [FunctionArg::Unnamed(FunctionArgExpr::Expr(Expr::Value(ValueWithSpan {
                value: Value::SingleQuotedString(clause),
                ..
            }))), FunctionArg::Unnamed(FunctionArgExpr::Expr(Expr::Subquery(query)))] => {
                (clause.clone(), query.clone())
            }
            _ => {
                return Err(DataFusionError::from(brook_err!(
                    InvalidParameter,
                    "{MATCH_RECOGNIZE_FUNCTION}(clause, (query)): write MATCH_RECOGNIZE instead"
                )))
            }
        };
        let alias = alias.clone();
        let input = context.plan(TableFactor::Derived {
            lateral: false,
            subquery: query,
            alias: None,
            sample: None,
        })?;
        let plan = plan(&clause, input, context).map_err(DataFusionError::from)?;
        Ok(RelationPlanning::Planned(Box::new(PlannedRelation::new(
            plan, alias,
        ))))
    }
}

/// The node of `clause` over `input`.
fn plan(
    clause: &str,
    input: LogicalPlan,
    context: &mut dyn RelationPlannerContext,
) -> Result<LogicalPlan> {
    // The input's types as the analyzer settles them (a VALUES list's rows, a UNION's
    // branches), which the clause is planned against.
    let input = TypeCoercion::new().analyze(input, context.context_provider().options())?;
    let schema = Arc::new(input.schema().as_arrow().clone());
    // The clause names input columns without a qualifier: each name must say one column.
    for (i, f) in schema.fields().iter().enumerate() {
        if schema.fields()[..i].iter().any(|g| g.name() == f.name()) {
            return Err(BrookError::ambiguous_column(format!(
                "MATCH_RECOGNIZE input column \"{}\" appears more than once (name the \
                 columns of the input apart)",
                f.name()
            )));
        }
    }
    // `now()` in the clause is the time it is planned at; the session's options are copied
    // once, for every expression of the clause.
    let mut props = ExecutionProps::new();
    props.mark_start_execution(Arc::new(context.context_provider().options().clone()));
    let node = plan_node(clause, schema, &mut ContextExprs { context, props })?;
    let output = Arc::new(DFSchema::try_from(node.schema.as_ref().clone())?);
    Ok(LogicalPlan::Extension(Extension {
        node: Arc::new(MatchRecognizePlan {
            input,
            node: Arc::new(node),
            schema: output,
            clause: clause.to_string(),
        }),
    }))
}

/// Expressions planned by the SQL planner planning the query around the clause.
struct ContextExprs<'a> {
    context: &'a mut dyn RelationPlannerContext,
    props: ExecutionProps,
}

impl ExprPlanning for ContextExprs<'_> {
    fn logical(&mut self, e: Expr, schema: &DFSchema) -> Result<LogicalExpr> {
        Ok(self.context.sql_to_expr(e, schema)?)
    }

    fn physical(&self, e: LogicalExpr, schema: &DFSchema) -> Result<Arc<dyn PhysicalExpr>> {
        let mut simplify = SimplifyContext::builder().with_schema(Arc::new(schema.clone()));
        if let Some(options) = self.props.config_options() {
            simplify = simplify.with_config_options(options.clone());
        }
        let simplify = simplify
            .with_query_execution_start_time(self.props.query_execution_start_time)
            .build();
        let e = ExprSimplifier::new(simplify)
            .coerce(e, schema)
            .map_err(BrookError::from)?;
        Ok(create_physical_expr(
            &e,
            schema,
            &self.props,
            &PhysicalPlanningContext::default(),
        )?)
    }

    fn aggregate(&self, name: &str) -> Option<Arc<datafusion::logical_expr::AggregateUDF>> {
        self.context.context_provider().get_aggregate_meta(name)
    }
}
