//! Integer arithmetic that errors on overflow, as PostgreSQL's does.
//!
//! DataFusion evaluates `+`, `-` and `*` on integers with wrapping kernels, so
//! `2147483647 + 1` silently becomes `-2147483648`; PostgreSQL raises 22003 (`integer out of
//! range`). This analyzer rule rewrites integer `+ - *` into functions that call Arrow's
//! checked kernels. Written here because DataFusion has no option for it (its ANSI mode
//! covers only its Spark functions).

use datafusion::arrow::compute::kernels::numeric;
use datafusion::arrow::datatypes::DataType;
use datafusion::common::config::ConfigOptions;
use datafusion::common::tree_node::{Transformed, TreeNode};
use datafusion::common::{DFSchema, Result, ScalarValue};
use datafusion::logical_expr::expr::ScalarFunction;
use datafusion::logical_expr::expr_rewriter::NamePreserver;
use datafusion::logical_expr::{
    BinaryExpr, ColumnarValue, Expr, ExprSchemable, LogicalPlan, Operator, ScalarFunctionArgs,
    ScalarUDF, ScalarUDFImpl, Signature, Volatility,
};
use datafusion::optimizer::AnalyzerRule;
use std::sync::Arc;

/// `checked_add` / `checked_sub` / `checked_mul` on two integers of the same type.
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct CheckedArith {
    op: Operator,
    name: &'static str,
    signature: Signature,
}

impl CheckedArith {
    fn udf(op: Operator) -> ScalarUDF {
        let name = match op {
            Operator::Plus => "brook_checked_add",
            Operator::Minus => "brook_checked_sub",
            _ => "brook_checked_mul",
        };
        ScalarUDF::new_from_impl(CheckedArith {
            op,
            name,
            signature: Signature::any(2, Volatility::Immutable),
        })
    }
}

impl ScalarUDFImpl for CheckedArith {
    fn name(&self) -> &str {
        self.name
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, arg_types: &[DataType]) -> Result<DataType> {
        Ok(arg_types.first().cloned().unwrap_or(DataType::Int64))
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let scalar = args
            .args
            .iter()
            .all(|a| matches!(a, ColumnarValue::Scalar(_)));
        let arrays = ColumnarValue::values_to_arrays(&args.args)?;
        let (l, r) = (&arrays[0], &arrays[1]);
        let out = match self.op {
            Operator::Plus => numeric::add(l, r)?,
            Operator::Minus => numeric::sub(l, r)?,
            _ => numeric::mul(l, r)?,
        };
        if scalar {
            Ok(ColumnarValue::Scalar(ScalarValue::try_from_array(&out, 0)?))
        } else {
            Ok(ColumnarValue::Array(out))
        }
    }
}

/// The analyzer rule (runs after type coercion, when operand types are final).
#[derive(Debug)]
pub struct CheckedIntegerArithmetic {
    add: Arc<ScalarUDF>,
    sub: Arc<ScalarUDF>,
    mul: Arc<ScalarUDF>,
}

impl Default for CheckedIntegerArithmetic {
    fn default() -> Self {
        CheckedIntegerArithmetic {
            add: Arc::new(CheckedArith::udf(Operator::Plus)),
            sub: Arc::new(CheckedArith::udf(Operator::Minus)),
            mul: Arc::new(CheckedArith::udf(Operator::Multiply)),
        }
    }
}

fn is_int(t: &DataType) -> bool {
    matches!(t, DataType::Int16 | DataType::Int32 | DataType::Int64)
}

impl CheckedIntegerArithmetic {
    fn rewrite_expr(&self, e: Expr, schema: &DFSchema) -> Result<Transformed<Expr>> {
        e.transform_up(|e| {
            let Expr::BinaryExpr(BinaryExpr { left, op, right }) = &e else {
                return Ok(Transformed::no(e));
            };
            let udf = match op {
                Operator::Plus => &self.add,
                Operator::Minus => &self.sub,
                Operator::Multiply => &self.mul,
                _ => return Ok(Transformed::no(e)),
            };
            // Unresolvable types (e.g. outer references) keep the expression as it is.
            let (Ok(lt), Ok(rt)) = (left.get_type(schema), right.get_type(schema)) else {
                return Ok(Transformed::no(e));
            };
            if !is_int(&lt) || lt != rt {
                return Ok(Transformed::no(e));
            }
            let args = vec![left.as_ref().clone(), right.as_ref().clone()];
            Ok(Transformed::yes(Expr::ScalarFunction(
                ScalarFunction::new_udf(udf.clone(), args),
            )))
        })
    }
}

/// Rewrite the expressions of every node of `plan` (subqueries included, bottom up) with
/// `rewrite`, which sees the merged schema of the node's inputs; result names are kept and
/// schemas recomputed where something changed. Table scans are left alone, and `VALUES`
/// rows too unless `values` (the analyzer rules share this walk).
pub(crate) fn rewrite_plan_expressions(
    plan: LogicalPlan,
    values: bool,
    rewrite: &dyn Fn(Expr, &DFSchema) -> Result<Transformed<Expr>>,
) -> Result<LogicalPlan> {
    plan.transform_up_with_subqueries(|plan| {
        let skip = match plan {
            LogicalPlan::TableScan(_) => true,
            LogicalPlan::Values(_) => !values,
            _ => false,
        };
        if skip {
            return Ok(Transformed::no(plan));
        }
        let mut schema = DFSchema::empty();
        for input in plan.inputs() {
            schema.merge(input.schema());
        }
        let preserver = NamePreserver::new(&plan);
        let plan = plan.map_expressions(|e| {
            let saved = preserver.save(&e);
            let t = rewrite(e, &schema)?;
            Ok(t.update_data(|e| saved.restore(e)))
        })?;
        if plan.transformed {
            plan.map_data(|p| p.recompute_schema())
        } else {
            Ok(plan)
        }
    })
    .map(|t| t.data)
}

impl AnalyzerRule for CheckedIntegerArithmetic {
    fn analyze(&self, plan: LogicalPlan, _config: &ConfigOptions) -> Result<LogicalPlan> {
        rewrite_plan_expressions(plan, false, &|e, schema| self.rewrite_expr(e, schema))
    }

    fn name(&self) -> &str {
        "brook_checked_integer_arithmetic"
    }
}
