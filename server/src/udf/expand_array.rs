//! `brook_expandarray(list)`: each element of a list with its 1-based position, as a list
//! of structs `{x, n}`. `information_schema._pg_expandarray(a)` — the set-returning
//! function pgjdbc's `getPrimaryKeys`, `getIndexInfo` and `getBestRowIdentifier` select,
//! reading its fields as `(…).x` and `(…).n` — is rewritten to `unnest` of this
//! (`brook_planner::pg_functions::ExpandArray`). DataFusion has no function pairing
//! elements with their positions under these field names.

use datafusion::arrow::array::{Array, ArrayRef, AsArray, Int32Array, ListArray, StructArray};
use datafusion::arrow::datatypes::{DataType, Field, Fields};
use datafusion::common::exec_err;
use datafusion::error::Result;
use datafusion::logical_expr::{
    ColumnarValue, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, Volatility,
};
use datafusion::prelude::SessionContext;
use std::sync::Arc;

#[derive(Debug, PartialEq, Eq, Hash)]
struct ExpandArray {
    signature: Signature,
}

/// The struct `{x, n}` of an element type.
fn pair_fields(element: &DataType) -> Fields {
    Fields::from(vec![
        Field::new("x", element.clone(), true),
        Field::new("n", DataType::Int32, false),
    ])
}

impl ScalarUDFImpl for ExpandArray {
    fn name(&self) -> &str {
        brook_planner::pg_functions::EXPAND_ARRAY
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, arg_types: &[DataType]) -> Result<DataType> {
        match arg_types.first() {
            Some(DataType::List(item)) => Ok(DataType::List(Arc::new(Field::new_list_field(
                DataType::Struct(pair_fields(item.data_type())),
                true,
            )))),
            other => exec_err!("_pg_expandarray() needs an array, got {other:?}"),
        }
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let arrays = ColumnarValue::values_to_arrays(&args.args)?;
        let Some(DataType::List(item)) = arrays.first().map(|a| a.data_type().clone()) else {
            return exec_err!("_pg_expandarray() needs an array");
        };
        let lists = arrays[0].as_list::<i32>();
        // Positions restart at 1 in each list (its offsets give where each starts).
        let offsets = lists.value_offsets();
        let mut positions = Vec::with_capacity(lists.values().len());
        for row in 0..lists.len() {
            let len = offsets[row + 1] - offsets[row];
            positions.extend(1..=len);
        }
        let start = usize::try_from(offsets[0]).unwrap_or(0);
        let end = usize::try_from(offsets[lists.len()]).unwrap_or(start);
        let values = lists.values().slice(start, end - start);
        let pairs = StructArray::try_new(
            pair_fields(item.data_type()),
            vec![values, Arc::new(Int32Array::from(positions)) as ArrayRef],
            None,
        )?;
        let rebased = datafusion::arrow::buffer::OffsetBuffer::new(
            offsets
                .iter()
                .map(|o| o - offsets[0])
                .collect::<Vec<i32>>()
                .into(),
        );
        let out = ListArray::try_new(
            Arc::new(Field::new_list_field(
                DataType::Struct(pair_fields(item.data_type())),
                true,
            )),
            rebased,
            Arc::new(pairs),
            lists.nulls().cloned(),
        )?;
        Ok(ColumnarValue::Array(Arc::new(out)))
    }
}

/// Register the function on a database context.
pub fn register(ctx: &SessionContext) {
    ctx.register_udf(ScalarUDF::new_from_impl(ExpandArray {
        signature: Signature::any(1, Volatility::Immutable),
    }));
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::arrow::datatypes::Int16Type;

    #[test]
    fn elements_pair_with_their_positions() {
        let lists = ListArray::from_iter_primitive::<Int16Type, _, _>(vec![
            Some(vec![Some(3), Some(1)]),
            None,
            Some(vec![Some(7)]),
        ]);
        let f = ExpandArray {
            signature: Signature::any(1, Volatility::Immutable),
        };
        let arg_field = Arc::new(Field::new("a", lists.data_type().clone(), true));
        let out = f
            .invoke_with_args(ScalarFunctionArgs {
                args: vec![ColumnarValue::Array(Arc::new(lists))],
                arg_fields: vec![arg_field],
                number_rows: 3,
                return_field: Arc::new(Field::new("r", DataType::Null, true)),
                config_options: Arc::new(Default::default()),
            })
            .unwrap();
        let ColumnarValue::Array(out) = out else {
            panic!("an array")
        };
        let out = out.as_list::<i32>();
        assert!(out.is_null(1));
        let first = out.value(0);
        let first = first.as_struct();
        let x = first.column(0).as_primitive::<Int16Type>();
        let n = first
            .column(1)
            .as_primitive::<datafusion::arrow::datatypes::Int32Type>();
        assert_eq!((x.value(0), n.value(0)), (3, 1));
        assert_eq!((x.value(1), n.value(1)), (1, 2));
        let third = out.value(2);
        let third = third.as_struct();
        assert_eq!(
            third
                .column(1)
                .as_primitive::<datafusion::arrow::datatypes::Int32Type>()
                .value(0),
            1
        );
    }
}
