//! `CREATE FUNCTION ... LANGUAGE SQL` functions as DataFusion scalar functions.
//!
//! The body is one expression over the arguments; it is planned once (against the
//! database's functions, so a body may call other user functions) into a physical
//! expression that the function evaluates over the batch of its arguments — inlined, as
//! PostgreSQL inlines a simple SQL function: vectorized per batch, in ad hoc and continuous
//! queries alike.

use crate::catalog::function::FunctionMeta;
use brook_common::{brook_err, BrookError, Result};
use datafusion::arrow::array::{Array, ArrayRef, BooleanArray};
use datafusion::arrow::compute::{
    cast_with_options, is_null, kernels::boolean::or, nullif, CastOptions,
};
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use datafusion::arrow::record_batch::{RecordBatch, RecordBatchOptions};
use datafusion::common::DFSchema;
use datafusion::error::{DataFusionError, Result as DfResult};
use datafusion::execution::context::SessionState;
use datafusion::logical_expr::{
    ColumnarValue, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature,
};
use datafusion::physical_expr::PhysicalExpr;
use datafusion::sql::sqlparser::ast::{
    Expr, Ident, SelectItem, SetExpr, Statement, Value, VisitMut, VisitorMut,
};
use datafusion::sql::sqlparser::dialect::PostgreSqlDialect;
use datafusion::sql::sqlparser::parser::Parser;
use std::ops::ControlFlow;
use std::sync::Arc;

/// Column the body reads argument `i` (0-based) from.
fn arg_column(i: usize) -> String {
    format!("__arg_{}", i + 1)
}

/// The body's expression with arguments (by name or `$n`) read as `__arg_n` columns,
/// rewritten as a query's expressions are (PostgreSQL's literal types, the jsonb
/// operators, array literals): the body is `SELECT <body>` as far as the rewrites go.
fn body_over_arguments(meta: &FunctionMeta) -> Result<Expr> {
    // (Parsed alone first: a body that is no expression is refused as before.)
    Parser::new(&PostgreSqlDialect {})
        .try_with_sql(&meta.body)?
        .parse_expr()?;
    let sql = format!("SELECT {}", meta.body);
    let mut stmt = brook_planner::parser::parse_one(&sql)?
        .into_plain_sql()
        .ok_or_else(|| brook_err!(Internal, "function body {} is not plain SQL", meta.body))?;
    let names: Vec<Option<String>> = meta.args.iter().map(|a| a.name.clone()).collect();
    let mut rw = Arguments { names: &names };
    if let ControlFlow::Break(err) = stmt.visit(&mut rw) {
        return Err(err);
    }
    crate::pg::sql::pg_literals(&mut stmt)?;
    select_expression(stmt)
        .ok_or_else(|| brook_err!(Internal, "function body {} is no expression", meta.body))
}

/// The one expression of `SELECT <expression>`.
fn select_expression(stmt: Statement) -> Option<Expr> {
    let Statement::Query(q) = stmt else {
        return None;
    };
    let SetExpr::Select(select) = *q.body else {
        return None;
    };
    if !select.from.is_empty() {
        return None;
    }
    match select.projection.into_iter().next()? {
        SelectItem::UnnamedExpr(e) | SelectItem::ExprWithAlias { expr: e, .. } => Some(e),
        _ => None,
    }
}

struct Arguments<'a> {
    names: &'a [Option<String>],
}

impl VisitorMut for Arguments<'_> {
    type Break = BrookError;

    fn pre_visit_expr(&mut self, e: &mut Expr) -> ControlFlow<BrookError> {
        let at = match e {
            Expr::Identifier(i) => {
                let name = crate::ident::ident_name(i);
                self.names.iter().position(|n| n.as_deref() == Some(&name))
            }
            Expr::Value(v) => match &v.value {
                Value::Placeholder(p) => {
                    match p.strip_prefix('$').and_then(|n| n.parse::<usize>().ok()) {
                        Some(n) if n >= 1 && n <= self.names.len() => Some(n - 1),
                        _ => {
                            return ControlFlow::Break(brook_err!(
                                Parameter,
                                "there is no parameter {p}"
                            ))
                        }
                    }
                }
                _ => None,
            },
            _ => None,
        };
        if let Some(i) = at {
            *e = Expr::Identifier(Ident::with_quote('"', arg_column(i)));
        }
        ControlFlow::Continue(())
    }
}

