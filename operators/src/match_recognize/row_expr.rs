//! `DEFINE` conditions checked one row at a time, on scalar values.
//!
//! A condition that reads the match so far (`LAST(down.price, 1)`, `FIRST(strt.price)`,
//! aggregates) is checked by the matcher row by row, with the row as the variable being
//! tried. Over a one-row Arrow batch each check costs a `take` per column and a batch to
//! build and validate — far more than the comparison itself. The usual condition shapes —
//! columns, literals, comparisons, `AND`/`OR`/`NOT`, `IS [NOT] NULL`, casts and scalar
//! functions (Brook's checked `+ - *` among them) — are compiled once per query into a
//! [`RowExpr`] that reads only the values it needs as `ScalarValue`s. Comparisons use the
//! same kernels (or, for plain values of one type, the same total order) and functions the
//! same implementations as the batch path, so the answers are the same; any other shape is
//! left to the batch path. Hand-written because DataFusion evaluates expressions over
//! batches only.
//!
//! Comparisons of integer-valued operands (integers, dates, times, timestamps: a price
//! against the last one, a time against a bound) and `IS [NULL]` of a column are the
//! common case and are evaluated on the raw values (a [`RowValues::int`]), with no
//! `ScalarValue` made for them.

use brook_common::{brook_err, Result};
use datafusion::arrow::array::{Array, AsArray};
use datafusion::arrow::compute::kernels::numeric;
use datafusion::arrow::compute::CastOptions;
use datafusion::arrow::datatypes::{
    DataType, Date32Type, Date64Type, FieldRef, Int16Type, Int32Type, Int64Type, Int8Type, Schema,
    Time32MillisecondType, Time32SecondType, Time64MicrosecondType, Time64NanosecondType, TimeUnit,
    TimestampMicrosecondType, TimestampMillisecondType, TimestampNanosecondType,
    TimestampSecondType, UInt16Type, UInt32Type, UInt8Type,
};
use datafusion::common::config::ConfigOptions;
use datafusion::common::ScalarValue;
use datafusion::logical_expr::{ColumnarValue, Operator, ScalarFunctionArgs, ScalarUDF};
use datafusion::physical_expr::expressions::{
    BinaryExpr, CastExpr, Column, IsNotNullExpr, IsNullExpr, Literal, NotExpr,
};
use datafusion::physical_expr::{PhysicalExpr, ScalarFunctionExpr};
use datafusion::physical_expr_common::datum::{apply, apply_cmp};
use std::cmp::Ordering;
use std::sync::Arc;

/// A condition compiled for evaluation on one row's values.
#[derive(Debug)]
pub(super) enum RowExpr {
    /// The value of column `i` of the schema the condition was planned against.
    Column(usize),
    Literal(ScalarValue),
    /// `= <> < <= > >=` and `IS [NOT] DISTINCT FROM`; `plain`: both sides are of one type
    /// whose `ScalarValue` order is Arrow's (numbers, text, booleans, dates and times).
    Compare {
        op: Operator,
        left: Box<RowExpr>,
        right: Box<RowExpr>,
        plain: bool,
    },
    /// A comparison as above of two columns or literals of one integer-valued type, on
    /// their values as `i64`.
    CompareInt {
        op: Operator,
        left: IntOperand,
        right: IntOperand,
    },
    And(Box<RowExpr>, Box<RowExpr>),
    Or(Box<RowExpr>, Box<RowExpr>),
    Not(Box<RowExpr>),
    IsNull(Box<RowExpr>),
    IsNotNull(Box<RowExpr>),
    /// `+ - * / %` of numbers, by the kernels the batch path calls (`wrapping`: `+ - *`
    /// wrap around on overflow rather than fail).
    Arithmetic {
        op: Operator,
        wrapping: bool,
        left: Box<RowExpr>,
        right: Box<RowExpr>,
    },
    Cast {
        arg: Box<RowExpr>,
        to: DataType,
        options: CastOptions<'static>,
    },
    Function {
        udf: ScalarUDF,
        args: Vec<RowExpr>,
        arg_fields: Vec<FieldRef>,
        return_field: FieldRef,
        config: Arc<ConfigOptions>,
    },
}

/// An operand of [`RowExpr::CompareInt`].
#[derive(Debug)]
pub(super) enum IntOperand {
    Column(usize),
    /// The literal's value (None: NULL).
    Literal(Option<i64>),
}

