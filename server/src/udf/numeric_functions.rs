//! PostgreSQL's `div(a, b)` and `width_bucket`, which DataFusion lacks. Written here
//! because no library has them; each is a few lines of arithmetic, with PostgreSQL's errors.
//!
//! - `div(a, b)`: the integer quotient of `a / b`, truncated toward zero, as a numeric of
//!   scale 0 (22012 for a zero divisor).
//! - `width_bucket(operand, low, high, count)`: the bucket, 1 to `count`, of `count`
//!   equal-width buckets from `low` to `high` (0 below, `count + 1` at or above the end; the
//!   range may run downward); 2201G for a count below 1, equal bounds, a NaN or an infinite
//!   bound. `width_bucket(operand, thresholds)`: the number of thresholds (an ascending
//!   array) at or below the operand.

use brook_common::{brook_err, BrookError};
use datafusion::arrow::array::{Array, ArrayRef, AsArray, Decimal128Array, Int32Array};
use datafusion::arrow::compute::{cast, cast_with_options, CastOptions};
use datafusion::arrow::datatypes::{DataType, Decimal128Type, Field, Float64Type, Int64Type};
use datafusion::error::{DataFusionError, Result};
use datafusion::logical_expr::{
    ColumnarValue, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, Volatility,
};
use datafusion::prelude::SessionContext;
use datafusion::scalar::ScalarValue;
use std::sync::Arc;

pub fn register(ctx: &SessionContext) {
    ctx.register_udf(ScalarUDF::new_from_impl(Div {
        signature: Signature::any(2, Volatility::Immutable),
    }));
    ctx.register_udf(ScalarUDF::new_from_impl(WidthBucket {
        signature: Signature::variadic_any(Volatility::Immutable),
    }));
}

/// `div(a, b)`.
#[derive(Debug, PartialEq, Eq, Hash)]
struct Div {
    signature: Signature,
}

/// The scale `div`'s operands are read at: a decimal's own (the larger of the two), an
/// integer's 0, and Brook's unconstrained numeric scale (10) for anything else.
fn operand_scale(t: &DataType) -> i8 {
    match t {
        DataType::Decimal128(_, s) => *s,
        t if t.is_integer() => 0,
        _ => 10,
    }
}

impl ScalarUDFImpl for Div {
    fn name(&self) -> &str {
        "div"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(DataType::Decimal128(38, 0))
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let (arrays, scalar, _) = super::argument_arrays(&args)?;
        let scale = arrays
            .iter()
            .map(|a| operand_scale(a.data_type()))
            .max()
            .unwrap_or(0);
        let at_scale = DataType::Decimal128(38, scale);
        // A value the scale cannot hold is 22003, not NULL (Arrow's safe cast).
        let exact = CastOptions {
            safe: false,
            ..Default::default()
        };
        let (a, b) = (
            cast_with_options(&arrays[0], &at_scale, &exact)?,
            cast_with_options(&arrays[1], &at_scale, &exact)?,
        );
        let (a, b) = (
            a.as_primitive::<Decimal128Type>(),
            b.as_primitive::<Decimal128Type>(),
        );
        let out = a
            .iter()
            .zip(b.iter())
            .map(|pair| match pair {
                (Some(_), Some(0)) => Err(DataFusionError::from(BrookError::DivisionByZero)),
                // Both at one scale: their quotient is the quotient of their integers.
                (Some(x), Some(y)) => Ok(Some(x / y)),
                _ => Ok(None),
            })
            .collect::<Result<Decimal128Array>>()?
            .with_precision_and_scale(38, 0)?;
        super::result_value(Arc::new(out) as ArrayRef, scalar)
    }
}

/// `width_bucket`.
#[derive(Debug, PartialEq, Eq, Hash)]
struct WidthBucket {
    signature: Signature,
}

impl ScalarUDFImpl for WidthBucket {
    fn name(&self) -> &str {
        "width_bucket"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, arg_types: &[DataType]) -> Result<DataType> {
        match arg_types.len() {
            2 | 4 => Ok(DataType::Int32),
            n => Err(DataFusionError::from(brook_err!(
                UndefinedFunction,
                "function width_bucket with {n} arguments does not exist (it takes operand, \
                 low, high, count or operand, thresholds)"
            ))),
        }
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let (arrays, scalar, _) = super::argument_arrays(&args)?;
        let float = |a: &ArrayRef| cast(a, &DataType::Float64);
        let out = if arrays.len() == 2 {
            by_thresholds(&arrays[0], &arrays[1])
        } else {
            let operand = float(&arrays[0])?;
            let operand = operand.as_primitive::<Float64Type>();
            let (low, high) = (float(&arrays[1])?, float(&arrays[2])?);
            let count = cast(&arrays[3], &DataType::Int64)?;
            let (low, high) = (
                low.as_primitive::<Float64Type>(),
                high.as_primitive::<Float64Type>(),
            );
            let count = count.as_primitive::<Int64Type>();
            (0..operand.len())
                .map(|i| {
                    if operand.is_null(i) || low.is_null(i) || high.is_null(i) || count.is_null(i) {
                        return Ok(None);
                    }
                    bucket(
                        operand.value(i),
                        low.value(i),
                        high.value(i),
                        count.value(i),
                    )
                    .map(Some)
                })
                .collect::<std::result::Result<Int32Array, BrookError>>()
        }
        .map_err(DataFusionError::from)?;
        super::result_value(Arc::new(out) as ArrayRef, scalar)
    }
}

