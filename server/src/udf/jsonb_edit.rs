//! PostgreSQL's jsonb operators and `jsonb_set`: `a || b` (concatenation and object merge),
//! `a - key`, `a - index`, `a - keys[]`, `a #- path`, `a @> b` / `a <@ b` (containment)
//! and `jsonb_set(target, path, value [, create_missing])`.
//!
//! Brook keeps jsonb as text (typed `jsonb` by field metadata), so before this `a || b`
//! concatenated the text (`{"a": 1}{"b": 2}`, a wrong answer), `-` and `#-` failed to
//! plan and `@>` was taken for an array test. `datafusion-functions-json` reads JSON but
//! has no editing or containment functions, so these are written here over `serde_json`,
//! following PostgreSQL's `jsonb_concat`, `jsonb_delete*`, `jsonb_set` and
//! `JsonbDeepContains`. A planner hook ([`JsonbOperators`]) sends the operators of a jsonb
//! operand to these functions; other operands keep their meaning (`text || text`).

use crate::pg::types::PG_TYPE_KEY;
use brook_common::{brook_err, BrookError};
use datafusion::arrow::array::{Array, ArrayRef, AsArray, BooleanArray, StringArray};
use datafusion::arrow::datatypes::{DataType, Field, FieldRef};
use datafusion::common::{DFSchema, ScalarValue};
use datafusion::error::{DataFusionError, Result};
use datafusion::logical_expr::planner::{ExprPlanner, PlannerResult, RawBinaryExpr};
use datafusion::logical_expr::{
    ColumnarValue, Expr, ExprSchemable, ReturnFieldArgs, ScalarFunctionArgs, ScalarUDF,
    ScalarUDFImpl, Signature, Volatility,
};
use datafusion::prelude::SessionContext;
use datafusion::sql::sqlparser::ast::BinaryOperator;
use serde_json::Value;
use std::collections::HashMap;
use std::sync::Arc;

/// What a function computes.
#[derive(Debug, PartialEq, Eq, Hash, Clone, Copy)]
enum Edit {
    /// `a || b`.
    Concat,
    /// `a - key`, `a - index`, `a - keys`.
    Delete,
    /// `a #- path`.
    DeletePath,
    /// `jsonb_set(target, path, value [, create_missing])`.
    Set,
    /// `a @> b`.
    Contains,
}

fn user(e: BrookError) -> DataFusionError {
    DataFusionError::External(Box::new(e))
}

fn parse(text: &str) -> Result<Value> {
    serde_json::from_str(text).map_err(|e| user(crate::pg::json::invalid_json(e)))
}

fn scalar_error(what: &str) -> DataFusionError {
    user(brook_err!(InvalidParameter, "{what}"))
}

/// `a || b`: objects merge (b's members win), arrays concatenate, and any other pair is
/// made an array of both (an array operand contributes its elements).
fn concat(a: Value, b: Value) -> Value {
    match (a, b) {
        (Value::Object(mut a), Value::Object(b)) => {
            a.extend(b);
            Value::Object(a)
        }
        (Value::Array(mut a), Value::Array(b)) => {
            a.extend(b);
            Value::Array(a)
        }
        (Value::Array(mut a), b) => {
            a.push(b);
            Value::Array(a)
        }
        (a, Value::Array(b)) => Value::Array(std::iter::once(a).chain(b).collect()),
        (a, b) => Value::Array(vec![a, b]),
    }
}

/// `a - key`: the member `key` of an object, or the string elements equal to it of an
/// array, removed.
fn delete_key(a: Value, key: &str) -> Result<Value> {
    match a {
        Value::Object(mut members) => {
            members.remove(key);
            Ok(Value::Object(members))
        }
        Value::Array(items) => Ok(Value::Array(
            items
                .into_iter()
                .filter(|v| v.as_str() != Some(key))
                .collect(),
        )),
        _ => Err(scalar_error("cannot delete from scalar")),
    }
}

