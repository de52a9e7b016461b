//! A record (a row value: `ROW(1, 'a')`, `(a, b)`) in PostgreSQL's text and binary forms,
//! as `record_out` and `record_send` write them: `(1,"a b",,"")`, each field in its own
//! text form, quoted when it is empty or holds a quote, a backslash, a parenthesis, a comma
//! or white space, a NULL field left empty; in binary, the field count, then each field's
//! type oid, length (-1 for NULL) and binary form.

use crate::pg::encode::ColumnView;
use brook_common::Result;
use bytes::{BufMut, BytesMut};
use postgres_types::Type;

/// The fields of a record column: each one's view and wire type.
pub type Fields<'a> = Vec<(ColumnView<'a>, Type)>;

/// Append record `i` of `fields` in PostgreSQL's text form.
pub fn write_text(fields: &Fields<'_>, i: usize, out: &mut String) {
    out.push('(');
    let mut value = String::new();
    for (n, (view, _)) in fields.iter().enumerate() {
        if n > 0 {
            out.push(',');
        }
        if view.is_null(i) {
            continue;
        }
        value.clear();
        view.write_text(i, &mut value);
        brook_common::types::push_record_field(out, &value);
    }
    out.push(')');
}

/// Append record `i` of `fields` in PostgreSQL's binary form.
pub fn write_binary(fields: &Fields<'_>, i: usize, out: &mut BytesMut) -> Result<()> {
    out.put_i32(fields.len() as i32);
    let mut cell = BytesMut::new();
    for (view, ty) in fields {
        out.put_u32(ty.oid());
        if view.is_null(i) {
            out.put_i32(-1);
            continue;
        }
        cell.clear();
        view.write_binary(i, ty, &mut cell)?;
        out.put_i32(cell.len() as i32);
        out.put_slice(&cell);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::arrow::array::{ArrayRef, Int32Array, StringArray, StructArray};
    use datafusion::arrow::datatypes::{DataType, Field};
    use std::sync::Arc;

    fn record() -> ArrayRef {
        let ints: ArrayRef = Arc::new(Int32Array::from(vec![Some(1), None, Some(-3)]));
        let texts: ArrayRef = Arc::new(StringArray::from(vec![
            Some("a b"),
            Some(""),
            Some("x\"y\\(z),w"),
        ]));
        Arc::new(StructArray::from(vec![
            (Arc::new(Field::new("a", DataType::Int32, true)), ints),
            (Arc::new(Field::new("b", DataType::Utf8, true)), texts),
        ]))
    }

    #[test]
    fn text_quotes_as_record_out() {
        let a = record();
        let field = Field::new("r", a.data_type().clone(), true);
        let view = ColumnView::new(&a, &field).unwrap();
        let rows: Vec<String> = (0..3)
            .map(|i| {
                let mut s = String::new();
                view.write_text(i, &mut s);
                s
            })
            .collect();
        assert_eq!(rows, ["(1,\"a b\")", "(,\"\")", "(-3,\"x\"\"y\\\\(z),w\")"]);
    }

    #[test]
    fn binary_carries_each_fields_oid_and_length() {
        let a = record();
        let field = Field::new("r", a.data_type().clone(), true);
        let view = ColumnView::new(&a, &field).unwrap();
        let mut out = BytesMut::new();
        view.write_binary(1, &Type::RECORD, &mut out).unwrap();
        let mut want = BytesMut::new();
        want.put_i32(2);
        want.put_u32(Type::INT4.oid());
        want.put_i32(-1);
        want.put_u32(Type::TEXT.oid());
        want.put_i32(0);
        assert_eq!(out, want);
    }
}
