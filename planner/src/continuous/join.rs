//! Joins: equi-joins, and the time bound of an interval join that lets rows leave the state.

use super::*;
use brook_common::Result;
use brook_operators::graph::Endpoint;
use brook_operators::join::{JoinKind, JoinNode, TimeBound};
use datafusion::arrow::datatypes::DataType;
use datafusion::common::DFSchema;
use datafusion::logical_expr::{Expr, ExprSchemable};
use std::sync::Arc;

impl Builder<'_> {
    pub(super) fn join(&mut self, j: &datafusion::logical_expr::Join) -> Result<Endpoint> {
        use datafusion::logical_expr::JoinType;
        let kind = match j.join_type {
            JoinType::Inner => JoinKind::Inner,
            JoinType::LeftSemi => JoinKind::Semi(0),
            JoinType::RightSemi => JoinKind::Semi(1),
            JoinType::Left => JoinKind::Outer(0),
            JoinType::Right => JoinKind::Outer(1),
            JoinType::Full => JoinKind::Full,
            JoinType::LeftAnti => JoinKind::Anti(0),
            JoinType::RightAnti => JoinKind::Anti(1),
            JoinType::LeftMark => JoinKind::Mark,
            other => {
                return Err(refuse(&format!(
                    "{} JOIN",
                    other.to_string().to_uppercase()
                )))
            }
        };
        // NOT IN: the operator keeps the NULL rule for one key; correlated forms bring an
        // extra condition the rule would have to apply per pair.
        if j.null_aware && (j.on.len() != 1 || j.filter.is_some() || kind != JoinKind::Anti(0)) {
            return Err(refuse(
                "NOT IN (correlated subquery) (write NOT EXISTS, which has no NULL special case)",
            ));
        }
        let left = self.build(&j.left)?;
        let right = self.build(&j.right)?;
        let ends = [left, right];
        let updating = [self.updating(left), self.updating(right)];
        // An append-only side whose partners' event time the condition bounds leaves the
        // state once the watermark passes that bound.
        let mut bounds = [None, None];
        for side in 0..2 {
            if !updating[side] {
                bounds[side] = self.time_bound(j, side, ends, updating[1 - side])?;
            }
        }
        // Two streams without a time bound on a side join as tables do (Flink's regular
        // join): that side's rows stay in the state, which the query's memory reservation
        // bounds (53200 past the server's memory limit).
        if !updating[0] && !updating[1] && j.null_aware {
            return Err(refuse(
                "NOT IN (subquery) between two streams (write NOT EXISTS with a time bound)",
            ));
        }
        let (ls, rs) = (j.left.schema(), j.right.schema());
        let (mut left_keys, mut right_keys) = (Vec::new(), Vec::new());
        for (l, r) in &j.on {
            left_keys.push(self.physical(l, ls)?);
            right_keys.push(self.physical(r, rs)?);
        }
        if left_keys.is_empty() {
            // A cross join: every row shares the one key.
            let t: Expr = datafusion::logical_expr::lit(true);
            left_keys.push(self.physical(&t, ls)?);
            right_keys.push(self.physical(&t, rs)?);
        }
        // The extra condition reads a pair: left columns, then right columns.
        let pair_schema = ls.join(rs)?;
        let filter = match &j.filter {
            Some(f) => Some(self.physical(f, &pair_schema)?),
            None => None,
        };
        let node = JoinNode {
            kind,
            left_keys,
            right_keys,
            filter,
            left_schema: Arc::new(ls.as_arrow().clone()),
            right_schema: Arc::new(rs.as_arrow().clone()),
            schema: Arc::new(j.schema.as_arrow().clone()),
            // An outer or anti join emits a kept row while it has no match: with a time
            // bound on that side, once, when the bound passes; without one, at once, to be
            // retracted when a match comes — an updating result even over two streams. (A
            // semi join's row, once matched, stays matched over append-only inputs.)
            // A mark join's row changes its mark when its first match comes (or its last
            // goes): it retracts, as an anti join's unmatched row does.
            updating: updating[0]
                || updating[1]
                || kind == JoinKind::Mark
                || (0..2).any(|side| {
                    kind.keeps(side) && !matches!(kind, JoinKind::Semi(_)) && bounds[side].is_none()
                }),
            inputs_updating: updating,
            bounds,
            nulls_equal: j.null_equality == datafusion::common::NullEquality::NullEqualsNull,
            null_aware: j.null_aware,
        };
        Ok(self.add(Arc::new(node), vec![left, right], None))
    }

    /// How `j`'s condition bounds `side` (0 left, 1 right) in event time: a conjunct
    /// `other.t <= e` (`<`, `BETWEEN .. AND e`, `=`, with `other.t ± interval` moved across)
    /// where `other.t` is the other side's event-time column and `e` reads only this side.
    pub(super) fn time_bound(
        &self,
        j: &datafusion::logical_expr::Join,
        side: usize,
        ends: [Endpoint; 2],
        partner_updating: bool,
    ) -> Result<Option<TimeBound>> {
        use datafusion::logical_expr::{BinaryExpr, Operator};
        let other = 1 - side;
        let Some(t) = self.time_of(ends[other]) else {
            return Ok(None);
        };
        let schemas = [j.left.schema(), j.right.schema()];
        let (mine, theirs) = (schemas[side], schemas[other]);
        // Each conjunct as `a <= b` pairs.
        let mut le: Vec<(Expr, Expr)> = Vec::new();
        for (l, r) in &j.on {
            le.push((l.clone(), r.clone()));
            le.push((r.clone(), l.clone()));
        }
        if let Some(f) = &j.filter {
            for c in datafusion::logical_expr::utils::split_conjunction(f) {
                match c {
                    Expr::BinaryExpr(BinaryExpr { left, op, right }) => match op {
                        Operator::Lt | Operator::LtEq => {
                            le.push((left.as_ref().clone(), right.as_ref().clone()))
                        }
                        Operator::Gt | Operator::GtEq => {
                            le.push((right.as_ref().clone(), left.as_ref().clone()))
                        }
                        Operator::Eq => {
                            le.push((left.as_ref().clone(), right.as_ref().clone()));
                            le.push((right.as_ref().clone(), left.as_ref().clone()));
                        }
                        _ => {}
                    },
                    Expr::Between(b) if !b.negated => {
                        le.push((b.low.as_ref().clone(), b.expr.as_ref().clone()));
                        le.push((b.expr.as_ref().clone(), b.high.as_ref().clone()));
                    }
                    _ => {}
                }
            }
        }
        let reads_only =
            |e: &Expr, schema: &DFSchema| e.column_refs().iter().all(|c| schema.has_column(c));
        for (mut a, mut b) in le {
            // `other.t ± k <= b` is `other.t <= b ∓ k` for a constant k.
            while let Expr::BinaryExpr(BinaryExpr { left, op, right }) = &a {
                let inverse = match op {
                    Operator::Plus => Operator::Minus,
                    Operator::Minus => Operator::Plus,
                    _ => break,
                };
                if !right.column_refs().is_empty() {
                    break;
                }
                b = Expr::BinaryExpr(BinaryExpr::new(Box::new(b), inverse, right.clone()));
                a = left.as_ref().clone();
            }
            let Expr::Column(c) = &a else { continue };
            if mine.has_column(c) || theirs.index_of_column(c).ok() != Some(t) {
                continue;
            }
            if b.column_refs().is_empty() || !reads_only(&b, mine) {
                continue;
            }
            let Ok(DataType::Timestamp(_, _)) = b.get_type(mine) else {
                continue;
            };
            return Ok(Some(TimeBound {
                expiry: self.physical(&b, mine)?,
                partner_time: self.physical(&a, theirs)?,
                partner_updating,
            }));
        }
        Ok(None)
    }
}

