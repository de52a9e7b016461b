//! `WITH RECURSIVE ... UNION ALL`, maintained incrementally.
//!
//! The result `R` of a recursive query with base term `B` and recursive term `f` is the least
//! fixpoint of `R = B + f(R)`; PostgreSQL computes it by iterating `f` over the rows the last
//! round produced (the working table). Brook accepts only a recursive term that is linear in
//! `R` (projections, filters, unions, unnest and joins with `R` on one side: what PostgreSQL
//! admits, less aggregates and window functions), so `f(R1 + R2) = f(R1) + f(R2)` and the
//! same answer follows from feeding each change of `R` back through `f` — semi-naive
//! evaluation. Changes carry signs, so deletions flow around the loop as negative rows exactly
//! as insertions do (counting, not delete-and-rederive: under UNION ALL a row's multiplicity is
//! its number of derivations, so a retraction removes exactly the derivations it supported).
//!
//! The recursive term runs as a small graph of ordinary operators (its *body*). Its input
//! 0 is the working table; inputs `1..` are the other relations it reads, computed outside
//! the loop by the enclosing plan and arriving on this operator's ports `1..` (port 0 is the
//! base term). A change on any port is pushed through the body; everything the body emits is
//! emitted as this operator's output *and* fed back into input 0, round after round, until a
//! round produces nothing (each round's output consolidated first, so a change and its undo
//! stop there). A change to a joined relation reaches the existing result through the body's
//! join state (`R ⋈ ΔG`), and its consequences are iterated the same way.
//!
//! Data with a cycle never reaches an empty round under UNION ALL (PostgreSQL's query would
//! not end either); after [`RecursiveNode::max_rounds`] rounds the operator fails with 54000
//! rather than looping.

use crate::graph::{Endpoint, PlanNode, Wiring};
use crate::{change, NodeSpec, Operator};
use brook_common::{brook_err, BrookError, Result};
use datafusion::arrow::compute::concat_batches;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::arrow::record_batch::RecordBatch;
use std::fmt;

/// Rounds of the loop one change may take before the query fails (a hierarchy deeper than
/// this, or a cycle in the data).
pub const MAX_ROUNDS: usize = 1_000;

/// Plan node of a recursive query: base term on port 0, the body's other inputs on ports
/// `1..`.
pub struct RecursiveNode {
    /// The query's name (`WITH RECURSIVE name`).
    pub name: String,
    /// Output schema (the working table's).
    pub schema: SchemaRef,
    /// The recursive term: nodes in topological order; `Endpoint::Source(0)` is the working
    /// table, `Endpoint::Source(p)` for `p >= 1` the input on port `p`.
    pub body: Vec<PlanNode>,
    /// The body's result.
    pub body_root: Endpoint,
    /// Rounds one change may take (see [`MAX_ROUNDS`]).
    pub max_rounds: usize,
}

impl fmt::Display for RecursiveNode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let cols: Vec<&str> = self
            .schema
            .fields()
            .iter()
            .map(|f| f.name().as_str())
            .collect();
        write!(
            f,
            "Recursive Union All: {} [{}] iterate: ",
            self.name,
            cols.join(", ")
        )?;
        self.body_at(self.body_root, f)
    }
}

impl RecursiveNode {
    /// The body as one line, root first: `Project(Join(working table, input 1))`.
    fn body_at(&self, at: Endpoint, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match at {
            Endpoint::Source(0) => write!(f, "WorkTable: {}", self.name),
            Endpoint::Source(p) => write!(f, "input {p}"),
            Endpoint::Node(n) => {
                let node = &self.body[n];
                write!(f, "{} (", node.spec)?;
                for (i, input) in node.inputs.iter().enumerate() {
                    if i > 0 {
                        write!(f, ", ")?;
                    }
                    self.body_at(*input, f)?;
                }
                write!(f, ")")
            }
        }
    }
}

impl NodeSpec for RecursiveNode {
    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }
    fn updating(&self) -> bool {
        true
    }
    fn instantiate(&self) -> Result<Box<dyn Operator>> {
        let ports = 1 + self
            .body
            .iter()
            .flat_map(|n| n.inputs.iter())
            .chain(std::iter::once(&self.body_root))
            .filter_map(|e| match e {
                Endpoint::Source(p) => Some(*p),
                Endpoint::Node(_) => None,
            })
            .max()
            .unwrap_or(0);
        let wiring = Wiring::new(&self.body, ports)?;
        let ops = self
            .body
            .iter()
            .map(|n| n.spec.instantiate())
            .collect::<Result<Vec<_>>>()?;
        Ok(Box::new(RecursiveOp {
            name: self.name.clone(),
            schema: self.schema.clone(),
            ops,
            wiring,
            root: self.body_root,
            max_rounds: self.max_rounds,
        }))
    }
}

/// Runtime state: the body's operators (their state holds the result so far, as the
/// working-table side of its joins) and how they are wired.
struct RecursiveOp {
    name: String,
    schema: SchemaRef,
    ops: Vec<Box<dyn Operator>>,
    /// Who consumes each body input's and each body node's batches.
    wiring: Wiring,
    root: Endpoint,
    max_rounds: usize,
}

