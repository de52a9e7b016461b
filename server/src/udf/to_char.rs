//! `to_char(timestamp | date, template)` with PostgreSQL's template patterns (`YYYY-MM-DD`,
//! `HH24:MI:SS`, `Mon`, `FMDay`, `"text"`, ...). DataFusion's `to_char` takes strftime
//! formats (`%Y`), so PostgreSQL's templates came back unchanged — `to_char(ts,
//! 'YYYY-MM-DD')` was the text `YYYY-MM-DD` for every row, a silent wrong answer (NEXMark
//! q15–q17 grouped every bid into one "day"). Written here because no library formats
//! PostgreSQL's templates.
//!
//! Patterns: `HH HH12 HH24 MI SS MS US SSSS SSSSS AM PM A.M. P.M. Y,YYY YYYY YYY YY Y IYYY
//! BC AD B.C. A.D. MONTH Month month MON Mon mon MM DAY Day day DY Dy dy DDD IDDD DD D ID W
//! WW IW CC J Q RM rm TZ tz OF`, with the `FM` prefix (no padding) and the `TH`/`th` suffix
//! (ordinal). Numeric patterns match in any case (`yyyy`), names and markers by their case,
//! as in PostgreSQL. Text in double quotes is copied (`\"` in it, or outside, is a quote),
//! and anything else is copied as it is. Sessions run in UTC: `TZ` is `UTC` for a timestamp
//! with time zone and empty for one without, `OF` `+00`. (The `I` forms of the ISO year
//! other than `IYYY` stay text.)

use brook_common::{brook_err, BrookError};
use chrono::{Datelike, NaiveDateTime, Timelike};
use datafusion::arrow::array::{Array, ArrayRef, AsArray, StringBuilder};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, TimeUnit, TimestampMicrosecondType};
use datafusion::error::{DataFusionError, Result};
use datafusion::logical_expr::{
    ColumnarValue, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, Volatility,
};
use datafusion::prelude::SessionContext;
use std::sync::Arc;

