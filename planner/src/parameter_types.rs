//! Parameter types PostgreSQL infers where DataFusion leaves them open.
//!
//! `x = ANY($1)` becomes `array_contains($1, x)` (the compatibility rewrite); PostgreSQL
//! types `$1` as an array of x's type, DataFusion not at all, so a client that sends the
//! parameter untyped (psycopg 3 does for a list of strings, pgcli's `relkind = ANY(%s)`)
//! had its array bound as one text value.

use crate::statement::{BrookStatement, StatementBody};
use datafusion::arrow::datatypes::{DataType, Field};
use datafusion::common::tree_node::{TreeNode, TreeNodeRecursion};
use datafusion::common::{DFSchema, Result};
use datafusion::logical_expr::{Expr, ExprSchemable, LogicalPlan};
use datafusion::sql::sqlparser::ast::{
    visit_expressions, Expr as SqlExpr, FunctionArg, FunctionArgExpr, FunctionArguments, Value,
};
use std::ops::ControlFlow;
use std::sync::Arc;

/// Whether `stmt` tests membership in a parameter (`x = ANY($1)`, `x <> ALL($1)`, or the
/// `array_contains($1, x)` the first becomes) or containment of one (`a @> $1`, `a && $1`):
/// its type must then be inferred even when the client sent it as text, or the array
/// would be read as one text value.
pub fn has_array_parameter(stmt: &BrookStatement) -> bool {
    let StatementBody::Sql(s) = &stmt.body else {
        return false;
    };
    let is_placeholder =
        |e: &SqlExpr| matches!(e, SqlExpr::Value(v) if matches!(v.value, Value::Placeholder(_)));
    visit_expressions(s.as_ref(), |e| match e {
        SqlExpr::AnyOp { right, .. } | SqlExpr::AllOp { right, .. } if is_placeholder(right) => {
            ControlFlow::Break(())
        }
        SqlExpr::Function(f)
            if ["array_has_all", "array_has_any"]
                .iter()
                .any(|n| f.name.to_string().eq_ignore_ascii_case(n)) =>
        {
            match &f.args {
                FunctionArguments::List(l)
                    if l.args.iter().any(|a| {
                        matches!(a, FunctionArg::Unnamed(FunctionArgExpr::Expr(a))
                            if is_placeholder(a))
                    }) =>
                {
                    ControlFlow::Break(())
                }
                _ => ControlFlow::Continue(()),
            }
        }
        SqlExpr::Function(f)
            if f.name.to_string().eq_ignore_ascii_case("array_contains")
                || f.name.to_string().eq_ignore_ascii_case("array_has") =>
        {
            match &f.args {
                FunctionArguments::List(l) => match l.args.first() {
                    Some(FunctionArg::Unnamed(FunctionArgExpr::Expr(a))) if is_placeholder(a) => {
                        ControlFlow::Break(())
                    }
                    _ => ControlFlow::Continue(()),
                },
                _ => ControlFlow::Continue(()),
            }
        }
        _ => ControlFlow::Continue(()),
    })
    .is_break()
}

/// The parameters (`$n` → n) of an array membership test that are not typed yet, with the
/// type the other argument asks for: the array of `x = ANY($1)`, the element of
/// `$1 = ANY(v)`.
pub fn array_membership_parameters(plan: &LogicalPlan) -> Result<Vec<(usize, DataType)>> {
    let mut found = Vec::new();
    plan.apply_with_subqueries(|node| {
        let schema = input_schema(node)?;
        node.apply_expressions(|e| {
            e.apply(|e| {
                if let Some(typed) = membership(e, &schema) {
                    found.push(typed);
                }
                Ok(TreeNodeRecursion::Continue)
            })
        })
    })?;
    Ok(found)
}

/// The columns a node's expressions read: its inputs' together.
fn input_schema(node: &LogicalPlan) -> Result<DFSchema> {
    let mut schema = DFSchema::empty();
    for input in node.inputs() {
        schema.merge(input.schema());
    }
    Ok(schema)
}

fn membership(e: &Expr, schema: &DFSchema) -> Option<(usize, DataType)> {
    let Expr::ScalarFunction(f) = e else {
        return None;
    };
    // `a @> $1`, `$1 <@ a`, `a && $1`: the other array's type.
    if matches!(f.name(), "array_has_all" | "array_has_any") {
        let [x, y] = f.args.as_slice() else {
            return None;
        };
        let (p, other) = match (x, y) {
            (Expr::Placeholder(p), other) | (other, Expr::Placeholder(p)) => (p, other),
            _ => return None,
        };
        let n = p.id.strip_prefix('$')?.parse().ok()?;
        let other = other.get_type(schema).ok()?;
        return (p.field.is_none() && other.is_nested()).then_some((n, other));
    }
    if !matches!(f.name(), "array_has" | "array_contains") {
        return None;
    }
    // `$1 = ANY(v)`: the element of v's type, as PostgreSQL infers it (asyncpg then sends
    // an integer for an integer array; DataFusion's guess was text).
    if let [array, Expr::Placeholder(p)] = f.args.as_slice() {
        let n = p.id.strip_prefix('$')?.parse().ok()?;
        if p.field.is_some() {
            return None;
        }
        return match array.get_type(schema).ok()? {
            DataType::List(item) | DataType::LargeList(item) => Some((n, item.data_type().clone())),
            _ => None,
        };
    }
    let [Expr::Placeholder(p), element] = f.args.as_slice() else {
        return None;
    };
    let n = p.id.strip_prefix('$')?.parse().ok()?;
    let element = element.get_type(schema).ok()?;
    // Typed already as an array (`$1::text[]`, or by the client): kept. DataFusion's own
    // guess for the untyped one is the element's type, which is what this corrects.
    if element == DataType::Null || p.field.as_ref().is_some_and(|f| f.data_type().is_nested()) {
        return None;
    }
    Some((
        n,
        DataType::List(Arc::new(Field::new("item", element, true))),
    ))
}
