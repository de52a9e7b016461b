//! Arithmetic of a number and a quoted literal: `2 * '4'`, `price + '0.5'`, `x - $1` with a
//! parameter bound as text; of a timestamp and one (`now() + '1 day'`); and a numeric
//! or an interval compared with one (`price < '100'`, `iv = '24 hours'`).
//!
//! PostgreSQL reads an untyped literal beside a number as that number's type (`2.5 * '4'`
//! is `10.0`, `2 * '4.5'` is 22P02). DataFusion finds no arithmetic for a number and text
//! and failed the statement as an internal error (XX000). This planner hook, consulted as
//! DataFusion turns SQL into a plan, casts the literal to the other operand's type — to a
//! numeric of the literal's own digits beside a numeric, as PostgreSQL types a numeric
//! constant. Written here because DataFusion has no hook for the type of an untyped literal.

use datafusion::arrow::datatypes::DataType;
use datafusion::common::{DFSchema, Result, ScalarValue};
use datafusion::logical_expr::planner::{ExprPlanner, PlannerResult, RawBinaryExpr};
use datafusion::logical_expr::{Expr, ExprSchemable};
use datafusion::sql::sqlparser::ast::BinaryOperator;

/// The SQL planner's hook for arithmetic with a quoted literal.
#[derive(Debug, Default)]
pub struct UntypedArithmetic;

impl ExprPlanner for UntypedArithmetic {
    fn plan_binary_op(
        &self,
        mut expr: RawBinaryExpr,
        schema: &DFSchema,
    ) -> Result<PlannerResult<RawBinaryExpr>> {
        let comparison = matches!(
            expr.op,
            BinaryOperator::Eq
                | BinaryOperator::NotEq
                | BinaryOperator::Lt
                | BinaryOperator::LtEq
                | BinaryOperator::Gt
                | BinaryOperator::GtEq
        );
        if comparison {
            // DataFusion reads the literal as the numeric's own type: `1.5 < '10'` was 22003
            // ("10.0 is too large to store in a Decimal128 of precision 2").
            if let Some(t) = literal_numeric(&expr.right, &expr.left, schema) {
                expr.right = expr.right.cast_to(&t, schema)?;
            } else if let Some(t) = literal_numeric(&expr.left, &expr.right, schema) {
                expr.left = expr.left.cast_to(&t, schema)?;
            } else if let Some(t) = literal_interval(&expr.right, &expr.left, schema) {
                // DataFusion has no comparison of an interval and text (42804).
                expr.right = expr.right.cast_to(&t, schema)?;
            } else if let Some(t) = literal_interval(&expr.left, &expr.right, schema) {
                expr.left = expr.left.cast_to(&t, schema)?;
            }
            return Ok(PlannerResult::Original(expr));
        }
        if !matches!(
            expr.op,
            BinaryOperator::Plus
                | BinaryOperator::Minus
                | BinaryOperator::Multiply
                | BinaryOperator::Divide
                | BinaryOperator::Modulo
        ) {
            return Ok(PlannerResult::Original(expr));
        }
        let plus = matches!(expr.op, BinaryOperator::Plus);
        let minus = matches!(expr.op, BinaryOperator::Minus);
        if let Some(t) = literal_type(&expr.right, &expr.left, schema) {
            expr.right = expr.right.cast_to(&t, schema)?;
        } else if let Some(t) = time_literal_type(&expr.right, &expr.left, plus, minus, schema) {
            expr.right = expr.right.cast_to(&t, schema)?;
        } else if let Some(t) = literal_type(&expr.left, &expr.right, schema) {
            expr.left = expr.left.cast_to(&t, schema)?;
        }
        Ok(PlannerResult::Original(expr))
    }
}

/// The type `literal` is read as beside `other`: `other`'s type when `literal` is quoted
/// text and `other` a number (a numeric of the literal's own precision and scale beside a
/// numeric).
fn literal_type(literal: &Expr, other: &Expr, schema: &DFSchema) -> Option<DataType> {
    let Expr::Literal(ScalarValue::Utf8(Some(text)), _) = literal else {
        return None;
    };
    let t = other.get_type(schema).ok()?;
    match t {
        DataType::Decimal128(..) | DataType::Decimal256(..) => {
            Some(numeric_type(text).unwrap_or(DataType::Decimal128(38, 10)))
        }
        _ if t.is_integer() || t.is_floating() => Some(t),
        _ => None,
    }
}

/// The numeric type of a quoted number compared with a numeric (its own digits).
fn literal_numeric(literal: &Expr, other: &Expr, schema: &DFSchema) -> Option<DataType> {
    let Expr::Literal(ScalarValue::Utf8(Some(text)), _) = literal else {
        return None;
    };
    match other.get_type(schema).ok()? {
        DataType::Decimal128(..) | DataType::Decimal256(..) => numeric_type(text),
        _ => None,
    }
}

/// The interval type of a quoted literal compared with an interval.
fn literal_interval(literal: &Expr, other: &Expr, schema: &DFSchema) -> Option<DataType> {
    if !matches!(literal, Expr::Literal(ScalarValue::Utf8(Some(_)), _)) {
        return None;
    }
    match other.get_type(schema).ok()? {
        t @ DataType::Interval(_) => Some(t),
        _ => None,
    }
}

/// The type of a quoted literal after a timestamp or date: `ts + '1 day'` adds an interval,
/// `ts - '2020-01-01'` subtracts a timestamp, `d - '2020-01-01'` a date (PostgreSQL's
/// choices; `d + '..'` is ambiguous there and left to fail).
fn time_literal_type(
    literal: &Expr,
    other: &Expr,
    plus: bool,
    minus: bool,
    schema: &DFSchema,
) -> Option<DataType> {
    if !matches!(literal, Expr::Literal(ScalarValue::Utf8(Some(_)), _)) {
        return None;
    }
    match other.get_type(schema).ok()? {
        DataType::Timestamp(..) if plus => Some(DataType::Interval(
            datafusion::arrow::datatypes::IntervalUnit::MonthDayNano,
        )),
        t @ (DataType::Timestamp(..) | DataType::Date32) if minus => Some(t),
        _ => None,
    }
}

/// The numeric type of a constant written as `text` (`1.25` is numeric(3, 2)), `None` when
/// `text` is not plain digits (its cast then reports the bad input).
pub(crate) fn numeric_type(text: &str) -> Option<DataType> {
    let digits = text.trim().trim_start_matches(['+', '-']);
    let (int, frac) = digits.split_once('.').unwrap_or((digits, ""));
    if !int.chars().chain(frac.chars()).all(|c| c.is_ascii_digit()) {
        return None;
    }
    let scale = frac.len();
    let precision = (int.trim_start_matches('0').len() + scale).max(1);
    (precision <= 38).then_some(DataType::Decimal128(precision as u8, scale as i8))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_quoted_number_is_a_numeric_of_its_own_digits() {
        assert_eq!(numeric_type("4"), Some(DataType::Decimal128(1, 0)));
        assert_eq!(numeric_type(" -1.25"), Some(DataType::Decimal128(3, 2)));
        assert_eq!(numeric_type("0.005"), Some(DataType::Decimal128(3, 3)));
        assert_eq!(numeric_type("abc"), None);
        assert_eq!(numeric_type("1e5"), None);
    }
}
