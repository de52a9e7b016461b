//! PostgreSQL's character-set functions: `getdatabaseencoding()`, `pg_client_encoding()`,
//! `pg_char_to_encoding(name)` and `pg_encoding_to_char(int)`. Brook's databases and
//! connections are UTF8; the numbering is PostgreSQL's (`pg_wchar.h`), which clients
//! compare against catalogs (psql's `\dO` filters `pg_collation.collencoding` with it).

use datafusion::arrow::array::{ArrayRef, AsArray, Int32Array, StringArray};
use datafusion::arrow::datatypes::{DataType, Int32Type};
use datafusion::logical_expr::{create_udf, ColumnarValue, Volatility};
use datafusion::prelude::SessionContext;
use datafusion::scalar::ScalarValue;
use std::sync::Arc;

/// PostgreSQL's encodings by number (`pg_enc`), the server encodings first.
const ENCODINGS: [&str; 42] = [
    "SQL_ASCII",
    "EUC_JP",
    "EUC_CN",
    "EUC_KR",
    "EUC_TW",
    "EUC_JIS_2004",
    "UTF8",
    "MULE_INTERNAL",
    "LATIN1",
    "LATIN2",
    "LATIN3",
    "LATIN4",
    "LATIN5",
    "LATIN6",
    "LATIN7",
    "LATIN8",
    "LATIN9",
    "LATIN10",
    "WIN1256",
    "WIN1258",
    "WIN866",
    "WIN874",
    "KOI8R",
    "WIN1251",
    "WIN1252",
    "ISO_8859_5",
    "ISO_8859_6",
    "ISO_8859_7",
    "ISO_8859_8",
    "WIN1250",
    "WIN1253",
    "WIN1254",
    "WIN1255",
    "WIN1257",
    "KOI8U",
    "SJIS",
    "BIG5",
    "GBK",
    "UHC",
    "GB18030",
    "JOHAB",
    "SHIFT_JIS_2004",
];

/// The number of encoding `name`, -1 for none. PostgreSQL compares names without case
/// and without punctuation (`utf-8`, `Utf8` and `UTF_8` are UTF8).
fn encoding_number(name: &str) -> i32 {
    let clean = |s: &str| -> String {
        s.chars()
            .filter(char::is_ascii_alphanumeric)
            .map(|c| c.to_ascii_lowercase())
            .collect()
    };
    let wanted = clean(name);
    ENCODINGS
        .iter()
        .position(|e| clean(e) == wanted)
        .and_then(|i| i32::try_from(i).ok())
        .unwrap_or(-1)
}

/// The name of encoding number `n`, empty for none (as PostgreSQL answers).
fn encoding_name(n: i32) -> &'static str {
    usize::try_from(n)
        .ok()
        .and_then(|i| ENCODINGS.get(i))
        .copied()
        .unwrap_or("")
}

/// Register the functions on a database context.
pub fn register(ctx: &SessionContext) {
    for name in ["getdatabaseencoding", "pg_client_encoding"] {
        ctx.register_udf(create_udf(
            name,
            vec![],
            DataType::Utf8,
            Volatility::Stable,
            Arc::new(|_args: &[ColumnarValue]| {
                Ok(ColumnarValue::Scalar(ScalarValue::Utf8(Some(
                    "UTF8".to_string(),
                ))))
            }),
        ));
    }
    ctx.register_udf(create_udf(
        "pg_char_to_encoding",
        vec![DataType::Utf8],
        DataType::Int32,
        Volatility::Stable,
        Arc::new(datafusion::functions::utils::make_scalar_function(
            |args: &[ArrayRef]| {
                let names = args[0].as_string::<i32>();
                let out: Int32Array = names.iter().map(|n| n.map(encoding_number)).collect();
                Ok(Arc::new(out) as ArrayRef)
            },
            vec![],
        )),
    ));
    ctx.register_udf(create_udf(
        "pg_encoding_to_char",
        vec![DataType::Int32],
        DataType::Utf8,
        Volatility::Stable,
        Arc::new(datafusion::functions::utils::make_scalar_function(
            |args: &[ArrayRef]| {
                let numbers = args[0].as_primitive::<Int32Type>();
                let out: StringArray = numbers.iter().map(|n| n.map(encoding_name)).collect();
                Ok(Arc::new(out) as ArrayRef)
            },
            vec![],
        )),
    ));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_numbers_are_postgresqls() {
        assert_eq!(encoding_number("UTF8"), 6);
        assert_eq!(encoding_number("utf-8"), 6);
        assert_eq!(encoding_number("sql_ascii"), 0);
        assert_eq!(encoding_number("Shift_JIS_2004"), 41);
        assert_eq!(encoding_number("klingon"), -1);
        assert_eq!(encoding_name(6), "UTF8");
        assert_eq!(encoding_name(8), "LATIN1");
        assert_eq!(encoding_name(-1), "");
        assert_eq!(encoding_name(42), "");
    }
}
