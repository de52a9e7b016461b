//! PostgreSQL's administration functions that clients call when they connect, reflect a
//! table or return a pooled connection: `pg_size_pretty`,
//! `pg_advisory_unlock_all`, `pg_typeof`, what pg_dump asks (`pg_is_in_recovery`, `acldefault`,
//! `pg_get_triggerdef`, `pg_get_function_sqlbody`), the `pg_*_is_visible` checks of pg_catalog's objects, the
//! object descriptions (`obj_description` & co.), and
//! `set_config` for describing a statement.

use brook_common::brook_err;
use datafusion::arrow::array::{ArrayRef, AsArray, BooleanArray, StringArray};
use datafusion::arrow::datatypes::{DataType, Int64Type};
use datafusion::error::DataFusionError;
use datafusion::logical_expr::{
    create_udf, ColumnarValue, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, Volatility,
};
use datafusion::prelude::SessionContext;
use datafusion::scalar::ScalarValue;
use std::sync::Arc;

/// Register the functions on a database context.
pub fn register(ctx: &SessionContext) {
    if let Ok(inner) = datafusion::execution::FunctionRegistry::udf(ctx, "format_type") {
        ctx.register_udf(ScalarUDF::new_from_impl(FormatType { inner }));
    }
    ctx.register_udf(create_udf(
        "pg_size_pretty",
        vec![DataType::Int64],
        DataType::Utf8,
        Volatility::Immutable,
        Arc::new(datafusion::functions::utils::make_scalar_function(
            |args: &[ArrayRef]| {
                let sizes = args[0].as_primitive::<Int64Type>();
                let out: StringArray = sizes.iter().map(|s| s.map(size_pretty)).collect();
                Ok(Arc::new(out) as ArrayRef)
            },
            vec![],
        )),
    ));
    // Brook takes no advisory locks, so a session holds none to release (asyncpg's pool
    // calls this on every connection it takes back). PostgreSQL's result is void: NULL.
    null_text(ctx, "pg_advisory_unlock_all", vec![], Volatility::Volatile);
    // A Brook server is never a standby replaying another's log (pg_dump asks before it
    // starts).
    ctx.register_udf(create_udf(
        "pg_is_in_recovery",
        vec![],
        DataType::Boolean,
        Volatility::Volatile,
        Arc::new(|_args: &[ColumnarValue]| {
            Ok(ColumnarValue::Scalar(ScalarValue::Boolean(Some(false))))
        }),
    ));
    // Brook grants no privileges (every object is its one role's), so each object has
    // the default privileges, which pg_dump reads as "nothing to GRANT or REVOKE" when an
    // object's ACL and its default are both NULL.
    null_text(
        ctx,
        "acldefault",
        vec![DataType::Utf8, DataType::Int64],
        Volatility::Stable,
    );
    // `pg_typeof(any)`: the name of its argument's type (regtype's text form).
    ctx.register_udf(ScalarUDF::new_from_impl(PgTypeof {
        signature: Signature::any(1, Volatility::Immutable),
    }));
    // Brook's tablespaces are PostgreSQL's two built-in ones, whose location is the data
    // directory: an empty text, as PostgreSQL answers for them (pg_dumpall asks).
    ctx.register_udf(create_udf(
        "pg_tablespace_location",
        vec![DataType::Int64],
        DataType::Utf8,
        Volatility::Stable,
        Arc::new(|_args: &[ColumnarValue]| {
            Ok(ColumnarValue::Scalar(ScalarValue::Utf8(
                Some(String::new()),
            )))
        }),
    ));
    // Brook's functions are built in, none has an SQL-standard body (`BEGIN ATOMIC`).
    null_text(
        ctx,
        "pg_get_function_sqlbody",
        vec![DataType::Int64],
        Volatility::Stable,
    );
    // Brook has no triggers (pg_trigger has no rows): there is no definition to give.
    null_text(
        ctx,
        "pg_get_triggerdef",
        vec![DataType::Int64, DataType::Boolean],
        Volatility::Stable,
    );
    // Brook has one role, `brook` (pg_roles), which owns every object: the owner psql's
    // `\d`, `\l` and `\dt+` show (the compatibility crate's answer was `postgres`, a role
    // pg_roles does not list).
    ctx.register_udf(create_udf(
        "pg_get_userbyid",
        vec![DataType::Int32],
        DataType::Utf8,
        Volatility::Stable,
        Arc::new(datafusion::functions::utils::make_scalar_function(
            |args: &[ArrayRef]| {
                let oids = args[0].as_primitive::<datafusion::arrow::datatypes::Int32Type>();
                let out: StringArray = oids.iter().map(|o| o.map(|_| "brook")).collect();
                Ok(Arc::new(out) as ArrayRef)
            },
            vec![],
        )),
    ));
    // Comments exist on relations and their columns only: `obj_description(oid,
    // 'pg_class')` and `col_description` are rewritten into lookups of `pg_description`
    // (brook_planner::catalog_lookups). Any other object's description (a schema's, a
    // database's: psql's `\l+`, `\dn+`, `\dT`) is NULL, as PostgreSQL's is for an object
    // without a comment.
    for name in ["obj_description", "col_description", "shobj_description"] {
        null_text(
            ctx,
            name,
            vec![DataType::Int64, DataType::Utf8],
            Volatility::Stable,
        );
    }
    // An array literal Brook cannot read (brook_planner::array_literal): nested ones are
    // 0A000, malformed ones 22P02, as PostgreSQL words them.
    ctx.register_udf(create_udf(
        brook_planner::array_literal::ARRAY_LITERAL_ERROR,
        vec![DataType::Utf8],
        DataType::Utf8,
        Volatility::Immutable,
        Arc::new(|args: &[ColumnarValue]| {
            let text = match &args[0] {
                ColumnarValue::Scalar(ScalarValue::Utf8(Some(t))) => t.clone(),
                _ => String::new(),
            };
            let e = if text.trim_start().starts_with("{{") {
                brook_err!(
                    Unsupported,
                    "multidimensional array literals are not supported: \"{text}\""
                )
            } else {
                brook_err!(InvalidText, "malformed array literal: \"{text}\"")
            };
            Err(DataFusionError::External(Box::new(e)))
        }),
    ));
    // Every type, function, operator and collation lives in pg_catalog, which is always
    // on the search path: visible (NULL for NULL, as PostgreSQL). psql's `\df`/`\dT` and
    // SQLAlchemy's column reflection filter by these.
    for name in [
        "pg_collation_is_visible",
        "pg_function_is_visible",
        "pg_type_is_visible",
        "pg_operator_is_visible",
        "pg_opclass_is_visible",
        "pg_conversion_is_visible",
    ] {
        ctx.register_udf(create_udf(
            name,
            vec![DataType::Int64],
            DataType::Boolean,
            Volatility::Stable,
            Arc::new(datafusion::functions::utils::make_scalar_function(
                |args: &[ArrayRef]| {
                    let oids = args[0].as_primitive::<Int64Type>();
                    let out: BooleanArray = oids.iter().map(|o| o.map(|_| true)).collect();
                    Ok(Arc::new(out) as ArrayRef)
                },
                vec![],
            )),
        ));
    }
    // `SELECT set_config(...)` runs as SET before it reaches DataFusion
    // (`handler::set_config`); DataFusion knows the function so that such a statement can
    // be described before it runs. Anywhere else it cannot change the session: 0A000.
    ctx.register_udf(create_udf(
        "set_config",
        vec![DataType::Utf8, DataType::Utf8, DataType::Boolean],
        DataType::Utf8,
        Volatility::Volatile,
        Arc::new(|_args: &[ColumnarValue]| {
            Err(DataFusionError::External(Box::new(brook_err!(
                Unsupported,
                "set_config() inside a larger query (call it alone: SELECT set_config(name, value, is_local), with constant arguments)"
            ))))
        }),
    ));
}

