//! PostgreSQL's jsonb editing functions: `a || b` (concatenation and object merge),
//! `a - key`, `a - index`, `a - keys[]`, `a #- path`, `a @> b` / `a <@ b` (containment)
//! and `jsonb_set(target, path, value [, create_missing])`.
//!
//! Brook keeps jsonb as text (typed `jsonb` by field metadata). `datafusion-functions-json`
//! reads JSON but has no editing or containment functions, so these are written here over
//! [`Doc`] (documents whose numbers keep their digits and compare by value), following
//! PostgreSQL's `jsonb_concat`, `jsonb_delete*`, `jsonb_set` and `JsonbDeepContains`. Which operator becomes which function is
//! [`super::jsonb_operators`]' concern.

use crate::pg::jsonb_doc::Doc;
use brook_common::{brook_err, BrookError};
use datafusion::arrow::array::{Array, ArrayRef, AsArray, BooleanArray, StringArray};
use datafusion::arrow::datatypes::{DataType, Field, FieldRef};
use datafusion::common::ScalarValue;
use datafusion::error::{DataFusionError, Result};
use datafusion::logical_expr::{
    ColumnarValue, ReturnFieldArgs, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature,
    Volatility,
};
use datafusion::prelude::SessionContext;
use std::sync::Arc;

