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

use brook_common::Result;
use datafusion::arrow::compute::kernels::numeric;
use datafusion::arrow::compute::CastOptions;
use datafusion::arrow::datatypes::{DataType, FieldRef, Schema};
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
    pub(super) fn eval(&self, value: &dyn Fn(usize) -> Result<ScalarValue>) -> Result<ScalarValue> {
        Ok(match self {
            RowExpr::Column(i) => value(*i)?,
            RowExpr::Literal(v) => v.clone(),
            RowExpr::Compare {
                op,
                left,
                right,
                plain,
            } => compare(*op, left.eval(value)?, right.eval(value)?, *plain)?,
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
            RowExpr::IsNull(e) => ScalarValue::Boolean(Some(e.eval(value)?.is_null())),
            RowExpr::IsNotNull(e) => ScalarValue::Boolean(Some(!e.eval(value)?.is_null())),
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

    /// Every row: the row evaluator's answer equals the batch path's over a one-row batch.
    fn same_as_batch(expr: Arc<dyn PhysicalExpr>) {
        let data = rows();
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
        }
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