/// Replace DataFusion's `to_char` (strftime formats) with PostgreSQL's.
pub fn register(ctx: &SessionContext) {
    ctx.register_udf(ScalarUDF::new_from_impl(ToChar {
        signature: Signature::user_defined(Volatility::Immutable),
    }));
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct ToChar {
    signature: Signature,
}

impl ScalarUDFImpl for ToChar {
    fn name(&self) -> &str {
        "to_char"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn coerce_types(&self, arg_types: &[DataType]) -> Result<Vec<DataType>> {
        let [value, template] = arg_types else {
            return Err(DataFusionError::Plan(
                "to_char takes a value and a template".into(),
            ));
        };
        let value = match value {
            DataType::Timestamp(_, tz) => DataType::Timestamp(TimeUnit::Microsecond, tz.clone()),
            DataType::Date32 | DataType::Date64 => DataType::Date32,
            DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View | DataType::Null => {
                DataType::Timestamp(TimeUnit::Microsecond, None)
            }
            other => {
                let what = if other.is_numeric() {
                    "a number (templates such as 999.9)".to_string()
                } else {
                    other.to_string()
                };
                return Err(DataFusionError::External(Box::new(brook_err!(
                    Unsupported,
                    "to_char of {what} (to_char formats timestamps and dates)"
                ))));
            }
        };
        let _ = template;
        Ok(vec![value, DataType::Utf8])
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(DataType::Utf8)
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let (arrays, scalar, _) = super::argument_arrays(&args)?;
        // An instant is formatted in the zone it is labelled with (the session's).
        let label: Option<Option<datafusion::arrow::array::timezone::Tz>> =
            match arrays[0].data_type() {
                DataType::Timestamp(_, Some(z)) if !brook_planner::session_time_zone::is_utc(z) => {
                    Some(z.parse().ok())
                }
                DataType::Timestamp(_, Some(_)) => Some(None),
                _ => None,
            };
        let label_name: Option<chrono_tz::Tz> = match arrays[0].data_type() {
            DataType::Timestamp(_, Some(z)) => z.parse().ok(),
            _ => None,
        };
        let micros = cast(
            &arrays[0],
            &DataType::Timestamp(TimeUnit::Microsecond, None),
        )?;
        let micros = micros.as_primitive::<TimestampMicrosecondType>();
        let templates = cast(&arrays[1], &DataType::Utf8)?;
        let templates = templates.as_string::<i32>();
        let mut compiled: Option<(String, Vec<Token>)> = None;
        let mut out = StringBuilder::new();
        for row in 0..micros.len() {
            if micros.is_null(row) || templates.is_null(row) {
                out.append_null();
                continue;
            }
            let template = templates.value(row);
            if compiled.as_ref().is_none_or(|(t, _)| t != template) {
                compiled = Some((template.to_string(), parse(template)));
            }
            let Some((_, tokens)) = compiled.as_ref() else {
                out.append_null();
                continue;
            };
            let at = chrono::DateTime::from_timestamp_micros(micros.value(row))
                .ok_or_else(|| {
                    DataFusionError::External(Box::new(BrookError::Limit {
                        message: "timestamp out of range".into(),
                        code: "22008",
                    }))
                })?
                .naive_utc();
            let (at, zone) = match &label {
                Some(Some(tz)) => {
                    use chrono::{Offset, TimeZone};
                    let offset = tz.offset_from_utc_datetime(&at);
                    let seconds = offset.fix().local_minus_utc();
                    // A named zone's abbreviation (`CET`), else the offset as Arrow shows it.
                    let name = label_name
                        .and_then(|z| {
                            use chrono_tz::OffsetName;
                            z.offset_from_utc_datetime(&at)
                                .abbreviation()
                                .map(str::to_string)
                        })
                        .unwrap_or_else(|| offset.to_string());
                    let local = at + chrono::Duration::seconds(i64::from(seconds));
                    (local, Some(Zone { name, seconds }))
                }
                Some(None) => (
                    at,
                    Some(Zone {
                        name: "UTC".into(),
                        seconds: 0,
                    }),
                ),
                None => (at, None),
            };
            out.append_value(format(&at, tokens, zone.as_ref()));
        }
        let out: ArrayRef = Arc::new(out.finish());
        super::result_value(out, scalar)
    }
}

/// One piece of a template.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Token {
    Literal(String),
    Field {
        pattern: Pattern,
        /// `FM`: no zero or blank padding.
        fill: bool,
        /// `TH` (upper case) or `th`: the ordinal suffix.
        ordinal: Option<bool>,
    },
}

/// A template pattern. Names carry their case: upper, capitalized or lower.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Pattern {
    Hour12,
    Hour24,
    Minute,
    Second,
    Millisecond,
    Microsecond,
    SecondsOfDay,
    Meridiem {
        dots: bool,
        upper: bool,
    },
    YearComma,
    Year(usize),
    /// The ISO year's last n digits (`IYYY`: all, at least 4).
    IsoYear(usize),
    /// `FF1`..`FF6`: the first n digits of the fraction of a second.
    Fraction(u32),
    Era {
        dots: bool,
        upper: bool,
    },
    MonthName {
        case: Case,
        short: bool,
    },
    Month,
    DayName {
        case: Case,
        short: bool,
    },
    DayOfYear,
    IsoDayOfYear,
    DayOfMonth,
    DayOfWeek,
    IsoDayOfWeek,
    WeekOfMonth,
    WeekOfYear,
    IsoWeek,
    Century,
    Julian,
    Quarter,
    Roman {
        upper: bool,
    },
    Zone {
        upper: bool,
    },
    /// `TZH` / `TZM`: the offset's hours (signed) / minutes.
    ZoneHours,
    ZoneMinutes,
    Offset,
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Case {
    Upper,
    Capital,
    Lower,
}

/// Patterns matched by case (their case says how to print), longest first among those
/// sharing a beginning.
const CASED: [(&str, Pattern); 42] = {
    use Case::*;
    use Pattern::*;
    [
        ("A.M.", meridiem(true, true)),
        ("P.M.", meridiem(true, true)),
        ("a.m.", meridiem(true, false)),
        ("p.m.", meridiem(true, false)),
        ("AM", meridiem(false, true)),
        ("PM", meridiem(false, true)),
        ("am", meridiem(false, false)),
        ("pm", meridiem(false, false)),
        ("B.C.", era(true, true)),
        ("A.D.", era(true, true)),
        ("b.c.", era(true, false)),
        ("a.d.", era(true, false)),
        ("BC", era(false, true)),
        ("AD", era(false, true)),
        ("bc", era(false, false)),
        ("ad", era(false, false)),
        ("MONTH", month_name(Upper, false)),
        ("Month", month_name(Capital, false)),
        ("month", month_name(Lower, false)),
        ("MON", month_name(Upper, true)),
        ("Mon", month_name(Capital, true)),
        ("mon", month_name(Lower, true)),
        ("DAY", day_name(Upper, false)),
        ("Day", day_name(Capital, false)),
        ("day", day_name(Lower, false)),
        ("DY", day_name(Upper, true)),
        ("Dy", day_name(Capital, true)),
        ("dy", day_name(Lower, true)),
        ("RM", Roman { upper: true }),
        ("rm", Roman { upper: false }),
        ("TZH", ZoneHours),
        ("tzh", ZoneHours),
        ("TZM", ZoneMinutes),
        ("tzm", ZoneMinutes),
        ("TZ", Zone { upper: true }),
        ("tz", Zone { upper: false }),
        ("OF", Offset),
        ("of", Offset),
        ("IDDD", IsoDayOfYear),
        ("iddd", IsoDayOfYear),
        ("ID", IsoDayOfWeek),
        ("id", IsoDayOfWeek),
    ]
};

const fn meridiem(dots: bool, upper: bool) -> Pattern {
    Pattern::Meridiem { dots, upper }
}

const fn era(dots: bool, upper: bool) -> Pattern {
    Pattern::Era { dots, upper }
}

const fn month_name(case: Case, short: bool) -> Pattern {
    Pattern::MonthName { case, short }
}

const fn day_name(case: Case, short: bool) -> Pattern {
    Pattern::DayName { case, short }
}

/// Numeric patterns, matched in upper or lower case (`YYYY`, `yyyy`; not `Yyyy`), longest
/// first among those sharing a beginning.
const NUMERIC: [(&str, Pattern); 34] = {
    use Pattern::*;
    [
        ("HH24", Hour24),
        ("HH12", Hour12),
        ("HH", Hour12),
        ("MI", Minute),
        ("SSSSS", SecondsOfDay),
        ("SSSS", SecondsOfDay),
        ("SS", Second),
        ("MS", Millisecond),
        ("US", Microsecond),
        ("Y,YYY", YearComma),
        ("YYYY", Year(4)),
        ("YYY", Year(3)),
        ("YY", Year(2)),
        ("Y", Year(1)),
        ("FF1", Fraction(1)),
        ("FF2", Fraction(2)),
        ("FF3", Fraction(3)),
        ("FF4", Fraction(4)),
        ("FF5", Fraction(5)),
        ("FF6", Fraction(6)),
        ("MM", Month),
        ("DDD", DayOfYear),
        ("DD", DayOfMonth),
        ("D", DayOfWeek),
        ("WW", WeekOfYear),
        ("W", WeekOfMonth),
        ("IW", IsoWeek),
        ("IYYY", IsoYear(4)),
        ("IYY", IsoYear(3)),
        ("IY", IsoYear(2)),
        ("I", IsoYear(1)),
        ("CC", Century),
        ("J", Julian),
        ("Q", Quarter),
    ]
};

/// The template's tokens.
pub(crate) fn parse(template: &str) -> Vec<Token> {
    let mut tokens = Vec::new();
    let mut literal = String::new();
    let mut rest = template;
    let mut fill = false;
    while let Some(c) = rest.chars().next() {
        if c == '"' {
            // Quoted text, `\"` inside it a quote.
            let mut chars = rest[1..].char_indices();
            let mut end = rest.len();
            while let Some((i, ch)) = chars.next() {
                match ch {
                    '\\' => {
                        if let Some((_, next)) = chars.next() {
                            literal.push(next);
                        }
                    }
                    '"' => {
                        end = i + 2;
                        break;
                    }
                    other => literal.push(other),
                }
            }
            rest = &rest[end.min(rest.len())..];
            continue;
        }
        // Outside quotes only `\"` is an escape (a double quote); another backslash is text.
        if rest.starts_with("\\\"") {
            literal.push('"');
            rest = &rest[2..];
            continue;
        }
        // Prefixes: FM (no padding); TM (translated names: English here, unpadded as
        // PostgreSQL prints translated ones); FX changes nothing in output.
        if let Some(prefix) = ["FM", "fm", "FX", "fx", "TM", "tm"]
            .iter()
            .find(|p| rest.starts_with(*p))
        {
            fill |= !prefix.eq_ignore_ascii_case("FX");
            rest = &rest[2..];
            continue;
        }
        let found = CASED.iter().find(|(p, _)| rest.starts_with(p)).or_else(|| {
            NUMERIC.iter().find(|(p, _)| {
                rest.starts_with(p) || rest.starts_with(p.to_ascii_lowercase().as_str())
            })
        });
        match found {
            Some((p, pattern)) => {
                if !literal.is_empty() {
                    tokens.push(Token::Literal(std::mem::take(&mut literal)));
                }
                rest = &rest[p.len()..];
                let ordinal = if rest.starts_with("TH") {
                    Some(true)
                } else if rest.starts_with("th") {
                    Some(false)
                } else {
                    None
                };
                if ordinal.is_some() {
                    rest = &rest[2..];
                }
                tokens.push(Token::Field {
                    pattern: *pattern,
                    fill,
                    ordinal,
                });
                fill = false;
            }
            None => {
                literal.push(c);
                rest = &rest[c.len_utf8()..];
            }
        }
    }
    if !literal.is_empty() {
        tokens.push(Token::Literal(literal));
    }
    tokens
}

pub(crate) const MONTHS: [&str; 12] = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
];
pub(crate) const DAYS: [&str; 7] = [
    "Sunday",
    "Monday",
    "Tuesday",
    "Wednesday",
    "Thursday",
    "Friday",
    "Saturday",
];
const ROMAN: [&str; 12] = [
    "I", "II", "III", "IV", "V", "VI", "VII", "VIII", "IX", "X", "XI", "XII",
];

