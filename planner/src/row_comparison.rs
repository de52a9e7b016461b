//! A row compared with a row: `(a, b) = (1, 2)`, `<>`, `<`, `<=`, `>`, `>=`, `IS [NOT]
//! DISTINCT FROM`, and `(a, b) [NOT] IN ((1, 2), (3, 4))`, as SQL compares rows: column by
//! column, in three values. DataFusion reads a parenthesized list only as literals to
//! compare one value with ("Only identifiers and literals are supported in tuples"), so the
//! comparison is written out over the columns, which it plans:
//!
//! - `=` is `a1 = b1 AND a2 = b2 ...`, `<>` is `a1 <> b1 OR a2 <> b2 ...`;
//! - `<` is `a1 < b1 OR (a1 = b1 AND (a2 < b2 OR ...))` and `<=` the same with `<=` for the
//!   last column (likewise `>`, `>=`): true or false at the first pair that is unequal,
//!   NULL when a pair before it is NULL, as PostgreSQL's row comparison answers;
//! - `IS NOT DISTINCT FROM` is the AND of the columns', `IS DISTINCT FROM` the OR;
//! - `IN` a list of rows is the OR of `=` with each, `NOT IN` its negation.
//!
//! A row is `(x, y, ...)` or `ROW(x, y, ...)`. Rows of different widths are left as they
//! are (DataFusion's error). A row compared with a subquery is `row_in_subquery`'s.

use datafusion::sql::sqlparser::ast::{
    BinaryOperator, Expr, FunctionArg, FunctionArgExpr, FunctionArguments, Statement, VisitMut,
    VisitorMut,
};
use datafusion_pg_catalog::sql::rules::SqlStatementRewriteRule;
use std::ops::ControlFlow;

/// The rewrite rule (after `RowInSubqueries`).
#[derive(Debug)]
pub struct RowComparisons;

impl SqlStatementRewriteRule for RowComparisons {
    fn rewrite(&self, mut s: Statement) -> Statement {
        let _ = s.visit(&mut Comparisons);
        s
    }
}

struct Comparisons;

impl VisitorMut for Comparisons {
    type Break = ();

    fn post_visit_expr(&mut self, e: &mut Expr) -> ControlFlow<()> {
        if let Some(written) = written_out(e) {
            *e = written;
        }
        ControlFlow::Continue(())
    }
}

/// `e` written over the columns when it compares rows.
fn written_out(e: &Expr) -> Option<Expr> {
    match e {
        Expr::BinaryOp { left, op, right } => {
            let (l, r) = same_width(left, right)?;
            compare(&l, op, &r)
        }
        Expr::IsDistinctFrom(left, right) => {
            let (l, r) = same_width(left, right)?;
            Some(fold(&l, &r, BinaryOperator::Or, |a, b| {
                Expr::IsDistinctFrom(Box::new(a), Box::new(b))
            }))
        }
        Expr::IsNotDistinctFrom(left, right) => {
            let (l, r) = same_width(left, right)?;
            Some(fold(&l, &r, BinaryOperator::And, |a, b| {
                Expr::IsNotDistinctFrom(Box::new(a), Box::new(b))
            }))
        }
        Expr::InList {
            expr,
            list,
            negated,
        } => {
            let row = fields(expr)?;
            let mut alternatives = Vec::with_capacity(list.len());
            for item in list {
                let other = fields(item).filter(|o| o.len() == row.len())?;
                alternatives.push(compare(&row, &BinaryOperator::Eq, &other)?);
            }
            let any = alternatives
                .into_iter()
                .reduce(|a, b| binary(a, BinaryOperator::Or, b))?;
            Some(if *negated {
                Expr::UnaryOp {
                    op: datafusion::sql::sqlparser::ast::UnaryOperator::Not,
                    expr: Box::new(nested(any)),
                }
            } else {
                nested(any)
            })
        }
        _ => None,
    }
}

/// The fields of two rows of one width.
fn same_width(left: &Expr, right: &Expr) -> Option<(Vec<Expr>, Vec<Expr>)> {
    let (l, r) = (fields(left)?, fields(right)?);
    (l.len() == r.len() && !l.is_empty()).then_some((l, r))
}

