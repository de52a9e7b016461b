//! PostgreSQL's prefix operators `|/ x` (square root), `||/ x` (cube root) and `@ x`
//! (absolute value), which sqlparser reads and DataFusion's planner refuses ("Unsupported
//! SQL unary operator"): each becomes a call of the function PostgreSQL's operator calls
//! (`dsqrt`, `dcbrt`, `abs`), so its checks and types follow the function's.

use datafusion::sql::sqlparser::ast::{visit_expressions_mut, Expr, Statement, UnaryOperator};
use datafusion_pg_catalog::sql::rules::SqlStatementRewriteRule;
use std::ops::ControlFlow;

/// Rewrite rule: see the module's comment.
#[derive(Debug)]
pub struct PrefixOperators;

impl SqlStatementRewriteRule for PrefixOperators {
    fn rewrite(&self, mut s: Statement) -> Statement {
        let _ = visit_expressions_mut(&mut s, |e| {
            if let Expr::UnaryOp { op, expr } = e {
                let function = match op {
                    UnaryOperator::PGSquareRoot => Some("sqrt"),
                    UnaryOperator::PGCubeRoot => Some("cbrt"),
                    UnaryOperator::PGAbs => Some("abs"),
                    _ => None,
                };
                if let Some(function) = function {
                    let operand = std::mem::replace(
                        expr.as_mut(),
                        Expr::value(datafusion::sql::sqlparser::ast::Value::Null),
                    );
                    *e = crate::pg_functions::function_call(function, vec![operand]);
                }
            }
            ControlFlow::<()>::Continue(())
        });
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rewritten(sql: &str) -> String {
        crate::test_support::rewritten(&PrefixOperators, sql)
    }

    #[test]
    fn prefix_operators_become_their_functions() {
        assert_eq!(
            rewritten("SELECT |/ 16, ||/ x, @ -5 FROM t"),
            "SELECT sqrt(16), cbrt(x), abs(-5) FROM t"
        );
        assert_eq!(
            rewritten("SELECT - x, NOT b FROM t"),
            "SELECT -x, NOT b FROM t"
        );
    }
}
