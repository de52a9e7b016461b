//! DEFINE: each pattern variable's condition, over the row and `PREV` rows before it.

use brook_common::{brook_err, ident, BrookError, Result};
use brook_operators::match_recognize::PrevColumn;
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use datafusion::common::DFSchema;
use datafusion::execution::context::SessionState;
use datafusion::sql::sqlparser::ast::{
    self, Expr, FunctionArg, FunctionArgExpr, FunctionArguments, Value, VisitMut, VisitorMut,
};
use std::ops::ControlFlow;
use std::sync::Arc;

type Conditions = (
    Vec<Option<Arc<dyn datafusion::physical_expr::PhysicalExpr>>>,
    Vec<PrevColumn>,
);

/// The condition of each variable (None: not defined, any row), over the input's columns and
/// the `PREV` columns they read.
pub(super) fn plan_conditions(
    symbols: &[ast::SymbolDefinition],
    variables: &[String],
    input: &SchemaRef,
    state: &SessionState,
) -> Result<Conditions> {
    let mut prev: Vec<PrevColumn> = Vec::new();
    let mut rewritten: Vec<Option<Expr>> = vec![None; variables.len()];
    for s in symbols {
        let name = ident::ident_name(&s.symbol);
        let Some(v) = variables.iter().position(|x| *x == name) else {
            return Err(brook_err!(
                Syntax,
                "DEFINE {name}: the variable is not in PATTERN"
            ));
        };
        if rewritten[v].is_some() {
            return Err(brook_err!(Syntax, "DEFINE {name} given more than once"));
        }
        let mut e = s.definition.clone();
        let mut rw = Condition {
            var: &name,
            variables,
            input,
            prev: &mut prev,
        };
        if let ControlFlow::Break(err) = e.visit(&mut rw) {
            return Err(err);
        }
        rewritten[v] = Some(e);
    }
    let mut fields: Vec<Field> = input.fields().iter().map(|f| f.as_ref().clone()).collect();
    for (i, p) in prev.iter().enumerate() {
        let f = input.field(p.col);
        fields.push(Field::new(
            format!("__prev_{i}"),
            f.data_type().clone(),
            true,
        ));
    }
    let schema = DFSchema::try_from(Schema::new(fields))?;
    let mut conditions = Vec::new();
    for e in rewritten {
        let Some(e) = e else {
            conditions.push(None);
            continue;
        };
        let logical = state.create_logical_expr(&e.to_string(), &schema)?;
        let ty = datafusion::logical_expr::ExprSchemable::get_type(&logical, &schema)?;
        if ty != DataType::Boolean {
            return Err(brook_err!(
                DatatypeMismatch,
                "argument of DEFINE must be type boolean, not type {}",
                brook_common::types::sql_name(&ty)
            ));
        }
        conditions.push(Some(state.create_physical_expr(logical, &schema)?));
    }
    Ok((conditions, prev))
}

/// Rewrites a DEFINE condition of `var` into an expression over the row: `var.col` and
/// `col` read the row, `PREV(col [, k])` a `__prev_i` column.
struct Condition<'a> {
    var: &'a str,
    variables: &'a [String],
    input: &'a SchemaRef,
    prev: &'a mut Vec<PrevColumn>,
}

impl Condition<'_> {
    fn own_column(&self, e: &Expr) -> Result<Option<String>> {
        match e {
            Expr::Identifier(i) => Ok(Some(ident::ident_name(i))),
            Expr::CompoundIdentifier(parts) if parts.len() == 2 => {
                let qualifier = ident::ident_name(&parts[0]);
                if qualifier == self.var {
                    return Ok(Some(ident::ident_name(&parts[1])));
                }
                if self.variables.contains(&qualifier) {
                    return Err(brook_err!(
                        Unsupported,
                        "DEFINE {} reading another pattern variable ({e}); compare with \
                         PREV(...) instead",
                        self.var
                    ));
                }
                Ok(None)
            }
            _ => Ok(None),
        }
    }

    fn prev_call(&mut self, f: &ast::Function) -> Result<Expr> {
        let name = f.name.to_string().to_ascii_lowercase();
        let args = match &f.args {
            FunctionArguments::List(l) => l.args.clone(),
            _ => Vec::new(),
        };
        let exprs: Vec<&Expr> = args
            .iter()
            .filter_map(|a| match a {
                FunctionArg::Unnamed(FunctionArgExpr::Expr(e)) => Some(e),
                _ => None,
            })
            .collect();
        if name != "prev" {
            return Err(brook_err!(
                Unsupported,
                "{}() in DEFINE (conditions read the row and PREV(column, n) before it)",
                name.to_uppercase()
            ));
        }
        let offset = match exprs.get(1) {
            None => 1,
            Some(Expr::Value(v)) => match &v.value {
                Value::Number(n, _) => n.parse::<usize>().map_err(|_| {
                    brook_err!(Syntax, "PREV offset must be a non-negative integer")
                })?,
                _ => {
                    return Err(brook_err!(
                        Syntax,
                        "PREV offset must be an integer constant"
                    ))
                }
            },
            Some(_) => {
                return Err(brook_err!(
                    Syntax,
                    "PREV offset must be an integer constant"
                ))
            }
        };
        let col = exprs
            .first()
            .filter(|_| exprs.len() == args.len() && args.len() <= 2)
            .map(|e| self.own_column(e))
            .transpose()?
            .flatten()
            .ok_or_else(|| {
                brook_err!(
                    Unsupported,
                    "PREV of {f}: PREV takes a column (and an offset)"
                )
            })?;
        let col = self
            .input
            .index_of(&col)
            .map_err(|_| BrookError::UndefinedColumn(col))?;
        if offset == 0 {
            return Ok(Expr::Identifier(ast::Ident::with_quote(
                '"',
                self.input.field(col).name(),
            )));
        }
        let p = PrevColumn { col, offset };
        let at = match self.prev.iter().position(|x| *x == p) {
            Some(at) => at,
            None => {
                self.prev.push(p);
                self.prev.len() - 1
            }
        };
        Ok(Expr::Identifier(ast::Ident::new(format!("__prev_{at}"))))
    }
}

impl VisitorMut for Condition<'_> {
    type Break = BrookError;

    fn pre_visit_expr(&mut self, e: &mut Expr) -> ControlFlow<BrookError> {
        let replaced = match e {
            Expr::Function(f) => Some(self.prev_call(f)),
            Expr::CompoundIdentifier(_) => match self.own_column(e) {
                Ok(Some(col)) => Some(Ok(Expr::Identifier(ast::Ident::with_quote('"', col)))),
                Ok(None) => None,
                Err(err) => Some(Err(err)),
            },
            _ => None,
        };
        match replaced {
            Some(Ok(new)) => {
                *e = new;
                ControlFlow::Continue(())
            }
            Some(Err(err)) => ControlFlow::Break(err),
            None => ControlFlow::Continue(()),
        }
    }
}
