//! A row compared with a subquery: `(a, b) IN (SELECT x, y ...)`, `NOT IN`, `= ANY`.
//!
//! DataFusion compares one value with a subquery ("The subquery should only return one
//! column"). SQL compares rows column by column, in three values: `(a, b) = (x, y)` is
//! `a = x AND b = y`, and `(a, b) IN (q)` is true when some row of `q` is equal, else NULL
//! when some row's comparison is NULL, else false (`NOT IN` is its negation). So:
//!
//! - as a top-level conjunct of a WHERE clause, which keeps only the rows whose condition is
//!   true, `(a, b) IN (q)` keeps the rows of `EXISTS (SELECT 1 FROM (q) AS r (v1, v2) WHERE
//!   a = v1 AND b = v2)`, a semi join;
//! - anywhere else (a select list, under `OR`/`NOT`, HAVING, and every `NOT IN`) it is
//!   `CASE WHEN EXISTS (... equal) THEN true WHEN EXISTS (... (equal) IS NULL) THEN NULL
//!   ELSE false END`, true and false swapped for `NOT IN`; the second EXISTS runs only when
//!   no row is equal, so it finds exactly the rows whose comparison is unknown.
//!
//! The subquery must not read the outer row (it becomes a derived table) and must show its
//! width (no `*`); the row must be columns and constants (it is evaluated inside the
//! EXISTS). Other forms keep DataFusion's plan, whose error names the comparison (0A000).

use crate::quantified_subquery::{define_in, define_in_select_list};
use crate::select_list_subqueries::uncorrelated;
use crate::where_in_subquery::{join_and, split_and};
use datafusion::sql::sqlparser::ast::{Expr, Query, Select, SelectItem, SetExpr, Statement};
use datafusion::sql::sqlparser::dialect::PostgreSqlDialect;
use datafusion::sql::sqlparser::parser::Parser;
use datafusion_pg_catalog::sql::rules::SqlStatementRewriteRule;

/// The rewrite rule (after `QuantifiedSubqueries`, which makes `= ANY` an `IN`).
#[derive(Debug)]
pub struct RowInSubqueries;

impl SqlStatementRewriteRule for RowInSubqueries {
    fn rewrite(&self, mut s: Statement) -> Statement {
        crate::pg_functions::rewrite_selects(&mut s, rewrite_select);
        s
    }
}

/// The derived table the EXISTS tests read the subquery as, and its columns' prefix.
const ROWS: &str = "__brook_row";
const VALUE: &str = "__brook_row_v";

fn rewrite_select(s: &mut Select) {
    if let Some(selection) = s.selection.take() {
        let conjuncts = split_and(selection)
            .into_iter()
            .map(|mut c| match row_test(&c) {
                Some(RowTest {
                    row,
                    subquery,
                    negated: false,
                }) => exists(&row, subquery, &equal(&row)).unwrap_or(c),
                _ => {
                    define_in(&mut c, &three_valued);
                    c
                }
            })
            .collect();
        s.selection = join_and(conjuncts);
    }
    define_in_select_list(&mut s.projection, &three_valued);
    if let Some(h) = s.having.as_mut() {
        define_in(h, &three_valued);
    }
}

/// `e` as a row comparison in SQL's three values, when it is one this rewrite takes.
fn three_valued(e: &Expr) -> Option<Expr> {
    row_test(e).and_then(|t| t.three_valued())
}

/// A `(a, b, ...) [NOT] IN (subquery)` this rewrite takes.
struct RowTest<'a> {
    row: Vec<Expr>,
    subquery: &'a Query,
    negated: bool,
}

impl RowTest<'_> {
    /// The comparison as a CASE over two EXISTS tests (see the module's comment).
    fn three_valued(&self) -> Option<Expr> {
        let equal = equal(&self.row);
        let found = exists(&self.row, self.subquery, &equal)?;
        let unknown = exists(&self.row, self.subquery, &format!("({equal}) IS NULL"))?;
        let (yes, no) = if self.negated {
            ("false", "true")
        } else {
            ("true", "false")
        };
        parse_expr(&format!(
            "(CASE WHEN {found} THEN {yes} WHEN {unknown} THEN NULL ELSE {no} END)"
        ))
    }
}

