//! Cancellation inside DataFusion plans: every leaf of an ad-hoc plan is wrapped in a
//! [`CancellableExec`] that ends its stream with 57014 once the statement's token is
//! cancelled (a CancelRequest or `statement_timeout`).
//!
//! The wire layer answers a cancelled client at once, but the computation itself only
//! stops where it next asks its inputs for a batch: DataFusion's operators (a nested-loop
//! join, say) can compute for a long time inside one poll without yielding. Every operator
//! loop pulls from the leaves, so a check where the leaves hand out batches stops any plan
//! within one input batch's worth of work. Written here because DataFusion has no
//! cancellation hook of its own (its `CooperativeExec` only yields to the scheduler).
//!
//! The statement's token reaches the plan through the session's configuration
//! ([`StatementCancel`], set per statement), read when the plan is executed. The root of
//! the plan and the inputs of operators that poll them from tasks of their own
//! (repartitioning, merging partitions) are wrapped too: each wrapper makes its token the
//! one [`crate::exec::interrupt::check`] reads while it polls, for operators that compute
//! long inside one poll.

use brook_common::BrookError;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::common::config::ConfigOptions;
use datafusion::common::tree_node::{Transformed, TreeNode, TreeNodeRecursion};
use datafusion::error::{DataFusionError, Result};
use datafusion::execution::{RecordBatchStream, SendableRecordBatchStream, TaskContext};
use datafusion::physical_optimizer::PhysicalOptimizerRule;
use datafusion::physical_plan::{
    DisplayAs, DisplayFormatType, ExecutionPlan, PhysicalExpr, PlanProperties,
};
use futures::Stream;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use tokio_util::sync::CancellationToken;

/// The running statement's cancellation token, as a session configuration extension. A
/// cursor's plan outlives the DECLARE that executed it and computes while each FETCH
/// reads it: the FETCH puts its own token in ([`StatementCancel::replace`]), so a
/// cancelled FETCH stops the computation it drives, wherever the plan reads the token.
#[derive(Debug, Clone)]
pub struct StatementCancel(Arc<std::sync::Mutex<CancellationToken>>);

impl StatementCancel {
    /// The cancellation of a statement with `token`.
    pub fn new(token: CancellationToken) -> Self {
        StatementCancel(Arc::new(std::sync::Mutex::new(token)))
    }

    /// The token in force now.
    pub fn token(&self) -> CancellationToken {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Put the token of the statement that now drives the plan in.
    pub fn replace(&self, token: CancellationToken) {
        *self.0.lock().unwrap_or_else(|p| p.into_inner()) = token;
    }
}

/// The same token among the configuration options a plan's expressions are given when it
/// is planned (`ScalarFunctionArgs::config_options`): a function that computes for long
/// inside one call (a JavaScript function) stops when its statement is cancelled.
#[derive(Debug, Clone, Default)]
pub struct StatementInterrupt(pub Option<StatementCancel>);

impl datafusion::config::ExtensionOptions for StatementInterrupt {
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
    fn as_any_mut(&mut self) -> &mut dyn std::any::Any {
        self
    }
    fn cloned(&self) -> Box<dyn datafusion::config::ExtensionOptions> {
        Box::new(self.clone())
    }
    fn set(&mut self, key: &str, _value: &str) -> Result<()> {
        Err(DataFusionError::Configuration(format!(
            "{key} is Brook's own and cannot be set"
        )))
    }
    fn entries(&self) -> Vec<datafusion::config::ConfigEntry> {
        vec![]
    }
}

impl datafusion::config::ConfigExtension for StatementInterrupt {
    const PREFIX: &'static str = "brook_statement";
}

/// Physical optimizer rule (runs last): wraps every leaf, the root and the inputs of
/// operators that poll them from spawned tasks in a [`CancellableExec`].
#[derive(Debug, Default)]
pub struct CancellableLeaves;

impl PhysicalOptimizerRule for CancellableLeaves {
    fn optimize(
        &self,
        plan: Arc<dyn ExecutionPlan>,
        _config: &ConfigOptions,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let plan = plan
            .transform_up(|node| {
                if node.children().is_empty() {
                    Ok(Transformed::new(
                        wrapped(node),
                        true,
                        TreeNodeRecursion::Continue,
                    ))
                } else if polls_inputs_from_tasks(node.as_ref()) {
                    let children = node.children().into_iter().cloned().map(wrapped).collect();
                    Ok(Transformed::yes(
                        datafusion::physical_plan::execution_plan::replace_children_if_necessary(
                            node, children,
                        )?,
                    ))
                } else {
                    Ok(Transformed::no(node))
                }
            })?
            .data;
        Ok(wrapped(plan))
    }

    fn name(&self) -> &str {
        "brook_cancellable_leaves"
    }

