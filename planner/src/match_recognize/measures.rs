//! MEASURES, and the values a match is read by: `v.col`, `FIRST`/`LAST(v.col [, k])`,
//! `CLASSIFIER()`, `MATCH_NUMBER()`, `count/sum/avg/min/max(v.col)` — each `RUNNING` (up to
//! the row shown) or `FINAL` (the whole match) — and expressions over them. `DEFINE`
//! conditions read the match so far through the same navigations ([`plan_navigation`]).

use super::aggregate_call::aggregate_call;
use super::extensions::SEMANTICS_PREFIX;
use super::{ExprPlanning, Names};
use brook_common::{brook_err, ident, BrookError, Result};
use brook_operators::match_recognize::{
    reads_schema, Aggregate, Measure, MeasureKind, Navigation, VarSet,
};
use datafusion::arrow::datatypes::{DataType, SchemaRef};
use datafusion::common::DFSchema;
use datafusion::sql::sqlparser::ast::{
    self, Expr, FunctionArg, FunctionArgExpr, FunctionArguments, Value, VisitMut, VisitorMut,
};
use std::ops::ControlFlow;

/// One measure and its type.
pub(super) fn plan_measure(
    e: &Expr,
    names: &Names,
    input: &SchemaRef,
    exprs: &mut dyn ExprPlanning,
) -> Result<(Measure, DataType)> {
    let mut rewritten = e.clone();
    let mut reads = Reads {
        names,
        input,
        exprs: &mut *exprs,
        found: Vec::new(),
    };
    if let ControlFlow::Break(err) = rewritten.visit(&mut reads) {
        return Err(err);
    }
    let found = reads.found;
    // A measure that is one navigation is that navigation's column.
    if matches!(rewritten, Expr::Identifier(ref i) if i.value == "__nav_0") {
        let ty = found[0].data_type.clone();
        return Ok((
            Measure {
                reads: found,
                expr: None,
                text: String::new(),
            },
            ty,
        ));
    }
    let schema = DFSchema::try_from(reads_schema(&found).as_ref().clone())?;
    let logical = exprs.logical(rewritten, &schema)?;
    // As in a query: integer arithmetic fails on overflow (22003) rather than wraps.
    let logical =
        crate::checked::CheckedIntegerArithmetic::default().check_expression(logical, &schema)?;
    let ty = datafusion::logical_expr::ExprSchemable::get_type(&logical, &schema)?;
    super::refuse_unplannable(&logical, "MEASURES")?;
    let expr = exprs.physical(logical, &schema)?;
    Ok((
        Measure {
            reads: found,
            expr: Some(expr),
            text: String::new(),
        },
        ty,
    ))
}

/// Replaces each navigation (and each `col` / `v.col`: the last row's) of a measure by a
/// `__nav_i` column.
struct Reads<'a> {
    names: &'a Names,
    input: &'a SchemaRef,
    /// Where aggregate functions are looked up.
    exprs: &'a mut dyn ExprPlanning,
    found: Vec<Navigation>,
}

impl VisitorMut for Reads<'_> {
    type Break = BrookError;

    fn pre_visit_expr(&mut self, e: &mut Expr) -> ControlFlow<BrookError> {
        let nav = match e {
            Expr::Function(f) => {
                let name = function_name(f).1;
                if name == "prev" || name == "next" {
                    physical_navigation(f, self.names, self.input, false).map(Some)
                } else {
                    match aggregate_call(f, self.names, self.input, self.exprs) {
                        Ok(None) => plan_navigation(f, self.names, self.input, false),
                        planned => planned,
                    }
                }
            }
            Expr::Identifier(_) | Expr::CompoundIdentifier(_) => {
                last_value(e, self.names, self.input).map(Some)
            }
            _ => Ok(None),
        };
        match nav {
            Ok(Some(n)) => {
                *e = Expr::Identifier(ast::Ident::new(format!("__nav_{}", self.found.len())));
                self.found.push(n);
                ControlFlow::Continue(())
            }
            Ok(None) => ControlFlow::Continue(()),
            Err(err) => ControlFlow::Break(err),
        }
    }
}

/// `col` or `v.col` as a value of the match: the last row's (of `v`) value, running.
pub(super) fn last_value(e: &Expr, names: &Names, input: &SchemaRef) -> Result<Navigation> {
    let (vars, col) = reference(e, names, input)?;
    let col = col.ok_or_else(|| brook_err!(Syntax, "{e} is not a value"))?;
    Ok(Navigation {
        kind: MeasureKind::Last {
            vars,
            col,
            offset: 0,
            shift: 0,
        },
        running: true,
        data_type: input.field(col).data_type().clone(),
    })
}

/// (`RUNNING`/`FINAL` qualifier, lower-case name) of a function call.
pub(super) fn function_name(f: &ast::Function) -> (Option<String>, String) {
    let name = f.name.to_string().to_ascii_lowercase();
    for q in ["running", "final"] {
        if let Some(n) = name.strip_prefix(&format!("{SEMANTICS_PREFIX}{q}_")) {
            return (Some(q.to_string()), n.to_string());
        }
    }
    (None, name)
}

