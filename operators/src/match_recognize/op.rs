//! Runtime state of `MATCH_RECOGNIZE`: per partition, the rows from the first one a match
//! may still start at (plus the rows `PREV` reads back), with the variables each row can be.

use super::measure::{measure_column, reads_schema, OutRow, PathStates};
use super::pattern::{Outcome, Path};
use super::row_expr::RowExpr;
use super::{in_set, AfterMatch, MatchRecognizeNode, Navigation, RowsPerMatch};
use crate::{change, Operator};
use brook_common::{brook_err, BrookError, Result};
use datafusion::arrow::array::{
    new_null_array, Array, ArrayRef, AsArray, BooleanArray, UInt32Array,
};
use datafusion::arrow::compute::{cast, concat_batches, interleave, take, SortOptions};
use datafusion::arrow::datatypes::{DataType, Field, Int64Type, Schema, SchemaRef};
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::arrow::row::{RowConverter, SortField};
use datafusion::common::HashMap;
use datafusion::physical_expr::utils::collect_columns;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

mod checked;
mod parallel;
mod partial;
use parallel::MAX_THREADS;

/// One partition's rows still needed.
pub(super) struct Partition {
    /// The rows kept, in order.
    pub(super) rows: RecordBatch,
    /// Bit v of `eligible[i]`: row i can be variable v (for a variable whose condition
    /// reads the match so far: may be, checked while matching).
    eligible: Vec<u64>,
    /// Rows of the partition dropped before `rows[0]`.
    dropped: u64,
    /// Where the next match attempt starts (index into `rows`).
    next: usize,
    /// Matches found so far.
    matches: i64,
    /// One past the partition's last row in a match so far (counted from its first row,
    /// dropped ones included): a row before it belongs to a match, so it is no unmatched
    /// row when an attempt starting at it fails (overlapping matches, `SKIP TO NEXT ROW`).
    covered: u64,
    /// The order key of the last row taken (rows behind it are late).
    last_order: Option<Vec<u8>>,
    /// The answers of the conditions checked while matching by the attempt at `next`, in
    /// the order it asked them, while it waits for more rows. The matcher is deterministic:
    /// run again with more rows, the attempt asks the same questions first, so they are
    /// answered from here and each row is checked once, not once per batch the attempt
    /// spans (a match growing one row per commit costs O(n) checks, not O(n²)).
    replay: Vec<bool>,
    /// Under `SHOW PARTIAL MATCHES`: the rows shown for the attempt still undecided.
    shown: Option<partial::Shown>,
    /// Output rows of matches decided whose measures read rows after them (`NEXT`) that
    /// have not arrived yet, in order.
    held: Vec<OutRow>,
}

/// One partition's share of a batch.
struct Group {
    key: Vec<u8>,
    /// Its rows of the batch, in order.
    rows: Vec<u32>,
    /// Its kept rows that `PREV` may read (the last ones).
    tail: RecordBatch,
}

/// The operator.
pub struct MatchRecognizeOp {
    node: MatchRecognizeNode,
    keys: Option<RowConverter>,
    order_rows: RowConverter,
    pub(super) partitions: HashMap<Vec<u8>, Partition>,
    /// Extended schema the conditions read: the input's columns, then the `PREV` columns.
    extended: SchemaRef,
    /// Variables whose condition reads the match so far or rows after the row (`NEXT`),
    /// checked while matching (bit v), and the schema each such condition reads (extended,
    /// then its navigations). `path_dependent`: those whose condition reads the match.
    checked: u64,
    path_dependent: u64,
    checked_schemas: Vec<Option<SchemaRef>>,
    /// Rows after a row its condition may read (`NEXT(col, k)`): a row is matched once that
    /// many rows of its partition followed it (or none will: the end of a table).
    define_ahead: usize,
    /// Rows after a match's last row its measures may read: a match is shown once that many
    /// rows of its partition followed it.
    measures_ahead: usize,
    /// Those conditions compiled for checking on one row's values, where their shape
    /// allows (None: checked over a one-row batch).
    row_conditions: Vec<Option<RowExpr>>,
    /// Rows a navigation may read before a match's first row.
    history: usize,
    /// A measure reads rows before its match's first row (`PREV(FIRST(v.col))`).
    measures_read_back: bool,
    /// A measure reads the whole match (`FINAL`): a row shown for a partial match may
    /// change with any later row of it.
    measures_read_final: bool,
    late: u64,
    /// Asked between match attempts and before each check: true stops the operator with
    /// 57014 (the statement was cancelled).
    interrupt: Option<Interrupt>,
    /// Conditions evaluated while matching, in all (a check answered from an attempt's
    /// replay is not counted).
    pub(super) evaluated: AtomicU64,
    /// Threads a batch's partitions may be matched on (the machine's cores, at most
    /// [`MAX_THREADS`]).
    pub(super) threads: usize,
}

