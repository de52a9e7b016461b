//! The session's time zone (`SET TimeZone`): what a `timestamp with time zone` means in
//! a query, as PostgreSQL has it.
//!
//! Brook stores a timestamptz as an instant labelled `+00:00`. In a session whose zone is
//! another, PostgreSQL reads and shows instants in that zone: `date_trunc('day', ts)` cuts
//! at local midnight, `extract(hour ...)` and `ts::date` read the local clock, text without
//! an offset (`'2026-12-06 12:00'::timestamptz`) is local time, `ts::timestamp` is the
//! local wall-clock time and a timestamp without time zone becomes the instant it names
//! locally; values are shown with the local offset. Arrow's kernels compute in the zone an
//! instant is labelled with (`date_trunc`, `date_part`, casts to text and dates, adding an
//! interval's days), so this analyzer rule relabels the instants a function, an interval
//! arithmetic or a cast reads with the session's zone — a cast that changes no value —
//! and labels its result back as it was, so the plan's types, and what the continuous
//! planner knows of a stream's event time, do not change. The two conversions Arrow does
//! not do locally (to and from a timestamp without time zone) go through `timezone(zone,
//! ts)`, the function `AT TIME ZONE` is. A query's result is labelled with the zone for its
//! client ([`shown_in_zone`]), so it is shown in it. The zone is DataFusion's
//! `datafusion.execution.time_zone` setting, which the session sets; under UTC the rule
//! changes nothing.

use datafusion::arrow::array::{Array, ArrayRef, AsArray, TimestampMicrosecondArray};
use datafusion::arrow::compute::cast as arrow_cast;
use datafusion::arrow::datatypes::{
    DataType, IntervalMonthDayNano, TimeUnit, TimestampMicrosecondType,
};
use datafusion::common::config::ConfigOptions;
use datafusion::common::tree_node::{Transformed, TreeNode};
use datafusion::common::{DFSchema, Result, ScalarValue};
use datafusion::error::DataFusionError;
use datafusion::logical_expr::expr::ScalarFunction;
use datafusion::logical_expr::{
    cast, lit, BinaryExpr, Cast, Expr, ExprSchemable, LogicalPlan, Operator, Projection, ScalarUDF,
    TryCast,
};
use datafusion::optimizer::AnalyzerRule;
use std::sync::Arc;

/// The analyzer rule; `timezone` is the function `AT TIME ZONE` plans as.
#[derive(Debug)]
pub struct SessionTimeZone {
    timezone: Arc<ScalarUDF>,
}

impl SessionTimeZone {
    pub fn new(timezone: Arc<ScalarUDF>) -> Self {
        SessionTimeZone { timezone }
    }
}

/// True for the names of UTC a session's zone may have (nothing to do then).
pub fn is_utc(zone: &str) -> bool {
    matches!(
        zone.to_ascii_lowercase().as_str(),
        "+00:00" | "+00" | "+0000" | "utc" | "etc/utc" | "z" | "zulu" | "gmt" | "etc/gmt" | "uct"
    )
}

impl AnalyzerRule for SessionTimeZone {
    fn analyze(&self, plan: LogicalPlan, config: &ConfigOptions) -> Result<LogicalPlan> {
        let Some(zone) = config.execution.time_zone.as_deref().filter(|z| !is_utc(z)) else {
            return Ok(plan);
        };
        let zone: Arc<str> = zone.into();
        crate::checked::rewrite_plan_expressions(plan, true, &|e, schema| {
            e.transform_up(|e| self.relabel_expr(e, schema, &zone))
        })
    }

    fn name(&self) -> &str {
        "brook_session_time_zone"
    }
}

