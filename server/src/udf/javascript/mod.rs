//! `CREATE FUNCTION ... LANGUAGE javascript` functions as DataFusion scalar functions.
//!
//! The body is a JavaScript function's body, as PL/v8 (PostgreSQL's JavaScript language)
//! takes it: the arguments are its parameters by name (an unnamed one is `$1`, `$2`, ...),
//! `return` gives the result, `undefined` and `null` are NULL, and a `throw` is an error
//! (P0001). It runs in a sandbox ([`sandbox`]), one call per row, in ad hoc and continuous
//! queries, materialized views and `CREATE AGGREGATE` transition functions alike.
//!
//! Written on the `rquickjs` crate (QuickJS) rather than RisingWave's `arrow-udf-js`,
//! which converts Arrow batches the same way: that crate is built on Arrow 54 (Brook's
//! DataFusion on Arrow 59) and on an async runtime a function call does not need, and
//! Brook converts values as PostgreSQL's types say (json parsed, numerics exact) rather
//! than as Arrow's.

mod sandbox;
mod values;

use crate::catalog::function::FunctionMeta;
use crate::exec::cancellable::StatementInterrupt;
use crate::pg::types::PgType;
use brook_common::{brook_err, BrookError, Result};
use datafusion::arrow::array::{new_empty_array, Array, ArrayRef};
use datafusion::arrow::compute::{cast_with_options, CastOptions};
use datafusion::arrow::datatypes::{DataType, Field, FieldRef};
use datafusion::error::{DataFusionError, Result as DfResult};
use datafusion::logical_expr::{
    ColumnarValue, ReturnFieldArgs, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature,
    Volatility,
};
use datafusion::scalar::ScalarValue;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

pub use sandbox::{CALL_TIME_LIMIT, MEMORY_LIMIT};

/// 42601 when the body of `meta` does not compile (at CREATE FUNCTION; a restart plans
/// the catalog's functions without running their code).
pub fn check(name: &str, meta: &FunctionMeta) -> Result<()> {
    let f = js_function(name, meta, CALL_TIME_LIMIT)?;
    sandbox::check(&f.source, &f.display)
}

/// The scalar function `name` of the JavaScript definition `meta` (compiled on its first
/// call on each thread).
pub fn plan(name: &str, meta: &FunctionMeta) -> Result<ScalarUDF> {
    Ok(ScalarUDF::new_from_impl(js_function(
        name,
        meta,
        CALL_TIME_LIMIT,
    )?))
}

/// The function of `meta`, its calls stopped after `call_limit`.
fn js_function(name: &str, meta: &FunctionMeta, call_limit: Duration) -> Result<JsFunction> {
    let args: Vec<PgType> = meta.args.iter().map(|a| a.ty.clone()).collect();
    for ty in args.iter().chain(std::iter::once(&meta.returns)) {
        if let Err(t) = values::supported(ty) {
            return Err(brook_err!(
                Unsupported,
                "{t} arguments and results of JavaScript functions (Brook passes booleans, \
                 numbers, text, json, dates, timestamps and arrays of them)"
            ));
        }
    }
    let params: Vec<String> = meta
        .args
        .iter()
        .enumerate()
        .map(|(i, a)| a.name.clone().unwrap_or_else(|| format!("${}", i + 1)))
        .collect();
    let display = meta.signature(name);
    let source = sandbox::Source {
        params,
        body: meta.body.clone(),
    };
    static NEXT_ID: AtomicU64 = AtomicU64::new(1);
    let volatility = meta.df_volatility();
    Ok(JsFunction {
        name: name.to_string(),
        id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
        signature: Signature::user_defined(volatility),
        arg_types: args.iter().map(PgType::arrow).collect(),
        args,
        returns: meta.returns.clone(),
        source,
        strict: meta.strict,
        display,
        call_limit,
    })
}

/// A planned JavaScript function.
#[derive(Debug)]
struct JsFunction {
    name: String,
    /// This definition (a CREATE OR REPLACE plans a new one): the key of its sandboxes.
    id: u64,
    signature: Signature,
    args: Vec<PgType>,
    arg_types: Vec<DataType>,
    returns: PgType,
    source: sandbox::Source,
    /// STRICT: NULL for a row with a NULL argument, without a call.
    strict: bool,
    /// `name(type, ...)`, for messages.
    display: String,
    /// Time one call may take.
    call_limit: Duration,
}

impl PartialEq for JsFunction {
    fn eq(&self, other: &Self) -> bool {
        self.id == other.id
    }
}

impl Eq for JsFunction {}

