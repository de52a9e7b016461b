//! `x [NOT] IN (subquery)` in a select list or ORDER BY (Grafana's table list: `CASE WHEN
//! quote_ident(table_schema) IN (SELECT ... search path ...) THEN ...`), as scalar
//! subqueries DataFusion runs there:
//!
//! `CASE WHEN (SELECT count(*) FROM (subquery) AS brook_in (brook_v)) = 0 THEN false
//!  ELSE array_has((SELECT array_agg(brook_in.brook_v) FROM (subquery) AS brook_in (brook_v)), x) END`
//!
//! DataFusion plans an IN subquery only in a filter ("Physical plan does not support logical
//! expression InSubquery"). `array_has` is Brook's, with SQL's NULLs (`brook::udf::
//! array_functions`): NULL when `x` is not found and the set holds a NULL, or `x` is NULL
//! and the set is not empty, as IN answers; the count makes an empty set false. In WHERE
//! and ON the IN subquery is left to DataFusion, which decorrelates it into a semi join.
//!
//! An uncorrelated `[NOT] EXISTS (q)` of a select list, which DataFusion does not run
//! there, is `(SELECT count(*) > 0 FROM (q))` (`= 0` when negated).

use datafusion::sql::sqlparser::ast::{
    visit_expressions_mut, Expr, OrderBy, OrderByKind, Query, SelectItem, SetExpr, Statement,
    VisitMut, VisitorMut,
};
use datafusion_pg_catalog::sql::rules::SqlStatementRewriteRule;
use std::ops::ControlFlow;

/// The rewrite rule.
#[derive(Debug)]
pub struct InSubqueryInProjection;

impl SqlStatementRewriteRule for InSubqueryInProjection {
    fn rewrite(&self, mut s: Statement) -> Statement {
        let _ = VisitMut::visit(&mut s, &mut Projections);
        s
    }
}

struct Projections;

impl VisitorMut for Projections {
    type Break = ();

    fn pre_visit_query(&mut self, query: &mut Query) -> ControlFlow<()> {
        select_lists(query.body.as_mut());
        if let Some(OrderBy {
            kind: OrderByKind::Expressions(items),
            ..
        }) = &mut query.order_by
        {
            for item in items {
                rewrite(&mut item.expr);
            }
        }
        ControlFlow::Continue(())
    }
}

/// The select lists of a query body, in each branch of a UNION, INTERSECT or EXCEPT.
fn select_lists(body: &mut SetExpr) {
    match body {
        SetExpr::Select(select) => {
            for item in &mut select.projection {
                // `SELECT EXISTS (...)` is named `exists` (NOT EXISTS `?column?`), as in PostgreSQL, not as the
                // scalar subquery it becomes.
                if let SelectItem::UnnamedExpr(e @ Expr::Exists { negated: false, .. }) = item {
                    let mut expr = e.clone();
                    rewrite(&mut expr);
                    if expr != *e {
                        *item = SelectItem::ExprWithAlias {
                            expr,
                            alias: datafusion::sql::sqlparser::ast::Ident::new("exists"),
                        };
                    }
                    continue;
                }
                if let SelectItem::UnnamedExpr(e) | SelectItem::ExprWithAlias { expr: e, .. } = item
                {
                    rewrite(e);
                }
            }
        }
        SetExpr::SetOperation { left, right, .. } => {
            select_lists(left);
            select_lists(right);
        }
        _ => {}
    }
}

/// Each IN subquery of `e` in its scalar-subquery form.
fn rewrite(e: &mut Expr) {
    let _ = visit_expressions_mut(e, |x| {
        if let Some(rewritten) = as_scalar_subqueries(x) {
            *x = rewritten;
        }
        ControlFlow::<()>::Continue(())
    });
}