/// `at` printed by the template's tokens.
/// The zone an instant is formatted in: its abbreviation (`CET`) and offset east of UTC.
struct Zone {
    name: String,
    seconds: i32,
}

impl Zone {
    /// `+01`, `-03:30`: the offset as PostgreSQL's `OF` shows it.
    fn offset(&self) -> String {
        let (sign, a) = (if self.seconds < 0 { '-' } else { '+' }, self.seconds.abs());
        if a % 3600 == 0 {
            format!("{sign}{:02}", a / 3600)
        } else {
            format!("{sign}{:02}:{:02}", a / 3600, (a / 60) % 60)
        }
    }
}

fn format(at: &NaiveDateTime, tokens: &[Token], zone: Option<&Zone>) -> String {
    let mut out = String::new();
    for t in tokens {
        match t {
            Token::Literal(s) => out.push_str(s),
            Token::Field {
                pattern,
                fill,
                ordinal,
            } => {
                let (text, number) = field(at, *pattern, *fill, zone);
                out.push_str(&text);
                if let (Some(upper), Some(n)) = (ordinal, number) {
                    out.push_str(&suffix(n, *upper));
                }
            }
        }
    }
    out
}

/// A number zero-padded to `width` (unless `fill`).
fn padded(n: i64, width: usize, fill: bool) -> String {
    if fill {
        n.to_string()
    } else if n < 0 {
        format!("-{:0width$}", -n)
    } else {
        format!("{n:0width$}")
    }
}

