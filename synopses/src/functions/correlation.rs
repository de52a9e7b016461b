//! Correlation over series windows: `dft_sketch_agg(x, window [, coefficients] [ORDER BY t])`
//! keeps the DFT synopsis of the last `window` values of a series (in `t` order, or arrival
//! order without ORDER BY), and `approx_corr(a, b)` estimates the correlation of two such
//! windows from their spectra. Finding every correlated pair among many series is the
//! `correlated_pairs` table function of the server (over a `dft` synopsis).

use super::scalar::SketchFunction;
use super::{
    binary_values, external, function_name, int_arg, returns_binary, SynopsisAccumulator,
    SynopsisAggregate,
};
use crate::dft::{self, Dft};
use crate::Synopsis;
use brook_common::{brook_err, Result};
use datafusion::arrow::array::{Array, ArrayRef, AsArray, Float64Array};
use datafusion::arrow::compute::{filter, is_not_null, sort_to_indices, SortOptions};
use datafusion::arrow::datatypes::DataType;
use datafusion::arrow::datatypes::Float64Type;
use datafusion::logical_expr::function::AccumulatorArgs;
use datafusion::logical_expr::{
    Accumulator, AggregateUDF, ScalarUDF, Signature, TypeSignature, Volatility,
};
use datafusion::scalar::ScalarValue;
use std::cmp::Ordering;
use std::collections::VecDeque;
use std::sync::Arc;

pub(super) fn aggregates() -> Vec<AggregateUDF> {
    vec![SynopsisAggregate::sequence_udaf(
        "dft_sketch_agg",
        Signature::one_of(
            vec![TypeSignature::Any(2), TypeSignature::Any(3)],
            Volatility::Immutable,
        ),
        returns_binary,
        dft_sketch,
    )]
}

pub(super) fn functions() -> Vec<ScalarUDF> {
    vec![SketchFunction::udf(
        "approx_corr",
        Signature::exact(
            vec![DataType::Binary, DataType::Binary],
            Volatility::Immutable,
        ),
        DataType::Float64,
        approx_corr,
    )]
}

/// The synopsis a call asks for (window required, coefficients optional).
fn synopsis(args: &AccumulatorArgs<'_>) -> Result<Dft> {
    let window = int_arg(
        args,
        1,
        dft::WINDOW_RANGE.0 as i64..=dft::WINDOW_RANGE.1 as i64,
    )?
    .ok_or_else(|| {
        brook_err!(
            InvalidParameter,
            "{}() needs a window size",
            function_name(args)
        )
    })? as usize;
    let coefficients = int_arg(args, 2, 1..=i64::from(u16::MAX))?
        .map_or(dft::DEFAULT_COEFFICIENTS.min((window - 1) / 2), |k| {
            k as usize
        });
    Dft::new(window, coefficients)
}

fn dft_sketch(args: &AccumulatorArgs<'_>) -> Result<Box<dyn Accumulator>> {
    let dft = synopsis(args)?;
    match args.order_bys.first() {
        // Arrival order (a stream's, in continuous maintenance): values as they come.
        None => Ok(SynopsisAccumulator::values(
            dft,
            Dft::from_bytes,
            super::distinct::bytes_of,
        )),
        Some(order) => Ok(Box::new(OrderedWindow {
            window: dft.window(),
            coefficients: dft.coefficients(),
            held: VecDeque::new(),
            seen: 0,
            options: order.options,
        })),
    }
}

/// `dft_sketch_agg(x, w ORDER BY t)`: the last `w` values by `t`, with their `t`.
///
/// DataFusion sorts each partition's input by `t` but merges the partitions' partial states
/// in any order, so a partial window keeps each value's `t` and windows merge by it.
/// Invariant: `held` is in `t` order and holds at most `window` values.
#[derive(Debug)]
struct OrderedWindow {
    window: usize,
    coefficients: usize,
    held: VecDeque<(ScalarValue, f64)>,
    seen: u64,
    options: SortOptions,
}

impl OrderedWindow {
    fn compare(&self, a: &ScalarValue, b: &ScalarValue) -> Ordering {
        let by_value = match (a.is_null(), b.is_null()) {
            (true, true) => Ordering::Equal,
            (true, false) if self.options.nulls_first => return Ordering::Less,
            (true, false) => return Ordering::Greater,
            (false, true) if self.options.nulls_first => return Ordering::Greater,
            (false, true) => return Ordering::Less,
            (false, false) => a.partial_cmp(b).unwrap_or(Ordering::Equal),
        };
        if self.options.descending {
            by_value.reverse()
        } else {
            by_value
        }
    }

    /// Fold `incoming` (in `t` order) into the window, keeping the last `window` values.
    fn absorb(&mut self, incoming: Vec<(ScalarValue, f64)>) {
        let sorted_after = match (self.held.back(), incoming.first()) {
            (Some((last, _)), Some((first, _))) => self.compare(last, first) != Ordering::Greater,
            _ => true,
        };
        if sorted_after {
            self.held.extend(incoming);
        } else {
            let mut all: Vec<(ScalarValue, f64)> = self.held.drain(..).chain(incoming).collect();
            // Stable: equal keys keep arrival order.
            all.sort_by(|a, b| self.compare(&a.0, &b.0));
            self.held = all.into();
        }
        while self.held.len() > self.window {
            self.held.pop_front();
        }
    }

