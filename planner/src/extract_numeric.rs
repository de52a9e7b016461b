//! `EXTRACT(field FROM x)` as a numeric and `date_part('field', x)` as a double precision,
//! as PostgreSQL (since 14) types them. DataFusion plans both as its `date_part`, an
//! integer for most fields and a double for `epoch`: `extract(epoch FROM ts)` printed
//! `1704067200.5` (PostgreSQL `1704067200.500000`), `extract(year FROM ts)` reached a
//! client as an integer and `date_part('year', ts)` too, where PostgreSQL sends a numeric
//! and a double.
//!
//! A rewrite of the parsed statement names each call by what the user wrote
//! (`brook_extract`, `brook_date_part`: the `date_part` calls Brook's own rewrites make keep
//! DataFusion's types); this analyzer step, which runs first in
//! [`crate::extract_fields::ExtractFields`], makes each a cast of `date_part`: to a numeric
//! of PostgreSQL's scale for the field and the argument's type ([`scale`]), or to a double.
//! The fields whose values DataFusion computes otherwise than PostgreSQL are then Brook's
//! functions (`extract_fields`); `epoch` of a timestamp is counted there in exact
//! microseconds, not through a double.

use crate::pg_functions::function_call;
use datafusion::arrow::datatypes::{DataType, Field, FieldRef};
use datafusion::common::tree_node::Transformed;
use datafusion::common::{DFSchema, Result, ScalarValue};
use datafusion::logical_expr::expr::{Cast, ScalarFunction};
use datafusion::logical_expr::{
    ColumnarValue, Expr, ExprSchemable, ReturnFieldArgs, ScalarFunctionArgs, ScalarUDF,
    ScalarUDFImpl, Signature, Volatility,
};
use datafusion::sql::sqlparser::ast::{self, VisitMut, VisitorMut};
use datafusion_pg_catalog::sql::rules::SqlStatementRewriteRule;
use std::ops::ControlFlow;
use std::sync::Arc;

/// The function `EXTRACT(field FROM x)` becomes.
pub const EXTRACT: &str = "brook_extract";
/// The function a user's `date_part('field', x)` becomes.
pub const DATE_PART: &str = "brook_date_part";

/// Every `EXTRACT` and `date_part` a statement's text has, as [`EXTRACT`] / [`DATE_PART`].
#[derive(Debug)]
pub struct ExtractCalls;

impl SqlStatementRewriteRule for ExtractCalls {
    fn rewrite(&self, mut s: ast::Statement) -> ast::Statement {
        let _ = s.visit(&mut Calls);
        s
    }
}

struct Calls;

impl VisitorMut for Calls {
    type Break = ();

    fn post_visit_expr(&mut self, e: &mut ast::Expr) -> ControlFlow<()> {
        match e {
            ast::Expr::Extract { field, expr, .. } => {
                let field = ast::Expr::value(ast::Value::SingleQuotedString(format!("{field}")));
                let x = std::mem::replace(expr.as_mut(), ast::Expr::value(ast::Value::Null));
                *e = function_call(EXTRACT, vec![field, x]);
            }
            ast::Expr::Function(f)
                if f.over.is_none()
                    && crate::pg_functions::names_function(&f.name, "date_part", "pg_catalog") =>
            {
                f.name = ast::ObjectName::from(vec![ast::Ident::new(DATE_PART)]);
            }
            _ => {}
        }
        ControlFlow::Continue(())
    }
}

/// The decimals PostgreSQL's `extract` gives `field` of a value of type `t`: six for the
/// seconds and the epoch (none for a date's epoch), three for milliseconds, none for the
/// rest.
pub fn scale(field: &str, t: &DataType) -> i8 {
    use crate::extract_fields::{MILLISECONDS, SECONDS};
    match field.to_ascii_lowercase().as_str() {
        "epoch" if matches!(t, DataType::Date32 | DataType::Date64) => 0,
        "epoch" => 6,
        f if SECONDS.contains(&f) => 6,
        f if MILLISECONDS.contains(&f) => 3,
        _ => 0,
    }
}

