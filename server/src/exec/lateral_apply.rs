//! The physical plan of a [`LateralApply`] (see `brook_planner::lateral_apply`): a LATERAL
//! subquery planned and run once per distinct combination of the left columns it reads.
//!
//! Per left batch: the rows are grouped by the values of the referenced columns; for each
//! group the subquery, with those values as constants, is optimized and planned as any
//! query (so a subquery DataFusion could not decorrelate is, once bound, an ordinary
//! uncorrelated plan) and collected; then every left row is paired with its group's rows,
//! the ON condition applied, and a left join's rows without a match padded with NULLs. The
//! output keeps the left rows' order. Memory: one left batch's subquery results at a time,
//! reserved from the query's pool (53200 past `--memory-limit`). Cancellation: the
//! subqueries run with the statement's task context, so its token stops them as any plan.

use brook_common::BrookError;
use brook_planner::lateral_apply::{ApplyKind, LateralApply};
use datafusion::arrow::array::{
    new_null_array, Array, ArrayRef, BooleanArray, RecordBatchOptions, UInt32Array,
};
use datafusion::arrow::compute::{cast, concat, concat_batches, take};
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::catalog::Session;
use datafusion::common::cast::as_boolean_array;
use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::common::ScalarValue;
use datafusion::error::{DataFusionError, Result};
use datafusion::execution::context::SessionState;
use datafusion::execution::memory_pool::{MemoryConsumer, MemoryReservation};
use datafusion::execution::{SendableRecordBatchStream, TaskContext};
use datafusion::logical_expr::physical_planning_context::PhysicalPlanningContext;
use datafusion::logical_expr::{JoinType, LogicalPlan, UserDefinedLogicalNode};
use datafusion::physical_expr::EquivalenceProperties;
use datafusion::physical_plan::execution_plan::{Boundedness, EmissionType};
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::{
    collect, DisplayAs, DisplayFormatType, ExecutionPlan, PhysicalExpr, PlanProperties,
};
use datafusion::physical_planner::{ExtensionPlanner, PhysicalPlanner};
use futures::StreamExt;
use std::collections::HashMap;
use std::sync::Arc;

/// Plans a [`LateralApply`] as a [`LateralApplyExec`].
#[derive(Debug)]
pub struct LateralApplyExtension;

#[async_trait::async_trait]
impl ExtensionPlanner for LateralApplyExtension {
    async fn plan_extension(
        &self,
        planner: &dyn PhysicalPlanner,
        node: &dyn UserDefinedLogicalNode,
        _logical_inputs: &[&LogicalPlan],
        physical_inputs: &[Arc<dyn ExecutionPlan>],
        state: &dyn Session,
        planning: &PhysicalPlanningContext,
    ) -> Result<Option<Arc<dyn ExecutionPlan>>> {
        let Some(apply) = node.as_any().downcast_ref::<LateralApply>() else {
            return Ok(None);
        };
        let [left] = physical_inputs else {
            return Err(DataFusionError::Internal(
                "LATERAL apply takes one input".to_string(),
            ));
        };
        let Some(session) = state.as_any().downcast_ref::<SessionState>() else {
            return Err(DataFusionError::Internal(
                "LATERAL apply planned outside a session".to_string(),
            ));
        };
        let left_schema = apply.left.schema();
        let outer = apply
            .outer
            .iter()
            .map(|c| left_schema.index_of_column(c))
            .collect::<Result<Vec<_>>>()?;
        let filter = match &apply.filter {
            Some(f) => Some(planner.create_physical_expr(f, &apply.schema, state, planning)?),
            None => None,
        };
        Ok(Some(Arc::new(LateralApplyExec::new(
            Arc::new(apply.clone()),
            outer,
            filter,
            left.clone(),
            session.clone(),
        ))))
    }
}

/// Each row of `left` with the rows of its subquery.
#[derive(Debug)]
pub struct LateralApplyExec {
    apply: Arc<LateralApply>,
    /// Positions in the left schema of the columns the subquery reads.
    outer: Vec<usize>,
    filter: Option<Arc<dyn PhysicalExpr>>,
    left: Arc<dyn ExecutionPlan>,
    /// The session the statement was planned in; each bound subquery is planned in it.
    session: SessionState,
    schema: SchemaRef,
    properties: Arc<PlanProperties>,
}

