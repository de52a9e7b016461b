//! Frequencies, membership and samples: `approx_top_k(x, k [, error])`,
//! `approx_top_k_counts(x, k [, error])` (with counts and their bounds),
//! `approx_mode(x [, error])`,
//! `approx_count(x, item [, error])` (count-min: retracts, so it also runs over updating
//! inputs), `approx_contains(x, item [, max_items [, fpp]])` (bloom),
//! `frequent_items_sketch_agg(x [, lg_map_size])`, `sample(x, n)` and its serialized form
//! `sample_sketch_agg(x, n)`; the sketch values `countmin_sketch_agg(x [, error [,
//! confidence]])` (retracts too) and `bloom_sketch_agg(x [, max_items [, fpp]])`, read with
//! `frequency(s, item)` and `might_contain(s, item)`, with their `countmin_union_agg(s)` and
//! `bloom_union_agg(s)`.

use super::distinct::{bytes_of, sketch_of_sketches};
use super::{
    check_hashable, constant_arg, f64_arg, function_name, int_arg, returns_binary, value_type,
    ShapedUnion, SynopsisAccumulator, SynopsisAggregate,
};
use crate::bloom::{self, Bloom};
use crate::chain::{self, ChainSample};
use crate::countmin::CountMin;
use crate::frequent::{self, Frequent, Item};
use crate::reservoir::Reservoir;
use crate::{Confidence, Synopsis};
use brook_common::types::sql_name;
use brook_common::{brook_err, Result};
use datafusion::arrow::array::ArrayRef;
use datafusion::arrow::datatypes::{DataType, Field, Fields};
use datafusion::common::scalar::ScalarStructBuilder;
use datafusion::logical_expr::function::AccumulatorArgs;
use datafusion::logical_expr::{Accumulator, AggregateUDF, Signature, TypeSignature, Volatility};
use datafusion::scalar::ScalarValue;
use std::sync::Arc;

pub(super) fn aggregates() -> Vec<AggregateUDF> {
    let arities = |n: &[usize]| {
        Signature::one_of(
            n.iter().map(|n| TypeSignature::Any(*n)).collect(),
            Volatility::Immutable,
        )
    };
    vec![
        SynopsisAggregate::udaf(
            "approx_top_k",
            arities(&[2, 3]),
            list_of_items,
            approx_top_k,
        ),
        SynopsisAggregate::udaf(
            "approx_top_k_counts",
            arities(&[2, 3]),
            list_of_counts,
            approx_top_k_counts,
        ),
        SynopsisAggregate::udaf("approx_mode", arities(&[1, 2]), mode_type, approx_mode),
        SynopsisAggregate::udaf("approx_count", arities(&[2, 3]), count_type, approx_count),
        SynopsisAggregate::udaf(
            "approx_contains",
            arities(&[2, 3, 4]),
            contains_type,
            approx_contains,
        ),
        SynopsisAggregate::udaf(
            "countmin_sketch_agg",
            arities(&[1, 2, 3]),
            countmin_sketch_type,
            countmin_sketch,
        ),
        SynopsisAggregate::udaf(
            "bloom_sketch_agg",
            arities(&[1, 2, 3]),
            bloom_sketch_type,
            bloom_sketch,
        ),
        SynopsisAggregate::udaf(
            "countmin_union_agg",
            arities(&[1]),
            sketch_of_sketches,
            |_| Ok(ShapedUnion::<CountMin>::boxed("count-min")),
        ),
        SynopsisAggregate::udaf("bloom_union_agg", arities(&[1]), sketch_of_sketches, |_| {
            Ok(ShapedUnion::<Bloom>::boxed("bloom"))
        }),
        SynopsisAggregate::udaf(
            "frequent_items_sketch_agg",
            arities(&[1, 2]),
            frequent_sketch_type,
            frequent_items_sketch,
        ),
        // Volatile: two calls over the same rows draw different samples.
        SynopsisAggregate::udaf(
            "sample",
            Signature::any(2, Volatility::Volatile),
            list_of_values,
            sample,
        ),
        SynopsisAggregate::udaf(
            "sample_sketch_agg",
            Signature::any(2, Volatility::Volatile),
            returns_binary,
            sample_sketch,
        ),
        // Order matters (the last n rows) but is the arrival order, not an ORDER BY: it is
        // what `CREATE SYNOPSIS .. USING sample(x, k) WINDOW LAST_ROWS(n)` maintains.
        SynopsisAggregate::udaf(
            "chain_sample_agg",
            Signature::any(3, Volatility::Volatile),
            returns_binary,
            chain_sample_sketch,
        ),
    ]
}

