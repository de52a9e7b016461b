//! A subscript of an aggregated array: `(array_agg(v ORDER BY ts))[1]`.
//!
//! DataFusion's SQL planner turns it into `nth_value(v, 1)`, which takes only a 64-bit
//! literal as its position (Brook types `1` as int4, so the query failed: "nth_value not
//! supported for n: 1"; a column position failed at run time) and counts a negative
//! position from the end, where PostgreSQL's subscript outside the array is NULL. This
//! planner, consulted before DataFusion's, subscripts the aggregated array as any other
//! array (`array_element`, whose subscripts below 1 `array_slice::ArraySubscripts` makes
//! NULL). Written here because DataFusion's rewrite has no switch.

use datafusion::common::{DFSchema, Result};
use datafusion::functions_nested::expr_fn::array_element;
use datafusion::logical_expr::planner::{ExprPlanner, PlannerResult, RawFieldAccessExpr};
use datafusion::logical_expr::{Expr, GetFieldAccess};

/// The SQL planner's hook for `aggregate(...)[i]`.
#[derive(Debug, Default)]
pub struct AggregateSubscript;

impl ExprPlanner for AggregateSubscript {
    fn plan_field_access(
        &self,
        expr: RawFieldAccessExpr,
        _schema: &DFSchema,
    ) -> Result<PlannerResult<RawFieldAccessExpr>> {
        match (&expr.expr, expr.field_access) {
            (Expr::AggregateFunction(f), GetFieldAccess::ListIndex { key })
                if f.func.name() == "array_agg" =>
            {
                Ok(PlannerResult::Planned(array_element(expr.expr, *key)))
            }
            (_, field_access) => Ok(PlannerResult::Original(RawFieldAccessExpr {
                expr: expr.expr,
                field_access,
            })),
        }
    }
}
