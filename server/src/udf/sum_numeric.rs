//! `sum` with PostgreSQL's result types: `sum(bigint)` is `numeric`, so it cannot overflow
//! (DataFusion sums 64-bit integers into a 64-bit integer with wrap-around: a silent wrong
//! answer past 9.2e18). `sum` of smaller integers stays `bigint`, of floats `double
//! precision`, of numerics `numeric`, as in PostgreSQL.
//!
//! A numeric sum is computed over 256-bit decimals and must fit `numeric(38, s)` at the
//! end: DataFusion adds 128-bit decimals with wrap-around, so two
//! `99999999999999999999999999999999999999` summed to
//! `-140282366920938463463374607431768211458` (a silent wrong answer); now a sum beyond 38
//! digits is 22003, as PostgreSQL's numeric overflow is an error (its own numerics have no
//! such limit).
//!
//! DataFusion's own `sum` does the work: its accumulators (grouped and sliding, with
//! retraction) are fed the argument widened — 64-bit integers to `numeric(38, 0)`, run on
//! 128-bit decimals. The widening happens in the accumulators rather than as a cast in the
//! plan, because some plans reach them without DataFusion's coercion (window functions, the
//! continuous planner's window operator). Written here because DataFusion has no option
//! for it.

use datafusion::arrow::array::{ArrayRef, AsArray, BooleanArray};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{
    i256, DataType, Decimal256Type, FieldRef, DECIMAL128_MAX_PRECISION, DECIMAL256_MAX_PRECISION,
};
use datafusion::error::{DataFusionError, Result};
use datafusion::logical_expr::function::{AccumulatorArgs, StateFieldsArgs};
use datafusion::logical_expr::utils::AggregateOrderSensitivity;
use datafusion::logical_expr::{
    Accumulator, AggregateUDF, AggregateUDFImpl, Documentation, EmitTo, GroupsAccumulator,
    ReversedUDAF, SetMonotonicity, Signature, Volatility,
};
use datafusion::prelude::SessionContext;
use datafusion::scalar::ScalarValue;
use std::sync::Arc;

/// DataFusion's `sum` behind PostgreSQL's input coercion.
#[derive(Debug, PartialEq, Eq, Hash)]
struct PgSum {
    inner: Arc<AggregateUDF>,
    signature: Signature,
}

/// The type `sum` computes over for an argument of type `t`.
fn summed_type(t: &DataType) -> Result<DataType> {
    Ok(match t {
        DataType::Int8
        | DataType::Int16
        | DataType::Int32
        | DataType::UInt8
        | DataType::UInt16
        | DataType::UInt32
        | DataType::Null => DataType::Int64,
        DataType::Int64 | DataType::UInt64 => DataType::Decimal128(38, 0),
        DataType::Decimal128(_, s) => DataType::Decimal256(DECIMAL256_MAX_PRECISION, *s),
        DataType::Float16 | DataType::Float32 | DataType::Float64 => DataType::Float64,
        DataType::Decimal32(..)
        | DataType::Decimal64(..)
        | DataType::Decimal256(..)
        | DataType::Duration(_)
        | DataType::Interval(_) => t.clone(),
        DataType::Dictionary(_, v) => summed_type(v)?,
        other => {
            return Err(DataFusionError::Plan(format!(
                "function sum({}) does not exist",
                brook_common::types::sql_name(other)
            )))
        }
    })
}

impl AggregateUDFImpl for PgSum {
    fn name(&self) -> &str {
        self.inner.name()
    }