impl LateralApplyExec {
    fn new(
        apply: Arc<LateralApply>,
        outer: Vec<usize>,
        filter: Option<Arc<dyn PhysicalExpr>>,
        left: Arc<dyn ExecutionPlan>,
        session: SessionState,
    ) -> Self {
        let schema: SchemaRef = Arc::new(apply.schema.as_arrow().clone());
        let properties = Arc::new(PlanProperties::new(
            EquivalenceProperties::new(schema.clone()),
            left.properties().partitioning.clone(),
            EmissionType::Incremental,
            Boundedness::Bounded,
        ));
        LateralApplyExec {
            apply,
            outer,
            filter,
            left,
            session,
            schema,
            properties,
        }
    }
}

impl DisplayAs for LateralApplyExec {
    fn fmt_as(&self, _t: DisplayFormatType, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let outer: Vec<String> = self.apply.outer.iter().map(|c| c.flat_name()).collect();
        write!(
            f,
            "LateralApplyExec: {:?} per ({})",
            self.apply.kind,
            outer.join(", ")
        )
    }
}

impl ExecutionPlan for LateralApplyExec {
    fn name(&self) -> &str {
        "LateralApplyExec"
    }

    fn properties(&self) -> &Arc<PlanProperties> {
        &self.properties
    }

    // The ON condition is over the output's columns, not the input's.
    fn apply_expressions(
        &self,
        _f: &mut dyn FnMut(&Arc<dyn PhysicalExpr>) -> Result<TreeNodeRecursion>,
    ) -> Result<TreeNodeRecursion> {
        Ok(TreeNodeRecursion::Continue)
    }

    fn children(&self) -> Vec<&Arc<dyn ExecutionPlan>> {
        vec![&self.left]
    }

    fn with_new_children(
        self: Arc<Self>,
        children: Vec<Arc<dyn ExecutionPlan>>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let [left]: [Arc<dyn ExecutionPlan>; 1] = children
            .try_into()
            .map_err(|_| DataFusionError::Internal("LATERAL apply takes one input".to_string()))?;
        Ok(Arc::new(LateralApplyExec::new(
            self.apply.clone(),
            self.outer.clone(),
            self.filter.clone(),
            left,
            self.session.clone(),
        )))
    }

    fn execute(
        &self,
        partition: usize,
        context: Arc<TaskContext>,
    ) -> Result<SendableRecordBatchStream> {
        let input = self.left.execute(partition, context.clone())?;
        let reservation =
            MemoryConsumer::new("LATERAL subquery results").register(context.memory_pool());
        let run = Arc::new(Run {
            apply: self.apply.clone(),
            outer: self.outer.clone(),
            filter: self.filter.clone(),
            session: self.session.clone(),
            schema: self.schema.clone(),
            context,
        });
        let stream = futures::stream::try_unfold(
            (input, reservation),
            move |(mut input, mut reservation)| {
                let run = run.clone();
                async move {
                    let Some(batch) = input.next().await else {
                        return Ok(None);
                    };
                    let out = run.batch(&batch?, &mut reservation).await;
                    reservation.free();
                    Ok(Some((out?, (input, reservation))))
                }
            },
        );
        Ok(Box::pin(RecordBatchStreamAdapter::new(
            self.schema.clone(),
            stream.boxed(),
        )))
    }
}

/// What one execution needs to bind and run the subquery.
struct Run {
    apply: Arc<LateralApply>,
    outer: Vec<usize>,
    filter: Option<Arc<dyn PhysicalExpr>>,
    session: SessionState,
    schema: SchemaRef,
    context: Arc<TaskContext>,
}

