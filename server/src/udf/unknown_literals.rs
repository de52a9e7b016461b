//! `coalesce` with PostgreSQL's resolution of untyped literals: a text beside a date, time,
//! timestamp, interval or boolean takes that type (`coalesce(ts, '2021-01-01')`).
//!
//! DataFusion's `coalesce` unifies its arguments' types with `type_union_resolution`, which
//! has no rule for a text and a timestamp, so `coalesce(null::timestamp, '2021-01-01')` was
//! an error ("Fail to find the coerced type") where PostgreSQL reads the literal as a
//! timestamp, as it reads any quoted constant by its context. This wraps DataFusion's
//! function and resolves such arguments first; the cast of the text is then read as
//! PostgreSQL reads dates and times (`timestamp_text`). Written here because DataFusion's
//! coercion has no option for it.

use crate::udf::is_text;
use datafusion::arrow::datatypes::{DataType, FieldRef};
use datafusion::error::Result;
use datafusion::logical_expr::simplify::{ExprSimplifyResult, SimplifyContext};
use datafusion::logical_expr::{
    ColumnarValue, Documentation, Expr, ReturnFieldArgs, ScalarFunctionArgs, ScalarUDF,
    ScalarUDFImpl, Signature,
};
use datafusion::prelude::SessionContext;
use std::sync::Arc;

/// A type a text beside it is read as (DataFusion already does so for numbers).
fn reads_text(t: &DataType) -> bool {
    matches!(
        t,
        DataType::Date32
            | DataType::Date64
            | DataType::Time32(_)
            | DataType::Time64(_)
            | DataType::Timestamp(..)
            | DataType::Interval(_)
            | DataType::Boolean
    )
}

/// DataFusion's function behind PostgreSQL's resolution of text arguments.
#[derive(Debug, PartialEq, Eq, Hash)]
struct UnknownLiterals {
    inner: Arc<ScalarUDF>,
}

impl ScalarUDFImpl for UnknownLiterals {
    fn name(&self) -> &str {
        self.inner.name()
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

    fn simplify(&self, args: Vec<Expr>, info: &SimplifyContext) -> Result<ExprSimplifyResult> {
        self.inner.simplify(args, info)
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        self.inner.invoke_with_args(args)
    }

    fn conditional_arguments<'a>(
        &self,
        args: &'a [Expr],
    ) -> Option<(Vec<&'a Expr>, Vec<&'a Expr>)> {
        self.inner.inner().conditional_arguments(args)
    }

    fn short_circuits(&self) -> bool {
        self.inner.short_circuits()
    }

    /// The other arguments' common type for every argument when the texts can be read as
    /// it; otherwise DataFusion's coercion.
    fn coerce_types(&self, arg_types: &[DataType]) -> Result<Vec<DataType>> {
        let typed: Vec<DataType> = arg_types
            .iter()
            .filter(|t| !is_text(t) && !t.is_null())
            .cloned()
            .collect();
        let has_text = arg_types.iter().any(is_text);
        if has_text && !typed.is_empty() {
            let common = self.inner.coerce_types(&typed)?;
            if let Some(t) = common.first().filter(|t| reads_text(t)) {
                return Ok(vec![t.clone(); arg_types.len()]);
            }
        }
        self.inner.coerce_types(arg_types)
    }

    fn documentation(&self) -> Option<&Documentation> {
        self.inner.documentation()
    }
}

/// Register `coalesce` in place of DataFusion's.
pub fn register(ctx: &SessionContext) {
    ctx.register_udf(ScalarUDF::new_from_impl(UnknownLiterals {
        inner: datafusion::functions::core::coalesce(),
    }));
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::arrow::util::pretty::pretty_format_batches;

    #[tokio::test]
    async fn texts_beside_dates_and_times_take_their_type() {
        let ctx = SessionContext::new();
        register(&ctx);
        let sql = "SELECT coalesce(CAST(NULL AS DATE), '2021-01-02') AS d, \
                   coalesce(CAST(NULL AS BOOLEAN), 'true') AS b, \
                   coalesce(CAST(NULL AS INTERVAL), '1 day') AS i";
        let batches = ctx.sql(sql).await.unwrap().collect().await.unwrap();
        let schema = batches[0].schema();
        let types: Vec<&DataType> = schema.fields().iter().map(|f| f.data_type()).collect();
        assert_eq!(
            types,
            [
                &DataType::Date32,
                &DataType::Boolean,
                &DataType::Interval(datafusion::arrow::datatypes::IntervalUnit::MonthDayNano),
            ]
        );
        let expected = "\
+------------+------+--------+
| d          | b    | i      |
+------------+------+--------+
| 2021-01-02 | true | 1 days |
+------------+------+--------+";
        assert_eq!(
            pretty_format_batches(&batches).unwrap().to_string(),
            expected
        );
        // Texts among themselves, and numbers, stay DataFusion's.
        let batches = ctx
            .sql("SELECT coalesce(CAST(NULL AS TEXT), 'x') AS t, coalesce(CAST(NULL AS INT), 5) AS n")
            .await
            .unwrap()
            .collect()
            .await
            .unwrap();
        assert!(is_text(batches[0].schema().field(0).data_type()));
        assert!(batches[0].schema().field(1).data_type().is_integer());
    }
}
