//! SQL over streams as a continuous operator graph.
//!
//! The input is DataFusion's optimized logical plan of the query (the same plan an ad-hoc
//! query runs), so continuous and ad-hoc answers share parsing, name resolution, type
//! coercion and expression semantics; only the execution differs. Each logical node maps to
//! one push operator with DataFusion's physical expressions and accumulators. A node that
//! has no incremental form is refused with SQLSTATE 0A000 naming why — never run as a batch
//! query behind the user's back.

use brook_common::{BrookError, Result};
use brook_operators::aggregate::{AggregateCall, AggregateNode, WindowClose};
use brook_operators::filter::FilterNode;
use brook_operators::graph::{Endpoint, GraphPlan, PlanNode};
use brook_operators::join::{JoinKind, JoinNode, TimeBound};
use brook_operators::project::ProjectNode;
use brook_operators::session_window::SessionBound;
use brook_operators::source::SourceSpec;
use brook_operators::topn::TopNNode;
use brook_operators::union::UnionNode;
use brook_operators::NodeSpec;
use datafusion::arrow::datatypes::{DataType, SchemaRef};
use datafusion::common::{DFSchema, TableReference};
use datafusion::execution::context::SessionState;
use datafusion::logical_expr::physical_planning_context::PhysicalPlanningContext;
use datafusion::logical_expr::{Expr, ExprSchemable, LogicalPlan, TableSource};
use datafusion::physical_expr::aggregate::LoweredAggregateBuilder;
use datafusion::physical_expr::expressions::Column;
use datafusion::physical_expr::{create_physical_expr, PhysicalExpr, PhysicalSortExpr};
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

/// Count windows over a relation: what a scan of the count window table function reads.
#[derive(Clone)]
pub struct CountWindowDefinition {
    /// The relation windowed.
    pub relation: TableReference,
    /// Its table source.
    pub source: Arc<dyn TableSource>,
    /// The windows (the operator's plan node, over the relation's full row).
    pub node: Arc<brook_operators::count_window::CountWindowNode>,
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

    /// The count windows a scan reads (a `TUMBLE_ROWS`/`HOP_ROWS`); `None` otherwise.
    fn count_window(
        &self,
        _source: &Arc<dyn TableSource>,
    ) -> Result<Option<CountWindowDefinition>> {
        Ok(None)
    }
}

