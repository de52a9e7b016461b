//! A write transaction: batches appended to the log (flushed in the background as they
//! grow), made durable by one commit record under the relation's write lock.

use super::*;
use brook_common::{brook_err, BrookError, Result};
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
    /// In a cluster: the position of the log entry this transaction applies.
    pub(super) log_position: Option<u64>,
    /// A staged transaction (see [`TableStore::stage`]): its records, kept in memory and
    /// never written to this log, and the relation's log position when it began.
    pub(super) staged: Option<Staged>,
    pub(super) done: bool,
    /// Bytes appended since the last background flush began.
    pub(super) unflushed: usize,
    /// The background flush in flight, if any; its result must reach the commit (an fsync
    /// error is reported once, to whichever call sees it first).
    pub(super) flushing: Option<std::thread::JoinHandle<std::io::Result<()>>>,
    /// In a transaction block: where the running statement began (see
    /// [`WriteTxn::begin_statement`]).
    pub(super) statement: Option<TxnMark>,
    /// In a transaction block: the slot the transaction goes back to when a statement drops
    /// it unfinished (its records undone, the block's kept).
    pub(super) home: Option<TxnSlot>,
    /// A rewind could not cut the log: records of an undone statement may still be there
    /// under this transaction's id, so it must never commit.
    pub(super) poisoned: bool,
}

/// The rows an open transaction wrote, and whether they replace the committed ones: what
/// the statements of its transaction block read of the relation, put together at each read
/// (the committed list is not copied after every statement of a block).
#[derive(Debug, Clone)]
pub struct OwnRows {
    replace: bool,
    chunks: crate::storage::Snapshot,
}

impl OwnRows {
    /// The relation as the transaction sees it: its rows, after the committed ones unless
    /// it replaces them. (The committed ones do not change meanwhile: the transaction holds
    /// the relation's write lock.)
    pub fn visible(&self, store: &TableStore) -> crate::storage::Snapshot {
        if self.replace {
            return self.chunks.clone();
        }
        let mut v = store.snapshot().as_ref().clone();
        v.extend(self.chunks.iter().cloned());
        Arc::new(v)
    }
}

/// Where a transaction block keeps a relation's open transaction between statements.
pub type TxnSlot = Arc<std::sync::Mutex<Option<WriteTxn>>>;

/// A point of an open transaction to go back to: a statement's start, or a SAVEPOINT.
#[derive(Debug, Clone)]
pub struct TxnMark {
    len: u64,
    chunks: Vec<Arc<Chunk>>,
    replace: bool,
}

/// The records of a staged transaction.
pub(super) struct Staged {
    pub(super) payloads: Vec<Vec<u8>>,
    pub(super) bytes: usize,
    pub(super) based_on: u64,
}

/// Most bytes a staged transaction may hold (a cluster statement's rows; the log's own
/// limit on one atomic batch is about this large too).
const MAX_STAGED_BYTES: usize = 1 << 30;

