//! PostgreSQL's array slices, `a[lo:hi]`, `a[lo:]`, `a[:hi]`.
//!
//! DataFusion's `array_slice` reads a negative bound as counted from the array's end
//! (`a[-1:2]` was `{}`, PostgreSQL's `{10,20}`: a wrong answer) and its SQL planner takes no
//! omitted bound. PostgreSQL clamps the bounds to the array (a lower bound below 1 is 1,
//! an upper bound past the end is the end) and an omitted one is the array's end. The
//! rewrite clamps each given bound and fills in an omitted one before DataFusion plans the
//! slice.

use datafusion::sql::sqlparser::ast::helpers::attached_token::AttachedToken;
use datafusion::sql::sqlparser::ast::{
    AccessExpr, BinaryOperator, CaseWhen, Expr, Statement, Subscript, Value,
};

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
