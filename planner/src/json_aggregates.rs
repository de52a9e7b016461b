//! `json_agg`, `jsonb_agg`, `json_object_agg` and `jsonb_object_agg`, PostgreSQL's
//! aggregates that build JSON, as an `array_agg` of each row's JSON and a scalar function
//! of the aggregate's name that writes the list as its result (the server's
//! `udf/json_aggregates.rs`): `json_agg(array_agg(...))`, so the column keeps
//! PostgreSQL's name. A call whose argument is already such an `array_agg` (a view's
//! query, kept as rewritten text and read again) is left as it is.
//!
//! `array_agg` already does what these aggregates need besides the JSON: `ORDER BY` inside
//! the call (kept in order across partial aggregates), `DISTINCT`, `FILTER`, `OVER`, NULL
//! rows kept, no row giving NULL. The call keeps all of those and only its arguments
//! change: `json_agg(x ORDER BY y)` becomes `json_agg(array_agg(brook_json_element(x)
//! ORDER BY y))` (`to_json(x)`, marked when `x` is an array or a row, before which
//! PostgreSQL's `json_agg` starts a new line), and `json_object_agg(k, v)` aggregates
//! `json_build_array(k, v)` (the key as JSON, whose text names the field, as PostgreSQL's
//! does). With DISTINCT, whose ORDER BY may name only the argument, each row is
//! `named_struct('v', x, 'j', brook_json_element(x))` and the ORDER BY of `x` orders by
//! that (by `x` first): distinct values, ordered as values, not as their JSON text.

use crate::pg_functions::{function_call, rewrite_expressions};
use datafusion::sql::sqlparser::ast::{
    DuplicateTreatment, Expr, FunctionArg, FunctionArgExpr, FunctionArgumentClause,
    FunctionArguments, Ident, ObjectName, ObjectNamePart, OrderByExpr, OrderByOptions, Statement,
    Value,
};
use datafusion_pg_catalog::sql::rules::SqlStatementRewriteRule;

/// The function that writes one row's value as `json_agg` takes it.
pub const JSON_ELEMENT: &str = "brook_json_element";

/// The aggregates rewritten, and whether each takes a key and a value.
const AGGREGATES: [(&str, bool); 4] = [
    ("json_agg", false),
    ("jsonb_agg", false),
    ("json_object_agg", true),
    ("jsonb_object_agg", true),
];

/// The rule.
#[derive(Debug)]
pub struct JsonAggregates;

impl SqlStatementRewriteRule for JsonAggregates {
    fn rewrite(&self, mut s: Statement) -> Statement {
        rewrite_expressions(&mut s, |expr| {
            if let Some(rewritten) = rewritten(expr) {
                *expr = rewritten;
            }
        });
        s
    }
}

