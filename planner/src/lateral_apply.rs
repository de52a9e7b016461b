//! LATERAL subqueries no rewrite decorrelates, run once per left row (PostgreSQL's
//! parameterized nested loop).
//!
//! DataFusion turns a LATERAL subquery into a join only when its references to the left row
//! are in WHERE conditions it can pull up, and Brook's own rewrites (`lateral.rs`) cover the
//! subqueries that compute from the left row alone. The rest — `ORDER BY ... LIMIT n` per
//! left row (the top-n-per-group idiom), `DISTINCT`, `UNION`, aggregates with a `HAVING`,
//! a reference to the left row in a select list over a table — stayed a join whose right
//! side reads outer columns, which no physical plan executes. Written here because no
//! library does it: [`LateralApplyRule`], an optimizer rule placed after DataFusion's,
//! replaces such a join by a [`LateralApply`] node, whose physical plan (Brook's
//! `LateralApplyExec`) plans and runs the subquery once per distinct combination of the
//! left columns it reads, with those columns' values as constants, and pairs each left row
//! with the rows it gave.
//!
//! Invariant: a left row's output is exactly the subquery evaluated with that row's values
//! (a function of the columns it references, so rows with equal values share one run),
//! filtered by the join's ON condition; an inner join drops a left row without rows, a left
//! join pads it with NULLs once.

use datafusion::arrow::datatypes::{DataType, Field};
use datafusion::common::tree_node::{Transformed, TreeNode, TreeNodeRecursion};
use datafusion::common::{Column, DFSchema, DFSchemaRef, Result as DfResult, ScalarValue};
use datafusion::error::DataFusionError;
use datafusion::logical_expr::expr_rewriter::NamePreserver;
use datafusion::logical_expr::logical_plan::SkipType;
use datafusion::logical_expr::{
    Expr, Extension, JoinType, LogicalPlan, LogicalPlanBuilder, UserDefinedLogicalNodeCore,
};
use datafusion::optimizer::optimizer::{ApplyOrder, Optimizer};
use datafusion::optimizer::{OptimizerConfig, OptimizerRule};
use std::collections::{BTreeSet, HashMap, HashSet};
use std::fmt;
use std::sync::Arc;

/// What a [`LateralApply`] makes of a left row's subquery rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd)]
pub enum ApplyKind {
    /// A LATERAL join: the left row with each of them (`Inner` or `Left` join).
    Join(JoinType),
    /// A scalar subquery: the left row with its one value (NULL without a row; a second row
    /// is 21000).
    Scalar,
    /// `EXISTS`: the left row with whether there is a row.
    Exists,
}

/// `left [LEFT] JOIN LATERAL (subquery) ON filter`, or a scalar or EXISTS subquery of the
/// left row as a new last column: the subquery run per left row.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct LateralApply {
    /// The left side.
    pub left: LogicalPlan,
    /// The right side as planned (under its alias), reading the left row through outer
    /// references; not an input of the node: it is planned per row, once they are values.
    pub subquery: LogicalPlan,
    /// The left columns the subquery reads, in the order [`LateralApply::bind`] takes their
    /// values.
    pub outer: Vec<Column>,
    /// A join, a scalar value or EXISTS.
    pub kind: ApplyKind,
    /// The ON condition over the left and right columns (the join's key pairs included).
    pub filter: Option<Expr>,
    /// The subquery calls a volatile function (`random()`): it runs for every left row,
    /// not once per distinct values.
    pub per_row: bool,
    /// Left columns then right columns, as the join's (the value's one column for a scalar
    /// or EXISTS subquery).
    pub schema: DFSchemaRef,
}

