//! Whole columns of COPY text (or binary values) converted to the relation's Arrow types; a
//! value that fails is located to report its line, as PostgreSQL does.

use crate::pg::fast_text::RawText;
use crate::pg::types::PgType;
use brook_common::{brook_err, BrookError, Result};
use brook_planner::datetime_input::{self, Clock, Target};
use datafusion::arrow::array::{Array, ArrayRef, BinaryBuilder};
use datafusion::arrow::compute::{cast_with_options, CastOptions};
use datafusion::arrow::datatypes::{DataType, TimeUnit};
use std::sync::Arc;

/// Cast a column of text to a column type, reporting the first bad value as PostgreSQL does
/// (22P02 for malformed input, 22003 for out-of-range numbers, 22001 for too-long strings).
///
/// Long because it is one flat dispatch on the column type (each arm a few lines), kept in
/// one place so the order of the checks is visible.
pub fn text_to_column(
    strings: &ArrayRef,
    ty: &PgType,
    zone: Option<&str>,
    line_of: &dyn Fn(usize) -> u64,
    table: &str,
    column: &str,
) -> Result<ArrayRef> {
    if let Some(p) = ty.precision() {
        // `timestamp(0)`: the text read as a `timestamp`, then rounded.
        let plain = ty.without_precision();
        let out = text_to_column(strings, &plain, zone, line_of, table, column)?;
        return brook_planner::time_precision::round_to_precision(&out, p as u32);
    }
    if let PgType::Array(elem) = ty {
        return super::array::text_arrays(strings, elem, zone, line_of, table, column);
    }
    // A timestamptz without an offset is a local time of the session's zone: read in it,
    // then labelled as stored (the same instants).
    let local = matches!(ty, PgType::Timestamptz(_))
        .then_some(zone)
        .flatten();
    let target = match local {
        Some(z) => DataType::Timestamp(TimeUnit::Microsecond, Some(z.into())),
        None => ty.arrow(),
    };
    if *ty == PgType::Bytea {
        // PostgreSQL's hex or escape format, not the text's own bytes.
        let text = cast_with_options(
            strings,
            &datafusion::arrow::datatypes::DataType::Utf8,
            &CastOptions::default(),
        )?;
        let mut b = BinaryBuilder::new();
        for (r, v) in datafusion::arrow::array::AsArray::as_string::<i32>(&text)
            .iter()
            .enumerate()
        {
            match v {
                None => b.append_null(),
                Some(v) => b.append_value(
                    brook_planner::bytea::parse_bytea(v.as_bytes()).ok_or_else(|| {
                        brook_err!(
                            InvalidText,
                            "invalid input syntax for type bytea (COPY {table}, line {})",
                            line_of(r)
                        )
                    })?,
                ),
            }
        }
        return Ok(Arc::new(b.finish()));
    }
    let prepared: ArrayRef = match ty {
        PgType::Bool => {
            let s = strings
                .as_any()
                .downcast_ref::<datafusion::arrow::array::StringArray>();
            match s {
                Some(s) => Arc::new(
                    s.iter()
                        .map(|v| v.map(|v| v.trim().to_ascii_lowercase()))
                        .collect::<datafusion::arrow::array::StringArray>(),
                ),
                None => strings.clone(),
            }
        }
        PgType::Interval => normalize_intervals(strings),
        // Kept as given once checked to be well-formed XML content.
        PgType::Xml => {
            return each_text(strings, |r, v| {
                crate::pg::xml::check_content(v).map_err(|e| {
                    brook_err!(
                        InvalidXmlContent,
                        "{e} (COPY {table}, line {}, column {column})",
                        line_of(r)
                    )
                })?;
                Ok(v.to_string())
            })
        }
        // Checked as PostgreSQL's input does; jsonb kept as PostgreSQL prints it.
        PgType::Json | PgType::Jsonb => {
            return each_text(strings, |r, v| {
                crate::pg::json::stored(v, *ty == PgType::Jsonb).map_err(|e| match e {
                    BrookError::InvalidText(m) => brook_err!(
                        InvalidText,
                        "{m} (COPY {table}, line {}, column {column})",
                        line_of(r)
                    ),
                    other => other,
                })
            })
        }
        // Kept as canonical text: any input form PostgreSQL accepts, checked here.
        PgType::Uuid => {
            return each_text(strings, |r, v| {
                crate::pg::uuid::canonical(v).ok_or_else(|| {
                    brook_err!(
                        InvalidText,
                        "invalid input syntax for type uuid: \"{v}\" (COPY {table}, line {})",
                        line_of(r)
                    )
                })
            })
        }
        PgType::Timestamp(_) => {
            let fast = strings
                .as_any()
                .downcast_ref::<datafusion::arrow::array::StringArray>()
                .and_then(|s| crate::pg::datetime::fast_timestamps(&RawText::of_strings(s)));
            if let Some(fast) = fast {
                return Ok(fast);
            }
            read_datetimes(strings, Target::Timestamp, zone, line_of, table, column)?
        }
        PgType::Timestamptz(_) => {
            read_datetimes(strings, Target::Timestamptz, zone, line_of, table, column)?
        }
        PgType::Numeric { precision, scale } => {
            // An unconstrained numeric (Brook's keeps a fixed number of decimals) refuses
            // text it would round; a declared scale rounds, as PostgreSQL's does.
            let keeps = precision
                .is_none()
                .then(|| scale.unwrap_or(brook_planner::numeric_text::UNCONSTRAINED_SCALE));
            numerics_written_out(strings, keeps, &|r| copy_context(line_of, r, table, column))?
        }
        PgType::Date => read_datetimes(strings, Target::Date, zone, line_of, table, column)?,
        PgType::Time(_) => {
            let text = cast_with_options(strings, &DataType::Utf8, &CastOptions::default())?;
            let times = brook_common::time_text::time_array(
                datafusion::arrow::array::AsArray::as_string::<i32>(&text),
                |r, v, why| why.for_text(v, &copy_context(line_of, r, table, column)),
            )?;
            return Ok(Arc::new(times));
        }
        _ => strings.clone(),
    };
    let out = cast_with_options(
        &prepared,
        &target,
        &CastOptions {
            safe: true,
            ..Default::default()
        },
    )?;
    if out.null_count() != strings.null_count() {
        let s = strings
            .as_any()
            .downcast_ref::<datafusion::arrow::array::StringArray>();
        let bad = (0..out.len())
            .find(|&r| out.is_null(r) && !strings.is_null(r))
            .unwrap_or(0);
        let text = s.map(|s| s.value(bad).to_string()).unwrap_or_default();
        let numeric_like = text.trim().parse::<f64>().is_ok();
        let is_numeric_type = matches!(
            ty,
            PgType::Int2
                | PgType::Int4
                | PgType::Int8
                | PgType::Numeric { .. }
                | PgType::Float4
                | PgType::Float8
        );
        let ctx = format!(
            "(COPY {table}, line {}, column {column}: \"{text}\")",
            line_of(bad)
        );
        let is_datetime_type = matches!(
            ty,
            PgType::Date | PgType::Time(_) | PgType::Timestamp(_) | PgType::Timestamptz(_)
        );
        return Err(if is_numeric_type && numeric_like {
            brook_err!(
                OutOfRange,
                "value \"{text}\" is out of range for type {} {ctx}",
                ty.name()
            )
        } else if is_datetime_type {
            // PostgreSQL: a well-formed value with a field out of range is 22008, other
            // text 22007.
            if brook_common::error::is_well_formed_datetime(&text) {
                brook_err!(
                    DatetimeOverflow,
                    "date/time field value out of range: \"{text}\" {ctx}"
                )
            } else {
                brook_err!(
                    InvalidDatetime,
                    "invalid input syntax for type {}: \"{text}\" {ctx}",
                    ty.name()
                )
            }
        } else {
            brook_err!(
                InvalidText,
                "invalid input syntax for type {}: \"{text}\" {ctx}",
                ty.name()
            )
        });
    }
    check_lengths(&out, ty, line_of, table, column)?;
    if matches!(ty, PgType::Float4 | PgType::Float8) {
        if let Some(bad) = float_out_of_range(strings, &out) {
            return Err(brook_err!(
                OutOfRange,
                "\"{bad}\" is out of range for type {} (COPY {table}, column {column})",
                ty.name()
            ));
        }
    }
    if local.is_some() {
        return Ok(cast_with_options(
            &out,
            &ty.arrow(),
            &CastOptions::default(),
        )?);
    }
    Ok(out)
}

