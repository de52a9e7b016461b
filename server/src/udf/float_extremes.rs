//! `min` and `max` of floats with PostgreSQL's order: NaN above every other value
//! (`max` of a group holding a NaN is NaN, `min` ignores it unless it is all there is).
//!
//! DataFusion's grouped `min`/`max` of floats compare with `partial_cmp` and take the new
//! value whenever a NaN makes the comparison undefined, so a NaN followed by 1 in a group
//! gave `max` 1 (ungrouped, Arrow's kernels order NaN last and were right): a silent wrong
//! answer that depended on the rows' order. This wraps DataFusion's functions and gives
//! floats a grouped accumulator of its own comparison; every other type and path
//! (ungrouped, sliding windows) is DataFusion's. The comparison is written here because
//! DataFusion's accumulator takes it as a closure and no library offers PostgreSQL's.

use datafusion::arrow::datatypes::{DataType, FieldRef, Float32Type, Float64Type};
use datafusion::error::Result;
use datafusion::logical_expr::function::{AccumulatorArgs, StateFieldsArgs};
use datafusion::logical_expr::utils::AggregateOrderSensitivity;
use datafusion::logical_expr::{
    Accumulator, AggregateUDF, AggregateUDFImpl, Documentation, GroupsAccumulator, ReversedUDAF,
    SetMonotonicity, Signature, StatisticsArgs,
};
use datafusion::prelude::SessionContext;
use datafusion::scalar::ScalarValue;
use datafusion_functions_aggregate_common::aggregate::groups_accumulator::prim_op::PrimitiveGroupsAccumulator;
use std::sync::Arc;

/// Whether `a` comes after `b` in PostgreSQL's float order (NaN last, all NaNs equal).
fn after(a: f64, b: f64) -> bool {
    match (a.is_nan(), b.is_nan()) {
        (true, nan) => !nan,
        (false, true) => false,
        (false, false) => a > b,
    }
}

/// Whether `new` replaces `cur` as the greatest (`max`) or least value so far.
fn replaces(max: bool, new: f64, cur: f64) -> bool {
    if max {
        after(new, cur)
    } else {
        after(cur, new)
    }
}

/// DataFusion's `min` or `max` with [`after`] for floats in groups.
#[derive(Debug, PartialEq, Eq, Hash)]
struct Extreme {
    inner: Arc<AggregateUDF>,
    max: bool,
}

impl Extreme {
    /// A grouped accumulator of floats of type `t` keeping the greatest (or least) value.
    fn float_groups(&self, t: &DataType) -> Option<Box<dyn GroupsAccumulator>> {
        let max = self.max;
        Some(match t {
            DataType::Float64 => Box::new(
                PrimitiveGroupsAccumulator::<Float64Type, _>::new(t, move |cur, new| {
                    if replaces(max, new, *cur) {
                        *cur = new
                    }
                })
                .with_starting_value(if max {
                    f64::NEG_INFINITY
                } else {
                    f64::NAN
                }),
            ),
            DataType::Float32 => Box::new(
                PrimitiveGroupsAccumulator::<Float32Type, _>::new(t, move |cur, new| {
                    if replaces(max, f64::from(new), f64::from(*cur)) {
                        *cur = new
                    }
                })
                .with_starting_value(if max {
                    f32::NEG_INFINITY
                } else {
                    f32::NAN
                }),
            ),
            _ => return None,
        })
    }
}

impl AggregateUDFImpl for Extreme {
    fn name(&self) -> &str {
        self.inner.name()
    }

    fn aliases(&self) -> &[String] {
        self.inner.aliases()
    }

    fn signature(&self) -> &Signature {
        self.inner.signature()
    }

    fn coerce_types(&self, arg_types: &[DataType]) -> Result<Vec<DataType>> {
        self.inner.coerce_types(arg_types)
    }

    fn return_type(&self, arg_types: &[DataType]) -> Result<DataType> {
        self.inner.return_type(arg_types)
    }

    fn accumulator(&self, acc_args: AccumulatorArgs<'_>) -> Result<Box<dyn Accumulator>> {
        self.inner.accumulator(acc_args)
    }

    fn state_fields(&self, args: StateFieldsArgs<'_>) -> Result<Vec<FieldRef>> {
        self.inner.state_fields(args)
    }

    fn groups_accumulator_supported(&self, args: AccumulatorArgs<'_>) -> bool {
        self.inner.groups_accumulator_supported(args)
    }

    fn create_groups_accumulator(
        &self,
        args: AccumulatorArgs<'_>,
    ) -> Result<Box<dyn GroupsAccumulator>> {
        match self.float_groups(args.return_field.data_type()) {
            Some(acc) => Ok(acc),
            None => self.inner.create_groups_accumulator(args),
        }
    }

    fn create_sliding_accumulator(
        &self,
        args: AccumulatorArgs<'_>,
    ) -> Result<Box<dyn Accumulator>> {
        self.inner.create_sliding_accumulator(args)
    }

    fn is_descending(&self) -> Option<bool> {
        self.inner.is_descending()
    }

    fn order_sensitivity(&self) -> AggregateOrderSensitivity {
        self.inner.inner().order_sensitivity()
    }

    fn reverse_expr(&self) -> ReversedUDAF {
        ReversedUDAF::Identical
    }

    fn value_from_stats(&self, statistics_args: &StatisticsArgs<'_>) -> Option<ScalarValue> {
        self.inner.inner().value_from_stats(statistics_args)
    }

    fn set_monotonicity(&self, data_type: &DataType) -> SetMonotonicity {
        self.inner.inner().set_monotonicity(data_type)
    }

    fn documentation(&self) -> Option<&Documentation> {
        self.inner.documentation()
    }
}

/// Register `min` and `max` in place of DataFusion's.
pub fn register(ctx: &SessionContext) {
    for (inner, max) in [
        (datafusion::functions_aggregate::min_max::min_udaf(), false),
        (datafusion::functions_aggregate::min_max::max_udaf(), true),
    ] {
        ctx.register_udaf(AggregateUDF::new_from_impl(Extreme { inner, max }));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::arrow::util::pretty::pretty_format_batches;

    #[test]
    fn nan_comes_after_every_number() {
        assert!(after(f64::NAN, f64::INFINITY));
        assert!(!after(f64::INFINITY, f64::NAN));
        assert!(!after(f64::NAN, f64::NAN));
        assert!(after(2.0, 1.0) && !after(1.0, 2.0));
    }

    #[tokio::test]
    async fn grouped_extremes_order_nan_last_whatever_the_rows_order() {
        let ctx = SessionContext::new();
        register(&ctx);
        let sql = "SELECT g, min(x) AS lo, max(x) AS hi FROM (VALUES \
                   (1, CAST('NaN' AS DOUBLE)), (1, 1.0), (1, 2.0), \
                   (2, 3.0), (2, CAST('NaN' AS DOUBLE)), \
                   (3, CAST('NaN' AS DOUBLE)), \
                   (4, CAST(NULL AS DOUBLE))) t(g, x) GROUP BY g ORDER BY g";
        let batches = ctx.sql(sql).await.unwrap().collect().await.unwrap();
        let expected = "\
+---+-----+-----+
| g | lo  | hi  |
+---+-----+-----+
| 1 | 1.0 | NaN |
| 2 | 3.0 | NaN |
| 3 | NaN | NaN |
| 4 |     |     |
+---+-----+-----+";
        assert_eq!(
            pretty_format_batches(&batches).unwrap().to_string(),
            expected
        );
    }
}