/// A query's result shown to a client of a session in zone `zone` (its setting; nothing
/// to do under UTC): its instants labelled with the zone, so that they are shown in it —
/// also inside arrays. Not for a materialized view's definition, whose stored rows keep
/// their labels. Statements other than queries are returned as they are.
pub fn shown_in_zone(plan: LogicalPlan, zone: Option<&str>) -> Result<LogicalPlan> {
    let Some(zone) = zone.filter(|z| !is_utc(z)) else {
        return Ok(plan);
    };
    let zone: Arc<str> = zone.into();
    let relation = !matches!(
        plan,
        LogicalPlan::Dml(_)
            | LogicalPlan::Ddl(_)
            | LogicalPlan::Statement(_)
            | LogicalPlan::Explain(_)
            | LogicalPlan::Analyze(_)
            | LogicalPlan::Copy(_)
            | LogicalPlan::DescribeTable(_)
    );
    let relabel = plan
        .schema()
        .fields()
        .iter()
        .any(|f| relabelled(f.data_type(), &zone).is_some());
    if !relation || !relabel {
        return Ok(plan);
    }
    let exprs = plan
        .schema()
        .iter()
        .map(|(q, f)| {
            let c = Expr::Column(datafusion::common::Column::from((q, f)));
            match relabelled(f.data_type(), &zone) {
                Some(t) => cast(c, t).alias_qualified(q.cloned(), f.name()),
                None => c,
            }
        })
        .collect();
    Ok(LogicalPlan::Projection(Projection::try_new(
        exprs,
        Arc::new(plan),
    )?))
}

/// `t` with its instants labelled with `zone` (an array's elements too); None when it has
/// none labelled otherwise.
fn relabelled(t: &DataType, zone: &Arc<str>) -> Option<DataType> {
    match t {
        DataType::Timestamp(u, Some(z)) if z.as_ref() != zone.as_ref() => Some(in_zone(*u, zone)),
        DataType::List(f) => {
            let inner = relabelled(f.data_type(), zone)?;
            Some(DataType::List(Arc::new(
                f.as_ref().clone().with_data_type(inner),
            )))
        }
        _ => None,
    }
}

/// `a` as wall-clock times (microseconds, no zone): an instant labelled with a zone other
/// than UTC (the session's) at its local time there, as PostgreSQL's calendar arithmetic
/// on a timestamptz reads it; anything else as Arrow casts it.
pub fn wall_clock(a: &ArrayRef) -> Result<ArrayRef> {
    use chrono::{Offset, TimeZone};
    let naive = DataType::Timestamp(TimeUnit::Microsecond, None);
    let label = match a.data_type() {
        DataType::Timestamp(_, Some(z)) if !is_utc(z) => z.clone(),
        _ => return Ok(arrow_cast(a, &naive)?),
    };
    let tz: datafusion::arrow::array::timezone::Tz = label.parse()?;
    let utc = arrow_cast(
        a,
        &DataType::Timestamp(TimeUnit::Microsecond, Some("+00:00".into())),
    )?;
    let local: TimestampMicrosecondArray = utc
        .as_primitive::<TimestampMicrosecondType>()
        .try_unary(|v| {
            let instant = chrono::DateTime::from_timestamp_micros(v)
                .ok_or_else(|| DataFusionError::Execution("timestamp out of range".into()))?;
            let off = tz
                .offset_from_utc_datetime(&instant.naive_utc())
                .fix()
                .local_minus_utc();
            Ok::<_, DataFusionError>(v + i64::from(off) * 1_000_000)
        })?;
    Ok(Arc::new(local))
}

/// Wall-clock times (a timestamp without time zone) as the instants they name in the zone
/// Arrow labels with `label` (`Europe/Berlin`, `+05:30`: east), labelled `+00:00`, as
/// PostgreSQL reads a local time: one the zone has twice is the later instant (standard
/// time), one it skips takes the offset before the change (Arrow's cast refuses both).
pub fn local_instants(wall: &ArrayRef, label: &str) -> Result<ArrayRef> {
    let tz: datafusion::arrow::array::timezone::Tz = label.parse()?;
    let wall = arrow_cast(wall, &DataType::Timestamp(TimeUnit::Microsecond, None))?;
    let out: TimestampMicrosecondArray = wall
        .as_primitive::<TimestampMicrosecondType>()
        .try_unary(|v| {
            let local = chrono::DateTime::from_timestamp_micros(v)
                .ok_or_else(|| DataFusionError::Execution("timestamp out of range".into()))?
                .naive_utc();
            Ok::<_, DataFusionError>(v - i64::from(local_offset(&tz, &local)) * 1_000_000)
        })?;
    Ok(Arc::new(out.with_timezone("+00:00")))
}