/// What a function computes.
#[derive(Debug, PartialEq, Eq, Hash, Clone, Copy)]
pub(crate) enum Edit {
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

fn parse(text: &str) -> Result<Doc> {
    Doc::parse(text).map_err(DataFusionError::from)
}

fn scalar_error(what: &str) -> DataFusionError {
    DataFusionError::from(brook_err!(InvalidParameter, "{what}"))
}

/// `a || b`: objects merge (b's members win), arrays concatenate, and any other pair is
/// made an array of both (an array operand contributes its elements).
fn concat(a: Doc, b: Doc) -> Doc {
    match (a, b) {
        (Doc::Object(mut a), Doc::Object(b)) => {
            for (k, v) in b {
                a.insert(k, v);
            }
            Doc::Object(a)
        }
        (Doc::Array(mut a), Doc::Array(b)) => {
            a.extend(b);
            Doc::Array(a)
        }
        (Doc::Array(mut a), b) => {
            a.push(b);
            Doc::Array(a)
        }
        (a, Doc::Array(b)) => Doc::Array(std::iter::once(a).chain(b).collect()),
        (a, b) => Doc::Array(vec![a, b]),
    }
}

/// `a - key`: the member `key` of an object, or the string elements equal to it of an
/// array, removed.
fn delete_key(a: Doc, key: &str) -> Result<Doc> {
    match a {
        Doc::Object(mut members) => {
            members.remove(key);
            Ok(Doc::Object(members))
        }
        Doc::Array(items) => Ok(Doc::Array(
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
fn delete_index(a: Doc, index: i64) -> Result<Doc> {
    match a {
        Doc::Array(mut items) => {
            if let Some(at) = position(index, items.len()) {
                items.remove(at);
            }
            Ok(Doc::Array(items))
        }
        Doc::Object(_) => Err(scalar_error(
            "cannot delete from object using integer index",
        )),
        _ => Err(scalar_error("cannot delete from scalar")),
    }
}

/// A path step as an array position: 22P02 when it is not an integer.
fn step_index(step: &str, at: usize) -> Result<i64> {
    step.parse::<i32>().map(i64::from).map_err(|_| {
        DataFusionError::from(BrookError::InvalidText(format!(
            "path element at position {} is not an integer: \"{step}\"",
            at + 1
        )))
    })
}

/// `a #- path`: the value at `path` removed; `a` as it is when the path leads nowhere.
fn delete_path(a: Doc, path: &[String]) -> Result<Doc> {
    if !a.is_container() {
        return Err(scalar_error("cannot delete path in scalar"));
    }
    let mut a = a;
    remove_at(&mut a, path, 0)?;
    Ok(a)
}

fn remove_at(v: &mut Doc, path: &[String], depth: usize) -> Result<()> {
    let Some((step, rest)) = path.split_first() else {
        return Ok(());
    };
    match v {
        Doc::Object(members) if rest.is_empty() => {
            members.remove(step);
        }
        Doc::Object(members) => {
            if let Some(child) = members.get_mut(step) {
                remove_at(child, rest, depth + 1)?;
            }
        }
        Doc::Array(items) => {
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
fn set(target: Doc, path: &[String], value: Doc, create_missing: bool) -> Result<Doc> {
    if !target.is_container() {
        return Err(scalar_error("cannot set path in scalar"));
    }
    let mut target = target;
    set_at(&mut target, path, value, create_missing, 0)?;
    Ok(target)
}

fn set_at(
    v: &mut Doc,
    path: &[String],
    value: Doc,
    create_missing: bool,
    depth: usize,
) -> Result<()> {
    let Some((step, rest)) = path.split_first() else {
        return Ok(());
    };
    match v {
        Doc::Object(members) => match members.get_mut(step) {
            Some(child) if rest.is_empty() => *child = value,
            Some(child) => set_at(child, rest, value, create_missing, depth + 1)?,
            None if rest.is_empty() && create_missing => {
                members.insert(step.clone(), value);
            }
            None => {}
        },
        Doc::Array(items) => {
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
        Ok(super::json_get::json_field(self.name, "jsonb"))
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
        let texts = Texts::of(&arrays)?;
        let first = texts.column(0)?;
        let out: ArrayRef = match self.edit {
            Edit::Contains => {
                let second = texts.column(1)?;
                let mut out = Vec::with_capacity(rows);
                // One count of comparisons for the batch, and a look at the statement's
                // cancellation per row: rows of small documents add up too.
                let mut steps = super::jsonb_contains::Steps::default();
                for row in 0..rows {
                    crate::exec::interrupt::check()?;
                    out.push(if is_null(&arrays[0], row) || is_null(&arrays[1], row) {
                        None
                    } else {
                        Some(super::jsonb_contains::contains_counting(
                            &parse(first.value(row))?,
                            &parse(second.value(row))?,
                            &mut steps,
                        )?)
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
                        Some(edited(edit, doc, &arrays, &texts, row)?)
                    };
                    out.push(value.map(|v| v.text()));
                }
                Arc::new(StringArray::from(out))
            }
        };
        super::result_value(out, scalar)
    }
}

/// The arguments that are text (the JSON operands, a key), cast to `Utf8` once per batch.
struct Texts(Vec<Option<ArrayRef>>);

impl Texts {
    fn of(arrays: &[ArrayRef]) -> Result<Self> {
        let cast = |a: &ArrayRef| -> Result<Option<ArrayRef>> {
            if super::is_text(a.data_type()) || a.data_type() == &DataType::Null {
                Ok(Some(datafusion::arrow::compute::cast(a, &DataType::Utf8)?))
            } else {
                Ok(None)
            }
        };
        Ok(Texts(arrays.iter().map(cast).collect::<Result<_>>()?))
    }

    /// Argument `i` as text.
    fn column(&self, i: usize) -> Result<&StringArray> {
        match self.0.get(i) {
            Some(Some(a)) => Ok(a.as_string::<i32>()),
            _ => Err(DataFusionError::Internal(format!(
                "jsonb function argument {} is not text",
                i + 1
            ))),
        }
    }

    /// Row `row` of argument `i`.
    fn at(&self, i: usize, row: usize) -> Result<&str> {
        Ok(self.column(i)?.value(row))
    }
}

/// The edited value of `doc` (row `row` of the arguments).
fn edited(edit: Edit, doc: Doc, arrays: &[ArrayRef], texts: &Texts, row: usize) -> Result<Doc> {
    let path_at = |i: usize| -> Result<Vec<String>> {
        super::json_path::path_steps(&arrays[i], row)?
            .into_iter()
            .enumerate()
            .map(|(at, step)| {
                step.ok_or_else(|| {
                    DataFusionError::from(brook_err!(
                        NullValueNotAllowed,
                        "path element at position {} is null",
                        at + 1
                    ))
                })
            })
            .collect()
    };
    match edit {
        Edit::Concat => Ok(concat(doc, parse(texts.at(1, row)?)?)),
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
            _ => delete_key(doc, texts.at(1, row)?),
        },
        Edit::DeletePath => delete_path(doc, &path_at(1)?),
        Edit::Set => {
            let create = match arrays.get(3) {
                Some(flag) => flag.as_boolean().value(row),
                None => true,
            };
            set(doc, &path_at(1)?, parse(texts.at(2, row)?)?, create)
        }
        Edit::Contains => Err(DataFusionError::Internal(
            "containment is not an edit".into(),
        )),
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

/// The function `name` computing `edit`.
pub(crate) fn jsonb_function(name: &'static str, edit: Edit) -> ScalarUDF {
    ScalarUDF::new_from_impl(JsonbFunction {
        name,
        edit,
        signature: Signature::user_defined(Volatility::Immutable),
    })
}

/// Register the functions the operators become, and `jsonb_set`.
pub fn register(ctx: &SessionContext) {
    for (name, edit) in [
        (CONCAT, Edit::Concat),
        (DELETE, Edit::Delete),
        (DELETE_PATH, Edit::DeletePath),
        (CONTAINS, Edit::Contains),
        ("jsonb_set", Edit::Set),
    ] {
        ctx.register_udf(jsonb_function(name, edit));
    }
}

/// Whether row `row` of `a` is NULL (a NULL literal's array has no null buffer).
fn is_null(a: &ArrayRef, row: usize) -> bool {
    a.data_type() == &DataType::Null || a.is_null(row)
}
#[cfg(test)]
mod tests {
    use super::*;

    /// A document written as JSON text.
    fn d(text: &str) -> Doc {
        Doc::parse(text).expect("JSON")
    }

    fn jsonb(v: &Doc) -> String {
        v.text()
    }

    fn path(steps: &[&str]) -> Vec<String> {
        steps.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn concatenation_as_postgres() {
        let cases = [
            (
                d(r#"{"a": 1, "b": 2}"#),
                d(r#"{"b": 3, "c": 4}"#),
                r#"{"a": 1, "b": 3, "c": 4}"#,
            ),
            (d(r#"[1, 2]"#), d(r#"[3]"#), "[1, 2, 3]"),
            (d(r#"[1]"#), d(r#"{"a": 1}"#), r#"[1, {"a": 1}]"#),
            (d(r#"{"a": 1}"#), d(r#"[1]"#), r#"[{"a": 1}, 1]"#),
            (d(r#"{"a": 1}"#), d(r#"2"#), r#"[{"a": 1}, 2]"#),
            (d(r#""x""#), d(r#""y""#), r#"["x", "y"]"#),
        ];
        for (a, b, want) in cases {
            assert_eq!(jsonb(&concat(a.clone(), b.clone())), want, "{a:?} || {b:?}");
        }
    }

    #[test]
    fn edits_keep_every_number_of_the_document() {
        let doc = d(r#"{"id": 123456789012345678901234, "p": 0.1234567890123456789}"#);
        assert_eq!(
            jsonb(&concat(doc.clone(), d(r#"{"x": 1.50}"#))),
            r#"{"p": 0.1234567890123456789, "x": 1.50, "id": 123456789012345678901234}"#
        );
        assert_eq!(
            jsonb(&set(doc.clone(), &path(&["y"]), d("1e30"), true).unwrap()),
            r#"{"p": 0.1234567890123456789, "y": 1000000000000000000000000000000, "id": 123456789012345678901234}"#
        );
        assert_eq!(
            jsonb(&delete_key(doc, "p").unwrap()),
            r#"{"id": 123456789012345678901234}"#
        );
    }

    #[test]
    fn deletion_as_postgres() {
        assert_eq!(
            jsonb(&delete_key(d(r#"{"a": 1, "b": 2}"#), "a").unwrap()),
            r#"{"b": 2}"#
        );
        assert_eq!(
            jsonb(&delete_key(d(r#"["a", 1, "a", "b"]"#), "a").unwrap()),
            r#"[1, "b"]"#
        );
        assert_eq!(
            jsonb(&delete_index(d(r#"[1, 2, 3]"#), -1).unwrap()),
            "[1, 2]"
        );
        assert_eq!(
            jsonb(&delete_index(d(r#"[1, 2, 3]"#), 7).unwrap()),
            "[1, 2, 3]"
        );
        assert!(delete_index(d(r#"{"a": 1}"#), 0).is_err());
        assert!(delete_key(d(r#"1"#), "a").is_err());
        let doc = d(r#"{"a": {"b": [1, 2, 3]}, "c": 1}"#);
        assert_eq!(
            jsonb(&delete_path(doc.clone(), &path(&["a", "b", "1"])).unwrap()),
            r#"{"a": {"b": [1, 3]}, "c": 1}"#
        );
        assert_eq!(
            jsonb(&delete_path(doc.clone(), &path(&["x", "y"])).unwrap()),
            jsonb(&doc)
        );
        assert!(delete_path(doc, &path(&["a", "b", "x"])).is_err());
        assert!(delete_path(d(r#"3"#), &path(&["a"])).is_err());
    }

    #[test]
    fn set_as_postgres() {
        let doc = d(r#"{"a": [1, 2], "b": {"c": 1}}"#);
        let set_to = |p: &[&str], create: bool| {
            jsonb(&set(doc.clone(), &path(p), d(r#"9"#), create).unwrap())
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
        assert!(set(d(r#"1"#), &path(&["a"]), d(r#"2"#), true).is_err());
    }
}
