//! GROUP BY with retraction: a changelog of each group's current aggregate values.
//!
//! Each group keeps one DataFusion `Accumulator` per aggregate: it can be evaluated at any
//! time without losing state, and freed on its own. A batch reaches them in one of two ways:
//! - over an append-only input, an aggregate with a DataFusion `GroupsAccumulator` (sum,
//!   count, avg, min, max, ...) is fed whole batches with a group index per row (no per-group
//!   work per batch); at the barrier its state for the groups touched in the round is merged
//!   into their accumulators, one merge per group and round. (A `GroupsAccumulator` alone
//!   will not do: it can only be read by emptying it, and frees no single group.)
//! - otherwise the batch is sorted by group (a counting sort, then one `take`) and each
//!   group's accumulator gets zero-copy slices of its rows: one `update_batch` /
//!   `retract_batch` call per group and batch, never per row.
//!
//! At the next barrier (the end of a transaction's input) or watermark, every group touched
//! since emits the delete of its previous output row and the insert of its new one, unless
//! the values did not change: a COPY of a million rows in many batches emits each group once,
//! not once per batch (which, for large values such as sketches, cost more than the
//! aggregation). A group whose rows were all retracted is deleted and its state freed. A
//! global aggregate (no GROUP BY) always has its one row, as `SELECT count(*) FROM empty` has
//! in SQL.
//!
//! Windowed grouping (a `window_end` key over event time): once the watermark passes a
//! window's end its state is freed and rows that still arrive for it are counted as late and
//! dropped. With `EMIT ON WINDOW CLOSE` nothing is emitted before that moment, and then only
//! the final insert: an append-only result.

mod kept_values;
mod op;
#[cfg(test)]
mod tests;

use crate::group_index::GroupIndex;
use crate::{NodeSpec, Operator};
use brook_common::{brook_err, Result};
use datafusion::arrow::datatypes::{DataType, SchemaRef};
use datafusion::logical_expr::Accumulator;
use datafusion::physical_expr::aggregate::AggregateFunctionExpr;
use datafusion::physical_expr::PhysicalExpr;
use op::AggregateOp;
use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

/// One aggregate call of the node.
#[derive(Debug, Clone)]
pub struct AggregateCall {
    /// The aggregate function with its argument expressions.
    pub expr: Arc<AggregateFunctionExpr>,
    /// `FILTER (WHERE ...)`.
    pub filter: Option<Arc<dyn PhysicalExpr>>,
}

/// Windowed grouping: which group key is the window's end (event-time microseconds).
#[derive(Debug, Clone, Copy)]
pub struct WindowClose {
    /// Index of the `window_end` key among the group expressions.
    pub end_key: usize,
    /// `EMIT ON WINDOW CLOSE`: emit each window once, when the watermark passes its end.
    pub emit_on_close: bool,
}

/// Plan node of a grouped aggregation.
#[derive(Debug)]
pub struct AggregateNode {
    /// Group key expressions over the input schema.
    pub group_exprs: Vec<Arc<dyn PhysicalExpr>>,
    /// The aggregates.
    pub aggs: Vec<AggregateCall>,
    /// Output schema: group keys, then aggregates.
    pub schema: SchemaRef,
    /// Whether the input retracts (accumulators must then support retraction).
    pub input_updating: bool,
    /// Windowed grouping, when a key is a window end over event time.
    pub window: Option<WindowClose>,
}

impl AggregateNode {
    /// Check that every aggregate can run on this input (retraction where the input retracts).
    pub fn validate(&self) -> Result<()> {
        for a in &self.aggs {
            self.accumulator(a)?;
        }
        Ok(())
    }

    /// Whether `a` is fed through a vectorised `GroupsAccumulator` (append-only input only:
    /// those cannot retract).
    fn vectorised(&self, a: &AggregateCall) -> bool {
        !self.input_updating && a.expr.groups_accumulator_supported()
    }