/// Integer columns keep integer items; any other column counts its values as text.
fn item_type(t: &DataType) -> DataType {
    if t.is_integer() {
        DataType::Int64
    } else {
        DataType::Utf8
    }
}

fn list_of_items(types: &[DataType]) -> Result<DataType> {
    check_hashable("approx_top_k()", types)?;
    let item = item_type(types.first().unwrap_or(&DataType::Utf8));
    Ok(DataType::List(Arc::new(Field::new_list_field(item, true))))
}

fn list_of_values(types: &[DataType]) -> Result<DataType> {
    let t = types.first().cloned().unwrap_or(DataType::Null);
    Ok(DataType::List(Arc::new(Field::new_list_field(t, true))))
}

fn count_type(types: &[DataType]) -> Result<DataType> {
    check_hashable("approx_count()", types)?;
    Ok(DataType::Int64)
}

fn contains_type(types: &[DataType]) -> Result<DataType> {
    check_hashable("approx_contains()", types)?;
    Ok(DataType::Boolean)
}

fn countmin_sketch_type(types: &[DataType]) -> Result<DataType> {
    check_hashable("countmin_sketch_agg()", types)?;
    Ok(DataType::Binary)
}

fn bloom_sketch_type(types: &[DataType]) -> Result<DataType> {
    check_hashable("bloom_sketch_agg()", types)?;
    Ok(DataType::Binary)
}

fn frequent_sketch_type(types: &[DataType]) -> Result<DataType> {
    check_hashable("frequent_items_sketch_agg()", types)?;
    returns_binary(types)
}

/// The `k` and the sketch of `approx_top_k(x, k [, error])` and `approx_top_k_counts`.
fn top_k_sketch(args: &AccumulatorArgs<'_>) -> Result<(usize, Frequent)> {
    let k = int_arg(args, 1, 1..=10_000)?
        .ok_or_else(|| brook_err!(InvalidParameter, "{}() needs k", function_name(args)))?
        as usize;
    let lg = Frequent::lg_map_size_for_top_k(k, f64_arg(args, 2)?)?;
    let sketch = Frequent::for_type(&value_type(args)?, lg)?;
    Ok((k, sketch))
}

/// Fields of each element of `approx_top_k_counts`: the value, its estimated count and the
/// interval that always holds its true count.
fn top_k_count_fields(t: &DataType) -> Fields {
    Fields::from(vec![
        Field::new("value", t.clone(), true),
        Field::new("count", DataType::Int64, false),
        Field::new("count_lower", DataType::Int64, false),
        Field::new("count_upper", DataType::Int64, false),
    ])
}

fn list_of_counts(types: &[DataType]) -> Result<DataType> {
    check_hashable("approx_top_k_counts()", types)?;
    let t = types.first().cloned().unwrap_or(DataType::Utf8);
    Ok(DataType::List(Arc::new(Field::new_list_field(
        DataType::Struct(top_k_count_fields(&t)),
        true,
    ))))
}

/// A sketch item as a value of the summarised column's type `t`.
fn item_value(item: Item, t: &DataType) -> Result<ScalarValue> {
    let value = match item {
        Item::Long(v) => ScalarValue::Int64(Some(v)),
        Item::Text(v) => ScalarValue::Utf8(Some(v)),
    };
    Ok(value.cast_to(t)?)
}

