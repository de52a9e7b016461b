//! Interval input as PostgreSQL reads it (`DecodeInterval`, `DecodeISO8601Interval`):
//! numbers with units (`1 day 2 hours`, `1.5 mons`, `3d`), a time of day (`02:03:04.5`,
//! `-08:00`, `1:30.5` is minutes and seconds), a bare number of seconds, years-months
//! (`1-2`), `@ ... ago`, and ISO 8601 (`P1Y2M3DT4H5M6S`, `P0001-02-03T04:05:06`).
//! Arrow's parser, which DataFusion uses for `INTERVAL '...'` and casts, reads the units
//! only: PostgreSQL's own output (`1 day 02:03:04`) was 22007 when read back. Written here
//! because no library reads PostgreSQL's interval syntax.
//!
//! Fractions carry down as PostgreSQL's do: a month is 30 days, a day 24 hours.

use datafusion::arrow::datatypes::IntervalMonthDayNano;

const NANOS_PER_SECOND: f64 = 1e9;
const NANOS_PER_DAY: f64 = 86_400.0 * NANOS_PER_SECOND;

/// An interval being summed: whole months and days, and the rest in nanoseconds.
#[derive(Default)]
struct Sum {
    months: f64,
    days: f64,
    nanos: f64,
}

impl Sum {
    fn add_months(&mut self, m: f64) {
        let whole = m.trunc();
        self.months += whole;
        self.add_days((m - whole) * 30.0);
    }

    /// Whole days, the fraction carried down to the microsecond (`0.9 * 30` days is 27
    /// days, not 26 days and a float's 24 hours).
    fn add_days(&mut self, d: f64) {
        let micros = (d * NANOS_PER_DAY / 1e3).round();
        let whole = (micros / (NANOS_PER_DAY / 1e3)).trunc();
        self.days += whole;
        self.nanos += (micros - whole * (NANOS_PER_DAY / 1e3)) * 1e3;
    }

    fn add(&mut self, unit: Unit, amount: f64) {
        match unit {
            // A fraction of a year (decade, ...) is whole months, rounded, as PostgreSQL's.
            Unit::Years(m) => {
                let whole = amount.trunc();
                self.months += whole * m + ((amount - whole) * m).round();
            }
            Unit::Months(m) => self.add_months(amount * m),
            Unit::Days(d) => self.add_days(amount * d),
            Unit::Seconds(s) => self.nanos += amount * s * NANOS_PER_SECOND,
        }
    }

    fn value(self, negate: bool) -> Option<IntervalMonthDayNano> {
        let sign = if negate { -1.0 } else { 1.0 };
        let months = sign * self.months;
        let days = sign * self.days;
        // Microseconds, as PostgreSQL keeps them.
        let nanos = (sign * self.nanos / 1e3).round() * 1e3;
        let fits = |v: f64, max: f64| v.is_finite() && v.abs() <= max;
        if !fits(months, i32::MAX as f64) || !fits(days, i32::MAX as f64) || !fits(nanos, 9.2e18) {
            return None;
        }
        Some(IntervalMonthDayNano::new(
            months as i32,
            days as i32,
            nanos as i64,
        ))
    }
}

#[derive(Clone, Copy)]
enum Unit {
    /// Months in one, a fraction rounded to whole months.
    Years(f64),
    Months(f64),
    Days(f64),
    Seconds(f64),
}

fn unit(word: &str) -> Option<Unit> {
    Some(match word {
        "millennium" | "millennia" | "millenniums" | "mil" | "mils" => Unit::Years(12_000.0),
        "century" | "centuries" | "cent" | "c" => Unit::Years(1_200.0),
        "decade" | "decades" | "dec" | "decs" => Unit::Years(120.0),
        "year" | "years" | "yr" | "yrs" | "y" => Unit::Years(12.0),
        "month" | "months" | "mon" | "mons" => Unit::Months(1.0),
        "week" | "weeks" | "w" => Unit::Days(7.0),
        "day" | "days" | "d" => Unit::Days(1.0),
        "hour" | "hours" | "hr" | "hrs" | "h" => Unit::Seconds(3_600.0),
        "minute" | "minutes" | "min" | "mins" | "m" => Unit::Seconds(60.0),
        "second" | "seconds" | "sec" | "secs" | "s" => Unit::Seconds(1.0),
        "millisecond" | "milliseconds" | "msec" | "msecs" | "ms" => Unit::Seconds(1e-3),
        "microsecond" | "microseconds" | "usec" | "usecs" | "us" => Unit::Seconds(1e-6),
        _ => return None,
    })
}