/// The first text a real or double cannot hold: Rust's parser makes a too-large one
/// infinity and a too-small one zero, where PostgreSQL reports 22003.
fn float_out_of_range(strings: &ArrayRef, out: &ArrayRef) -> Option<String> {
    let floats = cast_with_options(
        out,
        &datafusion::arrow::datatypes::DataType::Float64,
        &CastOptions::default(),
    )
    .ok()?;
    let floats = datafusion::arrow::array::AsArray::as_primitive::<
        datafusion::arrow::datatypes::Float64Type,
    >(&floats);
    // Only an infinity or a zero can be out of range: the text of the rest is not read.
    let suspect = |v: f64| v.is_infinite() || v == 0.0;
    if !floats.values().iter().copied().any(suspect) {
        return None;
    }
    let text = strings
        .as_any()
        .downcast_ref::<datafusion::arrow::array::StringArray>()?;
    (0..floats.len()).find_map(|r| {
        if floats.is_null(r) || text.is_null(r) || !suspect(floats.value(r)) {
            return None;
        }
        let (v, t) = (floats.value(r), text.value(r).trim());
        let named = t.trim_start_matches(['+', '-']).to_ascii_lowercase();
        let infinite_text = named == "inf" || named == "infinity";
        let mantissa = t.split(['e', 'E']).next().unwrap_or("");
        let nonzero_text = mantissa.chars().any(|c| ('1'..='9').contains(&c));
        ((v.is_infinite() && !infinite_text) || (v == 0.0 && nonzero_text)).then(|| t.to_string())
    })
}

