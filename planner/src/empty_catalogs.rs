//! Select lists over catalogs that have no rows in Brook. pg_dump reads publications,
//! policies, event triggers and the like with correlated subqueries in the select list —
//! over a table function of the outer row (`generate_series(0, array_upper(pr.prattrs,
//! 1))`) or with conditions DataFusion cannot decorrelate — which cannot be planned. Brook
//! has none of these objects, so their catalogs are empty, and a SELECT that reads one of
//! them through inner joins only yields no row: its select list is never evaluated. Such a
//! select list's subqueries (and `ARRAY(subquery)` constructors, and the `tableoid` system
//! column) are replaced by NULL, which changes no answer and lets the query plan. (If Brook
//! gains one of these objects, its catalog must leave the list.)
//!
//! Catalogs that only Brook's pg_catalog has, not the compatibility crate's
//! (`pg_transform`, `pg_seclabels`, `pg_indexes`, `pg_sequences`), are qualified with `pg_catalog` when written bare, as
//! PostgreSQL finds every catalog through the search path.

use datafusion::sql::sqlparser::ast::{
    visit_expressions_mut, Expr, FunctionArguments, Ident, JoinOperator, ObjectNamePart, Query,
    SelectItem, SetExpr, Statement, TableFactor, Value, VisitMut, VisitorMut,
};
use datafusion_pg_catalog::sql::rules::SqlStatementRewriteRule;
use std::ops::ControlFlow;

/// The rewrite.
#[derive(Debug)]
pub struct EmptyCatalogs;

/// pg_catalog's tables of objects Brook does not have (no rows, ever).
const EMPTY: [&str; 15] = [
    "pg_event_trigger",
    "pg_foreign_data_wrapper",
    "pg_foreign_server",
    "pg_foreign_table",
    "pg_policy",
    "pg_publication",
    "pg_publication_namespace",
    "pg_publication_rel",
    "pg_seclabel",
    "pg_seclabels",
    "pg_subscription",
    "pg_subscription_rel",
    "pg_transform",
    "pg_trigger",
    "pg_user_mapping",
];

impl SqlStatementRewriteRule for EmptyCatalogs {
    fn rewrite(&self, mut s: Statement) -> Statement {
        struct Queries;
        impl VisitorMut for Queries {
            type Break = ();
            fn pre_visit_query(&mut self, q: &mut Query) -> ControlFlow<()> {
                if let SetExpr::Select(select) = q.body.as_mut() {
                    if reads_an_empty_catalog(&select.from) && ungrouped(select) {
                        for item in select.projection.iter_mut() {
                            if let SelectItem::UnnamedExpr(e) = item {
                                if let Some(name) = column_name(e) {
                                    *item = SelectItem::ExprWithAlias {
                                        expr: e.clone(),
                                        alias: Ident::with_quote('"', name),
                                    };
                                }
                            }
                            let _ = visit_expressions_mut(item, |e| {
                                if never_evaluated(e) {
                                    *e = Expr::Value(Value::Null.into());
                                }
                                ControlFlow::<()>::Continue(())
                            });
                        }
                    }
                }
                ControlFlow::Continue(())
            }
            fn pre_visit_table_factor(&mut self, t: &mut TableFactor) -> ControlFlow<()> {
                if let TableFactor::Table {
                    name, args: None, ..
                } = t
                {
                    let bare = name.0.len() == 1
                        && name.0[0].as_ident().is_some_and(|i| {
                            BROOK_ONLY.contains(&i.value.to_ascii_lowercase().as_str())
                        });
                    if bare {
                        name.0
                            .insert(0, ObjectNamePart::Identifier(Ident::new("pg_catalog")));
                    }
                }
                ControlFlow::Continue(())
            }
        }
        let _ = s.visit(&mut Queries);
        s
    }
}

/// Catalogs Brook's pg_catalog adds to the compatibility crate's.
const BROOK_ONLY: [&str; 4] = ["pg_indexes", "pg_seclabels", "pg_sequences", "pg_transform"];