impl IntOperand {
    fn value(&self, row: &dyn RowValues) -> Result<Option<i64>> {
        match self {
            IntOperand::Column(i) => row.int(*i),
            IntOperand::Literal(v) => Ok(*v),
        }
    }
}

/// The values of the row a condition is evaluated on, by column of the schema it was
/// planned against.
pub(super) trait RowValues {
    /// Column `i`'s value.
    fn value(&self, i: usize) -> Result<ScalarValue>;
    /// Column `i`'s value, of an integer-valued type (see [`int_valued`]), as an integer;
    /// None when NULL.
    fn int(&self, i: usize) -> Result<Option<i64>> {
        scalar_int(&self.value(i)?)
    }
    /// Whether column `i`'s value is NULL.
    fn is_null(&self, i: usize) -> Result<bool> {
        Ok(self.value(i)?.is_null())
    }
}

/// A row given as a function from column to value.
impl<F: Fn(usize) -> Result<ScalarValue>> RowValues for F {
    fn value(&self, i: usize) -> Result<ScalarValue> {
        self(i)
    }
}

/// Types whose values are integers that compare as such (same type on both sides).
fn int_valued(t: &DataType) -> bool {
    use DataType::*;
    matches!(
        t,
        Int8 | Int16
            | Int32
            | Int64
            | UInt8
            | UInt16
            | UInt32
            | Date32
            | Date64
            | Time32(_)
            | Time64(_)
            | Timestamp(_, _)
    )
}

/// The integer of a value of an integer-valued type (None: NULL).
pub(super) fn scalar_int(v: &ScalarValue) -> Result<Option<i64>> {
    use ScalarValue::*;
    Ok(match v {
        Int8(x) => x.map(i64::from),
        Int16(x) => x.map(i64::from),
        Int32(x) | Date32(x) | Time32Second(x) | Time32Millisecond(x) => x.map(i64::from),
        Int64(x)
        | Date64(x)
        | Time64Microsecond(x)
        | Time64Nanosecond(x)
        | TimestampSecond(x, _)
        | TimestampMillisecond(x, _)
        | TimestampMicrosecond(x, _)
        | TimestampNanosecond(x, _) => *x,
        UInt8(x) => x.map(i64::from),
        UInt16(x) => x.map(i64::from),
        UInt32(x) => x.map(i64::from),
        other => {
            return Err(brook_err!(
                Internal,
                "{} is not an integer-valued type",
                other.data_type()
            ))
        }
    })
}

/// Row `r` of `array`, of an integer-valued type, as an integer (None: NULL).
pub(super) fn int_at(array: &dyn Array, r: usize) -> Result<Option<i64>> {
    use DataType::*;
    if array.is_null(r) {
        return Ok(None);
    }
    Ok(Some(match array.data_type() {
        Int8 => array.as_primitive::<Int8Type>().value(r).into(),
        Int16 => array.as_primitive::<Int16Type>().value(r).into(),
        Int32 => array.as_primitive::<Int32Type>().value(r).into(),
        Int64 => array.as_primitive::<Int64Type>().value(r),
        UInt8 => array.as_primitive::<UInt8Type>().value(r).into(),
        UInt16 => array.as_primitive::<UInt16Type>().value(r).into(),
        UInt32 => array.as_primitive::<UInt32Type>().value(r).into(),
        Date32 => array.as_primitive::<Date32Type>().value(r).into(),
        Date64 => array.as_primitive::<Date64Type>().value(r),
        Time32(TimeUnit::Second) => array.as_primitive::<Time32SecondType>().value(r).into(),
        Time32(_) => array
            .as_primitive::<Time32MillisecondType>()
            .value(r)
            .into(),
        Time64(TimeUnit::Microsecond) => array.as_primitive::<Time64MicrosecondType>().value(r),
        Time64(_) => array.as_primitive::<Time64NanosecondType>().value(r),
        Timestamp(TimeUnit::Second, _) => array.as_primitive::<TimestampSecondType>().value(r),
        Timestamp(TimeUnit::Millisecond, _) => {
            array.as_primitive::<TimestampMillisecondType>().value(r)
        }
        Timestamp(TimeUnit::Microsecond, _) => {
            array.as_primitive::<TimestampMicrosecondType>().value(r)
        }
        Timestamp(TimeUnit::Nanosecond, _) => {
            array.as_primitive::<TimestampNanosecondType>().value(r)
        }
        other => {
            return Err(brook_err!(
                Internal,
                "{other} is not an integer-valued type"
            ))
        }
    }))
}