/// Numeric texts in exponent notation (`1.5e-3`) in plain digits, which Arrow's decimal
/// parser reads (it refused them: `COPY` of `1e1` into a numeric column was 22003), and
/// `NaN`/`Infinity` 0A000 (`brook_planner::numeric_text::numeric_input`); the array itself
/// when no text has an `e` or an `n`. With `keeps` (an unconstrained numeric's decimals),
/// a text of more decimals is refused (22003, `context` saying where) rather than rounded.
fn numerics_written_out(
    strings: &ArrayRef,
    keeps: Option<i8>,
    context: &dyn Fn(usize) -> String,
) -> Result<ArrayRef> {
    use brook_planner::numeric_text::{check_kept, numeric_input};
    let text = cast_with_options(
        strings,
        &datafusion::arrow::datatypes::DataType::Utf8,
        &CastOptions::default(),
    )?;
    let text = datafusion::arrow::array::AsArray::as_string::<i32>(&text);
    let mut to_read = false;
    for (r, v) in text.iter().enumerate() {
        let Some(v) = v else { continue };
        let written = v.contains(['e', 'E', 'n', 'N']);
        to_read |= written;
        if let Some(scale) = keeps {
            let plain = if written {
                numeric_input(v)?
            } else {
                std::borrow::Cow::Borrowed(v)
            };
            check_kept(&format!("\"{v}\""), &plain, scale).map_err(|e| match e {
                BrookError::OutOfRange(m) => BrookError::OutOfRange(format!("{m}{}", context(r))),
                other => other,
            })?;
        }
    }
    if !to_read {
        return Ok(strings.clone());
    }
    each_text(strings, |_, v| {
        brook_planner::numeric_text::numeric_input(v).map(std::borrow::Cow::into_owned)
    })
}

