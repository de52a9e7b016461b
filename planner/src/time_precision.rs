//! Fractional-second precisions: `timestamp(p)`, `timestamptz(p)` and `time(p)` round their
//! values to `p` decimals of a second, as PostgreSQL does.
//!
//! DataFusion reads `timestamp(0)` as a timestamp of whole seconds that truncates
//! (`'10:00:00.678'::timestamp(0)` was `10:00:00`, PostgreSQL `10:00:01`) and refuses the
//! other precisions ("Unsupported SQL type TIME(1)"). A cast to a type with a precision is
//! rewritten here into the cast without it, rounded by `brook_time_precision(value, p)`;
//! the server rounds what it stores into a column declared with a precision with
//! [`round_to_precision`]. Written by hand: no library has PostgreSQL's rounding of a
//! microsecond count to `p` decimals (half away from zero from PostgreSQL's epoch,
//! 2000-01-01, as `AdjustTimestampForTypmod` rounds: `'1999-12-31 23:59:59.5'::timestamp(0)`
//! is `23:59:59`).

use brook_common::brook_err;
use datafusion::arrow::array::{Array, ArrayRef, AsArray, PrimitiveArray};
use datafusion::arrow::datatypes::{
    ArrowPrimitiveType, DataType, Time64MicrosecondType, TimeUnit, TimestampMicrosecondType,
};
use datafusion::arrow::datatypes::{Field, FieldRef};
use datafusion::common::{exec_err, Result, ScalarValue};
use datafusion::logical_expr::{
    ColumnarValue, ReturnFieldArgs, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature,
    TypeSignature, Volatility,
};
use datafusion::sql::sqlparser::ast::{CastKind, DataType as SqlType, Expr, Statement, Value};
use std::sync::Arc;

/// The function a cast to a type with a precision becomes.
pub const TIME_PRECISION: &str = "brook_time_precision";

/// The largest precision: PostgreSQL keeps microseconds and reduces a larger one to 6.
pub const MAX_PRECISION: u64 = 6;

const MICROS_PER_DAY: i64 = 86_400_000_000;

/// 2000-01-01 (PostgreSQL's epoch) in microseconds from 1970-01-01 (Arrow's).
const PG_EPOCH: i64 = 946_684_800_000_000;

/// Every `x::timestamp(p)`, `x::timestamptz(p)`, `x::time(p)` (and the typed literals
/// `timestamp(p) '...'`) of `stmt` as `brook_time_precision(x::timestamp, p)`: the cast
/// without its precision, rounded. Runs before `pg_functions::time_casts`, which then reads
/// the inner `x::time` as a microsecond time.
pub fn precision_casts(stmt: &mut Statement) {
    crate::pg_functions::rewrite_expressions(stmt, |expr| {
        let (inner, data_type, kind) = match expr {
            Expr::Cast {
                kind: kind @ (CastKind::Cast | CastKind::DoubleColon),
                expr: inner,
                data_type,
                format: None,
                ..
            } => ((**inner).clone(), data_type.clone(), kind.clone()),
            Expr::TypedString(typed) => (
                Expr::value(typed.value.value.clone()),
                typed.data_type.clone(),
                CastKind::Cast,
            ),
            _ => return,
        };
        let Some((plain, precision)) = without_precision(&data_type) else {
            return;
        };
        let cast = Expr::Cast {
            kind,
            expr: Box::new(inner),
            data_type: plain,
            array: false,
            format: None,
        };
        *expr = crate::pg_functions::function_call(
            TIME_PRECISION,
            vec![
                cast,
                Expr::value(Value::Number(
                    precision.min(MAX_PRECISION).to_string(),
                    false,
                )),
            ],
        );
    });
}

/// A time or timestamp type with a precision: the type without it, and the precision.
fn without_precision(t: &SqlType) -> Option<(SqlType, u64)> {
    match t {
        SqlType::Timestamp(Some(p), tz) => Some((SqlType::Timestamp(None, *tz), *p)),
        SqlType::Time(Some(p), tz) => Some((SqlType::Time(None, *tz), *p)),
        _ => None,
    }
}

