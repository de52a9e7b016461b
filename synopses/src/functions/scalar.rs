//! Scalar functions over sketch bytes, which recognise the kind from the DataSketches
//! preamble (its family byte): `estimate(s)`, `lower_bound(s [, confidence])`,
//! `upper_bound(s [, confidence])` for distinct-count sketches (HLL, CPC, theta),
//! `quantile(s, p)` for KLL, REQ and t-digest, `frequency(s, item)` for count-min,
//! `might_contain(s, item)` for bloom filters, the theta set operations
//! `theta_intersection(a, b)`, `theta_a_not_b(a, b)`, and `sample_values(s)` for samples.
//!
//! A probed item hashes as the summarised column's values did when it has the same kind of
//! type: every integer width hashes alike (`frequency(s, 7)` finds the `integer` 7), text as
//! its bytes; an item of another kind (`'7'` for an integer column) is simply not found.

use super::{binary_values, external};
use crate::bloom::Bloom;
use crate::chain::ChainSample;
use crate::countmin::CountMin;
use crate::cpc::Cpc;
use crate::hll::Hll;
use crate::kll::Kll;
use crate::req::Req;
use crate::reservoir::Reservoir;
use crate::tdigest::TDigest;
use crate::theta::Theta;
use crate::{check_rank, Confidence, Estimate, Quantiles, Synopsis};
use brook_common::{brook_err, Result};
use datafusion::arrow::array::{
    Array, ArrayRef, AsArray, BinaryArray, BooleanArray, Float64Array, Int64Array,
};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, Field, Float64Type};
use datafusion::logical_expr::{
    ColumnarValue, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, TypeSignature,
    Volatility,
};
use std::fmt;
use std::hash::{Hash, Hasher};
use std::sync::Arc;

/// DataSketches family ids (byte 2 of every serialized sketch).
const THETA: u8 = 3;
const HLL: u8 = 7;
const KLL: u8 = 15;
const CPC: u8 = 16;
const REQ: u8 = 17;
const TDIGEST: u8 = 20;
const FREQUENCY: u8 = 10;
const COUNTMIN: u8 = 18;
const BLOOM: u8 = 21;

pub(super) fn functions() -> Vec<ScalarUDF> {
    let bytes_and_optional_double = || {
        Signature::one_of(
            vec![
                TypeSignature::Exact(vec![DataType::Binary]),
                TypeSignature::Exact(vec![DataType::Binary, DataType::Float64]),
            ],
            Volatility::Immutable,
        )
    };
    vec![
        SketchFunction::udf(
            "estimate",
            Signature::exact(vec![DataType::Binary], Volatility::Immutable),
            DataType::Float64,
            |args| distinct_bound(args, |e| e.value),
        ),
        SketchFunction::udf(
            "lower_bound",
            bytes_and_optional_double(),
            DataType::Float64,
            |args| distinct_bound(args, |e| e.lower),
        ),
        SketchFunction::udf(
            "upper_bound",
            bytes_and_optional_double(),
            DataType::Float64,
            |args| distinct_bound(args, |e| e.upper),
        ),
        SketchFunction::udf(
            "quantile",
            Signature::exact(
                vec![DataType::Binary, DataType::Float64],
                Volatility::Immutable,
            ),
            DataType::Float64,
            quantile,
        ),
        SketchFunction::udf(
            "frequency",
            Signature::any(2, Volatility::Immutable),
            DataType::Int64,
            frequency,
        ),
        SketchFunction::udf(
            "might_contain",
            Signature::any(2, Volatility::Immutable),
            DataType::Boolean,
            might_contain,
        ),
        ScalarUDF::new_from_impl(SampleValues {
            signature: Signature::one_of(
                vec![
                    TypeSignature::Exact(vec![DataType::Binary]),
                    TypeSignature::Any(2),
                ],
                Volatility::Immutable,
            ),
        }),
        SketchFunction::udf(
            "theta_intersection",
            Signature::exact(
                vec![DataType::Binary, DataType::Binary],
                Volatility::Immutable,
            ),
            DataType::Binary,
            |args| theta_pair(args, Theta::intersect),
        ),
        SketchFunction::udf(
            "theta_a_not_b",
            Signature::exact(
                vec![DataType::Binary, DataType::Binary],
                Volatility::Immutable,
            ),
            DataType::Binary,
            |args| theta_pair(args, Theta::difference),
        ),
    ]
}

