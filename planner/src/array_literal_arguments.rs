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

use crate::array_literal::parse_text_array;
use brook_common::brook_err;
use datafusion::arrow::array::{ArrayRef, StringArray};
use datafusion::arrow::compute::{cast_with_options, CastOptions};
use datafusion::arrow::datatypes::DataType;
use datafusion::common::config::ConfigOptions;
use datafusion::common::tree_node::{Transformed, TreeNode};
use datafusion::common::{DataFusionError, Result, ScalarValue};
use datafusion::logical_expr::expr::Cast;
use datafusion::logical_expr::{Expr, LogicalPlan};
use datafusion::optimizer::AnalyzerRule;
use std::sync::Arc;

/// The rule (after DataFusion's type coercion).
#[derive(Debug, Default)]
pub struct ArrayLiteralArguments;

impl AnalyzerRule for ArrayLiteralArguments {
    fn analyze(&self, plan: LogicalPlan, _config: &ConfigOptions) -> Result<LogicalPlan> {
        crate::checked::rewrite_plan_expressions(plan, true, &|e, _schema| {
            e.transform_up(read_array_literal)
        })
    }

    fn name(&self) -> &str {
        "brook_array_literal_arguments"
    }
}

/// `CAST('{...}' AS list)` as the list its text names.
fn read_array_literal(e: Expr) -> Result<Transformed<Expr>> {
    let Expr::Cast(Cast {
        expr,
        field: target,
    }) = &e
    else {
        return Ok(Transformed::no(e));
    };
    let (DataType::List(field), Expr::Literal(ScalarValue::Utf8(Some(text)), _)) =
        (target.data_type(), expr.as_ref())
    else {
        return Ok(Transformed::no(e));
    };
    let element = field.data_type();
    if matches!(element, DataType::List(_)) {
        return Ok(Transformed::no(e));
    }
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
    let Some(items) = parse_text_array(text.as_str()) else {
        return Err(DataFusionError::External(Box::new(brook_err!(
            InvalidText,
            "malformed array literal: \"{text}\""
        ))));
    };
    let texts: ArrayRef = Arc::new(StringArray::from(items));
    let strict = CastOptions {
        safe: false,
        ..Default::default()
    };
    let values = cast_with_options(&texts, element, &strict)?;
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
        let out = read_array_literal(e).unwrap();
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
            assert!(!read_array_literal(e).unwrap().transformed);
        }
        let bad = [
            ("{1,x}", DataType::Int32),
            ("not an array", DataType::Utf8),
            ("{{1},{2}}", DataType::Int32),
            ("{\"open}", DataType::Utf8),
        ];
        for (text, element) in bad {
            assert!(
                read_array_literal(cast(lit(text), list_of(element))).is_err(),
                "{text}"
            );
        }
    }
}
