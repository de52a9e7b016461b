//! Date and timestamp text as PostgreSQL reads it (its `ParseDateTime` and
//! `DecodeDateTime`, DateStyle `ISO, MDY`), read into the value Brook stores: days since
//! 1970-01-01 or microseconds since 1970-01-01 00:00:00.
//!
//! Arrow's parser reads `YYYY-MM-DD[ HH:MM:SS[.f]][zone]` only, so `'2000-1-1'`, `'Jan 2
//! 2024'`, `'1/2/2024'`, `'20240102'`, `'2024-01-02 10:00 PST'` and `'today'` were errors
//! where PostgreSQL reads them, a seventh fractional digit was cut where PostgreSQL
//! rounds, and it reads timestamps through nanoseconds: `'9999-12-31'` (a common "valid
//! until further notice") and any time before 1677 or after 2262 could not be stored.
//!
//! [`fields`] reads the fields PostgreSQL reads: dates of numbers and month names in any
//! order PostgreSQL accepts (year first when it has three digits or more, else month, day,
//! year), `YYYYMMDD`, `YYMMDD`, Julian days (`J2451545`), times with `am`/`pm`, `24:00:00`
//! and a leap second (both carried into the next day or minute), weekdays (ignored), zone
//! offsets (`+05:30`, `-0800`, `Z`), PostgreSQL's zone abbreviations and the IANA names,
//! and the special inputs `epoch`, `now`, `today`, `tomorrow`, `yesterday` and `allballs`.
//! `now` and `today` are read on the clock the caller passes (a statement's start for
//! constants, the conversion's for COPY) in the session's zone. BC dates and `infinity` are
//! 0A000 (Brook stores neither); a two-digit year is the one nearest 2020, as PostgreSQL
//! reads it. ISO text (`YYYY-MM-DD HH:MM:SS.ffffff±HH:MM`) is read by a short path
//! here. Written here because no library reads PostgreSQL's date syntax.

mod fields;

use fields::decode;

use crate::session_time_zone::local_offset;
use brook_common::{brook_err, BrookError};
use chrono::{Datelike, Duration, NaiveDate, NaiveDateTime, Offset, TimeZone};
use datafusion::arrow::array::timezone::Tz;
use datafusion::arrow::array::{ArrayRef, Date32Array, TimestampMicrosecondArray};
use datafusion::arrow::datatypes::{DataType, TimeUnit};
use std::sync::Arc;

const MICROS_PER_SECOND: i64 = 1_000_000;
const SECONDS_PER_DAY: i64 = 86_400;

/// The type a text is read as.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Target {
    Date,
    Timestamp,
    Timestamptz,
}

impl Target {
    /// PostgreSQL's name of the type in its input errors.
    fn name(self) -> &'static str {
        match self {
            Target::Date => "date",
            Target::Timestamp => "timestamp",
            Target::Timestamptz => "timestamp with time zone",
        }
    }
}

/// Why a text is no date or timestamp Brook stores.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum InputError {
    /// Not a date at all (22007).
    Syntax,
    /// A field out of its range: `2000-02-30`, `13:00 pm` (22008).
    Range,
    /// A zone offset beyond ±15:59:59 (22009).
    ZoneRange,
    /// A zone name no database has (22023).
    UnknownZone(String),
    /// Valid PostgreSQL input Brook cannot store (0A000), named.
    Unsupported(&'static str),
}

impl InputError {
    /// The error PostgreSQL reports for `text` read as `target`, `context` (where the text
    /// came from, as `" (COPY t, line 2, column c)"`) after it.
    pub fn for_text(&self, target: Target, text: &str, context: &str) -> BrookError {
        match self {
            InputError::Syntax => brook_err!(
                InvalidDatetime,
                "invalid input syntax for type {}: \"{text}\"{context}",
                target.name()
            ),
            InputError::Range => brook_err!(
                DatetimeOverflow,
                "date/time field value out of range: \"{text}\"{context}"
            ),
            InputError::ZoneRange => BrookError::Semantic {
                message: format!("time zone displacement out of range: \"{text}\"{context}"),
                code: "22009",
            },
            InputError::UnknownZone(zone) => brook_err!(
                InvalidParameter,
                "time zone \"{zone}\" not recognized{context}"
            ),
            InputError::Unsupported(what) => {
                brook_err!(Unsupported, "{what} are not supported: \"{text}\"{context}")
            }
        }
    }
}

/// The clock and zone `now`, `today`, `tomorrow` and `yesterday` are read on; the zone is
/// also the one a timestamptz without a zone in its text is read in.
#[derive(Debug, Clone)]
pub struct Clock {
    /// The current instant, in microseconds since 1970-01-01 00:00:00 UTC.
    now_micros: i64,
    /// The session's zone; None: UTC.
    zone: Option<Tz>,
}

