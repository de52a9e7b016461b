//! An open cursor: a query's result stream, read on demand by FETCH.

use crate::exec::cancellable::StatementCancel;
use crate::stream::progress::Progress;
use crate::stream::registry::QueryStats;
use brook_common::{brook_err, BrookError, Result};
use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::execution::SendableRecordBatchStream;
use futures::StreamExt;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

/// An open cursor (`DECLARE name CURSOR FOR query`): the query's result stream, read on
/// demand by FETCH so that only what the client asked for is materialized.
pub(crate) struct Cursor {
    pub(crate) schema: SchemaRef,
    /// Behind a mutex only to make the session `Sync`; it is reached through `&mut self`
    /// (`get_mut`), never locked.
    pub(crate) stream: std::sync::Mutex<SendableRecordBatchStream>,
    /// A batch partly handed out, and how many of its rows were.
    pub(crate) pending: Option<(RecordBatch, usize)>,
    /// Where the cursor is, as PostgreSQL counts it: on row `position` (1 the first), 0
    /// before the first; after the last, one past it.
    pub(crate) position: usize,
    /// The row the cursor is on (`FETCH RELATIVE 0` returns it again); None before the
    /// first row and after the last.
    pub(crate) on_row: Option<RecordBatch>,
    /// A snapshot cursor that read past its last row.
    pub(crate) at_end: bool,
    /// `WITH HOLD`: survives the end of the transaction (when it commits).
    pub(crate) hold: bool,
    /// Declared in the open transaction block, after this many of its savepoints: closed
    /// when the block rolls back, or rolls back to one of those savepoints.
    pub(crate) in_block: Option<usize>,
    /// Set for a continuous cursor: its query's statistics. Its stream never ends; FETCH
    /// returns what is ready, waiting up to a timeout for the first rows.
    pub(crate) continuous: Option<Arc<QueryStats>>,
    /// A snapshot cursor's plan computes while FETCH reads it: each FETCH puts its token
    /// in (see [`crate::exec::cancellable::StatementCancel`]).
    pub(crate) cancel: Option<StatementCancel>,
    /// The token of the last FETCH or MOVE. Cancelled, it stopped the query (or the
    /// reading of its rows) part way: the cursor has failed.
    pub(crate) fetched_by: Option<CancellationToken>,
    /// A FETCH failed or was cancelled: the rows it took are gone, so the cursor answers
    /// no more (55000, as PostgreSQL's failed portal) until it is closed.
    pub(crate) failed: bool,
}

impl Drop for Cursor {
    /// A closed cursor's query stops computing (a task of its plan may be mid-way).
    fn drop(&mut self) {
        if let Some(plan) = &self.cancel {
            let closed = CancellationToken::new();
            closed.cancel();
            plan.replace(closed);
        }
    }
}

/// Where a FETCH or MOVE goes: PostgreSQL's directions that move forward (Brook's cursors
/// do not scroll back; the handler refuses the others with 55000).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Step {
    /// The next `n` rows; with None, all that remain.
    Next(Option<usize>),
    /// Pass over `skip` rows, then go to the one after them (`ABSOLUTE n`, `RELATIVE n`).
    Ahead { skip: usize },
    /// Stay on the current row and return it again (`RELATIVE 0`, `FORWARD 0`).
    Current,
    /// Go to the `k`-th row from the end (`LAST`, `ABSOLUTE -k`): reads to the end.
    FromEnd(usize),
}

impl Cursor {
    /// A cursor before its first row.
    pub(crate) fn new(
        schema: SchemaRef,
        stream: SendableRecordBatchStream,
        hold: bool,
        in_block: Option<usize>,
        continuous: Option<Arc<QueryStats>>,
    ) -> Self {
        Cursor {
            schema,
            stream: std::sync::Mutex::new(stream),
            pending: None,
            position: 0,
            on_row: None,
            at_end: false,
            hold,
            in_block,
            continuous,
            cancel: None,
            fetched_by: None,
            failed: false,
        }
    }

