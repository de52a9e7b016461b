//! `percentile_disc(fraction) WITHIN GROUP (ORDER BY x)`: PostgreSQL's discrete percentile,
//! exactly — the first value, in the `ORDER BY`'s order, whose position reaches `fraction`
//! of the group's non-NULL values; with an array of fractions, an array of such values.
//!
//! DataFusion has `percentile_cont` but no `percentile_disc`, and the accuracy budget
//! replaces `percentile_disc` by a KLL quantile (`brook_planner::approx`), so the exact form
//! must exist. It takes any type with an order (numbers, text, timestamps). The values are
//! kept as Arrow arrays and sorted once, when the result is asked for.

use brook_common::BrookError;
use datafusion::arrow::array::{Array, ArrayRef, AsArray, RecordBatch, RecordBatchOptions};
use datafusion::arrow::compute::{concat, filter, is_not_null, sort_to_indices, SortOptions};
use datafusion::arrow::datatypes::{DataType, Field, FieldRef, Schema};
use datafusion::error::{DataFusionError, Result};
use datafusion::logical_expr::function::{AccumulatorArgs, StateFieldsArgs};
use datafusion::logical_expr::{
    Accumulator, AggregateUDF, AggregateUDFImpl, ColumnarValue, Signature, Volatility,
};
use datafusion::physical_expr::PhysicalExpr;
use datafusion::scalar::ScalarValue;
use std::sync::Arc;

