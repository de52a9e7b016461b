//! Decorrelation of scalar aggregate subqueries with non-equality correlation.
//!
//! DataFusion decorrelates correlated scalar subqueries only when the correlation is by
//! equality; `(SELECT count(*) FROM t AS x WHERE x.b < t.b)` stays a subquery and cannot be
//! executed. Written here because no library does it: the subquery becomes a grouped join
//! over the *distinct* outer values it depends on, left-joined back to the outer rows:
//!
//! ```sql
//! SELECT (SELECT count(*) FROM t AS x WHERE x.b < t.b) FROM t
//! -- becomes
//! SELECT COALESCE(__brook_sq0.__brook_v, 0) FROM t
//!   LEFT JOIN (SELECT t.b AS __brook_k0, count(*) AS __brook_v
//!                FROM (SELECT DISTINCT b FROM t) AS t JOIN t AS x ON x.b < t.b
//!               GROUP BY t.b) AS __brook_sq0
//!     ON __brook_sq0.__brook_k0 IS NOT DISTINCT FROM t.b
//! ```
//!
//! The grouped side's columns have names of Brook's own: a user's column `v` or `k0`
//! beside them made an unqualified reference to it ambiguous (42702).
//!
//! Invariant: the result equals the subquery evaluated per outer row, because the subquery's
//! value is a function of the outer columns it references only, the grouped side has exactly
//! one row per distinct combination of them, and a combination without matches gets the
//! aggregate of an empty input (0 for count, NULL otherwise).
//!
//! Scope (others are left to DataFusion): the outer block has no wildcard; the subquery is
//! one aggregate call (`count`, `sum`, `avg`, `min`, `max`, `array_agg`, which an
//! `ARRAY(SELECT ...)` constructor becomes) over a FROM list, with a WHERE clause that
//! references one table of the outer FROM (joined or not) by its qualified name; the
//! grouped join joins the FROM item that table is part of.

use datafusion::sql::sqlparser::ast::{
    Expr, GroupByExpr, Query, Select, SelectItem, SetExpr, Statement, TableFactor, VisitMut,
    VisitorMut,
};
use datafusion::sql::sqlparser::dialect::PostgreSqlDialect;
use datafusion::sql::sqlparser::parser::Parser;
use std::collections::BTreeSet;
use std::ops::ControlFlow;

/// Rewrite the correlated scalar aggregate subqueries of a statement's outer query blocks.
pub fn decorrelate_scalar_subqueries(stmt: &mut Statement) {
    if let Statement::Query(q) = stmt {
        let mut counter = 0;
        rewrite_set_expr(&mut q.body, &mut counter);
    }
}

fn rewrite_set_expr(body: &mut SetExpr, counter: &mut usize) {
    match body {
        SetExpr::Select(s) => rewrite_select(s, counter),
        SetExpr::SetOperation { left, right, .. } => {
            rewrite_set_expr(left, counter);
            rewrite_set_expr(right, counter);
        }
        SetExpr::Query(q) => rewrite_set_expr(&mut q.body, counter),
        _ => {}
    }
}

/// The outer block's tables read by name: (SQL of the table name, name it is referenced
/// by, index of the FROM item it is part of).
fn outer_tables(s: &Select) -> Vec<(String, String, usize)> {
    let mut out = Vec::new();
    for (i, twj) in s.from.iter().enumerate() {
        let factors = std::iter::once(&twj.relation).chain(twj.joins.iter().map(|j| &j.relation));
        for factor in factors {
            let TableFactor::Table {
                name,
                alias,
                args: None,
                with_hints,
                ..
            } = factor
            else {
                continue;
            };
            if !with_hints.is_empty() {
                continue;
            }
            let reference = match alias {
                Some(a) if a.columns.is_empty() => {
                    norm(&a.name.value, a.name.quote_style.is_some())
                }
                Some(_) => continue,
                None => match name.0.last().and_then(|p| p.as_ident()) {
                    Some(last) => norm(&last.value, last.quote_style.is_some()),
                    None => continue,
                },
            };
            out.push((name.to_string(), reference, i));
        }
    }
    out
}

use brook_common::ident::fold as norm;

fn rewrite_select(s: &mut Select, counter: &mut usize) {
    let outers = outer_tables(s);
    if outers.is_empty() {
        return;
    }
    if s.projection.iter().any(|i| {
        matches!(
            i,
            SelectItem::Wildcard(_) | SelectItem::QualifiedWildcard(..)
        )
    }) {
        return;
    }
    let mut finder = Finder {
        outers,
        counter,
        joins: Vec::new(),
        depth: 0,
    };
    for item in s.projection.iter_mut() {
        let _ = item.visit(&mut finder);
    }
    if let Some(w) = s.selection.as_mut() {
        let _ = w.visit(&mut finder);
    }
    if let Some(h) = s.having.as_mut() {
        let _ = h.visit(&mut finder);
    }
    for (i, join) in std::mem::take(&mut finder.joins) {
        if let Some(twj) = s.from.get_mut(i) {
            twj.joins.push(join);
        }
    }
}

