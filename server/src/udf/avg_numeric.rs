//! `avg` of a numeric with PostgreSQL's digits: the sum divided by the count as numeric
//! division divides (`numeric_division`): at least 16 significant digits, rounded half away
//! from zero. DataFusion's average of a `numeric(p, s)` has `s + 4` decimals, truncated:
//! `avg` of 1, 2 and 2 as `numeric(10,2)` was `1.666666` (PostgreSQL `1.6666666666666667`).
//!
//! DataFusion's `avg` keeps the count and the sum (its accumulators, grouped and sliding,
//! with retraction, and its DISTINCT form); only the final division is Brook's, reading the
//! accumulator's state. Other argument types are DataFusion's `avg` unchanged. Written here
//! because DataFusion has no option for the result scale of a decimal average.

use crate::udf::numeric_division::{divide_values, result_scale};
use datafusion::arrow::array::{Array, ArrayRef, AsArray, BooleanArray, Decimal128Array};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{
    i256, DataType, Decimal256Type, FieldRef, UInt64Type, DECIMAL128_MAX_PRECISION,
    DECIMAL256_MAX_PRECISION,
};
use datafusion::error::{DataFusionError, Result};
use datafusion::logical_expr::function::{AccumulatorArgs, StateFieldsArgs};
use datafusion::logical_expr::utils::AggregateOrderSensitivity;
use datafusion::logical_expr::{
    Accumulator, AggregateUDF, AggregateUDFImpl, Documentation, EmitTo, GroupsAccumulator,
    ReversedUDAF, SetMonotonicity, Signature,
};
use datafusion::prelude::SessionContext;
use datafusion::scalar::ScalarValue;
use std::sync::Arc;

/// DataFusion's `avg`, its numeric results divided at PostgreSQL's scale.
#[derive(Debug, PartialEq, Eq, Hash)]
struct PgAvg {
    inner: Arc<AggregateUDF>,
}

/// The scale a numeric average of an argument of type `t` is stored at; `None` for the
/// types DataFusion's `avg` answers alone.
fn numeric_scale(t: &DataType) -> Option<i8> {
    match t {
        DataType::Decimal128(_, s) => Some(result_scale(*s, 0)),
        _ => None,
    }
}

impl AggregateUDFImpl for PgAvg {
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
        self.inner.inner().coerce_types(arg_types)
    }

    fn return_type(&self, arg_types: &[DataType]) -> Result<DataType> {
        match arg_types
            .iter()
            .map(numeric_scale)
            .collect::<Vec<_>>()
            .as_slice()
        {
            [Some(scale)] => Ok(DataType::Decimal128(DECIMAL128_MAX_PRECISION, *scale)),
            _ => self.inner.return_type(arg_types),
        }
    }

    fn accumulator(&self, args: AccumulatorArgs<'_>) -> Result<Box<dyn Accumulator>> {
        let (inner_args, scale) = self.inner_args(args)?;
        let acc = self.inner.accumulator(inner_args)?;
        Ok(match scale {
            Some(scale) => Box::new(Dividing(acc, scale)),
            None => acc,
        })
    }

    fn state_fields(&self, args: StateFieldsArgs<'_>) -> Result<Vec<FieldRef>> {
        let mut args = args;
        let input: Vec<DataType> = args
            .input_fields
            .iter()
            .map(|f| f.data_type().clone())
            .collect();
        let own = self.inner.return_type(&input)?;
        args.return_field = Arc::new(args.return_field.as_ref().clone().with_data_type(own));
        self.inner.state_fields(args)
    }

    fn groups_accumulator_supported(&self, args: AccumulatorArgs<'_>) -> bool {
        self.inner_args(args)
            .is_ok_and(|(args, _)| self.inner.groups_accumulator_supported(args))
    }

    fn create_groups_accumulator(
        &self,
        args: AccumulatorArgs<'_>,
    ) -> Result<Box<dyn GroupsAccumulator>> {
        let (inner_args, scale) = self.inner_args(args)?;
        let acc = self.inner.create_groups_accumulator(inner_args)?;
        Ok(match scale {
            Some(scale) => Box::new(DividingGroups(acc, scale)),
            None => acc,
        })
    }

    fn create_sliding_accumulator(
        &self,
        args: AccumulatorArgs<'_>,
    ) -> Result<Box<dyn Accumulator>> {
        let (inner_args, scale) = self.inner_args(args)?;
        let acc = self.inner.create_sliding_accumulator(inner_args)?;
        Ok(match scale {
            Some(scale) => Box::new(Dividing(acc, scale)),
            None => acc,
        })
    }

    fn order_sensitivity(&self) -> AggregateOrderSensitivity {
        self.inner.inner().order_sensitivity()
    }

    fn reverse_expr(&self) -> ReversedUDAF {
        ReversedUDAF::Identical
    }

    fn set_monotonicity(&self, data_type: &DataType) -> SetMonotonicity {
        self.inner.inner().set_monotonicity(data_type)
    }

    fn documentation(&self) -> Option<&Documentation> {
        self.inner.documentation()
    }
}

