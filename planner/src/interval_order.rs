//! Intervals compared and ordered as PostgreSQL orders them: by their length, a month
//! counting 30 days and a day 24 hours (`interval '1 day' = interval '24 hours'`, `'1 mon'
//! < '40 days'`, `'26 hours' > '1 day'`).
//!
//! An Arrow interval holds months, days and nanoseconds apart, and Arrow's comparison,
//! sort and `min`/`max` compare them field by field: each of those was false or reversed
//! (wrong answers against PostgreSQL), and a window ordered by an interval was refused
//! (XX000 "Cannot run range queries on datatype"). This analyzer rule (before type
//! coercion, which types what it adds) puts the interval's length, [`interval_key`] (nanoseconds as a
//! `numeric(38, 0)`), in the place of each interval operand of a comparison, `BETWEEN` and
//! `IN` list, simple `CASE x WHEN ...` and `NULLIF`, of each interval sort key (ORDER BY, a
//! window's or an aggregate's ORDER BY), and replaces `min`/`max` of an interval (as an
//! aggregate and over a window) by aggregates that keep the value of the least or greatest
//! length, of equal lengths the last seen, as PostgreSQL's `interval_larger` does. The values themselves keep their fields: `'24 hours'` prints as
//! PostgreSQL prints it.
//!
//! A window's PARTITION BY and `count(DISTINCT ...)` of intervals take their lengths too;
//! grouping, DISTINCT, set operations, join keys and `IN (subquery)` are in
//! [`crate::interval_grouping`], which this rule runs first.
//!
//! Not covered: `= ANY (array)` and `greatest`/`least` of intervals still tell `'1 day'`
//! from `'24 hours'`, as do the other DISTINCT aggregates (`array_agg(DISTINCT d)`); a
//! RANGE frame with an interval offset over an interval ORDER BY is refused. Written here
//! because Arrow has no interval ordering by length.

use datafusion::arrow::array::{ArrayRef, AsArray, Decimal128Array};
use datafusion::arrow::datatypes::{
    DataType, Field, FieldRef, IntervalMonthDayNano, IntervalMonthDayNanoType, IntervalUnit,
};
use datafusion::common::config::ConfigOptions;
use datafusion::common::tree_node::{Transformed, TreeNode, TreeNodeRecursion};
use datafusion::common::{Column, DFSchema, Result, ScalarValue};
use datafusion::logical_expr::expr::{
    AggregateFunction, Case, InSubquery, ScalarFunction, Sort, WindowFunctionDefinition,
};
use datafusion::logical_expr::function::{AccumulatorArgs, StateFieldsArgs};
use datafusion::logical_expr::{
    Accumulator, AggregateUDF, AggregateUDFImpl, BinaryExpr, ColumnarValue, Expr, ExprSchemable,
    LogicalPlan, Operator, Projection, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature,
    Volatility,
};
use datafusion::optimizer::AnalyzerRule;
use std::sync::Arc;

pub(crate) const INTERVAL: DataType = DataType::Interval(IntervalUnit::MonthDayNano);
const NANOS_PER_DAY: i128 = 86_400_000_000_000;

/// The length of `v` in nanoseconds, a month 30 days (PostgreSQL's `interval_cmp_value`).
pub fn interval_key(v: IntervalMonthDayNano) -> i128 {
    (i128::from(v.months) * 30 + i128::from(v.days)) * NANOS_PER_DAY + i128::from(v.nanoseconds)
}

/// The analyzer rule.
#[derive(Debug)]
pub struct IntervalOrder {
    key: Arc<ScalarUDF>,
    min: Arc<AggregateUDF>,
    max: Arc<AggregateUDF>,
}

impl Default for IntervalOrder {
    fn default() -> Self {
        IntervalOrder {
            key: Arc::new(ScalarUDF::new_from_impl(IntervalLength {
                signature: Signature::exact(vec![INTERVAL], Volatility::Immutable),
            })),
            min: Arc::new(AggregateUDF::new_from_impl(IntervalExtreme::new(false))),
            max: Arc::new(AggregateUDF::new_from_impl(IntervalExtreme::new(true))),
        }
    }
}

impl AnalyzerRule for IntervalOrder {
    fn analyze(&self, plan: LogicalPlan, _config: &ConfigOptions) -> Result<LogicalPlan> {
        let plan = crate::interval_grouping::group_by_length(plan, &self.key, &self.min)?;
        let plan = crate::checked::rewrite_plan_expressions(plan, false, &|e, schema| {
            e.transform_up(|e| self.rewrite(e, schema))
        })?;
        crate::checked::key_sort_nodes(plan, &Self::is_interval, &|e| self.key(e))
    }

