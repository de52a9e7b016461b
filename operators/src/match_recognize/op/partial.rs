//! `ALL ROWS PER MATCH SHOW PARTIAL MATCHES`: besides the rows of the matches decided, the
//! rows of the attempt still undecided at the end of a partition, as the preferred way
//! they may still match. A lifecycle (`PATTERN (opened bid* closed)`) then shows each
//! event as it arrives with the state so far (`CLASSIFIER()`), not only once `closed`
//! decides the match — what SQL:2016's ALL ROWS PER MATCH cannot say, since it shows a
//! match's rows only when the match is decided.
//!
//! The rows shown for the undecided attempt are remembered per partition. When later rows
//! decide or change it, the output retracts the rows shown that no longer hold and inserts
//! the new ones; rows the attempt still has on the same path (and whose measures read only
//! the match up to them: no `FINAL`) stay as they are, so an attempt growing one row per
//! commit emits one row per commit.

use super::super::measure::OutRow;
use super::super::pattern::Path;
use super::{MatchRecognizeOp, Partition};
use crate::change;
use brook_common::{brook_err, Result};
use datafusion::arrow::compute::concat_batches;
use datafusion::arrow::record_batch::RecordBatch;
use std::sync::Arc;

/// The rows shown for a partition's undecided attempt.
pub(in super::super) struct Shown {
    /// Its first row (as rows of the partition before it), its match number if it
    /// matches, and its path so far.
    start: u64,
    number: i64,
    path: Path,
    /// The output rows shown (its rows not excluded, in order), and the step of the path
    /// each is.
    rows: RecordBatch,
    steps: Vec<usize>,
}

impl Shown {
    /// Bytes held.
    pub(in super::super) fn size(&self) -> usize {
        self.rows.get_array_memory_size() + self.steps.len() * 8 + self.path.vars.len() * 9
    }
}

/// A match decided by this batch: its first row (in the partition's rows kept), number
/// and path.
pub(super) struct Decided {
    pub(super) start: usize,
    pub(super) number: i64,
    pub(super) vars: Arc<Vec<usize>>,
    pub(super) hidden: Vec<bool>,
}

impl MatchRecognizeOp {
    /// The change of the output under `SHOW PARTIAL MATCHES` after `p`'s rows decided
    /// `decided` (whose rows are `rows`) and left the attempt `undecided` open: the rows
    /// shown before that no longer hold, retracted, then the new rows.
    pub(super) fn partial_output(
        &self,
        p: &mut Partition,
        rows: Vec<OutRow>,
        decided: &[Decided],
        undecided: Option<(usize, Path)>,
    ) -> Result<Option<RecordBatch>> {
        let old = p.shown.take();
        let next_number = p.matches + 1;
        // The attempt shown before as it is now (decided, or still open) and how many of
        // its first steps it kept: their rows are shown already.
        let mut same: Option<(usize, i64)> = None;
        let mut kept = 0usize;
        if let (Some(old), false) = (&old, self.measures_read_final) {
            let start = old
                .start
                .checked_sub(p.dropped)
                .and_then(|s| usize::try_from(s).ok())
                .ok_or_else(|| brook_err!(Internal, "a partial match shown lost its rows"))?;
            let now = decided
                .iter()
                .find(|d| d.start == start && d.number == old.number)
                .map(|d| (d.vars.as_slice(), d.hidden.as_slice()))
                .or_else(|| {
                    undecided
                        .as_ref()
                        .filter(|(s, _)| *s == start && next_number == old.number)
                        .map(|(_, path)| (path.vars.as_slice(), path.hidden.as_slice()))
                });
            if let Some((vars, hidden)) = now {
                same = Some((start, old.number));
                kept = old
                    .path
                    .vars
                    .iter()
                    .zip(&old.path.hidden)
                    .zip(vars.iter().zip(hidden))
                    .take_while(|((v, h), (w, g))| v == w && h == g)
                    .count();
            }
        }
        let shown_already = |o: &OutRow| match (&o.matched, same) {
            (Some((s, _, n)), Some((start, number))) => {
                *s == start && *n == number && o.row - s < kept
            }
            _ => false,
        };
        let mut out: Vec<OutRow> = rows.into_iter().filter(|o| !shown_already(o)).collect();
        let first_undecided = out.len();
        let mut steps = Vec::new();
        if let Some((start, path)) = &undecided {
            let vars = Arc::new(path.vars.clone());
            for j in (0..path.vars.len()).filter(|j| !path.hidden[*j]) {
                let o = OutRow {
                    row: start + j,
                    matched: Some((*start, vars.clone(), next_number)),
                    upto: start + j,
                };
                if !shown_already(&o) {
                    out.push(o);
                    steps.push(j);
                }
            }
        }
        let schema = &self.node.schema;
        let inserted = self.output(&p.rows, &out)?;
        // The rows shown before: those of the steps kept stay, the others are retracted.
        let (stay, retracted) = match &old {
            Some(old) => {
                let cut = old.steps.partition_point(|j| *j < kept);
                let n = old.rows.num_rows();
                (
                    Some((old.rows.slice(0, cut), &old.steps[..cut])),
                    old.rows.slice(cut, n - cut),
                )
            }
            None => (None, RecordBatch::new_empty(schema.clone())),
        };
        if let Some((start, path)) = undecided {
            let fresh = inserted.slice(first_undecided, inserted.num_rows() - first_undecided);
            let (rows, steps) = match stay {
                Some((rows, kept_steps)) if same == Some((start, next_number)) => {
                    let mut all = kept_steps.to_vec();
                    all.extend(steps);
                    (concat_batches(schema, [&rows, &fresh])?, all)
                }
                _ => (fresh, steps),
            };
            p.shown = Some(Shown {
                start: p.dropped + start as u64,
                number: next_number,
                path,
                rows,
                steps,
            });
        }
        if retracted.num_rows() == 0 && inserted.num_rows() == 0 {
            return Ok(None);
        }
        let data = concat_batches(schema, [&retracted, &inserted])?;
        let mut kinds = vec![change::DELETE; retracted.num_rows()];
        kinds.resize(data.num_rows(), change::INSERT);
        let kinds = Arc::new(datafusion::arrow::array::Int8Array::from(kinds));
        Ok(Some(change::attach(
            schema,
            data.columns().to_vec(),
            kinds,
        )?))
    }
}
