//! `ARRAY(SELECT e FROM ... [ORDER BY ...])`, PostgreSQL's array constructor from a subquery,
//! as the scalar subquery `(SELECT array_agg(e ORDER BY ...) FROM ...)`.
//!
//! DataFusion has no such constructor ("Invalid function 'array'"); psql's `\du`, `\dp` and
//! `\d+`, and pg_dump, use it, often correlated with the outer row. As an aggregate the
//! subquery is one DataFusion decorrelates (by equality). The one difference: over no rows
//! `array_agg` is NULL where PostgreSQL's constructor gives an empty array.
//!
//! Scope: a subquery that is one SELECT with one output expression and no DISTINCT, GROUP
//! BY, HAVING, LIMIT or FETCH; others are left alone (and refused by DataFusion as before).

use datafusion::sql::sqlparser::ast::{
    Expr, FunctionArguments, GroupByExpr, OrderByKind, Query, SelectItem, SetExpr, Statement,
};
use datafusion::sql::sqlparser::dialect::PostgreSqlDialect;
use datafusion::sql::sqlparser::parser::Parser;
use datafusion_pg_catalog::sql::rules::SqlStatementRewriteRule;

/// The rewrite rule.
#[derive(Debug)]
pub struct ArraySubquery;

impl SqlStatementRewriteRule for ArraySubquery {
    fn rewrite(&self, mut s: Statement) -> Statement {
        crate::pg_functions::rewrite_expressions(&mut s, |expr| {
            if let Some(q) = array_constructor_query(expr) {
                if let Some(aggregated) = aggregated(q) {
                    *expr = Expr::Subquery(Box::new(aggregated));
                }
            }
        });
        s
    }
}

/// The subquery of an `ARRAY(subquery)` call.
fn array_constructor_query(expr: &Expr) -> Option<&Query> {
    let Expr::Function(f) = expr else {
        return None;
    };
    let [name] = f.name.0.as_slice() else {
        return None;
    };
    if !name.as_ident()?.value.eq_ignore_ascii_case("array") {
        return None;
    }
    match &f.args {
        FunctionArguments::Subquery(q) => Some(q),
        _ => None,
    }
}

/// `q` with its one output expression aggregated by `array_agg` in `q`'s order.
fn aggregated(q: &Query) -> Option<Query> {
    if q.limit_clause.is_some() || q.fetch.is_some() || q.with.is_some() {
        return None;
    }
    let SetExpr::Select(select) = q.body.as_ref() else {
        return None;
    };
    let no_grouping = match &select.group_by {
        GroupByExpr::Expressions(e, m) => e.is_empty() && m.is_empty(),
        GroupByExpr::All(_) => false,
    };
    if select.distinct.is_some() || select.having.is_some() || !no_grouping {
        return None;
    }
    let [item] = select.projection.as_slice() else {
        return None;
    };
    let (value, alias) = match item {
        SelectItem::UnnamedExpr(e) => (e, None),
        SelectItem::ExprWithAlias { expr, alias } => (expr, Some(alias.clone())),
        _ => return None,
    };
    let order = match q.order_by.as_ref().map(|o| &o.kind) {
        None => String::new(),
        Some(OrderByKind::Expressions(items)) => format!(
            " ORDER BY {}",
            items
                .iter()
                .map(|o| {
                    // `ORDER BY 1` and `ORDER BY alias` name the output column: its value.
                    let mut o = o.clone();
                    let names_output = match &o.expr {
                        Expr::Value(v) => v.to_string() == "1",
                        Expr::Identifier(i) => alias.as_ref().is_some_and(|a| a.value == i.value),
                        _ => false,
                    };
                    if names_output {
                        o.expr = value.clone();
                    }
                    o.to_string()
                })
                .collect::<Vec<_>>()
                .join(", ")
        ),
        Some(OrderByKind::All(_)) => return None,
    };
    let call = Parser::new(&PostgreSqlDialect {})
        .try_with_sql(&format!("array_agg({value}{order})"))
        .ok()?
        .parse_expr()
        .ok()?;
    let mut select = select.clone();
    select.projection = vec![match alias {
        Some(alias) => SelectItem::ExprWithAlias { expr: call, alias },
        None => SelectItem::UnnamedExpr(call),
    }];
    let mut out = q.clone();
    out.body = Box::new(SetExpr::Select(select));
    out.order_by = None;
    Some(out)
}

#[cfg(test)]
mod tests {
    use crate::parser::parse_one;

    fn sql(text: &str) -> String {
        parse_one(text).unwrap().as_sql().unwrap().to_string()
    }

    #[test]
    fn the_constructor_becomes_an_ordered_array_agg() {
        assert_eq!(
            sql("SELECT r.name, ARRAY(SELECT m.role FROM m WHERE m.member = r.id ORDER BY 1) AS roles FROM r"),
            "SELECT r.name, (SELECT array_agg(m.role ORDER BY m.role) FROM m WHERE m.member = r.id) AS roles FROM r"
        );
    }

    #[test]
    fn a_limited_subquery_is_left_alone() {
        let out = sql("SELECT ARRAY(SELECT x FROM t LIMIT 2)");
        assert!(out.contains("ARRAY(SELECT x FROM t LIMIT 2)"), "{out}");
    }
}