    fn aliases(&self) -> &[String] {
        self.inner.aliases()
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    /// The argument keeps its type (only checked here): the accumulators widen it, so a
    /// plan gives the same answer whether or not it ran this coercion, and `return_type`
    /// never sees an already widened `integer` it would take for a `bigint`.
    fn coerce_types(&self, arg_types: &[DataType]) -> Result<Vec<DataType>> {
        match arg_types {
            [t] => {
                summed_type(t)?;
                Ok(vec![t.clone()])
            }
            _ => Err(DataFusionError::Plan(
                "sum takes exactly one argument".into(),
            )),
        }
    }

    fn return_type(&self, arg_types: &[DataType]) -> Result<DataType> {
        if let [DataType::Decimal128(_, s)] = arg_types {
            return Ok(DataType::Decimal128(DECIMAL128_MAX_PRECISION, *s));
        }
        let summed = arg_types
            .iter()
            .map(summed_type)
            .collect::<Result<Vec<_>>>()?;
        self.inner.return_type(&summed)
    }

    fn accumulator(&self, acc_args: AccumulatorArgs<'_>) -> Result<Box<dyn Accumulator>> {
        let (args, result) = summing(acc_args);
        Ok(Box::new(Widening(self.inner.accumulator(args)?, result)))
    }

    fn state_fields(&self, args: StateFieldsArgs<'_>) -> Result<Vec<FieldRef>> {
        let mut args = args;
        let input = args.input_fields.first().map(|f| f.data_type());
        if let Some(summed) = input.and_then(wide_sum) {
            args.return_field = Arc::new(args.return_field.as_ref().clone().with_data_type(summed));
        }
        self.inner.state_fields(args)
    }

    fn groups_accumulator_supported(&self, args: AccumulatorArgs<'_>) -> bool {
        self.inner.groups_accumulator_supported(args)
    }

    fn create_groups_accumulator(
        &self,
        args: AccumulatorArgs<'_>,
    ) -> Result<Box<dyn GroupsAccumulator>> {
        let (args, result) = summing(args);
        Ok(Box::new(WideningGroups(
            self.inner.create_groups_accumulator(args)?,
            result,
        )))
    }

    fn create_sliding_accumulator(
        &self,
        args: AccumulatorArgs<'_>,
    ) -> Result<Box<dyn Accumulator>> {
        let (args, result) = summing(args);
        Ok(Box::new(Widening(
            self.inner.create_sliding_accumulator(args)?,
            result,
        )))
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

/// The argument as DataFusion's `sum` runs on it ([`summed_type`]): `bigint` as
/// `numeric(38, 0)`, smaller integers as `bigint`, floats as `double precision`.
fn widen(values: &[ArrayRef]) -> Result<Vec<ArrayRef>> {
    values
        .iter()
        .map(|v| {
            let to = summed_type(v.data_type())?;
            if &to == v.data_type() {
                Ok(v.clone())
            } else {
                Ok(cast(v, &to)?)
            }
        })
        .collect()
}

/// The 256-bit decimal a sum of a numeric `input` is computed in.
fn wide_sum(input: &DataType) -> Option<DataType> {
    match input {
        DataType::Decimal128(_, s) => Some(DataType::Decimal256(DECIMAL256_MAX_PRECISION, *s)),
        _ => None,
    }
}

/// The arguments DataFusion's accumulator is made with (a numeric sum's result as its
/// 256-bit decimal), and the result type its value is narrowed to, if it differs.
fn summing(args: AccumulatorArgs<'_>) -> (AccumulatorArgs<'_>, Option<DataType>) {
    let result = args.return_field.data_type().clone();
    let input = args.expr_fields.first().map(|f| f.data_type());
    let Some(summed) = input.and_then(wide_sum) else {
        return (args, None);
    };
    let mut args = args;
    args.return_field = Arc::new(args.return_field.as_ref().clone().with_data_type(summed));
    (args, Some(result))
}

/// A 256-bit decimal sum as the `numeric(38, s)` result, or 22003 when it has more digits.
fn narrow(sum: ArrayRef, result: &Option<DataType>) -> Result<ArrayRef> {
    let Some(to) = result else {
        return Ok(sum);
    };
    let limit = i256::from_i128(10_i128.pow(DECIMAL128_MAX_PRECISION as u32));
    let wide = sum.as_primitive::<Decimal256Type>();
    if wide.iter().flatten().any(|v| v >= limit || v <= -limit) {
        return Err(DataFusionError::External(Box::new(
            brook_common::brook_err!(
                OutOfRange,
                "value overflows numeric format (a sum beyond 38 digits)"
            ),
        )));
    }
    Ok(cast(&sum, to)?)
}

/// An accumulator of DataFusion's `sum` fed through [`widen`], its value narrowed to the
/// result type when it has one ([`summing`]).
#[derive(Debug)]
struct Widening(Box<dyn Accumulator>, Option<DataType>);

impl Accumulator for Widening {
    fn update_batch(&mut self, values: &[ArrayRef]) -> Result<()> {
        self.0.update_batch(&widen(values)?)
    }

    fn evaluate(&mut self) -> Result<ScalarValue> {
        let sum = self.0.evaluate()?;
        if self.1.is_none() {
            return Ok(sum);
        }
        ScalarValue::try_from_array(&narrow(sum.to_array()?, &self.1)?, 0)
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
        self.0.retract_batch(&widen(values)?)
    }

    fn supports_retract_batch(&self) -> bool {
        self.0.supports_retract_batch()
    }
}

/// A groups accumulator of DataFusion's `sum` fed through [`widen`], its values narrowed
/// to the result type when it has one ([`summing`]).
struct WideningGroups(Box<dyn GroupsAccumulator>, Option<DataType>);

impl GroupsAccumulator for WideningGroups {
    fn update_batch(
        &mut self,
        values: &[ArrayRef],
        group_indices: &[usize],
        opt_filter: Option<&BooleanArray>,
        total_num_groups: usize,
    ) -> Result<()> {
        self.0
            .update_batch(&widen(values)?, group_indices, opt_filter, total_num_groups)
    }

    fn evaluate(&mut self, emit_to: EmitTo) -> Result<ArrayRef> {
        narrow(self.0.evaluate(emit_to)?, &self.1)
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
        self.0.convert_to_state(&widen(values)?, opt_filter)
    }

    fn size(&self) -> usize {
        self.0.size()
    }
}

/// Register `sum` with PostgreSQL's result types in place of DataFusion's.
pub fn register(ctx: &SessionContext) {
    ctx.register_udaf(AggregateUDF::new_from_impl(PgSum {
        inner: datafusion::functions_aggregate::sum::sum_udaf(),
        signature: Signature::user_defined(Volatility::Immutable),
    }));
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::arrow::util::display::array_value_to_string;

    async fn one(ctx: &SessionContext, sql: &str) -> (DataType, String) {
        let b = ctx.sql(sql).await.unwrap().collect().await.unwrap();
        let col = b[0].column(0);
        (
            col.data_type().clone(),
            array_value_to_string(col, 0).unwrap(),
        )
    }

    #[tokio::test]
    async fn bigint_sums_are_numeric_and_do_not_wrap() {
        let ctx = SessionContext::new();
        register(&ctx);
        let big =
            "(VALUES (CAST(9223372036854775807 AS BIGINT), 1), (CAST(1 AS BIGINT), 1)) t(x, k)";
        let (t, v) = one(&ctx, &format!("SELECT sum(x) FROM {big}")).await;
        assert_eq!(t, DataType::Decimal128(38, 0));
        assert_eq!(v, "9223372036854775808");
        let (_, v) = one(&ctx, &format!("SELECT sum(x) FROM {big} GROUP BY k")).await;
        assert_eq!(v, "9223372036854775808");
        let (t, v) = one(
            &ctx,
            "SELECT sum(CAST(x AS INT)) FROM (VALUES (1), (2)) t(x)",
        )
        .await;
        assert_eq!((t, v.as_str()), (DataType::Int64, "3"));
        let (t, _) = one(
            &ctx,
            "SELECT sum(CAST(x AS REAL)) FROM (VALUES (1), (2)) t(x)",
        )
        .await;
        assert_eq!(t, DataType::Float64);
        let (t, v) = one(
            &ctx,
            &format!("SELECT sum(x) OVER (ORDER BY x ROWS BETWEEN 1 PRECEDING AND CURRENT ROW) FROM {big} ORDER BY 1 DESC"),
        )
        .await;
        assert_eq!(
            (t, v.as_str()),
            (DataType::Decimal128(38, 0), "9223372036854775808")
        );
    }

    #[tokio::test]
    async fn numeric_sums_past_38_digits_fail_instead_of_wrapping() {
        let ctx = SessionContext::new();
        register(&ctx);
        let max = "CAST('99999999999999999999999999999999999999' AS DECIMAL(38, 0))";
        for sql in [
            format!("SELECT sum(x) FROM (VALUES ({max}), ({max})) t(x)"),
            format!("SELECT sum(x) FROM (VALUES ({max}, 1), ({max}, 1)) t(x, k) GROUP BY k"),
        ] {
            let e = ctx.sql(&sql).await.unwrap().collect().await.unwrap_err();
            assert!(
                e.to_string().contains("value overflows numeric format"),
                "{e}"
            );
        }
        // Past 38 digits on the way, back within them at the end.
        let (t, v) = one(
            &ctx,
            &format!(
                "SELECT sum(x) FROM (VALUES ({max}), ({max}), \
                 (CAST('-99999999999999999999999999999999999999' AS DECIMAL(38, 0)))) t(x)"
            ),
        )
        .await;
        assert_eq!(
            (t, v.as_str()),
            (
                DataType::Decimal128(38, 0),
                "99999999999999999999999999999999999999"
            )
        );
    }
}
