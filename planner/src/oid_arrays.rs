//! Arrays of catalog oids typed `oid[]`, as PostgreSQL types them.
//!
//! pg_catalog's oid columns are `integer` here, so `array_agg(a.atttypid)` was `integer[]`.
//! asyncpg decodes `oid[]` and `text[]` itself but learns every other array type by its
//! type-lookup query — whose `attrtypoids` column is such an aggregate. Typed `integer[]`,
//! decoding the lookup's own result needed the lookup again, until asyncpg's recursion
//! limit: no asyncpg client could use an array. A named select item that aggregates an
//! oid column (`array_agg(x.atttypid ...)`, possibly inside CASE or a subquery) is wrapped
//! in [`OID_ARRAY`], which marks its result `oid[]` for the wire (values unchanged).

use datafusion::sql::sqlparser::ast::{
    Expr, FunctionArg, FunctionArgExpr, FunctionArguments, Query, SelectItem, SetExpr, Statement,
    Visit, VisitMut, Visitor, VisitorMut,
};
use datafusion_pg_catalog::sql::rules::SqlStatementRewriteRule;
use std::ops::ControlFlow;

/// The function that marks a list of integers as `oid[]` (registered by the server).
pub const OID_ARRAY: &str = "brook_oid_array";

/// pg_catalog's columns of type oid that clients aggregate.
const OID_COLUMNS: [&str; 9] = [
    "oid",
    "atttypid",
    "attrelid",
    "typelem",
    "typarray",
    "typbasetype",
    "typrelid",
    "reltype",
    "prorettype",
];

/// The rewrite.
#[derive(Debug)]
pub struct OidArrays;

impl SqlStatementRewriteRule for OidArrays {
    fn rewrite(&self, mut s: Statement) -> Statement {
        struct Items;
        impl VisitorMut for Items {
            type Break = ();
            fn post_visit_query(&mut self, q: &mut Query) -> ControlFlow<()> {
                if let SetExpr::Select(select) = q.body.as_mut() {
                    for item in select.projection.iter_mut() {
                        if let SelectItem::ExprWithAlias { expr, .. } = item {
                            if aggregates_oids(expr) {
                                *expr = crate::pg_functions::function_call(
                                    OID_ARRAY,
                                    vec![expr.clone()],
                                );
                            }
                        }
                    }
                }
                ControlFlow::Continue(())
            }
        }
        let _ = VisitMut::visit(&mut s, &mut Items);
        s
    }
}

/// Whether `e` contains `array_agg` of an oid column.
fn aggregates_oids(e: &Expr) -> bool {
    struct Find(bool);
    impl Visitor for Find {
        type Break = ();
        fn pre_visit_expr(&mut self, e: &Expr) -> ControlFlow<()> {
            if let Expr::Function(f) = e {
                let name = f.name.0.last().and_then(|p| p.as_ident());
                if name.is_some_and(|n| n.value.eq_ignore_ascii_case(OID_ARRAY)) {
                    return ControlFlow::Break(());
                }
                if name.is_some_and(|n| n.value.eq_ignore_ascii_case("array_agg"))
                    && first_argument_is_oid_column(&f.args)
                {
                    self.0 = true;
                    return ControlFlow::Break(());
                }
            }
            ControlFlow::Continue(())
        }
    }
    let mut find = Find(false);
    let _ = e.visit(&mut find);
    find.0
}

fn first_argument_is_oid_column(args: &FunctionArguments) -> bool {
    let FunctionArguments::List(list) = args else {
        return false;
    };
    let Some(FunctionArg::Unnamed(FunctionArgExpr::Expr(arg))) = list.args.first() else {
        return false;
    };
    let column = match arg {
        Expr::Identifier(i) => i,
        Expr::CompoundIdentifier(parts) => match parts.last() {
            Some(i) => i,
            None => return false,
        },
        _ => return false,
    };
    OID_COLUMNS.contains(&column.value.to_ascii_lowercase().as_str())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rewritten(sql: &str) -> String {
        crate::rewritten_by(&OidArrays, sql)
    }

    #[test]
    fn an_aggregate_of_oids_is_marked_once() {
        let out = rewritten(
            "SELECT (CASE WHEN t.typtype = 'c' THEN (SELECT array_agg(ia.atttypid ORDER BY \
             ia.attnum) FROM pg_attribute ia) ELSE NULL END) AS attrtypoids FROM pg_type t",
        );
        assert_eq!(out.matches("brook_oid_array(").count(), 1, "{out}");
        assert!(out.starts_with("SELECT brook_oid_array((CASE"), "{out}");
    }

    #[test]
    fn other_aggregates_and_unnamed_items_are_left_alone() {
        for sql in [
            "SELECT array_agg(ia.attname) AS names FROM pg_attribute ia",
            "SELECT array_agg(x.oid) FROM t x",
        ] {
            assert!(!rewritten(sql).contains("brook_oid_array"), "{sql}");
        }
    }
}
