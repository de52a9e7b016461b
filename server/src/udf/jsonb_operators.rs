//! Which jsonb operator becomes which function: a planner hook ([`JsonbOperators`]) sends
//! `||`, `-` and `#-` with a jsonb operand to [`super::jsonb_edit`]'s functions, and
//! `array_has_all` (what `@>` / `<@` become, `brook_planner::array_operators`) tests jsonb
//! containment for two text operands. Other operands keep their meaning (`text || text`,
//! `int[] @> int[]`).
//!
//! Before this, `jsonb || jsonb` concatenated the text (`{"a": 1}{"b": 2}`, a wrong
//! answer), `-` and `#-` failed to plan and `@>` was taken for an array test.

use super::jsonb_edit::{jsonb_function, Edit, CONCAT, CONTAINS, DELETE, DELETE_PATH};
use crate::pg::types::PG_TYPE_KEY;
use brook_common::BrookError;
use datafusion::arrow::datatypes::{DataType, Field, FieldRef};
use datafusion::common::{DFSchema, ScalarValue};
use datafusion::error::{DataFusionError, Result};
use datafusion::logical_expr::planner::{ExprPlanner, PlannerResult, RawBinaryExpr};
use datafusion::logical_expr::{
    ColumnarValue, Expr, ExprSchemable, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature,
    Volatility,
};
use datafusion::prelude::SessionContext;
use datafusion::sql::sqlparser::ast::BinaryOperator;
use std::sync::Arc;

/// Make `array_has_all` test jsonb containment too (after `udf::array_functions`, whose
/// `array_has_all` it keeps for arrays).
pub fn register(ctx: &SessionContext) {
    use datafusion::execution::FunctionRegistry;
    if let Ok(arrays) = ctx.udf("array_has_all") {
        ctx.register_udf(ScalarUDF::new_from_impl(ContainsEither {
            arrays,
            jsonb: Arc::new(jsonb_function(CONTAINS, Edit::Contains)),
            signature: Signature::user_defined(Volatility::Immutable),
        }));
    }
}

/// `array_has_all`, which `a @> b` and `a <@ b` become (`brook_planner::array_operators`):
/// jsonb containment for two JSON (text) operands, the array test otherwise.
#[derive(Debug, PartialEq, Eq, Hash)]
struct ContainsEither {
    arrays: Arc<ScalarUDF>,
    jsonb: Arc<ScalarUDF>,
    signature: Signature,
}

/// Two JSON operands: text, or a NULL beside text (`jsonb @> NULL` is NULL).
fn are_texts(types: &[DataType]) -> bool {
    types.len() == 2
        && types.iter().any(super::is_text)
        && types
            .iter()
            .all(|t| super::is_text(t) || t == &DataType::Null)
}

impl ScalarUDFImpl for ContainsEither {
    fn name(&self) -> &str {
        self.arrays.name()
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(DataType::Boolean)
    }

    fn coerce_types(&self, arg_types: &[DataType]) -> Result<Vec<DataType>> {
        if are_texts(arg_types) {
            return Ok(arg_types.to_vec());
        }
        let fields: Vec<FieldRef> = arg_types
            .iter()
            .map(|t| Arc::new(Field::new("", t.clone(), true)))
            .collect();
        let coerced = datafusion::logical_expr::type_coercion::functions::fields_with_udf(
            &fields,
            self.arrays.as_ref(),
        )?;
        Ok(coerced.iter().map(|f| f.data_type().clone()).collect())
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let types: Vec<DataType> = args.args.iter().map(|a| a.data_type()).collect();
        if are_texts(&types) {
            self.jsonb.invoke_with_args(args)
        } else {
            self.arrays.invoke_with_args(args)
        }
    }
}

/// The PostgreSQL type `e` is recorded as (a jsonb column or cast, one of these functions).
///
/// Only columns, function calls and aliases carry one. Other expressions are answered
/// without computing their field: the planner asks at every level of `a || b || c ...`,
/// and computing the field of the whole chain each time made a 1,500-term concatenation
/// take minutes.
fn recorded_type(e: &Expr, schema: &DFSchema) -> Option<String> {
    match e {
        Expr::Column(_) | Expr::ScalarFunction(_) | Expr::Alias(_) => {}
        _ => return None,
    }
    match e {
        // DataFusion gives a cast its operand's field metadata; the value is of the cast's
        // type (`j::text || '{..}'` is text concatenation).
        Expr::Cast(_) | Expr::TryCast(_) => None,
        // DataFusion's field of these drops the metadata of their arguments.
        Expr::ScalarFunction(f) if matches!(f.name(), "coalesce" | "nullif") => {
            f.args.iter().find_map(|a| recorded_type(a, schema))
        }
        _ => {
            let (_, f) = e.to_field(schema).ok()?;
            f.metadata().get(PG_TYPE_KEY).cloned()
        }
    }
}

