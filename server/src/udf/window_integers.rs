//! `row_number()`, `rank()` and `dense_rank()` as PostgreSQL types them (bigint) and
//! `ntile(n)` (integer). DataFusion's return UInt64, which has no PostgreSQL counterpart:
//! clients saw numeric, and arithmetic with an integer widened to a decimal, so
//! `row_number() OVER () / 2` was `0.5000` where PostgreSQL's integer division gives `0`.
//!
//! `ntile(NULL)` is NULL on every row and `ntile(0)` 22014, as in PostgreSQL (DataFusion
//! refuses both with an internal error).
//!
//! Each function here is DataFusion's under the same name (the continuous planner and
//! DataFusion's own rules recognise them by name and behaviour), with its values cast to
//! the PostgreSQL type. Written here because DataFusion has no setting for these types.

use brook_common::BrookError;
use datafusion::arrow::array::ArrayRef;
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, Field, FieldRef};
use datafusion::common::ScalarValue;
use datafusion::error::{DataFusionError, Result};
use datafusion::logical_expr::function::{
    ExpressionArgs, PartitionEvaluatorArgs, WindowUDFFieldArgs,
};
use datafusion::logical_expr::window_state::WindowAggState;
use datafusion::logical_expr::{
    LimitEffect, PartitionEvaluator, ReversedUDWF, Signature, WindowUDF, WindowUDFImpl,
};
use datafusion::physical_expr::PhysicalExpr;
use std::ops::Range;
use std::sync::Arc;

/// The window functions to register in place of DataFusion's.
pub fn functions() -> Vec<WindowUDF> {
    use datafusion::functions_window::{ntile, rank, row_number};
    vec![
        typed(row_number::row_number_udwf(), DataType::Int64),
        typed(rank::rank_udwf(), DataType::Int64),
        typed(rank::dense_rank_udwf(), DataType::Int64),
        typed(ntile::ntile_udwf(), DataType::Int32),
    ]
}

fn typed(inner: Arc<WindowUDF>, to: DataType) -> WindowUDF {
    WindowUDF::new_from_impl(Typed { inner, to })
}

/// A DataFusion window function whose values are cast to `to`.
#[derive(Debug, PartialEq, Eq, Hash)]
struct Typed {
    inner: Arc<WindowUDF>,
    to: DataType,
}

impl Typed {
    fn of(&self) -> &dyn WindowUDFImpl {
        self.inner.inner().as_ref()
    }
}

impl WindowUDFImpl for Typed {
    fn name(&self) -> &str {
        self.of().name()
    }

    fn aliases(&self) -> &[String] {
        self.of().aliases()
    }

    fn signature(&self) -> &Signature {
        self.of().signature()
    }

    fn expressions(&self, args: ExpressionArgs<'_>) -> Vec<Arc<dyn PhysicalExpr>> {
        self.of().expressions(args)
    }

    fn partition_evaluator(
        &self,
        args: PartitionEvaluatorArgs<'_>,
    ) -> Result<Box<dyn PartitionEvaluator>> {
        if self.name() == "ntile" {
            if let Some(n) = literal_argument(&args) {
                if n.is_null() {
                    return Ok(Box::new(NullEvaluator {
                        to: self.to.clone(),
                    }));
                }
                if matches!(n.cast_to(&DataType::Int64), Ok(ScalarValue::Int64(Some(v))) if v < 1) {
                    return Err(DataFusionError::External(Box::new(
                        BrookError::NtileArgument(
                            "argument of ntile must be greater than zero".into(),
                        ),
                    )));
                }
            }
        }
        Ok(Box::new(TypedEvaluator {
            inner: self.of().partition_evaluator(args)?,
            to: self.to.clone(),
        }))
    }

    fn field(&self, args: WindowUDFFieldArgs<'_>) -> Result<FieldRef> {
        let field = self.of().field(args)?;
        // (ntile(NULL) is NULL.)
        let nullable = field.is_nullable() || self.name() == "ntile";
        Ok(Arc::new(Field::new(
            field.name(),
            self.to.clone(),
            nullable,
        )))
    }

    fn sort_options(&self) -> Option<datafusion::arrow::compute::SortOptions> {
        self.of().sort_options()
    }

    fn coerce_types(&self, arg_types: &[DataType]) -> Result<Vec<DataType>> {
        self.of().coerce_types(arg_types)
    }

    fn reverse_expr(&self) -> ReversedUDWF {
        match self.of().reverse_expr() {
            ReversedUDWF::Reversed(inner) => {
                ReversedUDWF::Reversed(Arc::new(typed(inner, self.to.clone())))
            }
            other => other,
        }
    }

    fn limit_effect(&self, args: &[Arc<dyn PhysicalExpr>]) -> LimitEffect {
        self.of().limit_effect(args)
    }
}