/// The navigation a function call is (None: an ordinary function, whose arguments may hold
/// navigations). `in_define`: `FINAL` is refused (a condition sees only the match so far).
pub(super) fn plan_navigation(
    f: &ast::Function,
    names: &Names,
    input: &SchemaRef,
    in_define: bool,
) -> Result<Option<Navigation>> {
    let (qualifier, name) = function_name(f);
    if !is_match_navigation(&name) {
        if qualifier.is_some() {
            return Err(brook_err!(
                Syntax,
                "RUNNING and FINAL apply to FIRST, LAST and aggregates, not to {name}()"
            ));
        }
        return Ok(None);
    }
    let running = qualifier.as_deref() != Some("final");
    if in_define && !running {
        return Err(brook_err!(
            Syntax,
            "FINAL in DEFINE: a condition sees only the match so far"
        ));
    }
    let unsupported = || {
        brook_err!(
            Unsupported,
            "{f} in MATCH_RECOGNIZE (navigations take var.col, var.* or *, and FIRST/LAST an \
             integer offset)"
        )
    };
    if f.filter.is_some() || f.over.is_some() || !f.within_group.is_empty() {
        return Err(unsupported());
    }
    let args: Vec<&FunctionArgExpr> = match &f.args {
        FunctionArguments::List(l) => {
            if l.duplicate_treatment.is_some() || !l.clauses.is_empty() {
                return Err(unsupported());
            }
            l.args
                .iter()
                .map(|a| match a {
                    FunctionArg::Unnamed(x) => Ok(x),
                    _ => Err(unsupported()),
                })
                .collect::<Result<_>>()?
        }
        FunctionArguments::None => Vec::new(),
        FunctionArguments::Subquery(_) => return Err(unsupported()),
    };
    let arg = |a: &FunctionArgExpr| -> Result<(VarSet, Option<usize>)> {
        match a {
            FunctionArgExpr::Expr(x) => reference(x, names, input),
            FunctionArgExpr::QualifiedWildcard(n) if n.0.len() == 1 => {
                let v = n.0[0].as_ident().ok_or_else(unsupported)?;
                Ok((Some(names.set(v)?), None))
            }
            FunctionArgExpr::Wildcard => Ok((None, None)),
            _ => Err(unsupported()),
        }
    };
    let column_type = |col: Option<usize>| -> Result<(usize, DataType)> {
        let c = col.ok_or_else(unsupported)?;
        Ok((c, input.field(c).data_type().clone()))
    };
    let nav = |kind, data_type| {
        Ok(Some(Navigation {
            kind,
            running,
            data_type,
        }))
    };
    match (name.as_str(), args.as_slice()) {
        ("classifier", []) => nav(MeasureKind::Classifier, DataType::Utf8),
        ("match_number", []) => nav(MeasureKind::MatchNumber, DataType::Int64),
        ("first" | "last", [a, rest @ ..]) if rest.len() <= 1 => {
            let (vars, col) = arg(a)?;
            let (col, ty) = column_type(col)?;
            let offset = match rest.first() {
                None => 0,
                Some(FunctionArgExpr::Expr(Expr::Value(v))) => match &v.value {
                    Value::Number(n, _) => n.parse::<usize>().map_err(|_| {
                        brook_err!(
                            Syntax,
                            "{} offset must be a non-negative integer",
                            name.to_uppercase()
                        )
                    })?,
                    _ => return Err(unsupported()),
                },
                Some(_) => return Err(unsupported()),
            };
            let kind = if name == "first" {
                MeasureKind::First {
                    vars,
                    col,
                    offset,
                    shift: 0,
                }
            } else {
                MeasureKind::Last {
                    vars,
                    col,
                    offset,
                    shift: 0,
                }
            };
            nav(kind, ty)
        }
        ("count", [a]) => {
            let (vars, col) = arg(a)?;
            nav(MeasureKind::Count { vars, col }, DataType::Int64)
        }
        ("sum" | "avg" | "min" | "max", [a]) => {
            let (vars, col) = arg(a)?;
            let (col, ty) = column_type(col)?;
            let (func, ty) = match name.as_str() {
                "sum" if ty.is_integer() => (Aggregate::Sum, DataType::Int64),
                "sum" if ty.is_floating() => (Aggregate::Sum, DataType::Float64),
                "sum" if matches!(ty, DataType::Decimal128(..)) => (Aggregate::Sum, ty),
                "avg" if ty.is_numeric() => (Aggregate::Avg, DataType::Float64),
                "min" => (Aggregate::Min, ty),
                "max" => (Aggregate::Max, ty),
                _ => {
                    return Err(brook_err!(
                        UndefinedFunction,
                        "function {name}({}) does not exist",
                        brook_common::types::sql_name(&ty)
                    ))
                }
            };
            nav(MeasureKind::Aggregate { func, vars, col }, ty)
        }
        _ => Err(unsupported()),
    }
}

