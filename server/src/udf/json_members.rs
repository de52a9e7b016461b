//! The members of a JSON object as arrays, whose `unnest` is PostgreSQL's set-returning
//! `json[b]_object_keys` (one column) and `json[b]_each[_text]` (columns `key` and `value`,
//! an `unnest` of the keys beside one of the values: `brook_planner::set_returning` and
//! `lateral` rewrite the calls). Written here because `datafusion-functions-json` has no
//! function listing an object's values, and its key list neither keeps json's duplicate
//! keys apart from jsonb's nor refuses an array.
//!
//! As PostgreSQL: json keeps its members as written (document order, duplicate keys, each
//! value's own text); jsonb has one member per key (the last written), shorter keys first
//! and values as jsonb prints them. As text, a string value is unquoted and JSON null is
//! NULL. A NULL document gives no rows; an array or a scalar is 22023 with PostgreSQL's
//! message for the function called.

use brook_common::{brook_err, BrookError};
use datafusion::arrow::array::AsArray;
use datafusion::arrow::datatypes::{DataType, Field};
use datafusion::error::{DataFusionError, Result};
use datafusion::logical_expr::{
    ColumnarValue, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, Volatility,
};
use datafusion::prelude::SessionContext;
use serde::de::{Deserializer, MapAccess, Visitor};
use serde_json::value::RawValue;
use serde_json::Value;
use std::sync::Arc;

/// What a function lists of each member.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Part {
    Key,
    Value,
    ValueText,
}

/// The array functions: (name, jsonb, part, error for an array, error for a scalar).
const FUNCTIONS: [(&str, bool, Part, &str, &str); 8] = [
    (
        "brook_json_object_keys",
        false,
        Part::Key,
        "cannot call json_object_keys on an array",
        "cannot call json_object_keys on a scalar",
    ),
    (
        "brook_jsonb_object_keys",
        true,
        Part::Key,
        "cannot call jsonb_object_keys on an array",
        "cannot call jsonb_object_keys on a scalar",
    ),
    (
        "brook_json_each_keys",
        false,
        Part::Key,
        "cannot deconstruct an array as an object",
        "cannot deconstruct a scalar",
    ),
    (
        "brook_json_each_values",
        false,
        Part::Value,
        "cannot deconstruct an array as an object",
        "cannot deconstruct a scalar",
    ),
    (
        "brook_json_each_text_values",
        false,
        Part::ValueText,
        "cannot deconstruct an array as an object",
        "cannot deconstruct a scalar",
    ),
    (
        "brook_jsonb_each_keys",
        true,
        Part::Key,
        "cannot call jsonb_each on a non-object",
        "cannot call jsonb_each on a non-object",
    ),
    (
        "brook_jsonb_each_values",
        true,
        Part::Value,
        "cannot call jsonb_each on a non-object",
        "cannot call jsonb_each on a non-object",
    ),
    (
        "brook_jsonb_each_text_values",
        true,
        Part::ValueText,
        "cannot call jsonb_each_text on a non-object",
        "cannot call jsonb_each_text on a non-object",
    ),
];

pub fn register(ctx: &SessionContext) {
    for record in brook_planner::set_returning::RECORD_RETURNING {
        ctx.register_udf(ScalarUDF::new_from_impl(InSelectList {
            name: record.name,
            signature: Signature::variadic_any(Volatility::Immutable),
        }));
    }
    for (name, jsonb, part, on_array, on_scalar) in FUNCTIONS {
        ctx.register_udf(ScalarUDF::new_from_impl(Members {
            name,
            jsonb,
            part,
            on_array,
            on_scalar,
            signature: Signature::any(1, Volatility::Immutable),
        }));
    }
}

/// One part of each member of a JSON object.
#[derive(Debug, PartialEq, Eq, Hash)]
struct Members {
    name: &'static str,
    jsonb: bool,
    part: Part,
    on_array: &'static str,
    on_scalar: &'static str,
    signature: Signature,
}

impl ScalarUDFImpl for Members {
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
        let out = super::json_elements::text_lists(texts.as_string::<i32>(), |text| {
            if self.jsonb {
                self.jsonb_members(text)
            } else {
                self.json_members(text)
            }
        })
        .map_err(|e| DataFusionError::External(Box::new(e)))?;
        super::result_value(out, scalar)
    }
}

impl Members {
    /// 22023 unless `first` (the document's first character) opens an object.
    fn check_object(&self, first: Option<char>) -> Result<(), BrookError> {
        match first {
            Some('{') => Ok(()),
            Some('[') => Err(brook_err!(InvalidParameter, "{}", self.on_array)),
            _ => Err(brook_err!(InvalidParameter, "{}", self.on_scalar)),
        }
    }

    /// json's members as written.
    fn json_members(&self, text: &str) -> Result<Vec<Option<String>>, BrookError> {
        let raw: Box<RawValue> =
            serde_json::from_str(text).map_err(crate::pg::json::invalid_json)?;
        self.check_object(raw.get().chars().next())?;
        let mut de = serde_json::Deserializer::from_str(raw.get());
        let members = de
            .deserialize_map(InOrder)
            .map_err(crate::pg::json::invalid_json)?;
        members
            .into_iter()
            .map(|(key, value)| match self.part {
                Part::Key => Ok(Some(key)),
                Part::Value => Ok(Some(value.get().to_string())),
                Part::ValueText => {
                    let v: Value =
                        serde_json::from_str(value.get()).map_err(crate::pg::json::invalid_json)?;
                    Ok(match v {
                        Value::String(s) => Some(s),
                        Value::Null => None,
                        _ => Some(value.get().to_string()),
                    })
                }
            })
            .collect()
    }