/// `brook_time_precision(value, p [, name])`: a timestamp (with or without zone) or time
/// rounded to `p` decimals of a second. `name`, ignored here, is the SQL function the call
/// stands for (`localtimestamp`), which names its result column.
pub fn time_precision_function() -> ScalarUDF {
    ScalarUDF::new_from_impl(TimePrecision {
        signature: Signature::one_of(
            vec![TypeSignature::Any(2), TypeSignature::Any(3)],
            Volatility::Immutable,
        ),
    })
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct TimePrecision {
    signature: Signature,
}

impl ScalarUDFImpl for TimePrecision {
    fn name(&self) -> &str {
        TIME_PRECISION
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, args: &[DataType]) -> Result<DataType> {
        match &args[0] {
            DataType::Timestamp(_, zone) => {
                Ok(DataType::Timestamp(TimeUnit::Microsecond, zone.clone()))
            }
            DataType::Time64(_) | DataType::Time32(_) => {
                Ok(DataType::Time64(TimeUnit::Microsecond))
            }
            DataType::Null => Ok(DataType::Null),
            other => exec_err!("{TIME_PRECISION} of {other}"),
        }
    }

    /// The result carries its declared type (`timestamp(0) without time zone`) as the
    /// server's columns do, so CREATE TABLE AS and views keep the precision.
    fn return_field_from_args(&self, args: ReturnFieldArgs<'_>) -> Result<FieldRef> {
        let types: Vec<DataType> = args
            .arg_fields
            .iter()
            .map(|f| f.data_type().clone())
            .collect();
        let ty = self.return_type(&types)?;
        let nullable = args.arg_fields.iter().any(|f| f.is_nullable());
        let field = Field::new(self.name(), ty.clone(), nullable);
        let precision = match args.scalar_arguments.get(1) {
            Some(Some(v)) => v.cast_to(&DataType::Int64).ok(),
            _ => None,
        };
        let name = match (&ty, precision) {
            (DataType::Timestamp(_, None), Some(ScalarValue::Int64(Some(p)))) => {
                format!("timestamp({p}) without time zone")
            }
            (DataType::Timestamp(_, Some(_)), Some(ScalarValue::Int64(Some(p)))) => {
                format!("timestamp({p}) with time zone")
            }
            (DataType::Time64(_), Some(ScalarValue::Int64(Some(p)))) => {
                format!("time({p}) without time zone")
            }
            _ => return Ok(Arc::new(field)),
        };
        Ok(Arc::new(field.with_metadata(
            [(brook_common::types::PG_TYPE_KEY.to_string(), name)].into(),
        )))
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let precision = match &args.args[1] {
            ColumnarValue::Scalar(v) => match v.cast_to(&DataType::Int64)? {
                ScalarValue::Int64(Some(p)) => p,
                _ => return exec_err!("{TIME_PRECISION} takes a constant precision"),
            },
            ColumnarValue::Array(_) => {
                return exec_err!("{TIME_PRECISION} takes a constant precision")
            }
        };
        let target = args.return_field.data_type().clone();
        if target == DataType::Null {
            return Ok(args.args[0].clone());
        }
        let scalar = matches!(args.args[0], ColumnarValue::Scalar(_));
        let values = args.args[0].to_array(args.number_rows)?;
        let values = datafusion::arrow::compute::cast(&values, &target)?;
        let out = round_to_precision(&values, precision as u32)
            .map_err(|e| datafusion::error::DataFusionError::External(Box::new(e)))?;
        if scalar {
            return Ok(ColumnarValue::Scalar(ScalarValue::try_from_array(&out, 0)?));
        }
        Ok(ColumnarValue::Array(out))
    }
}

/// A microsecond timestamp or time array rounded to `precision` decimals of a second, half
/// away from zero (timestamps from 2000-01-01) as PostgreSQL rounds. Other arrays (and precisions of 6 or more) are
/// returned as they are. A time that rounds up to midnight is out of Brook's range (22008:
/// PostgreSQL's times reach 24:00:00, Brook's end before it).
pub fn round_to_precision(
    values: &ArrayRef,
    precision: u32,
) -> std::result::Result<ArrayRef, brook_common::BrookError> {
    if precision as u64 >= MAX_PRECISION {
        return Ok(values.clone());
    }
    let step = 10_i64.pow(6 - precision);
    match values.data_type() {
        DataType::Timestamp(TimeUnit::Microsecond, _) => {
            let a = values.as_primitive::<TimestampMicrosecondType>();
            let rounded = round_each(a, step, PG_EPOCH, i64::MAX)?;
            Ok(Arc::new(rounded.with_data_type(values.data_type().clone())))
        }
        DataType::Time64(TimeUnit::Microsecond) => {
            let a = values.as_primitive::<Time64MicrosecondType>();
            Ok(Arc::new(round_each(a, step, 0, MICROS_PER_DAY - 1)?))
        }
        _ => Ok(values.clone()),
    }
}

/// Each value rounded to a multiple of `step` counted from `origin`; one past `max` is out
/// of range (22008).
fn round_each<T: ArrowPrimitiveType<Native = i64>>(
    a: &PrimitiveArray<T>,
    step: i64,
    origin: i64,
    max: i64,
) -> std::result::Result<PrimitiveArray<T>, brook_common::BrookError> {
    let out_of_range = || {
        brook_err!(
            DatetimeOverflow,
            "time or timestamp out of range after rounding to its precision (Brook's times \
             end before 24:00:00)"
        )
    };
    let failed = std::cell::Cell::new(false);
    let out = a.unary_opt::<_, T>(|v| {
        let half = step / 2;
        let r = v.checked_sub(origin).and_then(|v| {
            if v >= 0 {
                v.checked_add(half).map(|x| x / step * step)
            } else {
                v.checked_neg()
                    .and_then(|n| n.checked_add(half))
                    .map(|x| -(x / step * step))
            }
        });
        let r = r.and_then(|r| r.checked_add(origin));
        match r {
            Some(r) if r <= max => Some(r),
            _ => {
                failed.set(true);
                None
            }
        }
    });
    if failed.get() {
        return Err(out_of_range());
    }
    debug_assert_eq!(out.null_count(), a.null_count());
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::statement;
    use datafusion::arrow::array::{Time64MicrosecondArray, TimestampMicrosecondArray};

    fn rounded(values: Vec<Option<i64>>, precision: u32) -> Vec<Option<i64>> {
        let a: ArrayRef = Arc::new(TimestampMicrosecondArray::from(values));
        let out = round_to_precision(&a, precision).unwrap();
        out.as_primitive::<TimestampMicrosecondType>()
            .iter()
            .collect()
    }

    #[test]
    fn rounds_half_away_from_zero() {
        let e = PG_EPOCH;
        assert_eq!(
            rounded(
                vec![
                    Some(e + 678_000),
                    Some(e + 500_000),
                    Some(e + 499_999),
                    None
                ],
                0
            ),
            vec![Some(e + 1_000_000), Some(e + 1_000_000), Some(e), None]
        );
        // 1970-01-01 00:00:00.5 is before 2000: PostgreSQL's 1970-01-01 00:00:00.
        assert_eq!(rounded(vec![Some(500_000)], 0), vec![Some(0)]);
        // From 2000-01-01: half a second before it rounds back, as in PostgreSQL.
        assert_eq!(
            rounded(
                vec![Some(PG_EPOCH - 500_000), Some(PG_EPOCH - 1_500_000)],
                0
            ),
            vec![Some(PG_EPOCH - 1_000_000), Some(PG_EPOCH - 2_000_000)]
        );
        assert_eq!(rounded(vec![Some(e + 123_456)], 2), vec![Some(e + 120_000)]);
        assert_eq!(rounded(vec![Some(e + 125_000)], 2), vec![Some(e + 130_000)]);
        assert_eq!(rounded(vec![Some(e - 125_000)], 2), vec![Some(e - 130_000)]);
        assert_eq!(rounded(vec![Some(123_456)], 6), vec![Some(123_456)]);
    }

    #[test]
    fn a_time_rounded_to_midnight_is_out_of_range() {
        let a: ArrayRef = Arc::new(Time64MicrosecondArray::from(vec![MICROS_PER_DAY - 100]));
        let e = round_to_precision(&a, 0).unwrap_err();
        assert_eq!(e.sqlstate(), "22008");
        let ok = round_to_precision(&a, 4).unwrap();
        assert_eq!(
            ok.as_primitive::<Time64MicrosecondType>().value(0),
            MICROS_PER_DAY - 100
        );
    }

    #[test]
    fn casts_with_a_precision_are_rounded_casts() {
        let mut stmt = statement(
            "SELECT x::timestamp(0), CAST(y AS time(2) without time zone), \
             z::timestamptz(3), timestamp(1) '2026-01-01 00:00:00.25', w::time, v::timestamp(9)",
        );
        precision_casts(&mut stmt);
        assert_eq!(
            stmt.to_string(),
            "SELECT brook_time_precision(x::TIMESTAMP, 0), \
             brook_time_precision(CAST(y AS TIME WITHOUT TIME ZONE), 2), \
             brook_time_precision(z::TIMESTAMPTZ, 3), \
             brook_time_precision(CAST('2026-01-01 00:00:00.25' AS TIMESTAMP), 1), w::TIME, \
             brook_time_precision(v::TIMESTAMP, 6)"
        );
    }
}
