//! PostgreSQL's interval functions DataFusion lacks: `age(a, b)` / `age(a)`,
//! `make_interval`, and `justify_hours`, `justify_days`, `justify_interval`. Written here because no library
//! has them: `age` is PostgreSQL's symbolic difference (years, months and days counted on
//! the calendar, as `timestamp_age` counts them), not a duration.
//!
//! - `age(a, b)`: `a - b` in years, months, days and time, a field borrowing from the next
//!   as on a calendar (a day borrowed is the length of the month of the earlier of the two
//!   dates when `a < b`, else of `b`'s month). `age(a)` is `age(current_date, a)`.
//! - `make_interval(years, months, weeks, days, hours, mins, secs)`: each argument may be
//!   left out from the right or named (`make_interval(days => 3)`, completed with the
//!   others' defaults, 0, by `brook_planner::named_arguments`); NULL if any is NULL.
//! - `justify_hours`: whole 24-hour periods of the time become days; `justify_days`: whole
//!   30-day periods become months; `justify_interval`: both, with the signs of the parts
//!   made to agree.

use brook_common::BrookError;
use chrono::{DateTime, Datelike, NaiveDate, NaiveDateTime, Timelike};
use datafusion::arrow::array::{ArrayRef, AsArray, IntervalMonthDayNanoArray};
use datafusion::arrow::datatypes::{
    DataType, IntervalMonthDayNano, IntervalMonthDayNanoType, IntervalUnit, TimeUnit,
    TimestampMicrosecondType,
};
use datafusion::error::Result;
use datafusion::logical_expr::simplify::{ExprSimplifyResult, SimplifyContext};
use datafusion::logical_expr::{
    ColumnarValue, Expr, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, Volatility,
};
use datafusion::prelude::SessionContext;
use std::sync::Arc;

const NANOS_PER_DAY: i64 = 86_400_000_000_000;
/// Days in a month, as interval arithmetic counts them.
const MONTH_DAYS: i64 = 30;

pub fn register(ctx: &SessionContext) {
    ctx.register_udf(ScalarUDF::new_from_impl(Age {
        signature: Signature::user_defined(Volatility::Stable),
    }));
    // Named parameters, so a name no parameter has is the planner's clear error (the
    // names are put in order before: `brook_planner::named_arguments`).
    let names = Vec::from(MAKE_INTERVAL_PARAMETERS);
    if let Ok(signature) =
        Signature::user_defined(Volatility::Immutable).with_parameter_names(names)
    {
        ctx.register_udf(ScalarUDF::new_from_impl(MakeInterval { signature }));
    }
    for justify in [Justify::Hours, Justify::Days, Justify::Interval] {
        ctx.register_udf(ScalarUDF::new_from_impl(JustifyFunction {
            justify,
            signature: Signature::exact(
                vec![DataType::Interval(IntervalUnit::MonthDayNano)],
                Volatility::Immutable,
            ),
        }));
    }
}

fn interval_type() -> DataType {
    DataType::Interval(IntervalUnit::MonthDayNano)
}

/// `age(a, b)` and `age(a)`.
#[derive(Debug, PartialEq, Eq, Hash)]
struct Age {
    signature: Signature,
}

impl ScalarUDFImpl for Age {
    fn name(&self) -> &str {
        "age"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, arg_types: &[DataType]) -> Result<DataType> {
        match arg_types.len() {
            1 | 2 => Ok(interval_type()),
            n => Err(datafusion::error::DataFusionError::External(Box::new(
                brook_common::brook_err!(
                    UndefinedFunction,
                    "function age with {n} arguments does not exist (it takes one or two \
                     timestamps)"
                ),
            ))),
        }
    }