/// A name in `case`, blank-padded to `width` (unless `fill`).
fn named(name: &str, case: Case, width: usize, fill: bool) -> String {
    let text = match case {
        Case::Upper => name.to_uppercase(),
        Case::Capital => name.to_string(),
        Case::Lower => name.to_lowercase(),
    };
    if fill {
        text
    } else {
        format!("{text:<width$}")
    }
}

/// A field's text, and its number (for an ordinal suffix) when it is numeric.
fn field(at: &NaiveDateTime, p: Pattern, fill: bool, zone: Option<&Zone>) -> (String, Option<i64>) {
    let year = i64::from(at.year());
    // PostgreSQL prints years BC as positive numbers with BC.
    let year_abs = if year <= 0 { 1 - year } else { year };
    let num = |n: i64, width: usize| (padded(n, width, fill), Some(n));
    let hour12 = |h: u32| i64::from(if h.is_multiple_of(12) { 12 } else { h % 12 });
    match p {
        Pattern::Hour12 => num(hour12(at.hour()), 2),
        Pattern::Hour24 => num(i64::from(at.hour()), 2),
        Pattern::Minute => num(i64::from(at.minute()), 2),
        Pattern::Second => num(i64::from(at.second()), 2),
        Pattern::Millisecond => num(i64::from(at.nanosecond() / 1_000_000), 3),
        Pattern::Microsecond => num(i64::from(at.nanosecond() / 1_000), 6),
        Pattern::SecondsOfDay => num(i64::from(at.num_seconds_from_midnight()), 0),
        Pattern::Meridiem { dots, upper } => {
            let words = ["am", "pm", "a.m.", "p.m."];
            (marker(words, at.hour() >= 12, dots, upper), None)
        }
        Pattern::YearComma => {
            let text = format!("{},{:03}", year_abs / 1000, year_abs % 1000);
            (text, Some(year_abs))
        }
        Pattern::Year(4) => num(year_abs, 4),
        Pattern::Year(digits) => {
            let modulo = 10i64.pow(digits as u32);
            num(year_abs % modulo, digits)
        }
        Pattern::IsoYear(4) => num(i64::from(at.iso_week().year()), 4),
        Pattern::IsoYear(digits) => {
            let modulo = 10i64.pow(digits as u32);
            num(i64::from(at.iso_week().year()) % modulo, digits)
        }
        Pattern::Fraction(digits) => {
            let n = i64::from(at.nanosecond() / 10u32.pow(9 - digits));
            num(n, digits as usize)
        }
        Pattern::Era { dots, upper } => {
            let words = ["ad", "bc", "a.d.", "b.c."];
            (marker(words, year <= 0, dots, upper), None)
        }
        Pattern::MonthName { case, short } => {
            let name = MONTHS[at.month0() as usize];
            if short {
                (named(&name[..3], case, 3, true), None)
            } else {
                (named(name, case, 9, fill), None)
            }
        }
        Pattern::Month => num(i64::from(at.month()), 2),
        Pattern::DayName { case, short } => {
            let name = DAYS[at.weekday().num_days_from_sunday() as usize];
            if short {
                (named(&name[..3], case, 3, true), None)
            } else {
                (named(name, case, 9, fill), None)
            }
        }
        Pattern::DayOfYear => num(i64::from(at.ordinal()), 3),
        Pattern::IsoDayOfYear => {
            let week = i64::from(at.iso_week().week());
            let day = i64::from(at.weekday().number_from_monday());
            num((week - 1) * 7 + day, 3)
        }
        Pattern::DayOfMonth => num(i64::from(at.day()), 2),
        Pattern::DayOfWeek => num(i64::from(at.weekday().number_from_sunday()), 0),
        Pattern::IsoDayOfWeek => num(i64::from(at.weekday().number_from_monday()), 0),
        Pattern::WeekOfMonth => num(i64::from((at.day() - 1) / 7 + 1), 0),
        Pattern::WeekOfYear => num(i64::from((at.ordinal() - 1) / 7 + 1), 2),
        Pattern::IsoWeek => num(i64::from(at.iso_week().week()), 2),
        Pattern::Century => {
            let c = if year > 0 {
                (year + 99) / 100
            } else {
                -((year_abs + 99) / 100)
            };
            num(c, 2)
        }
        Pattern::Julian => num(i64::from(at.num_days_from_ce()) + 1_721_425, 0),
        Pattern::Quarter => num(i64::from(at.month0() / 3 + 1), 0),
        Pattern::Roman { upper } => {
            let r = ROMAN[at.month0() as usize];
            let r = if upper {
                r.to_string()
            } else {
                r.to_lowercase()
            };
            (if fill { r } else { format!("{r:<4}") }, None)
        }
        Pattern::Zone { upper } => {
            let name = zone.map_or("", |z| z.name.as_str());
            (
                if upper {
                    name.to_string()
                } else {
                    name.to_lowercase()
                },
                None,
            )
        }
        Pattern::Offset => (zone.map_or("+00".into(), Zone::offset), None),
        Pattern::ZoneHours => {
            let s = zone.map_or(0, |z| z.seconds);
            (
                format!("{}{:02}", if s < 0 { '-' } else { '+' }, s.abs() / 3600),
                None,
            )
        }
        Pattern::ZoneMinutes => {
            let s = zone.map_or(0, |z| z.seconds);
            (format!("{:02}", (s.abs() / 60) % 60), None)
        }
    }
}

