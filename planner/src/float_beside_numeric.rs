//! A numeric beside a double precision value is double precision, as PostgreSQL resolves the
//! two (float8 is the preferred type of the numeric category): `f > 1.5`, `coalesce(f, 0.5)`,
//! `CASE WHEN ... THEN f ELSE 0.5 END`, `f IN (0.5, 1)`, `ARRAY[f, 0.5]`, `f BETWEEN 0.5 AND
//! 1.5`, and a VALUES or UNION column of both (`f = ANY (ARRAY[0.5])`:
//! `udf::array_functions`).
//!
//! DataFusion unifies them as `Decimal128(30, 15)` instead: a double above 1e15 overflowed
//! (22003) and one below 1e-15 became 0 — `UPDATE t SET f = 0.5 WHERE id = 1`, planned as a
//! CASE over the column, zeroed the small values of the other rows. This analyzer rule runs
//! before type coercion and casts the numeric operands of such an expression to double
//! precision; a numeric constant becomes the double its digits name (read from its text,
//! correctly rounded, where a decimal-to-double cast divides), in a cast to a double too
//! (`0.12345678901234567::float8`). Among numerics, a quoted number is a numeric of its own
//! digits (`coalesce('2.25', 1.5)`). Written here because
//! DataFusion has no option for it.

use datafusion::arrow::datatypes::{DataType, Decimal128Type, DecimalType};
use datafusion::common::config::ConfigOptions;
use datafusion::common::tree_node::{Transformed, TreeNode};
use datafusion::common::{DFSchema, Result, ScalarValue};
use datafusion::logical_expr::expr::{InList, ScalarFunction};
use datafusion::logical_expr::{
    Between, BinaryExpr, Case, Expr, ExprSchemable, LogicalPlan, LogicalPlanBuilder, Operator,
    Projection, Union, Values,
};
use datafusion::optimizer::AnalyzerRule;
use std::sync::Arc;

/// The rule (before DataFusion's type coercion).
#[derive(Debug, Default)]
pub struct FloatBesideNumeric;

impl AnalyzerRule for FloatBesideNumeric {
    fn analyze(&self, plan: LogicalPlan, _config: &ConfigOptions) -> Result<LogicalPlan> {
        let plan = plan
            .transform_up_with_subqueries(|p| match p {
                LogicalPlan::Values(v) => values(v),
                LogicalPlan::Union(u) => union(u),
                other => Ok(Transformed::no(other)),
            })?
            .data;
        crate::checked::rewrite_plan_expressions(plan, false, &|e, schema| {
            e.transform_up(|e| unify(e, schema))
        })
    }

    fn name(&self) -> &str {
        "brook_float_beside_numeric"
    }
}

/// The rule applied to one expression planned on its own (a SQL function's body).
pub fn doubles_beside_numerics(e: Expr, schema: &DFSchema) -> Result<Expr> {
    Ok(e.transform_up(|e| unify(e, schema))?.data)
}

fn is_float(t: &DataType) -> bool {
    matches!(t, DataType::Float16 | DataType::Float32 | DataType::Float64)
}

fn is_numeric(t: &DataType) -> bool {
    matches!(t, DataType::Decimal128(..) | DataType::Decimal256(..))
}

/// `e` as double precision: a numeric constant as the double its text names.
fn to_float(e: Expr, schema: &DFSchema) -> Result<Expr> {
    if let Expr::Literal(ScalarValue::Decimal128(v, p, s), m) = &e {
        let f = v.and_then(|v| {
            Decimal128Type::format_decimal(v, *p, *s)
                .parse::<f64>()
                .ok()
        });
        if f.is_some() || v.is_none() {
            return Ok(Expr::Literal(ScalarValue::Float64(f), m.clone()));
        }
    }
    e.cast_to(&DataType::Float64, schema)
}