impl RecursiveOp {
    /// Deliver `batches` emitted at body endpoint `from` to its consumers, collecting what
    /// reaches the body's root into `out`.
    fn emit(
        &mut self,
        from: Endpoint,
        batches: Vec<RecordBatch>,
        out: &mut Vec<RecordBatch>,
    ) -> Result<()> {
        self.wiring
            .deliver(&mut self.ops, self.root, from, batches, out)
    }

    /// Iterate: `produced` (changes of the result) is emitted and fed back into the
    /// working table until a round produces nothing.
    fn fixpoint(&mut self, mut produced: Vec<RecordBatch>) -> Result<Vec<RecordBatch>> {
        let mut out = Vec::new();
        let mut rounds = 0;
        loop {
            produced.retain(|b| b.num_rows() > 0);
            if produced.is_empty() {
                return Ok(out);
            }
            let delta = self.relabel(&produced)?;
            if delta.num_rows() == 0 {
                return Ok(out);
            }
            rounds += 1;
            if rounds > self.max_rounds {
                return Err(self.too_deep());
            }
            out.push(delta.clone());
            let mut next = Vec::new();
            self.emit(Endpoint::Source(0), vec![delta], &mut next)?;
            produced = next;
        }
    }

    /// One round's changes as one consolidated batch under the result's schema.
    fn relabel(&self, batches: &[RecordBatch]) -> Result<RecordBatch> {
        let with_kind = change::with_change_field(&self.schema);
        let relabeled = batches
            .iter()
            .map(|b| {
                let mut columns = b.columns().to_vec();
                let kinds = columns
                    .pop()
                    .ok_or_else(|| brook_err!(Internal, "batch without change kind"))?;
                change::attach(&self.schema, columns, kinds)
            })
            .collect::<Result<Vec<_>>>()?;
        let all = concat_batches(&with_kind, &relabeled)?;
        change::consolidate(&all)
    }

    fn too_deep(&self) -> BrookError {
        BrookError::Limit {
            message: format!(
                "recursive query \"{}\" did not settle within {} rounds: its data has a \
                 cycle, or a hierarchy deeper than {} levels (UNION ALL repeats a cycle \
                 without end)",
                self.name, self.max_rounds, self.max_rounds
            ),
            code: "54000",
        }
    }
}

impl Operator for RecursiveOp {
    fn on_start(&mut self) -> Result<Vec<RecordBatch>> {
        let mut produced = Vec::new();
        for n in 0..self.ops.len() {
            let first = self.ops[n].on_start()?;
            self.emit(Endpoint::Node(n), first, &mut produced)?;
        }
        self.fixpoint(produced)
    }

    fn on_data(&mut self, port: usize, batch: RecordBatch) -> Result<Vec<RecordBatch>> {
        if port == 0 {
            return self.fixpoint(vec![batch]);
        }
        let mut produced = Vec::new();
        self.emit(Endpoint::Source(port), vec![batch], &mut produced)?;
        self.fixpoint(produced)
    }

    fn on_watermark(&mut self, watermark: i64) -> Result<Vec<RecordBatch>> {
        // The body sees the lowest watermark of all ports: a bound on every input.
        let mut produced = Vec::new();
        for n in 0..self.ops.len() {
            let emitted = self.ops[n].on_watermark(watermark)?;
            self.emit(Endpoint::Node(n), emitted, &mut produced)?;
        }
        self.fixpoint(produced)
    }

    fn on_barrier(&mut self, epoch: u64) -> Result<Vec<RecordBatch>> {
        let mut produced = Vec::new();
        for n in 0..self.ops.len() {
            let emitted = self.ops[n].on_barrier(epoch)?;
            self.emit(Endpoint::Node(n), emitted, &mut produced)?;
        }
        self.fixpoint(produced)
    }

    fn state_size(&self) -> usize {
        self.ops.iter().map(|o| o.state_size()).sum()
    }

    fn late_rows(&self) -> u64 {
        self.ops.iter().map(|o| o.late_rows()).sum()
    }
}

/// Where the recursive term reads its working table while the planner builds it: a node
/// the planner replaces by the body's input 0 before the plan runs. Instantiating it is an
/// internal error.
#[derive(Debug)]
pub struct WorkTableNode {
    /// The query's name.
    pub name: String,
    /// The working table's schema.
    pub schema: SchemaRef,
}

impl fmt::Display for WorkTableNode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "WorkTable: {}", self.name)
    }
}

