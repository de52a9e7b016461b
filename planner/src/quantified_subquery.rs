//! Quantified comparisons of a subquery: `x op ANY (q)`, `x op ALL (q)`.
//!
//! DataFusion plans `= ANY (...)` as a test of membership in an array, so over a subquery it
//! fails ("array_has does not support type Int32"). SQL defines `x = ANY (q)` as `x IN (q)`
//! and `x <> ALL (q)` as `x NOT IN (q)`, NULLs included, so the statement is rewritten to
//! those forms. DataFusion's plan of the other operators compared the subquery's column
//! with itself when the subquery reads the outer query's table (`id >= ALL (SELECT id FROM
//! t)` over `t` was true for every row: a wrong answer); they are rewritten to what SQL
//! defines them as, three-valued: `x op ALL (q)` is false when some row's comparison is
//! false, else NULL when some row's is NULL, else true; `x op ANY (q)` is true when some
//! row's is true, else NULL when some row's is NULL, else false — a CASE over the counts
//! of such rows of `q`, named as a derived table of one column, so `x` can only read the
//! outer query.
//! A subquery whose column count is not visible (`SELECT *`), a left side that calls a
//! function (an aggregate, a window, `nextval`), and comparisons in JOIN ... ON, ORDER BY
//! and FILTER are left to DataFusion.

use datafusion::sql::sqlparser::ast::{
    BinaryOperator, Expr, Ident, Query, Select, SelectItem, SetExpr, Statement, Value, VisitMut,
    VisitorMut,
};
use datafusion::sql::sqlparser::dialect::PostgreSqlDialect;
use datafusion::sql::sqlparser::parser::Parser;
use datafusion_pg_catalog::sql::rules::SqlStatementRewriteRule;
use std::ops::ControlFlow;

/// The rewrite rule (before the rules that read `= ANY` as array membership, and before
/// `InSubqueryInProjection`, which then takes the `IN` of a select list).
#[derive(Debug)]
pub struct QuantifiedSubqueries;

impl SqlStatementRewriteRule for QuantifiedSubqueries {
    fn rewrite(&self, mut s: Statement) -> Statement {
        crate::pg_functions::rewrite_selects(&mut s, define_in_select);
        let _ = s.visit(&mut Quantified);
        s
    }
}

/// The other operators in `s`, where a scalar subquery can run: its select list, WHERE and
/// HAVING (not JOIN ... ON, ORDER BY or a FILTER, which DataFusion plans itself for an
/// uncorrelated subquery).
fn define_in_select(s: &mut Select) {
    define_in_select_list(&mut s.projection, &quantified_comparison);
    for e in [s.selection.as_mut(), s.having.as_mut()]
        .into_iter()
        .flatten()
    {
        define_in(e, &quantified_comparison);
    }
}

/// The comparisons `define` writes out in a select list; an unaliased one is named as
/// PostgreSQL names the comparison (`?column?`), not as what it becomes. Also used by
/// `row_in_subquery`.
pub(crate) fn define_in_select_list(
    projection: &mut [SelectItem],
    define: &dyn Fn(&Expr) -> Option<Expr>,
) {
    for item in projection.iter_mut() {
        match item {
            SelectItem::UnnamedExpr(e) => {
                if let Some(defined) = define(e) {
                    *item = SelectItem::ExprWithAlias {
                        expr: defined,
                        alias: Ident::with_quote('"', "?column?"),
                    };
                } else {
                    define_in(e, define);
                }
            }
            SelectItem::ExprWithAlias { expr, .. } => define_in(expr, define),
            _ => {}
        }
    }
}

/// The comparisons `define` writes out in `e`, outside its subqueries (each query is
/// visited on its own).
pub(crate) fn define_in(e: &mut Expr, define: &dyn Fn(&Expr) -> Option<Expr>) {
    crate::pg_functions::rewrite_outside_subqueries(e, |e| {
        if let Some(defined) = define(e) {
            *e = defined;
        }
    });
}

/// `= ANY` and `<> ALL` of a subquery as `IN` / `NOT IN`, anywhere.
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

