//! SQL functions Brook adds to DataFusion's library for PostgreSQL clients.
//!
//! Database-wide ones are registered on the database context ([`register`]); the ones that
//! read the session (its role, its settings) on each session's own context
//! ([`register_session`]).

use crate::config::SERVER_VERSION;
use crate::settings::Settings;
use brook_common::brook_err;
use datafusion::arrow::array::{Array, StringArray};
use datafusion::arrow::datatypes::DataType;
use datafusion::catalog::{TableFunctionArgs, TableFunctionImpl, TableProvider};
use datafusion::error::DataFusionError;
use datafusion::logical_expr::{create_udf, ColumnarValue, Expr, Volatility};
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
    for f in brook_planner::session_window::session_functions() {
        ctx.register_udwf(f);
    }
    for f in crate::udf::window_integers::functions() {
        ctx.register_udwf(f);
    }
    ctx.register_udf(brook_planner::window_start::window_start_function());
    for f in brook_planner::extract_numeric::functions() {
        ctx.register_udf(f);
    }
    ctx.register_udf(brook_planner::time_precision::time_precision_function());
    ctx.register_udf(brook_planner::whole_row::whole_row_function());
    ctx.register_udf(brook_planner::whole_row::row_function());
    ctx.register_udf(brook_planner::bare_value::bare_value_function());
    ctx.register_udf(brook_planner::string_casts::text_prefix_function());
    ctx.register_udf(brook_planner::like_escape::like_escape_function());
    // JSON: the functions `->`, `->>`, `?` and PostgreSQL's JSON functions become
    // (brook_planner::json_ops), and the typed getters; not `json_get`, whose union-typed
    // result no PostgreSQL client reads.
    for udf in [
        datafusion_functions_json::udfs::json_get_json_udf(),
        datafusion_functions_json::udfs::json_as_text_udf(),
        datafusion_functions_json::udfs::json_contains_udf(),
        datafusion_functions_json::udfs::json_length_udf(),
        datafusion_functions_json::udfs::json_object_keys_udf(),
        datafusion_functions_json::udfs::json_get_str_udf(),
        datafusion_functions_json::udfs::json_get_int_udf(),
        datafusion_functions_json::udfs::json_get_float_udf(),
        datafusion_functions_json::udfs::json_get_bool_udf(),
    ] {
        ctx.register_udf(udf.as_ref().clone());
    }
    // PostgreSQL's `gen_random_uuid()` (a version-4 uuid; ORMs use it as a default) is
    // DataFusion's `uuid()`.
    ctx.register_udf(
        datafusion::functions::string::uuid()
            .as_ref()
            .clone()
            .with_aliases(["gen_random_uuid"]),
    );
    ctx.register_udf(datafusion::logical_expr::ScalarUDF::new_from_impl(
        UuidCast {
            signature: datafusion::logical_expr::Signature::exact(
                vec![DataType::Utf8],
                Volatility::Immutable,
            ),
        },
    ));
    for (name, inner) in [
        (
            "generate_series",
            Arc::new(datafusion::functions_table::generate_series::GenerateSeriesFunc {})
                as Arc<dyn TableFunctionImpl>,
        ),
        (
            "range",
            Arc::new(datafusion::functions_table::generate_series::RangeFunc {}),
        ),
    ] {
        ctx.register_udtf(name, Arc::new(WidenedIntegers { inner }));
    }
}

/// `x::uuid`: typed `uuid` on the wire (its value the canonical text), as PostgreSQL types
/// the cast: clients decode it as a uuid (pgx scans `$1::uuid` into `[16]byte`).
#[derive(Debug, PartialEq, Eq, Hash)]
struct UuidCast {
    signature: datafusion::logical_expr::Signature,
}

impl datafusion::logical_expr::ScalarUDFImpl for UuidCast {
    fn name(&self) -> &str {
        brook_planner::pg_functions::UUID_CAST
    }

    fn signature(&self) -> &datafusion::logical_expr::Signature {
        &self.signature
    }

    fn return_type(&self, _arg_types: &[DataType]) -> datafusion::error::Result<DataType> {
        Ok(DataType::Utf8)
    }

    fn return_field_from_args(
        &self,
        _args: datafusion::logical_expr::ReturnFieldArgs<'_>,
    ) -> datafusion::error::Result<datafusion::arrow::datatypes::FieldRef> {
        Ok(Arc::new(
            crate::pg::types::PgType::Uuid.field(self.name(), true),
        ))
    }

