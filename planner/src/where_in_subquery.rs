//! `x IN (subquery)` and `x NOT IN (subquery)` in a WHERE clause, with SQL's NULL rule.
//!
//! DataFusion plans them as joins that lose the rule in two places:
//!
//! - A correlated `NOT IN` became a null-aware anti join, which takes one join key only; the
//!   correlation is a second one, and the query failed ("null_aware anti join only supports
//!   single column join key", XX000). As a top-level conjunct of a WHERE clause (which keeps
//!   only the rows whose condition is true) `x NOT IN (SELECT y FROM s WHERE c)` keeps the
//!   rows of `NOT EXISTS (SELECT 1 FROM s WHERE c AND (y = x OR y IS NULL OR x IS NULL))`:
//!   both exclude a row once some `y` equals `x`, once the subquery has a NULL, and once `x`
//!   is NULL over a non-empty subquery, and keep it over an empty one.
//! - Anywhere else in a WHERE clause — under `OR`, `IS [NOT] TRUE`, `IS NULL`, `CASE`, `IS
//!   [NOT] DISTINCT FROM`, a cast or a function's arguments (`coalesce`) — an
//!   `IN` became a mark join whose mark is true or false, never NULL: `x NOT IN (1, NULL)`
//!   was true, so `WHERE x NOT IN (SELECT ...) OR ...` kept rows PostgreSQL does not (a
//!   silent wrong answer). There the test is written out in SQL's three values:
//!   `CASE WHEN EXISTS (... y = x) THEN true WHEN EXISTS (... y IS NULL OR x IS NULL) THEN
//!   NULL ELSE false END` (true and false swapped for NOT IN).
//!
//! The EXISTS tests read the subquery as a derived table when it is uncorrelated (any
//! subquery), or, when it names an outer column, with the test added to its WHERE — then it
//! must be one plain SELECT of one column without function calls, grouping, DISTINCT or
//! LIMIT, and `x` must name its relation (qualified, or the outer query reads one relation)
//! so that moving `x` into the subquery cannot change what it refers to. Other forms are left
//! to DataFusion. A top-level `x IN (...)` (a semi join) and an uncorrelated top-level
//! `x NOT IN (...)` (the null-aware anti join, with a hash table) are right as planned.

use crate::select_list_subqueries::{from_names, reads_outer, uncorrelated};
use datafusion::sql::sqlparser::ast::helpers::attached_token::AttachedToken;
use datafusion::sql::sqlparser::ast::{
    BinaryOperator, CaseWhen, Expr, Ident, Query, Select, SelectItem, SetExpr, Statement,
    TableFactor, TableWithJoins, Value, Visit, VisitMut, Visitor, VisitorMut,
};
use datafusion::sql::sqlparser::dialect::PostgreSqlDialect;
use datafusion::sql::sqlparser::parser::Parser;
use datafusion_pg_catalog::sql::rules::SqlStatementRewriteRule;
use std::collections::HashSet;
use std::ops::ControlFlow;

/// The rewrite rule.
#[derive(Debug)]
pub struct WhereInSubqueries;

impl SqlStatementRewriteRule for WhereInSubqueries {
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
    let Some(selection) = select.selection.take() else {
        return;
    };
    let conjuncts = split_and(selection)
        .into_iter()
        .map(|c| match c {
            Expr::InSubquery {
                expr,
                subquery,
                negated: true,
            } => match correlated_not_in(&expr, &subquery, &select.from) {
                Some(not_exists) => not_exists,
                None => Expr::InSubquery {
                    expr,
                    subquery,
                    negated: true,
                },
            },
            c @ Expr::InSubquery { negated: false, .. } => c,
            mut c => {
                three_valued(&mut c, &select.from);
                c
            }
        })
        .collect();
    select.selection = join_and(conjuncts);
}

