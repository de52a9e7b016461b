//! A continuous plan as a graph of nodes, and the runtime that pushes data through it.
//!
//! Nodes are stored in topological order (every input of node `i` is a source or a node
//! before `i`), so a watermark sweep visits nodes in index order and a node sees the
//! watermark only after all its inputs did. A node's watermark is the minimum of its inputs'.

use crate::source::{SourceSpec, SourceState};
use crate::{change, NodeSpec, Operator};
use brook_common::{brook_err, Result};
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::arrow::record_batch::RecordBatch;
use std::fmt::Write as _;
use std::sync::Arc;

/// Where a node reads from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Endpoint {
    /// A source, by index into [`GraphPlan::sources`].
    Source(usize),
    /// A node, by index into [`GraphPlan::nodes`].
    Node(usize),
}

/// A node and its inputs (in port order).
pub struct PlanNode {
    /// What the node computes.
    pub spec: Arc<dyn NodeSpec>,
    /// Its inputs; port `i` is `inputs[i]`.
    pub inputs: Vec<Endpoint>,
}

/// A continuous plan: sources, nodes in topological order, and the endpoint of the result.
pub struct GraphPlan {
    /// Relations the plan reads.
    pub sources: Vec<SourceSpec>,
    /// Operators.
    pub nodes: Vec<PlanNode>,
    /// The result.
    pub root: Endpoint,
}

impl GraphPlan {
    /// Schema of the result (without change kind).
    pub fn schema(&self) -> SchemaRef {
        match self.root {
            Endpoint::Source(s) => self.sources[s].schema.clone(),
            Endpoint::Node(n) => self.nodes[n].spec.schema(),
        }
    }

    /// True when the result retracts rows (an updating result carrying the change kind).
    pub fn updating(&self) -> bool {
        match self.root {
            Endpoint::Source(s) => self.sources[s].updating,
            Endpoint::Node(n) => self.nodes[n].spec.updating(),
        }
    }

    /// True when every node's output is independent of how the input is cut into batches
    /// (see [`NodeSpec::cut_invariant`]).
    pub fn cut_invariant(&self) -> bool {
        self.nodes.iter().all(|n| n.spec.cut_invariant())
    }

    /// An indented tree, root first (EXPLAIN).
    pub fn explain(&self) -> String {
        let mut out = String::new();
        self.explain_at(self.root, 0, &mut out);
        sql_intervals(&out)
    }

    fn explain_at(&self, at: Endpoint, depth: usize, out: &mut String) {
        let pad = "  ".repeat(depth);
        match at {
            Endpoint::Source(s) => {
                let _ = writeln!(out, "{pad}{}", self.sources[s]);
            }
            Endpoint::Node(n) => {
                let _ = writeln!(out, "{pad}{}", self.nodes[n].spec);
                for i in &self.nodes[n].inputs {
                    self.explain_at(*i, depth + 1, out);
                }
            }
        }
    }
}

