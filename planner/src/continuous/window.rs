//! Window functions (running aggregates, LAG/LEAD, frames) and SESSION windows.

use super::*;
use brook_common::{brook_err, Result};
use brook_operators::graph::Endpoint;
use brook_operators::session_window::SessionBound;
use datafusion::logical_expr::physical_planning_context::PhysicalPlanningContext;
use datafusion::logical_expr::Expr;
use datafusion::physical_expr::expressions::Column;
use datafusion::physical_expr::PhysicalExpr;
use std::sync::Arc;

impl Builder<'_> {
    pub(super) fn over(&mut self, w: &datafusion::logical_expr::Window) -> Result<Endpoint> {
        if let Some(session) = self.session_window(w)? {
            return Ok(session);
        }
        let input = self.build(&w.input)?;
        let exprs = w
            .window_expr
            .iter()
            .map(|e| {
                Ok(datafusion::physical_planner::create_window_expr(
                    e,
                    w.input.schema(),
                    self.state.execution_props(),
                    &PhysicalPlanningContext::default(),
                )?)
            })
            .collect::<Result<Vec<_>>>()?;
        // A frame whose start moves needs an aggregate that retracts: refuse one that does
        // not now (as an ad hoc query is), not at the first row that reaches it.
        for e in &exprs {
            if let Some(sliding) =
                e.as_any()
                    .downcast_ref::<datafusion::physical_expr::window::SlidingAggregateWindowExpr>()
            {
                sliding.get_aggregate_expr().create_sliding_accumulator()?;
            }
        }
        let partition_by = exprs
            .first()
            .map(|e| e.partition_by().to_vec())
            .unwrap_or_default();
        let same = |a: &[Arc<dyn PhysicalExpr>], b: &[Arc<dyn PhysicalExpr>]| {
            a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.to_string() == y.to_string())
        };
        if exprs.iter().any(|e| !same(e.partition_by(), &partition_by)) {
            return Err(refuse(
                "window functions with different PARTITION BY in one SELECT",
            ));
        }
        // The input's columns come first, unchanged.
        let time = self.time_of(input);
        let bound = if self.updating(input) {
            None
        } else {
            final_rows(&exprs, time)
        };
        let node = brook_operators::over::OverNode {
            exprs,
            partition_by,
            input_schema: Arc::new(w.input.schema().as_arrow().clone()),
            schema: Arc::new(w.schema.as_arrow().clone()),
            shortcut: shortcut(&w.window_expr),
            bound,
        };
        Ok(self.add(Arc::new(node), vec![input], time))
    }

    /// `session_start`/`session_end` window functions (a `SESSION` table function) as the
    /// incremental SESSION operator; `None` for other window functions.
    pub(super) fn session_window(
        &mut self,
        w: &datafusion::logical_expr::Window,
    ) -> Result<Option<Endpoint>> {
        use crate::session_window::{gap_micros, session_bound};
        use brook_operators::session_window::SessionNode;
        use datafusion::logical_expr::expr::{WindowFunction, WindowFunctionDefinition};
        let mut calls: Vec<(SessionBound, &WindowFunction)> = Vec::new();
        for e in &w.window_expr {
            let e = match e {
                Expr::Alias(a) => a.expr.as_ref(),
                other => other,
            };
            let bound = match e {
                Expr::WindowFunction(f) => match &f.fun {
                    WindowFunctionDefinition::WindowUDF(u) => {
                        session_bound(u.name()).map(|b| (b, f.as_ref()))
                    }
                    _ => None,
                },
                _ => None,
            };
            if let Some(b) = bound {
                calls.push(b);
            }
        }
        let Some((_, first)) = calls.first() else {
            return Ok(None);
        };
        let p = &first.params;
        if calls.len() != w.window_expr.len()
            || calls.iter().any(|(_, f)| {
                f.params.args != p.args
                    || f.params.partition_by != p.partition_by
                    || f.params.order_by != p.order_by
            })
        {
            return Err(refuse(
                "SESSION windows combined with other window functions in one SELECT",
            ));
        }
        let (Some(time), [sort]) = (p.args.first(), p.order_by.as_slice()) else {
            return Err(brook_err!(Internal, "session function without time order"));
        };
        let gap = match p.args.get(1) {
            Some(Expr::Literal(v, _)) => gap_micros(v)?,
            _ => {
                return Err(brook_err!(
                    InvalidParameter,
                    "a session gap must be a constant interval"
                ))
            }
        };
        if &sort.expr != time || !sort.asc {
            return Err(brook_err!(
                Internal,
                "session function ordered by another column"
            ));
        }
        let input = self.build(&w.input)?;
        if self.updating(input) {
            return Err(refuse(
                "SESSION windows over a relation that changes (a table or an updating result)",
            ));
        }
        let in_schema = w.input.schema();
        let time = self.physical(time, in_schema)?;
        let on_time = time
            .downcast_ref::<Column>()
            .is_some_and(|c| Some(c.index()) == self.time_of(input));
        if !on_time {
            return Err(refuse(
                "SESSION windows over a column other than the stream's WATERMARK FOR column \
                 (sessions close when the watermark passes them)",
            ));
        }
        let keys = p
            .partition_by
            .iter()
            .map(|k| self.physical(k, in_schema))
            .collect::<Result<Vec<_>>>()?;
        let node = SessionNode {
            time,
            keys,
            gap,
            bounds: calls.iter().map(|(b, _)| *b).collect(),
            emit_on_close: self.options.emit_on_window_close,
            input_schema: Arc::new(in_schema.as_arrow().clone()),
            schema: Arc::new(w.schema.as_arrow().clone()),
        };
        // The operator itself honours EMIT ON WINDOW CLOSE.
        self.windowed = true;
        // A session's end (its last event time plus the gap) is a window end: a session
        // still to come ends after the watermark.
        let width = in_schema.fields().len();
        let times = EventTimes {
            event: self.time_of(input),
            window_ends: calls
                .iter()
                .enumerate()
                .filter(|(_, (b, _))| matches!(b, SessionBound::End))
                .map(|(i, _)| width + i)
                .collect(),
            floors: Vec::new(),
        };
        Ok(Some(self.add_with_times(
            Arc::new(node),
            vec![input],
            times,
        )))
    }
}