/// `pg_typeof(x)`: decided by the argument's type alone, one value for every row.
#[derive(Debug, PartialEq, Eq, Hash)]
struct PgTypeof {
    signature: Signature,
}

impl ScalarUDFImpl for PgTypeof {
    fn name(&self) -> &str {
        "pg_typeof"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _arg_types: &[DataType]) -> datafusion::error::Result<DataType> {
        Ok(DataType::Utf8)
    }

    fn invoke_with_args(
        &self,
        args: ScalarFunctionArgs,
    ) -> datafusion::error::Result<ColumnarValue> {
        let name = crate::pg::types::typeof_field_name(&args.arg_fields[0]);
        Ok(ColumnarValue::Scalar(ScalarValue::Utf8(Some(name))))
    }
}

/// Register `name(args)`, a function whose answer is always a NULL text: what PostgreSQL
/// answers for an object Brook never has (a trigger, a function body, a comment elsewhere
/// than on a relation) or a result of type void.
fn null_text(ctx: &SessionContext, name: &str, args: Vec<DataType>, volatility: Volatility) {
    ctx.register_udf(create_udf(
        name,
        args,
        DataType::Utf8,
        volatility,
        Arc::new(|_args: &[ColumnarValue]| Ok(ColumnarValue::Scalar(ScalarValue::Utf8(None)))),
    ));
}

