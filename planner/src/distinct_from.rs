//! `a IS [NOT] DISTINCT FROM b OR c` binds as PostgreSQL binds it: `(a IS DISTINCT FROM b)
//! OR c`. sqlparser reads the right operand as a whole expression, so `AND`/`OR` after it
//! were taken into it (`true IS DISTINCT FROM true OR true` was false: a wrong answer). In
//! PostgreSQL, `IS` binds tighter than `NOT`, `AND` and `OR` and looser than comparisons, so
//! only those three are lifted out; a parenthesized operand is `Nested` and stays whole.

use datafusion::sql::sqlparser::ast::{BinaryOperator, Expr, Statement};
use datafusion_pg_catalog::sql::rules::SqlStatementRewriteRule;

/// The rewrite, applied to every statement as parsed.
#[derive(Debug)]
pub struct DistinctFromPrecedence;

impl SqlStatementRewriteRule for DistinctFromPrecedence {
    fn rewrite(&self, mut s: Statement) -> Statement {
        rebind_all(&mut s);
        s
    }
}

/// Every `IS [NOT] DISTINCT FROM` of `s` bound as PostgreSQL binds it (also applied to a
/// MATCH_RECOGNIZE clause, which is parsed apart).
pub(crate) fn rebind_all(s: &mut Statement) {
    crate::pg_functions::rewrite_expressions(s, rebind);
}

/// One expression, its operands already rewritten.
fn rebind(expr: &mut Expr) {
    let negated = match expr {
        Expr::IsDistinctFrom(_, right) if is_logical(right) => false,
        Expr::IsNotDistinctFrom(_, right) if is_logical(right) => true,
        _ => return,
    };
    let placeholder = Expr::value(datafusion::sql::sqlparser::ast::Value::Null);
    let (left, right) = match std::mem::replace(expr, placeholder) {
        Expr::IsDistinctFrom(l, r) | Expr::IsNotDistinctFrom(l, r) => (*l, *r),
        other => {
            *expr = other;
            return;
        }
    };
    *expr = lift(left, right, negated);
}

fn is_logical(e: &Expr) -> bool {
    matches!(
        e,
        Expr::BinaryOp {
            op: BinaryOperator::And | BinaryOperator::Or,
            ..
        }
    )
}

/// `left IS [NOT] DISTINCT FROM right`, with the comparison moved onto the leftmost operand
/// of `right`'s `AND`/`OR` chain.
fn lift(left: Expr, right: Expr, negated: bool) -> Expr {
    match right {
        Expr::BinaryOp {
            left: first,
            op: op @ (BinaryOperator::And | BinaryOperator::Or),
            right: rest,
        } => Expr::BinaryOp {
            left: Box::new(lift(left, *first, negated)),
            op,
            right: rest,
        },
        operand if negated => Expr::IsNotDistinctFrom(Box::new(left), Box::new(operand)),
        operand => Expr::IsDistinctFrom(Box::new(left), Box::new(operand)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::sql::sqlparser::dialect::PostgreSqlDialect;
    use datafusion::sql::sqlparser::parser::Parser;

    /// The first select-list expression of `sql`, rewritten.
    fn tree(sql: &str) -> Expr {
        let s = Parser::parse_sql(&PostgreSqlDialect {}, sql)
            .expect("parses")
            .remove(0);
        let Statement::Query(q) = DistinctFromPrecedence.rewrite(s) else {
            panic!("a query");
        };
        let datafusion::sql::sqlparser::ast::SetExpr::Select(select) = *q.body else {
            panic!("a select");
        };
        match &select.projection[0] {
            datafusion::sql::sqlparser::ast::SelectItem::UnnamedExpr(e) => e.clone(),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn and_and_or_bind_looser_than_is_distinct_from() {
        let Expr::BinaryOp { left, op, .. } = tree("SELECT a IS DISTINCT FROM b OR c") else {
            panic!("an OR");
        };
        assert_eq!(op, BinaryOperator::Or);
        assert!(matches!(*left, Expr::IsDistinctFrom(..)));
        // `((a IS NOT DISTINCT FROM b) AND c) OR d`.
        let Expr::BinaryOp { left, op, .. } = tree("SELECT a IS NOT DISTINCT FROM b AND c OR d")
        else {
            panic!("an OR");
        };
        assert_eq!(op, BinaryOperator::Or);
        let Expr::BinaryOp { left, op, .. } = *left else {
            panic!("an AND");
        };
        assert_eq!(op, BinaryOperator::And);
        assert!(matches!(*left, Expr::IsNotDistinctFrom(..)));
    }

    #[test]
    fn comparisons_and_parentheses_stay_in_the_operand() {
        assert!(matches!(
            tree("SELECT a IS DISTINCT FROM b = c"),
            Expr::IsDistinctFrom(_, r) if matches!(*r, Expr::BinaryOp { op: BinaryOperator::Eq, .. })
        ));
        assert!(matches!(
            tree("SELECT a IS DISTINCT FROM (b OR c)"),
            Expr::IsDistinctFrom(_, r) if matches!(*r, Expr::Nested(_))
        ));
    }
}
