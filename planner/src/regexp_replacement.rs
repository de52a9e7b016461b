//! `regexp_replace`'s replacement text as PostgreSQL reads it: `\1` ... `\9` a group,
//! `\&` the whole match, `\\` a backslash, and every other character itself — `$`
//! included. DataFusion hands the text to Rust's `regex`, where `$0`, `$1x` and `${1}`
//! are groups (`regexp_replace('abc', 'b', '$0')` was `abc`, PostgreSQL's `a$0c`) and `\&`
//! is nothing special (`[\&]` stayed `[\&]`; PostgreSQL's `[b]`). This analyzer rule puts
//! `brook_pg_replacement`, which writes the text in Rust's syntax, around the replacement
//! argument. Written here: no library translates between the two.

use datafusion::arrow::array::{ArrayRef, AsArray, StringArray};
use datafusion::arrow::datatypes::DataType;
use datafusion::common::config::ConfigOptions;
use datafusion::common::tree_node::{Transformed, TreeNode};
use datafusion::common::{Result, ScalarValue};
use datafusion::logical_expr::expr::ScalarFunction;
use datafusion::logical_expr::{
    ColumnarValue, Expr, LogicalPlan, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature,
    Volatility,
};
use datafusion::optimizer::AnalyzerRule;
use std::sync::Arc;

/// The rule, with its translating function.
#[derive(Debug)]
pub struct RegexpReplacement {
    translate: Arc<ScalarUDF>,
}

impl Default for RegexpReplacement {
    fn default() -> Self {
        RegexpReplacement {
            translate: Arc::new(ScalarUDF::new_from_impl(PgReplacement {
                signature: Signature::any(1, Volatility::Immutable),
            })),
        }
    }
}

impl AnalyzerRule for RegexpReplacement {
    fn analyze(&self, plan: LogicalPlan, _config: &ConfigOptions) -> Result<LogicalPlan> {
        crate::checked::rewrite_plan_expressions(plan, true, &|e, _schema| {
            e.transform_up(|e| {
                let Expr::ScalarFunction(mut f) = e else {
                    return Ok(Transformed::no(e));
                };
                let translated = matches!(
                    f.args.get(2),
                    Some(Expr::ScalarFunction(g)) if g.name() == "brook_pg_replacement"
                );
                if f.name() != "regexp_replace" || f.args.len() < 3 || translated {
                    return Ok(Transformed::no(Expr::ScalarFunction(f)));
                }
                let text = f.args[2].clone();
                f.args[2] = Expr::ScalarFunction(ScalarFunction::new_udf(
                    self.translate.clone(),
                    vec![text],
                ));
                Ok(Transformed::yes(Expr::ScalarFunction(f)))
            })
        })
    }

    fn name(&self) -> &str {
        "brook_regexp_replacement"
    }
}

/// PostgreSQL's replacement `text` in the syntax DataFusion's `regexp_replace` reads: `\N`
/// is `${N}`, `\&` is `${0}`, `\\` a backslash, `$` is `$$`. (A backslash before a digit
/// that is not a group, `\\1` or `\0`, still reaches DataFusion as `\1` / `\0`, which it
/// reads as a group: its translation of `\N` cannot be escaped.)
pub fn rust_replacement(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '$' => out.push_str("$$"),
            '\\' => match chars.peek().copied() {
                // One digit, as PostgreSQL reads `\10` (group 1, then `0`).
                Some(d @ '1'..='9') => {
                    chars.next();
                    out.push_str(&format!("${{{d}}}"));
                }
                Some('&') => {
                    chars.next();
                    out.push_str("${0}");
                }
                Some('\\') => {
                    chars.next();
                    out.push('\\');
                }
                _ => out.push('\\'),
            },
            c => out.push(c),
        }
    }
    out
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct PgReplacement {
    signature: Signature,
}

impl ScalarUDFImpl for PgReplacement {
    fn name(&self) -> &str {
        "brook_pg_replacement"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    /// The argument's own string type (`Utf8View` after DataFusion's coercion; NULL too).
    fn return_type(&self, args: &[DataType]) -> Result<DataType> {
        Ok(args.first().cloned().unwrap_or(DataType::Utf8))
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let scalar = matches!(args.args.first(), Some(ColumnarValue::Scalar(_)));
        let arrays = ColumnarValue::values_to_arrays(&args.args)?;
        let given = arrays[0].data_type().clone();
        if given == DataType::Null {
            return Ok(args.args[0].clone());
        }
        let text = datafusion::arrow::compute::cast(&arrays[0], &DataType::Utf8)?;
        let out: StringArray = text
            .as_string::<i32>()
            .iter()
            .map(|v| v.map(rust_replacement))
            .collect();
        let out = datafusion::arrow::compute::cast(&(Arc::new(out) as ArrayRef), &given)?;
        Ok(if scalar {
            ColumnarValue::Scalar(ScalarValue::try_from_array(&out, 0)?)
        } else {
            ColumnarValue::Array(out)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn postgresql_replacements_in_rust_syntax() {
        assert_eq!(rust_replacement("$0"), "$$0");
        assert_eq!(rust_replacement("[\\1]"), "[${1}]");
        assert_eq!(rust_replacement("\\10"), "${1}0");
        assert_eq!(rust_replacement("[\\&]"), "[${0}]");
        assert_eq!(rust_replacement("a\\\\b"), "a\\b");
        assert_eq!(rust_replacement("\\x"), "\\x");
        assert_eq!(rust_replacement("$\\1"), "$$${1}");
    }
}