/// `text` as an interval, or None when it is not PostgreSQL interval input.
pub fn parse_interval(text: &str) -> Option<IntervalMonthDayNano> {
    let lower = text.trim().to_ascii_lowercase();
    if let Some(iso) = lower.strip_prefix('p') {
        return iso_8601(iso);
    }
    let body = lower.strip_prefix('@').unwrap_or(&lower);
    let tokens = tokens(body)?;
    let (tokens, ago) = match tokens.split_last() {
        Some((last, rest)) if last == "ago" => (rest.to_vec(), true),
        _ => (tokens, false),
    };
    if tokens.is_empty() {
        return None;
    }
    let mut sum = Sum::default();
    let mut i = 0;
    while i < tokens.len() {
        let t = &tokens[i];
        if t.contains(':') {
            sum.nanos += time_of_day(t)?;
            i += 1;
            continue;
        }
        if let Some((years, months)) = year_month(t) {
            sum.add_months(years * 12.0 + months);
            i += 1;
            continue;
        }
        let amount: f64 = t.parse().ok()?;
        match tokens.get(i + 1).and_then(|w| unit(w)) {
            Some(u) => {
                sum.add(u, amount);
                i += 2;
            }
            // A number without a unit is seconds (as the last field).
            None if i + 1 == tokens.len() => {
                sum.nanos += amount * NANOS_PER_SECOND;
                i += 1;
            }
            None => return None,
        }
    }
    sum.value(ago)
}

/// The words and numbers of `body`: split at white space and commas, and where digits
/// meet letters (`3d`, `1day`).
fn tokens(body: &str) -> Option<Vec<String>> {
    let mut out = Vec::new();
    for word in body.split(|c: char| c.is_whitespace() || c == ',') {
        if word.is_empty() {
            continue;
        }
        if word.contains(':') || word.bytes().all(|b| !b.is_ascii_alphabetic()) {
            out.push(word.to_string());
            continue;
        }
        let split = word.find(|c: char| c.is_ascii_alphabetic())?;
        let (number, letters) = word.split_at(split);
        if !number.is_empty() {
            out.push(number.to_string());
        }
        if !letters.bytes().all(|b| b.is_ascii_alphabetic()) {
            return None;
        }
        out.push(letters.to_string());
    }
    Some(out)
}

/// `[+-]h:m[:s[.f]]` in nanoseconds; `m:s.f` when there are two parts and the second has a
/// fraction.
fn time_of_day(t: &str) -> Option<f64> {
    let (sign, rest) = match t.as_bytes().first()? {
        b'-' => (-1.0, &t[1..]),
        b'+' => (1.0, &t[1..]),
        _ => (1.0, t),
    };
    let parts: Vec<&str> = rest.split(':').collect();
    let number = |p: &str| -> Option<f64> {
        if p.is_empty() || !p.bytes().all(|b| b.is_ascii_digit() || b == b'.') {
            return None;
        }
        p.parse().ok()
    };
    let seconds = match parts.as_slice() {
        [m, s] if s.contains('.') => number(m)? * 60.0 + number(s)?,
        [h, m] if !h.contains('.') && !m.contains('.') => number(h)? * 3_600.0 + number(m)? * 60.0,
        [h, m, s] if !h.contains('.') && !m.contains('.') => {
            number(h)? * 3_600.0 + number(m)? * 60.0 + number(s)?
        }
        _ => return None,
    };
    Some(sign * seconds * NANOS_PER_SECOND)
}

/// SQL's year-month literal `[+-]y-m`.
fn year_month(t: &str) -> Option<(f64, f64)> {
    let (sign, rest) = match t.as_bytes().first()? {
        b'-' => (-1.0, &t[1..]),
        b'+' => (1.0, &t[1..]),
        _ => (1.0, t),
    };
    let (y, m) = rest.split_once('-')?;
    let digits = |p: &str| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit());
    if !digits(y) || !digits(m) {
        return None;
    }
    Some((sign * y.parse::<f64>().ok()?, sign * m.parse::<f64>().ok()?))
}

/// ISO 8601 after its `P`: designators (`1Y2M3DT4H5M6S`, `2W`) or the alternative format
/// (`0001-02-03T04:05:06`).
fn iso_8601(s: &str) -> Option<IntervalMonthDayNano> {
    if s.is_empty() {
        return None;
    }
    let (date, time) = match s.split_once('t') {
        Some((d, t)) => (d, Some(t)),
        None => (s, None),
    };
    let mut sum = Sum::default();
    if date.contains('-') {
        let parts: Vec<&str> = date.split('-').collect();
        let [y, m, d] = parts.as_slice() else {
            return None;
        };
        sum.add_months(y.parse::<f64>().ok()? * 12.0 + m.parse::<f64>().ok()?);
        sum.add_days(d.parse().ok()?);
    } else {
        designators(date, false, &mut sum)?;
    }
    if let Some(time) = time {
        if time.contains(':') {
            sum.nanos += time_of_day(time)?;
        } else {
            designators(time, true, &mut sum)?;
        }
    }
    sum.value(false)
}

