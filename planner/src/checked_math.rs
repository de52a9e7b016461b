//! `sqrt`, `ln`, `log` / `log10`, `log(b, x)` and `exp` on floating point as PostgreSQL
//! computes them: the square root of a negative number is 2201F, the logarithm of zero or
//! of a negative number 2201E (`log(1, x)` 22012), and an `exp` that overflows or
//! underflows 22003; `round(x)` rounds a half to the even neighbour (`round(2.5)` is 2,
//! C's `rint`, which PostgreSQL's float `round` calls). DataFusion's functions
//! answer `NaN`, `-Infinity`, `inf` or `0` for them (and an internal error for a constant
//! negative square root), and round halves away from zero (3: a wrong answer); the checked-arithmetic analyzer rule ([`crate::checked`]) puts
//! these functions in their place when the result is `float8`.

use brook_common::{brook_err, BrookError};
use datafusion::arrow::array::{Array, ArrayRef, AsArray, Float64Array};
use datafusion::arrow::datatypes::{DataType, Float64Type};
use datafusion::common::Result;
use datafusion::logical_expr::{
    ColumnarValue, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, Volatility,
};

/// The checked functions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Checked {
    Sqrt,
    Ln,
    Log10,
    LogBase,
    Exp,
    Round,
}

impl Checked {
    /// The checked function replacing DataFusion's function `name` of `arity` arguments.
    fn replacing(name: &str, arity: usize) -> Option<Checked> {
        match (name, arity) {
            ("sqrt", 1) => Some(Checked::Sqrt),
            ("ln", 1) => Some(Checked::Ln),
            ("log10" | "log", 1) => Some(Checked::Log10),
            ("log", 2) => Some(Checked::LogBase),
            ("exp", 1) => Some(Checked::Exp),
            ("round", 1) => Some(Checked::Round),
            _ => None,
        }
    }

    fn arity(self) -> usize {
        if self == Checked::LogBase {
            2
        } else {
            1
        }
    }

    fn name(self) -> &'static str {
        match self {
            Checked::Sqrt => "brook_checked_sqrt",
            Checked::Ln => "brook_checked_ln",
            Checked::Log10 => "brook_checked_log10",
            Checked::LogBase => "brook_checked_log",
            Checked::Exp => "brook_checked_exp",
            Checked::Round => "brook_round_half_even",
        }
    }

    /// The function of `x` (and `y`, the second argument of `log(b, x)`).
    fn apply(self, x: f64, y: f64) -> std::result::Result<f64, BrookError> {
        match self {
            Checked::Sqrt => sqrt(x),
            Checked::Ln => ln(x),
            Checked::Log10 => log10(x),
            Checked::LogBase => log_base(x, y),
            Checked::Exp => exp(x),
            Checked::Round => Ok(x.round_ties_even()),
        }
    }
}

/// The checked function to put in place of a float call of `name` with `arity` arguments
/// (each to be cast to float8).
pub fn checked_function_for(name: &str, arity: usize) -> Option<ScalarUDF> {
    let checked = Checked::replacing(name, arity)?;
    Some(ScalarUDF::new_from_impl(CheckedFunction {
        checked,
        signature: Signature::exact(
            vec![DataType::Float64; checked.arity()],
            Volatility::Immutable,
        ),
    }))
}

fn sqrt(x: f64) -> std::result::Result<f64, BrookError> {
    if x < 0.0 {
        return Err(brook_err!(
            PowerArgument,
            "cannot take square root of a negative number"
        ));
    }
    Ok(x.sqrt())
}

fn logarithm_argument(x: f64) -> std::result::Result<(), BrookError> {
    if x == 0.0 {
        return Err(brook_err!(
            LogarithmArgument,
            "cannot take logarithm of zero"
        ));
    }
    if x < 0.0 {
        return Err(brook_err!(
            LogarithmArgument,
            "cannot take logarithm of a negative number"
        ));
    }
    Ok(())
}