    /// Move by `step`: the rows it lands on (when `keep`; MOVE passes `false` and gets
    /// none), and how many rows it returned or moved over, as PostgreSQL's FETCH and MOVE
    /// tags count them.
    ///
    /// A snapshot cursor that runs out is after its last row. A continuous cursor never
    /// runs out: it stops where the rows ready within `wait` end (see [`Cursor::read`]).
    pub(crate) async fn step(
        &mut self,
        step: Step,
        wait: Option<std::time::Duration>,
        keep: bool,
    ) -> Result<(Vec<RecordBatch>, usize)> {
        match step {
            Step::Current => Ok(self.current(keep)),
            Step::Next(n) => self.next_rows(n, wait, keep).await,
            Step::Ahead { skip } => {
                let mut last = None;
                let passed = self
                    .read(Some(skip), wait, |b| {
                        last = Some(b.slice(b.num_rows() - 1, 1))
                    })
                    .await?;
                self.moved(passed, last, passed < skip);
                if passed < skip {
                    return Ok((vec![], 0));
                }
                self.next_rows(Some(1), wait, keep).await
            }
            Step::FromEnd(k) => self.go_to_kth_last(k, keep).await,
        }
    }

    /// The row the cursor is on, again.
    fn current(&self, keep: bool) -> (Vec<RecordBatch>, usize) {
        match &self.on_row {
            Some(row) => (if keep { vec![row.clone()] } else { vec![] }, 1),
            None => (vec![], 0),
        }
    }

    /// The next `n` rows (all with None).
    async fn next_rows(
        &mut self,
        n: Option<usize>,
        wait: Option<std::time::Duration>,
        keep: bool,
    ) -> Result<(Vec<RecordBatch>, usize)> {
        let mut out = Vec::new();
        let mut last = None;
        let count = self
            .read(n, wait, |b| {
                last = Some(b.slice(b.num_rows() - 1, 1));
                if keep {
                    out.push(b);
                }
            })
            .await?;
        self.moved(count, last, n.is_none_or(|n| count < n));
        Ok((out, count))
    }

    /// `FETCH LAST` / `ABSOLUTE -k`: read to the end keeping the last `k` rows; the cursor
    /// goes to the first of them and the others are handed out next. (Of a snapshot cursor:
    /// a continuous one has no end, see [`no_last_row`].)
    async fn go_to_kth_last(&mut self, k: usize, keep: bool) -> Result<(Vec<RecordBatch>, usize)> {
        let mut tail: std::collections::VecDeque<RecordBatch> = Default::default();
        let mut held = 0;
        let count = self
            .read(None, None, |b| {
                held += b.num_rows();
                tail.push_back(b);
                while held > k {
                    let Some(front) = tail.pop_front() else { break };
                    let extra = held - k;
                    if front.num_rows() > extra {
                        tail.push_front(front.slice(extra, front.num_rows() - extra));
                        held -= extra;
                    } else {
                        held -= front.num_rows();
                    }
                }
            })
            .await?;
        let tail = tail.into_iter().collect::<Vec<_>>();
        let rows = datafusion::arrow::compute::concat_batches(&self.schema, &tail)?;
        if count >= k && k > 0 {
            // On the first of the last k rows; the rest come next.
            self.position += count - k + 1;
            self.on_row = Some(rows.slice(0, 1));
            self.at_end = false;
            self.pending = (k > 1).then_some((rows, 1));
            return Ok(self.current(keep));
        }
        // The row is the current one, or behind it: every row read is handed out next.
        self.pending = (rows.num_rows() > 0).then_some((rows, 0));
        if k == count + 1 && self.on_row.is_some() {
            return Ok(self.current(keep));
        }
        Err(backward("FETCH LAST"))
    }

    /// After moving over `count` rows, the last of them `last`: where the cursor is.
    /// `ran_out`: fewer rows came than asked, which ends a snapshot cursor.
    fn moved(&mut self, count: usize, last: Option<RecordBatch>, ran_out: bool) {
        if self.at_end {
            return;
        }
        self.position += count;
        if last.is_some() {
            self.on_row = last;
        }
        if ran_out && self.continuous.is_none() {
            self.position += 1;
            self.on_row = None;
            self.at_end = true;
        }
    }