/// PostgreSQL's `pg_size_pretty(bigint)`: bytes below 10 kB, then kB, MB, GB, TB and PB,
/// each unit used below 20,480 of it, the last step rounded half away from zero.
fn size_pretty(size: i64) -> String {
    // (name, limit, rounded, bits)
    const UNITS: [(&str, i64, bool, u32); 6] = [
        ("bytes", 10 * 1024, false, 0),
        ("kB", 20 * 1024 - 1, true, 10),
        ("MB", 20 * 1024 - 1, true, 20),
        ("GB", 20 * 1024 - 1, true, 30),
        ("TB", 20 * 1024 - 1, true, 40),
        ("PB", 20 * 1024 - 1, true, 50),
    ];
    let mut size = size;
    for (i, &(name, limit, round, bits)) in UNITS.iter().enumerate() {
        let last = i + 1 == UNITS.len();
        if last || size.unsigned_abs() < limit as u64 {
            if round {
                size = (size + if size < 0 { -1 } else { 1 }) / 2;
            }
            return format!("{size} {name}");
        }
        let (_, _, next_round, next_bits) = UNITS[i + 1];
        // One bit fewer when the next unit rounds its last half.
        let shift = next_bits - bits - u32::from(next_round) + u32::from(round);
        size /= 1i64 << shift;
    }
    unreachable!("the last unit always answers")
}

#[cfg(test)]
mod tests {
    use super::size_pretty;

    /// PostgreSQL 15's answers.
    #[test]
    fn sizes_read_as_postgresql_prints_them() {
        for (size, text) in [
            (0, "0 bytes"),
            (10239, "10239 bytes"),
            (10240, "10 kB"),
            (1_048_576, "1024 kB"),
            (20_971_520, "20 MB"),
            (1_073_741_824, "1024 MB"),
            (-10240, "-10 kB"),
            (i64::MAX, "8192 PB"),
        ] {
            assert_eq!(size_pretty(size), text, "{size}");
        }
    }
}

/// `format_type(oid, typmod)` with the modifier of an array's element type
/// (`character varying(2)[]`); the compatibility crate's function prints modifiers of
/// scalar types only (`character varying[]`), and does not know `xml`. An array type's
/// row is formatted as its element's, then marked `[]`.
#[derive(Debug, PartialEq, Eq, Hash)]
struct FormatType {
    inner: Arc<ScalarUDF>,
}

impl ScalarUDFImpl for FormatType {
    fn name(&self) -> &str {
        self.inner.name()
    }

    fn signature(&self) -> &Signature {
        self.inner.signature()
    }

    fn return_type(&self, arg_types: &[DataType]) -> datafusion::error::Result<DataType> {
        self.inner.return_type(arg_types)
    }

    fn invoke_with_args(
        &self,
        mut args: ScalarFunctionArgs,
    ) -> datafusion::error::Result<ColumnarValue> {
        let rows = args.number_rows;
        let oids =
            datafusion::arrow::compute::cast(&args.args[0].to_array(rows)?, &DataType::Int64)?;
        let oids = oids.as_primitive::<Int64Type>();
        let mut arrays = vec![false; oids.len()];
        let elements: datafusion::arrow::array::Int64Array = oids
            .iter()
            .enumerate()
            .map(|(r, oid)| {
                let elem = oid
                    .and_then(|o| u32::try_from(o).ok())
                    .and_then(postgres_types::Type::from_oid)
                    .and_then(|t| match t.kind() {
                        postgres_types::Kind::Array(e) => Some(i64::from(e.oid())),
                        _ => None,
                    });
                arrays[r] = elem.is_some();
                elem.or(oid)
            })
            .collect();
        let is_xml: Vec<bool> = elements
            .iter()
            .map(|oid| oid == Some(i64::from(postgres_types::Type::XML.oid())))
            .collect();
        if !arrays.contains(&true) && !is_xml.contains(&true) {
            return self.inner.invoke_with_args(args);
        }
        args.args[0] = ColumnarValue::Array(Arc::new(elements));
        let out = self.inner.invoke_with_args(args)?.to_array(rows)?;
        let out = out.as_string::<i32>();
        // The crate does not know xml (it printed `oid(142)`).
        let marked: StringArray = out
            .iter()
            .zip(arrays.iter().zip(&is_xml))
            .map(|(t, (array, xml))| {
                let t = if *xml { Some("xml") } else { t };
                t.map(|t| {
                    if *array {
                        format!("{t}[]")
                    } else {
                        t.to_string()
                    }
                })
            })
            .collect();
        Ok(ColumnarValue::Array(Arc::new(marked)))
    }
}
