//! `interval * number`, `number * interval` and `interval / number`, as PostgreSQL computes
//! them.
//!
//! Arrow has no kernel for scaling an interval, so DataFusion refuses `INTERVAL '1 hour' * 2`.
//! PostgreSQL's `interval_mul` scales months, days and time apart and carries fractions
//! down: a fraction of a month becomes days (30 to the month), a fraction of a day becomes
//! time (24 hours to the day), so `'1 mon' * 1.5` is `1 mon 15 days` and `'1 day' / 4` is
//! `06:00:00`. This planner hook makes those operators a call of `brook_interval_scale`,
//! written here because no library has PostgreSQL's carrying rules.

use brook_common::brook_err;
use datafusion::arrow::array::{ArrayRef, AsArray, IntervalMonthDayNanoArray};
use datafusion::arrow::compute::kernels::cast::cast;
use datafusion::arrow::datatypes::{
    DataType, Float64Type, IntervalMonthDayNano, IntervalMonthDayNanoType, IntervalUnit,
};
use datafusion::common::{DFSchema, Result};
use datafusion::logical_expr::expr::ScalarFunction;
use datafusion::logical_expr::planner::{ExprPlanner, PlannerResult, RawBinaryExpr};
use datafusion::logical_expr::{
    ColumnarValue, Expr, ExprSchemable, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature,
    Volatility,
};
use datafusion::sql::sqlparser::ast::BinaryOperator;
use std::sync::Arc;

/// Names of the functions the operators become.
pub const INTERVAL_MULTIPLY: &str = "brook_interval_multiply";
pub const INTERVAL_DIVIDE: &str = "brook_interval_divide";

const DAYS_PER_MONTH: f64 = 30.0;
const SECONDS_PER_DAY: f64 = 86_400.0;
const MICROS_PER_SECOND: f64 = 1_000_000.0;

/// `brook_interval_multiply(interval, factor)` or `brook_interval_divide(interval, divisor)`.
#[derive(Debug, PartialEq, Eq, Hash)]
struct IntervalScale {
    signature: Signature,
    divide: bool,
}

impl ScalarUDFImpl for IntervalScale {
    fn name(&self) -> &str {
        if self.divide {
            INTERVAL_DIVIDE
        } else {
            INTERVAL_MULTIPLY
        }
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(DataType::Interval(IntervalUnit::MonthDayNano))
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let divide = self.divide;
        datafusion::functions::utils::make_scalar_function(
            move |args: &[ArrayRef]| scale_all(args, divide),
            vec![],
        )(&args.args)
    }
}

fn scale_all(args: &[ArrayRef], divide: bool) -> Result<ArrayRef> {
    let mdn = DataType::Interval(IntervalUnit::MonthDayNano);
    let spans = cast(&args[0], &mdn)?;
    let spans = spans.as_primitive::<IntervalMonthDayNanoType>();
    let factors = cast(&args[1], &DataType::Float64)?;
    let factors = factors.as_primitive::<Float64Type>();
    let out = spans
        .iter()
        .zip(factors.iter())
        .map(|(s, f)| match (s, f) {
            (Some(_), Some(f)) if divide && f == 0.0 => {
                Err(brook_common::BrookError::DivisionByZero)
            }
            (Some(s), Some(f)) => scale(s, f, divide).map(Some),
            _ => Ok(None),
        })
        .collect::<brook_common::Result<IntervalMonthDayNanoArray>>()
        .map_err(|e| datafusion::error::DataFusionError::External(Box::new(e)))?;
    Ok(Arc::new(out) as ArrayRef)
}

/// `span * factor` (or `span / factor`) by PostgreSQL's rules (`interval_mul`,
/// `interval_div`): each field scaled, fractions carried down to the next field, time
/// rounded to the microsecond; 22008 when a field leaves its range.
pub fn scale(
    span: IntervalMonthDayNano,
    factor: f64,
    divide: bool,
) -> brook_common::Result<IntervalMonthDayNano> {
    let by = |v: f64| if divide { v / factor } else { v * factor };
    let out_of_range = || brook_err!(DatetimeOverflow, "interval out of range");
    let whole = |v: f64| -> brook_common::Result<i32> {
        let t = v.trunc();
        if !t.is_finite() || t < f64::from(i32::MIN) || t > f64::from(i32::MAX) {
            return Err(out_of_range());
        }
        Ok(t as i32)
    };
    let months_f = by(f64::from(span.months));
    let months = whole(months_f)?;
    let month_days = (months_f - f64::from(months)) * DAYS_PER_MONTH;
    let days_f = by(f64::from(span.days));
    let mut days = whole(days_f)?;
    // The fractions of a day from both, as seconds rounded to the microsecond.
    let mut seconds = (days_f - f64::from(days) + month_days.fract()) * SECONDS_PER_DAY;
    seconds = (seconds * MICROS_PER_SECOND).round() / MICROS_PER_SECOND;
    if seconds.abs() >= SECONDS_PER_DAY {
        days = days
            .checked_add(whole(seconds / SECONDS_PER_DAY)?)
            .ok_or_else(out_of_range)?;
        seconds -= (seconds / SECONDS_PER_DAY).trunc() * SECONDS_PER_DAY;
    }
    days = days
        .checked_add(whole(month_days)?)
        .ok_or_else(out_of_range)?;
    let micros = (by(span.nanoseconds as f64 / 1000.0) + seconds * MICROS_PER_SECOND).round();
    if !micros.is_finite() || micros.abs() >= i64::MAX as f64 / 1000.0 {
        return Err(out_of_range());
    }
    Ok(IntervalMonthDayNano::new(
        months,
        days,
        micros as i64 * 1000,
    ))
}