/// Whether the work should stop (see [`MatchRecognizeOp::with_interrupt`]).
pub type Interrupt = Arc<dyn Fn() -> bool + Send + Sync>;

impl MatchRecognizeOp {
    /// Fresh state for `node`.
    pub fn new(node: &MatchRecognizeNode) -> Result<Self> {
        let sort_fields = |cols: &[usize], options: &[SortOptions]| -> Vec<SortField> {
            cols.iter()
                .zip(options)
                .map(|(&c, o)| {
                    SortField::new_with_options(node.input_schema.field(c).data_type().clone(), *o)
                })
                .collect()
        };
        let mut fields: Vec<Field> = node
            .input_schema
            .fields()
            .iter()
            .map(|f| f.as_ref().clone())
            .collect();
        for (i, p) in node.prev.iter().enumerate() {
            let f = node.input_schema.field(p.col);
            fields.push(Field::new(
                format!("__prev_{i}"),
                f.data_type().clone(),
                true,
            ));
        }
        let mut checked = 0u64;
        let mut path_dependent = 0u64;
        let mut checked_schemas = Vec::new();
        let mut row_conditions = Vec::new();
        // The extended columns that read rows after the row (NEXT).
        let inputs = node.input_schema.fields().len();
        let ahead_columns: Vec<usize> = (node.prev.iter().enumerate())
            .filter(|(_, p)| p.ahead)
            .map(|(i, _)| inputs + i)
            .collect();
        for (v, c) in node.conditions.iter().enumerate() {
            // A condition that reads NEXT rows is checked while matching, when they have
            // arrived, not once per batch (whose last rows have not got them yet).
            let reads_next = c.as_ref().is_some_and(|c| {
                collect_columns(&c.expr)
                    .iter()
                    .any(|col| ahead_columns.contains(&col.index()))
            });
            match c {
                Some(c) if !c.reads.is_empty() || reads_next => {
                    checked |= 1 << v;
                    if !c.reads.is_empty() {
                        path_dependent |= 1 << v;
                    }
                    let mut f = fields.clone();
                    f.extend(
                        reads_schema(&c.reads)
                            .fields()
                            .iter()
                            .map(|x| x.as_ref().clone()),
                    );
                    let schema = Schema::new(f);
                    row_conditions.push(RowExpr::compile(&c.expr, &schema));
                    checked_schemas.push(Some(Arc::new(schema)));
                }
                _ => {
                    row_conditions.push(None);
                    checked_schemas.push(None);
                }
            }
        }
        let ahead = |navs: &mut dyn Iterator<Item = &Navigation>| {
            navs.filter_map(|n| usize::try_from(n.shift()).ok())
                .max()
                .unwrap_or(0)
        };
        let define_ahead = node
            .prev
            .iter()
            .filter(|p| p.ahead)
            .map(|p| p.offset)
            .max()
            .unwrap_or(0)
            .max(ahead(
                &mut node
                    .conditions
                    .iter()
                    .flatten()
                    .flat_map(|c| c.reads.iter()),
            ));
        let measures_ahead = ahead(&mut node.measures.iter().flat_map(|m| m.reads.iter()));
        Ok(MatchRecognizeOp {
            node: node.clone(),
            keys: (!node.partition.is_empty())
                .then(|| {
                    RowConverter::new(sort_fields(
                        &node.partition,
                        &vec![super::ORDER; node.partition.len()],
                    ))
                })
                .transpose()?,
            order_rows: RowConverter::new(sort_fields(&node.order, &node.order_options))?,
            partitions: HashMap::new(),
            extended: Arc::new(Schema::new(fields)),
            checked,
            path_dependent,
            checked_schemas,
            define_ahead,
            measures_ahead,
            row_conditions,
            history: node.history(),
            measures_read_back: node
                .measures
                .iter()
                .flat_map(|m| m.reads.iter())
                .any(|n| n.shift() < 0),
            measures_read_final: node
                .measures
                .iter()
                .flat_map(|m| m.reads.iter())
                .any(|n| !n.running),
            late: 0,
            interrupt: None,
            evaluated: AtomicU64::new(0),
            threads: std::thread::available_parallelism()
                .map_or(1, |n| n.get())
                .min(MAX_THREADS),
        })
    }

