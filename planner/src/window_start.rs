//! `brook_window_start(ts, stride_micros)`: the start of the fixed-size window holding `ts`,
//! what `TUMBLE` and `HOP` compute for each row (see [`crate::windows`]).
//!
//! It is `date_bin(stride, ts)` (origin 1970-01-01) for strides without months. Written
//! here because DataFusion's `date_bin` works out each row's bin through its general
//! interval path, which was a fifth of a windowed aggregate's CPU; for microsecond
//! timestamps (Brook's) this is one integer expression per row, `ts - (ts mod stride)`
//! rounded towards minus infinity, as `date_bin` rounds. Other timestamp units go through
//! `date_bin` itself, so the answer never differs.

use datafusion::arrow::array::{Array, TimestampMicrosecondArray};
use datafusion::arrow::datatypes::{DataType, IntervalMonthDayNano};
use datafusion::common::{exec_err, plan_err, ScalarValue};
use datafusion::logical_expr::{
    ColumnarValue, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, Volatility,
};
use std::sync::Arc;

/// Name of the function.
pub const WINDOW_START: &str = "brook_window_start";

/// The function, to register on a context.
pub fn window_start_function() -> ScalarUDF {
    ScalarUDF::new_from_impl(WindowStart {
        signature: Signature::any(2, Volatility::Immutable),
    })
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct WindowStart {
    signature: Signature,
}

/// The stride argument: a positive constant count of microseconds (of any integer type:
/// PostgreSQL-style literals are `integer` when they fit).
fn stride(arg: &ColumnarValue) -> datafusion::error::Result<i64> {
    if let ColumnarValue::Scalar(s) = arg {
        if let Ok(ScalarValue::Int64(Some(s))) = s.cast_to(&DataType::Int64) {
            if s > 0 {
                return Ok(s);
            }
        }
    }
    exec_err!("{WINDOW_START}: the stride must be a positive constant of microseconds")
}

impl ScalarUDFImpl for WindowStart {
    fn name(&self) -> &str {
        WINDOW_START
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, args: &[DataType]) -> datafusion::error::Result<DataType> {
        match args {
            [t @ DataType::Timestamp(_, _), s] if s.is_integer() => Ok(t.clone()),
            [t, _] => Err(datafusion::error::DataFusionError::External(Box::new(
                brook_common::brook_err!(
                    DatatypeMismatch,
                    "window time column must be a timestamp, not {}",
                    t
                ),
            ))),
            _ => plan_err!("{WINDOW_START} takes a timestamp and a stride"),
        }
    }

    fn invoke_with_args(
        &self,
        args: ScalarFunctionArgs,
    ) -> datafusion::error::Result<ColumnarValue> {
        let [ts, s] = args.args.as_slice() else {
            return exec_err!("{WINDOW_START} takes two arguments");
        };
        let stride = stride(s)?;
        let floor = move |t: i64| t - t.rem_euclid(stride);
        match ts {
            ColumnarValue::Array(a) => {
                if let Some(micros) = a.as_any().downcast_ref::<TimestampMicrosecondArray>() {
                    let out: TimestampMicrosecondArray = micros.unary(floor);
                    return Ok(ColumnarValue::Array(Arc::new(
                        out.with_timezone_opt(micros.timezone().map(Arc::from)),
                    )));
                }
            }
            ColumnarValue::Scalar(ScalarValue::TimestampMicrosecond(v, tz)) => {
                return Ok(ColumnarValue::Scalar(ScalarValue::TimestampMicrosecond(
                    v.map(floor),
                    tz.clone(),
                )));
            }
            ColumnarValue::Scalar(_) => {}
        }
        // Other units: DataFusion's own date_bin, with the same stride.
        let interval = ScalarValue::IntervalMonthDayNano(Some(IntervalMonthDayNano::new(
            0,
            0,
            stride.saturating_mul(1_000),
        )));
        let date_bin = datafusion::functions::datetime::date_bin();
        date_bin.invoke_with_args(ScalarFunctionArgs {
            args: vec![ColumnarValue::Scalar(interval), ts.clone()],
            ..args
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::arrow::array::ArrayRef;
    use datafusion::prelude::SessionContext;
    use proptest::prelude::*;

    /// What `sql` answers over a one-column table of `ts` microseconds.
    fn answer(sql: &str, ts: &[Option<i64>]) -> Vec<Option<i64>> {
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .expect("runtime");
        rt.block_on(async {
            let ctx = SessionContext::new();
            ctx.register_udf(window_start_function());
            let col: ArrayRef = Arc::new(TimestampMicrosecondArray::from(ts.to_vec()));
            let batch = datafusion::arrow::record_batch::RecordBatch::try_from_iter([("ts", col)])
                .expect("batch");
            ctx.register_batch("t", batch).expect("table");
            let out = ctx
                .sql(sql)
                .await
                .expect("plan")
                .collect()
                .await
                .expect("run");
            out.iter()
                .flat_map(|b| {
                    let c = b.column(0);
                    let c = c
                        .as_any()
                        .downcast_ref::<TimestampMicrosecondArray>()
                        .expect("timestamps");
                    (0..c.len())
                        .map(|i| c.is_valid(i).then(|| c.value(i)))
                        .collect::<Vec<_>>()
                })
                .collect()
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(32))]
        /// The same bins as date_bin, before and after the epoch, with NULLs.
        #[test]
        fn bins_as_date_bin(
            ts in prop::collection::vec(prop::option::weighted(0.9, -10_000_000_000_000i64..10_000_000_000_000), 1..40),
            stride in prop::sample::select(vec![1i64, 7, 1_000_000, 1_500_000, 60_000_000, 86_400_000_000]),
        ) {
            let ours = answer(&format!("SELECT brook_window_start(ts, {stride}) FROM t"), &ts);
            let theirs = answer(
                &format!("SELECT date_bin(INTERVAL '{stride} microseconds', ts) FROM t"),
                &ts,
            );
            prop_assert_eq!(ours, theirs);
        }
    }

    #[test]
    fn other_units_go_through_date_bin_and_bad_strides_are_named() {
        let ctx = SessionContext::new();
        ctx.register_udf(window_start_function());
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .expect("runtime");
        let v = rt.block_on(async {
            ctx.sql("SELECT CAST(brook_window_start(arrow_cast(TIMESTAMP '2026-01-01 00:00:07', 'Timestamp(Second, None)'), 5000000) AS text)")
                .await
                .expect("plan")
                .collect()
                .await
                .expect("run")
        });
        let shown = datafusion::arrow::util::pretty::pretty_format_batches(&v)
            .expect("format")
            .to_string();
        assert!(shown.contains("2026-01-01T00:00:05"), "{shown}");
        let bad = rt.block_on(async {
            ctx.sql("SELECT brook_window_start(TIMESTAMP '2026-01-01 00:00:07', 0)")
                .await
                .expect("plan")
                .collect()
                .await
        });
        assert!(bad.unwrap_err().to_string().contains("positive constant"));
    }
}