/// Seconds east of UTC of local time `local` in `tz`, as PostgreSQL reads a local time: one
/// the zone has twice is the later instant (standard time, the smaller offset), one it
/// skips takes the offset before the change.
pub fn local_offset<T: chrono::TimeZone>(tz: &T, local: &chrono::NaiveDateTime) -> i32 {
    use chrono::{LocalResult, Offset};
    match tz.offset_from_local_datetime(local) {
        LocalResult::Single(o) => o.fix().local_minus_utc(),
        LocalResult::Ambiguous(a, b) => a.fix().local_minus_utc().min(b.fix().local_minus_utc()),
        LocalResult::None => tz
            .offset_from_utc_datetime(&(*local - chrono::Duration::days(1)))
            .fix()
            .local_minus_utc(),
    }
}

/// Functions whose answer does not depend on the zone instants are labelled with, left
/// as planned: the windows' bounds (aligned to the epoch, and what the continuous planner
/// recognizes as computed from the event time) and `AT TIME ZONE`, which names its zone.
const ZONE_FREE: [&str; 4] = [
    crate::window_start::WINDOW_START,
    crate::session_window::SESSION_START,
    crate::session_window::SESSION_END,
    "timezone",
];

/// True when `t` is an instant labelled with another zone than `zone`.
fn other_zone(t: &DataType, zone: &str) -> bool {
    matches!(t, DataType::Timestamp(_, Some(z)) if z.as_ref() != zone)
}

fn in_zone(unit: TimeUnit, zone: &Arc<str>) -> DataType {
    DataType::Timestamp(unit, Some(zone.clone()))
}

/// `e`, an instant labelled otherwise, labelled with the zone.
fn relabel(e: Expr, t: &DataType, zone: &Arc<str>) -> Expr {
    match relabelled(t, zone) {
        Some(t) => cast(e, t),
        None => e,
    }
}

impl SessionTimeZone {
    /// One expression node, its operands already rewritten.
    fn relabel_expr(
        &self,
        e: Expr,
        schema: &DFSchema,
        zone: &Arc<str>,
    ) -> Result<Transformed<Expr>> {
        match e {
            Expr::Cast(Cast {
                ref expr,
                ref field,
            })
            | Expr::TryCast(TryCast {
                ref expr,
                ref field,
            }) => {
                let (from, to) = (expr.get_type(schema)?, field.data_type().clone());
                let converted = self.conversion(expr.as_ref().clone(), &from, &to, zone);
                let try_cast = matches!(e, Expr::TryCast(_));
                Ok(match converted {
                    Some(converted) => Transformed::yes(rebuild(converted, to, try_cast)),
                    None => Transformed::no(e),
                })
            }
            // A function of instants (`date_trunc`, `to_char`, `extract`, ...) reads them
            // in the zone; its result is labelled back.
            Expr::ScalarFunction(ScalarFunction { func, args })
                if !ZONE_FREE.contains(&func.name())
                    && args.iter().any(|a| {
                        a.get_type(schema)
                            .is_ok_and(|t| relabelled(&t, zone).is_some())
                    }) =>
            {
                let before = Expr::ScalarFunction(ScalarFunction {
                    func: func.clone(),
                    args: args.clone(),
                });
                let result = before.get_type(schema)?;
                let args = args
                    .into_iter()
                    .map(|a| {
                        let t = a.get_type(schema)?;
                        Ok(relabel(a, &t, zone))
                    })
                    .collect::<Result<Vec<_>>>()?;
                let after = Expr::ScalarFunction(ScalarFunction { func, args });
                Ok(Transformed::yes(labelled_as(after, &result, schema)?))
            }
            // An instant plus or minus an interval: the interval's days and months count on
            // the local calendar (a day across a DST change is 23 or 25 hours).
            Expr::BinaryExpr(BinaryExpr {
                left,
                op: op @ (Operator::Plus | Operator::Minus),
                right,
            }) => {
                let (lt, rt) = (left.get_type(schema)?, right.get_type(schema)?);
                let interval = |t: &DataType| matches!(t, DataType::Interval(_));
                let instant = |t: &DataType| matches!(t, DataType::Timestamp(_, Some(_)));
                let before = Expr::BinaryExpr(BinaryExpr { left, op, right });
                if !((instant(&lt) && interval(&rt)) || (interval(&lt) && instant(&rt))) {
                    return Ok(Transformed::no(before));
                }
                let result = before.get_type(schema)?;
                let Expr::BinaryExpr(BinaryExpr { left, op, right }) = before else {
                    return Ok(Transformed::no(before));
                };
                // (`interval + ts` as `ts + interval`.)
                let local = self
                    .local_calendar(&left, op, &right, &lt, zone)
                    .or_else(|| {
                        (op == Operator::Plus)
                            .then(|| self.local_calendar(&right, op, &left, &rt, zone))
                            .flatten()
                    });
                if let Some(local) = local {
                    return Ok(Transformed::yes(labelled_as(local, &result, schema)?));
                }
                if !(other_zone(&lt, zone) || other_zone(&rt, zone)) {
                    let same = Expr::BinaryExpr(BinaryExpr { left, op, right });
                    return Ok(Transformed::no(same));
                }
                let after = Expr::BinaryExpr(BinaryExpr::new(
                    Box::new(relabel(*left, &lt, zone)),
                    op,
                    Box::new(relabel(*right, &rt, zone)),
                ));
                Ok(Transformed::yes(labelled_as(after, &result, schema)?))
            }
            other => Ok(Transformed::no(other)),
        }
    }

