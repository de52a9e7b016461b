//! `CREATE AGGREGATE` aggregates as DataFusion aggregate functions.
//!
//! PostgreSQL's model: a state of type STYPE starts at INITCOND, `SFUNC(state, args...)`
//! folds each row into it, `FINALFUNC(state)` gives the result, and
//! `COMBINEFUNC(state, state)` merges two partial states. Each function is planned once, at
//! CREATE and whenever the database's functions change, into a physical expression over a
//! one-row batch (`Step`); the fold runs in `fold`, or in `ordered` for a call with
//! `ORDER BY` or `DISTINCT`. Plans fold a user aggregate in one phase (`single_phase`), as
//! PostgreSQL does outside parallel plans, so COMBINEFUNC is checked at CREATE and never
//! run: the answer never depends on how the input was split (an INITCOND that is not the
//! combine function's identity would count once per part).
//!
//! It is an ordinary DataFusion aggregate: ad hoc, as a window function over any frame (one
//! whose start moves is folded again after rows leave it: `sliding`),
//! with `FILTER`, `DISTINCT` and `ORDER BY` inside the call, and in continuous queries and
//! materialized views (a group's state is kept between commits; over an updating input the
//! group keeps its rows and folds them again, having no inverse transition function).

mod fold;
mod ordered;
pub mod single_phase;
mod sliding;

use crate::catalog::aggregate::{AggregateMeta, MovingMeta};
use crate::pg::types::PgType;
use brook_common::{brook_err, BrookError, Result};
use datafusion::arrow::array::ArrayRef;
use datafusion::arrow::datatypes::{DataType, Field, FieldRef, Schema, SchemaRef};
use datafusion::arrow::record_batch::{RecordBatch, RecordBatchOptions};
use datafusion::common::DFSchema;
use datafusion::error::{DataFusionError, Result as DfResult};
use datafusion::execution::context::SessionState;
use datafusion::logical_expr::function::{AccumulatorArgs, StateFieldsArgs};
use datafusion::logical_expr::{
    Accumulator, AggregateUDF, AggregateUDFImpl, ExprSchemable, Signature, Volatility,
};
use datafusion::physical_expr::aggregate::AggregateFunctionExpr;
use datafusion::physical_expr::PhysicalExpr;
use datafusion::scalar::ScalarValue;
use std::sync::Arc;

/// One of the aggregate's functions, applied to one row of its arguments.
#[derive(Debug)]
struct Step {
    /// The function's name, for messages.
    function: String,
    /// Its parameters as the expression reads them.
    schema: SchemaRef,
    expr: Arc<dyn PhysicalExpr>,
    /// Per parameter, the type an argument is cast to first (None: it has that type).
    casts: Vec<Option<DataType>>,
    /// The type its result is kept as (the state type, or the aggregate's result).
    returns: DataType,
    /// STRICT: not called with a NULL argument.
    strict: bool,
}

impl Step {
    /// The function's value for one row of arguments (each array holds one row).
    fn call(&self, mut columns: Vec<ArrayRef>) -> DfResult<ScalarValue> {
        // A window over a moving frame folds each frame again inside one poll of its
        // operator (O(frame) calls per row): a cancel must reach it here.
        crate::exec::interrupt::check()?;
        for (c, to) in columns.iter_mut().zip(&self.casts) {
            if let Some(t) = to {
                // Implicit casts widen; one that cannot hold the value is an error, not NULL.
                let strict = datafusion::arrow::compute::CastOptions {
                    safe: false,
                    ..Default::default()
                };
                *c = datafusion::arrow::compute::cast_with_options(c, t, &strict)?;
            }
        }
        let batch = RecordBatch::try_new_with_options(
            self.schema.clone(),
            columns,
            &RecordBatchOptions::new().with_row_count(Some(1)),
        )?;
        let out = self.expr.evaluate(&batch)?.into_array(1)?;
        let value = ScalarValue::try_from_array(&out, 0)?;
        if value.data_type() == self.returns {
            Ok(value)
        } else {
            value.cast_to(&self.returns)
        }
    }
}

