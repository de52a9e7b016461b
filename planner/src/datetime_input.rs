//! Date and timestamp text as PostgreSQL reads it (its `ParseDateTime` and
//! `DecodeDateTime`, DateStyle `ISO, MDY`), read into the value Brook stores: days since
//! 1970-01-01 or microseconds since 1970-01-01 00:00:00.
//!
//! Arrow's parser reads `YYYY-MM-DD[ HH:MM:SS[.f]][zone]` only, so `'2000-1-1'`, `'Jan 2
//! 2024'`, `'1/2/2024'`, `'20240102'`, `'2024-01-02 10:00 PST'` and `'today'` were errors
//! where PostgreSQL reads them, a seventh fractional digit was cut where PostgreSQL
//! rounds, and it reads timestamps through nanoseconds: `'9999-12-31'` (a common "valid
//! until further notice") and any time before 1677 or after 2262 could not be stored. This reads the fields PostgreSQL reads: dates of numbers and month names in any
//! order PostgreSQL accepts (year first when it has three digits or more, else month, day,
//! year), `YYYYMMDD`, `YYMMDD`, Julian days (`J2451545`), times with `am`/`pm`, `24:00:00`
//! and a leap second (both carried into the next day or minute), weekdays (ignored), zone
//! offsets (`+05:30`, `-0800`, `Z`), PostgreSQL's zone abbreviations and the IANA names,
//! and the special inputs `epoch`, `now`, `today`, `tomorrow`, `yesterday` and `allballs`.
//! `now` and `today` are read on the clock the caller passes (a statement's start for
//! constants, the conversion's for COPY) in the session's zone. BC dates and `infinity` are
//! 0A000 (Brook stores neither); a two-digit year is the one nearest 2020, as PostgreSQL
//! reads it. ISO text (`YYYY-MM-DD HH:MM:SS.ffffff±HH:MM`) is read by a short path.
//! Written here because no library reads PostgreSQL's date syntax.

use crate::session_time_zone::local_offset;
use crate::zone_names::{abbreviation_minutes, iana_zone};
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