    fn dft(&self) -> Result<Dft> {
        let mut dft = Dft::new(self.window, self.coefficients)?;
        for (_, v) in &self.held {
            dft.push(*v)?;
        }
        dft.set_seen(self.seen);
        Ok(dft)
    }
}

impl Accumulator for OrderedWindow {
    fn update_batch(&mut self, values: &[ArrayRef]) -> datafusion::error::Result<()> {
        let (Some(x), Some(t)) = (values.first(), values.last()) else {
            return Ok(());
        };
        let x: Float64Array = crate::values::as_f64(x.as_ref()).map_err(external)?;
        if let Some(v) = x.iter().flatten().find(|v| !v.is_finite()) {
            return Err(external(brook_err!(
                OutOfRange,
                "a DFT synopsis needs finite values, got {v}"
            )));
        }
        let valid = is_not_null(&x)?;
        let (x, t) = (filter(&x, &valid)?, filter(t.as_ref(), &valid)?);
        let x = x.as_primitive::<Float64Type>();
        self.seen += x.len() as u64;
        // DataFusion feeds each partition in `t` order, a continuous query in arrival order:
        // sort either way; only the last `window` rows by `t` can stay.
        let order = sort_to_indices(&t, Some(self.options), None)?;
        let order = order.values();
        let tail = &order[order.len().saturating_sub(self.window)..];
        let mut incoming = Vec::with_capacity(tail.len());
        for &i in tail {
            let i = i as usize;
            incoming.push((ScalarValue::try_from_array(&t, i)?, x.value(i)));
        }
        self.absorb(incoming);
        Ok(())
    }

    fn evaluate(&mut self) -> datafusion::error::Result<ScalarValue> {
        Ok(ScalarValue::Binary(Some(
            self.dft().map_err(external)?.to_bytes(),
        )))
    }

    fn size(&self) -> usize {
        std::mem::size_of::<Self>() + self.held.iter().map(|(t, _)| t.size() + 8).sum::<usize>()
    }

    fn state(&mut self) -> datafusion::error::Result<Vec<ScalarValue>> {
        let keys: Vec<ScalarValue> = self.held.iter().map(|(t, _)| t.clone()).collect();
        let key_type = keys
            .first()
            .map(|k| k.data_type())
            .unwrap_or(DataType::Null);
        Ok(vec![
            ScalarValue::Binary(Some(self.dft().map_err(external)?.to_bytes())),
            ScalarValue::List(ScalarValue::new_list_nullable(&keys, &key_type)),
        ])
    }

    fn merge_batch(&mut self, states: &[ArrayRef]) -> datafusion::error::Result<()> {
        let (Some(sketches), Some(keys)) = (states.first(), states.get(1)) else {
            return Ok(());
        };
        let keys = keys.as_list::<i32>();
        for (row, bytes) in binary_values(sketches.as_ref())
            .map_err(external)?
            .into_iter()
            .enumerate()
        {
            let Some(bytes) = bytes else { continue };
            let part = Dft::from_bytes(bytes).map_err(external)?;
            let row_keys = keys.value(row);
            if row_keys.len() != part.values().len() {
                return Err(external(brook_err!(
                    Internal,
                    "partial DFT window and its order keys differ in length"
                )));
            }
            let mut incoming = Vec::with_capacity(row_keys.len());
            for (i, v) in part.values().iter().enumerate() {
                incoming.push((ScalarValue::try_from_array(&row_keys, i)?, *v));
            }
            self.seen += part.seen();
            self.absorb(incoming);
        }
        Ok(())
    }
}

/// `approx_corr(a, b)`: the correlation of two DFT synopses' windows estimated from their
/// spectra; NULL while a window is not full or is constant.
fn approx_corr(args: &[ArrayRef]) -> Result<ArrayRef> {
    let (Some(a), Some(b)) = (args.first(), args.get(1)) else {
        return Err(brook_err!(Internal, "approx_corr without two arguments"));
    };
    let (a, b) = (binary_values(a.as_ref())?, binary_values(b.as_ref())?);
    let mut out = Vec::with_capacity(a.len());
    for (a, b) in a.into_iter().zip(b) {
        let (Some(a), Some(b)) = (a, b) else {
            out.push(None);
            continue;
        };
        let (a, b) = (Dft::from_bytes(a)?, Dft::from_bytes(b)?);
        if (a.window(), a.coefficients()) != (b.window(), b.coefficients()) {
            return Err(brook_err!(InvalidParameter, "approx_corr needs synopses of one window and coefficient count, got {}/{} and {}/{}",
                a.window(),
                a.coefficients(),
                b.window(),
                b.coefficients()));
        }
        out.push(match (a.spectrum(), b.spectrum()) {
            (Some(sa), Some(sb)) => Some(sa.correlation(&sb).value),
            _ => None,
        });
    }
    Ok(Arc::new(Float64Array::from(out)))
}
