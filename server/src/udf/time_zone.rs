//! `ts AT TIME ZONE zone` and `timezone(zone, ts)`, as PostgreSQL has them: a timestamp
//! with time zone becomes the wall-clock time of that instant in `zone` (a timestamp
//! without time zone), and a timestamp without time zone is read as a wall-clock time in
//! `zone` (an instant). DataFusion plans `AT TIME ZONE` as a cast to a timestamp labelled
//! with the zone, which kept the instant and its type: `timestamptz '12:00+00' AT TIME ZONE
//! 'America/New_York'` answered `12:00+00` (PostgreSQL: `07:00`, a timestamp). Written
//! here because PostgreSQL's reading of a zone has no library: its abbreviations (fixed
//! offsets: `CET` is +01 in summer too), then the IANA names (the `chrono-tz` database,
//! ignoring case), then POSIX offsets, whose sign is west of Greenwich (`'+05'` and
//! `'UTC+5'` are five hours behind UTC); an interval is an offset east (`INTERVAL
//! '-08:00'`). A local time that a zone skips (spring forward) is read with the offset
//! before the change, one that it has twice (fall back) as the later instant (standard
//! time), as PostgreSQL reads them.

use brook_common::types::sql_name;
use brook_common::{brook_err, BrookError};
use chrono::{DateTime, NaiveDateTime, Offset, TimeZone};
use chrono_tz::Tz;
use datafusion::arrow::array::{
    Array, ArrayRef, AsArray, PrimitiveArray, TimestampMicrosecondArray,
};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{
    DataType, IntervalMonthDayNanoType, IntervalUnit, TimeUnit, TimestampMicrosecondType,
};
use datafusion::error::{DataFusionError, Result};
use datafusion::logical_expr::{
    ColumnarValue, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, Volatility,
};
use datafusion::prelude::SessionContext;
use std::sync::Arc;

pub fn register(ctx: &SessionContext) {
    ctx.register_udf(udf().as_ref().clone());
}

/// The type of a timestamp with time zone (Brook's `timestamptz`).
fn timestamptz() -> DataType {
    DataType::Timestamp(TimeUnit::Microsecond, Some("+00:00".into()))
}

fn timestamp() -> DataType {
    DataType::Timestamp(TimeUnit::Microsecond, None)
}

/// What a value is read as: an instant (timestamptz, a date at midnight UTC, text) or a
/// wall-clock time (timestamp without time zone); None for other types.
fn is_wall_clock(t: &DataType) -> Option<bool> {
    match t {
        DataType::Timestamp(_, None) => Some(true),
        DataType::Timestamp(_, Some(_))
        | DataType::Date32
        | DataType::Date64
        | DataType::Utf8
        | DataType::Utf8View
        | DataType::LargeUtf8
        | DataType::Null => Some(false),
        _ => None,
    }
}

/// 42883 for argument types no `timezone` takes, as PostgreSQL names them.
fn undefined(zone: &DataType, value: &DataType) -> DataFusionError {
    err(brook_err!(
        UndefinedFunction,
        "function timezone({}, {}) does not exist (AT TIME ZONE takes a timestamp with or \
         without time zone, and a zone as text or an interval)",
        sql_name(zone),
        sql_name(value)
    ))
}

