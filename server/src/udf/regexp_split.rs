//! `regexp_split_to_array(text, pattern [, flags])`: `text` split at each match of a
//! POSIX-style regular expression, as PostgreSQL splits it. Its set-returning forms,
//! `regexp_split_to_table` and `string_to_table`, are `unnest` of this function and of
//! `string_to_array` (`brook_planner::set_returning` and `lateral` rewrite them). Written here
//! because DataFusion has no regular-expression split; the regex crate matches.
//!
//! PostgreSQL's rule for empty matches is kept: one at the start or the end of the text,
//! or right after the previous match, does not split (`'hello world'` split at `'\s*'` is
//! its letters). Flags as PostgreSQL's: `i` ignores case, `c` does not, `n` (or `m`) makes
//! `.` and `^`/`$` newline-sensitive, `p` and `w` partly so, `s` not at all (the default),
//! `x` allows spaces and comments, `q` takes the pattern literally; `g` is 22023, as in
//! PostgreSQL (a split always splits at every match).

use brook_common::{brook_err, BrookError};
use datafusion::arrow::array::{Array, ArrayRef, AsArray, ListBuilder, StringBuilder};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, Field};
use datafusion::error::DataFusionError;
use datafusion::logical_expr::{
    ColumnarValue, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, TypeSignature,
    Volatility,
};
use datafusion::prelude::SessionContext;
use regex::{Regex, RegexBuilder};
use std::sync::Arc;

pub fn register(ctx: &SessionContext) {
    // (text, pattern) or (text, pattern, flags), each any string type.
    let strings = |n: usize| TypeSignature::Coercible((0..n).map(|_| string_coercion()).collect());
    ctx.register_udf(ScalarUDF::new_from_impl(RegexpSplit {
        signature: Signature::one_of(vec![strings(2), strings(3)], Volatility::Immutable),
    }));
}

pub(crate) fn string_coercion() -> datafusion::logical_expr::Coercion {
    datafusion::logical_expr::Coercion::new_exact(
        datafusion::logical_expr::TypeSignatureClass::Native(
            datafusion::common::types::logical_string(),
        ),
    )
}

/// `regexp_split_to_array`.
#[derive(Debug, PartialEq, Eq, Hash)]
struct RegexpSplit {
    signature: Signature,
}

impl ScalarUDFImpl for RegexpSplit {
    fn name(&self) -> &str {
        "regexp_split_to_array"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _arg_types: &[DataType]) -> datafusion::error::Result<DataType> {
        Ok(DataType::List(Arc::new(Field::new_list_field(
            DataType::Utf8,
            true,
        ))))
    }

    fn invoke_with_args(
        &self,
        args: ScalarFunctionArgs,
    ) -> datafusion::error::Result<ColumnarValue> {
        let (arrays, scalar, _) = crate::udf::argument_arrays(&args)?;
        let out = split_all(&arrays).map_err(|e| DataFusionError::External(Box::new(e)))?;
        crate::udf::result_value(out, scalar)
    }
}

/// The text, pattern and (optional) flags arguments of a regular-expression function, as
/// strings.
pub(crate) struct RegexArguments {
    strings: Vec<ArrayRef>,
}

impl RegexArguments {
    /// The arguments of `function`, which takes 2 or 3.
    pub(crate) fn new(args: &[ArrayRef], function: &str) -> Result<Self, BrookError> {
        if !(2..=3).contains(&args.len()) {
            return Err(brook_err!(Internal, "{function} takes 2 or 3 arguments"));
        }
        let strings = args
            .iter()
            .map(|a| cast(a, &DataType::Utf8))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(RegexArguments { strings })
    }

    pub(crate) fn rows(&self) -> usize {
        self.strings[0].len()
    }

    /// Row `row`'s text, pattern and flags (`""` when not given); None when one is NULL.
    pub(crate) fn row(&self, row: usize) -> Option<(&str, &str, &str)> {
        let value = |i: usize| {
            self.strings.get(i).map(|a| {
                let a = a.as_string::<i32>();
                (!a.is_null(row)).then(|| a.value(row))
            })
        };
        Some((value(0)??, value(1)??, value(2).unwrap_or(Some(""))?))
    }
}

/// The last pattern compiled, kept while the rows repeat it and its flags.
#[derive(Default)]
pub(crate) struct LastPattern {
    last: Option<(String, String, Regex)>,
}

impl LastPattern {
    /// `pattern` with `flags` compiled ([`compile`]), reusing the last one when equal.
    pub(crate) fn get(
        &mut self,
        pattern: &str,
        flags: &str,
        function: &str,
    ) -> Result<&Regex, BrookError> {
        let same = self
            .last
            .as_ref()
            .is_some_and(|(p, f, _)| p == pattern && f == flags);
        if !same {
            let re = compile(pattern, flags, function)?;
            self.last = Some((pattern.to_string(), flags.to_string(), re));
        }
        match &self.last {
            Some((_, _, re)) => Ok(re),
            None => Err(brook_err!(Internal, "no compiled pattern")),
        }
    }
}

