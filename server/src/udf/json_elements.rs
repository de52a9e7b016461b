//! The elements of a JSON array as an array, whose `unnest` is PostgreSQL's set-returning
//! `json[b]_array_elements` (each element as JSON) and `json[b]_array_elements_text` (each
//! as text, JSON null as NULL): `brook_planner::set_returning::SET_RETURNING` rewrites
//! them, in the select list and in FROM. Events often carry arrays (the items of an order,
//! the readings of a batch); these turn them into rows, continuously too. Written here
//! because `datafusion-functions-json` has no function that lists an array's elements.
//!
//! As PostgreSQL: a NULL gives no rows, an object or a scalar is 22023 `cannot extract
//! elements from an object` / `from a scalar`.

use brook_common::{brook_err, BrookError};
use datafusion::arrow::array::{ArrayRef, AsArray, ListBuilder, StringBuilder};
use datafusion::arrow::datatypes::{DataType, Field};
use datafusion::error::{DataFusionError, Result};
use datafusion::logical_expr::{
    ColumnarValue, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, Volatility,
};
use datafusion::prelude::SessionContext;
use serde_json::value::RawValue;
use std::sync::Arc;

pub fn register(ctx: &SessionContext) {
    use brook_planner::set_returning::{JSON_ELEMENTS, JSON_ELEMENTS_TEXT};
    for (name, as_text) in [(JSON_ELEMENTS, false), (JSON_ELEMENTS_TEXT, true)] {
        ctx.register_udf(ScalarUDF::new_from_impl(ArrayElements {
            name,
            as_text,
            signature: Signature::any(1, Volatility::Immutable),
        }));
    }
}

/// A JSON array's elements, as JSON text or as text.
#[derive(Debug, PartialEq, Eq, Hash)]
struct ArrayElements {
    name: &'static str,
    as_text: bool,
    signature: Signature,
}

impl ScalarUDFImpl for ArrayElements {
    fn name(&self) -> &str {
        self.name
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(DataType::List(Arc::new(Field::new_list_field(
            DataType::Utf8,
            true,
        ))))
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let (arrays, scalar, _) = super::argument_arrays(&args)?;
        let texts = datafusion::arrow::compute::cast(&arrays[0], &DataType::Utf8)?;
        let out = elements(texts.as_string::<i32>(), self.as_text)
            .map_err(|e| DataFusionError::External(Box::new(e)))?;
        super::result_value(out, scalar)
    }
}

/// Each row's elements.
fn elements(
    texts: &datafusion::arrow::array::StringArray,
    as_text: bool,
) -> std::result::Result<ArrayRef, BrookError> {
    text_lists(texts, |text| {
        use crate::pg::json::{open, render_raw, Raw};
        let doc: &RawValue = serde_json::from_str(text).map_err(crate::pg::json::invalid_json)?;
        let items = match open(doc)? {
            Raw::Array(items) => items,
            Raw::Object(_) => {
                return Err(brook_err!(
                    InvalidParameter,
                    "cannot extract elements from an object"
                ))
            }
            _ => {
                return Err(brook_err!(
                    InvalidParameter,
                    "cannot extract elements from a scalar"
                ))
            }
        };
        items
            .into_iter()
            .map(|item| render_raw(item, as_text))
            .collect()
    })
}

/// A list of texts for each row of `texts`, made by `items` (a NULL row gives a NULL list,
/// which unnests to no rows): the array form of a set-returning JSON function.
pub(super) fn text_lists(
    texts: &datafusion::arrow::array::StringArray,
    items: impl Fn(&str) -> std::result::Result<Vec<Option<String>>, BrookError>,
) -> std::result::Result<ArrayRef, BrookError> {
    let mut out = ListBuilder::new(StringBuilder::new());
    for text in texts.iter() {
        let Some(text) = text else {
            out.append_null();
            continue;
        };
        for item in items(text)? {
            out.values().append_option(item);
        }
        out.append(true);
    }
    Ok(Arc::new(out.finish()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::arrow::array::{Array, StringArray};

    fn rows(json: Option<&str>, as_text: bool) -> Vec<Option<Vec<Option<String>>>> {
        let texts = StringArray::from(vec![json]);
        let out = elements(&texts, as_text).unwrap();
        let lists = out.as_list::<i32>();
        (0..lists.len())
            .map(|i| {
                (!lists.is_null(i)).then(|| {
                    let items = lists.value(i);
                    let items = items.as_string::<i32>();
                    items.iter().map(|s| s.map(String::from)).collect()
                })
            })
            .collect()
    }

    #[test]
    fn elements_as_json_and_as_text() {
        let doc = Some(r#"[1, "x", {"b":2,"a":[true]}, null]"#);
        let json = |s: &str| Some(s.to_string());
        assert_eq!(
            rows(doc, false),
            [Some(vec![
                json("1"),
                json("\"x\""),
                json(r#"{"a": [true], "b": 2}"#),
                json("null")
            ])]
        );
        assert_eq!(
            rows(doc, true),
            [Some(vec![
                json("1"),
                json("x"),
                json(r#"{"a": [true], "b": 2}"#),
                None
            ])]
        );
        assert_eq!(rows(None, false), [None]);
        assert_eq!(rows(Some("[]"), false), [Some(vec![])]);
    }

    #[test]
    fn objects_and_scalars_are_22023() {
        for doc in [r#"{"a": 1}"#, "3"] {
            let e = elements(&StringArray::from(vec![doc]), false).unwrap_err();
            assert_eq!(e.sqlstate(), "22023", "{doc}: {e}");
        }
    }
}