/// An array position counted from the end when negative, if it is within `len`.
fn position(index: i64, len: usize) -> Option<usize> {
    let len = len as i64;
    let at = if index < 0 { len + index } else { index };
    (0..len).contains(&at).then_some(at as usize)
}

/// `a - index`: the array element at `index` (negative: from the end) removed.
fn delete_index(a: Value, index: i64) -> Result<Value> {
    match a {
        Value::Array(mut items) => {
            if let Some(at) = position(index, items.len()) {
                items.remove(at);
            }
            Ok(Value::Array(items))
        }
        Value::Object(_) => Err(scalar_error(
            "cannot delete from object using integer index",
        )),
        _ => Err(scalar_error("cannot delete from scalar")),
    }
}

/// A path step as an array position: 22P02 when it is not an integer.
fn step_index(step: &str, at: usize) -> Result<i64> {
    step.parse::<i32>().map(i64::from).map_err(|_| {
        user(BrookError::InvalidText(format!(
            "path element at position {} is not an integer: \"{step}\"",
            at + 1
        )))
    })
}

/// `a #- path`: the value at `path` removed; `a` as it is when the path leads nowhere.
fn delete_path(a: Value, path: &[String]) -> Result<Value> {
    if !a.is_object() && !a.is_array() {
        return Err(scalar_error("cannot delete path in scalar"));
    }
    let mut a = a;
    remove_at(&mut a, path, 0)?;
    Ok(a)
}

fn remove_at(v: &mut Value, path: &[String], depth: usize) -> Result<()> {
    let Some((step, rest)) = path.split_first() else {
        return Ok(());
    };
    match v {
        Value::Object(members) if rest.is_empty() => {
            members.remove(step);
        }
        Value::Object(members) => {
            if let Some(child) = members.get_mut(step) {
                remove_at(child, rest, depth + 1)?;
            }
        }
        Value::Array(items) => {
            let index = step_index(step, depth)?;
            if let Some(at) = position(index, items.len()) {
                if rest.is_empty() {
                    items.remove(at);
                } else {
                    remove_at(&mut items[at], rest, depth + 1)?;
                }
            }
        }
        _ => {}
    }
    Ok(())
}

/// `jsonb_set(target, path, value, create_missing)`: the value at `path` replaced (or,
/// with `create_missing`, added where the last step is missing: a new member, or an element
/// before the first or after the last); `target` as it is when the path leads nowhere.
fn set(target: Value, path: &[String], value: Value, create_missing: bool) -> Result<Value> {
    if !target.is_object() && !target.is_array() {
        return Err(scalar_error("cannot set path in scalar"));
    }
    let mut target = target;
    set_at(&mut target, path, value, create_missing, 0)?;
    Ok(target)
}

fn set_at(
    v: &mut Value,
    path: &[String],
    value: Value,
    create_missing: bool,
    depth: usize,
) -> Result<()> {
    let Some((step, rest)) = path.split_first() else {
        return Ok(());
    };
    match v {
        Value::Object(members) => match members.get_mut(step) {
            Some(child) if rest.is_empty() => *child = value,
            Some(child) => set_at(child, rest, value, create_missing, depth + 1)?,
            None if rest.is_empty() && create_missing => {
                members.insert(step.clone(), value);
            }
            None => {}
        },
        Value::Array(items) => {
            let index = step_index(step, depth)?;
            match position(index, items.len()) {
                Some(at) if rest.is_empty() => items[at] = value,
                Some(at) => set_at(&mut items[at], rest, value, create_missing, depth + 1)?,
                None if rest.is_empty() && create_missing => {
                    if index < 0 {
                        items.insert(0, value);
                    } else {
                        items.push(value);
                    }
                }
                None => {}
            }
        }
        _ => {}
    }
    Ok(())
}

