//! Correlated scalar subqueries that select a row rather than aggregate rows.
//!
//! `SELECT (SELECT n.name FROM ns AS n WHERE n.k = o.id) FROM o` is valid SQL: the subquery
//! must give at most one row per outer row (PostgreSQL raises 21000, "more than one row
//! returned by a subquery used as an expression", otherwise) and gives NULL for none.
//! DataFusion decorrelates only aggregated subqueries and refuses the others ("must be
//! aggregated"); client catalog queries (SQLAlchemy's column reflection, psql's `\d+`) are
//! full of them. Written here because DataFusion has no option for it.
//!
//! This analyzer rule turns such a subquery into an aggregated one that DataFusion
//! decorrelates, without changing its answer:
//!
//! ```text
//! (SELECT e FROM ... WHERE corr)
//! -- becomes
//! brook_subquery_value((SELECT brook_subquery_rows(e) FROM ... WHERE corr))
//! ```
//!
//! `brook_subquery_rows` keeps the first value and counts the rows, as a struct; the check
//! `brook_subquery_value` runs in the outer query, per outer row, so a correlation value no
//! outer row has cannot raise the error (the grouped side is computed for every value). An
//! outer row without match gets a NULL struct, hence NULL.
//!
//! Scope: the subquery's plan is a one-column projection over an input that is not itself
//! an aggregate, a limit, a sort, a distinct or a window. Those that do not aggregate (and
//! may give more than one row) are counted whole and run per outer row (`counted_whole`);
//! aggregated ones keep DataFusion's handling.

use datafusion::arrow::array::{Array, ArrayRef, AsArray, Int64Array, StructArray};
use datafusion::arrow::datatypes::{DataType, Field, FieldRef, Fields};
use datafusion::common::config::ConfigOptions;
use datafusion::common::tree_node::{Transformed, TreeNode};
use datafusion::common::{DFSchema, DataFusionError, Result, ScalarValue};
use datafusion::logical_expr::expr::{AggregateFunction, Case};
use datafusion::logical_expr::function::{AccumulatorArgs, StateFieldsArgs};
use datafusion::logical_expr::utils::{conjunction, split_conjunction};
use datafusion::logical_expr::{
    Accumulator, Aggregate, AggregateUDF, AggregateUDFImpl, ColumnarValue, Expr, Filter,
    LogicalPlan, Projection, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, Subquery,
    Volatility,
};
use datafusion::optimizer::AnalyzerRule;
use std::sync::Arc;

/// The analyzer rule.
#[derive(Debug, Default)]
pub struct SingleRowSubqueries;

impl AnalyzerRule for SingleRowSubqueries {
    fn analyze(&self, plan: LogicalPlan, _config: &ConfigOptions) -> Result<LogicalPlan> {
        crate::checked::rewrite_plan_expressions(plan, true, &|e, _schema: &DFSchema| {
            e.transform_up(|e| match e {
                Expr::ScalarSubquery(sq) if !sq.outer_ref_columns.is_empty() => {
                    match as_counted(&sq)? {
                        Some((counted, guard, outer_value)) => {
                            let subquery_value = || {
                                Expr::ScalarFunction(
                                    datafusion::logical_expr::expr::ScalarFunction::new_udf(
                                        Arc::new(value_udf()),
                                        vec![Expr::ScalarSubquery(counted.clone())],
                                    ),
                                )
                            };
                            let value = match outer_value {
                                None => subquery_value(),
                                Some(e) => value_in_outer_row(e, &subquery_value)?,
                            };
                            Ok(Transformed::yes(match guard {
                                None => value,
                                Some(guard) => Expr::Case(Case::new(
                                    None,
                                    vec![(Box::new(guard), Box::new(value))],
                                    None,
                                )),
                            }))
                        }
                        None => Ok(Transformed::no(Expr::ScalarSubquery(sq))),
                    }
                }
                other => Ok(Transformed::no(other)),
            })
        })
    }

    fn name(&self) -> &str {
        "brook_single_row_subqueries"
    }
}

/// A counted subquery, the outer-row conditions it needs (`CASE WHEN`), and the value
/// computed in the outer row from its inner columns (see [`as_counted`]).
type Counted = (Subquery, Option<Expr>, Option<Expr>);