/// Evaluates the function over whole argument columns.
pub(super) type Eval = fn(&[ArrayRef]) -> Result<ArrayRef>;

/// A scalar function over sketches (one struct for all of them; each is a name, a
/// signature, a result type and a column-wise evaluation).
pub(super) struct SketchFunction {
    name: &'static str,
    signature: Signature,
    return_type: DataType,
    eval: Eval,
}

impl SketchFunction {
    /// The function `name` evaluating `eval` over whole argument columns.
    pub(super) fn udf(
        name: &'static str,
        signature: Signature,
        return_type: DataType,
        eval: Eval,
    ) -> ScalarUDF {
        ScalarUDF::new_from_impl(SketchFunction {
            name,
            signature,
            return_type,
            eval,
        })
    }
}

impl fmt::Debug for SketchFunction {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name)
    }
}

// Identified by name, as the aggregates are.
impl PartialEq for SketchFunction {
    fn eq(&self, other: &Self) -> bool {
        self.name == other.name
    }
}

impl Eq for SketchFunction {}

impl Hash for SketchFunction {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.name.hash(state);
    }
}

impl ScalarUDFImpl for SketchFunction {
    fn name(&self) -> &str {
        self.name
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _arg_types: &[DataType]) -> datafusion::error::Result<DataType> {
        Ok(self.return_type.clone())
    }

    fn invoke_with_args(
        &self,
        args: ScalarFunctionArgs,
    ) -> datafusion::error::Result<ColumnarValue> {
        let mut arrays = ColumnarValue::values_to_arrays(&args.args)?;
        if super::probe_items::PROBES.contains(&self.name) && arrays.len() == 2 {
            let item = super::probe_items::item_type(&args.arg_fields[0]);
            arrays[1] =
                super::probe_items::items_as(&arrays[1], item.as_ref()).map_err(external)?;
        }
        Ok(ColumnarValue::Array(
            (self.eval)(&arrays).map_err(external)?,
        ))
    }
}

/// The family byte of serialized sketch bytes (22P03 when no DataSketches family).
fn family(bytes: &[u8]) -> Result<u8> {
    match bytes.get(2).copied() {
        Some(f @ (THETA | HLL | KLL | CPC | REQ | TDIGEST | FREQUENCY | COUNTMIN | BLOOM)) => Ok(f),
        _ => Err(brook_err!(
            InvalidBinary,
            "not a DataSketches sketch (unknown family in its preamble)"
        )),
    }
}

/// The family's name, for errors.
fn family_name(family: u8) -> &'static str {
    match family {
        THETA => "theta",
        HLL => "HLL",
        KLL => "KLL",
        CPC => "CPC",
        REQ => "REQ",
        TDIGEST => "t-digest",
        FREQUENCY => "frequent items",
        COUNTMIN => "count-min",
        _ => "bloom filter",
    }
}

/// Optional double argument `i` as a column (NULL where absent).
fn doubles(args: &[ArrayRef], i: usize, rows: usize) -> Result<Float64Array> {
    match args.get(i) {
        Some(a) => Ok(cast(a, &DataType::Float64)?
            .as_primitive::<Float64Type>()
            .clone()),
        None => Ok(Float64Array::from(vec![None; rows])),
    }
}

fn distinct_estimate(bytes: &[u8], confidence: Confidence) -> Result<Estimate> {
    match family(bytes)? {
        HLL => Ok(Hll::from_bytes(bytes)?.estimate(confidence)),
        CPC => Ok(Cpc::from_bytes(bytes)?.estimate(confidence)),
        THETA => Ok(Theta::from_bytes(bytes)?.estimate(confidence)),
        other => Err(brook_err!(DatatypeMismatch, "estimate/lower_bound/upper_bound take a distinct-count sketch (HLL, CPC, theta), not a {} sketch",
            family_name(other))),
    }
}

