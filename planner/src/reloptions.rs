//! `FROM unnest(c.reloptions) x` as a relation without rows. Brook's relations have no
//! storage options: `pg_class.reloptions` is NULL for every row (the server's pg_class
//! view), so unnesting it yields no row whatever the row. psql's `\d+` asks for the options
//! of a table and of its TOAST table this way, in a subquery correlated with the outer
//! row through a table function, which DataFusion cannot plan ("table function 'unnest'
//! not found"). If relations ever get options, this rewrite must go.
//!
//! `pg_options_to_table(x)` likewise: it lists the options of a foreign table, server or
//! wrapper (pg_dump reads `attfdwoptions` through it), and Brook has no such objects, so
//! every options array it could be given is NULL and the function yields no row.

use datafusion::sql::sqlparser::ast::{
    Expr, FunctionArg, FunctionArgExpr, Query, Statement, TableFactor, VisitMut, VisitorMut,
};
use datafusion::sql::sqlparser::dialect::PostgreSqlDialect;
use datafusion::sql::sqlparser::parser::Parser;
use datafusion_pg_catalog::sql::rules::SqlStatementRewriteRule;
use std::ops::ControlFlow;

/// The rewrite.
#[derive(Debug)]
pub struct ReloptionsHaveNoRows;

impl SqlStatementRewriteRule for ReloptionsHaveNoRows {
    fn rewrite(&self, s: Statement) -> Statement {
        let mut s = OptionsToTable.rewrite(s);
        struct Factors;
        impl VisitorMut for Factors {
            type Break = ();
            fn pre_visit_table_factor(&mut self, t: &mut TableFactor) -> ControlFlow<()> {
                let (arg, alias) = match t {
                    TableFactor::Table {
                        name,
                        args: Some(args),
                        alias,
                        ..
                    } if name
                        .0
                        .last()
                        .and_then(|p| p.as_ident())
                        .is_some_and(|i| i.value.eq_ignore_ascii_case("unnest"))
                        && args.args.len() == 1 =>
                    {
                        let arg = match &args.args[0] {
                            FunctionArg::Unnamed(FunctionArgExpr::Expr(e)) => Some(e.clone()),
                            _ => None,
                        };
                        (arg, alias.clone())
                    }
                    TableFactor::UNNEST {
                        array_exprs, alias, ..
                    } if array_exprs.len() == 1 => (Some(array_exprs[0].clone()), alias.clone()),
                    _ => return ControlFlow::Continue(()),
                };
                let (Some(arg), Some(alias)) = (arg, alias) else {
                    return ControlFlow::Continue(());
                };
                if names_reloptions(&arg) {
                    let column = alias
                        .columns
                        .first()
                        .map(|c| c.name.to_string())
                        .unwrap_or_else(|| alias.name.to_string());
                    if let Some(subquery) = no_rows(&column) {
                        *t = TableFactor::Derived {
                            lateral: false,
                            subquery: Box::new(subquery),
                            alias: Some(datafusion::sql::sqlparser::ast::TableAlias {
                                explicit: true,
                                name: alias.name.clone(),
                                columns: vec![],
                                at: None,
                            }),
                            sample: None,
                        };
                    }
                }
                ControlFlow::Continue(())
            }
        }
        let _ = s.visit(&mut Factors);
        s
    }
}

/// `pg_options_to_table(x)` alone, for statements that are not catalog queries (the
/// pg_dump queries that read foreign servers and wrappers name no other catalog).
#[derive(Debug)]
pub struct OptionsToTable;

impl SqlStatementRewriteRule for OptionsToTable {
    fn rewrite(&self, mut s: Statement) -> Statement {
        struct Factors;
        impl VisitorMut for Factors {
            type Break = ();
            fn pre_visit_table_factor(&mut self, t: &mut TableFactor) -> ControlFlow<()> {
                if let Some(empty) = options_to_table(t) {
                    *t = empty;
                }
                ControlFlow::Continue(())
            }
        }
        let _ = s.visit(&mut Factors);
        s
    }
}

/// `pg_options_to_table(x) [AS alias]` as a relation without rows, its columns
/// `option_name` and `option_value`.
fn options_to_table(t: &TableFactor) -> Option<TableFactor> {
    let TableFactor::Table {
        name,
        args: Some(_),
        alias,
        ..
    } = t
    else {
        return None;
    };
    let last = name.0.last()?.as_ident()?;
    if !last.value.eq_ignore_ascii_case("pg_options_to_table") {
        return None;
    }
    let sql =
        "SELECT CAST(NULL AS TEXT) AS option_name, CAST(NULL AS TEXT) AS option_value WHERE false";
    let Statement::Query(q) = Parser::parse_sql(&PostgreSqlDialect {}, sql).ok()?.pop()? else {
        return None;
    };
    Some(TableFactor::Derived {
        lateral: false,
        subquery: q,
        alias: Some(
            alias
                .clone()
                .unwrap_or_else(|| datafusion::sql::sqlparser::ast::TableAlias {
                    explicit: true,
                    name: last.clone(),
                    columns: vec![],
                    at: None,
                }),
        ),
        sample: None,
    })
}

/// `x.reloptions` or `reloptions` (or `evttags`, the tags of an event trigger, of which
/// Brook has none).
fn names_reloptions(e: &Expr) -> bool {
    let named = |i: &datafusion::sql::sqlparser::ast::Ident| {
        i.value.eq_ignore_ascii_case("reloptions") || i.value.eq_ignore_ascii_case("evttags")
    };
    match e {
        Expr::Identifier(i) => named(i),
        Expr::CompoundIdentifier(parts) => parts.last().is_some_and(named),
        _ => false,
    }
}

/// `SELECT CAST(NULL AS TEXT) AS <column> WHERE false`.
fn no_rows(column: &str) -> Option<Query> {
    let sql = format!("SELECT CAST(NULL AS TEXT) AS {column} WHERE false");
    match Parser::parse_sql(&PostgreSqlDialect {}, &sql).ok()?.pop()? {
        Statement::Query(q) => Some(*q),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unnest_of_reloptions_has_no_rows() {
        let s = Parser::parse_sql(
            &PostgreSqlDialect {},
            "SELECT array(select 'toast.' || x from pg_catalog.unnest(tc.reloptions) x), (SELECT count(*) FROM unnest(c.tags) t)",
        )
        .unwrap()
        .pop()
        .unwrap();
        assert_eq!(
            ReloptionsHaveNoRows.rewrite(s).to_string(),
            "SELECT array(SELECT 'toast.' || x FROM (SELECT CAST(NULL AS TEXT) AS x WHERE false) AS x), (SELECT count(*) FROM UNNEST(c.tags) t)"
        );
    }

    #[test]
    fn options_to_table_has_no_rows() {
        let s = Parser::parse_sql(
            &PostgreSqlDialect {},
            "SELECT ARRAY(SELECT option_name FROM pg_catalog.pg_options_to_table(attfdwoptions) ORDER BY option_name)",
        )
        .unwrap()
        .pop()
        .unwrap();
        assert_eq!(
            ReloptionsHaveNoRows.rewrite(s).to_string(),
            "SELECT ARRAY(SELECT option_name FROM (SELECT CAST(NULL AS TEXT) AS option_name, CAST(NULL AS TEXT) AS option_value WHERE false) AS pg_options_to_table ORDER BY option_name)"
        );
    }
}