    fn name(&self) -> &str {
        "brook_interval_order"
    }
}

impl IntervalOrder {
    fn is_interval(e: &Expr, schema: &DFSchema) -> bool {
        e.get_type(schema).ok() == Some(INTERVAL)
    }

    /// `key(e)`, the length of interval `e`.
    fn key(&self, e: Expr) -> Expr {
        Expr::ScalarFunction(ScalarFunction::new_udf(self.key.clone(), vec![e]))
    }

    fn sort_keys(&self, order_by: &mut [Sort], schema: &DFSchema) -> bool {
        crate::checked::key_sort_exprs(order_by, schema, &Self::is_interval, &|e| self.key(e))
    }

    fn rewrite(&self, e: Expr, schema: &DFSchema) -> Result<Transformed<Expr>> {
        Ok(match e {
            Expr::BinaryExpr(BinaryExpr { left, op, right })
                if crate::checked::is_comparison(op)
                    && Self::is_interval(&left, schema)
                    && Self::is_interval(&right, schema) =>
            {
                Transformed::yes(Expr::BinaryExpr(BinaryExpr::new(
                    Box::new(self.key(*left)),
                    op,
                    Box::new(self.key(*right)),
                )))
            }
            Expr::Between(b) if Self::is_interval(&b.expr, schema) => {
                Transformed::yes(crate::checked::keyed_between(b, &|e| self.key(e)))
            }
            Expr::InList(l) if Self::is_interval(&l.expr, schema) => {
                Transformed::yes(crate::checked::keyed_in_list(l, &|e| self.key(e)))
            }
            Expr::AggregateFunction(mut f) => {
                let extreme = match f.func.name() {
                    "min" => Some(&self.min),
                    "max" => Some(&self.max),
                    _ => None,
                };
                let interval_arg =
                    f.params.args.len() == 1 && Self::is_interval(&f.params.args[0], schema);
                let mut changed = self.sort_keys(&mut f.params.order_by, schema);
                // `count(DISTINCT d)` counts distinct lengths.
                if f.params.distinct && f.func.name() == "count" && interval_arg {
                    f.params.args = vec![self.key(f.params.args[0].clone())];
                    changed = true;
                }
                match extreme {
                    Some(udaf) if interval_arg => {
                        Transformed::yes(Expr::AggregateFunction(AggregateFunction::new_udf(
                            udaf.clone(),
                            f.params.args,
                            f.params.distinct,
                            f.params.filter,
                            f.params.order_by,
                            f.params.null_treatment,
                        )))
                    }
                    _ => Transformed::new(
                        Expr::AggregateFunction(f),
                        changed,
                        TreeNodeRecursion::Continue,
                    ),
                }
            }
            Expr::WindowFunction(mut w) => {
                let mut changed = self.sort_keys(&mut w.params.order_by, schema);
                for p in w.params.partition_by.iter_mut() {
                    if Self::is_interval(p, schema) {
                        *p = self.key(p.clone());
                        changed = true;
                    }
                }
                let interval_arg =
                    w.params.args.len() == 1 && Self::is_interval(&w.params.args[0], schema);
                if let (WindowFunctionDefinition::AggregateUDF(f), true) = (&w.fun, interval_arg) {
                    let extreme = match f.name() {
                        "min" => Some(&self.min),
                        "max" => Some(&self.max),
                        _ => None,
                    };
                    if let Some(udaf) = extreme {
                        w.fun = WindowFunctionDefinition::AggregateUDF(udaf.clone());
                        changed = true;
                    }
                }
                Transformed::new(
                    Expr::WindowFunction(w),
                    changed,
                    TreeNodeRecursion::Continue,
                )
            }
            // `CASE d WHEN x THEN ...` compares `d = x` for each branch.
            Expr::Case(Case {
                expr: Some(operand),
                when_then_expr,
                else_expr,
            }) if Self::is_interval(&operand, schema) => {
                let when_then_expr = when_then_expr
                    .into_iter()
                    .map(|(when, then)| {
                        let equal = Expr::BinaryExpr(BinaryExpr::new(
                            Box::new(self.key(operand.as_ref().clone())),
                            Operator::Eq,
                            Box::new(self.key(*when)),
                        ));
                        (Box::new(equal), then)
                    })
                    .collect();
                Transformed::yes(Expr::Case(Case {
                    expr: None,
                    when_then_expr,
                    else_expr,
                }))
            }
            // `nullif(a, b)`: NULL when `a = b`, else `a`.
            Expr::ScalarFunction(f)
                if f.name() == "nullif"
                    && f.args.len() == 2
                    && Self::is_interval(&f.args[0], schema)
                    && Self::is_interval(&f.args[1], schema) =>
            {
                let (a, b) = (f.args[0].clone(), f.args[1].clone());
                let equal = Expr::BinaryExpr(BinaryExpr::new(
                    Box::new(self.key(a.clone())),
                    Operator::Eq,
                    Box::new(self.key(b)),
                ));
                Transformed::yes(Expr::Case(Case {
                    expr: None,
                    when_then_expr: vec![(
                        Box::new(equal),
                        Box::new(Expr::Literal(ScalarValue::IntervalMonthDayNano(None), None)),
                    )],
                    else_expr: Some(Box::new(a)),
                }))
            }
            // `d IN (SELECT ...)` of intervals: their lengths compared.
            Expr::InSubquery(s) if Self::is_interval(&s.expr, schema) => {
                let plan = s.subquery.subquery.clone();
                let (q, f) = plan.schema().qualified_field(0);
                let lengths = LogicalPlan::Projection(Projection::try_new(
                    vec![self.key(Expr::Column(Column::from((q, f))))],
                    plan,
                )?);
                Transformed::yes(Expr::InSubquery(InSubquery::new(
                    Box::new(self.key(*s.expr)),
                    s.subquery.with_plan(Arc::new(lengths)),
                    s.negated,
                )))
            }
            e => Transformed::no(e),
        })
    }
}