impl LateralApply {
    /// The node over `left`, its schema given.
    fn new(
        left: LogicalPlan,
        subquery: LogicalPlan,
        outer: BTreeSet<Column>,
        kind: ApplyKind,
        filter: Option<Expr>,
        schema: DFSchemaRef,
    ) -> DfResult<Self> {
        let per_row = calls_volatile(&subquery)?;
        Ok(LateralApply {
            left,
            subquery,
            outer: outer.into_iter().collect(),
            kind,
            filter,
            per_row,
            schema,
        })
    }

    /// The subquery with each outer reference in [`LateralApply::outer`] replaced by its
    /// value (in that order), names kept, ready to be optimized and planned as any query.
    pub fn bind(&self, values: &[ScalarValue]) -> DfResult<LogicalPlan> {
        let outer = &self.outer;
        let value_of = |c: &Column| {
            outer
                .iter()
                .position(|o| o == c)
                .and_then(|i| values.get(i))
        };
        self.subquery
            .clone()
            .transform_down_with_subqueries(|plan| {
                let names = NamePreserver::new(&plan);
                plan.map_expressions(|e| {
                    let saved = names.save(&e);
                    let bound = e.transform(|e| match &e {
                        Expr::OuterReferenceColumn(field, c) => match value_of(c) {
                            Some(v) => {
                                let v = v.cast_to(field.data_type())?;
                                Ok(Transformed::yes(Expr::Literal(v, None)))
                            }
                            None => Ok(Transformed::no(e)),
                        },
                        _ => Ok(Transformed::no(e)),
                    })?;
                    Ok(bound.update_data(|e| saved.restore(e)))
                })
            })
            .map(|t| t.data)
    }
}

/// Plans order their nodes only to compare them; two applies have no order but equality.
impl PartialOrd for LateralApply {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        (self == other).then_some(std::cmp::Ordering::Equal)
    }
}

impl UserDefinedLogicalNodeCore for LateralApply {
    fn name(&self) -> &str {
        "LateralApply"
    }

    fn inputs(&self) -> Vec<&LogicalPlan> {
        vec![&self.left]
    }

    fn schema(&self) -> &DFSchemaRef {
        &self.schema
    }

    fn expressions(&self) -> Vec<Expr> {
        self.filter.iter().cloned().collect()
    }

    /// A condition on the left columns alone is the left side's (PostgreSQL filters the
    /// rows before running the subquery for them: `WHERE z.id <> 0` keeps `10 / z.id` from
    /// running for 0). A left column named as a right one stays above too.
    fn prevent_predicate_push_down_columns(&self) -> HashSet<String> {
        let left = self.left.schema().fields().len();
        self.schema
            .fields()
            .iter()
            .skip(left)
            .map(|f| f.name().clone())
            .collect()
    }

    fn fmt_for_explain(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let outer: Vec<String> = self.outer.iter().map(|c| c.flat_name()).collect();
        write!(
            f,
            "LateralApply: {:?} per ({})",
            self.kind,
            outer.join(", ")
        )?;
        if let Some(filter) = &self.filter {
            write!(f, " filter={filter}")?;
        }
        write!(f, " subquery=[{}]", self.subquery.display_indent())
    }

    fn with_exprs_and_inputs(&self, exprs: Vec<Expr>, inputs: Vec<LogicalPlan>) -> DfResult<Self> {
        let [left]: [LogicalPlan; 1] = inputs
            .try_into()
            .map_err(|_| DataFusionError::Internal("LateralApply takes one input".to_string()))?;
        Ok(LateralApply {
            left,
            filter: exprs.into_iter().next(),
            ..self.clone()
        })
    }
}

/// Replaces the LATERAL joins and subqueries DataFusion's rules left correlated by
/// [`LateralApply`]s.
#[derive(Debug, Default)]
pub struct LateralApplyRule;

impl OptimizerRule for LateralApplyRule {
    fn name(&self) -> &str {
        "brook_lateral_apply"
    }

    fn apply_order(&self) -> Option<ApplyOrder> {
        Some(ApplyOrder::BottomUp)
    }