/// A planned user aggregate: what every accumulator of it shares.
#[derive(Debug)]
struct Planned {
    /// How many arguments it takes (an `ORDER BY` in the call adds its keys after them).
    args: usize,
    stype: DataType,
    returns: DataType,
    /// INITCOND read as STYPE (NULL when none).
    initial: ScalarValue,
    sfunc: Step,
    finalfunc: Option<Step>,
    /// The moving-aggregate mode (MSFUNC, MINVFUNC), for frames whose start moves.
    moving: Option<Arc<Moving>>,
}

/// The moving-aggregate mode: its own fold (MSFUNC over MSTYPE from MINITCOND, then
/// MFINALFUNC) and the inverse transition function that takes a row back out.
#[derive(Debug)]
struct Moving {
    planned: Arc<Planned>,
    inverse: Step,
}

/// How the aggregate's functions are known: whether a function is STRICT (user functions
/// say so; PostgreSQL's built-in transition functions are).
pub trait FunctionStrictness {
    fn is_strict(&self, name: &str) -> bool;
}

/// Plan `meta` as the aggregate `name`, its functions looked up in `state`.
pub fn plan(
    name: &str,
    meta: &AggregateMeta,
    state: &SessionState,
    strictness: &dyn FunctionStrictness,
) -> Result<AggregateUDF> {
    let arg_types: Vec<DataType> = meta.args.iter().map(|t| t.arrow()).collect();
    let stype = meta.stype.arrow();
    let mut sfunc_params = vec![stype.clone()];
    sfunc_params.extend(arg_types.iter().cloned());
    let sfunc = plan_step(state, strictness, &meta.sfunc, &sfunc_params, Some(&stype))?;
    require_initial(&sfunc, meta.initcond.is_some(), &arg_types, &stype)?;
    let finalfunc = plan_final(state, strictness, meta.finalfunc.as_deref(), &stype)?;
    // Checked, not run: see `single_phase`.
    if let Some(f) = meta.combinefunc.as_deref() {
        plan_step(
            state,
            strictness,
            f,
            &[stype.clone(), stype.clone()],
            Some(&stype),
        )?;
    }
    let initial = match &meta.initcond {
        None => ScalarValue::try_from(&stype)?,
        Some(text) => initial_state(state, text, &meta.stype)?,
    };
    let returns = finalfunc
        .as_ref()
        .map_or_else(|| stype.clone(), |f| f.returns.clone());
    let moving = meta
        .moving
        .as_ref()
        .map(|m| plan_moving(state, strictness, m, &arg_types, &returns))
        .transpose()?;
    let planned = Planned {
        args: arg_types.len(),
        stype,
        returns,
        initial,
        sfunc,
        finalfunc,
        moving,
    };
    Ok(AggregateUDF::new_from_impl(UserAggregate {
        name: name.to_string(),
        signature: Signature::user_defined(Volatility::Immutable),
        arg_types,
        display: meta.signature(name),
        planned: Arc::new(planned),
    }))
}

/// 42P13, as PostgreSQL: a STRICT transition function `sfunc` without an initial value
/// takes its first row's value as the state, so the first argument must be of the state
/// type `stype`.
fn require_initial(
    sfunc: &Step,
    has_initial: bool,
    arg_types: &[DataType],
    stype: &DataType,
) -> Result<()> {
    if sfunc.strict && !has_initial && arg_types.first() != Some(stype) {
        return Err(BrookError::invalid_function(
            "must not omit initial value when transition function is strict and transition \
             type is not compatible with input type",
        ));
    }
    Ok(())
}

/// The final function `f` (if any) over a state of `stype`.
fn plan_final(
    state: &SessionState,
    strictness: &dyn FunctionStrictness,
    f: Option<&str>,
    stype: &DataType,
) -> Result<Option<Step>> {
    f.map(|f| plan_step(state, strictness, f, std::slice::from_ref(stype), None))
        .transpose()
}

