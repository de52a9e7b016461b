//! DataFusion's array functions where PostgreSQL answers differently.
//!
//! Membership and containment with SQL's NULLs: DataFusion's `array_has` (what `x = ANY(a)` becomes), `array_has_all` (`@>`, `<@`) and
//! `array_has_any` (`&&`) answer `false`/`true` where PostgreSQL answers NULL:
//! `3 = ANY('{1,NULL}')` is NULL (the NULL element might be 3), and a NULL array or
//! element makes every test NULL (`NULL::int[] <@ '{1}'` was `true`, so `NOT (v <@ ...)`
//! dropped rows PostgreSQL keeps as unknown). Each wraps DataFusion's function and sets
//! those rows to NULL afterwards; written here because DataFusion has no option for it.
//!
//! `array_dims(a)` is PostgreSQL's text `[1:3]` (NULL for an empty array); DataFusion's
//! is a list of lengths (`{3}`). `array_length` of an empty array is NULL, as PostgreSQL's
//! (an empty array has no dimension 1); DataFusion's is 0.

use datafusion::arrow::array::{Array, ArrayRef, AsArray, BooleanArray, StringArray};
use datafusion::arrow::buffer::NullBuffer;
use datafusion::arrow::datatypes::{DataType, FieldRef};
use datafusion::error::Result;
use datafusion::execution::FunctionRegistry;
use datafusion::logical_expr::{
    ColumnarValue, ReturnFieldArgs, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature,
};
use datafusion::prelude::SessionContext;
use std::sync::Arc;

/// Which test a wrapped function is.
#[derive(Debug, PartialEq, Eq, Hash, Clone, Copy)]
enum Test {
    /// `array_has(a, x)`: also NULL when x is not found and a has a NULL element.
    Member,
    /// `array_has_all` / `array_has_any`: NULL when either array is NULL.
    Containment,
    /// `array_length(a, d)`: NULL for an empty array.
    Length,
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct WithNulls {
    inner: Arc<ScalarUDF>,
    test: Test,
}

impl ScalarUDFImpl for WithNulls {
    fn name(&self) -> &str {
        self.inner.name()
    }

    fn aliases(&self) -> &[String] {
        self.inner.aliases()
    }

    fn signature(&self) -> &Signature {
        self.inner.signature()
    }

    fn return_type(&self, arg_types: &[DataType]) -> Result<DataType> {
        self.inner.return_type(arg_types)
    }

    fn return_field_from_args(&self, args: ReturnFieldArgs<'_>) -> Result<FieldRef> {
        self.inner.return_field_from_args(args)
    }

