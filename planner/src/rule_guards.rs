//! DataFusion optimizer rules kept from two rewrites that break a query.
//!
//! - `single_distinct_aggregation_to_group_by` plans `count(DISTINCT a), sum(b)` as a
//!   grouping by `a` under a second aggregation, `sum(sum(b))`. PostgreSQL's `sum`
//!   (Brook's) of an int is a bigint and of a bigint a numeric, so the outer sum's type
//!   differed from the query's and the optimizer refused the plan (XX000 "Assertion failed:
//!   compatible"). [`TypesKept`] leaves a node as planned when the rewrite would change its
//!   output types: DataFusion's distinct accumulators give the same answer.
//! - `extract_equijoin_predicate` moves a join condition's equalities into the join's keys
//!   and keeps the join's NULL rule. A join whose keys are `IS NOT DISTINCT FROM` (NULL
//!   matches NULL: Brook's grouped join of a correlated aggregate, `decorrelate.rs`) then
//!   took `x = (SELECT max(...) ...)`, pushed into it, as a key matching NULL with NULL: a
//!   row whose `x` and aggregate were both NULL was kept (a wrong answer, ad hoc and in
//!   views). [`NullEqualKeysKept`] leaves such a join's other conditions in its filter,
//!   where `=` is SQL's.

use datafusion::common::tree_node::Transformed;
use datafusion::common::{NullEquality, Result as DfResult};
use datafusion::logical_expr::LogicalPlan;
use datafusion::optimizer::optimizer::ApplyOrder;
use datafusion::optimizer::{OptimizerConfig, OptimizerRule};
use std::sync::Arc;

/// A rule whose rewrite of a node is kept only when the node's output types stay.
#[derive(Debug)]
pub struct TypesKept(pub Arc<dyn OptimizerRule + Send + Sync>);

impl OptimizerRule for TypesKept {
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
        let before: Vec<_> = plan
            .schema()
            .fields()
            .iter()
            .map(|f| f.data_type().clone())
            .collect();
        let kept = plan.clone();
        let t = self.0.rewrite(plan, config)?;
        let after = t.data.schema().fields().iter().map(|f| f.data_type());
        if t.transformed && !after.eq(before.iter()) {
            return Ok(Transformed::no(kept));
        }
        Ok(t)
    }
}

/// A rule that does not touch a join whose keys match NULL with NULL and which has a
/// filter besides them.
#[derive(Debug)]
pub struct NullEqualKeysKept(pub Arc<dyn OptimizerRule + Send + Sync>);

impl OptimizerRule for NullEqualKeysKept {
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
        if let LogicalPlan::Join(j) = &plan {
            if j.null_equality == NullEquality::NullEqualsNull
                && !j.on.is_empty()
                && j.filter.is_some()
            {
                return Ok(Transformed::no(plan));
            }
        }
        self.0.rewrite(plan, config)
    }
}
