//! Text to `timestamp`, `date` and `time` in PostgreSQL's forms that Arrow's parser does not
//! read (a time is read whole by `brook_common::time_text`: Arrow misread `'0130'`).
//!
//! PostgreSQL's special input `epoch` (in any case, with spaces around) is 1970-01-01
//! 00:00:00. Its other special inputs are not read here: PostgreSQL fixes `now`, `today`,
//! `tomorrow` and `yesterday` once per transaction (and a DEFAULT or a view's constant
//! when it is created), while this text is read as rows are (a COPY's rows would each get
//! another `now`); `infinity` has no value among Brook's timestamps. They stay errors.
//!
//! PostgreSQL reads `'2020-01-03 02:00'::timestamp` (no seconds) as 02:00:00; Arrow's
//! text-to-timestamp cast wants the seconds and failed ("error parsing time"). This analyzer
//! rule puts `brook_timestamp_text` under every text-to-timestamp cast
//! ([`crate::text_input`]); it completes such values to the form Arrow reads and passes every
//! other value through untouched, so the accepted language only grows. Written here because Arrow's parser has no option for it.

use crate::text_input::{result_like, text_argument, under_text_casts};
use datafusion::arrow::array::StringArray;
use datafusion::arrow::datatypes::DataType;
use datafusion::common::config::ConfigOptions;
use datafusion::common::{DataFusionError, Result};
use datafusion::logical_expr::{
    ColumnarValue, LogicalPlan, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, Volatility,
};
use datafusion::optimizer::AnalyzerRule;
use std::borrow::Cow;
use std::sync::Arc;

/// Whether `text` is the special input `epoch`.
fn is_epoch(text: &str) -> bool {
    text.trim().eq_ignore_ascii_case("epoch")
}

/// `text` as Arrow's date parser reads it: `epoch` as 1970-01-01, other text unchanged.
pub fn complete_date(text: &str) -> Cow<'_, str> {
    if is_epoch(text) {
        Cow::Owned("1970-01-01".into())
    } else {
        Cow::Borrowed(text)
    }
}

/// `text` with the seconds a `YYYY-MM-DD H[H]:MM` time lacks (`:00`, before any zone) and
/// its hour in two digits, or `epoch` as 1970-01-01 00:00:00 (`+00`: a timestamptz reads
/// the same instant); other text unchanged.
pub fn complete_timestamp(text: &str) -> Cow<'_, str> {
    if is_epoch(text) {
        return Cow::Owned("1970-01-01 00:00:00+00".into());
    }
    let t = text.trim_end();
    let b = t.as_bytes();
    if !(b.len() >= 15 && starts_with_date_and_separator(b)) {
        return Cow::Borrowed(text);
    }
    // The hour has one or two digits, then `:MM`; what follows must not be more time.
    let hour_digits = b[11..].iter().take_while(|c| c.is_ascii_digit()).count();
    if !(1..=2).contains(&hour_digits) {
        return Cow::Borrowed(text);
    }
    let colon = 11 + hour_digits;
    let minutes_ok = b.get(colon) == Some(&b':')
        && b.get(colon + 1..colon + 3)
            .is_some_and(|m| m.iter().all(u8::is_ascii_digit));
    if !minutes_ok {
        return Cow::Borrowed(text);
    }
    let end = colon + 3;
    match b.get(end) {
        None | Some(b'+' | b'-' | b'Z' | b' ') => {
            let pad = if hour_digits == 1 { "0" } else { "" };
            Cow::Owned(format!("{}{pad}{}:00{}", &t[..11], &t[11..end], &t[end..]))
        }
        Some(_) => Cow::Borrowed(text),
    }
}

/// `text` as a timestamp without time zone reads it: completed as [`complete_timestamp`]
/// does, and without a time zone after the time (`+05:30`, `-08`, `Z`, ` UTC`, a zone's
/// name), which PostgreSQL's input of that type ignores (Arrow's cast applied the offset:
/// `'2024-01-01 10:00:00+05:30'::timestamp` was 04:30).
pub fn complete_local_timestamp(text: &str) -> Cow<'_, str> {
    let completed = complete_timestamp(text);
    match zone_start(&completed) {
        Some(at) => Cow::Owned(completed[..at].trim_end().to_string()),
        None => completed,
    }
}

/// Whether `b` starts with `YYYY-MM-DD` and a space or `T` (it has 11 bytes at least).
fn starts_with_date_and_separator(b: &[u8]) -> bool {
    b.len() >= 11
        && b[..4].iter().all(u8::is_ascii_digit)
        && b[4] == b'-'
        && b[5..7].iter().all(u8::is_ascii_digit)
        && b[7] == b'-'
        && b[8..10].iter().all(u8::is_ascii_digit)
        && (b[10] == b' ' || b[10] == b'T')
}

/// Where a time zone starts after `YYYY-MM-DD[ T]HH:MM[:SS[.f]]`, if one follows (an era,
/// `BC`/`AD`, is no zone).
fn zone_start(text: &str) -> Option<usize> {
    let b = text.as_bytes();
    if !(b.len() >= 16 && starts_with_date_and_separator(b)) {
        return None;
    }
    let end = 11
        + b[11..]
            .iter()
            .take_while(|c| c.is_ascii_digit() || **c == b':' || **c == b'.')
            .count();
    if !text[11..end].contains(':') {
        return None;
    }
    let rest = text[end..].trim();
    let zone = rest.starts_with(['+', '-'])
        || rest.starts_with(|c: char| c.is_ascii_alphabetic())
            && !rest.eq_ignore_ascii_case("BC")
            && !rest.eq_ignore_ascii_case("AD");
    zone.then_some(end)
}

/// What a text-input function reads the text as.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Input {
    Timestamptz,
    Timestamp,
    Date,
    Time,
}

