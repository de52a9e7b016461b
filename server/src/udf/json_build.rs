//! JSON built from SQL values, as PostgreSQL's `json_build_object`, `json_build_array`,
//! `to_json` and their `jsonb_` twins, and `json_typeof`/`jsonb_typeof`.
//!
//! `datafusion-functions-json` reads JSON; it has no constructors, so these are written here.
//! Values render as PostgreSQL renders them: numbers bare (NaN and infinities as strings),
//! booleans and NULL as JSON literals, timestamps as ISO 8601 strings, arrays as JSON arrays,
//! json and jsonb values (recorded so in their field) embedded as they are, everything else
//! as a JSON string of its text. The results are typed json or jsonb; jsonb's are printed
//! as jsonb prints (keys ordered and unique, `{"a": 1}`).

use brook_common::BrookError;
use datafusion::arrow::array::{Array, ArrayRef, AsArray, StringArray};
use datafusion::arrow::datatypes::DataType;
use datafusion::arrow::datatypes::{Field, FieldRef};
use datafusion::arrow::util::display::{ArrayFormatter, FormatOptions};
use datafusion::error::{DataFusionError, Result};
use datafusion::logical_expr::{
    ColumnarValue, ReturnFieldArgs, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature,
    TypeSignature, Volatility,
};
use datafusion::prelude::SessionContext;
use std::sync::Arc;