/// `brook_extract(field, x)` as `CAST(date_part(field, x) AS numeric(38, s))`, and
/// `brook_date_part(field, x)` as `CAST(date_part(field, x) AS double precision)`.
pub(crate) fn planned(
    e: Expr,
    schema: &DFSchema,
    date_part: &Arc<ScalarUDF>,
) -> Result<Transformed<Expr>> {
    let Expr::ScalarFunction(f) = &e else {
        return Ok(Transformed::no(e));
    };
    let numeric = match f.name() {
        EXTRACT => true,
        DATE_PART => false,
        _ => return Ok(Transformed::no(e)),
    };
    let [field, source] = f.args.as_slice() else {
        return Ok(Transformed::no(e));
    };
    let to = match (numeric, field) {
        (false, _) => DataType::Float64,
        (true, Expr::Literal(ScalarValue::Utf8(Some(name)), _)) => {
            DataType::Decimal128(38, scale(name, &source.get_type(schema)?))
        }
        (true, _) => DataType::Decimal128(38, 6),
    };
    let call = Expr::ScalarFunction(ScalarFunction::new_udf(date_part.clone(), f.args.clone()));
    Ok(Transformed::yes(Expr::Cast(Cast::new(Box::new(call), to))))
}

/// [`EXTRACT`] and [`DATE_PART`] as functions, for the SQL planner to find. The analyzer
/// plans every call of a query away; an expression planned without it (a SQL function's
/// body) runs them as `date_part` cast to their types.
pub fn functions() -> Vec<ScalarUDF> {
    [EXTRACT, DATE_PART]
        .into_iter()
        .map(|name| {
            ScalarUDF::new_from_impl(Call {
                name,
                signature: Signature::any(2, Volatility::Immutable),
            })
        })
        .collect()
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct Call {
    name: &'static str,
    signature: Signature,
}

impl Call {
    fn result_type(&self, field: Option<&ScalarValue>, source: Option<&DataType>) -> DataType {
        match (self.name, field, source) {
            (DATE_PART, ..) => DataType::Float64,
            (_, Some(ScalarValue::Utf8(Some(f))), Some(t)) => DataType::Decimal128(38, scale(f, t)),
            _ => DataType::Decimal128(38, 6),
        }
    }
}

impl ScalarUDFImpl for Call {
    fn name(&self) -> &str {
        self.name
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, args: &[DataType]) -> Result<DataType> {
        Ok(self.result_type(None, args.get(1)))
    }

    fn return_field_from_args(&self, args: ReturnFieldArgs<'_>) -> Result<FieldRef> {
        let field = args.scalar_arguments.first().copied().flatten();
        let source = args.arg_fields.get(1).map(|f| f.data_type());
        Ok(Arc::new(Field::new(
            self.name,
            self.result_type(field, source),
            true,
        )))
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let date_part = datafusion::functions::datetime::date_part();
        let scalars: Vec<Option<ScalarValue>> = args
            .args
            .iter()
            .map(|a| match a {
                ColumnarValue::Scalar(s) => Some(s.clone()),
                ColumnarValue::Array(_) => None,
            })
            .collect();
        let scalar_refs: Vec<Option<&ScalarValue>> = scalars.iter().map(Option::as_ref).collect();
        let return_field = date_part.return_field_from_args(ReturnFieldArgs {
            arg_fields: &args.arg_fields,
            scalar_arguments: &scalar_refs,
        })?;
        let to = args.return_field.data_type().clone();
        let out = date_part.invoke_with_args(ScalarFunctionArgs {
            return_field,
            ..args
        })?;
        out.cast_to(&to, None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::rewritten;

    #[test]
    fn extract_and_date_part_are_named_by_what_was_written() {
        for (sql, want) in [
            (
                "SELECT EXTRACT(EPOCH FROM ts) FROM t",
                "SELECT brook_extract('EPOCH', ts) FROM t",
            ),
            (
                "SELECT date_part('year', ts), pg_catalog.date_part('dow', d) FROM t",
                "SELECT brook_date_part('year', ts), brook_date_part('dow', d) FROM t",
            ),
            (
                "SELECT extract(hour FROM extract(epoch FROM ts) * interval '1 s') FROM t",
                "SELECT brook_extract('HOUR', brook_extract('EPOCH', ts) * INTERVAL '1 s') FROM t",
            ),
        ] {
            assert_eq!(rewritten(&ExtractCalls, sql), want, "{sql}");
        }
    }

    #[test]
    fn fields_take_postgresqls_scales() {
        let ts = DataType::Timestamp(datafusion::arrow::datatypes::TimeUnit::Microsecond, None);
        assert_eq!(scale("EPOCH", &ts), 6);
        assert_eq!(scale("epoch", &DataType::Date32), 0);
        assert_eq!(scale("SECOND", &ts), 6);
        assert_eq!(scale("milliseconds", &ts), 3);
        assert_eq!(scale("YEAR", &ts), 0);
    }
}
