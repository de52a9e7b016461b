//! PostgreSQL's functions behind its operators (`int4pl`, `float8larger`, `textcat`, ...),
//! which aggregates name as their transition and combine functions (`CREATE AGGREGATE
//! s (int) (SFUNC = int4pl, STYPE = int)`) and which PostgreSQL lets any query call.
//!
//! Each is a STRICT, immutable SQL function over its operator, planned as user functions
//! are (`sql_function`), so it inlines and vectorizes the same way.

use crate::catalog::function::{FunctionArgMeta, FunctionMeta};
use crate::pg::types::PgType;
use brook_common::Result;
use datafusion::prelude::SessionContext;

/// (name, operand type, body over `$1`, `$2`).
fn definitions() -> Vec<(String, PgType, &'static str)> {
    let numeric = PgType::Numeric {
        precision: None,
        scale: None,
    };
    let arithmetic = [
        ("int2", PgType::Int2),
        ("int4", PgType::Int4),
        ("int8", PgType::Int8),
        ("float4", PgType::Float4),
        ("float8", PgType::Float8),
    ];
    let mut out = Vec::new();
    for (prefix, ty) in arithmetic {
        for (op, body) in [
            ("pl", "$1 + $2"),
            ("mi", "$1 - $2"),
            ("mul", "$1 * $2"),
            ("larger", "greatest($1, $2)"),
            ("smaller", "least($1, $2)"),
        ] {
            out.push((format!("{prefix}{op}"), ty.clone(), body));
        }
    }
    for (name, body) in [
        ("numeric_add", "$1 + $2"),
        ("numeric_sub", "$1 - $2"),
        ("numeric_mul", "$1 * $2"),
        ("numeric_larger", "greatest($1, $2)"),
        ("numeric_smaller", "least($1, $2)"),
    ] {
        out.push((name.to_string(), numeric.clone(), body));
    }
    for (name, body) in [
        ("textcat", "$1 || $2"),
        ("text_larger", "greatest($1, $2)"),
        ("text_smaller", "least($1, $2)"),
    ] {
        out.push((name.to_string(), PgType::Text, body));
    }
    for (name, body) in [
        ("boolor_statefunc", "$1 OR $2"),
        ("booland_statefunc", "$1 AND $2"),
    ] {
        out.push((name.to_string(), PgType::Bool, body));
    }
    out
}

/// Register them all in `ctx`, plus `int8inc(bigint)` (the count of rows, as `count(*)`
/// folds it).
pub fn register(ctx: &SessionContext) -> Result<()> {
    let meta = |args: Vec<PgType>, returns: PgType, body: &str| FunctionMeta {
        args: args
            .into_iter()
            .map(|ty| FunctionArgMeta { name: None, ty })
            .collect(),
        returns,
        language: Default::default(),
        body: body.to_string(),
        volatility: "immutable".into(),
        strict: true,
        comment: None,
    };
    let mut all: Vec<(String, FunctionMeta)> = definitions()
        .into_iter()
        .map(|(name, ty, body)| (name, meta(vec![ty.clone(), ty.clone()], ty, body)))
        .collect();
    all.push((
        "int8inc".into(),
        meta(vec![PgType::Int8], PgType::Int8, "$1 + 1"),
    ));
    let state = ctx.state();
    for (name, m) in all {
        ctx.register_udf(super::sql_function::plan(&name, &m, &state)?);
    }
    Ok(())
}
