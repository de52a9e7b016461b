//! `session_start(ts, gap)` and `session_end(ts, gap)`: window functions giving each row
//! the bounds of its SESSION window (`OVER (PARTITION BY key ORDER BY ts)`), what the
//! `SESSION` table function in FROM expands to (see [`crate::windows`]).
//!
//! Ad hoc, DataFusion evaluates them over each sorted partition with
//! [`brook_operators::session_window::session_runs`]; in a continuous query the planner replaces
//! them by the incremental SESSION operator, which applies the same rule — so a table and
//! a stream give the same sessions.

use brook_common::{brook_err, Result};
use brook_operators::session_window::{session_runs, SessionBound};
use datafusion::arrow::array::{Array, ArrayRef, Int64Array};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, Field, FieldRef, TimeUnit};
use datafusion::common::{exec_err, ScalarValue};
use datafusion::error::DataFusionError;
use datafusion::logical_expr::function::{PartitionEvaluatorArgs, WindowUDFFieldArgs};
use datafusion::logical_expr::{
    PartitionEvaluator, Signature, Volatility, WindowUDF, WindowUDFImpl,
};
use std::sync::Arc;

/// Name of the window function giving a row's session start.
pub const SESSION_START: &str = "session_start";
/// Name of the window function giving a row's session end.
pub const SESSION_END: &str = "session_end";

/// The two session window functions, to register on a context.
pub fn session_functions() -> Vec<WindowUDF> {
    [SessionBound::Start, SessionBound::End]
        .into_iter()
        .map(|bound| {
            WindowUDF::new_from_impl(SessionFunction {
                bound,
                signature: Signature::any(2, Volatility::Immutable),
            })
        })
        .collect()
}

/// Which bound a function named `name` gives, if it is a session function.
pub fn session_bound(name: &str) -> Option<SessionBound> {
    match name {
        SESSION_START => Some(SessionBound::Start),
        SESSION_END => Some(SessionBound::End),
        _ => None,
    }
}

/// Microseconds of a session gap literal (a positive interval of fixed length).
pub fn gap_micros(v: &ScalarValue) -> Result<i64> {
    let micros = match v {
        ScalarValue::IntervalMonthDayNano(Some(v)) if v.months == 0 => {
            i64::from(v.days) * 86_400_000_000 + v.nanoseconds / 1000
        }
        ScalarValue::IntervalDayTime(Some(v)) => {
            i64::from(v.days) * 86_400_000_000 + i64::from(v.milliseconds) * 1000
        }
        _ => {
            return Err(brook_err!(
                InvalidParameter,
                "session gap {v} must be a fixed interval such as INTERVAL '30 minutes'"
            ))
        }
    };
    if micros <= 0 {
        return Err(brook_err!(
            InvalidParameter,
            "session gap {v} must be positive"
        ));
    }
    Ok(micros)
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct SessionFunction {
    bound: SessionBound,
    signature: Signature,
}

impl WindowUDFImpl for SessionFunction {
    fn name(&self) -> &str {
        match self.bound {
            SessionBound::Start => SESSION_START,
            SessionBound::End => SESSION_END,
        }
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn partition_evaluator(
        &self,
        _args: PartitionEvaluatorArgs<'_>,
    ) -> datafusion::common::Result<Box<dyn PartitionEvaluator>> {
        Ok(Box::new(SessionEvaluator { bound: self.bound }))
    }

    fn field(&self, args: WindowUDFFieldArgs<'_>) -> datafusion::common::Result<FieldRef> {
        let types: Vec<DataType> = args
            .input_fields()
            .iter()
            .map(|f| f.data_type().clone())
            .collect();
        match types.as_slice() {
            [t @ DataType::Timestamp(_, _), DataType::Interval(_)] => {
                Ok(Arc::new(Field::new(args.name(), t.clone(), true)))
            }
            _ => Err(datafusion::error::DataFusionError::External(Box::new(
                brook_common::brook_err!(
                    DatatypeMismatch,
                    "{}(time, gap) takes a timestamp and an interval, not {types:?}",
                    self.name()
                ),
            ))),
        }
    }
}

#[derive(Debug)]
struct SessionEvaluator {
    bound: SessionBound,
}

impl PartitionEvaluator for SessionEvaluator {
    /// The partition arrives sorted by time (the OVER clause's ORDER BY).
    fn evaluate_all(
        &mut self,
        values: &[ArrayRef],
        num_rows: usize,
    ) -> datafusion::common::Result<ArrayRef> {
        let [times, gap] = values else {
            return exec_err!("session functions take (time, gap)");
        };
        let gap = match (0..gap.len()).find(|&i| gap.is_valid(i)) {
            Some(i) => ScalarValue::try_from_array(gap, i)?,
            None => {
                return Ok(datafusion::arrow::array::new_null_array(
                    times.data_type(),
                    num_rows,
                ))
            }
        };
        let gap = gap_micros(&gap).map_err(|e| DataFusionError::External(Box::new(e)))?;
        let us = brook_operators::timestamp_micros(times)
            .map_err(|e| DataFusionError::External(Box::new(e)))?;
        let runs = session_runs(&us.iter().collect::<Vec<_>>(), gap);
        let out: Int64Array = runs
            .iter()
            .map(|r| {
                r.map(|(start, end)| match self.bound {
                    SessionBound::Start => start,
                    SessionBound::End => end,
                })
            })
            .collect();
        let out = cast(&out, &DataType::Timestamp(TimeUnit::Microsecond, None))?;
        Ok(cast(&out, times.data_type())?)
    }
}