    /// The operator, stopping with 57014 once `interrupt` answers true (asked between
    /// match attempts and before each condition checked while matching).
    pub fn with_interrupt(mut self, interrupt: Interrupt) -> Self {
        self.interrupt = Some(interrupt);
        self
    }

    /// No rows follow: decide every match still open (the ad-hoc form over a table), as
    /// batches without the change-kind column. Under `SHOW PARTIAL MATCHES` the attempts
    /// still open are shown as over a stream (they were, as the rows arrived), not decided.
    pub fn finish(&mut self) -> Result<Vec<RecordBatch>> {
        let mut out = Vec::new();
        if self.node.rows_per_match == RowsPerMatch::AllWithPartial {
            return Ok(out);
        }
        let mut keys: Vec<Vec<u8>> = self.partitions.keys().cloned().collect();
        keys.sort();
        for k in keys {
            if let Some(mut p) = self.partitions.remove(&k) {
                if let Some(b) = self.advance(&mut p, true)? {
                    out.push(change::strip(&b)?);
                }
            }
        }
        Ok(out)
    }

    /// The variables each row of `data` can be (bit v: variable v), evaluated once over the
    /// whole batch: a `PREV(col, k)` column holds, for each row, the value of the row k before
    /// it in its partition — an earlier row of the batch or one of the partition's kept rows
    /// (`groups`: each partition's rows of the batch in order, with its kept tail). A
    /// condition that reads the match so far is left to the matcher (its bit is set).
    fn eligibility(&self, data: &RecordBatch, groups: &[Group]) -> Result<Vec<u64>> {
        let n = data.num_rows();
        let mut cols: Vec<ArrayRef> = data.columns().to_vec();
        if !self.node.prev.is_empty() {
            // Where each row's k-th predecessor is: (source, row); source 0 is the batch,
            // 1 + g the kept tail of group g, the last a single NULL.
            let null_source = 1 + groups.len();
            for p in &self.node.prev {
                let mut at = vec![(null_source, 0usize); n];
                for (g, group) in groups.iter().enumerate() {
                    if p.ahead {
                        // NEXT: a later row of the batch (only ad hoc, where the batch
                        // holds every row: a continuous query refuses NEXT).
                        for (q, &i) in group.rows.iter().enumerate() {
                            if let Some(&later) = group.rows.get(q + p.offset) {
                                at[i as usize] = (0, later as usize);
                            }
                        }
                        continue;
                    }
                    let h = group.tail.num_rows();
                    for (q, &i) in group.rows.iter().enumerate() {
                        let back = h + q;
                        if back >= p.offset {
                            let before = back - p.offset;
                            at[i as usize] = if before < h {
                                (1 + g, before)
                            } else {
                                (0, group.rows[before - h] as usize)
                            };
                        }
                    }
                }
                let column = data.column(p.col);
                let null = new_null_array(column.data_type(), 1);
                let mut sources: Vec<&dyn Array> = vec![column.as_ref()];
                sources.extend(groups.iter().map(|g| g.tail.column(p.col).as_ref()));
                sources.push(null.as_ref());
                cols.push(interleave(&sources, &at)?);
            }
        }
        let ext = RecordBatch::try_new(self.extended.clone(), cols)?;
        let mut bits = vec![0u64; n];
        for (v, cond) in self.node.conditions.iter().enumerate() {
            let Some(cond) = cond.as_ref().filter(|_| self.checked & (1 << v) == 0) else {
                bits.iter_mut().for_each(|b| *b |= 1 << v);
                continue;
            };
            let mask = cond.expr.evaluate(&ext)?.into_array(n)?;
            let mask = mask
                .as_any()
                .downcast_ref::<BooleanArray>()
                .ok_or_else(|| brook_err!(Internal, "DEFINE condition is not boolean"))?;
            for (i, b) in bits.iter_mut().enumerate() {
                if mask.is_valid(i) && mask.value(i) {
                    *b |= 1 << v;
                }
            }
        }
        Ok(bits)
    }

    /// Under `WITHIN`, the rows from `start` an attempt there may take (those whose order
    /// value is less than the start's plus the bound), and whether a row past the bound has
    /// arrived (which decides the attempt). `order`: the order column as integers.
    fn within_limit(&self, order: Option<&[i64]>, start: usize, len: usize) -> (usize, bool) {
        let (Some((bound, _)), Some(order)) = (&self.node.within, order) else {
            return (len, false);
        };
        // As Flink does: a row at the start plus the bound or later is past it (the
        // interval is open at its end).
        // Only the first `len` rows are the matcher's (those whose NEXT rows arrived).
        let past = order[start].saturating_add(*bound);
        let end = start + order[start..len].partition_point(|t| *t < past);
        (end, end < len)
    }

