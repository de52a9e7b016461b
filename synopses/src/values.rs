//! How Arrow values reach a sketch.
//!
//! Hash-based sketches (HLL, CPC, theta, count-min, bloom) must hash a value the way
//! DataSketches Java/C++/Python do, or sketches built elsewhere over the same data would not
//! merge with ours: integers of every width as a 64-bit long, floats through the canonical
//! double (so `-0.0 = 0.0` and every NaN is one value), strings and bytes as their raw bytes.
//! Temporal values hash as their 64-bit count, decimals as their 16 little-endian bytes.
//!
//! One deviation, for SQL: the empty string is a value (`COUNT(DISTINCT)` counts it), while
//! DataSketches' string updates skip it.

use brook_common::types::sql_name;
use brook_common::{brook_err, Result};
use datafusion::arrow::array::{Array, AsArray, Float64Array};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{
    DataType, Date32Type, Date64Type, Decimal128Type, Float16Type, Float32Type, Float64Type,
    Int16Type, Int32Type, Int64Type, Int8Type, UInt16Type, UInt32Type, UInt64Type, UInt8Type,
};
use datasketches::hash::value::canonical_float;
use std::hash::{Hash, Hasher};

/// Receives the non-null values of an array one at a time, each as the type DataSketches
/// hashes it (`i64` for integers and temporal counts, the canonical double for floats,
/// [`RawBytes`], [`Wide`]). Generic per value type, so a sketch's own `update<T: Hash>` is
/// instantiated for the concrete type and hashes as cheaply as the raw crate (an enum of
/// the possible types cost 1.9x the crate's HLL update, its variant matched per value).
pub trait HashedValues {
    /// One non-null value.
    fn value<T: Hash>(&mut self, v: T);
}

/// String and binary values: hashed as their raw bytes (`[u8]`'s own `Hash` would add a
/// length prefix that DataSketches does not).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RawBytes<'a>(pub &'a [u8]);

impl Hash for RawBytes<'_> {
    fn hash<H: Hasher>(&self, state: &mut H) {
        state.write(self.0)
    }
}

/// A decimal's unscaled value: hashed as its 16 little-endian bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Wide(pub i128);

impl Hash for Wide {
    fn hash<H: Hasher>(&self, state: &mut H) {
        state.write(&self.0.to_le_bytes())
    }
}

/// Receives nothing: checks that an array's type is hashable at all.
pub struct Ignore;

impl HashedValues for Ignore {
    fn value<T: Hash>(&mut self, _v: T) {}
}

/// Hand every non-null value of `values` to `sink`, typed as DataSketches hashes it.
///
/// Types without a defined hashing (lists, structs, intervals, ...) are 0A000.
pub fn for_each_hashed(values: &dyn Array, sink: &mut impl HashedValues) -> Result<()> {
    // Hot path: without nulls, walk the value buffer directly (no Option per value).
    macro_rules! ints {
        ($t:ty) => {{
            let a = values.as_primitive::<$t>();
            if a.null_count() == 0 {
                a.values().iter().for_each(|v| sink.value(*v as i64))
            } else {
                a.iter().flatten().for_each(|v| sink.value(v as i64))
            }
        }};
    }
    match values.data_type() {
        DataType::Null => {}
        DataType::Boolean => values
            .as_boolean()
            .iter()
            .flatten()
            .for_each(|v| sink.value(i64::from(v))),
        DataType::Int8 => ints!(Int8Type),
        DataType::Int16 => ints!(Int16Type),
        DataType::Int32 => ints!(Int32Type),
        DataType::Int64 => ints!(Int64Type),
        DataType::UInt8 => ints!(UInt8Type),
        DataType::UInt16 => ints!(UInt16Type),
        DataType::UInt32 => ints!(UInt32Type),
        DataType::UInt64 => ints!(UInt64Type),
        DataType::Date32 => ints!(Date32Type),
        DataType::Date64 => ints!(Date64Type),
        DataType::Float16 => values
            .as_primitive::<Float16Type>()
            .iter()
            .flatten()
            .for_each(|v| sink.value(canonical_float::from_f64(f64::from(v)))),
        DataType::Float32 => values
            .as_primitive::<Float32Type>()
            .iter()
            .flatten()
            .for_each(|v| sink.value(canonical_float::from_f64(f64::from(v)))),
        DataType::Float64 => values
            .as_primitive::<Float64Type>()
            .iter()
            .flatten()
            .for_each(|v| sink.value(canonical_float::from_f64(v))),
        DataType::Decimal128(_, _) => values
            .as_primitive::<Decimal128Type>()
            .iter()
            .flatten()
            .for_each(|v| sink.value(Wide(v))),
        DataType::Utf8 => values
            .as_string::<i32>()
            .iter()
            .flatten()
            .for_each(|v| sink.value(RawBytes(v.as_bytes()))),
        DataType::LargeUtf8 => values
            .as_string::<i64>()
            .iter()
            .flatten()
            .for_each(|v| sink.value(RawBytes(v.as_bytes()))),
        DataType::Utf8View => values
            .as_string_view()
            .iter()
            .flatten()
            .for_each(|v| sink.value(RawBytes(v.as_bytes()))),
        DataType::Binary => values
            .as_binary::<i32>()
            .iter()
            .flatten()
            .for_each(|v| sink.value(RawBytes(v))),
        DataType::LargeBinary => values
            .as_binary::<i64>()
            .iter()
            .flatten()
            .for_each(|v| sink.value(RawBytes(v))),
        DataType::BinaryView => values
            .as_binary_view()
            .iter()
            .flatten()
            .for_each(|v| sink.value(RawBytes(v))),
        DataType::Timestamp(_, _) | DataType::Time32(_) | DataType::Time64(_) => {
            let wide = cast(values, &DataType::Int64)?;
            for_each_hashed(&wide, sink)?;
        }
        DataType::Dictionary(_, value_type) => {
            let plain = cast(values, value_type)?;
            for_each_hashed(&plain, sink)?;
        }
        other => {
            return Err(brook_err!(
                Unsupported,
                "sketches over values of type {}",
                sql_name(other)
            ))
        }
    }
    Ok(())
}