/// Which rows are final over an input whose rows never change: every row without ORDER BY
/// (a partition is in arrival order), the rows before the watermark when every function's
/// ORDER BY starts with the event time (`time`), ascending with NULLs last; `None` for any
/// other order (a row may still arrive before any row).
fn final_rows(
    exprs: &[Arc<dyn datafusion::physical_expr::window::WindowExpr>],
    time: Option<usize>,
) -> Option<brook_operators::over::Bound> {
    use brook_operators::over::Bound;
    if exprs.iter().all(|e| e.order_by().is_empty()) {
        return Some(Bound::Arrival);
    }
    let time = time?;
    let by_time = exprs.iter().all(|e| {
        e.order_by().first().is_some_and(|o| {
            !o.options.descending
                && !o.options.nulls_first
                && o.expr
                    .downcast_ref::<Column>()
                    .is_some_and(|c| c.index() == time)
        })
    });
    by_time.then_some(Bound::EventTime { time })
}

/// How the window functions' values for a row arriving after its partition's last row
/// follow from few rows, when they all do: `lag(x, k)` reads k rows back, an aggregate over
/// `ROWS BETWEEN n PRECEDING AND CURRENT ROW` (or `m PRECEDING`) n rows, and a running
/// `sum`, `count`, `min`, `max` (from `UNBOUNDED PRECEDING` to `CURRENT ROW`),
/// `row_number()` or `first_value` continues from the last row's value, `last_value` reads
/// the row (its peers under RANGE), `lead(x, k)` makes the last k rows' values change.
/// `None` for anything else (ranks, frames that reach later rows, `FILTER`, `DISTINCT`,
/// `IGNORE NULLS`): the operator then evaluates the whole partition when it changes.
fn shortcut(exprs: &[Expr]) -> Option<brook_operators::over::shortcut::Shortcut> {
    use brook_operators::over::shortcut::{Reach, Running, Shortcut};
    use datafusion::logical_expr::expr::{NullTreatment, WindowFunction, WindowFunctionDefinition};
    let mut reach = Vec::with_capacity(exprs.len());
    let mut strictly_after = false;
    for e in exprs {
        let e = match e {
            Expr::Alias(a) => a.expr.as_ref(),
            other => other,
        };
        let Expr::WindowFunction(f) = e else {
            return None;
        };
        let WindowFunction { fun, params } = f.as_ref();
        if params.filter.is_some()
            || params.distinct
            || matches!(params.null_treatment, Some(NullTreatment::IgnoreNulls))
        {
            return None;
        }
        reach.push(match fun {
            WindowFunctionDefinition::WindowUDF(u) if u.name() == "lag" => {
                match params.args.get(1) {
                    None => Reach::Rows(1),
                    Some(Expr::Literal(v, _)) => Reach::Rows(frame_rows(v)?),
                    Some(_) => return None,
                }
            }
            WindowFunctionDefinition::WindowUDF(u) if u.name() == "lead" => {
                match params.args.get(1) {
                    None => Reach::Ahead(1),
                    Some(Expr::Literal(v, _)) => Reach::Ahead(frame_rows(v)?),
                    Some(_) => return None,
                }
            }
            WindowFunctionDefinition::WindowUDF(u) if u.name() == "row_number" => {
                Reach::Running(Running::RowNumber)
            }
            WindowFunctionDefinition::WindowUDF(u)
                if matches!(u.name(), "first_value" | "last_value") =>
            {
                let running = match u.name() {
                    "first_value" => Reach::Running(Running::First),
                    _ => Reach::Rows(0),
                };
                let (r, peers) = frame_reach(params, Some(running))?;
                strictly_after |= peers;
                r
            }
            WindowFunctionDefinition::AggregateUDF(a) => {
                let running = match a.name() {
                    "sum" => Some(Running::Sum),
                    "count" => Some(Running::Count),
                    "min" => Some(Running::Min),
                    "max" => Some(Running::Max),
                    _ => None,
                };
                let (r, peers) = frame_reach(params, running.map(Reach::Running))?;
                strictly_after |= peers;
                r
            }
            _ => return None,
        });
    }
    Some(Shortcut {
        reach,
        strictly_after,
    })
}

