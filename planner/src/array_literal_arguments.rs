//! An untyped literal where an array is expected: `f('{1,NULL,3}')` for a user function's
//! `integer[]` parameter.
//!
//! PostgreSQL reads the literal as the parameter's array type. DataFusion's type coercion
//! casts the string to the list type instead, and Arrow's cast wraps it as one element
//! (`'{1,2,3}'` read as the integer "{1,2,3}": 22P02). This analyzer rule, run after type
//! coercion, reads such a cast's text as PostgreSQL's array input does
//! ([`crate::array_literal::parse_text_array`]) into a list of its elements, each cast to
//! the element type (a bad element is 22P02 as `'{1,x}'::int[]` is). Written here because
//! DataFusion has no hook for the type of an untyped literal. Text that is no array literal
//! is 22P02 ("malformed array literal"), a nested one 0A000 (Brook's arrays have one
//! dimension).
//!
//! The same cast of text that is not a constant (`s::int[]` of a text column) is each
//! row's text read as array input ([`TextToArray`]): Arrow's cast made `'{1,2}'` the
//! one-element array `{"{1,2}"}`, a wrong answer.

use crate::array_literal::parse_text_array;
use brook_common::brook_err;
use datafusion::arrow::array::{Array, ArrayRef, ListArray, StringArray};
use datafusion::arrow::buffer::{NullBuffer, OffsetBuffer};
use datafusion::arrow::compute::{cast_with_options, CastOptions};
use datafusion::arrow::datatypes::{DataType, FieldRef};
use datafusion::common::config::ConfigOptions;
use datafusion::common::tree_node::{Transformed, TreeNode};
use datafusion::common::{DFSchema, DataFusionError, Result, ScalarValue};
use datafusion::logical_expr::expr::{Cast, ScalarFunction};
use datafusion::logical_expr::{
    ColumnarValue, Expr, ExprSchemable, LogicalPlan, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl,
    Signature, Volatility,
};
use datafusion::optimizer::AnalyzerRule;
use std::sync::Arc;

/// The rule (after DataFusion's type coercion).
#[derive(Debug, Default)]
pub struct ArrayLiteralArguments;

impl AnalyzerRule for ArrayLiteralArguments {
    fn analyze(&self, plan: LogicalPlan, _config: &ConfigOptions) -> Result<LogicalPlan> {
        crate::checked::rewrite_plan_expressions(plan, true, &|e, schema| {
            e.transform_up(|e| read_array_literal(e, schema))
        })
    }

    fn name(&self) -> &str {
        "brook_array_literal_arguments"
    }
}

/// `CAST('{...}' AS list)` as the list its text names; a cast of other text to a list as
/// [`TextToArray`] of it.
fn read_array_literal(e: Expr, schema: &DFSchema) -> Result<Transformed<Expr>> {
    let Expr::Cast(Cast {
        expr,
        field: target,
    }) = &e
    else {
        return Ok(Transformed::no(e));
    };
    let DataType::List(field) = target.data_type() else {
        return Ok(Transformed::no(e));
    };
    let element = field.data_type();
    if matches!(element, DataType::List(_)) {
        return Ok(Transformed::no(e));
    }
    let text = match expr.as_ref() {
        Expr::Literal(ScalarValue::Utf8(Some(text)), _) => text,
        Expr::Literal(..) => return Ok(Transformed::no(e)),
        other
            if !matches!(
                other.get_type(schema).ok(),
                Some(DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View)
            ) =>
        {
            return Ok(Transformed::no(e))
        }
        other => {
            return Ok(Transformed::yes(Expr::ScalarFunction(
                ScalarFunction::new_udf(
                    Arc::new(ScalarUDF::new_from_impl(TextToArray::new(field.clone()))),
                    vec![other.clone()],
                ),
            )))
        }
    };
    let nested = text
        .trim_start()
        .strip_prefix('{')
        .is_some_and(|rest| rest.trim_start().starts_with('{'));
    if nested {
        return Err(DataFusionError::External(Box::new(brook_err!(
            Unsupported,
            "multidimensional array literals are not supported: \"{text}\""
        ))));
    }
    let values = array_input(text, element)?;
    let elements = (0..values.len())
        .map(|i| ScalarValue::try_from_array(&values, i))
        .collect::<Result<Vec<_>>>()?;
    let list = ScalarValue::List(ScalarValue::new_list(
        &elements,
        element,
        field.is_nullable(),
    ));
    Ok(Transformed::yes(Expr::Literal(list, None)))
}

