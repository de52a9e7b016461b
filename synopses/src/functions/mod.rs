//! SQL functions over synopses: approximate aggregates, sketch-valued aggregates (`bytea` in
//! DataSketches format) and scalar functions that read sketch bytes.
//!
//! Every aggregate is one [`SynopsisAggregate`] — a name, a signature, a return type and a
//! constructor for its accumulator — so the DataFusion boilerplate is written once; the
//! per-function files only say which synopsis to build and what to answer. Their
//! accumulators are [`SynopsisAccumulator`]s whose partial state is the synopsis' bytes, so
//! DataFusion's two-phase (partial/final) aggregation merges sketches as DataSketches would.
//!
//! # Layout
//! - `distinct.rs`: `approx_count_distinct`, `hll_/cpc_/theta_sketch_agg` and `_union_agg`.
//! - `quantiles.rs`: `approx_percentile … WITHIN GROUP`, `kll_/req_/tdigest_sketch_agg`,
//!   `kll_union_agg`.
//! - `frequency.rs`: `approx_top_k`, `approx_count` (count-min, retractable),
//!   `approx_contains` (bloom), `frequent_items_sketch_agg`, `sample`.
//! - `moments.rs`: `ams_sketch_agg` and the join sizes it estimates (`self_join_size`,
//!   `join_size`).
//! - `correlation.rs`: `dft_sketch_agg(x, window [, k] ORDER BY t)` (DFT synopsis of a
//!   series' last window) and `approx_corr(a, b)` over two of them.
//! - `scalar.rs`: `estimate`, `lower_bound`, `upper_bound`, `quantile`, `frequency`,
//!   `might_contain`, `theta_intersection`, `theta_a_not_b`, `sample_values`.

mod correlation;
mod distinct;
mod frequency;
mod moments;
mod probe_items;
pub use probe_items::{PROBES, SKETCH_ITEM_KEY};
mod quantiles;
mod scalar;

use crate::Synopsis;
use brook_common::types::sql_name;
use brook_common::{brook_err, BrookError, Result};
use datafusion::arrow::array::{Array, ArrayRef, AsArray};
use datafusion::arrow::datatypes::{DataType, Field, FieldRef};
use datafusion::error::DataFusionError;
use datafusion::logical_expr::function::{AccumulatorArgs, StateFieldsArgs};
use datafusion::logical_expr::utils::AggregateOrderSensitivity;
use datafusion::logical_expr::{Accumulator, AggregateUDF, AggregateUDFImpl, Signature};
use datafusion::physical_expr::expressions::Literal;
use datafusion::prelude::SessionContext;
use datafusion::scalar::ScalarValue;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::sync::Arc;

/// Register every synopsis function on a context.
pub fn register(ctx: &SessionContext) {
    for udaf in distinct::aggregates()
        .into_iter()
        .chain(quantiles::aggregates())
        .chain(frequency::aggregates())
        .chain(correlation::aggregates())
        .chain(moments::aggregates())
    {
        ctx.register_udaf(udaf);
    }
    for udf in scalar::functions()
        .into_iter()
        .chain(correlation::functions())
        .chain(moments::functions())
    {
        ctx.register_udf(udf);
    }
}

/// Builds the accumulator of one call (reads the call's constant arguments).
type MakeAccumulator = fn(&AccumulatorArgs<'_>) -> Result<Box<dyn Accumulator>>;
/// The result type for the given argument types.
type ReturnType = fn(&[DataType]) -> Result<DataType>;

/// An aggregate function whose state is a synopsis.
pub struct SynopsisAggregate {
    name: &'static str,
    signature: Signature,
    return_type: ReturnType,
    make: MakeAccumulator,
    order: Order,
}

/// What an aggregate's ORDER BY means.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Order {
    /// Nothing: a sketch does not care in which order values arrive (never sort for it).
    Free,
    /// `f(p) WITHIN GROUP (ORDER BY x)` names the summarised value (the first argument).
    WithinGroup,
    /// `f(x ORDER BY t)` orders the values (windows of a series); the accumulator gets the
    /// ordering value after its arguments.
    Sequence,
}

impl SynopsisAggregate {
    /// An aggregate taking its arguments as written.
    pub fn udaf(
        name: &'static str,
        signature: Signature,
        return_type: ReturnType,
        make: MakeAccumulator,
    ) -> AggregateUDF {
        Self::build(name, signature, return_type, make, Order::Free)
    }

    /// An ordered-set aggregate (`WITHIN GROUP (ORDER BY x)`).
    pub fn ordered_set_udaf(
        name: &'static str,
        signature: Signature,
        return_type: ReturnType,
        make: MakeAccumulator,
    ) -> AggregateUDF {
        Self::build(name, signature, return_type, make, Order::WithinGroup)
    }