    /// Decide what the rows seen decide; the output rows (with their change kinds), as one
    /// batch.
    fn advance(&self, p: &mut Partition, finished: bool) -> Result<Option<RecordBatch>> {
        let mut out: Vec<OutRow> = Vec::new();
        let all = self.node.rows_per_match.all_rows();
        let unmatched = self.node.rows_per_match == RowsPerMatch::All { unmatched: true };
        let partial = self.node.rows_per_match == RowsPerMatch::AllWithPartial;
        // Under SHOW PARTIAL MATCHES: the matches decided, and the attempt left undecided.
        let mut decided: Vec<partial::Decided> = Vec::new();
        let mut undecided: Option<(usize, Path)> = None;
        let order = match self.node.within {
            Some(_) => Some(order_values(&p.rows, self.node.order[0])?),
            None => None,
        };
        // What checks while matching folded, per variable; its buffers serve every attempt.
        let mut states: Vec<PathStates> = Vec::new();
        // Counted here and added once: threads matching other partitions share the total.
        let mut checks = 0u64;
        // Rows the matcher may take: those whose NEXT rows have arrived, until the end.
        let visible = if finished {
            p.eligible.len()
        } else {
            p.eligible.len().saturating_sub(self.define_ahead)
        };
        while p.next < visible {
            let start = p.next;
            let first = p.dropped == 0 && start == 0;
            let (end, bounded) = self.within_limit(order.as_deref(), start, visible);
            if self.interrupt.as_ref().is_some_and(|stop| stop()) {
                return Err(BrookError::Canceled);
            }
            let mut replay = std::mem::take(&mut p.replay);
            states.iter_mut().for_each(PathStates::clear);
            let outcome = {
                let part: &Partition = p;
                let mut asked = 0usize;
                self.node.program.run(
                    &part.eligible[..end],
                    start,
                    first,
                    finished || bounded,
                    self.checked,
                    self.path_dependent,
                    &mut |row, v, path, stable| {
                        asked += 1;
                        if let Some(&answer) = replay.get(asked - 1) {
                            return Ok(answer);
                        }
                        checks += 1;
                        let answer = self.check(part, start, row, v, path, stable, &mut states)?;
                        replay.push(answer);
                        Ok(answer)
                    },
                )?
            };
            match outcome {
                Outcome::NeedMore(path) => {
                    p.replay = replay;
                    if partial {
                        undecided = Some((start, path));
                    }
                    break;
                }
                Outcome::NoMatch => {
                    if unmatched && p.dropped + start as u64 >= p.covered {
                        out.push(OutRow {
                            row: start,
                            matched: None,
                            upto: start,
                        });
                    }
                    p.next += 1;
                }
                Outcome::Match(Path { vars, hidden }) => {
                    p.matches += 1;
                    let len = vars.len();
                    p.covered = p.covered.max(p.dropped + (start + len) as u64);
                    let vars = Arc::new(vars);
                    if partial {
                        decided.push(partial::Decided {
                            start,
                            number: p.matches,
                            vars: vars.clone(),
                            hidden: hidden.clone(),
                        });
                    }
                    if all {
                        for j in (0..len).filter(|j| !hidden[*j]) {
                            out.push(OutRow {
                                row: start + j,
                                matched: Some((start, vars.clone(), p.matches)),
                                upto: start + j,
                            });
                        }
                    } else {
                        out.push(OutRow {
                            row: start,
                            matched: Some((start, vars.clone(), p.matches)),
                            upto: start + len - 1,
                        });
                    }
                    p.next = self.skip_to(start, &vars)?;
                }
            }
        }
        self.evaluated.fetch_add(checks, Ordering::Relaxed);
        let batch = if partial {
            self.partial_output(p, out, &decided, undecided)?
        } else {
            let out = self.release(p, out, finished);
            if out.is_empty() {
                None
            } else {
                let rows = self.output(&p.rows, &out)?;
                let kinds = change::constant(change::INSERT, rows.num_rows());
                Some(change::attach(
                    &self.node.schema,
                    rows.columns().to_vec(),
                    kinds,
                )?)
            }
        };
        // Keep rows from the next attempt on, and the rows PREV reads before the newest
        // (and before the attempt's start, when a condition checked while matching or a
        // measure reads rows before the attempt's first rows); and the rows of matches held.
        let back = if self.checked != 0 || self.measures_read_back {
            self.history
        } else {
            0
        };
        let held_from = p.held.first().map_or(p.next, |o| match &o.matched {
            Some((start, _, _)) => *start,
            None => o.row,
        });
        let keep_from = p
            .next
            .min(held_from)
            .saturating_sub(back)
            .min(p.rows.num_rows().saturating_sub(self.history));
        if keep_from > 0 {
            p.rows = p.rows.slice(keep_from, p.rows.num_rows() - keep_from);
            p.eligible.drain(..keep_from);
            p.next -= keep_from;
            p.dropped += keep_from as u64;
            for o in &mut p.held {
                o.row -= keep_from;
                o.upto -= keep_from;
                if let Some((start, _, _)) = &mut o.matched {
                    *start -= keep_from;
                }
            }
        }
        Ok(batch)
    }

