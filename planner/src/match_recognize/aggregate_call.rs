//! Aggregate functions in MEASURES other than the match's own navigations: any aggregate
//! over one variable's rows (`array_agg(b.price)`, `stddev(price)`, a user's aggregate), of
//! an expression of the row (`sum(b.price * b.qty)`), with constant arguments after the
//! first (`string_agg(b.kind, ', ')`), `DISTINCT`, `ORDER BY` and `FILTER (WHERE ...)`
//! (`array_agg(DISTINCT b.price ORDER BY b.price DESC) FILTER (WHERE b.qty > 0)`); `count`,
//! `sum`, `avg`, `min` and `max` written so too.

use super::measures::{function_name, is_match_navigation, reference};
use super::{ExprPlanning, Names};
use brook_common::{brook_err, ident, BrookError, Result};
use brook_operators::match_recognize::{AggregateCall, MeasureKind, Navigation, VarSet};
use datafusion::arrow::compute::SortOptions;
use datafusion::arrow::datatypes::{DataType, Field, SchemaRef};
use datafusion::common::{DFSchema, ScalarValue};
use datafusion::logical_expr::type_coercion::functions::fields_with_udf;
use datafusion::logical_expr::{Expr as LogicalExpr, ExprSchemable};
use datafusion::physical_expr::expressions::{Column, Literal};
use datafusion::physical_expr::PhysicalExpr;
use datafusion::sql::sqlparser::ast::{
    self, DuplicateTreatment, Expr, FunctionArg, FunctionArgExpr, FunctionArgumentClause,
    FunctionArguments, VisitMut, VisitorMut,
};
use std::ops::ControlFlow;
use std::sync::Arc;

/// The navigation an aggregate call of MEASURES is: None for a scalar function or one of
/// the match's own navigations (`count(b.*)`, `FIRST(...)`: see `plan_navigation`).
pub(super) fn aggregate_call(
    f: &ast::Function,
    names: &Names,
    input: &SchemaRef,
    exprs: &mut dyn ExprPlanning,
) -> Result<Option<Navigation>> {
    let (qualifier, name) = function_name(f);
    let list = match &f.args {
        FunctionArguments::List(l) => Some(l),
        _ => None,
    };
    let first = list.and_then(|l| l.args.first());
    let first_expr = match first {
        Some(FunctionArg::Unnamed(FunctionArgExpr::Expr(x))) => Some(x),
        _ => None,
    };
    // count, sum, avg, min and max of a column, plain, are the match's own navigations.
    let plain = list.is_some_and(|l| l.duplicate_treatment.is_none() && l.clauses.is_empty())
        && f.filter.is_none()
        && first_expr.is_none_or(|x| reference(x, names, input).is_ok());
    let own = matches!(name.as_str(), "count" | "sum" | "avg" | "min" | "max");
    if is_match_navigation(&name) && (plain || !own) {
        return Ok(None);
    }
    let Some(func) = exprs.aggregate(&name) else {
        return Ok(None);
    };
    let unsupported = |what: &str| {
        brook_err!(
            Unsupported,
            "{f} in MATCH_RECOGNIZE MEASURES: {what} (an aggregate takes an expression of \
             one variable's rows, then constants, with DISTINCT, ORDER BY or FILTER)"
        )
    };
    if f.over.is_some() || !f.within_group.is_empty() {
        return Err(unsupported("OVER or WITHIN GROUP"));
    }
    let (Some(list), Some(first)) = (list, first) else {
        return Err(unsupported("no arguments"));
    };
    let mut scope = RowScope {
        names,
        input,
        vars: None,
        qualified: false,
    };
    // count(*) and count(v.*) count rows: a constant of each.
    let one = || -> (Arc<dyn PhysicalExpr>, Field) {
        let value = ScalarValue::Int64(Some(1));
        (
            Arc::new(Literal::new(value)),
            Field::new("one", DataType::Int64, false),
        )
    };
    let (arg, arg_field) = match first {
        FunctionArg::Unnamed(FunctionArgExpr::Expr(x)) => scope.plan(x, exprs)?,
        FunctionArg::Unnamed(FunctionArgExpr::Wildcard) if name == "count" => one(),
        FunctionArg::Unnamed(FunctionArgExpr::QualifiedWildcard(n))
            if name == "count" && n.0.len() == 1 =>
        {
            let v = n.0[0]
                .as_ident()
                .ok_or_else(|| unsupported("count of no variable's rows"))?;
            scope.vars = Some(names.set(v)?);
            scope.qualified = true;
            one()
        }
        _ => return Err(unsupported("its first argument is no expression")),
    };
    let constants = (list.args.iter().skip(1))
        .map(|a| match a {
            FunctionArg::Unnamed(FunctionArgExpr::Expr(x)) => constant(x, exprs),
            _ => None,
        })
        .map(|c| c.ok_or_else(|| unsupported("an argument after the first is no constant")))
        .collect::<Result<Vec<_>>>()?;
    let filter = match &f.filter {
        Some(cond) => {
            let (cond, field) = scope.plan(cond, exprs)?;
            if field.data_type() != &DataType::Boolean {
                return Err(brook_err!(
                    DatatypeMismatch,
                    "argument of FILTER must be type boolean, not {}",
                    field.data_type()
                ));
            }
            Some(cond)
        }
        None => None,
    };
    let mut order = Vec::new();
    for clause in &list.clauses {
        let FunctionArgumentClause::OrderBy(items) = clause else {
            return Err(unsupported(&format!("{clause}")));
        };
        for o in items {
            let (by_vars, by) = reference(&o.expr, names, input)?;
            let by = by.ok_or_else(|| unsupported("ORDER BY names no column"))?;
            if by_vars.is_some() && scope.qualified && by_vars != scope.vars {
                return Err(scope.other_variable(f));
            }
            let descending = o.options.asc == Some(false);
            order.push((
                by,
                SortOptions {
                    descending,
                    nulls_first: o.options.nulls_first.unwrap_or(descending),
                },
            ));
        }
    }
    // PostgreSQL's rule: with DISTINCT, ORDER BY sorts the argument itself.
    let distinct = list.duplicate_treatment == Some(DuplicateTreatment::Distinct);
    let arg_column = arg.as_ref().downcast_ref::<Column>().map(Column::index);
    if distinct && order.iter().any(|(by, _)| Some(*by) != arg_column) {
        return Err(BrookError::Semantic {
            message: "in an aggregate with DISTINCT, ORDER BY expressions must appear in \
                      argument list"
                .into(),
            code: "42P10",
        });
    }
    // The argument types the function takes, as DataFusion coerces them.
    let mut fields = vec![Arc::new(arg_field)];
    for (i, c) in constants.iter().enumerate() {
        fields.push(Arc::new(Field::new(format!("c{i}"), c.data_type(), true)));
    }
    let coerced = fields_with_udf(&fields, func.as_ref())?;
    let data_type = func.return_field(&coerced)?.data_type().clone();
    let constants = constants
        .iter()
        .zip(coerced.iter().skip(1))
        .map(|(c, f)| c.cast_to(f.data_type()).map_err(BrookError::from))
        .collect::<Result<Vec<_>>>()?;
    Ok(Some(Navigation {
        kind: MeasureKind::Function {
            vars: scope.vars,
            call: AggregateCall {
                func,
                arg,
                arg_type: coerced[0].data_type().clone(),
                filter,
                constants,
                distinct,
                order,
            },
        },
        running: qualifier.as_deref() != Some("final"),
        data_type,
    }))
}

