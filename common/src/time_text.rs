//! Time-of-day input as PostgreSQL reads it (`DecodeTimeOnly`): `H:M[:S[.f]]`, `M:S.f`,
//! the digit runs `HHMM[.f]` and `HHMMSS[.f]`, an optional leading `T` or date, `am`/`pm`,
//! `allballs`, and a time zone that the type `time` ignores (`+05:30`, `-08`, `Z`, `UTC`,
//! `GMT`). Arrow's parser, which casts used, read a bare digit run as a fraction of a
//! second (`'0130'::time` was 00:00:00.00013, PostgreSQL 01:30:00: a wrong answer) and
//! refused `1:2:3`, `0130 pm` and padded text. Written here because no library reads
//! PostgreSQL's time syntax.

use crate::{brook_err, BrookError};
use datafusion::arrow::array::Time64MicrosecondArray;

const MICROS_PER_SECOND: i64 = 1_000_000;
const MICROS_PER_DAY: i64 = 86_400 * MICROS_PER_SECOND;

/// Why a text is no time of day Brook stores.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimeTextError {
    /// Not a time at all (22007).
    Syntax,
    /// A field out of its range, `25:00` or `13:00 pm` (22008).
    Range,
    /// A zone offset beyond ±15:59:59 (22009).
    ZoneRange,
}

impl TimeTextError {
    /// The error PostgreSQL reports for `text` read as a `time`, `context` (where the text
    /// came from, as `" (COPY t, line 2, column c)"`) after it.
    pub fn for_text(self, text: &str, context: &str) -> BrookError {
        match self {
            TimeTextError::Syntax => brook_err!(
                InvalidDatetime,
                "invalid input syntax for type time: \"{text}\"{context}"
            ),
            TimeTextError::Range => brook_err!(
                DatetimeOverflow,
                "date/time field value out of range: \"{text}\"{context}"
            ),
            TimeTextError::ZoneRange => BrookError::Semantic {
                message: format!("time zone displacement out of range: \"{text}\"{context}"),
                code: "22009",
            },
        }
    }
}

/// The time of day `text` names, in microseconds after midnight. `24:00:00`, which
/// PostgreSQL stores, is a range error here: Brook's time values end before midnight.
pub fn parse_time(text: &str) -> Result<i64, TimeTextError> {
    let t = text.trim();
    if t.eq_ignore_ascii_case("allballs") {
        return Ok(0);
    }
    let t = without_leading_date(t);
    let t = match t.strip_prefix(['T', 't']) {
        Some(rest) if rest.starts_with(|c: char| c.is_ascii_digit()) => rest,
        _ => t,
    };
    let core_len = t
        .find(|c: char| !(c.is_ascii_digit() || c == ':' || c == '.'))
        .unwrap_or(t.len());
    let fields = fields_of(&t[..core_len])?;
    let rest = t[core_len..].trim_start();
    let (half, rest) = meridiem(rest);
    check_ignored_zone(rest.trim())?;
    micros_of(fields, half)
}

/// Each text of `texts` read as a time (NULL stays NULL), as Arrow's `Time64(µs)` values;
/// the first that is no time is `error(row, text, why)`. (Casts and COPY build the column
/// from the parsed values: no text in between for Arrow to read again.)
pub fn time_array<'a>(
    texts: impl IntoIterator<Item = Option<&'a str>>,
    error: impl Fn(usize, &str, TimeTextError) -> BrookError,
) -> Result<Time64MicrosecondArray, BrookError> {
    texts
        .into_iter()
        .enumerate()
        .map(|(row, text)| {
            text.map(|t| parse_time(t).map_err(|why| error(row, t, why)))
                .transpose()
        })
        .collect()
}

/// The hour, minute, second and fraction (as text after the point) of a time's digits.
struct Fields<'a> {
    hour: i64,
    minute: i64,
    second: i64,
    fraction: &'a str,
}

/// `text` after a leading `YYYY-MM-DD` and its separator, when it has one.
fn without_leading_date(text: &str) -> &str {
    let b = text.as_bytes();
    let dated = b.len() > 11
        && b[..4].iter().all(u8::is_ascii_digit)
        && b[4] == b'-'
        && b[5..7].iter().all(u8::is_ascii_digit)
        && b[7] == b'-'
        && b[8..10].iter().all(u8::is_ascii_digit)
        && (b[10] == b' ' || b[10] == b'T');
    if dated && text[11..].trim_start().contains(':') {
        text[11..].trim_start()
    } else {
        text
    }
}