fn distinct_bound(args: &[ArrayRef], pick: fn(&Estimate) -> f64) -> Result<ArrayRef> {
    let sketches = binary_values(args[0].as_ref())?;
    let confidences = doubles(args, 1, sketches.len())?;
    let mut out = Vec::with_capacity(sketches.len());
    for (i, bytes) in sketches.iter().enumerate() {
        let Some(bytes) = bytes else {
            out.push(None);
            continue;
        };
        let confidence = if confidences.is_null(i) {
            Confidence::default()
        } else {
            Confidence::new(confidences.value(i))?
        };
        out.push(Some(pick(&distinct_estimate(bytes, confidence)?)));
    }
    Ok(Arc::new(Float64Array::from(out)))
}

fn quantile_of(bytes: &[u8], rank: f64) -> Result<Option<f64>> {
    let rank = check_rank(rank)?;
    match family(bytes)? {
        KLL => Ok(Kll::from_bytes(bytes)?.quantile(rank)),
        REQ => Ok(Req::from_bytes(bytes)?.quantile(rank)),
        TDIGEST => Ok(TDigest::from_bytes(bytes)?.quantile(rank)),
        other => Err(brook_err!(
            DatatypeMismatch,
            "quantile() takes a quantiles sketch (KLL, REQ, t-digest), not a {} sketch",
            family_name(other)
        )),
    }
}

fn quantile(args: &[ArrayRef]) -> Result<ArrayRef> {
    let sketches = binary_values(args[0].as_ref())?;
    let ranks = doubles(args, 1, sketches.len())?;
    let mut out = Vec::with_capacity(sketches.len());
    for (i, bytes) in sketches.iter().enumerate() {
        match bytes {
            Some(b) if !ranks.is_null(i) => out.push(quantile_of(b, ranks.value(i))?),
            _ => out.push(None),
        }
    }
    Ok(Arc::new(Float64Array::from(out)))
}

/// The sketch bytes of one kind: 42804 for another family.
fn expect_family(bytes: &[u8], want: u8, function: &str) -> Result<()> {
    match family(bytes)? {
        f if f == want => Ok(()),
        other => Err(brook_err!(
            DatatypeMismatch,
            "{function}() takes a {} sketch, not a {} sketch",
            family_name(want),
            family_name(other)
        )),
    }
}

/// Per row, `probe(sketch bytes, item as a one-row array)`; NULL where the sketch is NULL.
fn probe_each<T>(
    args: &[ArrayRef],
    mut probe: impl FnMut(&[u8], &dyn Array) -> Result<T>,
) -> Result<Vec<Option<T>>> {
    let sketches = binary_values(args[0].as_ref())?;
    let items = &args[1];
    let mut out = Vec::with_capacity(sketches.len());
    for (i, bytes) in sketches.iter().enumerate() {
        match bytes {
            Some(b) => out.push(Some(probe(b, items.slice(i, 1).as_ref())?)),
            None => out.push(None),
        }
    }
    Ok(out)
}

/// `frequency(s, item)`: the count-min estimate of the item's count (never below the true
/// count; above it by at most the sketch's error times the rows, at its confidence).
fn frequency(args: &[ArrayRef]) -> Result<ArrayRef> {
    let counts = probe_each(args, |b, item| {
        expect_family(b, COUNTMIN, "frequency")?;
        Ok(CountMin::from_bytes(b)?.count_of(item)?.value as i64)
    })?;
    Ok(Arc::new(Int64Array::from(counts)))
}

/// `might_contain(s, item)`: false when the bloom filter never saw the item; true when it
/// did, or (at the filter's false-positive rate) when it did not.
fn might_contain(args: &[ArrayRef]) -> Result<ArrayRef> {
    let found = probe_each(args, |b, item| {
        expect_family(b, BLOOM, "might_contain")?;
        Bloom::from_bytes(b)?.contains(item)
    })?;
    Ok(Arc::new(BooleanArray::from(found)))
}