/// Every row's split.
fn split_all(args: &[ArrayRef]) -> Result<ArrayRef, BrookError> {
    let args = RegexArguments::new(args, "regexp_split_to_array")?;
    let mut pattern = LastPattern::default();
    let mut out = ListBuilder::new(StringBuilder::new());
    for row in 0..args.rows() {
        let Some((text, p, f)) = args.row(row) else {
            out.append_null();
            continue;
        };
        for piece in split(pattern.get(p, f, "regexp_split_to_array()")?, text) {
            out.values().append_value(piece);
        }
        out.append(true);
    }
    Ok(Arc::new(out.finish()))
}

/// `text` split as PostgreSQL splits it (see the module's comment).
pub(crate) fn split<'a>(re: &Regex, text: &'a str) -> Vec<&'a str> {
    let mut pieces = Vec::new();
    let (mut piece_start, mut prev_end, mut search) = (0, 0, 0);
    while search <= text.len() {
        let Some(m) = re.find_at(text, search) else {
            break;
        };
        // Empty matches at the end, at the start or right after a match do not split.
        if m.start() < text.len() && m.end() > prev_end {
            pieces.push(&text[piece_start..m.start()]);
            piece_start = m.end();
            prev_end = m.end();
        }
        // On from the match's end; past an empty match by one character (not byte).
        search = m.end();
        if m.is_empty() {
            search += text[search..].chars().next().map_or(1, char::len_utf8);
        }
    }
    pieces.push(&text[piece_start..]);
    pieces
}

/// A PostgreSQL regular expression with its flags as the regex crate compiles it; 2201B
/// for a pattern it cannot, 22023 for a flag PostgreSQL would refuse here. `function`
/// names the caller in those messages.
pub(crate) fn compile(pattern: &str, flags: &str, function: &str) -> Result<Regex, BrookError> {
    // PostgreSQL's default: `.` and `[^x]` match a newline, `^`/`$` only at the ends.
    let (mut dot_newline, mut multi_line, mut case_insensitive) = (true, false, false);
    let (mut extended, mut literal) = (false, false);
    for flag in flags.chars() {
        match flag {
            'i' => case_insensitive = true,
            'c' => case_insensitive = false,
            'n' | 'm' => (dot_newline, multi_line) = (false, true),
            'p' => (dot_newline, multi_line) = (false, false),
            'w' => (dot_newline, multi_line) = (true, true),
            's' => (dot_newline, multi_line) = (true, false),
            'x' => extended = true,
            'q' => literal = true,
            't' => extended = false,
            'b' | 'e' => {
                return Err(brook_err!(
                    Unsupported,
                    "regular expression option \"{flag}\" (basic and extended POSIX syntax; \
                     patterns are read as PostgreSQL's advanced ones)"
                ))
            }
            'g' => {
                return Err(brook_err!(
                    InvalidParameter,
                    "{function} does not support the \"global\" option"
                ))
            }
            other => {
                return Err(brook_err!(
                    InvalidParameter,
                    "invalid regular expression option: \"{other}\""
                ))
            }
        }
    }
    let pattern = if literal {
        regex::escape(pattern)
    } else {
        pattern.to_string()
    };
    RegexBuilder::new(&pattern)
        .dot_matches_new_line(dot_newline)
        .multi_line(multi_line)
        .case_insensitive(case_insensitive)
        .ignore_whitespace(extended && !literal)
        .build()
        .map_err(|e| {
            // The regex crate draws the pattern with a caret over several lines; its last
            // line says what is wrong.
            let text = e.to_string();
            let why = text.lines().last().unwrap_or_default();
            brook_err!(
                InvalidRegex,
                "invalid regular expression: {}",
                why.trim_start_matches("error: ")
            )
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pieces(text: &str, pattern: &str, flags: &str) -> Vec<String> {
        let re = compile(pattern, flags, "f").unwrap();
        split(&re, text).into_iter().map(String::from).collect()
    }

    /// PostgreSQL 15's answers.
    #[test]
    fn splits_as_postgresql() {
        assert_eq!(
            pieces("the quick brown fox", r"\s+", ""),
            ["the", "quick", "brown", "fox"]
        );
        assert_eq!(
            pieces("hello world", r"\s*", ""),
            ["h", "e", "l", "l", "o", "w", "o", "r", "l", "d"]
        );
        assert_eq!(pieces("abc", "", ""), ["a", "b", "c"]);
        assert_eq!(pieces(",a,,b,", ",", ""), ["", "a", "", "b", ""]);
        assert_eq!(pieces("", ",", ""), [""]);
        assert_eq!(pieces("aXbxc", "x", "i"), ["a", "b", "c"]);
        assert_eq!(pieces("é,ü", "", ""), ["é", ",", "ü"]);
        assert_eq!(pieces("a.b", ".", "q"), ["a", "b"]);
    }

    #[test]
    fn flags_postgresql_refuses_are_22023() {
        for flags in ["g", "z"] {
            let e = compile("a", flags, "regexp_split_to_array()").unwrap_err();
            assert_eq!(e.sqlstate(), "22023", "{flags}: {e}");
        }
        assert_eq!(compile("(", "", "f").unwrap_err().sqlstate(), "2201B");
    }
}
