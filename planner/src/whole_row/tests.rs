//! The statement rewrite's tests: which names become whole rows or values.
use super::*;
use datafusion::sql::sqlparser::dialect::PostgreSqlDialect;
use datafusion::sql::sqlparser::parser::Parser;

fn marker() -> &'static str {
    WHOLE_ROW
}

fn rewritten(sql: &str) -> String {
    let s = Parser::parse_sql(&PostgreSqlDialect {}, sql)
        .unwrap()
        .remove(0);
    WholeRowReferences.rewrite(s).to_string()
}

#[test]
fn a_from_items_name_becomes_its_row() {
    let m = marker();
    assert_eq!(
        rewritten("SELECT row_to_json(t) FROM t"),
        format!("SELECT row_to_json({m}(t.*, 't')) FROM t")
    );
    assert_eq!(
        rewritten("SELECT json_agg(s.*) FROM (SELECT 1 AS a) AS s"),
        format!("SELECT json_agg({m}(s.*)) FROM (SELECT 1 AS a) AS s")
    );
    assert_eq!(
        rewritten("SELECT to_jsonb(t) FROM public.t"),
        format!("SELECT to_jsonb({m}(public.t.*, 't')) FROM public.t")
    );
    assert_eq!(
        rewritten("SELECT json_build_object('r', x) FROM t AS x JOIN u ON true"),
        format!("SELECT json_build_object('r', {m}(x.*, 'x')) FROM t AS x JOIN u ON true")
    );
}

#[test]
fn a_functions_name_is_its_value_anywhere() {
    assert_eq!(
        rewritten(
            "SELECT e ->> 'x', (e) FROM t, jsonb_array_elements(t.d) AS e WHERE e IS NOT NULL"
        ),
        "SELECT brook_bare_value(e.\"value\", 'e') ->> 'x', (brook_bare_value(e.\"value\", 'e')) AS e \
         FROM t, jsonb_array_elements(t.d) AS e WHERE brook_bare_value(e.\"value\", 'e') IS NOT NULL"
    );
    // With ORDINALITY, or another function, the name is not a value.
    for sql in [
        "SELECT e FROM jsonb_array_elements(d) WITH ORDINALITY AS e",
        "SELECT g FROM generate_series(1, 2) AS g",
    ] {
        assert_eq!(rewritten(sql), sql);
    }
    // A column list names the column; a join's ON and a later function read it; an
    // ORDER BY name of an output column is that column.
    assert_eq!(
        rewritten(
            "SELECT DISTINCT e::text FROM jsonb_array_elements(d) AS e (v) \
             JOIN jsonb_array_elements_text(e) AS f ON f = e ->> 0 ORDER BY e"
        ),
        "SELECT DISTINCT brook_bare_value(e.\"v\", 'e')::TEXT AS e \
         FROM jsonb_array_elements(d) AS e (v) \
         JOIN jsonb_array_elements_text(brook_bare_value(e.\"v\", 'e')) AS f \
         ON brook_bare_value(f.\"value\", 'f') = brook_bare_value(e.\"v\", 'e') ->> 0 ORDER BY e"
    );
}

#[test]
fn other_names_and_functions_and_scopes_are_left() {
    for sql in [
        "SELECT row_to_json(u) FROM t",
        "SELECT length(t) FROM t",
        "SELECT (SELECT to_json(t) FROM u) FROM t",
    ] {
        assert_eq!(rewritten(sql), sql);
    }
    // Selected bare, the FROM item is its row, named as the item.
    let m = marker();
    assert_eq!(
        rewritten("SELECT t, t.a FROM t"),
        format!("SELECT {m}(t.*, 't') AS t, t.a FROM t")
    );
    // The subquery's own FROM item is its row; the outer one's is not reached.
    assert_eq!(
        rewritten("SELECT (SELECT to_json(u) FROM u), to_json(t) FROM t"),
        format!("SELECT (SELECT to_json({m}(u.*, 'u')) FROM u), to_json({m}(t.*, 't')) FROM t")
    );
}