/// The name a replaced select-list item keeps (clients read columns by name).
fn column_name(e: &Expr) -> Option<String> {
    if !never_evaluated(e) {
        return None;
    }
    match e {
        Expr::Identifier(i) => Some(i.value.clone()),
        Expr::CompoundIdentifier(parts) => parts.last().map(|i| i.value.clone()),
        Expr::Function(_) => Some("array".into()),
        _ => Some("?column?".into()),
    }
}

/// A select-list expression that cannot be planned here and need not be: a subquery, an
/// `ARRAY(subquery)`, the `tableoid` column (of a catalog pg_class may not list).
fn never_evaluated(e: &Expr) -> bool {
    match e {
        Expr::Subquery(_) => true,
        Expr::Function(f) => {
            f.name.to_string().eq_ignore_ascii_case("array")
                && matches!(f.args, FunctionArguments::Subquery(_))
        }
        Expr::Identifier(i) => i.value.eq_ignore_ascii_case("tableoid"),
        Expr::CompoundIdentifier(parts) => parts
            .last()
            .is_some_and(|i| i.value.eq_ignore_ascii_case("tableoid")),
        _ => false,
    }
}

/// True when the FROM clause is one item whose joins are all inner and one of whose
/// relations is an empty catalog.
fn reads_an_empty_catalog(from: &[datafusion::sql::sqlparser::ast::TableWithJoins]) -> bool {
    let [item] = from else {
        return false;
    };
    let inner = item.joins.iter().all(|j| {
        matches!(
            j.join_operator,
            JoinOperator::Join(_) | JoinOperator::Inner(_) | JoinOperator::CrossJoin(_)
        )
    });
    inner
        && std::iter::once(&item.relation)
            .chain(item.joins.iter().map(|j| &j.relation))
            .any(is_empty_catalog)
}

fn is_empty_catalog(t: &TableFactor) -> bool {
    let TableFactor::Table {
        name, args: None, ..
    } = t
    else {
        return false;
    };
    let parts: Vec<String> = name
        .0
        .iter()
        .filter_map(|p| p.as_ident().map(|i| i.value.to_ascii_lowercase()))
        .collect();
    let table = match parts.as_slice() {
        [t] => t,
        [s, t] if s == "pg_catalog" => t,
        _ => return false,
    };
    EMPTY.binary_search(&table.as_str()).is_ok()
}

/// True when the SELECT has no GROUP BY and no HAVING (it yields a row per input row).
fn ungrouped(select: &datafusion::sql::sqlparser::ast::Select) -> bool {
    matches!(&select.group_by, datafusion::sql::sqlparser::ast::GroupByExpr::Expressions(e, m) if e.is_empty() && m.is_empty())
        && select.having.is_none()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rewritten(sql: &str) -> String {
        crate::rewritten_by(&EmptyCatalogs, sql)
    }

    #[test]
    fn the_catalogs_are_sorted_for_search() {
        let mut sorted = EMPTY;
        sorted.sort_unstable();
        assert_eq!(sorted, EMPTY);
    }

    #[test]
    fn subqueries_over_an_empty_catalog_are_null() {
        assert_eq!(
            rewritten("SELECT pr.oid, (SELECT array_agg(attname) FROM generate_series(0, 3) s, pg_attribute WHERE attrelid = pr.prrelid) FROM pg_catalog.pg_publication_rel pr"),
            "SELECT pr.oid, NULL AS \"?column?\" FROM pg_catalog.pg_publication_rel pr"
        );
        assert_eq!(
            rewritten("SELECT (SELECT 1) FROM unnest(ARRAY[1]) AS src(t) JOIN pg_policy pol ON src.t = pol.polrelid"),
            "SELECT NULL AS \"?column?\" FROM UNNEST(ARRAY[1]) AS src (t) JOIN pg_policy pol ON src.t = pol.polrelid"
        );
    }

    #[test]
    fn other_queries_keep_their_subqueries() {
        for sql in [
            "SELECT (SELECT 1) FROM pg_class",
            "SELECT (SELECT 1) FROM pg_class c LEFT JOIN pg_policy p ON p.polrelid = c.oid",
        ] {
            assert_eq!(rewritten(sql), sql);
        }
    }
}