/// PostgreSQL's name of an operand's type, for an error message.
fn type_name(e: &Expr, schema: &DFSchema) -> String {
    if let Some(t) = recorded_type(e, schema) {
        return t;
    }
    match e.get_type(schema) {
        Ok(DataType::Int16) => "smallint".into(),
        Ok(DataType::Int32) => "integer".into(),
        Ok(DataType::Int64) => "bigint".into(),
        Ok(DataType::Float32) => "real".into(),
        Ok(DataType::Float64) => "double precision".into(),
        Ok(DataType::Boolean) => "boolean".into(),
        Ok(DataType::Decimal128(..) | DataType::Decimal256(..)) => "numeric".into(),
        Ok(t) if super::is_text(&t) => "text".into(),
        Ok(t) => t.to_string(),
        Err(_) => "unknown".into(),
    }
}

/// Whether `a || b` is jsonb concatenation: a jsonb operand with jsonb (or an untyped
/// literal). A text operand makes it text concatenation; any other pair with a JSON
/// operand is PostgreSQL's 42883 (`json || json`, `jsonb || integer`).
fn is_concatenation(expr: &RawBinaryExpr, schema: &DFSchema) -> Result<bool> {
    let (l, r) = (
        recorded_type(&expr.left, schema),
        recorded_type(&expr.right, schema),
    );
    let json = |t: &Option<String>| matches!(t.as_deref(), Some("json" | "jsonb"));
    if !json(&l) && !json(&r) {
        return Ok(false);
    }
    let jsonb = |t: &Option<String>, e: &Expr| {
        t.as_deref() == Some("jsonb")
            || is_unknown_literal(e)
            || matches!(e, Expr::Literal(ScalarValue::Null, _))
    };
    if jsonb(&l, &expr.left) && jsonb(&r, &expr.right) {
        return Ok(true);
    }
    let text = |t: &Option<String>, e: &Expr| {
        !json(t) && e.get_type(schema).is_ok_and(|t| super::is_text(&t))
    };
    if text(&l, &expr.left) || text(&r, &expr.right) {
        return Ok(false);
    }
    Err(DataFusionError::from(BrookError::UndefinedFunction(
        format!(
            "operator does not exist: {} || {}",
            type_name(&expr.left, schema),
            type_name(&expr.right, schema)
        ),
    )))
}

/// An untyped string literal, which PostgreSQL reads as the other operand's type.
fn is_unknown_literal(e: &Expr) -> bool {
    matches!(
        e,
        Expr::Literal(ScalarValue::Utf8(_) | ScalarValue::Utf8View(_), _)
    )
}

/// The SQL planner's hook for the jsonb operators (`@>`/`<@` arrive as `array_has_all`
/// calls, see `udf::array_functions`).
#[derive(Debug, Default)]
pub struct JsonbOperators;

impl ExprPlanner for JsonbOperators {
    fn plan_binary_op(
        &self,
        expr: RawBinaryExpr,
        schema: &DFSchema,
    ) -> Result<PlannerResult<RawBinaryExpr>> {
        let left = recorded_type(&expr.left, schema).as_deref() == Some("jsonb");
        if is_comparison(&expr.op) {
            return Ok(PlannerResult::Original(literal_as_jsonb(expr, schema)));
        }
        let (name, edit) = match expr.op {
            BinaryOperator::StringConcat if is_concatenation(&expr, schema)? => {
                (CONCAT, Edit::Concat)
            }
            BinaryOperator::Minus if left => (DELETE, Edit::Delete),
            BinaryOperator::HashMinus if left => (DELETE_PATH, Edit::DeletePath),
            _ => return Ok(PlannerResult::Original(expr)),
        };
        let udf = jsonb_function(name, edit);
        Ok(PlannerResult::Planned(
            udf.call(vec![expr.left, expr.right]),
        ))
    }
}

fn is_comparison(op: &BinaryOperator) -> bool {
    matches!(
        op,
        BinaryOperator::Eq
            | BinaryOperator::NotEq
            | BinaryOperator::Lt
            | BinaryOperator::LtEq
            | BinaryOperator::Gt
            | BinaryOperator::GtEq
    )
}

/// A comparison of jsonb with an untyped literal, the literal read as jsonb (as PostgreSQL
/// reads it as the other operand's type): `j = '{"b":2,"a":1}'` compares jsonb's text of
/// both (`{"a": 1, "b": 2}`), not the literal as written.
fn literal_as_jsonb(mut expr: RawBinaryExpr, schema: &DFSchema) -> RawBinaryExpr {
    let jsonb = |e: &Expr| recorded_type(e, schema).as_deref() == Some("jsonb");
    if jsonb(&expr.left) && is_unknown_literal(&expr.right) {
        expr.right = super::json_path::jsonb_cast().call(vec![expr.right]);
    } else if jsonb(&expr.right) && is_unknown_literal(&expr.left) {
        expr.left = super::json_path::jsonb_cast().call(vec![expr.left]);
    }
    expr
}
