//! Array columns in COPY's formats and as text input: PostgreSQL's `{a,"b c",NULL}` and its
//! binary array layout, read into an Arrow list of the element type. The elements go
//! through the element type's own conversion, so each is checked as a value of that type
//! is (22P02, 22003, 22001 with the line).
//!
//! One dimension only: a nested value is refused by name (0A000), never flattened.

use super::convert::{binary_values, text_to_column};
use crate::pg::binary_array::{self, ArrayError};
use crate::pg::types::PgType;
use brook_common::{brook_err, Result};
use datafusion::arrow::array::{Array, ArrayRef, AsArray, ListArray, StringBuilder};
use datafusion::arrow::buffer::{NullBuffer, OffsetBuffer};
use datafusion::arrow::compute::{cast_with_options, CastOptions};
use datafusion::arrow::datatypes::{DataType, Field};
use std::sync::Arc;

/// A column of array texts (`{1,2,NULL}`) as a list column of `elem`.
pub(super) fn text_arrays(
    strings: &ArrayRef,
    elem: &PgType,
    zone: Option<&str>,
    line_of: &dyn Fn(usize) -> u64,
    table: &str,
    column: &str,
) -> Result<ArrayRef> {
    let text = cast_with_options(strings, &DataType::Utf8, &CastOptions::default())?;
    let text = text.as_string::<i32>();
    let mut items = StringBuilder::new();
    let mut item_rows = Vec::new();
    let mut lengths = Vec::with_capacity(text.len());
    for (r, v) in text.iter().enumerate() {
        let Some(v) = v else {
            lengths.push(None);
            continue;
        };
        let Some(parsed) = brook_planner::array_literal::parse_text_array(v) else {
            return Err(malformed(v, line_of(r), table, column));
        };
        lengths.push(Some(parsed.len()));
        for item in parsed {
            items.append_option(item);
            item_rows.push(r);
        }
    }
    let items: ArrayRef = Arc::new(items.finish());
    let values = text_to_column(
        &items,
        elem,
        zone,
        &|j| line_of(item_rows.get(j).copied().unwrap_or(0)),
        table,
        column,
    )?;
    list_of(elem, &lengths, values)
}

/// PostgreSQL's error for array text that is not a one-dimensional literal.
fn malformed(text: &str, line: u64, table: &str, column: &str) -> brook_common::BrookError {
    let nested = text
        .trim_start()
        .strip_prefix('{')
        .is_some_and(|rest| rest.trim_start().starts_with('{'));
    let at = if table.is_empty() {
        String::new()
    } else {
        format!(" (COPY {table}, line {line}, column {column})")
    };
    if nested {
        brook_err!(
            Unsupported,
            "multidimensional array literals are not supported: \"{text}\"{at}"
        )
    } else {
        brook_err!(InvalidText, "malformed array literal: \"{text}\"{at}")
    }
}

/// Binary COPY fields in PostgreSQL's array layout (dimensions, flags, element type, then
/// each element's length and bytes) as a list column of `elem`.
pub(super) fn binary_arrays(
    values: &[Option<&[u8]>],
    elem: &PgType,
    lines: &[u64],
    column: &str,
) -> Result<ArrayRef> {
    let line = |r: usize| lines.get(r).copied().unwrap_or(0);
    let mut items: Vec<Option<&[u8]>> = Vec::new();
    let mut item_lines = Vec::new();
    let mut lengths = Vec::with_capacity(values.len());
    for (r, v) in values.iter().enumerate() {
        let Some(v) = v else {
            lengths.push(None);
            continue;
        };
        let before = items.len();
        let elements = binary_array::elements(v, &elem.wire()).map_err(|e| match e {
            ArrayError::Layout(what) => brook_err!(
                BadCopyFormat,
                "incorrect binary data format for an array in column {column} (row {}): {what}",
                line(r)
            ),
            ArrayError::Other(e) => e,
        })?;
        items.extend(elements);
        lengths.push(Some(items.len() - before));
        item_lines.extend(std::iter::repeat_n(line(r), items.len() - before));
    }
    let values = binary_values(&items, elem, &item_lines, column)?;
    list_of(elem, &lengths, values)
}

/// A list column: row `r` holds the next `lengths[r]` of `values` (NULL for `None`).
fn list_of(elem: &PgType, lengths: &[Option<usize>], values: ArrayRef) -> Result<ArrayRef> {
    let offsets = OffsetBuffer::from_lengths(lengths.iter().map(|l| l.unwrap_or(0)));
    let nulls = lengths
        .iter()
        .any(Option::is_none)
        .then(|| NullBuffer::from_iter(lengths.iter().map(Option::is_some)));
    Ok(Arc::new(ListArray::try_new(
        Arc::new(Field::new_list_field(elem.arrow(), true)),
        offsets,
        values,
        nulls,
    )?))
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::arrow::array::{Int32Array, StringArray};

    fn texts(v: &[Option<&str>]) -> ArrayRef {
        Arc::new(StringArray::from(v.to_vec()))
    }

    #[test]
    fn array_texts_become_lists_of_checked_elements() {
        let out = text_arrays(
            &texts(&[Some("{1,2,NULL}"), None, Some("{}")]),
            &PgType::Int4,
            None,
            &|r| r as u64 + 1,
            "t",
            "v",
        )
        .unwrap();
        let list = out.as_list::<i32>();
        assert_eq!(list.len(), 3);
        assert!(list.is_null(1));
        assert_eq!(list.value(2).len(), 0);
        let first = list.value(0);
        let first = first.as_any().downcast_ref::<Int32Array>().unwrap();
        assert_eq!(
            first.iter().collect::<Vec<_>>(),
            vec![Some(1), Some(2), None]
        );
    }

    #[test]
    fn bad_array_texts_are_named() {
        let err = |v: &str| {
            text_arrays(
                &texts(&[Some("{1}"), Some(v)]),
                &PgType::Int4,
                None,
                &|r| r as u64 + 1,
                "t",
                "v",
            )
            .unwrap_err()
            .to_string()
        };
        assert!(err("1,2").contains("malformed array literal: \"1,2\""));
        assert!(err("1,2").contains("line 2"));
        assert!(err("{{1},{2}}").contains("multidimensional"));
        assert!(err("{1,x}").contains("invalid input syntax for type integer"));
    }

    #[test]
    fn binary_arrays_read_postgresqls_layout() {
        use postgres_types::{ToSql, Type};
        let mut buf = bytes::BytesMut::new();
        vec![Some(7i32), None]
            .to_sql(&Type::INT4_ARRAY, &mut buf)
            .unwrap();
        let empty: Vec<i32> = vec![];
        let mut e = bytes::BytesMut::new();
        empty.to_sql(&Type::INT4_ARRAY, &mut e).unwrap();
        let out = binary_arrays(
            &[Some(&buf), None, Some(&e)],
            &PgType::Int4,
            &[1, 2, 3],
            "v",
        )
        .unwrap();
        let list = out.as_list::<i32>();
        assert_eq!(list.value(0).len(), 2);
        assert!(list.is_null(1));
        assert_eq!(list.value(2).len(), 0);
        // An int8 array is not an int4 array.
        let mut wrong = bytes::BytesMut::new();
        vec![1i64].to_sql(&Type::INT8_ARRAY, &mut wrong).unwrap();
        let err = binary_arrays(&[Some(&wrong)], &PgType::Int4, &[1], "v").unwrap_err();
        assert_eq!(err.sqlstate(), "42804");
        let err = binary_arrays(&[Some(&buf[..10])], &PgType::Int4, &[1], "v").unwrap_err();
        assert_eq!(err.sqlstate(), "22P04");
    }
}
