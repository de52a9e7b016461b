//! Arrays (Arrow lists) in PostgreSQL's text form (`{1,NULL,"b c"}`, nested arrays as
//! multidimensional text, vector types as elements separated by spaces) and binary form,
//! each element written by its own [`ColumnView`].

use crate::pg::encode::ColumnView;
use brook_common::{brook_err, Result};
use bytes::{BufMut, BytesMut};
use datafusion::arrow::array::{Array, ArrayRef, AsArray};
use datafusion::arrow::datatypes::{DataType, Field};
use postgres_types::Type;

/// PostgreSQL's binary array: dimensions, null flag, element type, then each element
/// length-prefixed (-1 for NULL). Arrow lists are one-dimensional; an empty list is written
/// with zero dimensions, as PostgreSQL writes `'{}'`.
pub(crate) fn write_binary_list(
    a: &dyn Array,
    i: usize,
    ty: &Type,
    out: &mut BytesMut,
) -> Result<()> {
    let values = list_values(a, i);
    let elem = match ty.kind() {
        postgres_types::Kind::Array(e) => e.clone(),
        _ => Type::TEXT,
    };
    let field = Field::new("item", values.data_type().clone(), true);
    let view = ColumnView::new(&values, &field)?;
    if matches!(view, ColumnView::List(..)) {
        return Err(brook_err!(
            Unsupported,
            "binary format of an array of arrays is not supported; request text format"
        ));
    }
    // Elements without a binary form of their own travel as text (`text[]`).
    let as_text = elem == Type::TEXT && !matches!(view, ColumnView::Str(..));
    out.put_i32(i32::from(!values.is_empty()));
    out.put_i32(i32::from(values.null_count() > 0));
    out.put_u32(elem.oid());
    if !values.is_empty() {
        out.put_i32(values.len() as i32);
        out.put_i32(1);
    }
    let mut cell = BytesMut::new();
    for j in 0..values.len() {
        if view.is_null(j) {
            out.put_i32(-1);
            continue;
        }
        cell.clear();
        if as_text {
            let mut s = String::new();
            view.write_text(j, &mut s);
            cell.put_slice(s.as_bytes());
        } else {
            view.write_binary(j, &elem, &mut cell)?;
        }
        out.put_i32(cell.len() as i32);
        out.put_slice(&cell);
    }
    Ok(())
}

/// The elements of list row `i`.
fn list_values(a: &dyn Array, i: usize) -> ArrayRef {
    match a.data_type() {
        DataType::List(_) => a.as_list::<i32>().value(i),
        DataType::LargeList(_) => a.as_list::<i64>().value(i),
        _ => a.as_fixed_size_list().value(i),
    }
}

/// Row `i` of a vector column: its elements separated by spaces (`1 3`).
pub(crate) fn format_vector(a: &dyn Array, i: usize, out: &mut String) {
    let values = list_values(a, i);
    let field = Field::new("item", values.data_type().clone(), true);
    let Ok(view) = ColumnView::new(&values, &field) else {
        return;
    };
    for j in (0..values.len()).filter(|j| !view.is_null(*j)) {
        if j > 0 {
            out.push(' ');
        }
        view.write_text(j, out);
    }
}

pub(crate) fn format_list(a: &dyn Array, i: usize, out: &mut String) {
    let values = list_values(a, i);
    let field = Field::new("item", values.data_type().clone(), true);
    out.push('{');
    match ColumnView::new(&values, &field) {
        Ok(view) => {
            for j in 0..values.len() {
                if j > 0 {
                    out.push(',');
                }
                if view.is_null(j) {
                    out.push_str("NULL");
                    continue;
                }
                // An array of arrays prints as PostgreSQL's multidimensional text.
                if matches!(view, ColumnView::List(..)) {
                    view.write_text(j, out);
                    continue;
                }
                let mut s = String::new();
                view.write_text(j, &mut s);
                brook_planner::array_literal::push_element(out, &s);
            }
        }
        Err(_) => out.push_str("..."),
    }
    out.push('}');
}