/// `ts ± INTERVAL '..'` with an interval of whole microseconds and no months or days (a
/// watermark's delay, `ts - INTERVAL '4 seconds'`) as `ts ± ` an Arrow duration: the same
/// values, by one integer operation per row where an interval goes through calendar
/// arithmetic per row (a twentieth of a Nexmark stream's ingestion in a profile). Months
/// and days vary in length (days across a time zone's changes), so they stay intervals.
pub(super) fn fixed_intervals_as_durations(e: Expr) -> Result<Expr> {
    use datafusion::common::tree_node::{Transformed, TreeNode};
    use datafusion::common::ScalarValue;
    use datafusion::logical_expr::{BinaryExpr, Operator};
    let rewritten = e.transform_up(|e| {
        let Expr::BinaryExpr(BinaryExpr { left, op, right }) = &e else {
            return Ok(Transformed::no(e));
        };
        let Expr::Literal(ScalarValue::IntervalMonthDayNano(Some(v)), _) = right.as_ref() else {
            return Ok(Transformed::no(e));
        };
        if !matches!(op, Operator::Plus | Operator::Minus)
            || v.months != 0
            || v.days != 0
            || v.nanoseconds % 1000 != 0
        {
            return Ok(Transformed::no(e));
        }
        let micros = ScalarValue::DurationMicrosecond(Some(v.nanoseconds / 1000));
        Ok(Transformed::yes(Expr::BinaryExpr(BinaryExpr {
            left: left.clone(),
            op: *op,
            right: Box::new(Expr::Literal(micros, None)),
        })))
    })?;
    Ok(rewritten.data)
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::arrow::array::{ArrayRef, TimestampMicrosecondArray};
    use datafusion::arrow::datatypes::{Field, Schema, TimeUnit};
    use datafusion::arrow::record_batch::RecordBatch;
    use datafusion::common::ScalarValue;
    use datafusion::logical_expr::{col, lit};
    use datafusion::prelude::SessionContext;

    fn interval(months: i32, days: i32, nanoseconds: i64) -> Expr {
        lit(ScalarValue::IntervalMonthDayNano(Some(
            datafusion::arrow::datatypes::IntervalMonthDayNano {
                months,
                days,
                nanoseconds,
            },
        )))
    }

    /// Each expression's values over a column of timestamps.
    fn values(e: &Expr) -> ArrayRef {
        let schema = Schema::new(vec![Field::new(
            "ts",
            DataType::Timestamp(TimeUnit::Microsecond, None),
            true,
        )]);
        let ts: ArrayRef = Arc::new(TimestampMicrosecondArray::from(vec![
            Some(1_767_225_600_000_000),
            None,
            Some(-1),
        ]));
        let batch = RecordBatch::try_new(Arc::new(schema.clone()), vec![ts]).unwrap();
        let df_schema = DFSchema::try_from(schema).unwrap();
        let state = SessionContext::new().state();
        let physical = create_physical_expr(
            e,
            &df_schema,
            state.execution_props(),
            &PhysicalPlanningContext::default(),
        )
        .unwrap();
        physical.evaluate(&batch).unwrap().into_array(3).unwrap()
    }

    #[test]
    fn a_fixed_delay_becomes_a_duration_with_the_same_values() {
        for e in [
            col("ts") - interval(0, 0, 4_000_000_000),
            col("ts") + interval(0, 0, 1_500_000),
        ] {
            let fast = fixed_intervals_as_durations(e.clone()).unwrap();
            assert!(fast.to_string().contains("DurationMicrosecond"), "{fast}");
            assert_eq!(values(&fast).as_ref(), values(&e).as_ref(), "{e}");
        }
    }

    #[test]
    fn months_days_and_nanoseconds_stay_intervals() {
        for e in [
            col("ts") - interval(1, 0, 0),
            col("ts") - interval(0, 1, 0),
            col("ts") - interval(0, 0, 1),
        ] {
            assert_eq!(fixed_intervals_as_durations(e.clone()).unwrap(), e);
        }
    }
}
