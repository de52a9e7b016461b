//! A `VALUES` column holding json, jsonb, uuid or xml gives its untyped literals that type,
//! as PostgreSQL resolves a VALUES column's type from all its rows.
//!
//! DataFusion refuses a VALUES list whose rows' fields differ in metadata, and Brook records
//! json and jsonb in field metadata: `VALUES ('{"a":1}'::jsonb), (NULL)` and `INSERT ...
//! VALUES (1, jsonb_build_object('a', 1)), (2, '{}')` were XX000 ("Inconsistent metadata
//! across values list"). Runs after `pg_functions::json_casts`, on the function calls the
//! casts became.
//!
//! A column holding a date, time, timestamp or interval cast does the same: DataFusion
//! cannot unify a text with a time (`VALUES ('10:00'), ('11:00'::time)` was XX000
//! "Inconsistent data type across values list", as were timestamps, dates and intervals
//! beside text), and a cast to a precision carries its declared type in metadata
//! (`VALUES ('...'::timestamp(0)), (NULL)`), so its untyped literals are cast as it is
//! (`pg_functions::time_casts` made the time casts calls of `arrow_cast`).

use crate::pg_functions::{
    function_call, time_cast_of, JSONB_CAST, JSON_CAST, TIME_TYPE, UUID_CAST, XML_CAST,
};
use datafusion::sql::sqlparser::ast::{
    CastKind, DataType, Expr, FunctionArg, FunctionArgExpr, FunctionArguments, Query, SetExpr,
    Statement, Value, Values, VisitMut, VisitorMut,
};
use std::ops::ControlFlow;

/// Type the untyped literals of every VALUES column that holds json, jsonb, uuid or xml.
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
        let Some(typed) = values.rows.iter().find_map(|row| {
            let cell = row.content.get(column)?;
            typed_like(cell, Expr::value(Value::Null)).map(|_| cell.clone())
        }) else {
            continue;
        };
        for row in &mut values.rows {
            if let Some(cell) = row.content.get_mut(column) {
                if is_untyped_literal(cell) {
                    if let Some(cast) = typed_like(&typed, cell.clone()) {
                        *cell = cast;
                    }
                }
            }
        }
    }
}

/// The cast function of the type `e` is known to have from its text, for the types Brook
/// records in field metadata: a json/jsonb cast or a function that builds one, a uuid or
/// xml cast, `gen_random_uuid()`.
fn metadata_type_cast(e: &Expr) -> Option<&'static str> {
    let Expr::Function(f) = e else {
        return None;
    };
    let name = f.name.0.last()?.as_ident()?.value.to_ascii_lowercase();
    match name.as_str() {
        UUID_CAST | "gen_random_uuid" => return Some(UUID_CAST),
        XML_CAST => return Some(XML_CAST),
        _ => {}
    }
    match crate::json_ops::json_result_type(&name)? {
        "jsonb" => Some(JSONB_CAST),
        _ => Some(JSON_CAST),
    }
}

/// `value` cast as the VALUES cell `cell` is typed, when it is of a type an untyped
/// literal beside it must take: JSON, a date, time, timestamp or interval (a time as
/// `pg_functions::time_casts` writes it), or one of those rounded to a precision.
fn typed_like(cell: &Expr, value: Expr) -> Option<Expr> {
    match cell {
        Expr::Cast {
            kind,
            data_type,
            format: None,
            ..
        } if is_temporal(data_type) => Some(Expr::Cast {
            kind: kind.clone(),
            expr: Box::new(value),
            data_type: data_type.clone(),
            array: false,
            format: None,
        }),
        Expr::Interval(_) => Some(Expr::Cast {
            kind: CastKind::Cast,
            expr: Box::new(value),
            data_type: DataType::Interval {
                fields: None,
                precision: None,
            },
            array: false,
            format: None,
        }),
        Expr::TypedString(typed) if is_temporal(&typed.data_type) => Some(Expr::Cast {
            kind: CastKind::Cast,
            expr: Box::new(value),
            data_type: typed.data_type.clone(),
            array: false,
            format: None,
        }),
        Expr::Function(f) => {
            if let Some(cast) = metadata_type_cast(cell) {
                return Some(function_call(cast, vec![value]));
            }
            let FunctionArguments::List(list) = &f.args else {
                return None;
            };
            let arg = |i: usize| match list.args.get(i) {
                Some(FunctionArg::Unnamed(FunctionArgExpr::Expr(e))) => Some(e),
                _ => None,
            };
            match f.name.to_string().to_ascii_lowercase().as_str() {
                "arrow_cast" => matches!(
                    arg(1),
                    Some(Expr::Value(v)) if v.value == Value::SingleQuotedString(TIME_TYPE.into())
                )
                .then(|| time_cast_of(value)),
                crate::time_precision::TIME_PRECISION => {
                    let inner = typed_like(arg(0)?, value)?;
                    Some(function_call(
                        crate::time_precision::TIME_PRECISION,
                        vec![inner, arg(1)?.clone()],
                    ))
                }
                _ => None,
            }
        }
        _ => None,
    }
}

/// A date, time, timestamp or interval type.
fn is_temporal(t: &DataType) -> bool {
    matches!(
        t,
        DataType::Date | DataType::Time(..) | DataType::Timestamp(..) | DataType::Interval { .. }
    )
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
            typed("VALUES (brook_uuid('a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11')), (NULL), (gen_random_uuid())"),
            "VALUES (brook_uuid('a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11')), (brook_uuid(NULL)), (gen_random_uuid())"
        );
        assert_eq!(
            typed("VALUES (NULL), (brook_xml('<a/>'))"),
            "VALUES (brook_xml(NULL)), (brook_xml('<a/>'))"
        );
        assert_eq!(
            typed("VALUES (brook_jsonb('{}'))"),
            "VALUES (brook_jsonb('{}'))"
        );
    }

    #[test]
    fn literals_beside_a_time_are_times() {
        assert_eq!(
            typed(
                "VALUES ('0130', NULL), (arrow_cast('01:30', 'Time64(Microsecond)'), 'x'), \
                 (brook_time_precision(arrow_cast(t, 'Time64(Microsecond)'), 1), 'y')"
            ),
            "VALUES (arrow_cast('0130', 'Time64(Microsecond)'), NULL), \
             (arrow_cast('01:30', 'Time64(Microsecond)'), 'x'), \
             (brook_time_precision(arrow_cast(t, 'Time64(Microsecond)'), 1), 'y')"
        );
        // A cast to another type is no time.
        assert_eq!(
            typed("VALUES ('a'), (arrow_cast(1, 'Int64'))"),
            "VALUES ('a'), (arrow_cast(1, 'Int64'))"
        );
        assert_eq!(
            typed(
                "VALUES ('2021-01-01', NULL), ('2021-01-02'::timestamp, date '2021-01-01'), \
                 (NULL, '2021-01-03')"
            ),
            "VALUES ('2021-01-01'::TIMESTAMP, CAST(NULL AS DATE)), \
             ('2021-01-02'::TIMESTAMP, DATE '2021-01-01'), \
             (NULL::TIMESTAMP, CAST('2021-01-03' AS DATE))"
        );
        assert_eq!(
            typed("VALUES (brook_time_precision(x::TIMESTAMP, 0)), (NULL)"),
            "VALUES (brook_time_precision(x::TIMESTAMP, 0)), \
             (brook_time_precision(NULL::TIMESTAMP, 0))"
        );
    }
}