impl RowExpr {
    /// `expr` (planned against `schema`) as a row expression, or None when it has a shape
    /// this does not evaluate.
    pub(super) fn compile(expr: &Arc<dyn PhysicalExpr>, schema: &Schema) -> Option<RowExpr> {
        let any = expr.as_ref();
        if let Some(c) = any.downcast_ref::<Column>() {
            return (c.index() < schema.fields().len()).then(|| RowExpr::Column(c.index()));
        }
        if let Some(l) = any.downcast_ref::<Literal>() {
            return Some(RowExpr::Literal(l.value().clone()));
        }
        if let Some(n) = any.downcast_ref::<NotExpr>() {
            if !boolean(n.arg(), schema) {
                return None;
            }
            return compile_box(n.arg(), schema).map(RowExpr::Not);
        }
        if let Some(n) = any.downcast_ref::<IsNullExpr>() {
            return compile_box(n.arg(), schema).map(RowExpr::IsNull);
        }
        if let Some(n) = any.downcast_ref::<IsNotNullExpr>() {
            return compile_box(n.arg(), schema).map(RowExpr::IsNotNull);
        }
        if let Some(c) = any.downcast_ref::<CastExpr>() {
            return Some(RowExpr::Cast {
                arg: compile_box(c.expr(), schema)?,
                to: c.cast_type().clone(),
                options: c.cast_options().clone(),
            });
        }
        if let Some(b) = any.downcast_ref::<BinaryExpr>() {
            return compile_binary(b, schema);
        }
        if let Some(f) = any.downcast_ref::<ScalarFunctionExpr>() {
            let args = f
                .args()
                .iter()
                .map(|a| RowExpr::compile(a, schema))
                .collect::<Option<Vec<_>>>()?;
            let arg_fields = f
                .args()
                .iter()
                .map(|a| a.return_field(schema).ok())
                .collect::<Option<Vec<_>>>()?;
            return Some(RowExpr::Function {
                udf: f.fun().clone(),
                args,
                arg_fields,
                return_field: expr.return_field(schema).ok()?,
                config: Arc::new(f.config_options().clone()),
            });
        }
        None
    }

    /// The value of the expression on one row: `value(i)` gives column `i`'s.
    pub(super) fn eval(&self, value: &dyn RowValues) -> Result<ScalarValue> {
        Ok(match self {
            RowExpr::Column(i) => value.value(*i)?,
            RowExpr::Literal(v) => v.clone(),
            RowExpr::Compare {
                op,
                left,
                right,
                plain,
            } => compare(*op, left.eval(value)?, right.eval(value)?, *plain)?,
            RowExpr::CompareInt { op, left, right } => {
                ScalarValue::Boolean(compare_int(*op, left.value(value)?, right.value(value)?))
            }
            RowExpr::And(l, r) => match truth(&l.eval(value)?) {
                // As the batch path: the right side is not evaluated once the left decides.
                Some(false) => ScalarValue::Boolean(Some(false)),
                left => ScalarValue::Boolean(match (left, truth(&r.eval(value)?)) {
                    (_, Some(false)) => Some(false),
                    (Some(true), Some(true)) => Some(true),
                    _ => None,
                }),
            },
            RowExpr::Or(l, r) => match truth(&l.eval(value)?) {
                Some(true) => ScalarValue::Boolean(Some(true)),
                left => ScalarValue::Boolean(match (left, truth(&r.eval(value)?)) {
                    (_, Some(true)) => Some(true),
                    (Some(false), Some(false)) => Some(false),
                    _ => None,
                }),
            },
            RowExpr::Not(e) => ScalarValue::Boolean(truth(&e.eval(value)?).map(|b| !b)),
            RowExpr::IsNull(e) => ScalarValue::Boolean(Some(e.is_null(value)?)),
            RowExpr::IsNotNull(e) => ScalarValue::Boolean(Some(!e.is_null(value)?)),
            RowExpr::Arithmetic {
                op,
                wrapping,
                left,
                right,
            } => {
                let (l, r) = (
                    ColumnarValue::Scalar(left.eval(value)?),
                    ColumnarValue::Scalar(right.eval(value)?),
                );
                scalar(match (op, wrapping) {
                    (Operator::Plus, true) => apply(&l, &r, numeric::add_wrapping)?,
                    (Operator::Plus, false) => apply(&l, &r, numeric::add)?,
                    (Operator::Minus, true) => apply(&l, &r, numeric::sub_wrapping)?,
                    (Operator::Minus, false) => apply(&l, &r, numeric::sub)?,
                    (Operator::Multiply, true) => apply(&l, &r, numeric::mul_wrapping)?,
                    (Operator::Multiply, false) => apply(&l, &r, numeric::mul)?,
                    (Operator::Divide, _) => apply(&l, &r, numeric::div)?,
                    _ => apply(&l, &r, numeric::rem)?,
                })?
            }
            RowExpr::Cast { arg, to, options } => {
                arg.eval(value)?.cast_to_with_options(to, options)?
            }
            RowExpr::Function {
                udf,
                args,
                arg_fields,
                return_field,
                config,
            } => {
                let args = args
                    .iter()
                    .map(|a| a.eval(value).map(ColumnarValue::Scalar))
                    .collect::<Result<Vec<_>>>()?;
                scalar(udf.invoke_with_args(ScalarFunctionArgs {
                    args,
                    arg_fields: arg_fields.clone(),
                    number_rows: 1,
                    return_field: return_field.clone(),
                    config_options: config.clone(),
                })?)?
            }
        })
    }
}

