//! A VALUES list whose rows hold subqueries (`VALUES ((SELECT max(id) FROM t) + 1, 'a')`,
//! `INSERT INTO t VALUES ((SELECT ...), ...)`), planned as one SELECT per row under UNION
//! ALL.
//!
//! DataFusion's physical planner evaluates a VALUES list's rows while it builds the plan,
//! before any subquery has run, and failed with XX000 ("ScalarSubqueryExpr evaluated before
//! the subquery was executed"); a SELECT list's subqueries its optimizer joins in. Written
//! here because DataFusion has no option for it. Runs after type coercion, so each row's
//! values already have their column's type (a cast is added where one still differs).

use datafusion::common::config::ConfigOptions;
use datafusion::common::tree_node::{Transformed, TreeNode};
use datafusion::common::{plan_err, DFSchema, Result};
use datafusion::logical_expr::{
    EmptyRelation, Expr, ExprSchemable, LogicalPlan, LogicalPlanBuilder, Values,
};
use datafusion::optimizer::AnalyzerRule;
use std::sync::Arc;

/// The rule.
#[derive(Debug, Default)]
pub struct ValuesSubqueries;

impl AnalyzerRule for ValuesSubqueries {
    fn analyze(&self, plan: LogicalPlan, _config: &ConfigOptions) -> Result<LogicalPlan> {
        plan.transform_up_with_subqueries(|p| match p {
            LogicalPlan::Values(v) if v.values.iter().flatten().any(has_subquery) => {
                rows_as_selects(v).map(Transformed::yes)
            }
            other => Ok(Transformed::no(other)),
        })
        .map(|t| t.data)
    }

    fn name(&self) -> &str {
        "brook_values_subqueries"
    }
}

fn has_subquery(e: &Expr) -> bool {
    e.exists(|e| {
        Ok(matches!(
            e,
            Expr::ScalarSubquery(_) | Expr::Exists(_) | Expr::InSubquery(_)
        ))
    })
    .unwrap_or(false)
}

/// `VALUES (a, b), (c, d)` as `SELECT a AS column1, b AS column2 UNION ALL SELECT c, d`.
fn rows_as_selects(v: Values) -> Result<LogicalPlan> {
    let none = DFSchema::empty();
    let one_row = LogicalPlan::EmptyRelation(EmptyRelation {
        produce_one_row: true,
        schema: Arc::new(DFSchema::empty()),
    });
    let mut selects = Vec::with_capacity(v.values.len());
    for row in v.values {
        let mut exprs = Vec::with_capacity(row.len());
        for (e, field) in row.into_iter().zip(v.schema.fields()) {
            let e = if &e.get_type(&none)? == field.data_type() {
                e
            } else {
                e.cast_to(field.data_type(), &none)?
            };
            exprs.push(e.alias(field.name()));
        }
        selects.push(
            LogicalPlanBuilder::from(one_row.clone())
                .project(exprs)?
                .build()?,
        );
    }
    let mut selects = selects.into_iter();
    let Some(first) = selects.next() else {
        return plan_err!("VALUES without rows");
    };
    let mut all = LogicalPlanBuilder::from(first);
    for select in selects {
        all = all.union(select)?;
    }
    all.build()
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::prelude::SessionContext;

    #[tokio::test]
    async fn a_row_with_a_subquery_is_a_select() {
        let ctx = SessionContext::new();
        ctx.add_analyzer_rule(Arc::new(ValuesSubqueries));
        let rows = ctx
            .sql("SELECT * FROM (VALUES ((SELECT 40) + 2, 'a'), (7, 'b')) v(n, s) ORDER BY n")
            .await
            .unwrap()
            .collect()
            .await
            .unwrap();
        let text = datafusion::arrow::util::pretty::pretty_format_batches(&rows)
            .unwrap()
            .to_string();
        assert!(
            text.contains("| 7  | b |") && text.contains("| 42 | a |"),
            "{text}"
        );
    }
}
