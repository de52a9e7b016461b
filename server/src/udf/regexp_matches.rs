//! `regexp_matches(text, pattern [, flags])`: PostgreSQL's set-returning function, one row
//! per match, each the match's capture groups as a text array (the whole match when the
//! pattern has no group; a group that took no part is NULL). Without the `g` flag only the
//! first match counts. Brook runs it as `unnest` of `brook_regexp_matches`, which gives a
//! row's matches as an array of arrays (`brook_planner::set_returning` rewrites the calls).
//! Written here because DataFusion's `regexp_match` gives the first match only.
//!
//! Matches are found as PostgreSQL finds them: after a match the search goes on from its
//! end, after an empty match from the next character, and an empty match right after
//! another match counts (`'aab'` and `'a*'` give `{aa}`, `{""}`, `{""}`; the regex crate's
//! own iterator would skip the middle one).

use super::regexp_split::{LastPattern, RegexArguments};
use brook_common::BrookError;
use datafusion::arrow::array::{ArrayRef, ListBuilder, StringBuilder};
use datafusion::arrow::datatypes::{DataType, Field};
use datafusion::error::DataFusionError;
use datafusion::logical_expr::{
    ColumnarValue, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, TypeSignature,
    Volatility,
};
use datafusion::prelude::SessionContext;
use regex::Regex;
use std::sync::Arc;

pub fn register(ctx: &SessionContext) {
    let strings = |n: usize| {
        TypeSignature::Coercible(
            (0..n)
                .map(|_| super::regexp_split::string_coercion())
                .collect(),
        )
    };
    ctx.register_udf(ScalarUDF::new_from_impl(RegexpMatches {
        signature: Signature::one_of(vec![strings(2), strings(3)], Volatility::Immutable),
    }));
}

/// `brook_regexp_matches`.
#[derive(Debug, PartialEq, Eq, Hash)]
struct RegexpMatches {
    signature: Signature,
}

fn text_list() -> DataType {
    DataType::List(Arc::new(Field::new_list_field(DataType::Utf8, true)))
}

impl ScalarUDFImpl for RegexpMatches {
    fn name(&self) -> &str {
        brook_planner::set_returning::REGEXP_MATCHES
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _arg_types: &[DataType]) -> datafusion::error::Result<DataType> {
        Ok(DataType::List(Arc::new(Field::new_list_field(
            text_list(),
            true,
        ))))
    }

    fn invoke_with_args(
        &self,
        args: ScalarFunctionArgs,
    ) -> datafusion::error::Result<ColumnarValue> {
        let (arrays, scalar, _) = crate::udf::argument_arrays(&args)?;
        let out = matches_all(&arrays).map_err(|e| DataFusionError::External(Box::new(e)))?;
        crate::udf::result_value(out, scalar)
    }
}

/// Every row's matches.
fn matches_all(args: &[ArrayRef]) -> Result<ArrayRef, BrookError> {
    let args = RegexArguments::new(args, "regexp_matches")?;
    let mut pattern = LastPattern::default();
    let mut out = ListBuilder::new(ListBuilder::new(StringBuilder::new()));
    for row in 0..args.rows() {
        let Some((text, p, f)) = args.row(row) else {
            out.append_null();
            continue;
        };
        // `g` is this function's own flag; the rest are the pattern's.
        let global = f.contains('g');
        let rest: String = f.chars().filter(|c| *c != 'g').collect();
        let re = pattern.get(p, &rest, "regexp_matches()")?;
        append_matches(re, text, global, out.values());
        out.append(true);
    }
    Ok(Arc::new(out.finish()))
}

/// Each match of `re` in `text` (the first only unless `global`) as an array of its groups.
fn append_matches(re: &Regex, text: &str, global: bool, out: &mut ListBuilder<StringBuilder>) {
    let groups = re.captures_len() - 1;
    let mut search = 0;
    while search <= text.len() {
        let Some(caps) = re.captures_at(text, search) else {
            break;
        };
        let Some(whole) = caps.get(0) else {
            break;
        };
        if groups == 0 {
            out.values().append_value(whole.as_str());
        } else {
            for g in 1..=groups {
                out.values().append_option(caps.get(g).map(|m| m.as_str()));
            }
        }
        out.append(true);
        if !global {
            break;
        }
        search = whole.end();
        if whole.is_empty() {
            search += text[search..].chars().next().map_or(1, char::len_utf8);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::udf::regexp_split::compile;
    use datafusion::arrow::array::{Array, AsArray};

    fn matches(text: &str, pattern: &str, global: bool) -> Vec<Vec<Option<String>>> {
        let re = compile(pattern, "", "f").unwrap();
        let mut out = ListBuilder::new(StringBuilder::new());
        append_matches(&re, text, global, &mut out);
        let lists = out.finish();
        (0..lists.len())
            .map(|i| {
                let v = lists.value(i);
                let v = v.as_string::<i32>();
                v.iter().map(|s| s.map(String::from)).collect()
            })
            .collect()
    }

    fn some(items: &[&str]) -> Vec<Option<String>> {
        items.iter().map(|s| Some(s.to_string())).collect()
    }

    /// PostgreSQL 15's answers.
    #[test]
    fn matches_as_postgresql() {
        assert_eq!(
            matches("foobarbaz", "b(a)(.)", true),
            [some(&["a", "r"]), some(&["a", "z"])]
        );
        assert_eq!(matches("foobarbaz", "b(a)(.)", false), [some(&["a", "r"])]);
        assert_eq!(
            matches("foobarbaz", "ba.", true),
            [some(&["bar"]), some(&["baz"])]
        );
        assert_eq!(matches("abc", "", true), vec![some(&[""]); 4]);
        assert_eq!(
            matches("aab", "a*", true),
            [some(&["aa"]), some(&[""]), some(&[""])]
        );
        assert_eq!(
            matches("ab", "(a)|(b)", true),
            [vec![Some("a".into()), None], vec![None, Some("b".into())]]
        );
        assert_eq!(matches("xyz", "q", true), Vec::<Vec<Option<String>>>::new());
        assert_eq!(matches("éü", "", true).len(), 3);
    }
}
