//! The mark join's output: each left row with a boolean, whether it has a match.
//! DataFusion plans `x IN (subquery)` and `EXISTS (...)` under `OR`, `NOT` or `CASE` as a
//! left mark join (`LeftMark`) and filters on the mark.

use super::op::{match_deltas, JoinOp, Pair};
use crate::change;
use brook_common::Result;
use datafusion::arrow::array::{BooleanArray, Int8Array};
use datafusion::arrow::record_batch::RecordBatch;
use std::sync::Arc;

impl JoinOp {
    /// A change on the left: each row with its mark (whether a live right row matches it).
    pub(super) fn emit_marked(
        &self,
        data: &RecordBatch,
        kinds: &Int8Array,
        pairs: &[Pair],
        matched: &[bool],
    ) -> Result<Vec<RecordBatch>> {
        if data.num_rows() == 0 {
            return Ok(Vec::new());
        }
        let has = self.has_match(0, data.num_rows(), pairs, matched)?;
        let mut cols = data.columns().to_vec();
        cols.push(Arc::new(BooleanArray::from(has)));
        Ok(vec![change::attach(
            &self.schema,
            cols,
            Arc::new(kinds.clone()),
        )?])
    }

    /// A change on the right: a left row whose match count leaves or reaches zero is
    /// retracted with its old mark and inserted with its new one (as often as it is live).
    pub(super) fn emit_mark_flips(
        &mut self,
        kinds: &Int8Array,
        pairs: &[Pair],
        matched: &[bool],
    ) -> Result<Vec<RecordBatch>> {
        let delta = match_deltas(kinds, pairs, matched);
        let mut at = Vec::new();
        let mut marks = Vec::new();
        let mut out_kinds = Vec::new();
        let side = &mut self.sides[0];
        for (slot, d) in delta {
            let e = side.entry_mut(slot)?;
            let before = e.matches > 0;
            e.matches += d;
            let after = e.matches > 0;
            if before == after {
                continue;
            }
            for _ in 0..e.count.max(0) {
                at.extend([e.at, e.at]);
                marks.extend([before, after]);
                out_kinds.extend([change::DELETE, change::INSERT]);
            }
        }
        if at.is_empty() {
            return Ok(Vec::new());
        }
        let mut cols = self.held_columns(0, &at)?;
        cols.push(Arc::new(BooleanArray::from(marks)));
        Ok(vec![change::attach(
            &self.schema,
            cols,
            Arc::new(Int8Array::from(out_kinds)),
        )?])
    }
}
