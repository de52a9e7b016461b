//! Statements as PostgreSQL reads them: the types of literals and the names of result
//! columns.

use brook_common::Result;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::sql::sqlparser::ast::Statement;
use std::sync::Arc;

/// PostgreSQL literal typing for statements that evaluate expressions.
pub(crate) fn pg_literals(stmt: &mut Statement) -> Result<()> {
    if matches!(
        stmt,
        Statement::Query(_)
            | Statement::Insert(_)
            | Statement::Update(_)
            | Statement::Delete(_)
            | Statement::Explain { .. }
    ) {
        // First: only the queries the client wrote, not those the rewrites below make.
        brook_planner::inner_names::name_inner_outputs(stmt);
        brook_planner::match_recognize::rewrite_match_recognize(stmt)?;
        brook_planner::windows::rewrite_windows(stmt)?;
        brook_planner::using_joins::expand_using_wildcards(stmt);
        brook_planner::rewrite::refuse_recursive_order(stmt)?;
        brook_planner::rewrite::fetch_as_limit(stmt)?;
        brook_planner::rewrite::int4_literals(stmt);
        brook_planner::numeric_literals::exponent_literals(stmt);
        brook_planner::lateral::lateral_functions(stmt)?;
        brook_planner::function_alias::name_function_columns(stmt);
        brook_planner::pg_functions::uuid_casts(stmt);
        brook_planner::time_precision::precision_casts(stmt);
        brook_planner::pg_functions::time_casts(stmt);
        brook_planner::pg_functions::at_time_zone_calls(stmt);
        brook_planner::interval_literals::pg_interval_literals(stmt);
        brook_planner::pg_functions::substring_calls(stmt);
        brook_planner::pg_functions::json_casts(stmt);
        brook_planner::pg_functions::xml_casts(stmt);
        brook_planner::values_types::json_values(stmt);
        brook_planner::array_literal::array_literal_casts(stmt);
        brook_planner::array_slice::array_slices(stmt);
        brook_planner::distinct_aggregates::ordered_distinct_aggregates(stmt);
        brook_planner::decorrelate::decorrelate_scalar_subqueries(stmt);
        brook_planner::rewrite::alias_outputs(stmt);
    }
    Ok(())
}

/// A planned schema with PostgreSQL's output names applied (when known).
pub(crate) fn pg_named(
    schema: datafusion::arrow::datatypes::Schema,
    names: Option<Vec<brook_planner::rewrite::OutputName>>,
) -> SchemaRef {
    match names {
        Some(n) => brook_planner::rewrite::rename_output(&schema, &n),
        None => Arc::new(schema),
    }
}