    /// An aggregate over a sequence: `f(x ORDER BY t)` feeds values in `t` order.
    pub fn sequence_udaf(
        name: &'static str,
        signature: Signature,
        return_type: ReturnType,
        make: MakeAccumulator,
    ) -> AggregateUDF {
        Self::build(name, signature, return_type, make, Order::Sequence)
    }

    fn build(
        name: &'static str,
        signature: Signature,
        return_type: ReturnType,
        make: MakeAccumulator,
        order: Order,
    ) -> AggregateUDF {
        AggregateUDF::new_from_impl(SynopsisAggregate {
            name,
            signature,
            return_type,
            make,
            order,
        })
    }
}

impl fmt::Debug for SynopsisAggregate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SynopsisAggregate")
            .field("name", &self.name)
            .finish()
    }
}

// Functions are identified by name: two instances with one name are the same function.
impl PartialEq for SynopsisAggregate {
    fn eq(&self, other: &Self) -> bool {
        self.name == other.name
    }
}

impl Eq for SynopsisAggregate {}

impl Hash for SynopsisAggregate {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.name.hash(state);
    }
}

impl AggregateUDFImpl for SynopsisAggregate {
    fn name(&self) -> &str {
        self.name
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, arg_types: &[DataType]) -> datafusion::error::Result<DataType> {
        (self.return_type)(arg_types).map_err(external)
    }

    /// DataFusion's field, with the summarised type for a count-min or bloom sketch
    /// (`probe_items`).
    fn return_field(&self, arg_fields: &[FieldRef]) -> datafusion::error::Result<FieldRef> {
        let field = datafusion::logical_expr::udaf_default_return_field(self, arg_fields)?;
        let metadata = probe_items::sketch_metadata(self.name, arg_fields);
        if metadata.is_empty() {
            return Ok(field);
        }
        Ok(Arc::new(field.as_ref().clone().with_metadata(metadata)))
    }

    fn accumulator(
        &self,
        acc_args: AccumulatorArgs<'_>,
    ) -> datafusion::error::Result<Box<dyn Accumulator>> {
        (self.make)(&acc_args).map_err(external)
    }

    fn state_fields(&self, args: StateFieldsArgs<'_>) -> datafusion::error::Result<Vec<FieldRef>> {
        let mut fields = vec![Arc::new(Field::new(
            format!("{}[sketch]", args.name),
            DataType::Binary,
            true,
        ))];
        // An ordered sequence also carries the ORDER BY value of each held value, so that
        // partial windows from different partitions merge in order.
        if let (Order::Sequence, Some(key)) = (self.order, args.ordering_fields.first()) {
            fields.push(Arc::new(Field::new_list(
                format!("{}[order]", args.name),
                Field::new_list_field(key.data_type().clone(), true),
                true,
            )));
        }
        Ok(fields)
    }

    fn supports_within_group_clause(&self) -> bool {
        self.order == Order::WithinGroup
    }

    fn order_sensitivity(&self) -> AggregateOrderSensitivity {
        match self.order {
            Order::Sequence => AggregateOrderSensitivity::HardRequirement,
            Order::Free | Order::WithinGroup => AggregateOrderSensitivity::Insensitive,
        }
    }
}

/// A Brook error inside DataFusion (keeps its SQLSTATE through the engine).
pub(crate) fn external(e: BrookError) -> DataFusionError {
    DataFusionError::External(Box::new(e))
}

/// What an accumulator's input column holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Input {
    /// Values to summarise.
    Values,
    /// Serialized sketches to union.
    Sketches,
}

/// Reads sketch bytes of the accumulator's kind (its partial state, or a union's input).
pub type Decode<S> = fn(&[u8]) -> Result<S>;
/// The aggregate's answer from the final synopsis (may capture the call's constants, e.g.
/// the asked percentile).
pub type Finish<S> = Box<dyn Fn(&S) -> Result<ScalarValue> + Send + Sync>;
/// Takes rows back out, for kinds that support deletion.
pub type Retract<S> = fn(&mut S, &dyn Array) -> Result<()>;

/// An accumulator whose state is one synopsis.
pub struct SynopsisAccumulator<S: Synopsis> {
    synopsis: S,
    input: Input,
    decode: Decode<S>,
    finish: Finish<S>,
    retract: Option<Retract<S>>,
}

impl<S: Synopsis> fmt::Debug for SynopsisAccumulator<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SynopsisAccumulator")
            .field("input", &self.input)
            .field("bytes", &self.synopsis.memory_bytes())
            .finish()
    }
}

