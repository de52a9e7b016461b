//! `j #> path` and `j #>> path`: the JSON value at a path of text steps, as PostgreSQL's
//! (`brook_json_path` / `brook_json_path_text`, which the operators become); and the casts
//! `x::json` / `x::jsonb` (`brook_json` / `brook_jsonb`), which check the text is JSON.
//!
//! A step names an object member, or, on an array, an element by its integer position
//! (negative counts from the end); a step the value cannot take gives NULL. The path is a
//! `text[]`, written as a literal (`'{a,0}'`) or an `ARRAY[...]`. `datafusion-functions-json`
//! takes a step as a key or an index fixed by the step's SQL type, so `'{a,0}'` could not
//! mean "member `0` of an object, element 0 of an array" as it does in PostgreSQL; the walk
//! is written here over `serde_json`.

use brook_common::BrookError;
use datafusion::arrow::array::{Array, ArrayRef, AsArray, StringArray};
use datafusion::arrow::datatypes::DataType;
use datafusion::arrow::datatypes::{Field, FieldRef};
use datafusion::error::{DataFusionError, Result};
use datafusion::logical_expr::{
    ColumnarValue, ReturnFieldArgs, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature,
    Volatility,
};
use datafusion::prelude::SessionContext;
use serde_json::value::RawValue;
use std::sync::Arc;

/// Register the path functions and the json/jsonb casts on a database context.
pub fn register(ctx: &SessionContext) {
    ctx.register_udf(ScalarUDF::new_from_impl(JsonCast {
        name: brook_planner::pg_functions::JSON_CAST,
        jsonb: false,
        signature: Signature::any(1, Volatility::Immutable),
    }));
    ctx.register_udf(jsonb_cast());
    ctx.register_udf(ScalarUDF::new_from_impl(JsonStep {
        signature: Signature::user_defined(Volatility::Immutable),
    }));
    for (name, as_text) in [("brook_json_path", false), ("brook_json_path_text", true)] {
        ctx.register_udf(ScalarUDF::new_from_impl(JsonPath {
            name,
            as_text,
            signature: Signature::any(2, Volatility::Immutable),
        }));
    }
}

/// A path step for the JSON functions, which take a bigint index or a text key: an
/// integer of any width becomes bigint, anything else text (`brook_planner::json_ops`).
#[derive(Debug, PartialEq, Eq, Hash)]
struct JsonStep {
    signature: Signature,
}

impl ScalarUDFImpl for JsonStep {
    fn name(&self) -> &str {
        brook_planner::json_ops::JSON_STEP
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, arg_types: &[DataType]) -> Result<DataType> {
        Ok(step_type(&arg_types[0]))
    }

    fn coerce_types(&self, arg_types: &[DataType]) -> Result<Vec<DataType>> {
        match arg_types {
            [t] => Ok(vec![step_type(t)]),
            _ => Err(DataFusionError::Plan(format!(
                "{} takes one argument",
                self.name()
            ))),
        }
    }

    fn invoke_with_args(&self, mut args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        Ok(args.args.remove(0))
    }
}

