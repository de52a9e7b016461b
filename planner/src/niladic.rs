//! SQL's functions written without parentheses that sqlparser reads as column names:
//! `current_role`, `current_schema` and `current_catalog` (it already reads `current_user`,
//! `session_user` and `user` as calls). PostgreSQL reserves these words, so unquoted they
//! never name a column; they become calls of the functions of the same name
//! (`current_catalog` is `current_database()`).

use datafusion::sql::sqlparser::ast::{visit_expressions_mut, Expr, FunctionArguments, Statement};
use datafusion_pg_catalog::sql::rules::SqlStatementRewriteRule;
use std::ops::ControlFlow;

/// The words, and the function each calls.
const NILADIC: [(&str, &str); 3] = [
    ("current_role", "current_role"),
    ("current_schema", "current_schema"),
    ("current_catalog", "current_database"),
];

/// Rewrite rule: see the module's comment.
#[derive(Debug)]
pub struct NiladicFunctions;

impl SqlStatementRewriteRule for NiladicFunctions {
    fn rewrite(&self, mut s: Statement) -> Statement {
        let _ = visit_expressions_mut(&mut s, |e| {
            let word = match e {
                Expr::Identifier(i) if i.quote_style.is_none() => Some(&i.value),
                Expr::Function(f) if matches!(f.args, FunctionArguments::None) => {
                    match f.name.0.as_slice() {
                        [part] => part.as_ident().map(|i| &i.value),
                        _ => None,
                    }
                }
                _ => None,
            };
            let function = word.and_then(|w| {
                NILADIC
                    .iter()
                    .find(|(name, _)| w.eq_ignore_ascii_case(name))
                    .map(|(_, f)| *f)
            });
            if let Some(function) = function {
                *e = crate::pg_functions::function_call(function, vec![]);
            }
            ControlFlow::<()>::Continue(())
        });
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rewritten(sql: &str) -> String {
        crate::test_support::rewritten(&NiladicFunctions, sql)
    }

    #[test]
    fn words_become_calls() {
        assert_eq!(
            rewritten("SELECT current_role, current_schema, current_catalog"),
            "SELECT current_role(), current_schema(), current_database()"
        );
        assert_eq!(
            rewritten("SELECT 1 WHERE CURRENT_SCHEMA = 'public'"),
            "SELECT 1 WHERE current_schema() = 'public'"
        );
    }

    #[test]
    fn quoted_names_and_calls_stay() {
        for sql in [
            "SELECT \"current_role\" FROM t",
            "SELECT current_schema() FROM t",
            "SELECT t.current_role FROM t",
            "SELECT current_user",
        ] {
            assert_eq!(rewritten(sql), sql);
        }
    }
}
