//! An accumulator for aggregates that cannot retract, over an input that does.
//!
//! `min`, `max`, `bool_and`, `string_agg`, `array_agg`, percentiles, sketch unions
//! (`hll_union_agg`, ...) have no inverse: once a row is retracted, the aggregate of what is
//! left cannot be computed from the old result. This accumulator keeps what they need — the
//! group's argument rows as a multiset (order-preserving Arrow row encoding → count) — and
//! answers `min`/`max` from the ends of that ordered multiset (O(log n) per change, as
//! RisingWave's and Materialize's do) and every other aggregate by running a fresh
//! accumulator of the function over the kept rows when the group is read (once per group and
//! round). Written here because DataFusion's sliding accumulators retract only in arrival
//! order (for window frames), and a changelog retracts any row.

use datafusion::arrow::array::{Array, ArrayRef};
use datafusion::arrow::row::{RowConverter, SortField};
use datafusion::common::{DataFusionError, Result, ScalarValue};
use datafusion::logical_expr::Accumulator;
use datafusion::physical_expr::aggregate::AggregateFunctionExpr;
use std::collections::BTreeMap;
use std::sync::Arc;

/// Which end of the ordered multiset answers, for `min`/`max`.
#[derive(Debug, Clone, Copy, PartialEq)]
enum End {
    Min,
    Max,
}

/// The group's argument rows, kept to re-aggregate after retractions.
#[derive(Debug)]
pub struct KeptValues {
    func: Arc<AggregateFunctionExpr>,
    /// `min`/`max` of one argument: answered from the ordered keys.
    end: Option<End>,
    converter: Option<RowConverter>,
    rows: BTreeMap<Vec<u8>, i64>,
    bytes: usize,
}

impl KeptValues {
    pub fn new(func: Arc<AggregateFunctionExpr>) -> Self {
        let name = func.fun().name().to_ascii_lowercase();
        let single = func.expressions().len() == 1 && func.order_bys().is_empty();
        let end = match name.as_str() {
            "min" if single => Some(End::Min),
            "max" if single => Some(End::Max),
            _ => None,
        };
        KeptValues {
            func,
            end,
            converter: None,
            rows: BTreeMap::new(),
            bytes: 0,
        }
    }

    /// Add `sign` (+1 insert, -1 retract) of each row of `values` to the multiset.
    fn apply(&mut self, values: &[ArrayRef], sign: i64) -> Result<()> {
        let Some(first) = values.first() else {
            return Ok(());
        };
        if self.converter.is_none() {
            let fields = values
                .iter()
                .map(|v| SortField::new(v.data_type().clone()))
                .collect();
            self.converter = Some(RowConverter::new(fields)?);
        }
        let Some(converter) = &self.converter else {
            return Ok(());
        };
        let encoded = converter.convert_columns(values)?;
        for i in 0..first.len() {
            // min/max skip NULLs, as their accumulators do.
            if self.end.is_some() && first.is_null(i) {
                continue;
            }
            let row = encoded.row(i);
            let key = row.as_ref();
            match self.rows.get_mut(key) {
                Some(n) => {
                    *n += sign;
                    if *n == 0 {
                        self.bytes -= key.len();
                        self.rows.remove(key);
                    }
                }
                None if sign > 0 => {
                    self.bytes += key.len();
                    self.rows.insert(key.to_vec(), sign);
                }
                None => {
                    return Err(DataFusionError::Internal(
                        "a group retracted a value it never had".into(),
                    ))
                }
            }
        }
        Ok(())
    }

    /// The kept rows (each as often as it is kept), as columns.
    fn columns(&self, keys: &mut dyn Iterator<Item = (&Vec<u8>, &i64)>) -> Result<Vec<ArrayRef>> {
        let Some(converter) = &self.converter else {
            return Ok(Vec::new());
        };
        let parser = converter.parser();
        let mut rows = Vec::new();
        for (key, n) in keys {
            for _ in 0..*n {
                rows.push(parser.parse(key));
            }
        }
        Ok(converter.convert_rows(rows)?)
    }

    /// A fresh accumulator of the function fed every kept row.
    fn replay(&self) -> Result<Box<dyn Accumulator>> {
        let mut acc = self.func.create_accumulator()?;
        let cols = self.columns(&mut self.rows.iter())?;
        if !cols.is_empty() {
            acc.update_batch(&cols)?;
        }
        Ok(acc)
    }
}

impl Accumulator for KeptValues {
    fn update_batch(&mut self, values: &[ArrayRef]) -> Result<()> {
        self.apply(values, 1)
    }

    fn retract_batch(&mut self, values: &[ArrayRef]) -> Result<()> {
        self.apply(values, -1)
    }

    fn supports_retract_batch(&self) -> bool {
        true
    }

    fn evaluate(&mut self) -> Result<ScalarValue> {
        let end = match self.end {
            Some(End::Min) => self.rows.iter().next(),
            Some(End::Max) => self.rows.iter().next_back(),
            None => return self.replay()?.evaluate(),
        };
        match end {
            Some((key, _)) => {
                let col = self.columns(&mut std::iter::once((key, &1)))?;
                ScalarValue::try_from_array(&col[0], 0)
            }
            // No value left: the function's own answer over nothing (NULL).
            None => self.func.create_accumulator()?.evaluate(),
        }
    }

    fn size(&self) -> usize {
        std::mem::size_of_val(self)
            + self.bytes
            + self.rows.len() * 3 * std::mem::size_of::<usize>()
    }

    fn state(&mut self) -> Result<Vec<ScalarValue>> {
        self.replay()?.state()
    }

    fn merge_batch(&mut self, _states: &[ArrayRef]) -> Result<()> {
        // Partial states cannot be retracted from; over a retracting input every group is
        // fed rows, never states.
        Err(DataFusionError::Internal(
            "kept-values accumulator cannot merge partial states".into(),
        ))
    }
}
