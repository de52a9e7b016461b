//! PostgreSQL's prefix operators `|/ x` (square root), `||/ x` (cube root) and `@ x`
//! (absolute value), which sqlparser reads and DataFusion's planner refuses ("Unsupported
//! SQL unary operator"): each becomes a call of the function PostgreSQL's operator calls
//! (`dsqrt`, `dcbrt`, `abs`), so its checks and types follow the function's.
//!
//! A sign binds tighter than `^` in PostgreSQL (`-2 ^ 2` is 4); sqlparser reads it as
//! `-(2 ^ 2)` (-4, a wrong answer): the sign moves onto the `^` chain's first operand.

use datafusion::sql::sqlparser::ast::{
    visit_expressions_mut, BinaryOperator, Expr, Statement, UnaryOperator,
};
use datafusion_pg_catalog::sql::rules::SqlStatementRewriteRule;
use std::ops::ControlFlow;

/// Rewrite rule: see the module's comment.
#[derive(Debug)]
pub struct PrefixOperators;

impl SqlStatementRewriteRule for PrefixOperators {
    fn rewrite(&self, mut s: Statement) -> Statement {
        let _ = visit_expressions_mut(&mut s, |e| {
            sign_before_power(e);
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

/// `-a ^ b ^ c` (read as `-((a ^ b) ^ c)`) as `((-a) ^ b) ^ c`; `-(a ^ b)` written with
/// parentheses stays.
fn sign_before_power(e: &mut Expr) {
    let Expr::UnaryOp {
        op: op @ (UnaryOperator::Minus | UnaryOperator::Plus),
        expr,
    } = e
    else {
        return;
    };
    if !matches!(
        expr.as_ref(),
        Expr::BinaryOp {
            op: BinaryOperator::PGExp,
            ..
        }
    ) {
        return;
    }
    let sign = *op;
    let null = || Expr::value(datafusion::sql::sqlparser::ast::Value::Null);
    let mut power = std::mem::replace(expr.as_mut(), null());
    let first = first_power_operand(&mut power);
    let operand = std::mem::replace(first, null());
    // In parentheses, so that the statement's text (which rewrites pass on) reads so too.
    *first = Expr::Nested(Box::new(Expr::UnaryOp {
        op: sign,
        expr: Box::new(operand),
    }));
    *e = power;
}

/// The first operand of a chain of `^`.
fn first_power_operand(e: &mut Expr) -> &mut Expr {
    match e {
        Expr::BinaryOp {
            left,
            op: BinaryOperator::PGExp,
            ..
        } => first_power_operand(left),
        other => other,
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

    #[test]
    fn a_sign_binds_tighter_than_a_power() {
        assert_eq!(
            rewritten("SELECT -2 ^ 2, -x ^ 3 ^ 2, -(2 ^ 2), 2 ^ -2, - 2 * 3 FROM t"),
            "SELECT (-2) ^ 2, (-x) ^ 3 ^ 2, -(2 ^ 2), 2 ^ -2, -2 * 3 FROM t"
        );
    }
}
