//! `x ^ y` / `power(x, y)` on double precision as PostgreSQL computes it: an infinity from
//! finite operands is 22003 (`value out of range: overflow`), zero from a non-zero base
//! 22003 (`underflow`), and the powers PostgreSQL leaves undefined are 2201F. DataFusion's
//! `power` answers `inf`, `0` or `NaN` for them; the checked-arithmetic analyzer rule
//! ([`crate::checked`]) puts this function in its place when the result is `float8`.

use brook_common::{brook_err, BrookError};
use datafusion::arrow::array::{Array, AsArray, Float64Array};
use datafusion::arrow::datatypes::{DataType, Float64Type};
use datafusion::common::Result;
use datafusion::logical_expr::{
    ColumnarValue, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, Volatility,
};

/// Name of the function.
pub const CHECKED_POWER: &str = "brook_checked_power";

/// The function, to put in place of a float8 `power`.
pub fn checked_power_function() -> ScalarUDF {
    ScalarUDF::new_from_impl(CheckedPower {
        signature: Signature::exact(
            vec![DataType::Float64, DataType::Float64],
            Volatility::Immutable,
        ),
    })
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct CheckedPower {
    signature: Signature,
}

/// One power, or the error PostgreSQL raises for it.
pub fn power(x: f64, y: f64) -> std::result::Result<f64, BrookError> {
    if x == 0.0 && y < 0.0 {
        return Err(brook_err!(
            PowerArgument,
            "zero raised to a negative power is undefined"
        ));
    }
    if x < 0.0 && y.is_finite() && y.fract() != 0.0 {
        return Err(brook_err!(
            PowerArgument,
            "a negative number raised to a non-integer power yields a complex result"
        ));
    }
    let r = x.powf(y);
    if r.is_infinite() && x.is_finite() && y.is_finite() {
        return Err(brook_err!(OutOfRange, "value out of range: overflow"));
    }
    if r == 0.0 && x != 0.0 && x.is_finite() && y.is_finite() {
        return Err(brook_err!(OutOfRange, "value out of range: underflow"));
    }
    Ok(r)
}

impl ScalarUDFImpl for CheckedPower {
    fn name(&self) -> &str {
        CHECKED_POWER
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _args: &[DataType]) -> Result<DataType> {
        Ok(DataType::Float64)
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        datafusion::functions::utils::make_scalar_function(powers, vec![])(&args.args)
    }
}

/// Each power, row by row.
fn powers(
    args: &[datafusion::arrow::array::ArrayRef],
) -> Result<datafusion::arrow::array::ArrayRef> {
    let (xs, ys) = (
        args[0].as_primitive::<Float64Type>(),
        args[1].as_primitive::<Float64Type>(),
    );
    let out = (0..xs.len())
        .map(|i| {
            if xs.is_null(i) || ys.is_null(i) {
                return Ok(None);
            }
            power(xs.value(i), ys.value(i))
                .map(Some)
                .map_err(|e| datafusion::error::DataFusionError::External(Box::new(e)))
        })
        .collect::<Result<Float64Array>>()?;
    Ok(std::sync::Arc::new(out))
}

#[cfg(test)]
mod tests {
    use super::power;

    #[test]
    fn powers_postgresql_refuses() {
        assert_eq!(power(2.0, 10.0).unwrap(), 1024.0);
        assert_eq!(power(-8.0, 3.0).unwrap(), -512.0);
        assert_eq!(power(10.0, 1000.0).unwrap_err().sqlstate(), "22003");
        assert_eq!(power(10.0, -1000.0).unwrap_err().sqlstate(), "22003");
        assert_eq!(power(0.0, -1.0).unwrap_err().sqlstate(), "2201F");
        assert_eq!(power(-8.0, 0.5).unwrap_err().sqlstate(), "2201F");
        assert_eq!(power(0.0, 0.0).unwrap(), 1.0);
        assert!(power(f64::INFINITY, 2.0).unwrap().is_infinite());
    }
}
