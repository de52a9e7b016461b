//! PostgreSQL's names for the unaliased outputs of derived tables and CTEs: `SELECT s.count
//! FROM (SELECT count(*) FROM t) s`, `WITH x AS (SELECT max(a) FROM t) SELECT max FROM x`.
//!
//! DataFusion names such a column after its expression (`count(*)`, `max(t.a)`), so the
//! outer query's reference to PostgreSQL's name was 42703 (and `SELECT *` showed
//! DataFusion's name). This rewrite gives each unaliased expression of a nested query's
//! select list the alias PostgreSQL's `FigureColname` computes (`count`, `max`, `?column?`).
//! A name another output of the same select list has is left alone (DataFusion needs the
//! names of one select list apart, PostgreSQL does not), and so is a select list with a
//! `*`, whose columns are not known here. The statement's own outputs are named by the wire
//! layer (`rewrite::output_names`).

use crate::rewrite::figure_colname;
use brook_common::ident::ident_name as norm;
use datafusion::sql::sqlparser::ast::{
    Expr, Ident, Query, SelectItem, SetExpr, Statement, Value, VisitMut, VisitorMut,
};
use std::ops::ControlFlow;

/// Name the unaliased outputs of every query nested in `stmt`.
pub fn name_inner_outputs(stmt: &mut Statement) {
    let top = match stmt {
        // The statement's own select list is named on the wire.
        Statement::Query(q) => Some(q.as_ref() as *const Query),
        _ => None,
    };
    let _ = stmt.visit(&mut InnerNames { top });
}

struct InnerNames {
    /// The statement's own query, left to the wire layer.
    top: Option<*const Query>,
}

impl VisitorMut for InnerNames {
    type Break = ();

    fn pre_visit_query(&mut self, q: &mut Query) -> ControlFlow<()> {
        if self.top != Some(q as *const Query) {
            name_set_expr(&mut q.body);
        }
        ControlFlow::Continue(())
    }
}

fn name_set_expr(body: &mut SetExpr) {
    match body {
        SetExpr::Select(s) => name_select_list(&mut s.projection),
        SetExpr::SetOperation { left, .. } => name_set_expr(left),
        SetExpr::Query(q) => name_set_expr(&mut q.body),
        _ => {}
    }
}

/// The name an item of a select list has (`None` for a wildcard).
fn item_name(item: &SelectItem) -> Option<String> {
    match item {
        SelectItem::UnnamedExpr(e) => Some(figure_colname(e).unwrap_or_else(|| "?column?".into())),
        SelectItem::ExprWithAlias { alias, .. } => Some(norm(alias)),
        _ => None,
    }
}

fn name_select_list(projection: &mut [SelectItem]) {
    let names: Vec<Option<String>> = projection.iter().map(item_name).collect();
    if names.iter().any(Option::is_none) {
        return;
    }
    for (i, item) in projection.iter_mut().enumerate() {
        let SelectItem::UnnamedExpr(e) = item else {
            continue;
        };
        if matches!(e, Expr::Identifier(_) | Expr::CompoundIdentifier(_)) {
            continue;
        }
        let Some(name) = names[i].clone() else {
            continue;
        };
        let unique = names
            .iter()
            .enumerate()
            .all(|(j, other)| j == i || other.as_deref() != Some(name.as_str()));
        if !unique {
            continue;
        }
        let expr = std::mem::replace(e, Expr::value(Value::Null));
        *item = SelectItem::ExprWithAlias {
            expr,
            alias: Ident::with_quote('"', name),
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::sql::sqlparser::dialect::PostgreSqlDialect;
    use datafusion::sql::sqlparser::parser::Parser;

    fn named(sql: &str) -> String {
        let mut stmt = Parser::parse_sql(&PostgreSqlDialect {}, sql)
            .expect("parses")
            .remove(0);
        name_inner_outputs(&mut stmt);
        stmt.to_string()
    }

    #[test]
    fn derived_tables_and_ctes_get_postgresqls_names() {
        assert_eq!(
            named("SELECT s.count FROM (SELECT count(*) FROM t) s"),
            "SELECT s.count FROM (SELECT count(*) AS \"count\" FROM t) s"
        );
        assert_eq!(
            named("WITH x AS (SELECT max(a), a + 1 FROM t) SELECT * FROM x"),
            "WITH x AS (SELECT max(a) AS \"max\", a + 1 AS \"?column?\" FROM t) SELECT * FROM x"
        );
    }

    #[test]
    fn the_statements_own_outputs_and_repeated_names_are_left_alone() {
        assert_eq!(named("SELECT count(*) FROM t"), "SELECT count(*) FROM t");
        assert_eq!(
            named("SELECT * FROM (SELECT 1, 2) q"),
            "SELECT * FROM (SELECT 1, 2) q"
        );
        assert_eq!(
            named("SELECT * FROM (SELECT *, count(*) OVER () FROM t) q"),
            "SELECT * FROM (SELECT *, count(*) OVER () FROM t) q"
        );
    }
}
