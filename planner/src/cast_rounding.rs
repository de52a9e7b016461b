//! A cast of a fraction to an integer rounds, as PostgreSQL's does: `1.5::int` is 2,
//! `avg(x)::int` the nearest integer.
//!
//! Arrow's cast truncates toward zero, so `1.5::int` was 1 and `(-1.5)::int` -1 — silent
//! wrong answers wherever a numeric or a double was cast to an integer. This analyzer rule
//! rounds the operand first: a numeric halves away from zero (DataFusion's `round`), as
//! PostgreSQL rounds a numeric; a double or real halves to even ([`Rint`]), as
//! PostgreSQL's `rint` does (`2.5::float8::int` is 2). `avg` of integers, double precision
//! here and numeric in PostgreSQL, rounds as a double (docs/limits.md).

use datafusion::arrow::array::ArrayRef;
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
/// which PostgreSQL's float-to-integer casts use), and the elements of an array of doubles
/// or numerics rounded as each casts (`ARRAY[1.7, 2.5]::int[]` is `{2,3}`). DataFusion has
/// no such function.
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
        let scalar = matches!(args.args.first(), Some(ColumnarValue::Scalar(_)));
        let arrays = ColumnarValue::values_to_arrays(&args.args)?;
        let out = rint(&arrays[0])?;
        if scalar && out.len() == 1 {
            Ok(ColumnarValue::Scalar(
                datafusion::common::ScalarValue::try_from_array(&out, 0)?,
            ))
        } else {
            Ok(ColumnarValue::Array(out))
        }
    }
}

/// `a` rounded as PostgreSQL's casts to an integer round: doubles and reals halves to even,
/// numerics halves away from zero, arrays element by element.
fn rint(a: &ArrayRef) -> Result<ArrayRef> {
    use datafusion::arrow::array::{Array, AsArray, ListArray};
    use datafusion::arrow::datatypes::{Decimal128Type, Float32Type, Float64Type};
    Ok(match a.data_type() {
        DataType::Float32 => Arc::new(
            a.as_primitive::<Float32Type>()
                .unary::<_, Float32Type>(f32::round_ties_even),
        ),
        DataType::Decimal128(p, s) if *s > 0 => {
            let unit = 10i128.pow(u32::from(s.unsigned_abs()));
            let rounded = a
                .as_primitive::<Decimal128Type>()
                .unary::<_, Decimal128Type>(|v| {
                    let rest = v % unit;
                    let down = v - rest;
                    if rest.abs() * 2 >= unit {
                        down + unit * v.signum()
                    } else {
                        down
                    }
                });
            Arc::new(rounded.with_precision_and_scale(*p, *s)?)
        }
        DataType::List(field) => {
            let list = a.as_list::<i32>();
            Arc::new(ListArray::try_new(
                field.clone(),
                list.offsets().clone(),
                rint(list.values())?,
                list.nulls().cloned(),
            )?)
        }
        _ => {
            let f = datafusion::arrow::compute::cast(a, &DataType::Float64)?;
            Arc::new(
                f.as_primitive::<Float64Type>()
                    .unary::<_, Float64Type>(f64::round_ties_even),
            )
        }
    })
}

/// An array of doubles, reals or numerics with a fraction (which `rint` rounds).
fn is_list_of_fractions(t: &DataType) -> bool {
    matches!(t, DataType::List(f) if match f.data_type() {
        DataType::Float32 | DataType::Float64 => true,
        DataType::Decimal128(_, s) => *s > 0,
        _ => false,
    })
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
            Expr::Cast(Cast { expr, field }) if is_list_of_integers(field.data_type()) => {
                if is_list_of_fractions(&expr.get_type(schema)?) {
                    let rounded = Expr::ScalarFunction(ScalarFunction::new_udf(
                        self.rint.clone(),
                        vec![*expr],
                    ));
                    Transformed::yes(Expr::Cast(Cast::new_from_field(Box::new(rounded), field)))
                } else {
                    Transformed::no(Expr::Cast(Cast::new_from_field(expr, field)))
                }
            }
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

/// An array of integers.
fn is_list_of_integers(t: &DataType) -> bool {
    matches!(t, DataType::List(f) if f.data_type().is_integer())
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
