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
//! ([`StatementCancel`], set per statement), read when the plan is executed.

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

/// The running statement's cancellation token, as a session configuration extension.
#[derive(Debug, Clone)]
pub struct StatementCancel(pub CancellationToken);

/// The same token among the configuration options a plan's expressions are given when it
/// is planned (`ScalarFunctionArgs::config_options`): a function that computes for long
/// inside one call (a JavaScript function) stops when its statement is cancelled.
#[derive(Debug, Clone, Default)]
pub struct StatementInterrupt(pub Option<CancellationToken>);

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

/// Physical optimizer rule (runs last): wraps every leaf in a [`CancellableExec`].
#[derive(Debug, Default)]
pub struct CancellableLeaves;

impl PhysicalOptimizerRule for CancellableLeaves {
    fn optimize(
        &self,
        plan: Arc<dyn ExecutionPlan>,
        _config: &ConfigOptions,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        plan.transform_up(|node| {
            if node.children().is_empty() {
                Ok(Transformed::new(
                    Arc::new(CancellableExec::new(node)) as Arc<dyn ExecutionPlan>,
                    true,
                    TreeNodeRecursion::Continue,
                ))
            } else {
                Ok(Transformed::no(node))
            }
        })
        .map(|t| t.data)
    }

    fn name(&self) -> &str {
        "brook_cancellable_leaves"
    }

    fn schema_check(&self) -> bool {
        true
    }
}

/// A leaf's stream, ended with 57014 once the statement is cancelled.
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
        let token = context
            .session_config()
            .get_extension::<StatementCancel>()
            .map(|c| c.0.clone());
        let input = self.input.execute(partition, context)?;
        Ok(match token {
            Some(token) => Box::pin(CancellableStream { input, token }),
            None => input,
        })
    }
}

/// The stream of a [`CancellableExec`].
struct CancellableStream {
    input: SendableRecordBatchStream,
    token: CancellationToken,
}

impl Stream for CancellableStream {
    type Item = Result<RecordBatch>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        if self.token.is_cancelled() {
            return Poll::Ready(Some(Err(DataFusionError::External(Box::new(
                BrookError::Canceled,
            )))));
        }
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
            .with_extension(Arc::new(StatementCancel(token.clone())));
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
