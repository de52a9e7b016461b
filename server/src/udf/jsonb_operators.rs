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

/// The PostgreSQL type `e` is recorded as (a jsonb column or cast, one of the JSON
/// functions).
///
/// Only columns, function calls and aliases carry one, and the JSON functions' types are
/// known by name ([`json_function_type`]). Other expressions are answered without computing
/// their field: the planner asks at every level of `a || b || c ...`, and computing the
/// field of the whole chain each time made a 1,500-term text concatenation take minutes and
/// a 200-term jsonb one seconds.
fn recorded_type(e: &Expr, schema: &DFSchema) -> Option<String> {
    match e {
        Expr::ScalarFunction(f) => match json_function_type(f.name()) {
            Some(FunctionType::Of(ty)) => Some(ty.to_string()),
            Some(FunctionType::OfFirstArgument) => {
                f.args.first().and_then(|a| recorded_type(a, schema))
            }
            None => recorded_field_type(e, schema),
        },
        Expr::Column(_) | Expr::Alias(_) => recorded_field_type(e, schema),
        // A cast is of the cast's type (`j::text || '{..}'` is text concatenation;
        // DataFusion gives its field the operand's metadata until the analyzer's
        // `brook_planner::cast_metadata`).
        _ => None,
    }
}

fn recorded_field_type(e: &Expr, schema: &DFSchema) -> Option<String> {
    let (_, f) = e.to_field(schema).ok()?;
    f.metadata().get(PG_TYPE_KEY).cloned()
}

/// The type of a JSON function's result.
#[derive(Debug, PartialEq)]
enum FunctionType {
    Of(&'static str),
    /// `j -> k`, `j #> path`; `coalesce` and `nullif`, whose field DataFusion gives no
    /// metadata.
    OfFirstArgument,
}

/// The type of the result of function `name` when it is one of the JSON functions (their
/// `return_field_from_args` says the same; `the_types_by_name_are_the_functions_own`
/// checks it).
fn json_function_type(name: &str) -> Option<FunctionType> {
    use brook_planner::json_ops::{JSON_GET, JSON_PATH};
    Some(match name {
        CONCAT | DELETE | DELETE_PATH => FunctionType::Of("jsonb"),
        n if n == JSON_GET || n == JSON_PATH || n == "coalesce" || n == "nullif" => {
            FunctionType::OfFirstArgument
        }
        n => FunctionType::Of(brook_planner::json_ops::json_result_type(n)?),
    })
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
        let left = is_jsonb(&expr.left, schema);
        let (name, edit) = match expr.op {
            _ if chain_length(&expr.left) >= MAX_CHAIN => {
                return Err(DataFusionError::from(BrookError::too_complex(format!(
                    "stack depth limit exceeded: more than {MAX_CHAIN} jsonb operators applied one to the result of the other (build the value with jsonb_build_object, or in steps)"
                ))));
            }
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

/// The longest chain of jsonb operators planned (`j - 'a' - 'b' ...`). DataFusion names a
/// function call's result after its whole argument tree and recomputes the names of the
/// arguments at every level, so planning a chain takes time cubic in its length: 100
/// operators plan in under a second, 400 took half a minute of a core that a cancel or a
/// disconnect could not stop.
const MAX_CHAIN: usize = 100;

/// How many jsonb operator calls `e` nests through its first argument.
fn chain_length(e: &Expr) -> usize {
    let mut length = 0;
    let mut e = e;
    while let Expr::ScalarFunction(f) = e {
        if !matches!(f.name(), CONCAT | DELETE | DELETE_PATH) {
            break;
        }
        length += 1;
        match f.args.first() {
            Some(first) => e = first,
            None => break,
        }
    }
    length
}

/// Whether `e` is a jsonb value (`udf::jsonb_literals` reads literals beside one as jsonb).
pub(super) fn is_jsonb(e: &Expr, schema: &DFSchema) -> bool {
    recorded_type(e, schema).as_deref() == Some("jsonb")
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::execution::FunctionRegistry;
    use datafusion::logical_expr::ReturnFieldArgs;

    #[test]
    fn the_types_by_name_are_the_functions_own() {
        let ctx = SessionContext::new();
        crate::udf::functions::register(&ctx);
        crate::udf::json_build::register(&ctx);
        crate::udf::json_path::register(&ctx);
        crate::udf::json_get::register(&ctx);
        crate::udf::jsonb_edit::register(&ctx);
        let jsonb = Arc::new(super::super::json_get::typed_as(
            Field::new("j", DataType::Utf8, true),
            "jsonb",
        ));
        let text = Arc::new(Field::new("k", DataType::Utf8, true));
        for name in [
            CONCAT,
            DELETE,
            DELETE_PATH,
            "jsonb_set",
            brook_planner::pg_functions::JSONB_CAST,
            brook_planner::pg_functions::JSON_CAST,
            "jsonb_build_object",
            "jsonb_build_array",
            "to_jsonb",
            "json_build_object",
            "json_build_array",
            "to_json",
            "jsonb_extract_path",
            "json_extract_path",
            brook_planner::json_ops::JSON_GET,
            brook_planner::json_ops::JSON_PATH,
        ] {
            let f = ctx.udf(name).expect(name);
            let fields = [jsonb.clone(), text.clone(), jsonb.clone()];
            let arity = if name == brook_planner::pg_functions::JSONB_CAST
                || name == brook_planner::pg_functions::JSON_CAST
                || name.starts_with("to_json")
            {
                1
            } else {
                2
            };
            let field = f
                .return_field_from_args(ReturnFieldArgs {
                    arg_fields: &fields[..arity],
                    scalar_arguments: &[None, None, None][..arity],
                })
                .expect(name);
            let own = field.metadata().get(PG_TYPE_KEY).map(String::as_str);
            let by_name = match json_function_type(name) {
                Some(FunctionType::Of(ty)) => Some(ty),
                Some(FunctionType::OfFirstArgument) => Some("jsonb"),
                None => None,
            };
            assert_eq!(own, by_name, "{name}");
        }
    }
}
