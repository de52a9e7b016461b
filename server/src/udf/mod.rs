//! The SQL functions Brook adds to DataFusion's.

pub mod activity;
pub mod array_elements;
pub mod array_functions;
pub mod avg_numeric;
pub mod bounded_series;
pub mod checked;
pub mod expand_array;
pub mod float_extremes;
pub mod format;
pub mod functions;
pub mod interval_functions;
pub mod javascript;
pub mod json_aggregates;
pub mod json_build;
pub mod json_elements;
pub mod json_get;
pub mod json_members;
pub mod json_path;
pub mod jsonb_contains;
pub mod jsonb_edit;
pub mod jsonb_literals;
pub mod jsonb_operators;
pub mod jsonb_order;
pub mod make_datetime;
pub mod mode;
pub mod nexmark;
pub mod numeric_division;
pub mod numeric_functions;
pub mod oid_array;
pub mod operator_functions;
pub mod parse_ident;
pub mod percentile_cont;
pub mod percentile_disc;
pub mod pg_admin;
pub mod pg_encoding;
pub mod regclass_check;
pub mod regexp_matches;
pub mod regexp_split;
pub mod sequences;
pub mod sleep;
pub mod sql_aggregate;
pub mod sql_function;
pub mod statement_time;
pub mod substring;
pub mod sum_numeric;
pub mod synopses;
pub mod time_zone;
pub mod to_char;
pub mod to_timestamp;
pub mod unknown_literals;
pub mod untyped_array_arguments;
pub mod value_text;
pub mod window_integers;
pub mod xml;

use datafusion::arrow::array::ArrayRef;
use datafusion::logical_expr::{ColumnarValue, ScalarFunctionArgs};
use datafusion::scalar::ScalarValue;

/// A function call's arguments as arrays, whether all were scalars (then each array holds
/// one row, and the result should be a scalar: [`result_value`]), and the arrays' rows.
pub(crate) fn argument_arrays(
    args: &ScalarFunctionArgs,
) -> datafusion::error::Result<(Vec<ArrayRef>, bool, usize)> {
    let scalar = args
        .args
        .iter()
        .all(|a| matches!(a, ColumnarValue::Scalar(_)));
    let rows = if scalar { 1 } else { args.number_rows };
    let arrays = args
        .args
        .iter()
        .map(|a| a.to_array(rows))
        .collect::<datafusion::error::Result<_>>()?;
    Ok((arrays, scalar, rows))
}

/// Whether `t` is one of Arrow's string types.
pub(crate) fn is_text(t: &datafusion::arrow::datatypes::DataType) -> bool {
    use datafusion::arrow::datatypes::DataType;
    matches!(t, DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View)
}

/// The scalar function a user function's definition `meta` plans to, in its language.
pub fn plan_user_function(
    name: &str,
    meta: &crate::catalog::function::FunctionMeta,
    state: &datafusion::execution::context::SessionState,
) -> brook_common::Result<datafusion::logical_expr::ScalarUDF> {
    match meta.language {
        crate::catalog::function::Language::Sql => sql_function::plan(name, meta, state),
        crate::catalog::function::Language::Javascript => javascript::plan(name, meta),
    }
}

/// A function's result `out`, a scalar when its arguments were ([`argument_arrays`]).
pub(crate) fn result_value(
    out: ArrayRef,
    scalar: bool,
) -> datafusion::error::Result<ColumnarValue> {
    if scalar {
        Ok(ColumnarValue::Scalar(ScalarValue::try_from_array(&out, 0)?))
    } else {
        Ok(ColumnarValue::Array(out))
    }
}
