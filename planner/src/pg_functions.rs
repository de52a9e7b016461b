//! PostgreSQL functions Brook answers by rewriting a statement into SQL DataFusion plans,
//! where the function is a lookup over the catalogs rather than a computation on values.
//!
//! `x::uuid` is `brook_uuid(x)`: a uuid is kept as its canonical text, and the cast checks
//! and canonicalises its input (DataFusion has no uuid type: "Unsupported SQL type").
//!
//! `to_regtype(name)` is `name::regtype` that yields NULL instead of an error for an unknown
//! type: the compatibility rewrites of `datafusion-pg-catalog` already turn a cast of a name
//! to `regtype` into a lookup in `pg_type` (no row: NULL), so `to_regtype` becomes that cast
//! and the same rewrite runs after it. psycopg (and through it SQLAlchemy) asks
//! `... WHERE t.oid = to_regtype($1)` when it connects.

use datafusion::sql::sqlparser::ast::{
    CastKind, DataType, Expr, FunctionArg, FunctionArgExpr, FunctionArguments, Ident, ObjectName,
    ObjectNamePart, Statement, VisitMut, VisitorMut,
};
use datafusion_pg_catalog::sql::rules::SqlStatementRewriteRule;
use std::ops::ControlFlow;

/// Name of the function a cast to uuid becomes.
pub const UUID_CAST: &str = "brook_uuid";

/// `name(args...)`, a plain call of a function Brook registers.
pub fn function_call(name: &str, args: Vec<Expr>) -> Expr {
    Expr::Function(datafusion::sql::sqlparser::ast::Function {
        name: ObjectName(vec![ObjectNamePart::Identifier(Ident::new(name))]),
        uses_odbc_syntax: false,
        parameters: FunctionArguments::None,
        args: FunctionArguments::List(datafusion::sql::sqlparser::ast::FunctionArgumentList {
            duplicate_treatment: None,
            args: args
                .into_iter()
                .map(|e| FunctionArg::Unnamed(FunctionArgExpr::Expr(e)))
                .collect(),
            clauses: vec![],
        }),
        filter: None,
        null_treatment: None,
        over: None,
        within_group: vec![],
    })
}

/// Every `CAST(x AS uuid)` / `x::uuid` of `stmt` as `brook_uuid(x)`.
pub fn uuid_casts(stmt: &mut Statement) {
    struct Casts;
    impl VisitorMut for Casts {
        type Break = ();
        fn post_visit_expr(&mut self, expr: &mut Expr) -> ControlFlow<()> {
            if let Expr::Cast {
                expr: inner,
                data_type: DataType::Uuid,
                ..
            } = expr
            {
                *expr = function_call(UUID_CAST, vec![(**inner).clone()]);
            }
            ControlFlow::Continue(())
        }
    }
    let _ = stmt.visit(&mut Casts);
}

/// `to_regtype(x)` (or `pg_catalog.to_regtype(x)`) as `CAST(x AS regtype)`.
#[derive(Debug)]
pub struct ToRegtypeAsCast;

impl SqlStatementRewriteRule for ToRegtypeAsCast {
    fn rewrite(&self, mut s: Statement) -> Statement {
        let _ = s.visit(&mut ToRegtypeVisitor);
        s
    }
}

struct ToRegtypeVisitor;

impl VisitorMut for ToRegtypeVisitor {
    type Break = ();

    fn post_visit_expr(&mut self, expr: &mut Expr) -> ControlFlow<()> {
        if let Some(arg) = to_regtype_argument(expr) {
            *expr = Expr::Cast {
                kind: CastKind::DoubleColon,
                expr: Box::new(arg),
                data_type: DataType::Custom(
                    ObjectName(vec![ObjectNamePart::Identifier(Ident::new("regtype"))]),
                    vec![],
                ),
                array: false,
                format: None,
            };
        }
        ControlFlow::Continue(())
    }
}

/// The argument of a one-argument `to_regtype` call.
fn to_regtype_argument(expr: &Expr) -> Option<Expr> {
    let Expr::Function(f) = expr else {
        return None;
    };
    let name = f.name.0.last()?.as_ident()?;
    let qualifier_ok = match f.name.0.len() {
        1 => true,
        2 => f.name.0[0]
            .as_ident()
            .is_some_and(|q| q.value.eq_ignore_ascii_case("pg_catalog")),
        _ => false,
    };
    if !qualifier_ok || !name.value.eq_ignore_ascii_case("to_regtype") {
        return None;
    }
    let FunctionArguments::List(list) = &f.args else {
        return None;
    };
    match list.args.as_slice() {
        [FunctionArg::Unnamed(FunctionArgExpr::Expr(e))] => Some(e.clone()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use crate::parser::parse_one;

    fn sql(text: &str) -> String {
        parse_one(text).unwrap().as_sql().unwrap().to_string()
    }

    #[test]
    fn to_regtype_becomes_a_pg_type_lookup() {
        let out = sql("SELECT typname FROM pg_type t WHERE t.oid = to_regtype('hstore')");
        assert!(
            out.contains("SELECT oid FROM pg_catalog.pg_type WHERE typname = 'hstore'"),
            "{out}"
        );
        let out = sql("SELECT pg_catalog.to_regtype($1)");
        assert!(out.contains("WHERE typname = $1"), "{out}");
        // Other functions of that name shape are left alone.
        assert_eq!(sql("SELECT to_regtypes('a')"), "SELECT to_regtypes('a')");
    }
}
