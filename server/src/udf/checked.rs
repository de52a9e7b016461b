//! DataFusion functions whose arguments Brook checks before they run:
//! - `repeat`, `lpad`, `rpad` (the caller chooses the result's length) are bounded to
//!   PostgreSQL's largest field (1 GB): past it 54000 `requested length too large`, as
//!   PostgreSQL does, instead of allocating gigabytes per row outside any memory pool
//!   (`repeat('x', 2147483647)` allocated 2 GiB at once);
//! - `to_timestamp(seconds)` refuses seconds outside the timestamp range (22008 `timestamp
//!   out of range`) instead of saturating (`to_timestamp(1e20)` was 2262-04-11);
//! - `levenshtein(a, b)` takes strings of at most 255 characters, as PostgreSQL's
//!   `fuzzystrmatch` does (22023): its work grows with the product of the lengths, inside
//!   one call no cancel reaches (two strings of 60,000 characters ran on for 13 s after a
//!   statement timeout).
//!
//! Each wraps DataFusion's own function and checks its arguments before calling it;
//! written here because DataFusion bounds these only by their types.

use brook_common::{brook_err, BrookError};
use datafusion::arrow::array::{Array, ArrayRef, AsArray};
use datafusion::arrow::compute::{cast, kernels::length::length};
use datafusion::arrow::datatypes::{DataType, Float64Type, Int64Type};
use datafusion::error::{DataFusionError, Result};
use datafusion::execution::FunctionRegistry;
use datafusion::logical_expr::{
    ColumnarValue, ReturnFieldArgs, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature,
};
use datafusion::prelude::SessionContext;
use std::sync::Arc;

/// Seconds from the epoch that a nanosecond timestamp can hold (i64::MAX ns).
const MAX_SECONDS: f64 = 9_223_372_036.0;

/// PostgreSQL's largest field value, in bytes.
pub const MAX_FIELD_BYTES: i64 = 1 << 30;

/// What is checked of a function's arguments.
#[derive(Debug, PartialEq, Eq, Hash, Clone, Copy)]
enum Check {
    /// `repeat(s, n)`: `n` copies of `s` fit in a field.
    Repeat,
    /// `lpad/rpad(s, n [, fill])`: `n` characters of up to 4 bytes fit in a field.
    Pad,
    /// `to_timestamp(seconds)`: the seconds fit in a timestamp.
    Seconds,
    /// `levenshtein(a, b)`: both of at most [`MAX_LEVENSHTEIN_CHARS`].
    Levenshtein,
}

/// PostgreSQL's `MAX_LEVENSHTEIN_STRLEN`.
const MAX_LEVENSHTEIN_CHARS: usize = 255;

/// DataFusion's function, checked first.
#[derive(Debug, PartialEq, Eq, Hash)]
struct Checked {
    inner: Arc<ScalarUDF>,
    check: Check,
}

impl ScalarUDFImpl for Checked {
    fn name(&self) -> &str {
        self.inner.name()
    }

    fn aliases(&self) -> &[String] {
        self.inner.aliases()
    }

    fn signature(&self) -> &Signature {
        self.inner.signature()
    }

    fn return_type(&self, arg_types: &[DataType]) -> Result<DataType> {
        self.inner.return_type(arg_types)
    }

    fn return_field_from_args(
        &self,
        args: ReturnFieldArgs<'_>,
    ) -> Result<datafusion::arrow::datatypes::FieldRef> {
        self.inner.return_field_from_args(args)
    }

    fn coerce_types(&self, arg_types: &[DataType]) -> Result<Vec<DataType>> {
        self.inner.coerce_types(arg_types)
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        match self.check {
            Check::Seconds => {
                if let Some(first) = args.args.first() {
                    check_seconds(first)?;
                }
            }
            Check::Levenshtein => check_levenshtein(&args.args)?,
            growth => check_size(&args.args, growth)?,
        }
        self.inner.invoke_with_args(args)
    }
}

/// 54000 when some row would produce more than [`MAX_FIELD_BYTES`].
fn check_size(args: &[ColumnarValue], growth: Check) -> Result<()> {
    let (Some(text), Some(count)) = (args.first(), args.get(1)) else {
        return Ok(());
    };
    let rows = match (text, count) {
        (ColumnarValue::Array(a), _) | (_, ColumnarValue::Array(a)) => a.len(),
        _ => 1,
    };
    let counts: ArrayRef = cast(&count.to_array(rows)?, &DataType::Int64)?;
    let counts = counts.as_primitive::<Int64Type>();
    let bytes_per: Option<ArrayRef> = match growth {
        Check::Repeat => Some(cast(&length(&text.to_array(rows)?)?, &DataType::Int64)?),
        _ => None,
    };
    for r in 0..rows {
        if counts.is_null(r) {
            continue;
        }
        let n = counts.value(r).max(0);
        let each = match &bytes_per {
            Some(b) if b.is_valid(r) => b.as_primitive::<Int64Type>().value(r),
            Some(_) => 0,
            None => 4,
        };
        if n.saturating_mul(each) > MAX_FIELD_BYTES {
            return Err(DataFusionError::External(Box::new(BrookError::Limit {
                message: format!(
                    "requested length too large: {}() would build a value of more than 1 GB",
                    if growth == Check::Repeat {
                        "repeat"
                    } else {
                        "lpad/rpad"
                    }
                ),
                code: "54000",
            })));
        }
    }
    Ok(())
}