/// The elements of array input `text`, each cast to `element` (22P02 for text that is no
/// array literal or an element that is no value of the type).
fn array_input(text: &str, element: &DataType) -> Result<ArrayRef> {
    let Some(items) = parse_text_array(text) else {
        return Err(DataFusionError::External(Box::new(brook_err!(
            InvalidText,
            "malformed array literal: \"{text}\""
        ))));
    };
    let items = match element {
        // As numeric text is read: exponents written out, and no digits an unconstrained
        // numeric would round away (`'{1e-11}'::numeric[]` was `{0}`).
        DataType::Decimal128(..) => items
            .into_iter()
            .map(|item| item.map(|t| numeric_element(&t, element)).transpose())
            .collect::<Result<Vec<_>>>()?,
        _ => items,
    };
    let texts: ArrayRef = Arc::new(StringArray::from(items));
    let strict = CastOptions {
        safe: false,
        ..Default::default()
    };
    Ok(cast_with_options(&texts, element, &strict)?)
}

/// An element of numeric array input, as [`crate::numeric_text`] reads numeric text.
fn numeric_element(text: &str, element: &DataType) -> Result<String> {
    use crate::numeric_text::{check_kept, numeric_input, UNCONSTRAINED_SCALE};
    let plain = numeric_input(text).map_err(|e| DataFusionError::External(Box::new(e)))?;
    if *element == DataType::Decimal128(38, UNCONSTRAINED_SCALE) {
        check_kept(&format!("\"{text}\""), &plain, UNCONSTRAINED_SCALE)
            .map_err(|e| DataFusionError::External(Box::new(e)))?;
    }
    Ok(plain.into_owned())
}

/// Each row's text read as array input of one element type (`s::int[]`).
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct TextToArray {
    element: FieldRef,
    signature: Signature,
}

impl TextToArray {
    fn new(element: FieldRef) -> Self {
        TextToArray {
            element,
            signature: Signature::any(1, Volatility::Immutable),
        }
    }
}

impl ScalarUDFImpl for TextToArray {
    fn name(&self) -> &str {
        "brook_text_to_array"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _args: &[DataType]) -> Result<DataType> {
        Ok(DataType::List(self.element.clone()))
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let texts = crate::text_input::text_argument(&args.args)?;
        let element = self.element.data_type();
        let builder = texts
            .iter()
            .map(|t| t.map(|t| array_input(t, element)).transpose())
            .collect::<Result<Vec<_>>>()?;
        let mut offsets = vec![0i32];
        let mut parts: Vec<ArrayRef> = Vec::new();
        for v in builder.iter() {
            let len = v.as_ref().map_or(0, |a| a.len());
            offsets.push(offsets.last().copied().unwrap_or(0) + len as i32);
            if let Some(a) = v {
                parts.push(a.clone());
            }
        }
        let values = if parts.is_empty() {
            datafusion::arrow::array::new_empty_array(element)
        } else {
            let refs: Vec<&dyn Array> = parts.iter().map(|a| a.as_ref()).collect();
            datafusion::arrow::compute::concat(&refs)?
        };
        let nulls = NullBuffer::from(builder.iter().map(|v| v.is_some()).collect::<Vec<_>>());
        let list = ListArray::try_new(
            self.element.clone(),
            OffsetBuffer::new(offsets.into()),
            values,
            Some(nulls),
        )?;
        crate::text_input::result_like(&args.args, Arc::new(list))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::arrow::datatypes::Field;
    use datafusion::logical_expr::{cast, lit};

    fn list_of(t: DataType) -> DataType {
        DataType::List(Arc::new(Field::new_list_field(t, true)))
    }

    #[test]
    fn an_untyped_array_literal_is_read_as_the_array() {
        let e = cast(lit("{1,NULL,3}"), list_of(DataType::Int32));
        let out = read_array_literal(e, &DFSchema::empty()).unwrap();
        assert!(out.transformed);
        let Expr::Literal(ScalarValue::List(list), _) = out.data else {
            panic!("not a list literal");
        };
        let expected = [Some(1), None, Some(3)].map(ScalarValue::Int32);
        assert_eq!(
            ScalarValue::List(list),
            ScalarValue::List(ScalarValue::new_list(&expected, &DataType::Int32, true))
        );
    }

    #[test]
    fn other_casts_and_texts_are_left_alone() {
        let untouched = [
            cast(lit("12"), DataType::Int32),
            cast(lit("{{1},{2}}"), list_of(list_of(DataType::Int32))),
        ];
        for e in untouched {
            assert!(
                !read_array_literal(e, &DFSchema::empty())
                    .unwrap()
                    .transformed
            );
        }
        let bad = [
            ("{1,x}", DataType::Int32),
            ("not an array", DataType::Utf8),
            ("{{1},{2}}", DataType::Int32),
            ("{\"open}", DataType::Utf8),
        ];
        for (text, element) in bad {
            assert!(
                read_array_literal(cast(lit(text), list_of(element)), &DFSchema::empty()).is_err(),
                "{text}"
            );
        }
    }
}