/// The subquery with its projection replaced by `brook_subquery_rows(e)`, and the
/// conditions of its WHERE clause that read only the outer row (taken out: they decide
/// whether the subquery has rows at all, so they become `CASE WHEN conditions THEN ...`,
/// which DataFusion's decorrelation, unable to pull such a condition up, needs). None when
/// it is not a plain one-column projection over rows.
///
/// A value reading the outer row too (`(SELECT json_build_object('a', o.x, 'b', i.y) ...)`,
/// which DataFusion cannot decorrelate inside an aggregate) is computed in the outer query:
/// the subquery gives the inner columns it reads, as a struct, and the value expression is
/// returned to be evaluated over them (the third element).
fn as_counted(sq: &Subquery) -> Result<Option<Counted>> {
    let LogicalPlan::Projection(p) = sq.subquery.as_ref() else {
        return counted_whole(sq);
    };
    let [expr] = p.expr.as_slice() else {
        return Ok(None);
    };
    if !reads_rows(&p.input) {
        return counted_whole(sq);
    }
    let (input, guard) = outer_conditions_apart(&p.input)?;
    let (name, value) = match expr {
        Expr::Alias(a) => (a.name.clone(), a.expr.as_ref().clone()),
        e => (e.schema_name().to_string(), e.clone()),
    };
    let (value, outer_value) = if reads_outer(&value) {
        let columns: Vec<Expr> = inner_columns(&value)
            .into_iter()
            .map(Expr::Column)
            .collect();
        let row = Expr::ScalarFunction(datafusion::logical_expr::expr::ScalarFunction::new_udf(
            datafusion::functions::core::r#struct(),
            columns,
        ));
        (row, Some(value))
    } else {
        (value, None)
    };
    Ok(Some((counted(input, value, name, sq)?, guard, outer_value)))
}

/// `SELECT brook_subquery_rows(value) AS name FROM input`, as the subquery `sq` was.
fn counted(input: Arc<LogicalPlan>, value: Expr, name: String, sq: &Subquery) -> Result<Subquery> {
    let counted = Expr::AggregateFunction(AggregateFunction::new_udf(
        Arc::new(rows_udaf()),
        vec![value],
        false,
        None,
        vec![],
        None,
    ))
    .alias(name.clone());
    let aggregate = Aggregate::try_new(input, vec![], vec![counted])?;
    let agg_plan = LogicalPlan::Aggregate(aggregate);
    let column = Expr::Column(agg_plan.schema().qualified_field(0).into());
    let projection = Projection::try_new(vec![column.alias(name)], Arc::new(agg_plan))?;
    let plan = LogicalPlan::Projection(projection);
    Ok(Subquery {
        outer_ref_columns: plan.all_out_ref_exprs(),
        subquery: Arc::new(plan),
        spans: sq.spans.clone(),
    })
}

/// A subquery of another shape that DataFusion's check refuses ("must be aggregated"): one
/// that may give several rows without aggregating, under a LIMIT, ORDER BY, DISTINCT or
/// window (`(SELECT name ... ORDER BY salary DESC LIMIT 2)`). Its rows are counted whole,
/// over the subquery as it is; DataFusion does not decorrelate that, so it runs per outer
/// row (`lateral_apply`), and the count decides 21000 as above.
fn counted_whole(sq: &Subquery) -> Result<Option<Counted>> {
    let plan = sq.subquery.as_ref();
    if plan.max_rows().is_some_and(|m| m <= 1) || aggregates(plan) {
        return Ok(None);
    }
    let [field] = plan.schema().fields().iter().collect::<Vec<_>>()[..] else {
        return Ok(None);
    };
    let name = field.name().clone();
    let column = Expr::Column(plan.schema().qualified_field(0).into());
    Ok(Some((
        counted(sq.subquery.clone(), column, name, sq)?,
        None,
        None,
    )))
}

/// Whether a subquery's plan aggregates (under its projections and aliases; HAVING too):
/// DataFusion's check takes those.
fn aggregates(plan: &LogicalPlan) -> bool {
    match plan {
        LogicalPlan::Projection(p) => aggregates(&p.input),
        LogicalPlan::SubqueryAlias(a) => aggregates(&a.input),
        LogicalPlan::Aggregate(_) => true,
        LogicalPlan::Filter(f) => matches!(f.input.as_ref(), LogicalPlan::Aggregate(_)),
        _ => false,
    }
}

/// The subquery's columns `e` reads, in a fixed order (the counted struct's fields).
fn inner_columns(e: &Expr) -> Vec<datafusion::common::Column> {
    let mut columns: Vec<datafusion::common::Column> =
        e.column_refs().into_iter().cloned().collect();
    columns.sort_by_key(|c| c.flat_name());
    columns
}

