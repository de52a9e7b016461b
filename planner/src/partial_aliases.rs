//! Column aliases that name only the first columns of a FROM item or a `WITH` query:
//! `(VALUES (1, 2)) v(a)`, `(SELECT x, y FROM t) s(a)`, `WITH w(a) AS (SELECT 1, 2)`.
//! PostgreSQL renames the first columns and keeps the others' names; DataFusion requires a
//! name for every column (an internal error before). This rule completes the list with the
//! names the other columns have: `columnN` for VALUES, the select list's names (as
//! PostgreSQL's `FigureColname` gives them) for a query. A query whose select list holds a
//! `*` is left as it is (0A000). Named relations (tables, streams, views) are completed
//! with their columns as the catalog has them ([`complete_table_aliases`]: by the server
//! when a statement runs, and each time a view is planned).

use crate::output_names::{figure_colname, folded};
use datafusion::common::TableReference;
use datafusion::prelude::SessionContext;
use datafusion::sql::sqlparser::ast::{
    Ident, ObjectName, ObjectNamePart, Query, SelectItem, SetExpr, Statement, TableAlias,
    TableAliasColumnDef, TableFactor, VisitMut, VisitorMut,
};
use datafusion_pg_catalog::sql::rules::SqlStatementRewriteRule;
use std::collections::{HashMap, HashSet};
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
                    name_repeated_columns(&mut cte.query, &cte.alias, &names);
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
                name_repeated_columns(subquery, alias, &names);
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

/// A select list naming two columns alike (`(SELECT k, k FROM t) x(a, b)`) takes the
/// alias list's names as its own: PostgreSQL renames the columns by position, and
/// DataFusion cannot plan the select list before the renaming (XX000 before).
fn name_repeated_columns(q: &mut Query, alias: &TableAlias, names: &[String]) {
    let mut unique = names.to_vec();
    unique.sort();
    unique.dedup();
    if unique.len() == names.len() || alias.columns.len() < names.len() {
        return;
    }
    let Some(select) = leftmost_select(&mut q.body) else {
        return;
    };
    for (item, column) in select.projection.iter_mut().zip(&alias.columns) {
        let expr = match item {
            SelectItem::UnnamedExpr(e) | SelectItem::ExprWithAlias { expr: e, .. } => e.clone(),
            _ => return,
        };
        *item = SelectItem::ExprWithAlias {
            expr,
            alias: column.name.clone(),
        };
    }
}

/// The SELECT that names a query body's columns (the leftmost of a set operation).
fn leftmost_select(body: &mut SetExpr) -> Option<&mut datafusion::sql::sqlparser::ast::Select> {
    match body {
        SetExpr::Select(s) => Some(s),
        SetExpr::SetOperation { left, .. } => leftmost_select(left),
        SetExpr::Query(q) => leftmost_select(&mut q.body),
        _ => None,
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

/// Complete the column alias lists of the named FROM items of `s`, with `columns` telling
/// a relation's columns (None: not a relation it knows). A view's stored query is
/// completed so too each time it is planned, so that a column added to its input later
/// keeps its name.
pub fn complete_table_aliases(
    s: &mut Statement,
    columns: &dyn Fn(&ObjectName) -> Option<Vec<String>>,
) {
    let mut completer = RelationCompleter {
        columns,
        ctes: HashSet::new(),
    };
    let _ = s.visit(&mut completer);
}

struct RelationCompleter<'a> {
    columns: &'a dyn Fn(&ObjectName) -> Option<Vec<String>>,
    /// `WITH` names seen so far: a FROM item naming one is not the catalog's relation.
    ctes: HashSet<String>,
}

impl VisitorMut for RelationCompleter<'_> {
    type Break = ();

    fn pre_visit_query(&mut self, q: &mut Query) -> ControlFlow<()> {
        if let Some(with) = &q.with {
            for cte in &with.cte_tables {
                self.ctes.insert(folded(&cte.alias.name));
            }
        }
        ControlFlow::Continue(())
    }

    fn pre_visit_table_factor(&mut self, t: &mut TableFactor) -> ControlFlow<()> {
        let TableFactor::Table {
            name,
            args: None,
            alias: Some(alias),
            ..
        } = t
        else {
            return ControlFlow::Continue(());
        };
        if alias.columns.is_empty() {
            return ControlFlow::Continue(());
        }
        if let [ObjectNamePart::Identifier(only)] = name.0.as_slice() {
            if self.ctes.contains(&folded(only)) {
                return ControlFlow::Continue(());
            }
        }
        if let Some(columns) = (self.columns)(name) {
            complete(alias, &columns);
        }
        ControlFlow::Continue(())
    }
}

/// Complete as [`complete_table_aliases`] does, with the relations `ctx` resolves: a
/// materialized view's query is planned with its database's context, also after a column
/// was added to its input.
pub async fn complete_in_context(s: &mut Statement, ctx: &SessionContext) {
    let mut names = Vec::new();
    let _ = s.visit(&mut AliasedRelations(&mut names));
    if names.is_empty() {
        return;
    }
    let mut known: HashMap<String, Vec<String>> = HashMap::new();
    for name in names {
        let parts: Option<Vec<String>> = name.0.iter().map(|p| p.as_ident().map(folded)).collect();
        let reference = match parts.as_deref() {
            Some([r]) => TableReference::bare(r.clone()),
            Some([s, r]) => TableReference::partial(s.clone(), r.clone()),
            _ => continue,
        };
        if let Ok(table) = ctx.table_provider(reference).await {
            let columns = table
                .schema()
                .fields()
                .iter()
                .map(|f| f.name().clone())
                .collect();
            known.insert(name.to_string(), columns);
        }
    }
    complete_table_aliases(s, &|name| known.get(&name.to_string()).cloned());
}

/// The names of the relations in FROM that carry a column alias list.
struct AliasedRelations<'a>(&'a mut Vec<ObjectName>);

impl VisitorMut for AliasedRelations<'_> {
    type Break = ();

    fn pre_visit_table_factor(&mut self, t: &mut TableFactor) -> ControlFlow<()> {
        if let TableFactor::Table {
            name,
            args: None,
            alias: Some(alias),
            ..
        } = t
        {
            if !alias.columns.is_empty() {
                self.0.push(name.clone());
            }
        }
        ControlFlow::Continue(())
    }
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
    fn repeated_names_take_the_alias_list() {
        assert_eq!(
            rewritten("SELECT * FROM (SELECT k, k FROM t) AS x (a, b)"),
            "SELECT * FROM (SELECT k AS a, k AS b FROM t) AS x (a, b)"
        );
        assert_eq!(
            rewritten("WITH w(a) AS (SELECT k, t.k FROM t UNION ALL SELECT 1, 2) SELECT * FROM w"),
            r#"WITH w (a, "k") AS (SELECT k AS a, t.k AS "k" FROM t UNION ALL SELECT 1, 2) SELECT * FROM w"#
        );
        // Without a list for each repeated name there is nothing to rename them to.
        assert_eq!(
            rewritten("SELECT * FROM (SELECT k, k FROM t) AS x"),
            "SELECT * FROM (SELECT k, k FROM t) AS x"
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
