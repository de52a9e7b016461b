//! `EXCEPT ALL` and `INTERSECT ALL` as the multiset operations SQL defines: a row that
//! occurs `m` times on the left and `n` times on the right occurs `max(m - n, 0)` times in
//! `EXCEPT ALL` and `min(m, n)` times in `INTERSECT ALL`.
//!
//! DataFusion plans them as an anti and a semi join of the two sides on every column (nulls
//! equal), which keeps or drops all copies of a row at once: `{2, 2, 1} EXCEPT ALL {2}` gave
//! `{1}` (PostgreSQL: `{1, 2}`), `{2, 2} INTERSECT ALL {2}` gave `{2, 2}` (`{2}`) — wrong
//! answers. This analyzer rule numbers the copies of each row on both sides (`row_number()
//! OVER (PARTITION BY <every column>)`) and adds the copy number to the join's keys: the
//! k-th copy on the left meets the k-th copy on the right, so the anti join keeps the
//! copies beyond the right's count and the semi join those within it. Over a stream the
//! numbering is the continuous window operator's, so a view keeps the multiset answer as
//! rows arrive. Written here because no library rewrites it.
//!
//! The planner's joins are recognised by their shape: a left semi or anti join with no
//! extra condition, nulls equal, one key per column of both sides. `EXCEPT` and `INTERSECT`
//! without ALL put a `DISTINCT` over the left side, whose rows are single copies already;
//! those are left alone. No other SQL gives that
//! shape before the optimizer runs (a `NOT EXISTS` or `IN` becomes a join later, and with
//! nulls unequal).

use datafusion::common::config::ConfigOptions;
use datafusion::common::tree_node::{Transformed, TransformedResult};
use datafusion::common::{Column, DFSchema, NullEquality, Result};
use datafusion::logical_expr::expr::{WindowFunction, WindowFunctionParams};
use datafusion::logical_expr::{
    Expr, Join, JoinType, LogicalPlan, LogicalPlanBuilder, WindowFunctionDefinition,
};
use datafusion::optimizer::AnalyzerRule;
use std::sync::Arc;

/// The rule.
#[derive(Debug)]
pub struct SetOperationsAll;

/// The copy numbers' column names on the left and right side.
const LEFT_COPY: &str = "__brook_left_copy";
const RIGHT_COPY: &str = "__brook_right_copy";

impl AnalyzerRule for SetOperationsAll {
    fn analyze(&self, plan: LogicalPlan, _config: &ConfigOptions) -> Result<LogicalPlan> {
        plan.transform_up_with_subqueries(|p| match p {
            LogicalPlan::Join(j) if is_set_operation_all(&j) => {
                Ok(Transformed::yes(numbered_copies(j)?))
            }
            p => Ok(Transformed::no(p)),
        })
        .data()
    }

    fn name(&self) -> &str {
        "brook_set_operations_all"
    }
}

/// Whether `j` is the join DataFusion plans for `EXCEPT ALL` / `INTERSECT ALL` over a left
/// side that may hold copies (and not one this rule numbered already).
fn is_set_operation_all(j: &Join) -> bool {
    let width = j.left.schema().fields().len();
    matches!(j.join_type, JoinType::LeftSemi | JoinType::LeftAnti)
        && j.null_equality == NullEquality::NullEqualsNull
        && !j.null_aware
        && j.filter.is_none()
        && j.on.len() == width
        && j.right.schema().fields().len() == width
        && !matches!(j.left.as_ref(), LogicalPlan::Distinct(_))
        && !j.left.schema().has_column_with_unqualified_name(LEFT_COPY)
}

/// The join with each side's copies numbered and the numbers joined too, the copy number
/// projected away again.
fn numbered_copies(j: Join) -> Result<LogicalPlan> {
    let output = columns(j.left.schema());
    let left = number_copies(Arc::unwrap_or_clone(j.left), LEFT_COPY)?;
    let right = number_copies(Arc::unwrap_or_clone(j.right), RIGHT_COPY)?;
    let mut on = j.on;
    on.push((
        Expr::Column(Column::from_name(LEFT_COPY)),
        Expr::Column(Column::from_name(RIGHT_COPY)),
    ));
    let join = Join::try_new(
        Arc::new(left),
        Arc::new(right),
        on,
        None,
        j.join_type,
        j.join_constraint,
        NullEquality::NullEqualsNull,
        false,
    )?;
    LogicalPlanBuilder::from(LogicalPlan::Join(join))
        .project(output)?
        .build()
}