impl<S: Synopsis + 'static> SynopsisAccumulator<S> {
    fn boxed(
        synopsis: S,
        input: Input,
        decode: Decode<S>,
        finish: Finish<S>,
        retract: Option<Retract<S>>,
    ) -> Box<dyn Accumulator> {
        Box::new(SynopsisAccumulator {
            synopsis,
            input,
            decode,
            finish,
            retract,
        })
    }

    /// An accumulator summarising values into `synopsis`.
    pub fn values(
        synopsis: S,
        decode: Decode<S>,
        finish: impl Fn(&S) -> Result<ScalarValue> + Send + Sync + 'static,
    ) -> Box<dyn Accumulator> {
        Self::boxed(synopsis, Input::Values, decode, Box::new(finish), None)
    }

    /// An accumulator that also retracts rows (for updating inputs in continuous queries).
    pub fn retracting(
        synopsis: S,
        decode: Decode<S>,
        finish: impl Fn(&S) -> Result<ScalarValue> + Send + Sync + 'static,
        retract: Retract<S>,
    ) -> Box<dyn Accumulator> {
        Self::boxed(
            synopsis,
            Input::Values,
            decode,
            Box::new(finish),
            Some(retract),
        )
    }

    /// An accumulator unioning serialized sketches into `synopsis`.
    pub fn sketches(
        synopsis: S,
        decode: Decode<S>,
        finish: impl Fn(&S) -> Result<ScalarValue> + Send + Sync + 'static,
    ) -> Box<dyn Accumulator> {
        Self::boxed(synopsis, Input::Sketches, decode, Box::new(finish), None)
    }

    fn merge_bytes(&mut self, sketches: &dyn Array) -> Result<()> {
        for bytes in binary_values(sketches)?.into_iter().flatten() {
            let other = (self.decode)(bytes)?;
            self.synopsis.merge(&other)?;
        }
        Ok(())
    }
}

impl<S: Synopsis + 'static> Accumulator for SynopsisAccumulator<S> {
    fn update_batch(&mut self, values: &[ArrayRef]) -> datafusion::error::Result<()> {
        let Some(first) = values.first() else {
            return Ok(());
        };
        match self.input {
            Input::Values => self.synopsis.add(first.as_ref()),
            Input::Sketches => self.merge_bytes(first.as_ref()),
        }
        .map_err(external)
    }

    fn evaluate(&mut self) -> datafusion::error::Result<ScalarValue> {
        (self.finish)(&self.synopsis).map_err(external)
    }

    fn size(&self) -> usize {
        std::mem::size_of::<Self>() + self.synopsis.memory_bytes()
    }

    fn state(&mut self) -> datafusion::error::Result<Vec<ScalarValue>> {
        Ok(vec![ScalarValue::Binary(Some(self.synopsis.to_bytes()))])
    }

    fn merge_batch(&mut self, states: &[ArrayRef]) -> datafusion::error::Result<()> {
        match states.first() {
            Some(s) => self.merge_bytes(s.as_ref()).map_err(external),
            None => Ok(()),
        }
    }

    fn retract_batch(&mut self, values: &[ArrayRef]) -> datafusion::error::Result<()> {
        match (self.retract, values.first()) {
            (Some(retract), Some(v)) => retract(&mut self.synopsis, v.as_ref()).map_err(external),
            (Some(_), None) => Ok(()),
            (None, _) => Err(external(brook_err!(
                Internal,
                "retract_batch on a synopsis without deletions"
            ))),
        }
    }

    fn supports_retract_batch(&self) -> bool {
        self.retract.is_some()
    }
}

/// A union of sketches whose shape (size, hash seeds) is fixed when built and must match to
/// merge — count-min, bloom, AMS: the first sketch met gives the shape, the others merge into
/// it (an error names the mismatch). Over no sketches the union is NULL, as there is no shape
/// to build an empty one with.
pub struct ShapedUnion<S: Synopsis> {
    union: Option<S>,
    kind: &'static str,
}

impl<S: Synopsis> fmt::Debug for ShapedUnion<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ShapedUnion")
            .field("kind", &self.kind)
            .finish()
    }
}

impl<S: Synopsis + 'static> ShapedUnion<S> {
    /// An empty union of `kind` sketches (the name is for errors).
    pub fn boxed(kind: &'static str) -> Box<dyn Accumulator> {
        Box::new(ShapedUnion::<S> { union: None, kind })
    }

    fn add(&mut self, sketches: &dyn Array) -> Result<()> {
        for bytes in binary_values(sketches)?.into_iter().flatten() {
            let other = S::from_bytes(bytes)?;
            match &mut self.union {
                Some(u) => u
                    .merge(&other)
                    .map_err(|e| brook_err!(InvalidParameter, "{} union: {e}", self.kind))?,
                None => self.union = Some(other),
            }
        }
        Ok(())
    }

    fn value(&self) -> ScalarValue {
        ScalarValue::Binary(self.union.as_ref().map(Synopsis::to_bytes))
    }
}

