//! PostgreSQL's binary array layout, as `array_send` writes it: the number of dimensions,
//! a flags word, the element type's oid, then per dimension its length and lower bound,
//! then each element as a length (-1 for NULL) and its bytes. Read here because COPY
//! binary and binary parameters both carry it and no library splits it without decoding
//! the elements as Rust values (Brook hands each element to its own type's reader).

use brook_common::{brook_err, BrookError};
use postgres_types::Type;

/// The elements of a one-dimensional binary array of `elem`, in order (`None` for NULL).
///
/// Errors: a malformed layout is `Err(Layout(what))` for the caller to word (COPY and
/// Bind report it differently); more than one dimension is 0A000 and an element type
/// other than `elem` is 42804, as PostgreSQL's `array_recv` says.
pub fn elements<'a>(mut b: &'a [u8], elem: &Type) -> Result<Vec<Option<&'a [u8]>>, ArrayError> {
    let dims = take_i32(&mut b)?;
    if !matches!(take_i32(&mut b)?, 0 | 1) {
        return Err(ArrayError::Layout("invalid array flags"));
    }
    let oid = take_i32(&mut b)? as u32;
    let mut items = Vec::new();
    if dims == 0 {
        return if b.is_empty() {
            Ok(items)
        } else {
            Err(ArrayError::Layout("trailing bytes after the array"))
        };
    }
    if dims != 1 {
        return Err(ArrayError::Other(brook_err!(
            Unsupported,
            "multidimensional arrays are not supported ({dims} dimensions)"
        )));
    }
    if oid != elem.oid() {
        return Err(ArrayError::Other(brook_err!(
            DatatypeMismatch,
            "binary data has array element type {oid} instead of expected {} ({})",
            elem.oid(),
            elem.name()
        )));
    }
    let count = take_i32(&mut b)?;
    let lower_bound = take_i32(&mut b)?;
    if lower_bound != 1 {
        // Brook's arrays start at 1; another start would be lost on the way in.
        return Err(ArrayError::Other(brook_err!(
            Unsupported,
            "arrays with a lower bound other than 1 are not supported (got {lower_bound})"
        )));
    }
    let count = usize::try_from(count).map_err(|_| ArrayError::Layout("negative dimension"))?;
    // Each element takes at least its 4-byte length: a count past that is malformed, and
    // checking it first keeps a forged count from reserving memory.
    if count > b.len() / 4 {
        return Err(ArrayError::Layout("more elements than bytes"));
    }
    items.reserve(count);
    for _ in 0..count {
        let len = take_i32(&mut b)?;
        if len == -1 {
            items.push(None);
            continue;
        }
        let len = usize::try_from(len).map_err(|_| ArrayError::Layout("negative length"))?;
        if b.len() < len {
            return Err(ArrayError::Layout("truncated element"));
        }
        let (value, rest) = b.split_at(len);
        items.push(Some(value));
        b = rest;
    }
    if b.is_empty() {
        Ok(items)
    } else {
        Err(ArrayError::Layout("trailing bytes after the array"))
    }
}

/// Why a binary array could not be read.
#[derive(Debug)]
pub enum ArrayError {
    /// The bytes do not follow the layout (the caller's protocol error).
    Layout(&'static str),
    /// A well-formed array Brook refuses, with its SQLSTATE.
    Other(BrookError),
}

fn take_i32(b: &mut &[u8]) -> Result<i32, ArrayError> {
    let (head, rest) = b
        .split_first_chunk::<4>()
        .ok_or(ArrayError::Layout("truncated array"))?;
    *b = rest;
    Ok(i32::from_be_bytes(*head))
}

#[cfg(test)]
mod tests {
    use super::*;
    use postgres_types::ToSql;

    fn sent<T: ToSql>(v: T, ty: &Type) -> Vec<u8> {
        let mut buf = bytes::BytesMut::new();
        v.to_sql(ty, &mut buf).unwrap();
        buf.to_vec()
    }

    #[test]
    fn elements_are_split_as_postgresql_sends_them() {
        let b = sent(vec![Some(7i32), None], &Type::INT4_ARRAY);
        let items = elements(&b, &Type::INT4).unwrap();
        assert_eq!(items, vec![Some(&7i32.to_be_bytes()[..]), None]);
        let empty = sent(Vec::<i32>::new(), &Type::INT4_ARRAY);
        assert!(elements(&empty, &Type::INT4).unwrap().is_empty());
    }

    #[test]
    fn malformed_and_refused_arrays_are_named() {
        let b = sent(vec![1i64], &Type::INT8_ARRAY);
        let Err(ArrayError::Other(e)) = elements(&b, &Type::INT4) else {
            panic!("an int8 array read as int4")
        };
        assert_eq!(e.sqlstate(), "42804");
        assert!(matches!(
            elements(&b[..10], &Type::INT8),
            Err(ArrayError::Layout(_))
        ));
        let mut forged = b.clone();
        forged[12..16].copy_from_slice(&i32::MAX.to_be_bytes());
        assert!(matches!(
            elements(&forged, &Type::INT8),
            Err(ArrayError::Layout(_))
        ));
        let mut two_dims = b.clone();
        two_dims[..4].copy_from_slice(&2i32.to_be_bytes());
        let Err(ArrayError::Other(e)) = elements(&two_dims, &Type::INT8) else {
            panic!("two dimensions accepted")
        };
        assert_eq!(e.sqlstate(), "0A000");
        let mut bounded = b.clone();
        bounded[16..20].copy_from_slice(&5i32.to_be_bytes());
        assert!(matches!(
            elements(&bounded, &Type::INT8),
            Err(ArrayError::Other(_))
        ));
        let mut flagged = b.clone();
        flagged[4..8].copy_from_slice(&7i32.to_be_bytes());
        assert!(matches!(
            elements(&flagged, &Type::INT8),
            Err(ArrayError::Layout(_))
        ));
    }
}