/// Whether two JSON scalars are equal as jsonb compares them (numbers by value).
fn same_scalar(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => match (x.as_i64(), y.as_i64()) {
            (Some(x), Some(y)) => x == y,
            _ => x.as_f64() == y.as_f64(),
        },
        _ => a == b,
    }
}

/// `a @> b` as PostgreSQL's `JsonbDeepContains`: every member of an object `b` is in `a`
/// with a contained value; every element of an array `b` is contained in some element of
/// `a`; scalars are equal. At the top level only, an array contains a scalar element.
fn contains(a: &Value, b: &Value) -> bool {
    if let (Value::Array(items), scalar) = (a, b) {
        if !scalar.is_array() && !scalar.is_object() {
            return items.iter().any(|x| same_scalar(x, scalar));
        }
    }
    deep_contains(a, b)
}

fn deep_contains(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Object(a), Value::Object(b)) => b
            .iter()
            .all(|(k, vb)| a.get(k).is_some_and(|va| deep_contains(va, vb))),
        (Value::Array(a), Value::Array(b)) => b.iter().all(|eb| match eb {
            Value::Array(_) | Value::Object(_) => a.iter().any(|ea| deep_contains(ea, eb)),
            scalar => a.iter().any(|ea| same_scalar(ea, scalar)),
        }),
        (Value::Array(_) | Value::Object(_), _) | (_, Value::Array(_) | Value::Object(_)) => false,
        (a, b) => same_scalar(a, b),
    }
}

/// A jsonb function.
#[derive(Debug, PartialEq, Eq, Hash)]
struct JsonbFunction {
    name: &'static str,
    edit: Edit,
    signature: Signature,
}

/// A text type for JSON operands (string types as they are; anything else is refused by
/// the cast at run time, as a non-JSON value is).
fn as_text(t: &DataType) -> DataType {
    if super::is_text(t) {
        t.clone()
    } else {
        DataType::Utf8
    }
}

impl ScalarUDFImpl for JsonbFunction {
    fn name(&self) -> &str {
        self.name
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(match self.edit {
            Edit::Contains => DataType::Boolean,
            _ => DataType::Utf8,
        })
    }

    fn return_field_from_args(&self, _args: ReturnFieldArgs<'_>) -> Result<FieldRef> {
        if self.edit == Edit::Contains {
            return Ok(Arc::new(Field::new(self.name, DataType::Boolean, true)));
        }
        Ok(Arc::new(
            Field::new(self.name, DataType::Utf8, true).with_metadata(HashMap::from([(
                PG_TYPE_KEY.to_string(),
                "jsonb".to_string(),
            )])),
        ))
    }

