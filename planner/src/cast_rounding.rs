//! A cast of a fraction to an integer rounds, as PostgreSQL's does: `1.5::int` is 2,
//! `avg(x)::int` the nearest integer.
//!
//! Arrow's cast truncates toward zero, so `1.5::int` was 1 and `(-1.5)::int` -1 — silent
//! wrong answers wherever a numeric or a double was cast to an integer. This analyzer rule
//! rounds the operand first: a numeric halves away from zero (DataFusion's `round`), as
//! PostgreSQL rounds a numeric; a double or real halves to even ([`Rint`]), as
//! PostgreSQL's `rint` does (`2.5::float8::int` is 2). `avg` of integers, double precision
//! here and numeric in PostgreSQL, rounds as a double (docs/limits.md).

use datafusion::arrow::datatypes::DataType;
use datafusion::common::config::ConfigOptions;
use datafusion::common::tree_node::{Transformed, TreeNode};
use datafusion::common::{DFSchema, Result};
use datafusion::logical_expr::expr::ScalarFunction;
use datafusion::logical_expr::{
    Cast, ColumnarValue, Expr, ExprSchemable, LogicalPlan, ScalarFunctionArgs, ScalarUDF,
    ScalarUDFImpl, Signature, TryCast, Volatility,
};
use datafusion::optimizer::AnalyzerRule;
use std::sync::Arc;

/// The rule, with the rounding functions it applies.
#[derive(Debug)]
pub struct CastsRound {
    round: Arc<ScalarUDF>,
    rint: Arc<ScalarUDF>,
}

impl Default for CastsRound {
    fn default() -> Self {
        CastsRound {
            round: datafusion::functions::math::round(),
            rint: Arc::new(ScalarUDF::new_from_impl(Rint {
                signature: Signature::any(1, Volatility::Immutable),
            })),
        }
    }
}

/// A double (or real) rounded to the nearest integral value, halves to even (C's `rint`,
/// which PostgreSQL's float-to-integer casts use). DataFusion has no such function.
#[derive(Debug, PartialEq, Eq, Hash)]
struct Rint {
    signature: Signature,
}

impl ScalarUDFImpl for Rint {
    fn name(&self) -> &str {
        "brook_rint"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, args: &[DataType]) -> Result<DataType> {
        Ok(args.first().cloned().unwrap_or(DataType::Float64))
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        use datafusion::arrow::array::{Array, AsArray};
        use datafusion::arrow::datatypes::{Float32Type, Float64Type};
        let scalar = matches!(args.args.first(), Some(ColumnarValue::Scalar(_)));
        let arrays = ColumnarValue::values_to_arrays(&args.args)?;
        let a = &arrays[0];
        let out: datafusion::arrow::array::ArrayRef = match a.data_type() {
            DataType::Float32 => Arc::new(
                a.as_primitive::<Float32Type>()
                    .unary::<_, Float32Type>(f32::round_ties_even),
            ),
            _ => {
                let f = datafusion::arrow::compute::cast(a, &DataType::Float64)?;
                Arc::new(
                    f.as_primitive::<Float64Type>()
                        .unary::<_, Float64Type>(f64::round_ties_even),
                )
            }
        };
        if scalar && out.len() == 1 {
            Ok(ColumnarValue::Scalar(
                datafusion::common::ScalarValue::try_from_array(&out, 0)?,
            ))
        } else {
            Ok(ColumnarValue::Array(out))
        }
    }
}

impl AnalyzerRule for CastsRound {
    fn analyze(&self, plan: LogicalPlan, _config: &ConfigOptions) -> Result<LogicalPlan> {
        crate::checked::rewrite_plan_expressions(plan, true, &|e, schema| {
            e.transform_up(|e| self.rewrite(e, schema))
        })
    }

    fn name(&self) -> &str {
        "brook_casts_round"
    }
}

impl CastsRound {
    fn rewrite(&self, e: Expr, schema: &DFSchema) -> Result<Transformed<Expr>> {
        Ok(match e {
            Expr::Cast(Cast { expr, field }) if field.data_type().is_integer() => self
                .rounded(*expr, schema)?
                .update_data(|e| Expr::Cast(Cast::new_from_field(Box::new(e), field))),
            Expr::TryCast(TryCast { expr, field }) if field.data_type().is_integer() => self
                .rounded(*expr, schema)?
                .update_data(|e| Expr::TryCast(TryCast::new_from_field(Box::new(e), field))),
            other => Transformed::no(other),
        })
    }

    /// `e` rounded to an integral value when it is a fraction.
    fn rounded(&self, e: Expr, schema: &DFSchema) -> Result<Transformed<Expr>> {
        let round = match e.get_type(schema)? {
            DataType::Float16 | DataType::Float32 | DataType::Float64 => &self.rint,
            DataType::Decimal128(_, s) | DataType::Decimal256(_, s) if s > 0 => &self.round,
            _ => return Ok(Transformed::no(e)),
        };
        Ok(Transformed::yes(Expr::ScalarFunction(
            ScalarFunction::new_udf(round.clone(), vec![e]),
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::arrow::datatypes::{Field, Schema};
    use datafusion::common::{Column, ScalarValue};

    #[test]
    fn a_fraction_is_rounded_before_an_integer_cast_and_an_integer_is_not() {
        let schema = DFSchema::try_from(Schema::new(vec![
            Field::new("f", DataType::Float64, true),
            Field::new("d", DataType::Decimal128(10, 2), true),
            Field::new("i", DataType::Int64, true),
        ]))
        .expect("schema");
        let rule = CastsRound::default();
        let cast = |c: &str, t: DataType| {
            Expr::Cast(Cast::new(Box::new(Expr::Column(Column::from_name(c))), t))
        };
        for (e, rounded) in [
            (cast("f", DataType::Int32), true),
            (cast("d", DataType::Int64), true),
            (cast("i", DataType::Int32), false),
            (cast("f", DataType::Utf8), false),
            (
                Expr::Cast(Cast::new(
                    Box::new(Expr::Literal(ScalarValue::Float64(Some(2.5)), None)),
                    DataType::Int16,
                )),
                true,
            ),
        ] {
            let t = rule.rewrite(e.clone(), &schema).expect("rewrite");
            assert_eq!(t.transformed, rounded, "{e}");
        }
    }
}