    fn coerce_types(&self, arg_types: &[DataType]) -> Result<Vec<DataType>> {
        self.inner.coerce_types(arg_types)
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let rows = args.number_rows;
        let inputs: Vec<ArrayRef> = args
            .args
            .iter()
            .map(|a| a.to_array(rows))
            .collect::<Result<_>>()?;
        let all_scalar = args
            .args
            .iter()
            .all(|a| matches!(a, ColumnarValue::Scalar(_)));
        let out = self.inner.invoke_with_args(args)?.to_array(rows)?;
        let fixed: ArrayRef = match self.test {
            Test::Length => empty_as_null(&out)?,
            test => Arc::new(with_nulls(out.as_boolean(), &inputs, test)),
        };
        Ok(if all_scalar {
            ColumnarValue::Scalar(datafusion::scalar::ScalarValue::try_from_array(&fixed, 0)?)
        } else {
            ColumnarValue::Array(fixed)
        })
    }
}

/// `out` with the rows PostgreSQL answers NULL set to NULL.
fn with_nulls(out: &BooleanArray, inputs: &[ArrayRef], test: Test) -> BooleanArray {
    let valid: Vec<bool> = (0..out.len())
        .map(|r| {
            if out.is_null(r) || inputs.iter().any(|a| a.is_null(r)) {
                return false;
            }
            match test {
                Test::Containment | Test::Length => true,
                // Found is true whatever else the array holds; not found is unknown when
                // some element is NULL.
                Test::Member => out.value(r) || !has_null_element(&inputs[0], r),
            }
        })
        .collect();
    BooleanArray::new(out.values().clone(), Some(NullBuffer::from(valid)))
}

/// Lengths with 0 as NULL.
fn empty_as_null(out: &ArrayRef) -> Result<ArrayRef> {
    let lengths = datafusion::arrow::compute::cast(out, &DataType::UInt64)?;
    let lengths = lengths.as_primitive::<datafusion::arrow::datatypes::UInt64Type>();
    let zero = datafusion::arrow::array::UInt64Array::new_scalar(0);
    let empty = datafusion::arrow::compute::kernels::cmp::eq(lengths, &zero)?;
    Ok(datafusion::arrow::compute::nullif(out, &empty)?)
}

fn has_null_element(a: &ArrayRef, r: usize) -> bool {
    let values = match a.data_type() {
        DataType::List(_) => a.as_list::<i32>().value(r),
        DataType::LargeList(_) => a.as_list::<i64>().value(r),
        DataType::FixedSizeList(..) => a.as_fixed_size_list().value(r),
        _ => return false,
    };
    values.null_count() > 0
}

/// `array_dims` as PostgreSQL prints a one-dimensional array's bounds.
#[derive(Debug, PartialEq, Eq, Hash)]
struct ArrayDims {
    signature: Signature,
}

impl ScalarUDFImpl for ArrayDims {
    fn name(&self) -> &str {
        "array_dims"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(DataType::Utf8)
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let a = args.args[0].to_array(args.number_rows)?;
        let dims: StringArray = (0..a.len())
            .map(|r| {
                let n = element_count(&a, r)?;
                (n > 0).then(|| format!("[1:{n}]"))
            })
            .collect();
        Ok(ColumnarValue::Array(Arc::new(dims)))
    }
}

/// The number of elements of list row `r`, `None` when NULL or not a list.
fn element_count(a: &ArrayRef, r: usize) -> Option<usize> {
    if a.is_null(r) {
        return None;
    }
    match a.data_type() {
        DataType::List(_) => Some(a.as_list::<i32>().value_length(r) as usize),
        DataType::LargeList(_) => Some(a.as_list::<i64>().value_length(r) as usize),
        DataType::FixedSizeList(_, n) => Some(*n as usize),
        _ => None,
    }
}

/// Register the functions on a database context.
pub fn register(ctx: &SessionContext) {
    ctx.register_udf(ScalarUDF::new_from_impl(ArrayDims {
        signature: Signature::any(1, datafusion::logical_expr::Volatility::Immutable),
    }));
    for (name, test) in [
        ("array_has", Test::Member),
        ("array_has_all", Test::Containment),
        ("array_has_any", Test::Containment),
        ("array_length", Test::Length),
    ] {
        if let Ok(inner) = ctx.udf(name) {
            ctx.register_udf(ScalarUDF::new_from_impl(WithNulls { inner, test }));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn answers(sql: &str) -> Vec<Option<bool>> {
        let ctx = SessionContext::new();
        register(&ctx);
        let rows = ctx.sql(sql).await.unwrap().collect().await.unwrap();
        let b = rows[0].column(0).as_boolean().clone();
        b.iter().collect()
    }

    #[tokio::test]
    async fn membership_is_unknown_where_postgresql_says_so() {
        let sql = "SELECT array_has(a, x) FROM (VALUES (make_array(1, NULL), 3), \
                   (make_array(1, NULL), 1), (make_array(1, 2), 3), (NULL, 1), \
                   (make_array(1), NULL)) AS t(a, x)";
        assert_eq!(
            answers(sql).await,
            vec![None, Some(true), Some(false), None, None]
        );
    }

    #[tokio::test]
    async fn containment_of_a_null_array_is_unknown() {
        let sql = "SELECT array_has_all(a, make_array(1)) FROM (VALUES (make_array(1, 2)), \
                   (make_array(2)), (NULL)) AS t(a)";
        assert_eq!(answers(sql).await, vec![Some(true), Some(false), None]);
    }
}
