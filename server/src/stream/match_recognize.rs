//! `MATCH_RECOGNIZE` run ad hoc: the physical plan of a [`MatchRecognizePlan`] node (see
//! `brook_planner::match_recognize`). It reads its input's rows, orders them by the
//! partition and `ORDER BY` columns (ties in input order) and runs the continuous operator
//! over them, then decides the matches still open at the end. A continuous query puts the
//! same operator after its input's operators instead (`brook_planner::continuous`).

use crate::exec::cancellable::StatementCancel;
use brook_common::BrookError;
use brook_operators::change;
use brook_operators::match_recognize::{Interrupt, MatchRecognizeNode, MatchRecognizeOp};
use brook_planner::match_recognize::plan::MatchRecognizePlan;
use datafusion::arrow::array::{ArrayRef, UInt64Array};
use datafusion::arrow::compute::{concat_batches, lexsort_to_indices, take, SortColumn};
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::catalog::Session;
use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::error::{DataFusionError, Result as DfResult};
use datafusion::execution::context::QueryPlanner;
use datafusion::execution::{SendableRecordBatchStream, TaskContext};
use datafusion::logical_expr::physical_planning_context::PhysicalPlanningContext;
use datafusion::logical_expr::{LogicalPlan, UserDefinedLogicalNode};
use datafusion::physical_expr::EquivalenceProperties;
use datafusion::physical_plan::execution_plan::{Boundedness, EmissionType};
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::{
    DisplayAs, DisplayFormatType, Distribution, ExecutionPlan, Partitioning, PlanProperties,
};
use datafusion::physical_planner::{DefaultPhysicalPlanner, ExtensionPlanner, PhysicalPlanner};
use futures::{StreamExt, TryStreamExt};
use std::sync::Arc;

/// DataFusion's physical planner, with Brook's logical extension nodes.
#[derive(Debug, Default)]
pub struct BrookQueryPlanner;

#[async_trait::async_trait]
impl QueryPlanner for BrookQueryPlanner {
    async fn create_physical_plan(
        &self,
        plan: &LogicalPlan,
        state: &dyn Session,
    ) -> DfResult<Arc<dyn ExecutionPlan>> {
        DefaultPhysicalPlanner::with_extension_planners(vec![
            Arc::new(MatchRecognizeExtension),
            Arc::new(crate::exec::lateral_apply::LateralApplyExtension),
        ])
        .create_physical_plan(plan, state)
        .await
    }
}

/// Plans a [`MatchRecognizePlan`] as a [`MatchRecognizeExec`].
#[derive(Debug)]
struct MatchRecognizeExtension;

#[async_trait::async_trait]
impl ExtensionPlanner for MatchRecognizeExtension {
    async fn plan_extension(
        &self,
        _planner: &dyn PhysicalPlanner,
        node: &dyn UserDefinedLogicalNode,
        _logical_inputs: &[&LogicalPlan],
        physical_inputs: &[Arc<dyn ExecutionPlan>],
        _state: &dyn Session,
        _planning: &PhysicalPlanningContext,
    ) -> DfResult<Option<Arc<dyn ExecutionPlan>>> {
        let Some(mr) = node.as_any().downcast_ref::<MatchRecognizePlan>() else {
            return Ok(None);
        };
        let [input] = physical_inputs else {
            return Err(DataFusionError::Internal(
                "MATCH_RECOGNIZE takes one input".to_string(),
            ));
        };
        Ok(Some(Arc::new(MatchRecognizeExec::new(
            mr.node.clone(),
            input.clone(),
        ))))
    }
}

/// Row pattern matches over the rows of `input`.
#[derive(Debug)]
pub struct MatchRecognizeExec {
    node: Arc<MatchRecognizeNode>,
    input: Arc<dyn ExecutionPlan>,
    properties: Arc<PlanProperties>,
}

impl MatchRecognizeExec {
    fn new(node: Arc<MatchRecognizeNode>, input: Arc<dyn ExecutionPlan>) -> Self {
        let properties = Arc::new(PlanProperties::new(
            EquivalenceProperties::new(node.schema.clone()),
            Partitioning::UnknownPartitioning(1),
            EmissionType::Final,
            Boundedness::Bounded,
        ));
        MatchRecognizeExec {
            node,
            input,
            properties,
        }
    }
}

impl DisplayAs for MatchRecognizeExec {
    fn fmt_as(&self, _t: DisplayFormatType, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The node's own text names it `MatchRecognize: ...`.
        let text = self.node.to_string();
        let details = text.strip_prefix("MatchRecognize").unwrap_or(&text);
        write!(f, "MatchRecognizeExec{details}")
    }
}