/// One field of a date/time text, as PostgreSQL's `ParseDateTime` splits it.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Token<'a> {
    /// Digits alone.
    Number(&'a str),
    /// Parts joined by one separator (`-`, `/` or `.`): digits or a month's name.
    Date(&'a str, char),
    /// `H:M[:S[.f]]`.
    Time(&'a str),
    /// A zone offset: its sign (true: west) and `H[H][[:]MM[[:]SS]]`.
    Offset(bool, &'a str),
    /// `J` and a Julian day.
    Julian(&'a str),
    /// Letters (a month, weekday, zone, `am`, a special input) or a zone's IANA name.
    Word(&'a str),
}

/// The fields of `s` (lower case).
fn tokens(s: &str) -> Result<Vec<Token<'_>>, InputError> {
    let b = s.as_bytes();
    let run = |mut i: usize, ok: &dyn Fn(u8) -> bool| {
        while i < b.len() && ok(b[i]) {
            i += 1;
        }
        i
    };
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        let start = i;
        if c.is_ascii_whitespace() || c == b',' {
            i += 1;
        } else if c.is_ascii_digit() {
            i = run(i, &|c| c.is_ascii_digit());
            match b.get(i) {
                Some(b':') => {
                    i = run(i, &|c| c.is_ascii_digit() || c == b':' || c == b'.');
                    out.push(Token::Time(&s[start..i]));
                }
                Some(&sep @ (b'-' | b'/' | b'.')) => {
                    i = date_end(b, start, sep);
                    out.push(Token::Date(&s[start..i], char::from(sep)));
                }
                _ => out.push(Token::Number(&s[start..i])),
            }
        } else if c.is_ascii_alphabetic() {
            i = run(i, &|c| c.is_ascii_alphabetic());
            let word = &s[start..i];
            let next = b.get(i).copied();
            let digit_next = next.is_some_and(|c| c.is_ascii_digit());
            if word == "t" && digit_next {
                // ISO 8601's `T` between a date and its time.
            } else if let Some(end) = digit_next
                .then(|| run(i, &|c| c.is_ascii_alphanumeric()))
                .filter(|&end| iana_zone(&s[start..end]).is_some())
            {
                // A POSIX-style zone name of the IANA database (`EST5EDT`, `GMT0`).
                i = end;
                out.push(Token::Word(&s[start..i]));
            } else if word == "j" && digit_next {
                i = run(i, &|c| c.is_ascii_digit());
                out.push(Token::Julian(&s[start + 1..i]));
            } else if matches!(next, Some(b'/' | b'_'))
                && !(month_number(word).is_some() && b.get(i + 1).is_some_and(u8::is_ascii_digit))
            {
                i = run(i, &|c| c.is_ascii_alphanumeric() || b"/_+-".contains(&c));
                out.push(Token::Word(&s[start..i]));
            } else if matches!(next, Some(b'-' | b'.' | b'/'))
                && month_number(word).is_some()
                && b.get(i + 1).is_some_and(u8::is_ascii_digit)
            {
                let sep = b[i];
                i = date_end(b, start, sep);
                out.push(Token::Date(&s[start..i], char::from(sep)));
            } else {
                out.push(Token::Word(word));
            }
        } else if c == b'+' || c == b'-' {
            i += 1;
            match b.get(i) {
                Some(d) if d.is_ascii_digit() => {
                    i = run(i, &|c| c.is_ascii_digit() || c == b':');
                    out.push(Token::Offset(c == b'-', &s[start + 1..i]));
                }
                Some(a) if a.is_ascii_alphabetic() => {
                    i = run(i, &|c| c.is_ascii_alphabetic());
                    out.push(Token::Word(&s[start..i]));
                }
                _ => return Err(InputError::Syntax),
            }
        } else {
            return Err(InputError::Syntax);
        }
    }
    Ok(out)
}

/// Where a date field starting at `start` with separator `sep` ends: before a `T` that
/// joins its last digits to a time.
fn date_end(b: &[u8], start: usize, sep: u8) -> usize {
    let mut i = start;
    while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == sep) {
        let iso_t = b[i] == b't'
            && i > start
            && b[i - 1].is_ascii_digit()
            && b.get(i + 1).is_some_and(u8::is_ascii_digit);
        if iso_t {
            break;
        }
        i += 1;
    }
    i
}

/// The month `word` names (`jan`, `january`, `sept`), if it is one.
fn month_number(word: &str) -> Option<u32> {
    const MONTHS: [&str; 12] = [
        "january",
        "february",
        "march",
        "april",
        "may",
        "june",
        "july",
        "august",
        "september",
        "october",
        "november",
        "december",
    ];
    if word.len() < 3 {
        return None;
    }
    if word == "sept" {
        return Some(9);
    }
    let n = MONTHS.iter().position(|m| *m == word || m[..3] == *word)?;
    Some(n as u32 + 1)
}

/// Whether `word` names a day of the week (which PostgreSQL reads and ignores).
fn is_weekday(word: &str) -> bool {
    const DAYS: [&str; 7] = [
        "sunday",
        "monday",
        "tuesday",
        "wednesday",
        "thursday",
        "friday",
        "saturday",
    ];
    DAYS.contains(&word)
        || matches!(
            word,
            "sun"
                | "mon"
                | "tue"
                | "tues"
                | "wed"
                | "wednes"
                | "thu"
                | "thur"
                | "thurs"
                | "fri"
                | "sat"
        )
}

/// The fields read so far.
#[derive(Debug, Default)]
struct Fields<'a> {
    /// The year's digits (two or fewer: the year nearest 2020).
    year: Option<&'a str>,
    month: Option<u32>,
    day: Option<u32>,
    /// Numbers that a month's name places once all are read (`Jan 2 2024`, `2 Jan 2024`).
    loose: Vec<&'a str>,
    named_month: bool,
    /// Hour, minute, second and microseconds.
    clock: Option<(i64, i64, i64, i64)>,
    /// `pm` (true) or `am`.
    meridiem: Option<bool>,
    zone: Option<Zone>,
    special: Option<Day>,
    /// A weekday or `ad` was read (each may stand once).
    weekday: bool,
    era: bool,
}

fn number(s: &str) -> Result<i64, InputError> {
    if s.is_empty() || s.len() > 9 {
        return Err(if s.is_empty() {
            InputError::Syntax
        } else {
            InputError::Range
        });
    }
    s.parse().map_err(|_| InputError::Syntax)
}

impl<'a> Fields<'a> {
    fn has_date(&self) -> bool {
        self.year.is_some() || self.month.is_some() || self.day.is_some()
    }

    fn set_ymd(&mut self, y: &'a str, m: &'a str, d: &'a str) -> Result<(), InputError> {
        if self.has_date() {
            return Err(InputError::Syntax);
        }
        self.year = Some(y);
        self.month = Some(u32::try_from(number(m)?).map_err(|_| InputError::Range)?);
        self.day = Some(u32::try_from(number(d)?).map_err(|_| InputError::Range)?);
        Ok(())
    }

    fn date_field(&mut self, text: &'a str, sep: char) -> Result<(), InputError> {
        let parts: Vec<&str> = text.split(sep).collect();
        if parts.len() != 3 || parts.iter().any(|p| p.is_empty()) {
            return Err(InputError::Syntax);
        }
        let named = parts
            .iter()
            .position(|p| p.bytes().any(|c| c.is_ascii_alphabetic()));
        let Some(at) = named else {
            return if parts[0].len() >= 3 {
                self.set_ymd(parts[0], parts[1], parts[2])
            } else {
                // DateStyle MDY.
                self.set_ymd(parts[2], parts[0], parts[1])
            };
        };
        if self.has_date() {
            return Err(InputError::Syntax);
        }
        let month = month_number(parts[at]).ok_or(InputError::Syntax)?;
        let rest: Vec<&str> = (0..3).filter(|&i| i != at).map(|i| parts[i]).collect();
        if rest.iter().any(|p| !p.bytes().all(|c| c.is_ascii_digit())) {
            return Err(InputError::Syntax);
        }
        let (year, day) = if rest[0].len() >= 3 || at == 2 {
            (rest[0], rest[1])
        } else {
            (rest[1], rest[0])
        };
        self.year = Some(year);
        self.month = Some(month);
        self.day = Some(u32::try_from(number(day)?).map_err(|_| InputError::Range)?);
        self.named_month = true;
        Ok(())
    }

    fn number_field(&mut self, text: &'a str) -> Result<(), InputError> {
        let date_done = self.year.is_some() && self.month.is_some() && self.day.is_some();
        if !self.has_date() && !self.named_month && self.loose.is_empty() {
            match text.len() {
                8 => return self.set_ymd(&text[..4], &text[4..6], &text[6..]),
                6 => return self.set_ymd(&text[..2], &text[2..4], &text[4..]),
                _ => {}
            }
        }
        let time_digits = match text.len() {
            4 => date_done,
            // After a month's name too: `Oct 2 1999 103000`.
            6 => date_done || self.named_month,
            _ => false,
        };
        if time_digits && self.clock.is_none() {
            // `HHMM` or `HHMMSS` after a complete date.
            let second = if text.len() == 6 {
                number(&text[4..])?
            } else {
                0
            };
            self.clock = Some((number(&text[..2])?, number(&text[2..4])?, second, 0));
            return Ok(());
        }
        self.loose.push(text);
        Ok(())
    }

    fn time_field(&mut self, text: &str) -> Result<(), InputError> {
        if self.clock.is_some() {
            return Err(InputError::Syntax);
        }
        let (whole, fraction) = match text.split_once('.') {
            Some((w, f)) if f.bytes().all(|c| c.is_ascii_digit()) => (w, Some(f)),
            Some(_) => return Err(InputError::Syntax),
            None => (text, None),
        };
        let parts: Vec<&str> = whole.split(':').collect();
        let micros = match fraction {
            Some(f) if !f.is_empty() => {
                let frac: f64 = format!("0.{f}").parse().map_err(|_| InputError::Syntax)?;
                (frac * 1e6).round_ties_even() as i64
            }
            _ => 0,
        };
        self.clock = Some(match parts.as_slice() {
            [h, m, s] => (number(h)?, number(m)?, number(s)?, micros),
            // PostgreSQL reads `M:S.f` when two fields have a fraction.
            [m, s] if fraction.is_some() => (0, number(m)?, number(s)?, micros),
            [h, m] => (number(h)?, number(m)?, 0, 0),
            _ => return Err(InputError::Syntax),
        });
        Ok(())
    }

    fn offset_field(&mut self, west: bool, text: &str) -> Result<(), InputError> {
        if self.zone.is_some() {
            return Err(InputError::Syntax);
        }
        let parts: Vec<&str> = text.split(':').collect();
        let (h, m, s) = match parts.as_slice() {
            [hm] if hm.len() <= 2 => (number(hm)?, 0, 0),
            [hm] if hm.len() <= 4 => {
                let cut = hm.len() - 2;
                (number(&hm[..cut])?, number(&hm[cut..])?, 0)
            }
            // PostgreSQL reads more digits as hours: out of range.
            [_] => return Err(InputError::ZoneRange),
            [h, m] => (number(h)?, number(m)?, 0),
            [h, m, s] => (number(h)?, number(m)?, number(s)?),
            _ => return Err(InputError::Syntax),
        };
        if h > 15 || m >= 60 || s >= 60 {
            return Err(InputError::ZoneRange);
        }
        let east = (h * 3600 + m * 60 + s) as i32;
        self.zone = Some(Zone::East(if west { -east } else { east }));
        Ok(())
    }

    fn julian_field(&mut self, text: &str) -> Result<(), InputError> {
        if self.has_date() || self.special.is_some() {
            return Err(InputError::Syntax);
        }
        // Julian day 2451545 is 2000-01-01.
        let days = number(text)? - 2_451_545;
        let date = NaiveDate::from_ymd_opt(2000, 1, 1)
            .and_then(|d| d.checked_add_signed(Duration::days(days)))
            .ok_or(InputError::Range)?;
        if date.year() < 1 {
            return Err(InputError::Unsupported("BC dates"));
        }
        self.special = Some(Day::Fixed(date));
        Ok(())
    }

    fn word(&mut self, word: &str) -> Result<(), InputError> {
        let special = |f: &mut Self, day: Day| {
            if f.special.is_some() {
                return Err(InputError::Syntax);
            }
            f.special = Some(day);
            Ok(())
        };
        if let Some(m) = month_number(word) {
            if self.month.is_some() {
                return Err(InputError::Syntax);
            }
            self.month = Some(m);
            self.named_month = true;
            return Ok(());
        }
        let once = |seen: &mut bool| {
            if std::mem::replace(seen, true) {
                Err(InputError::Syntax)
            } else {
                Ok(())
            }
        };
        match word {
            _ if is_weekday(word) => once(&mut self.weekday),
            "ad" => once(&mut self.era),
            // Words PostgreSQL reads and ignores (`Jan 2 2024 at 10:00`, ISO's `T` apart).
            "at" | "on" | "t" => Ok(()),
            "bc" => Err(InputError::Unsupported("BC dates")),
            "infinity" | "+infinity" | "-infinity" => {
                Err(InputError::Unsupported("infinite dates and timestamps"))
            }
            "am" | "pm" => {
                if self.meridiem.is_some() {
                    return Err(InputError::Syntax);
                }
                self.meridiem = Some(word == "pm");
                Ok(())
            }
            // Midnight UTC.
            "allballs" => {
                if self.clock.is_some() || self.zone.is_some() {
                    return Err(InputError::Syntax);
                }
                self.clock = Some((0, 0, 0, 0));
                self.zone = Some(Zone::East(0));
                Ok(())
            }
            "epoch" => special(self, Day::Epoch),
            "now" => special(self, Day::Now),
            "today" => special(self, Day::Relative(0)),
            "tomorrow" => special(self, Day::Relative(1)),
            "yesterday" => special(self, Day::Relative(-1)),
            _ => {
                let zone = if let Some(minutes) = abbreviation_minutes(word) {
                    Zone::East((minutes * 60) as i32)
                } else if let Some(tz) = iana_zone(word) {
                    Zone::Named(tz)
                } else if word.contains('/') {
                    return Err(InputError::UnknownZone(word.into()));
                } else {
                    return Err(InputError::Syntax);
                };
                if self.zone.is_some() {
                    return Err(InputError::Syntax);
                }
                self.zone = Some(zone);
                Ok(())
            }
        }
    }

    /// The date the fields name, once every field is read.
    fn date(&mut self) -> Result<NaiveDate, InputError> {
        if !self.named_month && !self.has_date() {
            if let [a, b, c] = self.loose[..] {
                // Numbers apart (`2024 01 02`, `1 2 2024`): as a date field's parts.
                self.loose.clear();
                if a.len() >= 3 {
                    self.set_ymd(a, b, c)?;
                } else {
                    self.set_ymd(c, a, b)?;
                }
            }
        }
        if self.named_month {
            for n in std::mem::take(&mut self.loose) {
                if self.day.is_none() && n.len() <= 2 {
                    self.day = Some(number(n)? as u32);
                } else if self.year.is_none() {
                    self.year = Some(n);
                } else {
                    return Err(InputError::Syntax);
                }
            }
        }
        let (Some(y), Some(m), Some(d)) = (self.year, self.month, self.day) else {
            return Err(InputError::Syntax);
        };
        if !self.loose.is_empty() {
            return Err(InputError::Syntax);
        }
        let mut year = number(y)?;
        if y.len() <= 2 {
            year += if year < 70 { 2000 } else { 1900 };
        }
        if year == 0 {
            return Err(InputError::Range);
        }
        let year = i32::try_from(year).map_err(|_| InputError::Range)?;
        NaiveDate::from_ymd_opt(year, m, d).ok_or(InputError::Range)
    }

    /// The time of day in microseconds, `am`/`pm` applied, `24:00:00` and a leap second
    /// allowed (carried when rendered).
    fn micros(&self) -> Result<Option<i64>, InputError> {
        let (mut h, m, s, us) = match (self.clock, self.meridiem) {
            (Some(clock), _) => clock,
            // `pm` alone is noon.
            (None, Some(_)) => (0, 0, 0, 0),
            (None, None) => return Ok(None),
        };
        if let Some(pm) = self.meridiem {
            if h > 12 {
                return Err(InputError::Range);
            }
            h = h % 12 + if pm { 12 } else { 0 };
        }
        // A second of 60 (and its fraction) carries into the next minute; nothing may
        // pass 24:00:00 (PostgreSQL).
        let total = ((h * 60 + m) * 60 + s) * MICROS_PER_SECOND + us;
        if h > 24 || m >= 60 || s > 60 || total > SECONDS_PER_DAY * MICROS_PER_SECOND {
            return Err(InputError::Range);
        }
        Ok(Some(total))
    }
}

/// The date, time and zone `text` names, as PostgreSQL's `DecodeDateTime` reads them.
fn decode(text: &str) -> Result<Decoded, InputError> {
    let lower = text.to_ascii_lowercase();
    let mut f = Fields::default();
    for token in tokens(&lower)? {
        match token {
            Token::Date(t, sep) => f.date_field(t, sep)?,
            Token::Number(t) => f.number_field(t)?,
            Token::Time(t) => f.time_field(t)?,
            Token::Offset(west, t) => f.offset_field(west, t)?,
            Token::Julian(t) => f.julian_field(t)?,
            Token::Word(w) => f.word(w)?,
        }
    }
    let micros = f.micros()?;
    let day = match f.special {
        // `now` and `epoch` stand alone.
        Some(day @ (Day::Now | Day::Epoch)) => {
            if f.has_date() || !f.loose.is_empty() || micros.is_some() || f.zone.is_some() {
                return Err(InputError::Syntax);
            }
            day
        }
        Some(day) => {
            if f.has_date() || !f.loose.is_empty() {
                return Err(InputError::Syntax);
            }
            day
        }
        None => Day::Fixed(f.date()?),
    };
    Ok(Decoded {
        day,
        micros,
        zone: f.zone,
    })
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