    /// The output rows `out` decided, and the rows held before, that can be shown: when
    /// measures read rows after a match (`NEXT(x, k)`), a match's rows wait until k rows
    /// followed its last one (or no rows follow: `finished`), in the order decided.
    fn release(&self, p: &mut Partition, out: Vec<OutRow>, finished: bool) -> Vec<OutRow> {
        if self.measures_ahead == 0 {
            return out;
        }
        p.held.extend(out);
        let len = p.rows.num_rows();
        let ready = match finished {
            true => p.held.len(),
            false => p
                .held
                .iter()
                .position(|o| match &o.matched {
                    Some((start, vars, _)) => start + vars.len() - 1 + self.measures_ahead >= len,
                    None => false,
                })
                .unwrap_or(p.held.len()),
        };
        p.held.drain(..ready).collect()
    }

    /// Where the next attempt starts after a match at `start` of `vars`.
    fn skip_to(&self, start: usize, vars: &[usize]) -> Result<usize> {
        let (at, name) = match &self.node.after_match {
            AfterMatch::PastLastRow => return Ok(start + vars.len()),
            AfterMatch::ToNextRow => return Ok(start + 1),
            AfterMatch::ToFirst { vars: set, name } => (
                vars.iter().position(|x| in_set(Some(*set), *x)),
                format!("FIRST {name}"),
            ),
            AfterMatch::ToLast { vars: set, name } => (
                vars.iter().rposition(|x| in_set(Some(*set), *x)),
                format!("LAST {name}"),
            ),
        };
        match at {
            Some(i) if i > 0 => Ok(start + i),
            _ => Err(brook_err!(
                InvalidParameter,
                "AFTER MATCH SKIP TO {name} would start the next match where this one started \
                 (or at a variable the match does not have)"
            )),
        }
    }

    /// The output batch of `out` over the partition's `rows`.
    fn output(&self, rows: &RecordBatch, out: &[OutRow]) -> Result<RecordBatch> {
        let (lead, rest) = self.node.carried_columns();
        let at = UInt32Array::from(out.iter().map(|o| o.row as u32).collect::<Vec<_>>());
        let mut cols: Vec<ArrayRef> = Vec::new();
        for &c in &lead {
            cols.push(take(rows.column(c).as_ref(), &at, None)?);
        }
        for (m, measure) in self.node.measures.iter().enumerate() {
            let ty = self.node.schema.field(lead.len() + m).data_type();
            cols.push(measure_column(
                rows,
                out,
                measure,
                ty,
                &self.node.variables,
            )?);
        }
        for &c in &rest {
            cols.push(take(rows.column(c).as_ref(), &at, None)?);
        }
        // A match without partition columns or measures is a row of no columns.
        let options = datafusion::arrow::record_batch::RecordBatchOptions::new()
            .with_row_count(Some(out.len()));
        Ok(RecordBatch::try_new_with_options(
            self.node.schema.clone(),
            cols,
            &options,
        )?)
    }
}

