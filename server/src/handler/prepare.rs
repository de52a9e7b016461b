//! SQL-level prepared statements: `PREPARE name [(types)] AS query`, `EXECUTE name
//! [(values)]`, `DEALLOCATE [PREPARE] name | ALL` (pg_dump prepares its per-object catalog
//! queries this way). The session keeps each statement as parsed; EXECUTE puts its values
//! in place of `$1`, `$2`, ... (cast to the declared types) and runs the query as any other,
//! so every rewrite and analyzer rule of a plain query applies to the values too (`'{a,b}'`
//! for a `text[]` parameter is an array, a `jsonb` parameter is jsonb), and the columns are
//! named as the prepared query names them (`$1` is `?column?`). PREPARE
//! plans the query once with NULLs of the declared types to report its errors then, as
//! PostgreSQL does. A second PREPARE of a name is 42P05; EXECUTE of an unknown name 26000;
//! the wrong number of values 42601.
//!
//! Only queries can be prepared: Brook's writes (INSERT, UPDATE, DELETE, COPY) have their
//! own handlers, which this path does not take, so preparing one is 0A000 (the extended
//! protocol's Parse/Bind prepares those).

use crate::session::prepared::Prepared;
use crate::session::{Outcome, Session};
use brook_common::{brook_err, BrookError, Result};
use datafusion::sql::sqlparser::ast::{DataType as SqlType, Expr, Ident, Statement, Value};

impl Session {
    /// PREPARE.
    pub(crate) async fn prepare(
        &mut self,
        name: Ident,
        types: Vec<SqlType>,
        statement: Statement,
    ) -> Result<Outcome> {
        let key = crate::ident::ident_name(&name);
        if self.prepared.contains_key(&key) {
            return Err(BrookError::DuplicateObject {
                what: "prepared statement",
                name: key,
                code: "42P05",
            });
        }
        if !matches!(statement, Statement::Query(_)) {
            return Err(brook_err!(
                Unsupported,
                "PREPARE of {} (only queries can be prepared with SQL; the extended protocol prepares any statement)",
                crate::handler::query::first_words(&statement.to_string())
            ));
        }
        let types: Vec<SqlType> = types.into_iter().map(parameter_type).collect();
        let parameters = brook_planner::rewrite::placeholder_count(&statement).max(types.len());
        let prepared = Prepared {
            statement,
            types,
            parameters,
        };
        let nulls = vec![Expr::Value(Value::Null.into()); parameters];
        let mut check = prepared.bind(&nulls);
        crate::pg::sql::pg_literals(&mut check)?;
        self.plan(check).await?;
        self.prepared.insert(key, prepared);
        Ok(Outcome::Command("PREPARE".into()))
    }

    /// EXECUTE of a prepared query: its rows.
    pub(crate) async fn execute_prepared(&mut self, stmt: Statement) -> Result<Outcome> {
        let (bound, names) = self.bound_execute(&stmt)?;
        self.run_query(bound, "SELECT", names).await
    }

    /// The query an EXECUTE runs — the prepared one with the EXECUTE's values in place, its
    /// literals typed (`pg::sql::pg_literals`) — and its columns' names.
    pub(crate) fn bound_execute(
        &self,
        stmt: &Statement,
    ) -> Result<(Statement, Option<Vec<brook_planner::rewrite::OutputName>>)> {
        let Statement::Execute {
            name: Some(name),
            parameters,
            ..
        } = stmt
        else {
            return Err(brook_err!(
                Syntax,
                "syntax error: EXECUTE needs a statement name"
            ));
        };
        // the statement's name as PREPARE keeps it (unquoted, case as folded)
        let key = crate::ident::object_parts(name)?.join(".");
        let prepared = self.prepared.get(&key).ok_or_else(|| not_prepared(&key))?;
        if parameters.len() != prepared.parameters {
            return Err(brook_err!(
                Syntax,
                "wrong number of parameters for prepared statement \"{key}\" (expected {}, got {})",
                prepared.parameters,
                parameters.len()
            ));
        }
        let names = brook_planner::rewrite::output_names(&prepared.statement);
        let mut bound = prepared.bind(parameters);
        crate::pg::sql::pg_literals(&mut bound)?;
        Ok((bound, names))
    }

    /// DEALLOCATE name | ALL. A name this session did not PREPARE with SQL is accepted as
    /// PostgreSQL accepts a protocol-level statement's (clients deallocate those by name).
    pub(crate) fn deallocate(&mut self, name: &Ident) -> Outcome {
        if name.quote_style.is_none() && name.value.eq_ignore_ascii_case("all") {
            self.prepared.clear();
        } else {
            self.prepared.remove(&crate::ident::ident_name(name));
        }
        Outcome::Command("DEALLOCATE".into())
    }
}

/// 26000: no prepared statement by that name.
fn not_prepared(name: &str) -> BrookError {
    BrookError::Semantic {
        message: format!("prepared statement \"{name}\" does not exist"),
        code: "26000",
    }
}

/// A parameter type as Brook reads it: the object-identifier types (pg_dump prepares with
/// `pg_catalog.oid`) are integers, as pg_catalog's oid columns are.
fn parameter_type(t: SqlType) -> SqlType {
    if let SqlType::Custom(name, args) = &t {
        let last = name
            .0
            .last()
            .and_then(|p| p.as_ident())
            .map(|i| i.value.to_ascii_lowercase());
        if args.is_empty()
            && matches!(
                last.as_deref(),
                Some("oid" | "regclass" | "regtype" | "regproc" | "regnamespace")
            )
        {
            return SqlType::Int(None);
        }
    }
    t
}
