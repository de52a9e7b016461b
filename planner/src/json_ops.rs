//! PostgreSQL's JSON operators and functions as the JSON functions of
//! `datafusion-functions-json`, which read JSON text (Brook keeps json and jsonb as text).
//!
//! - `j -> k` is [`JSON_GET`]`(j, k)`: the member or element as JSON text (the server's
//!   `json_get_json`, typed as `j` is);
//! - `j ->> k` is [`JSON_GET_TEXT`]`(j, k)` (`json_as_text`): a string member as its text,
//!   any other value as its JSON text, JSON `null` as SQL NULL;
//! - `j ? k` is [`JSON_EXISTS`]`(j, k)` (`json_contains`);
//! - `json_extract_path[_text](j, k, ...)`, their `jsonb_` twins, and
//!   `json[b]_array_length(j)` call the same functions.
//!
//! The operators' functions have names of their own ([`OPERATOR_FUNCTIONS`]) so the
//! column is named `?column?`, as PostgreSQL names an operator's result.
//!
//! The rewrite happens on the statement, before DataFusion plans it, so the crate's own
//! operator planner (which makes `->` a union-typed value no PostgreSQL client reads) is
//! never needed. `#>`/`#>>` (paths as text arrays) become Brook's `brook_json_path[_text]`,
//! whose steps are members or positions by what they meet, as PostgreSQL's.

use crate::pg_functions::function_call;
use datafusion::sql::sqlparser::ast::{
    BinaryOperator, Expr, FunctionArg, FunctionArgExpr, FunctionArguments, Statement,
};
use datafusion_pg_catalog::sql::rules::SqlStatementRewriteRule;

/// The function `j -> k` becomes (registered by the server).
pub const JSON_GET: &str = "brook_json_get";
/// The function `j ->> k` becomes.
pub const JSON_GET_TEXT: &str = "brook_json_get_text";
/// The function `j ? k` becomes.
pub const JSON_EXISTS: &str = "brook_json_exists";
/// The function `j #> path` becomes (registered by the server).
pub const JSON_PATH: &str = "brook_json_path";
/// The function `j #>> path` becomes.
pub const JSON_PATH_TEXT: &str = "brook_json_path_text";

/// The JSON type (`json` or `jsonb`) of the result of function `name` when its name tells
/// it: the casts, the builders and the extract-path functions. One list for the statement
/// rewrites (`values_types`) and the server's operator planning, whose functions return
/// these types (the server's `the_types_by_name_are_the_functions_own` checks it).
pub fn json_result_type(name: &str) -> Option<&'static str> {
    use crate::pg_functions::{JSONB_CAST, JSON_CAST};
    match name {
        JSONB_CAST | "jsonb_build_object" | "jsonb_build_array" | "to_jsonb" | "jsonb_set"
        | "jsonb_extract_path" => Some("jsonb"),
        JSON_CAST | "json_build_object" | "json_build_array" | "to_json" | "json_extract_path" => {
            Some("json")
        }
        _ => None,
    }
}

/// The functions the operators become: an unnamed result column of one is `?column?`.
pub const OPERATOR_FUNCTIONS: [&str; 5] = [
    JSON_GET,
    JSON_GET_TEXT,
    JSON_EXISTS,
    JSON_PATH,
    JSON_PATH_TEXT,
];

/// The operators and PostgreSQL function names as the crate's functions.
#[derive(Debug)]
pub struct JsonOperators;

impl SqlStatementRewriteRule for JsonOperators {
    fn rewrite(&self, mut s: Statement) -> Statement {
        crate::pg_functions::rewrite_expressions(&mut s, rewrite_json);
        s
    }
}

