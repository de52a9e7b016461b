//! Integer arithmetic that errors on overflow, as PostgreSQL's does.
//!
//! DataFusion evaluates `+`, `-` and `*` on integers with wrapping kernels, so
//! `2147483647 + 1` silently becomes `-2147483648`; PostgreSQL raises 22003 (`integer out of
//! range`). This analyzer rule rewrites integer `+ - *` into functions that call Arrow's
//! checked kernels; float `+ - *` whose finite operands give an infinity raise 22003 too
//! (`value out of range: overflow`), as PostgreSQL's do, and a float divided by zero raises
//! 22012 (`division by zero`) where IEEE arithmetic answers `Infinity` or `NaN`. Written here because DataFusion has no option for it (its ANSI mode
//! covers only its Spark functions).

use datafusion::arrow::compute::kernels::numeric;
use datafusion::arrow::datatypes::DataType;
use datafusion::common::config::ConfigOptions;
use datafusion::common::tree_node::{Transformed, TreeNode, TreeNodeRecursion};
use datafusion::common::{DFSchema, Result, ScalarValue};
use datafusion::logical_expr::expr::ScalarFunction;
use datafusion::logical_expr::expr_rewriter::NamePreserver;
use datafusion::logical_expr::type_coercion::binary::BinaryTypeCoercer;
use datafusion::logical_expr::{
    BinaryExpr, ColumnarValue, Expr, ExprSchemable, LogicalPlan, Operator, ScalarFunctionArgs,
    ScalarUDF, ScalarUDFImpl, Signature, Volatility,
};
use datafusion::optimizer::AnalyzerRule;
use std::sync::Arc;

/// `checked_add` / `checked_sub` / `checked_mul` on two integers of the same type, and
/// `checked_div` on two floats.
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
            Operator::Divide => "brook_checked_div",
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
            Operator::Divide => {
                check_float_division_by_zero(l, r)?;
                numeric::div(l, r)?
            }
            _ => numeric::mul(l, r)?,
        };
        check_float_overflow(l, r, &out)?;
        if scalar {
            Ok(ColumnarValue::Scalar(ScalarValue::try_from_array(&out, 0)?))
        } else {
            Ok(ColumnarValue::Array(out))
        }
    }
}

/// A float divided by zero (a row where both operands are set, the divisor is 0 or -0 and
/// the dividend is not NaN, whose quotient is NaN): 22012, as PostgreSQL's `float8div`
/// raises.
fn check_float_division_by_zero(
    l: &datafusion::arrow::array::ArrayRef,
    r: &datafusion::arrow::array::ArrayRef,
) -> Result<()> {
    use datafusion::arrow::array::{Array, AsArray};
    use datafusion::arrow::datatypes::{Float32Type, Float64Type};
    // A constant operand may be one value beside the other's rows.
    let at = |a: &datafusion::arrow::array::ArrayRef, i: usize| if a.len() == 1 { 0 } else { i };
    let zero_at = |i: usize| match (l.data_type(), r.data_type()) {
        (DataType::Float64, DataType::Float64) => {
            r.as_primitive::<Float64Type>().value(at(r, i)) == 0.0
                && !l.as_primitive::<Float64Type>().value(at(l, i)).is_nan()
        }
        (DataType::Float32, DataType::Float32) => {
            r.as_primitive::<Float32Type>().value(at(r, i)) == 0.0
                && !l.as_primitive::<Float32Type>().value(at(l, i)).is_nan()
        }
        _ => false,
    };
    let rows = l.len().max(r.len());
    if (0..rows).any(|i| r.is_valid(at(r, i)) && l.is_valid(at(l, i)) && zero_at(i)) {
        return Err(datafusion::error::DataFusionError::ArrowError(
            Box::new(datafusion::arrow::error::ArrowError::DivideByZero),
            None,
        ));
    }
    Ok(())
}