/// A non-negative row count (`lag`'s offset, a frame's `n PRECEDING`).
fn frame_rows(v: &datafusion::scalar::ScalarValue) -> Option<usize> {
    use datafusion::scalar::ScalarValue;
    match v
        .cast_to(&datafusion::arrow::datatypes::DataType::Int64)
        .ok()?
    {
        ScalarValue::Int64(Some(n)) => usize::try_from(n).ok(),
        _ => None,
    }
}

/// How a function over its frame follows from few rows: from the partition's start to the
/// current row it is `running` (when the function has such a form), with peers under RANGE
/// or GROUPS (the `bool`: new rows must then sort strictly after the last); `n PRECEDING`
/// to the current row (or to `m PRECEDING`) under ROWS reads n rows back. `None` for any
/// other frame.
fn frame_reach(
    params: &datafusion::logical_expr::expr::WindowFunctionParams,
    running: Option<brook_operators::over::shortcut::Reach>,
) -> Option<(brook_operators::over::shortcut::Reach, bool)> {
    use brook_operators::over::shortcut::Reach;
    use datafusion::logical_expr::{WindowFrameBound, WindowFrameUnits};
    let frame = &params.window_frame;
    match (&frame.start_bound, &frame.end_bound) {
        (WindowFrameBound::Preceding(v), WindowFrameBound::CurrentRow) if v.is_null() => {
            let running = running?;
            match frame.units {
                WindowFrameUnits::Rows => Some((running, false)),
                // Peers share a value: without ORDER BY every row is a peer.
                _ if params.order_by.is_empty() => None,
                _ => Some((running, true)),
            }
        }
        (WindowFrameBound::Preceding(start), end) if frame.units == WindowFrameUnits::Rows => {
            match end {
                WindowFrameBound::CurrentRow => {}
                WindowFrameBound::Preceding(v) if frame_rows(v).is_some() => {}
                _ => return None,
            }
            Some((Reach::Rows(frame_rows(start)?), false))
        }
        _ => None,
    }
}
