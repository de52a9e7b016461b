//! Values converted to a table column's type with PostgreSQL's assignment rules.

use crate::catalog::RelationMeta;
use crate::pg::types::PgType;
use brook_common::{brook_err, BrookError, Result};
use datafusion::arrow::array::{Array, ArrayRef, AsArray, ListArray, RecordBatch};
use datafusion::arrow::compute::{cast_with_options, CastOptions};
use datafusion::arrow::datatypes::{DataType, Field, TimeUnit};
use std::sync::Arc;

/// Convert a value column to a table column's type with PostgreSQL's assignment rules:
/// text is parsed as input of the type; numbers convert when they fit (22003 otherwise).
pub fn coerce_column(
    col: &ArrayRef,
    field: &Field,
    ty: &PgType,
    name: &str,
    zone: Option<&str>,
) -> Result<ArrayRef> {
    if let Some(p) = ty.precision() {
        // `timestamp(0)`: the value converted as to `timestamp`, then rounded.
        let out = coerce_column(col, field, &ty.without_precision(), name, zone)?;
        return brook_planner::time_precision::round_to_precision(&out, p as u32);
    }
    if let PgType::Array(elem) = ty {
        if let Some(list) = as_list(col)? {
            return coerce_elements(&list, elem, name, zone);
        }
    }
    let target = ty.arrow();
    // A uuid, JSON and XML are kept as text, but not any text: they go through the checks
    // below.
    let checked_text = matches!(
        ty,
        PgType::Uuid | PgType::Json | PgType::Jsonb | PgType::Xml
    );
    if col.data_type() == &target && !checked_text {
        crate::copy::check_lengths(col, ty, &|r| r as u64 + 1, "", name).map_err(|e| match e {
            BrookError::StringTooLong(_) => {
                brook_err!(StringTooLong, "value too long for type {}", ty.name())
            }
            other => other,
        })?;
        return Ok(col.clone());
    }
    let _ = field;
    match col.data_type() {
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => {
            let s = cast_with_options(col, &DataType::Utf8, &CastOptions::default())?;
            crate::copy::text_to_column(&s, ty, zone, &|r| r as u64 + 1, "", name).map_err(|e| {
                match e {
                    BrookError::InvalidText(m) => {
                        BrookError::InvalidText(m.split(" (COPY").next().unwrap_or(&m).to_string())
                    }
                    BrookError::OutOfRange(m) => {
                        BrookError::OutOfRange(m.split(" (COPY").next().unwrap_or(&m).to_string())
                    }
                    BrookError::InvalidXmlContent(m) => BrookError::InvalidXmlContent(
                        m.split(" (COPY").next().unwrap_or(&m).to_string(),
                    ),
                    BrookError::StringTooLong(_) => {
                        brook_err!(StringTooLong, "value too long for type {}", ty.name())
                    }
                    other => other,
                }
            })
        }
        DataType::Null => Ok(datafusion::arrow::array::new_null_array(&target, col.len())),
        src => {
            if !assignable(src, ty) {
                return Err(brook_err!(
                    DatatypeMismatch,
                    "column \"{name}\" is of type {} but expression is of type {}",
                    ty.name(),
                    crate::pg::types::typeof_name(src)
                ));
            }
            if matches!(ty, PgType::Float4 | PgType::Float8) {
                if let DataType::Decimal128(p, s) = src {
                    return decimals_as_floats(col, *p, *s, &target);
                }
            }
            if let (PgType::Timestamptz(_), Some(z)) = (ty, zone) {
                if let Some(local) = wall_clock_as_instant(col, z)? {
                    return Ok(local);
                }
            }
            // An instant assigned to a date column: its local date in the session's zone.
            if let (PgType::Date, Some(z), DataType::Timestamp(_, Some(_))) = (ty, zone, src) {
                let local = DataType::Timestamp(TimeUnit::Microsecond, Some(z.into()));
                let labelled = cast_with_options(col, &local, &CastOptions::default())?;
                return Ok(cast_with_options(
                    &labelled,
                    &target,
                    &CastOptions::default(),
                )?);
            }
            // An instant assigned to a timestamp (without time zone) column: its local
            // wall-clock time in the session's zone.
            if let (PgType::Timestamp(_), Some(z), DataType::Timestamp(_, Some(_))) =
                (ty, zone, src)
            {
                let local = DataType::Timestamp(TimeUnit::Microsecond, Some(z.into()));
                let labelled = cast_with_options(col, &local, &CastOptions::default())?;
                return Ok(brook_planner::session_time_zone::wall_clock(&labelled)?);
            }
            // A timestamp assigned to a time column: its time of day (an instant's in the
            // session's zone), as PostgreSQL's assignment cast gives.
            if let (PgType::Time(_), DataType::Timestamp(_, tz)) = (ty, src) {
                let wall = match (tz, zone) {
                    (Some(_), Some(z)) => {
                        let local = DataType::Timestamp(TimeUnit::Microsecond, Some(z.into()));
                        let labelled = cast_with_options(col, &local, &CastOptions::default())?;
                        brook_planner::session_time_zone::wall_clock(&labelled)?
                    }
                    _ => col.clone(),
                };
                return Ok(cast_with_options(&wall, &target, &CastOptions::default())?);
            }
            if let (
                PgType::Numeric {
                    precision: None,
                    scale,
                },
                DataType::Decimal128(_, s),
            ) = (ty, src)
            {
                let keeps = scale.unwrap_or(brook_planner::numeric_text::UNCONSTRAINED_SCALE);
                check_decimals_kept(col, *s, keeps)?;
            }
            let rounded = round_floats_for_int(col, ty)?;
            let out = cast_with_options(
                &rounded,
                &target,
                &CastOptions {
                    safe: true,
                    ..Default::default()
                },
            )?;
            if out.null_count() != col.null_count() {
                return Err(brook_err!(OutOfRange, "{} out of range", ty.name()));
            }
            if matches!(ty, PgType::Float4) {
                check_real_range(col, &out)?;
            }
            Ok(out)
        }
    }
}