/// Expressions of the rows an aggregate takes: `v.col` is the row's `col`, and every
/// qualifier names the same variable (or `SUBSET`), whose rows the aggregate takes (none:
/// every row of the match).
struct RowScope<'a> {
    names: &'a Names,
    input: &'a SchemaRef,
    vars: VarSet,
    qualified: bool,
}

impl RowScope<'_> {
    /// `e` as an expression over the input's columns, and its field.
    fn plan(
        &mut self,
        e: &Expr,
        exprs: &mut dyn ExprPlanning,
    ) -> Result<(Arc<dyn PhysicalExpr>, Field)> {
        let mut e = e.clone();
        if let ControlFlow::Break(err) = e.visit(self) {
            return Err(err);
        }
        let schema = DFSchema::try_from(self.input.as_ref().clone())?;
        let logical = exprs.logical(e, &schema)?;
        let field = logical.to_field(&schema)?.1.as_ref().clone();
        Ok((exprs.physical(logical, &schema)?, field))
    }

    fn other_variable(&self, f: &ast::Function) -> BrookError {
        brook_err!(
            Syntax,
            "{f}: an aggregate's argument, ORDER BY and FILTER read the rows of one variable"
        )
    }
}

impl VisitorMut for RowScope<'_> {
    type Break = BrookError;

    fn pre_visit_expr(&mut self, e: &mut Expr) -> ControlFlow<BrookError> {
        let result = match e {
            Expr::CompoundIdentifier(p) if p.len() == 2 => match self.names.set(&p[0]) {
                Ok(set) if self.qualified && self.vars != Some(set) => Err(brook_err!(
                    Syntax,
                    "{e}: an aggregate's argument, ORDER BY and FILTER read the rows of \
                         one variable"
                )),
                Ok(set) => {
                    self.vars = Some(set);
                    self.qualified = true;
                    *e = Expr::Identifier(p[1].clone());
                    Ok(())
                }
                Err(err) => Err(err),
            },
            Expr::Function(f) => {
                let name = function_name(f).1;
                if is_match_navigation(&name) || name == "prev" || name == "next" {
                    Err(brook_err!(
                        Unsupported,
                        "{f} inside an aggregate's argument in MATCH_RECOGNIZE MEASURES (it \
                         reads the row's own columns)"
                    ))
                } else {
                    Ok(())
                }
            }
            Expr::Identifier(i) if self.input.index_of(&ident::ident_name(i)).is_err() => {
                Err(BrookError::UndefinedColumn(ident::ident_name(i)))
            }
            _ => Ok(()),
        };
        match result {
            Ok(()) => ControlFlow::Continue(()),
            Err(err) => ControlFlow::Break(err),
        }
    }
}

/// A constant argument's value, planned as the clause's other expressions are (a string, a
/// number, a boolean, NULL); None for anything else.
fn constant(e: &Expr, exprs: &mut dyn ExprPlanning) -> Option<ScalarValue> {
    match exprs.logical(e.clone(), &DFSchema::empty()) {
        Ok(LogicalExpr::Literal(value, _)) => Some(value),
        _ => None,
    }
}
