//! `to_timestamp(text, template)` and `to_date(text, template)` read text by PostgreSQL's
//! template patterns — the ones `to_char` prints (`udf::to_char`): `to_timestamp('04/12/2026
//! 10:30', 'DD/MM/YYYY HH24:MI')`. DataFusion's functions take strftime formats (`%d/%m`)
//! and refused PostgreSQL's; a template with `%` in it still goes to them. Written here
//! because no library reads PostgreSQL's templates.
//!
//! As PostgreSQL reads outside FX mode: blanks in the input are skipped before a field and
//! where the template has a blank, a separator in the template matches any separator in the
//! input, a number ends at its width or at the first non-digit (`YYYY` reads on while
//! digits follow when a separator comes next), month and day names match in any case,
//! `MS`/`US` are the digits after the decimal point, `YY` is the year nearest 2020, and
//! input left after the template is ignored. The text is a local time of the session's
//! time zone.
//! 22007 for text that does not fit the template, 22008 for a field out of range.

use super::to_char::{parse, Pattern, Token, DAYS, MONTHS};
use brook_common::{brook_err, BrookError};
use chrono::{NaiveDate, NaiveDateTime, NaiveTime};
use datafusion::arrow::array::{ArrayRef, AsArray, TimestampMicrosecondArray};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, FieldRef};
use datafusion::error::{DataFusionError, Result};
use datafusion::execution::FunctionRegistry;
use datafusion::logical_expr::{
    ColumnarValue, ReturnFieldArgs, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature,
};
use datafusion::prelude::SessionContext;
use datafusion::scalar::ScalarValue;
use std::sync::Arc;

/// Wrap the `to_timestamp` and `to_date` `ctx` has (DataFusion's, checked).
pub fn register(ctx: &SessionContext) {
    for name in ["to_timestamp", "to_date"] {
        if let Ok(inner) = ctx.udf(name) {
            ctx.register_udf(ScalarUDF::new_from_impl(Templated { inner }));
        }
    }
}

/// DataFusion's function, but for `(text, template)` with a PostgreSQL template.
#[derive(Debug, PartialEq, Eq, Hash)]
struct Templated {
    inner: Arc<ScalarUDF>,
}

impl ScalarUDFImpl for Templated {
    fn name(&self) -> &str {
        self.inner.name()
    }

    fn aliases(&self) -> &[String] {
        self.inner.aliases()
    }

    fn signature(&self) -> &Signature {
        self.inner.signature()
    }

    fn coerce_types(&self, arg_types: &[DataType]) -> Result<Vec<DataType>> {
        self.inner.coerce_types(arg_types)
    }

    fn return_type(&self, arg_types: &[DataType]) -> Result<DataType> {
        self.inner.return_type(arg_types)
    }

    fn return_field_from_args(&self, args: ReturnFieldArgs<'_>) -> Result<FieldRef> {
        self.inner.return_field_from_args(args)
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let template = match args.args.as_slice() {
            [value, ColumnarValue::Scalar(
                ScalarValue::Utf8(Some(t))
                | ScalarValue::LargeUtf8(Some(t))
                | ScalarValue::Utf8View(Some(t)),
            )] if super::is_text(&value.data_type()) => Some(t.clone()),
            _ => None,
        };
        let Some(template) = template.filter(|t| !t.contains('%')) else {
            return self.inner.invoke_with_args(args);
        };
        let date = self.inner.name() == "to_date";
        let tokens = parse(&template);
        let (arrays, scalar, _) = super::argument_arrays(&args)?;
        let texts = cast(&arrays[0], &DataType::Utf8)?;
        let texts = texts.as_string::<i32>();
        let micros = texts
            .iter()
            .map(|t| t.map(|t| read(t, &tokens, date)).transpose())
            .collect::<std::result::Result<Vec<_>, _>>()
            .map_err(|e| DataFusionError::External(Box::new(e)))?;
        let out: ArrayRef = Arc::new(TimestampMicrosecondArray::from(micros));
        // The fields read are the local time of the session's zone (UTC by default).
        let zone = args
            .config_options
            .execution
            .time_zone
            .clone()
            .filter(|z| !brook_planner::session_time_zone::is_utc(z));
        let out = match (zone, args.return_field.data_type()) {
            (Some(z), DataType::Timestamp(_, Some(_))) => {
                brook_planner::session_time_zone::local_instants(&out, &z)?
            }
            _ => out,
        };
        // A value the result type cannot hold (nanoseconds: years 1677 to 2262) is 22008,
        // not a NULL.
        let options = datafusion::arrow::compute::CastOptions {
            safe: false,
            ..Default::default()
        };
        let out = datafusion::arrow::compute::cast_with_options(
            &out,
            args.return_field.data_type(),
            &options,
        )
        .map_err(|_| {
            DataFusionError::External(Box::new(BrookError::DatetimeOverflow(
                "timestamp out of range".into(),
            )))
        })?;
        super::result_value(out, scalar)
    }
}

