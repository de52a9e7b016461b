//! MEASURES: what each output column computes over a match.

use brook_common::{brook_err, ident, BrookError, Result};
use brook_operators::match_recognize::{Aggregate, MeasureKind};
use datafusion::arrow::datatypes::{DataType, SchemaRef};
use datafusion::sql::sqlparser::ast::{
    self, Expr, FunctionArg, FunctionArgExpr, FunctionArguments,
};

/// One measure: what it computes and its type.
pub(super) fn plan_measure(
    e: &Expr,
    variables: &[String],
    input: &SchemaRef,
) -> Result<(MeasureKind, DataType)> {
    let unsupported = || {
        brook_err!(
            Unsupported,
            "MEASURES expression {e} (a measure is one of var.col, FIRST/LAST(var.col), \
             CLASSIFIER(), MATCH_NUMBER(), count/sum/avg/min/max(var.col); compute more in the \
             outer SELECT)"
        )
    };
    // (variable, column) of `var.col` or `col`; `var.*` has no column.
    let reference = |e: &Expr| -> Result<(Option<usize>, Option<usize>)> {
        let find_var = |i: &ast::Ident| -> Result<usize> {
            let name = ident::ident_name(i);
            variables
                .iter()
                .position(|v| *v == name)
                .ok_or_else(|| brook_err!(Syntax, "pattern variable \"{name}\" is not in PATTERN"))
        };
        let find_col = |i: &ast::Ident| -> Result<usize> {
            let name = ident::ident_name(i);
            input
                .index_of(&name)
                .map_err(|_| BrookError::UndefinedColumn(name))
        };
        match e {
            Expr::Identifier(c) => Ok((None, Some(find_col(c)?))),
            Expr::CompoundIdentifier(p) if p.len() == 2 => {
                Ok((Some(find_var(&p[0])?), Some(find_col(&p[1])?)))
            }
            Expr::QualifiedWildcard(name, _) if name.0.len() == 1 => {
                let v = name.0[0].as_ident().ok_or_else(unsupported)?;
                Ok((Some(find_var(v)?), None))
            }
            Expr::Wildcard(_) => Ok((None, None)),
            _ => Err(unsupported()),
        }
    };
    match e {
        Expr::Identifier(_) | Expr::CompoundIdentifier(_) => {
            let (var, col) = reference(e)?;
            let col = col.ok_or_else(unsupported)?;
            Ok((
                MeasureKind::Last { var, col },
                input.field(col).data_type().clone(),
            ))
        }
        Expr::Function(f) => {
            let name = f.name.to_string().to_ascii_lowercase();
            let args: Vec<&FunctionArgExpr> = match &f.args {
                FunctionArguments::List(l) => l
                    .args
                    .iter()
                    .map(|a| match a {
                        FunctionArg::Unnamed(x) => Ok(x),
                        _ => Err(unsupported()),
                    })
                    .collect::<Result<_>>()?,
                FunctionArguments::None => Vec::new(),
                FunctionArguments::Subquery(_) => return Err(unsupported()),
            };
            let arg = || -> Result<(Option<usize>, Option<usize>)> {
                match args.as_slice() {
                    [FunctionArgExpr::Expr(x)] => reference(x),
                    [FunctionArgExpr::QualifiedWildcard(n)] => reference(&Expr::QualifiedWildcard(
                        n.clone(),
                        ast::helpers::attached_token::AttachedToken::empty(),
                    )),
                    [FunctionArgExpr::Wildcard] => Ok((None, None)),
                    _ => Err(unsupported()),
                }
            };
            let column_type = |col: Option<usize>| -> Result<(usize, DataType)> {
                let c = col.ok_or_else(unsupported)?;
                Ok((c, input.field(c).data_type().clone()))
            };
            match name.as_str() {
                "classifier" if args.is_empty() => Ok((MeasureKind::Classifier, DataType::Utf8)),
                "match_number" if args.is_empty() => {
                    Ok((MeasureKind::MatchNumber, DataType::Int64))
                }
                "first" | "last" => {
                    let (var, col) = arg()?;
                    let (col, ty) = column_type(col)?;
                    let kind = if name == "first" {
                        MeasureKind::First { var, col }
                    } else {
                        MeasureKind::Last { var, col }
                    };
                    Ok((kind, ty))
                }
                "count" => {
                    let (var, col) = arg()?;
                    Ok((MeasureKind::Count { var, col }, DataType::Int64))
                }
                "sum" | "avg" | "min" | "max" => {
                    let (var, col) = arg()?;
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
                    Ok((MeasureKind::Aggregate { func, var, col }, ty))
                }
                _ => Err(unsupported()),
            }
        }
        _ => Err(unsupported()),
    }
}
