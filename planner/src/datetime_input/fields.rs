//! The fields of a date or timestamp text as PostgreSQL's `ParseDateTime` splits them and
//! its `DecodeDateTime` reads them (DateStyle `ISO, MDY`): what [`decode`] gives the
//! module above to make a value of.

use super::{Day, Decoded, InputError, Zone, MICROS_PER_SECOND, SECONDS_PER_DAY};
use crate::zone_names::{abbreviation_minutes, iana_zone};
use chrono::{Datelike, Duration, NaiveDate};

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
pub(super) fn decode(text: &str) -> Result<Decoded, InputError> {
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