/// The scalar function `name` of `meta`, its body planned with `state`'s functions.
pub fn plan(name: &str, meta: &FunctionMeta, state: &SessionState) -> Result<ScalarUDF> {
    let arg_types: Vec<DataType> = meta.args.iter().map(|a| a.ty.arrow()).collect();
    let schema: SchemaRef = Arc::new(Schema::new(
        arg_types
            .iter()
            .enumerate()
            .map(|(i, t)| Field::new(arg_column(i), t.clone(), true))
            .collect::<Vec<_>>(),
    ));
    let body = body_over_arguments(meta)?;
    let df_schema = DFSchema::try_from(schema.as_ref().clone())?;
    let logical = state.create_logical_expr(&body.to_string(), &df_schema)?;
    // The analyzer does not see a body planned on its own: a numeric beside a double is a
    // double here too, before type coercion (`check_expression`) as for a query.
    let logical =
        brook_planner::float_beside_numeric::doubles_beside_numerics(logical, &df_schema)?;
    let body_type = datafusion::logical_expr::ExprSchemable::get_type(&logical, &df_schema)?;
    let returns = match (&meta.returns, &body_type) {
        // An unconstrained numeric keeps the body's decimals when it has more (a quotient's
        // PostgreSQL scale: `a / b` of 1 and 3 is 0.33333333333333333333, not rounded to
        // the 10 decimals an unconstrained numeric column has), as a view's column does.
        (
            crate::pg::types::PgType::Numeric {
                precision: None,
                scale: None,
            },
            DataType::Decimal128(_, s),
        ) if *s > 10 => DataType::Decimal128(38, *s),
        _ => meta.returns.arrow(),
    };
    // PostgreSQL takes a body whose type casts to the result implicitly (a fraction is no
    // integer result). An integer body may be wider: the body's literals are bigint here
    // (a value out of the result's range is 22003 when returned).
    let integers = body_type.is_integer() && returns.is_integer();
    if !(passes_as(&body_type, &returns) || integers) {
        return Err(BrookError::invalid_function(format!(
            "return type mismatch in function declared to return {}: the body is {}",
            meta.returns.name(),
            brook_common::types::sql_name(&body_type)
        )));
    }
    // The analyzer does not see a body planned on its own: check its arithmetic here.
    let logical = brook_planner::checked::CheckedIntegerArithmetic::default()
        .check_expression(logical, &df_schema)?;
    let expr = state.create_physical_expr(logical, &df_schema)?;
    let volatility = meta.df_volatility();
    Ok(ScalarUDF::new_from_impl(SqlFunction {
        name: name.to_string(),
        signature: Signature::user_defined(volatility),
        arg_types,
        returns,
        schema,
        expr,
        strict: meta.strict,
        display: meta.signature(name),
    }))
}

/// A planned SQL function.
#[derive(Debug)]
struct SqlFunction {
    name: String,
    signature: Signature,
    arg_types: Vec<DataType>,
    returns: DataType,
    /// The arguments as the body reads them (`__arg_1`, ...).
    schema: SchemaRef,
    expr: Arc<dyn PhysicalExpr>,
    strict: bool,
    /// `name(type, ...)`, for messages.
    display: String,
}

impl PartialEq for SqlFunction {
    fn eq(&self, other: &Self) -> bool {
        // One function per name; a new definition is a new function.
        self.name == other.name && Arc::ptr_eq(&self.expr, &other.expr)
    }
}

impl Eq for SqlFunction {}

impl std::hash::Hash for SqlFunction {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.name.hash(state);
    }
}

/// Whether a value of type `from` is passed to a parameter of type `to` as PostgreSQL's
/// implicit casts (and its untyped literals, which are text here) allow.
pub(crate) fn passes_as(from: &DataType, to: &DataType) -> bool {
    from.is_null()
        || implicitly_casts(from, to)
        || matches!(
            from,
            DataType::Utf8 | DataType::Utf8View | DataType::LargeUtf8
        )
}

