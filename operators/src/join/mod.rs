//! Equi-joins of two changelogs (a symmetric hash join with retraction): inner, LEFT/RIGHT/
//! FULL outer, semi (`EXISTS`/`IN` subqueries, and inner joins whose other side only
//! filters) and anti joins (`NOT EXISTS`).
//!
//! Each side keeps its live rows indexed by join key. A change on one side is paired with
//! the other side's live rows of the same key (the extra join condition, if any, decides
//! which pairs match), then updates its own side. An inner join emits the matching pairs
//! with the change's kind. A semi join emits a row of its kept side while it has at least
//! one match: each kept row counts its matches, and a change on the other side that moves a
//! count between zero and non-zero inserts or retracts that row. An anti join emits a kept
//! row while it has none; an outer join emits the pairs and, while it has none, the kept row
//! padded with NULLs (a FULL join keeps both sides). Either way the result stays
//! equal to the join of the two inputs' current contents.
//!
//! State holds every live row of both inputs: the planner admits a join only when that is
//! bounded by what the SQL reads (a side from a table or an aggregate), or when the join
//! condition bounds a stream side in event time. An interval join (`b.ts BETWEEN a.ts AND
//! a.ts + INTERVAL '1 hour'`) says how late a row of the other side may come to still match
//! a row: each such row carries an expiry time (the latest event time a partner can have),
//! and once the watermark passes it nothing still to come can pair with it, so it leaves
//! the state. Rows of a stream that arrive behind the watermark could have paired with rows
//! already dropped; they are counted as late and dropped, as windows drop theirs.

mod mark;
mod op;
mod side;
#[cfg(test)]
mod tests;

use op::JoinOp;
use side::Side;

use crate::{NodeSpec, Operator};
use brook_common::{brook_err, Result};
use datafusion::arrow::datatypes::{DataType, SchemaRef};
use datafusion::arrow::row::{RowConverter, SortField};
use datafusion::physical_expr::PhysicalExpr;
use std::fmt;
use std::sync::Arc;

/// What a join emits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JoinKind {
    /// Matching pairs (left columns, then right columns).
    Inner,
    /// Rows of input `0` (left) or `1` (right) that have at least one match.
    Semi(usize),
    /// Matching pairs, plus each row of the kept input (`0`: LEFT JOIN, `1`: RIGHT JOIN)
    /// that has no match, with NULLs for the other side's columns.
    Outer(usize),
    /// Matching pairs, plus each row of either input that has no match, NULL-padded.
    Full,
    /// Rows of input `0` (left) or `1` (right) that have no match.
    Anti(usize),
    /// Each row of the left input with a boolean: whether it has a match (DataFusion's
    /// `LeftMark`, for `x IN (subquery)` and `EXISTS` under `OR`, `NOT` or `CASE`).
    Mark,
}

impl JoinKind {
    /// Whether rows of input `side` count their matches (they are emitted, or padded, by
    /// whether they have any).
    pub fn keeps(self, side: usize) -> bool {
        match self {
            JoinKind::Inner => false,
            JoinKind::Full => true,
            JoinKind::Semi(k) | JoinKind::Outer(k) | JoinKind::Anti(k) => k == side,
            JoinKind::Mark => side == 0,
        }
    }

    /// Whether matching pairs are part of the output.
    fn emits_pairs(self) -> bool {
        matches!(self, JoinKind::Inner | JoinKind::Outer(_) | JoinKind::Full)
    }
}

/// Plan node of an equi-join.
#[derive(Debug)]
pub struct JoinNode {
    /// Inner or semi.
    pub kind: JoinKind,
    /// Key expressions over the left input.
    pub left_keys: Vec<Arc<dyn PhysicalExpr>>,
    /// Key expressions over the right input (same count and types as the left).
    pub right_keys: Vec<Arc<dyn PhysicalExpr>>,
    /// Extra (non-equi) condition over a pair (left columns, then right columns).
    pub filter: Option<Arc<dyn PhysicalExpr>>,
    /// Left input schema.
    pub left_schema: SchemaRef,
    /// Right input schema.
    pub right_schema: SchemaRef,
    /// Output schema: left columns then right columns (inner), or the kept side's (semi).
    pub schema: SchemaRef,
    /// Whether the output retracts: either input retracts, or an outer or anti join has a
    /// kept input without a time bound (its unmatched rows are emitted at once and
    /// retracted when a match comes).
    ///
    /// Invariant: when `false`, an outer or anti join has a time bound on every kept input,
    /// and emits each unmatched kept row once, when the watermark passes its bound (no
    /// match can come after), so the output is append-only (Flink's interval outer join).
    pub updating: bool,
    /// Per input (`[left, right]`), whether it retracts. An append-only input's rows are
    /// never deleted: its side keeps no whole-row index (each copy is an entry of its own).
    pub inputs_updating: [bool; 2],
    /// Per input (`[left, right]`), its time bound in an interval join, if the condition
    /// gives one (see [`TimeBound`]).
    pub bounds: [Option<TimeBound>; 2],
    /// NULL keys match each other (`IS NOT DISTINCT FROM`); by default a NULL matches nothing.
    pub nulls_equal: bool,
    /// `x NOT IN (SELECT y ..)`: a left anti join on one key, without an extra condition or
    /// time bounds, where a NULL on the right hides every left row and a NULL `x` is kept
    /// only while the right is empty (SQL's three-valued `NOT IN`).
    pub null_aware: bool,
}

