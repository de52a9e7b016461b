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
use brook_operators::join::{JoinKind, JoinNode};
use brook_operators::project::ProjectNode;
use brook_operators::source::SourceSpec;
use brook_operators::union::UnionNode;
use brook_operators::NodeSpec;
use datafusion::arrow::datatypes::{DataType, SchemaRef};
use datafusion::common::{DFSchema, TableReference};
use datafusion::execution::context::SessionState;
use datafusion::logical_expr::physical_planning_context::PhysicalPlanningContext;
use datafusion::logical_expr::{Expr, LogicalPlan, TableSource};
use datafusion::physical_expr::aggregate::LoweredAggregateBuilder;
use datafusion::physical_expr::expressions::Column;
use datafusion::physical_expr::{create_physical_expr, PhysicalExpr};
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
}

/// The server's catalog, as the planner sees it.
pub trait SourceResolver {
    /// Facts about the relation a scan reads.
    fn resolve(&self, table: &TableReference, source: &Arc<dyn TableSource>)
        -> Result<SourceFacts>;
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
    /// A windowed aggregate was planned.
    windowed: bool,
}

fn refuse(what: &str) -> BrookError {
    BrookError::unsupported(format!("{what} in a continuous query (over a stream)"))
}

impl Builder<'_> {
    fn add(&mut self, spec: Arc<dyn NodeSpec>, inputs: Vec<Endpoint>) -> Endpoint {
        self.nodes.push(PlanNode { spec, inputs });
        Endpoint::Node(self.nodes.len() - 1)
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
                // One source per relation, however often the query scans it (a self-union
                // or HOP's one branch per window): its log is read once.
                let name = scan.table_name.to_string();
                let source = match self.sources.iter().position(|s| s.relation == name) {
                    Some(i) => i,
                    None => {
                        let facts = self.resolver.resolve(&scan.table_name, &scan.source)?;
                        let watermark = match &facts.watermark {
                            Some(w) => {
                                let schema =
                                    DFSchema::try_from(facts.table_schema.as_ref().clone())?;
                                Some(self.physical(w, &schema)?)
                            }
                            None => None,
                        };
                        self.sources.push(SourceSpec {
                            relation: name,
                            projection: None,
                            schema: facts.table_schema.clone(),
                            table_schema: facts.table_schema,
                            watermark,
                            watermark_sql: facts.watermark_sql,
                            updating: facts.updating,
                        });
                        self.sources.len() - 1
                    }
                };
                let at = Endpoint::Source(source);
                let table_schema = self.sources[source].table_schema.clone();
                let Some(projection) = &scan.projection else {
                    return Ok(at);
                };
                if projection
                    .iter()
                    .copied()
                    .eq(0..table_schema.fields().len())
                {
                    return Ok(at);
                }
                // The scan's columns: a projection of plain column references.
                let exprs = projection
                    .iter()
                    .map(|&i| {
                        let e: Arc<dyn PhysicalExpr> =
                            Arc::new(Column::new(table_schema.field(i).name(), i));
                        e
                    })
                    .collect();
                let node = ProjectNode {
                    exprs,
                    schema: Arc::new(scan.projected_schema.as_arrow().clone()),
                    updating: self.sources[source].updating,
                };
                Ok(self.add(Arc::new(node), vec![at]))
            }
            LogicalPlan::Projection(p) => {
                let input = self.build(&p.input)?;
                let exprs = p
                    .expr
                    .iter()
                    .map(|e| self.physical(e, p.input.schema()))
                    .collect::<Result<Vec<_>>>()?;
                let updating = self.updating(input);
                let node = ProjectNode {
                    exprs,
                    schema: Arc::new(p.schema.as_arrow().clone()),
                    updating,
                };
                Ok(self.add(Arc::new(node), vec![input]))
            }
            LogicalPlan::Filter(f) => {
                let input = self.build(&f.input)?;
                let node = FilterNode {
                    predicate: self.physical(&f.predicate, f.input.schema())?,
                    schema: Arc::new(f.input.schema().as_arrow().clone()),
                    updating: self.updating(input),
                };
                Ok(self.add(Arc::new(node), vec![input]))
            }
            LogicalPlan::SubqueryAlias(s) => self.build(&s.input),
            LogicalPlan::Union(u) => {
                let inputs = u
                    .inputs
                    .iter()
                    .map(|i| self.build(i))
                    .collect::<Result<Vec<_>>>()?;
                let updating = inputs.iter().any(|i| self.updating(*i));
                let node = UnionNode {
                    schema: Arc::new(u.schema.as_arrow().clone()),
                    updating,
                };
                Ok(self.add(Arc::new(node), inputs))
            }
            LogicalPlan::Aggregate(a) => self.aggregate(a),
            LogicalPlan::Sort(_) => Err(BrookError::unsupported(
                "ORDER BY in a continuous query (over a stream, results arrive as they \
                 change: sort what FETCH returns, or use a window)",
            )),
            LogicalPlan::Limit(_) => Err(refuse("LIMIT")),
            LogicalPlan::Join(j) => self.join(j),
            LogicalPlan::Window(w) => self.over(w),
            LogicalPlan::EmptyRelation(_) | LogicalPlan::Values(_) => {
                Err(refuse("a constant relation (VALUES or no FROM)"))
            }
            other => Err(refuse(&format!("{} node", other.display()))),
        }
    }

    fn over(&mut self, w: &datafusion::logical_expr::Window) -> Result<Endpoint> {
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
        Ok(self.add(Arc::new(node), vec![input]))
    }

    fn join(&mut self, j: &datafusion::logical_expr::Join) -> Result<Endpoint> {
        use datafusion::logical_expr::JoinType;
        let kind = match j.join_type {
            JoinType::Inner => JoinKind::Inner,
            JoinType::LeftSemi => JoinKind::Semi(0),
            JoinType::RightSemi => JoinKind::Semi(1),
            JoinType::Left => JoinKind::Outer(0),
            JoinType::Right => JoinKind::Outer(1),
            other => {
                return Err(refuse(&format!(
                    "{} JOIN",
                    other.to_string().to_uppercase()
                )))
            }
        };
        let left = self.build(&j.left)?;
        let right = self.build(&j.right)?;
        if !self.updating(left) && !self.updating(right) {
            return Err(BrookError::unsupported(
                "a join of two streams without a time bound in a continuous query (its state \
                 would grow without bound; join a stream with a table, or aggregate a side first)",
            ));
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
            updating: true,
        };
        Ok(self.add(Arc::new(node), vec![left, right]))
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
        Ok(self.add(Arc::new(node), vec![input]))
    }
}