    /// Up to `n` next rows (all remaining when `n` is None), handed to `each` in slices;
    /// how many there were.
    ///
    /// A snapshot cursor (`wait` None) reads until it has `n` rows or its query ends. A
    /// continuous cursor's query never ends: it returns the rows of every commit made
    /// before the FETCH (read-your-writes: a FETCH after an acknowledged INSERT sees its
    /// results), or, when there are none, the first rows that arrive within `wait` (none at
    /// timeout: an empty result, not an error).
    async fn read(
        &mut self,
        n: Option<usize>,
        wait: Option<std::time::Duration>,
        mut each: impl FnMut(RecordBatch),
    ) -> Result<usize> {
        let deadline = wait.map(|w| tokio::time::Instant::now() + w);
        // The input versions committed now: results up to them are due in this FETCH.
        let target = self.continuous.as_ref().and_then(|s| s.progress.visible());
        let mut count = 0;
        let mut want = n.unwrap_or(usize::MAX);
        while want > 0 {
            let (batch, off) = match self.pending.take() {
                Some(p) => p,
                None => {
                    let stream = self
                        .stream
                        .get_mut()
                        .map_err(|_| brook_err!(Internal, "cursor poisoned"))?;
                    let next = match deadline {
                        None => stream.next().await,
                        Some(d) if count == 0 => {
                            match tokio::time::timeout_at(d, stream.next()).await {
                                Ok(next) => next,
                                Err(_) => break,
                            }
                        }
                        Some(d) => {
                            let due = self
                                .continuous
                                .as_ref()
                                .map(|s| &s.progress)
                                .zip(target.as_deref());
                            match next_due(stream, due, d).await {
                                Some(next) => next,
                                None => break,
                            }
                        }
                    };
                    match next {
                        Some(b) => (b?, 0),
                        None => break,
                    }
                }
            };
            let left = batch.num_rows() - off;
            let take = left.min(want);
            if take > 0 {
                each(batch.slice(off, take));
            }
            count += take;
            want -= take;
            if off + take < batch.num_rows() {
                self.pending = Some((batch, off + take));
            }
        }
        Ok(count)
    }
}

/// 55000 for `FETCH LAST` or `ABSOLUTE -k` of a continuous cursor.
pub(crate) fn no_last_row() -> BrookError {
    brook_err!(
        ObjectState,
        "a continuous cursor has no last row (its query never ends): FETCH LAST and FETCH \
         ABSOLUTE with a negative count read to the end"
    )
}

/// 55000 for a FETCH or MOVE that would go back (`what` as written).
pub(crate) fn backward(what: &str) -> BrookError {
    brook_err!(
        ObjectState,
        "cursor can only scan forward ({what}: Brook's cursors do not scroll back)"
    )
}

/// The next batch of a continuous cursor that has rows already: one ready now, or one
/// still due for the commits made before the FETCH (`due`: the query and those commits'
/// versions), waiting for it until `deadline`. `None` when nothing more is due.
async fn next_due(
    stream: &mut SendableRecordBatchStream,
    due: Option<(&Progress, &[u64])>,
    deadline: tokio::time::Instant,
) -> Option<Option<datafusion::error::Result<RecordBatch>>> {
    use futures::FutureExt;
    let mut covered = false;
    loop {
        if let Some(next) = stream.next().now_or_never() {
            return Some(next);
        }
        // The results cover the commits: every batch of theirs was sent before they did,
        // so it was ready above.
        if covered {
            return None;
        }
        let (progress, target) = due?;
        if progress.covers(target) {
            covered = true;
            continue;
        }
        let wait = futures::future::select(stream.next(), Box::pin(progress.covered(target)));
        match tokio::time::timeout_at(deadline, wait).await {
            Ok(futures::future::Either::Left((next, _))) => return Some(next),
            Ok(futures::future::Either::Right(((), _))) => covered = true,
            Err(_) => return None,
        }
    }
}
