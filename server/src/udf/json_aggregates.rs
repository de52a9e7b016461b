//! The scalar halves of `json_agg`, `jsonb_agg`, `json_object_agg` and `jsonb_object_agg`:
//! the planner's rewrite (`brook_planner::json_aggregates`) aggregates each row's JSON with
//! `array_agg` and calls the function of the aggregate's name on the list, which writes
//! the result; `brook_json_element(x)` is a row's JSON as `json_agg` takes it.
//!
//! Written as PostgreSQL writes them: `json_agg` as `[1, 2]` (its elements' text as it
//! is, an array or row element on a new line: `[[1,2], \n [3]]`), `json_object_agg` as
//! `{ "a" : 1, "b" : 2 }` (a key is its JSON's text; an array or object key is 22023), the
//! jsonb forms as jsonb prints (keys ordered, the last of equal keys kept). A NULL row is
//! a JSON `null`; a NULL key is an error (22023, as PostgreSQL's); no rows (a NULL list)
//! give NULL.

use brook_common::BrookError;
use datafusion::arrow::array::{Array, ArrayRef, AsArray, StringArray};
use datafusion::arrow::datatypes::{DataType, FieldRef};
use datafusion::error::{DataFusionError, Result};
use datafusion::logical_expr::{
    ColumnarValue, ReturnFieldArgs, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature,
    Volatility,
};
use datafusion::prelude::SessionContext;
use std::sync::Arc;

/// Register the functions on a database context.
pub fn register(ctx: &SessionContext) {
    for (name, kind) in [
        ("json_agg", Kind::Array { jsonb: false }),
        ("jsonb_agg", Kind::Array { jsonb: true }),
        ("json_object_agg", Kind::Object { jsonb: false }),
        ("jsonb_object_agg", Kind::Object { jsonb: true }),
    ] {
        ctx.register_udf(ScalarUDF::new_from_impl(JsonAggResult {
            name,
            kind,
            signature: Signature::any(1, Volatility::Immutable),
        }));
    }
    ctx.register_udf(ScalarUDF::new_from_impl(JsonElement {
        signature: Signature::any(1, Volatility::Immutable),
    }));
}

/// Which aggregate a call finishes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Kind {
    Array { jsonb: bool },
    Object { jsonb: bool },
}

impl Kind {
    fn jsonb(self) -> bool {
        match self {
            Kind::Array { jsonb } | Kind::Object { jsonb } => jsonb,
        }
    }
}

/// Marks a row's JSON that is an array or a row (not a json value that holds one).
const STRUCTURED: char = '\n';

#[derive(Debug, PartialEq, Eq, Hash)]
struct JsonAggResult {
    name: &'static str,
    kind: Kind,
    signature: Signature,
}

impl ScalarUDFImpl for JsonAggResult {
    fn name(&self) -> &str {
        self.name
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(DataType::Utf8)
    }

    fn return_field_from_args(&self, _args: ReturnFieldArgs<'_>) -> Result<FieldRef> {
        let ty = if self.kind.jsonb() { "jsonb" } else { "json" };
        Ok(super::json_get::json_field(self.name, ty))
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let (arrays, scalar, rows) = super::argument_arrays(&args)?;
        let lists = &arrays[0];
        let out: StringArray = (0..rows)
            .map(|row| {
                if lists.data_type() == &DataType::Null || lists.is_null(row) {
                    return Ok(None);
                }
                let items = match lists.data_type() {
                    DataType::List(_) => lists.as_list::<i32>().value(row),
                    DataType::LargeList(_) => lists.as_list::<i64>().value(row),
                    _ => return Err(nested()),
                };
                written(self.kind, &items).map(Some)
            })
            .collect::<Result<_>>()?;
        super::result_value(Arc::new(out), scalar)
    }
}

/// 42803 for a call that is not the rewrite's (`json_agg(array_agg(x))` as the user wrote
/// it: nested aggregates).
fn nested() -> DataFusionError {
    DataFusionError::from(BrookError::Semantic {
        message: "aggregate function calls cannot be nested".into(),
        code: "42803",
    })
}

/// `brook_json_element(x)`: `to_json(x)`, with [`STRUCTURED`] before an array's or a row's.
#[derive(Debug, PartialEq, Eq, Hash)]
struct JsonElement {
    signature: Signature,
}

impl ScalarUDFImpl for JsonElement {
    fn name(&self) -> &str {
        brook_planner::json_aggregates::JSON_ELEMENT
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(DataType::Utf8)
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let embedded = super::json_get::json_type(&args.arg_fields[0]).is_some();
        let (arrays, scalar, rows) = super::argument_arrays(&args)?;
        let a = &arrays[0];
        let structured = !embedded
            && matches!(
                a.data_type(),
                DataType::List(_)
                    | DataType::LargeList(_)
                    | DataType::FixedSizeList(_, _)
                    | DataType::Struct(_)
            );
        let out: StringArray = (0..rows)
            .map(|row| {
                let json = super::json_build::value_json(a, embedded, row)?;
                Ok(json.map(|j| {
                    if structured {
                        format!("{STRUCTURED}{j}")
                    } else {
                        j
                    }
                }))
            })
            .collect::<Result<_>>()?;
        super::result_value(Arc::new(out), scalar)
    }
}