impl PgAvg {
    /// The arguments DataFusion's accumulator is made with (its own result type), and the
    /// scale of the numeric result, for a numeric argument.
    fn inner_args<'a>(
        &self,
        args: AccumulatorArgs<'a>,
    ) -> Result<(AccumulatorArgs<'a>, Option<i8>)> {
        let Some(input) = args.expr_fields.first().map(|f| f.data_type().clone()) else {
            return Ok((args, None));
        };
        let Some(scale) = numeric_scale(&input) else {
            return Ok((args, None));
        };
        let own = self.inner.return_type(&[input])?;
        let mut args = args;
        args.return_field = Arc::new(args.return_field.as_ref().clone().with_data_type(own));
        Ok((args, Some(scale)))
    }
}

/// The averages of DataFusion's `avg` state: `[count, sum]`, or the DISTINCT form's
/// `[list of the distinct values]`; NULL for no rows.
fn averages(state: &[ArrayRef], scale: i8) -> Result<ArrayRef> {
    let wide = |a: &ArrayRef| -> Result<(ArrayRef, i8)> {
        let s = match a.data_type() {
            DataType::Decimal32(_, s)
            | DataType::Decimal64(_, s)
            | DataType::Decimal128(_, s)
            | DataType::Decimal256(_, s) => *s,
            t => {
                return Err(DataFusionError::Internal(format!(
                    "the state of a numeric avg holds {t}"
                )))
            }
        };
        Ok((
            cast(a, &DataType::Decimal256(DECIMAL256_MAX_PRECISION, s))?,
            s,
        ))
    };
    let pairs: Vec<Option<(i256, i8, u64)>> = match state {
        [count, sum] => {
            let counts = count.as_primitive::<UInt64Type>();
            let (sums, s) = wide(sum)?;
            let sums = sums.as_primitive::<Decimal256Type>();
            (0..counts.len())
                .map(|i| {
                    (counts.is_valid(i) && sums.is_valid(i) && counts.value(i) > 0)
                        .then(|| (sums.value(i), s, counts.value(i)))
                })
                .collect()
        }
        [lists] => {
            let lists = lists.as_list::<i32>();
            (0..lists.len())
                .map(|i| {
                    if lists.is_null(i) {
                        return Ok(None);
                    }
                    let (values, s) = wide(&lists.value(i))?;
                    let values = values.as_primitive::<Decimal256Type>();
                    let sum = values
                        .iter()
                        .flatten()
                        .fold(i256::ZERO, |a, v| a.wrapping_add(v));
                    let n = (values.len() - values.null_count()) as u64;
                    Ok((n > 0).then_some((sum, s, n)))
                })
                .collect::<Result<_>>()?
        }
        _ => {
            return Err(DataFusionError::Internal(format!(
                "the state of a numeric avg has {} columns",
                state.len()
            )))
        }
    };
    let overflow = || {
        DataFusionError::External(Box::new(brook_common::brook_err!(
            OutOfRange,
            "value overflows numeric format"
        )))
    };
    let out = pairs
        .into_iter()
        .map(|p| {
            let Some((sum, s, n)) = p else {
                return Ok(None);
            };
            let sum = sum.to_i128().ok_or_else(overflow)?;
            let n = i128::from(n);
            divide_values(sum, s, n, 0, scale)
                .map(Some)
                .map_err(|e| DataFusionError::ArrowError(Box::new(e), None))
        })
        .collect::<Result<Decimal128Array>>()?
        .with_precision_and_scale(DECIMAL128_MAX_PRECISION, scale)?;
    Ok(Arc::new(out))
}

/// An accumulator of DataFusion's `avg` whose value is the state's division.
#[derive(Debug)]
struct Dividing(Box<dyn Accumulator>, i8);