impl ExecutionPlan for MatchRecognizeExec {
    fn name(&self) -> &str {
        "MatchRecognizeExec"
    }

    fn properties(&self) -> &Arc<PlanProperties> {
        &self.properties
    }

    fn children(&self) -> Vec<&Arc<dyn ExecutionPlan>> {
        vec![&self.input]
    }

    // The clause's expressions are over the node's own schemas, not the input's.
    fn apply_expressions(
        &self,
        _f: &mut dyn FnMut(
            &Arc<dyn datafusion::physical_plan::PhysicalExpr>,
        ) -> DfResult<TreeNodeRecursion>,
    ) -> DfResult<TreeNodeRecursion> {
        Ok(TreeNodeRecursion::Continue)
    }

    // Every row of a partition in one place.
    fn required_input_distribution(&self) -> Vec<Distribution> {
        vec![Distribution::SinglePartition]
    }

    fn with_new_children(
        self: Arc<Self>,
        mut children: Vec<Arc<dyn ExecutionPlan>>,
    ) -> DfResult<Arc<dyn ExecutionPlan>> {
        match (children.pop(), children.is_empty()) {
            (Some(input), true) => Ok(Arc::new(MatchRecognizeExec::new(self.node.clone(), input))),
            _ => Err(DataFusionError::Internal(
                "MatchRecognizeExec takes one child".into(),
            )),
        }
    }

    fn execute(
        &self,
        partition: usize,
        context: Arc<TaskContext>,
    ) -> DfResult<SendableRecordBatchStream> {
        let input = self.input.execute(partition, context.clone())?;
        let token = context
            .session_config()
            .get_extension::<StatementCancel>()
            .map(|c| c.token());
        let node = self.node.clone();
        let matched = async move {
            let batches: Vec<RecordBatch> = input.try_collect().await?;
            let rows = ordered(&node, &batches).map_err(DataFusionError::from)?;
            // Matching is CPU work that may take long (bounded per attempt, not per
            // query): it runs off the async workers and stops when the statement is
            // cancelled.
            let interrupt: Interrupt =
                Arc::new(move || token.as_ref().is_some_and(|t| t.is_cancelled()));
            let out = tokio::task::spawn_blocking(move || matches(&node, &rows, interrupt))
                .await
                .map_err(|e| {
                    DataFusionError::from(BrookError::internal(format!(
                        "row pattern matching: {e}"
                    )))
                })?
                .map_err(DataFusionError::from)?;
            Ok::<_, DataFusionError>(futures::stream::iter(out.into_iter().map(Ok)))
        };
        Ok(Box::pin(RecordBatchStreamAdapter::new(
            self.node.schema.clone(),
            futures::stream::once(matched).try_flatten().boxed(),
        )))
    }
}

/// The input's rows ordered by partition, then `ORDER BY`, then input position.
fn ordered(
    node: &MatchRecognizeNode,
    batches: &[RecordBatch],
) -> brook_common::Result<RecordBatch> {
    let all = concat_batches(&node.input_schema, batches)?;
    let position: ArrayRef = Arc::new(UInt64Array::from_iter_values(0..all.num_rows() as u64));
    let partition = node
        .partition
        .iter()
        .map(|&c| (c, brook_operators::match_recognize::ORDER));
    let order = node
        .order
        .iter()
        .copied()
        .zip(node.order_options.iter().copied());
    let mut keys: Vec<SortColumn> = partition
        .chain(order)
        .map(|(c, options)| SortColumn {
            values: all.column(c).clone(),
            options: Some(options),
        })
        .collect();
    keys.push(SortColumn {
        values: position,
        options: None,
    });
    let at = lexsort_to_indices(&keys, None)?;
    let cols = all
        .columns()
        .iter()
        .map(|c| Ok(take(c.as_ref(), &at, None)?))
        .collect::<brook_common::Result<Vec<_>>>()?;
    Ok(RecordBatch::try_new(all.schema(), cols)?)
}

/// Every match over `rows` (ordered); `interrupt` stops the matching (the statement was
/// cancelled).
fn matches(
    node: &MatchRecognizeNode,
    rows: &RecordBatch,
    interrupt: Interrupt,
) -> brook_common::Result<Vec<RecordBatch>> {
    let mut op = MatchRecognizeOp::new(node)?.with_interrupt(interrupt);
    // All rows in one push (they are in memory already): a match still open at a batch's
    // end is tried again from its start when the next batch arrives, so cutting the
    // input into batches would cost a long match once per batch.
    let mut out = change::push_inserts(&mut op, &node.input_schema, rows)?;
    out.extend(op.finish()?);
    Ok(out)
}
