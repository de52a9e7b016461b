//! `x NOT IN (correlated subquery)` in a WHERE clause as the `NOT EXISTS` it means there.
//!
//! DataFusion turns `NOT IN` into a null-aware anti join, which takes one join key only; a
//! correlated subquery adds its correlation as a second key, and the query failed
//! ("null_aware anti join only supports single column join key", XX000). Where a WHERE
//! clause keeps only the rows whose condition is true, `x NOT IN (SELECT y FROM s WHERE c)`
//! and `NOT EXISTS (SELECT 1 FROM s WHERE c AND (y = x OR y IS NULL OR x IS NULL))` keep
//! the same rows: both exclude a row once some `y` equals `x`, once the subquery has a NULL,
//! and once `x` is NULL over a non-empty subquery, and both keep it over an empty one.
//!
//! Only a top-level conjunct of a WHERE clause is rewritten (under NOT or OR, or in a select
//! list, NULL and false differ). The subquery must be one plain SELECT of one column without
//! aggregates, grouping, DISTINCT ON, windows or LIMIT, and `x` must name its relation
//! (qualified, or the outer query reads one relation), so that moving `x` into the
//! subquery cannot change what it refers to. An uncorrelated `NOT IN` is left alone: the
//! anti join plans it with a hash table.

use crate::select_list_subqueries::{from_names, reads_outer};
use datafusion::sql::sqlparser::ast::{
    BinaryOperator, Expr, Ident, Query, Select, SelectItem, SetExpr, Statement, TableWithJoins,
    Visit, VisitMut, Visitor, VisitorMut,
};
use datafusion_pg_catalog::sql::rules::SqlStatementRewriteRule;
use std::collections::HashSet;
use std::ops::ControlFlow;

/// The rewrite rule.
#[derive(Debug)]
pub struct CorrelatedNotIn;

impl SqlStatementRewriteRule for CorrelatedNotIn {
    fn rewrite(&self, mut s: Statement) -> Statement {
        let _ = VisitMut::visit(&mut s, &mut Selects);
        s
    }
}

struct Selects;

impl VisitorMut for Selects {
    type Break = ();

    fn pre_visit_query(&mut self, q: &mut Query) -> ControlFlow<()> {
        rewrite_body(&mut q.body);
        ControlFlow::Continue(())
    }
}

fn rewrite_body(body: &mut SetExpr) {
    match body {
        SetExpr::Select(select) => rewrite_select(select),
        SetExpr::SetOperation { left, right, .. } => {
            rewrite_body(left);
            rewrite_body(right);
        }
        SetExpr::Query(q) => rewrite_body(&mut q.body),
        _ => {}
    }
}

fn rewrite_select(select: &mut Select) {
    let outer = from_names(&select.from);
    let Some(selection) = select.selection.take() else {
        return;
    };
    let conjuncts = split_and(selection)
        .into_iter()
        .map(|c| not_exists(c, &select.from, &outer))
        .collect();
    select.selection = join_and(conjuncts);
}

fn split_and(e: Expr) -> Vec<Expr> {
    match e {
        Expr::BinaryOp {
            left,
            op: BinaryOperator::And,
            right,
        } => {
            let mut out = split_and(*left);
            out.extend(split_and(*right));
            out
        }
        Expr::Nested(inner)
            if matches!(
                *inner,
                Expr::BinaryOp {
                    op: BinaryOperator::And,
                    ..
                }
            ) =>
        {
            split_and(*inner)
        }
        other => vec![other],
    }
}

fn join_and(conjuncts: Vec<Expr>) -> Option<Expr> {
    conjuncts.into_iter().reduce(|left, right| Expr::BinaryOp {
        left: Box::new(left),
        op: BinaryOperator::And,
        right: Box::new(right),
    })
}

/// `conjunct` as NOT EXISTS when it is a correlated `x NOT IN (subquery)` the rewrite can
/// take, else as it is.
fn not_exists(conjunct: Expr, from: &[TableWithJoins], outer: &HashSet<String>) -> Expr {
    let Expr::InSubquery {
        expr,
        subquery,
        negated: true,
    } = &conjunct
    else {
        return conjunct;
    };
    let Some(x) = qualified(expr, from, outer) else {
        return conjunct;
    };
    let SetExpr::Select(inner) = subquery.body.as_ref() else {
        return conjunct;
    };
    let plain = subquery.with.is_none()
        && subquery.order_by.is_none()
        && subquery.limit_clause.is_none()
        && subquery.fetch.is_none()
        && inner.having.is_none()
        && inner.distinct.is_none()
        && inner.named_window.is_empty()
        && matches!(
            &inner.group_by,
            datafusion::sql::sqlparser::ast::GroupByExpr::Expressions(e, m) if e.is_empty() && m.is_empty()
        );
    let y = match inner.projection.as_slice() {
        [SelectItem::UnnamedExpr(y)] | [SelectItem::ExprWithAlias { expr: y, .. }] => y.clone(),
        _ => return conjunct,
    };
    let own = from_names(&inner.from);
    if !plain
        || calls_a_function(&y)
        || !reads_outer(subquery, &own)
        || qualifiers(&x).iter().any(|q| own.contains(q))
    {
        return conjunct;
    }
    let matches = Expr::Nested(Box::new(or(vec![
        Expr::BinaryOp {
            left: Box::new(y.clone()),
            op: BinaryOperator::Eq,
            right: Box::new(x.clone()),
        },
        Expr::IsNull(Box::new(y)),
        Expr::IsNull(Box::new(x)),
    ])));
    let mut exists = (**subquery).clone();
    if let SetExpr::Select(s) = exists.body.as_mut() {
        s.projection = vec![SelectItem::UnnamedExpr(Expr::value(
            datafusion::sql::sqlparser::ast::Value::Number("1".into(), false),
        ))];
        s.selection = Some(match s.selection.take() {
            Some(c) => Expr::BinaryOp {
                left: Box::new(Expr::Nested(Box::new(c))),
                op: BinaryOperator::And,
                right: Box::new(matches),
            },
            None => matches,
        });
    }
    Expr::Exists {
        subquery: Box::new(exists),
        negated: true,
    }
}

