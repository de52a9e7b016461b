//! PostgreSQL's set-returning functions of one column that Brook runs as `unnest` of an
//! array function ([`SET_RETURNING`]): in the select list ([`SeriesInSelectList`]) and in
//! FROM (`crate::lateral`).

use crate::pg_functions::{function_call, names_function};
use datafusion::sql::sqlparser::ast::{
    Expr, Function, Ident, ObjectName, ObjectNamePart, Query, SelectItem, SetExpr, Statement,
    VisitMut, VisitorMut,
};
use datafusion_pg_catalog::sql::rules::SqlStatementRewriteRule;
use std::ops::ControlFlow;

/// A PostgreSQL set-returning function of one column that is `unnest` of an array
/// function.
pub struct SetReturning {
    /// Its name.
    pub name: &'static str,
    /// The function giving its rows as one array.
    pub array_function: &'static str,
    /// The name PostgreSQL gives its column in FROM (an OUT parameter's), where that is
    /// not the alias.
    pub column: Option<&'static str>,
}

/// The array function of `json[b]_array_elements` (registered by the server).
pub const JSON_ELEMENTS: &str = "brook_json_array_elements";
/// The array function of `json[b]_array_elements_text`.
pub const JSON_ELEMENTS_TEXT: &str = "brook_json_array_elements_text";

/// The array function of `regexp_matches` (registered by the server).
pub const REGEXP_MATCHES: &str = "brook_regexp_matches";

/// The set-returning functions Brook runs as `unnest` of an array function: DataFusion's
/// scalar `generate_series` returns the series as one array; the others it lacks (their
/// array forms are Brook's `regexp_split_to_array`, match lists, JSON element and key
/// lists, and DataFusion's `string_to_array`).
pub const SET_RETURNING: [SetReturning; 10] = [
    set_returning("generate_series", "generate_series", None),
    set_returning("regexp_split_to_table", "regexp_split_to_array", None),
    set_returning("string_to_table", "string_to_array", None),
    set_returning("json_array_elements", JSON_ELEMENTS, Some("value")),
    set_returning("jsonb_array_elements", JSON_ELEMENTS, Some("value")),
    set_returning(
        "json_array_elements_text",
        JSON_ELEMENTS_TEXT,
        Some("value"),
    ),
    set_returning(
        "jsonb_array_elements_text",
        JSON_ELEMENTS_TEXT,
        Some("value"),
    ),
    set_returning("json_object_keys", "brook_json_object_keys", None),
    set_returning("jsonb_object_keys", "brook_jsonb_object_keys", None),
    set_returning("regexp_matches", REGEXP_MATCHES, None),
];

/// A PostgreSQL set-returning function of several columns, each `unnest` of an array
/// function over the same arguments (the arrays of one row are equally long); in FROM
/// only (`crate::lateral`), since in a select list it gives one composite value.
pub struct RecordReturning {
    /// Its name.
    pub name: &'static str,
    /// Each column's name and the function giving its values as one array.
    pub columns: [(&'static str, &'static str); 2],
}

/// The set-returning functions of several columns Brook runs (their array functions are
/// the server's JSON member lists).
pub const RECORD_RETURNING: [RecordReturning; 4] = [
    RecordReturning {
        name: "json_each",
        columns: [
            ("key", "brook_json_each_keys"),
            ("value", "brook_json_each_values"),
        ],
    },
    RecordReturning {
        name: "json_each_text",
        columns: [
            ("key", "brook_json_each_keys"),
            ("value", "brook_json_each_text_values"),
        ],
    },
    RecordReturning {
        name: "jsonb_each",
        columns: [
            ("key", "brook_jsonb_each_keys"),
            ("value", "brook_jsonb_each_values"),
        ],
    },
    RecordReturning {
        name: "jsonb_each_text",
        columns: [
            ("key", "brook_jsonb_each_keys"),
            ("value", "brook_jsonb_each_text_values"),
        ],
    },
];

/// The set-returning function of several columns named `name` (lower case).
pub fn record_returning_function(name: &str) -> Option<&'static RecordReturning> {
    RECORD_RETURNING.iter().find(|f| f.name == name)
}

const fn set_returning(
    name: &'static str,
    array_function: &'static str,
    column: Option<&'static str>,
) -> SetReturning {
    SetReturning {
        name,
        array_function,
        column,
    }
}

/// The set-returning function named `name` (lower case), if Brook runs it as `unnest`.
pub fn set_returning_function(name: &str) -> Option<&'static SetReturning> {
    SET_RETURNING.iter().find(|f| f.name == name)
}

/// `SELECT generate_series(a, b)`: a set-returning function in the select list gives one
/// row per value in PostgreSQL, but DataFusion's `generate_series` called as a scalar
/// returns them all as one array (a wrong answer: `{1,2,3}` in one row). A select item
/// that is such a call becomes `unnest(generate_series(a, b)) AS generate_series` (its
/// alias kept), which DataFusion expands into rows; likewise the others of
/// [`SET_RETURNING`] (`unnest(regexp_split_to_array(s, p)) AS regexp_split_to_table`).
/// A call inside an expression (`generate_series(1, 3) + 1`) becomes the same `unnest`
/// there; several in one select list run in step, the shorter padded with NULLs, as in
/// PostgreSQL (and DataFusion's unnest). Calls inside CASE, a subquery or an `unnest` are
/// left alone.
#[derive(Debug)]
pub struct SeriesInSelectList;

