//! Division of numerics with PostgreSQL's result scale: `1.0 / 3` is
//! `0.33333333333333333333`, `10.0 / 4` is `2.5`, `100.0 / 3` is `33.3333333333333333`.
//!
//! Arrow divides two decimals at a scale fixed by the operand types (DataFusion gives
//! `1.0 / 3` five decimals: `0.33333`, a value PostgreSQL does not give). PostgreSQL chooses
//! each quotient's scale from its operands' values (`select_div_scale` in its `numeric.c`):
//! at least 16 significant digits, and at least the operands' scales. This planner hook
//! plans numeric `/` as [`NumericDivide`], which computes each quotient at
//! PostgreSQL's scale, rounded half away from zero as PostgreSQL rounds, and stores it at
//! one scale for the column: [`MAX_SCALE`] decimals (or the operands' scale, if more),
//! leaving 18 digits for the integer part (a larger quotient is 22003). A numeric of 20
//! decimals or more prints without trailing zeros (`pg::encode`): the value is
//! PostgreSQL's, its text can lack trailing zeros PostgreSQL prints (`2.5`, PostgreSQL
//! `2.5000000000000000`). Where PostgreSQL's scale is larger (a quotient below 0.0001), the
//! quotient is rounded at the column's scale.
//!
//! The hook is consulted as DataFusion turns SQL into a plan, so everything above a quotient
//! (a UNION, VALUES, an INSERT's column, `coalesce`) is typed from the quotient's type.
//! Written here because neither Arrow nor DataFusion has value-dependent decimal scales.

use datafusion::arrow::array::{Array, ArrayRef, AsArray, Decimal128Array};
use datafusion::arrow::datatypes::{i256, DataType, Decimal128Type};
use datafusion::arrow::error::ArrowError;
use datafusion::common::{DFSchema, ScalarValue};
use datafusion::error::{DataFusionError, Result};
use datafusion::logical_expr::expr::ScalarFunction;
use datafusion::logical_expr::planner::{ExprPlanner, PlannerResult, RawBinaryExpr};
use datafusion::logical_expr::{
    ColumnarValue, Expr, ExprSchemable, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature,
    Volatility,
};
use datafusion::sql::sqlparser::ast::BinaryOperator;
use std::sync::Arc;

/// Decimal128's largest precision.
const MAX_PRECISION: u8 = 38;
/// PostgreSQL's `NUMERIC_MIN_SIG_DIGITS`: a quotient has at least this many significant digits.
const MIN_SIG_DIGITS: i32 = 16;
/// The decimals a quotient is stored with (when its operands have fewer): PostgreSQL's
/// scale for quotients of 0.0001 and more. Wider would leave less room for the integer part
/// when a quotient meets other numerics (a UNION with `12345678901234567890.5`).
const MAX_SCALE: i32 = 20;

/// The SQL planner's hook for numeric division.
#[derive(Debug)]
pub struct NumericDivision {
    divide: Arc<ScalarUDF>,
}

impl Default for NumericDivision {
    fn default() -> Self {
        NumericDivision {
            divide: Arc::new(ScalarUDF::new_from_impl(NumericDivide {
                signature: Signature::any(2, Volatility::Immutable),
            })),
        }
    }
}

impl ExprPlanner for NumericDivision {
    fn plan_binary_op(
        &self,
        expr: RawBinaryExpr,
        schema: &DFSchema,
    ) -> Result<PlannerResult<RawBinaryExpr>> {
        if matches!(expr.op, BinaryOperator::Multiply) {
            return wide_product(expr, schema);
        }
        if !matches!(expr.op, BinaryOperator::Divide) {
            return Ok(PlannerResult::Original(expr));
        }
        let (Ok(lt), Ok(rt)) = (expr.left.get_type(schema), expr.right.get_type(schema)) else {
            return Ok(PlannerResult::Original(expr));
        };
        let decimal = |t: &DataType| matches!(t, DataType::Decimal128(..));
        let targets = (operand_type(&lt), operand_type(&rt));
        let (Some(l_to), Some(r_to)) = targets else {
            return Ok(PlannerResult::Original(expr));
        };
        if !(decimal(&lt) || decimal(&rt)) {
            return Ok(PlannerResult::Original(expr));
        }
        let l = expr.left.cast_to(&l_to, schema)?;
        let r = expr.right.cast_to(&r_to, schema)?;
        Ok(PlannerResult::Planned(Expr::ScalarFunction(
            ScalarFunction::new_udf(self.divide.clone(), vec![l, r]),
        )))
    }
}