/// The fields of `H:M[:S[.f]]`, `M:S.f`, `HHMM[.f]` or `HHMMSS[.f]`.
fn fields_of(core: &str) -> Result<Fields<'_>, TimeTextError> {
    // A point, even with no digits after it (`1:2.`), makes two fields minutes and
    // seconds, as PostgreSQL reads them.
    let (whole, fraction, point) = match core.split_once('.') {
        Some((w, f)) if f.bytes().all(|c| c.is_ascii_digit()) => (w, f, true),
        Some(_) => return Err(TimeTextError::Syntax),
        None => (core, "", false),
    };
    let number = |s: &str| -> Result<i64, TimeTextError> {
        if (1..=2).contains(&s.len()) && s.bytes().all(|c| c.is_ascii_digit()) {
            s.parse().map_err(|_| TimeTextError::Syntax)
        } else {
            Err(TimeTextError::Syntax)
        }
    };
    let parts: Vec<&str> = whole.split(':').collect();
    let (hour, minute, second) = match parts.as_slice() {
        [h, m, s] => (number(h)?, number(m)?, number(s)?),
        // Two fields with a fraction are minutes and seconds, as PostgreSQL reads them.
        [m, s] if point => (0, number(m)?, number(s)?),
        [h, m] => (number(h)?, number(m)?, 0),
        // A digit run's point needs digits after it (`0130.` is no time).
        [_] if point && fraction.is_empty() => return Err(TimeTextError::Syntax),
        [digits] if digits.len() == 4 => (number(&digits[..2])?, number(&digits[2..])?, 0),
        [digits] if digits.len() == 6 => (
            number(&digits[..2])?,
            number(&digits[2..4])?,
            number(&digits[4..])?,
        ),
        _ => return Err(TimeTextError::Syntax),
    };
    Ok(Fields {
        hour,
        minute,
        second,
        fraction,
    })
}

/// Half of the day: `Some(false)` for `am`, `Some(true)` for `pm`, and the text after it.
fn meridiem(rest: &str) -> (Option<bool>, &str) {
    let word = rest.get(..2).unwrap_or("");
    let after = rest.get(2..).unwrap_or("");
    let ends = after.is_empty() || after.starts_with([' ', '+', '-']);
    match word.to_ascii_lowercase().as_str() {
        "am" if ends => (Some(false), after),
        "pm" if ends => (Some(true), after),
        _ => (None, rest),
    }
}

/// Ok when `zone` is empty or a zone the type `time` reads and ignores: an offset `H`,
/// `HH:MM[:SS]` or `HHMM[SS]` within ±15:59:59 (22009 beyond), `Z`, `UTC`, `GMT`, or an
/// era (`AD`/`BC`, also ignored by PostgreSQL); 22007 for other text.
fn check_ignored_zone(zone: &str) -> Result<(), TimeTextError> {
    if zone.is_empty()
        || ["Z", "UTC", "GMT", "AD", "BC"]
            .iter()
            .any(|w| zone.eq_ignore_ascii_case(w))
    {
        return Ok(());
    }
    let offset = zone.strip_prefix(['+', '-']).ok_or(TimeTextError::Syntax)?;
    let parts: Vec<&str> = if offset.contains(':') {
        offset.split(':').collect()
    } else if offset.len() > 2 && offset.len() % 2 == 0 {
        // `0530`, `053000`
        (0..offset.len())
            .step_by(2)
            .map(|i| &offset[i..i + 2])
            .collect()
    } else {
        vec![offset]
    };
    let well_formed = (1..=3).contains(&parts.len())
        && parts
            .iter()
            .all(|p| (1..=2).contains(&p.len()) && p.bytes().all(|c| c.is_ascii_digit()));
    if !well_formed {
        return Err(TimeTextError::Syntax);
    }
    let field = |i: usize| {
        parts
            .get(i)
            .and_then(|p| p.parse::<u32>().ok())
            .unwrap_or(0)
    };
    if field(0) > 15 || field(1) > 59 || field(2) > 59 {
        return Err(TimeTextError::ZoneRange);
    }
    Ok(())
}

/// Microseconds after midnight of `f`, checked as PostgreSQL checks its fields; a second
/// of 60 carries into the minute, the fraction rounds to the microsecond.
fn micros_of(f: Fields<'_>, pm: Option<bool>) -> Result<i64, TimeTextError> {
    let mut hour = f.hour;
    if let Some(pm) = pm {
        if hour > 12 {
            return Err(TimeTextError::Range);
        }
        hour = match (hour, pm) {
            (12, false) => 0,
            (12, true) => 12,
            (h, true) => h + 12,
            (h, false) => h,
        };
    }
    if hour > 24 || f.minute > 59 || f.second > 60 {
        return Err(TimeTextError::Range);
    }
    let fraction = fraction_micros(f.fraction);
    let micros = ((hour * 60 + f.minute) * 60 + f.second) * MICROS_PER_SECOND + fraction;
    if micros >= MICROS_PER_DAY {
        return Err(TimeTextError::Range);
    }
    Ok(micros)
}

/// Digits after a decimal point as microseconds, rounded as PostgreSQL rounds them: the
/// fraction read as a double, times a million, to the nearest (halves to even).
fn fraction_micros(digits: &str) -> i64 {
    if digits.is_empty() {
        return 0;
    }
    let fraction: f64 = format!("0.{digits}").parse().unwrap_or(0.0);
    (fraction * 1e6).round_ties_even() as i64
}

#[cfg(test)]
mod tests {
    use super::*;