/// `brook_timestamptz_text(text) -> text`, `brook_timestamp_text(text) -> text` and
/// `brook_date_text(text) -> text`: the text of a cast to that type, as Arrow reads it;
/// `brook_time_text(text) -> time`: the time itself, read whole (a text that is no time
/// is the cast's error).
#[derive(Debug, PartialEq, Eq, Hash)]
struct TimestampText {
    signature: Signature,
    input: Input,
}

impl ScalarUDFImpl for TimestampText {
    fn name(&self) -> &str {
        match self.input {
            Input::Timestamptz => "brook_timestamptz_text",
            Input::Timestamp => "brook_timestamp_text",
            Input::Date => "brook_date_text",
            Input::Time => "brook_time_text",
        }
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(match self.input {
            Input::Time => DataType::Time64(datafusion::arrow::datatypes::TimeUnit::Microsecond),
            _ => DataType::Utf8,
        })
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let text = text_argument(&args.args)?;
        let complete = match self.input {
            Input::Timestamptz => complete_timestamp,
            Input::Timestamp => complete_local_timestamp,
            Input::Date => complete_date,
            Input::Time => {
                let out =
                    brook_common::time_text::time_array(&text, |_, v, why| why.for_text(v, ""))
                        .map_err(|e| DataFusionError::External(Box::new(e)))?;
                return result_like(&args.args, Arc::new(out));
            }
        };
        let out: StringArray = text.iter().map(|v| v.map(complete)).collect();
        result_like(&args.args, Arc::new(out))
    }
}

/// Whether a cast's target type is one a text-input function is for.
type TargetTest = fn(&DataType) -> bool;

/// The analyzer rule (runs after type coercion, so coercion's casts are seen too).
#[derive(Debug)]
pub struct TimestampInput {
    timestamptz: Arc<ScalarUDF>,
    timestamp: Arc<ScalarUDF>,
    date: Arc<ScalarUDF>,
    time: Arc<ScalarUDF>,
}

impl Default for TimestampInput {
    fn default() -> Self {
        let udf = |input| {
            Arc::new(ScalarUDF::new_from_impl(TimestampText {
                signature: Signature::any(1, Volatility::Immutable),
                input,
            }))
        };
        TimestampInput {
            timestamptz: udf(Input::Timestamptz),
            timestamp: udf(Input::Timestamp),
            date: udf(Input::Date),
            time: udf(Input::Time),
        }
    }
}

impl AnalyzerRule for TimestampInput {
    fn analyze(&self, plan: LogicalPlan, _config: &ConfigOptions) -> Result<LogicalPlan> {
        use datafusion::common::tree_node::Transformed;
        crate::checked::rewrite_plan_expressions(plan, true, &|e, schema| {
            let targets: [(TargetTest, &Arc<ScalarUDF>); 4] = [
                (
                    |t| matches!(t, DataType::Timestamp(_, Some(_))),
                    &self.timestamptz,
                ),
                (
                    |t| matches!(t, DataType::Timestamp(_, None)),
                    &self.timestamp,
                ),
                (|t| matches!(t, DataType::Date32), &self.date),
                (
                    |t| matches!(t, DataType::Time64(_) | DataType::Time32(_)),
                    &self.time,
                ),
            ];
            let mut out = Transformed::no(e);
            for (is_target, udf) in targets {
                let next = under_text_casts(out.data, schema, is_target, udf)?;
                out = Transformed::new(next.data, out.transformed || next.transformed, next.tnr);
            }
            Ok(out)
        })
    }

    fn name(&self) -> &str {
        "brook_timestamp_input"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_timestamp_without_time_zone_ignores_a_zone() {
        for (text, want) in [
            ("2024-01-01 10:00:00+05:30", "2024-01-01 10:00:00"),
            ("2024-01-01T10:00-08", "2024-01-01T10:00:00"),
            ("2024-01-01 10:00:00.5 +0530", "2024-01-01 10:00:00.5"),
            ("2024-01-01 10:00:00Z", "2024-01-01 10:00:00"),
            (
                "2024-01-01 10:00:00 America/New_York",
                "2024-01-01 10:00:00",
            ),
            ("2024-01-01 10:00:00", "2024-01-01 10:00:00"),
            ("2024-01-01", "2024-01-01"),
            ("2024-01-01 10:00:00 BC", "2024-01-01 10:00:00 BC"),
            ("epoch", "1970-01-01 00:00:00"),
        ] {
            assert_eq!(complete_local_timestamp(text), want, "{text}");
        }
    }

    #[test]
    fn epoch_is_read_and_the_other_special_inputs_are_not() {
        assert_eq!(complete_timestamp(" EPOCH "), "1970-01-01 00:00:00+00");
        assert_eq!(complete_date("epoch"), "1970-01-01");
        for word in ["now", "today", "infinity"] {
            assert_eq!(complete_date(word), word);
            assert_eq!(complete_timestamp(word), word);
        }
    }

    #[test]
    fn minutes_without_seconds_are_completed() {
        for (text, want) in [
            ("2020-01-03 02:00", "2020-01-03 02:00:00"),
            ("2020-01-03T2:05", "2020-01-03T02:05:00"),
            ("2020-01-03 02:00+02", "2020-01-03 02:00:00+02"),
            ("2020-01-03 02:00 ", "2020-01-03 02:00:00"),
            ("2020-01-03 02:00:07", "2020-01-03 02:00:07"),
            ("2020-01-03 02:00:07.5", "2020-01-03 02:00:07.5"),
            ("2020-01-03", "2020-01-03"),
            ("yesterd", "yesterd"),
            ("2020-01-03 0200", "2020-01-03 0200"),
        ] {
            assert_eq!(complete_timestamp(text), want, "{text}");
        }
    }
}