    fn coerce_types(&self, arg_types: &[DataType]) -> Result<Vec<DataType>> {
        let wrong = || {
            DataFusionError::Plan(format!(
                "function {}({}) does not exist",
                self.name,
                arg_types
                    .iter()
                    .map(|t| t.to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            ))
        };
        match (self.edit, arg_types) {
            (Edit::Concat | Edit::Contains, [a, b]) => Ok(vec![as_text(a), as_text(b)]),
            (Edit::Delete, [a, b]) if b.is_integer() => Ok(vec![as_text(a), DataType::Int64]),
            (Edit::Delete | Edit::DeletePath, [a, b]) => Ok(vec![as_text(a), b.clone()]),
            (Edit::Set, [a, p, v]) => Ok(vec![as_text(a), p.clone(), as_text(v)]),
            (Edit::Set, [a, p, v, _]) => {
                Ok(vec![as_text(a), p.clone(), as_text(v), DataType::Boolean])
            }
            _ => Err(wrong()),
        }
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let (arrays, scalar, rows) = super::argument_arrays(&args)?;
        let text = |i: usize| datafusion::arrow::compute::cast(&arrays[i], &DataType::Utf8);
        let first = text(0)?;
        let first = first.as_string::<i32>();
        let out: ArrayRef = match self.edit {
            Edit::Contains => {
                let second = text(1)?;
                let second = second.as_string::<i32>();
                let mut out = Vec::with_capacity(rows);
                for row in 0..rows {
                    out.push(if is_null(&arrays[0], row) || is_null(&arrays[1], row) {
                        None
                    } else {
                        Some(contains(
                            &parse(first.value(row))?,
                            &parse(second.value(row))?,
                        ))
                    });
                }
                Arc::new(BooleanArray::from(out))
            }
            edit => {
                let mut out = Vec::with_capacity(rows);
                for row in 0..rows {
                    let value = if arrays.iter().any(|a| is_null(a, row)) {
                        None
                    } else {
                        let doc = parse(first.value(row))?;
                        Some(self.edited(edit, doc, &arrays, row)?)
                    };
                    out.push(value.map(|v| {
                        let mut s = String::new();
                        crate::pg::json::write_jsonb(&mut s, &v);
                        s
                    }));
                }
                Arc::new(StringArray::from(out))
            }
        };
        super::result_value(out, scalar)
    }
}

impl JsonbFunction {
    /// The edited value of `doc` (row `row` of the arguments).
    fn edited(&self, edit: Edit, doc: Value, arrays: &[ArrayRef], row: usize) -> Result<Value> {
        let text_at = |i: usize| -> Result<String> {
            let t = datafusion::arrow::compute::cast(&arrays[i].slice(row, 1), &DataType::Utf8)?;
            Ok(t.as_string::<i32>().value(0).to_string())
        };
        let path_at = |i: usize| -> Result<Vec<String>> {
            super::json_path::path_steps(&arrays[i], row)?
                .into_iter()
                .enumerate()
                .map(|(at, step)| {
                    step.ok_or_else(|| {
                        user(brook_err!(
                            NullValueNotAllowed,
                            "path element at position {} is null",
                            at + 1
                        ))
                    })
                })
                .collect()
        };
        match edit {
            Edit::Concat => Ok(concat(doc, parse(&text_at(1)?)?)),
            Edit::Delete => match arrays[1].data_type() {
                t if t.is_integer() => {
                    let i = ScalarValue::try_from_array(&arrays[1], row)?;
                    let ScalarValue::Int64(Some(i)) = i.cast_to(&DataType::Int64)? else {
                        return Ok(doc);
                    };
                    delete_index(doc, i)
                }
                DataType::List(_) | DataType::LargeList(_) => {
                    // NULL keys delete nothing, as in PostgreSQL.
                    let mut doc = doc;
                    for key in super::json_path::path_steps(&arrays[1], row)?
                        .into_iter()
                        .flatten()
                    {
                        doc = delete_key(doc, &key)?;
                    }
                    Ok(doc)
                }
                _ => delete_key(doc, &text_at(1)?),
            },
            Edit::DeletePath => delete_path(doc, &path_at(1)?),
            Edit::Set => {
                let create = match arrays.get(3) {
                    Some(flag) => flag.as_boolean().value(row),
                    None => true,
                };
                set(doc, &path_at(1)?, parse(&text_at(2)?)?, create)
            }
            Edit::Contains => Err(DataFusionError::Internal(
                "containment is not an edit".into(),
            )),
        }
    }
}

/// The function a jsonb operator becomes.
pub const CONCAT: &str = "brook_jsonb_concat";
/// `a - b`.
pub const DELETE: &str = "brook_jsonb_delete";
/// `a #- path`.
pub const DELETE_PATH: &str = "brook_jsonb_delete_path";
/// `a @> b` when `a` is jsonb.
pub const CONTAINS: &str = "brook_jsonb_contains";

/// Register the functions (after `udf::array_functions`, whose `array_has_all` the
/// containment operators keep for arrays).
pub fn register(ctx: &SessionContext) {
    use datafusion::execution::FunctionRegistry;
    if let Ok(arrays) = ctx.udf("array_has_all") {
        ctx.register_udf(ScalarUDF::new_from_impl(ContainsEither {
            arrays,
            jsonb: Arc::new(ScalarUDF::new_from_impl(JsonbFunction {
                name: CONTAINS,
                edit: Edit::Contains,
                signature: Signature::user_defined(Volatility::Immutable),
            })),
            signature: Signature::user_defined(Volatility::Immutable),
        }));
    }
    for (name, edit) in [
        (CONCAT, Edit::Concat),
        (DELETE, Edit::Delete),
        (DELETE_PATH, Edit::DeletePath),
        (CONTAINS, Edit::Contains),
        ("jsonb_set", Edit::Set),
    ] {
        ctx.register_udf(ScalarUDF::new_from_impl(JsonbFunction {
            name,
            edit,
            signature: Signature::user_defined(Volatility::Immutable),
        }));
    }
}

/// `array_has_all`, which `a @> b` and `a <@ b` become (`brook_planner::array_operators`):
/// jsonb containment for two JSON (text) operands, the array test otherwise.
#[derive(Debug, PartialEq, Eq, Hash)]
struct ContainsEither {
    arrays: Arc<ScalarUDF>,
    jsonb: Arc<ScalarUDF>,
    signature: Signature,
}

/// Two JSON operands: text, or a NULL beside text (`jsonb @> NULL` is NULL).
fn are_texts(types: &[DataType]) -> bool {
    types.len() == 2
        && types.iter().any(super::is_text)
        && types
            .iter()
            .all(|t| super::is_text(t) || t == &DataType::Null)
}

/// Whether row `row` of `a` is NULL (a NULL literal's array has no null buffer).
fn is_null(a: &ArrayRef, row: usize) -> bool {
    a.data_type() == &DataType::Null || a.is_null(row)
}

impl ScalarUDFImpl for ContainsEither {
    fn name(&self) -> &str {
        self.arrays.name()
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(DataType::Boolean)
    }