/// `sample_values(sample [, type_hint])`: a serialized sample's values as a list. Their
/// type lives in the bytes, while a function's result type is fixed when the query is
/// planned, so without a hint the values come as text; `sample_values(s, NULL::float8)`
/// returns them typed as the hint (as PostgreSQL's `jsonb_populate_record(NULL::t, ..)`
/// takes its row type from a NULL of that type).
#[derive(Debug, PartialEq, Eq, Hash)]
struct SampleValues {
    signature: Signature,
}

impl ScalarUDFImpl for SampleValues {
    fn name(&self) -> &str {
        "sample_values"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, arg_types: &[DataType]) -> datafusion::error::Result<DataType> {
        let element = match arg_types {
            [DataType::Binary] => DataType::Utf8,
            [DataType::Binary, DataType::Null] => {
                return Err(external(brook_err!(
                    DatatypeMismatch,
                    "sample_values(sample, hint): give the hint a type, e.g. NULL::float8"
                )))
            }
            [DataType::Binary, hint] => hint.clone(),
            other => {
                return Err(external(brook_err!(
                DatatypeMismatch,
                "sample_values(sample [, type hint]) takes a sample sketch (bytea), not {other:?}"
            )))
            }
        };
        Ok(DataType::List(Arc::new(Field::new_list_field(
            element, true,
        ))))
    }

    fn invoke_with_args(
        &self,
        args: ScalarFunctionArgs,
    ) -> datafusion::error::Result<ColumnarValue> {
        let element = match args.return_field.data_type() {
            DataType::List(f) => f.data_type().clone(),
            _ => DataType::Utf8,
        };
        let arrays = ColumnarValue::values_to_arrays(&args.args)?;
        let samples = arrays
            .first()
            .ok_or_else(|| external(brook_err!(Internal, "sample_values without arguments")))?;
        Ok(ColumnarValue::Array(
            sample_values(samples, &element).map_err(external)?,
        ))
    }
}

/// Each sample's values cast to `element`, as a list column.
fn sample_values(samples: &ArrayRef, element: &DataType) -> Result<ArrayRef> {
    let samples = binary_values(samples.as_ref())?;
    let mut lists: Vec<Option<ArrayRef>> = Vec::with_capacity(samples.len());
    for bytes in samples {
        lists.push(match bytes {
            Some(b) => {
                let values = if b.starts_with(crate::chain::MAGIC) {
                    ChainSample::from_bytes(b)?.to_array()?
                } else {
                    Reservoir::from_bytes(b)?.to_array()?
                };
                Some(cast(&values, element).map_err(|e| {
                    brook_err!(
                        DatatypeMismatch,
                        "sampled {} values do not convert to {element}: {e}",
                        values.data_type()
                    )
                })?)
            }
            None => None,
        });
    }
    let lengths: Vec<usize> = lists
        .iter()
        .map(|l| l.as_ref().map_or(0, |a| a.len()))
        .collect();
    let values: Vec<&dyn Array> = lists.iter().flatten().map(|a| a.as_ref()).collect();
    let values = if values.is_empty() {
        datafusion::arrow::array::new_empty_array(element)
    } else {
        datafusion::arrow::compute::concat(&values)?
    };
    let nulls: datafusion::arrow::buffer::NullBuffer = lists
        .iter()
        .map(|l| l.is_some())
        .collect::<Vec<bool>>()
        .into();
    Ok(Arc::new(datafusion::arrow::array::ListArray::try_new(
        Arc::new(Field::new_list_field(element.clone(), true)),
        datafusion::arrow::buffer::OffsetBuffer::from_lengths(lengths),
        values,
        Some(nulls),
    )?))
}

fn theta_pair(args: &[ArrayRef], op: fn(&Theta, &Theta) -> Result<Theta>) -> Result<ArrayRef> {
    let a = binary_values(args[0].as_ref())?;
    let b = binary_values(args[1].as_ref())?;
    let mut out: Vec<Option<Vec<u8>>> = Vec::with_capacity(a.len());
    for (x, y) in a.iter().zip(&b) {
        match (x, y) {
            (Some(x), Some(y)) => {
                let r = op(&Theta::from_bytes(x)?, &Theta::from_bytes(y)?)?;
                out.push(Some(r.to_bytes()));
            }
            _ => out.push(None),
        }
    }
    Ok(Arc::new(BinaryArray::from_iter(out)))
}