    /// `ts ± interval` with a constant interval of months or days: those counted on the
    /// local calendar from the local wall-clock time, and the instant it names taken as
    /// PostgreSQL takes it (a time the zone has twice is the later, standard one; one it
    /// skips is read with the offset before the change) — Arrow's kernel fails on both —
    /// then the interval's time added as elapsed time. None for other shapes.
    fn local_calendar(
        &self,
        left: &Expr,
        op: Operator,
        right: &Expr,
        left_type: &DataType,
        zone: &Arc<str>,
    ) -> Option<Expr> {
        let (instant, interval) = match (left_type, right) {
            (DataType::Timestamp(_, Some(_)), Expr::Literal(v, _)) => (left, v),
            _ => return None,
        };
        let ScalarValue::IntervalMonthDayNano(Some(v)) = interval else {
            return None;
        };
        if v.months == 0 && v.days == 0 {
            return None;
        }
        let calendar = lit(ScalarValue::IntervalMonthDayNano(Some(
            IntervalMonthDayNano::new(v.months, v.days, 0),
        )));
        let elapsed = lit(ScalarValue::IntervalMonthDayNano(Some(
            IntervalMonthDayNano::new(0, 0, v.nanoseconds),
        )));
        let wall = self.timezone_call(instant.clone(), zone);
        let moved = Expr::BinaryExpr(BinaryExpr::new(Box::new(wall), op, Box::new(calendar)));
        let back = self.timezone_call(moved, zone);
        Some(Expr::BinaryExpr(BinaryExpr::new(
            Box::new(back),
            op,
            Box::new(elapsed),
        )))
    }