    fn coerce_types(&self, arg_types: &[DataType]) -> Result<Vec<DataType>> {
        if are_texts(arg_types) {
            return Ok(arg_types.to_vec());
        }
        let fields: Vec<FieldRef> = arg_types
            .iter()
            .map(|t| Arc::new(Field::new("", t.clone(), true)))
            .collect();
        let coerced = datafusion::logical_expr::type_coercion::functions::fields_with_udf(
            &fields,
            self.arrays.as_ref(),
        )?;
        Ok(coerced.iter().map(|f| f.data_type().clone()).collect())
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let types: Vec<DataType> = args.args.iter().map(|a| a.data_type()).collect();
        if are_texts(&types) {
            self.jsonb.invoke_with_args(args)
        } else {
            self.arrays.invoke_with_args(args)
        }
    }
}

/// The PostgreSQL type `e` is recorded as (a jsonb column or cast, one of these functions).
fn recorded_type(e: &Expr, schema: &DFSchema) -> Option<String> {
    let (_, f) = e.to_field(schema).ok()?;
    f.metadata().get(PG_TYPE_KEY).cloned()
}

/// PostgreSQL's name of an operand's type, for an error message.
fn type_name(e: &Expr, schema: &DFSchema) -> String {
    if let Some(t) = recorded_type(e, schema) {
        return t;
    }
    match e.get_type(schema) {
        Ok(DataType::Int16) => "smallint".into(),
        Ok(DataType::Int32) => "integer".into(),
        Ok(DataType::Int64) => "bigint".into(),
        Ok(DataType::Float32) => "real".into(),
        Ok(DataType::Float64) => "double precision".into(),
        Ok(DataType::Boolean) => "boolean".into(),
        Ok(DataType::Decimal128(..) | DataType::Decimal256(..)) => "numeric".into(),
        Ok(t) if super::is_text(&t) => "text".into(),
        Ok(t) => t.to_string(),
        Err(_) => "unknown".into(),
    }
}

/// `a || b` with a JSON operand: jsonb concatenation for jsonb with jsonb (or an untyped
/// literal), text concatenation with a text operand, and PostgreSQL's 42883 otherwise
/// (`json || json`, `jsonb || integer`).
fn concatenation(expr: &RawBinaryExpr, schema: &DFSchema) -> Result<Option<&'static str>> {
    let (l, r) = (
        recorded_type(&expr.left, schema),
        recorded_type(&expr.right, schema),
    );
    let json = |t: &Option<String>| matches!(t.as_deref(), Some("json" | "jsonb"));
    if !json(&l) && !json(&r) {
        return Ok(None);
    }
    let jsonb = |t: &Option<String>, e: &Expr| {
        t.as_deref() == Some("jsonb")
            || is_unknown_literal(e)
            || matches!(e, Expr::Literal(ScalarValue::Null, _))
    };
    if jsonb(&l, &expr.left) && jsonb(&r, &expr.right) {
        return Ok(Some(CONCAT));
    }
    let text = |t: &Option<String>, e: &Expr| {
        !json(t) && e.get_type(schema).is_ok_and(|t| super::is_text(&t))
    };
    if text(&l, &expr.left) || text(&r, &expr.right) {
        return Ok(None);
    }
    Err(user(BrookError::UndefinedFunction(format!(
        "operator does not exist: {} || {}",
        type_name(&expr.left, schema),
        type_name(&expr.right, schema)
    ))))
}

