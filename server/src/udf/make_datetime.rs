//! PostgreSQL's `make_timestamp(year, month, mday, hour, min, sec)`,
//! `make_timestamptz(year, month, mday, hour, min, sec [, timezone])` and
//! `make_time(hour, min, sec)`, with fractional seconds. DataFusion has no
//! `make_timestamp`/`make_timestamptz`, and its `make_time` takes whole seconds only
//! (`make_time(1, 2, 3.5)` was an error). A field out of range is 22008 with PostgreSQL's
//! message; `sec` may be 60 (the next minute), as in PostgreSQL.
//!
//! `make_timestamptz` reads its fields as a local time in `timezone`, or in the session's
//! time zone without it, as PostgreSQL does (`session_time_zone::local_instants`: a local
//! time the zone skips or has twice is read as PostgreSQL reads it).

use crate::udf::{argument_arrays, result_value};
use brook_common::BrookError;
use chrono::NaiveDate;
use datafusion::arrow::array::{
    Array, ArrayRef, AsArray, Time64MicrosecondArray, TimestampMicrosecondArray,
};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, Float64Type, Int32Type, TimeUnit};
use datafusion::error::{DataFusionError, Result};
use datafusion::logical_expr::{
    ColumnarValue, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, Volatility,
};
use datafusion::prelude::SessionContext;
use std::sync::Arc;

