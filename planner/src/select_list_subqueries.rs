//! Select-list subqueries of client catalog queries, kept where Brook can run them.
//!
//! The compatibility crate replaces every correlated scalar subquery of a catalog query's
//! select list by NULL (its `RemoveSubqueryFromProjection`), because DataFusion could not
//! run them: psql's `\d t` then shows no column defaults. Brook runs correlated subqueries
//! whose conditions DataFusion can decorrelate (`single_row_subquery`), so this rule, used
//! instead of the crate's, keeps those and replaces only the others: a subquery is kept when
//! it holds no further subquery and each condition of its WHERE reads one side only (the
//! subquery's tables or the outer row) or is an equality. Like the crate's rule, it gives an
//! uncorrelated subquery without LIMIT a `LIMIT 1`.

use datafusion::sql::sqlparser::ast::{
    BinaryOperator, Expr, LimitClause, Query, Select, SelectItem, SetExpr, Statement, TableFactor,
    TableWithJoins, Value, Visit, VisitMut, Visitor, VisitorMut,
};
use datafusion_pg_catalog::sql::rules::SqlStatementRewriteRule;
use std::collections::HashSet;
use std::ops::ControlFlow;

/// The rule.
#[derive(Debug)]
pub struct SelectListSubqueries;

impl SqlStatementRewriteRule for SelectListSubqueries {
    fn rewrite(&self, mut s: Statement) -> Statement {
        let _ = VisitMut::visit(&mut s, &mut Items);
        s
    }
}

struct Items;

impl VisitorMut for Items {
    type Break = ();

    fn pre_visit_query(&mut self, query: &mut Query) -> ControlFlow<()> {
        if let SetExpr::Select(select) = query.body.as_mut() {
            for item in &mut select.projection {
                let expr = match item {
                    SelectItem::UnnamedExpr(e) | SelectItem::ExprWithAlias { expr: e, .. } => e,
                    _ => continue,
                };
                let Expr::Subquery(q) = expr else {
                    continue;
                };
                let names = table_names(q);
                if reads_outer(q, &names) {
                    if !decorrelatable(q, &names) {
                        *expr = Expr::value(Value::Null);
                    }
                } else if q.limit_clause.is_none()
                    && q.fetch.is_none()
                    && !may_read_outer_unqualified(q)
                {
                    q.limit_clause = Some(LimitClause::LimitOffset {
                        limit: Some(Expr::value(Value::Number("1".into(), false))),
                        offset: None,
                        limit_by: vec![],
                    });
                }
            }
        }
        ControlFlow::Continue(())
    }
}

/// True when the subquery's WHERE compares a qualified column with an unqualified name
/// (pg_dump's `(SELECT spcname FROM pg_tablespace t WHERE t.oid = dattablespace)`): the
/// unqualified name may be the outer row's, so the subquery may be correlated and is left
/// to the planner as written (a LIMIT 1 would keep it from being decorrelated).
fn may_read_outer_unqualified(q: &Query) -> bool {
    let SetExpr::Select(select) = q.body.as_ref() else {
        return false;
    };
    let mut found = false;
    if let Some(w) = &select.selection {
        let _ = datafusion::sql::sqlparser::ast::visit_expressions(w, |e| {
            if let Expr::BinaryOp {
                left,
                op: BinaryOperator::Eq,
                right,
            } = e
            {
                let qualified = |x: &Expr| matches!(x, Expr::CompoundIdentifier(_));
                let bare = |x: &Expr| matches!(x, Expr::Identifier(_));
                found |= (qualified(left) && bare(right)) || (bare(left) && qualified(right));
            }
            ControlFlow::<()>::Continue(())
        });
    }
    found
}

/// The names a subquery's own columns are qualified by: each FROM item's alias, or its
/// table name (last part and whole).
fn table_names(q: &Query) -> HashSet<String> {
    match q.body.as_ref() {
        SetExpr::Select(select) => from_names(&select.from),
        _ => HashSet::new(),
    }
}

/// The names the items of a FROM list qualify columns by: each item's alias, or its table
/// name (last part and whole).
pub(crate) fn from_names(from: &[TableWithJoins]) -> HashSet<String> {
    let mut names = HashSet::new();
    {
        for twj in from {
            for factor in
                std::iter::once(&twj.relation).chain(twj.joins.iter().map(|j| &j.relation))
            {
                match factor {
                    TableFactor::Table { name, alias, .. } => match alias {
                        Some(a) => {
                            names.insert(a.name.value.to_ascii_lowercase());
                        }
                        None => {
                            let parts: Vec<String> = name
                                .0
                                .iter()
                                .filter_map(|p| p.as_ident())
                                .map(|i| i.value.to_ascii_lowercase())
                                .collect();
                            if let Some(last) = parts.last() {
                                names.insert(last.clone());
                            }
                            names.insert(parts.join("."));
                        }
                    },
                    TableFactor::Derived { alias: Some(a), .. } => {
                        names.insert(a.name.value.to_ascii_lowercase());
                    }
                    _ => {}
                }
            }
        }
    }
    names
}