/// The value of a function's first argument when it is a literal.
fn literal_argument(args: &PartitionEvaluatorArgs<'_>) -> Option<ScalarValue> {
    let first = args.input_exprs().first()?;
    let literal = first.downcast_ref::<datafusion::physical_expr::expressions::Literal>()?;
    Some(literal.value().clone())
}

/// `ntile(NULL)`: NULL on every row.
#[derive(Debug)]
struct NullEvaluator {
    to: DataType,
}

impl PartitionEvaluator for NullEvaluator {
    fn evaluate_all(&mut self, _values: &[ArrayRef], num_rows: usize) -> Result<ArrayRef> {
        Ok(datafusion::arrow::array::new_null_array(&self.to, num_rows))
    }
}

/// DataFusion's evaluator, its values cast.
#[derive(Debug)]
struct TypedEvaluator {
    inner: Box<dyn PartitionEvaluator>,
    to: DataType,
}

impl PartitionEvaluator for TypedEvaluator {
    fn memoize(&mut self, state: &mut WindowAggState) -> Result<()> {
        self.inner.memoize(state)
    }

    fn get_range(&self, idx: usize, n_rows: usize) -> Result<Range<usize>> {
        self.inner.get_range(idx, n_rows)
    }

    fn is_causal(&self) -> bool {
        self.inner.is_causal()
    }

    fn evaluate_all(&mut self, values: &[ArrayRef], num_rows: usize) -> Result<ArrayRef> {
        Ok(cast(&self.inner.evaluate_all(values, num_rows)?, &self.to)?)
    }

    fn evaluate(&mut self, values: &[ArrayRef], range: &Range<usize>) -> Result<ScalarValue> {
        self.inner.evaluate(values, range)?.cast_to(&self.to)
    }

    fn evaluate_all_with_rank(&self, num_rows: usize, ranks: &[Range<usize>]) -> Result<ArrayRef> {
        Ok(cast(
            &self.inner.evaluate_all_with_rank(num_rows, ranks)?,
            &self.to,
        )?)
    }

    fn supports_bounded_execution(&self) -> bool {
        self.inner.supports_bounded_execution()
    }

    fn uses_window_frame(&self) -> bool {
        self.inner.uses_window_frame()
    }

    fn include_rank(&self) -> bool {
        self.inner.include_rank()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::arrow::array::{Array, AsArray};
    use datafusion::arrow::datatypes::Int64Type;
    use datafusion::prelude::SessionContext;

    #[tokio::test]
    async fn ranks_are_bigint_and_divide_as_integers() {
        let ctx = SessionContext::new();
        for f in functions() {
            ctx.register_udwf(f);
        }
        let df = ctx
            .sql(
                "SELECT row_number() OVER (ORDER BY x) AS rn, rank() OVER (ORDER BY x) AS rk, \
                 dense_rank() OVER (ORDER BY x) AS dr, ntile(2) OVER (ORDER BY x) AS nt, \
                 row_number() OVER (ORDER BY x) / 2 AS half \
                 FROM (VALUES (1), (2), (2)) v(x) ORDER BY x",
            )
            .await
            .unwrap();
        let batches = df.collect().await.unwrap();
        let b = &batches[0];
        let types: Vec<_> = b
            .schema()
            .fields()
            .iter()
            .map(|f| f.data_type().clone())
            .collect();
        use DataType::{Int32, Int64};
        assert_eq!(types, vec![Int64, Int64, Int64, Int32, Int64]);
        let col = |i: usize| -> Vec<i64> {
            let c = cast(b.column(i), &Int64).unwrap();
            let a = c.as_primitive::<Int64Type>();
            (0..a.len()).map(|r| a.value(r)).collect()
        };
        assert_eq!(col(0), vec![1, 2, 3]);
        assert_eq!(col(1), vec![1, 2, 2]);
        assert_eq!(col(2), vec![1, 2, 2]);
        assert_eq!(col(3), vec![1, 1, 2]);
        assert_eq!(col(4), vec![0, 1, 1]);
    }

    #[tokio::test]
    async fn ntile_of_null_is_null_and_of_zero_22014() {
        let ctx = SessionContext::new();
        for f in functions() {
            ctx.register_udwf(f);
        }
        let sql = "SELECT ntile(NULL) OVER (ORDER BY x) FROM (VALUES (1), (2)) v(x)";
        let batches = ctx.sql(sql).await.unwrap().collect().await.unwrap();
        assert_eq!(batches[0].column(0).null_count(), 2);
        let sql = "SELECT ntile(0) OVER (ORDER BY x) FROM (VALUES (1), (2)) v(x)";
        let err = ctx.sql(sql).await.unwrap().collect().await.unwrap_err();
        assert_eq!(BrookError::from(err).sqlstate(), "22014");
    }
}