/// `expr` as the list it aggregates and the function that writes it, when it is one of the
/// aggregates with its number of arguments (else it is left to fail as unknown).
fn rewritten(expr: &Expr) -> Option<Expr> {
    let Expr::Function(f) = expr else {
        return None;
    };
    let name = f.name.0.last()?.as_ident()?.value.to_ascii_lowercase();
    let (_, object) = AGGREGATES.iter().find(|(n, _)| *n == name)?;
    let FunctionArguments::List(list) = &f.args else {
        return None;
    };
    if let [FunctionArg::Unnamed(FunctionArgExpr::Expr(Expr::Function(g)))] = list.args.as_slice() {
        if g.name
            .0
            .last()?
            .as_ident()?
            .value
            .eq_ignore_ascii_case("array_agg")
        {
            return None;
        }
    }
    let args: Vec<Expr> = list
        .args
        .iter()
        .map(|a| match a {
            FunctionArg::Unnamed(FunctionArgExpr::Expr(e)) => Some(e.clone()),
            _ => None,
        })
        .collect::<Option<_>>()?;
    let distinct = list.duplicate_treatment == Some(DuplicateTreatment::Distinct);
    let mut inner_list = list.clone();
    let element = match (object, args.as_slice()) {
        (false, [x]) if distinct => {
            let element = function_call(
                "named_struct",
                vec![
                    text("v"),
                    x.clone(),
                    text("j"),
                    function_call(JSON_ELEMENT, vec![x.clone()]),
                ],
            );
            let mut ordered = false;
            for clause in &mut inner_list.clauses {
                if let FunctionArgumentClause::OrderBy(order) = clause {
                    ordered = true;
                    for o in order.iter_mut().filter(|o| &o.expr == x) {
                        o.expr = element.clone();
                    }
                }
            }
            // PostgreSQL finds distinct values by sorting them: without an ORDER BY they
            // come out in ascending order (`json_agg(DISTINCT x)` of 3, 1, 2 is [1, 2, 3]).
            if !ordered && f.over.is_none() {
                inner_list
                    .clauses
                    .push(FunctionArgumentClause::OrderBy(vec![OrderByExpr {
                        expr: element.clone(),
                        options: OrderByOptions {
                            asc: None,
                            nulls_first: None,
                        },
                        with_fill: None,
                    }]));
            }
            element
        }
        (false, [x]) => function_call(JSON_ELEMENT, vec![x.clone()]),
        (true, [k, v]) => function_call("json_build_array", vec![k.clone(), v.clone()]),
        _ => return None,
    };
    let mut inner = f.clone();
    inner.name = ObjectName(vec![ObjectNamePart::Identifier(Ident::new("array_agg"))]);
    inner_list.args = vec![FunctionArg::Unnamed(FunctionArgExpr::Expr(element))];
    inner.args = FunctionArguments::List(inner_list);
    let mut outer = f.clone();
    let mut outer_list = list.clone();
    outer_list.duplicate_treatment = None;
    outer_list.clauses = vec![];
    outer_list.args = vec![FunctionArg::Unnamed(FunctionArgExpr::Expr(Expr::Function(
        inner,
    )))];
    outer.args = FunctionArguments::List(outer_list);
    outer.filter = None;
    outer.over = None;
    outer.within_group = vec![];
    outer.null_treatment = None;
    Some(Expr::Function(outer))
}

fn text(s: &str) -> Expr {
    Expr::Value(Value::SingleQuotedString(s.to_string()).into())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rewrite(sql: &str) -> String {
        use datafusion::sql::sqlparser::dialect::PostgreSqlDialect;
        use datafusion::sql::sqlparser::parser::Parser;
        let s = Parser::parse_sql(&PostgreSqlDialect {}, sql)
            .unwrap()
            .remove(0);
        JsonAggregates.rewrite(s).to_string()
    }

    #[test]
    fn keeps_order_distinct_filter_and_window() {
        assert_eq!(
            rewrite("SELECT json_agg(x ORDER BY y DESC) FILTER (WHERE x > 1) FROM t"),
            "SELECT json_agg(array_agg(brook_json_element(x) ORDER BY y DESC) FILTER (WHERE x > 1)) FROM t"
        );
        assert_eq!(
            rewrite("SELECT jsonb_agg(x) OVER (PARTITION BY g) FROM t"),
            "SELECT jsonb_agg(array_agg(brook_json_element(x)) OVER (PARTITION BY g)) FROM t"
        );
        assert_eq!(
            rewrite("SELECT json_agg(DISTINCT x) FROM t"),
            "SELECT json_agg(array_agg(DISTINCT named_struct('v', x, 'j', brook_json_element(x)) ORDER BY named_struct('v', x, 'j', brook_json_element(x)))) FROM t"
        );
        assert_eq!(
            rewrite("SELECT json_agg(DISTINCT x ORDER BY x DESC) FROM t"),
            "SELECT json_agg(array_agg(DISTINCT named_struct('v', x, 'j', brook_json_element(x)) ORDER BY named_struct('v', x, 'j', brook_json_element(x)) DESC)) FROM t"
        );
    }

    #[test]
    fn object_aggregates_take_key_and_value_as_json() {
        assert_eq!(
            rewrite("SELECT json_object_agg(k, v) FROM t"),
            "SELECT json_object_agg(array_agg(json_build_array(k, v))) FROM t"
        );
    }

    #[test]
    fn a_rewritten_call_read_again_is_left_alone() {
        let once = rewrite("SELECT json_agg(x ORDER BY x) FROM t");
        assert_eq!(rewrite(&once), once);
    }

    #[test]
    fn other_argument_counts_are_left_alone() {
        assert_eq!(
            rewrite("SELECT json_object_agg(k) FROM t"),
            "SELECT json_object_agg(k) FROM t"
        );
    }
}
