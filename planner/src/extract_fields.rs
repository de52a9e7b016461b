//! `extract` / `date_part` fields DataFusion computes otherwise than PostgreSQL:
//!
//! - `second` keeps its fraction (`extract(second FROM '13:45:12.5')` is `12.500000`, a
//!   numeric with six decimals, of a timestamp, a time or an interval); DataFusion's is
//!   an integer (12: a wrong answer).
//! - `epoch` of an interval counts a year as 365.25 days and the remaining months as 30
//!   days (`interval '1 year'` is 31557600 seconds); DataFusion's counts every month as 30
//!   days (31104000).
//!
//! - `timezone`, `timezone_hour`, `timezone_minute` of a timestamptz are its zone's offset
//!   at that instant (in seconds, whole hours, and the minutes beyond them, signed as the
//!   offset is); DataFusion has no such fields ("Date part 'TIMEZONE_HOUR' not supported").
//!   Of a timestamp without time zone they are 0A000, as PostgreSQL's are.
//!
//! - `epoch` of a timestamp is counted in whole microseconds (DataFusion's is a double);
//!   `milliseconds` and `microseconds` are the seconds' (DataFusion's drop the
//!   microseconds of `milliseconds`).
//!
//! This analyzer rule (before type coercion, so that what reads the field is typed for a
//! numeric) first plans `EXTRACT` and `date_part` with PostgreSQL's result types
//! ([`crate::extract_numeric`]), then puts Brook's functions in the place of those
//! calls. Written here because DataFusion's `date_part` has no option for either.

use datafusion::arrow::array::{Array, ArrayRef, AsArray, Decimal128Array, Int32Array};
use datafusion::arrow::datatypes::{
    DataType, IntervalMonthDayNanoType, IntervalUnit, Time32MillisecondType, Time32SecondType,
    Time64MicrosecondType, Time64NanosecondType, TimeUnit, TimestampMicrosecondType,
    TimestampMillisecondType, TimestampNanosecondType, TimestampSecondType,
};
use datafusion::common::config::ConfigOptions;
use datafusion::common::tree_node::{Transformed, TreeNode};
use datafusion::common::{exec_err, DFSchema, Result, ScalarValue};
use datafusion::logical_expr::expr::{Cast, ScalarFunction};
use datafusion::logical_expr::lit;
use datafusion::logical_expr::{
    ColumnarValue, Expr, ExprSchemable, LogicalPlan, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl,
    Signature, Volatility,
};
use datafusion::optimizer::AnalyzerRule;
use std::sync::Arc;

const MICROS_PER_MINUTE: i64 = 60_000_000;
const MICROS_PER_DAY: i128 = 86_400_000_000;

/// The spellings PostgreSQL reads for the seconds, milliseconds and microseconds fields.
pub(crate) const SECONDS: [&str; 5] = ["second", "seconds", "s", "sec", "secs"];
pub(crate) const MILLISECONDS: [&str; 7] = [
    "millisecond",
    "milliseconds",
    "ms",
    "msec",
    "msecs",
    "msecond",
    "mseconds",
];
pub(crate) const MICROSECONDS: [&str; 7] = [
    "microsecond",
    "microseconds",
    "us",
    "usec",
    "usecs",
    "usecond",
    "useconds",
];

/// The analyzer rule.
#[derive(Debug)]
pub struct ExtractFields {
    date_part: Arc<ScalarUDF>,
    seconds: Arc<ScalarUDF>,
    epoch: Arc<ScalarUDF>,
    interval_epoch: Arc<ScalarUDF>,
    zone_seconds: Arc<ScalarUDF>,
    zone_hours: Arc<ScalarUDF>,
    zone_minutes: Arc<ScalarUDF>,
}

impl Default for ExtractFields {
    fn default() -> Self {
        let udf = |kind| {
            Arc::new(ScalarUDF::new_from_impl(Field {
                kind,
                signature: Signature::any(1, Volatility::Immutable),
            }))
        };
        ExtractFields {
            date_part: datafusion::functions::datetime::date_part(),
            seconds: udf(Kind::Seconds),
            epoch: udf(Kind::TimestampEpoch),
            interval_epoch: udf(Kind::IntervalEpoch),
            zone_seconds: udf(Kind::ZoneSeconds),
            zone_hours: udf(Kind::ZoneHours),
            zone_minutes: udf(Kind::ZoneMinutes),
        }
    }
}

