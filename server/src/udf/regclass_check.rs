//! `brook_regclass_check(oid, name)`: the oid a `'name'::regclass` cast looked up, or
//! PostgreSQL's 42P01 when the lookup found none (`brook_planner::system_columns::
//! CatalogRegclass` wraps the cast). The compatibility crate's lookup answers NULL, so
//! `'nosuch'::regclass` was NULL instead of an error, and a NULL in its non-nullable
//! result column was an internal error.

use brook_common::BrookError;
use datafusion::arrow::array::{Array, AsArray};
use datafusion::arrow::datatypes::{DataType, Field, FieldRef};
use datafusion::error::DataFusionError;
use datafusion::logical_expr::{
    ColumnarValue, ReturnFieldArgs, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature,
    Volatility,
};
use datafusion::prelude::SessionContext;
use std::sync::Arc;

#[derive(Debug, PartialEq, Eq, Hash)]
struct RegclassCheck {
    signature: Signature,
}

impl ScalarUDFImpl for RegclassCheck {
    fn name(&self) -> &str {
        brook_planner::system_columns::REGCLASS_CHECK
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, arg_types: &[DataType]) -> datafusion::error::Result<DataType> {
        Ok(arg_types.first().cloned().unwrap_or(DataType::Int32))
    }

    fn return_field_from_args(
        &self,
        args: ReturnFieldArgs<'_>,
    ) -> datafusion::error::Result<FieldRef> {
        let ty = args
            .arg_fields
            .first()
            .map_or(DataType::Int32, |f| f.data_type().clone());
        Ok(Arc::new(Field::new(self.name(), ty, true)))
    }

    fn invoke_with_args(
        &self,
        args: ScalarFunctionArgs,
    ) -> datafusion::error::Result<ColumnarValue> {
        let rows = args.number_rows;
        let arrays = ColumnarValue::values_to_arrays(&args.args)?;
        let names = datafusion::arrow::compute::cast(&arrays[1], &DataType::Utf8)?;
        let names = names.as_string::<i32>();
        for row in 0..rows {
            if arrays[0].is_null(row) && !names.is_null(row) {
                return Err(DataFusionError::External(Box::new(
                    BrookError::UndefinedTable(names.value(row).to_string()),
                )));
            }
        }
        Ok(args.args[0].clone())
    }
}

/// Register the function on a database context.
pub fn register(ctx: &SessionContext) {
    ctx.register_udf(ScalarUDF::new_from_impl(RegclassCheck {
        signature: Signature::any(2, Volatility::Stable),
    }));
}
