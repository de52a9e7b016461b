//! What `bytea` and timestamp input share: a function of Brook's that reads PostgreSQL's
//! text forms, put under every cast of text to the type (written, or inserted by coercion
//! for an `INSERT` into such a column), by an analyzer rule that runs after type coercion.

use datafusion::arrow::array::{Array, ArrayRef, AsArray, StringArray};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::DataType;
use datafusion::common::tree_node::{Transformed, TreeNode};
use datafusion::common::{DFSchema, Result, ScalarValue};
use datafusion::logical_expr::expr::{Cast, ScalarFunction, TryCast};
use datafusion::logical_expr::{ColumnarValue, Expr, ExprSchemable, ScalarUDF};
use std::sync::Arc;

/// `e` with `udf(x)` in place of `x` in each `CAST(x AS t)` / `TRY_CAST` / `arrow_cast(x, t)` whose `x` is text
/// and whose `t` is one `is_target` accepts (an `x` that already is `udf(..)` stays).
pub(crate) fn under_text_casts(
    e: Expr,
    schema: &DFSchema,
    is_target: fn(&DataType) -> bool,
    udf: &Arc<ScalarUDF>,
) -> Result<Transformed<Expr>> {
    let read = |inner: &Expr| -> Option<Expr> {
        if matches!(inner, Expr::ScalarFunction(f) if f.name() == udf.name()) {
            return None;
        }
        match inner.get_type(schema) {
            Ok(DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View) => Some(
                Expr::ScalarFunction(ScalarFunction::new_udf(udf.clone(), vec![inner.clone()])),
            ),
            _ => None,
        }
    };
    e.transform_up(|e| {
        let rewritten = match &e {
            Expr::Cast(Cast { expr, field }) if is_target(field.data_type()) => {
                read(expr).map(|x| {
                    Expr::Cast(Cast {
                        expr: Box::new(x),
                        field: field.clone(),
                    })
                })
            }
            Expr::TryCast(TryCast { expr, field }) if is_target(field.data_type()) => read(expr)
                .map(|x| {
                    Expr::TryCast(TryCast {
                        expr: Box::new(x),
                        field: field.clone(),
                    })
                }),
            // `x::time` is planned as `arrow_cast(x, 'Time64(Microsecond)')`
            // (`pg_functions::time_casts`), a cast once simplified.
            Expr::ScalarFunction(f)
                if f.name() == "arrow_cast" && e.get_type(schema).is_ok_and(|t| is_target(&t)) =>
            {
                f.args.first().and_then(read).map(|x| {
                    let mut args = f.args.clone();
                    args[0] = x;
                    Expr::ScalarFunction(ScalarFunction::new_udf(f.func.clone(), args))
                })
            }
            _ => None,
        };
        Ok(match rewritten {
            Some(r) => Transformed::yes(r),
            None => Transformed::no(e),
        })
    })
}

/// A function's text argument as UTF-8 strings (whatever string type it came as).
pub(crate) fn text_argument(args: &[ColumnarValue]) -> Result<StringArray> {
    let arrays = ColumnarValue::values_to_arrays(args)?;
    Ok(cast(&arrays[0], &DataType::Utf8)?
        .as_string::<i32>()
        .clone())
}

/// A function's result: a scalar when its argument was one.
pub(crate) fn result_like(args: &[ColumnarValue], out: ArrayRef) -> Result<ColumnarValue> {
    if matches!(args.first(), Some(ColumnarValue::Scalar(_))) && out.len() == 1 {
        Ok(ColumnarValue::Scalar(ScalarValue::try_from_array(&out, 0)?))
    } else {
        Ok(ColumnarValue::Array(out))
    }
}