/// Each non-NULL text of `strings` (given its row) as `convert` makes it, or its error.
fn each_text(
    strings: &ArrayRef,
    convert: impl Fn(usize, &str) -> Result<String>,
) -> Result<ArrayRef> {
    let text = cast_with_options(
        strings,
        &datafusion::arrow::datatypes::DataType::Utf8,
        &CastOptions::default(),
    )?;
    let text = datafusion::arrow::array::AsArray::as_string::<i32>(&text);
    let mut out = datafusion::arrow::array::StringBuilder::new();
    for (r, v) in text.iter().enumerate() {
        match v {
            None => out.append_null(),
            Some(v) => out.append_value(convert(r, v)?),
        }
    }
    Ok(Arc::new(out.finish()))
}

/// Where a bad value came from, for its error: ` (COPY t, line 2, column c)`; nothing for an
/// INSERT's values, which come here without a table.
fn copy_context(line_of: &dyn Fn(usize) -> u64, row: usize, table: &str, column: &str) -> String {
    if table.is_empty() {
        String::new()
    } else {
        format!(" (COPY {table}, line {}, column {column})", line_of(row))
    }
}

/// Dates and timestamps in PostgreSQL's forms read as their values
/// (`brook_planner::datetime_input`; `now` and `today` on this instant's clock, text
/// without a zone in the session's `zone`): an array of `Date32`, `Timestamp(µs)` or
/// `Timestamp(µs, "+00:00")`.
fn read_datetimes(
    strings: &ArrayRef,
    target: Target,
    zone: Option<&str>,
    line_of: &dyn Fn(usize) -> u64,
    table: &str,
    column: &str,
) -> Result<ArrayRef> {
    let text = cast_with_options(strings, &DataType::Utf8, &CastOptions::default())?;
    datetime_input::read_array(
        datafusion::arrow::array::AsArray::as_string::<i32>(&text),
        target,
        &Clock::now(zone),
        |r, v, why| why.for_text(target, v, &copy_context(line_of, r, table, column)),
    )
}

/// varchar(n)/char(n) reject longer values (22001), as PostgreSQL does.
pub fn check_lengths(
    col: &ArrayRef,
    ty: &PgType,
    line_of: &dyn Fn(usize) -> u64,
    table: &str,
    column: &str,
) -> Result<()> {
    let limit = match ty {
        PgType::Varchar(Some(n)) | PgType::Char(Some(n)) => *n as usize,
        _ => return Ok(()),
    };
    if let Some(s) = col
        .as_any()
        .downcast_ref::<datafusion::arrow::array::StringArray>()
    {
        for (r, v) in s.iter().enumerate() {
            if let Some(v) = v {
                if v.chars().count() > limit && v.trim_end_matches(' ').chars().count() > limit {
                    return Err(brook_err!(
                        StringTooLong,
                        "value too long for type {} (COPY {table}, line {}, column {column})",
                        ty.name(),
                        line_of(r)
                    ));
                }
            }
        }
    }
    Ok(())
}

/// Arrow parses `1 day 02:00:00` poorly; rewrite PostgreSQL's `HH:MM:SS` part into units.
pub(super) fn normalize_intervals(strings: &ArrayRef) -> ArrayRef {
    let Some(s) = strings
        .as_any()
        .downcast_ref::<datafusion::arrow::array::StringArray>()
    else {
        return strings.clone();
    };
    Arc::new(
        s.iter()
            .map(|v| {
                v.map(|v| {
                    brook_common::interval_text::canonical_interval_text(v)
                        .unwrap_or_else(|| v.to_string())
                })
            })
            .collect::<datafusion::arrow::array::StringArray>(),
    )
}

/// Binary fields decoded to their text form, converted (and checked) as the text formats'
/// fields are.
pub(super) fn texts_to_column(
    mut texts: datafusion::arrow::array::StringBuilder,
    ty: &PgType,
    lines: &[u64],
    column: &str,
) -> Result<ArrayRef> {
    let strings: ArrayRef = Arc::new(texts.finish());
    // Binary fields of types without a binary form of their own (no timestamptz).
    text_to_column(
        &strings,
        ty,
        None,
        &|r| lines.get(r).copied().unwrap_or(0),
        "",
        column,
    )
}