/// `exprs` with their numerics as doubles when one of them is a double; among numerics, a
/// quoted number as a numeric of its own digits.
fn unify_all(exprs: Vec<Expr>, schema: &DFSchema) -> Result<Transformed<Vec<Expr>>> {
    let types: Vec<Option<DataType>> = exprs.iter().map(|e| e.get_type(schema).ok()).collect();
    let float = types.iter().flatten().any(is_float);
    let numeric = types.iter().flatten().any(is_numeric);
    if numeric && !float {
        return quoted_numbers(exprs, schema);
    }
    if !float || !numeric {
        return Ok(Transformed::no(exprs));
    }
    let exprs = exprs
        .into_iter()
        .zip(types)
        .map(|(e, t)| match t {
            Some(t) if is_numeric(&t) => to_float(e, schema),
            _ => Ok(e),
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(Transformed::yes(exprs))
}

/// The operators whose operands take one common type.
fn unifies_operands(op: Operator) -> bool {
    use Operator as O;
    matches!(
        op,
        O::Eq
            | O::NotEq
            | O::Lt
            | O::LtEq
            | O::Gt
            | O::GtEq
            | O::IsDistinctFrom
            | O::IsNotDistinctFrom
            | O::Plus
            | O::Minus
            | O::Multiply
            | O::Divide
            | O::Modulo
    )
}

/// `exprs` (among them a numeric) with each quoted number cast to a numeric of its own
/// digits: DataFusion read `'2.25'` beside `1.5` as `numeric(2, 1)`, so `coalesce('2.25',
/// 1.5)` was 2.3 and `n IN ('0.4000001', 1.05)` matched 0.4 (a DELETE removed rows
/// PostgreSQL keeps).
fn quoted_numbers(exprs: Vec<Expr>, schema: &DFSchema) -> Result<Transformed<Vec<Expr>>> {
    let mut changed = false;
    let exprs = exprs
        .into_iter()
        .map(|e| {
            let t = match &e {
                Expr::Literal(ScalarValue::Utf8(Some(text)), _) => {
                    crate::untyped_arithmetic::numeric_type(text)
                }
                _ => None,
            };
            match t {
                Some(t) => {
                    changed = true;
                    e.cast_to(&t, schema)
                }
                None => Ok(e),
            }
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(if changed {
        Transformed::yes(exprs)
    } else {
        Transformed::no(exprs)
    })
}

/// The functions whose arguments take one common type.
fn unifies_arguments(name: &str) -> bool {
    matches!(
        name,
        "coalesce" | "nullif" | "greatest" | "least" | "make_array" | "nvl" | "ifnull"
    )
}

fn unify(e: Expr, schema: &DFSchema) -> Result<Transformed<Expr>> {
    Ok(match e {
        Expr::BinaryExpr(BinaryExpr { left, op, right }) if unifies_operands(op) => {
            unify_all(vec![*left, *right], schema)?.update_data(|mut v| {
                let right = v.pop().unwrap_or(Expr::Literal(ScalarValue::Null, None));
                let left = v.pop().unwrap_or(Expr::Literal(ScalarValue::Null, None));
                Expr::BinaryExpr(BinaryExpr::new(Box::new(left), op, Box::new(right)))
            })
        }
        Expr::Between(Between {
            expr,
            negated,
            low,
            high,
        }) => unify_all(vec![*expr, *low, *high], schema)?.update_data(|v| {
            let mut v = v.into_iter();
            let mut next = || Box::new(v.next().unwrap_or(Expr::Literal(ScalarValue::Null, None)));
            let (expr, low, high) = (next(), next(), next());
            Expr::Between(Between {
                expr,
                negated,
                low,
                high,
            })
        }),
        Expr::InList(InList {
            expr,
            list,
            negated,
        }) => {
            let mut all = vec![*expr];
            all.extend(list);
            unify_all(all, schema)?.update_data(|mut v| {
                let expr = Box::new(v.remove(0));
                Expr::InList(InList {
                    expr,
                    list: v,
                    negated,
                })
            })
        }
        Expr::ScalarFunction(f) if unifies_arguments(f.name()) => {
            let ScalarFunction { func, args } = f;
            unify_all(args, schema)?
                .update_data(|args| Expr::ScalarFunction(ScalarFunction { func, args }))
        }
        Expr::Case(c) => unify_case(c, schema)?,
        // `0.12345678901234567::float8`: the double the digits name.
        Expr::Cast(c)
            if is_float(c.field.data_type())
                && matches!(
                    c.expr.as_ref(),
                    Expr::Literal(ScalarValue::Decimal128(..), _)
                ) =>
        {
            let t = c.field.data_type().clone();
            Transformed::yes(to_float(*c.expr, schema)?.cast_to(&t, schema)?)
        }
        other => Transformed::no(other),
    })
}

/// A CASE's results take one type, and so do its operand and WHEN values.
fn unify_case(c: Case, schema: &DFSchema) -> Result<Transformed<Expr>> {
    let Case {
        expr,
        when_then_expr,
        else_expr,
    } = c;
    let n = when_then_expr.len();
    let (whens, thens): (Vec<Expr>, Vec<Expr>) =
        when_then_expr.into_iter().map(|(w, t)| (*w, *t)).unzip();
    let mut results = thens;
    results.extend(else_expr.map(|e| *e));
    let results = unify_all(results, schema)?;
    let (whens, expr, changed_whens) = match expr {
        Some(operand) => {
            let mut all = vec![*operand];
            all.extend(whens);
            let t = unify_all(all, schema)?;
            let changed = t.transformed;
            let mut v = t.data;
            let operand = v.remove(0);
            (v, Some(Box::new(operand)), changed)
        }
        None => (whens, None, false),
    };
    let changed = results.transformed || changed_whens;
    let mut results = results.data;
    let else_expr = (results.len() > n).then(|| Box::new(results.remove(n)));
    let case = Expr::Case(Case {
        expr,
        when_then_expr: whens
            .into_iter()
            .zip(results)
            .map(|(w, t)| (Box::new(w), Box::new(t)))
            .collect(),
        else_expr,
    });
    Ok(if changed {
        Transformed::yes(case)
    } else {
        Transformed::no(case)
    })
}

/// A quoted `NaN` or `Infinity`: only a double has these values here (Brook's numerics
/// have no infinity), so a VALUES column holding one beside numerics is of doubles
/// (`VALUES (1.5), ('Infinity')` into a double column).
fn names_a_float(e: &Expr) -> bool {
    let Expr::Literal(ScalarValue::Utf8(Some(text)), _) = e else {
        return false;
    };
    let t = text
        .trim()
        .trim_start_matches(['+', '-'])
        .to_ascii_lowercase();
    matches!(t.as_str(), "nan" | "inf" | "infinity")
}

/// A VALUES column holding doubles and numerics: doubles. The SQL planner has already cast
/// its rows to the common type it chose (`Decimal128(30, 15)`); the rows are read again
/// from under those casts.
fn values(v: Values) -> Result<Transformed<LogicalPlan>> {
    let empty = DFSchema::empty();
    let columns = v.schema.fields().len();
    let inner = |e: &Expr| match e {
        Expr::Cast(c) => c.expr.as_ref().clone(),
        other => other.clone(),
    };
    let mut rows = v.values.clone();
    let mut changed = false;
    for c in 0..columns {
        if !is_numeric(v.schema.field(c).data_type()) {
            continue;
        }
        let has_float = rows.iter().any(|r| {
            let e = inner(&r[c]);
            e.get_type(&empty).is_ok_and(|t| is_float(&t)) || names_a_float(&e)
        });
        if !has_float {
            continue;
        }
        for row in rows.iter_mut() {
            row[c] = to_float(inner(&row[c]), &empty)?;
        }
        changed = true;
    }
    if !changed {
        return Ok(Transformed::no(LogicalPlan::Values(v)));
    }
    let names: Vec<String> = v.schema.fields().iter().map(|f| f.name().clone()).collect();
    let plan = LogicalPlanBuilder::values(rows)?.build()?;
    // Keep the column names the plan above refers to.
    let exprs = plan
        .schema()
        .columns()
        .into_iter()
        .zip(names)
        .map(|(col, name)| Expr::Column(col).alias(name))
        .collect();
    Ok(Transformed::yes(LogicalPlan::Projection(
        Projection::try_new(exprs, Arc::new(plan))?,
    )))
}

/// A UNION column that is a double in one input and a numeric in another: a double in each.
/// The SQL planner has already cast the inputs to the type it chose (`Decimal128(30, 15)`),
/// so a double is also found under such a cast at the top of an input's projection.
fn union(u: Union) -> Result<Transformed<LogicalPlan>> {
    let columns = u.schema.fields().len();
    let floats: Vec<bool> = (0..columns)
        .map(|c| {
            let float = u.inputs.iter().any(|i| input_column_is_float(i, c));
            let numeric = u.inputs.iter().any(|i| {
                i.schema()
                    .fields()
                    .get(c)
                    .is_some_and(|f| is_numeric(f.data_type()))
                    && !input_column_is_float(i, c)
            });
            float && numeric
        })
        .collect();
    if !floats.iter().any(|f| *f) {
        return Ok(Transformed::no(LogicalPlan::Union(u)));
    }
    let inputs = u
        .inputs
        .into_iter()
        .map(|input| as_doubles(input, &floats))
        .collect::<Result<Vec<_>>>()?;
    // The union's schema derived again: type coercion keeps the one it finds.
    Ok(Transformed::yes(LogicalPlan::Union(
        Union::try_new_with_loose_types(inputs)?,
    )))
}

/// The double under an input's cast to a numeric (`CAST(f AS Decimal128(30, 15)) AS x`).
fn double_under_cast<'a>(e: &'a Expr, input: &DFSchema) -> Option<&'a Expr> {
    let e = match e {
        Expr::Alias(a) => a.expr.as_ref(),
        other => other,
    };
    match e {
        Expr::Cast(c)
            if is_numeric(c.field.data_type())
                && c.expr.get_type(input).is_ok_and(|t| is_float(&t)) =>
        {
            Some(c.expr.as_ref())
        }
        _ => None,
    }
}

/// Whether column `c` of a union input is a double (or one cast to a numeric).
fn input_column_is_float(input: &LogicalPlan, c: usize) -> bool {
    if input
        .schema()
        .fields()
        .get(c)
        .is_some_and(|f| is_float(f.data_type()))
    {
        return true;
    }
    match input {
        LogicalPlan::Projection(p) => p
            .expr
            .get(c)
            .is_some_and(|e| double_under_cast(e, p.input.schema()).is_some()),
        _ => false,
    }
}

/// A union input with the columns marked in `floats` as doubles.
fn as_doubles(input: Arc<LogicalPlan>, floats: &[bool]) -> Result<Arc<LogicalPlan>> {
    let schema = input.schema().clone();
    let numeric_at = |c: usize| {
        floats.get(c).copied().unwrap_or(false)
            && schema
                .fields()
                .get(c)
                .is_some_and(|f| is_numeric(f.data_type()))
    };
    if !(0..schema.fields().len()).any(numeric_at) {
        return Ok(input);
    }
    if let LogicalPlan::Projection(p) = input.as_ref() {
        let exprs = p
            .expr
            .iter()
            .enumerate()
            .map(|(c, e)| {
                if !numeric_at(c) {
                    return Ok(e.clone());
                }
                let name = schema.field(c).name().clone();
                let inner = double_under_cast(e, p.input.schema()).unwrap_or(e);
                let inner = match inner {
                    Expr::Alias(a) => a.expr.as_ref().clone(),
                    other => other.clone(),
                };
                Ok(to_float(inner, p.input.schema())?.alias(name))
            })
            .collect::<Result<Vec<_>>>()?;
        return Ok(Arc::new(LogicalPlan::Projection(Projection::try_new(
            exprs,
            p.input.clone(),
        )?)));
    }
    let exprs = schema
        .columns()
        .into_iter()
        .enumerate()
        .map(|(c, col)| {
            let name = col.name.clone();
            let e = Expr::Column(col);
            if numeric_at(c) {
                Ok(e.cast_to(&DataType::Float64, &schema)?.alias(name))
            } else {
                Ok(e)
            }
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(Arc::new(LogicalPlan::Projection(Projection::try_new(
        exprs, input,
    )?)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::arrow::datatypes::{Field, Schema};
    use datafusion::logical_expr::{col, lit};

    fn schema() -> DFSchema {
        DFSchema::try_from(Schema::new(vec![
            Field::new("f", DataType::Float64, true),
            Field::new("n", DataType::Decimal128(10, 2), true),
        ]))
        .expect("schema")
    }

    fn decimal(v: i128, p: u8, s: i8) -> Expr {
        Expr::Literal(ScalarValue::Decimal128(Some(v), p, s), None)
    }

    #[test]
    fn a_numeric_compared_with_a_double_is_a_double() {
        let e = col("f").gt(decimal(15, 2, 1));
        let out = unify(e, &schema()).expect("rewrite");
        assert!(out.transformed);
        assert_eq!(out.data, col("f").gt(lit(1.5f64)));
    }

    #[test]
    fn constants_become_the_double_their_digits_name() {
        // 0.12345678901234567: the correctly rounded double, not a division's.
        let e = to_float(decimal(12345678901234567, 17, 17), &schema()).expect("float");
        assert_eq!(e, lit(0.12345678901234567f64));
    }

    #[test]
    fn numerics_alone_are_left_numeric() {
        let e = Expr::BinaryExpr(BinaryExpr::new(
            Box::new(col("n")),
            Operator::Gt,
            Box::new(decimal(15, 2, 1)),
        ));
        assert!(!unify(e, &schema()).expect("rewrite").transformed);
    }

    #[test]
    fn case_results_and_coalesce_arguments_take_one_type() {
        let case = Expr::Case(Case {
            expr: None,
            when_then_expr: vec![(Box::new(lit(true)), Box::new(col("f")))],
            else_expr: Some(Box::new(decimal(5, 1, 1))),
        });
        let out = unify(case, &schema()).expect("rewrite");
        assert!(out.transformed);
        let Expr::Case(c) = out.data else {
            panic!("a CASE")
        };
        assert_eq!(c.else_expr.map(|e| *e), Some(lit(0.5f64)));
    }
}