/// Decimals of scale `scale` assigned to an unconstrained numeric column, which keeps
/// `keeps` decimals (PostgreSQL's keeps every digit): refused (22003) when one would be
/// rounded, rather than stored with digits lost.
fn check_decimals_kept(col: &ArrayRef, scale: i8, keeps: i8) -> Result<()> {
    let values = col.as_primitive::<datafusion::arrow::datatypes::Decimal128Type>();
    brook_planner::numeric_text::check_decimals_kept(values, scale, keeps)
}

/// A timestamp without time zone or a date assigned to a timestamptz column in a session of
/// zone `zone` (not UTC): the instant its wall-clock time names there (Arrow's cast from a
/// timestamp without zone reads it so), labelled as stored. None for other columns.
fn wall_clock_as_instant(col: &ArrayRef, zone: &str) -> Result<Option<ArrayRef>> {
    let naive = DataType::Timestamp(TimeUnit::Microsecond, None);
    let col = match col.data_type() {
        DataType::Timestamp(_, None) => col.clone(),
        DataType::Date32 | DataType::Date64 => {
            cast_with_options(col, &naive, &CastOptions::default())?
        }
        _ => return Ok(None),
    };
    let instants = brook_planner::session_time_zone::local_instants(&col, zone)?;
    Ok(Some(cast_with_options(
        &instants,
        &PgType::Timestamptz(None).arrow(),
        &CastOptions::default(),
    )?))
}

/// A list column of any Arrow list layout as `List`, or `None` for other columns.
fn as_list(col: &ArrayRef) -> Result<Option<ListArray>> {
    let item = match col.data_type() {
        DataType::List(_) => return Ok(Some(col.as_list::<i32>().clone())),
        DataType::LargeList(f) | DataType::FixedSizeList(f, _) | DataType::ListView(f) => f,
        _ => return Ok(None),
    };
    let as_list = DataType::List(Arc::new(Field::new_list_field(
        item.data_type().clone(),
        true,
    )));
    let cast = cast_with_options(col, &as_list, &CastOptions::default())?;
    Ok(Some(cast.as_list::<i32>().clone()))
}

/// A list's elements assigned to an array column's element type, each as a value of that
/// type is (`ARRAY[1.5]` into `integer[]` rounds, `ARRAY['abc']` into `varchar(2)[]` is
/// 22001).
fn coerce_elements(
    list: &ListArray,
    elem: &PgType,
    name: &str,
    zone: Option<&str>,
) -> Result<ArrayRef> {
    let field = Field::new_list_field(list.values().data_type().clone(), true);
    let values = coerce_column(list.values(), &field, elem, name, zone)?;
    Ok(Arc::new(ListArray::try_new(
        Arc::new(Field::new_list_field(elem.arrow(), true)),
        list.offsets().clone(),
        values,
        list.nulls().cloned(),
    )?))
}

/// PostgreSQL rounds when a fraction is assigned to an integer column: a float half to
/// even (`rint`), a numeric half away from zero (Arrow's casts truncate).
pub(crate) fn round_floats_for_int(col: &ArrayRef, ty: &PgType) -> Result<ArrayRef> {
    use datafusion::arrow::array::Float64Array;
    if !matches!(ty, PgType::Int2 | PgType::Int4 | PgType::Int8) {
        return Ok(col.clone());
    }
    if let DataType::Decimal128(p, s) = col.data_type() {
        return round_decimals(col, *p, *s);
    }
    if !matches!(col.data_type(), DataType::Float32 | DataType::Float64) {
        return Ok(col.clone());
    }
    let f = cast_with_options(col, &DataType::Float64, &CastOptions::default())?;
    let f = f
        .as_any()
        .downcast_ref::<Float64Array>()
        .ok_or_else(|| brook_err!(Internal, "float cast"))?;
    let r: Float64Array = f.iter().map(|v| v.map(f64::round_ties_even)).collect();
    Ok(Arc::new(r))
}