/// Register the functions on a database context (`make_time` after DataFusion's, which it
/// replaces).
pub fn register(ctx: &SessionContext) {
    for (kind, volatility) in [
        (Kind::Timestamp, Volatility::Immutable),
        // Reads the session's time zone.
        (Kind::Timestamptz, Volatility::Stable),
        (Kind::Time, Volatility::Immutable),
    ] {
        ctx.register_udf(ScalarUDF::new_from_impl(Make {
            kind,
            signature: Signature::variadic_any(volatility),
        }));
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Kind {
    Timestamp,
    Timestamptz,
    Time,
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct Make {
    kind: Kind,
    signature: Signature,
}

impl Make {
    /// The number of date and time fields the function takes.
    fn fields(&self) -> usize {
        match self.kind {
            Kind::Time => 3,
            Kind::Timestamp | Kind::Timestamptz => 6,
        }
    }
}

impl ScalarUDFImpl for Make {
    fn name(&self) -> &str {
        match self.kind {
            Kind::Timestamp => "make_timestamp",
            Kind::Timestamptz => "make_timestamptz",
            Kind::Time => "make_time",
        }
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, args: &[DataType]) -> Result<DataType> {
        let takes = match self.kind {
            Kind::Timestamptz => self.fields()..=self.fields() + 1,
            _ => self.fields()..=self.fields(),
        };
        if !takes.contains(&args.len()) {
            return Err(DataFusionError::Plan(format!(
                "function {}() takes {} arguments (year, month, mday, hour, min, sec{})",
                self.name(),
                self.fields(),
                if self.kind == Kind::Timestamptz {
                    " [, timezone]"
                } else {
                    ""
                }
            )));
        }
        Ok(match self.kind {
            Kind::Timestamp => DataType::Timestamp(TimeUnit::Microsecond, None),
            Kind::Timestamptz => DataType::Timestamp(TimeUnit::Microsecond, Some("+00:00".into())),
            Kind::Time => DataType::Time64(TimeUnit::Microsecond),
        })
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let session_zone = args.config_options.execution.time_zone.clone();
        let (arrays, scalar, rows) = argument_arrays(&args)?;
        let n = self.fields();
        let whole = arrays[..n - 1]
            .iter()
            .map(|a| cast(a, &DataType::Int32))
            .collect::<Result<Vec<_>, _>>()?;
        let seconds = cast(&arrays[n - 1], &DataType::Float64)?;
        let whole: Vec<_> = whole
            .iter()
            .map(|a| a.as_primitive::<Int32Type>())
            .collect();
        let seconds = seconds.as_primitive::<Float64Type>();
        let mut micros: Vec<Option<i64>> = Vec::with_capacity(rows);
        for row in 0..rows {
            if whole.iter().any(|a| a.is_null(row)) || seconds.is_null(row) {
                micros.push(None);
                continue;
            }
            let f: Vec<i32> = whole.iter().map(|a| a.value(row)).collect();
            let value = match self.kind {
                Kind::Time => time_micros(f[0], f[1], seconds.value(row)),
                _ => timestamp_micros(&f, seconds.value(row)),
            }
            .map_err(|e| DataFusionError::External(Box::new(e)))?;
            micros.push(Some(value));
        }
        let out: ArrayRef = match self.kind {
            Kind::Time => Arc::new(Time64MicrosecondArray::from(micros)),
            Kind::Timestamp => Arc::new(TimestampMicrosecondArray::from(micros)),
            Kind::Timestamptz => {
                let wall: ArrayRef = Arc::new(TimestampMicrosecondArray::from(micros));
                let zone = match arrays.get(n) {
                    Some(z) => named_zone(z)?,
                    None => session_zone.unwrap_or_else(|| "+00:00".into()),
                };
                brook_planner::session_time_zone::local_instants(&wall, &zone)?
            }
        };
        result_value(out, scalar)
    }
}

/// The zone a `timezone` argument names (one zone for all rows: PostgreSQL's is usually a
/// constant), as Arrow labels it.
fn named_zone(zones: &ArrayRef) -> Result<String> {
    let zones = cast(zones, &DataType::Utf8)?;
    let zones = zones.as_string::<i32>();
    let Some(first) = zones.iter().flatten().next() else {
        return Ok("+00:00".into());
    };
    if zones.iter().flatten().any(|z| z != first) {
        return Err(DataFusionError::External(Box::new(
            BrookError::Unsupported(
                "make_timestamptz() with a different time zone in each row".into(),
            ),
        )));
    }
    // As `SET TimeZone` reads a zone: an IANA name in any case, a POSIX offset.
    match crate::udf::time_zone::session_zone(first) {
        Ok(Some((_, arrow))) => Ok(arrow),
        Ok(None) => Ok("+00:00".into()),
        Err(_) => Err(DataFusionError::External(Box::new(
            BrookError::InvalidParameter(format!("time zone \"{first}\" not recognized")),
        ))),
    }
}

/// Microseconds since 1970 of the local date and time `f` (year, month, day, hour, minute)
/// and `sec`.
fn timestamp_micros(f: &[i32], sec: f64) -> Result<i64, BrookError> {
    let (year, month, day) = (f[0], f[1], f[2]);
    // PostgreSQL counts years BC as negative; there is no year 0.
    let proleptic = if year < 0 { year + 1 } else { year };
    let date = (year != 0)
        .then(|| {
            NaiveDate::from_ymd_opt(
                proleptic,
                u32::try_from(month).ok()?,
                u32::try_from(day).ok()?,
            )
        })
        .flatten()
        .ok_or_else(|| {
            BrookError::DatetimeOverflow(format!(
                "date field value out of range: {year}-{month:02}-{day:02}"
            ))
        })?;
    let time = time_micros(f[3], f[4], sec)?;
    let epoch = NaiveDate::from_ymd_opt(1970, 1, 1).unwrap_or_default();
    let days = (date - epoch).num_days();
    Ok(days * 86_400_000_000 + time)
}

/// Microseconds since midnight of `hour:min:sec` (`sec` 60 is the next minute; 24:00:00 is
/// the end of the day, as PostgreSQL takes them).
fn time_micros(hour: i32, min: i32, sec: f64) -> Result<i64, BrookError> {
    let out_of_range = || {
        BrookError::DatetimeOverflow(format!(
            "time field value out of range: {hour}:{min:02}:{}",
            seconds_text(sec)
        ))
    };
    if !(0..=24).contains(&hour) || !(0..=59).contains(&min) || !(0.0..=60.0).contains(&sec) {
        return Err(out_of_range());
    }
    let micros = (sec * 1e6).round() as i64;
    let total = (i64::from(hour) * 3600 + i64::from(min) * 60) * 1_000_000 + micros;
    if total > 86_400_000_000 {
        return Err(out_of_range());
    }
    Ok(total)
}

fn seconds_text(sec: f64) -> String {
    if sec.fract() == 0.0 {
        format!("{sec:02.0}")
    } else {
        format!("{sec}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_as_postgresql_reads_them() {
        let t = |f: [i32; 5], s: f64| timestamp_micros(&f, s);
        assert_eq!(t([1970, 1, 1, 0, 0], 0.0).unwrap(), 0);
        assert_eq!(t([1970, 1, 1, 0, 0], 1.5).unwrap(), 1_500_000);
        // sec 60 is the next minute.
        assert_eq!(
            t([2026, 1, 1, 0, 0], 60.0).unwrap(),
            t([2026, 1, 1, 0, 1], 0.0).unwrap()
        );
        // 44 BC is the proleptic year -43.
        assert_eq!(
            t([-44, 3, 15, 12, 0], 0.0).unwrap(),
            (NaiveDate::from_ymd_opt(-43, 3, 15).unwrap()
                - NaiveDate::from_ymd_opt(1970, 1, 1).unwrap())
            .num_days()
                * 86_400_000_000
                + 12 * 3_600_000_000
        );
        let cases = [
            (
                [2026, 2, 30, 0, 0],
                0.0,
                "date field value out of range: 2026-02-30",
            ),
            (
                [0, 1, 1, 0, 0],
                0.0,
                "date field value out of range: 0-01-01",
            ),
            (
                [2026, 1, 1, 25, 0],
                0.0,
                "time field value out of range: 25:00:00",
            ),
            (
                [2026, 1, 1, 0, 0],
                -1.0,
                "time field value out of range: 0:00:-1",
            ),
            (
                [2026, 1, 1, 24, 0],
                0.5,
                "time field value out of range: 24:00:0.5",
            ),
        ];
        for (f, s, message) in cases {
            let e = t(f, s).unwrap_err();
            assert_eq!(e.sqlstate(), "22008", "{f:?}");
            assert_eq!(e.to_string(), message, "{f:?}");
        }
        assert_eq!(time_micros(1, 2, 3.5).unwrap(), 3_723_500_000);
        assert_eq!(time_micros(24, 0, 0.0).unwrap(), 86_400_000_000);
    }
}