/// Options of the continuous query.
#[derive(Debug, Clone, Copy, Default)]
pub struct ContinuousOptions {
    /// `EMIT ON WINDOW CLOSE`: windowed aggregates emit each window once, when it closes.
    pub emit_on_window_close: bool,
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
    };
    let root = b.build(plan)?;
    if options.emit_on_window_close && !b.windowed {
        return Err(BrookError::unsupported(
            "EMIT ON WINDOW CLOSE without a GROUP BY over window_end of TUMBLE or HOP",
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
    /// Per node, its output's event-time column.
    node_times: Vec<Option<usize>>,
    /// A windowed aggregate was planned.
    windowed: bool,
}

fn refuse(what: &str) -> BrookError {
    BrookError::unsupported(format!("{what} in a continuous query (over a stream)"))
}

impl Builder<'_> {
    /// Add a node whose output has event-time column `time` (see [`Builder::time_of`]).
    fn add(
        &mut self,
        spec: Arc<dyn NodeSpec>,
        inputs: Vec<Endpoint>,
        time: Option<usize>,
    ) -> Endpoint {
        self.nodes.push(PlanNode { spec, inputs });
        self.node_times.push(time);
        Endpoint::Node(self.nodes.len() - 1)
    }

    /// The column of `at`'s output that the watermark bounds: no row (or, for a windowed
    /// aggregate, no change) still to come has a value behind the watermark, except late
    /// rows. A stream's `WATERMARK FOR` column, kept through filters and projections, or a
    /// window's end.
    fn time_of(&self, at: Endpoint) -> Option<usize> {
        match at {
            Endpoint::Source(s) => self.source_times[s],
            Endpoint::Node(n) => self.node_times[n],
        }
    }

    /// The output position of `input_time` among projection `exprs` (a plain column).
    fn projected_time(exprs: &[Arc<dyn PhysicalExpr>], input_time: Option<usize>) -> Option<usize> {
        let t = input_time?;
        exprs
            .iter()
            .position(|e| e.downcast_ref::<Column>().is_some_and(|c| c.index() == t))
    }

    fn updating(&self, at: Endpoint) -> bool {
        match at {
            Endpoint::Source(s) => self.sources[s].updating,
            Endpoint::Node(n) => self.nodes[n].spec.updating(),
        }
    }

    fn physical(&self, e: &Expr, schema: &DFSchema) -> Result<Arc<dyn PhysicalExpr>> {
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
                    return Err(BrookError::internal(
                        "filters pushed into a continuous scan",
                    ));
                }
                if let Some(view) = self.resolver.view(&scan.table_name, &scan.source)? {
                    return self.view_scan(scan, view);
                }
                if let Some(cw) = self.resolver.count_window(&scan.source)? {
                    return self.count_window_scan(scan, cw);
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
                let time = Self::projected_time(&exprs, self.time_of(input));
                let node = ProjectNode {
                    exprs,
                    schema: Arc::new(p.schema.as_arrow().clone()),
                    updating,
                };
                Ok(self.add(Arc::new(node), vec![input], time))
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
                let time = self.time_of(input);
                Ok(self.add(Arc::new(node), vec![input], time))
            }
            LogicalPlan::SubqueryAlias(s) => self.build(&s.input),
            LogicalPlan::Union(u) => {
                let inputs = u
                    .inputs
                    .iter()
                    .map(|i| self.build(i))
                    .collect::<Result<Vec<_>>>()?;
                let updating = inputs.iter().any(|i| self.updating(*i));
                let times: Vec<Option<usize>> = inputs.iter().map(|i| self.time_of(*i)).collect();
                let time = times
                    .first()
                    .copied()
                    .flatten()
                    .filter(|t| times.iter().all(|x| *x == Some(*t)));
                let node = UnionNode {
                    schema: Arc::new(u.schema.as_arrow().clone()),
                    updating,
                };
                Ok(self.add(Arc::new(node), inputs, time))
            }
            LogicalPlan::Aggregate(a) => self.aggregate(a),
            LogicalPlan::Sort(sort) => match sort.fetch {
                Some(n) => self.top_n(sort, 0, n),
                None => Err(BrookError::unsupported(
                    "ORDER BY without LIMIT in a continuous query (over a stream, results \
                     arrive as they change: sort what FETCH returns, or keep a top-N with \
                     ORDER BY .. LIMIT n)",
                )),
            },
            LogicalPlan::Limit(l) => {
                use datafusion::logical_expr::{FetchType, SkipType};
                let (
                    SkipType::Literal(skip),
                    FetchType::Literal(Some(fetch)),
                    LogicalPlan::Sort(sort),
                ) = (l.get_skip_type()?, l.get_fetch_type()?, l.input.as_ref())
                else {
                    return Err(refuse("LIMIT without ORDER BY (or with a computed count)"));
                };
                self.top_n(sort, skip, fetch)
            }
            LogicalPlan::Join(j) => self.join(j),
            LogicalPlan::Unnest(u) => self.unnest(u),
            LogicalPlan::Window(w) => self.over(w),
            LogicalPlan::EmptyRelation(_) | LogicalPlan::Values(_) => {
                Err(refuse("a constant relation (VALUES or no FROM)"))
            }
            other => Err(refuse(&format!("{} node", other.display()))),
        }
    }

    /// The source reading `table` (one per relation, however often the query scans it:
    /// a self-join, or HOP's one branch per window, reads the log once).
    fn source(&mut self, table: &TableReference, source: &Arc<dyn TableSource>) -> Result<usize> {
        let name = table.to_string();
        let source = match self.sources.iter().position(|s| s.relation == name) {
            Some(i) => i,
            None => {
                let facts = self.resolver.resolve(table, source)?;
                let watermark = match &facts.watermark {
                    Some(w) => {
                        let schema = DFSchema::try_from(facts.table_schema.as_ref().clone())?;
                        Some(self.physical(&fixed_intervals_as_durations(w.clone())?, &schema)?)
                    }
                    None => None,
                };
                // A stream's event time: the one column its watermark reads.
                let time = match &facts.watermark {
                    Some(w) if !facts.updating => {
                        let refs = w.column_refs();
                        match refs.iter().next() {
                            Some(c) if refs.len() == 1 => facts.table_schema.index_of(&c.name).ok(),
                            _ => None,
                        }
                    }
                    _ => None,
                };
                self.source_times.push(time);
                self.sources.push(SourceSpec {
                    relation: name,
                    projection: None,
                    schema: facts.table_schema.clone(),
                    table_schema: facts.table_schema,
                    watermark,
                    watermark_sql: facts.watermark_sql,
                    updating: facts.updating,
                    idle_timeout: facts.idle_timeout,
                });
                self.sources.len() - 1
            }
        };
        Ok(source)
    }

    /// The scan's columns of `at` (the scanned relation's full row), named as the scan
    /// names them.
    fn scan_columns(
        &mut self,
        scan: &datafusion::logical_expr::TableScan,
        at: Endpoint,
    ) -> Result<Endpoint> {
        let stored = scan.source.schema();
        let columns: Vec<usize> = match &scan.projection {
            Some(p) => p.clone(),
            None => (0..stored.fields().len()).collect(),
        };
        let exprs: Vec<Arc<dyn PhysicalExpr>> = columns
            .iter()
            .map(|&i| {
                let e: Arc<dyn PhysicalExpr> = Arc::new(Column::new(stored.field(i).name(), i));
                e
            })
            .collect();
        let time = Self::projected_time(&exprs, self.time_of(at));
        let node = ProjectNode {
            exprs,
            schema: Arc::new(scan.projected_schema.as_arrow().clone()),
            updating: self.updating(at),
        };
        Ok(self.add(Arc::new(node), vec![at], time))
    }

    /// Count windows (`TUMBLE_ROWS`/`HOP_ROWS`) over a stream, in arrival order.
    fn count_window_scan(
        &mut self,
        scan: &datafusion::logical_expr::TableScan,
        cw: CountWindowDefinition,
    ) -> Result<Endpoint> {
        let source = self.source(&cw.relation, &cw.source)?;
        if self.sources[source].updating {
            return Err(refuse(
                "count windows over a table (its rows have no arrival order once they change)",
            ));
        }
        let node: Arc<dyn NodeSpec> = cw.node;
        let at = self.add(node, vec![Endpoint::Source(source)], None);
        self.scan_columns(scan, at)
    }

    /// A materialized view as input: a stream of its changes. Its defining query is planned
    /// in place (with the view's own options), so the changes are exactly those the view
    /// applies to its state, from its first input row on.
    fn view_scan(
        &mut self,
        scan: &datafusion::logical_expr::TableScan,
        view: ViewDefinition,
    ) -> Result<Endpoint> {
        let (options, windowed) = (self.options, self.windowed);
        self.options = view.options;
        let at = self.build(&view.plan);
        (self.options, self.windowed) = (options, windowed);
        let at = at?;
        let stored = scan.source.schema();
        let produced: Vec<&DataType> = view
            .plan
            .schema()
            .fields()
            .iter()
            .map(|f| f.data_type())
            .collect();
        if !stored
            .fields()
            .iter()
            .map(|f| f.data_type())
            .eq(produced.iter().copied())
        {
            return Err(BrookError::internal(format!(
                "materialized view {} no longer matches its definition",
                scan.table_name
            )));
        }
        // The view's columns by the names the query sees.
        self.scan_columns(scan, at)
    }

    /// `unnest` of one list column (depth 1).
    fn unnest(&mut self, u: &datafusion::logical_expr::Unnest) -> Result<Endpoint> {
        let ([(list_column, list)], []) = (
            u.list_type_columns.as_slice(),
            u.struct_type_columns.as_slice(),
        ) else {
            return Err(refuse("unnest of several columns or of a struct"));
        };
        if list.depth != 1 || u.options.recursions.iter().any(|r| r.depth != 1) {
            return Err(refuse("unnest of nested lists"));
        }
        let input = self.build(&u.input)?;
        let node = brook_operators::unnest::UnnestNode {
            list_column: *list_column,
            dependencies: u.dependency_indices.clone(),
            null_handling: u.options.null_handling,
            schema: Arc::new(u.schema.as_arrow().clone()),
            updating: self.updating(input),
        };
        Ok(self.add(Arc::new(node), vec![input], None))
    }

    /// `ORDER BY .. LIMIT fetch OFFSET skip`: the changing top rows.
    fn top_n(
        &mut self,
        sort: &datafusion::logical_expr::Sort,
        skip: usize,
        fetch: usize,
    ) -> Result<Endpoint> {
        let input = self.build(&sort.input)?;
        let schema = sort.input.schema();
        let order = self.sort_exprs(&sort.expr, schema)?;
        let node = TopNNode {
            order,
            partition_by: Vec::new(),
            offset: skip,
            limit: fetch,
            rank_column: false,
            input_updating: self.updating(input),
            input_schema: Arc::new(schema.as_arrow().clone()),
            schema: Arc::new(schema.as_arrow().clone()),
        };
        Ok(self.add(Arc::new(node), vec![input], None))
    }

    fn sort_exprs(
        &self,
        exprs: &[datafusion::logical_expr::SortExpr],
        schema: &DFSchema,
    ) -> Result<Vec<PhysicalSortExpr>> {
        exprs
            .iter()
            .map(|e| {
                Ok(PhysicalSortExpr {
                    expr: self.physical(&e.expr, schema)?,
                    options: datafusion::arrow::compute::SortOptions {
                        descending: !e.asc,
                        nulls_first: e.nulls_first,
                    },
                })
            })
            .collect()
    }

    /// Top-N per group: `WHERE rn <= n` over `row_number() OVER (PARTITION BY .. ORDER BY ..)
    /// AS rn` (directly, or through the projection naming it) keeps only the top rows of each
    /// group instead of every row; `None` for other filters.
    fn ranked_top_n(&mut self, f: &datafusion::logical_expr::Filter) -> Result<Option<Endpoint>> {
        use datafusion::logical_expr::expr::WindowFunctionDefinition;
        use datafusion::logical_expr::{BinaryExpr, Operator};
        let bound = |e: &Expr| match e {
            Expr::Literal(v, _) => v.cast_to(&DataType::Int64).ok().and_then(|v| match v {
                datafusion::common::ScalarValue::Int64(Some(n)) => Some(n),
                _ => None,
            }),
            _ => None,
        };
        let (column, limit) = match &f.predicate {
            Expr::BinaryExpr(BinaryExpr { left, op, right }) => {
                match (left.as_ref(), op, right.as_ref()) {
                    (Expr::Column(c), Operator::LtEq, n) | (n, Operator::GtEq, Expr::Column(c)) => {
                        (c, bound(n))
                    }
                    (Expr::Column(c), Operator::Lt, n) | (n, Operator::Gt, Expr::Column(c)) => {
                        (c, bound(n).map(|n| n - 1))
                    }
                    _ => return Ok(None),
                }
            }
            _ => return Ok(None),
        };
        let Some(limit) = limit.filter(|n| *n >= 0) else {
            return Ok(None);
        };
        // The filtered column, through an optional projection, to the Window node's output.
        let (projection, window, column) = match f.input.as_ref() {
            LogicalPlan::Window(w) => (None, w, column.clone()),
            LogicalPlan::Projection(p) => {
                let LogicalPlan::Window(w) = p.input.as_ref() else {
                    return Ok(None);
                };
                let Ok(i) = p.schema.index_of_column(column) else {
                    return Ok(None);
                };
                let inner = match &p.expr[i] {
                    Expr::Alias(a) => a.expr.as_ref(),
                    e => e,
                };
                let Expr::Column(c) = inner else {
                    return Ok(None);
                };
                (Some(p), w, c.clone())
            }
            _ => return Ok(None),
        };
        let [Expr::WindowFunction(wf)] = window.window_expr.as_slice() else {
            return Ok(None);
        };
        let is_row_number =
            matches!(&wf.fun, WindowFunctionDefinition::WindowUDF(u) if u.name() == "row_number");
        let rank_at = window.input.schema().fields().len();
        if !is_row_number || window.schema.index_of_column(&column).ok() != Some(rank_at) {
            return Ok(None);
        }
        let input = self.build(&window.input)?;
        let in_schema = window.input.schema();
        let node = TopNNode {
            order: self.sort_exprs(&wf.params.order_by, in_schema)?,
            partition_by: wf
                .params
                .partition_by
                .iter()
                .map(|e| self.physical(e, in_schema))
                .collect::<Result<_>>()?,
            offset: 0,
            limit: limit as usize,
            rank_column: true,
            input_updating: self.updating(input),
            input_schema: Arc::new(in_schema.as_arrow().clone()),
            schema: Arc::new(window.schema.as_arrow().clone()),
        };
        let time = self.time_of(input);
        let mut at = self.add(Arc::new(node), vec![input], time);
        if let Some(p) = projection {
            let exprs = p
                .expr
                .iter()
                .map(|e| self.physical(e, p.input.schema()))
                .collect::<Result<Vec<_>>>()?;
            let time = Self::projected_time(&exprs, self.time_of(at));
            let node = ProjectNode {
                exprs,
                schema: Arc::new(p.schema.as_arrow().clone()),
                updating: true,
            };
            at = self.add(Arc::new(node), vec![at], time);
        }
        // The top-N emits only rows within the bound; the filter states it in the plan.
        let node = FilterNode {
            predicate: self.physical(&f.predicate, f.input.schema())?,
            schema: Arc::new(f.input.schema().as_arrow().clone()),
            updating: true,
        };
        let time = self.time_of(at);
        Ok(Some(self.add(Arc::new(node), vec![at], time)))
    }

    fn over(&mut self, w: &datafusion::logical_expr::Window) -> Result<Endpoint> {
        if let Some(session) = self.session_window(w)? {
            return Ok(session);
        }
        let input = self.build(&w.input)?;
        let exprs = w
            .window_expr
            .iter()
            .map(|e| {
                Ok(datafusion::physical_planner::create_window_expr(
                    e,
                    w.input.schema(),
                    self.state.execution_props(),
                    &PhysicalPlanningContext::default(),
                )?)
            })
            .collect::<Result<Vec<_>>>()?;
        let partition_by = exprs
            .first()
            .map(|e| e.partition_by().to_vec())
            .unwrap_or_default();
        let same = |a: &[Arc<dyn PhysicalExpr>], b: &[Arc<dyn PhysicalExpr>]| {
            a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.to_string() == y.to_string())
        };
        if exprs.iter().any(|e| !same(e.partition_by(), &partition_by)) {
            return Err(refuse(
                "window functions with different PARTITION BY in one SELECT",
            ));
        }
        let node = brook_operators::over::OverNode {
            exprs,
            partition_by,
            input_schema: Arc::new(w.input.schema().as_arrow().clone()),
            schema: Arc::new(w.schema.as_arrow().clone()),
        };
        // The input's columns come first, unchanged.
        let time = self.time_of(input);
        Ok(self.add(Arc::new(node), vec![input], time))
    }

    /// `session_start`/`session_end` window functions (a `SESSION` table function) as the
    /// incremental SESSION operator; `None` for other window functions.
    fn session_window(&mut self, w: &datafusion::logical_expr::Window) -> Result<Option<Endpoint>> {
        use crate::session_window::{gap_micros, session_bound};
        use brook_operators::session_window::SessionNode;
        use datafusion::logical_expr::expr::{WindowFunction, WindowFunctionDefinition};
        let mut calls: Vec<(SessionBound, &WindowFunction)> = Vec::new();
        for e in &w.window_expr {
            let e = match e {
                Expr::Alias(a) => a.expr.as_ref(),
                other => other,
            };
            let bound = match e {
                Expr::WindowFunction(f) => match &f.fun {
                    WindowFunctionDefinition::WindowUDF(u) => {
                        session_bound(u.name()).map(|b| (b, f.as_ref()))
                    }
                    _ => None,
                },
                _ => None,
            };
            if let Some(b) = bound {
                calls.push(b);
            }
        }
        let Some((_, first)) = calls.first() else {
            return Ok(None);
        };
        let p = &first.params;
        if calls.len() != w.window_expr.len()
            || calls.iter().any(|(_, f)| {
                f.params.args != p.args
                    || f.params.partition_by != p.partition_by
                    || f.params.order_by != p.order_by
            })
        {
            return Err(refuse(
                "SESSION windows combined with other window functions in one SELECT",
            ));
        }
        let (Some(time), [sort]) = (p.args.first(), p.order_by.as_slice()) else {
            return Err(BrookError::internal("session function without time order"));
        };
        let gap = match p.args.get(1) {
            Some(Expr::Literal(v, _)) => gap_micros(v)?,
            _ => {
                return Err(BrookError::InvalidParameter(
                    "a session gap must be a constant interval".into(),
                ))
            }
        };
        if &sort.expr != time || !sort.asc {
            return Err(BrookError::internal(
                "session function ordered by another column",
            ));
        }
        let input = self.build(&w.input)?;
        if self.updating(input) {
            return Err(refuse(
                "SESSION windows over a relation that changes (a table or an updating result)",
            ));
        }
        let in_schema = w.input.schema();
        let time = self.physical(time, in_schema)?;
        let on_time = time
            .downcast_ref::<Column>()
            .is_some_and(|c| Some(c.index()) == self.time_of(input));
        if !on_time {
            return Err(refuse(
                "SESSION windows over a column other than the stream's WATERMARK FOR column \
                 (sessions close when the watermark passes them)",
            ));
        }
        let keys = p
            .partition_by
            .iter()
            .map(|k| self.physical(k, in_schema))
            .collect::<Result<Vec<_>>>()?;
        let node = SessionNode {
            time,
            keys,
            gap,
            bounds: calls.iter().map(|(b, _)| *b).collect(),
            emit_on_close: self.options.emit_on_window_close,
            input_schema: Arc::new(in_schema.as_arrow().clone()),
            schema: Arc::new(w.schema.as_arrow().clone()),
        };
        // The operator itself honours EMIT ON WINDOW CLOSE.
        self.windowed = true;
        let time = self.time_of(input);
        Ok(Some(self.add(Arc::new(node), vec![input], time)))
    }

    fn join(&mut self, j: &datafusion::logical_expr::Join) -> Result<Endpoint> {
        use datafusion::logical_expr::JoinType;
        let kind = match j.join_type {
            JoinType::Inner => JoinKind::Inner,
            JoinType::LeftSemi => JoinKind::Semi(0),
            JoinType::RightSemi => JoinKind::Semi(1),
            JoinType::Left => JoinKind::Outer(0),
            JoinType::Right => JoinKind::Outer(1),
            JoinType::Full => JoinKind::Full,
            JoinType::LeftAnti => JoinKind::Anti(0),
            JoinType::RightAnti => JoinKind::Anti(1),
            other => {
                return Err(refuse(&format!(
                    "{} JOIN",
                    other.to_string().to_uppercase()
                )))
            }
        };
        // NOT IN: the operator keeps the NULL rule for one key; correlated forms bring an
        // extra condition the rule would have to apply per pair.
        if j.null_aware && (j.on.len() != 1 || j.filter.is_some() || kind != JoinKind::Anti(0)) {
            return Err(refuse(
                "NOT IN (correlated subquery) (write NOT EXISTS, which has no NULL special case)",
            ));
        }
        let left = self.build(&j.left)?;
        let right = self.build(&j.right)?;
        let ends = [left, right];
        let updating = [self.updating(left), self.updating(right)];
        // An append-only side whose partners' event time the condition bounds leaves the
        // state once the watermark passes that bound.
        let mut bounds = [None, None];
        for side in 0..2 {
            if !updating[side] {
                bounds[side] = self.time_bound(j, side, ends, updating[1 - side])?;
            }
        }
        if !updating[0] && !updating[1] {
            if j.null_aware {
                return Err(refuse(
                    "NOT IN (subquery) between two streams (write NOT EXISTS with a time bound)",
                ));
            }
            if bounds.iter().any(Option::is_none) {
                return Err(BrookError::unsupported(
                    "a join of two streams without a time bound on both sides in a continuous \
                     query (its state would grow without bound): add a condition such as \
                     b.ts BETWEEN a.ts AND a.ts + INTERVAL '1 hour' over the streams' \
                     WATERMARK columns, join a stream with a table, or aggregate a side first",
                ));
            }
        }
        let (ls, rs) = (j.left.schema(), j.right.schema());
        let (mut left_keys, mut right_keys) = (Vec::new(), Vec::new());
        for (l, r) in &j.on {
            left_keys.push(self.physical(l, ls)?);
            right_keys.push(self.physical(r, rs)?);
        }
        if left_keys.is_empty() {
            // A cross join: every row shares the one key.
            let t: Expr = datafusion::logical_expr::lit(true);
            left_keys.push(self.physical(&t, ls)?);
            right_keys.push(self.physical(&t, rs)?);
        }
        // The extra condition reads a pair: left columns, then right columns.
        let pair_schema = ls.join(rs)?;
        let filter = match &j.filter {
            Some(f) => Some(self.physical(f, &pair_schema)?),
            None => None,
        };
        let node = JoinNode {
            kind,
            left_keys,
            right_keys,
            filter,
            left_schema: Arc::new(ls.as_arrow().clone()),
            right_schema: Arc::new(rs.as_arrow().clone()),
            schema: Arc::new(j.schema.as_arrow().clone()),
            // Two streams have a time bound each (checked above): an outer or anti join of
            // them emits its unmatched rows once they expire, so its output is append-only.
            updating: updating[0] || updating[1],
            inputs_updating: updating,
            bounds,
            nulls_equal: j.null_equality == datafusion::common::NullEquality::NullEqualsNull,
            null_aware: j.null_aware,
        };
        Ok(self.add(Arc::new(node), vec![left, right], None))
    }

    /// How `j`'s condition bounds `side` (0 left, 1 right) in event time: a conjunct
    /// `other.t <= e` (`<`, `BETWEEN .. AND e`, `=`, with `other.t ± interval` moved across)
    /// where `other.t` is the other side's event-time column and `e` reads only this side.
    fn time_bound(
        &self,
        j: &datafusion::logical_expr::Join,
        side: usize,
        ends: [Endpoint; 2],
        partner_updating: bool,
    ) -> Result<Option<TimeBound>> {
        use datafusion::logical_expr::{BinaryExpr, Operator};
        let other = 1 - side;
        let Some(t) = self.time_of(ends[other]) else {
            return Ok(None);
        };
        let schemas = [j.left.schema(), j.right.schema()];
        let (mine, theirs) = (schemas[side], schemas[other]);
        // Each conjunct as `a <= b` pairs.
        let mut le: Vec<(Expr, Expr)> = Vec::new();
        for (l, r) in &j.on {
            le.push((l.clone(), r.clone()));
            le.push((r.clone(), l.clone()));
        }
        if let Some(f) = &j.filter {
            for c in datafusion::logical_expr::utils::split_conjunction(f) {
                match c {
                    Expr::BinaryExpr(BinaryExpr { left, op, right }) => match op {
                        Operator::Lt | Operator::LtEq => {
                            le.push((left.as_ref().clone(), right.as_ref().clone()))
                        }
                        Operator::Gt | Operator::GtEq => {
                            le.push((right.as_ref().clone(), left.as_ref().clone()))
                        }
                        Operator::Eq => {
                            le.push((left.as_ref().clone(), right.as_ref().clone()));
                            le.push((right.as_ref().clone(), left.as_ref().clone()));
                        }
                        _ => {}
                    },
                    Expr::Between(b) if !b.negated => {
                        le.push((b.low.as_ref().clone(), b.expr.as_ref().clone()));
                        le.push((b.expr.as_ref().clone(), b.high.as_ref().clone()));
                    }
                    _ => {}
                }
            }
        }
        let reads_only =
            |e: &Expr, schema: &DFSchema| e.column_refs().iter().all(|c| schema.has_column(c));
        for (mut a, mut b) in le {
            // `other.t ± k <= b` is `other.t <= b ∓ k` for a constant k.
            while let Expr::BinaryExpr(BinaryExpr { left, op, right }) = &a {
                let inverse = match op {
                    Operator::Plus => Operator::Minus,
                    Operator::Minus => Operator::Plus,
                    _ => break,
                };
                if !right.column_refs().is_empty() {
                    break;
                }
                b = Expr::BinaryExpr(BinaryExpr::new(Box::new(b), inverse, right.clone()));
                a = left.as_ref().clone();
            }
            let Expr::Column(c) = &a else { continue };
            if mine.has_column(c) || theirs.index_of_column(c).ok() != Some(t) {
                continue;
            }
            if b.column_refs().is_empty() || !reads_only(&b, mine) {
                continue;
            }
            let Ok(DataType::Timestamp(_, _)) = b.get_type(mine) else {
                continue;
            };
            return Ok(Some(TimeBound {
                expiry: self.physical(&b, mine)?,
                partner_time: self.physical(&a, theirs)?,
                partner_updating,
            }));
        }
        Ok(None)
    }

    fn aggregate(&mut self, a: &datafusion::logical_expr::Aggregate) -> Result<Endpoint> {
        if a.group_expr
            .iter()
            .any(|e| matches!(e, Expr::GroupingSet(_)))
        {
            return Err(refuse("GROUPING SETS, CUBE or ROLLUP"));
        }
        let input = self.build(&a.input)?;
        let in_schema = a.input.schema();
        let group_exprs = a
            .group_expr
            .iter()
            .map(|e| self.physical(e, in_schema))
            .collect::<Result<Vec<_>>>()?;
        let mut aggs = Vec::with_capacity(a.aggr_expr.len());
        for e in &a.aggr_expr {
            let lowered = LoweredAggregateBuilder::new(
                e,
                in_schema,
                in_schema.as_arrow(),
                self.state.execution_props(),
                &PhysicalPlanningContext::default(),
            )
            .build()?;
            aggs.push(AggregateCall {
                expr: lowered.aggregate,
                filter: lowered.filter,
            });
        }
        let schema: SchemaRef = Arc::new(a.schema.as_arrow().clone());
        // A key named window_end of timestamp type is the end of a TUMBLE/HOP window.
        let end_key = schema
            .fields()
            .iter()
            .take(group_exprs.len())
            .position(|f| {
                f.name() == "window_end" && matches!(f.data_type(), DataType::Timestamp(_, _))
            });
        let window = end_key.map(|end_key| WindowClose {
            end_key,
            emit_on_close: self.options.emit_on_window_close,
        });
        self.windowed |= window.is_some();
        let node = AggregateNode {
            group_exprs,
            aggs,
            schema,
            input_updating: self.updating(input),
            window,
        };
        node.validate()?;
        Ok(self.add(Arc::new(node), vec![input], end_key))
    }
}

