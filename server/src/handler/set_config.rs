//! `SELECT set_config(name, value, is_local)`: PostgreSQL's function form of SET, which
//! pg_dump, asyncpg and ORMs send when they connect (`SELECT pg_catalog.set_config(
//! 'search_path', '', false)`; asyncpg: `SELECT current_setting('jit') AS cur,
//! set_config('jit', 'off', false) AS new`).
//!
//! A setting changes the session, which a function evaluated inside DataFusion cannot
//! reach. So a SELECT without FROM whose outputs include a `set_config` call with constant
//! arguments (the shape clients send) is evaluated here, output by output from left to
//! right as PostgreSQL does: a `set_config` runs as SET and yields the value now in force;
//! any other output is evaluated on its own, after the SETs to its left. The `set_config`
//! function DataFusion knows (registered in `udf::pg_admin`) only lets such a statement be
//! described before it runs; called anywhere else it reports 0A000.

use crate::handler::query::rows_outcome;
use crate::session::{Outcome, Session};
use crate::settings::default_settings;
use brook_common::{brook_err, BrookError, Result};
use datafusion::arrow::array::{ArrayRef, RecordBatch, StringArray};
use datafusion::arrow::datatypes::{DataType, Field, Schema};
use datafusion::sql::sqlparser::ast::{
    Expr, FunctionArg, FunctionArgExpr, FunctionArguments, Query, SelectItem, SetExpr, Statement,
    Value,
};
use std::sync::Arc;

/// One output of such a SELECT.
#[derive(Debug, PartialEq)]
pub(crate) enum Output {
    /// `set_config(name, value, is_local)`: the output column's name, the setting and its
    /// new value.
    SetConfig {
        column: String,
        /// None for NULL (22004, as PostgreSQL).
        name: Option<String>,
        /// None for NULL: back to the default, as RESET.
        value: Option<String>,
        /// `is_local` (NULL is false): as SET LOCAL, until the transaction block ends.
        local: bool,
    },
    /// Any other output, evaluated on its own.
    Other(Box<SelectItem>),
}

/// The outputs of `SELECT ..., set_config(...) [AS x], ...` without FROM, WHERE or other
/// clauses, where every `set_config` has constant arguments; None for any other statement.
pub(crate) fn set_config_outputs(stmt: &Statement) -> Option<Vec<Output>> {
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
    let mut any = false;
    let outputs = sel
        .projection
        .iter()
        .map(|item| {
            let (expr, column) = match item {
                SelectItem::UnnamedExpr(e) => (e, "set_config".to_string()),
                SelectItem::ExprWithAlias { expr, alias } => {
                    (expr, brook_common::ident::ident_name(alias))
                }
                _ => return Some(Output::Other(Box::new(item.clone()))),
            };
            match set_config_call(expr) {
                None => Some(Output::Other(Box::new(item.clone()))),
                Some(None) => None,
                Some(Some((name, value, local))) => {
                    any = true;
                    Some(Output::SetConfig {
                        column,
                        name,
                        value,
                        local,
                    })
                }
            }
        })
        .collect::<Option<Vec<_>>>()?;
    any.then_some(outputs)
}

/// The constant arguments of a `set_config` call: name and value (None for NULL), is_local.
type SetConfigArgs = (Option<String>, Option<String>, bool);

/// None when `e` is no `set_config` call; Some(None) when it is one with arguments other
/// than constants (left to DataFusion, which refuses it); else its setting and value.
fn set_config_call(e: &Expr) -> Option<Option<SetConfigArgs>> {
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
        return Some(None);
    };
    let [name, value, is_local] = list.args.as_slice() else {
        return Some(None);
    };
    Some(match (text_argument(name), text_argument(value)) {
        (Some(n), Some(v)) => boolean(is_local).map(|local| (n, v, local)),
        _ => None,
    })
}

/// A constant text argument (a string or a number, as PostgreSQL's `unknown` literal;
/// Some(None) for NULL).
fn text_argument(a: &FunctionArg) -> Option<Option<String>> {
    let FunctionArg::Unnamed(FunctionArgExpr::Expr(Expr::Value(v))) = a else {
        return None;
    };
    match &v.value {
        Value::SingleQuotedString(s) | Value::EscapedStringLiteral(s) => Some(Some(s.clone())),
        Value::Number(n, _) => Some(Some(n.to_string())),
        Value::Null => Some(None),
        _ => None,
    }
}

/// A constant boolean (NULL is false, as PostgreSQL reads `is_local`).
fn boolean(a: &FunctionArg) -> Option<bool> {
    match a {
        FunctionArg::Unnamed(FunctionArgExpr::Expr(Expr::Value(v))) => match v.value {
            Value::Boolean(b) => Some(b),
            Value::Null => Some(false),
            _ => None,
        },
        _ => None,
    }
}

