//! Frequency moments with the AMS sketch: `ams_sketch_agg(x [, error [, confidence]])`
//! (retracts too) and `ams_union_agg(s)`, `self_join_size(s)` — F2, Σ count(v)², the size of the stream's equi-join
//! with itself on `x` — and `join_size(a, b)`, the estimated size of the equi-join of two
//! streams on their sketched columns.
//!
//! Every AMS sketch built here uses the same hash seed, so any two of the same error and
//! confidence combine: sketches of two streams (or two keys of one synopsis) give their join
//! size without either stream being stored.

use super::distinct::{bytes_of, sketch_of_sketches};
use super::scalar::SketchFunction;
use super::{
    binary_values, check_hashable, f64_arg, ShapedUnion, SynopsisAccumulator, SynopsisAggregate,
};
use crate::ams::{self, Ams};
use crate::{Confidence, Synopsis};
use brook_common::Result;
use datafusion::arrow::array::{ArrayRef, Float64Array};
use datafusion::arrow::datatypes::DataType;
use datafusion::logical_expr::function::AccumulatorArgs;
use datafusion::logical_expr::{
    Accumulator, AggregateUDF, ScalarUDF, Signature, TypeSignature, Volatility,
};
use std::sync::Arc;

pub(super) fn aggregates() -> Vec<AggregateUDF> {
    vec![
        SynopsisAggregate::udaf(
            "ams_sketch_agg",
            Signature::one_of(
                [1, 2, 3].into_iter().map(TypeSignature::Any).collect(),
                Volatility::Immutable,
            ),
            ams_sketch_type,
            ams_sketch,
        ),
        SynopsisAggregate::udaf(
            "ams_union_agg",
            Signature::any(1, Volatility::Immutable),
            sketch_of_sketches,
            |_| Ok(ShapedUnion::<Ams>::boxed("AMS")),
        ),
    ]
}

pub(super) fn functions() -> Vec<ScalarUDF> {
    vec![
        SketchFunction::udf(
            "self_join_size",
            Signature::exact(vec![DataType::Binary], Volatility::Immutable),
            DataType::Float64,
            self_join_size,
        ),
        SketchFunction::udf(
            "join_size",
            Signature::exact(
                vec![DataType::Binary, DataType::Binary],
                Volatility::Immutable,
            ),
            DataType::Float64,
            join_size,
        ),
    ]
}

fn ams_sketch_type(types: &[DataType]) -> Result<DataType> {
    check_hashable("ams_sketch_agg()", types)?;
    Ok(DataType::Binary)
}

fn ams_sketch(args: &AccumulatorArgs<'_>) -> Result<Box<dyn Accumulator>> {
    let error = f64_arg(args, 1)?.unwrap_or(ams::DEFAULT_ERROR);
    let confidence = match f64_arg(args, 2)? {
        Some(c) => Confidence::new(c)?,
        None => Confidence::default(),
    };
    Ok(SynopsisAccumulator::retracting(
        Ams::for_error(error, confidence, ams::SEED)?,
        Ams::from_bytes,
        bytes_of,
        Ams::retract,
    ))
}

fn self_join_size(args: &[ArrayRef]) -> Result<ArrayRef> {
    let out = binary_values(args[0].as_ref())?
        .into_iter()
        .map(|b| b.map(|b| Ok(Ams::from_bytes(b)?.f2().value)).transpose())
        .collect::<Result<Vec<_>>>()?;
    Ok(Arc::new(Float64Array::from(out)))
}

fn join_size(args: &[ArrayRef]) -> Result<ArrayRef> {
    let a = binary_values(args[0].as_ref())?;
    let b = binary_values(args[1].as_ref())?;
    let mut out = Vec::with_capacity(a.len());
    for (x, y) in a.iter().zip(&b) {
        out.push(match (x, y) {
            (Some(x), Some(y)) => Some(
                Ams::from_bytes(x)?
                    .inner_product(&Ams::from_bytes(y)?)?
                    .value,
            ),
            _ => None,
        });
    }
    Ok(Arc::new(Float64Array::from(out)))
}