impl NodeSpec for WorkTableNode {
    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }
    fn updating(&self) -> bool {
        true
    }
    fn instantiate(&self) -> Result<Box<dyn Operator>> {
        Err(brook_err!(
            Internal,
            "working table of recursive query \"{}\" left in a continuous plan",
            self.name
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::join::{JoinKind, JoinNode};
    use crate::project::ProjectNode;
    use crate::testing::{from_pretty, to_sorted_rows};
    use datafusion::physical_expr::expressions::Column;
    use datafusion::physical_expr::PhysicalExpr;
    use std::sync::Arc;

    fn column(name: &str, i: usize) -> Arc<dyn PhysicalExpr> {
        Arc::new(Column::new(name, i))
    }

    /// `anc(node, top)`: base = edges `(child, parent)`; body = `anc JOIN edges ON
    /// edges.child = anc.top`, projected to `(anc.node, edges.parent)`.
    fn ancestors() -> RecursiveNode {
        let edges = from_pretty(
            "child:text | parent:text
             x          | y",
        )
        .schema();
        let anc = from_pretty(
            "node:text | top:text
             x         | y",
        )
        .schema();
        let pair = Arc::new(datafusion::arrow::datatypes::Schema::new(
            anc.fields()
                .iter()
                .chain(edges.fields().iter())
                .cloned()
                .collect::<Vec<_>>(),
        ));
        let join = JoinNode {
            kind: JoinKind::Inner,
            left_keys: vec![column("top", 1)],
            right_keys: vec![column("child", 0)],
            filter: None,
            left_schema: anc.clone(),
            right_schema: edges,
            schema: pair,
            updating: true,
            inputs_updating: [true, true],
            bounds: [None, None],
            nulls_equal: false,
            null_aware: false,
        };
        let project = ProjectNode {
            exprs: vec![column("node", 0), column("parent", 3)],
            schema: anc.clone(),
            updating: true,
        };
        RecursiveNode {
            name: "anc".into(),
            schema: anc,
            body: vec![
                PlanNode {
                    spec: Arc::new(join),
                    inputs: vec![Endpoint::Source(0), Endpoint::Source(1)],
                },
                PlanNode {
                    spec: Arc::new(project),
                    inputs: vec![Endpoint::Node(0)],
                },
            ],
            body_root: Endpoint::Node(1),
            max_rounds: 10,
        }
    }

    fn edges(rows: &str) -> RecordBatch {
        from_pretty(&format!(
            "child:text | parent:text | _brook_op:int8\n{rows}"
        ))
    }

    /// Both the base term and the joined relation are the edges, as in
    /// `SELECT child, parent FROM edges UNION ALL SELECT a.node, e.parent FROM anc a JOIN
    /// edges e ON e.child = a.top`.
    fn push_edges(op: &mut dyn Operator, rows: &str, out: &mut Vec<RecordBatch>) {
        out.extend(op.on_data(1, edges(rows)).unwrap());
        out.extend(op.on_data(0, edges(rows)).unwrap());
    }

    /// Fold a changelog into the multiset it leaves.
    fn net(batches: &[RecordBatch]) -> Vec<String> {
        let all = concat_batches(&batches[0].schema(), batches).unwrap();
        to_sorted_rows(&[change::consolidate(&all).unwrap()])
    }

    #[test]
    fn inserts_then_deletes_keep_the_closure() {
        let node = ancestors();
        let mut op = node.instantiate().unwrap();
        let mut out = Vec::new();
        push_edges(op.as_mut(), "a | b | 1\nb | c | 1", &mut out);
        assert_eq!(
            net(&out),
            vec!["a | b | 1", "a | c | 1", "b | c | 1"],
            "a chain of two edges"
        );
        // A new level above the top: every node below gains an ancestor.
        push_edges(op.as_mut(), "c | d | 1", &mut out);
        assert_eq!(
            net(&out),
            vec![
                "a | b | 1",
                "a | c | 1",
                "a | d | 1",
                "b | c | 1",
                "b | d | 1",
                "c | d | 1"
            ]
        );
        // Moving b under e: the ancestors through c leave, those through e arrive.
        push_edges(op.as_mut(), "b | c | -1\nb | e | 1", &mut out);
        assert_eq!(
            net(&out),
            vec!["a | b | 1", "a | e | 1", "b | e | 1", "c | d | 1"]
        );
    }

    #[test]
    fn a_diamond_counts_each_derivation() {
        let node = ancestors();
        let mut op = node.instantiate().unwrap();
        let mut out = Vec::new();
        push_edges(
            op.as_mut(),
            "a | b | 1\na | c | 1\nb | d | 1\nc | d | 1",
            &mut out,
        );
        let rows = net(&out);
        assert_eq!(
            rows.iter().filter(|r| *r == "a | d | 1").count(),
            2,
            "{rows:?}"
        );
    }

    #[test]
    fn a_cycle_fails_after_the_round_limit() {
        let node = ancestors();
        let mut op = node.instantiate().unwrap();
        op.on_data(1, edges("a | b | 1\nb | a | 1")).unwrap();
        let err = op.on_data(0, edges("a | b | 1")).unwrap_err();
        assert_eq!(err.sqlstate(), "54000");
        assert!(
            err.to_string().contains("did not settle within 10 rounds"),
            "{err}"
        );
    }

    #[test]
    fn explain_shows_the_body() {
        let shown = ancestors().to_string();
        assert!(shown.starts_with("Recursive Union All: anc [node, top] iterate: Project"));
        assert!(shown.contains("WorkTable: anc, input 1"), "{shown}");
    }
}