    /// A cast of `expr` (of type `from`) to `to` as the session's zone reads it, when
    /// Arrow's cast does not (the caller casts the result to `to`).
    fn conversion(
        &self,
        expr: Expr,
        from: &DataType,
        to: &DataType,
        zone: &Arc<str>,
    ) -> Option<Expr> {
        match (from, to) {
            // An instant as the local wall-clock time (or its time of day).
            (
                DataType::Timestamp(_, Some(_)),
                DataType::Timestamp(_, None) | DataType::Time64(_) | DataType::Time32(_),
            ) => Some(self.timezone_call(expr, zone)),
            // A wall-clock time (or a date's midnight) as the instant it names locally.
            (DataType::Timestamp(_, None), DataType::Timestamp(_, Some(_))) => {
                Some(self.timezone_call(expr, zone))
            }
            (DataType::Date32 | DataType::Date64, DataType::Timestamp(_, Some(_))) => {
                let naive = cast(expr, DataType::Timestamp(TimeUnit::Microsecond, None));
                Some(self.timezone_call(naive, zone))
            }
            // An instant as a date or as text: its local date, shown in the zone.
            (
                DataType::Timestamp(..),
                DataType::Date32
                | DataType::Date64
                | DataType::Utf8
                | DataType::Utf8View
                | DataType::LargeUtf8,
            ) if other_zone(from, zone) => Some(relabel(expr, from, zone)),
            // Text without an offset as local time; one the zone skips or has twice (which
            // Arrow's parser refuses) as PostgreSQL reads it, through `timezone`.
            (
                DataType::Utf8 | DataType::Utf8View | DataType::LargeUtf8,
                DataType::Timestamp(u, Some(_)),
            ) => {
                let parsed = Expr::TryCast(TryCast::new(Box::new(expr.clone()), in_zone(*u, zone)));
                let naive = cast(expr, DataType::Timestamp(TimeUnit::Microsecond, None));
                let local = cast(self.timezone_call(naive, zone), in_zone(*u, zone));
                Some(
                    datafusion::logical_expr::when(parsed.clone().is_not_null(), parsed)
                        .otherwise(local)
                        .ok()?,
                )
            }
            _ => None,
        }
    }

    /// `timezone(zone, e)`: an instant's local wall-clock time, or a wall-clock time's
    /// instant. A fixed zone goes as an interval east: `timezone` reads text offsets as
    /// POSIX ones (west), Arrow labels them east.
    fn timezone_call(&self, e: Expr, zone: &Arc<str>) -> Expr {
        let zone_arg = match fixed_offset_seconds(zone) {
            Some(secs) => lit(ScalarValue::IntervalMonthDayNano(Some(
                IntervalMonthDayNano::new(0, 0, secs * 1_000_000_000),
            ))),
            None => lit(zone.as_ref()),
        };
        Expr::ScalarFunction(ScalarFunction::new_udf(
            self.timezone.clone(),
            vec![zone_arg, e],
        ))
    }
}

fn rebuild(expr: Expr, to: DataType, try_cast: bool) -> Expr {
    if try_cast {
        Expr::TryCast(TryCast::new(Box::new(expr), to))
    } else {
        Expr::Cast(Cast::new(Box::new(expr), to))
    }
}

/// `e` cast to `t` when its type is another label of the same instants.
fn labelled_as(e: Expr, t: &DataType, schema: &DFSchema) -> Result<Expr> {
    let now = e.get_type(schema)?;
    Ok(
        if &now != t
            && matches!(
                (&now, t),
                (DataType::Timestamp(..), DataType::Timestamp(..))
            )
        {
            cast(e, t.clone())
        } else {
            e
        },
    )
}

/// Seconds east of UTC of a fixed zone label (`+05:30`, `-07:00`); None for a named zone.
fn fixed_offset_seconds(zone: &str) -> Option<i64> {
    let (sign, rest) = match zone.as_bytes().first()? {
        b'+' => (1, &zone[1..]),
        b'-' => (-1, &zone[1..]),
        _ => return None,
    };
    let (h, m) = rest.split_once(':').unwrap_or((rest, "0"));
    Some(sign * (h.parse::<i64>().ok()? * 3600 + m.parse::<i64>().ok()? * 60))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fixed_zones_are_seconds_east() {
        assert_eq!(fixed_offset_seconds("+05:30"), Some(19_800));
        assert_eq!(fixed_offset_seconds("-07:00"), Some(-25_200));
        assert_eq!(fixed_offset_seconds("Europe/Berlin"), None);
    }

    #[test]
    fn names_of_utc_need_no_relabelling() {
        for z in ["+00:00", "UTC", "Etc/UTC", "gmt", "Z"] {
            assert!(is_utc(z), "{z}");
        }
        for z in ["Europe/Berlin", "+01:00", "-00:30"] {
            assert!(!is_utc(z), "{z}");
        }
    }
}