/// Floating-point `+ - * /` of finite operands that gives an infinity overflowed: PostgreSQL
/// raises 22003 where IEEE arithmetic (and DataFusion) answers `inf`.
fn check_float_overflow(
    l: &datafusion::arrow::array::ArrayRef,
    r: &datafusion::arrow::array::ArrayRef,
    out: &datafusion::arrow::array::ArrayRef,
) -> Result<()> {
    use datafusion::arrow::array::{Array, AsArray};
    use datafusion::arrow::datatypes::{Float32Type, Float64Type};
    fn infinite_from_finite(
        l: &[f64],
        r: &[f64],
        out: &[f64],
        valid: &dyn Fn(usize) -> bool,
    ) -> bool {
        let at = |v: &[f64], i: usize| v.get(if v.len() == 1 { 0 } else { i }).copied();
        (0..out.len()).any(|i| {
            valid(i)
                && out[i].is_infinite()
                && at(l, i).is_some_and(f64::is_finite)
                && at(r, i).is_some_and(f64::is_finite)
        })
    }
    let widen32 = |a: &datafusion::arrow::array::ArrayRef| -> Vec<f64> {
        a.as_primitive::<Float32Type>()
            .values()
            .iter()
            .map(|&v| f64::from(v))
            .collect()
    };
    let overflow = match out.data_type() {
        DataType::Float64 => infinite_from_finite(
            l.as_primitive::<Float64Type>().values(),
            r.as_primitive::<Float64Type>().values(),
            out.as_primitive::<Float64Type>().values(),
            &|i| out.is_valid(i),
        ),
        // Widened only when the result holds an infinity at all (rare), not per batch.
        DataType::Float32
            if out
                .as_primitive::<Float32Type>()
                .values()
                .iter()
                .any(|v| v.is_infinite()) =>
        {
            infinite_from_finite(&widen32(l), &widen32(r), &widen32(out), &|i| {
                out.is_valid(i)
            })
        }
        _ => false,
    };
    if overflow {
        return Err(datafusion::error::DataFusionError::ArrowError(
            Box::new(datafusion::arrow::error::ArrowError::ArithmeticOverflow(
                "value out of range: overflow".into(),
            )),
            None,
        ));
    }
    Ok(())
}

/// The analyzer rule (runs after type coercion, when operand types are final).
#[derive(Debug)]
pub struct CheckedIntegerArithmetic {
    add: Arc<ScalarUDF>,
    sub: Arc<ScalarUDF>,
    mul: Arc<ScalarUDF>,
    div: Arc<ScalarUDF>,
    power: Arc<ScalarUDF>,
}

impl Default for CheckedIntegerArithmetic {
    fn default() -> Self {
        CheckedIntegerArithmetic {
            add: Arc::new(CheckedArith::udf(Operator::Plus)),
            sub: Arc::new(CheckedArith::udf(Operator::Minus)),
            mul: Arc::new(CheckedArith::udf(Operator::Multiply)),
            div: Arc::new(CheckedArith::udf(Operator::Divide)),
            power: Arc::new(crate::checked_power::checked_power_function()),
        }
    }
}

/// Types whose `+ - *` this rule checks: integers (wrap-around) and floats (infinity).
fn is_int(t: &DataType) -> bool {
    matches!(
        t,
        DataType::Int16 | DataType::Int32 | DataType::Int64 | DataType::Float32 | DataType::Float64
    )
}

impl CheckedIntegerArithmetic {
    /// The UDF replacing integer `op`, when `op` is one this rule checks.
    fn udf_for(&self, op: Operator) -> Option<&Arc<ScalarUDF>> {
        match op {
            Operator::Plus => Some(&self.add),
            Operator::Minus => Some(&self.sub),
            Operator::Multiply => Some(&self.mul),
            Operator::Divide => Some(&self.div),
            _ => None,
        }
    }

    fn rewrite_expr(&self, e: Expr, schema: &DFSchema) -> Result<Transformed<Expr>> {
        e.transform_down(|e| match &e {
            Expr::BinaryExpr(b) if self.udf_for(b.op).is_some() => {
                let (e, _, changed) = self.rewrite_arith(e, schema)?;
                // The chain below was rewritten as a whole: do not descend into it again.
                Ok(Transformed::new(e, changed, TreeNodeRecursion::Jump))
            }
            // float8 `^` / `power`: PostgreSQL's errors instead of inf, 0 or NaN.
            Expr::ScalarFunction(f)
                if matches!(f.name(), "power" | "pow")
                    && f.args.len() == 2
                    && e.get_type(schema).ok() == Some(DataType::Float64) =>
            {
                let args = f
                    .args
                    .iter()
                    .map(|a| a.clone().cast_to(&DataType::Float64, schema))
                    .collect::<Result<Vec<_>>>()?;
                Ok(Transformed::yes(Expr::ScalarFunction(
                    ScalarFunction::new_udf(self.power.clone(), args),
                )))
            }
            // float `sqrt`, `ln`, `log`, `exp`: PostgreSQL's errors instead of NaN or inf,
            // computed in float8 (a real's result cast back).
            Expr::ScalarFunction(f) => {
                let Some(udf) = crate::checked_math::checked_function_for(f.name(), f.args.len())
                else {
                    return Ok(Transformed::no(e));
                };
                let t = match e.get_type(schema) {
                    Ok(t @ (DataType::Float64 | DataType::Float32)) => t,
                    _ => return Ok(Transformed::no(e)),
                };
                let args = f
                    .args
                    .iter()
                    .map(|a| a.clone().cast_to(&DataType::Float64, schema))
                    .collect::<Result<Vec<_>>>()?;
                let call = Expr::ScalarFunction(ScalarFunction::new_udf(Arc::new(udf), args));
                Ok(Transformed::yes(if t == DataType::Float32 {
                    Expr::Cast(datafusion::logical_expr::Cast::new(Box::new(call), t))
                } else {
                    call
                }))
            }
            _ => Ok(Transformed::no(e)),
        })
    }

