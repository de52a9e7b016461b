//! `WITH RECURSIVE`: the recursive term planned as the body of a [`RecursiveNode`], which
//! iterates it to a fixpoint on every change (see `brook_operators::recursive`).
//!
//! The recursive term is built like any plan, with its reference to the working table as a
//! placeholder node; the nodes that depend on the placeholder then move into the body, and
//! the edges that enter them from the rest of the plan (the other relations the term reads,
//! computed once, outside the loop) become the recursive node's ports `1..`.

use super::*;
use brook_operators::recursive::{RecursiveNode, WorkTableNode, MAX_ROUNDS};
use datafusion::datasource::cte_worktable::CteWorkTable;
use datafusion::datasource::source_as_provider;
use datafusion::logical_expr::{JoinType, RecursiveQuery, TableScan};

impl Builder<'_> {
    pub(super) fn recursive(&mut self, r: &RecursiveQuery) -> Result<Endpoint> {
        if r.is_distinct {
            return Err(refuse(
                "WITH RECURSIVE with UNION (without ALL) (a row kept once however often it \
                 is derived cannot be retracted incrementally; write UNION ALL over \
                 acyclic data)",
            ));
        }
        check_linear(&r.recursive_term, &r.name)?;
        let schema: SchemaRef = Arc::new(r.schema.as_arrow().clone());
        for (term, plan) in [
            ("non-recursive", &r.static_term),
            ("recursive", &r.recursive_term),
        ] {
            let types = plan.schema().fields().iter().map(|f| f.data_type());
            if !types.eq(schema.fields().iter().map(|f| f.data_type())) {
                return Err(refuse(&format!(
                    "WITH RECURSIVE whose {term} term's column types differ from the \
                     query's (cast them to the same types)"
                )));
            }
        }
        let base = self.build(&r.static_term)?;
        let first = self.nodes.len();
        let placeholder = WorkTableNode {
            name: r.name.clone(),
            schema: schema.clone(),
        };
        let work = self.add(Arc::new(placeholder), Vec::new(), None);
        let saved = self.work_table.replace((r.name.clone(), work));
        let body = self.build(&r.recursive_term);
        self.work_table = saved;
        let body = body?;
        self.lift_body(first, base, body, &r.name, schema)
    }

    /// A scan of the working table of the recursive term being built: its placeholder
    /// node; `None` for other scans.
    pub(super) fn work_table_scan(&mut self, scan: &TableScan) -> Result<Option<Endpoint>> {
        let is_work_table = source_as_provider(&scan.source)
            .ok()
            .is_some_and(|p| p.is::<CteWorkTable>());
        if !is_work_table {
            return Ok(None);
        }
        let Some((name, at)) = self.work_table.clone() else {
            return Err(brook_err!(
                Internal,
                "working table {} scanned outside its recursive term",
                scan.table_name
            ));
        };
        if scan.table_name.table() != name {
            return Err(refuse(
                "a recursive query nested in another's recursive term",
            ));
        }
        let width = scan.source.schema().fields().len();
        match &scan.projection {
            Some(p) if !p.iter().copied().eq(0..width) => Ok(Some(self.scan_columns(scan, at)?)),
            _ => Ok(Some(at)),
        }
    }

    /// Move the nodes built since `first` (the placeholder at `first`) that depend on the
    /// placeholder into a recursive node's body; the others stay in the plan.
    fn lift_body(
        &mut self,
        first: usize,
        base: Endpoint,
        body: Endpoint,
        name: &str,
        schema: SchemaRef,
    ) -> Result<Endpoint> {
        let built: Vec<PlanNode> = self.nodes.drain(first..).collect();
        let times: Vec<EventTimes> = self.node_times.drain(first..).collect();
        // Nodes are in topological order, so one pass finds every dependent.
        let mut in_body = vec![false; built.len()];
        in_body[0] = true;
        for (i, node) in built.iter().enumerate().skip(1) {
            in_body[i] = node
                .inputs
                .iter()
                .any(|e| matches!(e, Endpoint::Node(m) if *m >= first && in_body[*m - first]));
        }
        let mut outer_at: Vec<Option<usize>> = vec![None; built.len()];
        let mut inner_at: Vec<Option<usize>> = vec![None; built.len()];
        let mut ports: Vec<Endpoint> = vec![base];
        let mut body_nodes: Vec<PlanNode> = Vec::new();
        let outer = |e: Endpoint, outer_at: &[Option<usize>]| -> Result<Endpoint> {
            match e {
                Endpoint::Node(m) if m >= first => outer_at[m - first]
                    .map(Endpoint::Node)
                    .ok_or_else(|| brook_err!(Internal, "recursive plan out of order")),
                other => Ok(other),
            }
        };
        for (i, (node, time)) in built.into_iter().zip(times).enumerate().skip(1) {
            if !in_body[i] {
                let inputs = node
                    .inputs
                    .iter()
                    .map(|e| outer(*e, &outer_at))
                    .collect::<Result<Vec<_>>>()?;
                self.nodes.push(PlanNode {
                    spec: node.spec,
                    inputs,
                });
                self.node_times.push(time);
                outer_at[i] = Some(self.nodes.len() - 1);
                continue;
            }
            let mut inputs = Vec::with_capacity(node.inputs.len());
            for e in &node.inputs {
                inputs.push(match *e {
                    Endpoint::Node(m) if m >= first && in_body[m - first] => {
                        inner(m - first, &inner_at)?
                    }
                    other => {
                        let at = outer(other, &outer_at)?;
                        // Port 0 is the base term's: a body input always gets a port of
                        // its own, shared only with other body inputs of the same endpoint.
                        let p = match ports.iter().skip(1).position(|x| *x == at) {
                            Some(p) => p + 1,
                            None => {
                                ports.push(at);
                                ports.len() - 1
                            }
                        };
                        Endpoint::Source(p)
                    }
                });
            }
            inner_at[i] = Some(body_nodes.len());
            body_nodes.push(PlanNode {
                spec: node.spec,
                inputs,
            });
        }
        let body_root = match body {
            Endpoint::Node(m) if m >= first && in_body[m - first] => inner(m - first, &inner_at)?,
            _ => {
                return Err(brook_err!(
                    Internal,
                    "recursive term of {name} does not read its working table"
                ))
            }
        };
        let node = RecursiveNode {
            name: name.to_string(),
            schema,
            body: body_nodes,
            body_root,
            max_rounds: MAX_ROUNDS,
        };
        Ok(self.add(Arc::new(node), ports, None))
    }
}