fn err(e: BrookError) -> DataFusionError {
    DataFusionError::External(Box::new(e))
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct TimeZoneFunction {
    signature: Signature,
}

impl ScalarUDFImpl for TimeZoneFunction {
    fn name(&self) -> &str {
        "timezone"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, args: &[DataType]) -> Result<DataType> {
        match args {
            [zone, value] => match (is_zone_type(zone), is_wall_clock(value)) {
                (true, Some(true)) => Ok(timestamptz()),
                (true, Some(false)) => Ok(timestamp()),
                _ => Err(undefined(zone, value)),
            },
            _ => Err(err(brook_err!(
                UndefinedFunction,
                "function timezone takes a time zone and a timestamp"
            ))),
        }
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let rows = args.number_rows;
        let scalar = args
            .args
            .iter()
            .all(|a| matches!(a, ColumnarValue::Scalar(_)));
        let zones = args.args[0].to_array(rows)?;
        let values = args.args[1].to_array(rows)?;
        let wall_clock = is_wall_clock(values.data_type())
            .ok_or_else(|| undefined(zones.data_type(), values.data_type()))?;
        // Text that is no timestamp is an error, not NULL.
        let strict = datafusion::arrow::compute::CastOptions {
            safe: false,
            ..Default::default()
        };
        let micros = datafusion::arrow::compute::cast_with_options(
            &values,
            &timestamptz_or_naive(wall_clock),
            &strict,
        )?;
        let micros = micros.as_primitive::<TimestampMicrosecondType>();
        let zones = Zones::of(&zones)?;
        // The zone of the last text read: a column of one zone is read once.
        let mut cache: Option<(String, Zone)> = None;
        let mut out = Vec::with_capacity(rows);
        for i in 0..rows {
            if micros.is_null(i) || zones.is_null(i) {
                out.push(None);
                continue;
            }
            let zone = match zones.text(i) {
                Some(text) => match &cache {
                    Some((read, z)) if read == text => z.clone(),
                    _ => {
                        let z = parse_zone(text).map_err(err)?;
                        cache = Some((text.to_string(), z.clone()));
                        z
                    }
                },
                None => zones.zone(i)?,
            };
            let v = micros.value(i);
            out.push(Some(if wall_clock {
                zone.instant_of(v)?
            } else {
                zone.wall_clock_of(v)?
            }));
        }
        let array: TimestampMicrosecondArray = PrimitiveArray::from(out);
        let array: ArrayRef = if wall_clock {
            Arc::new(array.with_timezone("+00:00"))
        } else {
            Arc::new(array)
        };
        super::result_value(array, scalar)
    }
}

fn timestamptz_or_naive(wall_clock: bool) -> DataType {
    if wall_clock {
        timestamp()
    } else {
        timestamptz()
    }
}

fn is_zone_type(t: &DataType) -> bool {
    matches!(
        t,
        DataType::Utf8
            | DataType::Utf8View
            | DataType::LargeUtf8
            | DataType::Null
            | DataType::Interval(IntervalUnit::MonthDayNano)
    )
}

/// The zone argument of each row: text or an interval.
enum Zones {
    Text(ArrayRef),
    Interval(ArrayRef),
}

impl Zones {
    fn of(a: &ArrayRef) -> Result<Self> {
        Ok(match a.data_type() {
            DataType::Interval(_) => Zones::Interval(a.clone()),
            _ => Zones::Text(cast(a, &DataType::Utf8)?),
        })
    }

    fn is_null(&self, i: usize) -> bool {
        match self {
            Zones::Text(a) | Zones::Interval(a) => a.is_null(i),
        }
    }

    /// A text zone's text (None for an interval).
    fn text(&self, i: usize) -> Option<&str> {
        match self {
            Zones::Text(a) => Some(a.as_string::<i32>().value(i)),
            Zones::Interval(_) => None,
        }
    }

    fn zone(&self, i: usize) -> Result<Zone> {
        match self {
            Zones::Text(a) => parse_zone(a.as_string::<i32>().value(i)).map_err(err),
            Zones::Interval(a) => {
                let v = a.as_primitive::<IntervalMonthDayNanoType>().value(i);
                if v.months != 0 || v.days != 0 {
                    let mut text = String::new();
                    brook_common::types::format_interval(v, &mut text);
                    return Err(err(brook_err!(
                        InvalidParameter,
                        "interval time zone \"{text}\" must not include months or days"
                    )));
                }
                // Whole seconds, as PostgreSQL takes an interval zone.
                Ok(Zone::Fixed(
                    v.nanoseconds / 1_000_000_000 * MICROS_PER_SECOND,
                ))
            }
        }
    }
}

/// A time zone as PostgreSQL reads one.
#[derive(Clone, Debug)]
enum Zone {
    /// Microseconds east of UTC.
    Fixed(i64),
    Named(Tz),
}

const MICROS_PER_SECOND: i64 = 1_000_000;

impl Zone {
    /// The wall-clock time in this zone of the instant `utc` (microseconds since 1970).
    fn wall_clock_of(&self, utc: i64) -> Result<i64> {
        match self {
            Zone::Fixed(off) => Ok(utc + off),
            Zone::Named(tz) => {
                let instant = DateTime::from_timestamp_micros(utc).ok_or_else(out_of_range)?;
                let off = tz
                    .offset_from_utc_datetime(&instant.naive_utc())
                    .fix()
                    .local_minus_utc() as i64;
                Ok(utc + off * MICROS_PER_SECOND)
            }
        }
    }

    /// The instant whose wall-clock time in this zone is `wall` (microseconds since 1970
    /// read as a local time).
    fn instant_of(&self, wall: i64) -> Result<i64> {
        match self {
            Zone::Fixed(off) => Ok(wall - off),
            Zone::Named(tz) => {
                let local: NaiveDateTime = DateTime::from_timestamp_micros(wall)
                    .ok_or_else(out_of_range)?
                    .naive_utc();
                let off = brook_planner::session_time_zone::local_offset(tz, &local);
                Ok(wall - i64::from(off) * MICROS_PER_SECOND)
            }
        }
    }
}

fn out_of_range() -> DataFusionError {
    err(brook_err!(DatetimeOverflow, "timestamp out of range"))
}

/// A zone's text as PostgreSQL reads it: an abbreviation, an IANA name, or a POSIX offset
/// (`+05`, `-03:30`, `UTC+3`: hours west of Greenwich). 22023 otherwise.
fn parse_zone(text: &str) -> Result<Zone, BrookError> {
    let name = text.trim();
    let lower = name.to_ascii_lowercase();
    if let Some(minutes) = brook_planner::zone_names::abbreviation_minutes(&lower) {
        return Ok(Zone::Fixed(minutes * 60 * MICROS_PER_SECOND));
    }
    if let Some(tz) = brook_planner::zone_names::iana_zone(&lower) {
        return Ok(Zone::Named(tz));
    }
    posix_offset(&lower)
        .ok_or_else(|| brook_err!(InvalidParameter, "time zone \"{name}\" not recognized"))
}

/// The zone of a session (`SET TimeZone`), as PostgreSQL takes one: an IANA name in any
/// case (`Europe/Berlin`; abbreviations are not zones here, as in PostgreSQL, unless the
/// IANA database has the name: `CET`, `EST`), a number of hours east of UTC (`SET TIME
/// ZONE -7`), or a POSIX offset (`UTC+3`, `'+05:30'`: west of Greenwich). Returns the name
/// SHOW gives and the zone Arrow labels instants with (`Europe/Berlin`, `-07:00`); None
/// for UTC. 22023 for anything else.
pub(crate) fn session_zone(text: &str) -> Result<Option<(String, String)>, BrookError> {
    let name = text.trim();
    let lower = name.to_ascii_lowercase();
    if brook_planner::session_time_zone::is_utc(&lower) || lower == "default" {
        return Ok(None);
    }
    if let Some(tz) = brook_planner::zone_names::iana_zone(&lower) {
        return Ok(Some((tz.name().to_string(), tz.name().to_string())));
    }
    let number = !lower.is_empty()
        && lower
            .trim_start_matches(['+', '-'])
            .bytes()
            .all(|b| b.is_ascii_digit() || b == b'.');
    // `<-07>+07`, the name PostgreSQL (and SHOW) gives a numeric zone: a POSIX offset
    // with a quoted abbreviation.
    let posix = match (lower.strip_prefix('<'), lower.find('>')) {
        (Some(_), Some(end)) => &lower[end + 1..],
        _ => lower.as_str(),
    };
    let east_seconds = if number {
        let hours: f64 = lower.parse().map_err(|_| not_a_zone(name))?;
        (hours * 3600.0).round() as i64
    } else {
        match posix_offset(posix) {
            Some(Zone::Fixed(us)) => us / MICROS_PER_SECOND,
            _ => return Err(not_a_zone(name)),
        }
    };
    if east_seconds.abs() > 15 * 3600 + 59 * 60 {
        return Err(not_a_zone(name));
    }
    if east_seconds == 0 {
        return Ok(None);
    }
    // Arrow labels a fixed zone by hours and minutes east.
    let minutes = east_seconds / 60;
    let sign = if minutes < 0 { '-' } else { '+' };
    let (h, m) = (minutes.abs() / 60, minutes.abs() % 60);
    let arrow = format!("{sign}{h:02}:{m:02}");
    let shown = if number {
        // PostgreSQL's name of a numeric zone: `<-07>+07`.
        let iso = if m == 0 {
            format!("{sign}{h:02}")
        } else {
            format!("{sign}{h:02}:{m:02}")
        };
        let posix_sign = if sign == '-' { '+' } else { '-' };
        let posix = if m == 0 {
            format!("{posix_sign}{h:02}")
        } else {
            format!("{posix_sign}{h:02}:{m:02}")
        };
        format!("<{iso}>{posix}")
    } else {
        name.to_string()
    };
    Ok(Some((shown, arrow)))
}

fn not_a_zone(name: &str) -> BrookError {
    brook_err!(
        InvalidParameter,
        "invalid value for parameter \"TimeZone\": \"{name}\""
    )
}

/// `ScalarUDF` of `timezone(zone, ts)`, for the session zone's conversions
/// (`brook_planner::session_time_zone`).
pub fn udf() -> Arc<ScalarUDF> {
    Arc::new(ScalarUDF::new_from_impl(TimeZoneFunction {
        signature: Signature::any(2, Volatility::Immutable),
    }))
}

/// `[name]±hh[:mm[:ss]]` (the name, if any, three or more letters): microseconds east of
/// UTC, POSIX's sign reversed.
fn posix_offset(text: &str) -> Option<Zone> {
    let digits_at = text.find(|c: char| !c.is_ascii_alphabetic())?;
    let (name, offset) = text.split_at(digits_at);
    if !name.is_empty() && name.len() < 3 {
        return None;
    }
    let (sign, rest) = match offset.as_bytes().first()? {
        b'+' => (1, &offset[1..]),
        b'-' => (-1, &offset[1..]),
        b'0'..=b'9' => (1, offset),
        _ => return None,
    };
    let mut parts = rest.split(':');
    let mut seconds = 0i64;
    for (i, unit) in [3600i64, 60, 1].iter().enumerate() {
        match parts.next() {
            Some(p) if !p.is_empty() && p.len() <= 2 && p.bytes().all(|b| b.is_ascii_digit()) => {
                seconds += p.parse::<i64>().ok()? * unit;
            }
            None if i > 0 => break,
            _ => return None,
        }
    }
    if parts.next().is_some() || seconds > 15 * 3600 + 59 * 60 {
        return None;
    }
    Some(Zone::Fixed(-sign * seconds * MICROS_PER_SECOND))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn micros(s: &str) -> i64 {
        NaiveDateTime::parse_from_str(s, "%Y-%m-%d %H:%M:%S")
            .expect("test time")
            .and_utc()
            .timestamp_micros()
    }

    fn east_hours(text: &str) -> f64 {
        match parse_zone(text).expect("zone") {
            Zone::Fixed(us) => us as f64 / 3.6e9,
            Zone::Named(tz) => panic!("{text} read as {tz}"),
        }
    }

    #[test]
    fn session_zones_are_names_hours_east_or_posix_offsets() {
        let zone = |t: &str| session_zone(t).expect("a zone");
        assert_eq!(
            zone("europe/berlin"),
            Some(("Europe/Berlin".into(), "Europe/Berlin".into()))
        );
        assert_eq!(zone("-7"), Some(("<-07>+07".into(), "-07:00".into())));
        assert_eq!(
            zone("5.5"),
            Some(("<+05:30>-05:30".into(), "+05:30".into()))
        );
        assert_eq!(zone("UTC+3"), Some(("UTC+3".into(), "-03:00".into())));
        // what SHOW gives reads back (a catalog change carries it to other nodes)
        assert_eq!(zone("<-07>+07"), Some(("<-07>+07".into(), "-07:00".into())));
        assert_eq!(zone("Etc/UTC"), None);
        assert_eq!(zone("0"), None);
        for bad in ["PST", "Mars/Olympus", "+99", ""] {
            assert_eq!(session_zone(bad).unwrap_err().sqlstate(), "22023", "{bad}");
        }
    }

    #[test]
    fn zones_read_as_postgresql_reads_them() {
        assert_eq!(east_hours("UTC"), 0.0);
        assert_eq!(east_hours("CET"), 1.0, "an abbreviation is a fixed offset");
        assert_eq!(east_hours("pst"), -8.0);
        assert_eq!(east_hours("+05"), -5.0, "POSIX: hours west");
        assert_eq!(east_hours("-03:30"), 3.5);
        assert_eq!(east_hours("UTC+3"), -3.0);
        assert!(matches!(
            parse_zone("america/new_york"),
            Ok(Zone::Named(chrono_tz::America::New_York))
        ));
        for bad in ["Mars/Olympus", "+", "UT+99", "ab+1", "1:2:3:4"] {
            let e = parse_zone(bad).expect_err(bad);
            assert_eq!(e.sqlstate(), "22023", "{bad}");
        }
    }

    #[test]
    fn instants_and_wall_clocks_in_a_named_zone() {
        let ny = Zone::Named(chrono_tz::America::New_York);
        // Winter (-05) and summer (-04).
        assert_eq!(
            ny.wall_clock_of(micros("2026-01-01 12:00:00")).unwrap(),
            micros("2026-01-01 07:00:00")
        );
        assert_eq!(
            ny.wall_clock_of(micros("2026-07-01 12:00:00")).unwrap(),
            micros("2026-07-01 08:00:00")
        );
        assert_eq!(
            ny.instant_of(micros("2026-07-01 08:00:00")).unwrap(),
            micros("2026-07-01 12:00:00")
        );
        // 2026-03-08 02:30 does not exist: read with the offset before (-05), 07:30 UTC.
        assert_eq!(
            ny.instant_of(micros("2026-03-08 02:30:00")).unwrap(),
            micros("2026-03-08 07:30:00")
        );
        // 2026-11-01 01:30 happens twice: the later one (-05), 06:30 UTC.
        assert_eq!(
            ny.instant_of(micros("2026-11-01 01:30:00")).unwrap(),
            micros("2026-11-01 06:30:00")
        );
    }
}