    fn invoke_with_args(
        &self,
        args: datafusion::logical_expr::ScalarFunctionArgs,
    ) -> datafusion::error::Result<datafusion::logical_expr::ColumnarValue> {
        datafusion::functions::utils::make_scalar_function(uuid_cast, vec![])(&args.args)
    }
}

/// The canonical text of each uuid (22P02 for text that is none).
fn uuid_cast(
    args: &[datafusion::arrow::array::ArrayRef],
) -> datafusion::error::Result<datafusion::arrow::array::ArrayRef> {
    let text = datafusion::arrow::array::AsArray::as_string::<i32>(&args[0]);
    let out = text
        .iter()
        .map(|v| {
            v.map(|v| {
                crate::pg::uuid::canonical(v).ok_or_else(|| {
                    DataFusionError::External(Box::new(brook_err!(
                        InvalidText,
                        "invalid input syntax for type uuid: \"{v}\""
                    )))
                })
            })
            .transpose()
        })
        .collect::<datafusion::error::Result<StringArray>>()?;
    Ok(Arc::new(out))
}

/// `generate_series` / `range` taking integer arguments of any width, and parameters.
/// DataFusion's accept only 64-bit integer literals, but a client's bound parameter is often
/// a `smallint` or `integer` (psycopg binds a small Python int as int2), and a prepared
/// statement is described before it is bound, so `generate_series(1, $1)` failed (42601).
#[derive(Debug)]
struct WidenedIntegers {
    inner: Arc<dyn TableFunctionImpl>,
}

impl TableFunctionImpl for WidenedIntegers {
    fn call_with_args(
        &self,
        args: TableFunctionArgs<'_, '_>,
    ) -> datafusion::error::Result<Arc<dyn TableProvider>> {
        let widened: Vec<Expr> = args
            .exprs()
            .iter()
            .map(|e| match e {
                Expr::Literal(v, meta) => {
                    let wide = match v {
                        ScalarValue::Int8(x) => Some(x.map(i64::from)),
                        ScalarValue::Int16(x) => Some(x.map(i64::from)),
                        ScalarValue::Int32(x) => Some(x.map(i64::from)),
                        ScalarValue::UInt8(x) => Some(x.map(i64::from)),
                        ScalarValue::UInt16(x) => Some(x.map(i64::from)),
                        ScalarValue::UInt32(x) => Some(x.map(i64::from)),
                        _ => None,
                    };
                    match wide {
                        Some(w) => Expr::Literal(ScalarValue::Int64(w), meta.clone()),
                        None => e.clone(),
                    }
                }
                // Describing a prepared statement plans it before its parameters are
                // bound (Brook binds them into the statement's text when it runs): any
                // integer stands in, the output's shape does not depend on it.
                Expr::Placeholder(_) => Expr::Literal(ScalarValue::Int64(Some(0)), None),
                other => other.clone(),
            })
            .collect();
        self.inner
            .call_with_args(TableFunctionArgs::new(&widened, args.session()))
    }
}

/// Register the session-bound functions: `session_user` (the connected role),
/// `current_user`, `current_role` and `user` (the role SET ROLE chose, else the connected
/// one) and `current_setting(name [, missing_ok])`.
pub fn register_session(ctx: &SessionContext, user: &str, settings: Settings) {
    for name in ["current_user", "session_user", "current_role", "user"] {
        let user = user.to_string();
        let settings = settings.clone();
        let follows_role = name != "session_user";
        ctx.register_udf(create_udf(
            name,
            vec![],
            DataType::Utf8,
            Volatility::Stable,
            Arc::new(move |_args: &[ColumnarValue]| {
                let role = settings.get("role").filter(|r| follows_role && r != "none");
                Ok(ColumnarValue::Scalar(ScalarValue::Utf8(Some(
                    role.unwrap_or_else(|| user.clone()),
                ))))
            }),
        ));
    }
    ctx.register_udf(datafusion::logical_expr::ScalarUDF::new_from_impl(
        CurrentSetting {
            settings,
            signature: datafusion::logical_expr::Signature::one_of(
                vec![
                    datafusion::logical_expr::TypeSignature::Exact(vec![DataType::Utf8]),
                    datafusion::logical_expr::TypeSignature::Exact(vec![
                        DataType::Utf8,
                        DataType::Boolean,
                    ]),
                ],
                Volatility::Stable,
            ),
        },
    ));
}

/// `current_setting(name [, missing_ok])`: a session setting's value.
#[derive(Debug)]
struct CurrentSetting {
    settings: Settings,
    signature: datafusion::logical_expr::Signature,
}