    /// jsonb's members: one per key, shorter keys first.
    fn jsonb_members(&self, text: &str) -> Result<Vec<Option<String>>, BrookError> {
        use crate::pg::json::{open, render_raw, Raw};
        let doc: &RawValue = serde_json::from_str(text).map_err(crate::pg::json::invalid_json)?;
        let members = match open(doc)? {
            Raw::Object(members) => members,
            Raw::Array(_) => return self.check_object(Some('[')).map(|()| Vec::new()),
            _ => return self.check_object(Some(' ')).map(|()| Vec::new()),
        };
        members
            .into_iter()
            .map(|(key, value)| match self.part {
                Part::Key => Ok(Some(key)),
                Part::Value => render_raw(value, false),
                Part::ValueText => render_raw(value, true),
            })
            .collect()
    }
}

/// `json[b]_each[_text]` called in a select list: 0A000 saying where it works (in
/// PostgreSQL it gives one composite value per member, a type Brook does not have).
#[derive(Debug, PartialEq, Eq, Hash)]
struct InSelectList {
    name: &'static str,
    signature: Signature,
}

impl ScalarUDFImpl for InSelectList {
    fn name(&self) -> &str {
        self.name
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Err(DataFusionError::External(Box::new(brook_err!(
            Unsupported,
            "{} outside FROM (its rows are records; call it in FROM: SELECT e.key, e.value \
             FROM t, {}(t.doc) AS e)",
            self.name,
            self.name
        ))))
    }

    fn invoke_with_args(&self, _args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        datafusion::common::internal_err!("{} is planned in FROM only", self.name)
    }
}

/// A JSON object's members in document order, duplicates kept, each value's text as written.
struct InOrder;

impl<'de> Visitor<'de> for InOrder {
    type Value = Vec<(String, Box<RawValue>)>;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a JSON object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut members = Vec::new();
        while let Some(member) = map.next_entry::<String, Box<RawValue>>()? {
            members.push(member);
        }
        Ok(members)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn members(function: &str, doc: &str) -> Result<Vec<Option<String>>, BrookError> {
        let (name, jsonb, part, on_array, on_scalar) =
            FUNCTIONS.into_iter().find(|f| f.0 == function).unwrap();
        let m = Members {
            name,
            jsonb,
            part,
            on_array,
            on_scalar,
            signature: Signature::any(1, Volatility::Immutable),
        };
        if jsonb {
            m.jsonb_members(doc)
        } else {
            m.json_members(doc)
        }
    }

    fn texts(items: &[Option<&str>]) -> Vec<Option<String>> {
        items.iter().map(|s| s.map(String::from)).collect()
    }

    /// PostgreSQL 15's answers.
    #[test]
    fn json_keeps_members_as_written() {
        let doc = r#"{"b":1, "aa": {"x":[1,  2]}, "a":null, "b":"s"}"#;
        assert_eq!(
            members("brook_json_each_keys", doc).unwrap(),
            texts(&[Some("b"), Some("aa"), Some("a"), Some("b")])
        );
        assert_eq!(
            members("brook_json_each_values", doc).unwrap(),
            texts(&[
                Some("1"),
                Some(r#"{"x":[1,  2]}"#),
                Some("null"),
                Some(r#""s""#)
            ])
        );
        assert_eq!(
            members("brook_json_each_text_values", doc).unwrap(),
            texts(&[Some("1"), Some(r#"{"x":[1,  2]}"#), None, Some("s")])
        );
    }

    #[test]
    fn jsonb_has_one_member_per_key_shorter_keys_first() {
        let doc = r#"{"b":1, "aa": {"x":[1,  2]}, "a":null, "b":"s"}"#;
        assert_eq!(
            members("brook_jsonb_object_keys", doc).unwrap(),
            texts(&[Some("a"), Some("b"), Some("aa")])
        );
        assert_eq!(
            members("brook_jsonb_each_values", doc).unwrap(),
            texts(&[Some("null"), Some(r#""s""#), Some(r#"{"x": [1, 2]}"#)])
        );
        assert_eq!(
            members("brook_jsonb_each_text_values", doc).unwrap(),
            texts(&[None, Some("s"), Some(r#"{"x": [1, 2]}"#)])
        );
    }

    #[test]
    fn arrays_and_scalars_are_22023_as_postgresql_words_them() {
        for (function, doc, message) in [
            (
                "brook_json_object_keys",
                "[1]",
                "cannot call json_object_keys on an array",
            ),
            (
                "brook_jsonb_object_keys",
                "1",
                "cannot call jsonb_object_keys on a scalar",
            ),
            (
                "brook_json_each_keys",
                " [1]",
                "cannot deconstruct an array as an object",
            ),
            (
                "brook_json_each_values",
                "\"x\"",
                "cannot deconstruct a scalar",
            ),
            (
                "brook_jsonb_each_keys",
                "[1]",
                "cannot call jsonb_each on a non-object",
            ),
        ] {
            let e = members(function, doc).unwrap_err();
            assert_eq!((e.sqlstate(), e.to_string().as_str()), ("22023", message));
        }
        assert_eq!(
            members("brook_json_each_keys", "{bad")
                .unwrap_err()
                .sqlstate(),
            "22P02"
        );
    }
}
