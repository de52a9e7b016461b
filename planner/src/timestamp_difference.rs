//! `timestamp - timestamp` as PostgreSQL's interval.
//!
//! DataFusion subtracts two timestamps into an Arrow `Duration`, which is not a PostgreSQL
//! type: it printed as `PT739.321S`, `extract(epoch …)` of it dropped the fraction, and
//! `(b - a) * 2` failed to plan. PostgreSQL gives an `interval` with whole days split off
//! (`timestamp_mi` applies `justify_hours`). This planner hook, consulted as DataFusion
//! turns SQL into a plan (before anything asks for the type of `(b - a) * 2`), replaces `a - b` of two timestamps by
//! `brook_timestamp_difference(a, b)`, which returns that interval; everything DataFusion
//! does with intervals (comparison, arithmetic, `extract`, `date_bin`) then applies.
//! Written here because DataFusion has no setting for the result type of the subtraction.

use brook_common::types::duration_as_interval;
use datafusion::arrow::array::{ArrayRef, AsArray, IntervalMonthDayNanoArray};
use datafusion::arrow::compute::kernels::{cast::cast, numeric};
use datafusion::arrow::datatypes::{DataType, DurationMicrosecondType, IntervalUnit, TimeUnit};
use datafusion::common::{DFSchema, Result};
use datafusion::logical_expr::expr::ScalarFunction;
use datafusion::logical_expr::planner::{ExprPlanner, PlannerResult, RawBinaryExpr};
use datafusion::logical_expr::{
    ColumnarValue, Expr, ExprSchemable, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature,
    Volatility,
};
use datafusion::sql::sqlparser::ast::BinaryOperator;
use std::sync::Arc;

/// Name of the function the rule calls.
pub const TIMESTAMP_DIFFERENCE: &str = "brook_timestamp_difference";

/// `brook_timestamp_difference(a, b)`: `a - b` of two timestamps of one type, as an interval
/// of days and time.
#[derive(Debug, PartialEq, Eq, Hash)]
struct TimestampDifference {
    signature: Signature,
}

impl ScalarUDFImpl for TimestampDifference {
    fn name(&self) -> &str {
        TIMESTAMP_DIFFERENCE
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(DataType::Interval(IntervalUnit::MonthDayNano))
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        datafusion::functions::utils::make_scalar_function(difference, vec![])(&args.args)
    }
}

/// The interval between each pair of timestamps, to the microsecond (PostgreSQL's
/// resolution).
fn difference(args: &[ArrayRef]) -> Result<ArrayRef> {
    // Two instants differ by their UTC times, two wall-clock times by their clocks; a
    // wall-clock time beside an instant is the instant it names in the zone the instant
    // is labelled with (the session's), as PostgreSQL casts it.
    let micros = DataType::Timestamp(TimeUnit::Microsecond, None);
    let label = |a: &ArrayRef| match a.data_type() {
        DataType::Timestamp(_, Some(z)) => Some(z.clone()),
        _ => None,
    };
    let zone = label(&args[0]).or_else(|| label(&args[1]));
    let as_utc = |a: &ArrayRef| -> Result<ArrayRef> {
        match (a.data_type(), &zone) {
            (DataType::Timestamp(_, None) | DataType::Date32 | DataType::Date64, Some(z)) => {
                let a = &cast(a, &micros)?;
                // (A cast from an instant to a wall-clock time keeps its UTC value.)
                let instants = crate::session_time_zone::local_instants(a, z)?;
                Ok(cast(&instants, &micros)?)
            }
            _ => Ok(cast(a, &micros)?),
        }
    };
    let duration = numeric::sub(&as_utc(&args[0])?, &as_utc(&args[1])?)?;
    let micros = cast(&duration, &DataType::Duration(TimeUnit::Microsecond))?;
    let micros = micros.as_primitive::<DurationMicrosecondType>();
    let out: IntervalMonthDayNanoArray =
        micros.iter().map(|v| v.map(duration_as_interval)).collect();
    Ok(Arc::new(out) as ArrayRef)
}

/// The SQL planner's hook for binary operators: `a - b` of two timestamps, or of a timestamp
/// and a date, becomes the function call.
#[derive(Debug)]
pub struct TimestampDifferencePlanner {
    udf: Arc<ScalarUDF>,
}

impl Default for TimestampDifferencePlanner {
    fn default() -> Self {
        TimestampDifferencePlanner {
            udf: Arc::new(ScalarUDF::new_from_impl(TimestampDifference {
                signature: Signature::any(2, Volatility::Immutable),
            })),
        }
    }
}

impl ExprPlanner for TimestampDifferencePlanner {
    fn plan_binary_op(
        &self,
        expr: RawBinaryExpr,
        schema: &DFSchema,
    ) -> Result<PlannerResult<RawBinaryExpr>> {
        let is_timestamp = |x: &Expr| matches!(x.get_type(schema), Ok(DataType::Timestamp(..)));
        let is_date =
            |x: &Expr| matches!(x.get_type(schema), Ok(DataType::Date32 | DataType::Date64));
        // A date beside a timestamp is its midnight (an instant in the session's zone
        // beside a timestamptz: `timestamptz - date` across a DST change subtracted clocks).
        let (l, r) = (&expr.left, &expr.right);
        let timestamps =
            (is_timestamp(l) && (is_timestamp(r) || is_date(r))) || (is_date(l) && is_timestamp(r));
        if expr.op != BinaryOperator::Minus || !timestamps {
            return Ok(PlannerResult::Original(expr));
        }
        Ok(PlannerResult::Planned(Expr::ScalarFunction(
            ScalarFunction::new_udf(self.udf.clone(), vec![expr.left, expr.right]),
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::arrow::array::{Array, TimestampMicrosecondArray};
    use datafusion::arrow::datatypes::IntervalMonthDayNano;

    fn ts(v: &[Option<i64>]) -> ArrayRef {
        Arc::new(TimestampMicrosecondArray::from(v.to_vec()))
    }

    #[test]
    fn differences_split_whole_days_off_with_the_sign_of_the_whole() {
        const HOUR: i64 = 3_600_000_000;
        let a = ts(&[Some(739_321_000), Some(50 * HOUR), Some(0), None]);
        let b = ts(&[Some(0), Some(0), Some(27 * HOUR), Some(0)]);
        let out = difference(&[a, b]).unwrap();
        let out = out.as_primitive::<datafusion::arrow::datatypes::IntervalMonthDayNanoType>();
        let mdn = |days, micros: i64| IntervalMonthDayNano::new(0, days, micros * 1000);
        assert_eq!(out.value(0), mdn(0, 739_321_000));
        assert_eq!(out.value(1), mdn(2, 2 * HOUR));
        assert_eq!(out.value(2), mdn(-1, -3 * HOUR));
        assert!(out.is_null(3));
    }
}
