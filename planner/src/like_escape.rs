//! `LIKE pattern ESCAPE 'c'` with an escape character other than backslash.
//!
//! DataFusion's LIKE escapes with backslash only (PostgreSQL's default) and refuses other
//! escape characters; SQLAlchemy writes `startswith(..., autoescape=True)` as `LIKE $1 ||
//! '%' ESCAPE '/'`, so a pattern is often an expression, not a literal. The rewrite keeps
//! the LIKE and wraps its pattern in `brook_like_escape(pattern, 'c')`, which turns the
//! pattern, row by row, into the same pattern written with backslash escapes. `ESCAPE ''`
//! (no escape character at all) goes the same way.

use brook_common::brook_err;
use datafusion::arrow::array::{Array, ArrayRef, AsArray, StringArray};
use datafusion::arrow::datatypes::DataType;
use datafusion::logical_expr::{
    ColumnarValue, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, Volatility,
};
use datafusion::sql::sqlparser::ast::{Expr, Statement, Value};
use datafusion_pg_catalog::sql::rules::SqlStatementRewriteRule;
use std::sync::Arc;

/// Name of the function.
pub const LIKE_ESCAPE: &str = "brook_like_escape";

/// `x [NOT] LIKE/ILIKE p ESCAPE 'c'` (c not backslash) as `x LIKE brook_like_escape(p, 'c')`.
#[derive(Debug)]
pub struct LikeEscapeAsBackslash;

impl SqlStatementRewriteRule for LikeEscapeAsBackslash {
    fn rewrite(&self, mut s: Statement) -> Statement {
        crate::pg_functions::rewrite_expressions(&mut s, like_with_backslash);
        s
    }
}

fn like_with_backslash(expr: &mut Expr) {
    if let Expr::Like {
        pattern,
        escape_char,
        ..
    }
    | Expr::ILike {
        pattern,
        escape_char,
        ..
    } = expr
    {
        let escape = match escape_char.as_ref().map(|v| &v.value) {
            Some(Value::SingleQuotedString(c)) if c != "\\" => c.clone(),
            _ => return,
        };
        let call = crate::pg_functions::function_call(
            LIKE_ESCAPE,
            vec![
                (**pattern).clone(),
                Expr::value(Value::SingleQuotedString(escape)),
            ],
        );
        **pattern = call;
        *escape_char = None;
    }
}

/// `pattern` written with escape character `escape` (none when empty), as the same
/// pattern with backslash escapes; 22025 when it ends in the escape character.
pub fn to_backslash_escapes(pattern: &str, escape: &str) -> brook_common::Result<String> {
    let mut esc = escape.chars();
    let esc = match (esc.next(), esc.next()) {
        (None, _) => None,
        (Some(c), None) => Some(c),
        _ => {
            return Err(brook_err!(
                InvalidEscape,
                "invalid escape string (escape string must be empty or one character)"
            ))
        }
    };
    let mut out = String::with_capacity(pattern.len() + 4);
    let mut chars = pattern.chars();
    while let Some(c) = chars.next() {
        if Some(c) == esc {
            match chars.next() {
                Some(n @ ('%' | '_' | '\\')) => {
                    out.push('\\');
                    out.push(n);
                }
                Some(n) => out.push(n),
                None => {
                    return Err(brook_err!(
                        InvalidEscape,
                        "LIKE pattern must not end with escape character"
                    ))
                }
            }
        } else if c == '\\' {
            out.push_str("\\\\");
        } else {
            out.push(c);
        }
    }
    Ok(out)
}

/// The function, to register on a context.
pub fn like_escape_function() -> ScalarUDF {
    ScalarUDF::new_from_impl(LikeEscape {
        signature: Signature::exact(vec![DataType::Utf8, DataType::Utf8], Volatility::Immutable),
    })
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct LikeEscape {
    signature: Signature,
}

impl ScalarUDFImpl for LikeEscape {
    fn name(&self) -> &str {
        LIKE_ESCAPE
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _args: &[DataType]) -> datafusion::error::Result<DataType> {
        Ok(DataType::Utf8)
    }

    fn invoke_with_args(
        &self,
        args: ScalarFunctionArgs,
    ) -> datafusion::error::Result<ColumnarValue> {
        datafusion::functions::utils::make_scalar_function(like_escape, vec![])(&args.args)
    }
}

/// Each pattern with backslash escapes, row by row.
fn like_escape(args: &[ArrayRef]) -> datafusion::error::Result<ArrayRef> {
    let (patterns, escapes) = (args[0].as_string::<i32>(), args[1].as_string::<i32>());
    let out = (0..patterns.len())
        .map(|i| {
            if patterns.is_null(i) || escapes.is_null(i) {
                return Ok(None);
            }
            to_backslash_escapes(patterns.value(i), escapes.value(i))
                .map(Some)
                .map_err(|e| datafusion::error::DataFusionError::External(Box::new(e)))
        })
        .collect::<datafusion::error::Result<StringArray>>()?;
    Ok(Arc::new(out))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patterns_read_the_same_with_backslash_escapes() {
        for (pattern, escape, expected) in [
            ("pg/_%", "/", "pg\\_%"),
            ("a//b", "/", "a/b"),
            ("50!%", "!", "50\\%"),
            ("c:\\dir%", "/", "c:\\\\dir%"),
            ("/a", "/", "a"),
            ("a\\_%", "", "a\\\\_%"),
        ] {
            assert_eq!(
                to_backslash_escapes(pattern, escape).unwrap(),
                expected,
                "{pattern}"
            );
        }
        let e = to_backslash_escapes("ab/", "/").unwrap_err();
        assert_eq!(e.sqlstate(), "22025");
        let e = to_backslash_escapes("ab", "//").unwrap_err();
        assert_eq!(e.sqlstate(), "22025");
    }

    #[test]
    fn the_clause_becomes_a_function_of_the_pattern() {
        let stmt = crate::parser::parse_one(
            "SELECT nspname FROM n WHERE nspname NOT LIKE $1 || '%' ESCAPE '/' AND a LIKE 'x\\_' ESCAPE '\\'",
        )
        .unwrap();
        let text = stmt.as_sql().unwrap().to_string();
        assert!(
            text.contains("NOT LIKE brook_like_escape($1 || '%', '/')"),
            "{text}"
        );
        assert!(text.contains("ESCAPE '\\'"), "{text}");
    }
}
