//! Text to `timestamp`, `timestamptz`, `date` and `time` in PostgreSQL's forms, under every
//! text-to-datetime cast of a plan (an analyzer rule: [`crate::text_input`]). Dates and
//! timestamps are read by [`crate::datetime_input`] into their values, which the cast
//! then takes (`'Jan 2 2024'`, `'2000-1-1'`, `'today'` were errors); a time is read whole by
//! `brook_common::time_text` (Arrow misread `'0130'`). `now` and `today` in a constant are
//! read at the statement's start, as `now()` is; in a column's values, when they are read.

use crate::datetime_input::{self, Clock, Target};
use crate::text_input::{result_like, text_argument, under_text_casts};
use datafusion::arrow::array::{ArrayRef, StringArray};
use datafusion::arrow::datatypes::DataType;
use datafusion::common::config::ConfigOptions;
use datafusion::common::{DataFusionError, Result};
use datafusion::logical_expr::simplify::{ExprSimplifyResult, SimplifyContext};
use datafusion::logical_expr::{
    ColumnarValue, Expr, LogicalPlan, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature,
    Volatility,
};
use datafusion::optimizer::AnalyzerRule;
use datafusion::scalar::ScalarValue;
use std::sync::Arc;

/// What a text-input function reads the text as.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Input {
    Timestamptz,
    Timestamp,
    Date,
    Time,
}

/// `brook_timestamptz_text(text) -> timestamptz`, `brook_timestamp_text(text) ->
/// timestamp`, `brook_date_text(text) -> date` and `brook_time_text(text) -> time`: the text
/// of a cast to that type read as its value (of microseconds: the cast then takes it to
/// its own unit); a text that is none is the cast's error.
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
        Ok(match self.target() {
            Some(target) => datetime_input::arrow_type(target),
            None => DataType::Time64(datafusion::arrow::datatypes::TimeUnit::Microsecond),
        })
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let text = text_argument(&args.args)?;
        let Some(target) = self.target() else {
            let out = brook_common::time_text::time_array(&text, |_, v, why| why.for_text(v, ""))
                .map_err(|e| DataFusionError::External(Box::new(e)))?;
            return result_like(&args.args, Arc::new(out));
        };
        let zone = args.config_options.execution.time_zone.as_deref();
        let out = read_all(&text, target, &Clock::now(zone))?;
        result_like(&args.args, out)
    }

    /// A constant is read once, on the statement's clock (`'now'::timestamptz = now()`).
    fn simplify(&self, args: Vec<Expr>, info: &SimplifyContext) -> Result<ExprSimplifyResult> {
        let (Some(target), Some(start), [Expr::Literal(ScalarValue::Utf8(Some(text)), _)]) = (
            self.target(),
            info.query_execution_start_time(),
            args.as_slice(),
        ) else {
            return Ok(ExprSimplifyResult::Original(args));
        };
        let zone = info.config_options().execution.time_zone.as_deref();
        let clock = Clock::new(start.timestamp_micros(), zone);
        let value = read_all(&StringArray::from(vec![text.as_str()]), target, &clock)?;
        Ok(ExprSimplifyResult::Simplified(Expr::Literal(
            ScalarValue::try_from_array(&value, 0)?,
            None,
        )))
    }
}

impl TimestampText {
    /// What a date or timestamp function reads its text as; None for a time's.
    fn target(&self) -> Option<Target> {
        match self.input {
            Input::Timestamptz => Some(Target::Timestamptz),
            Input::Timestamp => Some(Target::Timestamp),
            Input::Date => Some(Target::Date),
            Input::Time => None,
        }
    }
}

/// Each text read as `target` ([`datetime_input::read_array`]); the first that is none is
/// the error PostgreSQL reports.
fn read_all(text: &StringArray, target: Target, clock: &Clock) -> Result<ArrayRef> {
    datetime_input::read_array(text, target, clock, |_, v, why| why.for_text(target, v, ""))
        .map_err(|e| DataFusionError::External(Box::new(e)))
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
            // `now` and `today` read the clock: volatile, so that a constant is not
            // evaluated by the planner before `simplify` reads it on the statement's clock
            // (a time's input reads no clock).
            let volatility = match input {
                Input::Time => Volatility::Immutable,
                _ => Volatility::Volatile,
            };
            Arc::new(ScalarUDF::new_from_impl(TimestampText {
                signature: Signature::any(1, volatility),
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
