//! SQL functions Brook adds to DataFusion's library for PostgreSQL clients.

use crate::engine::SERVER_VERSION;
use datafusion::arrow::datatypes::DataType;
use datafusion::logical_expr::{create_udf, ColumnarValue, Volatility};
use datafusion::prelude::SessionContext;
use datafusion::scalar::ScalarValue;
use std::sync::Arc;

/// Register Brook's functions on a database context.
pub fn register(ctx: &SessionContext) {
    let version = format!(
        "PostgreSQL {SERVER_VERSION} (Brook {}) on {}, streaming SQL database",
        env!("CARGO_PKG_VERSION"),
        std::env::consts::ARCH
    );
    ctx.register_udf(create_udf(
        "version",
        vec![],
        DataType::Utf8,
        Volatility::Stable,
        Arc::new(move |_args: &[ColumnarValue]| {
            Ok(ColumnarValue::Scalar(ScalarValue::Utf8(Some(
                version.clone(),
            ))))
        }),
    ));
}