/// How the join condition bounds one input in event time: a conjunct `other.t <= expiry`
/// (or `<`, or `BETWEEN .. AND expiry`), where `other.t` is the other input's event-time
/// column (the one its watermark is declared on, or a window's end).
///
/// Invariant: only an append-only input has a bound (a retraction of a row already dropped
/// would have nothing to take back), and its partner's rows behind the watermark are
/// dropped as late, so no row still to come can match a dropped one.
#[derive(Debug, Clone)]
pub struct TimeBound {
    /// Over this input's columns: the latest event time a partner row can have.
    pub expiry: Arc<dyn PhysicalExpr>,
    /// Over the other input's columns: its event time (rows behind the watermark are late).
    pub partner_time: Arc<dyn PhysicalExpr>,
    /// The other input retracts (its rows are then never dropped as late: a window's
    /// changes come before the watermark passes its end).
    pub partner_updating: bool,
}

impl fmt::Display for JoinNode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let pairs: Vec<String> = self
            .left_keys
            .iter()
            .zip(&self.right_keys)
            .map(|(l, r)| format!("{l} = {r}"))
            .collect();
        let kind = match self.kind {
            JoinKind::Inner => "inner".to_string(),
            JoinKind::Semi(0) => "left semi".to_string(),
            JoinKind::Semi(_) => "right semi".to_string(),
            JoinKind::Outer(0) => "left outer".to_string(),
            JoinKind::Outer(_) => "right outer".to_string(),
            JoinKind::Full => "full outer".to_string(),
            JoinKind::Anti(0) => "left anti".to_string(),
            JoinKind::Anti(_) => "right anti".to_string(),
            JoinKind::Mark => "left mark".to_string(),
        };
        let kind = if self.null_aware {
            format!("{kind} (NOT IN: NULL-aware)")
        } else {
            kind
        };
        write!(f, "Join: {kind} on [{}]", pairs.join(", "))?;
        if let Some(c) = &self.filter {
            write!(f, " filter={c}")?;
        }
        write!(f, " state=live rows of both inputs by key")?;
        for (side, b) in ["left", "right"].iter().zip(&self.bounds) {
            if let Some(b) = b {
                write!(
                    f,
                    ", {side} rows dropped once the watermark passes {}",
                    b.expiry
                )?;
            }
        }
        for (side, name) in ["left", "right"].iter().enumerate() {
            if self.defers(side) {
                write!(f, ", unmatched {name} rows emitted then")?;
            }
        }
        Ok(())
    }
}

impl JoinNode {
    /// Whether unmatched rows of input `side` wait for the watermark to pass their bound
    /// (see [`JoinNode::updating`]).
    fn defers(&self, side: usize) -> bool {
        !self.updating
            && self.kind.keeps(side)
            && !matches!(self.kind, JoinKind::Semi(_) | JoinKind::Mark)
            && self.bounds[side].is_some()
    }
}

impl NodeSpec for JoinNode {
    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }
    fn updating(&self) -> bool {
        self.updating
    }
    fn instantiate(&self) -> Result<Box<dyn Operator>> {
        let key_types =
            |schema: &SchemaRef, keys: &[Arc<dyn PhysicalExpr>]| -> Result<Vec<DataType>> {
                keys.iter().map(|k| Ok(k.data_type(schema)?)).collect()
            };
        let left_types = key_types(&self.left_schema, &self.left_keys)?;
        if left_types != key_types(&self.right_schema, &self.right_keys)? {
            return Err(brook_err!(Internal, "join keys of different types"));
        }
        let left_types: Vec<SortField> = left_types.into_iter().map(SortField::new).collect();
        let all = |schema: &SchemaRef| -> Vec<SortField> {
            if schema.fields().is_empty() {
                // A side whose columns are all pruned: each row encodes as one constant.
                return vec![SortField::new(DataType::Boolean)];
            }
            schema
                .fields()
                .iter()
                .map(|f| SortField::new(f.data_type().clone()))
                .collect()
        };
        let mut fields: Vec<_> = self.left_schema.fields().iter().cloned().collect();
        fields.extend(self.right_schema.fields().iter().cloned());
        Ok(Box::new(JoinOp {
            kind: self.kind,
            pair_schema: Arc::new(datafusion::arrow::datatypes::Schema::new(fields)),
            keys: [self.left_keys.clone(), self.right_keys.clone()],
            key_rows: RowConverter::new(left_types)?,
            full_rows: [
                RowConverter::new(all(&self.left_schema))?,
                RowConverter::new(all(&self.right_schema))?,
            ],
            widths: [
                self.left_schema.fields().len(),
                self.right_schema.fields().len(),
            ],
            filter: self.filter.clone(),
            schema: self.schema.clone(),
            sides: [
                Side::new(!self.inputs_updating[0]),
                Side::new(!self.inputs_updating[1]),
            ],
            bounds: self.bounds.clone(),
            defer: [self.defers(0), self.defers(1)],
            nulls_equal: self.nulls_equal,
            null_aware: self.null_aware,
            right_rows: 0,
            right_nulls: 0,
            watermark: None,
            late: 0,
        }))
    }
}