/// The fields read so far.
#[derive(Debug, Default)]
struct Fields {
    year: Option<i64>,
    bc: bool,
    month: Option<u32>,
    day: Option<u32>,
    day_of_year: Option<u32>,
    julian: Option<i64>,
    hour: Option<u32>,
    twelve_hour: bool,
    pm: Option<bool>,
    minute: u32,
    second: u32,
    micros: u32,
}

/// Microseconds since the epoch of `text` read by `tokens` (midnight for a date).
fn read(text: &str, tokens: &[Token], date: bool) -> std::result::Result<i64, BrookError> {
    let mut input = Input { rest: text };
    let mut f = Fields::default();
    for (i, token) in tokens.iter().enumerate() {
        match token {
            Token::Literal(literal) => input.literal(literal),
            // Text that ends before the template leaves the other fields unset.
            Token::Field { .. } if input.rest.trim().is_empty() => break,
            Token::Field { pattern, fill, .. } => {
                // A number reads on while digits follow if a separator (or nothing)
                // follows it in the template, or FM says so.
                let open = *fill || !matches!(tokens.get(i + 1), Some(Token::Field { .. }));
                read_field(&mut input, *pattern, open, &mut f)?;
            }
        }
    }
    let at = build(&f, text)?;
    let at = if date {
        at.date().and_time(NaiveTime::MIN)
    } else {
        at
    };
    Ok(at.and_utc().timestamp_micros())
}

/// The input not read yet.
struct Input<'a> {
    rest: &'a str,
}

impl Input<'_> {
    fn skip_blanks(&mut self) {
        self.rest = self.rest.trim_start();
    }

    /// Template text: a blank skips blanks, a separator matches any one separator, other
    /// characters match themselves (or are passed over, as PostgreSQL does).
    fn literal(&mut self, literal: &str) {
        for ch in literal.chars() {
            if ch.is_whitespace() {
                self.skip_blanks();
                continue;
            }
            let Some(next) = self.rest.chars().next() else {
                return;
            };
            let separator = |c: char| !c.is_alphanumeric() && !c.is_whitespace();
            if next == ch || (separator(ch) && separator(next)) || !separator(ch) {
                self.rest = &self.rest[next.len_utf8()..];
            }
        }
    }

    /// Up to `width` digits (any number with `open`), after an optional minus sign.
    fn number(&mut self, width: usize, open: bool, pattern: &str) -> Result<i64, BrookError> {
        self.skip_blanks();
        let negative = self.rest.starts_with('-');
        let start = usize::from(negative);
        let digits = self.rest[start..]
            .bytes()
            .take_while(u8::is_ascii_digit)
            .take(if open { usize::MAX } else { width })
            .count();
        if digits == 0 {
            return Err(invalid(self.rest, pattern));
        }
        let end = start + digits;
        let n: i64 = self.rest[start..end]
            .parse()
            .map_err(|_| invalid(self.rest, pattern))?;
        self.rest = &self.rest[end..];
        Ok(if negative { -n } else { n })
    }

    /// The digits after a decimal point, as a fraction in units of 10^-`digits`.
    fn fraction(&mut self, digits: u32, pattern: &str) -> Result<u32, BrookError> {
        self.skip_blanks();
        let len = self
            .rest
            .bytes()
            .take_while(u8::is_ascii_digit)
            .take(digits as usize)
            .count();
        if len == 0 {
            return Err(invalid(self.rest, pattern));
        }
        let n: u32 = self.rest[..len]
            .parse()
            .map_err(|_| invalid(self.rest, pattern))?;
        self.rest = &self.rest[len..];
        Ok(n * 10u32.pow(digits - len as u32))
    }

    /// One of `names` (full, or its first three letters), in any case: its position.
    fn name(&mut self, names: &[&str], pattern: &str) -> Result<usize, BrookError> {
        self.skip_blanks();
        let starts = |n: &str| {
            self.rest
                .get(..n.len())
                .is_some_and(|s| s.eq_ignore_ascii_case(n))
        };
        for (i, full) in names.iter().enumerate() {
            if starts(full) {
                self.rest = &self.rest[full.len()..];
                return Ok(i);
            }
        }
        for (i, full) in names.iter().enumerate() {
            if starts(&full[..3]) {
                self.rest = &self.rest[3..];
                return Ok(i);
            }
        }
        Err(invalid(self.rest, pattern))
    }

    /// One of `words` in any case: its position.
    fn word(&mut self, words: &[&str], pattern: &str) -> Result<usize, BrookError> {
        self.skip_blanks();
        for (i, w) in words.iter().enumerate() {
            if self
                .rest
                .get(..w.len())
                .is_some_and(|s| s.eq_ignore_ascii_case(w))
            {
                self.rest = &self.rest[w.len()..];
                return Ok(i);
            }
        }
        Err(invalid(self.rest, pattern))
    }
}

