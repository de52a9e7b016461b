//! GROUP BY: incremental aggregates, emitted on update or when a window closes.

use super::*;
use brook_common::Result;
use brook_operators::aggregate::{AggregateCall, AggregateNode, WindowClose};
use brook_operators::graph::Endpoint;
use datafusion::arrow::datatypes::{DataType, SchemaRef};
use datafusion::logical_expr::physical_planning_context::PhysicalPlanningContext;
use datafusion::logical_expr::Expr;
use datafusion::physical_expr::aggregate::LoweredAggregateBuilder;
use std::sync::Arc;

impl Builder<'_> {
    pub(super) fn aggregate(
        &mut self,
        a: &datafusion::logical_expr::Aggregate,
    ) -> Result<Endpoint> {
        if a.group_expr
            .iter()
            .any(|e| matches!(e, Expr::GroupingSet(_)))
        {
            return Err(refuse("GROUPING SETS, CUBE or ROLLUP"));
        }
        let input = self.build(&a.input)?;
        let in_schema = a.input.schema();
        let group_exprs = a
            .group_expr
            .iter()
            .map(|e| self.physical(e, in_schema))
            .collect::<Result<Vec<_>>>()?;
        let mut aggs = Vec::with_capacity(a.aggr_expr.len());
        for e in &a.aggr_expr {
            let lowered = LoweredAggregateBuilder::new(
                e,
                in_schema,
                in_schema.as_arrow(),
                self.state.execution_props(),
                &PhysicalPlanningContext::default(),
            )
            .build()?;
            aggs.push(AggregateCall {
                expr: lowered.aggregate,
                filter: lowered.filter,
            });
        }
        let schema: SchemaRef = Arc::new(a.schema.as_arrow().clone());
        // A key named window_end of timestamp type is the end of a TUMBLE/HOP window.
        let end_key = schema
            .fields()
            .iter()
            .take(group_exprs.len())
            .position(|f| {
                f.name() == "window_end" && matches!(f.data_type(), DataType::Timestamp(_, _))
            });
        // The watermark closes a window only over an input that never retracts: a
        // retraction for a closed window would be lost, so over an updating input every
        // window stays open. (A window's time is the stream's WATERMARK column: the window
        // rewrite refuses a time a subquery computes.)
        let closes = !self.updating(input);
        if end_key.is_some() && !closes && self.options.emit_on_window_close {
            return Err(refuse(
                "EMIT ON WINDOW CLOSE over windows of an updating input (a row that changes \
                 after its window closed could not be taken back)",
            ));
        }
        let end_key = end_key.filter(|_| closes);
        let window = end_key.map(|end_key| WindowClose {
            end_key,
            emit_on_close: self.options.emit_on_window_close,
        });
        self.windowed |= window.is_some();
        let node = AggregateNode {
            group_exprs,
            aggs,
            schema,
            input_updating: self.updating(input),
            window,
        };
        node.validate()?;
        Ok(self.add(Arc::new(node), vec![input], end_key))
    }
}
