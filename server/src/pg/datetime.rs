//! A fast path for the commonest timestamp text in COPY: `YYYY-MM-DD HH:MM:SS[.ffffff]`
//! (or with `T`), no zone.
//!
//! Written by hand because arrow's text-to-timestamp cast goes through chrono's general
//! parser, which led the profile of bulk COPY into streams (each row's event time). Anything
//! else (other layouts, zones, BC dates, `24:00:00`, more than six fraction digits) is left
//! to that cast, so the accepted language and the results do not change.

use crate::pg::fast_text::RawText;
use datafusion::arrow::array::{ArrayRef, TimestampMicrosecondArray};
use std::sync::Arc;

/// Days from 1970-01-01 to the proleptic Gregorian date `y-m-d` (Howard Hinnant's
/// `days_from_civil`).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

fn is_leap(y: i64) -> bool {
    (y % 4 == 0 && y % 100 != 0) || y % 400 == 0
}

fn days_in_month(y: i64, m: i64) -> i64 {
    match m {
        2 if is_leap(y) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// The number of `n` ASCII digits at `b[at..]`.
fn digits(b: &[u8], at: usize, n: usize) -> Option<i64> {
    let mut v = 0i64;
    for &c in b.get(at..at + n)? {
        if !c.is_ascii_digit() {
            return None;
        }
        v = v * 10 + i64::from(c - b'0');
    }
    Some(v)
}

/// Microseconds since the epoch of `YYYY-MM-DD[ T]HH:MM:SS[.f{1,6}]`; `None` for anything
/// else (the general parser decides those).
pub fn parse_micros(b: &[u8]) -> Option<i64> {
    Some(date_days(b)? * DAY + time_micros(b)?)
}

const DAY: i64 = 86_400 * 1_000_000;

/// Days since the epoch of the `YYYY-MM-DD` that starts `b`, when `b` is long enough and
/// has the date-time separators of the fast layout.
fn date_days(b: &[u8]) -> Option<i64> {
    if b.len() < 19
        || b[4] != b'-'
        || b[7] != b'-'
        || !(b[10] == b' ' || b[10] == b'T')
        || b[13] != b':'
        || b[16] != b':'
    {
        return None;
    }
    let (y, mo, d) = (digits(b, 0, 4)?, digits(b, 5, 2)?, digits(b, 8, 2)?);
    if !(1..=12).contains(&mo) || d < 1 || d > days_in_month(y, mo) {
        return None;
    }
    Some(days_from_civil(y, mo, d))
}

/// Microseconds into the day of the `HH:MM:SS[.f{1,6}]` at `b[11..]` (the rest of `b`).
fn time_micros(b: &[u8]) -> Option<i64> {
    Some(second_micros(b)? + fraction_micros(&b[TO_SECOND..])?)
}

/// Microseconds into the day of the `HH:MM:SS` at `b[11..19]`.
fn second_micros(b: &[u8]) -> Option<i64> {
    if b.len() < TO_SECOND || b[13] != b':' || b[16] != b':' {
        return None;
    }
    let (h, mi, s) = (digits(b, 11, 2)?, digits(b, 14, 2)?, digits(b, 17, 2)?);
    if h > 23 || mi > 59 || s > 59 {
        return None;
    }
    Some((h * 3600 + mi * 60 + s) * 1_000_000)
}

/// Microseconds of a fraction of a second: empty, or `.` and one to six digits.
fn fraction_micros(rest: &[u8]) -> Option<i64> {
    match rest {
        [] => Some(0),
        [b'.', frac @ ..] if (1..=6).contains(&frac.len()) => {
            let f = digits(frac, 0, frac.len())?;
            Some(f * 10i64.pow(6 - frac.len() as u32))
        }
        _ => None,
    }
}

/// The length of `YYYY-MM-DD HH:MM:SS`.
const TO_SECOND: usize = 19;

/// The column as `timestamp` values if every value takes the fast path; `None` otherwise.
pub fn fast_timestamps(text: &RawText<'_>) -> Option<ArrayRef> {
    let mut out = Vec::with_capacity(text.len());
    // Event times arrive in order, so runs of rows share a second: the text up to the
    // seconds is parsed once per run (text equal to text already parsed has its value), and
    // only the fraction of each row.
    let mut last: Option<([u8; TO_SECOND], i64)> = None;
    for (i, b) in text.bytes().enumerate() {
        let head = b.first_chunk::<TO_SECOND>();
        let second = match (head, last) {
            (Some(head), Some((seen, micros))) if *head == seen => micros,
            (Some(head), _) => {
                let micros = date_days(b)? * DAY + second_micros(b)?;
                last = Some((*head, micros));
                micros
            }
            // NULL is asked only of values that are not timestamps (a NULL's bytes are
            // empty).
            (None, _) if text.is_null(i) => {
                out.push(0);
                continue;
            }
            (None, _) => return None,
        };
        out.push(second + fraction_micros(&b[TO_SECOND..])?);
    }
    Some(Arc::new(TimestampMicrosecondArray::new(
        out.into(),
        text.nulls.clone(),
    )))
}

/// A `date` or `time` text without the time zone that may end it, which PostgreSQL's
/// input of those types ignores: pgjdbc's `setTime` sends `13:14:15+00` and `setDate`
/// `2026-01-31 +00`. A zone is `Z`, `UTC`/`GMT` or `±HH[:MM[:SS]]`/`±HHMM`; in a date it
/// must follow a space (the date's own `-` are not a zone).
pub fn without_zone(text: &str, date: bool) -> &str {
    let trimmed = text.trim_end();
    let upper = trimmed.to_ascii_uppercase();
    for name in [" UTC", " GMT", "Z"] {
        if upper.ends_with(name) && (name != "Z" || !date) {
            return trimmed[..trimmed.len() - name.len()].trim_end();
        }
    }
    let Some(sign) = trimmed.rfind(['+', '-']) else {
        return text;
    };
    let zone = &trimmed[sign + 1..];
    let is_offset = (2..=8).contains(&zone.len())
        && zone.bytes().all(|c| c.is_ascii_digit() || c == b':')
        && zone.bytes().take(2).all(|c| c.is_ascii_digit());
    let before = &trimmed[..sign];
    if !is_offset || before.trim().is_empty() {
        return text;
    }
    if date && !before.ends_with(' ') {
        return text;
    }
    before.trim_end()
}

#[cfg(test)]
mod tests {
    #[test]
    fn zones_are_dropped_from_dates_and_times() {
        use super::without_zone;
        assert_eq!(without_zone("13:14:15+00", false), "13:14:15");
        assert_eq!(without_zone("13:14:15.5-05:30", false), "13:14:15.5");
        assert_eq!(without_zone("13:14:15 UTC", false), "13:14:15");
        assert_eq!(without_zone("13:14:15Z", false), "13:14:15");
        assert_eq!(without_zone("13:14:15", false), "13:14:15");
        assert_eq!(without_zone("2026-01-31 +00", true), "2026-01-31");
        assert_eq!(without_zone("2026-01-31 -05:00", true), "2026-01-31");
        assert_eq!(without_zone("2026-01-31", true), "2026-01-31");
        assert_eq!(without_zone("-2026", true), "-2026");
    }

    use super::*;
    use datafusion::arrow::array::{Array, StringArray};
    use datafusion::arrow::compute::cast;
    use datafusion::arrow::datatypes::{DataType, TimeUnit};
    use proptest::prelude::*;

    /// What arrow's general cast makes of `text`.
    fn by_cast(text: &str) -> Option<i64> {
        let a: ArrayRef = Arc::new(StringArray::from(vec![text]));
        let t = cast(&a, &DataType::Timestamp(TimeUnit::Microsecond, None)).ok()?;
        let t = t.as_any().downcast_ref::<TimestampMicrosecondArray>()?;
        t.is_valid(0).then(|| t.value(0))
    }

    #[test]
    fn common_layouts() {
        assert_eq!(parse_micros(b"1970-01-01 00:00:00"), Some(0));
        assert_eq!(
            parse_micros(b"2026-01-01T00:00:01.5"),
            by_cast("2026-01-01T00:00:01.5")
        );
        assert_eq!(
            parse_micros(b"2024-02-29 23:59:59.999999"),
            by_cast("2024-02-29 23:59:59.999999")
        );
        assert_eq!(parse_micros(b"1969-12-31 23:59:59"), Some(-1_000_000));
        for other in [
            "2023-02-29 00:00:00",
            "2026-01-01 24:00:00",
            "2026-01-01 00:00:00+02",
            "2026-01-01 00:00:00.1234567",
            "2026-1-01 00:00:00",
            "2026-01-01",
        ] {
            assert_eq!(parse_micros(other.as_bytes()), None, "{other}");
        }
    }

    #[test]
    fn a_column_reuses_its_seconds_and_still_checks_each_value() {
        let texts = [
            Some("2026-01-01 00:00:01"),
            Some("2026-01-01 00:00:01.25"),
            Some("2026-01-01T00:00:02.5"),
            None,
            Some("2026-01-02 23:59:59.999999"),
            Some("2026-01-01 12:00:00"),
        ];
        let col = StringArray::from(texts.to_vec());
        let fast = fast_timestamps(&RawText::of_strings(&col)).unwrap();
        let fast = fast
            .as_any()
            .downcast_ref::<TimestampMicrosecondArray>()
            .unwrap();
        for (i, t) in texts.iter().enumerate() {
            assert_eq!(
                fast.is_valid(i).then(|| fast.value(i)),
                t.and_then(|t| parse_micros(t.as_bytes()))
            );
        }
        // A bad time after a second already seen still leaves the column to the general cast.
        for bad in [
            "2026-01-01 24:00:00",
            "2026-01-01x00:00:00",
            "2026-01-01 00:00",
            "2026-01-01 00:00:01.1234567",
            "2026-01-01 00:00:01x",
            "2026-01-01 00:00:01.",
        ] {
            let col = StringArray::from(vec!["2026-01-01 00:00:01", bad]);
            assert!(
                fast_timestamps(&RawText::of_strings(&col)).is_none(),
                "{bad}"
            );
        }
    }

    proptest! {
        /// Wherever the fast path answers, it agrees with the general cast.
        #[test]
        fn agrees_with_the_general_parser(
            y in 1i64..9999, mo in 1i64..13, d in 1i64..32, h in 0i64..24, mi in 0i64..60,
            s in 0i64..60, frac in prop::option::of((1usize..7, 0u32..1_000_000)), t in any::<bool>(),
        ) {
            let mut text = format!("{y:04}-{mo:02}-{d:02}{}{h:02}:{mi:02}:{s:02}", if t { 'T' } else { ' ' });
            if let Some((n, f)) = frac {
                text.push('.');
                text.push_str(&format!("{f:06}")[..n]);
            }
            let fast = parse_micros(text.as_bytes());
            if fast.is_some() {
                prop_assert_eq!(fast, by_cast(&text), "{}", text);
            } else {
                prop_assert!(d > days_in_month(y, mo), "{} refused", text);
            }
        }
    }
}
