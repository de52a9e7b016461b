//! String functions whose result length the caller chooses (`repeat`, `lpad`, `rpad`),
//! bounded to PostgreSQL's largest field (1 GB): past it they answer 54000 `requested length
//! too large`, as PostgreSQL does, instead of allocating gigabytes per row outside any
//! memory pool (`repeat('x', 2147483647)` allocated 2 GiB at once).
//!
//! Each wraps DataFusion's own function and checks the requested size before calling it;
//! written here because DataFusion bounds these only by its offset type.

use brook_common::BrookError;
use datafusion::arrow::array::{Array, ArrayRef, AsArray};
use datafusion::arrow::compute::{cast, kernels::length::length};
use datafusion::arrow::datatypes::{DataType, Int64Type};
use datafusion::error::{DataFusionError, Result};
use datafusion::logical_expr::{
    ColumnarValue, ReturnFieldArgs, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature,
};
use datafusion::prelude::SessionContext;
use std::sync::Arc;

/// PostgreSQL's largest field value, in bytes.
pub const MAX_FIELD_BYTES: i64 = 1 << 30;

/// How a function's result size follows from its arguments.
#[derive(Debug, PartialEq, Eq, Hash, Clone, Copy)]
enum Growth {
    /// `repeat(s, n)`: `n` copies of `s`.
    Repeat,
    /// `lpad/rpad(s, n [, fill])`: `n` characters of up to 4 bytes.
    Pad,
}

/// DataFusion's function, checked first.
#[derive(Debug, PartialEq, Eq, Hash)]
struct Bounded {
    inner: Arc<ScalarUDF>,
    growth: Growth,
}

impl ScalarUDFImpl for Bounded {
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

    fn return_field_from_args(
        &self,
        args: ReturnFieldArgs<'_>,
    ) -> Result<datafusion::arrow::datatypes::FieldRef> {
        self.inner.return_field_from_args(args)
    }

    fn coerce_types(&self, arg_types: &[DataType]) -> Result<Vec<DataType>> {
        self.inner.coerce_types(arg_types)
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        check_size(&args.args, self.growth)?;
        self.inner.invoke_with_args(args)
    }
}

/// 54000 when some row would produce more than [`MAX_FIELD_BYTES`].
fn check_size(args: &[ColumnarValue], growth: Growth) -> Result<()> {
    let (Some(text), Some(count)) = (args.first(), args.get(1)) else {
        return Ok(());
    };
    let rows = match (text, count) {
        (ColumnarValue::Array(a), _) | (_, ColumnarValue::Array(a)) => a.len(),
        _ => 1,
    };
    let counts: ArrayRef = cast(&count.to_array(rows)?, &DataType::Int64)?;
    let counts = counts.as_primitive::<Int64Type>();
    let bytes_per: Option<ArrayRef> = match growth {
        Growth::Repeat => Some(cast(&length(&text.to_array(rows)?)?, &DataType::Int64)?),
        Growth::Pad => None,
    };
    for r in 0..rows {
        if counts.is_null(r) {
            continue;
        }
        let n = counts.value(r).max(0);
        let each = match &bytes_per {
            Some(b) if b.is_valid(r) => b.as_primitive::<Int64Type>().value(r),
            Some(_) => 0,
            None => 4,
        };
        if n.saturating_mul(each) > MAX_FIELD_BYTES {
            return Err(DataFusionError::External(Box::new(BrookError::Limit {
                message: format!(
                    "requested length too large: {}() would build a value of more than 1 GB",
                    match growth {
                        Growth::Repeat => "repeat",
                        Growth::Pad => "lpad/rpad",
                    }
                ),
                code: "54000",
            })));
        }
    }
    Ok(())
}

/// Register the bounded `repeat`, `lpad` and `rpad` in place of DataFusion's.
pub fn register(ctx: &SessionContext) {
    let wrap = |inner: Arc<ScalarUDF>, growth| ScalarUDF::new_from_impl(Bounded { inner, growth });
    ctx.register_udf(wrap(
        datafusion::functions::string::repeat(),
        Growth::Repeat,
    ));
    ctx.register_udf(wrap(datafusion::functions::unicode::lpad(), Growth::Pad));
    ctx.register_udf(wrap(datafusion::functions::unicode::rpad(), Growth::Pad));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn huge_results_are_54000_and_small_ones_work() {
        let ctx = SessionContext::new();
        register(&ctx);
        let ok = ctx
            .sql("SELECT repeat('ab', 3), lpad('x', 3, '-'), rpad('x', 2)")
            .await
            .unwrap()
            .collect()
            .await
            .unwrap();
        assert_eq!(ok[0].num_rows(), 1);
        for sql in [
            "SELECT length(repeat('x', 2147483647))",
            "SELECT repeat(s, 600000000) FROM (VALUES ('ab'), ('c')) t(s)",
            "SELECT lpad('x', 300000000)",
        ] {
            let err = ctx.sql(sql).await.unwrap().collect().await.unwrap_err();
            assert_eq!(BrookError::from(err).sqlstate(), "54000", "{sql}");
        }
    }
}
