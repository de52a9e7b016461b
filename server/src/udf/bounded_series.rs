//! `generate_series(start, stop[, step])` as a scalar function — the series of each row as a
//! list, which `unnest` turns into rows (a select-list `generate_series`, and a series over
//! an earlier FROM item's columns, `FROM g, generate_series(1, g.n)`) — bounded by the
//! server's memory for queries.
//!
//! DataFusion's function builds every row's series whole before `unnest` sees it, outside
//! the memory pool that `--memory-limit` governs: `generate_series(1, n)` over a row with
//! n = 3e8 took 7 GB, and past 2^31 values in one batch its list offsets wrap. Before building,
//! this wrapper counts (from the arguments alone) how many values the batch's series hold and
//! reserves their bytes in the pool: 53200 when the pool cannot grant them, as any other
//! operator that runs out. The constant form (`FROM generate_series(1, n)`) is a table
//! function that streams and needs no bound. Written here because DataFusion's function has
//! no memory accounting to configure.

use crate::udf::argument_arrays;
use brook_common::BrookError;
use datafusion::arrow::array::{Array, ArrayRef, AsArray};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, Int64Type, IntervalMonthDayNano, TimeUnit};
use datafusion::error::{DataFusionError, Result};
use datafusion::execution::memory_pool::{MemoryConsumer, MemoryPool};
use datafusion::logical_expr::{
    ColumnarValue, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature,
};
use datafusion::prelude::SessionContext;
use std::sync::Arc;

/// Most values one batch's series may hold: its list's offsets are 32-bit.
const MAX_VALUES: u128 = i32::MAX as u128;

/// Replace DataFusion's scalar `generate_series` and `range` (its form without the upper
/// bound, which these counts bound too) with their bounded forms.
pub fn register(ctx: &SessionContext) {
    let pool = ctx.runtime_env().memory_pool.clone();
    for inner in [
        datafusion::functions_nested::range::gen_series_udf(),
        datafusion::functions_nested::range::range_udf(),
    ] {
        let pool = pool.clone();
        ctx.register_udf(ScalarUDF::new_from_impl(BoundedSeries { inner, pool }));
    }
}

/// DataFusion's `generate_series`, reserving its values' memory before building them.
#[derive(Debug)]
struct BoundedSeries {
    inner: Arc<ScalarUDF>,
    pool: Arc<dyn MemoryPool>,
}

impl PartialEq for BoundedSeries {
    fn eq(&self, other: &Self) -> bool {
        self.inner == other.inner
    }
}

impl Eq for BoundedSeries {}

impl std::hash::Hash for BoundedSeries {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.inner.hash(state);
    }
}

impl ScalarUDFImpl for BoundedSeries {
    fn name(&self) -> &str {
        self.inner.name()
    }

    fn signature(&self) -> &Signature {
        self.inner.signature()
    }

    fn coerce_types(&self, arg_types: &[DataType]) -> Result<Vec<DataType>> {
        self.inner.coerce_types(arg_types)
    }

    fn return_type(&self, arg_types: &[DataType]) -> Result<DataType> {
        self.inner.return_type(arg_types)
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let (arrays, _, _) = argument_arrays(&args)?;
        let values = series_values(&arrays)?;
        if values > MAX_VALUES {
            return Err(DataFusionError::External(Box::new(BrookError::Limit {
                message: format!(
                    "{} would build {values} values for one batch of rows, more than \
                     {MAX_VALUES}",
                    self.name()
                ),
                code: "54000",
            })));
        }
        // The list's values and offsets, and the rows `unnest` makes of them.
        let bytes = values as usize * 8 * 2 + arrays.first().map_or(0, |a| a.len()) * 4;
        let reservation = MemoryConsumer::new(self.name()).register(&self.pool);
        if reservation.try_grow(bytes).is_err() {
            return Err(DataFusionError::ResourcesExhausted(format!(
                "{} needs {bytes} bytes for the {values} values of one batch of rows",
                self.name()
            )));
        }
        let out = self.inner.invoke_with_args(args);
        drop(reservation);
        out
    }
}

