//! `pg_sleep(seconds)` and `pg_sleep_for(interval)`: the statement waits, then answers
//! an empty text (PostgreSQL's void: not NULL, shown empty). Clients and tests use them to hold a statement open (to try a
//! cancel or `statement_timeout`, to space out steps).
//!
//! An asynchronous function (DataFusion's `AsyncScalarUDFImpl`): the wait is a timer, not a
//! blocked thread, so sleeping statements hold none of the threads other statements run on,
//! and a cancel or a statement timeout, which drop the statement, end the wait at once.
//! Called once per row, as PostgreSQL's: the waits add up. DataFusion runs asynchronous
//! functions in select lists, WHERE and aggregate arguments; elsewhere, and in continuous
//! queries, they are 0A000.

use async_trait::async_trait;
use datafusion::arrow::array::Array;
use datafusion::arrow::datatypes::{DataType, IntervalUnit};
use datafusion::error::Result;
use datafusion::logical_expr::async_udf::{AsyncScalarUDF, AsyncScalarUDFImpl};
use datafusion::logical_expr::{
    ColumnarValue, ScalarFunctionArgs, ScalarUDFImpl, Signature, Volatility,
};
use datafusion::prelude::SessionContext;
use datafusion::scalar::ScalarValue;
use std::sync::Arc;
use std::time::Duration;

/// The longest wait one call takes (a year): longer ones are cut to it, which no client
/// can tell from waiting longer, and keeps the timer's arithmetic in range.
const LONGEST: f64 = 365.0 * 24.0 * 3600.0;

/// Register `pg_sleep` and `pg_sleep_for`.
pub fn register(ctx: &SessionContext) {
    for (name, arg) in [
        ("pg_sleep", DataType::Float64),
        (
            "pg_sleep_for",
            DataType::Interval(IntervalUnit::MonthDayNano),
        ),
    ] {
        let sleep = Sleep {
            name,
            signature: Signature::exact(vec![arg], Volatility::Volatile),
        };
        ctx.register_udf(AsyncScalarUDF::new(Arc::new(sleep)).into_scalar_udf());
    }
}

/// `pg_sleep` (seconds) or `pg_sleep_for` (an interval).
#[derive(Debug, PartialEq, Eq, Hash)]
struct Sleep {
    name: &'static str,
    signature: Signature,
}

impl ScalarUDFImpl for Sleep {
    fn name(&self) -> &str {
        self.name
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(DataType::Utf8)
    }

    /// DataFusion calls the asynchronous form below; this one only if a plan reached the
    /// function some other way.
    fn invoke_with_args(&self, _args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        Err(datafusion::error::DataFusionError::External(Box::new(
            brook_common::brook_err!(Unsupported, "{}() here", self.name),
        )))
    }
}

#[async_trait]
impl AsyncScalarUDFImpl for Sleep {
    async fn invoke_async_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let rows = args.number_rows;
        let seconds = match args.args.first() {
            Some(ColumnarValue::Scalar(v)) => rows as f64 * seconds_of(v),
            Some(ColumnarValue::Array(a)) => (0..a.len())
                .map(|i| ScalarValue::try_from_array(a, i).map(|v| seconds_of(&v)))
                .sum::<Result<f64>>()?,
            None => 0.0,
        };
        if seconds > 0.0 {
            tokio::time::sleep(Duration::from_secs_f64(seconds.min(LONGEST))).await;
        }
        let void = datafusion::arrow::array::StringArray::from(vec![""; rows]);
        Ok(ColumnarValue::Array(Arc::new(void)))
    }
}

/// The seconds one row waits: its argument, or the interval's length (a month as 30 days,
/// a day as 24 hours); none for NULL, a negative or a non-number.
fn seconds_of(v: &ScalarValue) -> f64 {
    let s = match v {
        ScalarValue::Float64(Some(s)) => *s,
        ScalarValue::IntervalMonthDayNano(Some(i)) => {
            let days = f64::from(i.months) * 30.0 + f64::from(i.days);
            days * 86_400.0 + i.nanoseconds as f64 / 1e9
        }
        _ => 0.0,
    };
    if s.is_finite() {
        s.max(0.0)
    } else if s > 0.0 {
        LONGEST
    } else {
        0.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::arrow::array::AsArray;
    use datafusion::arrow::datatypes::IntervalMonthDayNano;

    #[test]
    fn waits_are_the_argument_or_the_interval() {
        assert_eq!(seconds_of(&ScalarValue::Float64(Some(1.5))), 1.5);
        assert_eq!(seconds_of(&ScalarValue::Float64(Some(-3.0))), 0.0);
        assert_eq!(seconds_of(&ScalarValue::Float64(None)), 0.0);
        assert_eq!(seconds_of(&ScalarValue::Float64(Some(f64::NAN))), 0.0);
        assert_eq!(
            seconds_of(&ScalarValue::Float64(Some(f64::INFINITY))),
            LONGEST
        );
        let i = IntervalMonthDayNano::new(0, 1, 500_000_000);
        assert_eq!(
            seconds_of(&ScalarValue::IntervalMonthDayNano(Some(i))),
            86_400.5
        );
    }

    #[tokio::test]
    async fn a_sleep_answers_void_per_row() {
        let ctx = SessionContext::new();
        register(&ctx);
        let batches = ctx
            .sql("SELECT pg_sleep(0.01) = '' AS done FROM (VALUES (1), (2)) v(x)")
            .await
            .unwrap()
            .collect()
            .await
            .unwrap();
        let done = batches[0].column(0).as_boolean();
        assert_eq!(done.len(), 2);
        assert!(done.iter().all(|d| d == Some(true)));
    }
}
