//! SQL over streams as a continuous operator graph.
//!
//! The input is DataFusion's optimized logical plan of the query (the same plan an ad-hoc
//! query runs), so continuous and ad-hoc answers share parsing, name resolution, type
//! coercion and expression semantics; only the execution differs. Each logical node maps to
//! one push operator with DataFusion's physical expressions and accumulators. A node that
//! has no incremental form is refused with SQLSTATE 0A000 naming why — never run as a batch
//! query behind the user's back.

mod aggregate;
mod event_time;
mod join;
mod recursive;
mod scan;
mod top_n;
mod window;

use brook_common::{brook_err, BrookError, Result};
use brook_operators::filter::FilterNode;
use brook_operators::graph::{Endpoint, GraphPlan, PlanNode};
use brook_operators::project::ProjectNode;
use brook_operators::source::SourceSpec;
use brook_operators::union::UnionNode;
use brook_operators::NodeSpec;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::common::{DFSchema, TableReference};
use datafusion::execution::context::SessionState;
use datafusion::logical_expr::physical_planning_context::PhysicalPlanningContext;
use datafusion::logical_expr::{Expr, LogicalPlan, TableSource};
use datafusion::physical_expr::{create_physical_expr, PhysicalExpr};
use event_time::EventTimes;
use std::sync::Arc;

/// What the planner needs to know about a scanned relation.
#[derive(Debug, Clone)]
pub struct SourceFacts {
    /// The relation's full schema.
    pub table_schema: SchemaRef,
    /// True when the relation may retract rows (a table), false for an append-only stream.
    pub updating: bool,
    /// The watermark expression over the relation's columns.
    pub watermark: Option<Expr>,
    /// The watermark as declared (SQL text, for EXPLAIN).
    pub watermark_sql: Option<String>,
    /// After this long without rows the stream is idle (see `SourceSpec::idle_timeout`).
    pub idle_timeout: Option<std::time::Duration>,
}

/// A materialized view (or synopsis) read by a continuous query: its defining query.
#[derive(Debug, Clone)]
pub struct ViewDefinition {
    /// The defining query's optimized logical plan.
    pub plan: LogicalPlan,
    /// The options it is maintained with (`EMIT ON WINDOW CLOSE`).
    pub options: ContinuousOptions,
}

/// An operator over a relation's rows in arrival order, which a table function scan reads
/// (count windows).
#[derive(Clone)]
pub struct RowOperatorDefinition {
    /// The relation read.
    pub relation: TableReference,
    /// Its table source.
    pub source: Arc<dyn TableSource>,
    /// The operator's plan node, over the relation's full row.
    pub node: Arc<dyn NodeSpec>,
    /// What it is, for refusals ("count windows").
    pub what: &'static str,
}

/// The server's catalog, as the planner sees it.
pub trait SourceResolver {
    /// Facts about the relation a scan reads.
    fn resolve(&self, table: &TableReference, source: &Arc<dyn TableSource>)
        -> Result<SourceFacts>;

    /// The definition of a materialized view a scan reads; `None` for other relations.
    fn view(
        &self,
        _table: &TableReference,
        _source: &Arc<dyn TableSource>,
    ) -> Result<Option<ViewDefinition>> {
        Ok(None)
    }

    /// The operator a scan reads (`TUMBLE_ROWS`/`HOP_ROWS`); `None` otherwise.
    fn row_operator(
        &self,
        _source: &Arc<dyn TableSource>,
    ) -> Result<Option<RowOperatorDefinition>> {
        Ok(None)
    }
}

/// Options of the continuous query.
#[derive(Debug, Clone, Copy, Default)]
pub struct ContinuousOptions {
    /// `EMIT ON WINDOW CLOSE`: windowed aggregates emit each window once, when it closes.
    pub emit_on_window_close: bool,
}

/// `state`, optimizing as a continuous plan needs: an uncorrelated scalar subquery becomes a
/// join with its one-row input (DataFusion otherwise keeps it for a physical operator that
/// runs it once), so its changes reach every row it was compared with. Optimize a plan with
/// this state before [`plan_continuous`].
pub fn optimizing_state(mut state: SessionState) -> SessionState {
    state
        .config_mut()
        .options_mut()
        .optimizer
        .enable_physical_uncorrelated_scalar_subquery = false;
    state
}