/// The moving-aggregate mode `m` of an aggregate of `arg_types` whose plain mode returns
/// `returns`, checked as PostgreSQL checks it (42P13).
fn plan_moving(
    state: &SessionState,
    strictness: &dyn FunctionStrictness,
    m: &MovingMeta,
    arg_types: &[DataType],
    returns: &DataType,
) -> Result<Arc<Moving>> {
    let mstype = m.mstype.arrow();
    let mut params = vec![mstype.clone()];
    params.extend(arg_types.iter().cloned());
    let msfunc = plan_step(state, strictness, &m.msfunc, &params, Some(&mstype))?;
    let inverse = plan_step(state, strictness, &m.minvfunc, &params, Some(&mstype))?;
    if msfunc.strict != inverse.strict {
        return Err(BrookError::invalid_function(
            "strictness of aggregate's forward and inverse transition functions must match",
        ));
    }
    require_initial(&msfunc, m.minitcond.is_some(), arg_types, &mstype)?;
    let mfinalfunc = plan_final(state, strictness, m.mfinalfunc.as_deref(), &mstype)?;
    let moving_returns = mfinalfunc
        .as_ref()
        .map_or_else(|| mstype.clone(), |f| f.returns.clone());
    if moving_returns != *returns {
        return Err(BrookError::invalid_function(format!(
            "moving-aggregate implementation returns type {}, but plain implementation \
             returns type {}",
            brook_common::types::sql_name(&moving_returns),
            brook_common::types::sql_name(returns)
        )));
    }
    let initial = match &m.minitcond {
        None => ScalarValue::try_from(&mstype)?,
        Some(text) => initial_state(state, text, &m.mstype)?,
    };
    Ok(Arc::new(Moving {
        planned: Arc::new(Planned {
            args: arg_types.len(),
            stype: mstype,
            returns: moving_returns,
            initial,
            sfunc: msfunc,
            finalfunc: mfinalfunc,
            moving: None,
        }),
        inverse,
    }))
}

/// Plan `function(p1, p2, ...)` over parameters of `params`' types; its result must cast to
/// `returns` when given (the state type), else it is the function's own.
fn plan_step(
    state: &SessionState,
    strictness: &dyn FunctionStrictness,
    function: &str,
    params: &[DataType],
    returns: Option<&DataType>,
) -> Result<Step> {
    let types: Vec<String> = params.iter().map(brook_common::types::sql_name).collect();
    let display = format!("{function}({})", types.join(", "));
    let undefined = || brook_err!(UndefinedFunction, "function {display} does not exist");
    let Some(udf) = state.scalar_functions().get(function) else {
        return Err(undefined());
    };
    // A SQL function takes the types it declares, as PostgreSQL looks a function up: by
    // implicit casts only (a text state is no untyped literal).
    if let Some((declared, result)) = super::sql_function::signature_of(udf) {
        let fits = declared.len() == params.len()
            && params
                .iter()
                .zip(declared)
                .all(|(p, d)| super::sql_function::implicitly_casts(p, d));
        if !fits {
            return Err(undefined());
        }
        if let Some(t) = returns.filter(|t| *t != result) {
            return Err(BrookError::DatatypeMismatch(format!(
                "return type of {function} is not {} (it returns {})",
                brook_common::types::sql_name(t),
                brook_common::types::sql_name(result)
            )));
        }
    }
    let schema: SchemaRef = Arc::new(Schema::new(
        params
            .iter()
            .enumerate()
            .map(|(i, t)| Field::new(format!("__p{}", i + 1), t.clone(), true))
            .collect::<Vec<_>>(),
    ));
    let call = format!(
        "\"{}\"({})",
        function.replace('"', "\"\""),
        (1..=params.len())
            .map(|i| format!("\"__p{i}\""))
            .collect::<Vec<_>>()
            .join(", ")
    );
    let df_schema = DFSchema::try_from(schema.as_ref().clone())?;
    let logical = state
        .create_logical_expr(&call, &df_schema)
        .map_err(|_| undefined())?;
    let result = logical.get_type(&df_schema).map_err(|_| undefined())?;
    let returns = match returns {
        Some(t) if result != *t && !datafusion::arrow::compute::can_cast_types(&result, t) => {
            return Err(BrookError::invalid_function(format!(
                "function {display} returns {}, not the state type {}",
                brook_common::types::sql_name(&result),
                brook_common::types::sql_name(t)
            )))
        }
        Some(t) => t.clone(),
        None => result,
    };
    // A SQL function's body is folded as it is, without the call around it (the fold
    // handles STRICT and the result's type itself): a row costs one evaluation.
    if let Some((body_schema, body)) = super::sql_function::body_of(udf) {
        let casts = params
            .iter()
            .zip(body_schema.fields())
            .map(|(p, f)| (p != f.data_type()).then(|| f.data_type().clone()))
            .collect();
        return Ok(Step {
            function: function.to_string(),
            schema: body_schema,
            expr: body,
            casts,
            returns,
            strict: strictness.is_strict(function),
        });
    }
    let logical = brook_planner::checked::CheckedIntegerArithmetic::default()
        .check_expression(logical, &df_schema)?;
    Ok(Step {
        function: function.to_string(),
        casts: vec![None; params.len()],
        schema,
        expr: state.create_physical_expr(logical, &df_schema)?,
        returns,
        strict: strictness.is_strict(function),
    })
}