    /// Text, dates and NULL are read as timestamps beside a timestamp, else as
    /// timestamptz (PostgreSQL's preferred type: `age('2024-01-01 00:00+00', '2024-01-01
    /// 00:00+05')` is 05:00:00), so a text is read by PostgreSQL's input; it was read by
    /// Arrow's cast, which makes NULL of what it cannot read (`age(t, '2026-01-01 00:00')`
    /// was NULL).
    fn coerce_types(&self, arg_types: &[DataType]) -> Result<Vec<DataType>> {
        let zoned = arg_types.iter().find_map(|t| match t {
            DataType::Timestamp(_, Some(z)) => Some(z.clone()),
            _ => None,
        });
        let plain = arg_types
            .iter()
            .any(|t| matches!(t, DataType::Timestamp(_, None)));
        let zone = match (zoned, plain) {
            (Some(z), _) => Some(z),
            (None, true) => None,
            (None, false) => Some("+00:00".into()),
        };
        let timestamp = DataType::Timestamp(TimeUnit::Microsecond, zone);
        arg_types
            .iter()
            .map(|t| match t {
                DataType::Timestamp(..) => Ok(t.clone()),
                DataType::Utf8
                | DataType::LargeUtf8
                | DataType::Utf8View
                | DataType::Date32
                | DataType::Date64
                | DataType::Null => Ok(timestamp.clone()),
                _ => {
                    let names: Vec<String> = arg_types
                        .iter()
                        .map(brook_common::types::sql_name)
                        .collect();
                    Err(datafusion::error::DataFusionError::External(Box::new(
                        brook_common::brook_err!(
                            UndefinedFunction,
                            "function age({}) does not exist",
                            names.join(", ")
                        ),
                    )))
                }
            })
            .collect()
    }

    /// `age(a)` is `age(current_date, a)`, the date taken when the statement starts.
    fn simplify(&self, args: Vec<Expr>, _info: &SimplifyContext) -> Result<ExprSimplifyResult> {
        if args.len() != 1 {
            return Ok(ExprSimplifyResult::Original(args));
        }
        let today = datafusion::functions::datetime::expr_fn::current_date();
        let mut both = vec![today];
        both.extend(args);
        Ok(ExprSimplifyResult::Simplified(Expr::ScalarFunction(
            datafusion::logical_expr::expr::ScalarFunction::new_udf(
                Arc::new(ScalarUDF::new_from_impl(Age {
                    signature: self.signature.clone(),
                })),
                both,
            ),
        )))
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let (arrays, scalar, rows) = super::argument_arrays(&args)?;
        let (a, b) = match arrays.as_slice() {
            [a, b] => (
                brook_planner::session_time_zone::wall_clock(a)?,
                brook_planner::session_time_zone::wall_clock(b)?,
            ),
            // Not simplified (no statement start time): today's midnight, UTC.
            [b] => {
                let today = chrono::Utc::now().date_naive().and_hms_opt(0, 0, 0);
                let today = today.map(|t| t.and_utc().timestamp_micros());
                let a: ArrayRef = Arc::new(
                    datafusion::arrow::array::TimestampMicrosecondArray::from(vec![today; rows]),
                );
                (a, brook_planner::session_time_zone::wall_clock(b)?)
            }
            _ => return datafusion::common::internal_err!("age takes one or two arguments"),
        };
        let (a, b) = (
            a.as_primitive::<TimestampMicrosecondType>(),
            b.as_primitive::<TimestampMicrosecondType>(),
        );
        let out: IntervalMonthDayNanoArray = a
            .iter()
            .zip(b.iter())
            .map(|pair| match pair {
                (Some(a), Some(b)) => age(a, b),
                _ => None,
            })
            .collect();
        super::result_value(Arc::new(out) as ArrayRef, scalar)
    }
}

/// `make_interval(years, months, weeks, days, hours, mins, secs)`.
#[derive(Debug, PartialEq, Eq, Hash)]
struct MakeInterval {
    signature: Signature,
}

/// `make_interval`'s parameters, in order.
const MAKE_INTERVAL_PARAMETERS: [&str; 7] =
    ["years", "months", "weeks", "days", "hours", "mins", "secs"];

impl ScalarUDFImpl for MakeInterval {
    fn name(&self) -> &str {
        "make_interval"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(interval_type())
    }

