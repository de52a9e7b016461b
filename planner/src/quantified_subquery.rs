//! `x = ANY (subquery)` and `x <> ALL (subquery)`: the quantified comparisons that are `IN`
//! and `NOT IN`.
//!
//! DataFusion plans `= ANY (...)` as a test of membership in an array, so over a subquery it
//! fails ("array_has does not support type Int32"); the other quantified comparisons of a
//! subquery plan. SQL defines `x = ANY (q)` as `x IN (q)` and `x <> ALL (q)` as
//! `x NOT IN (q)`, NULLs included, so the statement is rewritten to those forms.

use datafusion::sql::sqlparser::ast::{
    BinaryOperator, Expr, Statement, Value, VisitMut, VisitorMut,
};
use datafusion_pg_catalog::sql::rules::SqlStatementRewriteRule;
use std::ops::ControlFlow;

/// The rewrite rule (before the rules that read `= ANY` as array membership, and before
/// `InSubqueryInProjection`, which then takes the `IN` of a select list).
#[derive(Debug)]
pub struct QuantifiedSubqueries;

impl SqlStatementRewriteRule for QuantifiedSubqueries {
    fn rewrite(&self, mut s: Statement) -> Statement {
        let _ = s.visit(&mut Quantified);
        s
    }
}

struct Quantified;

impl VisitorMut for Quantified {
    type Break = ();

    fn post_visit_expr(&mut self, e: &mut Expr) -> ControlFlow<()> {
        let (left, right, negated) = match e {
            Expr::AnyOp {
                left,
                compare_op: BinaryOperator::Eq,
                right,
                ..
            } => (left, right, false),
            Expr::AllOp {
                left,
                compare_op: BinaryOperator::NotEq,
                right,
            } => (left, right, true),
            _ => return ControlFlow::Continue(()),
        };
        let Expr::Subquery(q) = right.as_mut() else {
            return ControlFlow::Continue(());
        };
        let subquery = q.clone();
        let expr = std::mem::replace(left, Box::new(Expr::value(Value::Null)));
        *e = Expr::InSubquery {
            expr,
            subquery,
            negated,
        };
        ControlFlow::Continue(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::rewritten;

    #[test]
    fn equal_any_is_in_and_not_equal_all_is_not_in() {
        let cases = [
            (
                "SELECT * FROM t WHERE k = ANY (SELECT a FROM u)",
                "SELECT * FROM t WHERE k IN (SELECT a FROM u)",
            ),
            (
                "SELECT * FROM t WHERE k = SOME (SELECT a FROM u)",
                "SELECT * FROM t WHERE k IN (SELECT a FROM u)",
            ),
            (
                "SELECT k <> ALL (SELECT a FROM u) FROM t",
                "SELECT k NOT IN (SELECT a FROM u) FROM t",
            ),
            // arrays and the other operators are left as they are
            (
                "SELECT * FROM t WHERE k = ANY (ARRAY[1, 2]) AND k > ALL (SELECT a FROM u)",
                "SELECT * FROM t WHERE k = ANY(ARRAY[1, 2]) AND k > ALL(SELECT a FROM u)",
            ),
        ];
        for (sql, want) in cases {
            assert_eq!(rewritten(&QuantifiedSubqueries, sql), want, "{sql}");
        }
    }
}