    fn schema_check(&self) -> bool {
        true
    }
}

/// `node` in a [`CancellableExec`] (unless it is one).
fn wrapped(node: Arc<dyn ExecutionPlan>) -> Arc<dyn ExecutionPlan> {
    if node.downcast_ref::<CancellableExec>().is_some() {
        node
    } else {
        Arc::new(CancellableExec::new(node))
    }
}

/// DataFusion's operators that poll their inputs from tokio tasks of their own: the
/// computation below them runs outside the polls of the operators above.
fn polls_inputs_from_tasks(node: &dyn ExecutionPlan) -> bool {
    matches!(
        node.name(),
        "RepartitionExec" | "CoalescePartitionsExec" | "SortPreservingMergeExec"
    )
}

/// A stream ended with 57014 once the statement is cancelled, whose token
/// [`crate::exec::interrupt::check`] reads while it is polled.
#[derive(Debug)]
pub struct CancellableExec {
    input: Arc<dyn ExecutionPlan>,
    properties: Arc<PlanProperties>,
}

impl CancellableExec {
    /// Wrap `input`.
    pub fn new(input: Arc<dyn ExecutionPlan>) -> Self {
        let properties = input.properties().clone();
        CancellableExec { input, properties }
    }
}

impl DisplayAs for CancellableExec {
    fn fmt_as(&self, _t: DisplayFormatType, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "CancellableExec")
    }
}

impl ExecutionPlan for CancellableExec {
    fn name(&self) -> &str {
        "CancellableExec"
    }

    fn properties(&self) -> &Arc<PlanProperties> {
        &self.properties
    }

    fn maintains_input_order(&self) -> Vec<bool> {
        vec![true]
    }

    fn children(&self) -> Vec<&Arc<dyn ExecutionPlan>> {
        vec![&self.input]
    }

    fn apply_expressions(
        &self,
        _f: &mut dyn FnMut(&Arc<dyn PhysicalExpr>) -> Result<TreeNodeRecursion>,
    ) -> Result<TreeNodeRecursion> {
        Ok(TreeNodeRecursion::Continue)
    }

    fn with_new_children(
        self: Arc<Self>,
        mut children: Vec<Arc<dyn ExecutionPlan>>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        match (children.pop(), children.is_empty()) {
            (Some(input), true) => Ok(Arc::new(CancellableExec::new(input))),
            _ => Err(DataFusionError::Internal(
                "CancellableExec takes one child".into(),
            )),
        }
    }

    fn execute(
        &self,
        partition: usize,
        context: Arc<TaskContext>,
    ) -> Result<SendableRecordBatchStream> {
        let cancel = context
            .session_config()
            .get_extension::<StatementCancel>()
            .map(|c| c.as_ref().clone());
        let input = self.input.execute(partition, context)?;
        Ok(match cancel {
            Some(cancel) => Box::pin(CancellableStream { input, cancel }),
            None => input,
        })
    }
}

/// The stream of a [`CancellableExec`].
struct CancellableStream {
    input: SendableRecordBatchStream,
    cancel: StatementCancel,
}

impl Stream for CancellableStream {
    type Item = Result<RecordBatch>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let token = self.cancel.token();
        if token.is_cancelled() {
            return Poll::Ready(Some(Err(DataFusionError::External(Box::new(
                BrookError::Canceled,
            )))));
        }
        let _scope = crate::exec::interrupt::enter(&self.cancel);
        self.input.as_mut().poll_next(cx)
    }
}

impl RecordBatchStream for CancellableStream {
    fn schema(&self) -> SchemaRef {
        self.input.schema()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::prelude::{SessionConfig, SessionContext};
    use futures::StreamExt;

    /// A plan with a cancelled token stops at its next input batch; without a token (or
    /// before the cancel) it runs as usual.
    #[tokio::test]
    async fn a_cancelled_statement_stops_at_the_next_batch() {
        let token = CancellationToken::new();
        let config = SessionConfig::new()
            .with_batch_size(16)
            .with_extension(Arc::new(StatementCancel::new(token.clone())));
        let ctx = SessionContext::new_with_config(config);
        let state = ctx.state();
        let plan = state
            .create_physical_plan(
                &ctx.sql("SELECT x FROM generate_series(1, 1000) g(x)")
                    .await
                    .unwrap()
                    .into_optimized_plan()
                    .unwrap(),
            )
            .await
            .unwrap();
        let plan = CancellableLeaves
            .optimize(plan, &ConfigOptions::default())
            .unwrap();
        let mut stream = datafusion::physical_plan::execute_stream(plan, ctx.task_ctx()).unwrap();
        assert!(stream.next().await.unwrap().is_ok());
        token.cancel();
        let err = stream.next().await.unwrap().unwrap_err();
        assert_eq!(BrookError::from(err).sqlstate(), "57014");
    }
}