/// One group's result from its rows' JSON texts (with DISTINCT, structs whose `j` holds
/// them).
fn written(kind: Kind, items: &ArrayRef) -> Result<String> {
    let items = match items.as_struct_opt() {
        Some(s) => s.column_by_name("j").cloned().ok_or_else(nested)?,
        None => items.clone(),
    };
    let texts = items.as_string_opt::<i32>().ok_or_else(nested)?;
    let mut out = String::new();
    match kind {
        Kind::Array { .. } => {
            out.push('[');
            for (i, text) in texts.iter().enumerate() {
                let text = text.unwrap_or("null");
                let (structured, json) = match text.strip_prefix(STRUCTURED) {
                    Some(json) => (true, json),
                    None => (false, text),
                };
                if i > 0 {
                    out.push_str(if structured { ", \n " } else { ", " });
                }
                out.push_str(json);
            }
            out.push(']');
        }
        Kind::Object { .. } => {
            out.push_str("{ ");
            for (i, pair) in texts.iter().enumerate() {
                let (key, value) = key_and_value(pair.unwrap_or("[null, null]"))?;
                if i > 0 {
                    out.push_str(", ");
                }
                out.push_str(&key);
                out.push_str(" : ");
                out.push_str(value);
            }
            out.push_str(" }");
        }
    }
    if kind.jsonb() {
        super::json_build::as_jsonb(&out)
    } else {
        Ok(out)
    }
}

/// The key (as a JSON string: a number's or boolean's text quoted) and the value's text of
/// `[key, value]` as `json_build_array` writes it; 22023 for a NULL key or one that is an
/// array or an object, as PostgreSQL's.
fn key_and_value(pair: &str) -> Result<(String, &str)> {
    let inner = pair
        .strip_prefix('[')
        .and_then(|p| p.strip_suffix(']'))
        .ok_or_else(|| DataFusionError::Internal(format!("object_agg: pair {pair}")))?;
    let mut keys = serde_json::Deserializer::from_str(inner).into_iter::<serde_json::Value>();
    let key = keys.next();
    let end = keys.byte_offset();
    let invalid = |m: &str| DataFusionError::from(BrookError::InvalidParameter(m.into()));
    let key = match key {
        Some(Ok(serde_json::Value::String(_))) => inner[..end].to_string(),
        Some(Ok(serde_json::Value::Number(_) | serde_json::Value::Bool(_))) => {
            serde_json::to_string(&inner[..end])
                .map_err(|e| DataFusionError::Internal(format!("object_agg: key: {e}")))?
        }
        Some(Ok(serde_json::Value::Null)) => return Err(invalid("field name must not be null")),
        Some(Ok(_)) => {
            return Err(invalid(
                "key value must be scalar, not array, composite, or json",
            ))
        }
        Some(Err(e)) => {
            return Err(DataFusionError::Internal(format!(
                "object_agg: key of {pair}: {e}"
            )))
        }
        None => return Err(DataFusionError::Internal(format!("object_agg: {pair}"))),
    };
    let value = inner[end..]
        .strip_prefix(", ")
        .ok_or_else(|| DataFusionError::Internal(format!("object_agg: value of {pair}")))?;
    Ok((key, value))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(items: &[Option<&str>]) -> ArrayRef {
        Arc::new(StringArray::from(items.to_vec()))
    }

    #[test]
    fn arrays_as_postgresql_writes_them() {
        let items = texts(&[Some("1"), None, Some("{\"b\":2,  \"a\":1}")]);
        assert_eq!(
            written(Kind::Array { jsonb: false }, &items).unwrap(),
            "[1, null, {\"b\":2,  \"a\":1}]"
        );
        assert_eq!(
            written(Kind::Array { jsonb: true }, &items).unwrap(),
            "[1, null, {\"a\": 1, \"b\": 2}]"
        );
    }

    #[test]
    fn objects_as_postgresql_writes_them() {
        let items = texts(&[
            Some("[\"b\", 1]"),
            Some("[\"a\", [1, 2]]"),
            Some("[\"b\", null]"),
        ]);
        assert_eq!(
            written(Kind::Object { jsonb: false }, &items).unwrap(),
            "{ \"b\" : 1, \"a\" : [1, 2], \"b\" : null }"
        );
        assert_eq!(
            written(Kind::Object { jsonb: true }, &items).unwrap(),
            "{\"a\": [1, 2], \"b\": null}"
        );
    }

    #[test]
    fn arrays_and_rows_start_a_new_line() {
        let items = texts(&[Some("\n[1,2]"), Some("\n[]"), None, Some("\n[3]")]);
        assert_eq!(
            written(Kind::Array { jsonb: false }, &items).unwrap(),
            "[[1,2], \n [], null, \n [3]]"
        );
    }

    #[test]
    fn number_and_boolean_keys_are_their_text() {
        let items = texts(&[Some("[1, \"x\"]"), Some("[true, null]")]);
        assert_eq!(
            written(Kind::Object { jsonb: false }, &items).unwrap(),
            "{ \"1\" : \"x\", \"true\" : null }"
        );
        let err = written(Kind::Object { jsonb: false }, &texts(&[Some("[[1], 2]")])).unwrap_err();
        assert!(
            err.to_string().contains("key value must be scalar"),
            "{err}"
        );
    }

    #[test]
    fn a_null_key_is_an_error() {
        let items = texts(&[Some("[null, 1]")]);
        let err = written(Kind::Object { jsonb: false }, &items).unwrap_err();
        assert!(
            err.to_string().contains("field name must not be null"),
            "{err}"
        );
    }
}