/// Interval constants as SQL (`INTERVAL '00:00:10'`, PostgreSQL's output style) instead of
/// the debug form DataFusion's expressions print them in.
fn sql_intervals(text: &str) -> String {
    const OPEN: &str = "IntervalMonthDayNano { months: ";
    const QUOTED: &str = "IntervalMonthDayNano(\"";
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find(OPEN) {
        out.push_str(&rest[..at]);
        let after = &rest[at + OPEN.len()..];
        let parsed = after.find(" }").and_then(|end| {
            let mut fields = after[..end].split(", ");
            let months = fields.next()?.parse::<i64>().ok()?;
            let days = fields.next()?.strip_prefix("days: ")?.parse::<i64>().ok()?;
            let nanos = fields
                .next()?
                .strip_prefix("nanoseconds: ")?
                .parse::<i64>()
                .ok()?;
            let mut shown = String::new();
            brook_common::types::format_interval(
                datafusion::arrow::datatypes::IntervalMonthDayNano::new(
                    i32::try_from(months).ok()?,
                    i32::try_from(days).ok()?,
                    nanos,
                ),
                &mut shown,
            );
            Some((shown, end + 2))
        });
        match parsed {
            Some((shown, used)) => {
                // A column named after a logical expression quotes the constant inside the
                // type's name: `IntervalMonthDayNano("<debug form>")`; drop that wrapper.
                let mut rest_after = &after[used..];
                if out.ends_with(QUOTED) && rest_after.starts_with("\")") {
                    out.truncate(out.len() - QUOTED.len());
                    rest_after = &rest_after[2..];
                }
                out.push_str(&format!("INTERVAL '{shown}'"));
                rest = rest_after;
            }
            None => {
                out.push_str(OPEN);
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

/// Statistics of a running graph.
#[derive(Debug, Clone, Default)]
pub struct GraphStats {
    /// Bytes of operator state.
    pub state_bytes: usize,
    /// Rows dropped as late.
    pub late_rows: u64,
    /// Lowest watermark over the sources, if every source has one.
    pub watermark: Option<i64>,
}

/// How a runtime's nodes are wired: the (node, port) pairs each input and each node feeds.
/// Shared by the graph and by the recursive operator's body, which push batches the same
/// way.
pub(crate) struct Wiring {
    /// Consumers of each input.
    pub(crate) sources: Vec<Vec<(usize, usize)>>,
    /// Consumers of each node.
    pub(crate) nodes: Vec<Vec<(usize, usize)>>,
}

impl Wiring {
    /// The wiring of `nodes` over `sources` inputs; fails when `nodes` are not in
    /// topological order.
    pub(crate) fn new(nodes: &[PlanNode], sources: usize) -> Result<Wiring> {
        let mut wiring = Wiring {
            sources: vec![Vec::new(); sources],
            nodes: vec![Vec::new(); nodes.len()],
        };
        for (n, node) in nodes.iter().enumerate() {
            for (port, input) in node.inputs.iter().enumerate() {
                match *input {
                    Endpoint::Source(s) if s < sources => wiring.sources[s].push((n, port)),
                    Endpoint::Node(m) if m < n => wiring.nodes[m].push((n, port)),
                    _ => {
                        return Err(brook_err!(
                            Internal,
                            "continuous plan is not in topological order"
                        ))
                    }
                }
            }
        }
        Ok(wiring)
    }

    /// Push `batches`, emitted at `from`, through the operators downstream (depth first);
    /// what reaches `root` is collected into `out`.
    pub(crate) fn deliver(
        &self,
        ops: &mut [Box<dyn Operator>],
        root: Endpoint,
        from: Endpoint,
        batches: Vec<RecordBatch>,
        out: &mut Vec<RecordBatch>,
    ) -> Result<()> {
        if batches.is_empty() {
            return Ok(());
        }
        if from == root {
            out.extend(batches.iter().cloned());
        }
        let consumers = match from {
            Endpoint::Source(s) => &self.sources[s],
            Endpoint::Node(n) => &self.nodes[n],
        };
        for &(node, port) in consumers {
            for b in &batches {
                let produced = ops[node].on_data(port, b.clone())?;
                self.deliver(ops, root, Endpoint::Node(node), produced, out)?;
            }
        }
        Ok(())
    }
}

/// A running continuous plan.
pub struct Graph {
    plan: Arc<GraphPlan>,
    sources: Vec<SourceState>,
    ops: Vec<Box<dyn Operator>>,
    /// Who consumes each source's and each node's batches.
    wiring: Wiring,
    /// Watermark seen on each port of each node.
    port_watermarks: Vec<Vec<Option<i64>>>,
    /// Watermark each node passed on.
    node_watermarks: Vec<Option<i64>>,
}

impl Graph {
    /// Instantiate a plan; returns the graph and the rows it emits before any input.
    pub fn new(plan: Arc<GraphPlan>) -> Result<(Graph, Vec<RecordBatch>)> {
        let wiring = Wiring::new(&plan.nodes, plan.sources.len())?;
        let ops = plan
            .nodes
            .iter()
            .map(|n| n.spec.instantiate())
            .collect::<Result<Vec<_>>>()?;
        let mut graph = Graph {
            sources: plan.sources.iter().cloned().map(SourceState::new).collect(),
            port_watermarks: plan
                .nodes
                .iter()
                .map(|n| vec![None; n.inputs.len()])
                .collect(),
            node_watermarks: vec![None; plan.nodes.len()],
            plan,
            ops,
            wiring,
        };
        let mut out = Vec::new();
        for n in 0..graph.ops.len() {
            let first = graph.ops[n].on_start()?;
            graph.emit(Endpoint::Node(n), first, &mut out)?;
        }
        Ok((graph, out))
    }

    /// The plan this graph runs.
    pub fn plan(&self) -> &Arc<GraphPlan> {
        &self.plan
    }

    /// Push rows of source `source` (its full table schema, no change kind) with change
    /// `kind`; returns the result rows this produced (with the change-kind column).
    pub fn push(&mut self, source: usize, raw: &RecordBatch, kind: i8) -> Result<Vec<RecordBatch>> {
        let state = self
            .sources
            .get_mut(source)
            .ok_or_else(|| brook_err!(Internal, "no such source in continuous plan"))?;
        let (batch, moved) = state.ingest(raw, kind)?;
        let mut out = Vec::new();
        if batch.num_rows() > 0 {
            self.emit(Endpoint::Source(source), vec![batch], &mut out)?;
        }
        if let Some(wm) = moved {
            self.advance(source, wm, &mut out)?;
        }
        Ok(out)
    }

    fn emit(
        &mut self,
        from: Endpoint,
        batches: Vec<RecordBatch>,
        out: &mut Vec<RecordBatch>,
    ) -> Result<()> {
        self.wiring
            .deliver(&mut self.ops, self.plan.root, from, batches, out)
    }

    /// Propagate source `source`'s new watermark through the nodes in topological order.
    fn advance(&mut self, source: usize, wm: i64, out: &mut Vec<RecordBatch>) -> Result<()> {
        for &(node, port) in &self.wiring.sources[source] {
            self.port_watermarks[node][port] = Some(wm);
        }
        for n in 0..self.ops.len() {
            let ports = &self.port_watermarks[n];
            let Some(min) = ports
                .iter()
                .copied()
                .collect::<Option<Vec<i64>>>()
                .and_then(|v| v.into_iter().min())
            else {
                continue;
            };
            if self.node_watermarks[n].is_some_and(|w| w >= min) {
                continue;
            }
            self.node_watermarks[n] = Some(min);
            let produced = self.ops[n].on_watermark(min)?;
            self.emit(Endpoint::Node(n), produced, out)?;
            for &(c, p) in &self.wiring.nodes[n] {
                self.port_watermarks[c][p] = Some(min);
            }
        }
        Ok(())
    }

    /// The input of one round is complete: each node, in topological order, emits what it
    /// held back (so a node sees its inputs' flushed rows before its own barrier).
    pub fn barrier(&mut self, epoch: u64) -> Result<Vec<RecordBatch>> {
        let mut out = Vec::new();
        for n in 0..self.ops.len() {
            let produced = self.ops[n].on_barrier(epoch)?;
            self.emit(Endpoint::Node(n), produced, &mut out)?;
        }
        Ok(out)
    }

    /// The watermark of source `source` so far.
    pub fn source_watermark(&self, source: usize) -> Option<i64> {
        self.sources.get(source).and_then(|s| s.watermark())
    }

    /// An idle source follows `watermark` (the other streams' time): its watermark rises to
    /// it, so it no longer holds back what it joins or unions with. Rows it sends later that
    /// are behind are late. Returns the rows this produced.
    pub fn follow(&mut self, source: usize, watermark: i64) -> Result<Vec<RecordBatch>> {
        let mut out = Vec::new();
        let moved = self
            .sources
            .get_mut(source)
            .is_some_and(|s| s.raise(watermark));
        if moved {
            self.advance(source, watermark, &mut out)?;
        }
        Ok(out)
    }

    /// Every source ended (a bounded input read to its end): the watermark moves past all
    /// event times, so every window closes. Returns the rows this produced.
    pub fn finish(&mut self) -> Result<Vec<RecordBatch>> {
        let mut out = self.barrier(u64::MAX)?;
        for s in 0..self.sources.len() {
            self.sources[s].finish();
            self.advance(s, i64::MAX, &mut out)?;
        }
        Ok(out)
    }

    /// Bytes of operator state held now.
    pub fn state_bytes(&self) -> usize {
        self.ops.iter().map(|o| o.state_size()).sum()
    }

    /// State size, late rows and watermark.
    pub fn stats(&self) -> GraphStats {
        GraphStats {
            state_bytes: self.state_bytes(),
            late_rows: self.ops.iter().map(|o| o.late_rows()).sum(),
            watermark: self
                .sources
                .iter()
                .map(|s| s.watermark())
                .collect::<Option<Vec<i64>>>()
                .and_then(|v| v.into_iter().min()),
        }
    }
}

/// Drop the change-kind column of append-only results; keep it on updating ones.
pub fn present(batch: &RecordBatch, updating: bool) -> Result<RecordBatch> {
    if updating {
        Ok(batch.clone())
    } else {
        change::strip(batch)
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn intervals_print_as_sql() {
        let debug = "ts@1 + IntervalMonthDayNano { months: 0, days: 0, nanoseconds: 10000000000 } \
                     < IntervalMonthDayNano { months: 14, days: 1, nanoseconds: 1500000000 } + \
                     IntervalMonthDayNano { months: 0, days: -2, nanoseconds: 0 }";
        assert_eq!(
            super::sql_intervals(debug),
            "ts@1 + INTERVAL '00:00:10' < INTERVAL '1 year 2 mons 1 day 00:00:01.5' + \
             INTERVAL '-2 days'"
        );
        assert_eq!(super::sql_intervals("no intervals"), "no intervals");
    }

    #[test]
    fn quoted_intervals_in_column_names_print_as_sql() {
        // As DataFusion names a window expression's column.
        let name = "session_end(v.ts,IntervalMonthDayNano(\"IntervalMonthDayNano { months: 0, \
                    days: 0, nanoseconds: 10000000000 }\")) PARTITION BY [v.u]@3";
        assert_eq!(
            super::sql_intervals(name),
            "session_end(v.ts,INTERVAL '00:00:10') PARTITION BY [v.u]@3"
        );
        let cut = "IntervalMonthDayNano(\"IntervalMonthDayNano { months: 0, days: 0, \
                   nanoseconds: 0 }";
        assert_eq!(
            super::sql_intervals(cut),
            "IntervalMonthDayNano(\"INTERVAL '00:00:00'"
        );
    }
}