/// Which sides an expression reads: (the subquery's tables, the outer row). Unqualified
/// names are taken as the subquery's; a parameter or a nested subquery counts as outer.
fn sides(e: &Expr, names: &HashSet<String>) -> (bool, bool) {
    struct Sides<'a> {
        names: &'a HashSet<String>,
        inner: bool,
        outer: bool,
    }
    impl Visitor for Sides<'_> {
        type Break = ();
        fn pre_visit_expr(&mut self, e: &Expr) -> ControlFlow<()> {
            match e {
                Expr::Identifier(_) => self.inner = true,
                Expr::CompoundIdentifier(parts) if parts.len() > 1 => {
                    let qualifier: Vec<String> = parts[..parts.len() - 1]
                        .iter()
                        .map(|i| i.value.to_ascii_lowercase())
                        .collect();
                    if self.names.contains(&qualifier.join(".")) {
                        self.inner = true;
                    } else {
                        self.outer = true;
                    }
                }
                Expr::Value(v) if matches!(v.value, Value::Placeholder(_)) => self.outer = true,
                Expr::Subquery(_) | Expr::Exists { .. } | Expr::InSubquery { .. } => {
                    self.outer = true
                }
                _ => {}
            }
            ControlFlow::Continue(())
        }
    }
    let mut v = Sides {
        names,
        inner: false,
        outer: false,
    };
    let _ = e.visit(&mut v);
    (v.inner, v.outer)
}

/// True when some expression of `q` reads the outer row.
pub(crate) fn reads_outer(q: &Query, names: &HashSet<String>) -> bool {
    let SetExpr::Select(select) = q.body.as_ref() else {
        return true;
    };
    select_reads_outer(select, names)
}

/// True when no SELECT of a query body (each branch of a set operation) reads the outer row
/// (as [`reads_outer`] tells, each SELECT with its own FROM's names).
pub(crate) fn uncorrelated(body: &SetExpr) -> bool {
    match body {
        SetExpr::Select(s) => !select_reads_outer(s, &from_names(&s.from)),
        SetExpr::SetOperation { left, right, .. } => uncorrelated(left) && uncorrelated(right),
        SetExpr::Query(q) => uncorrelated(&q.body),
        // `VALUES (1, 2), (3, NULL)`: a list that names no column.
        SetExpr::Values(v) => {
            let mut names = false;
            let _ = datafusion::sql::sqlparser::ast::visit_expressions(v, |e| {
                names |= matches!(e, Expr::Identifier(_) | Expr::CompoundIdentifier(_));
                ControlFlow::<()>::Continue(())
            });
            !names
        }
        _ => false,
    }
}

/// True when the select list or WHERE clause of `select` reads the outer row.
fn select_reads_outer(select: &Select, names: &HashSet<String>) -> bool {
    let mut outer = false;
    for item in &select.projection {
        if let SelectItem::UnnamedExpr(e) | SelectItem::ExprWithAlias { expr: e, .. } = item {
            outer |= sides(e, names).1;
        }
    }
    if let Some(w) = &select.selection {
        outer |= sides(w, names).1;
    }
    outer
}

/// True when `q` holds no nested subquery and each WHERE conjunct is one-sided or an
/// equality.
fn decorrelatable(q: &Query, names: &HashSet<String>) -> bool {
    let SetExpr::Select(select) = q.body.as_ref() else {
        return false;
    };
    let nested = {
        let mut found = false;
        let _ = datafusion::sql::sqlparser::ast::visit_expressions(select.as_ref(), |e| {
            if matches!(
                e,
                Expr::Subquery(_) | Expr::Exists { .. } | Expr::InSubquery { .. }
            ) {
                found = true;
            }
            ControlFlow::<()>::Continue(())
        });
        found
    };
    if nested || !select.from.iter().all(|t| t.joins.is_empty()) {
        return false;
    }
    let Some(w) = &select.selection else {
        return true;
    };
    conjuncts(w).into_iter().all(|c| {
        let (inner, outer) = sides(c, names);
        !(inner && outer)
            || matches!(
                c,
                Expr::BinaryOp {
                    op: BinaryOperator::Eq,
                    ..
                }
            )
    })
}

fn conjuncts(e: &Expr) -> Vec<&Expr> {
    match e {
        Expr::BinaryOp {
            left,
            op: BinaryOperator::And,
            right,
        } => {
            let mut out = conjuncts(left);
            out.extend(conjuncts(right));
            out
        }
        Expr::Nested(inner) => conjuncts(inner),
        other => vec![other],
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::sql::sqlparser::dialect::PostgreSqlDialect;
    use datafusion::sql::sqlparser::parser::Parser;

    fn rewrite(sql: &str) -> String {
        let s = Parser::parse_sql(&PostgreSqlDialect {}, sql)
            .unwrap()
            .remove(0);
        SelectListSubqueries.rewrite(s).to_string()
    }

    #[test]
    fn equality_correlation_is_kept_and_other_correlation_is_null() {
        let out = rewrite(
            "SELECT a.attname, (SELECT pg_get_expr(d.adbin, d.adrelid) FROM pg_attrdef d WHERE d.adrelid = a.attrelid AND d.adnum = a.attnum AND a.atthasdef), \
             (SELECT c.collname FROM pg_collation c, pg_type t WHERE c.oid = a.attcollation AND a.attcollation <> t.typcollation) AS coll FROM pg_attribute a",
        );
        assert!(
            out.contains("(SELECT pg_get_expr(d.adbin, d.adrelid) FROM pg_attrdef d WHERE"),
            "{out}"
        );
        assert!(out.contains("NULL AS coll"), "{out}");
    }

    #[test]
    fn an_uncorrelated_subquery_gets_limit_1() {
        let out = rewrite("SELECT (SELECT x FROM t) FROM u");
        assert!(out.contains("(SELECT x FROM t LIMIT 1)"), "{out}");
    }
}
