//! The JSON type of JSON values: `j -> k` and `json[b]_extract_path(j, ...)` are `json` or
//! `jsonb` as PostgreSQL types them, not text.
//!
//! `datafusion-functions-json`'s `json_get_json` finds the value; it returns plain text, so
//! `(j -> 'a') || '{"c": 2}'` was text concatenation (`1{"c":2}`, a wrong answer) and the
//! client was told the column is text. [`JsonGet`] calls it and records the type
//! ([`PG_TYPE_KEY`]) the jsonb operators (`udf::jsonb_operators`), `pg_typeof` and the wire
//! read. `->>` and `?` keep the crate's functions under the names the statement rewrite
//! gives the operators (`brook_planner::json_ops`), which name the column `?column?`, and
//! `json[b]_extract_path_text` / `json[b]_array_length` under their own names.

use crate::pg::types::PG_TYPE_KEY;
use datafusion::arrow::datatypes::{DataType, Field, FieldRef};
use datafusion::error::Result;
use datafusion::execution::FunctionRegistry;
use datafusion::logical_expr::{
    ColumnarValue, ReturnFieldArgs, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature,
};
use datafusion::prelude::SessionContext;
use std::collections::HashMap;
use std::sync::Arc;

/// `json` or `jsonb` when `field` is recorded as one.
pub(crate) fn json_type(field: &Field) -> Option<&'static str> {
    match field.metadata().get(PG_TYPE_KEY).map(String::as_str) {
        Some("json") => Some("json"),
        Some("jsonb") => Some("jsonb"),
        _ => None,
    }
}

/// `field` recorded as PostgreSQL type `ty` (`json`, `jsonb`).
pub(crate) fn typed_as(field: Field, ty: &str) -> Field {
    let mut metadata = field.metadata().clone();
    metadata.insert(PG_TYPE_KEY.to_string(), ty.to_string());
    field.with_metadata(metadata)
}

/// A plain text field recorded as `ty`.
pub(crate) fn json_field(name: &str, ty: &str) -> FieldRef {
    Arc::new(
        Field::new(name, DataType::Utf8, true)
            .with_metadata(HashMap::from([(PG_TYPE_KEY.to_string(), ty.to_string())])),
    )
}

/// Register the typed functions (after `udf::functions`, which registers the crate's).
pub fn register(ctx: &SessionContext) {
    let Ok(get) = ctx.udf("json_get_json") else {
        return;
    };
    for (name, result) in [
        (brook_planner::json_ops::JSON_GET, None),
        ("json_extract_path", Some("json")),
        ("jsonb_extract_path", Some("jsonb")),
    ] {
        ctx.register_udf(ScalarUDF::new_from_impl(JsonGet {
            name,
            result,
            inner: get.clone(),
        }));
    }
    for (crate_name, names) in [
        (
            "json_as_text",
            &[
                brook_planner::json_ops::JSON_GET_TEXT,
                "json_extract_path_text",
                "jsonb_extract_path_text",
            ][..],
        ),
        ("json_contains", &[brook_planner::json_ops::JSON_EXISTS][..]),
        (
            "json_length",
            &["json_array_length", "jsonb_array_length"][..],
        ),
    ] {
        if let Ok(f) = ctx.udf(crate_name) {
            ctx.register_udf(f.as_ref().clone().with_aliases(names.iter().copied()));
        }
    }
}

/// `json_get_json` with the result typed: `result`, or the first argument's JSON type when
/// `None` (the operator `->`, whose result is of its operand's type).
#[derive(Debug, PartialEq, Eq, Hash)]
struct JsonGet {
    name: &'static str,
    result: Option<&'static str>,
    inner: Arc<ScalarUDF>,
}

impl ScalarUDFImpl for JsonGet {
    fn name(&self) -> &str {
        self.name
    }

    fn signature(&self) -> &Signature {
        self.inner.signature()
    }

    fn return_type(&self, arg_types: &[DataType]) -> Result<DataType> {
        self.inner.return_type(arg_types)
    }

    fn return_field_from_args(&self, args: ReturnFieldArgs<'_>) -> Result<FieldRef> {
        let ty = self
            .result
            .or_else(|| args.arg_fields.first().and_then(|f| json_type(f)));
        let field = self.inner.return_field_from_args(args)?;
        let field = field.as_ref().clone().with_name(self.name);
        Ok(Arc::new(match ty {
            Some(ty) => typed_as(field, ty),
            None => field,
        }))
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        self.inner.invoke_with_args(args)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_result_is_typed_as_the_operand_or_the_function_says() {
        let ctx = SessionContext::new();
        ctx.register_udf(
            datafusion_functions_json::udfs::json_get_json_udf()
                .as_ref()
                .clone(),
        );
        register(&ctx);
        let jsonb = Arc::new(typed_as(Field::new("j", DataType::Utf8, true), "jsonb"));
        let json = Arc::new(typed_as(Field::new("j", DataType::Utf8, true), "json"));
        let text = Arc::new(Field::new("t", DataType::Utf8, true));
        let key = Arc::new(Field::new("k", DataType::Utf8, false));
        let typed = |name: &str, doc: &FieldRef| {
            let f = ctx.udf(name).expect("registered");
            let fields = [doc.clone(), key.clone()];
            let field = f
                .return_field_from_args(ReturnFieldArgs {
                    arg_fields: &fields,
                    scalar_arguments: &[None, None],
                })
                .expect("typed");
            json_type(&field)
        };
        let op = brook_planner::json_ops::JSON_GET;
        assert_eq!(typed(op, &jsonb), Some("jsonb"));
        assert_eq!(typed(op, &json), Some("json"));
        assert_eq!(typed(op, &text), None);
        assert_eq!(typed("json_extract_path", &jsonb), Some("json"));
        assert_eq!(typed("jsonb_extract_path", &text), Some("jsonb"));
    }
}