/// The body endpoint of built node `i` (relative to the placeholder, which is input 0).
fn inner(i: usize, inner_at: &[Option<usize>]) -> Result<Endpoint> {
    if i == 0 {
        return Ok(Endpoint::Source(0));
    }
    inner_at[i]
        .map(Endpoint::Node)
        .ok_or_else(|| brook_err!(Internal, "recursive plan out of order"))
}

/// Whether `plan` reads the working table `name`.
fn reads_work_table(plan: &LogicalPlan, name: &str) -> bool {
    if let LogicalPlan::TableScan(scan) = plan {
        let is_work_table = source_as_provider(&scan.source)
            .ok()
            .is_some_and(|p| p.is::<CteWorkTable>());
        return is_work_table && scan.table_name.table() == name;
    }
    plan.inputs().iter().any(|i| reads_work_table(i, name))
}

/// Refuse a recursive term that is not linear in its working table: the incremental
/// fixpoint feeds each change of the result through the term on its own, which equals
/// PostgreSQL's round-by-round evaluation only when the term distributes over a sum of
/// working tables.
fn check_linear(plan: &LogicalPlan, name: &str) -> Result<()> {
    if !reads_work_table(plan, name) {
        return Ok(());
    }
    let nonlinear = |what: &str| {
        refuse(&format!(
            "{what} over the recursive reference to {name} (a continuous recursive term may \
             only filter, project, unnest, union and join it with other relations)"
        ))
    };
    match plan {
        LogicalPlan::TableScan(_) => Ok(()),
        LogicalPlan::Projection(_)
        | LogicalPlan::Filter(_)
        | LogicalPlan::SubqueryAlias(_)
        | LogicalPlan::Union(_)
        | LogicalPlan::Unnest(_) => {
            for input in plan.inputs() {
                check_linear(input, name)?;
            }
            Ok(())
        }
        LogicalPlan::Join(j) => {
            let sides = [
                reads_work_table(&j.left, name),
                reads_work_table(&j.right, name),
            ];
            if sides[0] && sides[1] {
                return Err(nonlinear("a join of the recursive reference with itself"));
            }
            let side = usize::from(sides[1]);
            // The side holding the reference must be kept row by row: each of its rows
            // yields its own output, whatever the other side's rows are.
            let per_row = match j.join_type {
                JoinType::Inner => true,
                JoinType::Left | JoinType::LeftSemi | JoinType::LeftAnti => side == 0,
                JoinType::Right | JoinType::RightSemi | JoinType::RightAnti => side == 1,
                _ => false,
            };
            if !per_row {
                return Err(nonlinear(&format!(
                    "{} JOIN with the reference on its other side",
                    j.join_type.to_string().to_uppercase()
                )));
            }
            check_linear(if side == 0 { &j.left } else { &j.right }, name)
        }
        // DISTINCT is planned as a grouping without aggregates.
        LogicalPlan::Aggregate(a) if a.aggr_expr.is_empty() => Err(nonlinear("DISTINCT")),
        LogicalPlan::Aggregate(_) => Err(nonlinear("an aggregate")),
        LogicalPlan::Window(_) => Err(nonlinear("a window function")),
        LogicalPlan::Distinct(_) => Err(nonlinear("DISTINCT")),
        LogicalPlan::Sort(_) | LogicalPlan::Limit(_) => Err(nonlinear("ORDER BY or LIMIT")),
        other => Err(nonlinear(&format!("{} node", other.display()))),
    }
}