impl Run {
    /// The subquery's rows for one combination of the left columns' values, cast to the
    /// types the join planned for them.
    async fn subquery(&self, values: &[ScalarValue]) -> Result<RecordBatch> {
        let bound = self.apply.bind(values)?;
        let plan = self.session.create_physical_plan(&bound).await?;
        let batches = collect(plan, self.context.clone()).await?;
        if self.apply.kind == ApplyKind::Exists {
            // Only whether there is a row counts (the plan asks for one at most).
            let rows = batches.iter().map(|b| b.num_rows()).sum();
            let options = RecordBatchOptions::new().with_row_count(Some(rows));
            let schema = Arc::new(datafusion::arrow::datatypes::Schema::empty());
            return Ok(RecordBatch::try_new_with_options(schema, vec![], &options)?);
        }
        let right = self.right_schema();
        let mut cast_batches = Vec::with_capacity(batches.len());
        for b in batches {
            let columns = b
                .columns()
                .iter()
                .zip(right.fields())
                .map(|(c, f)| {
                    if c.data_type() == f.data_type() {
                        Ok(c.clone())
                    } else {
                        cast(c, f.data_type()).map_err(DataFusionError::from)
                    }
                })
                .collect::<Result<Vec<ArrayRef>>>()?;
            let options = RecordBatchOptions::new().with_row_count(Some(b.num_rows()));
            cast_batches.push(RecordBatch::try_new_with_options(
                right.clone(),
                columns,
                &options,
            )?);
        }
        Ok(concat_batches(&right, &cast_batches)?)
    }

    fn right_schema(&self) -> SchemaRef {
        let left = self.apply.left.schema().fields().len();
        let fields: Vec<_> = self.schema.fields().iter().skip(left).cloned().collect();
        Arc::new(datafusion::arrow::datatypes::Schema::new(fields))
    }

    /// Every row of `left` with its subquery's rows, or its value.
    async fn batch(
        &self,
        left: &RecordBatch,
        reservation: &mut MemoryReservation,
    ) -> Result<RecordBatch> {
        // The subquery's rows per distinct combination of values, and each row's one.
        let mut runs: HashMap<Vec<ScalarValue>, usize> = HashMap::new();
        let mut results: Vec<RecordBatch> = Vec::new();
        let mut group_of_row = Vec::with_capacity(left.num_rows());
        for row in 0..left.num_rows() {
            let key = self
                .outer
                .iter()
                .map(|i| ScalarValue::try_from_array(left.column(*i), row))
                .collect::<Result<Vec<_>>>()?;
            let shared = if self.apply.per_row {
                None
            } else {
                runs.get(&key).copied()
            };
            let group = match shared {
                Some(g) => g,
                None => {
                    let rows = self.subquery(&key).await?;
                    reservation.try_grow(rows.get_array_memory_size())?;
                    results.push(rows);
                    runs.insert(key, results.len() - 1);
                    results.len() - 1
                }
            };
            group_of_row.push(group);
        }
        if self.apply.kind != ApplyKind::Join(JoinType::Inner)
            && self.apply.kind != ApplyKind::Join(JoinType::Left)
        {
            return self.values(left, &results, &group_of_row);
        }
        let right = concat_batches(&self.right_schema(), &results)?;
        // The pairings and the output they make are reserved before they are built (a
        // subquery of many rows for each of many left rows multiplies them).
        let pairings: usize = group_of_row.iter().map(|g| results[*g].num_rows()).sum();
        let row_bytes = |b: &RecordBatch| b.get_array_memory_size() / b.num_rows().max(1);
        reservation.try_grow(pairings * (row_bytes(left) + row_bytes(&right) + 16))?;
        let mut offsets = Vec::with_capacity(results.len());
        let mut at = 0u32;
        for r in &results {
            offsets.push(at);
            at += r.num_rows() as u32;
        }
        // Every pairing, in the left rows' order.
        let mut left_idx = Vec::new();
        let mut right_idx = Vec::new();
        for (row, g) in group_of_row.iter().enumerate() {
            for j in 0..results[*g].num_rows() as u32 {
                left_idx.push(row as u32);
                right_idx.push(Some(offsets[*g] + j));
            }
        }
        let (left_idx, right_idx) = match &self.filter {
            Some(filter) => {
                let candidates = self.pairs(left, &right, &left_idx, &right_idx)?;
                let keep = filter
                    .evaluate(&candidates)?
                    .into_array(candidates.num_rows())?;
                let keep = as_boolean_array(&keep)?;
                let kept = |i: usize| keep.is_valid(i) && keep.value(i);
                let l = (0..left_idx.len())
                    .filter(|i| kept(*i))
                    .map(|i| left_idx[i]);
                let r = (0..right_idx.len())
                    .filter(|i| kept(*i))
                    .map(|i| right_idx[i]);
                (l.collect(), r.collect())
            }
            None => (left_idx, right_idx),
        };
        let (left_idx, right_idx) = if self.apply.kind == ApplyKind::Join(JoinType::Left) {
            padded(left.num_rows(), &left_idx, &right_idx)
        } else {
            (left_idx, right_idx)
        };
        self.pairs(left, &right, &left_idx, &right_idx)
    }