/// The NOT EXISTS a top-level correlated `x NOT IN (subquery)` keeps the rows of (an
/// uncorrelated one is the planner's null-aware anti join).
fn correlated_not_in(x: &Expr, subquery: &Query, from: &[TableWithJoins]) -> Option<Expr> {
    let (rows @ Rows::Merged { .. }, x) = tests(x, subquery, from)? else {
        return None;
    };
    let excluded = rows.exists_where(|y| {
        or(vec![
            eq(y.clone(), x.clone()),
            Expr::IsNull(Box::new(y.clone())),
            Expr::IsNull(Box::new(x.clone())),
        ])
    })?;
    Some(Expr::Exists {
        subquery: Box::new(excluded),
        negated: true,
    })
}

/// Each `x [NOT] IN (subquery)` of `e` (outside nested subqueries, which the visitor takes
/// with their own FROM) written in SQL's three values.
fn three_valued(e: &mut Expr, from: &[TableWithJoins]) {
    match e {
        Expr::InSubquery {
            expr,
            subquery,
            negated,
        } => {
            let negated = *negated;
            let Some((rows, x)) = tests(expr, subquery, from) else {
                return;
            };
            let found = rows.exists_where(|y| eq(y.clone(), x.clone()));
            let unknown = rows.exists_where(|y| {
                or(vec![
                    Expr::IsNull(Box::new(y.clone())),
                    Expr::IsNull(Box::new(x.clone())),
                ])
            });
            if let (Some(found), Some(unknown)) = (found, unknown) {
                let truth = |b: bool| Expr::value(Value::Boolean(b));
                *e = Expr::Nested(Box::new(Expr::Case {
                    case_token: AttachedToken::empty(),
                    end_token: AttachedToken::empty(),
                    operand: None,
                    conditions: vec![
                        CaseWhen {
                            condition: Expr::Exists {
                                subquery: Box::new(found),
                                negated: false,
                            },
                            result: truth(!negated),
                        },
                        CaseWhen {
                            condition: Expr::Exists {
                                subquery: Box::new(unknown),
                                negated: false,
                            },
                            result: Expr::value(Value::Null),
                        },
                    ],
                    else_result: Some(Box::new(truth(negated))),
                }));
            }
        }
        Expr::BinaryOp { left, right, .. }
        | Expr::IsDistinctFrom(left, right)
        | Expr::IsNotDistinctFrom(left, right) => {
            three_valued(left, from);
            three_valued(right, from);
        }
        // A function's argument (`coalesce(x IN (...), true)`), a cast, IN and BETWEEN
        // operands: the NULL matters there too.
        Expr::Function(f) => {
            if let datafusion::sql::sqlparser::ast::FunctionArguments::List(list) = &mut f.args {
                for a in &mut list.args {
                    use datafusion::sql::sqlparser::ast::{FunctionArg, FunctionArgExpr};
                    if let FunctionArg::Unnamed(FunctionArgExpr::Expr(e))
                    | FunctionArg::Named {
                        arg: FunctionArgExpr::Expr(e),
                        ..
                    } = a
                    {
                        three_valued(e, from);
                    }
                }
            }
        }
        Expr::Cast { expr, .. } => three_valued(expr, from),
        Expr::InList { expr, list, .. } => {
            three_valued(expr, from);
            for e in list {
                three_valued(e, from);
            }
        }
        Expr::Between {
            expr, low, high, ..
        } => {
            three_valued(expr, from);
            three_valued(low, from);
            three_valued(high, from);
        }
        Expr::UnaryOp { expr, .. }
        | Expr::Nested(expr)
        | Expr::IsTrue(expr)
        | Expr::IsNotTrue(expr)
        | Expr::IsFalse(expr)
        | Expr::IsNotFalse(expr)
        | Expr::IsNull(expr)
        | Expr::IsNotNull(expr)
        | Expr::IsUnknown(expr)
        | Expr::IsNotUnknown(expr) => three_valued(expr, from),
        Expr::Case {
            operand,
            conditions,
            else_result,
            ..
        } => {
            if let Some(o) = operand {
                three_valued(o, from);
            }
            for w in conditions {
                three_valued(&mut w.condition, from);
                three_valued(&mut w.result, from);
            }
            if let Some(e) = else_result {
                three_valued(e, from);
            }
        }
        _ => {}
    }
}