/// Read one field into `f`.
fn read_field(
    input: &mut Input<'_>,
    p: Pattern,
    open: bool,
    f: &mut Fields,
) -> Result<(), BrookError> {
    let small = |n: i64| u32::try_from(n).unwrap_or(u32::MAX);
    match p {
        Pattern::Year(4) => f.year = Some(input.number(4, open, "YYYY")?),
        Pattern::Year(digits) => {
            let n = input.number(digits, false, "YY")?;
            // The year nearest 2020 with those last digits, as PostgreSQL picks it.
            f.year = Some(match digits {
                1 => 2000 + n,
                2 if n < 70 => 2000 + n,
                2 => 1900 + n,
                _ if n < 100 => 2000 + n,
                _ => 1000 + n,
            });
        }
        Pattern::YearComma => {
            let thousands = input.number(3, false, "Y,YYY")?;
            input.literal(",");
            f.year = Some(thousands * 1000 + input.number(3, false, "Y,YYY")?);
        }
        Pattern::Era { .. } => {
            f.bc = input.word(&["b.c.", "bc", "a.d.", "ad"], "BC")? < 2;
        }
        Pattern::Month => f.month = Some(small(input.number(2, false, "MM")?)),
        Pattern::MonthName { .. } => f.month = Some(input.name(&MONTHS, "Month")? as u32 + 1),
        Pattern::DayName { .. } => {
            input.name(&DAYS, "Day")?;
        }
        Pattern::DayOfMonth => f.day = Some(small(input.number(2, false, "DD")?)),
        Pattern::DayOfYear => f.day_of_year = Some(small(input.number(3, false, "DDD")?)),
        Pattern::Julian => f.julian = Some(input.number(7, open, "J")?),
        Pattern::Hour24 => f.hour = Some(small(input.number(2, false, "HH24")?)),
        Pattern::Hour12 => {
            f.hour = Some(small(input.number(2, false, "HH12")?));
            f.twelve_hour = true;
        }
        Pattern::Meridiem { .. } => {
            f.pm = Some(input.word(&["a.m.", "am", "p.m.", "pm"], "AM")? >= 2);
            f.twelve_hour = true;
        }
        Pattern::Minute => f.minute = small(input.number(2, false, "MI")?),
        Pattern::Second => f.second = small(input.number(2, false, "SS")?),
        Pattern::Millisecond => f.micros = input.fraction(3, "MS")? * 1000,
        Pattern::Microsecond => f.micros = input.fraction(6, "US")?,
        Pattern::Fraction(digits) => {
            f.micros = input.fraction(digits, "FF")? * 10u32.pow(6 - digits)
        }
        Pattern::SecondsOfDay => {
            let s = input.number(5, open, "SSSS")?;
            f.hour = Some(small(s / 3600));
            f.minute = small(s / 60 % 60);
            f.second = small(s % 60);
        }
        // Read and left out, as PostgreSQL does.
        Pattern::DayOfWeek
        | Pattern::Quarter
        | Pattern::WeekOfMonth
        | Pattern::WeekOfYear
        | Pattern::Century => {
            input.number(2, false, "D")?;
        }
        // ISO week dates, Roman months and zones are not read (PostgreSQL reads them).
        Pattern::IsoYear(_)
        | Pattern::IsoWeek
        | Pattern::IsoDayOfWeek
        | Pattern::IsoDayOfYear
        | Pattern::Roman { .. }
        | Pattern::Zone { .. }
        | Pattern::ZoneHours
        | Pattern::ZoneMinutes
        | Pattern::Offset => {
            return Err(brook_err!(
                Unsupported,
                "template pattern {p:?} in to_timestamp/to_date (it reads dates, times, \
                 names and eras)"
            ))
        }
    }
    Ok(())
}

