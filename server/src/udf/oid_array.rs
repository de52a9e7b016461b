//! `brook_oid_array(list)`: its argument unchanged, with the result field marked `oid[]`
//! when it is a list of integers, so the wire reports PostgreSQL's type for an aggregate of
//! catalog oids (`brook_planner::oid_arrays` says why asyncpg needs it).

use crate::pg::types::{OID_ARRAY_TYPE, PG_TYPE_KEY};
use datafusion::arrow::datatypes::{DataType, Field, FieldRef};
use datafusion::error::Result;
use datafusion::logical_expr::{
    ColumnarValue, ReturnFieldArgs, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature,
    Volatility,
};
use datafusion::prelude::SessionContext;
use std::collections::HashMap;
use std::sync::Arc;

#[derive(Debug, PartialEq, Eq, Hash)]
struct OidArray {
    signature: Signature,
}

impl ScalarUDFImpl for OidArray {
    fn name(&self) -> &str {
        brook_planner::oid_arrays::OID_ARRAY
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, arg_types: &[DataType]) -> Result<DataType> {
        Ok(arg_types.first().cloned().unwrap_or(DataType::Null))
    }

    fn return_field_from_args(&self, args: ReturnFieldArgs<'_>) -> Result<FieldRef> {
        let arg = &args.arg_fields[0];
        let field = Field::new(self.name(), arg.data_type().clone(), true);
        let is_oids = matches!(arg.data_type(), DataType::List(item)
            if *item.data_type() == DataType::Int32);
        Ok(Arc::new(if is_oids {
            field.with_metadata(HashMap::from([(
                PG_TYPE_KEY.to_string(),
                OID_ARRAY_TYPE.to_string(),
            )]))
        } else {
            field
        }))
    }

    fn invoke_with_args(&self, mut args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        Ok(args.args.remove(0))
    }
}

/// Register the function on a database context.
pub fn register(ctx: &SessionContext) {
    ctx.register_udf(ScalarUDF::new_from_impl(OidArray {
        signature: Signature::any(1, Volatility::Immutable),
    }));
}