/// Where the EXISTS tests of `x IN (subquery)` find the subquery's values.
enum Rows {
    /// An uncorrelated subquery, read as a derived table of one column.
    Derived(Box<Query>),
    /// A correlated plain SELECT, its column `y`, the test added to its WHERE.
    Merged { query: Box<Query>, y: Box<Expr> },
}

/// The derived table's name and its one column's.
const DERIVED: &str = "__brook_in";
const DERIVED_VALUE: &str = "__brook_in_value";

impl Rows {
    /// `SELECT 1 FROM <the rows> WHERE test(y)`.
    fn exists_where(&self, test: impl Fn(&Expr) -> Expr) -> Option<Query> {
        let one = vec![SelectItem::UnnamedExpr(Expr::value(Value::Number(
            "1".into(),
            false,
        )))];
        match self {
            Rows::Merged { query, y } => {
                let mut q = (**query).clone();
                if let SetExpr::Select(s) = q.body.as_mut() {
                    s.projection = one;
                    let t = Expr::Nested(Box::new(test(y)));
                    s.selection = Some(match s.selection.take() {
                        Some(c) => Expr::BinaryOp {
                            left: Box::new(Expr::Nested(Box::new(c))),
                            op: BinaryOperator::And,
                            right: Box::new(t),
                        },
                        None => t,
                    });
                }
                Some(q)
            }
            Rows::Derived(subquery) => {
                // Written as text and parsed: a Select has many fields to spell out, and
                // the text of a parsed query parses.
                let y =
                    Expr::CompoundIdentifier(vec![Ident::new(DERIVED), Ident::new(DERIVED_VALUE)]);
                let sql = format!(
                    "SELECT 1 FROM ({subquery}) AS {DERIVED}({DERIVED_VALUE}) WHERE {}",
                    test(&y)
                );
                Parser::new(&PostgreSqlDialect {})
                    .try_with_sql(&sql)
                    .and_then(|mut p| p.parse_query())
                    .ok()
                    .map(|q| *q)
            }
        }
    }
}

/// How the EXISTS tests of `x IN (subquery)` read the subquery, and `x` as they name it;
/// `None` when the rewrite cannot take the subquery.
fn tests(x: &Expr, subquery: &Query, from: &[TableWithJoins]) -> Option<(Rows, Expr)> {
    let SetExpr::Select(inner) = subquery.body.as_ref() else {
        // A set operation (`IN (SELECT 1 UNION SELECT 2)`) is read whole when no branch
        // reads the outer row.
        return uncorrelated(&subquery.body)
            .then(|| (Rows::Derived(Box::new(subquery.clone())), x.clone()));
    };
    let own = from_names(&inner.from);
    if !reads_outer(subquery, &own) {
        return Some((Rows::Derived(Box::new(subquery.clone())), x.clone()));
    }
    let x = qualified(x, from)?;
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
        _ => return None,
    };
    if !plain || calls_a_function(&y) || qualifiers(&x).iter().any(|q| own.contains(q)) {
        return None;
    }
    Some((
        Rows::Merged {
            query: Box::new(subquery.clone()),
            y: Box::new(y),
        },
        x,
    ))
}

fn eq(left: Expr, right: Expr) -> Expr {
    Expr::BinaryOp {
        left: Box::new(left),
        op: BinaryOperator::Eq,
        right: Box::new(right),
    }
}