/// Decode each non-NULL field with `f` (given its row and bytes); NULLs stay NULL.
pub(super) fn each<T>(
    values: &[Option<&[u8]>],
    f: impl Fn(usize, &[u8]) -> Result<T>,
) -> Result<Vec<Option<T>>> {
    values
        .iter()
        .enumerate()
        .map(|(r, v)| v.map(|v| f(r, v)).transpose())
        .collect()
}

/// Binary COPY fields, decoded per declared type.
///
/// Long because it is one flat dispatch on the column type, an arm per PostgreSQL binary
/// format, each checking its field's length before reading it.
pub(super) fn binary_values(
    values: &[Option<&[u8]>],
    ty: &PgType,
    lines: &[u64],
    column: &str,
) -> Result<ArrayRef> {
    use datafusion::arrow::array::*;
    if let Some(p) = ty.precision() {
        let out = binary_values(values, &ty.without_precision(), lines, column)?;
        return brook_planner::time_precision::round_to_precision(&out, p as u32);
    }
    let bad = |r: usize, what: &str| {
        brook_err!(
            BadCopyFormat,
            "incorrect binary data format for {what} in column {column} (row {})",
            lines.get(r).copied().unwrap_or(0)
        )
    };
    fn fixed<const N: usize>(v: &[u8]) -> Option<[u8; N]> {
        v.try_into().ok()
    }
    macro_rules! prim {
        ($arr:ty, $n:expr, $conv:expr, $what:expr) => {{
            let mut out: Vec<Option<_>> = Vec::with_capacity(values.len());
            for (r, v) in values.iter().enumerate() {
                out.push(match v {
                    None => None,
                    Some(v) => Some($conv(fixed::<$n>(v).ok_or_else(|| bad(r, $what))?)),
                });
            }
            Arc::new(<$arr>::from(out)) as ArrayRef
        }};
    }
    // PostgreSQL's infinite dates and timestamps (the extreme values) and intervals past
    // nanosecond range have no Arrow representation: refused, never stored as garbage.
    let range = |r: usize, what: &str| {
        brook_err!(
            DatetimeOverflow,
            "{what} out of range in column {column} (row {}): infinite or too far from 2000-01-01",
            lines.get(r).copied().unwrap_or(0)
        )
    };
    let epoch_shift = |r: usize, v: &[u8], what: &str| -> Result<i64> {
        let raw = i64::from_be_bytes(fixed::<8>(v).ok_or_else(|| bad(r, what))?);
        if raw == i64::MAX || raw == i64::MIN {
            return Err(range(r, what));
        }
        raw.checked_add(946_684_800_000_000)
            .ok_or_else(|| range(r, what))
    };
    Ok(match ty {
        PgType::Array(elem) => super::array::binary_arrays(values, elem, lines, column)?,
        PgType::Bool => Arc::new(BooleanArray::from(each(values, |r, v| match v {
            [0] => Ok(false),
            [1] => Ok(true),
            _ => Err(bad(r, "boolean")),
        })?)),
        PgType::Int2 => prim!(Int16Array, 2, i16::from_be_bytes, "smallint"),
        PgType::Int4 => prim!(Int32Array, 4, i32::from_be_bytes, "integer"),
        PgType::Int8 => prim!(Int64Array, 8, i64::from_be_bytes, "bigint"),
        PgType::Float4 => prim!(Float32Array, 4, f32::from_be_bytes, "real"),
        PgType::Float8 => prim!(Float64Array, 8, f64::from_be_bytes, "double precision"),
        PgType::Date => Arc::new(Date32Array::from(each(values, |r, v| {
            let raw = i32::from_be_bytes(fixed::<4>(v).ok_or_else(|| bad(r, "date"))?);
            if raw == i32::MAX || raw == i32::MIN {
                return Err(range(r, "date"));
            }
            raw.checked_add(10_957).ok_or_else(|| range(r, "date"))
        })?)),
        PgType::Timestamp(_) => Arc::new(TimestampMicrosecondArray::from(each(values, |r, v| {
            epoch_shift(r, v, "timestamp")
        })?)),
        PgType::Timestamptz(_) => Arc::new(
            TimestampMicrosecondArray::from(each(values, |r, v| epoch_shift(r, v, "timestamptz"))?)
                .with_timezone("+00:00"),
        ),
        PgType::Time(_) => Arc::new(Time64MicrosecondArray::from(each(values, |r, v| {
            let us = i64::from_be_bytes(fixed::<8>(v).ok_or_else(|| bad(r, "time"))?);
            if !(0..=86_400_000_000).contains(&us) {
                return Err(range(r, "time"));
            }
            Ok(us)
        })?)),
        PgType::Bytea => Arc::new(values.iter().map(|v| v.as_deref()).collect::<BinaryArray>()),
        PgType::Numeric { .. } => {
            let mut sb = StringBuilder::new();
            for (r, v) in values.iter().enumerate() {
                match v {
                    None => sb.append_null(),
                    Some(v) => {
                        let text = crate::pg::numeric_binary::read_numeric(v)
                            .ok_or_else(|| bad(r, "numeric"))?;
                        sb.append_value(text);
                    }
                }
            }
            texts_to_column(sb, ty, lines, column)?
        }
        PgType::Interval => {
            let mut out: Vec<Option<datafusion::arrow::datatypes::IntervalMonthDayNano>> =
                Vec::new();
            for (r, v) in values.iter().enumerate() {
                out.push(match v {
                    None => None,
                    Some(v) if v.len() == 16 => {
                        let micros = i64::from_be_bytes(
                            fixed::<8>(&v[..8]).ok_or_else(|| bad(r, "interval"))?,
                        );
                        let days = i32::from_be_bytes(
                            fixed::<4>(&v[8..12]).ok_or_else(|| bad(r, "interval"))?,
                        );
                        let months = i32::from_be_bytes(
                            fixed::<4>(&v[12..]).ok_or_else(|| bad(r, "interval"))?,
                        );
                        Some(datafusion::arrow::datatypes::IntervalMonthDayNano::new(
                            months,
                            days,
                            micros
                                .checked_mul(1000)
                                .ok_or_else(|| range(r, "interval"))?,
                        ))
                    }
                    Some(_) => return Err(bad(r, "interval")),
                });
            }
            Arc::new(IntervalMonthDayNanoArray::from(out))
        }
        PgType::Text
        | PgType::Varchar(_)
        | PgType::Char(_)
        | PgType::Json
        | PgType::Uuid
        | PgType::Xml => {
            let mut sb = StringBuilder::new();
            for (r, v) in values.iter().enumerate() {
                match v {
                    None => sb.append_null(),
                    // uuid's binary form is its 16 bytes.
                    Some(v) if *ty == PgType::Uuid => {
                        let b = fixed::<16>(v).ok_or_else(|| bad(r, "uuid"))?;
                        sb.append_value(crate::pg::uuid::from_bytes(&b));
                    }
                    Some(v) => sb.append_value(std::str::from_utf8(v).map_err(|_| bad(r, "text"))?),
                }
            }
            // The text formats' checks apply as they are: varchar(n)/char(n) lengths, JSON
            // validity, uuid form.
            texts_to_column(sb, ty, lines, column)?
        }
        PgType::Jsonb => {
            // jsonb binary format: a version byte (1) then the JSON text.
            let mut sb = StringBuilder::new();
            for (r, v) in values.iter().enumerate() {
                match v {
                    None => sb.append_null(),
                    Some([1, json @ ..]) => {
                        sb.append_value(std::str::from_utf8(json).map_err(|_| bad(r, "jsonb"))?)
                    }
                    Some(_) => return Err(bad(r, "jsonb (version byte 1)")),
                }
            }
            texts_to_column(sb, ty, lines, column)?
        }
    })
}
