//! What the watermark says about a node's output columns: which column is the event time,
//! and which hold window ends computed from it. Only a window whose end is computed from the
//! event time closes when the watermark passes it; a window over any other timestamp column
//! may still receive rows after the watermark passed its end, so it stays open (as a window
//! over a table does) and its answer equals the same query over a table.

use crate::window_start::WINDOW_START;
use datafusion::arrow::datatypes::{DataType, TimeUnit};
use datafusion::common::ScalarValue;
use datafusion::logical_expr::Operator;
use datafusion::physical_expr::expressions::{BinaryExpr, CastExpr, Column, Literal};
use datafusion::physical_expr::{PhysicalExpr, ScalarFunctionExpr};
use std::sync::Arc;

/// `e` as the column it is, also under a cast that only relabels its instants' zone (a
/// query's result in a session of another zone than UTC, `crate::session_time_zone`; in
/// such a session a timestamp without zone becomes an instant through `timezone`, not a
/// cast, so such a cast changes no value).
fn column_of(e: &Arc<dyn PhysicalExpr>) -> Option<&Column> {
    if let Some(c) = e.downcast_ref::<Column>() {
        return Some(c);
    }
    let cast = e.downcast_ref::<CastExpr>()?;
    match cast.cast_type() {
        DataType::Timestamp(TimeUnit::Microsecond, Some(_)) => cast.expr().downcast_ref::<Column>(),
        _ => None,
    }
}

/// The watermark's columns of one node's output.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(super) struct EventTimes {
    /// The event-time column: no row still to come (or, for a windowed aggregate, no change)
    /// has a value behind the watermark, except late rows. A stream's `WATERMARK FOR`
    /// column, kept through filters and projections, or a closing window's end.
    pub event: Option<usize>,
    /// Window ends computed from the event time (`brook_window_start(ts, stride) + d` with
    /// `d` at least the stride): every row still to come has a window end after the
    /// watermark.
    pub window_ends: Vec<usize>,
    /// The event time floored to a stride of microseconds (`brook_window_start(ts,
    /// stride)`), as the optimizer leaves it in a projection of its own when the window's
    /// start and end both use it.
    pub floors: Vec<(usize, i64)>,
}

impl EventTimes {
    /// Only an event-time column.
    pub fn event(event: Option<usize>) -> Self {
        Self {
            event,
            ..Self::default()
        }
    }

    /// The columns every one of `all` (a union's inputs) agrees on.
    pub fn common(all: &[EventTimes]) -> Self {
        let Some((first, rest)) = all.split_first() else {
            return Self::default();
        };
        Self {
            event: first
                .event
                .filter(|e| rest.iter().all(|t| t.event == Some(*e))),
            window_ends: first
                .window_ends
                .iter()
                .copied()
                .filter(|c| rest.iter().all(|t| t.window_ends.contains(c)))
                .collect(),
            floors: first
                .floors
                .iter()
                .copied()
                .filter(|f| rest.iter().all(|t| t.floors.contains(f)))
                .collect(),
        }
    }

    /// The columns of a projection computing `exprs` over an input with `self`.
    pub fn projected(&self, exprs: &[Arc<dyn PhysicalExpr>]) -> Self {
        let mut out = Self::default();
        for (i, e) in exprs.iter().enumerate() {
            if let Some(c) = column_of(e) {
                if out.event.is_none() && self.event == Some(c.index()) {
                    out.event = Some(i);
                }
                if self.window_ends.contains(&c.index()) {
                    out.window_ends.push(i);
                }
                if let Some(&(_, stride)) = self.floors.iter().find(|(f, _)| *f == c.index()) {
                    out.floors.push((i, stride));
                }
            } else if let Some(stride) = self.floor_stride(e) {
                out.floors.push((i, stride));
            } else if self.is_window_end(e) {
                out.window_ends.push(i);
            }
        }
        out
    }

    /// `brook_window_start(event time, stride)` or a floor column: the stride.
    fn floor_stride(&self, e: &Arc<dyn PhysicalExpr>) -> Option<i64> {
        if let Some(c) = e.downcast_ref::<Column>() {
            return self
                .floors
                .iter()
                .find(|(f, _)| *f == c.index())
                .map(|(_, s)| *s);
        }
        let f = e.downcast_ref::<ScalarFunctionExpr>()?;
        let [time, stride] = f.args() else {
            return None;
        };
        let on_event_time = time
            .downcast_ref::<Column>()
            .is_some_and(|c| self.event == Some(c.index()));
        if f.name() != WINDOW_START || !on_event_time {
            return None;
        }
        match stride
            .downcast_ref::<Literal>()?
            .value()
            .cast_to(&DataType::Int64)
        {
            Ok(ScalarValue::Int64(Some(s))) if s > 0 => Some(s),
            _ => None,
        }
    }

