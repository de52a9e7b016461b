//! A statement prepared with SQL `PREPARE` (`handler::prepare`), as the session keeps it.

use datafusion::sql::sqlparser::ast::{
    visit_expressions_mut, CastKind, DataType as SqlType, Expr, Statement,
};
use std::ops::ControlFlow;

/// A statement prepared with SQL PREPARE.
#[derive(Debug, Clone)]
pub(crate) struct Prepared {
    /// The query, with its parameters as `$n` placeholders.
    pub statement: Statement,
    /// The declared parameter types (may be fewer than the parameters, or none).
    pub types: Vec<SqlType>,
    /// How many values EXECUTE must give.
    pub parameters: usize,
}

impl Prepared {
    /// The query with `values[n - 1]` in place of each `$n`, cast to its declared type.
    pub fn bind(&self, values: &[Expr]) -> Statement {
        let mut s = self.statement.clone();
        let _ = visit_expressions_mut(&mut s, |e| {
            if let Some(n) = brook_planner::rewrite::placeholder_index(e).filter(|n| *n >= 1) {
                if let Some(v) = values.get(n - 1) {
                    // A literal stays one, so the casts of literals apply to it (`'{a,b}'`
                    // as a `text[]` is an array, not the one element `{a,b}`).
                    let v = match v {
                        Expr::Value(_) => v.clone(),
                        other => Expr::Nested(Box::new(other.clone())),
                    };
                    *e = match self.types.get(n - 1) {
                        Some(t) => Expr::Cast {
                            kind: CastKind::Cast,
                            expr: Box::new(v),
                            data_type: t.clone(),
                            array: false,
                            format: None,
                        },
                        None => v,
                    };
                }
            }
            ControlFlow::<()>::Continue(())
        });
        s
    }
}