/// INITCOND, read as the state type as a literal of that type is.
fn initial_state(state: &SessionState, text: &str, stype: &PgType) -> Result<ScalarValue> {
    // json and jsonb are text checked (and jsonb spaced) as Brook stores them; DataFusion's
    // CAST knows neither.
    if let PgType::Json | PgType::Jsonb = stype {
        let jsonb = *stype == PgType::Jsonb;
        return Ok(ScalarValue::Utf8(Some(crate::pg::json::stored(
            text, jsonb,
        )?)));
    }
    let sql = format!("CAST('{}' AS {})", text.replace('\'', "''"), stype.name());
    // An array's text (`'{0,0,0}'`) is read as an array literal is (DataFusion's CAST took
    // `'{x}'` for one text element, or failed on numbers).
    let sql = array_literal_sql(&sql).unwrap_or(sql);
    let empty = DFSchema::empty();
    let logical = state.create_logical_expr(&sql, &empty)?;
    let expr = state.create_physical_expr(logical, &empty)?;
    let batch = RecordBatch::try_new_with_options(
        Arc::new(Schema::empty()),
        vec![],
        &RecordBatchOptions::new().with_row_count(Some(1)),
    )?;
    let value = ScalarValue::try_from_array(&expr.evaluate(&batch)?.into_array(1)?, 0)?;
    Ok(value.cast_to(&stype.arrow())?)
}

/// `CAST('{...}' AS t[])` with the text as `ARRAY[...]` of its elements; None when `sql`
/// casts to no array type.
fn array_literal_sql(sql: &str) -> Option<String> {
    use datafusion::sql::sqlparser::ast::{ArrayElemTypeDef, DataType as SqlType, Expr, Value};
    let dialect = datafusion::sql::sqlparser::dialect::PostgreSqlDialect {};
    let mut parser = datafusion::sql::sqlparser::parser::Parser::new(&dialect)
        .try_with_sql(sql)
        .ok()?;
    let Expr::Cast {
        expr, data_type, ..
    } = parser.parse_expr().ok()?
    else {
        return None;
    };
    let SqlType::Array(ArrayElemTypeDef::SquareBracket(elem, _)) = &data_type else {
        return None;
    };
    let Expr::Value(v) = expr.as_ref() else {
        return None;
    };
    let Value::SingleQuotedString(text) = &v.value else {
        return None;
    };
    let array = brook_planner::array_literal::literal_as_array(text, elem);
    Some(format!("CAST({array} AS {data_type})"))
}

/// A planned aggregate as DataFusion calls it.
#[derive(Debug)]
struct UserAggregate {
    name: String,
    signature: Signature,
    arg_types: Vec<DataType>,
    /// `name(type, ...)`, for messages.
    display: String,
    planned: Arc<Planned>,
}

impl PartialEq for UserAggregate {
    fn eq(&self, other: &Self) -> bool {
        // One aggregate per name; a new definition is a new aggregate.
        self.name == other.name && Arc::ptr_eq(&self.planned, &other.planned)
    }
}

impl Eq for UserAggregate {}

impl std::hash::Hash for UserAggregate {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.name.hash(state);
    }
}

impl AggregateUDFImpl for UserAggregate {
    fn name(&self) -> &str {
        &self.name
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _args: &[DataType]) -> DfResult<DataType> {
        Ok(self.planned.returns.clone())
    }