    /// `floor + d` with `d` at least the floor's stride: a window end. Rows still to come
    /// have an event time at or after the watermark, so their floor plus its stride is
    /// after it.
    fn is_window_end(&self, e: &Arc<dyn PhysicalExpr>) -> bool {
        let Some(b) = e.downcast_ref::<BinaryExpr>() else {
            return false;
        };
        if *b.op() != Operator::Plus {
            return false;
        }
        let Some(stride) = self.floor_stride(b.left()) else {
            return false;
        };
        match b.right().downcast_ref::<Literal>().map(|l| l.value()) {
            Some(ScalarValue::DurationMicrosecond(Some(d))) => *d >= stride,
            _ => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::window_start::window_start_function;
    use datafusion::arrow::datatypes::{Field, Schema, TimeUnit};
    use datafusion::config::ConfigOptions;
    use datafusion::physical_expr::expressions::{binary, col, lit};

    fn schema() -> Schema {
        Schema::new(vec![
            Field::new("ts", DataType::Timestamp(TimeUnit::Microsecond, None), true),
            Field::new("t2", DataType::Timestamp(TimeUnit::Microsecond, None), true),
        ])
    }

    fn floor(column: &str, stride: i32) -> Arc<dyn PhysicalExpr> {
        let schema = schema();
        let args = vec![col(column, &schema).unwrap(), lit(stride)];
        Arc::new(
            ScalarFunctionExpr::try_new(
                Arc::new(window_start_function()),
                args,
                &schema,
                Arc::new(ConfigOptions::default()),
            )
            .unwrap(),
        )
    }

    fn plus(e: Arc<dyn PhysicalExpr>, micros: i64) -> Arc<dyn PhysicalExpr> {
        let d = lit(ScalarValue::DurationMicrosecond(Some(micros)));
        binary(e, Operator::Plus, d, &schema()).unwrap()
    }

    #[test]
    fn a_window_end_from_the_event_time_is_known() {
        let input = EventTimes::event(Some(0));
        let exprs = vec![floor("ts", 60), plus(floor("ts", 60), 60)];
        let out = input.projected(&exprs);
        assert_eq!(out.event, None);
        assert_eq!(out.floors, vec![(0, 60)]);
        assert_eq!(out.window_ends, vec![1]);
    }

    #[test]
    fn a_window_end_through_a_floor_column_is_known() {
        // The optimizer's common subexpression: a projection of the floor, then the ends.
        let floored = EventTimes::event(Some(0)).projected(&[floor("ts", 60)]);
        let schema = Schema::new(vec![Field::new(
            "c",
            DataType::Timestamp(TimeUnit::Microsecond, None),
            true,
        )]);
        let c = col("c", &schema).unwrap();
        let ends = floored.projected(&[c.clone(), plus(c.clone(), 120), plus(c, 30)]);
        assert_eq!(ends.floors, vec![(0, 60)]);
        // HOP's last window ends a stride after the floor; an end before it is not an end.
        assert_eq!(ends.window_ends, vec![1]);
    }

    #[test]
    fn a_window_over_another_column_is_not_a_window_end() {
        let input = EventTimes::event(Some(0));
        let out = input.projected(&[floor("t2", 60), plus(floor("t2", 60), 60)]);
        assert_eq!(out, EventTimes::default());
        // Over an input without an event time (a table) neither.
        let out = EventTimes::default().projected(&[plus(floor("ts", 60), 60)]);
        assert_eq!(out, EventTimes::default());
    }

    #[test]
    fn a_union_keeps_what_all_inputs_agree_on() {
        let a = EventTimes {
            event: Some(0),
            window_ends: vec![1, 2],
            floors: vec![(3, 60)],
        };
        let b = EventTimes {
            event: Some(0),
            window_ends: vec![2],
            floors: vec![(3, 30)],
        };
        let common = EventTimes::common(&[a, b]);
        assert_eq!(common.event, Some(0));
        assert_eq!(common.window_ends, vec![2]);
        assert!(common.floors.is_empty());
    }
}
