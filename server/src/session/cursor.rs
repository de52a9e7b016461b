//! An open cursor: a query's result stream, read on demand by FETCH.

use crate::stream::queries::QueryStats;
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
    /// continuous cursor's query never ends: it returns what is ready now, or, when nothing
    /// is, the first rows that arrive within `wait` (none at timeout: an empty result, not
    /// an error).
    pub(crate) async fn fetch(
        &mut self,
        n: Option<usize>,
        wait: Option<std::time::Duration>,
    ) -> Result<Vec<RecordBatch>> {
        use futures::FutureExt;
        let deadline = wait.map(|w| tokio::time::Instant::now() + w);
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
                        Some(_) => match stream.next().now_or_never() {
                            Some(next) => next,
                            None => break,
                        },
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
