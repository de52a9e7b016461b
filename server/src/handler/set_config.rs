//! `SELECT set_config(name, value, is_local)`: PostgreSQL's function form of SET, which
//! pg_dump, asyncpg and ORMs send when they connect (`SELECT pg_catalog.set_config(
//! 'search_path', '', false)`).
//!
//! A setting changes the session, which a function evaluated inside DataFusion cannot
//! reach; so a SELECT whose every output is a `set_config` call with constant arguments (the
//! shape clients send) runs as that many SETs and answers one row of the new values. The
//! `set_config` function DataFusion knows (registered in `udf::functions`) only lets such a
//! statement be described before it runs; called anywhere else it reports 0A000.

use crate::handler::query::rows_outcome;
use crate::session::{Outcome, Session};
use crate::settings::default_settings;
use brook_common::{brook_err, Result};
use datafusion::arrow::array::{ArrayRef, RecordBatch, StringArray};
use datafusion::arrow::datatypes::{DataType, Field, Schema};
use datafusion::sql::sqlparser::ast::{
    Expr, FunctionArg, FunctionArgExpr, FunctionArguments, Query, SelectItem, SetExpr, Statement,
    Value,
};
use std::sync::Arc;

/// One `set_config` call: the output column's name, the setting and its new value.
#[derive(Debug, PartialEq)]
pub(crate) struct SetConfigCall {
    column: String,
    name: String,
    value: String,
}

/// The calls of `SELECT set_config(...) [AS x], ...` without FROM, WHERE or other clauses,
/// every argument a constant; None for any other statement.
pub(crate) fn set_config_calls(stmt: &Statement) -> Option<Vec<SetConfigCall>> {
    let Statement::Query(q) = stmt else {
        return None;
    };
    let Query {
        body,
        with: None,
        order_by: None,
        limit_clause: None,
        ..
    } = q.as_ref()
    else {
        return None;
    };
    let SetExpr::Select(sel) = body.as_ref() else {
        return None;
    };
    if !sel.from.is_empty() || sel.selection.is_some() || sel.projection.is_empty() {
        return None;
    }
    sel.projection
        .iter()
        .map(|item| match item {
            SelectItem::UnnamedExpr(e) => call(e, "set_config"),
            SelectItem::ExprWithAlias { expr, alias } => {
                call(expr, &brook_common::ident::ident_name(alias))
            }
            _ => None,
        })
        .collect()
}

fn call(e: &Expr, column: &str) -> Option<SetConfigCall> {
    let Expr::Function(f) = e else {
        return None;
    };
    let parts = &f.name.0;
    let last = parts.last()?.as_ident()?;
    let schema_ok = parts.len() == 1
        || (parts.len() == 2
            && parts[0]
                .as_ident()
                .is_some_and(|p| p.value.eq_ignore_ascii_case("pg_catalog")));
    if !schema_ok || !last.value.eq_ignore_ascii_case("set_config") {
        return None;
    }
    let FunctionArguments::List(list) = &f.args else {
        return None;
    };
    let [name, value, is_local] = list.args.as_slice() else {
        return None;
    };
    Some(SetConfigCall {
        column: column.to_string(),
        name: text_argument(name)?,
        value: text_argument(value)?,
    })
    .filter(|_| is_boolean(is_local))
}

/// A constant text argument (a string or a number, as PostgreSQL's `unknown` literal).
fn text_argument(a: &FunctionArg) -> Option<String> {
    let FunctionArg::Unnamed(FunctionArgExpr::Expr(Expr::Value(v))) = a else {
        return None;
    };
    match &v.value {
        Value::SingleQuotedString(s) | Value::EscapedStringLiteral(s) => Some(s.clone()),
        Value::Number(n, _) => Some(n.to_string()),
        _ => None,
    }
}

fn is_boolean(a: &FunctionArg) -> bool {
    matches!(
        a,
        FunctionArg::Unnamed(FunctionArgExpr::Expr(Expr::Value(v)))
            if matches!(v.value, Value::Boolean(_))
    )
}

impl Session {
    /// Run `set_config` calls as SETs, in order; one row of the values now in force.
    /// `is_local` is treated as SET LOCAL is: the value holds for the session.
    pub(crate) fn set_config(&mut self, calls: Vec<SetConfigCall>) -> Result<Outcome> {
        let mut fields = Vec::with_capacity(calls.len());
        let mut columns: Vec<ArrayRef> = Vec::with_capacity(calls.len());
        for c in calls {
            let key = c.name.to_ascii_lowercase();
            if !key.contains('.') && !default_settings().contains_key(&key) {
                return Err(brook_err!(
                    UndefinedObject,
                    "unrecognized configuration parameter \"{}\"",
                    c.name
                ));
            }
            self.set_var(&key, &c.value)?;
            let now = self.settings.get(&key).unwrap_or(c.value);
            fields.push(Field::new(c.column, DataType::Utf8, true));
            columns.push(Arc::new(StringArray::from(vec![now])));
        }
        let schema = Arc::new(Schema::new(fields));
        let batch = RecordBatch::try_new(schema.clone(), columns)?;
        Ok(rows_outcome(schema, vec![batch], "SELECT"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn calls(sql: &str) -> Option<Vec<SetConfigCall>> {
        let stmt = brook_planner::parser::parse_one(sql)
            .ok()?
            .into_plain_sql()?;
        set_config_calls(&stmt)
    }

    #[test]
    fn the_shapes_clients_send_are_recognised() {
        let c = calls("SELECT pg_catalog.set_config('search_path', '', false)").unwrap();
        assert_eq!(
            c,
            vec![SetConfigCall {
                column: "set_config".into(),
                name: "search_path".into(),
                value: String::new(),
            }]
        );
        let c = calls(
            "select set_config('statement_timeout', '5s', true) AS t, set_config('x.y', 1, false)",
        )
        .unwrap();
        assert_eq!(c.len(), 2);
        assert_eq!(c[0].column, "t");
        assert_eq!(c[1].value, "1");
    }

    #[test]
    fn other_uses_are_left_to_the_planner() {
        assert!(calls("SELECT set_config('a.b', 'c', false) FROM t").is_none());
        assert!(calls("SELECT set_config('a.b', 'c', false), 1").is_none());
        assert!(calls("SELECT set_config('a.b', x, false)").is_none());
        assert!(calls("SELECT 1").is_none());
    }
}
