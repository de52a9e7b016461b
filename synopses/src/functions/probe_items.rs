//! Probes of count-min and bloom sketches read their item as a value of the summarised
//! column's type.
//!
//! A sketch hashes a value by its type (`values`): an integer as a 64-bit long, a float as
//! its canonical double, a numeric as its unscaled digits. `frequency(s, 5.0)` of a sketch
//! over an integer column, `might_contain(s, 20)` of one over `numeric(10,2)` (stored as
//! 2000 hundredths) or `might_contain(s, 5)` over a float column hashed another value
//! than the one stored, and answered 0 or false: false negatives, which a bloom filter
//! promises never to give. So the sketch's column carries the summarised type in its
//! field's metadata (`bloom_sketch_agg`/`countmin_sketch_agg` set it, their unions keep
//! it, and so do the views and synopses that store the sketch), and a probe casts its item
//! to that type first (a quoted or temporal item already in the plan:
//! `brook_planner::probe_casts`). An item no value of the type equals (`2.5` for an
//! integer column) is absent: its probe is 0 or false, as PostgreSQL's `=` would find no
//! row.

use brook_common::Result;
use datafusion::arrow::array::{Array, ArrayRef, BooleanArray};
use datafusion::arrow::compute::kernels::cmp::eq;
use datafusion::arrow::compute::{can_cast_types, cast_with_options, nullif, CastOptions};
use datafusion::arrow::datatypes::{DataType, Field};
use std::collections::HashMap;
use std::str::FromStr;

/// Field-metadata key of a sketch column: the Arrow type of the values it summarises.
pub const SKETCH_ITEM_KEY: &str = "brook.sketch_item";

/// The aggregates whose result is a sketch of its argument's values.
pub(super) const ITEM_SKETCHES: [&str; 2] = ["bloom_sketch_agg", "countmin_sketch_agg"];

/// The aggregates whose result is a sketch of the same values as their argument's.
pub(super) const ITEM_UNIONS: [&str; 2] = ["bloom_union_agg", "countmin_union_agg"];

/// The scalar functions that probe a sketch (argument 0) for an item (argument 1).
pub const PROBES: [&str; 2] = ["frequency", "might_contain"];

/// The metadata of the result of aggregate `name` over `args`: the summarised type.
pub(super) fn sketch_metadata(
    name: &str,
    args: &[std::sync::Arc<Field>],
) -> HashMap<String, String> {
    let Some(first) = args.first() else {
        return HashMap::new();
    };
    if ITEM_SKETCHES.contains(&name) {
        return HashMap::from([(SKETCH_ITEM_KEY.to_string(), first.data_type().to_string())]);
    }
    if ITEM_UNIONS.contains(&name) {
        return first
            .metadata()
            .get(SKETCH_ITEM_KEY)
            .map(|t| HashMap::from([(SKETCH_ITEM_KEY.to_string(), t.clone())]))
            .unwrap_or_default();
    }
    HashMap::new()
}

/// The summarised type a sketch column's field records, if any.
pub(super) fn item_type(sketch: &Field) -> Option<DataType> {
    DataType::from_str(sketch.metadata().get(SKETCH_ITEM_KEY)?).ok()
}

/// `items` as values of type `t` (when known and different), NULL where no value of `t`
/// equals the item (a cast that fails, or one that changes the value: `2.5` to an
/// integer).
pub(super) fn items_as(items: &ArrayRef, t: Option<&DataType>) -> Result<ArrayRef> {
    // A type the item cannot be cast to and back (a NULL item, a sketch of a column of
    // NULLs) leaves it as it is.
    let Some(t) = t.filter(|t| {
        *t != items.data_type()
            && can_cast_types(items.data_type(), t)
            && can_cast_types(t, items.data_type())
    }) else {
        return Ok(items.clone());
    };
    let safe = CastOptions {
        safe: true,
        ..Default::default()
    };
    let items = &without_negative_zero(items)?;
    let converted = cast_with_options(items, t, &safe)?;
    if matches!(
        items.data_type(),
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View
    ) {
        // A quoted item is read as a value of the type (`'1'` of a float column is 1), or
        // is none (NULL where the cast fails).
        return Ok(converted);
    }
    let back = cast_with_options(&converted, items.data_type(), &safe)?;
    // Equal where the item survives the round trip; NULL (never equal) where it does not.
    let same = eq(&back, items)?;
    let differs: BooleanArray = (0..same.len())
        .map(|i| Some(!(same.is_valid(i) && same.value(i))))
        .collect();
    Ok(nullif(&converted, &differs)?)
}

/// Floats with -0 as 0: equal numbers (an integer sketch's 0 is -0.0's value), which the
/// comparison after the round trip would tell apart.
fn without_negative_zero(items: &ArrayRef) -> Result<ArrayRef> {
    use datafusion::arrow::array::AsArray;
    use datafusion::arrow::datatypes::{Float32Type, Float64Type};
    Ok(match items.data_type() {
        DataType::Float64 => std::sync::Arc::new(
            items
                .as_primitive::<Float64Type>()
                .unary::<_, Float64Type>(|v| v + 0.0),
        ),
        DataType::Float32 => std::sync::Arc::new(
            items
                .as_primitive::<Float32Type>()
                .unary::<_, Float32Type>(|v| v + 0.0),
        ),
        _ => items.clone(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::arrow::array::{Decimal128Array, Float64Array, Int64Array, StringArray};
    use std::sync::Arc;

    #[test]
    fn items_take_the_summarised_type_or_are_absent() {
        let ints: ArrayRef = Arc::new(Int64Array::from(vec![Some(20), None]));
        let numeric = DataType::Decimal128(10, 2);
        let out = items_as(&ints, Some(&numeric)).unwrap();
        let expected = Decimal128Array::from(vec![Some(2000), None])
            .with_precision_and_scale(10, 2)
            .unwrap();
        assert_eq!(out.as_ref(), &expected as &dyn Array);

        let floats: ArrayRef = Arc::new(Float64Array::from(vec![5.0, 2.5]));
        let out = items_as(&floats, Some(&DataType::Int32)).unwrap();
        assert!(out.is_valid(0));
        assert!(out.is_null(1), "2.5 is no integer");

        let zero: ArrayRef = Arc::new(Float64Array::from(vec![-0.0]));
        let out = items_as(&zero, Some(&DataType::Int32)).unwrap();
        assert!(out.is_valid(0), "-0.0 is 0");

        let text: ArrayRef = Arc::new(StringArray::from(vec!["abc", "7"]));
        let out = items_as(&text, Some(&DataType::Int64)).unwrap();
        assert!(out.is_null(0));
        assert!(out.is_valid(1));

        assert!(Arc::ptr_eq(&items_as(&ints, None).unwrap(), &ints));
    }

    #[test]
    fn sketches_record_their_items_type_and_unions_keep_it() {
        let column = Arc::new(Field::new("price", numeric_type(), true));
        let meta = sketch_metadata("bloom_sketch_agg", &[column]);
        let sketch = Arc::new(Field::new("sketch", DataType::Binary, true).with_metadata(meta));
        assert_eq!(item_type(&sketch), Some(numeric_type()));
        let union = sketch_metadata("bloom_union_agg", &[sketch]);
        assert_eq!(
            union.get(SKETCH_ITEM_KEY).map(String::as_str),
            Some("Decimal128(10, 2)")
        );
        assert!(sketch_metadata(
            "hll_sketch_agg",
            &[Arc::new(Field::new("x", DataType::Int32, true))]
        )
        .is_empty());
    }

    fn numeric_type() -> DataType {
        DataType::Decimal128(10, 2)
    }
}