/// Whether [`for_each_hashed`] accepts values of this type.
pub fn is_hashable(data_type: &DataType) -> bool {
    match data_type {
        DataType::Dictionary(_, v) => is_hashable(v),
        t => {
            t.is_integer()
                || t.is_floating()
                || matches!(
                    t,
                    DataType::Null
                        | DataType::Boolean
                        | DataType::Date32
                        | DataType::Date64
                        | DataType::Decimal128(_, _)
                        | DataType::Utf8
                        | DataType::LargeUtf8
                        | DataType::Utf8View
                        | DataType::Binary
                        | DataType::LargeBinary
                        | DataType::BinaryView
                        | DataType::Timestamp(_, _)
                        | DataType::Time32(_)
                        | DataType::Time64(_)
                )
        }
    }
}

/// The values as doubles, for quantile sketches: numeric types only (others are 42804).
pub fn as_f64(values: &dyn Array) -> Result<Float64Array> {
    let t = values.data_type();
    if !(t.is_numeric() || t.is_null()) {
        return Err(brook_err!(
            DatatypeMismatch,
            "quantiles need numeric values, got {}",
            sql_name(t)
        ));
    }
    let doubles = cast(values, &DataType::Float64)?;
    Ok(doubles.as_primitive::<Float64Type>().clone())
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::arrow::array::{Int32Array, Int64Array, ListArray, StringArray};
    use datafusion::arrow::datatypes::Int32Type as I32;

    /// The bytes each value feeds a hasher.
    #[derive(Default)]
    struct Fed(Vec<Vec<u8>>);

    struct Bytes(Vec<u8>);

    impl Hasher for Bytes {
        fn write(&mut self, b: &[u8]) {
            self.0.extend_from_slice(b);
        }
        fn finish(&self) -> u64 {
            0
        }
    }

    impl HashedValues for Fed {
        fn value<T: Hash>(&mut self, v: T) {
            let mut h = Bytes(Vec::new());
            v.hash(&mut h);
            self.0.push(h.0);
        }
    }

    fn collect(values: &dyn Array) -> Vec<Vec<u8>> {
        let mut fed = Fed::default();
        for_each_hashed(values, &mut fed).unwrap();
        fed.0
    }

    #[test]
    fn integers_of_every_width_hash_as_longs() {
        let a = collect(&Int32Array::from(vec![Some(1), None, Some(-2)]));
        let b = collect(&Int64Array::from(vec![1, -2]));
        assert_eq!(a, b);
        assert_eq!(
            a,
            vec![1i64.to_ne_bytes().to_vec(), (-2i64).to_ne_bytes().to_vec()]
        );
    }

    #[test]
    fn strings_hash_as_bytes_and_the_empty_string_counts() {
        let a = collect(&StringArray::from(vec![Some("ab"), Some(""), None]));
        assert_eq!(a, vec![b"ab".to_vec(), Vec::new()]);
    }

    #[test]
    fn nested_values_are_refused() {
        let list = ListArray::from_iter_primitive::<I32, _, _>(vec![Some(vec![Some(1)])]);
        let err = for_each_hashed(&list, &mut Ignore).unwrap_err();
        assert_eq!(err.sqlstate(), "0A000");
        assert!(!is_hashable(list.data_type()));
    }

    #[test]
    fn quantile_input_must_be_numeric() {
        let err = as_f64(&StringArray::from(vec!["x"])).unwrap_err();
        assert_eq!(err.sqlstate(), "42804");
        assert_eq!(as_f64(&Int32Array::from(vec![3])).unwrap().value(0), 3.0);
    }
}