/// A marker (AM/PM, AD/BC) from `words` (the first or second, without or with dots), in
/// upper or lower case.
fn marker(words: [&str; 4], second: bool, dots: bool, upper: bool) -> String {
    let word = words[usize::from(second) + 2 * usize::from(dots)];
    if upper {
        word.to_uppercase()
    } else {
        word.to_string()
    }
}

/// English ordinal suffix of `n`.
fn suffix(n: i64, upper: bool) -> String {
    let s = match (n % 100, n % 10) {
        (11..=13, _) => "th",
        (_, 1) => "st",
        (_, 2) => "nd",
        (_, 3) => "rd",
        _ => "th",
    };
    if upper {
        s.to_uppercase()
    } else {
        s.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(s: &str) -> NaiveDateTime {
        NaiveDateTime::parse_from_str(s, "%Y-%m-%d %H:%M:%S%.f").unwrap()
    }

    fn to_char(ts: &str, template: &str) -> String {
        format(&at(ts), &parse(template), None)
    }

    /// PostgreSQL 15's answers.
    #[test]
    fn templates_as_postgresql() {
        let ts = "2026-12-04 22:31:18.123456";
        assert_eq!(to_char(ts, "YYYY-MM-DD"), "2026-12-04");
        assert_eq!(
            to_char(ts, "DD Mon YYYY HH24:MI:SS"),
            "04 Dec 2026 22:31:18"
        );
        assert_eq!(to_char(ts, "FMMonth Dy"), "December Fri");
        assert_eq!(to_char(ts, "Month|Day|"), "December |Friday   |");
        assert_eq!(to_char(ts, "HH12:MI AM yyyy"), "10:31 PM 2026");
        assert_eq!(to_char(ts, "MS US"), "123 123456");
        assert_eq!(
            to_char(ts, "DDD D ID IW WW W Q CC J"),
            "338 6 5 49 49 1 4 21 2461379"
        );
        assert_eq!(to_char(ts, "DDth FMDDth"), "04th 4th");
        assert_eq!(to_char(ts, "\"Year\" YYYY, \\Q Q"), "Year 2026, \\4 4");
        assert_eq!(to_char(ts, "TZ OF IDDD IYYY SSSS"), " +00 341 2026 81078");
        assert_eq!(to_char("2024-12-30 00:00:00", "IYY|IY|I|"), "025|25|5|");
        assert_eq!(
            to_char(ts, "FF1 FF3 FF6 FXYYYY TMMonth TZH:TZM"),
            "1 123 123456 2026 December +00:00"
        );
        // Upper or lower case, not mixed: `yYyY` is four one-digit years.
        assert_eq!(to_char(ts, "yyyy yYyY Hh24 Ddd"), "2026 6666 Hh24 604");
        // Any text around the patterns, multibyte too.
        assert_eq!(to_char(ts, "YYYY\"年\"MM\"月\"é"), "2026年12月é");
        let utc = Zone {
            name: "UTC".into(),
            seconds: 0,
        };
        assert_eq!(format(&at(ts), &parse("TZ OF"), Some(&utc)), "UTC +00");
        let newfoundland = Zone {
            name: "NST".into(),
            seconds: -(3 * 3600 + 1800),
        };
        assert_eq!(
            format(&at(ts), &parse("TZ OF TZH:TZM"), Some(&newfoundland)),
            "NST -03:30 -03:30"
        );
        assert_eq!(to_char(ts, "Y,YYY YY Y RM"), "2,026 26 6 XII ");
        assert_eq!(to_char("2026-01-01 00:00:00", "HH12 am FMHH24"), "12 am 0");
    }
}