struct Finder<'a> {
    /// The outer tables: (SQL of the name, reference, FROM item).
    outers: Vec<(String, String, usize)>,
    counter: &'a mut usize,
    /// The joins made, each with the FROM item it extends (the one holding its table).
    joins: Vec<(usize, datafusion::sql::sqlparser::ast::Join)>,
    /// Subqueries entered: only those of the outer block itself (depth 1) read its tables
    /// as their outer row; a join made for one nested deeper would not be in its scope.
    depth: usize,
}

/// Whether an expression holds a query of its own.
fn is_query(e: &Expr) -> bool {
    matches!(
        e,
        Expr::Subquery(_) | Expr::Exists { .. } | Expr::InSubquery { .. }
    )
}

/// Whether a condition holds a subquery (left to per-row evaluation: its correlation may
/// reach past the subquery being rewritten).
fn has_subquery(e: &Expr) -> bool {
    datafusion::sql::sqlparser::ast::visit_expressions(e, |x| {
        if is_query(x) {
            ControlFlow::Break(())
        } else {
            ControlFlow::Continue(())
        }
    })
    .is_break()
}

/// The aggregate of a decorrelatable subquery, its FROM (SQL) and WHERE.
fn shape(q: &Query) -> Option<(&Expr, String, &Expr, bool)> {
    if q.with.is_some() || q.order_by.is_some() || q.fetch.is_some() {
        return None;
    }
    if q.limit_clause.is_some() {
        return None;
    }
    let SetExpr::Select(s) = q.body.as_ref() else {
        return None;
    };
    let no_group =
        matches!(&s.group_by, GroupByExpr::Expressions(e, m) if e.is_empty() && m.is_empty());
    if !no_group
        || s.having.is_some()
        || s.distinct.is_some()
        || s.projection.len() != 1
        || s.from.is_empty()
    {
        return None;
    }
    let agg = match &s.projection[0] {
        SelectItem::UnnamedExpr(e) | SelectItem::ExprWithAlias { expr: e, .. } => e,
        _ => return None,
    };
    let Expr::Function(f) = agg else { return None };
    if f.over.is_some() || f.filter.is_some() || f.name.0.len() != 1 {
        return None;
    }
    let fname = f.name.0[0].as_ident()?.value.to_ascii_lowercase();
    if !matches!(
        fname.as_str(),
        "count" | "sum" | "avg" | "min" | "max" | "array_agg"
    ) {
        return None;
    }
    let from = s
        .from
        .iter()
        .map(|t| t.to_string())
        .collect::<Vec<_>>()
        .join(", ");
    let pred = s.selection.as_ref()?;
    if has_subquery(pred) || has_subquery(agg) {
        return None;
    }
    Some((agg, from, pred, fname == "count"))
}

/// Qualified references `outer.col` in an expression.
fn outer_refs(e: &Expr, outer: &str, inner_names: &BTreeSet<String>) -> BTreeSet<String> {
    let mut cols = BTreeSet::new();
    let _ = datafusion::sql::sqlparser::ast::visit_expressions(e, |x| {
        if let Expr::CompoundIdentifier(parts) = x {
            if let [q, c] = parts.as_slice() {
                let qn = norm(&q.value, q.quote_style.is_some());
                if qn == outer && !inner_names.contains(&qn) {
                    cols.insert(norm(&c.value, c.quote_style.is_some()));
                }
            }
        }
        ControlFlow::<()>::Continue(())
    });
    cols
}

/// Names (aliases or table names) the subquery's FROM introduces.
fn inner_names(q: &Query) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    if let SetExpr::Select(s) = q.body.as_ref() {
        for twj in &s.from {
            let mut rels = vec![&twj.relation];
            rels.extend(twj.joins.iter().map(|j| &j.relation));
            for r in rels {
                if let TableFactor::Table { name, alias, .. } = r {
                    match alias {
                        Some(a) => out.insert(norm(&a.name.value, a.name.quote_style.is_some())),
                        None => out.insert(
                            name.0
                                .last()
                                .and_then(|p| p.as_ident())
                                .map(|i| norm(&i.value, i.quote_style.is_some()))
                                .unwrap_or_default(),
                        ),
                    };
                }
            }
        }
    }
    out
}

/// An expression from SQL text (None when it does not parse).
pub(crate) fn parse_expr(sql: &str) -> Option<Expr> {
    Parser::new(&PostgreSqlDialect {})
        .try_with_sql(sql)
        .ok()?
        .parse_expr()
        .ok()
}