impl Clock {
    /// The clock of instant `now_micros` in the zone Arrow labels `zone` (`Europe/Berlin`,
    /// `+05:30`; None or a label Arrow does not read: UTC).
    pub fn new(now_micros: i64, zone: Option<&str>) -> Self {
        Clock {
            now_micros,
            zone: zone.and_then(|z| z.parse().ok()),
        }
    }

    /// The clock of this instant in `zone`.
    pub fn now(zone: Option<&str>) -> Self {
        Clock::new(chrono::Utc::now().timestamp_micros(), zone)
    }

    /// The wall-clock time of the clock's instant in its zone.
    fn local_now(&self) -> Result<NaiveDateTime, InputError> {
        let utc = chrono::DateTime::from_timestamp_micros(self.now_micros)
            .ok_or(InputError::Range)?
            .naive_utc();
        Ok(match &self.zone {
            Some(tz) => {
                let east = tz.offset_from_utc_datetime(&utc).fix().local_minus_utc();
                utc + Duration::seconds(i64::from(east))
            }
            None => utc,
        })
    }

    /// The UTC time of local time `local` in the clock's zone, as PostgreSQL reads a local
    /// time the zone skips or has twice.
    fn utc_of(&self, local: NaiveDateTime) -> NaiveDateTime {
        match &self.zone {
            Some(tz) => local - Duration::seconds(i64::from(local_offset(tz, &local))),
            None => local,
        }
    }
}

/// `text` read as `target`: days since 1970-01-01 (a date), microseconds since 1970-01-01
/// 00:00:00 of the local time (a timestamp) or of the instant in UTC (a timestamptz; text
/// without a zone is a local time of the clock's zone).
pub fn read(text: &str, target: Target, clock: &Clock) -> Result<i64, InputError> {
    match iso(text.as_bytes()) {
        Some(decoded) => value(&decoded, target, clock),
        None => value(&decode(text)?, target, clock),
    }
}

/// The Arrow type of the values [`read_array`] makes: `Date32`, `Timestamp(µs)`, and
/// `Timestamp(µs, "+00:00")` for a timestamptz.
pub fn arrow_type(target: Target) -> DataType {
    match target {
        Target::Date => DataType::Date32,
        Target::Timestamp => DataType::Timestamp(TimeUnit::Microsecond, None),
        Target::Timestamptz => DataType::Timestamp(TimeUnit::Microsecond, Some("+00:00".into())),
    }
}

/// Each text read as `target` ([`read`]; NULL stays NULL) as an array of
/// [`arrow_type`]; the first text that is none is `error(row, text, why)`.
pub fn read_array<'a>(
    texts: impl IntoIterator<Item = Option<&'a str>>,
    target: Target,
    clock: &Clock,
    error: impl Fn(usize, &str, InputError) -> BrookError,
) -> Result<ArrayRef, BrookError> {
    let values = texts
        .into_iter()
        .enumerate()
        .map(|(row, text)| {
            text.map(|t| read(t, target, clock).map_err(|why| error(row, t, why)))
                .transpose()
        })
        .collect::<Result<Vec<Option<i64>>, BrookError>>()?;
    Ok(match target {
        Target::Date => {
            let days = values.into_iter().map(|d| d.map(|d| d as i32));
            Arc::new(days.collect::<Date32Array>())
        }
        Target::Timestamp => Arc::new(TimestampMicrosecondArray::from(values)),
        Target::Timestamptz => {
            Arc::new(TimestampMicrosecondArray::from(values).with_timezone("+00:00"))
        }
    })
}

