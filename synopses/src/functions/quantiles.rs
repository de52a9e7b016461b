//! Quantiles: `approx_percentile(p [, rank_error]) WITHIN GROUP (ORDER BY x)` (KLL) and the
//! sketch-valued `kll_sketch_agg(x [, k])`, `req_sketch_agg(x [, k])`,
//! `tdigest_sketch_agg(x [, k])`, `kll_union_agg(sketch)`.

use super::distinct::{bytes_of, sketch_of_sketches};
use super::{f64_arg, int_arg, returns_binary, SynopsisAccumulator, SynopsisAggregate};
use crate::kll::{self, Kll};
use crate::req::{self, Req};
use crate::tdigest::{self, TDigest};
use crate::{check_rank, Confidence, Quantiles, Synopsis};
use brook_common::types::sql_name;
use brook_common::{brook_err, Result};
use datafusion::arrow::datatypes::DataType;
use datafusion::logical_expr::function::AccumulatorArgs;
use datafusion::logical_expr::{Accumulator, AggregateUDF, Signature, TypeSignature, Volatility};
use datafusion::scalar::ScalarValue;

pub(super) fn aggregates() -> Vec<AggregateUDF> {
    let one_or_two = || {
        Signature::one_of(
            vec![TypeSignature::Any(1), TypeSignature::Any(2)],
            Volatility::Immutable,
        )
    };
    vec![
        SynopsisAggregate::ordered_set_udaf(
            "approx_percentile",
            Signature::one_of(
                vec![TypeSignature::Any(2), TypeSignature::Any(3)],
                Volatility::Immutable,
            ),
            percentile_return_type,
            approx_percentile,
        ),
        SynopsisAggregate::udaf("kll_sketch_agg", one_or_two(), numeric_sketch, kll_sketch),
        SynopsisAggregate::udaf("kll_union_agg", one_or_two(), sketch_of_sketches, kll_union),
        SynopsisAggregate::udaf("req_sketch_agg", one_or_two(), numeric_sketch, req_sketch),
        SynopsisAggregate::udaf(
            "tdigest_sketch_agg",
            one_or_two(),
            numeric_sketch,
            tdigest_sketch,
        ),
    ]
}

/// Checked at planning: quantiles need numbers (42804 otherwise).
fn check_numeric(types: &[DataType]) -> Result<()> {
    match types.first() {
        Some(t) if !(t.is_numeric() || t.is_null()) => Err(brook_err!(
            DatatypeMismatch,
            "approximate quantiles need numeric values, got {}",
            sql_name(t)
        )),
        _ => Ok(()),
    }
}

fn percentile_return_type(types: &[DataType]) -> Result<DataType> {
    check_numeric(types)?;
    Ok(DataType::Float64)
}

fn numeric_sketch(types: &[DataType]) -> Result<DataType> {
    check_numeric(types)?;
    returns_binary(types)
}

fn approx_percentile(args: &AccumulatorArgs<'_>) -> Result<Box<dyn Accumulator>> {
    let p = f64_arg(args, 1)?
        .ok_or_else(|| brook_err!(InvalidParameter, "approx_percentile() needs a percentile"))?;
    let mut p = check_rank(p)?;
    // `ORDER BY x DESC` counts ranks from the top, as percentile_cont does.
    if args.order_bys.first().is_some_and(|o| o.options.descending) {
        p = 1.0 - p;
    }
    let k = match f64_arg(args, 2)? {
        Some(error) => Kll::k_for(error, Confidence::default())?,
        None => kll::DEFAULT_K,
    };
    let finish = move |s: &Kll| Ok(ScalarValue::Float64(s.quantile(p)));
    Ok(SynopsisAccumulator::values(
        Kll::new(k)?,
        Kll::from_bytes,
        finish,
    ))
}

/// `k` from argument 2 within `range`, else `default`.
fn k_arg(args: &AccumulatorArgs<'_>, range: (u16, u16), default: u16) -> Result<u16> {
    let k = int_arg(args, 1, i64::from(range.0)..=i64::from(range.1))?;
    Ok(k.map_or(default, |v| v as u16))
}

fn kll_sketch(args: &AccumulatorArgs<'_>) -> Result<Box<dyn Accumulator>> {
    let k = k_arg(args, kll::K_RANGE, kll::DEFAULT_K)?;
    Ok(SynopsisAccumulator::values(
        Kll::new(k)?,
        Kll::from_bytes,
        bytes_of,
    ))
}

fn kll_union(args: &AccumulatorArgs<'_>) -> Result<Box<dyn Accumulator>> {
    let k = k_arg(args, kll::K_RANGE, kll::DEFAULT_K)?;
    Ok(SynopsisAccumulator::sketches(
        Kll::new(k)?,
        Kll::from_bytes,
        bytes_of,
    ))
}

fn req_sketch(args: &AccumulatorArgs<'_>) -> Result<Box<dyn Accumulator>> {
    let k = k_arg(args, req::K_RANGE, req::DEFAULT_K)?;
    if k % 2 == 1 {
        return Err(brook_err!(
            InvalidParameter,
            "req_sketch_agg() needs an even k, got {k}"
        ));
    }
    Ok(SynopsisAccumulator::values(
        Req::new(k)?,
        Req::from_bytes,
        bytes_of,
    ))
}

fn tdigest_sketch(args: &AccumulatorArgs<'_>) -> Result<Box<dyn Accumulator>> {
    let k = k_arg(args, (10, u16::MAX), tdigest::DEFAULT_K)?;
    Ok(SynopsisAccumulator::values(
        TDigest::new(k)?,
        TDigest::from_bytes,
        bytes_of,
    ))
}
