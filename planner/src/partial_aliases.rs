//! Column aliases that name only the first columns of a FROM item or a `WITH` query:
//! `(VALUES (1, 2)) v(a)`, `(SELECT x, y FROM t) s(a)`, `WITH w(a) AS (SELECT 1, 2)`.
//! PostgreSQL renames the first columns and keeps the others' names; DataFusion requires a
//! name for every column (an internal error before). This rule completes the list with the
//! names the other columns have: `columnN` for VALUES, the select list's names (as
//! PostgreSQL's `FigureColname` gives them) for a query. A query whose select list holds a
//! `*` is completed by the server, which knows what the `*` expands to, as are named
//! relations (`session/partial_aliases.rs`).

use crate::output_names::{figure_colname, folded};
use datafusion::sql::sqlparser::ast::{
    Ident, Query, SelectItem, SetExpr, Statement, TableAlias, TableAliasColumnDef, TableFactor,
    VisitMut, VisitorMut,
};
use datafusion_pg_catalog::sql::rules::SqlStatementRewriteRule;
use std::ops::ControlFlow;

/// The rewrite rule.
#[derive(Debug)]
pub struct PartialAliases;

impl SqlStatementRewriteRule for PartialAliases {
    fn rewrite(&self, mut s: Statement) -> Statement {
        let _ = s.visit(&mut Completer);
        s
    }
}

struct Completer;

impl VisitorMut for Completer {
    type Break = ();

    fn pre_visit_query(&mut self, q: &mut Query) -> ControlFlow<()> {
        if let Some(with) = q.with.as_mut() {
            for cte in &mut with.cte_tables {
                if let Some(names) = output_names(&cte.query) {
                    complete(&mut cte.alias, &names);
                }
            }
        }
        ControlFlow::Continue(())
    }

    fn pre_visit_table_factor(&mut self, t: &mut TableFactor) -> ControlFlow<()> {
        if let TableFactor::Derived {
            subquery,
            alias: Some(alias),
            ..
        } = t
        {
            if let Some(names) = output_names(subquery) {
                complete(alias, &names);
            }
        }
        ControlFlow::Continue(())
    }
}

/// `alias` with names for the columns after those it names, taken from `names` (the
/// source's column names, in order). Unchanged when it names none or all of them, or when
/// the names would repeat (PostgreSQL allows that, DataFusion does not: the statement is
/// refused with 0A000).
pub fn complete(alias: &mut TableAlias, names: &[String]) {
    let given = alias.columns.len();
    if given == 0 || given >= names.len() {
        return;
    }
    let mut all: Vec<String> = alias.columns.iter().map(|c| folded(&c.name)).collect();
    all.extend(names[given..].iter().cloned());
    let mut unique = all.clone();
    unique.sort();
    unique.dedup();
    if unique.len() < all.len() {
        return;
    }
    for name in &names[given..] {
        alias.columns.push(TableAliasColumnDef {
            name: Ident::with_quote('"', name.clone()),
            data_type: None,
        });
    }
}

/// The names of a query's output columns, `None` when they are not known from its text
/// (a `*` in its select list).
fn output_names(q: &Query) -> Option<Vec<String>> {
    match q.body.as_ref() {
        SetExpr::Values(v) => {
            let width = v.rows.first()?.content.len();
            Some((1..=width).map(|i| format!("column{i}")).collect())
        }
        SetExpr::Query(inner) => output_names(inner),
        body => select_names(body),
    }
}

/// The select list's names of the leftmost SELECT of a set operation (which names its
/// columns).
fn select_names(body: &SetExpr) -> Option<Vec<String>> {
    let select = match body {
        SetExpr::Select(s) => s,
        SetExpr::SetOperation { left, .. } => return select_names(left),
        SetExpr::Query(q) => return output_names(q),
        _ => return None,
    };
    select
        .projection
        .iter()
        .map(|item| match item {
            SelectItem::UnnamedExpr(e) => {
                Some(figure_colname(e).unwrap_or_else(|| "?column?".into()))
            }
            SelectItem::ExprWithAlias { alias, .. } => Some(folded(alias)),
            _ => None,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::sql::sqlparser::dialect::PostgreSqlDialect;
    use datafusion::sql::sqlparser::parser::Parser;

    fn rewritten(sql: &str) -> String {
        let s = Parser::parse_sql(&PostgreSqlDialect {}, sql)
            .unwrap()
            .remove(0);
        PartialAliases.rewrite(s).to_string()
    }

    #[test]
    fn the_unnamed_columns_keep_their_names() {
        assert_eq!(
            rewritten("SELECT * FROM (VALUES (1, 2, 3)) v(a)"),
            r#"SELECT * FROM (VALUES (1, 2, 3)) v (a, "column2", "column3")"#
        );
        assert_eq!(
            rewritten("SELECT * FROM (SELECT x, y AS z, 1, count(*) FROM t) s(a)"),
            r#"SELECT * FROM (SELECT x, y AS z, 1, count(*) FROM t) s (a, "z", "?column?", "count")"#
        );
        assert_eq!(
            rewritten("WITH w(a) AS (SELECT 1 AS p, 2 AS q UNION SELECT 3, 4) SELECT * FROM w"),
            r#"WITH w (a, "q") AS (SELECT 1 AS p, 2 AS q UNION SELECT 3, 4) SELECT * FROM w"#
        );
    }

    #[test]
    fn complete_or_unknown_lists_stay() {
        for sql in [
            "SELECT * FROM (VALUES (1, 2)) AS v (a, b)",
            "SELECT * FROM (VALUES (1, 2)) AS v",
            "SELECT * FROM (SELECT *, 1 FROM t) AS s (a)",
            "SELECT * FROM t AS s (a)",
            "SELECT * FROM (SELECT 1, 2, 3) AS s (a)",
        ] {
            assert_eq!(rewritten(sql), sql);
        }
    }
}
