//! An untyped array literal passed to a built-in array function: `array_append('{1,2}',
//! 3)`, `array_position('{a,b}', 'b')`, `array_cat('{1}', ARRAY[2])`.
//!
//! PostgreSQL resolves the literal's type from the function's other polymorphic argument
//! (`anyarray` beside `anyelement`: the array of the element's type; beside another array:
//! that array's type; text when nothing says more). DataFusion's signature check saw a
//! string and refused the call ("array_append does not support type Utf8"). This analyzer
//! rule, run before DataFusion's type coercion, casts such a literal to the array type
//! PostgreSQL would resolve; the cast is then read as array input after coercion
//! ([`crate::array_literal_arguments`]). Written here because DataFusion has no notion of
//! an untyped literal.

use datafusion::arrow::datatypes::{DataType, Field};
use datafusion::common::config::ConfigOptions;
use datafusion::common::tree_node::{Transformed, TreeNode};
use datafusion::common::{DFSchema, Result, ScalarValue};
use datafusion::logical_expr::expr::ScalarFunction;
use datafusion::logical_expr::{cast, Expr, ExprSchemable, LogicalPlan};
use datafusion::optimizer::AnalyzerRule;
use std::sync::Arc;

/// The rule (before DataFusion's type coercion).
#[derive(Debug, Default)]
pub struct ArrayFunctionLiterals;

impl AnalyzerRule for ArrayFunctionLiterals {
    fn analyze(&self, plan: LogicalPlan, _config: &ConfigOptions) -> Result<LogicalPlan> {
        crate::checked::rewrite_plan_expressions(plan, true, &|e, schema| {
            e.transform_up(|e| typed_arguments(e, schema))
        })
    }

    fn name(&self) -> &str {
        "brook_array_function_literals"
    }
}

/// Where a function takes its array arguments and its element argument.
fn polymorphic_arguments(function: &str) -> Option<(&'static [usize], Option<usize>)> {
    Some(match function {
        "array_append" => (&[0], Some(1)),
        "array_prepend" => (&[1], Some(0)),
        "array_position" | "array_positions" | "array_remove" | "array_remove_all" => {
            (&[0], Some(1))
        }
        "array_replace" | "array_replace_all" => (&[0], Some(1)),
        "array_concat" => (&[0, 1], None),
        _ => return None,
    })
}

fn is_array_text(e: &Expr) -> bool {
    matches!(e, Expr::Literal(ScalarValue::Utf8(Some(t)), _) if t.trim_start().starts_with('{'))
}

fn is_untyped(e: &Expr) -> bool {
    matches!(
        e,
        Expr::Literal(ScalarValue::Utf8(_) | ScalarValue::Null, _)
    )
}

/// The call with its untyped array literals cast to the array type PostgreSQL resolves.
fn typed_arguments(e: Expr, schema: &DFSchema) -> Result<Transformed<Expr>> {
    let Expr::ScalarFunction(ScalarFunction { func, args }) = &e else {
        return Ok(Transformed::no(e));
    };
    let Some((arrays, element)) = polymorphic_arguments(func.name()) else {
        return Ok(Transformed::no(e));
    };
    if !arrays
        .iter()
        .any(|&i| args.get(i).is_some_and(is_array_text))
    {
        return Ok(Transformed::no(e));
    }
    // The element type from a typed array argument, else from the element argument, else
    // text.
    let from_array = arrays
        .iter()
        .filter_map(|&i| args.get(i))
        .filter(|a| !is_untyped(a))
        .map(|a| a.get_type(schema))
        .collect::<Result<Vec<_>>>()?
        .into_iter()
        .find_map(|t| match t {
            DataType::List(f) | DataType::LargeList(f) => Some(f.data_type().clone()),
            _ => None,
        });
    let from_element = match element.and_then(|i| args.get(i)) {
        Some(a) if !is_untyped(a) => Some(a.get_type(schema)?),
        _ => None,
    };
    let element_type = from_array.or(from_element).unwrap_or(DataType::Utf8);
    let list = DataType::List(Arc::new(Field::new_list_field(element_type, true)));
    let mut args = args.clone();
    for &i in arrays {
        if args.get(i).is_some_and(is_array_text) {
            args[i] = cast(args[i].clone(), list.clone());
        }
    }
    Ok(Transformed::yes(Expr::ScalarFunction(ScalarFunction {
        func: func.clone(),
        args,
    })))
}