impl Operator for MatchRecognizeOp {
    fn on_data(&mut self, _port: usize, batch: RecordBatch) -> Result<Vec<RecordBatch>> {
        if !change::all_inserts(&batch)? {
            return Err(brook_err!(
                Internal,
                "MATCH_RECOGNIZE input retracted a row (it reads only append-only inputs)"
            ));
        }
        let data = change::strip(&batch)?;
        let n = data.num_rows();
        // Rows per partition, in arrival order.
        let mut groups: Vec<(Vec<u8>, Vec<u32>)> = Vec::new();
        let key_rows = match &self.keys {
            Some(conv) => {
                let cols: Vec<ArrayRef> = self
                    .node
                    .partition
                    .iter()
                    .map(|&c| data.column(c).clone())
                    .collect();
                Some(conv.convert_columns(&cols)?)
            }
            None => None,
        };
        let order_cols: Vec<ArrayRef> = self
            .node
            .order
            .iter()
            .map(|&c| data.column(c).clone())
            .collect();
        let order = self.order_rows.convert_columns(&order_cols)?;
        let mut slot: HashMap<&[u8], usize> = HashMap::new();
        for i in 0..n {
            let key: &[u8] = key_rows.as_ref().map_or(&[], |k| k.row(i).data());
            let at = *slot.entry(key).or_insert_with(|| {
                groups.push((key.to_vec(), Vec::new()));
                groups.len() - 1
            });
            groups[at].1.push(i as u32);
        }
        // Each partition's rows in order (rows behind its order so far are late: dropped,
        // counted), with the rows PREV reads back from before this batch.
        let mut accepted: Vec<Group> = Vec::with_capacity(groups.len());
        for (key, idx) in groups {
            let schema = self.node.input_schema.clone();
            let p = self
                .partitions
                .entry(key.clone())
                .or_insert_with(|| Partition {
                    rows: RecordBatch::new_empty(schema),
                    eligible: Vec::new(),
                    dropped: 0,
                    next: 0,
                    matches: 0,
                    covered: 0,
                    last_order: None,
                    replay: Vec::new(),
                    shown: None,
                    held: Vec::new(),
                });
            let mut rows: Vec<u32> = Vec::with_capacity(idx.len());
            // The last row taken whose order value has no NULL. A row whose order value is
            // NULL is taken where it arrives and makes no later row late: NULLs sort last,
            // so over a table they come after every other row, and over a stream one would
            // otherwise hold every later row of its partition behind it.
            let mut last_in_batch: Option<u32> = None;
            for i in idx {
                let o = order.row(i as usize).data();
                if order_cols.iter().any(|c| c.is_null(i as usize)) {
                    rows.push(i);
                    continue;
                }
                let behind = match last_in_batch {
                    Some(j) => o < order.row(j as usize).data(),
                    None => p.last_order.as_deref().is_some_and(|last| o < last),
                };
                if behind {
                    self.late += 1;
                    continue;
                }
                rows.push(i);
                last_in_batch = Some(i);
            }
            if let Some(j) = last_in_batch {
                p.last_order = Some(order.row(j as usize).data().to_vec());
            }
            let h = self.history.min(p.rows.num_rows());
            let tail = p.rows.slice(p.rows.num_rows() - h, h);
            accepted.push(Group { key, rows, tail });
        }
        let bits = self.eligibility(&data, &accepted)?;
        let mut work: Vec<(Group, Partition)> = Vec::with_capacity(accepted.len());
        for group in accepted {
            if let Some(p) = self.partitions.remove(&group.key) {
                work.push((group, p));
            }
        }
        let matched = self.match_partitions(&data, &bits, &mut work);
        for (group, p) in work {
            self.partitions.insert(group.key, p);
        }
        // One batch downstream rather than one per partition with output (a few rows each
        // when many keys share the batch).
        let matched = matched?;
        match matched.first() {
            None => Ok(Vec::new()),
            Some(first) => Ok(vec![concat_batches(&first.schema(), &matched)?]),
        }
    }

    fn state_size(&self) -> usize {
        self.partitions
            .values()
            .map(|p| {
                p.rows.get_array_memory_size()
                    + p.eligible.len() * 8
                    + p.shown.as_ref().map_or(0, partial::Shown::size)
            })
            .sum()
    }

    fn late_rows(&self) -> u64 {
        self.late
    }
}

/// The order column of `rows` as integers (timestamps in their unit, dates in days).
fn order_values(rows: &RecordBatch, col: usize) -> Result<Vec<i64>> {
    let c = rows.column(col);
    let ints = match c.data_type() {
        DataType::Date32 => cast(&cast(c, &DataType::Int32)?, &DataType::Int64)?,
        _ => cast(c, &DataType::Int64)?,
    };
    // NULLs sort last (see `ORDER`): past every bound of a row with a value.
    Ok(ints
        .as_primitive::<Int64Type>()
        .iter()
        .map(|v| v.unwrap_or(i64::MAX))
        .collect())
}
