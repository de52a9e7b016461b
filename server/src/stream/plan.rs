//! Planning a query to run continuously: its continuous plan, the stores of its sources, and a
//! materialized view's defining SQL planned in its place.

use crate::pg::sql::pg_literals;
use crate::pg::sql::pg_named;
use crate::storage::TableStore;
use brook_common::{brook_err, Result};
use brook_operators::graph::GraphPlan;
use brook_planner::continuous::{plan_continuous, ContinuousOptions};
use brook_planner::StatementBody;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::prelude::SessionContext;
use datafusion::sql::parser::Statement as DFStatement;
use datafusion::sql::sqlparser::ast::Statement;
use std::sync::Arc;

/// The continuous plan of `plan` and the stores of its sources (see `Session::continuous`).
/// A materialized view read by the plan is a stream of its changes: its definition is
/// planned in its place (so a cursor over a view over a stream is continuous too).
pub async fn continuous_plan(
    ctx: &SessionContext,
    plan: &datafusion::logical_expr::LogicalPlan,
    options: ContinuousOptions,
    force: bool,
) -> Result<Option<(GraphPlan, Vec<Arc<TableStore>>)>> {
    brook_planner::continuous::check_scalar_subqueries(plan)?;
    let state = brook_planner::continuous::optimizing_state(ctx.state());
    let optimized = state.optimize(plan)?;
    continuous_plan_of_optimized(ctx, &state, &optimized, options, force).await
}

/// [`continuous_plan`] of a plan `state` optimized.
async fn continuous_plan_of_optimized(
    ctx: &SessionContext,
    state: &datafusion::execution::SessionState,
    optimized: &datafusion::logical_expr::LogicalPlan,
    options: ContinuousOptions,
    force: bool,
) -> Result<Option<(GraphPlan, Vec<Arc<TableStore>>)>> {
    let mut views = crate::stream::queries::ViewPlans::new();
    crate::stream::queries::plan_views(ctx, optimized, &mut views).await?;
    let streams = crate::stream::queries::reads_stream(optimized)
        || views
            .values()
            .any(|v| crate::stream::queries::reads_stream(&v.plan));
    if !force && !streams {
        return Ok(None);
    }
    let resolver = crate::stream::queries::Resolver::new(state, views);
    let graph = plan_continuous(optimized, state, &resolver, options)?;
    Ok(Some((graph, resolver.stores.into_inner())))
}

/// Plan a materialized view's SQL as [`plan_view_sql`] does, over the rows of the
/// partitions `d` names of its stream only when its query is partition-local
/// (`partitioned_view`); whether it was.
pub async fn plan_view_sql_in_partitions(
    ctx: &SessionContext,
    sql: &str,
    d: &crate::stream::partitioned_view::Distribution,
) -> Result<(GraphPlan, Vec<Arc<TableStore>>, bool)> {
    let (mut stmt, options) = parse_view_sql(sql)?;
    pg_literals(&mut stmt)?;
    let plan = ctx
        .state()
        .statement_to_plan(DFStatement::Statement(Box::new(stmt)))
        .await?;
    brook_planner::continuous::check_scalar_subqueries(&plan)?;
    let state = brook_planner::continuous::optimizing_state(ctx.state());
    let optimized = state.optimize(&plan)?;
    let (optimized, restricted) = match crate::stream::partitioned_view::restrict(&optimized, d)? {
        Some(r) => (r, true),
        None => (optimized, false),
    };
    let (graph, stores) = continuous_plan_of_optimized(ctx, &state, &optimized, options, true)
        .await?
        .ok_or_else(|| brook_err!(Internal, "forced continuous plan missing"))?;
    Ok((graph, stores, restricted))
}

/// A view's defining SQL (a query, possibly ending in an EMIT clause) as a query and the
/// options it runs with.
pub(crate) fn parse_view_sql(sql: &str) -> Result<(Statement, ContinuousOptions)> {
    let parsed = brook_planner::parser::parse_one(sql)?;
    let (StatementBody::Sql(stmt), None) = (parsed.body, parsed.budget) else {
        return Err(brook_err!(Syntax, "a view is defined by a query"));
    };
    let options = ContinuousOptions {
        emit_on_window_close: parsed.emit.is_some_and(|e| e.on_window_close()),
    };
    let stmt = *stmt;
    if !matches!(stmt, Statement::Query(_)) {
        return Err(brook_err!(Syntax, "a view is defined by a query"));
    }
    Ok((stmt, options))
}