/// A product of numerics whose scales add up to more than 38 (`(1.0 / 3) * (1.0 / 3)`, two
/// quotients of 20 decimals), which Decimal128 cannot hold and DataFusion refuses: computed
/// in 256-bit decimals and rounded to the larger operand scale (at least [`MAX_SCALE`]).
/// PostgreSQL keeps all 40 decimals; the rounding is in docs/limits.md.
fn wide_product(expr: RawBinaryExpr, schema: &DFSchema) -> Result<PlannerResult<RawBinaryExpr>> {
    let scales = match (expr.left.get_type(schema), expr.right.get_type(schema)) {
        (Ok(DataType::Decimal128(p1, s1)), Ok(DataType::Decimal128(p2, s2)))
            if i32::from(s1) + i32::from(s2) > i32::from(MAX_PRECISION) =>
        {
            ((p1, s1), (p2, s2))
        }
        _ => return Ok(PlannerResult::Original(expr)),
    };
    let ((p1, s1), (p2, s2)) = scales;
    let l = expr.left.cast_to(&DataType::Decimal256(p1, s1), schema)?;
    let r = expr.right.cast_to(&DataType::Decimal256(p2, s2), schema)?;
    let scale = i32::from(s1.max(s2)).max(MAX_SCALE) as i8;
    let product = Expr::BinaryExpr(datafusion::logical_expr::BinaryExpr::new(
        Box::new(l),
        datafusion::logical_expr::Operator::Multiply,
        Box::new(r),
    ));
    Ok(PlannerResult::Planned(product.cast_to(
        &DataType::Decimal128(MAX_PRECISION, scale),
        schema,
    )?))
}

/// The Decimal128 type (of scale ≥ 0) an operand of type `t` is divided as (an integer
/// as wide as its type); `None` for a type this hook leaves alone. The quotient's scale
/// does not depend on the operands' precision ([`result_scale`]).
fn operand_type(t: &DataType) -> Option<DataType> {
    Some(match t {
        DataType::Decimal128(_, s) if *s >= 0 => t.clone(),
        DataType::Decimal128(p, s) => {
            DataType::Decimal128((i16::from(*p) - i16::from(*s)).min(38) as u8, 0)
        }
        DataType::Int8 | DataType::UInt8 => DataType::Decimal128(3, 0),
        DataType::Int16 | DataType::UInt16 => DataType::Decimal128(5, 0),
        DataType::Int32 | DataType::UInt32 => DataType::Decimal128(10, 0),
        DataType::Int64 => DataType::Decimal128(19, 0),
        DataType::UInt64 => DataType::Decimal128(20, 0),
        _ => return None,
    })
}

/// The result scale for operands of scales s1 / s2: [`MAX_SCALE`] decimals, or the
/// operands' scale when larger.
pub(crate) fn result_scale(s1: i8, s2: i8) -> i8 {
    MAX_SCALE
        .max(i32::from(s1))
        .max(i32::from(s2))
        .clamp(0, i32::from(MAX_PRECISION)) as i8
}

/// `numeric / numeric`, computed at PostgreSQL's scale.
#[derive(Debug, PartialEq, Eq, Hash)]
struct NumericDivide {
    signature: Signature,
}