/// True for the navigations and aggregates a match keeps as it grows (DEFINE reads them).
pub(super) fn is_match_navigation(name: &str) -> bool {
    matches!(
        name,
        "first" | "last" | "classifier" | "match_number" | "count" | "sum" | "avg" | "min" | "max"
    )
}

/// The argument and the offset (1 when not given) of `PREV(x [, k])` / `NEXT(x [, k])`.
pub(super) fn physical_args<'f>(f: &'f ast::Function, name: &str) -> Result<(&'f Expr, usize)> {
    let bad_offset = || {
        brook_err!(
            Syntax,
            "{} offset must be a non-negative integer constant",
            name.to_uppercase()
        )
    };
    if f.filter.is_some() || f.over.is_some() || !f.within_group.is_empty() {
        return Err(brook_err!(
            Unsupported,
            "{f} in MATCH_RECOGNIZE ({} navigates rows of the partition: no OVER, FILTER or \
             WITHIN GROUP)",
            name.to_uppercase()
        ));
    }
    let args: Vec<&Expr> = match &f.args {
        FunctionArguments::List(l) if l.duplicate_treatment.is_none() && l.clauses.is_empty() => l
            .args
            .iter()
            .map(|a| match a {
                FunctionArg::Unnamed(FunctionArgExpr::Expr(e)) => Some(e),
                _ => None,
            })
            .collect::<Option<_>>()
            .unwrap_or_default(),
        _ => Vec::new(),
    };
    match args.as_slice() {
        [x] => Ok((x, 1)),
        [x, Expr::Value(v)] => match &v.value {
            Value::Number(n, _) => Ok((x, n.parse::<usize>().map_err(|_| bad_offset())?)),
            _ => Err(bad_offset()),
        },
        [_, _] => Err(bad_offset()),
        _ => Err(brook_err!(
            Syntax,
            "{} takes a value of the match and an offset: {}(price), {}(LAST(b.price), 2)",
            name.to_uppercase(),
            name.to_uppercase(),
            name.to_uppercase()
        )),
    }
}

/// `PREV(x [, k])` / `NEXT(x [, k])` as a value of the match: the row k rows before
/// (after) the row `x` names — `col` or `v.col` (the last row so far, of `v`), or
/// `FIRST`/`LAST(v.col [, n])` — in the partition, as Trino and Oracle navigate.
pub(super) fn physical_navigation(
    f: &ast::Function,
    names: &Names,
    input: &SchemaRef,
    in_define: bool,
) -> Result<Navigation> {
    let (qualifier, name) = function_name(f);
    let (arg, k) = physical_args(f, &name)?;
    let mut nav = match arg {
        Expr::Function(inner) if matches!(function_name(inner).1.as_str(), "first" | "last") => {
            plan_navigation(inner, names, input, in_define)?
                .ok_or_else(|| brook_err!(Internal, "{inner} is not a navigation"))?
        }
        Expr::Identifier(_) | Expr::CompoundIdentifier(_) => last_value(arg, names, input)?,
        other => {
            return Err(brook_err!(
                Unsupported,
                "{}({other}): PREV and NEXT take a column, var.col, FIRST(...) or LAST(...)",
                name.to_uppercase()
            ))
        }
    };
    match qualifier.as_deref() {
        Some("final") if in_define => {
            return Err(brook_err!(
                Syntax,
                "FINAL in DEFINE: a condition sees only the match so far"
            ))
        }
        Some("final") => nav.running = false,
        _ => {}
    }
    let k = i64::try_from(k).map_err(|_| {
        brook_err!(
            Syntax,
            "{} offset must be a non-negative integer constant",
            name.to_uppercase()
        )
    })?;
    match &mut nav.kind {
        MeasureKind::First { shift, .. } | MeasureKind::Last { shift, .. } => {
            *shift = if name == "prev" { -k } else { k };
        }
        _ => return Err(brook_err!(Internal, "{f} navigates from no row")),
    }
    Ok(nav)
}

/// (variables, column) of `var.col` or `col`; `var.*` and `*` have no column.
pub(super) fn reference(
    e: &Expr,
    names: &Names,
    input: &SchemaRef,
) -> Result<(VarSet, Option<usize>)> {
    let find_col = |i: &ast::Ident| -> Result<usize> {
        let name = ident::ident_name(i);
        input
            .index_of(&name)
            .map_err(|_| BrookError::UndefinedColumn(name))
    };
    match e {
        Expr::Identifier(c) => Ok((None, Some(find_col(c)?))),
        Expr::CompoundIdentifier(p) if p.len() == 2 => {
            Ok((Some(names.set(&p[0])?), Some(find_col(&p[1])?)))
        }
        Expr::Wildcard(_) => Ok((None, None)),
        other => Err(brook_err!(
            Unsupported,
            "{other} in MATCH_RECOGNIZE (navigations read var.col, col, var.* or *)"
        )),
    }
}