/// Refuse a scalar subquery that may return more than one row (0A000): over a stream its
/// rows arrive over time, and the join it becomes would pair every outer row with each of
/// them instead of failing as PostgreSQL does (21000). An aggregate without GROUP BY, or
/// LIMIT 1, gives at most one. Run on the plan before it is optimized (the optimizer turns
/// the subqueries into joins).
pub fn check_scalar_subqueries(plan: &LogicalPlan) -> Result<()> {
    use datafusion::common::tree_node::{TreeNode, TreeNodeRecursion};
    let mut found = None;
    plan.apply_with_subqueries(|node| {
        node.apply_expressions(|e| {
            e.apply(|e| {
                if let Expr::ScalarSubquery(sq) = e {
                    if sq.outer_ref_columns.is_empty()
                        && sq.subquery.max_rows().is_none_or(|n| n > 1)
                    {
                        found = Some(refuse(
                            "a scalar subquery that can return more than one row (aggregate \
                             it, or add LIMIT 1)",
                        ));
                        return Ok(TreeNodeRecursion::Stop);
                    }
                }
                Ok(TreeNodeRecursion::Continue)
            })
        })
    })?;
    match found {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

/// Plan `plan` (optimized) as a continuous graph.
pub fn plan_continuous(
    plan: &LogicalPlan,
    state: &SessionState,
    resolver: &dyn SourceResolver,
    options: ContinuousOptions,
) -> Result<GraphPlan> {
    let mut b = Builder {
        state,
        resolver,
        options,
        sources: Vec::new(),
        nodes: Vec::new(),
        source_times: Vec::new(),
        node_times: Vec::new(),
        windowed: false,
        work_table: None,
    };
    let root = b.build(plan)?;
    if options.emit_on_window_close && !b.windowed {
        return Err(brook_err!(
            Unsupported,
            "EMIT ON WINDOW CLOSE without a GROUP BY over window_end of TUMBLE or HOP"
        ));
    }
    Ok(GraphPlan {
        sources: b.sources,
        nodes: b.nodes,
        root,
    })
}

struct Builder<'a> {
    state: &'a SessionState,
    resolver: &'a dyn SourceResolver,
    options: ContinuousOptions,
    sources: Vec<SourceSpec>,
    nodes: Vec<PlanNode>,
    /// Per source, its event-time column (see [`Builder::time_of`]).
    source_times: Vec<Option<usize>>,
    /// Per node, its output's event-time column and window ends.
    node_times: Vec<EventTimes>,
    /// A windowed aggregate was planned.
    windowed: bool,
    /// While a recursive term is built: its query's name and the node standing for its
    /// working table (see `recursive.rs`).
    work_table: Option<(String, Endpoint)>,
}

fn refuse(what: &str) -> BrookError {
    brook_err!(Unsupported, "{what} in a continuous query")
}

impl Builder<'_> {
    /// Add a node whose output has event-time column `time` (see [`Builder::time_of`]).
    fn add(
        &mut self,
        spec: Arc<dyn NodeSpec>,
        inputs: Vec<Endpoint>,
        time: Option<usize>,
    ) -> Endpoint {
        self.add_with_times(spec, inputs, EventTimes::event(time))
    }

    /// Add a node whose output has the event times `times`.
    fn add_with_times(
        &mut self,
        spec: Arc<dyn NodeSpec>,
        inputs: Vec<Endpoint>,
        times: EventTimes,
    ) -> Endpoint {
        self.nodes.push(PlanNode { spec, inputs });
        self.node_times.push(times);
        Endpoint::Node(self.nodes.len() - 1)
    }

    /// The column of `at`'s output that the watermark bounds: no row (or, for a windowed
    /// aggregate, no change) still to come has a value behind the watermark, except late
    /// rows. A stream's `WATERMARK FOR` column, kept through filters and projections, or a
    /// window's end.
    fn time_of(&self, at: Endpoint) -> Option<usize> {
        match at {
            Endpoint::Source(s) => self.source_times[s],
            Endpoint::Node(n) => self.node_times[n].event,
        }
    }

    /// The event time and window ends of `at`'s output.
    fn times_of(&self, at: Endpoint) -> EventTimes {
        match at {
            Endpoint::Source(s) => EventTimes::event(self.source_times[s]),
            Endpoint::Node(n) => self.node_times[n].clone(),
        }
    }

    fn updating(&self, at: Endpoint) -> bool {
        match at {
            Endpoint::Source(s) => self.sources[s].updating,
            Endpoint::Node(n) => self.nodes[n].spec.updating(),
        }
    }

    fn physical(&self, e: &Expr, schema: &DFSchema) -> Result<Arc<dyn PhysicalExpr>> {
        refuse_async_functions(e)?;
        Ok(create_physical_expr(
            e,
            schema,
            self.state.execution_props(),
            &PhysicalPlanningContext::default(),
        )?)
    }

    fn build(&mut self, plan: &LogicalPlan) -> Result<Endpoint> {
        match plan {
            LogicalPlan::TableScan(scan) => {
                if scan.fetch.is_some() {
                    return Err(refuse("LIMIT"));
                }
                if !scan.filters.is_empty() {
                    return Err(brook_err!(
                        Internal,
                        "filters pushed into a continuous scan"
                    ));
                }
                if let Some(at) = self.work_table_scan(scan)? {
                    return Ok(at);
                }
                if let Some(view) = self.resolver.view(&scan.table_name, &scan.source)? {
                    return self.view_scan(scan, view);
                }
                if let Some(op) = self.resolver.row_operator(&scan.source)? {
                    return self.row_operator_scan(scan, op);
                }
                let source = self.source(&scan.table_name, &scan.source)?;
                let at = Endpoint::Source(source);
                let width = self.sources[source].table_schema.fields().len();
                match &scan.projection {
                    Some(p) if !p.iter().copied().eq(0..width) => self.scan_columns(scan, at),
                    _ => Ok(at),
                }
            }
            LogicalPlan::Projection(p) => {
                let input = self.build(&p.input)?;
                let exprs = p
                    .expr
                    .iter()
                    .map(|e| self.physical(e, p.input.schema()))
                    .collect::<Result<Vec<_>>>()?;
                let updating = self.updating(input);
                let times = self.times_of(input).projected(&exprs);
                let node = ProjectNode {
                    exprs,
                    schema: Arc::new(p.schema.as_arrow().clone()),
                    updating,
                };
                Ok(self.add_with_times(Arc::new(node), vec![input], times))
            }
            LogicalPlan::Filter(f) => {
                if let Some(top) = self.ranked_top_n(f)? {
                    return Ok(top);
                }
                let input = self.build(&f.input)?;
                let node = FilterNode {
                    predicate: self.physical(&f.predicate, f.input.schema())?,
                    schema: Arc::new(f.input.schema().as_arrow().clone()),
                    updating: self.updating(input),
                };
                let times = self.times_of(input);
                Ok(self.add_with_times(Arc::new(node), vec![input], times))
            }
            LogicalPlan::SubqueryAlias(s) => self.build(&s.input),
            LogicalPlan::Union(u) => {
                let inputs = u
                    .inputs
                    .iter()
                    .map(|i| self.build(i))
                    .collect::<Result<Vec<_>>>()?;
                let updating = inputs.iter().any(|i| self.updating(*i));
                let times: Vec<EventTimes> = inputs.iter().map(|i| self.times_of(*i)).collect();
                let node = UnionNode {
                    schema: Arc::new(u.schema.as_arrow().clone()),
                    updating,
                };
                Ok(self.add_with_times(Arc::new(node), inputs, EventTimes::common(&times)))
            }
            LogicalPlan::Aggregate(a) => self.aggregate(a),
            LogicalPlan::Sort(sort) => match sort.fetch {
                Some(n) => self.top_n(sort, 0, n),
                // `SELECT DISTINCT ON (k) ... ORDER BY k, v` picks each group's row by the
                // ORDER BY (the aggregate's `first_value(.. ORDER BY ..)`); the Sort left
                // above only orders the groups for the reader, which a continuous result
                // cannot (its rows arrive as they change).
                None if distinct_on_groups(&sort.input) => self.build(&sort.input),
                None => Err(brook_err!(
                    Unsupported,
                    "ORDER BY without LIMIT in a continuous query (over a stream, results \
                     arrive as they change: sort what FETCH returns, or keep a top-N with \
                     ORDER BY .. LIMIT n)"
                )),
            },
            LogicalPlan::Limit(l) => {
                use datafusion::logical_expr::{FetchType, SkipType};
                match (l.get_skip_type()?, l.get_fetch_type()?, l.input.as_ref()) {
                    (
                        SkipType::Literal(skip),
                        FetchType::Literal(Some(fetch)),
                        LogicalPlan::Sort(sort),
                    ) => self.top_n(sort, skip, fetch),
                    (SkipType::Literal(_), FetchType::Literal(None), LogicalPlan::Sort(_)) => {
                        Err(refuse(
                            "OFFSET without LIMIT (every row but the first n: filter on \
                             row_number() OVER (ORDER BY ...) > n)",
                        ))
                    }
                    (_, _, LogicalPlan::Sort(_)) => Err(refuse("a computed LIMIT or OFFSET")),
                    _ => Err(refuse("LIMIT without ORDER BY")),
                }
            }
            LogicalPlan::Join(j) => self.join(j),
            LogicalPlan::Unnest(u) => self.unnest(u),
            LogicalPlan::Window(w) => self.over(w),
            LogicalPlan::RecursiveQuery(r) => self.recursive(r),
            LogicalPlan::Extension(e) => match e
                .node
                .as_any()
                .downcast_ref::<crate::match_recognize::plan::MatchRecognizePlan>(
            ) {
                Some(mr) => self.match_recognize(mr),
                None if e.node.name() == "LateralApply" => Err(refuse(
                    "a subquery run per row of the query reading it (a LATERAL subquery \
                     with ORDER BY, LIMIT, DISTINCT, UNION or HAVING, or reading the left \
                     row in its select list; a scalar or EXISTS subquery of such a shape)",
                )),
                None => Err(refuse(&format!("{} node", e.node.name()))),
            },
            LogicalPlan::EmptyRelation(_) | LogicalPlan::Values(_) => {
                Err(refuse("a constant relation (VALUES or no FROM)"))
            }
            other => Err(refuse(&format!("{} node", other.display()))),
        }
    }
}