    fn rewrite(
        &self,
        plan: LogicalPlan,
        _config: &dyn OptimizerConfig,
    ) -> DfResult<Transformed<LogicalPlan>> {
        let join = match &plan {
            LogicalPlan::Join(join) => join,
            LogicalPlan::Projection(_) | LogicalPlan::Filter(_) => return subqueries_of(plan),
            _ => return Ok(Transformed::no(plan)),
        };
        if !matches!(join.join_type, JoinType::Inner | JoinType::Left) {
            return Ok(Transformed::no(plan));
        }
        let Some(subquery) = correlated_right(&join.right) else {
            return Ok(Transformed::no(plan));
        };
        let outer = outer_columns(&subquery)?;
        let left_schema = join.left.schema();
        if outer.is_empty() || !outer.iter().all(|c| left_schema.has_column(c)) {
            // References to a query further out: not this join's to bind.
            return Ok(Transformed::no(plan));
        }
        let keys = join.on.iter().map(|(l, r)| l.clone().eq(r.clone()));
        let filter = keys.chain(join.filter.clone()).reduce(|a, b| a.and(b));
        let node = LateralApply::new(
            join.left.as_ref().clone(),
            subquery,
            outer,
            ApplyKind::Join(join.join_type),
            filter,
            join.schema.clone(),
        )?;
        Ok(Transformed::yes(LogicalPlan::Extension(Extension {
            node: Arc::new(node),
        })))
    }
}

/// A projection's or filter's correlated scalar and EXISTS subqueries DataFusion left
/// (`(SELECT name ... ORDER BY salary DESC LIMIT 1)`, `EXISTS (... LIMIT 1)`), each as a
/// [`LateralApply`] adding its value as a column of the input, read in its place; a
/// filter's extra columns are projected away again.
fn subqueries_of(plan: LogicalPlan) -> DfResult<Transformed<LogicalPlan>> {
    let input = plan.inputs()[0].clone();
    let width = input.schema().fields().len();
    let mut applied = input.clone();
    let exprs = plan
        .expressions()
        .into_iter()
        .map(|e| {
            e.transform_up(|e| {
                let (subquery, kind, negated) = match &e {
                    Expr::ScalarSubquery(sq) => (sq, ApplyKind::Scalar, false),
                    Expr::Exists(ex) => (&ex.subquery, ApplyKind::Exists, ex.negated),
                    _ => return Ok(Transformed::no(e)),
                };
                let outer = outer_columns(&subquery.subquery)?;
                let schema = applied.schema().clone();
                if outer.is_empty() || !outer.iter().all(|c| schema.has_column(c)) {
                    return Ok(Transformed::no(e));
                }
                let name = format!("__brook_apply_{}", schema.fields().len());
                let rows = match kind {
                    ApplyKind::Exists => 1,
                    _ => 2,
                };
                let subquery = LogicalPlanBuilder::from(subquery.subquery.as_ref().clone())
                    .limit(0, Some(rows))?
                    .build()?;
                let field = match kind {
                    ApplyKind::Exists => Field::new(&name, DataType::Boolean, false),
                    _ => {
                        let f = subquery.schema().field(0);
                        Field::new(&name, f.data_type().clone(), true)
                    }
                };
                let value = DFSchema::from_unqualified_fields(vec![field].into(), HashMap::new())?;
                applied = LogicalPlan::Extension(Extension {
                    node: Arc::new(LateralApply::new(
                        applied.clone(),
                        subquery,
                        outer,
                        kind,
                        None,
                        Arc::new(schema.join(&value)?),
                    )?),
                });
                let column = Expr::Column(Column::from_name(name));
                Ok(Transformed::yes(if negated { !column } else { column }))
            })
        })
        .collect::<DfResult<Vec<_>>>()?;
    if !exprs.iter().any(|e| e.transformed) {
        return Ok(Transformed::no(plan));
    }
    let exprs: Vec<Expr> = exprs.into_iter().map(|e| e.data).collect();
    let rebuilt = match plan {
        LogicalPlan::Projection(p) => {
            let names = NamePreserver::new_for_projection();
            let exprs: Vec<Expr> = p
                .expr
                .iter()
                .zip(exprs)
                .map(|(old, new)| names.save(old).restore(new))
                .collect();
            LogicalPlanBuilder::from(applied).project(exprs)?.build()?
        }
        _ => {
            let keep: Vec<Expr> = input
                .schema()
                .columns()
                .into_iter()
                .take(width)
                .map(Expr::Column)
                .collect();
            let predicate = exprs.into_iter().next().ok_or_else(|| {
                DataFusionError::Internal("a filter without a predicate".to_string())
            })?;
            LogicalPlanBuilder::from(applied)
                .filter(predicate)?
                .project(keep)?
                .build()?
        }
    };
    Ok(Transformed::yes(rebuilt))
}

