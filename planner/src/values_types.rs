//! A `VALUES` column holding json or jsonb gives its untyped literals that type, as
//! PostgreSQL resolves a VALUES column's type from all its rows.
//!
//! DataFusion refuses a VALUES list whose rows' fields differ in metadata, and Brook records
//! json and jsonb in field metadata: `VALUES ('{"a":1}'::jsonb), (NULL)` and `INSERT ...
//! VALUES (1, jsonb_build_object('a', 1)), (2, '{}')` were XX000 ("Inconsistent metadata
//! across values list"). Runs after `pg_functions::json_casts`, on the function calls the
//! casts became.

use crate::pg_functions::{function_call, JSONB_CAST, JSON_CAST};
use datafusion::sql::sqlparser::ast::{
    Expr, Query, SetExpr, Statement, Value, Values, VisitMut, VisitorMut,
};
use std::ops::ControlFlow;

/// Type the untyped literals of every VALUES column that holds json or jsonb.
pub fn json_values(stmt: &mut Statement) {
    let _ = stmt.visit(&mut ValuesVisitor);
}

struct ValuesVisitor;

impl VisitorMut for ValuesVisitor {
    type Break = ();

    fn pre_visit_query(&mut self, query: &mut Query) -> ControlFlow<()> {
        type_body(&mut query.body);
        ControlFlow::Continue(())
    }
}

fn type_body(body: &mut SetExpr) {
    match body {
        SetExpr::Values(values) => type_values(values),
        SetExpr::SetOperation { left, right, .. } => {
            type_body(left);
            type_body(right);
        }
        _ => {}
    }
}

fn type_values(values: &mut Values) {
    if values.rows.len() < 2 {
        return;
    }
    let columns = values
        .rows
        .iter()
        .map(|r| r.content.len())
        .max()
        .unwrap_or(0);
    for column in 0..columns {
        let Some(cast) = values
            .rows
            .iter()
            .find_map(|row| row.content.get(column).and_then(json_type_cast))
        else {
            continue;
        };
        for row in &mut values.rows {
            if let Some(cell) = row.content.get_mut(column) {
                if is_untyped_literal(cell) {
                    *cell = function_call(cast, vec![cell.clone()]);
                }
            }
        }
    }
}

/// The cast function of the JSON type `e` is known to have from its text: a json/jsonb
/// cast, or a function that builds one.
fn json_type_cast(e: &Expr) -> Option<&'static str> {
    let Expr::Function(f) = e else {
        return None;
    };
    let name = f.name.0.last()?.as_ident()?.value.to_ascii_lowercase();
    match crate::json_ops::json_result_type(&name)? {
        "jsonb" => Some(JSONB_CAST),
        _ => Some(JSON_CAST),
    }
}

fn is_untyped_literal(e: &Expr) -> bool {
    matches!(
        e,
        Expr::Value(v) if matches!(
            v.value,
            Value::SingleQuotedString(_) | Value::DollarQuotedString(_) | Value::Null
        )
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::sql::sqlparser::dialect::PostgreSqlDialect;
    use datafusion::sql::sqlparser::parser::Parser;

    fn typed(sql: &str) -> String {
        let mut stmt = Parser::parse_sql(&PostgreSqlDialect {}, sql)
            .expect("parses")
            .remove(0);
        json_values(&mut stmt);
        stmt.to_string()
    }

    #[test]
    fn literals_beside_json_take_its_type() {
        assert_eq!(
            typed("SELECT * FROM (VALUES (1, brook_jsonb('{}')), (2, NULL), (3, '[1]')) AS t(k, j)"),
            "SELECT * FROM (VALUES (1, brook_jsonb('{}')), (2, brook_jsonb(NULL)), (3, brook_jsonb('[1]'))) AS t (k, j)"
        );
        assert_eq!(
            typed("INSERT INTO t VALUES (1, 'x'), (2, to_json(2))"),
            "INSERT INTO t VALUES (1, brook_json('x')), (2, to_json(2))"
        );
        // No JSON value: left alone; one row: nothing to agree with.
        assert_eq!(
            typed("VALUES ('a', NULL), ('b', 'c')"),
            "VALUES ('a', NULL), ('b', 'c')"
        );
        assert_eq!(
            typed("VALUES (brook_jsonb('{}'))"),
            "VALUES (brook_jsonb('{}'))"
        );
    }
}