    /// The whole-number fields as int8 (a value beyond what an interval holds is out of
    /// range when called), the seconds as double precision.
    fn coerce_types(&self, arg_types: &[DataType]) -> Result<Vec<DataType>> {
        // Whole numbers but for `secs`, as PostgreSQL's integer parameters (a fraction of a
        // day is 42883, not rounded); text is read as a number, as an untyped literal.
        let fits = |(i, t): (usize, &DataType)| {
            t.is_null()
                || matches!(t, DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View)
                || t.is_integer()
                || (i == 6 && t.is_numeric())
        };
        if arg_types.len() > MAKE_INTERVAL_PARAMETERS.len()
            || !arg_types.iter().enumerate().all(fits)
        {
            let names: Vec<String> = arg_types
                .iter()
                .map(brook_common::types::sql_name)
                .collect();
            return Err(datafusion::error::DataFusionError::External(Box::new(
                brook_common::brook_err!(
                    UndefinedFunction,
                    "function make_interval({}) does not exist (it takes up to {} whole numbers: {}; secs may have a fraction)",
                    names.join(", "),
                    MAKE_INTERVAL_PARAMETERS.len(),
                    MAKE_INTERVAL_PARAMETERS.join(", ")
                ),
            )));
        }
        Ok((0..arg_types.len())
            .map(|i| {
                if i == 6 {
                    DataType::Float64
                } else {
                    DataType::Int64
                }
            })
            .collect())
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let (arrays, scalar, rows) = super::argument_arrays(&args)?;
        let mut fields = Vec::with_capacity(6);
        let mut secs = None;
        for (i, a) in arrays.iter().enumerate() {
            if i == 6 {
                secs = Some(datafusion::arrow::compute::cast(a, &DataType::Float64)?);
            } else {
                fields.push(datafusion::arrow::compute::cast(a, &DataType::Int64)?);
            }
        }
        let mut out = IntervalMonthDayNanoArray::builder(rows);
        for row in 0..rows {
            if fields.iter().any(|f| f.is_null(row))
                || secs.as_ref().is_some_and(|s| s.is_null(row))
            {
                out.append_null();
                continue;
            }
            let mut f = [0i64; 6];
            for (i, a) in fields.iter().enumerate() {
                f[i] = a
                    .as_primitive::<datafusion::arrow::datatypes::Int64Type>()
                    .value(row);
            }
            let s = secs.as_ref().map_or(0.0, |s| {
                s.as_primitive::<datafusion::arrow::datatypes::Float64Type>()
                    .value(row)
            });
            let span = make_interval(f, s)
                .map_err(|e| datafusion::error::DataFusionError::External(Box::new(e)))?;
            out.append_value(span);
        }
        super::result_value(Arc::new(out.finish()) as ArrayRef, scalar)
    }
}

/// The interval of `make_interval`'s whole-number fields (years, months, weeks, days,
/// hours, mins) and seconds; 22008 when a part leaves what an interval holds.
fn make_interval(f: [i64; 6], secs: f64) -> Result<IntervalMonthDayNano, BrookError> {
    let out_of_range = || brook_common::brook_err!(DatetimeOverflow, "interval out of range");
    let [years, months, weeks, days, hours, mins] = f;
    let months = years
        .checked_mul(12)
        .and_then(|m| m.checked_add(months))
        .and_then(|m| i32::try_from(m).ok())
        .ok_or_else(out_of_range)?;
    let days = weeks
        .checked_mul(7)
        .and_then(|d| d.checked_add(days))
        .and_then(|d| i32::try_from(d).ok())
        .ok_or_else(out_of_range)?;
    // Half a microsecond rounds to even, as PostgreSQL's `rint`.
    let micros = (secs * 1e6).round_ties_even();
    if !micros.is_finite() || micros.abs() >= 9.2e18 {
        return Err(out_of_range());
    }
    let nanos = hours
        .checked_mul(3_600_000_000)
        .and_then(|h| mins.checked_mul(60_000_000).and_then(|m| h.checked_add(m)))
        .and_then(|t| t.checked_add(micros as i64))
        .and_then(|t| t.checked_mul(1_000))
        .ok_or_else(out_of_range)?;
    Ok(IntervalMonthDayNano::new(months, days, nanos))
}

fn days_in_month(year: i32, month: u32) -> i64 {
    let next = if month == 12 {
        NaiveDate::from_ymd_opt(year + 1, 1, 1)
    } else {
        NaiveDate::from_ymd_opt(year, month + 1, 1)
    };
    let first = NaiveDate::from_ymd_opt(year, month, 1);
    match (first, next) {
        (Some(f), Some(n)) => (n - f).num_days(),
        _ => 31,
    }
}

fn wall_clock(micros: i64) -> Option<NaiveDateTime> {
    DateTime::from_timestamp_micros(micros).map(|t| t.naive_utc())
}

/// While `field` is negative, one `unit` of it is borrowed from the field above.
fn borrow(field: &mut i64, above: &mut i64, unit: i64) {
    while *field < 0 {
        *field += unit;
        *above -= 1;
    }
}