impl AnalyzerRule for ExtractFields {
    fn analyze(&self, plan: LogicalPlan, _config: &ConfigOptions) -> Result<LogicalPlan> {
        crate::checked::rewrite_plan_expressions(plan, true, &|e, schema| {
            e.transform_up(|e| {
                let planned = crate::extract_numeric::planned(e, schema, &self.date_part)?;
                match planned.data {
                    // The `date_part` call inside the cast is seen here: the walk does not
                    // visit what replaced a node.
                    Expr::Cast(Cast { expr, field }) if planned.transformed => {
                        let call = self.field_call(*expr, schema)?.data;
                        Ok(Transformed::yes(Expr::Cast(Cast {
                            expr: Box::new(call),
                            field,
                        })))
                    }
                    e => self.field_call(e, schema),
                }
            })
        })
    }

    fn name(&self) -> &str {
        "brook_extract_fields"
    }
}

impl ExtractFields {
    /// `e` with Brook's function in place of DataFusion's `date_part` where they differ.
    fn field_call(&self, e: Expr, schema: &DFSchema) -> Result<Transformed<Expr>> {
        let Expr::ScalarFunction(f) = &e else {
            return Ok(Transformed::no(e));
        };
        let [Expr::Literal(ScalarValue::Utf8(Some(part)), _), source] = f.args.as_slice() else {
            return Ok(Transformed::no(e));
        };
        if f.name() != "date_part" {
            return Ok(Transformed::no(e));
        }
        let source_type = source.get_type(schema)?;
        let part = part.to_ascii_lowercase();
        let zone_part = matches!(
            part.as_str(),
            "timezone" | "timezone_hour" | "timezone_minute"
        );
        if zone_part && matches!(source_type, DataType::Timestamp(_, None)) {
            return Err(datafusion::error::DataFusionError::External(Box::new(
                brook_common::brook_err!(
                    Unsupported,
                    "unit \"{part}\" not supported for type timestamp without time zone"
                ),
            )));
        }
        // Of the seconds with their fraction: `1.5005` s is 1500.500 milliseconds.
        let seconds_times = |factor: i64| {
            let seconds = Expr::ScalarFunction(ScalarFunction::new_udf(
                self.seconds.clone(),
                vec![source.clone()],
            ));
            Ok(Transformed::yes(seconds * lit(factor)))
        };
        let udf = match part.as_str() {
            p if SECONDS.contains(&p) && Kind::Seconds.takes(&source_type) => &self.seconds,
            p if MILLISECONDS.contains(&p) && Kind::Seconds.takes(&source_type) => {
                return seconds_times(1_000)
            }
            p if MICROSECONDS.contains(&p) && Kind::Seconds.takes(&source_type) => {
                return seconds_times(1_000_000)
            }
            "epoch" if Kind::IntervalEpoch.takes(&source_type) => &self.interval_epoch,
            "epoch" if Kind::TimestampEpoch.takes(&source_type) => &self.epoch,
            "timezone" if Kind::ZoneSeconds.takes(&source_type) => &self.zone_seconds,
            "timezone_hour" if Kind::ZoneHours.takes(&source_type) => &self.zone_hours,
            "timezone_minute" if Kind::ZoneMinutes.takes(&source_type) => &self.zone_minutes,
            _ => return Ok(Transformed::no(e)),
        };
        Ok(Transformed::yes(Expr::ScalarFunction(
            ScalarFunction::new_udf(udf.clone(), vec![source.clone()]),
        )))
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Kind {
    /// The seconds of the minute with their fraction, `numeric(8, 6)`.
    Seconds,
    /// An interval's length in seconds, a year 365.25 days: `numeric(38, 6)`.
    IntervalEpoch,
    /// A timestamp's seconds since 1970-01-01 00:00 (UTC for a timestamptz), in whole
    /// microseconds: `numeric(38, 6)`.
    TimestampEpoch,
    /// A timestamptz's zone offset in seconds east of UTC.
    ZoneSeconds,
    /// Its whole hours.
    ZoneHours,
    /// Its minutes beyond the whole hours.
    ZoneMinutes,
}

impl Kind {
    fn takes(self, t: &DataType) -> bool {
        match self {
            Kind::Seconds => matches!(
                t,
                DataType::Timestamp(..)
                    | DataType::Time32(_)
                    | DataType::Time64(_)
                    | DataType::Interval(IntervalUnit::MonthDayNano)
            ),
            Kind::IntervalEpoch => matches!(t, DataType::Interval(IntervalUnit::MonthDayNano)),
            Kind::TimestampEpoch => matches!(t, DataType::Timestamp(..)),
            Kind::ZoneSeconds | Kind::ZoneHours | Kind::ZoneMinutes => {
                matches!(t, DataType::Timestamp(_, Some(_)))
            }
        }
    }
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct Field {
    kind: Kind,
    signature: Signature,
}

impl ScalarUDFImpl for Field {
    fn name(&self) -> &str {
        match self.kind {
            Kind::Seconds => "brook_extract_seconds",
            Kind::IntervalEpoch => "brook_interval_epoch",
            Kind::TimestampEpoch => "brook_extract_epoch",
            Kind::ZoneSeconds => "brook_extract_timezone",
            Kind::ZoneHours => "brook_extract_timezone_hour",
            Kind::ZoneMinutes => "brook_extract_timezone_minute",
        }
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _args: &[DataType]) -> Result<DataType> {
        Ok(match self.kind {
            Kind::Seconds => DataType::Decimal128(8, 6),
            Kind::IntervalEpoch | Kind::TimestampEpoch => DataType::Decimal128(38, 6),
            Kind::ZoneSeconds | Kind::ZoneHours | Kind::ZoneMinutes => DataType::Int32,
        })
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let scalar = matches!(args.args.first(), Some(ColumnarValue::Scalar(_)));
        let arrays = ColumnarValue::values_to_arrays(&args.args)?;
        let out = match self.kind {
            Kind::Seconds => seconds(&arrays[0])?,
            Kind::IntervalEpoch => interval_epoch(&arrays[0])?,
            Kind::TimestampEpoch => epochs(&arrays[0])?,
            Kind::ZoneSeconds => zone_offsets(&arrays[0], |s| s)?,
            Kind::ZoneHours => zone_offsets(&arrays[0], |s| s / 3600)?,
            Kind::ZoneMinutes => zone_offsets(&arrays[0], |s| s / 60 % 60)?,
        };
        Ok(if scalar {
            ColumnarValue::Scalar(ScalarValue::try_from_array(&out, 0)?)
        } else {
            ColumnarValue::Array(out)
        })
    }
}

/// The seconds since 1970-01-01 00:00 of each timestamp (the instant's for a timestamptz,
/// the wall clock's for a timestamp, as PostgreSQL counts them), in whole microseconds.
fn epochs(values: &ArrayRef) -> Result<ArrayRef> {
    let micros: Decimal128Array = match values.data_type() {
        DataType::Timestamp(TimeUnit::Second, _) => values
            .as_primitive::<TimestampSecondType>()
            .unary(|v| i128::from(v) * 1_000_000),
        DataType::Timestamp(TimeUnit::Millisecond, _) => values
            .as_primitive::<TimestampMillisecondType>()
            .unary(|v| i128::from(v) * 1_000),
        DataType::Timestamp(TimeUnit::Microsecond, _) => values
            .as_primitive::<TimestampMicrosecondType>()
            .unary(i128::from),
        DataType::Timestamp(TimeUnit::Nanosecond, _) => values
            .as_primitive::<TimestampNanosecondType>()
            .unary(|v| i128::from(v.div_euclid(1_000))),
        other => return exec_err!("epoch of {other}"),
    };
    Ok(Arc::new(micros.with_precision_and_scale(38, 6)?))
}

/// The microseconds into the minute of each value, as `numeric(8, 6)` seconds.
fn seconds(values: &ArrayRef) -> Result<ArrayRef> {
    // Micros since the start of the minute: of a time or timestamp counted from midnight
    // or the epoch (whole minutes apart, so the remainder is the seconds); of an interval
    // its time part's, negative with it (PostgreSQL's `time % 60 s`).
    let of_point = |micros: i64| Some(i128::from(micros.rem_euclid(MICROS_PER_MINUTE)));
    let micros: Decimal128Array = match values.data_type() {
        DataType::Timestamp(TimeUnit::Second, _) => values
            .as_primitive::<TimestampSecondType>()
            .unary_opt(|v| of_point(v.wrapping_mul(1_000_000))),
        DataType::Timestamp(TimeUnit::Millisecond, _) => values
            .as_primitive::<TimestampMillisecondType>()
            .unary_opt(|v| of_point(v.wrapping_mul(1_000))),
        DataType::Timestamp(TimeUnit::Microsecond, _) => values
            .as_primitive::<TimestampMicrosecondType>()
            .unary_opt(of_point),
        DataType::Timestamp(TimeUnit::Nanosecond, _) => values
            .as_primitive::<TimestampNanosecondType>()
            .unary_opt(|v| of_point(v.div_euclid(1_000))),
        DataType::Time32(TimeUnit::Second) => values
            .as_primitive::<Time32SecondType>()
            .unary_opt(|v| of_point(i64::from(v) * 1_000_000)),
        DataType::Time32(_) => values
            .as_primitive::<Time32MillisecondType>()
            .unary_opt(|v| of_point(i64::from(v) * 1_000)),
        DataType::Time64(TimeUnit::Nanosecond) => values
            .as_primitive::<Time64NanosecondType>()
            .unary_opt(|v| of_point(v.div_euclid(1_000))),
        DataType::Time64(_) => values
            .as_primitive::<Time64MicrosecondType>()
            .unary_opt(of_point),
        DataType::Interval(IntervalUnit::MonthDayNano) => values
            .as_primitive::<IntervalMonthDayNanoType>()
            .unary_opt(|v| Some(i128::from((v.nanoseconds / 1_000) % MICROS_PER_MINUTE))),
        other => return exec_err!("extract(second) of {other}"),
    };
    Ok(Arc::new(micros.with_precision_and_scale(8, 6)?))
}

/// `part` of each timestamptz's zone offset (seconds east of UTC) at that instant.
fn zone_offsets(values: &ArrayRef, part: fn(i32) -> i32) -> Result<ArrayRef> {
    use chrono::{Offset, TimeZone};
    let DataType::Timestamp(_, Some(label)) = values.data_type() else {
        return exec_err!("extract(timezone) of {}", values.data_type());
    };
    let tz: datafusion::arrow::array::timezone::Tz = label.parse()?;
    let micros = datafusion::arrow::compute::cast(
        values,
        &DataType::Timestamp(TimeUnit::Microsecond, Some(label.clone())),
    )?;
    let out: Int32Array = micros
        .as_primitive::<TimestampMicrosecondType>()
        .unary_opt(|v| {
            let instant = chrono::DateTime::from_timestamp_micros(v)?;
            let offset = tz.offset_from_utc_datetime(&instant.naive_utc()).fix();
            Some(part(offset.local_minus_utc()))
        });
    Ok(Arc::new(out))
}

/// Each interval's length in seconds as PostgreSQL's `extract(epoch ...)` counts it: whole
/// years of 365.25 days, the other months of 30 days, days of 24 hours.
fn interval_epoch(values: &ArrayRef) -> Result<ArrayRef> {
    let DataType::Interval(IntervalUnit::MonthDayNano) = values.data_type() else {
        return exec_err!("extract(epoch) of {}", values.data_type());
    };
    // In microseconds, exactly: a year of 365.25 days is a whole number of them.
    let epochs: Decimal128Array = values
        .as_primitive::<IntervalMonthDayNanoType>()
        .unary(|v| {
            let years = i128::from(v.months / 12);
            let months = i128::from(v.months % 12);
            years * 365 * MICROS_PER_DAY
                + years * MICROS_PER_DAY / 4
                + months * 30 * MICROS_PER_DAY
                + i128::from(v.days) * MICROS_PER_DAY
                + i128::from(v.nanoseconds) / 1_000
        });
    Ok(Arc::new(epochs.with_precision_and_scale(38, 6)?))
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::arrow::array::{IntervalMonthDayNanoArray, TimestampMicrosecondArray};
    use datafusion::arrow::datatypes::IntervalMonthDayNano;

    #[test]
    fn seconds_keep_their_fraction() {
        // 2024-02-29 13:45:12.5 and 1969-12-31 23:59:59.25 (before the epoch)
        let ts: ArrayRef = Arc::new(TimestampMicrosecondArray::from(vec![
            Some(1_709_214_312_500_000),
            Some(-750_000),
            None,
        ]));
        let s = seconds(&ts).unwrap();
        let s = s.as_primitive::<datafusion::arrow::datatypes::Decimal128Type>();
        assert_eq!(s.value_as_string(0), "12.500000");
        assert_eq!(s.value_as_string(1), "59.250000");
        assert!(s.is_null(2));
        let iv: ArrayRef = Arc::new(IntervalMonthDayNanoArray::from(vec![
            IntervalMonthDayNano::new(0, 0, 72_750_000_000),
            IntervalMonthDayNano::new(0, 0, -12_500_000_000),
        ]));
        let s = seconds(&iv).unwrap();
        let s = s.as_primitive::<datafusion::arrow::datatypes::Decimal128Type>();
        assert_eq!(s.value_as_string(0), "12.750000");
        assert_eq!(s.value_as_string(1), "-12.500000");
    }

    #[test]
    fn a_year_of_an_interval_is_365_and_a_quarter_days() {
        let iv: ArrayRef = Arc::new(IntervalMonthDayNanoArray::from(vec![
            IntervalMonthDayNano::new(12, 0, 0),
            IntervalMonthDayNano::new(14, 1, 1_500_000_000),
            IntervalMonthDayNano::new(-1, 0, 0),
        ]));
        let e = interval_epoch(&iv).unwrap();
        let e = e.as_primitive::<datafusion::arrow::datatypes::Decimal128Type>();
        assert_eq!(e.value(0), 31_557_600_000_000);
        assert_eq!(
            e.value(1),
            31_557_600_000_000 + 2 * 2_592_000_000_000 + 86_400_000_000 + 1_500_000
        );
        assert_eq!(e.value(2), -2_592_000_000_000);
    }
}