/// True when `e` reads a column of the outer row.
fn reads_outer(e: &Expr) -> bool {
    let mut outer = false;
    let _ = e.apply(|e| {
        outer |= matches!(e, Expr::OuterReferenceColumn(..));
        Ok(datafusion::common::tree_node::TreeNodeRecursion::Continue)
    });
    outer
}

/// `CASE WHEN row IS NOT NULL THEN e END` with `e`'s inner columns read from the counted
/// struct `row` (fields `c0`, `c1`, ... in `column_refs` order) and its outer columns as
/// plain columns of the outer row.
fn value_in_outer_row(e: Expr, subquery_value: &dyn Fn() -> Expr) -> Result<Expr> {
    let columns = inner_columns(&e);
    let evaluated = e
        .transform_up(|e| match e {
            Expr::Column(c) => {
                let i = columns.iter().position(|k| *k == c).unwrap_or(0);
                Ok(Transformed::yes(Expr::ScalarFunction(
                    datafusion::logical_expr::expr::ScalarFunction::new_udf(
                        datafusion::functions::core::get_field(),
                        vec![
                            subquery_value(),
                            Expr::Literal(ScalarValue::Utf8(Some(format!("c{i}"))), None),
                        ],
                    ),
                )))
            }
            Expr::OuterReferenceColumn(_, c) => Ok(Transformed::yes(Expr::Column(c))),
            other => Ok(Transformed::no(other)),
        })?
        .data;
    Ok(Expr::Case(Case::new(
        None,
        vec![(
            Box::new(subquery_value().is_not_null()),
            Box::new(evaluated),
        )],
        None,
    )))
}

/// `input` without the conjuncts of its filter that read outer columns only, and those
/// conjuncts (as plain columns of the outer row).
fn outer_conditions_apart(input: &Arc<LogicalPlan>) -> Result<(Arc<LogicalPlan>, Option<Expr>)> {
    let LogicalPlan::Filter(f) = input.as_ref() else {
        return Ok((input.clone(), None));
    };
    let (outer, inner): (Vec<&Expr>, Vec<&Expr>) = split_conjunction(&f.predicate)
        .into_iter()
        .partition(|e| reads_only_outer(e));
    if outer.is_empty() {
        return Ok((input.clone(), None));
    }
    let rest = match conjunction(inner.into_iter().cloned()) {
        Some(predicate) => Arc::new(LogicalPlan::Filter(Filter::try_new(
            predicate,
            f.input.clone(),
        )?)),
        None => f.input.clone(),
    };
    let guard = conjunction(outer.into_iter().cloned())
        .map(|g| {
            g.transform_up(|e| match e {
                Expr::OuterReferenceColumn(_, c) => Ok(Transformed::yes(Expr::Column(c))),
                other => Ok(Transformed::no(other)),
            })
            .map(|t| t.data)
        })
        .transpose()?;
    Ok((rest, guard))
}

/// True when `e` reads outer columns and no column of the subquery (nor a subquery).
fn reads_only_outer(e: &Expr) -> bool {
    let mut outer = false;
    let mut other = false;
    let _ = e.apply(|e| {
        match e {
            Expr::OuterReferenceColumn(..) => outer = true,
            Expr::Column(_) | Expr::ScalarSubquery(_) | Expr::Exists(_) | Expr::InSubquery(_) => {
                other = true
            }
            _ => {}
        }
        Ok(datafusion::common::tree_node::TreeNodeRecursion::Continue)
    });
    outer && !other
}

/// True when `plan` yields rows one by one (so counting them is the subquery's meaning).
fn reads_rows(plan: &LogicalPlan) -> bool {
    !matches!(
        plan,
        LogicalPlan::Aggregate(_)
            | LogicalPlan::Limit(_)
            | LogicalPlan::Sort(_)
            | LogicalPlan::Distinct(_)
            | LogicalPlan::Window(_)
    )
}

const VALUE: &str = "value";
const ROWS: &str = "rows";

fn counted_type(value: &DataType) -> DataType {
    DataType::Struct(Fields::from(vec![
        Field::new(VALUE, value.clone(), true),
        Field::new(ROWS, DataType::Int64, false),
    ]))
}

