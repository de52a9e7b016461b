//! Partial and final aggregation across cluster nodes for a materialized view maintained
//! per partition (`WITH (distributed = true)`) whose groups are not partition-local: each
//! node maintains the view's query over the partitions it owns — partial aggregates, one
//! row per group it has rows of — and a read merges the nodes' rows per group with the
//! final aggregates: `count` and `sum` add up, `min` and `max` take the least and the
//! greatest (`SELECT site, count(*) AS n FROM clicks GROUP BY site` over a stream
//! partitioned by user: every owner holds part of each site's rows).
//!
//! This module decides on the view's query text whether it merges so, and gives the query
//! that merges the gathered rows. It does when the query is one SELECT of one FROM item
//! (the stream, or a `TUMBLE`/`HOP` of it), without DISTINCT, HAVING, ORDER BY, LIMIT,
//! window functions or subqueries, grouped by columns that all appear in the select list
//! as themselves, whose other items are `count(*)`, `count(x)`, `sum(x)`, `min(x)` or
//! `max(x)` (no DISTINCT, FILTER or ORDER BY inside), with distinct output names. Other
//! aggregates (`avg`, `count(DISTINCT x)`, percentiles) need their partial state, not
//! their value: such views are maintained whole, as before, unless partition-local.

use datafusion::sql::sqlparser::ast::{
    Expr, FunctionArg, FunctionArgExpr, FunctionArgumentClause, FunctionArguments, GroupByExpr,
    Query, SelectItem, SetExpr, TableFactor,
};
use std::collections::HashSet;

/// The catalog option holding the query that merges the rows gathered from the nodes (a
/// global synopsis', or a view's whose partial aggregates merge).
pub const MERGE_OPTION: &str = "merge";
/// The relation a merge query reads: the partial rows gathered from the nodes.
pub const GATHERED: &str = "gathered";

