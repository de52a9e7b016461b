//! `now()` (and `current_timestamp`) at PostgreSQL's precision: microseconds.
//!
//! DataFusion's `now()` is the statement's start with nanoseconds, while every timestamp
//! Brook stores, casts to a precision or compares it with has microseconds: `localtimestamp
//! = current_timestamp` was false (the one rounded, the other not). This wraps DataFusion's
//! function and cuts its constant to the microsecond; the type stays DataFusion's (a
//! nanosecond timestamp), so plans and their coercions are unchanged. Written here because
//! DataFusion has no option for the precision of `now()`.

use datafusion::arrow::datatypes::{DataType, FieldRef};
use datafusion::common::config::ConfigOptions;
use datafusion::error::Result;
use datafusion::logical_expr::simplify::{ExprSimplifyResult, SimplifyContext};
use datafusion::logical_expr::{
    ColumnarValue, Documentation, Expr, ReturnFieldArgs, ScalarFunctionArgs, ScalarUDF,
    ScalarUDFImpl, Signature,
};
use datafusion::prelude::SessionContext;
use datafusion::scalar::ScalarValue;
use std::sync::Arc;

/// DataFusion's `now()`, its value cut to microseconds.
#[derive(Debug, PartialEq, Eq, Hash)]
struct MicrosecondNow {
    inner: Arc<ScalarUDF>,
}

impl ScalarUDFImpl for MicrosecondNow {
    fn name(&self) -> &str {
        self.inner.name()
    }

    fn aliases(&self) -> &[String] {
        self.inner.aliases()
    }

    fn signature(&self) -> &Signature {
        self.inner.signature()
    }

    fn with_updated_config(&self, config: &ConfigOptions) -> Option<ScalarUDF> {
        let inner = self.inner.inner().with_updated_config(config)?;
        Some(ScalarUDF::new_from_impl(MicrosecondNow {
            inner: Arc::new(inner),
        }))
    }

    fn return_type(&self, arg_types: &[DataType]) -> Result<DataType> {
        self.inner.return_type(arg_types)
    }

    fn return_field_from_args(&self, args: ReturnFieldArgs<'_>) -> Result<FieldRef> {
        self.inner.return_field_from_args(args)
    }

    fn simplify(&self, args: Vec<Expr>, info: &SimplifyContext) -> Result<ExprSimplifyResult> {
        Ok(match self.inner.simplify(args, info)? {
            ExprSimplifyResult::Simplified(Expr::Literal(
                ScalarValue::TimestampNanosecond(Some(ns), zone),
                metadata,
            )) => ExprSimplifyResult::Simplified(Expr::Literal(
                ScalarValue::TimestampNanosecond(Some(ns - ns.rem_euclid(1_000)), zone),
                metadata,
            )),
            other => other,
        })
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        self.inner.invoke_with_args(args)
    }

    fn documentation(&self) -> Option<&Documentation> {
        self.inner.documentation()
    }
}

/// Register `now()` (alias `current_timestamp`) in place of DataFusion's.
pub fn register(ctx: &SessionContext) {
    let config = ctx.state().config_options().clone();
    ctx.register_udf(ScalarUDF::new_from_impl(MicrosecondNow {
        inner: datafusion::functions::datetime::now(&config),
    }));
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::arrow::array::AsArray;
    use datafusion::arrow::datatypes::TimestampNanosecondType;

    #[tokio::test]
    async fn now_has_microseconds() {
        let ctx = SessionContext::new();
        register(&ctx);
        let batches = ctx
            .sql("SELECT now() AS a, current_timestamp AS b")
            .await
            .unwrap()
            .collect()
            .await
            .unwrap();
        let a = batches[0]
            .column(0)
            .as_primitive::<TimestampNanosecondType>()
            .value(0);
        let b = batches[0]
            .column(1)
            .as_primitive::<TimestampNanosecondType>()
            .value(0);
        assert_eq!(a % 1_000, 0);
        assert_eq!(a, b);
    }
}