/// 22023 when a row's string arguments, none NULL or empty, include one longer than
/// [`MAX_LEVENSHTEIN_CHARS`] characters (a row with a NULL argument is NULL, unchecked, as
/// PostgreSQL's strict function is; with an empty one, the other's length).
fn check_levenshtein(args: &[ColumnarValue]) -> Result<()> {
    let rows = args
        .iter()
        .find_map(|a| match a {
            ColumnarValue::Array(a) => Some(a.len()),
            ColumnarValue::Scalar(_) => None,
        })
        .unwrap_or(1);
    let texts = args
        .iter()
        .map(|a| cast(&a.to_array(rows)?, &DataType::Utf8))
        .collect::<std::result::Result<Vec<_>, _>>()?;
    let texts: Vec<_> = texts.iter().map(|t| t.as_string::<i32>()).collect();
    // (A string of at most 255 characters has at most 1,020 bytes.)
    let long =
        |s: &str| s.len() > MAX_LEVENSHTEIN_CHARS && s.chars().count() > MAX_LEVENSHTEIN_CHARS;
    for r in 0..rows {
        // (PostgreSQL answers the other's length for an empty string before checking.)
        if texts.iter().any(|t| t.is_null(r) || t.value(r).is_empty()) {
            continue;
        }
        if texts.iter().any(|t| long(t.value(r))) {
            return Err(DataFusionError::External(Box::new(brook_err!(
                InvalidParameter,
                "levenshtein argument exceeds maximum length of {MAX_LEVENSHTEIN_CHARS} characters"
            ))));
        }
    }
    Ok(())
}

/// 22008 when a numeric argument lies outside the timestamp range.
fn check_seconds(arg: &ColumnarValue) -> Result<()> {
    let numeric = matches!(
        arg.data_type(),
        DataType::Float16
            | DataType::Float32
            | DataType::Float64
            | DataType::Int64
            | DataType::UInt64
            | DataType::Decimal128(..)
            | DataType::Decimal256(..)
    );
    if !numeric {
        return Ok(());
    }
    let values = cast(&arg.to_array(1)?, &DataType::Float64)?;
    let values = values.as_primitive::<Float64Type>();
    let bad = (0..values.len())
        .filter(|&i| values.is_valid(i))
        .map(|i| values.value(i))
        .find(|v| !v.is_finite() || v.abs() > MAX_SECONDS);
    match bad {
        Some(v) => Err(DataFusionError::External(Box::new(brook_err!(
            DatetimeOverflow,
            "timestamp out of range: \"{v}\""
        )))),
        None => Ok(()),
    }
}

/// Register the checked `repeat`, `lpad`, `rpad`, `levenshtein` and `to_timestamp` in place of DataFusion's
/// (`to_timestamp` as `ctx` has it, built for its configuration: sessions run in UTC).
pub fn register(ctx: &SessionContext) {
    let wrap = |inner: Arc<ScalarUDF>, check| ScalarUDF::new_from_impl(Checked { inner, check });
    ctx.register_udf(wrap(datafusion::functions::string::repeat(), Check::Repeat));
    ctx.register_udf(wrap(datafusion::functions::unicode::lpad(), Check::Pad));
    ctx.register_udf(wrap(datafusion::functions::unicode::rpad(), Check::Pad));
    ctx.register_udf(wrap(
        datafusion::functions::string::levenshtein(),
        Check::Levenshtein,
    ));
    if let Ok(inner) = ctx.udf("to_timestamp") {
        ctx.register_udf(wrap(inner, Check::Seconds));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The statements in `ok` answer one row; each of `refused` fails with `code`.
    async fn check(ok: &str, refused: &[&str], code: &str) {
        let ctx = SessionContext::new();
        register(&ctx);
        let rows = ctx.sql(ok).await.unwrap().collect().await.unwrap();
        assert_eq!(rows[0].num_rows(), 1);
        for sql in refused {
            let err = ctx.sql(sql).await.unwrap().collect().await.unwrap_err();
            assert_eq!(BrookError::from(err).sqlstate(), code, "{sql}");
        }
    }

    #[tokio::test]
    async fn huge_results_are_54000_and_small_ones_work() {
        check(
            "SELECT repeat('ab', 3), lpad('x', 3, '-'), rpad('x', 2)",
            &[
                "SELECT length(repeat('x', 2147483647))",
                "SELECT repeat(s, 600000000) FROM (VALUES ('ab'), ('c')) t(s)",
                "SELECT lpad('x', 300000000)",
            ],
            "54000",
        )
        .await;
    }

    #[tokio::test]
    async fn levenshtein_takes_at_most_255_characters() {
        check(
            "SELECT levenshtein(repeat('é', 255), repeat('e', 255)), levenshtein(NULL, repeat('x', 300))",
            &[
                "SELECT levenshtein(repeat('é', 256), 'e')",
                "SELECT levenshtein(s, 'e') FROM (VALUES ('a'), (repeat('x', 300))) t(s)",
            ],
            "22023",
        )
        .await;
    }

    #[tokio::test]
    async fn seconds_past_the_range_are_22008() {
        check(
            "SELECT to_timestamp(1700000000.5), to_timestamp('2026-01-01T00:00:00')",
            &["SELECT to_timestamp(1e20)", "SELECT to_timestamp(-1e11)"],
            "22008",
        )
        .await;
    }
}