// Equality and hashing by name: one instance per session, never compared across sessions.
impl PartialEq for CurrentSetting {
    fn eq(&self, _other: &Self) -> bool {
        true
    }
}
impl Eq for CurrentSetting {}
impl std::hash::Hash for CurrentSetting {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        "current_setting".hash(state);
    }
}

impl datafusion::logical_expr::ScalarUDFImpl for CurrentSetting {
    fn name(&self) -> &str {
        "current_setting"
    }

    fn signature(&self) -> &datafusion::logical_expr::Signature {
        &self.signature
    }

    fn return_type(&self, _arg_types: &[DataType]) -> datafusion::error::Result<DataType> {
        Ok(DataType::Utf8)
    }

    fn invoke_with_args(
        &self,
        args: datafusion::logical_expr::ScalarFunctionArgs,
    ) -> datafusion::error::Result<ColumnarValue> {
        let missing_ok = matches!(
            args.args.get(1),
            Some(ColumnarValue::Scalar(ScalarValue::Boolean(Some(true))))
        );
        let find = |name: &str| -> datafusion::error::Result<Option<String>> {
            match self.settings.get(&name.to_ascii_lowercase()) {
                Some(v) => Ok(Some(v)),
                None if missing_ok => Ok(None),
                None => Err(DataFusionError::External(Box::new(
                    brook_common::brook_err!(
                        UndefinedObject,
                        "unrecognized configuration parameter \"{name}\""
                    ),
                ))),
            }
        };
        let names = ColumnarValue::values_to_arrays(&args.args[..1])?;
        let names = names[0]
            .as_any()
            .downcast_ref::<StringArray>()
            .ok_or_else(|| {
                DataFusionError::Plan("current_setting expects a text argument".into())
            })?;
        let mut out = Vec::with_capacity(names.len());
        for i in 0..names.len() {
            out.push(if names.is_null(i) {
                None
            } else {
                find(names.value(i))?
            });
        }
        let out = StringArray::from(out);
        if matches!(args.args[0], ColumnarValue::Scalar(_)) {
            Ok(ColumnarValue::Scalar(ScalarValue::try_from_array(&out, 0)?))
        } else {
            Ok(ColumnarValue::Array(Arc::new(out)))
        }
    }
}

/// `brook_relkind(schema, name)`: `stream`, `materialized view` or `synopsis` for Brook's relations that
/// `pg_class.relkind` cannot tell apart from tables and views; NULL otherwise (psql's `\d`).
pub fn register_relkind(
    ctx: &SessionContext,
    catalog: Arc<datafusion::catalog::MemoryCatalogProvider>,
) {
    use datafusion::arrow::array::{Array, AsArray, StringArray};
    use datafusion::catalog::CatalogProvider;
    let kind = move |schema: &str, name: &str| -> Option<&'static str> {
        let provider = catalog.schema(schema)?;
        let table = crate::catalog::table::table_in(provider.as_ref(), name).ok()??;
        if let Some(t) = table.downcast_ref::<crate::catalog::table::BrookTable>() {
            return (t.meta.kind == crate::catalog::RelKind::Stream).then_some("stream");
        }
        table
            .downcast_ref::<crate::stream::view::ViewTable>()
            .map(|v| v.kind.noun())
    };
    ctx.register_udf(create_udf(
        "brook_relkind",
        vec![DataType::Utf8, DataType::Utf8],
        DataType::Utf8,
        Volatility::Stable,
        Arc::new(move |args: &[ColumnarValue]| {
            let rows = args
                .iter()
                .map(|a| match a {
                    ColumnarValue::Array(a) => a.len(),
                    ColumnarValue::Scalar(_) => 1,
                })
                .max()
                .unwrap_or(1);
            let arrays = ColumnarValue::values_to_arrays(args)?;
            let cast = |a: &datafusion::arrow::array::ArrayRef| {
                datafusion::arrow::compute::cast(a, &DataType::Utf8)
            };
            let (schemas, names) = (cast(&arrays[0])?, cast(&arrays[1])?);
            let (schemas, names) = (schemas.as_string::<i32>(), names.as_string::<i32>());
            let out: StringArray = (0..rows)
                .map(|i| {
                    if schemas.is_null(i) || names.is_null(i) {
                        None
                    } else {
                        kind(schemas.value(i), names.value(i))
                    }
                })
                .collect();
            Ok(ColumnarValue::Array(Arc::new(out)))
        }),
    ));
}