fn bucket_error(message: &str) -> BrookError {
    brook_err!(WidthBucketArgument, "{message}")
}

/// PostgreSQL's `width_bucket_float8`.
fn bucket(operand: f64, low: f64, high: f64, count: i64) -> std::result::Result<i32, BrookError> {
    if count <= 0 {
        return Err(bucket_error("count must be greater than zero"));
    }
    let count = i32::try_from(count).map_err(|_| brook_err!(OutOfRange, "integer out of range"))?;
    if operand.is_nan() || low.is_nan() || high.is_nan() {
        return Err(bucket_error(
            "operand, lower bound, and upper bound cannot be NaN",
        ));
    }
    if !low.is_finite() || !high.is_finite() {
        return Err(bucket_error("lower and upper bounds must be finite"));
    }
    if low == high {
        return Err(bucket_error("lower bound cannot equal upper bound"));
    }
    let (below, at_or_past_end) = if low < high {
        (operand < low, operand >= high)
    } else {
        (operand > low, operand <= high)
    };
    if below {
        return Ok(0);
    }
    if at_or_past_end {
        return count
            .checked_add(1)
            .ok_or_else(|| brook_err!(OutOfRange, "integer out of range"));
    }
    // Halved when the width overflows, as PostgreSQL does.
    let fraction = if (high - low).is_finite() {
        (operand - low) / (high - low)
    } else {
        (operand / 2.0 - low / 2.0) / (high / 2.0 - low / 2.0)
    };
    // The product could round up to `count`, which would be a lie.
    let b = (f64::from(count) * fraction) as i32;
    Ok(b.min(count - 1) + 1)
}

/// The number of thresholds at or below each operand, in the thresholds' type (PostgreSQL's
/// binary search, which takes the thresholds as sorted); a fractional operand against
/// integer thresholds compares as double precision.
fn by_thresholds(
    operand: &ArrayRef,
    thresholds: &ArrayRef,
) -> std::result::Result<Int32Array, BrookError> {
    let element = match thresholds.data_type() {
        DataType::List(f) | DataType::LargeList(f) | DataType::FixedSizeList(f, _) => {
            f.data_type().clone()
        }
        other => {
            return Err(brook_err!(
                UndefinedFunction,
                "function width_bucket(..., {other}) does not exist (thresholds are an array)"
            ))
        }
    };
    if element.is_nested() {
        return Err(BrookError::Semantic {
            message: "thresholds must be one-dimensional array".into(),
            code: "2202E",
        });
    }
    let fractional = |t: &DataType| t.is_floating() || matches!(t, DataType::Decimal128(..));
    let element = if fractional(operand.data_type()) && element.is_integer() {
        DataType::Float64
    } else {
        element
    };
    let list = cast(
        thresholds,
        &DataType::List(Arc::new(Field::new_list_field(element.clone(), true))),
    )?;
    let list = list.as_list::<i32>();
    let operand = cast(operand, &element)?;
    (0..operand.len())
        .map(|i| {
            if operand.is_null(i) || list.is_null(i) {
                return Ok(None);
            }
            let t = list.value(i);
            if t.null_count() > 0 {
                return Err(brook_err!(
                    NullValueNotAllowed,
                    "thresholds array must not contain NULLs"
                ));
            }
            let x = ScalarValue::try_from_array(&operand, i)?;
            // The first threshold above the operand.
            let (mut low, mut high) = (0, t.len());
            while low < high {
                let mid = (low + high) / 2;
                let at = ScalarValue::try_from_array(&t, mid)?;
                if at.partial_cmp(&x).is_some_and(|o| o.is_le()) {
                    low = mid + 1;
                } else {
                    high = mid;
                }
            }
            i32::try_from(low)
                .map(Some)
                .map_err(|_| brook_err!(OutOfRange, "integer out of range"))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// PostgreSQL 15's answers.
    #[test]
    fn buckets_as_postgresql() {
        assert_eq!(bucket(5.3, 0.0, 10.0, 4).unwrap(), 3);
        assert_eq!(bucket(-1.0, 0.0, 10.0, 4).unwrap(), 0);
        assert_eq!(bucket(10.0, 0.0, 10.0, 4).unwrap(), 5);
        assert_eq!(bucket(0.0, 0.0, 10.0, 4).unwrap(), 1);
        assert_eq!(bucket(5.3, 10.0, 0.0, 4).unwrap(), 2);
        assert_eq!(bucket(0.0, 10.0, 0.0, 4).unwrap(), 5);
        assert_eq!(bucket(11.0, 10.0, 0.0, 4).unwrap(), 0);
        assert_eq!(bucket(1e308, -1.5e308, 1.5e308, 10).unwrap(), 9);
    }

    #[test]
    fn bad_arguments_are_2201g() {
        for (low, high, count, operand) in [
            (0.0, 10.0, 0, 1.0),
            (1.0, 1.0, 3, 1.0),
            (0.0, f64::INFINITY, 3, 1.0),
            (0.0, 10.0, 3, f64::NAN),
        ] {
            let e = bucket(operand, low, high, count).unwrap_err();
            assert_eq!(e.sqlstate(), "2201G", "{e}");
        }
        assert_eq!(
            bucket(20.0, 0.0, 10.0, i32::MAX as i64)
                .unwrap_err()
                .sqlstate(),
            "22003"
        );
    }
}
