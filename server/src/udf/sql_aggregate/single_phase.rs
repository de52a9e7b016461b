//! Plans aggregate a user aggregate in one phase.
//!
//! DataFusion always plans a partial aggregation per input partition and a final one that
//! merges the partial states. PostgreSQL folds a user aggregate in one pass unless it is
//! declared PARALLEL SAFE and the plan is parallel, so its answer does not depend on its
//! COMBINEFUNC (nor on whether INITCOND is that function's identity), and a call with
//! ORDER BY or DISTINCT must see all its rows in one fold. This rule replaces such a
//! partial/final pair by one aggregation over the input gathered into one partition, as
//! PostgreSQL runs such aggregates without parallel workers. The result is spread and
//! ordered as the final aggregation's was, so the plan above it holds.

use datafusion::common::config::ConfigOptions;
use datafusion::common::tree_node::{Transformed, TreeNode};
use datafusion::error::Result;
use datafusion::physical_optimizer::PhysicalOptimizerRule;
use datafusion::physical_plan::aggregates::{AggregateExec, AggregateMode};
use datafusion::physical_plan::coalesce_partitions::CoalescePartitionsExec;
use datafusion::physical_plan::repartition::RepartitionExec;
use datafusion::physical_plan::sorts::sort::SortExec;
use datafusion::physical_plan::sorts::sort_preserving_merge::SortPreservingMergeExec;
use datafusion::physical_plan::{ExecutionPlan, ExecutionPlanProperties};
use std::sync::Arc;

/// The rule.
#[derive(Debug, Default)]
pub struct SinglePhaseUserAggregates;

impl PhysicalOptimizerRule for SinglePhaseUserAggregates {
    fn optimize(
        &self,
        plan: Arc<dyn ExecutionPlan>,
        _config: &ConfigOptions,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        plan.transform_up(|node| match one_phase(&node)? {
            Some(single) => Ok(Transformed::yes(single)),
            None => Ok(Transformed::no(node)),
        })
        .map(|t| t.data)
    }

    fn name(&self) -> &str {
        "brook_single_phase_user_aggregates"
    }

    fn schema_check(&self) -> bool {
        true
    }
}

/// The one-phase aggregation replacing `node`, when it is the final half of a pair over an
/// aggregate that cannot merge partial states.
fn one_phase(node: &Arc<dyn ExecutionPlan>) -> Result<Option<Arc<dyn ExecutionPlan>>> {
    let Some(last) = node.downcast_ref::<AggregateExec>() else {
        return Ok(None);
    };
    if !matches!(
        last.mode(),
        AggregateMode::Final | AggregateMode::FinalPartitioned
    ) || !last.aggr_expr().iter().any(|a| super::is_user_aggregate(a))
    {
        return Ok(None);
    }
    let Some(partial) = partial_below(last.input()) else {
        return Ok(None);
    };
    let input = partial.input().clone();
    // Any order will do: a call with ORDER BY sorts its rows itself (`ordered`).
    let gathered: Arc<dyn ExecutionPlan> = if input.output_partitioning().partition_count() <= 1 {
        input
    } else {
        Arc::new(CoalescePartitionsExec::new(input))
    };
    let single = AggregateExec::try_new(
        AggregateMode::Single,
        partial.group_expr().clone(),
        partial.aggr_expr().to_vec(),
        partial.filter_expr().to_vec(),
        gathered,
        partial.input_schema(),
    )?;
    // Keep what the plan above was built on: the final aggregation's partitioning (a
    // partitioned join may read it) and its order.
    let mut out: Arc<dyn ExecutionPlan> = Arc::new(single);
    let partitioning = last.properties().output_partitioning();
    if partitioning.partition_count() > 1 {
        out = Arc::new(RepartitionExec::try_new(out, partitioning.clone())?);
    }
    if let Some(order) = node.output_ordering() {
        if out.output_ordering() != Some(order) {
            out = Arc::new(SortExec::new(order.clone(), out).with_preserve_partitioning(true));
        }
    }
    Ok(Some(out))
}

/// The partial aggregation feeding a final one, through the exchanges between them.
fn partial_below(plan: &Arc<dyn ExecutionPlan>) -> Option<&AggregateExec> {
    if let Some(a) = plan.downcast_ref::<AggregateExec>() {
        return (*a.mode() == AggregateMode::Partial).then_some(a);
    }
    let exchange = plan.is::<RepartitionExec>()
        || plan.is::<CoalescePartitionsExec>()
        || plan.is::<SortPreservingMergeExec>();
    match plan.children().as_slice() {
        [child] if exchange => partial_below(child),
        _ => None,
    }
}