    /// Rewrite a chain of `+ - *` bottom up, carrying each operand's type up with it, so that
    /// a chain of n terms costs O(n): asking each node for its type (which walks its whole
    /// subtree) and cloning its operands made an 800-term sum take over a minute.
    /// Returns the expression, its type (None when unresolvable, e.g. outer references) and
    /// whether anything changed.
    fn rewrite_arith(&self, e: Expr, schema: &DFSchema) -> Result<(Expr, Option<DataType>, bool)> {
        let Expr::BinaryExpr(BinaryExpr { left, op, right }) = e else {
            let t = self.rewrite_expr(e, schema)?;
            let ty = t.data.get_type(schema).ok();
            return Ok((t.data, ty, t.transformed));
        };
        let Some(udf) = self.udf_for(op).cloned() else {
            let e = Expr::BinaryExpr(BinaryExpr { left, op, right });
            let t = self.rewrite_expr(e, schema)?;
            let ty = t.data.get_type(schema).ok();
            return Ok((t.data, ty, t.transformed));
        };
        let (l, lt, lc) = self.rewrite_arith(*left, schema)?;
        let (r, rt, rc) = self.rewrite_arith(*right, schema)?;
        match (lt, rt) {
            // Integer division is DataFusion's (it raises 22012 and 22003 already).
            (Some(lt), Some(rt))
                if is_int(&lt) && lt == rt && (op != Operator::Divide || lt.is_floating()) =>
            {
                Ok((
                    Expr::ScalarFunction(ScalarFunction::new_udf(udf, vec![l, r])),
                    Some(lt),
                    true,
                ))
            }
            (lt, rt) => {
                let ty = match (&lt, &rt) {
                    (Some(lt), Some(rt)) => {
                        BinaryTypeCoercer::new(lt, &op, rt).get_result_type().ok()
                    }
                    _ => None,
                };
                let e = Expr::BinaryExpr(BinaryExpr::new(Box::new(l), op, Box::new(r)));
                Ok((e, ty, lc || rc))
            }
        }
    }
}

/// Whether `op` compares its operands (`=`, `<>`, `<`, `<=`, `>`, `>=`, `IS [NOT] DISTINCT
/// FROM`): the operators whose operands the analyzer rules type alike.
pub fn is_comparison(op: Operator) -> bool {
    matches!(
        op,
        Operator::Eq
            | Operator::NotEq
            | Operator::Lt
            | Operator::LtEq
            | Operator::Gt
            | Operator::GtEq
            | Operator::IsDistinctFrom
            | Operator::IsNotDistinctFrom
    )
}

/// Rewrite the expressions of every node of `plan` (subqueries included, bottom up) with
/// `rewrite`, which sees the merged schema of the node's inputs; result names are kept and
/// schemas recomputed where something changed. Table scans are left alone, and `VALUES`
/// rows too unless `values` (the analyzer rules share this walk).
pub fn rewrite_plan_expressions(
    plan: LogicalPlan,
    values: bool,
    rewrite: &dyn Fn(Expr, &DFSchema) -> Result<Transformed<Expr>>,
) -> Result<LogicalPlan> {
    rewrite_plan_expressions_by_node(plan, values, &|e, schema, _| rewrite(e, schema))
}

