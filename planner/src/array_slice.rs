//! PostgreSQL's array slices, `a[lo:hi]`, `a[lo:]`, `a[:hi]`.
//!
//! DataFusion's `array_slice` reads a negative bound as counted from the array's end
//! (`a[-1:2]` was `{}`, PostgreSQL's `{10,20}`: a wrong answer) and its SQL planner takes no
//! omitted bound. PostgreSQL clamps the bounds to the array (a lower bound below 1 is 1,
//! an upper bound past the end is the end) and an omitted one is the array's end. The
//! rewrite clamps each given bound and fills in an omitted one before DataFusion plans the
//! slice.
//!
//! An element subscript `a[i]` below 1 is NULL in PostgreSQL; DataFusion's `array_element`
//! counts a negative one from the end (`(ARRAY[1,2,3])[-1]` was 3). [`ArraySubscripts`], an
//! analyzer rule, gives it a NULL subscript then.

use datafusion::sql::sqlparser::ast::helpers::attached_token::AttachedToken;
use datafusion::sql::sqlparser::ast::{
    AccessExpr, BinaryOperator, CaseWhen, Expr, Statement, Subscript, Value,
};

/// The analyzer rule (after type coercion): `array_element(a, i)` of an integer `i` as
/// `array_element(a, CASE WHEN i >= 1 THEN i END)`.
#[derive(Debug)]
pub struct ArraySubscripts;

impl datafusion::optimizer::AnalyzerRule for ArraySubscripts {
    fn analyze(
        &self,
        plan: datafusion::logical_expr::LogicalPlan,
        _config: &datafusion::common::config::ConfigOptions,
    ) -> datafusion::common::Result<datafusion::logical_expr::LogicalPlan> {
        use datafusion::common::tree_node::{Transformed, TreeNode};
        use datafusion::logical_expr::{lit, when, Expr as LExpr, ExprSchemable};
        crate::checked::rewrite_plan_expressions(plan, true, &|e, schema| {
            e.transform_up(|e| {
                let LExpr::ScalarFunction(mut f) = e else {
                    return Ok(Transformed::no(e));
                };
                let integer_index = f.name() == "array_element"
                    && f.args.len() == 2
                    && f.args[1].get_type(schema).is_ok_and(|t| t.is_integer());
                let literal_from_one = matches!(
                    &f.args.get(1),
                    Some(LExpr::Literal(v, _)) if v.clone().cast_to(&datafusion::arrow::datatypes::DataType::Int64)
                        .is_ok_and(|v| matches!(v, datafusion::common::ScalarValue::Int64(Some(n)) if n >= 1))
                );
                if !integer_index || literal_from_one {
                    return Ok(Transformed::no(LExpr::ScalarFunction(f)));
                }
                let index = f.args[1].clone();
                let t = index.get_type(schema)?;
                f.args[1] = when(index.clone().gt_eq(lit(1).cast_to(&t, schema)?), index).end()?;
                Ok(Transformed::yes(LExpr::ScalarFunction(f)))
            })
        })
    }

    fn name(&self) -> &str {
        "brook_array_subscripts"
    }
}

/// Every slice of `stmt` with PostgreSQL's bounds.
pub fn array_slices(stmt: &mut Statement) {
    crate::pg_functions::rewrite_expressions(stmt, |e| {
        let Expr::CompoundFieldAccess { access_chain, .. } = e else {
            return;
        };
        for access in access_chain {
            if let AccessExpr::Subscript(Subscript::Slice {
                lower_bound,
                upper_bound,
                ..
            }) = access
            {
                *lower_bound = Some(at_least(lower_bound.take(), 1));
                *upper_bound = Some(at_least(upper_bound.take(), 0));
            }
        }
    });
}

/// `CASE WHEN b < floor THEN floor ELSE b END` (NULL stays NULL, as PostgreSQL's slice of
/// a NULL bound is NULL); an omitted upper bound is past any array's end, an omitted lower
/// bound its start.
fn at_least(bound: Option<Expr>, floor: i64) -> Expr {
    let floor_value = || Expr::value(Value::Number(floor.to_string(), false));
    let Some(b) = bound else {
        return if floor == 0 {
            Expr::value(Value::Number(i32::MAX.to_string(), false))
        } else {
            floor_value()
        };
    };
    if let Expr::Value(v) = &b {
        if let Value::Number(n, _) = &v.value {
            if n.parse::<i64>().is_ok_and(|n| n >= floor) {
                return b;
            }
        }
    }
    Expr::Case {
        case_token: AttachedToken::empty(),
        end_token: AttachedToken::empty(),
        operand: None,
        conditions: vec![CaseWhen {
            condition: Expr::BinaryOp {
                left: Box::new(b.clone()),
                op: BinaryOperator::Lt,
                right: Box::new(floor_value()),
            },
            result: floor_value(),
        }],
        else_result: Some(Box::new(b)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rewritten(sql: &str) -> String {
        crate::pg_functions::rewritten_by(sql, array_slices)
    }

    #[test]
    fn bounds_are_clamped_and_filled_in() {
        assert_eq!(rewritten("SELECT a[1:2] FROM t"), "SELECT a[1:2] FROM t");
        assert_eq!(
            rewritten("SELECT a[-1:2] FROM t"),
            "SELECT a[CASE WHEN -1 < 1 THEN 1 ELSE -1 END:2] FROM t"
        );
        assert_eq!(
            rewritten("SELECT a[2:] FROM t"),
            "SELECT a[2:2147483647] FROM t"
        );
        assert_eq!(rewritten("SELECT a[:2] FROM t"), "SELECT a[1:2] FROM t");
    }
}