/// `brook_subquery_rows(e)`: {first value, number of rows}.
pub fn rows_udaf() -> AggregateUDF {
    AggregateUDF::new_from_impl(SubqueryRows {
        signature: Signature::any(1, Volatility::Immutable),
    })
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct SubqueryRows {
    signature: Signature,
}

impl AggregateUDFImpl for SubqueryRows {
    fn name(&self) -> &str {
        "brook_subquery_rows"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, arg_types: &[DataType]) -> Result<DataType> {
        Ok(counted_type(arg_types.first().unwrap_or(&DataType::Null)))
    }

    fn accumulator(&self, args: AccumulatorArgs<'_>) -> Result<Box<dyn Accumulator>> {
        let value_type = args
            .expr_fields
            .first()
            .map(|f| f.data_type().clone())
            .unwrap_or(DataType::Null);
        Ok(Box::new(RowsAccumulator {
            first: ScalarValue::try_from(&value_type)?,
            rows: 0,
            value_type,
        }))
    }

    fn state_fields(&self, args: StateFieldsArgs<'_>) -> Result<Vec<FieldRef>> {
        let value = args
            .input_fields
            .first()
            .map(|f| f.data_type().clone())
            .unwrap_or(DataType::Null);
        Ok(vec![
            Arc::new(Field::new(format!("{}[first]", args.name), value, true)),
            Arc::new(Field::new(
                format!("{}[rows]", args.name),
                DataType::Int64,
                true,
            )),
        ])
    }
}

#[derive(Debug)]
struct RowsAccumulator {
    first: ScalarValue,
    rows: i64,
    value_type: DataType,
}

impl RowsAccumulator {
    fn add(&mut self, first: ScalarValue, rows: i64) {
        if self.rows == 0 && rows > 0 {
            self.first = first;
        }
        self.rows += rows;
    }
}

impl Accumulator for RowsAccumulator {
    fn update_batch(&mut self, values: &[ArrayRef]) -> Result<()> {
        let Some(v) = values.first() else {
            return Ok(());
        };
        if !v.is_empty() {
            self.add(ScalarValue::try_from_array(v, 0)?, v.len() as i64);
        }
        Ok(())
    }

    fn merge_batch(&mut self, states: &[ArrayRef]) -> Result<()> {
        let (Some(firsts), Some(rows)) = (states.first(), states.get(1)) else {
            return Ok(());
        };
        let rows = rows.as_primitive::<datafusion::arrow::datatypes::Int64Type>();
        for i in 0..rows.len() {
            if !rows.is_null(i) {
                self.add(ScalarValue::try_from_array(firsts, i)?, rows.value(i));
            }
        }
        Ok(())
    }

    fn state(&mut self) -> Result<Vec<ScalarValue>> {
        Ok(vec![
            self.first.clone(),
            ScalarValue::Int64(Some(self.rows)),
        ])
    }

    fn evaluate(&mut self) -> Result<ScalarValue> {
        let fields = match counted_type(&self.value_type) {
            DataType::Struct(f) => f,
            _ => unreachable!("counted_type is a struct"),
        };
        let array = StructArray::try_new(
            fields,
            vec![
                self.first.to_array()?,
                Arc::new(Int64Array::from(vec![self.rows])),
            ],
            None,
        )?;
        Ok(ScalarValue::Struct(Arc::new(array)))
    }

    fn size(&self) -> usize {
        std::mem::size_of_val(self) + self.first.size()
    }
}

/// `brook_subquery_value(s)`: the value of a counted subquery row; 21000 for more than one.
pub fn value_udf() -> ScalarUDF {
    ScalarUDF::new_from_impl(SubqueryValue {
        signature: Signature::any(1, Volatility::Immutable),
    })
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct SubqueryValue {
    signature: Signature,
}

impl ScalarUDFImpl for SubqueryValue {
    fn name(&self) -> &str {
        "brook_subquery_value"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, arg_types: &[DataType]) -> Result<DataType> {
        match arg_types.first() {
            Some(DataType::Struct(fields)) if fields.len() == 2 => {
                Ok(fields[0].data_type().clone())
            }
            other => Err(DataFusionError::Internal(format!(
                "brook_subquery_value of {other:?}"
            ))),
        }
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let scalar = matches!(args.args.first(), Some(ColumnarValue::Scalar(_)));
        let arrays = ColumnarValue::values_to_arrays(&args.args)?;
        let Some(input) = arrays.first() else {
            return Err(DataFusionError::Internal(
                "brook_subquery_value without argument".into(),
            ));
        };
        let counted = input.as_struct();
        let rows = counted
            .column(1)
            .as_primitive::<datafusion::arrow::datatypes::Int64Type>();
        for i in 0..counted.len() {
            if counted.is_valid(i) && rows.is_valid(i) && rows.value(i) > 1 {
                return Err(DataFusionError::External(Box::new(
                    brook_common::BrookError::Cardinality(
                        "more than one row returned by a subquery used as an expression".into(),
                    ),
                )));
            }
        }
        // A NULL struct (no matching row) gives NULL, whatever its value field holds.
        let value = counted.column(0);
        let out = match counted.nulls() {
            Some(nulls) if nulls.null_count() > 0 => {
                let keep = datafusion::arrow::array::BooleanArray::new(nulls.inner().clone(), None);
                datafusion::arrow::compute::nullif(value, &datafusion::arrow::compute::not(&keep)?)?
            }
            _ => value.clone(),
        };
        if scalar {
            Ok(ColumnarValue::Scalar(ScalarValue::try_from_array(&out, 0)?))
        } else {
            Ok(ColumnarValue::Array(out))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::arrow::array::{Int32Array, StringArray};

    fn counted(values: Vec<Option<&str>>, rows: Vec<i64>, valid: Vec<bool>) -> ArrayRef {
        let fields = match counted_type(&DataType::Utf8) {
            DataType::Struct(f) => f,
            _ => unreachable!(),
        };
        Arc::new(
            StructArray::try_new(
                fields,
                vec![
                    Arc::new(StringArray::from(values)),
                    Arc::new(Int64Array::from(rows)),
                ],
                Some(valid.into()),
            )
            .unwrap(),
        )
    }

    fn value_of(input: ArrayRef) -> Result<ArrayRef> {
        let udf = value_udf();
        let field = Arc::new(Field::new("s", input.data_type().clone(), true));
        let out = udf.invoke_with_args(ScalarFunctionArgs {
            number_rows: input.len(),
            return_field: Arc::new(Field::new("v", DataType::Utf8, true)),
            arg_fields: vec![field],
            args: vec![ColumnarValue::Array(input)],
            config_options: Arc::new(ConfigOptions::default()),
        })?;
        match out {
            ColumnarValue::Array(a) => Ok(a),
            ColumnarValue::Scalar(s) => s.to_array(),
        }
    }

    #[test]
    fn one_row_gives_its_value_and_no_row_gives_null() {
        let out = value_of(counted(
            vec![Some("a"), Some("stale"), None],
            vec![1, 1, 0],
            vec![true, false, true],
        ))
        .unwrap();
        let out = out.as_string::<i32>();
        assert_eq!(out.value(0), "a");
        assert!(out.is_null(1), "an outer row without match reads NULL");
        assert!(out.is_null(2));
    }

    #[test]
    fn two_rows_for_an_outer_row_are_21000_but_not_for_an_unmatched_one() {
        let err = value_of(counted(vec![Some("a")], vec![2], vec![true])).unwrap_err();
        assert!(err.to_string().contains("more than one row"), "{err}");
        // The grouped side may hold a key with two rows that no outer row reads.
        assert!(value_of(counted(vec![Some("a")], vec![2], vec![false])).is_ok());
    }

    #[test]
    fn the_accumulator_keeps_the_first_value_and_counts_rows_across_merges() {
        let mut a = RowsAccumulator {
            first: ScalarValue::Int32(None),
            rows: 0,
            value_type: DataType::Int32,
        };
        a.update_batch(&[Arc::new(Int32Array::from(Vec::<i32>::new()))])
            .unwrap();
        assert_eq!(a.rows, 0);
        a.update_batch(&[Arc::new(Int32Array::from(vec![Some(7)]))])
            .unwrap();
        let mut b = RowsAccumulator {
            first: ScalarValue::Int32(None),
            rows: 0,
            value_type: DataType::Int32,
        };
        b.update_batch(&[Arc::new(Int32Array::from(vec![None, Some(9)]))])
            .unwrap();
        let state: Vec<ArrayRef> = b
            .state()
            .unwrap()
            .iter()
            .map(|s| s.to_array().unwrap())
            .collect();
        a.merge_batch(&state).unwrap();
        assert_eq!((a.first.clone(), a.rows), (ScalarValue::Int32(Some(7)), 3));
    }
}
