//! `percentile_cont(fraction) WITHIN GROUP (ORDER BY x)` with PostgreSQL's array form too:
//! `percentile_cont(ARRAY[0.25, 0.5, 0.75]) WITHIN GROUP (ORDER BY x)` gives an array of
//! interpolated percentiles.
//!
//! DataFusion's `percentile_cont` takes one fraction (and has a grouped accumulator, which
//! stays in use for it); with an array of fractions the values are kept and sorted once
//! (`percentile_disc.rs`'s accumulator, interpolating). Numbers are read as double
//! precision, as PostgreSQL's `percentile_cont(double precision)` reads them; other types
//! are 42883 (PostgreSQL's interval form is not built).

use brook_common::BrookError;
use datafusion::arrow::datatypes::{DataType, Field, FieldRef};
use datafusion::error::{DataFusionError, Result};
use datafusion::logical_expr::function::{AccumulatorArgs, StateFieldsArgs};
use datafusion::logical_expr::{
    Accumulator, AggregateUDF, AggregateUDFImpl, GroupsAccumulator, Signature, Volatility,
};
use std::sync::Arc;

use super::percentile_disc::is_list;

/// The aggregate.
pub fn udaf() -> AggregateUDF {
    AggregateUDF::new_from_impl(PercentileCont {
        signature: Signature::user_defined(Volatility::Immutable),
        datafusion: datafusion::functions_aggregate::percentile_cont::percentile_cont_udaf(),
    })
}

#[derive(Debug)]
struct PercentileCont {
    signature: Signature,
    /// DataFusion's, for one fraction.
    datafusion: Arc<AggregateUDF>,
}

impl PartialEq for PercentileCont {
    fn eq(&self, other: &Self) -> bool {
        self.signature == other.signature
    }
}

impl Eq for PercentileCont {}

impl std::hash::Hash for PercentileCont {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.signature.hash(state)
    }
}

/// Whether a call has an array of fractions (its second argument).
fn of_array(fields: &[FieldRef]) -> bool {
    fields.get(1).is_some_and(|f| is_list(f.data_type()))
}

impl AggregateUDFImpl for PercentileCont {
    fn name(&self) -> &str {
        "percentile_cont"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    /// The ordered values as double precision; one fraction as double precision too (as
    /// DataFusion's takes it), an array as it is.
    fn coerce_types(&self, arg_types: &[DataType]) -> Result<Vec<DataType>> {
        let [value, fraction] = arg_types else {
            return Err(DataFusionError::Plan(
                "percentile_cont takes a fraction and WITHIN GROUP (ORDER BY x)".into(),
            ));
        };
        if !(value.is_numeric() || value.is_null()) {
            return Err(DataFusionError::from(BrookError::UndefinedFunction(
                format!("function percentile_cont over {value} does not exist (it takes numbers)"),
            )));
        }
        let fraction = if is_list(fraction) {
            fraction.clone()
        } else {
            DataType::Float64
        };
        Ok(vec![DataType::Float64, fraction])
    }

    fn return_type(&self, arg_types: &[DataType]) -> Result<DataType> {
        Ok(match arg_types.get(1) {
            Some(t) if is_list(t) => {
                DataType::List(Arc::new(Field::new_list_field(DataType::Float64, true)))
            }
            _ => DataType::Float64,
        })
    }

    fn supports_within_group_clause(&self) -> bool {
        true
    }

    fn accumulator(&self, args: AccumulatorArgs<'_>) -> Result<Box<dyn Accumulator>> {
        if of_array(args.expr_fields) {
            super::percentile_disc::sorted_accumulator(args, true)
        } else {
            self.datafusion.accumulator(args)
        }
    }

    fn state_fields(&self, args: StateFieldsArgs<'_>) -> Result<Vec<FieldRef>> {
        if of_array(args.input_fields) {
            Ok(super::percentile_disc::sorted_state_fields(args))
        } else {
            self.datafusion.state_fields(args)
        }
    }

    fn groups_accumulator_supported(&self, args: AccumulatorArgs<'_>) -> bool {
        !of_array(args.expr_fields) && self.datafusion.groups_accumulator_supported(args)
    }

    fn create_groups_accumulator(
        &self,
        args: AccumulatorArgs<'_>,
    ) -> Result<Box<dyn GroupsAccumulator>> {
        self.datafusion.create_groups_accumulator(args)
    }
}