/// Whether PostgreSQL casts a value of type `from` to `to` implicitly (text is text
/// however Arrow lays it out). Numbers widen and never lose their fraction: integers to wider integers and to any fraction, a fraction
/// only to a fraction (a float to numeric too: decimal literals are double here).
pub(crate) fn implicitly_casts(from: &DataType, to: &DataType) -> bool {
    let integer_width = |t: &DataType| match t {
        DataType::Int8 | DataType::UInt8 => 1,
        DataType::Int16 | DataType::UInt16 => 2,
        DataType::Int32 | DataType::UInt32 => 4,
        _ => 8,
    };
    let text =
        |t: &DataType| matches!(t, DataType::Utf8 | DataType::Utf8View | DataType::LargeUtf8);
    let bytes = |t: &DataType| {
        matches!(
            t,
            DataType::Binary | DataType::BinaryView | DataType::LargeBinary
        )
    };
    from == to
        || (text(from) && text(to))
        || (bytes(from) && bytes(to))
        || (from.is_integer() && to.is_integer() && integer_width(from) <= integer_width(to))
        || (from.is_integer() && to.is_numeric() && !to.is_integer())
        || (from.is_numeric() && !from.is_integer() && to.is_numeric() && !to.is_integer())
        || (from.is_temporal() && to.is_temporal())
        || list_elements(from)
            .zip(list_elements(to))
            .is_some_and(|(f, t)| implicitly_casts(f, t))
}

/// The types a user function `name` (`display`: its signature) takes `args` as: its
/// parameters' `params` when each argument passes as one (PostgreSQL's implicit casts),
/// else 42883 as PostgreSQL's function lookup says it.
pub(crate) fn coerce_arguments(
    name: &str,
    display: &str,
    args: &[DataType],
    params: &[DataType],
) -> DfResult<Vec<DataType>> {
    let fits = args.len() == params.len() && args.iter().zip(params).all(|(a, p)| passes_as(a, p));
    if !fits {
        let given: Vec<String> = args.iter().map(brook_common::types::sql_name).collect();
        return Err(DataFusionError::External(Box::new(brook_err!(
            UndefinedFunction,
            "function {name}({}) does not exist (it is {display}); add explicit type casts",
            given.join(", ")
        ))));
    }
    Ok(params.to_vec())
}

/// The element type of an array (an Arrow list; two lists of one element type may differ
/// in their element field's name or nullability).
fn list_elements(t: &DataType) -> Option<&DataType> {
    match t {
        DataType::List(f) | DataType::LargeList(f) => Some(f.data_type()),
        _ => None,
    }
}

/// The parameter and result types of a SQL function (a user function or one of
/// PostgreSQL's operator functions), None for other functions.
pub(crate) fn signature_of(udf: &ScalarUDF) -> Option<(&[DataType], &DataType)> {
    udf.inner()
        .downcast_ref::<SqlFunction>()
        .map(|f| (f.arg_types.as_slice(), &f.returns))
}

/// A SQL function's body as it is evaluated: the physical expression over its parameters
/// (`__arg_1`, ... of the declared types, in this schema). An aggregate folds it row by row
/// without the call around it. None for other functions.
pub(crate) fn body_of(udf: &ScalarUDF) -> Option<(SchemaRef, Arc<dyn PhysicalExpr>)> {
    udf.inner()
        .downcast_ref::<SqlFunction>()
        .map(|f| (f.schema.clone(), f.expr.clone()))
}

impl ScalarUDFImpl for SqlFunction {
    fn name(&self) -> &str {
        &self.name
    }
    fn signature(&self) -> &Signature {
        &self.signature
    }
    fn return_type(&self, _args: &[DataType]) -> DfResult<DataType> {
        Ok(self.returns.clone())
    }
    fn coerce_types(&self, args: &[DataType]) -> DfResult<Vec<DataType>> {
        coerce_arguments(&self.name, &self.display, args, &self.arg_types)
    }
    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> DfResult<ColumnarValue> {
        let (arrays, scalar, rows) = super::argument_arrays(&args)?;
        let batch = RecordBatch::try_new_with_options(
            self.schema.clone(),
            arrays,
            &RecordBatchOptions::new().with_row_count(Some(rows)),
        )?;
        let mut out: ArrayRef = self.expr.evaluate(&batch)?.into_array(rows)?;
        if out.data_type() != &self.returns {
            // A value the result type cannot hold is an error (22003), not NULL.
            out = cast_with_options(
                &out,
                &self.returns,
                &CastOptions {
                    safe: false,
                    ..Default::default()
                },
            )?;
        }
        if self.strict && batch.num_columns() > 0 {
            let mut any_null: Option<BooleanArray> = None;
            for a in batch.columns() {
                let n = is_null(a.as_ref())?;
                any_null = Some(match any_null {
                    None => n,
                    Some(m) => or(&m, &n)?,
                });
            }
            if let Some(mask) = any_null {
                out = nullif(out.as_ref(), &mask)?;
            }
        }
        super::result_value(out, scalar)
    }
}