/// An expression rewrite told the merged input schema and whether the node is a join.
pub type NodeRewrite<'a> = &'a dyn Fn(Expr, &DFSchema, bool) -> Result<Transformed<Expr>>;

/// [`rewrite_plan_expressions`], with `rewrite` also told whether the node is a join (its
/// conditions may pair rows by identity, as a decorrelated subquery's do).
pub fn rewrite_plan_expressions_by_node(
    plan: LogicalPlan,
    values: bool,
    rewrite: NodeRewrite<'_>,
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
        let join = matches!(plan, LogicalPlan::Join(_));
        let plan = plan.map_expressions(|e| {
            let saved = preserver.save(&e);
            let t = rewrite(e, &schema, join)?;
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

/// Put `key(e)` in the place of each sort expression `e` of `order_by` that `pick` picks
/// (over `schema`); whether any was. For the rules that sort a type by a key of its values
/// (intervals by length, jsonb in jsonb's order).
pub fn key_sort_exprs(
    order_by: &mut [datafusion::logical_expr::SortExpr],
    schema: &DFSchema,
    pick: &dyn Fn(&Expr, &DFSchema) -> bool,
    key: &dyn Fn(Expr) -> Expr,
) -> bool {
    let mut changed = false;
    for s in order_by {
        if pick(&s.expr, schema) {
            s.expr = key(s.expr.clone());
            changed = true;
        }
    }
    changed
}

/// `BETWEEN` with `key` put in the place of its operand and bounds.
pub fn keyed_between(b: datafusion::logical_expr::Between, key: &dyn Fn(Expr) -> Expr) -> Expr {
    Expr::Between(datafusion::logical_expr::Between::new(
        Box::new(key(*b.expr)),
        b.negated,
        Box::new(key(*b.low)),
        Box::new(key(*b.high)),
    ))
}

/// An `IN` list with `key` put in the place of its operand and of each item.
pub fn keyed_in_list(
    l: datafusion::logical_expr::expr::InList,
    key: &dyn Fn(Expr) -> Expr,
) -> Expr {
    let list = l.list.into_iter().map(key).collect();
    Expr::InList(datafusion::logical_expr::expr::InList::new(
        Box::new(key(*l.expr)),
        list,
        l.negated,
    ))
}

/// [`key_sort_exprs`] over the keys of every Sort node of `plan` (subqueries included),
/// which [`rewrite_plan_expressions`] does not see (they are sort expressions).
pub fn key_sort_nodes(
    plan: LogicalPlan,
    pick: &dyn Fn(&Expr, &DFSchema) -> bool,
    key: &dyn Fn(Expr) -> Expr,
) -> Result<LogicalPlan> {
    plan.transform_up_with_subqueries(|p| match p {
        LogicalPlan::Sort(mut s) => {
            let schema = s.input.schema().clone();
            let changed = key_sort_exprs(&mut s.expr, &schema, pick, key);
            Ok(Transformed::new(
                LogicalPlan::Sort(s),
                changed,
                TreeNodeRecursion::Continue,
            ))
        }
        p => Ok(Transformed::no(p)),
    })
    .map(|t| t.data)
}

impl CheckedIntegerArithmetic {
    /// `e` (an expression planned on its own, as a SQL function's body is) as the analyzer
    /// and optimizer leave a query's: types coerced, integer arithmetic checked, then
    /// simplified (some functions, such as `coalesce`, run only in their simplified form).
    pub fn check_expression(&self, e: Expr, schema: &DFSchema) -> Result<Expr> {
        use datafusion::logical_expr::simplify::SimplifyContext;
        use datafusion::optimizer::simplify_expressions::ExprSimplifier;
        let mut coercion =
            datafusion::optimizer::analyzer::type_coercion::TypeCoercionRewriter::new(schema);
        let coerced = e.rewrite(&mut coercion)?.data;
        let checked = self.rewrite_expr(coerced, schema)?.data;
        let context = SimplifyContext::builder()
            .with_schema(Arc::new(schema.clone()))
            .build();
        ExprSimplifier::new(context).simplify(checked)
    }
}

impl AnalyzerRule for CheckedIntegerArithmetic {
    fn analyze(&self, plan: LogicalPlan, _config: &ConfigOptions) -> Result<LogicalPlan> {
        rewrite_plan_expressions(plan, false, &|e, schema| self.rewrite_expr(e, schema))
    }

    fn name(&self) -> &str {
        "brook_checked_integer_arithmetic"
    }
}