    /// [`parse_time`]'s value as `HH:MM:SS.ffffff`.
    fn canonical_time(text: &str) -> Result<String, TimeTextError> {
        let micros = parse_time(text)?;
        let seconds = micros / MICROS_PER_SECOND;
        Ok(format!(
            "{:02}:{:02}:{:02}.{:06}",
            seconds / 3600,
            seconds / 60 % 60,
            seconds % 60,
            micros % MICROS_PER_SECOND
        ))
    }

    /// Every case as PostgreSQL 15 reads it (`SELECT '...'::time`).
    #[test]
    fn times_are_read_as_postgresql_reads_them() {
        for (text, want) in [
            ("0130", "01:30:00.000000"),
            ("013000", "01:30:00.000000"),
            ("0130.5", "01:30:00.500000"),
            ("013000.25", "01:30:00.250000"),
            ("1:30", "01:30:00.000000"),
            ("1:2:3", "01:02:03.000000"),
            ("1:30.5", "00:01:30.500000"),
            (" 01:30 ", "01:30:00.000000"),
            ("13:00:00.5", "13:00:00.500000"),
            ("01:30:00.1234567", "01:30:00.123457"),
            ("01:30:59.9999999", "01:31:00.000000"),
            ("00:00:00.0000005", "00:00:00.000000"),
            ("01:30:00.5000005", "01:30:00.500000"),
            ("1:2.", "00:01:02.000000"),
            ("12:30.", "00:12:30.000000"),
            ("01:30 +0530", "01:30:00.000000"),
            ("01:30 -15:59:59", "01:30:00.000000"),
            ("01:30:60", "01:31:00.000000"),
            ("1230 pm", "12:30:00.000000"),
            ("0130 pm", "13:30:00.000000"),
            ("12:00 am", "00:00:00.000000"),
            ("0:00 pm", "12:00:00.000000"),
            ("1:30am", "01:30:00.000000"),
            ("12:30:15.5 am", "00:30:15.500000"),
            ("01:30 +05:30", "01:30:00.000000"),
            ("01:30-08", "01:30:00.000000"),
            ("01:30 Z", "01:30:00.000000"),
            ("01:30:00 UTC", "01:30:00.000000"),
            ("01:30 BC", "01:30:00.000000"),
            ("T0130", "01:30:00.000000"),
            ("T01:30", "01:30:00.000000"),
            ("2026-01-01 01:30", "01:30:00.000000"),
            ("allballs", "00:00:00.000000"),
        ] {
            assert_eq!(canonical_time(text).as_deref(), Ok(want), "{text}");
        }
    }

    #[test]
    fn text_that_is_no_time_is_22007_and_a_field_out_of_range_22008() {
        for text in [
            "1",
            "12",
            "123",
            "12345",
            "1234567",
            "",
            "  ",
            "1.5",
            "-01:30",
            "01:30 foo",
            "2026-01-01",
            "2026-01-01 0130",
            "epoch",
            "01:30 America/New_York",
            "0130.",
            "01:30+1:2:3:4",
        ] {
            assert_eq!(parse_time(text), Err(TimeTextError::Syntax), "{text}");
        }
        for text in ["01:60", "25:00", "13:00 pm", "24:00:01", "01:30:61"] {
            assert_eq!(parse_time(text), Err(TimeTextError::Range), "{text}");
        }
        for text in ["01:30 +16", "01:30 -16", "01:30 +14:60", "01:30 +25"] {
            assert_eq!(parse_time(text), Err(TimeTextError::ZoneRange), "{text}");
        }
        assert_eq!(
            TimeTextError::ZoneRange
                .for_text("01:30 +16", "")
                .sqlstate(),
            "22009"
        );
        assert_eq!(TimeTextError::Syntax.for_text("1", "").sqlstate(), "22007");
        assert_eq!(
            TimeTextError::Range.for_text("25:00", "").sqlstate(),
            "22008"
        );
    }

    #[test]
    fn midnight_at_the_end_of_the_day_is_not_stored() {
        // PostgreSQL stores 24:00:00; Brook's times end before midnight (Arrow's Time64).
        assert_eq!(parse_time("24:00:00"), Err(TimeTextError::Range));
        assert_eq!(parse_time("23:59:59.9999999"), Err(TimeTextError::Range));
    }

    #[test]
    fn a_column_of_times_keeps_nulls_and_names_the_first_bad_row() {
        let times = time_array([Some("0130"), None, Some("1:2:3")], |_, _, _| {
            unreachable!("every text is a time")
        })
        .unwrap();
        assert_eq!(times.value(0), 5_400_000_000);
        assert!(datafusion::arrow::array::Array::is_null(&times, 1));
        assert_eq!(times.value(2), 3_723_000_000);
        let e = time_array([Some("0130"), Some("1")], |row, text, why| {
            why.for_text(text, &format!(" (row {row})"))
        })
        .unwrap_err();
        assert_eq!(
            e.to_string(),
            "invalid input syntax for type time: \"1\" (row 1)"
        );
    }
}