/// Numbers each followed by a designator letter: `Y M W D` before `T`, `H M S` after.
fn designators(s: &str, time: bool, sum: &mut Sum) -> Option<()> {
    let mut number = String::new();
    for c in s.chars() {
        if c.is_ascii_digit() || c == '.' || c == '-' || c == '+' {
            number.push(c);
            continue;
        }
        let amount: f64 = number.parse().ok()?;
        number.clear();
        let u = match (time, c) {
            (false, 'y') => Unit::Years(12.0),
            (false, 'm') => Unit::Months(1.0),
            (false, 'w') => Unit::Days(7.0),
            (false, 'd') => Unit::Days(1.0),
            (true, 'h') => Unit::Seconds(3_600.0),
            (true, 'm') => Unit::Seconds(60.0),
            (true, 's') => Unit::Seconds(1.0),
            _ => return None,
        };
        sum.add(u, amount);
    }
    number.is_empty().then_some(())
}

/// `text` as interval input arrow reads alike (`{months} months {days} days {nanos}
/// nanoseconds`), when it is PostgreSQL interval input.
pub fn canonical_interval_text(text: &str) -> Option<String> {
    let v = parse_interval(text)?;
    Some(format!(
        "{} months {} days {} nanoseconds",
        v.months, v.days, v.nanoseconds
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn iv(text: &str) -> (i32, i32, i64) {
        let v = parse_interval(text).unwrap_or_else(|| panic!("{text} did not parse"));
        (v.months, v.days, v.nanoseconds / 1_000)
    }

    const HOUR: i64 = 3_600_000_000;

    #[test]
    fn postgresql_output_reads_back() {
        assert_eq!(
            iv("1 day 02:03:04"),
            (0, 1, 2 * HOUR + 3 * 60_000_000 + 4_000_000)
        );
        assert_eq!(iv("-1 days -03:00:00"), (0, -1, -3 * HOUR));
        assert_eq!(
            iv("1 year 2 mons 3 days 04:05:06.5"),
            (14, 3, 4 * HOUR + 5 * 60_000_000 + 6_500_000)
        );
        assert_eq!(iv("08:00"), (0, 0, 8 * HOUR));
        assert_eq!(iv("-08:00"), (0, 0, -8 * HOUR));
        assert_eq!(iv("+05:30"), (0, 0, 5 * HOUR + 30 * 60_000_000));
        assert_eq!(iv("1:30.5"), (0, 0, 90_500_000));
    }

    #[test]
    fn units_numbers_and_fractions() {
        assert_eq!(iv("1.5 months"), (1, 15, 0));
        assert_eq!(iv("1.5 days"), (0, 1, 12 * HOUR));
        assert_eq!(iv("3d 4h"), (0, 3, 4 * HOUR));
        assert_eq!(iv("@ 1 day ago"), (0, -1, 0));
        assert_eq!(iv("90"), (0, 0, 90_000_000));
        assert_eq!(iv("1-2"), (14, 0, 0));
        assert_eq!(iv("2 weeks, 1 millisecond"), (0, 14, 1_000));
        assert_eq!(iv("1 millennium"), (12_000, 0, 0));
    }

    #[test]
    fn fractions_as_postgresql_rounds_them() {
        assert_eq!(iv("0.1 years"), (1, 0, 0));
        assert_eq!(iv("1.9 mons"), (1, 27, 0));
        assert_eq!(iv("1.999999999 seconds"), (0, 0, 2_000_000));
        assert_eq!(iv("-1 days +02:00:00"), (0, -1, 2 * HOUR));
    }

    #[test]
    fn iso_8601_forms() {
        assert_eq!(
            iv("P1Y2M3DT4H5M6S"),
            (14, 3, 4 * HOUR + 5 * 60_000_000 + 6_000_000)
        );
        assert_eq!(iv("PT1.5H"), (0, 0, 90 * 60_000_000));
        assert_eq!(iv("P2W"), (0, 14, 0));
        assert_eq!(
            iv("P0001-02-03T04:05:06"),
            (14, 3, 4 * HOUR + 5 * 60_000_000 + 6_000_000)
        );
    }

    #[test]
    fn not_intervals() {
        for bad in [
            "",
            "abc",
            "1 fortnight",
            "1:2:3:4",
            "1 day day",
            "P",
            "PT1X",
            "ago",
            "1e999 days",
        ] {
            assert!(parse_interval(bad).is_none(), "{bad}");
        }
    }
}