/// `approx_top_k_counts(x, k [, error])`: the `k` most frequent values with their counts and
/// count bounds, heaviest first (the budget's replacement of `GROUP BY x ORDER BY count(*)
/// DESC LIMIT k`).
fn approx_top_k_counts(args: &AccumulatorArgs<'_>) -> Result<Box<dyn Accumulator>> {
    let (k, sketch) = top_k_sketch(args)?;
    let t = value_type(args)?;
    let decode = decoder(&t);
    let fields = top_k_count_fields(&t);
    let finish = move |s: &Frequent| {
        let mut rows = Vec::new();
        for r in s.top_k(k) {
            let count = |n: u64| ScalarValue::Int64(Some(i64::try_from(n).unwrap_or(i64::MAX)));
            let (estimate, lower, upper) = (count(r.estimate), count(r.lower), count(r.upper));
            let mut row = ScalarStructBuilder::new();
            for (field, value) in
                fields
                    .iter()
                    .zip([item_value(r.item, &t)?, estimate, lower, upper])
            {
                row = row.with_scalar(field.as_ref().clone(), value);
            }
            rows.push(row.build()?);
        }
        Ok(ScalarValue::List(ScalarValue::new_list_nullable(
            &rows,
            &DataType::Struct(fields.clone()),
        )))
    };
    Ok(SynopsisAccumulator::values(sketch, decode, finish))
}

fn approx_top_k(args: &AccumulatorArgs<'_>) -> Result<Box<dyn Accumulator>> {
    let (k, sketch) = top_k_sketch(args)?;
    let t = value_type(args)?;
    let decode = decoder(&t);
    let item = item_type(&t);
    let finish = move |s: &Frequent| {
        let items: Vec<ScalarValue> = s
            .top_k(k)
            .into_iter()
            .map(|r| match r.item {
                Item::Long(v) => ScalarValue::Int64(Some(v)),
                Item::Text(v) => ScalarValue::Utf8(Some(v)),
            })
            .collect();
        Ok(ScalarValue::List(ScalarValue::new_list_nullable(
            &items, &item,
        )))
    };
    Ok(SynopsisAccumulator::values(sketch, decode, finish))
}

/// Reads the partial state of a frequent-items sketch over values of type `t`.
fn decoder(t: &DataType) -> super::Decode<Frequent> {
    if t.is_integer() {
        Frequent::longs_from_bytes
    } else {
        Frequent::from_bytes
    }
}

fn mode_type(types: &[DataType]) -> Result<DataType> {
    check_hashable("approx_mode()", types)?;
    Ok(types.first().cloned().unwrap_or(DataType::Null))
}

/// `approx_mode(x [, error])`: the most frequent value by a frequent-items sketch. Its true
/// count is within `error · rows` of the mode's (the sketch's deterministic bound), and it is
/// returned as the column's type.
fn approx_mode(args: &AccumulatorArgs<'_>) -> Result<Box<dyn Accumulator>> {
    let lg = match f64_arg(args, 1)? {
        Some(error) => Frequent::lg_map_size_for(error)?,
        None => frequent::DEFAULT_LG_MAP_SIZE,
    };
    let t = value_type(args)?;
    let sketch = Frequent::for_type(&t, lg)?;
    let decode = decoder(&t);
    let finish = move |s: &Frequent| match s.top_k(1).into_iter().next() {
        None => Ok(ScalarValue::try_from(&t)?),
        Some(top) => item_value(top.item, &t),
    };
    Ok(SynopsisAccumulator::values(sketch, decode, finish))
}

/// The probed item (argument 2) as a one-row array of the column's type, so it hashes as
/// the column's values do (`approx_count(int_col, 7)` finds the int 7).
fn probe_item(args: &AccumulatorArgs<'_>) -> Result<ArrayRef> {
    let t = value_type(args)?;
    let item = constant_arg(args, 1)?
        .ok_or_else(|| brook_err!(InvalidParameter, "{}() needs an item", function_name(args)))?;
    let item = item.cast_to(&t).map_err(|_| {
        brook_err!(
            DatatypeMismatch,
            "{}(): item {item} is not a value of type {}",
            function_name(args),
            sql_name(&t)
        )
    })?;
    Ok(item.to_array()?)
}

fn approx_count(args: &AccumulatorArgs<'_>) -> Result<Box<dyn Accumulator>> {
    let item = probe_item(args)?;
    let error = f64_arg(args, 2)?.unwrap_or(0.01);
    let sketch = CountMin::for_error(error, Confidence::default())?;
    let finish = move |s: &CountMin| {
        let e = s.count_of(item.as_ref())?;
        Ok(ScalarValue::Int64(Some(e.value as i64)))
    };
    Ok(SynopsisAccumulator::retracting(
        sketch,
        CountMin::from_bytes,
        finish,
        CountMin::retract,
    ))
}