/// The aggregate.
pub fn udaf() -> AggregateUDF {
    AggregateUDF::new_from_impl(PercentileDisc {
        signature: Signature::any(2, Volatility::Immutable),
    })
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct PercentileDisc {
    signature: Signature,
}

/// Whether `t` is an array type (an array of fractions).
pub(super) fn is_list(t: &DataType) -> bool {
    matches!(
        t,
        DataType::List(_) | DataType::LargeList(_) | DataType::FixedSizeList(_, _)
    )
}

impl AggregateUDFImpl for PercentileDisc {
    fn name(&self) -> &str {
        "percentile_disc"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    /// The ordered values' type, or an array of it for an array of fractions. (With WITHIN
    /// GROUP, the ordered expression comes first and the fraction second.)
    fn return_type(&self, arg_types: &[DataType]) -> Result<DataType> {
        let value = arg_types.first().cloned().unwrap_or(DataType::Null);
        Ok(match arg_types.get(1) {
            Some(t) if is_list(t) => DataType::List(Arc::new(Field::new_list_field(value, true))),
            _ => value,
        })
    }

    fn supports_within_group_clause(&self) -> bool {
        true
    }

    fn accumulator(&self, args: AccumulatorArgs<'_>) -> Result<Box<dyn Accumulator>> {
        sorted_accumulator(args, false)
    }

    fn state_fields(&self, args: StateFieldsArgs<'_>) -> Result<Vec<FieldRef>> {
        Ok(sorted_state_fields(args))
    }
}

/// The accumulator of `percentile_disc`, or of `percentile_cont` over an array of
/// fractions (`continuous`: interpolated, over double precision values).
pub(super) fn sorted_accumulator(
    args: AccumulatorArgs<'_>,
    continuous: bool,
) -> Result<Box<dyn Accumulator>> {
    let data_type = args
        .expr_fields
        .first()
        .map(|f| f.data_type().clone())
        .ok_or_else(|| {
            DataFusionError::Plan(
                "percentile_disc needs WITHIN GROUP (ORDER BY x) and a fraction".into(),
            )
        })?;
    let fraction = args.exprs.get(1).ok_or_else(|| {
        DataFusionError::Plan("percentile_disc(fraction) takes a fraction".into())
    })?;
    let as_list = args
        .expr_fields
        .get(1)
        .is_some_and(|f| is_list(f.data_type()));
    // A constant is read (and checked) now; a fraction that names the group's columns
    // (`percentile_disc(v / 10.0) ... GROUP BY v`) from the group's first row.
    let fractions = match constant(fraction)? {
        Some(value) => Some(fractions_of(value)?),
        None => None,
    };
    let descending = args.order_bys.first().is_some_and(|o| o.options.descending);
    Ok(Box::new(PercentileDiscAccumulator {
        values: Vec::new(),
        data_type,
        continuous,
        from_rows: fractions.is_none(),
        fraction: None,
        fraction_type: args
            .expr_fields
            .get(1)
            .map(|f| f.data_type().clone())
            .unwrap_or(DataType::Float64),
        fractions: fractions.flatten(),
        as_list,
        descending,
    }))
}

/// The partial state of [`sorted_accumulator`]'s: the values and the fraction.
pub(super) fn sorted_state_fields(args: StateFieldsArgs<'_>) -> Vec<FieldRef> {
    let value = args
        .input_fields
        .first()
        .map(|f| f.data_type().clone())
        .unwrap_or(DataType::Null);
    let fraction = args
        .input_fields
        .get(1)
        .map(|f| f.data_type().clone())
        .unwrap_or(DataType::Float64);
    vec![
        Arc::new(Field::new_list(
            format!("{}[values]", args.name),
            Field::new_list_field(value, true),
            true,
        )),
        Arc::new(Field::new(
            format!("{}[fraction]", args.name),
            fraction,
            true,
        )),
    ]
}

/// The value of `expr` when it is a constant (None when it reads a column).
fn constant(expr: &Arc<dyn PhysicalExpr>) -> Result<Option<ScalarValue>> {
    let one_row = RecordBatch::try_new_with_options(
        Arc::new(Schema::empty()),
        vec![],
        &RecordBatchOptions::new().with_row_count(Some(1)),
    )?;
    Ok(match expr.evaluate(&one_row) {
        Ok(ColumnarValue::Scalar(s)) => Some(s),
        Ok(ColumnarValue::Array(a)) => Some(ScalarValue::try_from_array(&a, 0)?),
        Err(_) => None,
    })
}

/// The fraction argument's value(s): PostgreSQL's direct argument of an ordered-set
/// aggregate is one value for the whole group. A NULL fraction (or array) is None: a NULL
/// result; each fraction must be within [0, 1] (22003, as PostgreSQL checks).
fn fractions_of(value: ScalarValue) -> Result<Option<Vec<Option<f64>>>> {
    let as_list = is_list(&value.data_type());
    if value.is_null() {
        return Ok(None);
    }
    let items: Vec<ScalarValue> = if as_list {
        let array = value.to_array()?;
        let list = match array.data_type() {
            DataType::List(_) => array.as_list::<i32>().value(0),
            DataType::LargeList(_) => array.as_list::<i64>().value(0),
            _ => array.as_fixed_size_list().value(0),
        };
        (0..list.len())
            .map(|i| ScalarValue::try_from_array(&list, i))
            .collect::<Result<_>>()?
    } else {
        vec![value]
    };
    let mut out = Vec::with_capacity(items.len());
    for item in items {
        if item.is_null() {
            out.push(None);
            continue;
        }
        let f = match item.cast_to(&DataType::Float64)? {
            ScalarValue::Float64(Some(f)) => f,
            _ => return Err(DataFusionError::Plan("percentile_disc: fraction".into())),
        };
        if !(0.0..=1.0).contains(&f) {
            return Err(DataFusionError::from(BrookError::OutOfRange(format!(
                "percentile value {f} is not between 0 and 1"
            ))));
        }
        out.push(Some(f));
    }
    Ok(Some(out))
}

#[derive(Debug)]
struct PercentileDiscAccumulator {
    /// The group's values so far, as they came (NULLs are dropped when sorting).
    values: Vec<ArrayRef>,
    data_type: DataType,
    /// `percentile_cont`'s: interpolated between the two values around the fraction.
    continuous: bool,
    /// None when the fraction is NULL (or not read yet).
    fractions: Option<Vec<Option<f64>>>,
    /// Whether the fraction comes with the rows (it reads the group's columns).
    from_rows: bool,
    /// The fraction as it came with the group's first row, kept for the partial state.
    fraction: Option<ScalarValue>,
    fraction_type: DataType,
    as_list: bool,
    descending: bool,
}

impl PercentileDiscAccumulator {
    /// The group's fraction, from its first row (or a partial state), once.
    fn take_fraction(&mut self, value: ScalarValue) -> Result<()> {
        if self.fraction.is_none() {
            self.fractions = fractions_of(value.clone())?;
            self.fraction = Some(value);
        }
        Ok(())
    }

    fn return_type(&self) -> DataType {
        if self.as_list {
            DataType::List(Arc::new(Field::new_list_field(
                self.data_type.clone(),
                true,
            )))
        } else {
            self.data_type.clone()
        }
    }

    fn all_values(&self) -> Result<ArrayRef> {
        if self.values.is_empty() {
            return Ok(datafusion::arrow::array::new_empty_array(&self.data_type));
        }
        let parts: Vec<&dyn Array> = self.values.iter().map(|a| a.as_ref()).collect();
        Ok(concat(&parts)?)
    }
}

impl Accumulator for PercentileDiscAccumulator {
    fn update_batch(&mut self, values: &[ArrayRef]) -> Result<()> {
        if let Some(f) = values.get(1).filter(|f| self.from_rows && !f.is_empty()) {
            self.take_fraction(ScalarValue::try_from_array(f, 0)?)?;
        }
        if let Some(v) = values.first() {
            if v.len() > v.null_count() {
                self.values.push(v.clone());
            }
        }
        Ok(())
    }

    fn merge_batch(&mut self, states: &[ArrayRef]) -> Result<()> {
        let Some(lists) = states.first() else {
            return Ok(());
        };
        if let Some(f) = states.get(1).filter(|_| self.from_rows) {
            if let Some(row) = (0..f.len()).find(|&r| !f.is_null(r)) {
                self.take_fraction(ScalarValue::try_from_array(f, row)?)?;
            }
        }
        let lists = lists.as_list::<i32>();
        for row in 0..lists.len() {
            if !lists.is_null(row) {
                self.values.push(lists.value(row));
            }
        }
        Ok(())
    }

    fn state(&mut self) -> Result<Vec<ScalarValue>> {
        let all = self.all_values()?;
        let fraction = match &self.fraction {
            Some(f) => f.clone(),
            None => ScalarValue::try_from(&self.fraction_type)?,
        };
        Ok(vec![
            ScalarValue::List(Arc::new(
                datafusion::common::utils::SingleRowListArrayBuilder::new(all).build_list_array(),
            )),
            fraction,
        ])
    }

    fn evaluate(&mut self) -> Result<ScalarValue> {
        let null = ScalarValue::try_from(&self.data_type)?;
        let Some(fractions) = &self.fractions else {
            return ScalarValue::try_from(&self.return_type());
        };
        let all = self.all_values()?;
        let present = filter(&all, &is_not_null(&all)?)?;
        let order = sort_to_indices(
            &present,
            Some(SortOptions {
                descending: self.descending,
                nulls_first: false,
            }),
            None,
        )?;
        let n = order.len();
        if n == 0 {
            // No rows: NULL, not an array of NULLs (as PostgreSQL's).
            return ScalarValue::try_from(&self.return_type());
        }
        let mut picked = Vec::with_capacity(fractions.len());
        for f in fractions {
            picked.push(match f {
                Some(f) if self.continuous => {
                    // PostgreSQL: between the rows at floor and ceil of fraction * (rows -
                    // 1), counting from 0, in proportion.
                    let at = |k: usize| -> Result<f64> {
                        match ScalarValue::try_from_array(&present, order.value(k) as usize)? {
                            ScalarValue::Float64(Some(v)) => Ok(v),
                            other => Err(DataFusionError::Internal(format!(
                                "percentile_cont over {}",
                                other.data_type()
                            ))),
                        }
                    };
                    let position = f * (n - 1) as f64;
                    let (first, second) = (position.floor() as usize, position.ceil() as usize);
                    let (a, b) = (at(first)?, at(second.min(n - 1))?);
                    ScalarValue::Float64(Some(a + (position - first as f64) * (b - a)))
                }
                Some(f) => {
                    // PostgreSQL: the row at ceil(fraction * rows), counting from 1 (the
                    // first row for a fraction of 0).
                    let row = ((f * n as f64).ceil() as usize).clamp(1, n);
                    ScalarValue::try_from_array(&present, order.value(row - 1) as usize)?
                }
                _ => null.clone(),
            });
        }
        if self.as_list {
            Ok(ScalarValue::List(ScalarValue::new_list_nullable(
                &picked,
                &self.data_type,
            )))
        } else {
            Ok(picked.pop().unwrap_or(null))
        }
    }

    fn size(&self) -> usize {
        std::mem::size_of::<Self>()
            + self
                .values
                .iter()
                .map(|a| a.get_array_memory_size())
                .sum::<usize>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::arrow::array::{Int64Array, StringArray};

    fn accumulator(
        fractions: Option<Vec<Option<f64>>>,
        as_list: bool,
        descending: bool,
        ty: DataType,
    ) -> PercentileDiscAccumulator {
        PercentileDiscAccumulator {
            values: Vec::new(),
            data_type: ty,
            continuous: false,
            fractions,
            from_rows: false,
            fraction: None,
            fraction_type: DataType::Float64,
            as_list,
            descending,
        }
    }

    #[test]
    fn picks_as_postgresql_does() {
        // 1, 2, 4, 10 and a NULL, in two batches (the result does not depend on the cut).
        let mut a = accumulator(Some(vec![Some(0.5)]), false, false, DataType::Int64);
        a.update_batch(&[Arc::new(Int64Array::from(vec![Some(10), None]))])
            .unwrap();
        a.update_batch(&[Arc::new(Int64Array::from(vec![2, 1, 4]))])
            .unwrap();
        assert_eq!(a.evaluate().unwrap(), ScalarValue::Int64(Some(2)));
        a.fractions = Some(vec![Some(0.1), Some(0.5), None, Some(1.0), Some(0.0)]);
        a.as_list = true;
        let ScalarValue::List(list) = a.evaluate().unwrap() else {
            panic!()
        };
        let got: Vec<Option<i64>> = list
            .value(0)
            .as_primitive::<datafusion::arrow::datatypes::Int64Type>()
            .iter()
            .collect();
        assert_eq!(got, [Some(1), Some(2), None, Some(10), Some(1)]);
    }

    #[test]
    fn descending_order_and_text() {
        let mut a = accumulator(Some(vec![Some(1.0)]), false, true, DataType::Utf8);
        a.update_batch(&[Arc::new(StringArray::from(vec!["b", "a", "d", "c"]))])
            .unwrap();
        assert_eq!(a.evaluate().unwrap(), ScalarValue::Utf8(Some("a".into())));
    }

    #[test]
    fn merged_partial_states_give_the_same_answer() {
        let mut left = accumulator(Some(vec![Some(0.75)]), false, false, DataType::Int64);
        left.update_batch(&[Arc::new(Int64Array::from(vec![5, 1]))])
            .unwrap();
        let mut right = accumulator(Some(vec![Some(0.75)]), false, false, DataType::Int64);
        right
            .update_batch(&[Arc::new(Int64Array::from(vec![3, 7]))])
            .unwrap();
        let state: Vec<ArrayRef> = right
            .state()
            .unwrap()
            .iter()
            .map(|s| s.to_array().unwrap())
            .collect();
        left.merge_batch(&state).unwrap();
        assert_eq!(left.evaluate().unwrap(), ScalarValue::Int64(Some(5)));
    }

    #[test]
    fn a_fraction_that_reads_the_group_comes_with_its_rows() {
        use datafusion::arrow::array::Float64Array;
        let mut a = accumulator(None, false, false, DataType::Int64);
        a.from_rows = true;
        a.update_batch(&[
            Arc::new(Int64Array::from(vec![4, 1, 3, 2])),
            Arc::new(Float64Array::from(vec![0.75; 4])),
        ])
        .unwrap();
        assert_eq!(a.evaluate().unwrap(), ScalarValue::Int64(Some(3)));
        let mut merged = accumulator(None, false, false, DataType::Int64);
        merged.from_rows = true;
        let state: Vec<ArrayRef> = a
            .state()
            .unwrap()
            .iter()
            .map(|s| s.to_array().unwrap())
            .collect();
        merged.merge_batch(&state).unwrap();
        assert_eq!(merged.evaluate().unwrap(), ScalarValue::Int64(Some(3)));
    }

    #[test]
    fn continuous_percentiles_interpolate_as_postgresql_does() {
        use datafusion::arrow::array::Float64Array;
        let mut a = accumulator(
            Some(vec![Some(0.25), Some(0.5), Some(1.0)]),
            true,
            false,
            DataType::Float64,
        );
        a.continuous = true;
        a.update_batch(&[Arc::new(Float64Array::from(vec![
            Some(10.0),
            None,
            Some(1.0),
            Some(2.0),
            Some(4.0),
        ]))])
        .unwrap();
        let ScalarValue::List(list) = a.evaluate().unwrap() else {
            panic!()
        };
        let got: Vec<Option<f64>> = list
            .value(0)
            .as_primitive::<datafusion::arrow::datatypes::Float64Type>()
            .iter()
            .collect();
        // sorted 1, 2, 4, 10: 0.25 * 3 = 0.75 between 1 and 2; 0.5 * 3 = 1.5 between 2 and 4
        assert_eq!(got, [Some(1.75), Some(3.0), Some(10.0)]);
    }

    #[test]
    fn no_rows_or_a_null_fraction_give_null() {
        let mut a = accumulator(Some(vec![Some(0.5)]), false, false, DataType::Int64);
        assert_eq!(a.evaluate().unwrap(), ScalarValue::Int64(None));
        let mut b = accumulator(None, false, false, DataType::Int64);
        b.update_batch(&[Arc::new(Int64Array::from(vec![1]))])
            .unwrap();
        assert_eq!(b.evaluate().unwrap(), ScalarValue::Int64(None));
    }
}
