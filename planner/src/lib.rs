//! Brook's SQL front: a thin wrapper parser in front of DataFusion's SQL planner.
//!
//! Standard statements go through sqlparser (PostgreSQL dialect) and the PostgreSQL
//! compatibility rewrites of `datafusion-pg-catalog`; Brook's own statements
//! (`CREATE STREAM`, `DROP STREAM`, ...) are recognised by their leading keywords and parsed
//! here with sqlparser's building blocks, never by forking the grammar.
//!
//! # Layout
//! - [`parser`]: statement splitting and parsing, syntax error positions, the depth limit.
//! - [`statement`]: [`BrookStatement`] (a body and Brook's optional clauses) and the bodies
//!   of Brook's own statements.
//! - [`continuous`]: optimized logical plans as continuous operator graphs (or 0A000), a file
//!   per concern: sources (`scan`), `join`, `aggregate`, window functions (`window`), `top_n`.
//! - [`array_literal`]: `'{a,b}'::text[]` read as PostgreSQL reads array literals.
//! - [`array_subquery`]: `ARRAY(SELECT ...)` as an ordered `array_agg` subquery.
//! - [`function_alias`]: `FROM generate_series(...) g` names the column `g`.
//! - [`lateral`]: LATERAL set-returning functions and per-row subqueries as operators on
//!   the left side.
//! - [`in_subquery_projection`]: `x IN (subquery)` in a select list as scalar subqueries.
//! - [`reloptions`]: `unnest(c.reloptions)` (psql's `\d+`) as a relation without rows.
//! - [`create_sequence`]: `CREATE SEQUENCE` with its options in PostgreSQL's any order.
//! - [`catalog_lookups`]: `pg_get_indexdef` and the size functions as lookups in the server's
//!   pg_catalog views.
//! - [`approx`]: the accuracy budget (exact aggregates replaced by sized synopses).
//! - [`bytea`]: text to `bytea` in PostgreSQL's hex and escape formats.
//! - [`checked`]: integer `+ - *` that raise 22003 on overflow instead of wrapping.
//! - [`checked_power`]: float8 `^`/`power` with PostgreSQL's overflow and domain errors.
//! - [`synopsis`]: `CREATE SYNOPSIS` as the continuous query that maintains it.
//! - [`decorrelate`]: correlated scalar aggregate subqueries as grouped left joins.
//! - [`select_list_subqueries`]: which select-list subqueries of catalog queries are kept.
//! - [`single_row_subquery`]: correlated scalar subqueries that select one row (21000 for more).
//! - [`lateral_apply`]: LATERAL, scalar and EXISTS subqueries no rule decorrelates, run per
//!   left row (and DataFusion's decorrelations kept from the shapes they get wrong).
//! - [`windows`]: `TUMBLE`/`HOP`/`SESSION` window table functions as plain SQL (window
//!   starts, session window functions).
//! - [`window_start`]: `brook_window_start`, a row's fixed-size window start (`date_bin`'s
//!   bins, as integer arithmetic).
//! - [`session_window`]: the `session_start`/`session_end` window functions.
//! - [`json_ops`]: `->`, `->>`, `?` and PostgreSQL's JSON functions as `datafusion-functions-json`'s.
//! - [`like_escape`]: `LIKE ... ESCAPE 'c'` as a pattern rewritten to backslash escapes.
//! - [`pg_functions`]: PostgreSQL catalog functions answered by rewriting (`to_regtype`).
//! - [`datetime_input`]: date and timestamp text in PostgreSQL's forms (`Jan 2 2024`,
//!   `1/2/2024`, `today`, zone abbreviations) read into days or microseconds.
//! - [`numeric_text`]: text to `numeric` in exponent notation (`'2e1'::numeric`).
//! - [`unnest_arrays`]: `unnest` of a multi-dimensional array gives its elements.
//! - [`interval_literals`]: interval constants in PostgreSQL's spellings (`'1 day 02:00'`).
//! - [`interval_text_casts`]: text cast to an interval in the plan, read as PostgreSQL reads it.
//! - [`table_command`]: `TABLE name` as `SELECT * FROM name`.
//! - [`rewrite`]: AST rewrites that make DataFusion answer as PostgreSQL does (correlated
//!   aggregates over empty inputs, parameter substitution).