impl RowExpr {
    /// Whether the expression's value is NULL (a column's, without making its value).
    fn is_null(&self, value: &dyn RowValues) -> Result<bool> {
        match self {
            RowExpr::Column(i) => value.is_null(*i),
            e => Ok(e.eval(value)?.is_null()),
        }
    }
}

fn compile_box(expr: &Arc<dyn PhysicalExpr>, schema: &Schema) -> Option<Box<RowExpr>> {
    RowExpr::compile(expr, schema).map(Box::new)
}

/// Whether `expr` is boolean (over `schema`).
fn boolean(expr: &Arc<dyn PhysicalExpr>, schema: &Schema) -> bool {
    expr.data_type(schema).is_ok_and(|t| t == DataType::Boolean)
}

fn compile_binary(b: &BinaryExpr, schema: &Schema) -> Option<RowExpr> {
    let left = compile_box(b.left(), schema)?;
    let right = compile_box(b.right(), schema)?;
    let op = *b.op();
    match op {
        Operator::And | Operator::Or => {
            if !boolean(b.left(), schema) || !boolean(b.right(), schema) {
                return None;
            }
            Some(if op == Operator::And {
                RowExpr::And(left, right)
            } else {
                RowExpr::Or(left, right)
            })
        }
        Operator::Eq
        | Operator::NotEq
        | Operator::Lt
        | Operator::LtEq
        | Operator::Gt
        | Operator::GtEq
        | Operator::IsDistinctFrom
        | Operator::IsNotDistinctFrom => {
            let (l, r) = (
                b.left().data_type(schema).ok()?,
                b.right().data_type(schema).ok()?,
            );
            if l == r && int_valued(&l) {
                if let (Some(left), Some(right)) = (int_operand(&left), int_operand(&right)) {
                    return Some(RowExpr::CompareInt { op, left, right });
                }
            }
            Some(RowExpr::Compare {
                op,
                left,
                right,
                plain: l == r && plain_order(&l),
            })
        }
        Operator::Plus
        | Operator::Minus
        | Operator::Multiply
        | Operator::Divide
        | Operator::Modulo => {
            let (l, r) = (
                b.left().data_type(schema).ok()?,
                b.right().data_type(schema).ok()?,
            );
            // Only numbers: the batch path special-cases some temporal operands.
            if !l.is_numeric() || !r.is_numeric() {
                return None;
            }
            // `BinaryExpr` does not tell whether it fails on overflow, but it compares
            // equal to the same expression made with the default (wrapping) only when it
            // wraps.
            let wrapping = *b == BinaryExpr::new(b.left().clone(), op, b.right().clone());
            Some(RowExpr::Arithmetic {
                op,
                wrapping,
                left,
                right,
            })
        }
        _ => None,
    }
}