/// A subquery decorrelation rule of DataFusion's, kept from what it gets wrong; a subquery
/// left correlated runs per row ([`LateralApplyRule`]):
/// - where the rule fails, the plan is left as it was: `scalar_subquery_to_join` failed on
///   a correlated condition under a derived table's DISTINCT or window (`(SELECT count(*)
///   FROM (SELECT DISTINCT x FROM e WHERE e.k = d.k) s)`: "No field named s.k"), and so did
///   the statement;
/// - a node whose correlated subquery has a shape the rules decorrelate into wrong answers
///   ([`decorrelated_wrongly`]) is left as it is.
#[derive(Debug)]
pub struct Guarded(Arc<dyn OptimizerRule + Send + Sync>);

impl OptimizerRule for Guarded {
    fn name(&self) -> &str {
        self.0.name()
    }

    fn apply_order(&self) -> Option<ApplyOrder> {
        self.0.apply_order()
    }

    fn rewrite(
        &self,
        plan: LogicalPlan,
        config: &dyn OptimizerConfig,
    ) -> DfResult<Transformed<LogicalPlan>> {
        if holds_wrongly_decorrelated(&plan)? {
            return Ok(Transformed::no(plan));
        }
        let kept = plan.clone();
        match self.0.rewrite(plan, config) {
            Ok(t) => Ok(t),
            Err(_) => Ok(Transformed::no(kept)),
        }
    }
}

/// Whether a node's correlated subqueries (a LATERAL join's right side, or the scalar,
/// EXISTS and IN subqueries of its expressions) include one DataFusion decorrelates
/// wrongly.
fn holds_wrongly_decorrelated(plan: &LogicalPlan) -> DfResult<bool> {
    if let LogicalPlan::Join(join) = plan {
        return match correlated_right(&join.right) {
            Some(subquery) => decorrelated_wrongly(&subquery, false),
            None => Ok(false),
        };
    }
    let mut wrong = false;
    for e in plan.expressions() {
        e.apply(|e| {
            let (subquery, membership) = match e {
                Expr::ScalarSubquery(sq) => (sq, false),
                Expr::Exists(ex) => (&ex.subquery, true),
                Expr::InSubquery(i) => (&i.subquery, true),
                _ => return Ok(TreeNodeRecursion::Continue),
            };
            if !subquery.outer_ref_columns.is_empty()
                && decorrelated_wrongly(&subquery.subquery, membership)?
            {
                wrong = true;
                return Ok(TreeNodeRecursion::Stop);
            }
            Ok(TreeNodeRecursion::Continue)
        })?;
    }
    Ok(wrong)
}

