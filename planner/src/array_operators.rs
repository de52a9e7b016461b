//! PostgreSQL's array operators `a @> b`, `a <@ b` and `a && b` as calls of
//! `array_has_all` / `array_has_any` by name.
//!
//! DataFusion plans `@>`/`<@` with its own functions directly (not the ones a context
//! registers), so Brook's versions with PostgreSQL's NULL answers (`udf::array_functions`
//! in the server) were bypassed, and it does not know `&&` at all ("Unsupported binary
//! operator: PGOverlap"). A call by name is resolved in the context's registry.
//! Over two JSON (text) operands the server's `array_has_all` tests jsonb containment
//! (`udf::jsonb_edit`).

use datafusion::sql::sqlparser::ast::{BinaryOperator, Expr, Statement};
use datafusion_pg_catalog::sql::rules::SqlStatementRewriteRule;

/// The rewrite.
#[derive(Debug)]
pub struct ArrayOperators;

impl SqlStatementRewriteRule for ArrayOperators {
    fn rewrite(&self, mut s: Statement) -> Statement {
        crate::pg_functions::rewrite_expressions(&mut s, |expr| {
            let Expr::BinaryOp { left, op, right } = expr else {
                return;
            };
            let (name, args) = match op {
                BinaryOperator::AtArrow => ("array_has_all", [left, right]),
                BinaryOperator::ArrowAt => ("array_has_all", [right, left]),
                BinaryOperator::PGOverlap => ("array_has_any", [left, right]),
                _ => return,
            };
            let args = args.map(|a| (**a).clone()).to_vec();
            *expr = crate::pg_functions::function_call(name, args);
        });
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn operators_become_calls_with_their_operands_in_order() {
        let dialect = datafusion::sql::sqlparser::dialect::PostgreSqlDialect {};
        let s = datafusion::sql::sqlparser::parser::Parser::parse_sql(
            &dialect,
            "SELECT a @> b, a <@ b, a && b FROM t",
        )
        .unwrap()
        .remove(0);
        assert_eq!(
            ArrayOperators.rewrite(s).to_string(),
            "SELECT array_has_all(a, b), array_has_all(b, a), array_has_any(a, b) FROM t"
        );
    }
}
