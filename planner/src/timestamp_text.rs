//! Text to `timestamp` in PostgreSQL's forms that Arrow's parser does not read.
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
use datafusion::common::Result;
use datafusion::logical_expr::{
    ColumnarValue, LogicalPlan, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, Volatility,
};
use datafusion::optimizer::AnalyzerRule;
use std::borrow::Cow;
use std::sync::Arc;

/// `text` with the seconds a `YYYY-MM-DD H[H]:MM` time lacks (`:00`, before any zone) and
/// its hour in two digits; other text unchanged.
pub fn complete_timestamp(text: &str) -> Cow<'_, str> {
    let t = text.trim_end();
    let b = t.as_bytes();
    let date_ok = b.len() >= 15
        && b[..4].iter().all(u8::is_ascii_digit)
        && b[4] == b'-'
        && b[5..7].iter().all(u8::is_ascii_digit)
        && b[7] == b'-'
        && b[8..10].iter().all(u8::is_ascii_digit)
        && (b[10] == b' ' || b[10] == b'T');
    if !date_ok {
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

/// `brook_timestamp_text(text) -> text`.
#[derive(Debug, PartialEq, Eq, Hash)]
struct TimestampText {
    signature: Signature,
}

impl ScalarUDFImpl for TimestampText {
    fn name(&self) -> &str {
        "brook_timestamp_text"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(DataType::Utf8)
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let text = text_argument(&args.args)?;
        let out: StringArray = text.iter().map(|v| v.map(complete_timestamp)).collect();
        result_like(&args.args, Arc::new(out))
    }
}

/// The analyzer rule (runs after type coercion, so coercion's casts are seen too).
#[derive(Debug)]
pub struct TimestampInput {
    udf: Arc<ScalarUDF>,
}

impl Default for TimestampInput {
    fn default() -> Self {
        TimestampInput {
            udf: Arc::new(ScalarUDF::new_from_impl(TimestampText {
                signature: Signature::any(1, Volatility::Immutable),
            })),
        }
    }
}

impl AnalyzerRule for TimestampInput {
    fn analyze(&self, plan: LogicalPlan, _config: &ConfigOptions) -> Result<LogicalPlan> {
        crate::checked::rewrite_plan_expressions(plan, true, &|e, schema| {
            under_text_casts(
                e,
                schema,
                |t| matches!(t, DataType::Timestamp(..)),
                &self.udf,
            )
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
    fn minutes_without_seconds_are_completed() {
        for (text, want) in [
            ("2020-01-03 02:00", "2020-01-03 02:00:00"),
            ("2020-01-03T2:05", "2020-01-03T02:05:00"),
            ("2020-01-03 02:00+02", "2020-01-03 02:00:00+02"),
            ("2020-01-03 02:00 ", "2020-01-03 02:00:00"),
            ("2020-01-03 02:00:07", "2020-01-03 02:00:07"),
            ("2020-01-03 02:00:07.5", "2020-01-03 02:00:07.5"),
            ("2020-01-03", "2020-01-03"),
            ("yesterday", "yesterday"),
            ("2020-01-03 0200", "2020-01-03 0200"),
        ] {
            assert_eq!(complete_timestamp(text), want, "{text}");
        }
    }
}