fn row_test(e: &Expr) -> Option<RowTest<'_>> {
    let Expr::InSubquery {
        expr,
        subquery,
        negated,
    } = e
    else {
        return None;
    };
    let Expr::Tuple(row) = expr.as_ref() else {
        return None;
    };
    if row.len() < 2
        || !row.iter().all(crate::quantified_subquery::plain)
        || width(&subquery.body) != Some(row.len())
        || !uncorrelated(&subquery.body)
    {
        return None;
    }
    Some(RowTest {
        row: row.clone(),
        subquery,
        negated: *negated,
    })
}

/// `a = v1 AND b = v2 ...`, the row against the derived table's columns.
fn equal(row: &[Expr]) -> String {
    row.iter()
        .enumerate()
        .map(|(i, a)| format!("({a}) = {ROWS}.{VALUE}{}", i + 1))
        .collect::<Vec<_>>()
        .join(" AND ")
}

/// `EXISTS (SELECT 1 FROM (subquery) AS __brook_row (v1, v2, ...) WHERE test)`.
fn exists(row: &[Expr], subquery: &Query, test: &str) -> Option<Expr> {
    let columns = (1..=row.len())
        .map(|i| format!("{VALUE}{i}"))
        .collect::<Vec<_>>()
        .join(", ");
    // Written as text and parsed: the text of a parsed query parses, and a Select has many
    // fields to spell out.
    parse_expr(&format!(
        "EXISTS (SELECT 1 FROM ({subquery}) AS {ROWS} ({columns}) WHERE {test})"
    ))
}

fn parse_expr(sql: &str) -> Option<Expr> {
    Parser::new(&PostgreSqlDialect {})
        .try_with_sql(sql)
        .and_then(|mut p| p.parse_expr())
        .ok()
}

/// The number of columns a query body visibly gives (its leftmost SELECT's list without
/// `*`); `None` when not visible.
fn width(body: &SetExpr) -> Option<usize> {
    match body {
        SetExpr::Select(s) => s
            .projection
            .iter()
            .all(|i| {
                matches!(
                    i,
                    SelectItem::UnnamedExpr(_) | SelectItem::ExprWithAlias { .. }
                )
            })
            .then_some(s.projection.len()),
        SetExpr::SetOperation { left, .. } => width(left),
        SetExpr::Query(q) => width(&q.body),
        SetExpr::Values(v) => v.rows.first().map(|r| r.content.len()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::rewritten;

    #[test]
    fn a_row_in_a_subquery_is_tested_column_by_column() {
        let cases = [
            // a top-level conjunct of WHERE: a semi join
            (
                "SELECT * FROM t WHERE (k, v) IN (SELECT a, b FROM u) AND k > 0",
                "SELECT * FROM t WHERE EXISTS (SELECT 1 FROM (SELECT a, b FROM u) AS __brook_row (__brook_row_v1, __brook_row_v2) WHERE (k) = __brook_row.__brook_row_v1 AND (v) = __brook_row.__brook_row_v2) AND k > 0",
            ),
            // in a select list, three-valued, named as PostgreSQL names it
            (
                "SELECT (k, 1) NOT IN (SELECT a, b FROM u) FROM t",
                "SELECT (CASE WHEN EXISTS (SELECT 1 FROM (SELECT a, b FROM u) AS __brook_row (__brook_row_v1, __brook_row_v2) WHERE (k) = __brook_row.__brook_row_v1 AND (1) = __brook_row.__brook_row_v2) THEN false WHEN EXISTS (SELECT 1 FROM (SELECT a, b FROM u) AS __brook_row (__brook_row_v1, __brook_row_v2) WHERE ((k) = __brook_row.__brook_row_v1 AND (1) = __brook_row.__brook_row_v2) IS NULL) THEN NULL ELSE true END) AS \"?column?\" FROM t",
            ),
            // a subquery of unseen width, a correlated one and a row of calls stay as written
            (
                "SELECT * FROM t WHERE (k, v) IN (SELECT * FROM u) OR (k, v) IN (SELECT a, t.v FROM u) OR (f(k), v) IN (SELECT a, b FROM u)",
                "SELECT * FROM t WHERE (k, v) IN (SELECT * FROM u) OR (k, v) IN (SELECT a, t.v FROM u) OR (f(k), v) IN (SELECT a, b FROM u)",
            ),
        ];
        for (sql, want) in cases {
            assert_eq!(rewritten(&RowInSubqueries, sql), want, "{sql}");
        }
    }
}