/// `x op ALL (q)` / `x op ANY (q)` for an operator other than those `IN` covers, as SQL
/// defines it (see the module's comment); `None` for anything else.
fn quantified_comparison(e: &Expr) -> Option<Expr> {
    let (left, op, right, all) = match e {
        Expr::AllOp {
            left,
            compare_op,
            right,
        } if *compare_op != BinaryOperator::NotEq => (left, compare_op, right, true),
        Expr::AnyOp {
            left,
            compare_op,
            right,
            ..
        } if *compare_op != BinaryOperator::Eq => (left, compare_op, right, false),
        _ => return None,
    };
    if !matches!(
        op,
        BinaryOperator::Lt
            | BinaryOperator::LtEq
            | BinaryOperator::Gt
            | BinaryOperator::GtEq
            | BinaryOperator::Eq
            | BinaryOperator::NotEq
    ) {
        return None;
    }
    let Expr::Subquery(q) = right.as_ref() else {
        return None;
    };
    if !one_column(q) || !plain(left) {
        return None;
    }
    let compared = format!("({left}) {op} __brook_v");
    let (decided, decision, otherwise) = if all {
        (format!("NOT ({compared})"), "false", "true")
    } else {
        (compared.clone(), "true", "false")
    };
    // One row whatever `q` gives (an aggregate without GROUP BY): a scalar subquery, which
    // runs where an EXISTS in a select list without FROM does not.
    let text = format!(
        "(SELECT CASE WHEN count(*) FILTER (WHERE {decided}) > 0 THEN {decision} \
         WHEN count(*) FILTER (WHERE ({compared}) IS NULL) > 0 THEN NULL ELSE {otherwise} END \
         FROM ({q}) AS __brook_quantified (__brook_v))"
    );
    Parser::new(&PostgreSqlDialect {})
        .try_with_sql(&text)
        .and_then(|mut p| p.parse_expr())
        .ok()
}

/// Whether `e` reads columns and constants only (no function call, aggregate, window or
/// subquery): it is written into the subquery's aggregates, where an aggregate would nest
/// and a volatile call would run per row (and into `row_in_subquery`'s EXISTS tests).
pub(crate) fn plain(e: &Expr) -> bool {
    let mut calls = false;
    let _ = datafusion::sql::sqlparser::ast::visit_expressions(e, |x| {
        if matches!(
            x,
            Expr::Function(_) | Expr::Subquery(_) | Expr::Exists { .. } | Expr::InSubquery { .. }
        ) {
            calls = true;
        }
        ControlFlow::<()>::Continue(())
    });
    !calls
}

/// Whether query `q` visibly gives one column (its first SELECT lists one expression).
fn one_column(q: &Query) -> bool {
    fn first_select(body: &SetExpr) -> Option<&[SelectItem]> {
        match body {
            SetExpr::Select(s) => Some(&s.projection),
            SetExpr::SetOperation { left, .. } => first_select(left),
            SetExpr::Query(q) => first_select(&q.body),
            _ => None,
        }
    }
    matches!(
        first_select(&q.body),
        Some([SelectItem::UnnamedExpr(_) | SelectItem::ExprWithAlias { .. }])
    )
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
            // arrays are left as they are, and subqueries of unseen width
            (
                "SELECT * FROM t WHERE k = ANY (ARRAY[1, 2]) AND k > ALL (SELECT * FROM u)",
                "SELECT * FROM t WHERE k = ANY(ARRAY[1, 2]) AND k > ALL(SELECT * FROM u)",
            ),
            // the other operators: SQL's definition, reading the subquery as one column
            (
                "SELECT * FROM t WHERE k >= ALL (SELECT k FROM t)",
                "SELECT * FROM t WHERE (SELECT CASE WHEN count(*) FILTER (WHERE NOT ((k) >= __brook_v)) > 0 THEN false WHEN count(*) FILTER (WHERE ((k) >= __brook_v) IS NULL) > 0 THEN NULL ELSE true END FROM (SELECT k FROM t) AS __brook_quantified (__brook_v))",
            ),
            (
                "SELECT k < ANY (SELECT a FROM u) FROM t",
                "SELECT (SELECT CASE WHEN count(*) FILTER (WHERE (k) < __brook_v) > 0 THEN true WHEN count(*) FILTER (WHERE ((k) < __brook_v) IS NULL) > 0 THEN NULL ELSE false END FROM (SELECT a FROM u) AS __brook_quantified (__brook_v)) AS \"?column?\" FROM t",
            ),
            // a left side that calls a function, and JOIN ... ON, stay DataFusion's
            (
                "SELECT max(x) > ALL (SELECT a FROM u) FROM t JOIN v ON t.k > ALL (SELECT a FROM u)",
                "SELECT max(x) > ALL(SELECT a FROM u) FROM t JOIN v ON t.k > ALL(SELECT a FROM u)",
            ),
        ];
        for (sql, want) in cases {
            assert_eq!(rewritten(&QuantifiedSubqueries, sql), want, "{sql}");
        }
    }
}
