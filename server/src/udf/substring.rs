//! PostgreSQL's `substring`: by position (`substring(s FROM 2 FOR 3)`, `substr(s, 2)`) as
//! DataFusion's `substr`, and by POSIX regular expression (`substring(s FROM 'c=([^&]*)')`,
//! `substring(s, pattern)`), which DataFusion lacks: the part of `s` that the first
//! parenthesised subexpression matched, or the whole match when the pattern has none; NULL
//! when nothing matches. The SQL form and the call form choose by the type of the second
//! argument, as PostgreSQL does.

use super::is_text;
use brook_common::{brook_err, BrookError};
use datafusion::arrow::array::{Array, ArrayRef, AsArray, StringBuilder};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::DataType;
use datafusion::common::types::{
    logical_int16, logical_int32, logical_int64, logical_int8, logical_string, NativeType,
};
use datafusion::error::DataFusionError;
use datafusion::logical_expr::{
    Coercion, ColumnarValue, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature,
    TypeSignature, TypeSignatureClass, Volatility,
};
use datafusion::prelude::SessionContext;
use regex::Regex;
use std::sync::Arc;

pub fn register(ctx: &SessionContext) {
    let string = || Coercion::new_exact(TypeSignatureClass::Native(logical_string()));
    // Positions of any integer type (psycopg sends small ints as smallint).
    let int = || {
        Coercion::new_implicit(
            TypeSignatureClass::Native(logical_int64()),
            vec![
                TypeSignatureClass::Native(logical_int32()),
                TypeSignatureClass::Native(logical_int16()),
                TypeSignatureClass::Native(logical_int8()),
            ],
            NativeType::Int64,
        )
    };
    let positions = vec![
        TypeSignature::Coercible(vec![string(), int()]),
        TypeSignature::Coercible(vec![string(), int(), int()]),
    ];
    let mut forms = positions.clone();
    forms.extend([
        TypeSignature::Coercible(vec![string(), string()]),
        // `substring(s FROM pattern FOR escape)` (SQL regular expressions): refused by name.
        TypeSignature::Coercible(vec![string(), string(), string()]),
    ]);
    // PostgreSQL's `substr` has positions only; `substring` also the pattern forms.
    for (name, forms) in [("substr", positions), ("substring", forms)] {
        ctx.register_udf(ScalarUDF::new_from_impl(Substring {
            name,
            signature: Signature::one_of(forms, Volatility::Immutable),
            inner: datafusion::functions::unicode::substr(),
        }));
    }
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct Substring {
    name: &'static str,
    signature: Signature,
    inner: Arc<ScalarUDF>,
}

impl ScalarUDFImpl for Substring {
    fn name(&self) -> &str {
        self.name
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, arg_types: &[DataType]) -> datafusion::common::Result<DataType> {
        match arg_types {
            [_, pattern] if is_text(pattern) => Ok(DataType::Utf8),
            [_, pattern, _] if is_text(pattern) => Err(DataFusionError::NotImplemented(
                "substring(text FROM pattern FOR escape) (a SQL regular expression) is not supported; use substring(text FROM posix_pattern)".into(),
            )),
            _ => self.inner.return_type(arg_types),
        }
    }

    fn invoke_with_args(
        &self,
        args: ScalarFunctionArgs,
    ) -> datafusion::common::Result<ColumnarValue> {
        match args.args.as_slice() {
            [text, pattern] if is_text(&pattern.data_type()) => {
                let rows = args.number_rows;
                let (text, pattern) = (text.to_array(rows)?, pattern.to_array(rows)?);
                let out = by_pattern(&text, &pattern)
                    .map_err(|e| DataFusionError::External(Box::new(e)))?;
                Ok(ColumnarValue::Array(out))
            }
            [_, _, length] => {
                // PostgreSQL: 22011 (DataFusion's own message is an internal error).
                let lengths = cast(&length.to_array(args.number_rows)?, &DataType::Int64)?;
                let lengths = lengths.as_primitive::<datafusion::arrow::datatypes::Int64Type>();
                if lengths.iter().flatten().any(|n| n < 0) {
                    return Err(negative_length());
                }
                self.inner.invoke_with_args(args)
            }
            _ => self.inner.invoke_with_args(args),
        }
    }
}

fn negative_length() -> DataFusionError {
    DataFusionError::External(Box::new(brook_err!(
        SubstringError,
        "negative substring length not allowed"
    )))
}

/// The regular-expression form over a batch; a pattern is compiled once per run of equal
/// patterns (once per batch for a constant).
fn by_pattern(text: &ArrayRef, pattern: &ArrayRef) -> Result<ArrayRef, BrookError> {
    let text = cast(text, &DataType::Utf8)?;
    let pattern = cast(pattern, &DataType::Utf8)?;
    let (text, pattern) = (text.as_string::<i32>(), pattern.as_string::<i32>());
    let mut compiled: Option<(String, Regex)> = None;
    let mut out = StringBuilder::with_capacity(text.len(), 0);
    for row in 0..text.len() {
        if text.is_null(row) || pattern.is_null(row) {
            out.append_null();
            continue;
        }
        let p = pattern.value(row);
        if compiled.as_ref().is_none_or(|(seen, _)| seen != p) {
            let re = crate::udf::regexp_split::compile(p, "", "substring()")?;
            compiled = Some((p.to_string(), re));
        }
        let Some((_, re)) = compiled.as_ref() else {
            out.append_null();
            continue;
        };
        out.append_option(first_group(re, text.value(row)));
    }
    Ok(Arc::new(out.finish()))
}

/// What PostgreSQL's `substring(s FROM pattern)` returns for one string.
fn first_group<'a>(re: &Regex, s: &'a str) -> Option<&'a str> {
    let found = re.captures(s)?;
    let part = if re.captures_len() > 1 {
        found.get(1)
    } else {
        found.get(0)
    };
    part.map(|m| m.as_str())
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::arrow::array::StringArray;

    fn run(text: &[Option<&str>], pattern: &[Option<&str>]) -> Vec<Option<String>> {
        let text: ArrayRef = Arc::new(StringArray::from(text.to_vec()));
        let pattern: ArrayRef = Arc::new(StringArray::from(pattern.to_vec()));
        let out = by_pattern(&text, &pattern).expect("valid patterns");
        let out = out.as_string::<i32>();
        (0..out.len())
            .map(|i| (!out.is_null(i)).then(|| out.value(i).to_string()))
            .collect()
    }

    #[test]
    fn the_first_group_or_the_whole_match_or_null() {
        let url = "item.htm?query=1&channel_id=163053568";
        let got = run(
            &[
                Some(url),
                Some(url),
                Some(url),
                Some("abc"),
                None,
                Some("abc"),
            ],
            &[
                Some("channel_id=([^&]*)"),
                Some("(?:&|^|\\?)channel_id=([0-9]+)"),
                Some("q[a-z]+"),
                Some("(x)|b"),
                Some("a"),
                None,
            ],
        );
        assert_eq!(
            got,
            vec![
                Some("163053568".to_string()),
                Some("163053568".to_string()),
                Some("query".to_string()),
                None,
                None,
                None,
            ]
        );
    }

    #[test]
    fn a_bad_pattern_is_2201b() {
        let text: ArrayRef = Arc::new(StringArray::from(vec!["a"]));
        let pattern: ArrayRef = Arc::new(StringArray::from(vec!["("]));
        let e = by_pattern(&text, &pattern).expect_err("an unclosed group");
        assert_eq!(e.sqlstate(), "2201B");
    }
}