/// A column or literal of an integer-valued type as an operand of [`RowExpr::CompareInt`].
fn int_operand(e: &RowExpr) -> Option<IntOperand> {
    match e {
        RowExpr::Column(i) => Some(IntOperand::Column(*i)),
        RowExpr::Literal(v) => scalar_int(v).ok().map(IntOperand::Literal),
        _ => None,
    }
}

/// A comparison of two integers (None: NULL), as [`compare`] of their values.
fn compare_int(op: Operator, l: Option<i64>, r: Option<i64>) -> Option<bool> {
    let (l, r) = match (l, r) {
        (Some(l), Some(r)) => (l, r),
        (None, None) if op == Operator::IsNotDistinctFrom => return Some(true),
        (None, None) if op == Operator::IsDistinctFrom => return Some(false),
        _ if op == Operator::IsNotDistinctFrom => return Some(false),
        _ if op == Operator::IsDistinctFrom => return Some(true),
        _ => return None,
    };
    Some(match op {
        Operator::Eq | Operator::IsNotDistinctFrom => l == r,
        Operator::NotEq | Operator::IsDistinctFrom => l != r,
        Operator::Lt => l < r,
        Operator::LtEq => l <= r,
        Operator::Gt => l > r,
        _ => l >= r,
    })
}

/// Types whose `ScalarValue` order (floats by their total order, `-0.0` as `0.0`) is the
/// order the batch path's comparison kernels use.
fn plain_order(t: &DataType) -> bool {
    use DataType::*;
    matches!(
        t,
        Boolean
            | Int8
            | Int16
            | Int32
            | Int64
            | UInt8
            | UInt16
            | UInt32
            | UInt64
            | Float32
            | Float64
            | Utf8
            | LargeUtf8
            | Utf8View
            | Date32
            | Date64
            | Time32(_)
            | Time64(_)
            | Timestamp(_, _)
            | Decimal128(_, _)
    )
}

/// SQL's truth value of a boolean scalar (None: NULL).
fn truth(v: &ScalarValue) -> Option<bool> {
    match v {
        ScalarValue::Boolean(b) => *b,
        _ => None,
    }
}

fn compare(op: Operator, l: ScalarValue, r: ScalarValue, plain: bool) -> Result<ScalarValue> {
    let distinct = matches!(op, Operator::IsDistinctFrom | Operator::IsNotDistinctFrom);
    if plain && !l.is_null() && !r.is_null() {
        if let Some(ord) = order(&l, &r) {
            let b = match op {
                Operator::Eq | Operator::IsNotDistinctFrom => ord == Ordering::Equal,
                Operator::NotEq | Operator::IsDistinctFrom => ord != Ordering::Equal,
                Operator::Lt => ord == Ordering::Less,
                Operator::LtEq => ord != Ordering::Greater,
                Operator::Gt => ord == Ordering::Greater,
                _ => ord != Ordering::Less,
            };
            return Ok(ScalarValue::Boolean(Some(b)));
        }
    }
    if !distinct && (l.is_null() || r.is_null()) {
        return Ok(ScalarValue::Boolean(None));
    }
    scalar(apply_cmp(
        op,
        &ColumnarValue::Scalar(l),
        &ColumnarValue::Scalar(r),
    )?)
}

/// The order of two values of one plain type: floats in their total order with `-0.0` as
/// `0.0` (SQL's `-0.0 = 0.0` holds; the batch path normalises float operands so too),
/// others in `ScalarValue`'s.
fn order(l: &ScalarValue, r: &ScalarValue) -> Option<Ordering> {
    let zero_as_zero = |f: f64| if f == 0.0 { 0.0 } else { f };
    match (l, r) {
        (ScalarValue::Float64(Some(a)), ScalarValue::Float64(Some(b))) => {
            Some(zero_as_zero(*a).total_cmp(&zero_as_zero(*b)))
        }
        (ScalarValue::Float32(Some(a)), ScalarValue::Float32(Some(b))) => {
            Some(zero_as_zero(f64::from(*a)).total_cmp(&zero_as_zero(f64::from(*b))))
        }
        _ => l.partial_cmp(r),
    }
}