/// How one output column of the view merges.
enum Output {
    /// A grouping column: rows with equal keys merge.
    Key,
    /// An aggregate's value, merged by this final aggregate.
    Final(&'static str),
}

/// The query merging the nodes' rows of a view defined by `query`, None when the view's
/// rows do not merge so (see the module's comment).
pub fn merge_query(query: &Query) -> Option<String> {
    if query.with.is_some()
        || query.order_by.is_some()
        || query.limit_clause.is_some()
        || query.fetch.is_some()
    {
        return None;
    }
    let SetExpr::Select(select) = query.body.as_ref() else {
        return None;
    };
    let one_item = select.from.len() == 1 && select.from[0].joins.is_empty();
    if select.distinct.is_some()
        || select.having.is_some()
        || !select.named_window.is_empty()
        || select.qualify.is_some()
        || !one_item
        || !reads_a_relation(&select.from[0].relation)
    {
        return None;
    }
    let GroupByExpr::Expressions(groups, modifiers) = &select.group_by else {
        return None;
    };
    if !modifiers.is_empty() {
        return None;
    }
    let mut keys = HashSet::new();
    for g in groups {
        keys.insert(column_name(g)?);
    }
    let mut outputs: Vec<(String, Output)> = Vec::new();
    for item in &select.projection {
        let (expr, alias) = match item {
            SelectItem::UnnamedExpr(e) => (e, None),
            SelectItem::ExprWithAlias { expr, alias } => {
                (expr, Some(crate::output_names::folded(alias)))
            }
            _ => return None,
        };
        let (name, output) = match column_name(expr) {
            Some(column) if keys.contains(&column) => (alias.unwrap_or(column), Output::Key),
            Some(_) => return None,
            None => {
                let (function, fin) = partial_aggregate(expr)?;
                (alias.unwrap_or(function), Output::Final(fin))
            }
        };
        outputs.push((name, output));
    }
    // Every grouping column must be an output, or groups would merge that differ in it.
    let shown: HashSet<String> = select
        .projection
        .iter()
        .filter_map(|item| match item {
            SelectItem::UnnamedExpr(e) | SelectItem::ExprWithAlias { expr: e, .. } => {
                column_name(e)
            }
            _ => None,
        })
        .collect();
    if keys.iter().any(|k| !shown.contains(k)) {
        return None;
    }
    let mut names = HashSet::new();
    if !outputs.iter().all(|(n, _)| names.insert(n.clone())) {
        return None;
    }
    Some(merge_sql(&outputs))
}

/// The merge query over [`GATHERED`] for these outputs, in their order.
fn merge_sql(outputs: &[(String, Output)]) -> String {
    let quote = |n: &str| format!("\"{}\"", n.replace('"', "\"\""));
    let select: Vec<String> = outputs
        .iter()
        .map(|(name, output)| match output {
            Output::Key => quote(name),
            Output::Final(f) => format!("{f}({}) AS {}", quote(name), quote(name)),
        })
        .collect();
    let keys: Vec<String> = outputs
        .iter()
        .filter(|(_, o)| matches!(o, Output::Key))
        .map(|(n, _)| quote(n))
        .collect();
    let mut sql = format!("SELECT {} FROM {GATHERED}", select.join(", "));
    if !keys.is_empty() {
        sql.push_str(&format!(" GROUP BY {}", keys.join(", ")));
    }
    sql
}

/// Whether the FROM item is a relation by name, or a `TUMBLE`/`HOP` table function over
/// one (windows by time: the same on every node).
fn reads_a_relation(t: &TableFactor) -> bool {
    match t {
        TableFactor::Table { name, args, .. } => match args {
            None => true,
            Some(_) => {
                let function = name.to_string().to_ascii_lowercase();
                function == "tumble" || function == "hop"
            }
        },
        _ => false,
    }
}

/// A column's name as the view's output names it (folded unless quoted).
fn column_name(e: &Expr) -> Option<String> {
    match e {
        Expr::Identifier(i) => Some(crate::output_names::folded(i)),
        Expr::CompoundIdentifier(parts) => parts.last().map(crate::output_names::folded),
        Expr::Nested(inner) => column_name(inner),
        _ => None,
    }
}

/// An aggregate whose partial values merge: its output name and the final aggregate.
fn partial_aggregate(e: &Expr) -> Option<(String, &'static str)> {
    let Expr::Function(f) = e else {
        return None;
    };
    if f.filter.is_some() || f.over.is_some() || !f.within_group.is_empty() {
        return None;
    }
    let FunctionArguments::List(list) = &f.args else {
        return None;
    };
    if list.duplicate_treatment.is_some()
        || list
            .clauses
            .iter()
            .any(|c| matches!(c, FunctionArgumentClause::OrderBy(_)))
    {
        return None;
    }
    let name = f.name.to_string().to_ascii_lowercase();
    let fin = match (name.as_str(), list.args.as_slice()) {
        ("count", [FunctionArg::Unnamed(FunctionArgExpr::Wildcard)]) => "sum",
        ("count", [FunctionArg::Unnamed(FunctionArgExpr::Expr(_))]) => "sum",
        ("sum", [FunctionArg::Unnamed(FunctionArgExpr::Expr(_))]) => "sum",
        ("min", [FunctionArg::Unnamed(FunctionArgExpr::Expr(_))]) => "min",
        ("max", [FunctionArg::Unnamed(FunctionArgExpr::Expr(_))]) => "max",
        _ => return None,
    };
    Some((name, fin))
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::sql::sqlparser::ast::Statement;

    fn merge(sql: &str) -> Option<String> {
        let stmt = crate::parser::parse_one(sql).unwrap();
        let Some(Statement::Query(q)) = stmt.as_sql() else {
            panic!("not a query: {sql}")
        };
        merge_query(q)
    }

    #[test]
    fn counts_and_sums_add_up_and_extremes_take_the_extreme() {
        assert_eq!(
            merge("SELECT site, count(*) AS n, sum(v), min(v) AS low, MAX(v) FROM clicks GROUP BY site")
                .as_deref(),
            Some("SELECT \"site\", sum(\"n\") AS \"n\", sum(\"sum\") AS \"sum\", min(\"low\") AS \"low\", max(\"max\") AS \"max\" FROM gathered GROUP BY \"site\"")
        );
        assert_eq!(
            merge("SELECT count(*) AS n, sum(v) AS total FROM readings").as_deref(),
            Some("SELECT sum(\"n\") AS \"n\", sum(\"total\") AS \"total\" FROM gathered")
        );
        assert_eq!(
            merge("SELECT window_start, window_end, count(v) AS n FROM TUMBLE(readings, ts, INTERVAL '1 minute') GROUP BY window_start, window_end")
                .as_deref(),
            Some("SELECT \"window_start\", \"window_end\", sum(\"n\") AS \"n\" FROM gathered GROUP BY \"window_start\", \"window_end\"")
        );
    }

    #[test]
    fn what_needs_more_than_the_partial_values_does_not_merge() {
        for sql in [
            "SELECT site, avg(v) FROM clicks GROUP BY site",
            "SELECT site, count(DISTINCT u) FROM clicks GROUP BY site",
            "SELECT count(*) FROM clicks GROUP BY site",
            "SELECT site, count(*) FROM clicks GROUP BY site HAVING count(*) > 1",
            "SELECT site, count(*) FROM clicks GROUP BY site ORDER BY 2 LIMIT 3",
            "SELECT DISTINCT site FROM clicks",
            "SELECT site, v FROM clicks",
            "SELECT site, count(*) AS site FROM clicks GROUP BY site",
            "SELECT site, count(*) FILTER (WHERE v > 1) FROM clicks GROUP BY site",
            "SELECT c.site, count(*) FROM clicks c JOIN sites s ON s.id = c.site GROUP BY c.site",
            "SELECT window_start, count(*) FROM TUMBLE(readings, ts, INTERVAL '1 minute') GROUP BY window_start, window_end",
            "SELECT lower(site), count(*) FROM clicks GROUP BY lower(site)",
        ] {
            assert_eq!(merge(sql), None, "{sql}");
        }
    }
}