/// What a date or timestamp text names.
#[derive(Debug, Clone, PartialEq)]
struct Decoded {
    day: Day,
    /// The time of day in microseconds (up to 24:00:00 and a leap second: carried).
    micros: Option<i64>,
    zone: Option<Zone>,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Day {
    Fixed(NaiveDate),
    /// `today` (0), `tomorrow` (1), `yesterday` (-1): days after the clock's date.
    Relative(i64),
    Now,
    Epoch,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Zone {
    /// Seconds east of UTC.
    East(i32),
    Named(chrono_tz::Tz),
}

/// The value `d` names as `target` ([`read`]).
fn value(d: &Decoded, target: Target, clock: &Clock) -> Result<i64, InputError> {
    let date = match d.day {
        Day::Fixed(date) => date,
        Day::Relative(days) => clock.local_now()?.date() + Duration::days(days),
        Day::Epoch => return Ok(0),
        Day::Now => {
            return match target {
                Target::Date => Ok(days_of(clock.local_now()?.date())),
                Target::Timestamp => micros_of(clock.local_now()?),
                Target::Timestamptz => Ok(clock.now_micros),
            }
        }
    };
    let local = date.and_hms_opt(0, 0, 0).ok_or(InputError::Range)?
        + Duration::microseconds(d.micros.unwrap_or(0));
    match target {
        // PostgreSQL's date input ignores the time (`24:00` included) and the zone.
        Target::Date => Ok(days_of(date)),
        Target::Timestamp => micros_of(local),
        Target::Timestamptz => micros_of(match d.zone {
            Some(Zone::East(s)) => local - Duration::seconds(i64::from(s)),
            Some(Zone::Named(tz)) => {
                local - Duration::seconds(i64::from(local_offset(&tz, &local)))
            }
            None => clock.utc_of(local),
        }),
    }
}

fn days_of(date: NaiveDate) -> i64 {
    i64::from(date.num_days_from_ce()) - 719_163
}

fn micros_of(t: NaiveDateTime) -> Result<i64, InputError> {
    Ok(t.and_utc().timestamp_micros())
}

/// `b` read when it is ISO 8601 as PostgreSQL prints it, `YYYY-MM-DD` with ` HH:MM:SS[.f]`
/// or `T...` (at most six fractional digits) and `Z` or `±HH:MM` after, every field in
/// range: the common input, read without [`decode`]'s allocations. `None` for other text.
fn iso(b: &[u8]) -> Option<Decoded> {
    let digits = |s: &[u8]| -> Option<u32> {
        s.iter().try_fold(0u32, |n, c| {
            c.is_ascii_digit().then(|| n * 10 + u32::from(c - b'0'))
        })
    };
    if b.len() < 10 || b[4] != b'-' || b[7] != b'-' {
        return None;
    }
    let (y, m, d) = (digits(&b[..4])?, digits(&b[5..7])?, digits(&b[8..10])?);
    if y == 0 {
        return None;
    }
    let date = NaiveDate::from_ymd_opt(y as i32, m, d)?;
    let fixed = |micros, zone| {
        Some(Decoded {
            day: Day::Fixed(date),
            micros,
            zone,
        })
    };
    let rest = &b[10..];
    if rest.is_empty() {
        return fixed(None, None);
    }
    if rest.len() < 9 || !matches!(rest[0], b' ' | b'T') || rest[3] != b':' || rest[6] != b':' {
        return None;
    }
    let (h, mi, s) = (
        digits(&rest[1..3])?,
        digits(&rest[4..6])?,
        digits(&rest[7..9])?,
    );
    if h >= 24 || mi >= 60 || s >= 60 {
        return None;
    }
    let mut micros = i64::from((h * 60 + mi) * 60 + s) * MICROS_PER_SECOND;
    let mut rest = &rest[9..];
    if rest.first() == Some(&b'.') {
        let n = rest[1..].iter().take_while(|c| c.is_ascii_digit()).count();
        if n == 0 || n > 6 {
            return None;
        }
        micros += i64::from(digits(&rest[1..1 + n])?) * 10_i64.pow(6 - n as u32);
        rest = &rest[1 + n..];
    }
    let east = match rest {
        [] => return fixed(Some(micros), None),
        b"Z" => 0,
        [sign @ (b'+' | b'-'), h1, h2, b':', m1, m2] => {
            let (h, m) = (digits(&[*h1, *h2])?, digits(&[*m1, *m2])?);
            if h > 15 || m >= 60 {
                return None;
            }
            let east = (h * 3600 + m * 60) as i32;
            if *sign == b'-' {
                -east
            } else {
                east
            }
        }
        _ => return None,
    };
    fixed(Some(micros), Some(Zone::East(east)))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 2024-05-06 07:08:09.5 UTC.
    fn clock(zone: Option<&str>) -> Clock {
        Clock::new(1_714_979_289_500_000, zone)
    }

    /// The value `text` reads as, printed: `YYYY-MM-DD`, `YYYY-MM-DD HH:MM:SS.ffffff` (and
    /// `+00` for an instant).
    fn read_on(text: &str, target: Target, clock: &Clock) -> Result<String, InputError> {
        let v = read(text, target, clock)?;
        Ok(match target {
            Target::Date => NaiveDate::from_num_days_from_ce_opt(v as i32 + 719_163)
                .map(|d| d.format("%Y-%m-%d").to_string())
                .unwrap_or_default(),
            _ => {
                let t = chrono::DateTime::from_timestamp_micros(v).unwrap_or_default();
                let zone = if target == Target::Timestamptz {
                    "+00"
                } else {
                    ""
                };
                format!("{}{zone}", t.naive_utc().format("%Y-%m-%d %H:%M:%S%.6f"))
            }
        })
    }

    fn read_as(text: &str, target: Target) -> Result<String, InputError> {
        read_on(text, target, &clock(None))
    }

    #[test]
    fn iso_text_is_read_on_the_short_path() {
        for text in [
            "2024-01-02",
            "2024-01-02 10:00:00",
            "2024-01-02T10:00:00.123456",
            "2024-01-02 10:00:00+05:30",
            "2024-01-02 10:00:00Z",
        ] {
            let short = iso(text.as_bytes()).expect(text);
            assert_eq!(Ok(short), decode(text), "{text}");
        }
        for text in [
            "2024-1-2",
            "2024-01-02 10:00",
            "2024-02-30",
            "2024-01-02 10:00:00.1234567",
        ] {
            assert_eq!(iso(text.as_bytes()), None, "{text}");
        }
    }

    #[test]
    fn times_outside_nanoseconds_range_are_read() {
        assert_eq!(
            read_as("9999-12-31", Target::Timestamp).as_deref(),
            Ok("9999-12-31 00:00:00.000000")
        );
        assert_eq!(
            read_as("0001-01-01 00:00+00", Target::Timestamptz).as_deref(),
            Ok("0001-01-01 00:00:00.000000+00")
        );
        assert_eq!(
            read_as("Jan 1 1500 10:00", Target::Timestamp).as_deref(),
            Ok("1500-01-01 10:00:00.000000")
        );
    }

    #[test]
    fn dates_in_postgresqls_forms() {
        for text in [
            "2024-1-2",
            "Jan 2 2024",
            "2 Jan 2024",
            "January 2, 2024",
            "Tuesday, January 2, 2024",
            "Jan-02-2024",
            "02-Jan-2024",
            "2024-Jan-02",
            "2024 Jan 2",
            "1/2/2024",
            "1-2-2024",
            "1.2.2024",
            "2024/01/02",
            "2024.01.02",
            "jan/02/2024",
            "2024 01 02",
            "1 2 2024",
            "20240102",
            "240102",
            "1/2/24",
            "Jan 2 24",
            " 2024-01-02 ",
            "J2460312",
            "2024-01-02 10:00 EST",
            "2024-01-02 24:00:00",
        ] {
            assert_eq!(
                read_as(text, Target::Date).as_deref(),
                Ok("2024-01-02"),
                "{text}"
            );
        }
    }

    #[test]
    fn timestamps_in_postgresqls_forms() {
        for (text, want) in [
            ("2000-1-2 3:04", "2000-01-02 03:04:00.000000"),
            ("Jan 2, 2024 10:30", "2024-01-02 10:30:00.000000"),
            ("Sat Jan 02 10:00:00 2021", "2021-01-02 10:00:00.000000"),
            ("January 2 2024 12:00 AM", "2024-01-02 00:00:00.000000"),
            ("January 2 2024 12:30 pm", "2024-01-02 12:30:00.000000"),
            (
                "Tuesday, January 2, 2024 3:04:05 PM",
                "2024-01-02 15:04:05.000000",
            ),
            ("20240102T030405", "2024-01-02 03:04:05.000000"),
            ("20240102 030405", "2024-01-02 03:04:05.000000"),
            ("2024-01-02t03:04:05", "2024-01-02 03:04:05.000000"),
            ("2024-01-02 10:00:00.1234567", "2024-01-02 10:00:00.123457"),
            ("2024-01-02 24:00:00", "2024-01-03 00:00:00.000000"),
            ("2024-12-31 23:59:60", "2025-01-01 00:00:00.000000"),
            ("2024-01-30 12:59:60.5", "2024-01-30 13:00:00.500000"),
            ("2024-01-02 10:00 PST", "2024-01-02 10:00:00.000000"),
            ("2024-01-02 allballs", "2024-01-02 00:00:00.000000"),
            ("2024-01-02 0:30 am", "2024-01-02 00:30:00.000000"),
            ("2024-01-02 pm", "2024-01-02 12:00:00.000000"),
            ("Oct 2 1999 103000", "1999-10-02 10:30:00.000000"),
            ("Jan 2 2024 at 10:00", "2024-01-02 10:00:00.000000"),
            ("2024-01-02 t 10:00", "2024-01-02 10:00:00.000000"),
            ("epoch", "1970-01-01 00:00:00.000000"),
        ] {
            assert_eq!(
                read_as(text, Target::Timestamp).as_deref(),
                Ok(want),
                "{text}"
            );
        }
    }

    #[test]
    fn a_zone_in_the_text_makes_a_timestamptz_an_instant() {
        for (text, want) in [
            ("2024-01-02 10:00 EST", "2024-01-02 15:00:00.000000+00"),
            ("2024-01-02 10:00 CET", "2024-01-02 09:00:00.000000+00"),
            ("2024-01-02 10:00 Z", "2024-01-02 10:00:00.000000+00"),
            ("2024-01-02 10:00+0530", "2024-01-02 04:30:00.000000+00"),
            (
                "2024-01-02 10:00 +05:30:15",
                "2024-01-02 04:29:45.000000+00",
            ),
            (
                "2024-01-02 10:00 europe/paris",
                "2024-01-02 09:00:00.000000+00",
            ),
            (
                "2024-07-02 10:00 America/New_York",
                "2024-07-02 14:00:00.000000+00",
            ),
            (
                "Sat Jan 02 10:00:00 2021 PST",
                "2021-01-02 18:00:00.000000+00",
            ),
            ("2024-01-02 10:00 EST5EDT", "2024-01-02 15:00:00.000000+00"),
            ("2024-01-02 allballs", "2024-01-02 00:00:00.000000+00"),
            ("2024-01-02 10:00 -0800", "2024-01-02 18:00:00.000000+00"),
            ("2024-1-2", "2024-01-02 00:00:00.000000+00"),
        ] {
            assert_eq!(
                read_as(text, Target::Timestamptz).as_deref(),
                Ok(want),
                "{text}"
            );
        }
    }

    #[test]
    fn now_and_today_are_read_on_the_clock_in_the_sessions_zone() {
        let utc = clock(None);
        let tokyo = clock(Some("Asia/Tokyo"));
        for (text, target, c, want) in [
            (
                "now",
                Target::Timestamptz,
                &tokyo,
                "2024-05-06 07:08:09.500000+00",
            ),
            (
                "now",
                Target::Timestamp,
                &tokyo,
                "2024-05-06 16:08:09.500000",
            ),
            ("today", Target::Date, &utc, "2024-05-06"),
            ("tomorrow", Target::Date, &utc, "2024-05-07"),
            (
                "yesterday 10:00",
                Target::Timestamp,
                &utc,
                "2024-05-05 10:00:00.000000",
            ),
            (
                "TODAY",
                Target::Timestamp,
                &clock(Some("-10:00")),
                "2024-05-05 00:00:00.000000",
            ),
            // A timestamptz without a zone is a local time of the clock's zone.
            (
                "2024-01-02 10:00",
                Target::Timestamptz,
                &tokyo,
                "2024-01-02 01:00:00.000000+00",
            ),
            (
                "today",
                Target::Timestamptz,
                &tokyo,
                "2024-05-05 15:00:00.000000+00",
            ),
        ] {
            assert_eq!(read_on(text, target, c).as_deref(), Ok(want), "{text}");
        }
    }

    #[test]
    fn bad_text_is_refused_as_postgresql_refuses_it() {
        use InputError::*;
        for (text, why) in [
            ("2000-02-30", Range),
            ("2024-13-01", Range),
            ("24-01-02", Range),
            ("Jan 32 2024", Range),
            ("2024-01-02 10:61", Range),
            ("2024-01-02 13:00 pm", Range),
            ("2024-01-02 24:00:01", Range),
            ("0000-01-01", Range),
            ("10:00", Syntax),
            ("2024-01-02 3pm", Syntax),
            ("2024-01-02 10:00 XYZ", Syntax),
            ("now 10:00", Syntax),
            ("2024-01-02 now", Syntax),
            ("Jan Feb 2 2024", Syntax),
            ("2024", Syntax),
            ("", Syntax),
            ("2024-01-02 10:00 +16", ZoneRange),
            ("2024-01-02 10:00 +053015", ZoneRange),
            ("2024-01-02 10:00 +05:61", ZoneRange),
            ("2024-01-02 23:59:60.5", Range),
            ("2024-01-02 allballs EST", Syntax),
            ("Mon Tue Jan 2 2024", Syntax),
            ("2024-01-02 ad ad", Syntax),
            ("J0", Unsupported("BC dates")),
            ("2024-01-02 10:00 Foo/Bar", UnknownZone("foo/bar".into())),
            ("2024-01-02 BC", Unsupported("BC dates")),
            ("infinity", Unsupported("infinite dates and timestamps")),
            ("-infinity", Unsupported("infinite dates and timestamps")),
        ] {
            assert_eq!(read_as(text, Target::Timestamp), Err(why), "{text}");
        }
    }
}