/// An untyped string literal, which PostgreSQL reads as the other operand's type.
fn is_unknown_literal(e: &Expr) -> bool {
    matches!(
        e,
        Expr::Literal(ScalarValue::Utf8(_) | ScalarValue::Utf8View(_), _)
    )
}

/// The SQL planner's hook for the jsonb operators (`@>`/`<@` arrive as `array_has_all`
/// calls, see `udf::array_functions`).
#[derive(Debug, Default)]
pub struct JsonbOperators;

impl ExprPlanner for JsonbOperators {
    fn plan_binary_op(
        &self,
        expr: RawBinaryExpr,
        schema: &DFSchema,
    ) -> Result<PlannerResult<RawBinaryExpr>> {
        let left = recorded_type(&expr.left, schema).as_deref() == Some("jsonb");
        let name = match expr.op {
            BinaryOperator::StringConcat => match concatenation(&expr, schema)? {
                Some(name) => name,
                None => return Ok(PlannerResult::Original(expr)),
            },
            BinaryOperator::Minus if left => DELETE,
            BinaryOperator::HashMinus if left => DELETE_PATH,
            _ => return Ok(PlannerResult::Original(expr)),
        };
        let udf = ScalarUDF::new_from_impl(JsonbFunction {
            name,
            edit: match name {
                CONCAT => Edit::Concat,
                DELETE => Edit::Delete,
                _ => Edit::DeletePath,
            },
            signature: Signature::user_defined(Volatility::Immutable),
        });
        Ok(PlannerResult::Planned(
            udf.call(vec![expr.left, expr.right]),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn jsonb(v: &Value) -> String {
        let mut s = String::new();
        crate::pg::json::write_jsonb(&mut s, v);
        s
    }

    fn path(steps: &[&str]) -> Vec<String> {
        steps.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn concatenation_as_postgres() {
        let cases = [
            (
                json!({"a": 1, "b": 2}),
                json!({"b": 3, "c": 4}),
                r#"{"a": 1, "b": 3, "c": 4}"#,
            ),
            (json!([1, 2]), json!([3]), "[1, 2, 3]"),
            (json!([1]), json!({"a": 1}), r#"[1, {"a": 1}]"#),
            (json!({"a": 1}), json!([1]), r#"[{"a": 1}, 1]"#),
            (json!({"a": 1}), json!(2), r#"[{"a": 1}, 2]"#),
            (json!("x"), json!("y"), r#"["x", "y"]"#),
        ];
        for (a, b, want) in cases {
            assert_eq!(jsonb(&concat(a.clone(), b.clone())), want, "{a} || {b}");
        }
    }

    #[test]
    fn deletion_as_postgres() {
        assert_eq!(
            jsonb(&delete_key(json!({"a": 1, "b": 2}), "a").unwrap()),
            r#"{"b": 2}"#
        );
        assert_eq!(
            jsonb(&delete_key(json!(["a", 1, "a", "b"]), "a").unwrap()),
            r#"[1, "b"]"#
        );
        assert_eq!(
            jsonb(&delete_index(json!([1, 2, 3]), -1).unwrap()),
            "[1, 2]"
        );
        assert_eq!(
            jsonb(&delete_index(json!([1, 2, 3]), 7).unwrap()),
            "[1, 2, 3]"
        );
        assert!(delete_index(json!({"a": 1}), 0).is_err());
        assert!(delete_key(json!(1), "a").is_err());
        let doc = json!({"a": {"b": [1, 2, 3]}, "c": 1});
        assert_eq!(
            jsonb(&delete_path(doc.clone(), &path(&["a", "b", "1"])).unwrap()),
            r#"{"a": {"b": [1, 3]}, "c": 1}"#
        );
        assert_eq!(
            jsonb(&delete_path(doc.clone(), &path(&["x", "y"])).unwrap()),
            jsonb(&doc)
        );
        assert!(delete_path(doc, &path(&["a", "b", "x"])).is_err());
        assert!(delete_path(json!(3), &path(&["a"])).is_err());
    }

    #[test]
    fn set_as_postgres() {
        let doc = json!({"a": [1, 2], "b": {"c": 1}});
        let set_to = |p: &[&str], create: bool| {
            jsonb(&set(doc.clone(), &path(p), json!(9), create).unwrap())
        };
        assert_eq!(set_to(&["b", "c"], true), r#"{"a": [1, 2], "b": {"c": 9}}"#);
        assert_eq!(
            set_to(&["b", "d"], true),
            r#"{"a": [1, 2], "b": {"c": 1, "d": 9}}"#
        );
        assert_eq!(
            set_to(&["b", "d"], false),
            r#"{"a": [1, 2], "b": {"c": 1}}"#
        );
        assert_eq!(
            set_to(&["a", "-1"], true),
            r#"{"a": [1, 9], "b": {"c": 1}}"#
        );
        assert_eq!(
            set_to(&["a", "5"], true),
            r#"{"a": [1, 2, 9], "b": {"c": 1}}"#
        );
        assert_eq!(
            set_to(&["a", "-5"], true),
            r#"{"a": [9, 1, 2], "b": {"c": 1}}"#
        );
        assert_eq!(set_to(&["x", "y"], true), jsonb(&doc));
        assert!(set(json!(1), &path(&["a"]), json!(2), true).is_err());
    }

    #[test]
    fn containment_as_postgres() {
        let yes = [
            (json!({"a": 1, "b": [1, 2]}), json!({"a": 1})),
            (json!({"a": 1, "b": [1, 2]}), json!({"b": [2]})),
            (json!([1, 2, [3, 4]]), json!([[4], 1])),
            (json!([1, 2]), json!(1)),
            (json!({"a": 1.0}), json!({"a": 1})),
            (json!({"a": 1}), json!({})),
        ];
        let no = [
            (json!({"a": [1, 2]}), json!({"a": 1})),
            (json!({"a": 1}), json!({"a": "1"})),
            (json!([[1, 2]]), json!([1])),
            (json!(1), json!([1])),
            (json!({"a": {"b": 1}}), json!({"b": 1})),
        ];
        for (a, b) in yes {
            assert!(contains(&a, &b), "{a} @> {b}");
        }
        for (a, b) in no {
            assert!(!contains(&a, &b), "not {a} @> {b}");
        }
    }
}
