//! `brook_array_elements(a)`: an array of arrays as the array of its innermost elements,
//! in order (any other value unchanged), what `unnest` reads
//! (`brook_planner::unnest_arrays`). PostgreSQL's arrays are multi-dimensional, and
//! `unnest` gives every element; DataFusion's arrays of arrays are lists of lists, whose
//! `unnest` gave the sub-arrays. Written here because DataFusion's `flatten` takes one
//! level and refuses a value that is no list of lists.

use datafusion::arrow::array::{Array, ArrayRef, AsArray, ListArray};
use datafusion::arrow::buffer::OffsetBuffer;
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, Field, FieldRef};
use datafusion::error::Result;
use datafusion::logical_expr::simplify::{ExprSimplifyResult, SimplifyContext};
use datafusion::logical_expr::{
    ColumnarValue, Expr, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, Volatility,
};
use datafusion::prelude::SessionContext;
use std::sync::Arc;

/// The element field of a list type.
fn element(t: &DataType) -> Option<&FieldRef> {
    match t {
        DataType::List(f) | DataType::LargeList(f) | DataType::FixedSizeList(f, _) => Some(f),
        _ => None,
    }
}

/// The innermost element field of a list of lists (of any depth), `None` for any other
/// type.
fn innermost(t: &DataType) -> Option<FieldRef> {
    let mut field = element(element(t)?.data_type())?;
    while let Some(next) = element(field.data_type()) {
        field = next;
    }
    Some(field.clone())
}

/// A list of lists one level flatter: each row's sub-lists joined (a NULL sub-list adds
/// nothing); other arrays unchanged.
fn flatten_once(a: &ArrayRef) -> Result<ArrayRef> {
    let Some(inner) = element(a.data_type()).and_then(|f| element(f.data_type())) else {
        return Ok(a.clone());
    };
    let lists = DataType::List(Arc::new(Field::new_list_field(
        DataType::List(inner.clone()),
        true,
    )));
    let a = cast(a, &lists)?;
    let outer = a.as_list::<i32>();
    let nested = outer.values().as_list::<i32>();
    // Row i's elements run from the first sub-list's start to the last one's end.
    let starts = nested.offsets();
    let offsets: Vec<i32> = outer
        .offsets()
        .iter()
        .map(|&o| starts[o as usize])
        .collect();
    Ok(Arc::new(ListArray::try_new(
        inner.clone(),
        OffsetBuffer::new(offsets.into()),
        nested.values().clone(),
        outer.nulls().cloned(),
    )?))
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct ArrayElements {
    signature: Signature,
}

impl ScalarUDFImpl for ArrayElements {
    fn name(&self) -> &str {
        brook_planner::unnest_arrays::ARRAY_ELEMENTS
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, arg_types: &[DataType]) -> Result<DataType> {
        let t = &arg_types[0];
        Ok(match innermost(t) {
            Some(f) => DataType::List(f),
            None => t.clone(),
        })
    }

    /// Planned away for a value that is no list of lists: plans keep their shape.
    fn simplify(&self, args: Vec<Expr>, info: &SimplifyContext) -> Result<ExprSimplifyResult> {
        match args.as_slice() {
            [arg] if innermost(&info.get_data_type(arg)?).is_none() => {
                Ok(ExprSimplifyResult::Simplified(arg.clone()))
            }
            _ => Ok(ExprSimplifyResult::Original(args)),
        }
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let value = &args.args[0];
        if innermost(&value.data_type()).is_none() {
            return Ok(value.clone());
        }
        let mut a = value.to_array(args.number_rows)?;
        while innermost(a.data_type()).is_some() {
            a = flatten_once(&a)?;
        }
        Ok(match value {
            ColumnarValue::Scalar(_) => {
                ColumnarValue::Scalar(datafusion::scalar::ScalarValue::try_from_array(&a, 0)?)
            }
            ColumnarValue::Array(_) => ColumnarValue::Array(a),
        })
    }
}

pub fn register(ctx: &SessionContext) {
    ctx.register_udf(ScalarUDF::new_from_impl(ArrayElements {
        signature: Signature::any(1, Volatility::Immutable),
    }));
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::arrow::array::Int32Array;
    use datafusion::arrow::datatypes::Int32Type;

    /// Rows of sub-arrays (`None`: a NULL row or sub-array).
    type Rows = Vec<Option<Vec<Option<Vec<i32>>>>>;

    fn nested(rows: Rows) -> ArrayRef {
        let inner = Arc::new(Field::new_list_field(DataType::Int32, true));
        let mut b = datafusion::arrow::array::ListBuilder::new(
            datafusion::arrow::array::ListBuilder::new(
                datafusion::arrow::array::Int32Builder::new(),
            )
            .with_field(inner),
        );
        for row in rows {
            for sub in row.iter().flatten() {
                if let Some(v) = sub {
                    b.values().values().append_slice(v);
                }
                b.values().append(sub.is_some());
            }
            b.append(row.is_some());
        }
        Arc::new(b.finish())
    }

    #[test]
    fn a_list_of_lists_is_its_elements_in_order() {
        let a = nested(vec![
            Some(vec![Some(vec![1, 2]), Some(vec![3, 4])]),
            None,
            Some(vec![]),
            Some(vec![None, Some(vec![5])]),
        ]);
        // Sliced, so that offsets start past 0.
        let out = flatten_once(&a.slice(0, 4)).unwrap();
        let out = out.as_list::<i32>();
        let row = |r: usize| {
            out.value(r)
                .as_primitive::<Int32Type>()
                .iter()
                .flatten()
                .collect::<Vec<_>>()
        };
        assert_eq!(row(0), vec![1, 2, 3, 4]);
        assert!(out.is_null(1));
        assert_eq!(row(2), Vec::<i32>::new());
        assert_eq!(row(3), vec![5]);
        let tail = flatten_once(&a.slice(3, 1)).unwrap();
        assert_eq!(
            tail.as_list::<i32>()
                .value(0)
                .as_primitive::<Int32Type>()
                .values(),
            &[5]
        );
    }

    #[test]
    fn every_level_is_flattened() {
        let list = |t: DataType| DataType::List(Arc::new(Field::new_list_field(t, true)));
        let three = list(list(list(DataType::Utf8)));
        assert_eq!(
            innermost(&three).map(|f| f.data_type().clone()),
            Some(DataType::Utf8)
        );
        let udf = ArrayElements {
            signature: Signature::any(1, Volatility::Immutable),
        };
        assert_eq!(udf.return_type(&[three]).unwrap(), list(DataType::Utf8));
    }

    #[test]
    fn other_values_are_unchanged() {
        let flat: ArrayRef = Arc::new(Int32Array::from(vec![1, 2]));
        assert_eq!(flatten_once(&flat).unwrap().as_ref(), flat.as_ref());
        assert_eq!(innermost(&DataType::Int32), None);
    }
}