    fn accumulator(&self, a: &AggregateCall) -> Result<Box<dyn Accumulator>> {
        if !self.input_updating {
            return Ok(a.expr.create_accumulator()?);
        }
        // min/max/first/last have sliding accumulators that retract only in arrival order
        // (for window frames); a changelog retracts any row, so they would be wrong.
        let name = a.expr.fun().name().to_ascii_lowercase();
        let order_only = ["min", "max", "first_value", "last_value", "nth_value"];
        // With its own ORDER BY (`first_value(v ORDER BY ts)`, and DISTINCT ON's), the
        // value does not depend on arrival: it is re-aggregated from the group's values.
        if order_only[2..].contains(&name.as_str()) && !a.expr.order_bys().is_empty() {
            return Ok(Box::new(kept_values::KeptValues::new(a.expr.clone())));
        }
        if order_only[2..].contains(&name.as_str()) {
            // "First" and "last" follow arrival order, which a retraction does not undo.
            return Err(brook_err!(
                Unsupported,
                "{name}() over an updating input in a continuous query (first and last \
                 follow arrival order, which retractions do not undo)"
            ));
        }
        // A floating-point state has an inverse on paper only: adding 1 to 1e16 rounds
        // the 1 away, so retracting the 1e16 leaves 0, and a retracted Infinity leaves NaN
        // (a view's sum drifting from the query's, and from its own value after a restart
        // rebuilt it). Those aggregates re-aggregate the group's kept values instead.
        let float_state = a
            .expr
            .state_fields()?
            .iter()
            .any(|f| f.data_type().is_floating());
        // `array_agg`'s sliding accumulator (also under `json_agg`, `jsonb_agg` and `x IN
        // (subquery)` in a select list) drops its first values, whichever row was retracted.
        let first_in_first_out = name == "array_agg";
        let invertible =
            !order_only.contains(&name.as_str()) && !float_state && !first_in_first_out;
        match a.expr.create_sliding_accumulator() {
            Ok(acc) if invertible && acc.supports_retract_batch() => Ok(acc),
            // No inverse: the group keeps its values and re-aggregates (min/max from the
            // ends of the ordered values).
            _ => Ok(Box::new(kept_values::KeptValues::new(a.expr.clone()))),
        }
    }
}

impl fmt::Display for AggregateNode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let keys: Vec<String> = self.group_exprs.iter().map(|e| e.to_string()).collect();
        let aggs: Vec<String> = self
            .aggs
            .iter()
            .map(|a| a.expr.name().to_string())
            .collect();
        write!(
            f,
            "Aggregate: keys=[{}] aggs=[{}] state=per-group accumulators{}",
            keys.join(", "),
            aggs.join(", "),
            if self.input_updating {
                " (retracting)"
            } else {
                ""
            }
        )?;
        let vectorised: Vec<&str> = self
            .aggs
            .iter()
            .filter(|a| self.vectorised(a))
            .map(|a| a.expr.name())
            .collect();
        if !vectorised.is_empty() {
            write!(f, " vectorised=[{}]", vectorised.join(", "))?;
        }
        if let Some(w) = &self.window {
            write!(
                f,
                " window_end=key#{} emit={}",
                w.end_key,
                if w.emit_on_close {
                    "on window close"
                } else {
                    "on update"
                }
            )?;
        }
        Ok(())
    }
}

impl NodeSpec for AggregateNode {
    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }
    fn updating(&self) -> bool {
        // Emit-on-close emits final rows only; a pure GROUP BY (DISTINCT) over appends only
        // ever adds groups.
        if self.window.is_some_and(|w| w.emit_on_close) {
            return false;
        }
        self.input_updating || !self.aggs.is_empty()
    }
    fn instantiate(&self) -> Result<Box<dyn Operator>> {
        let key_types: Vec<DataType> = self
            .schema
            .fields()
            .iter()
            .take(self.group_exprs.len())
            .map(|f| f.data_type().clone())
            .collect();
        let index = GroupIndex::new(&key_types)?;
        let vectorised = self
            .aggs
            .iter()
            .map(|a| {
                if !self.vectorised(a) {
                    return Ok(None);
                }
                Ok(Some(a.expr.create_groups_accumulator()?))
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(Box::new(AggregateOp {
            node: AggregateNode {
                group_exprs: self.group_exprs.clone(),
                aggs: self.aggs.clone(),
                schema: self.schema.clone(),
                input_updating: self.input_updating,
                window: self.window,
            },
            index,
            groups: Vec::new(),
            free: Vec::new(),
            vectorised,
            delta_slots: Vec::new(),
            by_end: BTreeMap::new(),
            watermark: None,
            late: 0,
            started: false,
            bytes: 0,
            pending: Vec::new(),
        }))
    }
}
