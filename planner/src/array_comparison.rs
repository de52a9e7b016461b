//! A comparison of an array with an untyped array literal: `polroles <> '{0}'`.
//!
//! PostgreSQL reads a quoted literal next to an array as that array type; DataFusion finds
//! no common type for `List(Int32)` and `Utf8` and refuses the comparison (psql's `\dp`
//! sends one). This planner hook, consulted as DataFusion turns SQL into a plan, reads the
//! literal with [`crate::array_literal::parse_text_array`] and casts its elements to the
//! array's element type, as PostgreSQL's array input does. Written here because DataFusion
//! has no hook for the type of an untyped literal.

use crate::array_literal::parse_text_array;
use datafusion::arrow::array::{Array, StringArray};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::DataType;
use datafusion::common::{DFSchema, Result, ScalarValue};
use datafusion::logical_expr::planner::{ExprPlanner, PlannerResult, RawBinaryExpr};
use datafusion::logical_expr::{binary_expr, Expr, ExprSchemable, Operator};
use datafusion::sql::sqlparser::ast::BinaryOperator;

/// The SQL planner's hook for comparisons of an array with a quoted literal.
#[derive(Debug, Default)]
pub struct ArrayComparisonPlanner;

impl ExprPlanner for ArrayComparisonPlanner {
    fn plan_binary_op(
        &self,
        expr: RawBinaryExpr,
        schema: &DFSchema,
    ) -> Result<PlannerResult<RawBinaryExpr>> {
        let op = match expr.op {
            BinaryOperator::Eq => Operator::Eq,
            BinaryOperator::NotEq => Operator::NotEq,
            BinaryOperator::Lt => Operator::Lt,
            BinaryOperator::LtEq => Operator::LtEq,
            BinaryOperator::Gt => Operator::Gt,
            BinaryOperator::GtEq => Operator::GtEq,
            _ => return Ok(PlannerResult::Original(expr)),
        };
        if let Some(list) = array_literal_for(&expr.left, &expr.right, schema)? {
            return Ok(PlannerResult::Planned(binary_expr(expr.left, op, list)));
        }
        if let Some(list) = array_literal_for(&expr.right, &expr.left, schema)? {
            return Ok(PlannerResult::Planned(binary_expr(list, op, expr.right)));
        }
        Ok(PlannerResult::Original(expr))
    }
}

/// `literal` read as a value of `array`'s type, when `array` is an array and `literal` a
/// quoted string holding an array literal whose elements all cast.
fn array_literal_for(array: &Expr, literal: &Expr, schema: &DFSchema) -> Result<Option<Expr>> {
    let Expr::Literal(ScalarValue::Utf8(Some(text)), _) = literal else {
        return Ok(None);
    };
    let Ok(DataType::List(element)) = array.get_type(schema) else {
        return Ok(None);
    };
    let Some(items) = parse_text_array(text) else {
        return Ok(None);
    };
    let texts = StringArray::from(items);
    let values = cast(&texts, element.data_type())?;
    if values.null_count() != texts.null_count() {
        return Ok(None);
    }
    let list = ScalarValue::new_list_nullable(
        &(0..values.len())
            .map(|i| ScalarValue::try_from_array(&values, i))
            .collect::<Result<Vec<_>>>()?,
        element.data_type(),
    );
    Ok(Some(Expr::Literal(ScalarValue::List(list), None)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::arrow::datatypes::{Field, Schema};
    use datafusion::logical_expr::{col, lit};
    use std::sync::Arc;

    #[test]
    fn an_untyped_literal_becomes_the_arrays_type() {
        let schema = DFSchema::try_from(Schema::new(vec![Field::new(
            "polroles",
            DataType::List(Arc::new(Field::new("item", DataType::Int32, true))),
            true,
        )]))
        .unwrap();
        let raw = RawBinaryExpr {
            op: BinaryOperator::NotEq,
            left: col("polroles"),
            right: lit("{0}"),
        };
        let PlannerResult::Planned(Expr::BinaryExpr(b)) =
            ArrayComparisonPlanner.plan_binary_op(raw, &schema).unwrap()
        else {
            panic!("not planned");
        };
        assert_eq!(
            b.right.get_type(&schema).unwrap(),
            schema.field(0).data_type().clone()
        );
        let raw = RawBinaryExpr {
            op: BinaryOperator::Eq,
            left: col("polroles"),
            right: lit("{x}"),
        };
        assert!(matches!(
            ArrayComparisonPlanner.plan_binary_op(raw, &schema).unwrap(),
            PlannerResult::Original(_)
        ));
    }
}
