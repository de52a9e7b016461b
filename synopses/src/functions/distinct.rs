//! Distinct counting: `approx_count_distinct(x [, rel_error])` and the sketch-valued
//! `hll_sketch_agg(x [, lg_k])`, `cpc_sketch_agg(x [, lg_k])`, `theta_sketch_agg(x [, lg_k])`
//! with their `*_union_agg(sketch)`.

use super::{
    check_hashable, f64_arg, int_arg, returns_binary, SynopsisAccumulator, SynopsisAggregate,
};
use crate::cpc::{self, Cpc};
use crate::hll::{self, Hll};
use crate::theta::{self, Theta};
use crate::{Confidence, Synopsis};
use brook_common::types::sql_name;
use brook_common::{brook_err, Result};
use datafusion::arrow::datatypes::DataType;
use datafusion::logical_expr::function::AccumulatorArgs;
use datafusion::logical_expr::{Accumulator, AggregateUDF, Signature, TypeSignature, Volatility};
use datafusion::scalar::ScalarValue;

pub(super) fn aggregates() -> Vec<AggregateUDF> {
    vec![
        SynopsisAggregate::udaf(
            "approx_count_distinct",
            one_or_two(),
            count_return_type,
            approx_count_distinct,
        ),
        SynopsisAggregate::udaf("hll_sketch_agg", one_or_two(), sketch_of_values, hll_sketch),
        SynopsisAggregate::udaf("hll_union_agg", one_or_two(), sketch_of_sketches, hll_union),
        SynopsisAggregate::udaf("cpc_sketch_agg", one_or_two(), sketch_of_values, cpc_sketch),
        SynopsisAggregate::udaf("cpc_union_agg", one_or_two(), sketch_of_sketches, cpc_union),
        SynopsisAggregate::udaf(
            "theta_sketch_agg",
            one_or_two(),
            sketch_of_values,
            theta_sketch,
        ),
        SynopsisAggregate::udaf(
            "theta_union_agg",
            one_or_two(),
            sketch_of_sketches,
            theta_union,
        ),
    ]
}

/// `f(x)` or `f(x, parameter)`.
fn one_or_two() -> Signature {
    Signature::one_of(
        vec![TypeSignature::Any(1), TypeSignature::Any(2)],
        Volatility::Immutable,
    )
}

/// Checked at planning: the values must be hashable (0A000 names the type otherwise).
fn check_distinct_input(types: &[DataType]) -> Result<()> {
    check_hashable("approximate distinct counts", types)
}

fn count_return_type(types: &[DataType]) -> Result<DataType> {
    check_distinct_input(types)?;
    Ok(DataType::Int64)
}

fn sketch_of_values(types: &[DataType]) -> Result<DataType> {
    check_distinct_input(types)?;
    returns_binary(types)
}

pub(super) fn sketch_of_sketches(types: &[DataType]) -> Result<DataType> {
    match types.first() {
        Some(DataType::Binary | DataType::LargeBinary | DataType::BinaryView | DataType::Null) => {
            returns_binary(types)
        }
        Some(t) => Err(brook_err!(
            DatatypeMismatch,
            "a union of sketches takes sketches (bytea), got {}",
            sql_name(t)
        )),
        None => returns_binary(types),
    }
}

/// `lg_k` from argument 2, within the kind's range.
fn lg_k_arg(args: &AccumulatorArgs<'_>, range: (u8, u8), default: u8) -> Result<u8> {
    let lg_k = int_arg(args, 1, i64::from(range.0)..=i64::from(range.1))?;
    Ok(lg_k.map_or(default, |v| v as u8))
}

fn approx_count_distinct(args: &AccumulatorArgs<'_>) -> Result<Box<dyn Accumulator>> {
    let lg_k = match f64_arg(args, 1)? {
        Some(error) => Hll::lg_k_for(error, Confidence::default())?,
        None => hll::DEFAULT_LG_K,
    };
    let finish = |s: &Hll| {
        let e = s.estimate(Confidence::default());
        Ok(ScalarValue::Int64(Some(e.value.round() as i64)))
    };
    Ok(SynopsisAccumulator::values(
        Hll::new(lg_k)?,
        Hll::from_bytes,
        finish,
    ))
}

/// The sketch's bytes (over no rows: an empty sketch, which merges as the identity).
pub(super) fn bytes_of<S: Synopsis>(s: &S) -> Result<ScalarValue> {
    Ok(ScalarValue::Binary(Some(s.to_bytes())))
}

fn hll_sketch(args: &AccumulatorArgs<'_>) -> Result<Box<dyn Accumulator>> {
    let lg_k = lg_k_arg(args, hll::LG_K_RANGE, hll::DEFAULT_LG_K)?;
    Ok(SynopsisAccumulator::values(
        Hll::new(lg_k)?,
        Hll::from_bytes,
        bytes_of,
    ))
}

fn hll_union(args: &AccumulatorArgs<'_>) -> Result<Box<dyn Accumulator>> {
    // A union keeps the smallest lg_k it meets; start from the largest allowed.
    let lg_k = lg_k_arg(args, hll::LG_K_RANGE, hll::LG_K_RANGE.1)?;
    Ok(SynopsisAccumulator::sketches(
        Hll::new(lg_k)?,
        Hll::from_bytes,
        bytes_of,
    ))
}

fn cpc_sketch(args: &AccumulatorArgs<'_>) -> Result<Box<dyn Accumulator>> {
    let lg_k = lg_k_arg(args, cpc::LG_K_RANGE, cpc::DEFAULT_LG_K)?;
    Ok(SynopsisAccumulator::values(
        Cpc::new(lg_k)?,
        Cpc::from_bytes,
        bytes_of,
    ))
}

fn cpc_union(args: &AccumulatorArgs<'_>) -> Result<Box<dyn Accumulator>> {
    let lg_k = lg_k_arg(args, cpc::LG_K_RANGE, cpc::LG_K_RANGE.1)?;
    Ok(SynopsisAccumulator::sketches(
        Cpc::new(lg_k)?,
        Cpc::from_bytes,
        bytes_of,
    ))
}

fn theta_sketch(args: &AccumulatorArgs<'_>) -> Result<Box<dyn Accumulator>> {
    let lg_k = lg_k_arg(args, theta::LG_K_RANGE, theta::DEFAULT_LG_K)?;
    Ok(SynopsisAccumulator::values(
        Theta::new(lg_k)?,
        Theta::from_bytes,
        bytes_of,
    ))
}

fn theta_union(args: &AccumulatorArgs<'_>) -> Result<Box<dyn Accumulator>> {
    let lg_k = lg_k_arg(args, theta::LG_K_RANGE, theta::DEFAULT_LG_K)?;
    Ok(SynopsisAccumulator::sketches(
        Theta::new(lg_k)?,
        Theta::from_bytes,
        bytes_of,
    ))
}