fn ln(x: f64) -> std::result::Result<f64, BrookError> {
    logarithm_argument(x)?;
    Ok(x.ln())
}

fn log10(x: f64) -> std::result::Result<f64, BrookError> {
    logarithm_argument(x)?;
    Ok(x.log10())
}

/// `log(b, x)`: the logarithm of `x` to base `b`.
fn log_base(b: f64, x: f64) -> std::result::Result<f64, BrookError> {
    logarithm_argument(b)?;
    logarithm_argument(x)?;
    if b == 1.0 {
        return Err(BrookError::DivisionByZero);
    }
    Ok(x.ln() / b.ln())
}

fn exp(x: f64) -> std::result::Result<f64, BrookError> {
    let r = x.exp();
    if r.is_infinite() && x.is_finite() {
        return Err(brook_err!(OutOfRange, "value out of range: overflow"));
    }
    if r == 0.0 && x.is_finite() {
        return Err(brook_err!(OutOfRange, "value out of range: underflow"));
    }
    Ok(r)
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct CheckedFunction {
    checked: Checked,
    signature: Signature,
}

impl ScalarUDFImpl for CheckedFunction {
    fn name(&self) -> &str {
        self.checked.name()
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _args: &[DataType]) -> Result<DataType> {
        Ok(DataType::Float64)
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let checked = self.checked;
        datafusion::functions::utils::make_scalar_function(
            move |args: &[ArrayRef]| -> Result<ArrayRef> {
                let xs = args[0].as_primitive::<Float64Type>();
                let ys = args.get(1).map(|a| a.as_primitive::<Float64Type>());
                let out = (0..xs.len())
                    .map(|i| {
                        if xs.is_null(i) || ys.is_some_and(|ys| ys.is_null(i)) {
                            return Ok(None);
                        }
                        let y = ys.map_or(0.0, |ys| ys.value(i));
                        checked
                            .apply(xs.value(i), y)
                            .map(Some)
                            .map_err(|e| datafusion::error::DataFusionError::External(Box::new(e)))
                    })
                    .collect::<Result<Float64Array>>()?;
                Ok(std::sync::Arc::new(out))
            },
            vec![],
        )(&args.args)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// PostgreSQL 15's answers.
    #[test]
    fn undefined_values_are_errors_as_in_postgresql() {
        assert_eq!(sqrt(16.0).unwrap(), 4.0);
        assert_eq!(sqrt(-1.0).unwrap_err().sqlstate(), "2201F");
        assert_eq!(ln(0.0).unwrap_err().sqlstate(), "2201E");
        assert_eq!(ln(-1.0).unwrap_err().sqlstate(), "2201E");
        assert_eq!(log10(1000.0).unwrap(), 3.0);
        assert_eq!(exp(1000.0).unwrap_err().sqlstate(), "22003");
        assert_eq!(exp(-1000.0).unwrap_err().sqlstate(), "22003");
        assert!(sqrt(f64::NAN).unwrap().is_nan());
        assert_eq!(exp(f64::NEG_INFINITY).unwrap(), 0.0);
        assert_eq!(log_base(2.0, 8.0).unwrap(), 3.0);
        assert_eq!(log_base(1.0, 8.0).unwrap_err().sqlstate(), "22012");
        assert_eq!(log_base(0.0, 8.0).unwrap_err().sqlstate(), "2201E");
        assert_eq!(log_base(-2.0, 8.0).unwrap_err().sqlstate(), "2201E");
        assert_eq!(log_base(2.0, 0.0).unwrap_err().sqlstate(), "2201E");
        for (x, rounded) in [(2.5, 2.0), (3.5, 4.0), (-2.5, -2.0), (0.5, 0.0), (2.6, 3.0)] {
            assert_eq!(Checked::Round.apply(x, 0.0).unwrap(), rounded, "round({x})");
        }
    }
}