impl Session {
    /// Evaluate the outputs left to right (SETs as they come); one row. With `is_local`
    /// the value holds until the transaction block ends, as SET LOCAL's (outside a block
    /// it lasts only as long as the statement).
    pub(crate) async fn set_config(&mut self, outputs: Vec<Output>) -> Result<Outcome> {
        let mut fields = Vec::with_capacity(outputs.len());
        let mut columns: Vec<ArrayRef> = Vec::with_capacity(outputs.len());
        for output in outputs {
            match output {
                Output::SetConfig {
                    column,
                    name,
                    value,
                    local,
                } => {
                    let name = name.ok_or_else(|| BrookError::Limit {
                        message: "SET requires parameter name".into(),
                        code: "22004",
                    })?;
                    let key = name.to_ascii_lowercase();
                    crate::settings::check_settable(&key)?;
                    if !key.contains('.') && !default_settings().contains_key(&key) {
                        return Err(brook_err!(
                            UndefinedObject,
                            "unrecognized configuration parameter \"{name}\""
                        ));
                    }
                    // NULL: back to the value RESET gives (a custom setting's is empty).
                    let value = match value {
                        Some(v) => v,
                        None => self
                            .reset_values
                            .get(&key)
                            .cloned()
                            .or_else(|| default_settings().get(&key).cloned())
                            .unwrap_or_default(),
                    };
                    let takes_effect = !local || self.block_open();
                    if takes_effect {
                        if local {
                            self.set_local(&key);
                        }
                        self.set_var(&key, &value)?;
                    }
                    // (Outside a block a local value lasts as long as the statement.)
                    let now = if takes_effect {
                        self.settings.get(&key).unwrap_or(value)
                    } else {
                        value
                    };
                    if takes_effect && !local {
                        self.block_session_set(&key, &now);
                    }
                    fields.push(Arc::new(Field::new(column, DataType::Utf8, true)));
                    columns.push(Arc::new(StringArray::from(vec![now])));
                }
                Output::Other(item) => {
                    let (field, column) = self.evaluate_alone(*item).await?;
                    fields.push(field);
                    columns.push(column);
                }
            }
        }
        let schema = Arc::new(Schema::new(fields));
        let batch = RecordBatch::try_new(schema.clone(), columns)?;
        Ok(rows_outcome(schema, vec![batch], "SELECT"))
    }

    /// `SELECT item` (no FROM): its one column.
    async fn evaluate_alone(
        &mut self,
        item: SelectItem,
    ) -> Result<(datafusion::arrow::datatypes::FieldRef, ArrayRef)> {
        let mut stmt = brook_planner::parser::parse_one(&format!("SELECT {item}"))?
            .into_plain_sql()
            .ok_or_else(|| brook_err!(Internal, "SELECT {item} did not parse as a query"))?;
        let names = brook_planner::rewrite::output_names(&stmt);
        crate::pg::sql::pg_literals(&mut stmt)?;
        let plan = self.plan(stmt).await?;
        let df = self.ctx.execute_logical_plan(plan).await?;
        let schema = crate::pg::sql::pg_named(df.schema().as_arrow().clone(), names);
        let batches = df.collect().await?;
        let batch = datafusion::arrow::compute::concat_batches(&schema, &batches)?;
        if batch.num_rows() != 1 || batch.num_columns() != 1 {
            return Err(brook_err!(
                Internal,
                "SELECT {item} gave other than one value"
            ));
        }
        Ok((schema.fields()[0].clone(), batch.column(0).clone()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn outputs(sql: &str) -> Option<Vec<Output>> {
        let stmt = brook_planner::parser::parse_one(sql)
            .ok()?
            .into_plain_sql()?;
        set_config_outputs(&stmt)
    }

    #[test]
    fn the_shapes_clients_send_are_recognised() {
        let c = outputs("SELECT pg_catalog.set_config('search_path', '', false)").unwrap();
        assert_eq!(
            c,
            vec![Output::SetConfig {
                column: "set_config".into(),
                name: Some("search_path".into()),
                value: Some(String::new()),
                local: false,
            }]
        );
        let c = outputs(
            "select set_config('statement_timeout', '5s', true) AS t, set_config('x.y', 1, false)",
        )
        .unwrap();
        assert!(matches!(&c[0], Output::SetConfig { column, .. } if column == "t"));
        assert!(matches!(&c[1], Output::SetConfig { value, .. } if value.as_deref() == Some("1")));
        let c = outputs("SELECT set_config('x.y', NULL, NULL)").unwrap();
        assert!(matches!(
            &c[0],
            Output::SetConfig {
                value: None,
                local: false,
                ..
            }
        ));
        // asyncpg's: another output beside it, evaluated on its own
        let c =
            outputs("SELECT current_setting('jit') AS cur, set_config('jit', 'off', false) AS new")
                .unwrap();
        assert!(matches!(&c[0], Output::Other(_)));
        assert!(matches!(&c[1], Output::SetConfig { column, .. } if column == "new"));
    }

    #[test]
    fn other_uses_are_left_to_the_planner() {
        assert!(outputs("SELECT set_config('a.b', 'c', false) FROM t").is_none());
        assert!(outputs("SELECT set_config('a.b', x, false)").is_none());
        assert!(outputs("SELECT 1").is_none());
    }
}
