//! An open cursor: a query's result stream, read on demand by FETCH.

use crate::stream::progress::Progress;
use crate::stream::registry::QueryStats;
use brook_common::{brook_err, Result};
use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::execution::SendableRecordBatchStream;
use futures::StreamExt;
use std::sync::Arc;

/// An open cursor (`DECLARE name CURSOR FOR query`): the query's result stream, read on
/// demand by FETCH so that only what the client asked for is materialized.
pub(crate) struct Cursor {
    pub(crate) schema: SchemaRef,
    /// Behind a mutex only to make the session `Sync`; it is reached through `&mut self`
    /// (`get_mut`), never locked.
    pub(crate) stream: std::sync::Mutex<SendableRecordBatchStream>,
    /// A batch partly handed out, and how many of its rows were.
    pub(crate) pending: Option<(RecordBatch, usize)>,
    /// `WITH HOLD`: survives the end of the transaction (when it commits).
    pub(crate) hold: bool,
    /// Declared in the open transaction block, after this many of its savepoints: closed
    /// when the block rolls back, or rolls back to one of those savepoints.
    pub(crate) in_block: Option<usize>,
    /// Set for a continuous cursor: its query's statistics. Its stream never ends; FETCH
    /// returns what is ready, waiting up to a timeout for the first rows.
    pub(crate) continuous: Option<Arc<QueryStats>>,
}

impl Cursor {
    /// Up to `n` next rows (all remaining when `n` is None).
    ///
    /// A snapshot cursor (`wait` None) reads until it has `n` rows or its query ends. A
    /// continuous cursor's query never ends: it returns the rows of every commit made
    /// before the FETCH (read-your-writes: a FETCH after an acknowledged INSERT sees its
    /// results), or, when there are none, the first rows that arrive within `wait` (none at
    /// timeout: an empty result, not an error).
    pub(crate) async fn fetch(
        &mut self,
        n: Option<usize>,
        wait: Option<std::time::Duration>,
    ) -> Result<Vec<RecordBatch>> {
        let deadline = wait.map(|w| tokio::time::Instant::now() + w);
        // The input versions committed now: results up to them are due in this FETCH.
        let target = self.continuous.as_ref().and_then(|s| s.progress.visible());
        let mut out: Vec<RecordBatch> = Vec::new();
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
                        Some(d) if out.is_empty() => {
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
                out.push(batch.slice(off, take));
            }
            want -= take;
            if off + take < batch.num_rows() {
                self.pending = Some((batch, off + take));
            }
        }
        Ok(out)
    }
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
