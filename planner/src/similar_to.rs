//! `x SIMILAR TO pattern`, as PostgreSQL reads it: the whole value matches the pattern, `%`
//! is any run of characters, `_` any one, `.` itself, and `| * + ? {m,n} ( ) [...]` are
//! regular-expression operators.
//!
//! DataFusion runs the pattern as a regular expression searched anywhere in the value
//! (`'foo' SIMILAR TO 'fo'` was true, `'foo' SIMILAR TO 'f%'` false: wrong answers). This
//! analyzer rule makes it a regular-expression match (`~`) against the pattern translated
//! as PostgreSQL's `similar_escape` does. Written here: no library translates SQL's
//! SIMILAR TO patterns.

use datafusion::arrow::array::{Array, ArrayRef, AsArray, StringArray};
use datafusion::arrow::datatypes::DataType;
use datafusion::common::config::ConfigOptions;
use datafusion::common::tree_node::{Transformed, TreeNode};
use datafusion::common::{exec_err, Result, ScalarValue};
use datafusion::logical_expr::expr::{Like, ScalarFunction};
use datafusion::logical_expr::{
    lit, BinaryExpr, ColumnarValue, Expr, LogicalPlan, Operator, ScalarFunctionArgs, ScalarUDF,
    ScalarUDFImpl, Signature, Volatility,
};
use datafusion::optimizer::AnalyzerRule;
use std::sync::Arc;

/// The rule, with the translating function it applies.
#[derive(Debug)]
pub struct SimilarTo {
    translate: Arc<ScalarUDF>,
}

impl Default for SimilarTo {
    fn default() -> Self {
        SimilarTo {
            translate: Arc::new(ScalarUDF::new_from_impl(SimilarToRegex {
                signature: Signature::any(2, Volatility::Immutable),
            })),
        }
    }
}

impl AnalyzerRule for SimilarTo {
    fn analyze(&self, plan: LogicalPlan, _config: &ConfigOptions) -> Result<LogicalPlan> {
        crate::checked::rewrite_plan_expressions(plan, true, &|e, _schema| {
            e.transform_up(|e| self.rewrite(e))
        })
    }

    fn name(&self) -> &str {
        "brook_similar_to"
    }
}

impl SimilarTo {
    fn rewrite(&self, e: Expr) -> Result<Transformed<Expr>> {
        let Expr::SimilarTo(Like {
            negated,
            expr,
            pattern,
            escape_char,
            case_insensitive,
        }) = e
        else {
            return Ok(Transformed::no(e));
        };
        let escape = escape_char.map_or_else(|| lit("\\"), |c| lit(c.to_string()));
        let regex = Expr::ScalarFunction(ScalarFunction::new_udf(
            self.translate.clone(),
            vec![*pattern, escape],
        ));
        let op = match (negated, case_insensitive) {
            (false, false) => Operator::RegexMatch,
            (true, false) => Operator::RegexNotMatch,
            (false, true) => Operator::RegexIMatch,
            (true, true) => Operator::RegexNotIMatch,
        };
        Ok(Transformed::yes(Expr::BinaryExpr(BinaryExpr::new(
            expr,
            op,
            Box::new(regex),
        ))))
    }
}

/// A SIMILAR TO pattern (and its escape character) as an anchored regular expression.
#[derive(Debug, PartialEq, Eq, Hash)]
struct SimilarToRegex {
    signature: Signature,
}

impl ScalarUDFImpl for SimilarToRegex {
    fn name(&self) -> &str {
        "brook_similar_to_regex"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _args: &[DataType]) -> Result<DataType> {
        Ok(DataType::Utf8)
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let scalar = args
            .args
            .iter()
            .all(|a| matches!(a, ColumnarValue::Scalar(_)));
        let arrays = ColumnarValue::values_to_arrays(&args.args)?;
        let text = |a: &ArrayRef| datafusion::arrow::compute::cast(a, &DataType::Utf8);
        let (patterns, escapes) = (text(&arrays[0])?, text(&arrays[1])?);
        let (patterns, escapes) = (patterns.as_string::<i32>(), escapes.as_string::<i32>());
        let mut out = Vec::with_capacity(patterns.len());
        for i in 0..patterns.len() {
            if patterns.is_null(i) || escapes.is_null(i) {
                out.push(None);
                continue;
            }
            let mut escape = escapes.value(i).chars();
            let escape = match (escape.next(), escape.next()) {
                (e, None) => e,
                _ => return exec_err!("invalid escape string: it must be empty or one character"),
            };
            out.push(Some(regex_of(patterns.value(i), escape)));
        }
        let out: ArrayRef = Arc::new(StringArray::from(out));
        if scalar {
            return Ok(ColumnarValue::Scalar(ScalarValue::try_from_array(&out, 0)?));
        }
        Ok(ColumnarValue::Array(out))
    }
}

/// PostgreSQL's `similar_escape`: `pattern` as a regular expression matching whole values.
fn regex_of(pattern: &str, escape: Option<char>) -> String {
    let mut out = String::from("^(?:");
    let mut in_brackets = false;
    let mut chars = pattern.chars();
    while let Some(c) = chars.next() {
        if Some(c) == escape {
            // The next character stands for itself.
            if let Some(next) = chars.next() {
                out.push_str(&regex_syntax_escape(next));
            }
            continue;
        }
        match c {
            '[' if !in_brackets => {
                in_brackets = true;
                out.push(c);
            }
            ']' if in_brackets => {
                in_brackets = false;
                out.push(c);
            }
            _ if in_brackets => {
                if c == '\\' {
                    out.push('\\');
                }
                out.push(c);
            }
            '%' => out.push_str(".*"),
            '_' => out.push('.'),
            '|' | '*' | '+' | '?' | '{' | '}' | '(' | ')' => out.push(c),
            other => out.push_str(&regex_syntax_escape(other)),
        }
    }
    out.push_str(")$");
    out
}

/// One character as a regular expression that matches it.
fn regex_syntax_escape(c: char) -> String {
    let mut s = String::new();
    if "\\.^$|?*+()[]{}".contains(c) {
        s.push('\\');
    }
    s.push(c);
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patterns_read_as_postgresql_reads_them() {
        assert_eq!(regex_of("f%", Some('\\')), "^(?:f.*)$");
        assert_eq!(regex_of("a_c", Some('\\')), "^(?:a.c)$");
        assert_eq!(regex_of("a.c", Some('\\')), "^(?:a\\.c)$");
        assert_eq!(regex_of("(a|b)%", Some('\\')), "^(?:(a|b).*)$");
        assert_eq!(regex_of("100\\%", Some('\\')), "^(?:100%)$");
        assert_eq!(regex_of("a#_b", Some('#')), "^(?:a_b)$");
        assert_eq!(regex_of("[a-c]{2}", None), "^(?:[a-c]{2})$");
    }
}
