//! Casts to `varchar(n)` and `char(n)` keep the first `n` characters, as PostgreSQL's
//! explicit casts do (`'abcdef'::varchar(3)` is `abc`, `12345::char(2)` is `12`).
//! DataFusion reads both types as text and dropped the length: the whole value came back,
//! a wrong answer. This rewrite rule, on the statement before planning, puts
//! `brook_text_prefix(CAST(x AS TEXT), n, is_char)` under such a cast; the inner cast gives
//! the value's PostgreSQL text ([`crate::value_text`]). A `char(n)` value also loses its
//! trailing spaces, as Brook keeps `char(n)` values (PostgreSQL pads them and drops the
//! padding again whenever the value becomes text). `CHARACTER VARYING`, which DataFusion
//! refuses as a type name, is read as `VARCHAR`.

use datafusion::arrow::array::StringArray;
use datafusion::arrow::datatypes::DataType;
use datafusion::common::{Result, ScalarValue};
use datafusion::logical_expr::{
    ColumnarValue, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, Volatility,
};
use datafusion::sql::sqlparser::ast::{
    visit_expressions_mut, CastKind, CharacterLength, DataType as SqlType, Expr, Statement, Value,
};
use datafusion_pg_catalog::sql::rules::SqlStatementRewriteRule;
use std::ops::ControlFlow;
use std::sync::Arc;

/// Name of the function the rule calls.
pub const TEXT_PREFIX: &str = "brook_text_prefix";

/// Rewrite rule: see the module's comment.
#[derive(Debug)]
pub struct StringLengthCasts;

/// The length of a `varchar(n)` / `char(n)` type, whether it is `char`, and the type as
/// DataFusion reads it; None for other types.
fn length_type(t: &SqlType) -> Option<(Option<u64>, bool, SqlType)> {
    let length = |l: &Option<CharacterLength>| match l {
        Some(CharacterLength::IntegerLength { length, .. }) => Some(*length),
        _ => None,
    };
    match t {
        SqlType::Varchar(l) => Some((length(l), false, t.clone())),
        SqlType::CharacterVarying(l) | SqlType::CharVarying(l) => {
            Some((length(l), false, SqlType::Varchar(*l)))
        }
        SqlType::Char(l) | SqlType::Character(l) => Some((length(l), true, t.clone())),
        _ => None,
    }
}

impl SqlStatementRewriteRule for StringLengthCasts {
    fn rewrite(&self, mut s: Statement) -> Statement {
        let _ = visit_expressions_mut(&mut s, |e| {
            let Expr::Cast {
                expr, data_type, ..
            } = e
            else {
                return ControlFlow::<()>::Continue(());
            };
            let Some((length, is_char, read_as)) = length_type(data_type) else {
                return ControlFlow::Continue(());
            };
            *data_type = read_as;
            // Once only (a statement may be rewritten again, e.g. a view's stored text).
            let done = !std::ptr::eq(unwrapped(expr), expr.as_ref());
            if let (Some(n), false) = (length, done) {
                let text = Expr::Cast {
                    kind: CastKind::Cast,
                    expr: expr.clone(),
                    data_type: SqlType::Text,
                    array: false,
                    format: None,
                };
                **expr = crate::pg_functions::function_call(
                    TEXT_PREFIX,
                    vec![
                        text,
                        Expr::value(Value::Number(n.to_string(), false)),
                        Expr::value(Value::Boolean(is_char)),
                    ],
                );
            }
            ControlFlow::Continue(())
        });
        s
    }
}

/// `e` without the wrapper this rule puts under a cast: the value cast (for naming the
/// output column after it, as PostgreSQL names `x::varchar(3)` after `x`).
pub fn unwrapped(e: &Expr) -> &Expr {
    if let Expr::Function(f) = e {
        let named = f
            .name
            .0
            .last()
            .and_then(|p| p.as_ident())
            .is_some_and(|i| i.value == TEXT_PREFIX);
        if let (true, datafusion::sql::sqlparser::ast::FunctionArguments::List(list)) =
            (named, &f.args)
        {
            if let Some(datafusion::sql::sqlparser::ast::FunctionArg::Unnamed(
                datafusion::sql::sqlparser::ast::FunctionArgExpr::Expr(Expr::Cast { expr, .. }),
            )) = list.args.first()
            {
                return expr;
            }
        }
    }
    e
}

/// `brook_text_prefix(text, n, is_char)`: the first `n` characters, for `char` without
/// trailing spaces.
#[derive(Debug, PartialEq, Eq, Hash)]
struct TextPrefix {
    signature: Signature,
}

impl ScalarUDFImpl for TextPrefix {
    fn name(&self) -> &str {
        TEXT_PREFIX
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(DataType::Utf8)
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let (n, is_char) = match (&args.args[1], &args.args[2]) {
            (ColumnarValue::Scalar(n), ColumnarValue::Scalar(ScalarValue::Boolean(c))) => {
                (n.cast_to(&DataType::Int64)?, c.unwrap_or(false))
            }
            _ => return datafusion::common::internal_err!("{TEXT_PREFIX} takes constants"),
        };
        let ScalarValue::Int64(Some(n)) = n else {
            return datafusion::common::internal_err!("{TEXT_PREFIX} takes a length");
        };
        let n = usize::try_from(n).unwrap_or(0);
        let text = crate::text_input::text_argument(&args.args[..1])?;
        let out: StringArray = text
            .iter()
            .map(|v| v.map(|v| prefix(v, n, is_char)))
            .collect();
        crate::text_input::result_like(&args.args, Arc::new(out))
    }
}

/// The first `n` characters of `v` (for `char`, without trailing spaces).
fn prefix(v: &str, n: usize, is_char: bool) -> &str {
    let end = v.char_indices().nth(n).map_or(v.len(), |(i, _)| i);
    let kept = &v[..end];
    if is_char {
        kept.trim_end_matches(' ')
    } else {
        kept
    }
}

/// The function the rule calls (registered by the server).
pub fn text_prefix_function() -> ScalarUDF {
    ScalarUDF::new_from_impl(TextPrefix {
        signature: Signature::any(3, Volatility::Immutable),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rewritten(sql: &str) -> String {
        crate::test_support::rewritten(&StringLengthCasts, sql)
    }

    #[test]
    fn casts_with_a_length_keep_a_prefix() {
        assert_eq!(
            rewritten("SELECT x::varchar(3), CAST(y AS CHARACTER VARYING(2)), z::char(2), w::varchar, v::character varying FROM t"),
            "SELECT brook_text_prefix(CAST(x AS TEXT), 3, false)::VARCHAR(3), \
             CAST(brook_text_prefix(CAST(y AS TEXT), 2, false) AS VARCHAR(2)), \
             brook_text_prefix(CAST(z AS TEXT), 2, true)::CHAR(2), w::VARCHAR, v::VARCHAR FROM t"
        );
    }

    #[test]
    fn prefixes_count_characters() {
        assert_eq!(prefix("abcdef", 3, false), "abc");
        assert_eq!(prefix("éüabc", 2, false), "éü");
        assert_eq!(prefix("ab", 5, false), "ab");
        assert_eq!(prefix("ab  cd", 3, true), "ab");
        assert_eq!(prefix("a  ", 3, false), "a  ");
    }
}
