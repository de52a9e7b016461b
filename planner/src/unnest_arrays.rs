//! `unnest` of a multi-dimensional array gives its elements, as PostgreSQL's does:
//! `unnest(ARRAY[[1,2],[3,4]])` is four rows, where DataFusion's (whose arrays of arrays
//! are lists of lists) gave the two rows `{1,2}` and `{3,4}`. Each array a user's `unnest`
//! reads (in the select list or in FROM) becomes `brook_array_elements(a)`: the server's
//! function that gives a list of lists as the list of its innermost elements (and is
//! planned away for any other value). A rewrite of the parsed statement, first of all, so
//! that the `unnest` calls Brook's own rewrites make (of set-returning functions:
//! `regexp_matches` gives rows that are arrays; of the accuracy budget's top-k) stay
//! as they are.

use crate::pg_functions::{function_call, names_function};
use datafusion::sql::sqlparser::ast::{
    Expr, FunctionArg, FunctionArgExpr, FunctionArguments, Statement, TableFactor, VisitMut,
    VisitorMut,
};
use datafusion_pg_catalog::sql::rules::SqlStatementRewriteRule;
use std::ops::ControlFlow;

/// The server's function of an array's innermost elements.
pub const ARRAY_ELEMENTS: &str = "brook_array_elements";

/// Every `unnest` argument of a statement read through [`ARRAY_ELEMENTS`].
#[derive(Debug)]
pub struct UnnestElements;

impl SqlStatementRewriteRule for UnnestElements {
    fn rewrite(&self, mut s: Statement) -> Statement {
        let _ = s.visit(&mut Elements);
        s
    }
}

struct Elements;

/// `e` as `brook_array_elements(e)`, unless it already is one (a view's text read again).
fn wrap(e: &mut Expr) {
    if matches!(e, Expr::Function(f) if f.name.to_string().eq_ignore_ascii_case(ARRAY_ELEMENTS)) {
        return;
    }
    let inner = std::mem::replace(e, Expr::value(datafusion::sql::sqlparser::ast::Value::Null));
    *e = function_call(ARRAY_ELEMENTS, vec![inner]);
}

impl VisitorMut for Elements {
    type Break = ();

    fn pre_visit_expr(&mut self, e: &mut Expr) -> ControlFlow<()> {
        if let Expr::Function(f) = e {
            if names_function(&f.name, "unnest", "pg_catalog") && f.over.is_none() {
                if let FunctionArguments::List(list) = &mut f.args {
                    for arg in &mut list.args {
                        if let FunctionArg::Unnamed(FunctionArgExpr::Expr(x)) = arg {
                            wrap(x);
                        }
                    }
                }
            }
        }
        ControlFlow::Continue(())
    }

    fn pre_visit_table_factor(&mut self, t: &mut TableFactor) -> ControlFlow<()> {
        if let TableFactor::UNNEST { array_exprs, .. } = t {
            array_exprs.iter_mut().for_each(wrap);
        }
        ControlFlow::Continue(())
    }
}

#[cfg(test)]
mod tests {
    use crate::test_support::rewritten;

    #[test]
    fn unnest_reads_the_innermost_elements() {
        for (sql, want) in [
            (
                "SELECT unnest(ARRAY[[1, 2], [3, 4]])",
                "SELECT unnest(brook_array_elements(ARRAY[[1, 2], [3, 4]]))",
            ),
            (
                "SELECT * FROM unnest(a, b) WITH ORDINALITY",
                "SELECT * FROM UNNEST(brook_array_elements(a), brook_array_elements(b)) WITH ORDINALITY",
            ),
            (
                "SELECT unnest(brook_array_elements(a))",
                "SELECT unnest(brook_array_elements(a))",
            ),
        ] {
            assert_eq!(rewritten(&super::UnnestElements, sql), want, "{sql}");
        }
    }
}