/// `plan` with a column `name` numbering the copies of each row: `row_number() OVER
/// (PARTITION BY <every column>)`.
fn number_copies(plan: LogicalPlan, name: &str) -> Result<LogicalPlan> {
    let partition_by = columns(plan.schema());
    let row_number = Expr::from(WindowFunction {
        fun: WindowFunctionDefinition::WindowUDF(
            datafusion::functions_window::row_number::row_number_udwf(),
        ),
        params: WindowFunctionParams {
            args: vec![],
            partition_by,
            order_by: vec![],
            window_frame: datafusion::logical_expr::WindowFrame::new(None),
            filter: None,
            null_treatment: None,
            distinct: false,
        },
    })
    .alias(name);
    LogicalPlanBuilder::from(plan)
        .window(vec![row_number])?
        .build()
}

/// A column reference to each of `schema`'s fields, qualified as it is.
fn columns(schema: &DFSchema) -> Vec<Expr> {
    schema
        .iter()
        .map(|(qualifier, field)| Expr::Column(Column::from((qualifier, field))))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::prelude::SessionContext;

    /// The optimized plan's text of `sql` with the rule among the analyzer's.
    async fn plan_of(sql: &str) -> String {
        let ctx = SessionContext::new();
        ctx.add_analyzer_rule(Arc::new(SetOperationsAll));
        let df = ctx.sql(sql).await.expect("plans");
        df.into_optimized_plan()
            .expect("optimizes")
            .display_indent()
            .to_string()
    }

    /// The rows of `sql` with the rule among the analyzer's, sorted.
    async fn rows_of(sql: &str) -> Vec<i64> {
        use datafusion::arrow::array::AsArray;
        use datafusion::arrow::datatypes::Int64Type;
        let ctx = SessionContext::new();
        ctx.add_analyzer_rule(Arc::new(SetOperationsAll));
        let batches = ctx
            .sql(sql)
            .await
            .expect("plans")
            .collect()
            .await
            .expect("runs");
        let mut rows: Vec<i64> = batches
            .iter()
            .flat_map(|b| {
                b.column(0)
                    .as_primitive::<Int64Type>()
                    .iter()
                    .map(|v| v.unwrap_or(-1))
                    .collect::<Vec<_>>()
            })
            .collect();
        rows.sort();
        rows
    }

    #[tokio::test]
    async fn except_all_takes_away_one_copy_per_copy() {
        let rows =
            rows_of("VALUES (2), (2), (1), (2), (NULL), (NULL) EXCEPT ALL VALUES (2), (NULL)")
                .await;
        assert_eq!(rows, vec![-1, 1, 2, 2]);
    }

    #[tokio::test]
    async fn intersect_all_keeps_the_fewer_copies() {
        let rows =
            rows_of("VALUES (2), (2), (1), (3), (3) INTERSECT ALL VALUES (2), (3), (3), (3), (4)")
                .await;
        assert_eq!(rows, vec![2, 3, 3]);
    }

    #[tokio::test]
    async fn distinct_forms_are_left_alone() {
        for sql in [
            "VALUES (2), (2), (1) EXCEPT VALUES (2)",
            "VALUES (2), (2), (1) INTERSECT VALUES (2)",
        ] {
            assert!(!plan_of(sql).await.contains(LEFT_COPY), "{sql}");
        }
        assert_eq!(
            rows_of("VALUES (2), (2), (1) EXCEPT VALUES (2)").await,
            vec![1]
        );
        assert_eq!(
            rows_of("SELECT DISTINCT column1 FROM (VALUES (2), (2), (1)) EXCEPT ALL VALUES (2)")
                .await,
            vec![1]
        );
    }
}