/// PostgreSQL's `timestamp_age(a, b)` of two instants in microseconds.
fn age(a: i64, b: i64) -> Option<IntervalMonthDayNano> {
    let (t1, t2) = (wall_clock(a)?, wall_clock(b)?);
    let negative = a < b;
    let sign = if negative { -1 } else { 1 };
    let field = |x: u32, y: u32| sign * (i64::from(x) - i64::from(y));
    let mut fsec = field(t1.nanosecond() / 1000, t2.nanosecond() / 1000);
    let mut sec = field(t1.second(), t2.second());
    let mut min = field(t1.minute(), t2.minute());
    let mut hour = field(t1.hour(), t2.hour());
    let mut mday = field(t1.day(), t2.day());
    let mut mon = field(t1.month(), t2.month());
    let mut year = sign * (i64::from(t1.year()) - i64::from(t2.year()));
    // Borrow from the next field up, as on a calendar.
    borrow(&mut fsec, &mut sec, 1_000_000);
    borrow(&mut sec, &mut min, 60);
    borrow(&mut min, &mut hour, 60);
    borrow(&mut hour, &mut mday, 24);
    let borrowed_month = if negative { t1 } else { t2 };
    borrow(
        &mut mday,
        &mut mon,
        days_in_month(borrowed_month.year(), borrowed_month.month()),
    );
    borrow(&mut mon, &mut year, 12);
    let months = i32::try_from(sign * (year * 12 + mon)).ok()?;
    let days = i32::try_from(sign * mday).ok()?;
    let micros = sign * (((hour * 60 + min) * 60 + sec) * 1_000_000 + fsec);
    Some(IntervalMonthDayNano::new(months, days, micros * 1000))
}

/// Which of the justify functions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Justify {
    Hours,
    Days,
    Interval,
}

impl Justify {
    fn apply(
        self,
        v: IntervalMonthDayNano,
    ) -> std::result::Result<IntervalMonthDayNano, BrookError> {
        match self {
            Justify::Hours => justify_hours(v),
            Justify::Days => justify_days(v),
            Justify::Interval => justify_interval(v),
        }
    }
}

/// `justify_hours`, `justify_days` or `justify_interval`.
#[derive(Debug, PartialEq, Eq, Hash)]
struct JustifyFunction {
    justify: Justify,
    signature: Signature,
}

impl ScalarUDFImpl for JustifyFunction {
    fn name(&self) -> &str {
        match self.justify {
            Justify::Hours => "justify_hours",
            Justify::Days => "justify_days",
            Justify::Interval => "justify_interval",
        }
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(interval_type())
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let (arrays, scalar, _) = super::argument_arrays(&args)?;
        let spans = arrays[0].as_primitive::<IntervalMonthDayNanoType>();
        let out = spans
            .iter()
            .map(|v| v.map(|v| self.justify.apply(v)).transpose())
            .collect::<std::result::Result<IntervalMonthDayNanoArray, BrookError>>()
            .map_err(|e| datafusion::error::DataFusionError::External(Box::new(e)))?;
        super::result_value(Arc::new(out) as ArrayRef, scalar)
    }
}

/// Whole days of the time become days; the time keeps the days' sign.
fn justify_hours(v: IntervalMonthDayNano) -> std::result::Result<IntervalMonthDayNano, BrookError> {
    let (mut days, mut time) = (i64::from(v.days), v.nanoseconds);
    move_whole(&mut days, &mut time, NANOS_PER_DAY);
    agree(&mut days, &mut time, NANOS_PER_DAY);
    interval(i64::from(v.months), days, time)
}

/// Whole 30-day periods become months; the days keep the months' sign.
fn justify_days(v: IntervalMonthDayNano) -> std::result::Result<IntervalMonthDayNano, BrookError> {
    let (mut months, mut days) = (i64::from(v.months), i64::from(v.days));
    move_whole(&mut months, &mut days, MONTH_DAYS);
    agree(&mut months, &mut days, MONTH_DAYS);
    interval(months, days, v.nanoseconds)
}

/// PostgreSQL's `interval_justify_interval`.
fn justify_interval(
    v: IntervalMonthDayNano,
) -> std::result::Result<IntervalMonthDayNano, BrookError> {
    let (mut months, mut days, mut time) = (i64::from(v.months), i64::from(v.days), v.nanoseconds);
    if (days > 0 && time > 0) || (days < 0 && time < 0) {
        move_whole(&mut months, &mut days, MONTH_DAYS);
    }
    move_whole(&mut days, &mut time, NANOS_PER_DAY);
    move_whole(&mut months, &mut days, MONTH_DAYS);
    // The days (or, with none, the time) take the months' sign.
    if months > 0 && (days < 0 || (days == 0 && time < 0)) {
        days += MONTH_DAYS;
        months -= 1;
    } else if months < 0 && (days > 0 || (days == 0 && time > 0)) {
        days -= MONTH_DAYS;
        months += 1;
    }
    agree(&mut days, &mut time, NANOS_PER_DAY);
    interval(months, days, time)
}