/// How many values the series of every row hold at most, from the arguments (after
/// DataFusion's coercion: integers as int64, dates, timestamps with interval steps).
fn series_values(args: &[ArrayRef]) -> Result<u128> {
    let Some(first) = args.first() else {
        return Ok(0);
    };
    match first.data_type() {
        DataType::Int64 => integer_values(args),
        DataType::Date32 | DataType::Date64 => {
            const DAY: i128 = 1;
            let (start, stop) = (as_i64(first, &DataType::Date32)?, stop_of(args)?);
            let stop = as_i64(&stop, &DataType::Date32)?;
            stepped_values(&start, &stop, args, (28 * DAY, 31 * DAY), (DAY, DAY), false)
        }
        DataType::Timestamp(_, _) => {
            const HOUR: i128 = 3_600_000_000_000;
            let ns = DataType::Timestamp(TimeUnit::Nanosecond, None);
            let (start, stop) = (as_i64(first, &ns)?, as_i64(&stop_of(args)?, &ns)?);
            // A day is 23 to 25 hours where the time zone shifts; a month 28 to 31 days.
            stepped_values(
                &start,
                &stop,
                args,
                (28 * 23 * HOUR, 31 * 25 * HOUR),
                (23 * HOUR, 25 * HOUR),
                true,
            )
        }
        _ => Ok(0),
    }
}

fn stop_of(args: &[ArrayRef]) -> Result<ArrayRef> {
    args.get(1)
        .cloned()
        .ok_or_else(|| DataFusionError::Plan("generate_series needs start, stop and step".into()))
}

/// An argument's values as int64 (dates in days, timestamps in nanoseconds).
fn as_i64(a: &ArrayRef, unit: &DataType) -> Result<Vec<Option<i64>>> {
    let a = cast(&cast(a, unit)?, &DataType::Int64)?;
    Ok(a.as_primitive::<Int64Type>().iter().collect())
}

/// `generate_series([start,] stop[, step])` over integers: the exact count.
fn integer_values(args: &[ArrayRef]) -> Result<u128> {
    let column = |a: &ArrayRef| as_i64(a, &DataType::Int64);
    let (start, stop, step) = match args {
        [stop] => (None, column(stop)?, None),
        [start, stop] => (Some(column(start)?), column(stop)?, None),
        [start, stop, step, ..] => (Some(column(start)?), column(stop)?, Some(column(step)?)),
        [] => return Ok(0),
    };
    let mut total = 0u128;
    for (row, stop) in stop.iter().enumerate() {
        let start = start.as_ref().map_or(Some(0), |s| s[row]);
        let step = step.as_ref().map_or(Some(1), |s| s[row]);
        if let (Some(start), Some(stop), Some(step)) = (start, *stop, step) {
            total += span_count(start as i128, stop as i128, step as i128);
        }
    }
    Ok(total)
}

/// Values of a series from `start` towards `stop` by `step` (0 when it goes the other way,
/// or for a zero step, which the function itself refuses).
fn span_count(start: i128, stop: i128, step: i128) -> u128 {
    if step == 0 || (stop - start).signum() * step.signum() < 0 {
        return 0;
    }
    ((stop - start) / step).unsigned_abs() + 1
}