fn approx_contains(args: &AccumulatorArgs<'_>) -> Result<Box<dyn Accumulator>> {
    let item = probe_item(args)?;
    let max_items = int_arg(args, 2, 1..=1_000_000_000)?.unwrap_or(bloom::DEFAULT_MAX_ITEMS) as u64;
    let fpp = f64_arg(args, 3)?.unwrap_or(bloom::DEFAULT_FPP);
    let finish = move |s: &Bloom| Ok(ScalarValue::Boolean(Some(s.contains(item.as_ref())?)));
    Ok(SynopsisAccumulator::values(
        Bloom::for_items(max_items, fpp)?,
        Bloom::from_bytes,
        finish,
    ))
}

fn countmin_sketch(args: &AccumulatorArgs<'_>) -> Result<Box<dyn Accumulator>> {
    let error = f64_arg(args, 1)?.unwrap_or(0.01);
    let confidence = match f64_arg(args, 2)? {
        Some(c) => Confidence::new(c)?,
        None => Confidence::default(),
    };
    Ok(SynopsisAccumulator::retracting(
        CountMin::for_error(error, confidence)?,
        CountMin::from_bytes,
        bytes_of,
        CountMin::retract,
    ))
}

fn bloom_sketch(args: &AccumulatorArgs<'_>) -> Result<Box<dyn Accumulator>> {
    let max_items = int_arg(args, 1, 1..=1_000_000_000)?.unwrap_or(bloom::DEFAULT_MAX_ITEMS) as u64;
    let fpp = f64_arg(args, 2)?.unwrap_or(bloom::DEFAULT_FPP);
    Ok(SynopsisAccumulator::values(
        Bloom::for_items(max_items, fpp)?,
        Bloom::from_bytes,
        bytes_of,
    ))
}

fn frequent_items_sketch(args: &AccumulatorArgs<'_>) -> Result<Box<dyn Accumulator>> {
    let lg = int_arg(args, 1, 3..=i64::from(frequent::MAX_LG_MAP_SIZE))?
        .map_or(frequent::DEFAULT_LG_MAP_SIZE, |v| v as u8);
    // Text items always: DataSketches' frequent_strings_sketch, readable everywhere.
    Ok(SynopsisAccumulator::values(
        Frequent::texts(lg)?,
        Frequent::from_bytes,
        bytes_of,
    ))
}

/// The reservoir of `sample(x, n)` / `sample_sketch_agg(x, n)`.
fn reservoir(args: &AccumulatorArgs<'_>) -> Result<Reservoir> {
    let n = int_arg(args, 1, 1..=1 << 24)?
        .ok_or_else(|| brook_err!(InvalidParameter, "{}() needs a size", function_name(args)))?
        as usize;
    Reservoir::new(n, value_type(args)?)
}

fn sample_sketch(args: &AccumulatorArgs<'_>) -> Result<Box<dyn Accumulator>> {
    Ok(SynopsisAccumulator::values(
        reservoir(args)?,
        Reservoir::from_bytes,
        bytes_of,
    ))
}

/// `chain_sample_agg(x, k, n)`: `k` draws from the last `n` values (a [`ChainSample`]).
fn chain_sample_sketch(args: &AccumulatorArgs<'_>) -> Result<Box<dyn Accumulator>> {
    let size = |i: usize, what: &str, max: u64| -> Result<u64> {
        int_arg(args, i, 1..=max as i64)?
            .map(|v| v as u64)
            .ok_or_else(|| brook_err!(InvalidParameter, "chain_sample_agg() needs {what}"))
    };
    let k = size(1, "a sample size", chain::MAX_SIZE)?;
    let n = size(2, "a window (rows)", chain::MAX_WINDOW)?;
    Ok(SynopsisAccumulator::values(
        ChainSample::new(k as usize, n, value_type(args)?)?,
        ChainSample::from_bytes,
        bytes_of,
    ))
}

fn sample(args: &AccumulatorArgs<'_>) -> Result<Box<dyn Accumulator>> {
    let finish = |s: &Reservoir| {
        let values = s.items().to_vec();
        Ok(ScalarValue::List(ScalarValue::new_list_nullable(
            &values,
            &s.data_type(),
        )))
    };
    Ok(SynopsisAccumulator::values(
        reservoir(args)?,
        Reservoir::from_bytes,
        finish,
    ))
}