fn step_type(t: &DataType) -> DataType {
    if t.is_integer() {
        DataType::Int64
    } else {
        DataType::Utf8
    }
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct JsonPath {
    name: &'static str,
    as_text: bool,
    signature: Signature,
}

fn invalid(message: String) -> DataFusionError {
    DataFusionError::External(Box::new(BrookError::InvalidText(message)))
}

impl ScalarUDFImpl for JsonPath {
    fn name(&self) -> &str {
        self.name
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(DataType::Utf8)
    }

    /// `#>` is of its operand's JSON type, `#>>` text.
    fn return_field_from_args(&self, args: ReturnFieldArgs<'_>) -> Result<FieldRef> {
        let ty = args
            .arg_fields
            .first()
            .and_then(|f| super::json_get::json_type(f));
        Ok(match ty {
            Some(ty) if !self.as_text => super::json_get::json_field(self.name, ty),
            _ => Arc::new(Field::new(self.name, DataType::Utf8, true)),
        })
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let (arrays, scalar, rows) = super::argument_arrays(&args)?;
        let docs = datafusion::arrow::compute::cast(&arrays[0], &DataType::Utf8)?;
        let paths = &arrays[1];
        let docs = docs.as_string::<i32>();
        let mut out = Vec::with_capacity(rows);
        for row in 0..rows {
            if docs.is_null(row) || paths.is_null(row) {
                out.push(None);
                continue;
            }
            let steps = path_steps(paths, row)?;
            let doc: &RawValue = serde_json::from_str(docs.value(row))
                .map_err(|e| invalid(format!("invalid input syntax for type json: {e}")))?;
            out.push(match walk(doc, &steps)? {
                Some(v) => crate::pg::json::render_raw(v, self.as_text).map_err(external)?,
                None => None,
            });
        }
        let out: ArrayRef = Arc::new(StringArray::from(out));
        super::result_value(out, scalar)
    }
}

/// `x::jsonb`, for a planner that reads an operand as jsonb.
pub(crate) fn jsonb_cast() -> ScalarUDF {
    ScalarUDF::new_from_impl(JsonCast {
        name: brook_planner::pg_functions::JSONB_CAST,
        jsonb: true,
        signature: Signature::any(1, Volatility::Immutable),
    })
}

/// `x::json` checks that `x` is JSON and keeps its text; `x::jsonb` prints it as jsonb.
#[derive(Debug, PartialEq, Eq, Hash)]
struct JsonCast {
    name: &'static str,
    jsonb: bool,
    signature: Signature,
}

impl ScalarUDFImpl for JsonCast {
    fn name(&self) -> &str {
        self.name
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(DataType::Utf8)
    }

    /// Typed `json`/`jsonb` on the wire (the value is text), as PostgreSQL types the cast:
    /// clients decode it as JSON (pgx scans `$1::jsonb` into a map).
    fn return_field_from_args(&self, _args: ReturnFieldArgs<'_>) -> Result<FieldRef> {
        let ty = if self.jsonb { "jsonb" } else { "json" };
        Ok(super::json_get::json_field(self.name, ty))
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let (arrays, scalar, rows) = super::argument_arrays(&args)?;
        let texts = datafusion::arrow::compute::cast(&arrays[0], &DataType::Utf8)?;
        let texts = texts.as_string::<i32>();
        let mut out = Vec::with_capacity(rows);
        for row in 0..rows {
            if texts.is_null(row) {
                out.push(None);
                continue;
            }
            let text = texts.value(row);
            out.push(Some(if self.jsonb {
                crate::pg::json::jsonb_text(text).map_err(external)?
            } else {
                crate::pg::json::check_json(text).map_err(external)?;
                text.to_string()
            }));
        }
        let out: ArrayRef = Arc::new(StringArray::from(out));
        super::result_value(out, scalar)
    }
}

/// The steps of row `row` of a path column: a `text[]` literal or a list.
pub(crate) fn path_steps(paths: &ArrayRef, row: usize) -> Result<Vec<Option<String>>> {
    match paths.data_type() {
        DataType::List(_) | DataType::LargeList(_) => {
            let items = match paths.data_type() {
                DataType::List(_) => paths.as_list::<i32>().value(row),
                _ => paths.as_list::<i64>().value(row),
            };
            let items = datafusion::arrow::compute::cast(&items, &DataType::Utf8)?;
            let items = items.as_string::<i32>();
            Ok((0..items.len())
                .map(|i| (!items.is_null(i)).then(|| items.value(i).to_string()))
                .collect())
        }
        _ => {
            let text = datafusion::arrow::compute::cast(paths, &DataType::Utf8)?;
            let text = text.as_string::<i32>().value(row);
            brook_planner::array_literal::parse_text_array(text)
                .ok_or_else(|| invalid(format!("malformed array literal: \"{text}\"")))
        }
    }
}

/// The value at `steps` of `doc`, None where a step does not apply (or is NULL). Read as
/// raw values, so that a number keeps its digits (`crate::pg::json`).
fn walk<'a>(doc: &'a RawValue, steps: &[Option<String>]) -> Result<Option<&'a RawValue>> {
    use crate::pg::json::{open, Raw};
    let mut at = doc;
    for step in steps {
        let Some(step) = step.as_deref() else {
            return Ok(None);
        };
        let next = match open(at).map_err(external)? {
            Raw::Object(members) => members.into_iter().find(|(k, _)| k == step).map(|(_, v)| v),
            Raw::Array(items) => step.trim().parse::<i64>().ok().and_then(|i| {
                let len = i64::try_from(items.len()).ok()?;
                let i = if i < 0 { len + i } else { i };
                items.get(usize::try_from(i).ok()?).copied()
            }),
            _ => None,
        };
        match next {
            Some(v) => at = v,
            None => return Ok(None),
        }
    }
    Ok(Some(at))
}

fn external(e: BrookError) -> DataFusionError {
    DataFusionError::External(Box::new(e))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(doc: &str, path: &str, as_text: bool) -> Option<String> {
        let doc: &RawValue = serde_json::from_str(doc).unwrap();
        let steps = brook_planner::array_literal::parse_text_array(path).unwrap();
        let v = walk(doc, &steps).unwrap()?;
        crate::pg::json::render_raw(v, as_text).unwrap()
    }

    #[test]
    fn steps_are_members_or_positions_by_what_they_meet() {
        let doc = r#"{"a": {"0": "zero", "b": [10, {"c": "x"}, null]}}"#;
        assert_eq!(at(doc, "{a,0}", true).as_deref(), Some("zero"));
        assert_eq!(at(doc, "{a,b,1,c}", true).as_deref(), Some("x"));
        assert_eq!(at(doc, "{a,b,1}", false).as_deref(), Some(r#"{"c": "x"}"#));
        assert_eq!(at(doc, "{a,b,-3}", false).as_deref(), Some("10"));
        assert_eq!(at(doc, "{a,b,2}", true), None, "JSON null is NULL as text");
        assert_eq!(at(doc, "{a,b,2}", false).as_deref(), Some("null"));
        assert_eq!(at(doc, "{a,b,x}", true), None);
        assert_eq!(at(doc, "{a,missing}", true), None);
        assert_eq!(
            at(doc, "{}", false).as_deref(),
            Some(r#"{"a": {"0": "zero", "b": [10, {"c": "x"}, null]}}"#)
        );
        let big = r#"{"n": [123456789012345678901234, 0.1234567890123456789, 1e2]}"#;
        assert_eq!(
            at(big, "{n,0}", true).as_deref(),
            Some("123456789012345678901234")
        );
        assert_eq!(
            at(big, "{n,1}", false).as_deref(),
            Some("0.1234567890123456789")
        );
        assert_eq!(at(big, "{n,2}", false).as_deref(), Some("100"));
    }
}