/// The correlated subquery shapes DataFusion's rules decorrelate into wrong answers:
/// - a HAVING clause: `d, LATERAL (SELECT sum(x) ... WHERE e.k = d.k HAVING count(*) > 2)`
///   kept the left rows HAVING refused, with NULLs (DataFusion issue 21198); a scalar
///   subquery with HAVING gave the group's value where PostgreSQL's is NULL;
/// - a window function: the correlated condition was pulled above it, so `rank() OVER
///   (ORDER BY x)` ranked the rows of every left row together;
/// - an OFFSET: `EXISTS (... OFFSET 3)` became a semi join without it;
/// - for EXISTS and IN (`membership`), an aggregate without GROUP BY: it gives one row
///   whatever it reads, but became a semi join on the groups there are.
fn decorrelated_wrongly(plan: &LogicalPlan, membership: bool) -> DfResult<bool> {
    let mut found = false;
    plan.apply_with_subqueries(|p| {
        found = match p {
            LogicalPlan::Filter(f) => matches!(f.input.as_ref(), LogicalPlan::Aggregate(_)),
            LogicalPlan::Window(_) => true,
            LogicalPlan::Limit(l) => !matches!(l.get_skip_type()?, SkipType::Literal(0)),
            _ => false,
        };
        Ok(if found {
            TreeNodeRecursion::Stop
        } else {
            TreeNodeRecursion::Continue
        })
    })?;
    Ok(found || (membership && aggregates_ungrouped(plan)))
}

/// Whether a plan's rows are an aggregate's without GROUP BY (under projections, aliases,
/// limits and sorts).
fn aggregates_ungrouped(plan: &LogicalPlan) -> bool {
    match plan {
        LogicalPlan::Projection(_)
        | LogicalPlan::SubqueryAlias(_)
        | LogicalPlan::Limit(_)
        | LogicalPlan::Sort(_) => aggregates_ungrouped(plan.inputs()[0]),
        LogicalPlan::Aggregate(a) => a.group_expr.is_empty(),
        _ => false,
    }
}

/// Whether a plan (its subqueries included) calls a volatile function.
fn calls_volatile(plan: &LogicalPlan) -> DfResult<bool> {
    let mut volatile = false;
    plan.apply_with_subqueries(|p| {
        volatile = p.expressions().iter().any(|e| e.is_volatile());
        Ok(if volatile {
            TreeNodeRecursion::Stop
        } else {
            TreeNodeRecursion::Continue
        })
    })?;
    Ok(volatile)
}

/// DataFusion's optimizer rules with its subquery decorrelations [`Guarded`] and
/// [`LateralApplyRule`] right after `decorrelate_lateral_join` (before
/// `optimize_projections`, which drops the left columns only outer references read), and
/// two rules kept from rewrites that break a query (`rule_guards`).
pub fn optimizer_rules() -> Vec<Arc<dyn OptimizerRule + Send + Sync>> {
    let mut rules: Vec<Arc<dyn OptimizerRule + Send + Sync>> = Vec::new();
    for rule in Optimizer::new().rules {
        match rule.name() {
            "decorrelate_lateral_join" => {
                rules.push(Arc::new(Guarded(rule)));
                rules.push(Arc::new(LateralApplyRule));
            }
            "scalar_subquery_to_join" | "decorrelate_predicate_subquery" => {
                rules.push(Arc::new(Guarded(rule)));
            }
            "single_distinct_aggregation_to_group_by" => {
                rules.push(Arc::new(crate::rule_guards::TypesKept(rule)));
            }
            "extract_equijoin_predicate" => {
                rules.push(Arc::new(crate::rule_guards::NullEqualKeysKept(rule)));
            }
            _ => rules.push(rule),
        }
    }
    rules
}

/// The right side of a LATERAL join that still reads the left row: the `Subquery` wrapper
/// DataFusion puts around it taken off, under the aliases and projections above it.
fn correlated_right(right: &LogicalPlan) -> Option<LogicalPlan> {
    match right {
        LogicalPlan::Subquery(sq) => Some(sq.subquery.as_ref().clone()),
        LogicalPlan::SubqueryAlias(_) | LogicalPlan::Projection(_) => {
            let input = correlated_right(right.inputs()[0])?;
            right.with_new_exprs(right.expressions(), vec![input]).ok()
        }
        _ => None,
    }
}

