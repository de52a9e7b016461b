//! Untyped literals beside a jsonb value are jsonb, as PostgreSQL reads an `unknown` literal
//! as the type of what it meets: `j = '{"b":2,"a":1}'`, `j IN ('{..}', '[..]')`,
//! `CASE j WHEN '{..}' THEN ...`, `nullif(j, '{..}')`, `j IS DISTINCT FROM '{..}'`.
//!
//! Brook keeps jsonb as its text (keys ordered, one space after `:` and `,`), so a literal
//! compared as written missed an equal value (`'{"b":2,"a":1}'` is not the text
//! `{"a": 1, "b": 2}`): a silent wrong answer. This analyzer rule puts each such literal
//! through the jsonb cast, which the simplifier then folds to its jsonb text.

use datafusion::common::config::ConfigOptions;
use datafusion::common::tree_node::{Transformed, TreeNode};
use datafusion::common::{DFSchema, ScalarValue};
use datafusion::error::Result;
use datafusion::logical_expr::expr::{InList, ScalarFunction};
use datafusion::logical_expr::{BinaryExpr, Case, Expr, LogicalPlan, Operator, ScalarUDF};
use datafusion::optimizer::AnalyzerRule;
use std::sync::Arc;

/// The rule, with the jsonb cast it applies.
#[derive(Debug)]
pub struct JsonbLiterals {
    cast: Arc<ScalarUDF>,
}

impl Default for JsonbLiterals {
    fn default() -> Self {
        JsonbLiterals {
            cast: Arc::new(super::json_path::jsonb_cast()),
        }
    }
}

impl AnalyzerRule for JsonbLiterals {
    fn analyze(&self, plan: LogicalPlan, _config: &ConfigOptions) -> Result<LogicalPlan> {
        brook_planner::checked::rewrite_plan_expressions(plan, true, &|e, schema| {
            e.transform_up(|e| self.rewrite(e, schema))
        })
    }

    fn name(&self) -> &str {
        "brook_jsonb_literals"
    }
}

impl JsonbLiterals {
    fn rewrite(&self, e: Expr, schema: &DFSchema) -> Result<Transformed<Expr>> {
        let jsonb = |e: &Expr| super::jsonb_operators::is_jsonb(e, schema);
        Ok(match e {
            Expr::BinaryExpr(BinaryExpr { left, op, right })
                if brook_planner::checked::is_comparison(op) =>
            {
                if is_text_literal(&right) && jsonb(&left) {
                    Transformed::yes(binary(*left, op, self.cast(*right)))
                } else if is_text_literal(&left) && jsonb(&right) {
                    Transformed::yes(binary(self.cast(*left), op, *right))
                } else {
                    Transformed::no(Expr::BinaryExpr(BinaryExpr { left, op, right }))
                }
            }
            Expr::InList(InList {
                expr,
                list,
                negated,
            }) if list.iter().any(is_text_literal) && jsonb(&expr) => {
                Transformed::yes(Expr::InList(InList {
                    expr,
                    list: list.into_iter().map(|e| self.cast_literal(e)).collect(),
                    negated,
                }))
            }
            Expr::Case(Case {
                expr: Some(operand),
                when_then_expr,
                else_expr,
            }) if when_then_expr.iter().any(|(w, _)| is_text_literal(w)) && jsonb(&operand) => {
                Transformed::yes(Expr::Case(Case {
                    expr: Some(operand),
                    when_then_expr: when_then_expr
                        .into_iter()
                        .map(|(w, t)| (Box::new(self.cast_literal(*w)), t))
                        .collect(),
                    else_expr,
                }))
            }
            Expr::ScalarFunction(ScalarFunction { func, mut args })
                if func.name() == "nullif"
                    && args.len() == 2
                    && is_text_literal(&args[1])
                    && jsonb(&args[0]) =>
            {
                let literal = args.remove(1);
                args.push(self.cast(literal));
                Transformed::yes(Expr::ScalarFunction(ScalarFunction { func, args }))
            }
            other => Transformed::no(other),
        })
    }

    fn cast(&self, literal: Expr) -> Expr {
        Expr::ScalarFunction(ScalarFunction::new_udf(self.cast.clone(), vec![literal]))
    }

    fn cast_literal(&self, e: Expr) -> Expr {
        if is_text_literal(&e) {
            self.cast(e)
        } else {
            e
        }
    }
}

fn binary(left: Expr, op: Operator, right: Expr) -> Expr {
    Expr::BinaryExpr(BinaryExpr::new(Box::new(left), op, Box::new(right)))
}

/// A text literal (an untyped `'...'` in the SQL).
pub(super) fn is_text_literal(e: &Expr) -> bool {
    matches!(
        e,
        Expr::Literal(
            ScalarValue::Utf8(Some(_))
                | ScalarValue::Utf8View(Some(_))
                | ScalarValue::LargeUtf8(Some(_)),
            _
        )
    )
}