/// One expression, its operands already rewritten.
fn rewrite_json(expr: &mut Expr) {
    match expr {
        Expr::BinaryOp { left, op, right } => {
            let name = match op {
                BinaryOperator::Arrow => JSON_GET,
                BinaryOperator::LongArrow => JSON_GET_TEXT,
                BinaryOperator::Question => JSON_EXISTS,
                BinaryOperator::HashArrow => JSON_PATH,
                BinaryOperator::HashLongArrow => JSON_PATH_TEXT,
                _ => return,
            };
            if name == JSON_PATH || name == JSON_PATH_TEXT {
                *expr = function_call(name, vec![(**left).clone(), (**right).clone()]);
                return;
            }
            *expr = function_call(name, vec![(**left).clone(), path_step((**right).clone())]);
        }
        Expr::Function(f) => {
            let Some(target) = f
                .name
                .0
                .last()
                .and_then(|p| p.as_ident())
                .and_then(|i| renamed(&i.value.to_ascii_lowercase()))
            else {
                return;
            };
            let FunctionArguments::List(list) = &f.args else {
                return;
            };
            let args: Option<Vec<Expr>> = list
                .args
                .iter()
                .map(|a| match a {
                    FunctionArg::Unnamed(FunctionArgExpr::Expr(e)) => Some(e.clone()),
                    _ => None,
                })
                .collect();
            if let Some(mut args) = args {
                for a in args.iter_mut().skip(1) {
                    *a = path_step(a.clone());
                }
                *expr = function_call(target, args);
                if target.ends_with("_array_length") {
                    // The crate's length is unsigned; PostgreSQL's is an integer.
                    *expr = Expr::Cast {
                        kind: datafusion::sql::sqlparser::ast::CastKind::Cast,
                        expr: Box::new(expr.clone()),
                        data_type: datafusion::sql::sqlparser::ast::DataType::Int(None),
                        array: false,
                        format: None,
                    };
                }
            }
        }
        _ => {}
    }
}

/// A path step as the functions take it: an array index as bigint (Brook's integer literals
/// are `integer`, which the functions refuse), and any other expression through
/// [`JSON_STEP`], which widens an integer column to bigint and leaves text as it is
/// (`doc -> i` over an integer `i` was 42883).
fn path_step(e: Expr) -> Expr {
    use datafusion::sql::sqlparser::ast::{CastKind, DataType, Value};
    match &e {
        Expr::Value(v) if matches!(v.value, Value::Number(..)) => Expr::Cast {
            kind: CastKind::Cast,
            expr: Box::new(e),
            data_type: DataType::BigInt(None),
            array: false,
            format: None,
        },
        Expr::Value(_) => e,
        _ => function_call(JSON_STEP, vec![e]),
    }
}

/// The function a non-literal path step goes through (registered by the server).
pub const JSON_STEP: &str = "brook_json_step";

/// The function a PostgreSQL JSON function's call becomes, its path steps typed as the
/// crate takes them. The server registers these names: `json[b]_extract_path` typed json
/// or jsonb, the others as names of the crate's `json_as_text` and `json_length` (the
/// column is named after the function called).
fn renamed(name: &str) -> Option<&'static str> {
    Some(match name {
        "json_extract_path" => "json_extract_path",
        "jsonb_extract_path" => "jsonb_extract_path",
        "json_extract_path_text" => "json_extract_path_text",
        "jsonb_extract_path_text" => "jsonb_extract_path_text",
        "json_array_length" => "json_array_length",
        "jsonb_array_length" => "jsonb_array_length",
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use crate::parser::parse_one;

    fn sql(text: &str) -> String {
        parse_one(text).unwrap().as_sql().unwrap().to_string()
    }

    #[test]
    fn operators_become_function_calls() {
        assert_eq!(
            sql("SELECT doc -> 'a' -> 0, doc ->> 'b' FROM t WHERE doc ? 'c'"),
            "SELECT brook_json_get(brook_json_get(doc, 'a'), CAST(0 AS BIGINT)), brook_json_get_text(doc, 'b') FROM t WHERE brook_json_exists(doc, 'c')"
        );
        assert_eq!(
            sql("SELECT doc -> i FROM t"),
            "SELECT brook_json_get(doc, brook_json_step(i)) FROM t"
        );
        assert_eq!(
            sql("SELECT jsonb_extract_path_text(doc, 'a', 'b'), json_array_length(doc)"),
            "SELECT jsonb_extract_path_text(doc, 'a', 'b'), CAST(json_array_length(doc) AS INT)"
        );
        assert_eq!(
            sql("SELECT doc #> '{a,0}', doc #>> ARRAY['a', 'b'] FROM t"),
            "SELECT brook_json_path(doc, '{a,0}'), brook_json_path_text(doc, ARRAY['a', 'b']) FROM t"
        );
    }
}