/// Whole `unit`s of `low` move into `high` (PostgreSQL's `TMODULO`).
fn move_whole(high: &mut i64, low: &mut i64, unit: i64) {
    *high += *low / unit;
    *low %= unit;
}

/// `low` takes `high`'s sign, one `unit` of `high` moving down or up.
fn agree(high: &mut i64, low: &mut i64, unit: i64) {
    if *high > 0 && *low < 0 {
        *low += unit;
        *high -= 1;
    } else if *high < 0 && *low > 0 {
        *low -= unit;
        *high += 1;
    }
}

/// The interval of these parts; 22008 when months or days leave an interval's range.
fn interval(
    months: i64,
    days: i64,
    nanos: i64,
) -> std::result::Result<IntervalMonthDayNano, BrookError> {
    match (i32::try_from(months), i32::try_from(days)) {
        (Ok(m), Ok(d)) => Ok(IntervalMonthDayNano::new(m, d, nanos)),
        _ => Err(brook_common::brook_err!(
            DatetimeOverflow,
            "interval out of range"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(text: &str) -> i64 {
        NaiveDateTime::parse_from_str(text, "%Y-%m-%d %H:%M:%S%.f")
            .unwrap()
            .and_utc()
            .timestamp_micros()
    }

    const HOUR: i64 = 3_600_000_000_000;

    fn mdn(months: i32, days: i32, nanos: i64) -> IntervalMonthDayNano {
        IntervalMonthDayNano::new(months, days, nanos)
    }

    /// PostgreSQL 15's answers.
    #[test]
    fn age_counts_on_the_calendar() {
        let age = |a: &str, b: &str| age(at(a), at(b)).unwrap();
        assert_eq!(
            age("2020-03-01 00:00:00", "2019-01-15 00:00:00"),
            mdn(13, 17, 0)
        );
        assert_eq!(
            age("2019-01-15 00:00:00", "2020-03-01 12:00:00"),
            mdn(-13, -17, -12 * HOUR)
        );
        assert_eq!(
            age("2001-04-10 00:00:00", "1957-06-13 00:00:00"),
            mdn(43 * 12 + 9, 27, 0)
        );
        assert_eq!(
            age("2020-03-01 00:00:00", "2020-02-28 23:30:00.5"),
            mdn(0, 1, 29 * 60_000_000_000 + 59_500_000_000)
        );
        assert_eq!(
            age("2020-03-31 00:00:00", "2020-02-29 00:00:00"),
            mdn(1, 2, 0)
        );
    }

    #[test]
    fn justify_as_postgresql() {
        assert_eq!(
            justify_hours(mdn(0, 0, 50 * HOUR)).unwrap(),
            mdn(0, 2, 2 * HOUR)
        );
        assert_eq!(
            justify_hours(mdn(0, 1, -2 * HOUR)).unwrap(),
            mdn(0, 0, 22 * HOUR)
        );
        assert_eq!(justify_days(mdn(0, 35, 0)).unwrap(), mdn(1, 5, 0));
        assert_eq!(justify_days(mdn(1, -5, 0)).unwrap(), mdn(0, 25, 0));
        assert_eq!(
            justify_interval(mdn(1, -1, -HOUR)).unwrap(),
            mdn(0, 28, 23 * HOUR)
        );
        assert_eq!(
            justify_interval(mdn(0, 29, 25 * HOUR)).unwrap(),
            mdn(1, 0, HOUR)
        );
    }

    /// PostgreSQL 15: 22008 where the result leaves the range (was a panic, or saturated).
    #[test]
    fn justify_out_of_range_is_22008() {
        for e in [
            justify_days(mdn(i32::MAX, 30, 0)),
            justify_days(mdn(i32::MIN, -30, 0)),
            justify_hours(mdn(0, i32::MAX, 24 * HOUR)),
            justify_interval(mdn(i32::MAX, 30, 0)),
        ] {
            assert_eq!(e.unwrap_err().sqlstate(), "22008");
        }
    }
}
