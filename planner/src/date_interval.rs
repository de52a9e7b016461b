//! `date ± interval` as PostgreSQL's `timestamp`.
//!
//! Arrow adds an interval to a date and keeps a date, dropping the interval's time:
//! `date '2020-01-01' + interval '1 hour'` was `2020-01-01` (PostgreSQL: `2020-01-01
//! 01:00:00`, a timestamp) — a wrong answer. This planner hook, consulted as DataFusion turns
//! SQL into a plan, casts the date to a timestamp (midnight) before the addition, as
//! PostgreSQL's `date_pl_interval` does, so everything after sees a timestamp.

use datafusion::arrow::datatypes::{DataType, TimeUnit};
use datafusion::common::{DFSchema, Result};
use datafusion::logical_expr::planner::{ExprPlanner, PlannerResult, RawBinaryExpr};
use datafusion::logical_expr::{binary_expr, cast, Expr, ExprSchemable, Operator};
use datafusion::sql::sqlparser::ast::BinaryOperator;

/// The SQL planner's hook for `date + interval`, `interval + date` and `date - interval`.
#[derive(Debug, Default)]
pub struct DateIntervalPlanner;

impl ExprPlanner for DateIntervalPlanner {
    fn plan_binary_op(
        &self,
        expr: RawBinaryExpr,
        schema: &DFSchema,
    ) -> Result<PlannerResult<RawBinaryExpr>> {
        let is = |x: &Expr, date: bool| match x.get_type(schema) {
            Ok(DataType::Date32 | DataType::Date64) => date,
            Ok(DataType::Interval(_)) => !date,
            _ => false,
        };
        let timestamp = |x: Expr| cast(x, DataType::Timestamp(TimeUnit::Microsecond, None));
        let planned = match expr.op {
            BinaryOperator::Plus if is(&expr.left, true) && is(&expr.right, false) => {
                binary_expr(timestamp(expr.left), Operator::Plus, expr.right)
            }
            BinaryOperator::Plus if is(&expr.left, false) && is(&expr.right, true) => {
                binary_expr(expr.left, Operator::Plus, timestamp(expr.right))
            }
            BinaryOperator::Minus if is(&expr.left, true) && is(&expr.right, false) => {
                binary_expr(timestamp(expr.left), Operator::Minus, expr.right)
            }
            _ => return Ok(PlannerResult::Original(expr)),
        };
        Ok(PlannerResult::Planned(planned))
    }
}
