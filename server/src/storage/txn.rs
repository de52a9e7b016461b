//! A write transaction: batches appended to the log (flushed in the background as they
//! grow), made durable by one commit record under the relation's write lock.

use super::*;
use brook_common::{brook_err, Result};
use datafusion::arrow::record_batch::RecordBatch;
use std::sync::Arc;

/// A relation's write lock kept past a commit (see [`WriteTxn::commit_holding_lock`]).
pub struct WriteLock {
    _guard: tokio::sync::OwnedMutexGuard<()>,
}

/// A write in progress: its batches are in the log but invisible until [`WriteTxn::commit`].
/// Dropping it without commit rolls the log back to where the transaction began.
pub struct WriteTxn {
    pub(super) store: Arc<TableStore>,
    /// The relation's write lock, held until the transaction ends (or, with
    /// [`WriteTxn::commit_holding_lock`], until the caller lets it go).
    pub(super) guard: Option<tokio::sync::OwnedMutexGuard<()>>,
    pub(super) txid: u64,
    pub(super) start_len: u64,
    pub(super) chunks: Vec<Arc<Chunk>>,
    pub(super) replace: bool,
    pub(super) done: bool,
    /// Bytes appended since the last background flush began.
    pub(super) unflushed: usize,
    /// The background flush in flight, if any; its result must reach the commit (an fsync
    /// error is reported once, to whichever call sees it first).
    pub(super) flushing: Option<std::thread::JoinHandle<std::io::Result<()>>>,
}

impl WriteTxn {
    /// Append a batch (written to the log now, visible at commit).
    pub fn append(&mut self, batch: &RecordBatch) -> Result<()> {
        if batch.num_rows() == 0 {
            return Ok(());
        }
        let payload = encode_batch(batch)?;
        let offset = self.store.append_record(KIND_BATCH, self.txid, &payload)?;
        let log = self.store.current_file()?;
        // A large transaction flushes its log as it goes, on a thread of its own, so that
        // the commit's fsync finds little left to write (it waited on a whole COPY's worth).
        self.unflushed += payload.len();
        if self.unflushed >= FLUSH_EVERY {
            self.start_flush()?;
        }
        let cached = self
            .store
            .budget
            .try_take(batch.get_array_memory_size())
            .then(|| batch.clone());
        self.chunks.push(Arc::new(Chunk {
            log,
            offset,
            len: payload.len() as u32,
            rows: batch.num_rows(),
            cached,
            budget: self.store.budget.clone(),
        }));
        Ok(())
    }

    /// Begin a background fsync of the log, unless one is still running (then the next
    /// batch tries again).
    fn start_flush(&mut self) -> Result<()> {
        if self.flushing.as_ref().is_some_and(|f| !f.is_finished()) {
            return Ok(());
        }
        self.finish_flush()?;
        let file = self
            .store
            .file
            .lock()
            .map_err(|_| brook_err!(Internal, "log file lock poisoned"))?
            .try_clone()?;
        self.flushing = Some(std::thread::spawn(move || file.sync_data()));
        self.unflushed = 0;
        Ok(())
    }

    /// Wait for the background flush, if any, and pass on its error.
    fn finish_flush(&mut self) -> Result<()> {
        match self.flushing.take().map(|f| f.join()) {
            None | Some(Ok(Ok(()))) => Ok(()),
            Some(Ok(Err(e))) => Err(e.into()),
            Some(Err(_)) => Err(brook_err!(Internal, "log flush thread panicked")),
        }
    }

    /// Rows appended so far.
    pub fn rows(&self) -> usize {
        self.chunks.iter().map(|c| c.rows).sum()
    }

    /// Write the commit record, fsync, and publish the batches.
    pub fn commit(mut self) -> Result<()> {
        self.commit_inner()
    }

    /// Commit, and keep the relation's write lock until the returned guard is dropped: a
    /// schema change publishes its catalog entry before the next writer may start.
    pub fn commit_holding_lock(mut self) -> Result<WriteLock> {
        self.commit_inner()?;
        self.guard
            .take()
            .map(|g| WriteLock { _guard: g })
            .ok_or_else(|| brook_err!(Internal, "write lock already released"))
    }

    fn commit_inner(&mut self) -> Result<()> {
        if self.chunks.is_empty() && !self.replace {
            self.done = true;
            return Ok(());
        }
        self.finish_flush()?;
        self.store
            .append_record(KIND_COMMIT, self.txid, &[u8::from(self.replace)])?;
        {
            let f = self
                .store
                .file
                .lock()
                .map_err(|_| brook_err!(Internal, "log file lock poisoned"))?;
            f.sync_data()?;
        }
        // We hold the relation's write lock: nobody else changes the committed list.
        let mut next: Vec<Arc<Chunk>> = if self.replace {
            Vec::new()
        } else {
            self.store.snapshot().as_ref().clone()
        };
        next.append(&mut self.chunks);
        self.done = true;
        if self.replace {
            // The commit is durable already; a failed compaction leaves the log as it is.
            match self.store.compact_if_outgrown(&next) {
                Ok(Some(compacted)) => next = compacted,
                Ok(None) => {}
                Err(e) => tracing::warn!(
                    path = %self.store.path.display(),
                    error = %e,
                    "could not compact the log; it is tried again after the next UPDATE/DELETE"
                ),
            }
        }
        *self
            .store
            .committed
            .write()
            .map_err(|_| brook_err!(Internal, "snapshot lock poisoned"))? = Arc::new(next);
        self.store.commits.send_modify(|v| *v += 1);
        Ok(())
    }
}

impl Drop for WriteTxn {
    fn drop(&mut self) {
        if self.done {
            return;
        }
        // Roll back: cut the log to where this transaction began so aborted rows take no
        // space. Nobody else wrote since: we hold the relation's write lock.
        if let Ok(f) = self.store.file.lock() {
            if let Err(e) = f.set_len(self.start_len) {
                tracing::warn!(error = %e, "could not truncate aborted transaction; recovery will skip it");
            }
        }
    }
}