/// `brook_interval_length(interval)`: [`interval_key`] as `numeric(38, 0)`.
#[derive(Debug, PartialEq, Eq, Hash)]
struct IntervalLength {
    signature: Signature,
}

impl ScalarUDFImpl for IntervalLength {
    fn name(&self) -> &str {
        "brook_interval_length"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _args: &[DataType]) -> Result<DataType> {
        Ok(DataType::Decimal128(38, 0))
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let scalar = matches!(args.args.first(), Some(ColumnarValue::Scalar(_)));
        let arrays = ColumnarValue::values_to_arrays(&args.args)?;
        let intervals = arrays[0].as_primitive::<IntervalMonthDayNanoType>();
        let keys: Decimal128Array = intervals.unary_opt(|v| Some(interval_key(v)));
        let keys: ArrayRef = Arc::new(keys.with_precision_and_scale(38, 0)?);
        Ok(if scalar {
            ColumnarValue::Scalar(ScalarValue::try_from_array(&keys, 0)?)
        } else {
            ColumnarValue::Array(keys)
        })
    }
}

/// `min`/`max` of intervals by length (of equal lengths, the first seen).
#[derive(Debug, PartialEq, Eq, Hash)]
struct IntervalExtreme {
    greatest: bool,
    signature: Signature,
}

impl IntervalExtreme {
    fn new(greatest: bool) -> Self {
        IntervalExtreme {
            greatest,
            signature: Signature::exact(vec![INTERVAL], Volatility::Immutable),
        }
    }
}

impl AggregateUDFImpl for IntervalExtreme {
    fn name(&self) -> &str {
        if self.greatest {
            "brook_interval_max"
        } else {
            "brook_interval_min"
        }
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _args: &[DataType]) -> Result<DataType> {
        Ok(INTERVAL)
    }

    fn state_fields(&self, args: StateFieldsArgs<'_>) -> Result<Vec<FieldRef>> {
        Ok(vec![Arc::new(Field::new(
            format!("{}[extreme]", args.name),
            INTERVAL,
            true,
        ))])
    }

    fn accumulator(&self, _args: AccumulatorArgs<'_>) -> Result<Box<dyn Accumulator>> {
        Ok(Box::new(ExtremeAccumulator {
            greatest: self.greatest,
            best: None,
        }))
    }

    /// For window frames whose start moves and for updating inputs: the values kept, in
    /// order of length, so any of them can leave.
    fn create_sliding_accumulator(
        &self,
        _args: AccumulatorArgs<'_>,
    ) -> Result<Box<dyn Accumulator>> {
        Ok(Box::new(SlidingExtreme {
            greatest: self.greatest,
            values: std::collections::BTreeMap::new(),
        }))
    }
}

/// The values of a sliding frame (or of a group whose rows can be retracted), each with
/// its count, ordered by length and then by fields.
#[derive(Debug)]
struct SlidingExtreme {
    greatest: bool,
    values: std::collections::BTreeMap<(i128, i32, i32, i64), usize>,
}

impl SlidingExtreme {
    fn apply(&mut self, values: &[ArrayRef], add: bool) -> Result<()> {
        let Some(values) = values.first() else {
            return Ok(());
        };
        for v in values
            .as_primitive::<IntervalMonthDayNanoType>()
            .iter()
            .flatten()
        {
            let key = (interval_key(v), v.months, v.days, v.nanoseconds);
            if add {
                *self.values.entry(key).or_insert(0) += 1;
            } else if let Some(n) = self.values.get_mut(&key) {
                *n -= 1;
                if *n == 0 {
                    self.values.remove(&key);
                }
            }
        }
        Ok(())
    }
}