/// The scalar-subquery form of an IN subquery or an uncorrelated EXISTS (None for any
/// other expression).
fn as_scalar_subqueries(e: &Expr) -> Option<Expr> {
    if let Expr::Exists { subquery, negated } = e {
        return exists_as_count(subquery, *negated);
    }
    let Expr::InSubquery {
        expr,
        subquery,
        negated,
    } = e
    else {
        return None;
    };
    // A row (`(a, b) IN (SELECT x, y ...)`) is left to DataFusion.
    if matches!(expr.as_ref(), Expr::Tuple(_)) {
        return None;
    }
    let sql = format!(
        "CASE WHEN (SELECT count(*) FROM ({subquery}) AS brook_in (brook_v)) = 0 THEN false \
         ELSE array_has((SELECT array_agg(brook_in.brook_v) FROM ({subquery}) AS brook_in (brook_v)), {expr}) END"
    );
    let membership = crate::decorrelate::parse_expr(&sql)?;
    Some(if *negated {
        Expr::UnaryOp {
            op: datafusion::sql::sqlparser::ast::UnaryOperator::Not,
            expr: Box::new(Expr::Nested(Box::new(membership))),
        }
    } else {
        membership
    })
}

/// `[NOT] EXISTS (q)` of a `q` that does not read the outer row as `(SELECT count(*) > 0
/// FROM (q))` (`= 0` for NOT EXISTS): DataFusion runs a correlated EXISTS of a select list
/// as a join, and an uncorrelated one not at all.
fn exists_as_count(subquery: &Query, negated: bool) -> Option<Expr> {
    if !crate::select_list_subqueries::uncorrelated(&subquery.body) {
        return None;
    }
    let test = if negated { "= 0" } else { "> 0" };
    crate::decorrelate::parse_expr(&format!(
        "(SELECT count(*) {test} FROM ({subquery}) AS brook_exists)"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rewritten(sql: &str) -> String {
        crate::rewritten_by(&InSubqueryInProjection, sql)
    }

    #[test]
    fn in_a_select_list_it_becomes_scalar_subqueries() {
        assert_eq!(
            rewritten("SELECT CASE WHEN s IN (SELECT n FROM t) THEN 1 ELSE 2 END FROM u"),
            "SELECT CASE WHEN CASE WHEN (SELECT count(*) FROM (SELECT n FROM t) AS brook_in (brook_v)) = 0 THEN false ELSE array_has((SELECT array_agg(brook_in.brook_v) FROM (SELECT n FROM t) AS brook_in (brook_v)), s) END THEN 1 ELSE 2 END FROM u"
        );
        assert!(
            rewritten("SELECT s NOT IN (SELECT n FROM t) FROM u").starts_with("SELECT NOT (CASE")
        );
    }

    #[test]
    fn union_branches_are_rewritten_and_rows_left_alone() {
        let out = rewritten("SELECT a IN (SELECT n FROM t) FROM u UNION ALL SELECT true");
        assert!(out.starts_with("SELECT CASE WHEN"), "{out}");
        assert_eq!(
            rewritten("SELECT (a, b) IN (SELECT 1, 2) FROM u"),
            "SELECT (a, b) IN (SELECT 1, 2) FROM u"
        );
    }

    #[test]
    fn an_uncorrelated_exists_counts() {
        assert_eq!(
            rewritten("SELECT EXISTS (SELECT 1 FROM t), NOT EXISTS (SELECT 1 FROM t) FROM u"),
            "SELECT (SELECT count(*) > 0 FROM (SELECT 1 FROM t) AS brook_exists) AS exists, (SELECT count(*) = 0 FROM (SELECT 1 FROM t) AS brook_exists) FROM u"
        );
        // correlated: DataFusion's join
        assert_eq!(
            rewritten("SELECT EXISTS (SELECT 1 FROM t WHERE t.k = u.k) FROM u"),
            "SELECT EXISTS (SELECT 1 FROM t WHERE t.k = u.k) FROM u"
        );
    }

    #[test]
    fn in_a_filter_it_stays() {
        assert_eq!(
            rewritten("SELECT s FROM u WHERE s IN (SELECT n FROM t)"),
            "SELECT s FROM u WHERE s IN (SELECT n FROM t)"
        );
    }
}
