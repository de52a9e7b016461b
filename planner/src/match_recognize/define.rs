//! DEFINE: each pattern variable's condition, over the row, the `PREV` rows before it and —
//! for a condition that reads other variables, `FIRST`/`LAST` or aggregates — the match so
//! far, with the row as the variable defined (running semantics).

use super::measures::{
    function_name, last_value, physical_args, physical_navigation, plan_navigation,
};
use super::{ExprPlanning, Names};
use brook_common::{brook_err, ident, BrookError, Result};
use brook_operators::match_recognize::{
    reads_schema, Condition as Planned, Navigation, PrevColumn,
};
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use datafusion::common::DFSchema;
use datafusion::sql::sqlparser::ast::{self, Expr, VisitMut, VisitorMut};
use std::ops::ControlFlow;

/// The condition of each variable (None: not defined, any row) and the `PREV` columns the
/// conditions read.
pub(super) fn plan_conditions(
    symbols: &[(String, &Expr)],
    names: &Names,
    input: &SchemaRef,
    exprs: &mut dyn ExprPlanning,
) -> Result<(Vec<Option<Planned>>, Vec<PrevColumn>)> {
    let variables = &names.variables;
    let mut prev: Vec<PrevColumn> = Vec::new();
    let mut rewritten: Vec<Option<(Expr, Vec<Navigation>)>> = vec![None; variables.len()];
    for (name, definition) in symbols {
        let Some(v) = variables.iter().position(|x| x == name) else {
            return Err(brook_err!(
                Syntax,
                "DEFINE {name}: the variable is not in PATTERN"
            ));
        };
        if rewritten[v].is_some() {
            return Err(brook_err!(Syntax, "DEFINE {name} given more than once"));
        }
        let mut e = (*definition).clone();
        let mut rw = Condition {
            var: name,
            names,
            input,
            prev: &mut prev,
            reads: Vec::new(),
        };
        if let ControlFlow::Break(err) = e.visit(&mut rw) {
            return Err(err);
        }
        let reads = rw.reads;
        rewritten[v] = Some((e, reads));
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
    let mut conditions = Vec::new();
    for r in rewritten {
        let Some((e, reads)) = r else {
            conditions.push(None);
            continue;
        };
        let mut all = fields.clone();
        all.extend(
            reads_schema(&reads)
                .fields()
                .iter()
                .map(|f| f.as_ref().clone()),
        );
        let schema = DFSchema::try_from(Schema::new(all))?;
        let logical = exprs.logical(e, &schema)?;
        // As in a query: integer arithmetic fails on overflow (22003) rather than wraps.
        let logical = crate::checked::CheckedIntegerArithmetic::default()
            .check_expression(logical, &schema)?;
        let ty = datafusion::logical_expr::ExprSchemable::get_type(&logical, &schema)?;
        if ty != DataType::Boolean {
            return Err(brook_err!(
                DatatypeMismatch,
                "argument of DEFINE must be type boolean, not type {}",
                brook_common::types::sql_name(&ty)
            ));
        }
        super::refuse_unplannable(&logical, "DEFINE")?;
        conditions.push(Some(Planned {
            expr: exprs.physical(logical, &schema)?,
            reads,
        }));
    }
    Ok((conditions, prev))
}

/// Rewrites a DEFINE condition of `var` into an expression over the row: `var.col` and
/// `col` read the row, `PREV(col [, k])` a `__prev_i` column, and what reads the match so
/// far (`other.col`, `FIRST`/`LAST`, aggregates, `CLASSIFIER()`) a `__nav_i` column.
struct Condition<'a> {
    var: &'a str,
    names: &'a Names,
    input: &'a SchemaRef,
    prev: &'a mut Vec<PrevColumn>,
    reads: Vec<Navigation>,
}

impl Condition<'_> {
    /// The column of the row a reference reads (`col`, `var.col`); None for a reference to
    /// the match (another variable or a SUBSET).
    fn own_column(&self, e: &Expr) -> Result<Option<String>> {
        match e {
            Expr::Identifier(i) => Ok(Some(ident::ident_name(i))),
            Expr::CompoundIdentifier(parts) if parts.len() == 2 => {
                let qualifier = ident::ident_name(&parts[0]);
                if qualifier == self.var {
                    return Ok(Some(ident::ident_name(&parts[1])));
                }
                Ok(None)
            }
            _ => Ok(None),
        }
    }

    fn read(&mut self, n: Navigation) -> Expr {
        self.reads.push(n);
        Expr::Identifier(ast::Ident::new(format!("__nav_{}", self.reads.len() - 1)))
    }

    /// `PREV`/`NEXT` of the row's own column: a column filled in per row; of the match
    /// (another variable's rows, `FIRST`/`LAST`): a navigation checked while matching.
    fn physical_call(&mut self, f: &ast::Function, name: &str) -> Result<Expr> {
        let (arg, offset) = physical_args(f, name)?;
        if function_name(f).0.as_deref() == Some("final") {
            return Err(brook_err!(
                Syntax,
                "FINAL in DEFINE: a condition sees only the match so far"
            ));
        }
        let Some(col) = self.own_column(arg)? else {
            let n = physical_navigation(f, self.names, self.input, true)?;
            return Ok(self.read(n));
        };
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
        let p = PrevColumn {
            col,
            offset,
            ahead: name == "next",
        };
        let at = match self.prev.iter().position(|x| *x == p) {
            Some(at) => at,
            None => {
                self.prev.push(p);
                self.prev.len() - 1
            }
        };
        Ok(Expr::Identifier(ast::Ident::new(format!("__prev_{at}"))))
    }

    fn replace(&mut self, e: &Expr) -> Result<Option<Expr>> {
        match e {
            Expr::Function(f) => {
                let name = function_name(f).1;
                if name == "prev" || name == "next" {
                    return self.physical_call(f, &name).map(Some);
                }
                Ok(plan_navigation(f, self.names, self.input, true)?.map(|n| self.read(n)))
            }
            Expr::CompoundIdentifier(_) => match self.own_column(e)? {
                Some(col) => Ok(Some(Expr::Identifier(ast::Ident::with_quote('"', col)))),
                None => {
                    // Another variable's (or a SUBSET's) last row so far.
                    let n = last_value(e, self.names, self.input)?;
                    Ok(Some(self.read(n)))
                }
            },
            _ => Ok(None),
        }
    }
}

impl VisitorMut for Condition<'_> {
    type Break = BrookError;

    fn pre_visit_expr(&mut self, e: &mut Expr) -> ControlFlow<BrookError> {
        match self.replace(e) {
            Ok(Some(new)) => {
                *e = new;
                ControlFlow::Continue(())
            }
            Ok(None) => ControlFlow::Continue(()),
            Err(err) => ControlFlow::Break(err),
        }
    }
}