/// The catalog option of a materialized view or synopsis created in a session whose time
/// zone is not UTC: the zone (as Arrow labels instants). Its maintenance, a restart's
/// rebuild and the continuous queries that read it plan it in that zone, so its rows
/// (`date_trunc('day', ts)`: the zone's days) do not depend on who reads it.
pub const TIME_ZONE_OPTION: &str = "time_zone";

/// `ctx` planning in time zone `zone` (UTC when None): a maintained query's context.
pub fn in_time_zone(ctx: &SessionContext, zone: Option<&str>) -> SessionContext {
    SessionContext::new_with_state(zoned_state(ctx.state(), zone))
}

fn zoned_state(
    mut state: datafusion::execution::SessionState,
    zone: Option<&str>,
) -> datafusion::execution::SessionState {
    state.config_mut().options_mut().execution.time_zone =
        Some(zone.unwrap_or("+00:00").to_string());
    state
}

/// A view's defining SQL, planned in time zone `zone` (see [`TIME_ZONE_OPTION`]), as an
/// optimized logical plan, and the options it runs with.
pub async fn view_logical_plan(
    ctx: &SessionContext,
    sql: &str,
    zone: Option<&str>,
) -> Result<(datafusion::logical_expr::LogicalPlan, ContinuousOptions)> {
    let (mut stmt, options) = parse_view_sql(sql)?;
    pg_literals(&mut stmt)?;
    let state = brook_planner::continuous::optimizing_state(zoned_state(ctx.state(), zone));
    let plan = state
        .statement_to_plan(DFStatement::Statement(Box::new(stmt)))
        .await?;
    Ok((state.optimize(&plan)?, options))
}

/// Plan a materialized view's SQL (a query, possibly ending in an EMIT clause): its graph,
/// input stores and result schema with PostgreSQL column names.
pub async fn plan_view_sql(
    ctx: &SessionContext,
    sql: &str,
) -> Result<(GraphPlan, Vec<Arc<TableStore>>, SchemaRef)> {
    let (stmt, options) = parse_view_sql(sql)?;
    let planned = plan_query_continuous(ctx, stmt, options, false).await?;
    let schema = pg_named(planned.graph.schema().as_ref().clone(), planned.names);
    Ok((planned.graph, planned.stores, schema))
}

/// A query planned to run continuously.
pub struct PlannedContinuous {
    /// The operator graph.
    pub graph: GraphPlan,
    /// The stores of its sources, in source order.
    pub stores: Vec<Arc<TableStore>>,
    /// PostgreSQL's names of its result columns.
    pub names: Option<Vec<brook_planner::rewrite::OutputName>>,
}

/// Plan a query statement to run continuously, over streams and tables alike (what `EMIT`
/// and materialized views ask for).
/// `shown`: its rows go to a client (a cursor, EMIT), shown in the session's time zone —
/// not a materialized view's, whose stored rows keep their labels.
pub async fn plan_query_continuous(
    ctx: &SessionContext,
    mut q: Statement,
    options: ContinuousOptions,
    shown: bool,
) -> Result<PlannedContinuous> {
    let names = brook_planner::rewrite::output_names(&q);
    pg_literals(&mut q)?;
    brook_planner::partial_aliases::complete_in_context(&mut q, ctx).await;
    let plan = ctx
        .state()
        .statement_to_plan(DFStatement::Statement(Box::new(q)))
        .await?;
    let zone = ctx.state().config_options().execution.time_zone.clone();
    let plan = match shown {
        true => brook_planner::session_time_zone::shown_in_zone(plan, zone.as_deref())?,
        false => plan,
    };
    let (graph, stores) = continuous_plan(ctx, &plan, options, true)
        .await?
        .ok_or_else(|| brook_err!(Internal, "forced continuous plan missing"))?;
    Ok(PlannedContinuous {
        graph,
        stores,
        names,
    })
}
