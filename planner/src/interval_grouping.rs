//! Intervals grouped as PostgreSQL groups them: by their length (`interval '1 day'` and
//! `interval '24 hours'` are one group, as they are equal), in `GROUP BY`, `DISTINCT`,
//! `UNION`, `INTERSECT`, `EXCEPT`, joins `USING` an interval column and `IN (subquery)`.
//!
//! Arrow hashes an interval's months, days and nanoseconds apart, so each of those kept
//! `'1 day'` and `'24 hours'` apart (wrong answers: PostgreSQL's hash of an interval is of
//! its length, [`crate::interval_order::interval_key`]). An aggregate grouped by an
//! interval is grouped instead by the interval's length, and the group shows one of its
//! intervals (the one PostgreSQL's `min` gives; all have that length), under the group
//! column's own name; `DISTINCT` is the grouping by every column it is. Join keys and the
//! value compared with a subquery's rows are compared by length. Part of the analyzer rule
//! of `interval_order`, which also compares, sorts and partitions intervals by length.

use datafusion::common::tree_node::{Transformed, TransformedResult};
use datafusion::common::{Column, DFSchema, Result};
use datafusion::logical_expr::expr::{AggregateFunction, ScalarFunction};
use datafusion::logical_expr::{
    Aggregate, AggregateUDF, Distinct, Expr, ExprSchemable, LogicalPlan, Projection, ScalarUDF,
};
use std::sync::Arc;

use crate::interval_order::INTERVAL;

/// `plan` with its groupings, DISTINCTs and join keys of intervals by length; `key` is the
/// length function, `least` the aggregate that picks a group's interval.
pub(crate) fn group_by_length(
    plan: LogicalPlan,
    key: &Arc<ScalarUDF>,
    least: &Arc<AggregateUDF>,
) -> Result<LogicalPlan> {
    plan.transform_up_with_subqueries(|p| match p {
        LogicalPlan::Distinct(Distinct::All(input)) if any_interval(input.schema()) => {
            let group = input
                .schema()
                .columns()
                .into_iter()
                .map(Expr::Column)
                .collect();
            let grouping = Aggregate::try_new(input, group, vec![])?;
            grouped_by_length(grouping, key, least).map(Transformed::yes)
        }
        LogicalPlan::Aggregate(a) if groups_intervals(&a)? => {
            grouped_by_length(a, key, least).map(Transformed::yes)
        }
        LogicalPlan::Join(mut j) => {
            let mut changed = false;
            for (l, r) in j.on.iter_mut() {
                if is_interval(l, j.left.schema()) && is_interval(r, j.right.schema()) {
                    *l = length(key, l.clone());
                    *r = length(key, r.clone());
                    changed = true;
                }
            }
            Ok(Transformed::new_transformed(LogicalPlan::Join(j), changed))
        }
        p => Ok(Transformed::no(p)),
    })
    .data()
}

fn is_interval(e: &Expr, schema: &DFSchema) -> bool {
    e.get_type(schema).ok() == Some(INTERVAL)
}

fn any_interval(schema: &DFSchema) -> bool {
    schema.fields().iter().any(|f| *f.data_type() == INTERVAL)
}

fn length(key: &Arc<ScalarUDF>, e: Expr) -> Expr {
    Expr::ScalarFunction(ScalarFunction::new_udf(key.clone(), vec![e]))
}

/// An aggregate with a plain list of groups (not GROUPING SETS), one of them an interval.
fn groups_intervals(a: &Aggregate) -> Result<bool> {
    let schema = a.input.schema();
    Ok(!a
        .group_expr
        .iter()
        .any(|g| matches!(g, Expr::GroupingSet(_)))
        && a.group_expr.iter().any(|g| is_interval(g, schema)))
}

/// `a` grouped by its intervals' lengths, under a projection that gives `a`'s columns by
/// their names, each interval group column the group's least interval.
fn grouped_by_length(
    a: Aggregate,
    key: &Arc<ScalarUDF>,
    least: &Arc<AggregateUDF>,
) -> Result<LogicalPlan> {
    let schema = a.input.schema().clone();
    // The group expressions as the aggregate's columns are: each once (`GROUP BY d, d`).
    let mut unique: Vec<&Expr> = Vec::with_capacity(a.group_expr.len());
    for g in &a.group_expr {
        if !unique.contains(&g) {
            unique.push(g);
        }
    }
    let groups = unique.len();
    let mut group = Vec::with_capacity(groups);
    let mut chosen = Vec::new();
    // Where each of `a`'s group columns is in the new aggregate's output.
    let mut places = Vec::with_capacity(groups);
    for (i, g) in unique.into_iter().enumerate() {
        if is_interval(g, &schema) {
            places.push(groups + a.aggr_expr.len() + chosen.len());
            group.push(length(key, g.clone()));
            let pick = AggregateFunction::new_udf(
                least.clone(),
                vec![g.clone()],
                false,
                None,
                vec![],
                None,
            );
            chosen.push(Expr::AggregateFunction(pick).alias(format!("__brook_interval_group_{i}")));
        } else {
            places.push(i);
            group.push(g.clone());
        }
    }
    let mut aggr = a.aggr_expr.clone();
    aggr.extend(chosen);
    let grouped = Aggregate::try_new(a.input.clone(), group, aggr)?;
    let out = grouped.schema.clone();
    let exprs = a
        .schema
        .iter()
        .enumerate()
        .map(|(i, (qualifier, field))| {
            let at = places.get(i).copied().unwrap_or(i);
            let (q, f) = out.qualified_field(at);
            Expr::Column(Column::from((q, f))).alias_qualified(qualifier.cloned(), field.name())
        })
        .collect();
    Ok(LogicalPlan::Projection(Projection::try_new(
        exprs,
        Arc::new(LogicalPlan::Aggregate(grouped)),
    )?))
}