/// The columns a plan reads through outer references (its nested subqueries' included).
fn outer_columns(plan: &LogicalPlan) -> DfResult<BTreeSet<Column>> {
    let mut out = BTreeSet::new();
    plan.apply_with_subqueries(|p| {
        p.apply_expressions(|e| {
            e.apply(|e| {
                if let Expr::OuterReferenceColumn(_, c) = e {
                    out.insert(c.clone());
                }
                Ok(TreeNodeRecursion::Continue)
            })
        })?;
        Ok(TreeNodeRecursion::Continue)
    })?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::arrow::datatypes::{DataType, Field, Schema};
    use datafusion::datasource::MemTable;
    use datafusion::prelude::SessionContext;

    async fn context() -> SessionContext {
        let state = datafusion::execution::SessionStateBuilder::new()
            .with_default_features()
            .with_optimizer_rules(optimizer_rules())
            .build();
        let ctx = SessionContext::new_with_state(state);
        for (name, cols) in [("d", ["id", "n"]), ("e", ["dept", "v"])] {
            let schema = Arc::new(Schema::new(
                cols.iter()
                    .map(|c| Field::new(*c, DataType::Int64, true))
                    .collect::<Vec<_>>(),
            ));
            let table = MemTable::try_new(schema, vec![vec![]]).expect("table");
            ctx.register_table(name, Arc::new(table)).expect("register");
        }
        ctx
    }

    async fn optimized(sql: &str) -> LogicalPlan {
        let ctx = context().await;
        let df = ctx.sql(sql).await.expect("plan");
        ctx.state().optimize(df.logical_plan()).expect("optimize")
    }

    fn applies(plan: &LogicalPlan) -> Vec<LateralApply> {
        let mut out = Vec::new();
        plan.apply(|p| {
            if let LogicalPlan::Extension(e) = p {
                if let Some(a) = e.node.as_any().downcast_ref::<LateralApply>() {
                    out.push(a.clone());
                }
            }
            Ok(TreeNodeRecursion::Continue)
        })
        .expect("walk");
        out
    }

    #[tokio::test]
    async fn limit_per_left_row_becomes_an_apply_bound_by_value() {
        let plan = optimized(
            "SELECT d.id, x.v FROM d CROSS JOIN LATERAL \
             (SELECT v FROM e WHERE e.dept = d.id ORDER BY v DESC LIMIT 2) x",
        )
        .await;
        let found = applies(&plan);
        assert_eq!(found.len(), 1, "{plan}");
        let apply = &found[0];
        assert_eq!(apply.outer, vec![Column::new(Some("d"), "id")]);
        assert_eq!(apply.kind, ApplyKind::Join(JoinType::Inner));
        let bound = apply.bind(&[ScalarValue::Int64(Some(7))]).expect("bind");
        let text = bound.display_indent().to_string();
        assert!(text.contains("e.dept = Int64(7)"), "{text}");
        assert!(!text.contains("outer_ref"), "{text}");
        assert_eq!(bound.schema().fields().len(), 1);
    }

    #[tokio::test]
    async fn decorrelated_laterals_are_left_to_datafusion() {
        let plan = optimized(
            "SELECT d.id, x.v FROM d CROSS JOIN LATERAL (SELECT v FROM e WHERE e.dept = d.id) x",
        )
        .await;
        assert!(applies(&plan).is_empty(), "{plan}");
    }

    #[tokio::test]
    async fn a_having_clause_keeps_the_subquery_per_row() {
        let plan = optimized(
            "SELECT d.id, x.s FROM d, LATERAL \
             (SELECT sum(v) AS s FROM e WHERE e.dept = d.id HAVING count(*) > 2) x",
        )
        .await;
        assert_eq!(applies(&plan).len(), 1, "{plan}");
    }
}
