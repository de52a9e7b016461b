//! `mode() WITHIN GROUP (ORDER BY x)`: PostgreSQL's most frequent value, exactly.
//!
//! DataFusion has no `mode`; PostgreSQL clients expect it (and the accuracy budget replaces
//! it by `approx_mode`, so its exact form must exist). Counts per distinct value; ties go to
//! the value first in the ORDER BY (the smallest for ASC), as PostgreSQL's sorted scan does.
//! Retracts, so it runs over updating inputs in continuous queries.

use datafusion::arrow::array::{Array, ArrayRef, AsArray, Int64Array};
use datafusion::arrow::datatypes::{DataType, Field, FieldRef};
use datafusion::error::{DataFusionError, Result};
use datafusion::logical_expr::function::{AccumulatorArgs, StateFieldsArgs};
use datafusion::logical_expr::{
    Accumulator, AggregateUDF, AggregateUDFImpl, Signature, Volatility,
};
use datafusion::scalar::ScalarValue;
use std::collections::HashMap;
use std::sync::Arc;

/// The aggregate.
pub fn udaf() -> AggregateUDF {
    AggregateUDF::new_from_impl(Mode {
        signature: Signature::any(1, Volatility::Immutable),
    })
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct Mode {
    signature: Signature,
}

impl AggregateUDFImpl for Mode {
    fn name(&self) -> &str {
        "mode"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, arg_types: &[DataType]) -> Result<DataType> {
        Ok(arg_types.first().cloned().unwrap_or(DataType::Null))
    }

    fn supports_within_group_clause(&self) -> bool {
        true
    }

    fn accumulator(&self, args: AccumulatorArgs<'_>) -> Result<Box<dyn Accumulator>> {
        let data_type = args
            .expr_fields
            .first()
            .map(|f| f.data_type().clone())
            .ok_or_else(|| {
                DataFusionError::Plan("mode() needs WITHIN GROUP (ORDER BY x)".into())
            })?;
        let descending = args.order_bys.first().is_some_and(|o| o.options.descending);
        Ok(Box::new(ModeAccumulator {
            counts: HashMap::new(),
            data_type,
            descending,
        }))
    }

    fn state_fields(&self, args: StateFieldsArgs<'_>) -> Result<Vec<FieldRef>> {
        let value = args
            .input_fields
            .first()
            .map(|f| f.data_type().clone())
            .unwrap_or(DataType::Null);
        Ok(vec![
            Arc::new(Field::new_list(
                format!("{}[values]", args.name),
                Field::new_list_field(value, true),
                true,
            )),
            Arc::new(Field::new_list(
                format!("{}[counts]", args.name),
                Field::new_list_field(DataType::Int64, true),
                true,
            )),
        ])
    }
}

/// Count per distinct non-null value. Invariant: every count is positive.
#[derive(Debug)]
struct ModeAccumulator {
    counts: HashMap<ScalarValue, i64>,
    data_type: DataType,
    descending: bool,
}

impl ModeAccumulator {
    fn add(&mut self, values: &ArrayRef, sign: i64) -> Result<()> {
        for i in 0..values.len() {
            if values.is_null(i) {
                continue;
            }
            let v = ScalarValue::try_from_array(values, i)?;
            match self.counts.get_mut(&v) {
                Some(n) if *n + sign <= 0 => {
                    self.counts.remove(&v);
                }
                Some(n) => *n += sign,
                None if sign > 0 => {
                    self.counts.insert(v, sign);
                }
                None => {}
            }
        }
        Ok(())
    }
}

impl Accumulator for ModeAccumulator {
    fn update_batch(&mut self, values: &[ArrayRef]) -> Result<()> {
        match values.first() {
            Some(v) => self.add(v, 1),
            None => Ok(()),
        }
    }

    fn retract_batch(&mut self, values: &[ArrayRef]) -> Result<()> {
        match values.first() {
            Some(v) => self.add(v, -1),
            None => Ok(()),
        }
    }

    fn supports_retract_batch(&self) -> bool {
        true
    }

    fn evaluate(&mut self) -> Result<ScalarValue> {
        let mut best: Option<(&ScalarValue, i64)> = None;
        for (v, &n) in &self.counts {
            let better = match best {
                None => true,
                Some((b, m)) => {
                    let first = match v.partial_cmp(b) {
                        Some(std::cmp::Ordering::Less) => !self.descending,
                        Some(std::cmp::Ordering::Greater) => self.descending,
                        _ => false,
                    };
                    n > m || (n == m && first)
                }
            };
            if better {
                best = Some((v, n));
            }
        }
        match best {
            Some((v, _)) => Ok(v.clone()),
            None => ScalarValue::try_from(&self.data_type),
        }
    }

    fn size(&self) -> usize {
        std::mem::size_of::<Self>() + self.counts.keys().map(|k| k.size() + 8).sum::<usize>()
    }

    fn state(&mut self) -> Result<Vec<ScalarValue>> {
        let values: Vec<ScalarValue> = self.counts.keys().cloned().collect();
        let counts: Vec<ScalarValue> = values
            .iter()
            .map(|v| ScalarValue::Int64(self.counts.get(v).copied()))
            .collect();
        Ok(vec![
            ScalarValue::List(ScalarValue::new_list_nullable(&values, &self.data_type)),
            ScalarValue::List(ScalarValue::new_list_nullable(&counts, &DataType::Int64)),
        ])
    }

    fn merge_batch(&mut self, states: &[ArrayRef]) -> Result<()> {
        let (Some(values), Some(counts)) = (states.first(), states.get(1)) else {
            return Ok(());
        };
        let (values, counts) = (values.as_list::<i32>(), counts.as_list::<i32>());
        for row in 0..values.len() {
            if values.is_null(row) {
                continue;
            }
            let (v, c) = (values.value(row), counts.value(row));
            let c = c
                .as_any()
                .downcast_ref::<Int64Array>()
                .ok_or_else(|| DataFusionError::Internal("mode() state counts".into()))?;
            for i in 0..v.len() {
                *self
                    .counts
                    .entry(ScalarValue::try_from_array(&v, i)?)
                    .or_insert(0) += c.value(i);
            }
        }
        Ok(())
    }
}