impl SqlStatementRewriteRule for SeriesInSelectList {
    fn rewrite(&self, mut s: Statement) -> Statement {
        struct Selects;
        impl VisitorMut for Selects {
            type Break = ();
            fn pre_visit_query(
                &mut self,
                q: &mut datafusion::sql::sqlparser::ast::Query,
            ) -> ControlFlow<()> {
                if let SetExpr::Select(select) = q.body.as_mut() {
                    for item in &mut select.projection {
                        expand_series(item);
                    }
                }
                ControlFlow::Continue(())
            }
        }
        let _ = s.visit(&mut Selects);
        s
    }
}

fn expand_series(item: &mut SelectItem) {
    let (expr, alias) = match item {
        SelectItem::UnnamedExpr(e) => (e.clone(), None),
        SelectItem::ExprWithAlias { expr, alias } => (expr.clone(), Some(alias.clone())),
        _ => return,
    };
    // The item is the call: its column is named after the function.
    if let Expr::Function(f) = &expr {
        if let (None, Some(srf)) = (&f.over, set_returning_call(f)) {
            *item = SelectItem::ExprWithAlias {
                expr: as_unnest(f, srf),
                alias: alias.unwrap_or_else(|| Ident::new(srf.name)),
            };
            return;
        }
    }
    let _ = item.visit(&mut NestedCalls { blocked: 0 });
}

/// The set-returning function `f` calls, if Brook runs it as `unnest`.
fn set_returning_call(f: &Function) -> Option<&'static SetReturning> {
    SET_RETURNING
        .iter()
        .find(|srf| names_function(&f.name, srf.name, "pg_catalog"))
}

/// `unnest(array_function(args))` for the call `f` of `srf`.
fn as_unnest(f: &Function, srf: &SetReturning) -> Expr {
    let mut call = f.clone();
    call.name = ObjectName(vec![ObjectNamePart::Identifier(Ident::new(
        srf.array_function,
    ))]);
    function_call("unnest", vec![Expr::Function(call)])
}

/// Rewrites the set-returning calls inside a select item's expression, outside the places
/// that keep theirs (`blocked` counts how deep in them the walk is).
struct NestedCalls {
    blocked: usize,
}

impl NestedCalls {
    fn blocks(e: &Expr) -> bool {
        match e {
            Expr::Case { .. } => true,
            // A window function's call keeps its arguments as they are.
            Expr::Function(f) => {
                f.over.is_some() || names_function(&f.name, "unnest", "pg_catalog")
            }
            _ => false,
        }
    }
}

impl VisitorMut for NestedCalls {
    type Break = ();

    fn pre_visit_query(&mut self, _q: &mut Query) -> ControlFlow<()> {
        self.blocked += 1;
        ControlFlow::Continue(())
    }

    fn post_visit_query(&mut self, _q: &mut Query) -> ControlFlow<()> {
        self.blocked -= 1;
        ControlFlow::Continue(())
    }

    fn pre_visit_expr(&mut self, e: &mut Expr) -> ControlFlow<()> {
        if Self::blocks(e) {
            self.blocked += 1;
        }
        ControlFlow::Continue(())
    }

    fn post_visit_expr(&mut self, e: &mut Expr) -> ControlFlow<()> {
        if Self::blocks(e) {
            self.blocked -= 1;
        } else if let (0, Expr::Function(f)) = (self.blocked, &*e) {
            if let Some(srf) = set_returning_call(f) {
                *e = as_unnest(f, srf);
            }
        }
        ControlFlow::Continue(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rewritten(sql: &str) -> String {
        crate::test_support::rewritten(&SeriesInSelectList, sql)
    }

    #[test]
    fn a_call_in_the_select_list_is_unnest_of_its_array() {
        assert_eq!(
            rewritten("SELECT generate_series(1, 3)"),
            "SELECT unnest(generate_series(1, 3)) AS generate_series"
        );
        assert_eq!(
            rewritten("SELECT regexp_split_to_table(s, ',') AS w FROM t"),
            "SELECT unnest(regexp_split_to_array(s, ',')) AS w FROM t"
        );
    }

    #[test]
    fn a_call_inside_an_expression_too() {
        assert_eq!(
            rewritten("SELECT generate_series(1, 3) + 1, jsonb_array_elements_text(j) IS NULL FROM t"),
            "SELECT unnest(generate_series(1, 3)) + 1, unnest(brook_json_array_elements_text(j)) IS NULL FROM t"
        );
    }

    #[test]
    fn calls_in_case_unnest_and_subqueries_stay() {
        for sql in [
            "SELECT CASE WHEN x THEN generate_series(1, 3) END FROM t",
            "SELECT unnest(generate_series(1, 3)) FROM t",
            "SELECT (SELECT max(v) FROM u WHERE v < x) + 1 FROM t",
        ] {
            assert_eq!(rewritten(sql), sql);
        }
    }
}