impl<S: Synopsis + 'static> Accumulator for ShapedUnion<S> {
    fn update_batch(&mut self, values: &[ArrayRef]) -> datafusion::error::Result<()> {
        match values.first() {
            Some(v) => self.add(v.as_ref()).map_err(external),
            None => Ok(()),
        }
    }

    fn evaluate(&mut self) -> datafusion::error::Result<ScalarValue> {
        Ok(self.value())
    }

    fn size(&self) -> usize {
        std::mem::size_of::<Self>() + self.union.as_ref().map_or(0, Synopsis::memory_bytes)
    }

    fn state(&mut self) -> datafusion::error::Result<Vec<ScalarValue>> {
        Ok(vec![self.value()])
    }

    fn merge_batch(&mut self, states: &[ArrayRef]) -> datafusion::error::Result<()> {
        self.update_batch(states)
    }
}

/// The values of a binary column (`bytea`), any of Arrow's three binary layouts.
pub(crate) fn binary_values(array: &dyn Array) -> Result<Vec<Option<&[u8]>>> {
    Ok(match array.data_type() {
        DataType::Binary => array.as_binary::<i32>().iter().collect(),
        DataType::LargeBinary => array.as_binary::<i64>().iter().collect(),
        DataType::BinaryView => array.as_binary_view().iter().collect(),
        DataType::Null => vec![None; array.len()],
        other => {
            return Err(brook_err!(
                DatatypeMismatch,
                "expected a sketch (bytea), got {}",
                sql_name(other)
            ))
        }
    })
}

/// The called function's name (`args.name` is the whole call as displayed).
pub(crate) fn function_name<'a>(args: &'a AccumulatorArgs<'_>) -> &'a str {
    args.name.split('(').next().unwrap_or(args.name)
}

/// The constant argument `i` of a call, `None` when not given.
///
/// Sketch parameters (sizes, errors, the probed item) fix the synopsis' shape, so they must
/// be constants; a column there is 22023.
pub(crate) fn constant_arg(args: &AccumulatorArgs<'_>, i: usize) -> Result<Option<ScalarValue>> {
    let Some(expr) = args.exprs.get(i) else {
        return Ok(None);
    };
    match expr.as_ref().downcast_ref::<Literal>() {
        Some(lit) => Ok(Some(lit.value().clone())),
        None => Err(brook_err!(
            InvalidParameter,
            "argument {} of {}() must be a constant",
            i + 1,
            function_name(args)
        )),
    }
}

/// Constant argument `i` as a double (`None` when absent or NULL).
pub(crate) fn f64_arg(args: &AccumulatorArgs<'_>, i: usize) -> Result<Option<f64>> {
    let Some(v) = constant_arg(args, i)? else {
        return Ok(None);
    };
    if v.is_null() {
        return Ok(None);
    }
    match v.cast_to(&DataType::Float64)? {
        ScalarValue::Float64(f) => Ok(f),
        other => Err(brook_err!(
            DatatypeMismatch,
            "argument {} of {}() must be a number, got {other}",
            i + 1,
            function_name(args)
        )),
    }
}

/// Constant argument `i` as a whole number within `range` (22023 outside).
pub(crate) fn int_arg(
    args: &AccumulatorArgs<'_>,
    i: usize,
    range: std::ops::RangeInclusive<i64>,
) -> Result<Option<i64>> {
    let Some(v) = constant_arg(args, i)? else {
        return Ok(None);
    };
    if v.is_null() {
        return Ok(None);
    }
    let n = match v.cast_to(&DataType::Int64) {
        Ok(ScalarValue::Int64(Some(n))) => n,
        _ => {
            return Err(brook_err!(
                DatatypeMismatch,
                "argument {} of {}() must be an integer, got {v}",
                i + 1,
                function_name(args)
            ))
        }
    };
    if !range.contains(&n) {
        return Err(brook_err!(
            InvalidParameter,
            "argument {} of {}() must be between {} and {}, got {n}",
            i + 1,
            function_name(args),
            range.start(),
            range.end()
        ));
    }
    Ok(Some(n))
}

/// The type of the summarised (first) argument.
pub(crate) fn value_type(args: &AccumulatorArgs<'_>) -> Result<DataType> {
    args.expr_fields
        .first()
        .map(|f| f.data_type().clone())
        .ok_or_else(|| brook_err!(Internal, "aggregate without arguments"))
}

/// Checked when a call is planned: the summarised (first) argument must have a defined
/// hashing; 0A000 names `what` and the type otherwise.
pub(crate) fn check_hashable(what: &str, types: &[DataType]) -> Result<()> {
    match types.first() {
        Some(t) if !crate::values::is_hashable(t) => Err(brook_err!(
            Unsupported,
            "{what} over values of type {}",
            sql_name(t)
        )),
        _ => Ok(()),
    }
}

/// Result type `bytea`.
pub(crate) fn returns_binary(_: &[DataType]) -> Result<DataType> {
    Ok(DataType::Binary)
}