impl ScalarUDFImpl for NumericDivide {
    fn name(&self) -> &str {
        "brook_numeric_div"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, args: &[DataType]) -> Result<DataType> {
        match args {
            [DataType::Decimal128(_, s1), DataType::Decimal128(_, s2)] => {
                Ok(DataType::Decimal128(MAX_PRECISION, result_scale(*s1, *s2)))
            }
            _ => Err(DataFusionError::Internal(format!(
                "brook_numeric_div of {args:?}"
            ))),
        }
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let scalar = args
            .args
            .iter()
            .all(|a| matches!(a, ColumnarValue::Scalar(_)));
        let out_type = args.return_field.data_type().clone();
        let DataType::Decimal128(_, out_scale) = out_type else {
            return Err(DataFusionError::Internal("brook_numeric_div type".into()));
        };
        let arrays = ColumnarValue::values_to_arrays(&args.args)?;
        let out = divide_arrays(&arrays[0], &arrays[1], out_scale)?;
        let out: ArrayRef = Arc::new(out.with_precision_and_scale(MAX_PRECISION, out_scale)?);
        if scalar {
            Ok(ColumnarValue::Scalar(ScalarValue::try_from_array(&out, 0)?))
        } else {
            Ok(ColumnarValue::Array(out))
        }
    }
}

fn divide_arrays(l: &ArrayRef, r: &ArrayRef, out_scale: i8) -> Result<Decimal128Array> {
    let scale = |a: &ArrayRef| match a.data_type() {
        DataType::Decimal128(_, s) => Ok(*s),
        t => Err(DataFusionError::Internal(format!(
            "brook_numeric_div of {t}"
        ))),
    };
    let (s1, s2) = (scale(l)?, scale(r)?);
    let (l, r) = (
        l.as_primitive::<Decimal128Type>(),
        r.as_primitive::<Decimal128Type>(),
    );
    let at = |a: &Decimal128Array, i: usize| {
        let i = if a.len() == 1 { 0 } else { i };
        a.is_valid(i).then(|| a.value(i))
    };
    let len = l.len().max(r.len());
    (0..len)
        .map(|i| match (at(l, i), at(r, i)) {
            (Some(a), Some(b)) => divide_values(a, s1, b, s2, out_scale).map(Some),
            _ => Ok(None),
        })
        .collect::<std::result::Result<Decimal128Array, ArrowError>>()
        .map_err(|e| DataFusionError::ArrowError(Box::new(e), None))
}

/// The base-10000 weight and first digit of `m / 10^s` (m ≠ 0), as PostgreSQL stores a
/// numeric: `|v| = first digit · 10000^weight + ...`, first digit in 1..9999.
fn weight_and_first_digit(m: i128, s: i8) -> (i32, i128) {
    let m = m.unsigned_abs();
    let exponent = m.ilog10() as i32 - i32::from(s);
    let weight = exponent.div_euclid(4);
    let shift = i32::from(s) + 4 * weight;
    let first = if shift >= 0 {
        m / 10u128.pow(shift as u32)
    } else {
        m * 10u128.pow((-shift) as u32)
    };
    (weight, first as i128)
}

/// PostgreSQL's scale of `a / b` (`select_div_scale`), the operands' scales standing for
/// their display scales.
fn pg_div_scale(a: i128, s1: i8, b: i128, s2: i8) -> i32 {
    let (w1, d1) = if a == 0 {
        (0, 0)
    } else {
        weight_and_first_digit(a, s1)
    };
    let (w2, d2) = weight_and_first_digit(b, s2);
    let mut qweight = w1 - w2;
    if d1 <= d2 {
        qweight -= 1;
    }
    (MIN_SIG_DIGITS - qweight * 4)
        .max(i32::from(s1))
        .max(i32::from(s2))
        .clamp(0, 1000)
}