pub mod aggregate_subscript;
pub mod alter_identity;
pub mod approx;
pub mod array_comparison;
pub mod array_literal;
pub mod array_literal_arguments;
pub mod array_operators;
pub mod array_slice;
pub mod array_subquery;
pub mod bare_value;
pub mod bytea;
pub mod cast_metadata;
pub mod cast_rounding;
pub mod catalog_lookups;
pub mod checked;
pub mod checked_math;
pub mod checked_power;
pub mod concat_text;
pub mod continuous;
mod create_aggregate;
pub mod create_database;
pub mod create_sequence;
pub mod current_times;
pub mod date_interval;
pub mod datetime_input;
pub mod decorrelate;
pub mod dialect;
pub mod distinct_aggregates;
pub mod distinct_from;
pub mod domain_base;
pub mod empty_catalogs;
pub mod extract_fields;
pub mod extract_numeric;
mod fetch;
pub mod float_beside_numeric;
pub mod function_alias;
pub mod in_subquery_projection;
pub mod information_schema;
pub mod inner_names;
pub mod interval_grouping;
pub mod interval_literals;
pub mod interval_order;
pub mod interval_scale;
pub mod interval_text_casts;
pub mod json_aggregates;
pub mod json_ops;
pub mod lateral;
pub mod lateral_apply;
pub mod lexical;
pub mod like_escape;
pub mod match_recognize;
pub mod named_arguments;
pub mod named_windows;
pub mod niladic;
pub mod numeric_literals;
pub mod numeric_text;
pub mod oid_arrays;
pub mod output_names;
pub mod parameter_types;
pub mod parser;
pub mod partial_aliases;
pub mod pg_functions;
pub mod prefix_operators;
pub mod probe_casts;
pub mod quantified_subquery;
pub mod regexp_replacement;
pub mod regproc_columns;
pub mod regtype_names;
pub mod reloptions;
pub mod rewrite;
pub mod row_comparison;
pub mod row_in_subquery;
pub mod rule_guards;
pub mod select_list_subqueries;
pub mod session_time_zone;
pub mod session_window;
pub mod set_all;
pub mod set_returning;
pub mod similar_to;
pub mod single_row_subquery;
pub mod statement;
pub mod string_casts;
pub mod synopsis;
pub mod synopsis_merge;
pub mod system_columns;
pub mod table_command;
mod text_input;
pub mod time_precision;
pub mod timestamp_difference;
pub mod timestamp_text;
pub mod unnest_arrays;
pub mod untyped_arithmetic;
pub mod using_joins;
pub mod value_text;
pub mod values_subqueries;
pub mod values_types;
pub mod view_merge;
pub mod where_in_subquery;
pub mod whole_row;
pub mod window_start;
pub mod windows;
pub mod zone_names;

pub use parser::{
    parse_sql, BrookStatement, CreateStream, Emit, ErrorBudget, StatementBody, Watermark,
};

/// A statement's text after one rewrite rule (the rules' unit tests compare these).
#[cfg(test)]
pub(crate) fn rewritten_by(
    rule: &dyn datafusion_pg_catalog::sql::rules::SqlStatementRewriteRule,
    sql: &str,
) -> String {
    use datafusion::sql::sqlparser::{dialect::PostgreSqlDialect, parser::Parser};
    let s = Parser::parse_sql(&PostgreSqlDialect {}, sql)
        .expect("test SQL parses")
        .remove(0);
    rule.rewrite(s).to_string()
}

/// Helpers of the unit tests.
#[cfg(test)]
pub(crate) mod test_support {
    use datafusion::sql::sqlparser::dialect::PostgreSqlDialect;
    use datafusion::sql::sqlparser::parser::Parser;
    use datafusion_pg_catalog::sql::rules::SqlStatementRewriteRule;

    /// `sql` parsed as Brook parses a statement (with its rewrite rules).
    pub fn statement(sql: &str) -> datafusion::sql::sqlparser::ast::Statement {
        let parsed = crate::parser::parse_one(sql).expect("test SQL parses");
        match parsed.clone().into_plain_sql() {
            Some(s) => s,
            None => panic!("unexpected {parsed:?}"),
        }
    }

    /// `sql` parsed and rewritten by `rule` alone, as SQL text.
    pub fn rewritten(rule: &dyn SqlStatementRewriteRule, sql: &str) -> String {
        let s = Parser::parse_sql(&PostgreSqlDialect {}, sql)
            .expect("test SQL parses")
            .remove(0);
        rule.rewrite(s).to_string()
    }
}
