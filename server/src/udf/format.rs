//! PostgreSQL's `format(formatstr, arg ...)`: `%s` (text), `%I` (identifier, quoted when it
//! must be), `%L` (literal), `%%`, with `n$` positions, the `-` flag and widths (`10`, `*`,
//! `*n$`). Values are written in PostgreSQL's text forms (the same as query results). Written
//! here because DataFusion has no `format` and its `concat`/`to_char` differ from it.

use crate::pg::encode::ColumnView;
use brook_common::{brook_err, BrookError, Result};
use datafusion::arrow::array::{Array, ArrayRef, AsArray, StringBuilder};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, Field};
use datafusion::logical_expr::{
    ColumnarValue, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, Volatility,
};
use datafusion::prelude::SessionContext;
use std::sync::Arc;

pub fn register(ctx: &SessionContext) {
    ctx.register_udf(ScalarUDF::new_from_impl(Format {
        signature: Signature::variadic_any(Volatility::Stable),
    }));
    // `quote_ident(text)`: quoted unless lower case letters, digits and `_` and no keyword
    // (the catalog crate's left `Foo` unquoted, which reads back as `foo`).
    ctx.register_udf(datafusion::logical_expr::create_udf(
        "quote_ident",
        vec![DataType::Utf8],
        DataType::Utf8,
        Volatility::Immutable,
        Arc::new(datafusion::functions::utils::make_scalar_function(
            |args: &[ArrayRef]| {
                let out: datafusion::arrow::array::StringArray = args[0]
                    .as_string::<i32>()
                    .iter()
                    .map(|v| v.map(crate::ident::quote_if_needed))
                    .collect();
                Ok(Arc::new(out) as ArrayRef)
            },
            vec![],
        )),
    ));
    // `quote_literal(text)` (NULL for NULL) and `quote_nullable(text)` (`NULL` for NULL),
    // the quoting of `%L`.
    for (name, null) in [("quote_literal", None), ("quote_nullable", Some("NULL"))] {
        ctx.register_udf(datafusion::logical_expr::create_udf(
            name,
            vec![DataType::Utf8],
            DataType::Utf8,
            Volatility::Immutable,
            Arc::new(datafusion::functions::utils::make_scalar_function(
                move |args: &[ArrayRef]| {
                    let text = cast(&args[0], &DataType::Utf8)?;
                    let out: datafusion::arrow::array::StringArray = text
                        .as_string::<i32>()
                        .iter()
                        .map(|v| v.map_or(null.map(str::to_string), |v| Some(quote_literal(v))))
                        .collect();
                    Ok(Arc::new(out) as ArrayRef)
                },
                vec![],
            )),
        ));
    }
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct Format {
    signature: Signature,
}

impl ScalarUDFImpl for Format {
    fn name(&self) -> &str {
        "format"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _arg_types: &[DataType]) -> datafusion::common::Result<DataType> {
        Ok(DataType::Utf8)
    }

    fn invoke_with_args(
        &self,
        args: ScalarFunctionArgs,
    ) -> datafusion::common::Result<ColumnarValue> {
        datafusion::functions::utils::make_scalar_function(
            |args: &[ArrayRef]| {
                format_all(args)
                    .map_err(|e| datafusion::error::DataFusionError::External(Box::new(e)))
            },
            vec![],
        )(&args.args)
    }
}

fn format_all(args: &[ArrayRef]) -> Result<ArrayRef> {
    let Some(first) = args.first() else {
        return Err(brook_err!(
            UndefinedFunction,
            "function format() does not exist (it takes a format string)"
        ));
    };
    let formats = cast(first, &DataType::Utf8)?;
    let formats = formats.as_string::<i32>();
    // An untyped NULL (`format('%L', NULL)`) is a NullArray, whose rows report no nulls.
    let values = args[1..]
        .iter()
        .map(|a| match a.data_type() {
            DataType::Null => cast(a, &DataType::Utf8),
            _ => Ok(a.clone()),
        })
        .collect::<std::result::Result<Vec<_>, _>>()?;
    let fields: Vec<Field> = values
        .iter()
        .map(|a| Field::new("", a.data_type().clone(), true))
        .collect();
    let views = values
        .iter()
        .zip(&fields)
        .map(|(a, f)| ColumnView::new(a, f))
        .collect::<Result<Vec<_>>>()?;
    let mut out = StringBuilder::new();
    let mut text = String::new();
    for row in 0..formats.len() {
        if formats.is_null(row) {
            out.append_null();
            continue;
        }
        text.clear();
        format_row(formats.value(row), &views, row, &mut text)?;
        out.append_value(&text);
    }
    Ok(Arc::new(out.finish()))
}

/// One conversion's argument: its text, or None for NULL.
fn argument(views: &[ColumnView<'_>], at: usize, row: usize) -> Result<Option<String>> {
    let v = views
        .get(at)
        .ok_or_else(|| brook_err!(InvalidParameter, "too few arguments for format()"))?;
    if v.is_null(row) {
        return Ok(None);
    }
    let mut s = String::new();
    v.write_text(row, &mut s);
    Ok(Some(s))
}

/// Digits at `chars[*i..]`, as a number, advancing `i`.
fn number(chars: &[char], i: &mut usize) -> Result<Option<usize>> {
    let start = *i;
    while *i < chars.len() && chars[*i].is_ascii_digit() {
        *i += 1;
    }
    if *i == start {
        return Ok(None);
    }
    let digits: String = chars[start..*i].iter().collect();
    digits
        .parse::<usize>()
        .map(Some)
        .map_err(|_| brook_err!(InvalidParameter, "number is out of range in format()"))
}

fn format_row(fmt: &str, views: &[ColumnView<'_>], row: usize, out: &mut String) -> Result<()> {
    let unterminated = || brook_err!(InvalidParameter, "unterminated format() type specifier");
    let chars: Vec<char> = fmt.chars().collect();
    let mut next_arg = 0usize;
    let mut i = 0;
    while i < chars.len() {
        if chars[i] != '%' {
            out.push(chars[i]);
            i += 1;
            continue;
        }
        i += 1;
        match chars.get(i) {
            None => return Err(unterminated()),
            Some('%') => {
                out.push('%');
                i += 1;
                continue;
            }
            Some(_) => {}
        }
        // [n$][-][width | * | *n$]type
        let mut at = next_arg;
        let mark = i;
        if let Some(n) = number(&chars, &mut i)? {
            if chars.get(i) == Some(&'$') {
                at = position(n)?;
                i += 1;
            } else {
                i = mark;
            }
        }
        let mut left = false;
        while chars.get(i) == Some(&'-') {
            left = true;
            i += 1;
        }
        let mut width = 0usize;
        if chars.get(i) == Some(&'*') {
            // The width from an argument: `*n$` names it, `*` takes the next one (and the
            // value the one after).
            i += 1;
            let mark = i;
            let width_at = match number(&chars, &mut i)? {
                Some(n) if chars.get(i) == Some(&'$') => {
                    i += 1;
                    position(n)?
                }
                _ => {
                    i = mark;
                    at += 1;
                    at - 1
                }
            };
            let w = argument(views, width_at, row)?
                .map(|s| {
                    s.parse::<i64>().map_err(|_| {
                        brook_err!(
                            InvalidParameter,
                            "width argument of format() must be an integer"
                        )
                    })
                })
                .transpose()?
                .unwrap_or(0);
            left |= w < 0;
            width = w.unsigned_abs() as usize;
        } else if let Some(n) = number(&chars, &mut i)? {
            width = n;
        }
        let kind = *chars.get(i).ok_or_else(unterminated)?;
        i += 1;
        let value = argument(views, at, row)?;
        next_arg = at + 1;
        let shown = match (kind, value) {
            ('s', v) => v.unwrap_or_default(),
            ('I', Some(v)) => crate::ident::quote_if_needed(&v),
            ('I', None) => {
                return Err(BrookError::Semantic {
                    message: "null values cannot be formatted as an SQL identifier".into(),
                    code: "22004",
                })
            }
            ('L', Some(v)) => quote_literal(&v),
            ('L', None) => "NULL".to_string(),
            (other, _) => {
                return Err(brook_err!(
                    InvalidParameter,
                    "unrecognized format() type specifier \"{other}\""
                ))
            }
        };
        let pad = width.saturating_sub(shown.chars().count());
        if !left {
            out.extend(std::iter::repeat_n(' ', pad));
        }
        out.push_str(&shown);
        if left {
            out.extend(std::iter::repeat_n(' ', pad));
        }
    }
    Ok(())
}

/// A 1-based `n$` position as an argument index.
fn position(n: usize) -> Result<usize> {
    n.checked_sub(1).ok_or_else(|| {
        brook_err!(
            InvalidParameter,
            "format specifies argument 0, but arguments are numbered from 1"
        )
    })
}

/// `quote_literal`: single quotes doubled; with a backslash, the `E'...'` form.
fn quote_literal(s: &str) -> String {
    let body = s.replace('\'', "''");
    if s.contains('\\') {
        format!("E'{}'", body.replace('\\', "\\\\"))
    } else {
        format!("'{body}'")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::arrow::array::{Int32Array, StringArray};

    fn run(fmt: &str, args: Vec<ArrayRef>) -> Result<Option<String>> {
        let mut all: Vec<ArrayRef> = vec![Arc::new(StringArray::from(vec![fmt]))];
        all.extend(args);
        let out = format_all(&all)?;
        let out = out.as_string::<i32>();
        Ok((!out.is_null(0)).then(|| out.value(0).to_string()))
    }

    fn text(v: Option<&str>) -> ArrayRef {
        Arc::new(StringArray::from(vec![v]))
    }

    fn int(v: i32) -> ArrayRef {
        Arc::new(Int32Array::from(vec![v]))
    }

    #[test]
    fn conversions_as_postgresql_writes_them() {
        let r = |f: &str, a: Vec<ArrayRef>| run(f, a).unwrap().unwrap();
        assert_eq!(
            r("Hello %s, %s", vec![text(Some("World")), int(5)]),
            "Hello World, 5"
        );
        assert_eq!(r("%s|%s", vec![text(None), text(Some("x"))]), "|x");
        assert_eq!(
            r(
                "INSERT INTO %I VALUES(%L)",
                vec![text(Some("Foo bar")), text(Some("O'Reilly"))]
            ),
            "INSERT INTO \"Foo bar\" VALUES('O''Reilly')"
        );
        assert_eq!(
            r("%I.%I", vec![text(Some("public")), text(Some("select"))]),
            "public.\"select\""
        );
        assert_eq!(r("%L", vec![text(Some("C:\\x"))]), "E'C:\\\\x'");
        assert_eq!(r("%L", vec![text(None)]), "NULL");
        assert_eq!(
            r("|%10s|%-10s|", vec![text(Some("a")), text(Some("b"))]),
            "|         a|b         |"
        );
        assert_eq!(
            r("%2$s %1$s %s", vec![text(Some("a")), text(Some("b"))]),
            "b a b"
        );
        assert_eq!(r("|%*s|", vec![int(-4), text(Some("x"))]), "|x   |");
        assert_eq!(r("100%%", vec![]), "100%");
    }

    #[test]
    fn bad_format_strings_are_22023_and_null_identifiers_22004() {
        let code = |f: &str, a: Vec<ArrayRef>| run(f, a).unwrap_err().sqlstate();
        assert_eq!(code("%s %s", vec![text(Some("a"))]), "22023");
        assert_eq!(code("%x", vec![text(Some("a"))]), "22023");
        assert_eq!(code("%", vec![]), "22023");
        assert_eq!(code("%0$s", vec![text(Some("a"))]), "22023");
        assert_eq!(code("%I", vec![text(None)]), "22004");
    }
}