/// The series of dates or timestamps with interval steps: at most as many values as the
/// shortest length a step can have (months and days vary in length) allows. `months` and
/// `days` give the shortest and longest month and day in the values' unit; `nanos` says
/// whether the unit is the nanosecond (a date series ignores the step's time part).
fn stepped_values(
    start: &[Option<i64>],
    stop: &[Option<i64>],
    args: &[ArrayRef],
    months: (i128, i128),
    days: (i128, i128),
    nanos: bool,
) -> Result<u128> {
    let Some(step) = args.get(2) else {
        return Ok(0);
    };
    let step = step.as_primitive::<datafusion::arrow::datatypes::IntervalMonthDayNanoType>();
    let mut total = 0u128;
    for row in 0..start.len().min(stop.len()).min(step.len()) {
        let (Some(from), Some(to), true) = (start[row], stop[row], step.is_valid(row)) else {
            continue;
        };
        let IntervalMonthDayNano {
            months: m,
            days: d,
            nanoseconds: n,
        } = step.value(row);
        let fixed = if nanos { i128::from(n) } else { 0 };
        let lengths = [
            i128::from(m) * months.0 + i128::from(d) * days.0 + fixed,
            i128::from(m) * months.0 + i128::from(d) * days.1 + fixed,
            i128::from(m) * months.1 + i128::from(d) * days.0 + fixed,
            i128::from(m) * months.1 + i128::from(d) * days.1 + fixed,
        ];
        // The step's length lies between these corners; if they straddle zero it may be
        // as short as one unit.
        let (lo, hi) = (
            lengths.iter().copied().min().unwrap_or(0),
            lengths.iter().copied().max().unwrap_or(0),
        );
        let shortest = if lo > 0 {
            lo
        } else if hi < 0 {
            hi
        } else if m > 0 || d > 0 || n > 0 {
            1
        } else {
            -1
        };
        total += span_count(i128::from(from), i128::from(to), shortest);
    }
    Ok(total)
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::arrow::array::{
        Date32Array, Int64Array, IntervalMonthDayNanoArray, TimestampNanosecondArray,
    };

    fn ints(v: &[Option<i64>]) -> ArrayRef {
        Arc::new(Int64Array::from(v.to_vec()))
    }

    #[test]
    fn integer_series_are_counted_exactly() {
        let args = [
            ints(&[Some(1), Some(5), None]),
            ints(&[Some(10), Some(1), Some(3)]),
        ];
        // 1..10 is ten values; 5..1 by +1 none; a NULL start none.
        assert_eq!(series_values(&args).unwrap(), 10);
        let args = [ints(&[Some(10)]), ints(&[Some(1)]), ints(&[Some(-3)])];
        assert_eq!(series_values(&args).unwrap(), 4); // 10, 7, 4, 1
        assert_eq!(
            series_values(&[ints(&[Some(300_000_000)])]).unwrap(),
            300_000_001
        );
        let args = [ints(&[Some(i64::MIN)]), ints(&[Some(i64::MAX)])];
        assert_eq!(series_values(&args).unwrap(), u64::MAX as u128 + 1);
    }

    #[test]
    fn interval_steps_are_counted_by_their_shortest_length() {
        let day = |d: i32| IntervalMonthDayNano::new(0, d, 0);
        let month = IntervalMonthDayNano::new(1, 0, 0);
        let dates: ArrayRef = Arc::new(Date32Array::from(vec![0, 0]));
        let ends: ArrayRef = Arc::new(Date32Array::from(vec![9, 365]));
        let steps: ArrayRef = Arc::new(IntervalMonthDayNanoArray::from(vec![day(1), month]));
        // Ten days, and at most 14 months of 28 days in a year.
        assert_eq!(series_values(&[dates, ends, steps]).unwrap(), 10 + 14);

        let hour = 3_600_000_000_000i64;
        let from: ArrayRef = Arc::new(TimestampNanosecondArray::from(vec![0]));
        let to: ArrayRef = Arc::new(TimestampNanosecondArray::from(vec![48 * hour]));
        let a_day: ArrayRef = Arc::new(IntervalMonthDayNanoArray::from(vec![day(1)]));
        // Days of 23 hours fit three times in 48 hours.
        assert_eq!(
            series_values(&[from.clone(), to.clone(), a_day]).unwrap(),
            3
        );
        let hours = IntervalMonthDayNano::new(0, 0, hour);
        let by_hour: ArrayRef = Arc::new(IntervalMonthDayNanoArray::from(vec![hours]));
        assert_eq!(series_values(&[from, to, by_hour]).unwrap(), 49);
    }
}