/// `(a / 10^s1) / (b / 10^s2)` at PostgreSQL's scale, stored at `out_scale`.
pub(crate) fn divide_values(
    a: i128,
    s1: i8,
    b: i128,
    s2: i8,
    out_scale: i8,
) -> Result<i128, ArrowError> {
    if b == 0 {
        return Err(ArrowError::DivideByZero);
    }
    let overflow = || ArrowError::ComputeError("value overflows numeric format".into());
    let scale = pg_div_scale(a, s1, b, s2).min(i32::from(out_scale));
    let ten = i256::from_i128(10);
    let pow = |e: i32| ten.checked_pow(e as u32).ok_or_else(overflow);
    // a·10^(scale − s1 + s2) / b is the quotient times 10^scale; scale ≥ s1 (the operands'
    // scales bound it from below, and the result type's too).
    let numerator = i256::from_i128(a)
        .checked_mul(pow(scale - i32::from(s1) + i32::from(s2))?)
        .ok_or_else(overflow)?;
    let denominator = i256::from_i128(b);
    let quotient = numerator.wrapping_div(denominator);
    let remainder = numerator.wrapping_rem(denominator);
    let twice = remainder.wrapping_abs().wrapping_mul(i256::from_i128(2));
    let rounded = if twice >= denominator.wrapping_abs() {
        if numerator.is_negative() == denominator.is_negative() {
            quotient.wrapping_add(i256::ONE)
        } else {
            quotient.wrapping_sub(i256::ONE)
        }
    } else {
        quotient
    };
    let stored = rounded
        .checked_mul(pow(i32::from(out_scale) - scale)?)
        .and_then(i256::to_i128)
        .ok_or_else(overflow)?;
    if stored.unsigned_abs() >= 10u128.pow(u32::from(MAX_PRECISION)) {
        return Err(overflow());
    }
    Ok(stored)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `a / b` of two decimal texts, at the scale the rule gives their literal types,
    /// printed with trailing zeros trimmed as the unconstrained numeric result prints.
    fn quotient(a: &str, b: &str) -> String {
        let parse = |t: &str| {
            let s = t.split_once('.').map_or(0, |(_, f)| f.len()) as i8;
            (t.replace('.', "").parse::<i128>().expect("digits"), s)
        };
        let ((m1, s1), (m2, s2)) = (parse(a), parse(b));
        let out = result_scale(s1, s2);
        let v = divide_values(m1, s1, m2, s2, out).expect("quotient");
        let text = Decimal128Type::format_decimal(v, 38, out);
        if text.contains('.') {
            text.trim_end_matches('0').trim_end_matches('.').to_string()
        } else {
            text
        }
    }

    use datafusion::arrow::datatypes::DecimalType;

    #[test]
    fn quotients_have_postgresqls_digits() {
        // PostgreSQL 15's answers, trailing zeros aside.
        assert_eq!(quotient("1.0", "3"), "0.33333333333333333333");
        assert_eq!(quotient("2.0", "3"), "0.66666666666666666667");
        assert_eq!(quotient("10.0", "4"), "2.5");
        assert_eq!(quotient("100.0", "3"), "33.3333333333333333");
        // PostgreSQL 0.000000333333333333333333: 24 decimals, rounded at MAX_SCALE here.
        assert_eq!(quotient("1", "3000000.0"), "0.00000033333333333333");
        assert_eq!(quotient("-1.0", "3"), "-0.33333333333333333333");
        assert_eq!(quotient("-2.0", "-3"), "0.66666666666666666667");
        assert_eq!(quotient("0.0", "7"), "0");
        assert_eq!(quotient("123456789.123", "0.001"), "123456789123");
    }

    #[test]
    fn division_by_zero_and_overflow_are_errors() {
        assert!(matches!(
            divide_values(1, 0, 0, 0, 10),
            Err(ArrowError::DivideByZero)
        ));
        assert!(divide_values(i128::MAX / 10, 0, 1, 30, 0).is_err());
    }

    #[test]
    fn the_result_scale_is_twenty_or_the_operands() {
        assert_eq!(result_scale(1, 0), 20);
        assert_eq!(result_scale(25, 0), 25);
        assert_eq!(result_scale(10, 10), 20);
    }
}