impl Accumulator for SlidingExtreme {
    fn update_batch(&mut self, values: &[ArrayRef]) -> Result<()> {
        self.apply(values, true)
    }

    fn retract_batch(&mut self, values: &[ArrayRef]) -> Result<()> {
        self.apply(values, false)
    }

    fn supports_retract_batch(&self) -> bool {
        true
    }

    fn evaluate(&mut self) -> Result<ScalarValue> {
        let end = if self.greatest {
            self.values.keys().next_back()
        } else {
            self.values.keys().next()
        };
        Ok(ScalarValue::IntervalMonthDayNano(end.map(
            |&(_, months, days, nanoseconds)| IntervalMonthDayNano::new(months, days, nanoseconds),
        )))
    }

    fn size(&self) -> usize {
        std::mem::size_of_val(self) + self.values.len() * 48
    }

    fn state(&mut self) -> Result<Vec<ScalarValue>> {
        Ok(vec![self.evaluate()?])
    }

    fn merge_batch(&mut self, states: &[ArrayRef]) -> Result<()> {
        self.update_batch(states)
    }
}

#[derive(Debug)]
struct ExtremeAccumulator {
    greatest: bool,
    best: Option<IntervalMonthDayNano>,
}

impl Accumulator for ExtremeAccumulator {
    fn update_batch(&mut self, values: &[ArrayRef]) -> Result<()> {
        let Some(values) = values.first() else {
            return Ok(());
        };
        for v in values
            .as_primitive::<IntervalMonthDayNanoType>()
            .iter()
            .flatten()
        {
            let better = match self.best {
                None => true,
                // Of equal lengths the later value, as PostgreSQL's interval_larger.
                Some(b) if self.greatest => interval_key(v) >= interval_key(b),
                Some(b) => interval_key(v) <= interval_key(b),
            };
            if better {
                self.best = Some(v);
            }
        }
        Ok(())
    }

    fn evaluate(&mut self) -> Result<ScalarValue> {
        Ok(ScalarValue::IntervalMonthDayNano(self.best))
    }

    fn size(&self) -> usize {
        std::mem::size_of_val(self)
    }

    fn state(&mut self) -> Result<Vec<ScalarValue>> {
        Ok(vec![self.evaluate()?])
    }

    fn merge_batch(&mut self, states: &[ArrayRef]) -> Result<()> {
        self.update_batch(states)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn iv(months: i32, days: i32, hours: i64) -> IntervalMonthDayNano {
        IntervalMonthDayNano::new(months, days, hours * 3_600_000_000_000)
    }

    #[test]
    fn a_month_is_30_days_and_a_day_24_hours() {
        assert_eq!(interval_key(iv(0, 1, 0)), interval_key(iv(0, 0, 24)));
        assert_eq!(interval_key(iv(1, 0, 0)), interval_key(iv(0, 30, 0)));
        assert!(interval_key(iv(1, 0, 0)) < interval_key(iv(0, 40, 0)));
        assert!(interval_key(iv(0, 0, 26)) > interval_key(iv(0, 1, 0)));
        assert!(interval_key(iv(0, -1, 0)) < interval_key(iv(0, 0, -23)));
        assert!(interval_key(IntervalMonthDayNano::new(i32::MAX, i32::MAX, i64::MAX)) > 0);
    }

    #[test]
    fn min_and_max_keep_the_value_of_the_extreme_length() {
        let values: ArrayRef = Arc::new(datafusion::arrow::array::IntervalMonthDayNanoArray::from(
            vec![
                Some(iv(1, 0, 0)),
                None,
                Some(iv(0, 40, 0)),
                Some(iv(0, 0, 25)),
                Some(iv(0, 1, 0)),
            ],
        ));
        let mut max = ExtremeAccumulator {
            greatest: true,
            best: None,
        };
        let mut min = ExtremeAccumulator {
            greatest: false,
            best: None,
        };
        max.update_batch(std::slice::from_ref(&values)).unwrap();
        min.update_batch(std::slice::from_ref(&values)).unwrap();
        assert_eq!(
            max.evaluate().unwrap(),
            ScalarValue::IntervalMonthDayNano(Some(iv(0, 40, 0)))
        );
        assert_eq!(
            min.evaluate().unwrap(),
            ScalarValue::IntervalMonthDayNano(Some(iv(0, 1, 0)))
        );
    }
}