fn or(terms: Vec<Expr>) -> Expr {
    terms
        .into_iter()
        .reduce(|left, right| Expr::BinaryOp {
            left: Box::new(left),
            op: BinaryOperator::Or,
            right: Box::new(right),
        })
        .unwrap_or(Expr::value(
            datafusion::sql::sqlparser::ast::Value::Boolean(false),
        ))
}

/// `e` with each column naming its relation: as it is when every column is qualified, or
/// qualified with the outer query's one relation.
fn qualified(e: &Expr, from: &[TableWithJoins], outer: &HashSet<String>) -> Option<Expr> {
    let mut e = e.clone();
    let single = match from {
        [t] if t.joins.is_empty() && outer.len() == 1 => outer.iter().next().cloned(),
        _ => None,
    };
    let mut ok = true;
    let _ = datafusion::sql::sqlparser::ast::visit_expressions_mut(&mut e, |e| {
        match e {
            Expr::Identifier(i) => match &single {
                Some(rel) => *e = Expr::CompoundIdentifier(vec![Ident::new(rel), i.clone()]),
                None => ok = false,
            },
            Expr::Subquery(_) | Expr::Exists { .. } | Expr::InSubquery { .. } => ok = false,
            _ => {}
        }
        ControlFlow::<()>::Continue(())
    });
    ok.then_some(e)
}

/// The relation names that qualify columns of `e`.
fn qualifiers(e: &Expr) -> HashSet<String> {
    struct Qualifiers(HashSet<String>);
    impl Visitor for Qualifiers {
        type Break = ();
        fn pre_visit_expr(&mut self, e: &Expr) -> ControlFlow<()> {
            if let Expr::CompoundIdentifier(parts) = e {
                if parts.len() >= 2 {
                    self.0
                        .insert(parts[parts.len() - 2].value.to_ascii_lowercase());
                }
            }
            ControlFlow::Continue(())
        }
    }
    let mut q = Qualifiers(HashSet::new());
    let _ = e.visit(&mut q);
    q.0
}

/// Whether `e` calls a function (which may be an aggregate, not movable into a WHERE).
fn calls_a_function(e: &Expr) -> bool {
    struct Calls(bool);
    impl Visitor for Calls {
        type Break = ();
        fn pre_visit_expr(&mut self, e: &Expr) -> ControlFlow<()> {
            if matches!(e, Expr::Function(_)) {
                self.0 = true;
                return ControlFlow::Break(());
            }
            ControlFlow::Continue(())
        }
    }
    let mut c = Calls(false);
    let _ = e.visit(&mut c);
    c.0
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::rewritten;

    #[test]
    fn a_correlated_not_in_of_a_where_clause_is_not_exists() {
        let cases = [
            (
                "SELECT * FROM t WHERE t.x NOT IN (SELECT y FROM u WHERE u.k = t.k)",
                "SELECT * FROM t WHERE NOT EXISTS (SELECT 1 FROM u WHERE (u.k = t.k) AND (y = t.x OR y IS NULL OR t.x IS NULL))",
            ),
            (
                "SELECT * FROM t AS a WHERE a.k > 0 AND x NOT IN (SELECT u.y FROM u WHERE u.k = a.k)",
                "SELECT * FROM t AS a WHERE a.k > 0 AND NOT EXISTS (SELECT 1 FROM u WHERE (u.k = a.k) AND (u.y = a.x OR u.y IS NULL OR a.x IS NULL))",
            ),
        ];
        for (sql, want) in cases {
            assert_eq!(rewritten(&CorrelatedNotIn, sql), want, "{sql}");
        }
    }

    #[test]
    fn other_forms_are_left_alone() {
        for sql in [
            // uncorrelated: DataFusion's null-aware anti join
            "SELECT * FROM t WHERE x NOT IN (SELECT y FROM u)",
            // NULL and false differ under NOT / OR and in a select list
            "SELECT * FROM t WHERE NOT (x NOT IN (SELECT y FROM u WHERE u.k = t.k))",
            "SELECT * FROM t WHERE x NOT IN (SELECT y FROM u WHERE u.k = t.k) OR x = 1",
            "SELECT x NOT IN (SELECT y FROM u WHERE u.k = t.k) FROM t",
            // an aggregate, grouping or limit cannot move into the WHERE
            "SELECT * FROM t WHERE x NOT IN (SELECT max(y) FROM u WHERE u.k = t.k)",
            "SELECT * FROM t WHERE x NOT IN (SELECT y FROM u WHERE u.k = t.k GROUP BY y)",
            "SELECT * FROM t WHERE x NOT IN (SELECT y FROM u WHERE u.k = t.k LIMIT 1)",
            // an unqualified x over two relations could name either
            "SELECT * FROM t, v WHERE x NOT IN (SELECT y FROM u WHERE u.k = t.k)",
            // x names the subquery's own relation
            "SELECT * FROM t AS u WHERE u.x NOT IN (SELECT y FROM u WHERE u.k = 1)",
        ] {
            assert_eq!(rewritten(&CorrelatedNotIn, sql), sql, "{sql}");
        }
    }
}
