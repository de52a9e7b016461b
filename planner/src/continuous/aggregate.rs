//! GROUP BY: incremental aggregates, emitted on update or when a window closes.

use super::*;
use brook_common::Result;
use brook_operators::aggregate::{AggregateCall, AggregateNode, WindowClose};
use brook_operators::graph::Endpoint;
use datafusion::arrow::datatypes::{DataType, SchemaRef};
use datafusion::logical_expr::physical_planning_context::PhysicalPlanningContext;
use datafusion::logical_expr::Expr;
use datafusion::physical_expr::aggregate::LoweredAggregateBuilder;
use datafusion::physical_expr::expressions::Column;
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
        // The watermark closes a window only when its end is computed from the event time
        // (a window over another timestamp column may get rows after the watermark passed
        // its end) and over an input that never retracts (a retraction for a closed window
        // would be lost). Other windows stay open, as over a table.
        let on_event_time = end_key.is_some_and(|k| {
            group_exprs[k]
                .downcast_ref::<Column>()
                .is_some_and(|c| self.times_of(input).window_ends.contains(&c.index()))
        });
        if end_key.is_some() && self.options.emit_on_window_close {
            if self.updating(input) {
                return Err(refuse(
                    "EMIT ON WINDOW CLOSE over windows of an updating input (a row that changes \
                     after its window closed could not be taken back)",
                ));
            }
            if !on_event_time {
                return Err(refuse(
                    "EMIT ON WINDOW CLOSE over windows of a column other than the stream's \
                     WATERMARK FOR column (the watermark says nothing about when such a \
                     window is complete)",
                ));
            }
        }
        let end_key = end_key.filter(|_| on_event_time && !self.updating(input));
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
        // A closed window gets no more changes: its end is the output's event time, and a
        // window end for an aggregate over this one.
        let times = EventTimes {
            event: end_key,
            window_ends: end_key.into_iter().collect(),
            floors: Vec::new(),
        };
        Ok(self.add_with_times(Arc::new(node), vec![input], times))
    }
}