/// Numerics stored into a double column: each the double its digits name, correctly rounded
/// (Arrow's cast divides by a power of ten, off by one unit in the last place for some:
/// `0.12345678901234567` became `0.12345678901234568`).
fn decimals_as_floats(col: &ArrayRef, p: u8, s: i8, target: &DataType) -> Result<ArrayRef> {
    use datafusion::arrow::array::Float64Array;
    use datafusion::arrow::datatypes::{Decimal128Type, DecimalType};
    let floats: Float64Array = col
        .as_primitive::<Decimal128Type>()
        .iter()
        .map(|v| v.and_then(|v| Decimal128Type::format_decimal(v, p, s).parse::<f64>().ok()))
        .collect();
    Ok(cast_with_options(
        &(Arc::new(floats) as ArrayRef),
        target,
        &CastOptions::default(),
    )?)
}

/// Values stored into a real column that a real cannot hold are 22003, as PostgreSQL says;
/// Arrow's cast made them infinity or zero (`3.5e38`, `1e-46`).
fn check_real_range(input: &ArrayRef, out: &ArrayRef) -> Result<()> {
    use datafusion::arrow::datatypes::{Float32Type, Float64Type};
    let wide = cast_with_options(input, &DataType::Float64, &CastOptions::default())?;
    let wide = wide.as_primitive::<Float64Type>();
    let narrow = out.as_primitive::<Float32Type>();
    for i in 0..narrow.len().min(wide.len()) {
        if narrow.is_null(i) || wide.is_null(i) {
            continue;
        }
        let (w, n) = (wide.value(i), narrow.value(i));
        if w.is_finite() && n.is_infinite() {
            return Err(brook_err!(OutOfRange, "value out of range: overflow"));
        }
        if w != 0.0 && n == 0.0 {
            return Err(brook_err!(OutOfRange, "value out of range: underflow"));
        }
    }
    Ok(())
}

/// Decimals of scale `s` > 0 rounded half away from zero to scale 0.
fn round_decimals(col: &ArrayRef, p: u8, s: i8) -> Result<ArrayRef> {
    use datafusion::arrow::array::Decimal128Array;
    use datafusion::arrow::datatypes::Decimal128Type;
    if s <= 0 {
        return Ok(col.clone());
    }
    let unit = 10i128.pow(u32::from(s.unsigned_abs()));
    let r: Decimal128Array = col.as_primitive::<Decimal128Type>().unary(|v| {
        let (q, rem) = (v / unit, v % unit);
        if rem.abs() * 2 >= unit {
            q + v.signum()
        } else {
            q
        }
    });
    Ok(Arc::new(r.with_precision_and_scale(p, 0)?))
}

/// Which value types may be stored into a column of type `ty` without an explicit cast.
pub(crate) fn assignable(src: &DataType, ty: &PgType) -> bool {
    let numeric_src = src.is_numeric();
    match ty {
        PgType::Int2
        | PgType::Int4
        | PgType::Int8
        | PgType::Float4
        | PgType::Float8
        | PgType::Numeric { .. } => numeric_src,
        PgType::Bool => matches!(src, DataType::Boolean),
        PgType::Text
        | PgType::Varchar(_)
        | PgType::Char(_)
        | PgType::Json
        | PgType::Jsonb
        | PgType::Uuid
        | PgType::Xml => true,
        PgType::Bytea => matches!(
            src,
            DataType::Binary | DataType::LargeBinary | DataType::BinaryView
        ),
        PgType::Date => matches!(
            src,
            DataType::Date32 | DataType::Date64 | DataType::Timestamp(_, _)
        ),
        PgType::Timestamp(_) | PgType::Timestamptz(_) => matches!(
            src,
            DataType::Timestamp(_, _) | DataType::Date32 | DataType::Date64
        ),
        PgType::Time(_) => matches!(
            src,
            DataType::Time32(_) | DataType::Time64(_) | DataType::Timestamp(_, _)
        ),
        PgType::Interval => matches!(src, DataType::Interval(_) | DataType::Duration(_)),
        // A list is assigned element by element before this is asked.
        PgType::Array(_) => false,
    }
}

/// Cast a query result (relation columns first, in order) to the relation's types and
/// check NOT NULL: the rows a rewrite writes back.
pub(crate) fn to_relation_batch(
    meta: &RelationMeta,
    name: &str,
    b: &RecordBatch,
    zone: Option<&str>,
) -> Result<RecordBatch> {
    let bs = b.schema();
    let mut cols = Vec::with_capacity(meta.columns.len());
    for (i, c) in meta.columns.iter().enumerate() {
        let a = coerce_column(b.column(i), bs.field(i), &c.ty, &c.name, zone)?;
        if c.not_null && a.null_count() > 0 {
            return Err(brook_err!(
                NotNullViolation,
                "null value in column \"{}\" of relation \"{name}\" violates not-null constraint",
                c.name
            ));
        }
        cols.push(a);
    }
    Ok(RecordBatch::try_new_with_options(
        meta.schema(),
        cols,
        &datafusion::arrow::array::RecordBatchOptions::new().with_row_count(Some(b.num_rows())),
    )?)
}
