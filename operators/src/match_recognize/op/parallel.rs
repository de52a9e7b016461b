//! Matching a batch's partitions: they are independent, so a batch of enough rows is
//! matched on several threads, each taking runs of partitions until none is left; the
//! output is in the partitions' order, as on one thread.

use super::{Group, MatchRecognizeOp, Partition};
use brook_common::{brook_err, Result};
use datafusion::arrow::array::UInt32Array;
use datafusion::arrow::compute::{concat_batches, take};
use datafusion::arrow::record_batch::RecordBatch;
use std::collections::VecDeque;
use std::sync::Mutex;

/// Batches of fewer rows are matched on one thread: starting a thread would cost more than
/// it saves.
const PARALLEL_MIN_ROWS: usize = 2048;
/// At most this many threads match one batch's partitions.
pub(super) const MAX_THREADS: usize = 4;
/// Runs of partitions per thread a batch is cut into: a thread that finishes early takes
/// another, so one slow run does not leave the other cores idle.
const RUNS_PER_THREAD: usize = 4;

impl MatchRecognizeOp {
    /// Add each partition's rows of `data` (with their eligibility `bits`) and decide what
    /// they decide; the output batches in the order of `work`. The partitions are
    /// independent, so a batch of enough rows is matched on up to [`MAX_THREADS`] threads:
    /// cut into runs of partitions of about the same number of rows, which the threads take
    /// one at a time until none is left.
    pub(super) fn match_partitions(
        &self,
        data: &RecordBatch,
        bits: &[u64],
        work: &mut [(Group, Partition)],
    ) -> Result<Vec<RecordBatch>> {
        let threads = self.threads.min(work.len());
        if threads < 2 || data.num_rows() < PARALLEL_MIN_ROWS {
            return self.match_run(data, bits, work);
        }
        let per_run = data.num_rows().div_ceil(threads * RUNS_PER_THREAD);
        let mut runs = VecDeque::new();
        let mut rest = work;
        while !rest.is_empty() {
            let mut rows = 0;
            let mut len = 0;
            while len < rest.len() && (len == 0 || rows < per_run) {
                rows += rest[len].0.rows.len();
                len += 1;
            }
            let (run, tail) = std::mem::take(&mut rest).split_at_mut(len);
            runs.push_back((runs.len(), run));
            rest = tail;
        }
        let queue = Mutex::new(runs);
        let worker = || {
            let mut done = Vec::new();
            while let Some((i, run)) = queue.lock().ok().and_then(|mut q| q.pop_front()) {
                done.push((i, self.match_run(data, bits, run)));
            }
            done
        };
        let mut results = std::thread::scope(|scope| {
            // A thread that cannot be started (the system is out of them) leaves its share
            // to the others: this one takes runs until none is left.
            let others: Vec<_> = (1..threads)
                .filter_map(|_| {
                    std::thread::Builder::new()
                        .name("brook-match".into())
                        .spawn_scoped(scope, worker)
                        .ok()
                })
                .collect();
            let mut results = worker();
            // Every thread is joined before any error is returned (a thread not joined that
            // panicked would panic the scope).
            let mut panicked = false;
            for handle in others {
                match handle.join() {
                    Ok(done) => results.extend(done),
                    Err(_) => panicked = true,
                }
            }
            if panicked {
                return Err(brook_err!(
                    Internal,
                    "a MATCH_RECOGNIZE matching thread panicked"
                ));
            }
            Ok(results)
        })?;
        if queue.lock().map_or(true, |q| !q.is_empty()) {
            return Err(brook_err!(
                Internal,
                "MATCH_RECOGNIZE left partitions unmatched"
            ));
        }
        results.sort_by_key(|(i, _)| *i);
        let mut out = Vec::new();
        for (_, batches) in results {
            out.extend(batches?);
        }
        Ok(out)
    }

    /// [`Self::match_partitions`] on the current thread.
    fn match_run(
        &self,
        data: &RecordBatch,
        bits: &[u64],
        work: &mut [(Group, Partition)],
    ) -> Result<Vec<RecordBatch>> {
        let mut out = Vec::new();
        for (group, p) in work.iter_mut() {
            let new = take_batch(data, &group.rows)?;
            p.rows = concat_batches(&self.node.input_schema, [&p.rows, &new])?;
            p.eligible
                .extend(group.rows.iter().map(|&i| bits[i as usize]));
            if let Some(b) = self.advance(p, false)? {
                out.push(b);
            }
        }
        Ok(out)
    }
}

fn take_batch(data: &RecordBatch, idx: &[u32]) -> Result<RecordBatch> {
    let at = UInt32Array::from(idx.to_vec());
    let cols = data
        .columns()
        .iter()
        .map(|c| Ok(take(c.as_ref(), &at, None)?))
        .collect::<Result<Vec<_>>>()?;
    Ok(RecordBatch::try_new(data.schema(), cols)?)
}