/// The one value of a result computed from scalars.
fn scalar(v: ColumnarValue) -> Result<ScalarValue> {
    Ok(match v {
        ColumnarValue::Scalar(s) => s,
        ColumnarValue::Array(a) => ScalarValue::try_from_array(&a, 0)?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::from_pretty;
    use datafusion::arrow::record_batch::RecordBatch;
    use datafusion::physical_expr::expressions::{
        binary, cast, col, is_not_null, is_null, lit, not,
    };

    /// Rows with NULLs, equal values and text, to compare both evaluations on.
    fn rows() -> RecordBatch {
        from_pretty(
            "a:int64 | b:int64 | x:float64 | s:utf8 | ok:bool
             1       | 2       | 1.5       | abc    | true
             2       | 2       | -0.0      | abd    | false
             NULL    | 3       | NaN       | NULL   | NULL
             4       | NULL    | 0.0       | ab     | true
             -7      | 3       | NULL      | abc    | false",
        )
    }

    /// A row of a batch read as the operator reads its rows: integers and NULLs from the
    /// arrays, with no `ScalarValue` made.
    struct BatchRow<'a>(&'a RecordBatch, usize);

    impl RowValues for BatchRow<'_> {
        fn value(&self, i: usize) -> Result<ScalarValue> {
            Ok(ScalarValue::try_from_array(self.0.column(i), self.1)?)
        }
        fn int(&self, i: usize) -> Result<Option<i64>> {
            int_at(self.0.column(i).as_ref(), self.1)
        }
        fn is_null(&self, i: usize) -> Result<bool> {
            Ok(self.0.column(i).is_null(self.1))
        }
    }

    /// Every row: the row evaluator's answer equals the batch path's over a one-row batch.
    fn same_as_batch(expr: Arc<dyn PhysicalExpr>) {
        same_as_batch_over(expr, rows())
    }

    /// As [`same_as_batch`], over the rows of `data`, with the row's values given as
    /// `ScalarValue`s and read from the arrays.
    fn same_as_batch_over(expr: Arc<dyn PhysicalExpr>, data: RecordBatch) {
        let schema = data.schema();
        let row = RowExpr::compile(&expr, &schema)
            .unwrap_or_else(|| panic!("{expr} does not compile to a row expression"));
        for i in 0..data.num_rows() {
            let one = data.slice(i, 1);
            let want = ScalarValue::try_from_array(
                &expr.evaluate(&one).unwrap().into_array(1).unwrap(),
                0,
            )
            .unwrap();
            let got = row
                .eval(&|c| Ok(ScalarValue::try_from_array(data.column(c), i)?))
                .unwrap();
            assert_eq!(got, want, "{expr} on row {i}");
            let got = row.eval(&BatchRow(&data, i)).unwrap();
            assert_eq!(got, want, "{expr} on row {i} read from the arrays");
        }
    }

    #[test]
    fn integer_valued_comparisons_give_the_batch_paths_answers() {
        let data = from_pretty(
            "a:int32 | b:int32 | t:timestamp | u:timestamp | n:int64
             1       | 2       | 2026-01-01T00:00:00 | 2026-01-01T00:00:01 | 5
             2       | 2       | 2026-01-01T00:00:01 | 2026-01-01T00:00:01 | NULL
             NULL    | -3      | NULL | 2025-12-31T23:59:59 | -9223372036854775808
             NULL    | NULL    | NULL | NULL | 9223372036854775807",
        );
        let schema = data.schema();
        let c = |name: &str| col(name, &schema).unwrap();
        let bin = |l, op, r| binary(l, op, r, &schema).unwrap();
        for op in [
            Operator::Eq,
            Operator::NotEq,
            Operator::Lt,
            Operator::LtEq,
            Operator::Gt,
            Operator::GtEq,
            Operator::IsDistinctFrom,
            Operator::IsNotDistinctFrom,
        ] {
            for expr in [
                bin(c("a"), op, c("b")),
                bin(c("t"), op, c("u")),
                bin(c("n"), op, lit(5i64)),
                bin(c("n"), op, lit(ScalarValue::Int64(None))),
                bin(c("a"), op, lit(2i32)),
            ] {
                let compiled = RowExpr::compile(&expr, &schema);
                assert!(
                    matches!(compiled, Some(RowExpr::CompareInt { .. })),
                    "{expr} is compared as integers"
                );
                same_as_batch_over(expr, data.clone());
            }
        }
        same_as_batch_over(is_null(c("t")).unwrap(), data.clone());
        same_as_batch_over(is_not_null(c("a")).unwrap(), data.clone());
    }

    #[test]
    fn conditions_give_the_batch_paths_answers() {
        let schema = rows().schema();
        let c = |name: &str| col(name, &schema).unwrap();
        let bin = |l, op, r| binary(l, op, r, &schema).unwrap();
        for op in [
            Operator::Eq,
            Operator::NotEq,
            Operator::Lt,
            Operator::LtEq,
            Operator::Gt,
            Operator::GtEq,
            Operator::IsDistinctFrom,
            Operator::IsNotDistinctFrom,
        ] {
            same_as_batch(bin(c("a"), op, c("b")));
            same_as_batch(bin(c("x"), op, lit(0.0f64)));
            same_as_batch(bin(c("x"), op, lit(f64::NAN)));
            same_as_batch(bin(c("s"), op, lit("abc")));
            same_as_batch(bin(c("ok"), op, lit(true)));
        }
        let less = bin(c("a"), Operator::Lt, c("b"));
        let text = bin(c("s"), Operator::Eq, lit("abc"));
        for op in [Operator::And, Operator::Or] {
            same_as_batch(bin(less.clone(), op, text.clone()));
            same_as_batch(bin(c("ok"), op, less.clone()));
            same_as_batch(bin(c("ok"), op, c("ok")));
        }
        same_as_batch(not(c("ok")).unwrap());
        same_as_batch(is_null(c("a")).unwrap());
        same_as_batch(is_not_null(c("s")).unwrap());
        same_as_batch(bin(
            cast(c("a"), &schema, DataType::Float64).unwrap(),
            Operator::Gt,
            c("x"),
        ));
        same_as_batch(bin(c("b"), Operator::Divide, lit(2i64)));
        same_as_batch(bin(c("a"), Operator::Modulo, c("b")));
    }

    #[test]
    fn arithmetic_wraps_or_fails_on_overflow_as_its_expression_does() {
        let data = from_pretty(
            "a:int64 | b:int64
             9223372036854775807 | 1
             -3 | 4",
        );
        let schema = data.schema();
        let (a, b) = (col("a", &schema).unwrap(), col("b", &schema).unwrap());
        for op in [Operator::Plus, Operator::Minus, Operator::Multiply] {
            let wrapping: Arc<dyn PhysicalExpr> =
                Arc::new(BinaryExpr::new(a.clone(), op, b.clone()));
            let failing: Arc<dyn PhysicalExpr> =
                Arc::new(BinaryExpr::new(a.clone(), op, b.clone()).with_fail_on_overflow(true));
            for expr in [wrapping, failing] {
                let row = RowExpr::compile(&expr, &schema).unwrap();
                for i in 0..data.num_rows() {
                    let want = expr
                        .evaluate(&data.slice(i, 1))
                        .and_then(|v| v.into_array(1))
                        .and_then(|a| ScalarValue::try_from_array(&a, 0));
                    let got = row.eval(&|c| Ok(ScalarValue::try_from_array(data.column(c), i)?));
                    match (want, got) {
                        (Ok(w), Ok(g)) => assert_eq!(g, w, "{expr} on row {i}"),
                        (Err(_), Err(_)) => {}
                        (w, g) => panic!("{expr} on row {i}: batch {w:?}, row {g:?}"),
                    }
                }
            }
        }
    }

    #[test]
    fn other_shapes_are_left_to_the_batch_path() {
        let schema = rows().schema();
        let like = binary(
            col("s", &schema).unwrap(),
            Operator::LikeMatch,
            lit("ab%"),
            &schema,
        )
        .unwrap();
        assert!(RowExpr::compile(&like, &schema).is_none());
    }

    #[test]
    fn a_division_by_zero_fails_as_over_a_batch() {
        let data = rows();
        let schema = data.schema();
        let div = binary(
            col("a", &schema).unwrap(),
            Operator::Divide,
            lit(0i64),
            &schema,
        )
        .unwrap();
        let row = RowExpr::compile(&div, &schema).unwrap();
        assert!(div.evaluate(&data.slice(0, 1)).is_err());
        assert!(row
            .eval(&|c| Ok(ScalarValue::try_from_array(data.column(c), 0)?))
            .is_err());
    }
}