/// The SQL planner's hook: `interval * n`, `n * interval`, `interval / n` become calls of
/// the functions above.
#[derive(Debug)]
pub struct IntervalScalePlanner {
    multiply: Arc<ScalarUDF>,
    divide: Arc<ScalarUDF>,
}

impl Default for IntervalScalePlanner {
    fn default() -> Self {
        let udf = |divide| {
            Arc::new(ScalarUDF::new_from_impl(IntervalScale {
                signature: Signature::any(2, Volatility::Immutable),
                divide,
            }))
        };
        IntervalScalePlanner {
            multiply: udf(false),
            divide: udf(true),
        }
    }
}

impl ExprPlanner for IntervalScalePlanner {
    fn plan_binary_op(
        &self,
        expr: RawBinaryExpr,
        schema: &DFSchema,
    ) -> Result<PlannerResult<RawBinaryExpr>> {
        let kind = |x: &Expr| x.get_type(schema).ok();
        let interval = |t: &Option<DataType>| matches!(t, Some(DataType::Interval(_)));
        let number = |t: &Option<DataType>| t.as_ref().is_some_and(DataType::is_numeric);
        let (l, r) = (kind(&expr.left), kind(&expr.right));
        let call = |udf: &Arc<ScalarUDF>, span: Expr, factor: Expr| {
            Expr::ScalarFunction(ScalarFunction::new_udf(udf.clone(), vec![span, factor]))
        };
        let planned = match expr.op {
            BinaryOperator::Multiply if interval(&l) && number(&r) => {
                call(&self.multiply, expr.left, expr.right)
            }
            BinaryOperator::Multiply if number(&l) && interval(&r) => {
                call(&self.multiply, expr.right, expr.left)
            }
            BinaryOperator::Divide if interval(&l) && number(&r) => {
                call(&self.divide, expr.left, expr.right)
            }
            _ => return Ok(PlannerResult::Original(expr)),
        };
        Ok(PlannerResult::Planned(planned))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const HOUR: i64 = 3_600_000_000_000;

    fn mdn(months: i32, days: i32, nanos: i64) -> IntervalMonthDayNano {
        IntervalMonthDayNano::new(months, days, nanos)
    }

    #[test]
    fn fractions_carry_down_as_postgresql_does() {
        // '1 mon' * 1.5 = 1 mon 15 days; '1 day' * 0.25 = 06:00:00; '1 hour' * 2 = 02:00:00
        assert_eq!(scale(mdn(1, 0, 0), 1.5, false).unwrap(), mdn(1, 15, 0));
        assert_eq!(scale(mdn(0, 1, 0), 4.0, true).unwrap(), mdn(0, 0, 6 * HOUR));
        assert_eq!(
            scale(mdn(0, 0, HOUR), 2.0, false).unwrap(),
            mdn(0, 0, 2 * HOUR)
        );
        // '1 mon 1 day' * -0.5 = -15 days -12:00:00
        assert_eq!(
            scale(mdn(1, 1, 0), -0.5, false).unwrap(),
            mdn(0, -15, -12 * HOUR)
        );
        // '1 mon' / 7 (PostgreSQL: 4 days 06:51:25.714286)
        assert_eq!(
            scale(mdn(1, 0, 0), 7.0, true).unwrap(),
            mdn(
                0,
                4,
                (6 * 3600 + 51 * 60 + 25) * 1_000_000_000 + 714_286_000
            )
        );
    }

    #[test]
    fn a_field_out_of_range_is_22008() {
        let e = scale(mdn(i32::MAX, 0, 0), 2.0, false).unwrap_err();
        assert_eq!(e.sqlstate(), "22008");
        let e = scale(mdn(1, 0, 0), f64::INFINITY, false).unwrap_err();
        assert_eq!(e.sqlstate(), "22008");
    }
}