/// The fields of a row: `(x, y)` or `ROW(x, y)`.
fn fields(e: &Expr) -> Option<Vec<Expr>> {
    match e {
        Expr::Tuple(items) => Some(items.clone()),
        Expr::Function(f)
            if f.name.0.len() == 1
                && f.name.0[0]
                    .as_ident()
                    .is_some_and(|i| i.value.eq_ignore_ascii_case("row"))
                && f.over.is_none()
                && f.filter.is_none() =>
        {
            let FunctionArguments::List(list) = &f.args else {
                return None;
            };
            if list.duplicate_treatment.is_some() || !list.clauses.is_empty() {
                return None;
            }
            list.args
                .iter()
                .map(|a| match a {
                    FunctionArg::Unnamed(FunctionArgExpr::Expr(x)) => Some(x.clone()),
                    _ => None,
                })
                .collect()
        }
        _ => None,
    }
}

/// Rows `l` and `r` (one width) compared with `op`, column by column.
fn compare(l: &[Expr], op: &BinaryOperator, r: &[Expr]) -> Option<Expr> {
    let pair = |a: &Expr, o: BinaryOperator, b: &Expr| binary(a.clone(), o, b.clone());
    Some(match op {
        BinaryOperator::Eq => fold(l, r, BinaryOperator::And, |a, b| {
            binary(a, BinaryOperator::Eq, b)
        }),
        BinaryOperator::NotEq => fold(l, r, BinaryOperator::Or, |a, b| {
            binary(a, BinaryOperator::NotEq, b)
        }),
        BinaryOperator::Lt | BinaryOperator::LtEq | BinaryOperator::Gt | BinaryOperator::GtEq => {
            let strict = match op {
                BinaryOperator::Lt | BinaryOperator::LtEq => BinaryOperator::Lt,
                _ => BinaryOperator::Gt,
            };
            let last = l.len() - 1;
            // From the last column back: `a_k op b_k`, then `a_i < b_i OR (a_i = b_i AND ...)`.
            let mut out = pair(&l[last], op.clone(), &r[last]);
            for i in (0..last).rev() {
                out = binary(
                    pair(&l[i], strict.clone(), &r[i]),
                    BinaryOperator::Or,
                    nested(binary(
                        pair(&l[i], BinaryOperator::Eq, &r[i]),
                        BinaryOperator::And,
                        nested(out),
                    )),
                );
            }
            nested(out)
        }
        _ => return None,
    })
}

/// `join`ed comparisons of each pair of `l` and `r`, parenthesized.
fn fold(l: &[Expr], r: &[Expr], join: BinaryOperator, each: impl Fn(Expr, Expr) -> Expr) -> Expr {
    let mut pairs = l.iter().zip(r).map(|(a, b)| each(a.clone(), b.clone()));
    let first = pairs.next().unwrap_or(Expr::value(
        datafusion::sql::sqlparser::ast::Value::Boolean(true),
    ));
    nested(pairs.fold(first, |acc, p| binary(acc, join.clone(), p)))
}

fn binary(left: Expr, op: BinaryOperator, right: Expr) -> Expr {
    Expr::BinaryOp {
        left: Box::new(left),
        op,
        right: Box::new(right),
    }
}

fn nested(e: Expr) -> Expr {
    Expr::Nested(Box::new(e))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::statement;

    fn rewritten(sql: &str) -> String {
        RowComparisons.rewrite(statement(sql)).to_string()
    }

    #[test]
    fn rows_compare_column_by_column() {
        assert_eq!(
            rewritten("SELECT (a, b) = (1, 2), ROW(a, b) <> ROW(1, 2) FROM t"),
            "SELECT (a = 1 AND b = 2), (a <> 1 OR b <> 2) FROM t"
        );
        assert_eq!(
            rewritten("SELECT * FROM t WHERE (a, b, c) <= (1, 2, 3)"),
            "SELECT * FROM t WHERE (a < 1 OR (a = 1 AND (b < 2 OR (b = 2 AND (c <= 3)))))"
        );
        assert_eq!(
            rewritten("SELECT (a, b) NOT IN ((1, 2), (3, 4)) FROM t"),
            "SELECT NOT ((a = 1 AND b = 2) OR (a = 3 AND b = 4)) FROM t"
        );
    }

    #[test]
    fn other_shapes_stay() {
        for sql in [
            "SELECT (a, b) = (1, 2, 3) FROM t",
            "SELECT a IN (1, 2) FROM t",
            "SELECT (a, b) IN (SELECT x, y FROM u) FROM t",
        ] {
            assert_eq!(rewritten(sql), statement(sql).to_string(), "{sql}");
        }
    }
}