/// An asynchronous function (`pg_sleep`) waits per call; an operator evaluates expressions
/// as it goes and cannot wait: 0A000 naming it.
fn refuse_async_functions(e: &Expr) -> Result<()> {
    use datafusion::common::tree_node::TreeNode;
    let mut found = None;
    e.apply(|e| {
        if let Expr::ScalarFunction(f) = e {
            if f.func.as_async().is_some() {
                found = Some(f.func.name().to_string());
                return Ok(datafusion::common::tree_node::TreeNodeRecursion::Stop);
            }
        }
        Ok(datafusion::common::tree_node::TreeNodeRecursion::Continue)
    })?;
    match found {
        Some(name) => Err(refuse(&format!("{name}(), which waits per call,"))),
        None => Ok(()),
    }
}

/// Whether `plan` is a `SELECT DISTINCT ON` as DataFusion plans it: an aggregate (under
/// projections) whose aggregates are all `first_value(.. ORDER BY ..)`.
fn distinct_on_groups(plan: &LogicalPlan) -> bool {
    match plan {
        LogicalPlan::Projection(p) => distinct_on_groups(&p.input),
        LogicalPlan::Aggregate(a) => {
            !a.aggr_expr.is_empty()
                && a.aggr_expr.iter().all(|e| {
                    // (named by the optimizer when it took an ORDER BY expression out)
                    let e = match e {
                        Expr::Alias(a) => a.expr.as_ref(),
                        other => other,
                    };
                    matches!(
                        e,
                        Expr::AggregateFunction(f)
                            if f.func.name() == "first_value" && !f.params.order_by.is_empty()
                    )
                })
        }
        _ => false,
    }
}
