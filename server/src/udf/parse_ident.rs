//! `parse_ident(text [, strict])` as PostgreSQL's: the parts of a qualified name, a quoted
//! part as written (`""` a quote), an unquoted one with its ASCII letters in lower case, spaces around the dots
//! allowed. It replaces the compatibility crate's, which kept the spaces as parts of their
//! own and the case of unquoted parts, so `'"public" . "t"'::regclass` (what the ADBC
//! driver sends) named no relation. A text that is not a name is 22023, as PostgreSQL's.

use brook_common::{brook_err, BrookError};
use datafusion::arrow::array::{
    Array, ArrayRef, AsArray, BooleanArray, ListBuilder, StringBuilder,
};
use datafusion::arrow::datatypes::{DataType, Field};
use datafusion::error::DataFusionError;
use datafusion::logical_expr::{
    ColumnarValue, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, TypeSignature,
    Volatility,
};
use datafusion::prelude::SessionContext;
use std::sync::Arc;

/// The parts of `text`; with `strict`, text after the last part is an error, without it
/// the parts read so far are the answer.
fn parse(text: &str, strict: bool) -> Result<Vec<String>, BrookError> {
    let bad = || {
        brook_err!(
            InvalidParameter,
            "string is not a valid identifier: \"{text}\""
        )
    };
    let mut parts = vec![];
    let mut chars = text.chars().peekable();
    loop {
        while chars.peek().is_some_and(|c| c.is_whitespace()) {
            chars.next();
        }
        let mut part = String::new();
        if chars.peek() == Some(&'"') {
            chars.next();
            loop {
                match chars.next() {
                    Some('"') if chars.peek() == Some(&'"') => {
                        chars.next();
                        part.push('"');
                    }
                    Some('"') => break,
                    Some(c) => part.push(c),
                    None => return Err(bad()),
                }
            }
            if part.is_empty() {
                return Err(bad());
            }
        } else {
            // An unquoted part starts with a letter or `_`; PostgreSQL folds ASCII letters
            // only (a UTF8 database keeps `Ä`).
            if !chars.peek().is_some_and(|c| c.is_alphabetic() || *c == '_') {
                return Err(bad());
            }
            while let Some(&c) = chars.peek() {
                if c.is_alphanumeric() || c == '_' || c == '$' {
                    part.push(c.to_ascii_lowercase());
                    chars.next();
                } else {
                    break;
                }
            }
        }
        parts.push(part);
        while chars.peek().is_some_and(|c| c.is_whitespace()) {
            chars.next();
        }
        match chars.next() {
            None => return Ok(parts),
            Some('.') => continue,
            Some(_) if !strict => return Ok(parts),
            Some(_) => return Err(bad()),
        }
    }
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct ParseIdent {
    signature: Signature,
}

impl ScalarUDFImpl for ParseIdent {
    fn name(&self) -> &str {
        "parse_ident"
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
        let rows = args.number_rows;
        let arrays = ColumnarValue::values_to_arrays(&args.args)?;
        let texts = datafusion::arrow::compute::cast(&arrays[0], &DataType::Utf8)?;
        let texts = texts.as_string::<i32>();
        let strict: Option<&BooleanArray> = arrays.get(1).map(|a| a.as_boolean());
        let mut out = ListBuilder::new(StringBuilder::new());
        for row in 0..rows {
            if texts.is_null(row) || strict.is_some_and(|s| s.is_null(row)) {
                out.append_null();
                continue;
            }
            let strict = strict.is_none_or(|s| s.value(row));
            let parts = parse(texts.value(row), strict)
                .map_err(|e| DataFusionError::External(Box::new(e)))?;
            for p in parts {
                out.values().append_value(p);
            }
            out.append(true);
        }
        let out: ArrayRef = Arc::new(out.finish());
        Ok(ColumnarValue::Array(out))
    }
}

/// Register the function on a database context (after the crate's, which it replaces).
pub fn register(ctx: &SessionContext) {
    ctx.register_udf(ScalarUDF::new_from_impl(ParseIdent {
        signature: Signature::one_of(
            vec![
                TypeSignature::Exact(vec![DataType::Utf8]),
                TypeSignature::Exact(vec![DataType::Utf8, DataType::Boolean]),
            ],
            Volatility::Immutable,
        ),
    }));
}

#[cfg(test)]
mod tests {
    use super::parse;

    #[test]
    fn parts_as_postgresql_reads_them() {
        assert_eq!(parse("\"public\" . \"T\"", true).unwrap(), ["public", "T"]);
        assert_eq!(parse("Public.Items", true).unwrap(), ["public", "items"]);
        assert_eq!(parse("\"a\"\"b\"", true).unwrap(), ["a\"b"]);
        assert_eq!(parse("a.b junk", false).unwrap(), ["a", "b"]);
        assert_eq!(parse("Äb.ß", true).unwrap(), ["Äb", "ß"]);
        for bad in ["", "a.", ".a", "a b", "\"\"", "\"open", "1a"] {
            let e = parse(bad, true).unwrap_err();
            assert_eq!(e.sqlstate(), "22023", "{bad}");
        }
    }
}