impl Accumulator for Dividing {
    fn update_batch(&mut self, values: &[ArrayRef]) -> Result<()> {
        self.0.update_batch(values)
    }

    fn evaluate(&mut self) -> Result<ScalarValue> {
        let state = self
            .0
            .state()?
            .into_iter()
            .map(|v| v.to_array())
            .collect::<Result<Vec<_>>>()?;
        ScalarValue::try_from_array(&averages(&state, self.1)?, 0)
    }

    fn size(&self) -> usize {
        self.0.size()
    }

    fn state(&mut self) -> Result<Vec<ScalarValue>> {
        self.0.state()
    }

    fn merge_batch(&mut self, states: &[ArrayRef]) -> Result<()> {
        self.0.merge_batch(states)
    }

    fn retract_batch(&mut self, values: &[ArrayRef]) -> Result<()> {
        self.0.retract_batch(values)
    }

    fn supports_retract_batch(&self) -> bool {
        self.0.supports_retract_batch()
    }
}

/// A groups accumulator of DataFusion's `avg` whose values are its state's divisions.
struct DividingGroups(Box<dyn GroupsAccumulator>, i8);

impl GroupsAccumulator for DividingGroups {
    fn update_batch(
        &mut self,
        values: &[ArrayRef],
        group_indices: &[usize],
        opt_filter: Option<&BooleanArray>,
        total_num_groups: usize,
    ) -> Result<()> {
        self.0
            .update_batch(values, group_indices, opt_filter, total_num_groups)
    }

    fn evaluate(&mut self, emit_to: EmitTo) -> Result<ArrayRef> {
        averages(&self.0.state(emit_to)?, self.1)
    }

    fn state(&mut self, emit_to: EmitTo) -> Result<Vec<ArrayRef>> {
        self.0.state(emit_to)
    }

    fn merge_batch(
        &mut self,
        values: &[ArrayRef],
        group_indices: &[usize],
        total_num_groups: usize,
    ) -> Result<()> {
        self.0.merge_batch(values, group_indices, total_num_groups)
    }

    fn convert_to_state(
        &self,
        values: &[ArrayRef],
        opt_filter: Option<&BooleanArray>,
    ) -> Result<Vec<ArrayRef>> {
        self.0.convert_to_state(values, opt_filter)
    }

    fn size(&self) -> usize {
        self.0.size()
    }
}

pub fn register(ctx: &SessionContext) {
    ctx.register_udaf(AggregateUDF::new_from_impl(PgAvg {
        inner: datafusion::functions_aggregate::average::avg_udaf(),
    }));
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::arrow::util::display::array_value_to_string;

    async fn values(sql: &str) -> Vec<String> {
        let ctx = SessionContext::new();
        register(&ctx);
        let batches = ctx.sql(sql).await.unwrap().collect().await.unwrap();
        batches
            .iter()
            .flat_map(|b| {
                let c = b.column(0).clone();
                (0..c.len()).map(move |i| array_value_to_string(&c, i).unwrap())
            })
            .collect()
    }

    const PRICES: &str =
        "(VALUES (1, CAST(1 AS DECIMAL(10,2))), (1, 2), (1, 2), (2, 5), (3, NULL)) t(k, x)";

    #[tokio::test]
    async fn numeric_averages_have_postgresqls_digits() {
        // Each form: one group, grouped, DISTINCT, over a window.
        assert_eq!(
            values(&format!("SELECT avg(x) FROM {PRICES}")).await,
            ["2.50000000000000000000"]
        );
        assert_eq!(
            values(&format!(
                "SELECT avg(x) FROM {PRICES} GROUP BY k ORDER BY k"
            ))
            .await,
            ["1.66666666666666670000", "5.00000000000000000000", ""]
        );
        assert_eq!(
            values(&format!("SELECT avg(DISTINCT x) FROM {PRICES} WHERE k = 1")).await,
            ["1.50000000000000000000"]
        );
        assert_eq!(
            values(&format!(
                "SELECT avg(x) OVER (ORDER BY k ROWS BETWEEN 1 PRECEDING AND CURRENT ROW) FROM {PRICES} WHERE k = 1"
            ))
            .await,
            ["1.00000000000000000000", "1.50000000000000000000", "2.00000000000000000000"]
        );
    }

    #[tokio::test]
    async fn other_averages_are_datafusions() {
        assert_eq!(
            values("SELECT avg(x) FROM (VALUES (1.5e0), (2.5e0)) t(x)").await,
            ["2.0"]
        );
    }
}
