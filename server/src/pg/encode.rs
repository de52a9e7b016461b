//! Arrow values to PostgreSQL's text and binary wire formats.
//!
//! Written here rather than taken from `arrow-pg` because that crate is tied to an older
//! pgwire (see docs/development.md, "Dependencies"); and PostgreSQL's exact text output (floats, intervals,
//! timestamps) must match byte for byte for clients and differential tests.
//!
//! Hot path: a batch is viewed once per column ([`ColumnView`]), then rows are written
//! cell by cell into one reusable buffer.

use crate::pg::types::PgType;
use brook_common::{brook_err, Result};
use bytes::{BufMut, BytesMut};
use chrono::{DateTime, Datelike, NaiveDate};
use datafusion::arrow::array::*;
use datafusion::arrow::datatypes::{DataType, Field, IntervalUnit, TimeUnit};
use datafusion::arrow::util::display::{ArrayFormatter, FormatOptions};
use postgres_types::Type;
use std::fmt::Write as _;

use datafusion::arrow::array::timezone::Tz as ArrowTz;

const PG_EPOCH_DAYS: i32 = 10_957; // 2000-01-01 - 1970-01-01
const PG_EPOCH_MICROS: i64 = 946_684_800_000_000;

/// A typed view of one column of one batch.
pub enum ColumnView<'a> {
    Bool(&'a BooleanArray),
    I8(&'a Int8Array),
    I16(&'a Int16Array),
    I32(&'a Int32Array),
    I64(&'a Int64Array),
    U8(&'a UInt8Array),
    U16(&'a UInt16Array),
    U32(&'a UInt32Array),
    U64(&'a UInt64Array),
    F32(&'a Float32Array),
    F64(&'a Float64Array),
    Dec(&'a Decimal128Array, u8, i8, bool),
    Str(&'a dyn Array, StrKind),
    Bin(&'a dyn Array),
    Date(&'a Date32Array),
    Ts(&'a dyn Array, TimeUnit, Shown),
    Time(&'a dyn Array, TimeUnit),
    IntervalMdn(&'a IntervalMonthDayNanoArray),
    /// `timestamp - timestamp`: shown as the interval PostgreSQL gives.
    Duration(&'a dyn Array, TimeUnit),
    /// An array; `true` for PostgreSQL's vector types (`int2vector`, `oidvector`: the
    /// catalogs' `indkey`, ...), whose text form is the elements separated by spaces.
    List(&'a dyn Array, bool),
    /// Arrow's Null type (`SELECT NULL AS x`): every row is NULL, though the array has no
    /// null buffer (its `is_null` says false).
    Null(&'a dyn Array),
    /// A record (`ROW(...)`): its fields' views (`crate::pg::record`).
    Record(&'a dyn Array, crate::pg::record::Fields<'a>),
    Other(&'a dyn Array, ArrayFormatter<'a>),
}

/// How a string column is physically stored.
#[derive(Clone, Copy)]
pub enum StrKind {
    Utf8,
    Large,
    View,
}

impl<'a> ColumnView<'a> {
    /// Views of every column of `batch`.
    pub fn of_batch(batch: &'a datafusion::arrow::record_batch::RecordBatch) -> Result<Vec<Self>> {
        let schema = batch.schema();
        batch
            .columns()
            .iter()
            .zip(schema.fields())
            .map(|(c, f)| ColumnView::new(c, f))
            .collect()
    }

    /// View `col`, whose field is `field`.
    pub fn new(col: &'a ArrayRef, field: &Field) -> Result<ColumnView<'a>> {
        let a = col.as_ref();
        Ok(match col.data_type() {
            DataType::Boolean => ColumnView::Bool(a.as_boolean()),
            DataType::Int8 => ColumnView::I8(a.as_primitive()),
            DataType::Int16 => ColumnView::I16(a.as_primitive()),
            DataType::Int32 => ColumnView::I32(a.as_primitive()),
            DataType::Int64 => ColumnView::I64(a.as_primitive()),
            DataType::UInt8 => ColumnView::U8(a.as_primitive()),
            DataType::UInt16 => ColumnView::U16(a.as_primitive()),
            DataType::UInt32 => ColumnView::U32(a.as_primitive()),
            DataType::UInt64 => ColumnView::U64(a.as_primitive()),
            DataType::Float32 => ColumnView::F32(a.as_primitive()),
            DataType::Float64 => ColumnView::F64(a.as_primitive()),
            DataType::Decimal128(p, s) => {
                let trim = match PgType::from_field(field) {
                    Some(PgType::Numeric {
                        precision: None, ..
                    }) => true,
                    Some(_) => *s >= TRIMMED_SCALE,
                    None => trims_by_type(*p, *s),
                };
                ColumnView::Dec(a.as_primitive(), *p, *s, trim)
            }
            DataType::Utf8 => ColumnView::Str(a, StrKind::Utf8),
            DataType::LargeUtf8 => ColumnView::Str(a, StrKind::Large),
            DataType::Utf8View => ColumnView::Str(a, StrKind::View),
            DataType::Binary
            | DataType::LargeBinary
            | DataType::BinaryView
            | DataType::FixedSizeBinary(_) => ColumnView::Bin(a),
            DataType::Date32 => ColumnView::Date(a.as_primitive()),
            DataType::Timestamp(u, tz) => ColumnView::Ts(a, *u, Shown::of(tz.as_deref())),
            DataType::Time32(u) | DataType::Time64(u) => ColumnView::Time(a, *u),
            DataType::Interval(IntervalUnit::MonthDayNano) => {
                ColumnView::IntervalMdn(a.as_primitive())
            }
            DataType::Duration(u) => ColumnView::Duration(a, *u),
            DataType::List(_) | DataType::LargeList(_) | DataType::FixedSizeList(_, _) => {
                let vector = field
                    .metadata()
                    .get(crate::pg::types::PG_TYPE_KEY)
                    .is_some_and(|t| t == VECTOR_TYPE);
                ColumnView::List(a, vector)
            }
            DataType::Null => ColumnView::Null(a),
            DataType::Struct(fields) => {
                let children = a.as_struct().columns();
                let mut views = Vec::with_capacity(children.len());
                for (child, f) in children.iter().zip(fields.iter()) {
                    views.push((ColumnView::new(child, f)?, crate::pg::types::wire_type(f)));
                }
                ColumnView::Record(a, views)
            }
            _ => {
                let opts = FormatOptions::default().with_null("");
                ColumnView::Other(a, ArrayFormatter::try_new(a, &opts)?)
            }
        })
    }

    fn array(&self) -> &dyn Array {
        match self {
            ColumnView::Bool(a) => *a,
            ColumnView::I8(a) => *a,
            ColumnView::I16(a) => *a,
            ColumnView::I32(a) => *a,
            ColumnView::I64(a) => *a,
            ColumnView::U8(a) => *a,
            ColumnView::U16(a) => *a,
            ColumnView::U32(a) => *a,
            ColumnView::U64(a) => *a,
            ColumnView::F32(a) => *a,
            ColumnView::F64(a) => *a,
            ColumnView::Dec(a, ..) => *a,
            ColumnView::Str(a, _)
            | ColumnView::Bin(a)
            | ColumnView::Ts(a, ..)
            | ColumnView::Duration(a, _)
            | ColumnView::Time(a, _) => *a,
            ColumnView::Date(a) => *a,
            ColumnView::IntervalMdn(a) => *a,
            ColumnView::List(a, _)
            | ColumnView::Null(a)
            | ColumnView::Record(a, _)
            | ColumnView::Other(a, _) => *a,
        }
    }

    /// True when row `i` is NULL.
    pub fn is_null(&self, i: usize) -> bool {
        match self {
            ColumnView::Null(_) => true,
            other => other.array().is_null(i),
        }
    }

    /// Append the PostgreSQL text form of row `i` (not NULL) to `out`.
    pub fn write_text(&self, i: usize, out: &mut String) {
        match self {
            ColumnView::Bool(a) => out.push(if a.value(i) { 't' } else { 'f' }),
            ColumnView::I8(a) => push_int(out, a.value(i) as i64),
            ColumnView::I16(a) => push_int(out, a.value(i) as i64),
            ColumnView::I32(a) => push_int(out, a.value(i) as i64),
            ColumnView::I64(a) => push_int(out, a.value(i)),
            ColumnView::U8(a) => push_int(out, a.value(i) as i64),
            ColumnView::U16(a) => push_int(out, a.value(i) as i64),
            ColumnView::U32(a) => push_int(out, a.value(i) as i64),
            ColumnView::U64(a) => {
                let _ = write!(out, "{}", a.value(i));
            }
            ColumnView::F32(a) => format_float(a.value(i) as f64, 6, Some(a.value(i)), out),
            ColumnView::F64(a) => format_float(a.value(i), 15, None, out),
            ColumnView::Dec(a, _, s, trim) => format_decimal(a.value(i), *s, *trim, out),
            ColumnView::Str(a, k) => out.push_str(str_value(*a, *k, i)),
            ColumnView::Bin(a) => {
                out.push_str("\\x");
                for b in bin_value(*a, i) {
                    let _ = write!(out, "{b:02x}");
                }
            }
            ColumnView::Date(a) => format_date(a.value(i), out),
            ColumnView::Ts(a, u, shown) => {
                let micros = to_micros(*a, *u, i);
                match shown {
                    Shown::Naive => format_timestamp(micros, false, out),
                    Shown::Utc => format_timestamp(micros, true, out),
                    Shown::Zone(tz) => format_timestamp_in(micros, tz, out),
                }
            }
            ColumnView::Time(a, u) => format_time(time_micros(*a, *u, i), out),
            ColumnView::IntervalMdn(a) => format_interval(a.value(i), out),
            ColumnView::Duration(a, u) => {
                format_interval(duration_as_interval(duration_micros(*a, *u, i)), out)
            }
            ColumnView::List(a, false) => crate::pg::list::format_list(*a, i, out),
            ColumnView::List(a, true) => crate::pg::list::format_vector(*a, i, out),
            ColumnView::Null(_) => {}
            ColumnView::Record(_, fields) => crate::pg::record::write_text(fields, i, out),
            ColumnView::Other(_, f) => {
                let _ = write!(out, "{}", f.value(i));
            }
        }
    }

    /// Append the PostgreSQL binary form of row `i` (not NULL) for wire type `ty`.
    pub fn write_binary(&self, i: usize, ty: &Type, out: &mut BytesMut) -> Result<()> {
        match self {
            ColumnView::Bool(a) => out.put_u8(u8::from(a.value(i))),
            ColumnView::I8(a) => put_int(out, ty, a.value(i) as i64),
            ColumnView::I16(a) => put_int(out, ty, a.value(i) as i64),
            ColumnView::I32(a) => put_int(out, ty, a.value(i) as i64),
            ColumnView::I64(a) => put_int(out, ty, a.value(i)),
            ColumnView::U8(a) => put_int(out, ty, a.value(i) as i64),
            ColumnView::U16(a) => put_int(out, ty, a.value(i) as i64),
            ColumnView::U32(a) => put_int(out, ty, a.value(i) as i64),
            ColumnView::F32(a) => out.put_f32(a.value(i)),
            ColumnView::F64(a) => out.put_f64(a.value(i)),
            ColumnView::Str(a, k) => {
                let text = str_value(*a, *k, i);
                match *ty {
                    // A uuid is kept as its text; its binary form is its 16 bytes.
                    Type::UUID => put_uuid(out, text)?,
                    Type::JSONB => {
                        out.put_u8(1);
                        out.put_slice(text.as_bytes());
                    }
                    _ => out.put_slice(text.as_bytes()),
                }
            }
            ColumnView::Bin(a) => out.put_slice(bin_value(*a, i)),
            ColumnView::Date(a) => out.put_i32(a.value(i) - PG_EPOCH_DAYS),
            ColumnView::Ts(a, u, _) => out.put_i64(to_micros(*a, *u, i) - PG_EPOCH_MICROS),
            ColumnView::Time(a, u) => out.put_i64(time_micros(*a, *u, i)),
            ColumnView::IntervalMdn(a) => {
                let v = a.value(i);
                out.put_i64(v.nanoseconds / 1000);
                out.put_i32(v.days);
                out.put_i32(v.months);
            }
            ColumnView::Duration(a, u) => {
                let v = duration_as_interval(duration_micros(*a, *u, i));
                out.put_i64(v.nanoseconds / 1000);
                out.put_i32(v.days);
                out.put_i32(v.months);
            }
            ColumnView::U64(_) | ColumnView::Dec(..) => {
                let mut s = String::new();
                self.write_text(i, &mut s);
                if !crate::pg::numeric_binary::write_numeric(&s, out) {
                    return Err(brook_err!(Internal, "numeric text {s} has no binary form"));
                }
            }
            ColumnView::List(a, _) => crate::pg::list::write_binary_list(*a, i, ty, out)?,
            // never asked: every row is NULL
            ColumnView::Null(_) => {}
            ColumnView::Record(_, fields) => crate::pg::record::write_binary(fields, i, out)?,
            ColumnView::Other(..) => {
                return Err(brook_err!(
                    Unsupported,
                    "binary result format for type {} is not supported; request text format",
                    ty.name()
                ))
            }
        }
        Ok(())
    }
}

/// The 16 bytes of a uuid kept as text.
fn put_uuid(out: &mut BytesMut, text: &str) -> Result<()> {
    let b = crate::pg::uuid::parse(text)
        .ok_or_else(|| brook_err!(Internal, "stored uuid {text:?} is not a uuid"))?;
    out.put_slice(&b);
    Ok(())
}

fn put_int(out: &mut BytesMut, ty: &Type, v: i64) {
    match *ty {
        Type::INT2 => out.put_i16(v as i16),
        Type::INT4 => out.put_i32(v as i32),
        Type::OID => out.put_u32(v as u32),
        _ => out.put_i64(v),
    }
}

fn push_int(out: &mut String, v: i64) {
    let _ = write!(out, "{v}");
}

fn str_value(a: &dyn Array, k: StrKind, i: usize) -> &str {
    match k {
        StrKind::Utf8 => a.as_string::<i32>().value(i),
        StrKind::Large => a.as_string::<i64>().value(i),
        StrKind::View => a.as_string_view().value(i),
    }
}

fn bin_value(a: &dyn Array, i: usize) -> &[u8] {
    match a.data_type() {
        DataType::Binary => a.as_binary::<i32>().value(i),
        DataType::LargeBinary => a.as_binary::<i64>().value(i),
        DataType::BinaryView => a.as_binary_view().value(i),
        _ => a.as_fixed_size_binary().value(i),
    }
}

/// PostgreSQL's float output (extra_float_digits = 1): the shortest text that reads back as
/// the same value, in exponent form when the decimal exponent is < -4 or >= `digits`.
pub fn format_float(v: f64, digits: i32, as_f32: Option<f32>, out: &mut String) {
    if v.is_nan() {
        out.push_str("NaN");
        return;
    }
    if v.is_infinite() {
        out.push_str(if v > 0.0 { "Infinity" } else { "-Infinity" });
        return;
    }
    if v == 0.0 {
        out.push_str(if v.is_sign_negative() { "-0" } else { "0" });
        return;
    }
    let sci = match as_f32 {
        Some(f) => format!("{f:e}"),
        None => format!("{v:e}"),
    };
    let (mant, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    if exp < -4 || exp >= digits {
        let _ = write!(
            out,
            "{mant}e{}{:02}",
            if exp < 0 { '-' } else { '+' },
            exp.abs()
        );
    } else {
        match as_f32 {
            Some(f) => {
                let _ = write!(out, "{f}");
            }
            None => {
                let _ = write!(out, "{v}");
            }
        }
    }
}

/// A numeric of this many decimals or more prints without trailing zeros: such a scale
/// comes from a division (`udf::numeric_division`, whose quotients keep PostgreSQL's digits
/// at a wider scale), from arithmetic on one, or from a view or CREATE TABLE AS column that
/// keeps one; PostgreSQL's value has the digits of its own scale and the zeros are Arrow's
/// padding. (A column declared `numeric(p, s)` with s ≥ 20 prints so too: docs/limits.md.)
const TRIMMED_SCALE: i8 = 20;

/// The Arrow type of an unconstrained numeric (`PgType::Numeric` without precision): a
/// computed value of this type (`x::numeric`, a numeric parameter, `x + 0.5` of a numeric
/// column) prints without trailing zeros as the column does, not with Arrow's ten decimals.
const UNCONSTRAINED: (u8, i8) = (38, 10);

/// Whether a computed numeric (no declared type) of Arrow type (p, s) prints without
/// trailing zeros ([`TRIMMED_SCALE`], [`UNCONSTRAINED`]).
pub(crate) fn trims_by_type(p: u8, s: i8) -> bool {
    s >= TRIMMED_SCALE || (p, s) == UNCONSTRAINED
}

/// A numeric's text as the wire writes it, trailing zeros dropped when `trim`.
pub(crate) fn numeric_text(v: i128, scale: i8, trim: bool) -> String {
    let mut out = String::new();
    format_decimal(v, scale, trim, &mut out);
    out
}

fn format_decimal(v: i128, scale: i8, trim: bool, out: &mut String) {
    let neg = v < 0;
    let digits = v.unsigned_abs().to_string();
    if neg {
        out.push('-');
    }
    if scale <= 0 {
        out.push_str(&digits);
        for _ in 0..(-scale) {
            out.push('0');
        }
        return;
    }
    let scale = scale as usize;
    let (int, frac) = if digits.len() > scale {
        let (a, b) = digits.split_at(digits.len() - scale);
        (a.to_string(), b.to_string())
    } else {
        (
            "0".to_string(),
            format!("{}{}", "0".repeat(scale - digits.len()), digits),
        )
    };
    let frac = if trim {
        frac.trim_end_matches('0').to_string()
    } else {
        frac
    };
    out.push_str(&int);
    if !frac.is_empty() {
        out.push('.');
        out.push_str(&frac);
    }
}

fn format_date(days: i32, out: &mut String) {
    match NaiveDate::from_num_days_from_ce_opt(days + 719_163) {
        Some(d) => {
            if push_date(d, out) {
                out.push_str(" BC");
            }
        }
        None => push_int(out, days as i64),
    }
}

/// A date as PostgreSQL prints it: a year of four digits at least (chrono's `%Y` wrote
/// `+10000`), a year before 1 as the year BC (chrono's year 0 is 1 BC). True for BC, which
/// PostgreSQL writes after the whole value.
fn push_date(d: NaiveDate, out: &mut String) -> bool {
    let year = d.year();
    let (shown, bc) = if year < 1 {
        (1 - year, true)
    } else {
        (year, false)
    };
    let _ = write!(out, "{shown:04}-{:02}-{:02}", d.month(), d.day());
    bc
}

fn to_micros(a: &dyn Array, u: TimeUnit, i: usize) -> i64 {
    match u {
        TimeUnit::Second => {
            a.as_primitive::<datafusion::arrow::datatypes::TimestampSecondType>()
                .value(i)
                * 1_000_000
        }
        TimeUnit::Millisecond => {
            a.as_primitive::<datafusion::arrow::datatypes::TimestampMillisecondType>()
                .value(i)
                * 1000
        }
        TimeUnit::Microsecond => a
            .as_primitive::<datafusion::arrow::datatypes::TimestampMicrosecondType>()
            .value(i),
        TimeUnit::Nanosecond => a
            .as_primitive::<datafusion::arrow::datatypes::TimestampNanosecondType>()
            .value(i)
            .div_euclid(1000),
    }
}

fn duration_micros(a: &dyn Array, u: TimeUnit, i: usize) -> i64 {
    use datafusion::arrow::datatypes::*;
    match u {
        TimeUnit::Second => a.as_primitive::<DurationSecondType>().value(i) * 1_000_000,
        TimeUnit::Millisecond => a.as_primitive::<DurationMillisecondType>().value(i) * 1000,
        TimeUnit::Microsecond => a.as_primitive::<DurationMicrosecondType>().value(i),
        TimeUnit::Nanosecond => a.as_primitive::<DurationNanosecondType>().value(i) / 1000,
    }
}

fn time_micros(a: &dyn Array, u: TimeUnit, i: usize) -> i64 {
    use datafusion::arrow::datatypes::*;
    match (a.data_type(), u) {
        (DataType::Time32(_), TimeUnit::Second) => {
            a.as_primitive::<Time32SecondType>().value(i) as i64 * 1_000_000
        }
        (DataType::Time32(_), _) => {
            a.as_primitive::<Time32MillisecondType>().value(i) as i64 * 1000
        }
        (_, TimeUnit::Nanosecond) => a.as_primitive::<Time64NanosecondType>().value(i) / 1000,
        _ => a.as_primitive::<Time64MicrosecondType>().value(i),
    }
}

/// How a timestamp column is shown: a wall-clock time, or an instant in UTC or in the
/// zone its values are labelled with (the session's, `brook_planner::session_time_zone`).
#[derive(Clone, Copy)]
pub enum Shown {
    Naive,
    Utc,
    Zone(ArrowTz),
}

impl Shown {
    fn of(label: Option<&str>) -> Shown {
        match label {
            None => Shown::Naive,
            Some(z) if brook_planner::session_time_zone::is_utc(z) => Shown::Utc,
            // A label Arrow's kernels made the column with, so one it reads.
            Some(z) => z.parse().map_or(Shown::Utc, Shown::Zone),
        }
    }
}

/// An instant as PostgreSQL shows it in a session of zone `tz`: the local time, then the
/// offset east of UTC (`+01`, `-03:30`).
pub fn format_timestamp_in(micros: i64, tz: &ArrowTz, out: &mut String) {
    use chrono::{Offset, TimeZone};
    let Some(utc) = DateTime::from_timestamp_micros(micros) else {
        return push_int(out, micros);
    };
    let offset = tz
        .offset_from_utc_datetime(&utc.naive_utc())
        .fix()
        .local_minus_utc();
    let Some(bc) = push_wall_clock(micros + i64::from(offset) * 1_000_000, out) else {
        return push_int(out, micros);
    };
    out.push(if offset < 0 { '-' } else { '+' });
    let a = offset.abs();
    let _ = write!(out, "{:02}", a / 3600);
    if a % 3600 != 0 {
        let _ = write!(out, ":{:02}", (a / 60) % 60);
        if a % 60 != 0 {
            let _ = write!(out, ":{:02}", a % 60);
        }
    }
    if bc {
        out.push_str(" BC");
    }
}

/// `YYYY-MM-DD HH:MM:SS[.ffffff]` (+00 for an instant shown in UTC).
pub fn format_timestamp(micros: i64, tz: bool, out: &mut String) {
    match push_wall_clock(micros, out) {
        Some(bc) => {
            if tz {
                out.push_str("+00");
            }
            if bc {
                out.push_str(" BC");
            }
        }
        None => push_int(out, micros),
    }
}

/// `YYYY-MM-DD HH:MM:SS[.ffffff]` of `micros` after 1970-01-01 (whether BC: PostgreSQL
/// writes that after the offset); `None`, writing nothing, beyond chrono's range.
fn push_wall_clock(micros: i64, out: &mut String) -> Option<bool> {
    let dt = DateTime::from_timestamp_micros(micros)?;
    let bc = push_date(dt.date_naive(), out);
    let _ = write!(out, " {}", dt.format("%H:%M:%S"));
    push_fraction(micros.rem_euclid(1_000_000), out);
    Some(bc)
}

use brook_common::types::{duration_as_interval, format_interval, push_fraction};

fn format_time(micros: i64, out: &mut String) {
    let secs = micros.div_euclid(1_000_000);
    let _ = write!(
        out,
        "{:02}:{:02}:{:02}",
        secs / 3600,
        (secs / 60) % 60,
        secs % 60
    );
    push_fraction(micros.rem_euclid(1_000_000), out);
}

/// The `brook.pg_type` of a list column shown as a PostgreSQL vector type.
pub const VECTOR_TYPE: &str = "int2vector";

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn years_print_as_postgresql_prints_them() {
        let text = |f: &dyn Fn(&mut String)| {
            let mut s = String::new();
            f(&mut s);
            s
        };
        // 10000-01-01 is day 2,932,897 after 1970-01-01; 1 BC is chrono's year 0.
        assert_eq!(text(&|s| format_date(2_932_897, s)), "10000-01-01");
        assert_eq!(text(&|s| format_date(-719_163, s)), "0001-12-31 BC");
        let bc_noon = -719_163 * 86_400_000_000 + 43_200_000_000;
        assert_eq!(
            text(&|s| format_timestamp(bc_noon, true, s)),
            "0001-12-31 12:00:00+00 BC"
        );
        let berlin: ArrowTz = "+01:00".parse().unwrap();
        assert_eq!(
            text(&|s| format_timestamp_in(bc_noon, &berlin, s)),
            "0001-12-31 13:00:00+01 BC"
        );
    }

    fn f64s(v: f64) -> String {
        let mut s = String::new();
        format_float(v, 15, None, &mut s);
        s
    }

    /// `SELECT NULL AS x` is a column of Arrow's Null type, whose rows are NULL though it
    /// has no null buffer: they go out as NULL, not as empty strings.
    #[test]
    fn an_untyped_null_column_is_null() {
        let col: ArrayRef = Arc::new(datafusion::arrow::array::NullArray::new(2));
        let view = ColumnView::new(&col, &Field::new("x", DataType::Null, true)).unwrap();
        assert!(view.is_null(0) && view.is_null(1));
    }

    #[test]
    fn uuid_text_goes_as_its_sixteen_bytes() {
        let mut out = BytesMut::new();
        put_uuid(&mut out, "01020304-0506-0708-090a-0b0c0d0e0f10").unwrap();
        assert_eq!(out.as_ref(), (1..=16).collect::<Vec<u8>>().as_slice());
        assert!(put_uuid(&mut BytesMut::new(), "not-a-uuid").is_err());
    }

    #[test]
    fn floats_print_as_postgres() {
        assert_eq!(f64s(0.1), "0.1");
        assert_eq!(f64s(1e20), "1e+20");
        assert_eq!(f64s(1.5e-7), "1.5e-07");
        assert_eq!(f64s(123456.0), "123456");
        assert_eq!(f64s(-2.5), "-2.5");
        assert_eq!(f64s(f64::NAN), "NaN");
        let mut s = String::new();
        format_float(1e6, 6, Some(1e6f32), &mut s);
        assert_eq!(s, "1e+06");
    }

    #[test]
    fn decimals_and_intervals() {
        let mut s = String::new();
        format_decimal(-12345, 2, false, &mut s);
        assert_eq!(s, "-123.45");
        s.clear();
        format_decimal(15_000_000_000, 10, true, &mut s);
        assert_eq!(s, "1.5");
        s.clear();
        format_decimal(5, 3, false, &mut s);
        assert_eq!(s, "0.005");
        s.clear();
        format_interval(
            datafusion::arrow::datatypes::IntervalMonthDayNano {
                months: 14,
                days: 3,
                nanoseconds: 4 * 3_600_000_000_000 + 500_000_000,
            },
            &mut s,
        );
        assert_eq!(s, "1 year 2 mons 3 days 04:00:00.5");
    }

    #[test]
    fn timestamps() {
        let mut s = String::new();
        format_timestamp(1_767_225_600_000_000, false, &mut s);
        assert_eq!(s, "2026-01-01 00:00:00");
        s.clear();
        format_timestamp(1_767_225_600_250_000, true, &mut s);
        assert_eq!(s, "2026-01-01 00:00:00.25+00");
        for (zone, want) in [
            ("Europe/Berlin", "2026-01-01 01:00:00.25+01"),
            ("America/St_Johns", "2025-12-31 20:30:00.25-03:30"),
            ("+05:45", "2026-01-01 05:45:00.25+05:45"),
        ] {
            s.clear();
            let tz: ArrowTz = zone.parse().expect("a zone");
            format_timestamp_in(1_767_225_600_250_000, &tz, &mut s);
            assert_eq!(s, want, "{zone}");
        }
    }

    #[test]
    fn binary_arrays_read_back_with_postgres_types() {
        use datafusion::arrow::datatypes::Int64Type;
        use postgres_types::FromSql;
        let list: ArrayRef = Arc::new(ListArray::from_iter_primitive::<Int64Type, _, _>(vec![
            Some(vec![Some(5), None, Some(-1)]),
            Some(vec![]),
        ]));
        let field = Field::new("l", list.data_type().clone(), true);
        let view = ColumnView::new(&list, &field).unwrap();
        let mut out = BytesMut::new();
        view.write_binary(0, &Type::INT8_ARRAY, &mut out).unwrap();
        let back = Vec::<Option<i64>>::from_sql(&Type::INT8_ARRAY, &out).unwrap();
        assert_eq!(back, vec![Some(5), None, Some(-1)]);
        out.clear();
        view.write_binary(1, &Type::INT8_ARRAY, &mut out).unwrap();
        assert!(Vec::<i64>::from_sql(&Type::INT8_ARRAY, &out)
            .unwrap()
            .is_empty());

        let words: ArrayRef = Arc::new(ListArray::new(
            Arc::new(Field::new_list_field(DataType::Utf8, true)),
            datafusion::arrow::buffer::OffsetBuffer::from_lengths([2]),
            Arc::new(StringArray::from(vec!["a b", "c"])),
            None,
        ));
        let field = Field::new("w", words.data_type().clone(), true);
        let view = ColumnView::new(&words, &field).unwrap();
        out.clear();
        view.write_binary(0, &Type::TEXT_ARRAY, &mut out).unwrap();
        let back = Vec::<String>::from_sql(&Type::TEXT_ARRAY, &out).unwrap();
        assert_eq!(back, vec!["a b".to_string(), "c".to_string()]);
    }
}