impl WriteTxn {
    /// Append a batch (written to the log now, visible at commit).
    pub fn append(&mut self, batch: &RecordBatch) -> Result<()> {
        if batch.num_rows() == 0 {
            return Ok(());
        }
        let payload = encode_batch(batch)?;
        if let Some(s) = self.staged.as_mut() {
            s.bytes += payload.len();
            if s.bytes > MAX_STAGED_BYTES {
                return Err(BrookError::Limit {
                    message: format!("a statement may write at most {} MB in cluster mode: split it (e.g. COPY in parts)", MAX_STAGED_BYTES / 1_000_000),
                    code: "54000",
                });
            }
            s.payloads.push(payload);
            return Ok(());
        }
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

    /// Mark this transaction as applying the cluster log's entry at `position` (kept in its
    /// commit record; see [`TableStore::log_position`]).
    pub fn at_log_position(&mut self, position: u64) {
        self.log_position = Some(position);
    }

    /// Whether the transaction replaces the relation's contents (UPDATE, DELETE, ...).
    pub fn replaces(&self) -> bool {
        self.replace
    }

    /// A staged transaction's batch records, as their payloads (see [`decode_payload`]):
    /// what a cluster node publishes instead of committing.
    pub fn into_payloads(mut self) -> Result<Vec<Vec<u8>>> {
        match self.staged.as_mut() {
            Some(s) => Ok(std::mem::take(&mut s.payloads)),
            None => Err(brook_err!(
                Internal,
                "only a staged transaction is published"
            )),
        }
    }

    /// For a staged transaction, the relation's log position when it began: what its rows
    /// were computed from.
    pub fn based_on(&self) -> Option<u64> {
        self.staged.as_ref().map(|s| s.based_on)
    }

    /// Rows appended so far.
    pub fn rows(&self) -> usize {
        match &self.staged {
            Some(s) => s
                .payloads
                .iter()
                .map(|p| {
                    p.get(..8)
                        .and_then(|b| b.try_into().ok())
                        .map_or(0, |b| u64::from_le_bytes(b) as usize)
                })
                .sum(),
            None => self.chunks.iter().map(|c| c.rows).sum(),
        }
    }

    /// Rows the statement running on the transaction wrote (in a block, not the rows of
    /// the block's earlier statements).
    pub fn statement_rows(&self) -> usize {
        let before: usize = self
            .statement
            .as_ref()
            .map_or(0, |m| m.chunks.iter().map(|c| c.rows).sum());
        self.rows().saturating_sub(before)
    }

    /// A statement of a transaction block starts on this transaction (kept in `home` while
    /// the statement runs; see [`WriteTxn::end_statement`]). A statement that `replace`s the
    /// relation voids the batches written so far (a reset record: the statement writes the
    /// whole contents, computed from what the block saw).
    pub fn begin_statement(&mut self, replace: bool, home: TxnSlot) -> Result<()> {
        if self.poisoned || self.staged.is_some() {
            return Err(brook_err!(
                Internal,
                "this transaction cannot take more statements"
            ));
        }
        // (Home first: a failed mark still gives the transaction back to the block.)
        self.home = Some(home);
        self.statement = Some(self.mark()?);
        if replace {
            self.store.append_record(KIND_RESET, self.txid, &[])?;
            self.chunks.clear();
            self.replace = true;
        }
        Ok(())
    }

    /// The statement that began with [`WriteTxn::begin_statement`] succeeded: its rows
    /// stay, and the transaction goes back to its slot for the block's next statement.
    pub fn end_statement(mut self) -> Result<()> {
        let home = self
            .home
            .take()
            .ok_or_else(|| brook_err!(Internal, "the statement's transaction has no block"))?;
        self.statement = None;
        match home.lock() {
            Ok(mut slot) => *slot = Some(self),
            Err(p) => *p.into_inner() = Some(self),
        }
        Ok(())
    }

    /// Whether a statement of a transaction block runs on this transaction (it commits
    /// with the block, not with the statement).
    pub fn in_block(&self) -> bool {
        self.home.is_some()
    }

    /// The point the transaction is at now, to [`WriteTxn::rewind`] to.
    pub fn mark(&mut self) -> Result<TxnMark> {
        // A background flush may still be writing: the length is the log's end for us.
        let len = self.store.current_file()?.metadata()?.len();
        Ok(TxnMark {
            len,
            chunks: self.chunks.clone(),
            replace: self.replace,
        })
    }

    /// Undo what was written since `mark` (ROLLBACK TO SAVEPOINT, a failed statement of a
    /// block): the log is cut back to it. A cut that fails leaves the transaction unable to
    /// commit (its id would commit the undone records).
    pub fn rewind(&mut self, mark: &TxnMark) -> Result<()> {
        let cut = self
            .store
            .file
            .lock()
            .map_err(|_| brook_err!(Internal, "log file lock poisoned"))
            .and_then(|f| Ok(f.set_len(mark.len)?));
        if let Err(e) = cut {
            self.poisoned = true;
            return Err(e);
        }
        self.chunks = mark.chunks.clone();
        self.replace = mark.replace;
        Ok(())
    }

    /// The transaction's own rows so far (see [`OwnRows`]).
    pub fn own_rows(&self) -> OwnRows {
        OwnRows {
            replace: self.replace,
            chunks: Arc::new(self.chunks.clone()),
        }
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

    /// The first step of a transaction block's COMMIT over several relations: write this
    /// relation's commit record naming `block`, and fsync. Nothing is visible yet; the
    /// block commits when its decision is recorded, then [`WriteTxn::publish`] shows the
    /// rows. Dropped before that, the transaction is cut from the log as any other.
    pub fn prepare(&mut self, block: u64) -> Result<()> {
        self.write_commit(Some(block))
    }

    /// The last step of a block's COMMIT, after its decision is recorded: make the rows
    /// visible. (It cannot fail: the block has committed.)
    pub fn publish(mut self) {
        self.publish_inner();
    }

    fn commit_inner(&mut self) -> Result<()> {
        self.check_committable()?;
        if self.chunks.is_empty() && !self.replace {
            self.done = true;
            return Ok(());
        }
        self.write_commit(None)?;
        self.publish_inner();
        Ok(())
    }

    /// Whether this transaction may commit here (not poisoned by a failed rewind, not
    /// staged for a cluster's log).
    fn check_committable(&self) -> Result<()> {
        if self.poisoned {
            return Err(brook_err!(
                Internal,
                "the transaction could not undo a failed statement's rows; it was rolled back"
            ));
        }
        if self.staged.is_some() {
            return Err(brook_err!(
                Internal,
                "a staged transaction is published, not committed"
            ));
        }
        Ok(())
    }

    /// Write the commit record (of `block`, when one of a block's several) and fsync.
    fn write_commit(&mut self, block: Option<u64>) -> Result<()> {
        self.check_committable()?;
        self.finish_flush()?;
        self.store.append_record(
            KIND_COMMIT,
            self.txid,
            &commit_payload(self.replace, self.log_position, block),
        )?;
        {
            let f = self
                .store
                .file
                .lock()
                .map_err(|_| brook_err!(Internal, "log file lock poisoned"))?;
            f.sync_data()?;
        }
        Ok(())
    }

    /// Make the committed batches visible (the commit record is durable already).
    fn publish_inner(&mut self) {
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
            // The position this commit carries (the log position is published only after
            // the rows: a stager must never read a position newer than its snapshot).
            let position = self
                .log_position
                .unwrap_or_else(|| self.store.log_position());
            match self.store.compact_if_outgrown(&next, position) {
                Ok(Some(compacted)) => next = compacted,
                Ok(None) => {}
                Err(e) => tracing::warn!(
                    path = %self.store.path.display(),
                    error = %e,
                    "could not compact the log; it is tried again after the next UPDATE/DELETE"
                ),
            }
        }
        match self.store.committed.write() {
            Ok(mut g) => *g = Arc::new(next),
            Err(p) => *p.into_inner() = Arc::new(next),
        }
        if let Some(p) = self.log_position {
            self.store.log_position.store(p, Ordering::Release);
        }
        self.store.commits.send_modify(|v| *v += 1);
    }
}

impl Drop for WriteTxn {
    fn drop(&mut self) {
        if self.done || self.staged.is_some() {
            return;
        }
        if let Some(home) = self.home.take() {
            // A statement of a transaction block ended without finishing (an error, a
            // cancelled COPY): undo its records and give the block its transaction back.
            if let Some(mark) = self.statement.take() {
                if let Err(e) = self.rewind(&mark) {
                    tracing::warn!(error = %e, "could not undo a failed statement's rows; its transaction block will not commit");
                }
            }
            let back = WriteTxn {
                store: self.store.clone(),
                guard: self.guard.take(),
                txid: self.txid,
                start_len: self.start_len,
                chunks: std::mem::take(&mut self.chunks),
                replace: self.replace,
                log_position: self.log_position,
                staged: None,
                done: false,
                unflushed: self.unflushed,
                flushing: self.flushing.take(),
                statement: None,
                home: None,
                poisoned: self.poisoned,
            };
            self.done = true;
            match home.lock() {
                Ok(mut slot) => *slot = Some(back),
                Err(p) => *p.into_inner() = Some(back),
            }
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

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::arrow::array::{Array, Int32Array};
    use datafusion::arrow::datatypes::{DataType, Field, Schema};

    fn batch(ids: &[i32]) -> RecordBatch {
        let schema = Arc::new(Schema::new(vec![Field::new("id", DataType::Int32, false)]));
        RecordBatch::try_new(schema, vec![Arc::new(Int32Array::from(ids.to_vec()))]).unwrap()
    }

    fn rows(store: &TableStore) -> usize {
        store.snapshot().iter().map(|c| c.rows).sum()
    }

    /// A commit applying a cluster log entry keeps the entry's position through a reopen
    /// and through a compaction (which rewrites the log as one commit).
    #[tokio::test]
    async fn log_position_survives_reopen_and_compaction() {
        let dir = tempfile::tempdir().unwrap();
        let budget = CacheBudget::new(0);
        let store = TableStore::create(dir.path(), budget.clone()).unwrap();
        assert_eq!(store.log_position(), 0);
        let mut t = store.begin(false).await.unwrap();
        t.append(&batch(&[1, 2])).unwrap();
        t.at_log_position(7);
        t.commit().unwrap();
        assert_eq!(store.log_position(), 7);
        // A local commit (a DDL's rewrite without a position) leaves it.
        let mut t = store.begin(false).await.unwrap();
        t.append(&batch(&[3])).unwrap();
        t.commit().unwrap();
        assert_eq!(store.log_position(), 7);
        drop(store);
        let store = TableStore::open(dir.path(), budget.clone()).unwrap();
        assert_eq!(store.log_position(), 7);
        // Replacing commits until the log is compacted.
        let big: Vec<i32> = (0..200_000).collect();
        for position in 8..12 {
            let mut t = store.begin(true).await.unwrap();
            t.append(&batch(&big)).unwrap();
            t.at_log_position(position);
            t.commit().unwrap();
        }
        assert_eq!(store.log_position(), 11);
        drop(store);
        let store = TableStore::open(dir.path(), budget).unwrap();
        assert_eq!(store.log_position(), 11);
        assert_eq!(rows(&store), big.len());
    }

    /// A staged transaction writes nothing to the log, takes no lock, hands its records
    /// out, and keeps the position it began from.
    #[tokio::test]
    async fn a_staged_transaction_writes_nothing_here() {
        let dir = tempfile::tempdir().unwrap();
        let budget = CacheBudget::new(0);
        let store = TableStore::create(dir.path(), budget.clone()).unwrap();
        let mut t = store.begin(false).await.unwrap();
        t.append(&batch(&[1])).unwrap();
        t.at_log_position(3);
        t.commit().unwrap();
        let len = std::fs::metadata(dir.path().join("data.log"))
            .unwrap()
            .len();
        let mut staged = store.stage(false);
        staged.append(&batch(&[5, 6])).unwrap();
        staged.append(&batch(&[7])).unwrap();
        assert_eq!(staged.rows(), 3);
        assert_eq!(staged.based_on(), Some(3));
        // The relation's lock is free meanwhile.
        let other = store.begin(false).await.unwrap();
        drop(other);
        assert!(staged.commit().is_err());
        let mut staged = store.stage(false);
        staged.append(&batch(&[5, 6])).unwrap();
        let payloads = staged.into_payloads().unwrap();
        let decoded: Vec<usize> = payloads
            .iter()
            .map(|p| decode_payload(p).unwrap().column(0).len())
            .collect();
        assert_eq!(decoded, vec![2]);
        assert_eq!(
            std::fs::metadata(dir.path().join("data.log"))
                .unwrap()
                .len(),
            len
        );
        assert_eq!(rows(&store), 1);
    }

    /// A transaction block's statements on one transaction: a replacing statement voids
    /// the batches before it (a reset record, honoured by replay), a failed statement is cut
    /// back and the transaction returns to its slot, and a rewind to a savepoint undoes
    /// what followed it.
    #[tokio::test]
    async fn block_statements_reset_rewind_and_replay() {
        let dir = tempfile::tempdir().unwrap();
        let budget = CacheBudget::new(0);
        let store = TableStore::create(dir.path(), budget.clone()).unwrap();
        let slot: TxnSlot = Arc::new(std::sync::Mutex::new(None));
        let mut t = store.begin(false).await.unwrap();
        t.begin_statement(false, slot.clone()).unwrap();
        t.append(&batch(&[1, 2])).unwrap();
        t.end_statement().unwrap();
        let mut t = slot.lock().unwrap().take().unwrap();
        // UPDATE after the INSERT: the block's rows are rewritten whole.
        t.begin_statement(true, slot.clone()).unwrap();
        t.append(&batch(&[10, 20])).unwrap();
        t.end_statement().unwrap();
        // A statement that fails: dropped unfinished, its rows cut, the block's kept.
        let mut t = slot.lock().unwrap().take().unwrap();
        t.begin_statement(false, slot.clone()).unwrap();
        t.append(&batch(&[99])).unwrap();
        drop(t);
        let t = slot.lock().unwrap().take().unwrap();
        let visible = t.own_rows().visible(&store);
        assert_eq!(visible.iter().map(|c| c.rows).sum::<usize>(), 2);
        assert_eq!(rows(&store), 0, "nothing is visible before the commit");
        t.commit().unwrap();
        drop(store);
        let store = TableStore::open(dir.path(), budget.clone()).unwrap();
        let ids: Vec<i32> = store
            .snapshot()
            .iter()
            .flat_map(|c| {
                let b = store.read(c).unwrap();
                let a = b
                    .column(0)
                    .as_any()
                    .downcast_ref::<Int32Array>()
                    .unwrap()
                    .clone();
                a.values().to_vec()
            })
            .collect();
        assert_eq!(ids, vec![10, 20]);
        // A rewind to a mark taken before a reset brings back what the reset voided.
        let mut t = store.begin(false).await.unwrap();
        t.append(&batch(&[5])).unwrap();
        let mark = t.mark().unwrap();
        t.begin_statement(true, slot.clone()).unwrap();
        t.append(&batch(&[6])).unwrap();
        t.end_statement().unwrap();
        let mut t = slot.lock().unwrap().take().unwrap();
        t.rewind(&mark).unwrap();
        t.commit().unwrap();
        drop(store);
        let store = TableStore::open(dir.path(), budget).unwrap();
        assert_eq!(rows(&store), 3, "10, 20 and 5");
    }

    /// A block's commit over several relations counts only once its decision is recorded:
    /// a crash after the relations' commit records but before the decision keeps none of
    /// them (their records are cut as a torn tail), a crash after it keeps all.
    #[tokio::test]
    async fn a_block_commit_counts_only_with_its_decision() {
        let dir = tempfile::tempdir().unwrap();
        let budget = CacheBudget::new(0);
        let (a_dir, b_dir) = (dir.path().join("a"), dir.path().join("b"));
        let a = TableStore::create(&a_dir, budget.clone()).unwrap();
        let b = TableStore::create(&b_dir, budget.clone()).unwrap();
        let decisions = Decisions::open(dir.path()).unwrap();
        // Crash before the decision: both relations' commit records are on disk.
        let undecided = decisions.next_id();
        let mut ta = a.begin(false).await.unwrap();
        ta.append(&batch(&[1])).unwrap();
        ta.prepare(undecided).unwrap();
        let mut tb = b.begin(false).await.unwrap();
        tb.append(&batch(&[2])).unwrap();
        tb.prepare(undecided).unwrap();
        assert_eq!(
            rows(&a) + rows(&b),
            0,
            "nothing is visible before the decision"
        );
        std::mem::forget(ta);
        std::mem::forget(tb);
        drop((a, b, decisions));
        let decisions = Decisions::open(dir.path()).unwrap();
        let decided = |id| decisions.committed(id);
        let a = TableStore::open_with(&a_dir, budget.clone(), &decided).unwrap();
        let b = TableStore::open_with(&b_dir, budget.clone(), &decided).unwrap();
        assert_eq!(
            rows(&a) + rows(&b),
            0,
            "an undecided block is undone everywhere"
        );
        // A crash right after the decision, before the rows were shown: kept everywhere.
        let id = decisions.next_id();
        let mut ta = a.begin(false).await.unwrap();
        ta.append(&batch(&[3, 4])).unwrap();
        ta.prepare(id).unwrap();
        let mut tb = b.begin(true).await.unwrap();
        tb.append(&batch(&[5])).unwrap();
        tb.prepare(id).unwrap();
        decisions.record(id).unwrap();
        std::mem::forget(ta);
        std::mem::forget(tb);
        drop((a, b, decisions));
        let decisions = Decisions::open(dir.path()).unwrap();
        let decided = |id| decisions.committed(id);
        let a = TableStore::open_with(&a_dir, budget.clone(), &decided).unwrap();
        let b = TableStore::open_with(&b_dir, budget.clone(), &decided).unwrap();
        assert_eq!((rows(&a), rows(&b)), (2, 1));
        assert!(check(&a_dir, &decided).unwrap().is_none());
        // A decided commit followed by later records, read without its decision (the file
        // replaced by an old one): refused, and nothing is cut.
        let mut t = a.begin(false).await.unwrap();
        t.append(&batch(&[6])).unwrap();
        t.commit().unwrap();
        drop(a);
        let len = std::fs::metadata(a_dir.join("data.log")).unwrap().len();
        let err = TableStore::open_with(&a_dir, budget, &|_| false).unwrap_err();
        assert!(err.to_string().contains("later records follow it"), "{err}");
        assert_eq!(
            std::fs::metadata(a_dir.join("data.log")).unwrap().len(),
            len
        );
    }
}