/// The timestamp the fields name.
fn build(f: &Fields, text: &str) -> Result<NaiveDateTime, BrookError> {
    let out_of_range =
        || BrookError::DatetimeOverflow(format!("date/time field value out of range: \"{text}\""));
    let date = if let Some(j) = f.julian {
        NaiveDate::from_num_days_from_ce_opt(
            i32::try_from(j - 1_721_425).map_err(|_| out_of_range())?,
        )
    } else {
        // No year: PostgreSQL's year 0 (1 BC).
        let year = f.year.unwrap_or(0);
        let year = if f.bc { 1 - year } else { year };
        let year = i32::try_from(year).map_err(|_| out_of_range())?;
        match f.day_of_year {
            Some(doy) if f.month.is_none() && f.day.is_none() => NaiveDate::from_yo_opt(year, doy),
            _ => NaiveDate::from_ymd_opt(year, f.month.unwrap_or(1), f.day.unwrap_or(1)),
        }
    }
    .ok_or_else(out_of_range)?;
    let mut hour = f.hour.unwrap_or(0);
    if f.twelve_hour {
        if !(1..=12).contains(&hour) && f.hour.is_some() {
            return Err(BrookError::InvalidDatetime(format!(
                "hour \"{hour}\" is invalid for the 12-hour clock"
            )));
        }
        hour %= 12;
        if f.pm == Some(true) {
            hour += 12;
        }
    }
    let time = NaiveTime::from_hms_micro_opt(hour, f.minute, f.second, f.micros)
        .ok_or_else(out_of_range)?;
    Ok(date.and_time(time))
}

/// 22007: the input does not fit the template at `rest`.
fn invalid(rest: &str, pattern: &str) -> BrookError {
    let near: String = rest
        .trim_start()
        .chars()
        .take_while(|c| c.is_alphanumeric())
        .take(12)
        .collect();
    BrookError::InvalidDatetime(format!("invalid value \"{near}\" for \"{pattern}\""))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ts(text: &str, template: &str) -> String {
        let micros = read(text, &parse(template), false).unwrap();
        chrono::DateTime::from_timestamp_micros(micros)
            .unwrap()
            .naive_utc()
            .to_string()
    }

    /// PostgreSQL 15's answers.
    #[test]
    fn reads_as_postgresql() {
        assert_eq!(
            ts("2026-12-04 10:11:12", "YYYY-MM-DD HH24:MI:SS"),
            "2026-12-04 10:11:12"
        );
        assert_eq!(ts("4/12/2026", "DD/MM/YYYY"), "2026-12-04 00:00:00");
        assert_eq!(ts("20261204", "YYYYMMDD"), "2026-12-04 00:00:00");
        assert_eq!(ts("04 Dec 2026", "DD Mon YYYY"), "2026-12-04 00:00:00");
        assert_eq!(
            ts("december 4, 2026", "Month DD, YYYY"),
            "2026-12-04 00:00:00"
        );
        assert_eq!(ts("10:30 pm", "HH12:MI AM"), "0000-01-01 22:30:00");
        assert_eq!(ts("12:00:01.5", "HH24:MI:SS.MS"), "0000-01-01 12:00:01.500");
        assert_eq!(ts("99-1-2", "YY-MM-DD"), "1999-01-02 00:00:00");
        assert_eq!(ts("5-03-05", "Y-MM-DD"), "2005-03-05 00:00:00");
        assert_eq!(ts("2024-03", "YYYY-MM-DD"), "2024-03-01 00:00:00");
        assert_eq!(ts("2024-03-05", "FXYYYY-MM-DD"), "2024-03-05 00:00:00");
        assert_eq!(
            ts("14:07:09.123", "HH24:MI:SS.FF3"),
            "0000-01-01 14:07:09.123"
        );
        assert_eq!(
            ts("2024年03月05日", "YYYY\"年\"MM\"月\"DD\"日\""),
            "2024-03-05 00:00:00"
        );
        assert_eq!(ts("2026 338", "YYYY DDD"), "2026-12-04 00:00:00");
        assert_eq!(
            ts("2026-12-04T10:00", "YYYY-MM-DD\"T\"HH24:MI"),
            "2026-12-04 10:00:00"
        );
    }

    #[test]
    fn text_that_does_not_fit_is_22007_and_fields_out_of_range_22008() {
        let e = read("2026-xx-04", &parse("YYYY-MM-DD"), false).unwrap_err();
        assert_eq!(e.sqlstate(), "22007", "{e}");
        let e = read("2026-13-04", &parse("YYYY-MM-DD"), false).unwrap_err();
        assert_eq!(e.sqlstate(), "22008", "{e}");
        let e = read("13:00 pm", &parse("HH12:MI AM"), false).unwrap_err();
        assert_eq!(e.sqlstate(), "22007", "{e}");
    }
}
