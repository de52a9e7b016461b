//! Fast paths for the commonest COPY text: integer columns read straight from the field
//! bytes, and a view of a column's raw text that the timestamp fast path
//! ([`crate::pg::datetime::fast_timestamps`]) reads too.
//!
//! Written by hand because arrow's text cast first needs a UTF-8-checked string array and
//! then parses value by value through a general parser; both led the profile of bulk COPY
//! into streams. A fast path accepts only a plain subset of the type's text (digits with an
//! optional minus sign, in range); when any value of a column falls outside it the whole
//! column goes through the general cast, so what is accepted, the results and the errors do
//! not change.

use crate::pg::types::PgType;
use datafusion::arrow::array::{Array, ArrayRef, PrimitiveArray, StringArray};
use datafusion::arrow::buffer::NullBuffer;
use datafusion::arrow::datatypes::ArrowPrimitiveType;
use std::sync::Arc;

/// A column of text values as bytes: value `i` is `data[offsets[i]..offsets[i + 1]]`, unless
/// `nulls` marks it NULL. The bytes need not be checked UTF-8: the fast paths accept ASCII
/// only.
pub struct RawText<'a> {
    /// All values' bytes, back to back.
    pub data: &'a [u8],
    /// Value bounds: one more than there are values.
    pub offsets: &'a [i32],
    /// Which values are NULL (`None`: none).
    pub nulls: Option<NullBuffer>,
}

impl<'a> RawText<'a> {
    /// The bytes of a string array's values.
    pub fn of_strings(s: &'a StringArray) -> Self {
        RawText {
            data: s.value_data(),
            offsets: s.value_offsets(),
            nulls: s.nulls().cloned(),
        }
    }

    /// Number of values.
    pub fn len(&self) -> usize {
        self.offsets.len().saturating_sub(1)
    }

    /// True when there is no value.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether value `i` is NULL.
    pub fn is_null(&self, i: usize) -> bool {
        self.nulls.as_ref().is_some_and(|n| n.is_null(i))
    }

    /// Every value's bytes, NULLs included (whatever bytes they hold: check
    /// [`RawText::is_null`] before taking one as a value).
    pub fn bytes(&self) -> impl Iterator<Item = &'a [u8]> + 'a {
        let data = self.data;
        self.offsets
            .windows(2)
            .map(move |w| data.get(w[0] as usize..w[1] as usize).unwrap_or_default())
    }
}

/// `[-]digits` as an integer: at most 18 digits (which cannot overflow an i64); anything
/// else is `None`, left to the general parser.
fn plain_integer(b: &[u8]) -> Option<i64> {
    let (negative, digits) = match b {
        [b'-', rest @ ..] => (true, rest),
        _ => (false, b),
    };
    if digits.is_empty() || digits.len() > 18 {
        return None;
    }
    let mut v = 0i64;
    for &c in digits {
        let d = c.wrapping_sub(b'0');
        if d > 9 {
            return None;
        }
        v = v * 10 + i64::from(d);
    }
    Some(if negative { -v } else { v })
}

/// The column as `T` values if every value is a plain integer in `T`'s range.
fn integers<T>(text: &RawText<'_>) -> Option<ArrayRef>
where
    T: ArrowPrimitiveType,
    T::Native: TryFrom<i64>,
{
    let mut out = Vec::with_capacity(text.len());
    for (i, b) in text.bytes().enumerate() {
        // NULL is asked only of values that are not integers (a NULL's bytes are empty).
        let v = match plain_integer(b) {
            Some(v) => T::Native::try_from(v).ok()?,
            None if text.is_null(i) => T::Native::default(),
            None => return None,
        };
        out.push(v);
    }
    Some(Arc::new(PrimitiveArray::<T>::new(
        out.into(),
        text.nulls.clone(),
    )))
}

/// The column as values of integer type `ty` if every value takes the fast path; `None`
/// otherwise (and for other types).
pub fn fast_integers(text: &RawText<'_>, ty: &PgType) -> Option<ArrayRef> {
    use datafusion::arrow::datatypes::{Int16Type, Int32Type, Int64Type};
    match ty {
        PgType::Int2 => integers::<Int16Type>(text),
        PgType::Int4 => integers::<Int32Type>(text),
        PgType::Int8 => integers::<Int64Type>(text),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::arrow::compute::cast;
    use proptest::prelude::*;

    /// What arrow's general cast makes of `texts` as `ty`.
    fn by_cast(texts: &[Option<&str>], ty: &PgType) -> ArrayRef {
        let a: ArrayRef = Arc::new(StringArray::from(texts.to_vec()));
        cast(&a, &ty.arrow()).unwrap()
    }

    fn fast(texts: &[Option<&str>], ty: &PgType) -> Option<ArrayRef> {
        let a = StringArray::from(texts.to_vec());
        fast_integers(&RawText::of_strings(&a), ty)
    }

    #[test]
    fn plain_integers_and_nulls_take_the_fast_path() {
        let texts = [
            Some("0"),
            Some("-17"),
            None,
            Some("007"),
            Some("2147483647"),
        ];
        let ty = PgType::Int4;
        assert_eq!(
            fast(&texts, &ty).unwrap().as_ref(),
            by_cast(&texts, &ty).as_ref()
        );
        let texts = [Some("-9223372036854775"), Some("123456789012345678")];
        let ty = PgType::Int8;
        assert_eq!(
            fast(&texts, &ty).unwrap().as_ref(),
            by_cast(&texts, &ty).as_ref()
        );
    }

    /// Anything but plain digits in range is left to the general cast (which decides
    /// whether it is valid, and the error).
    #[test]
    fn other_text_is_left_to_the_general_cast() {
        for (text, ty) in [
            ("2147483648", PgType::Int4),
            ("-32769", PgType::Int2),
            ("9223372036854775807", PgType::Int8),
            ("+5", PgType::Int4),
            (" 5", PgType::Int4),
            ("5 ", PgType::Int4),
            ("", PgType::Int4),
            ("-", PgType::Int4),
            ("1.5", PgType::Int4),
            ("١", PgType::Int4),
        ] {
            assert!(fast(&[Some("1"), Some(text)], &ty).is_none(), "{text:?}");
        }
        assert!(fast(&[Some("1")], &PgType::Text).is_none());
    }

    proptest! {
        /// Wherever the fast path answers, it agrees with the general cast.
        #[test]
        fn agrees_with_the_general_cast(
            v in prop_oneof![any::<i16>().prop_map(i64::from), any::<i32>().prop_map(i64::from), any::<i64>()],
            ty in 0..3usize,
        ) {
            let ty = [PgType::Int2, PgType::Int4, PgType::Int8][ty].clone();
            let text = v.to_string();
            let texts = [Some(text.as_str())];
            if let Some(a) = fast(&texts, &ty) {
                let expected = by_cast(&texts, &ty);
                prop_assert_eq!(a.as_ref(), expected.as_ref());
            }
        }
    }
}