/// Register the functions on a database context.
pub fn register(ctx: &SessionContext) {
    for (name, kind) in [
        ("json_build_object", Kind::Object),
        ("jsonb_build_object", Kind::Object),
        ("json_build_array", Kind::Array),
        ("jsonb_build_array", Kind::Array),
        ("to_json", Kind::Value),
        ("to_jsonb", Kind::Value),
        ("row_to_json", Kind::Row),
        ("json_typeof", Kind::TypeOf),
        ("jsonb_typeof", Kind::TypeOf),
    ] {
        let signature = match kind {
            // `jsonb_build_object()` is `{}`.
            Kind::Object | Kind::Array => Signature::one_of(
                vec![TypeSignature::VariadicAny, TypeSignature::Nullary],
                Volatility::Stable,
            ),
            Kind::Value => Signature::any(1, Volatility::Stable),
            Kind::Row => Signature::one_of(
                vec![TypeSignature::Any(1), TypeSignature::Any(2)],
                Volatility::Stable,
            ),
            Kind::TypeOf => Signature::exact(vec![DataType::Utf8], Volatility::Immutable),
        };
        ctx.register_udf(ScalarUDF::new_from_impl(JsonBuild {
            name,
            kind,
            signature,
        }));
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Kind {
    Object,
    Array,
    Value,
    /// `row_to_json(record [, pretty])`.
    Row,
    TypeOf,
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct JsonBuild {
    name: &'static str,
    kind: Kind,
    signature: Signature,
}

impl ScalarUDFImpl for JsonBuild {
    fn name(&self) -> &str {
        self.name
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(DataType::Utf8)
    }

    fn return_field_from_args(&self, args: ReturnFieldArgs<'_>) -> Result<FieldRef> {
        if self.kind == Kind::Row {
            // NULL: a whole-row reference before the analyzer builds its row.
            let record = args.arg_fields.first().map(|f| f.data_type());
            if !matches!(record, Some(DataType::Struct(_) | DataType::Null)) {
                let types: Vec<String> = args
                    .arg_fields
                    .iter()
                    .map(|f| f.data_type().to_string())
                    .collect();
                return Err(DataFusionError::from(BrookError::UndefinedFunction(
                    format!(
                    "function row_to_json({}) does not exist (it takes a row: a FROM item's name)",
                    types.join(", ")
                ),
                )));
            }
            if args
                .arg_fields
                .get(1)
                .is_some_and(|f| !matches!(f.data_type(), DataType::Boolean | DataType::Null))
            {
                return Err(DataFusionError::from(BrookError::UndefinedFunction(
                    "function row_to_json(record, ...) takes a boolean as its second argument"
                        .into(),
                )));
            }
        }
        Ok(match self.kind {
            Kind::TypeOf => Arc::new(Field::new(self.name, DataType::Utf8, true)),
            _ if self.is_jsonb() => super::json_get::json_field(self.name, "jsonb"),
            _ => super::json_get::json_field(self.name, "json"),
        })
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let (arrays, scalar, rows) = super::argument_arrays(&args)?;
        if self.kind == Kind::Object && arrays.len() % 2 == 1 {
            return Err(DataFusionError::from(BrookError::InvalidParameter(format!(
                "argument list must have even number of elements (the arguments of {} alternate keys and values)",
                self.name
            ))));
        }
        let embedded: Vec<bool> = args
            .arg_fields
            .iter()
            .map(|f| super::json_get::json_type(f).is_some())
            .collect();
        let out: StringArray = (0..rows)
            .map(|row| {
                let json = self.row(&arrays, &embedded, row)?;
                match json {
                    Some(json) if self.is_jsonb() => Ok(Some(as_jsonb(&json)?)),
                    other => Ok(other),
                }
            })
            .collect::<Result<_>>()?;
        super::result_value(Arc::new(out), scalar)
    }
}

impl JsonBuild {
    /// A `jsonb_` function (or `to_jsonb`); `json_typeof` and `jsonb_typeof` give text.
    fn is_jsonb(&self) -> bool {
        self.kind != Kind::TypeOf && (self.name.starts_with("jsonb") || self.name == "to_jsonb")
    }

    /// Row `row` as JSON text; `embedded[i]` when argument `i` is json or jsonb already.
    fn row(&self, arrays: &[ArrayRef], embedded: &[bool], row: usize) -> Result<Option<String>> {
        let value = |out: &mut String, i: usize| -> Result<()> {
            if embedded.get(i) == Some(&true) && !is_null(&arrays[i], row) {
                out.push_str(&text_of(&arrays[i], row)?);
                Ok(())
            } else {
                write_value(out, &arrays[i], row)
            }
        };
        let mut out = String::new();
        match self.kind {
            Kind::Object => {
                out.push('{');
                for (i, pair) in arrays.chunks(2).enumerate() {
                    if is_null(&pair[0], row) {
                        return Err(DataFusionError::from(BrookError::Semantic {
                            message: format!("argument {}: key must not be null", 2 * i + 1),
                            code: "22004",
                        }));
                    }
                    if i > 0 {
                        out.push_str(", ");
                    }
                    write_key(&mut out, &pair[0], embedded.get(2 * i) == Some(&true), row)?;
                    out.push_str(" : ");
                    value(&mut out, 2 * i + 1)?;
                }
                out.push('}');
            }
            Kind::Array => {
                out.push('[');
                for i in 0..arrays.len() {
                    if i > 0 {
                        out.push_str(", ");
                    }
                    value(&mut out, i)?;
                }
                out.push(']');
            }
            Kind::Value => {
                let Some(a) = arrays.first() else {
                    return Ok(None);
                };
                if is_null(a, row) {
                    return Ok(None);
                }
                value(&mut out, 0)?;
            }
            Kind::Row => {
                let Some(a) = arrays.first() else {
                    return Ok(None);
                };
                // Strict, as PostgreSQL's: a NULL row or a NULL `pretty` gives NULL.
                if is_null(a, row) || arrays.get(1).is_some_and(|p| is_null(p, row)) {
                    return Ok(None);
                }
                let pretty = arrays
                    .get(1)
                    .and_then(|p| p.as_boolean_opt().map(|b| b.value(row)))
                    .unwrap_or(false);
                write_row(&mut out, a, row, if pretty { ",\n " } else { "," })?;
            }
            Kind::TypeOf => {
                let Some(a) = arrays.first() else {
                    return Ok(None);
                };
                if a.is_null(row) {
                    return Ok(None);
                }
                let text = a.as_string::<i32>().value(row);
                return Ok(Some(type_name(text)?.to_string()));
            }
        }
        Ok(Some(out))
    }
}

/// `to_json(a[row])`: `embedded` when `a` is json or jsonb already (its text is the JSON).
pub(super) fn value_json(a: &ArrayRef, embedded: bool, row: usize) -> Result<Option<String>> {
    if is_null(a, row) {
        return Ok(None);
    }
    if embedded {
        return text_of(a, row).map(Some);
    }
    let mut out = String::new();
    write_value(&mut out, a, row)?;
    Ok(Some(out))
}

/// JSON text as jsonb prints it.
pub(super) fn as_jsonb(json: &str) -> Result<String> {
    crate::pg::json::jsonb_text(json).map_err(DataFusionError::from)
}

/// True for a NULL value (an untyped NULL literal is a column of Arrow's Null type, which
/// has no validity bits).
fn is_null(a: &ArrayRef, row: usize) -> bool {
    a.data_type() == &DataType::Null || a.is_null(row)
}

/// The name `json_typeof` gives a JSON text's value (read as raw text: a number beyond a
/// double's range, `1e400`, is a number, as in PostgreSQL).
fn type_name(text: &str) -> Result<&'static str> {
    let raw: &serde_json::value::RawValue =
        serde_json::from_str(text).map_err(crate::pg::json::invalid_json)?;
    Ok(match raw.get().trim_start().as_bytes().first() {
        Some(b'{') => "object",
        Some(b'[') => "array",
        Some(b'"') => "string",
        Some(b't' | b'f') => "boolean",
        Some(b'n') => "null",
        _ => "number",
    })
}

/// A value's text as Arrow displays it (PostgreSQL's text forms for Brook's types).
fn text_of(a: &ArrayRef, row: usize) -> Result<String> {
    let options = FormatOptions::default();
    let f = ArrayFormatter::try_new(a.as_ref(), &options)?;
    Ok(f.value(row).to_string())
}

fn write_string(out: &mut String, s: &str) {
    // serde_json escapes as JSON requires; writing to a String cannot fail.
    out.push_str(&serde_json::to_string(s).unwrap_or_else(|_| "\"\"".into()));
}

/// One value of `a` as JSON.
fn write_value(out: &mut String, a: &ArrayRef, row: usize) -> Result<()> {
    if is_null(a, row) {
        out.push_str("null");
        return Ok(());
    }
    match a.data_type() {
        DataType::Boolean => {
            out.push_str(if a.as_boolean().value(row) {
                "true"
            } else {
                "false"
            });
        }
        DataType::Int8
        | DataType::Int16
        | DataType::Int32
        | DataType::Int64
        | DataType::UInt8
        | DataType::UInt16
        | DataType::UInt32
        | DataType::UInt64
        | DataType::Decimal256(_, _) => out.push_str(&text_of(a, row)?),
        // A quotient's or an unconstrained numeric's padding zeros are not part of its value
        // (`to_jsonb(10.0 / 4)` is `2.5`), as on the wire.
        DataType::Decimal128(p, s) => {
            let v = a
                .as_primitive::<datafusion::arrow::datatypes::Decimal128Type>()
                .value(row);
            let trim = crate::pg::encode::trims_by_type(*p, *s);
            out.push_str(&crate::pg::encode::numeric_text(v, *s, trim));
        }
        // PostgreSQL writes a float as its text (`1e+20`, `0`, `-0`), a non-finite one as
        // a string.
        DataType::Float16 | DataType::Float32 | DataType::Float64 => {
            let text = pg_text(a, row)?;
            if text.parse::<f64>().is_ok_and(f64::is_finite) {
                out.push_str(&text);
            } else {
                write_string(out, &text);
            }
        }
        // Timestamps in ISO 8601 (`2024-01-01T10:00:00+00:00`, as PostgreSQL's JSON has
        // them); intervals, times and bytea as their text (`1 day 02:00:00`, `\\x0102`).
        DataType::Timestamp(_, tz) => {
            let mut text = pg_text(a, row)?.replacen(' ', "T", 1);
            if tz.is_some() && text.len() >= 3 && text.as_bytes()[text.len() - 3] != b':' {
                text.push_str(":00");
            }
            write_string(out, &text);
        }
        DataType::Interval(_)
        | DataType::Time32(_)
        | DataType::Time64(_)
        | DataType::Binary
        | DataType::LargeBinary
        | DataType::BinaryView => write_string(out, &pg_text(a, row)?),
        DataType::List(_) | DataType::LargeList(_) | DataType::FixedSizeList(_, _) => {
            let items = match a.data_type() {
                DataType::List(_) => a.as_list::<i32>().value(row),
                DataType::LargeList(_) => a.as_list::<i64>().value(row),
                _ => a.as_fixed_size_list().value(row),
            };
            out.push('[');
            for i in 0..items.len() {
                if i > 0 {
                    out.push(',');
                }
                write_value(out, &items, i)?;
            }
            out.push(']');
        }
        DataType::Struct(_) => write_row(out, a, row, ",")?,
        _ => {
            let text = text_of(a, row)?;
            write_string(out, &text);
        }
    }
    Ok(())
}

/// A row as PostgreSQL's `row_to_json` writes a record: its fields by name, in order, each
/// after `separator`; a json or jsonb field embedded as it is.
fn write_row(out: &mut String, a: &ArrayRef, row: usize, separator: &str) -> Result<()> {
    let s = a.as_struct();
    out.push('{');
    for (i, field) in s.fields().iter().enumerate() {
        if i > 0 {
            out.push_str(separator);
        }
        write_string(out, field.name());
        out.push(':');
        let column = s.column(i);
        if super::json_get::json_type(field).is_some() && !is_null(column, row) {
            out.push_str(&text_of(column, row)?);
        } else {
            write_value(out, column, row)?;
        }
    }
    out.push('}');
    Ok(())
}

/// An object key as PostgreSQL writes it: a scalar's JSON, quoted when it is not a string
/// already (`1e+20` is `"1e+20"`, a timestamp `"2024-01-01T10:00:00"`); an array, a row or
/// a json value is 22023.
fn write_key(out: &mut String, a: &ArrayRef, embedded: bool, row: usize) -> Result<()> {
    let structured = matches!(
        a.data_type(),
        DataType::List(_)
            | DataType::LargeList(_)
            | DataType::FixedSizeList(_, _)
            | DataType::Struct(_)
    );
    if embedded || structured {
        return Err(DataFusionError::from(BrookError::InvalidParameter(
            "key value must be scalar, not array, composite, or json".into(),
        )));
    }
    let mut json = String::new();
    write_value(&mut json, a, row)?;
    if json.starts_with('"') {
        out.push_str(&json);
    } else {
        write_string(out, &json);
    }
    Ok(())
}

/// A value's text as PostgreSQL writes it (the wire's text format).
fn pg_text(a: &ArrayRef, row: usize) -> Result<String> {
    let field = datafusion::arrow::datatypes::Field::new("", a.data_type().clone(), true);
    let view = crate::pg::encode::ColumnView::new(a, &field)?;
    let mut out = String::new();
    view.write_text(row, &mut out);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::arrow::array::{BooleanArray, Float64Array, Int32Array, ListArray};
    use datafusion::arrow::datatypes::Int32Type;

    fn call(kind: Kind, args: Vec<ArrayRef>) -> Result<Vec<Option<String>>> {
        let f = JsonBuild {
            name: "f",
            kind,
            signature: Signature::variadic_any(Volatility::Stable),
        };
        let rows = args.first().map_or(1, |a| a.len());
        (0..rows).map(|r| f.row(&args, &[], r)).collect()
    }

    fn text(values: &[Option<&str>]) -> ArrayRef {
        Arc::new(StringArray::from(values.to_vec()))
    }

    #[test]
    fn objects_render_as_postgresql_prints_them() {
        let out = call(
            Kind::Object,
            vec![
                text(&[Some("always")]),
                Arc::new(BooleanArray::from(vec![false])),
                text(&[Some("start")]),
                Arc::new(Int32Array::from(vec![1])),
                text(&[Some("name")]),
                text(&[Some("a \"b\"")]),
                text(&[Some("none")]),
                text(&[None]),
            ],
        )
        .unwrap();
        assert_eq!(
            out,
            vec![Some(
                r#"{"always" : false, "start" : 1, "name" : "a \"b\"", "none" : null}"#.into()
            )]
        );
    }

    #[test]
    fn arrays_floats_and_lists() {
        let list = ListArray::from_iter_primitive::<Int32Type, _, _>(vec![Some(vec![
            Some(1),
            None,
            Some(3),
        ])]);
        let out = call(
            Kind::Array,
            vec![
                Arc::new(Float64Array::from(vec![f64::INFINITY])),
                Arc::new(Float64Array::from(vec![1.5])),
                Arc::new(list),
            ],
        )
        .unwrap();
        assert_eq!(out, vec![Some(r#"["Infinity", 1.5, [1,null,3]]"#.into())]);
    }

    #[test]
    fn a_null_key_and_an_odd_argument_count_are_errors() {
        let e = call(
            Kind::Object,
            vec![text(&[None]), Arc::new(Int32Array::from(vec![1]))],
        )
        .unwrap_err();
        assert!(e.to_string().contains("key must not be null"), "{e}");
    }

    #[test]
    fn jsonb_results_print_as_jsonb() {
        assert_eq!(
            as_jsonb(r#"{"bb" : 1, "a" : [1,2], "bb" : "x"}"#).unwrap(),
            r#"{"a": [1, 2], "bb": "x"}"#
        );
        assert!(as_jsonb("{").is_err());
    }

    #[test]
    fn typeof_names_each_json_kind() {
        let out = call(
            Kind::TypeOf,
            vec![text(&[
                Some("{}"),
                Some("[1]"),
                Some("1.5"),
                Some("1e400"),
                Some("\"s\""),
                Some("true"),
                Some("null"),
                None,
            ])],
        )
        .unwrap();
        let names: Vec<Option<&str>> = out.iter().map(|o| o.as_deref()).collect();
        assert_eq!(
            names,
            vec![
                Some("object"),
                Some("array"),
                Some("number"),
                Some("number"),
                Some("string"),
                Some("boolean"),
                Some("null"),
                None
            ]
        );
    }
}