    /// A scalar or EXISTS subquery's value beside each left row: one value per group (NULL
    /// for a scalar subquery without rows, 21000 for one with more than one).
    fn values(
        &self,
        left: &RecordBatch,
        results: &[RecordBatch],
        group_of_row: &[usize],
    ) -> Result<RecordBatch> {
        let right = self.right_schema();
        let value: ArrayRef = match self.apply.kind {
            ApplyKind::Exists => Arc::new(BooleanArray::from(
                results.iter().map(|r| r.num_rows() > 0).collect::<Vec<_>>(),
            )),
            _ => {
                let mut one_per_group = Vec::with_capacity(results.len());
                for r in results {
                    match r.num_rows() {
                        0 => one_per_group.push(new_null_array(right.field(0).data_type(), 1)),
                        1 => one_per_group.push(r.column(0).clone()),
                        _ => {
                            return Err(DataFusionError::External(Box::new(
                                BrookError::Cardinality(
                                    "more than one row returned by a subquery used as an \
                                     expression"
                                        .into(),
                                ),
                            )))
                        }
                    }
                }
                let refs: Vec<&dyn Array> = one_per_group.iter().map(|a| a.as_ref()).collect();
                if refs.is_empty() {
                    new_null_array(right.field(0).data_type(), 0)
                } else {
                    concat(&refs)?
                }
            }
        };
        let values = RecordBatch::try_new(right, vec![value])?;
        let rows: Vec<u32> = (0..left.num_rows() as u32).collect();
        let groups: Vec<Option<u32>> = group_of_row.iter().map(|g| Some(*g as u32)).collect();
        self.pairs(left, &values, &rows, &groups)
    }

    /// The batch of left rows `left_idx` beside right rows `right_idx` (NULLs where none).
    fn pairs(
        &self,
        left: &RecordBatch,
        right: &RecordBatch,
        left_idx: &[u32],
        right_idx: &[Option<u32>],
    ) -> Result<RecordBatch> {
        let l = UInt32Array::from(left_idx.to_vec());
        let r = UInt32Array::from(right_idx.to_vec());
        let mut columns = Vec::with_capacity(self.schema.fields().len());
        for c in left.columns() {
            columns.push(take(c, &l, None)?);
        }
        for c in right.columns() {
            columns.push(take(c, &r, None)?);
        }
        let options = RecordBatchOptions::new().with_row_count(Some(left_idx.len()));
        Ok(RecordBatch::try_new_with_options(
            self.schema.clone(),
            columns,
            &options,
        )?)
    }
}

/// A left join's pairings: each left row's kept pairings, or the row once with no right
/// row; `left_idx` is in row order.
fn padded(
    rows: usize,
    left_idx: &[u32],
    right_idx: &[Option<u32>],
) -> (Vec<u32>, Vec<Option<u32>>) {
    let mut l = Vec::with_capacity(left_idx.len().max(rows));
    let mut r = Vec::with_capacity(left_idx.len().max(rows));
    let mut next = 0;
    for row in 0..rows as u32 {
        let start = next;
        while next < left_idx.len() && left_idx[next] == row {
            l.push(row);
            r.push(right_idx[next]);
            next += 1;
        }
        if next == start {
            l.push(row);
            r.push(None);
        }
    }
    (l, r)
}

#[cfg(test)]
mod tests {
    use super::padded;

    #[test]
    fn a_left_join_pads_rows_without_pairings_once_in_row_order() {
        let (l, r) = padded(4, &[1, 1, 3], &[Some(0), Some(1), Some(2)]);
        assert_eq!(l, vec![0, 1, 1, 2, 3]);
        assert_eq!(r, vec![None, Some(0), Some(1), None, Some(2)]);
    }
}