impl std::hash::Hash for JsFunction {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.id.hash(state);
    }
}

impl JsFunction {
    /// The function's value for each of `rows` rows of `arrays`, as values of the type
    /// [`carrier`] names.
    /// Calls stop when `cancel` (the statement's token) is cancelled.
    fn call_rows(
        &self,
        arrays: &[ArrayRef],
        rows: usize,
        cancel: Option<&CancellationToken>,
    ) -> Result<Vec<ScalarValue>> {
        let (id, source, display) = (self.id, &self.source, &self.display);
        sandbox::with_function(id, source, display, self.call_limit, |ctx, f, watch| {
            let mut out = Vec::with_capacity(rows);
            let elements_left = std::cell::Cell::new(values::ELEMENTS_PER_BATCH);
            for row in 0..rows {
                if cancel.is_some_and(|t| t.is_cancelled()) {
                    return Err(BrookError::Canceled);
                }
                if self.strict && arrays.iter().any(|a| a.is_null(row)) {
                    out.push(ScalarValue::try_from(&carrier(&self.returns))?);
                    continue;
                }
                let mut call = rquickjs::function::Args::new(ctx.clone(), arrays.len());
                for (a, ty) in arrays.iter().zip(&self.args) {
                    let v = ScalarValue::try_from_array(a, row)?;
                    call.push_arg(values::to_js(ctx, &v, ty)?)
                        .map_err(values::js_internal)?;
                }
                watch.start_call(cancel);
                let result: rquickjs::Value<'_> = f
                    .call_arg(call)
                    .map_err(|e| watch.error(ctx, e, &self.display))?;
                // Reading the result may run its code (`toJSON`, `getTime`).
                let thrown = |e| watch.error(ctx, e, &self.display);
                let reading = values::Reading {
                    function: &self.display,
                    thrown: &thrown,
                    elements_left: &elements_left,
                };
                out.push(values::from_js(ctx, result, &self.returns, &reading)?);
            }
            Ok(out)
        })
    }
}

/// The Arrow type a result is built as: the type's own, but text for numerics (read as
/// the numeric type by a cast, which rounds to its scale) and arrays of them.
fn carrier(ty: &PgType) -> DataType {
    match ty {
        PgType::Numeric { .. } => DataType::Utf8,
        PgType::Array(elem) => DataType::List(Arc::new(Field::new_list_field(carrier(elem), true))),
        other => other.arrow(),
    }
}

impl ScalarUDFImpl for JsFunction {
    fn name(&self) -> &str {
        &self.name
    }
    fn signature(&self) -> &Signature {
        &self.signature
    }
    fn return_type(&self, _args: &[DataType]) -> DfResult<DataType> {
        Ok(self.returns.arrow())
    }
    fn return_field_from_args(&self, _args: ReturnFieldArgs<'_>) -> DfResult<FieldRef> {
        Ok(Arc::new(self.returns.field(&self.name, true)))
    }
    fn coerce_types(&self, args: &[DataType]) -> DfResult<Vec<DataType>> {
        super::sql_function::coerce_arguments(&self.name, &self.display, args, &self.arg_types)
    }
    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> DfResult<ColumnarValue> {
        let (arrays, scalar, rows) = if self.signature.volatility == Volatility::Volatile {
            // Called once per row even without column arguments (`random_pick()`).
            let rows = args.number_rows;
            let arrays = args
                .args
                .iter()
                .map(|a| a.to_array(rows))
                .collect::<DfResult<Vec<_>>>()?;
            (arrays, false, rows)
        } else {
            super::argument_arrays(&args)?
        };
        // The statement's token, unless it was cancelled before this batch: a plan kept
        // beyond its statement (a materialized view's) holds the token of the statement
        // that planned it, which a later cancel must not reach.
        let cancel = args
            .config_options
            .extensions
            .get::<StatementInterrupt>()
            .and_then(|s| s.0.as_ref().map(|c| c.token()))
            .filter(|t| !t.is_cancelled());
        let values = self
            .call_rows(&arrays, rows, cancel.as_ref())
            .map_err(|e| DataFusionError::External(Box::new(e)))?;
        let built = if values.is_empty() {
            new_empty_array(&carrier(&self.returns))
        } else {
            ScalarValue::iter_to_array(values)?
        };
        let target = self.returns.arrow();
        let out = if built.data_type() == &target {
            built
        } else {
            let options = CastOptions {
                safe: false,
                ..Default::default()
            };
            cast_with_options(&built, &target, &options)?
        };
        super::result_value(out, scalar)
    }
}

#[cfg(test)]
mod tests;