    fn coerce_types(&self, args: &[DataType]) -> DfResult<Vec<DataType>> {
        // By implicit casts only, as PostgreSQL resolves an aggregate's arguments (a text
        // column is no number; an aggregate's argument is seldom an untyped literal).
        let fits = args.len() == self.arg_types.len()
            && args
                .iter()
                .zip(&self.arg_types)
                .all(|(a, p)| a.is_null() || super::sql_function::implicitly_casts(a, p));
        if !fits {
            let given: Vec<String> = args.iter().map(brook_common::types::sql_name).collect();
            return Err(DataFusionError::External(Box::new(brook_err!(
                UndefinedFunction,
                "function {}({}) does not exist (it is the aggregate {}); add explicit type \
                 casts",
                self.name,
                given.join(", "),
                self.display
            ))));
        }
        Ok(self.arg_types.clone())
    }

    fn accumulator(&self, args: AccumulatorArgs<'_>) -> DfResult<Box<dyn Accumulator>> {
        if args.order_bys.is_empty() && !args.is_distinct {
            return Ok(Box::new(fold::Fold::new(self.planned.clone())));
        }
        let order = args.order_bys.iter().map(|o| o.options).collect();
        Ok(Box::new(ordered::Ordered::new(
            self.planned.clone(),
            order,
            args.is_distinct,
        )))
    }

    fn create_sliding_accumulator(
        &self,
        args: AccumulatorArgs<'_>,
    ) -> DfResult<Box<dyn Accumulator>> {
        if !args.order_bys.is_empty() || args.is_distinct {
            return Err(DataFusionError::NotImplemented(format!(
                "the aggregate {} with ORDER BY or DISTINCT in the call over a window frame \
                 whose start moves",
                self.display
            )));
        }
        Ok(Box::new(sliding::Sliding::new(self.planned.clone())))
    }

    /// The value over no rows (a window frame that holds none, which DataFusion's window
    /// operator answers without an accumulator): INITCOND through FINALFUNC, as PostgreSQL
    /// evaluates an aggregate over no rows.
    fn default_value(&self, _data_type: &DataType) -> DfResult<ScalarValue> {
        fold::Fold::new(self.planned.clone()).evaluate()
    }

    fn state_fields(&self, args: StateFieldsArgs<'_>) -> DfResult<Vec<FieldRef>> {
        Ok(vec![Arc::new(Field::new(
            format!("{}[state]", args.name),
            self.planned.stype.clone(),
            true,
        ))])
    }
}

/// Whether the call `call` is of a user aggregate (planned in one phase: `single_phase`).
pub fn is_user_aggregate(call: &AggregateFunctionExpr) -> bool {
    call.fun().inner().is::<UserAggregate>()
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use crate::pg::types::PgType;

    /// Every function is STRICT.
    struct AllStrict;

    impl FunctionStrictness for AllStrict {
        fn is_strict(&self, _name: &str) -> bool {
            true
        }
    }

    /// `CREATE AGGREGATE (integer) (SFUNC = int4pl, STYPE = integer)`, planned; with
    /// `inverse`, its moving mode too (`MSFUNC = int4pl, MINVFUNC = int4mi`).
    pub(in crate::udf::sql_aggregate) fn int4_sum(inverse: bool) -> Arc<Planned> {
        let ctx = datafusion::prelude::SessionContext::new();
        crate::udf::operator_functions::register(&ctx).expect("operator functions");
        let moving = inverse.then(|| MovingMeta {
            msfunc: "int4pl".into(),
            minvfunc: "int4mi".into(),
            mstype: PgType::Int4,
            mfinalfunc: None,
            minitcond: None,
        });
        let meta = AggregateMeta {
            args: vec![PgType::Int4],
            sfunc: "int4pl".into(),
            stype: PgType::Int4,
            finalfunc: None,
            combinefunc: None,
            initcond: None,
            comment: None,
            moving,
        };
        let udaf = plan("int4_sum", &meta, &ctx.state(), &AllStrict).expect("planned");
        let user = udaf
            .inner()
            .downcast_ref::<UserAggregate>()
            .expect("a user aggregate");
        user.planned.clone()
    }
}