/// `ts ± INTERVAL '..'` with an interval of whole microseconds and no months or days (a
/// watermark's delay, `ts - INTERVAL '4 seconds'`) as `ts ± ` an Arrow duration: the same
/// values, by one integer operation per row where an interval goes through calendar
/// arithmetic per row (a twentieth of a Nexmark stream's ingestion in a profile). Months
/// and days vary in length (days across a time zone's changes), so they stay intervals.
fn fixed_intervals_as_durations(e: Expr) -> Result<Expr> {
    use datafusion::common::tree_node::{Transformed, TreeNode};
    use datafusion::common::ScalarValue;
    use datafusion::logical_expr::{BinaryExpr, Operator};
    let rewritten = e.transform_up(|e| {
        let Expr::BinaryExpr(BinaryExpr { left, op, right }) = &e else {
            return Ok(Transformed::no(e));
        };
        let Expr::Literal(ScalarValue::IntervalMonthDayNano(Some(v)), _) = right.as_ref() else {
            return Ok(Transformed::no(e));
        };
        if !matches!(op, Operator::Plus | Operator::Minus)
            || v.months != 0
            || v.days != 0
            || v.nanoseconds % 1000 != 0
        {
            return Ok(Transformed::no(e));
        }
        let micros = ScalarValue::DurationMicrosecond(Some(v.nanoseconds / 1000));
        Ok(Transformed::yes(Expr::BinaryExpr(BinaryExpr {
            left: left.clone(),
            op: *op,
            right: Box::new(Expr::Literal(micros, None)),
        })))
    })?;
    Ok(rewritten.data)
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::arrow::array::{ArrayRef, TimestampMicrosecondArray};
    use datafusion::arrow::datatypes::{Field, Schema, TimeUnit};
    use datafusion::arrow::record_batch::RecordBatch;
    use datafusion::common::ScalarValue;
    use datafusion::logical_expr::{col, lit};
    use datafusion::prelude::SessionContext;

    fn interval(months: i32, days: i32, nanoseconds: i64) -> Expr {
        lit(ScalarValue::IntervalMonthDayNano(Some(
            datafusion::arrow::datatypes::IntervalMonthDayNano {
                months,
                days,
                nanoseconds,
            },
        )))
    }

    /// Each expression's values over a column of timestamps.
    fn values(e: &Expr) -> ArrayRef {
        let schema = Schema::new(vec![Field::new(
            "ts",
            DataType::Timestamp(TimeUnit::Microsecond, None),
            true,
        )]);
        let ts: ArrayRef = Arc::new(TimestampMicrosecondArray::from(vec![
            Some(1_767_225_600_000_000),
            None,
            Some(-1),
        ]));
        let batch = RecordBatch::try_new(Arc::new(schema.clone()), vec![ts]).unwrap();
        let df_schema = DFSchema::try_from(schema).unwrap();
        let state = SessionContext::new().state();
        let physical = create_physical_expr(
            e,
            &df_schema,
            state.execution_props(),
            &PhysicalPlanningContext::default(),
        )
        .unwrap();
        physical.evaluate(&batch).unwrap().into_array(3).unwrap()
    }

    #[test]
    fn a_fixed_delay_becomes_a_duration_with_the_same_values() {
        for e in [
            col("ts") - interval(0, 0, 4_000_000_000),
            col("ts") + interval(0, 0, 1_500_000),
        ] {
            let fast = fixed_intervals_as_durations(e.clone()).unwrap();
            assert!(fast.to_string().contains("DurationMicrosecond"), "{fast}");
            assert_eq!(values(&fast).as_ref(), values(&e).as_ref(), "{e}");
        }
    }

    #[test]
    fn months_days_and_nanoseconds_stay_intervals() {
        for e in [
            col("ts") - interval(1, 0, 0),
            col("ts") - interval(0, 1, 0),
            col("ts") - interval(0, 0, 1),
        ] {
            assert_eq!(fixed_intervals_as_durations(e.clone()).unwrap(), e);
        }
    }
}
