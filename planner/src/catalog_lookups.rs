//! PostgreSQL functions that read the server's pg_catalog additions, as scalar subqueries
//! over them: `pg_get_indexdef`, `pg_get_viewdef`, `obj_description`/`col_description`,
//! `pg_get_function_result`/`pg_get_function_arguments` and the size functions. The tables behind them are views
//! the server computes from its catalog and data directory (`server/src/catalog/pg_views.rs`);
//! a function call whose argument reads the outer row becomes a correlated subquery, which
//! `single_row_subquery` lets DataFusion run.

use crate::pg_functions::rewrite_expressions;
use datafusion::sql::sqlparser::ast::{Expr, SelectItem, SetExpr, Statement};
use datafusion::sql::sqlparser::dialect::PostgreSqlDialect;
use datafusion::sql::sqlparser::parser::Parser;
use datafusion_pg_catalog::sql::rules::SqlStatementRewriteRule;

/// The lookups.
#[derive(Debug)]
pub struct CatalogLookups;

impl SqlStatementRewriteRule for CatalogLookups {
    fn rewrite(&self, mut s: Statement) -> Statement {
        rewrite_expressions(&mut s, |expr| {
            let Some((name, args)) = call(expr) else {
                return;
            };
            if let Some(sql) = lookup(&name, &args) {
                if let Some(e) = scalar(&sql) {
                    *expr = e;
                }
            }
        });
        s
    }
}

/// The subquery (SQL text) a call becomes, None for other functions.
fn lookup(name: &str, args: &[String]) -> Option<String> {
    Some(match (name, args) {
        // the index's CREATE INDEX for column 0, else the column's name
        ("pg_get_indexdef", [index, rest @ ..]) if rest.len() <= 2 => {
            let column = rest.first().map_or("0", |c| c.as_str());
            format!(
                "(SELECT brook_indexdef.brook_def FROM pg_catalog.brook_index_defs AS brook_indexdef \
                 WHERE brook_indexdef.brook_indexrelid = {index} AND brook_indexdef.brook_colno = {column})"
            )
        }
        // a view's (or materialized view's) query
        // (given by name, `pg_get_viewdef('v')`, it is the name's relation)
        ("pg_get_viewdef", [view, rest @ ..]) if rest.len() <= 1 => format!(
            "(SELECT brook_viewdef.brook_def FROM pg_catalog.brook_view_defs AS brook_viewdef \
             WHERE brook_viewdef.brook_reloid = {})",
            regclass(view)
        ),
        // a function's result and argument types (psql's `\df`), from pg_proc
        ("pg_get_function_result", [function]) => format!(
            "(SELECT format_type(brook_proc.prorettype, NULL) FROM pg_catalog.pg_proc AS brook_proc \
             WHERE brook_proc.oid = {function})"
        ),
        ("pg_get_function_arguments" | "pg_get_function_identity_arguments", [function]) => {
            format!(
                "(SELECT COALESCE(max(brook_fargs.brook_args), '') FROM pg_catalog.brook_function_args AS brook_fargs \
                 WHERE brook_fargs.brook_procoid = {function})"
            )
        }
        // a SQL function's CREATE OR REPLACE FUNCTION (psql's `\sf`); NULL for an
        // aggregate and for a built-in function
        ("pg_get_functiondef", [function]) => format!(
            "(SELECT brook_fdef.brook_def FROM pg_catalog.brook_function_defs AS brook_fdef \
             WHERE brook_fdef.brook_procoid = {function})"
        ),
        // comments: on relations (pg_class) and their columns; no other object has one
        ("obj_description", [object, catalog]) => format!(
            "(SELECT brook_comment.description FROM pg_catalog.pg_description AS brook_comment \
             WHERE brook_comment.objoid = {object} AND brook_comment.objsubid = 0 \
             AND CAST({catalog} AS TEXT) IN ('pg_class', 'pg_catalog.pg_class'))"
        ),
        // the one-argument form PostgreSQL keeps (deprecated): the object's comment in any
        // catalog, which in Brook is pg_class
        ("obj_description", [object]) => format!(
            "(SELECT brook_comment.description FROM pg_catalog.pg_description AS brook_comment \
             WHERE brook_comment.objoid = {object} AND brook_comment.objsubid = 0)"
        ),
        ("col_description", [object, column]) => format!(
            "(SELECT brook_comment.description FROM pg_catalog.pg_description AS brook_comment \
             WHERE brook_comment.objoid = {object} AND brook_comment.objsubid = {column})"
        ),
        // a relation's files (Brook keeps no separate TOAST, free-space or index files)
        // (`pg_total_relation_size('t')`: a name, as the function's regclass argument takes it)
        ("pg_table_size" | "pg_relation_size" | "pg_total_relation_size", [rel]) => format!(
            "(SELECT brook_size.brook_bytes FROM pg_catalog.brook_relation_sizes AS brook_size \
             WHERE brook_size.brook_reloid = {})",
            regclass(rel)
        ),
        // a database's relations, by name
        ("pg_database_size", [db]) => format!(
            "(SELECT CAST(COALESCE(sum(brook_store.bytes), 0) AS BIGINT) FROM pg_catalog.brook_storage AS brook_store \
             WHERE brook_store.datname = CAST({db} AS TEXT))"
        ),
        _ => return None,
    })
}

/// A regclass argument as SQL text: a string literal is the relation's name, cast as
/// PostgreSQL casts an unknown literal to the parameter's type.
fn regclass(arg: &str) -> String {
    if arg.starts_with('\'') {
        format!("CAST({arg} AS regclass)")
    } else {
        arg.to_string()
    }
}

/// A call's lower-case name (unqualified or in pg_catalog) and its arguments as SQL text.
fn call(expr: &Expr) -> Option<(String, Vec<String>)> {
    let (name, args) = crate::pg_functions::pg_call(expr)?;
    Some((name, args.iter().map(|a| a.to_string()).collect()))
}

/// The expression of a one-item `SELECT <expr>` written as SQL text.
fn scalar(expr_sql: &str) -> Option<Expr> {
    let mut stmts = Parser::parse_sql(&PostgreSqlDialect {}, &format!("SELECT {expr_sql}")).ok()?;
    let Some(Statement::Query(q)) = stmts.pop() else {
        return None;
    };
    let SetExpr::Select(select) = *q.body else {
        return None;
    };
    match select.projection.into_iter().next()? {
        SelectItem::UnnamedExpr(e) => Some(e),
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
    fn calls_become_lookups() {
        let out = sql("SELECT pg_get_indexdef(i.indexrelid, 2, true) FROM t AS i");
        assert!(
            out.contains(
                "brook_indexdef.brook_indexrelid = i.indexrelid AND brook_indexdef.brook_colno = 2"
            ),
            "{out}"
        );
        let out = sql("SELECT pg_catalog.pg_table_size(c.oid) FROM t AS c");
        assert!(out.contains("brook_size.brook_reloid = c.oid"), "{out}");
        let out = sql("SELECT pg_database_size(d.datname) FROM t AS d");
        assert!(
            out.contains("brook_store.datname = CAST(d.datname AS TEXT)"),
            "{out}"
        );
        // other arities are left to DataFusion
        assert!(sql("SELECT pg_table_size(1, 2)").contains("pg_table_size(1, 2)"));
    }
}