impl VisitorMut for Finder<'_> {
    type Break = ();

    fn pre_visit_expr(&mut self, e: &mut Expr) -> ControlFlow<()> {
        if is_query(e) {
            self.depth += 1;
        }
        ControlFlow::Continue(())
    }

    fn post_visit_expr(&mut self, e: &mut Expr) -> ControlFlow<()> {
        if !is_query(e) {
            return ControlFlow::Continue(());
        }
        self.depth -= 1;
        let Expr::Subquery(q) = e else {
            return ControlFlow::Continue(());
        };
        if self.depth > 0 {
            return ControlFlow::Continue(());
        }
        let inner = inner_names(q);
        let Some((agg, from, pred, is_count)) = shape(q) else {
            return ControlFlow::Continue(());
        };
        // The one outer table the subquery reads, and the columns it reads of it.
        let mut read = self.outers.iter().filter_map(|(sql, outer, item)| {
            let mut cols = outer_refs(pred, outer, &inner);
            cols.extend(outer_refs(agg, outer, &inner));
            (!cols.is_empty()).then(|| (sql.clone(), outer.clone(), *item, cols))
        });
        let (Some((table_sql, outer, item, cols)), None) = (read.next(), read.next()) else {
            return ControlFlow::Continue(()); // not correlated, or with several tables
        };
        let i = *self.counter;
        let sq = format!("__brook_sq{i}");
        let q_outer = format!("\"{}\"", outer.replace('"', "\"\""));
        let keys: Vec<String> = cols
            .iter()
            .enumerate()
            .map(|(k, c)| format!("{q_outer}.\"{c}\" AS __brook_k{k}"))
            .collect();
        let group: Vec<String> = cols.iter().map(|c| format!("{q_outer}.\"{c}\"")).collect();
        let distinct: Vec<String> = cols.iter().map(|c| format!("\"{c}\"")).collect();
        let derived = format!(
            "SELECT {}, {agg} AS __brook_v FROM (SELECT DISTINCT {} FROM {}) AS {q_outer} JOIN {from} ON {pred} GROUP BY {}",
            keys.join(", "),
            distinct.join(", "),
            table_sql,
            group.join(", ")
        );
        let on: Vec<String> = cols
            .iter()
            .enumerate()
            .map(|(k, c)| format!("({sq}.__brook_k{k} IS NOT DISTINCT FROM {q_outer}.\"{c}\")"))
            .collect();
        let join_sql = format!(
            "SELECT 1 FROM {q_outer} LEFT JOIN ({derived}) AS {sq} ON {}",
            on.join(" AND ")
        );
        let value = if is_count {
            format!("COALESCE({sq}.__brook_v, 0)")
        } else {
            format!("{sq}.__brook_v")
        };
        let Some(replacement) = parse_expr(&value) else {
            return ControlFlow::Continue(());
        };
        let join = Parser::new(&PostgreSqlDialect {})
            .try_with_sql(&join_sql)
            .and_then(|mut p| p.parse_query())
            .ok()
            .and_then(|q| match *q.body {
                SetExpr::Select(s) => s
                    .from
                    .into_iter()
                    .next()
                    .and_then(|t| t.joins.into_iter().next()),
                _ => None,
            });
        if let Some(join) = join {
            self.joins.push((item, join));
            *e = replacement;
            *self.counter += 1;
        }
        ControlFlow::Continue(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parser::parse_one;

    fn rewrite(sql: &str) -> String {
        let Some(mut s) = parse_one(sql).unwrap().into_plain_sql() else {
            panic!("not sql")
        };
        decorrelate_scalar_subqueries(&mut s);
        s.to_string()
    }

    #[test]
    fn count_with_inequality_becomes_a_grouped_left_join() {
        let out = rewrite("SELECT a, (SELECT count(*) FROM t1 AS x WHERE x.b < t1.b) FROM t1 WHERE a > 1 ORDER BY 1");
        assert!(out.contains("COALESCE(__brook_sq0.__brook_v, 0)"), "{out}");
        assert!(out.contains("LEFT JOIN (SELECT \"t1\".\"b\" AS __brook_k0, count(*) AS __brook_v FROM (SELECT DISTINCT \"b\" FROM t1) AS \"t1\" JOIN t1 AS x ON x.b < t1.b GROUP BY \"t1\".\"b\") AS __brook_sq0"), "{out}");
        assert!(out.contains("WHERE a > 1 ORDER BY 1"), "{out}");
    }

    #[test]
    fn uncorrelated_and_unsupported_shapes_are_left_alone() {
        let sql = "SELECT (SELECT avg(c) FROM t1), (SELECT count(*) + 1 FROM t1 AS x WHERE x.b < t1.b) FROM t1";
        assert_eq!(
            rewrite(sql),
            parse_one(sql)
                .map(|s| s.as_sql().map(|s| s.to_string()).unwrap_or_default())
                .unwrap()
        );
    }
}