pub(crate) fn split_and(e: Expr) -> Vec<Expr> {
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

pub(crate) fn join_and(conjuncts: Vec<Expr>) -> Option<Expr> {
    conjuncts.into_iter().reduce(|left, right| Expr::BinaryOp {
        left: Box::new(left),
        op: BinaryOperator::And,
        right: Box::new(right),
    })
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
/// qualified with the outer query's one relation (its alias or name as written, quotes
/// kept).
fn qualified(e: &Expr, from: &[TableWithJoins]) -> Option<Expr> {
    let mut e = e.clone();
    let single = match from {
        [t] if t.joins.is_empty() => match &t.relation {
            TableFactor::Table { alias: Some(a), .. }
            | TableFactor::Derived { alias: Some(a), .. } => Some(a.name.clone()),
            TableFactor::Table {
                name, alias: None, ..
            } if name.0.len() == 1 => name.0.last().and_then(|p| p.as_ident()).cloned(),
            _ => None,
        },
        _ => None,
    };
    let mut ok = true;
    let _ = datafusion::sql::sqlparser::ast::visit_expressions_mut(&mut e, |e| {
        match e {
            Expr::Identifier(i) => match &single {
                Some(rel) => *e = Expr::CompoundIdentifier(vec![rel.clone(), i.clone()]),
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
            (
                r#"SELECT * FROM t AS "T" WHERE x NOT IN (SELECT y FROM u WHERE u.k = "T".k)"#,
                r#"SELECT * FROM t AS "T" WHERE NOT EXISTS (SELECT 1 FROM u WHERE (u.k = "T".k) AND (y = "T".x OR y IS NULL OR "T".x IS NULL))"#,
            ),
        ];
        for (sql, want) in cases {
            assert_eq!(rewritten(&WhereInSubqueries, sql), want, "{sql}");
        }
    }

    #[test]
    fn elsewhere_in_a_where_clause_in_is_written_in_three_values() {
        let cases = [
            (
                "SELECT * FROM t WHERE x NOT IN (SELECT y FROM u) OR b = 1",
                "SELECT * FROM t WHERE (CASE WHEN EXISTS (SELECT 1 FROM (SELECT y FROM u) AS __brook_in (__brook_in_value) WHERE __brook_in.__brook_in_value = x) THEN false WHEN EXISTS (SELECT 1 FROM (SELECT y FROM u) AS __brook_in (__brook_in_value) WHERE __brook_in.__brook_in_value IS NULL OR x IS NULL) THEN NULL ELSE true END) OR b = 1",
            ),
            (
                "SELECT * FROM t WHERE (x IN (SELECT y FROM u WHERE u.k = t.k)) IS NULL",
                "SELECT * FROM t WHERE ((CASE WHEN EXISTS (SELECT 1 FROM u WHERE (u.k = t.k) AND (y = t.x)) THEN true WHEN EXISTS (SELECT 1 FROM u WHERE (u.k = t.k) AND (y IS NULL OR t.x IS NULL)) THEN NULL ELSE false END)) IS NULL",
            ),
        ];
        for (sql, want) in cases {
            assert_eq!(rewritten(&WhereInSubqueries, sql), want, "{sql}");
        }
    }

    #[test]
    fn other_forms_are_left_alone() {
        for sql in [
            // top level: a semi join, and the null-aware anti join
            "SELECT * FROM t WHERE x IN (SELECT y FROM u WHERE u.k = t.k)",
            "SELECT * FROM t WHERE x NOT IN (SELECT y FROM u)",
            // a select list (EXISTS does not plan there)
            "SELECT x NOT IN (SELECT y FROM u WHERE u.k = t.k) FROM t",
            // correlated: an aggregate, grouping or limit cannot take the test in its WHERE
            "SELECT * FROM t WHERE x NOT IN (SELECT max(y) FROM u WHERE u.k = t.k)",
            "SELECT * FROM t WHERE x NOT IN (SELECT y FROM u WHERE u.k = t.k GROUP BY y)",
            "SELECT * FROM t WHERE x NOT IN (SELECT y FROM u WHERE u.k = t.k LIMIT 1)",
            // an unqualified x over two relations could name either
            "SELECT * FROM t, v WHERE x NOT IN (SELECT y FROM u WHERE u.k = t.k)",
            // x names the subquery's own relation
            "SELECT * FROM t AS u WHERE u.x NOT IN (SELECT y FROM u WHERE u.k = t.k)",
        ] {
            assert_eq!(rewritten(&WhereInSubqueries, sql), sql, "{sql}");
        }
    }
}
