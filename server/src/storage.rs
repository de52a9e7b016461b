//! Durable table and stream data: one append-only log file per relation.
//!
//! A log is a sequence of framed records:
//!
//! ```text
//! magic u32 | kind u8 | txid u64 | len u32 | crc32 u32 | payload[len]
//! ```
//!
//! `kind` is [`KIND_BATCH`] (payload: row count u64 + one Arrow IPC stream holding one
//! batch) or [`KIND_COMMIT`] (payload: one byte, 1 when the transaction replaces the whole
//! relation, as UPDATE/DELETE/ALTER do). A write statement appends its batches, then a commit
//! record, then fsyncs; only then is it acknowledged and made visible.
//!
//! Invariants:
//! - Batches of a transaction become visible only once its commit record is on disk.
//! - Recovery replays committed transactions in log order and stops at the first torn or
//!   corrupt record, truncating the file there: a crash mid-write loses only the unacknowledged
//!   statement.
//! - One writer per relation at a time (an async mutex); readers take a snapshot (`Arc` of the
//!   committed chunk list) and never block writers.
//!
//! Arrow IPC is the on-disk format because the engine computes on Arrow: no conversion on
//! the read path, and the format is stable and well-kept (arrow-ipc).

use brook_common::{BrookError, Result};
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::arrow::ipc::reader::StreamReader;
use datafusion::arrow::ipc::writer::StreamWriter;
use datafusion::arrow::record_batch::RecordBatch;
use std::fs::{File, OpenOptions};
use std::io::{BufReader, Read, Seek, SeekFrom, Write};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};

const MAGIC: u32 = 0x4252_4b31; // "BRK1"
const HEADER_LEN: u64 = 4 + 1 + 8 + 4 + 4;

/// Bytes a transaction writes between background flushes of the log (see
/// [`WriteTxn::append`]).
const FLUSH_EVERY: usize = 32 << 20;
/// Record kind: a batch of rows of a transaction.
pub const KIND_BATCH: u8 = 1;
/// Record kind: a transaction's commit.
pub const KIND_COMMIT: u8 = 2;

/// How many bytes of decoded batches all relations together keep in memory; the rest are
/// read back from their log on scan, so tables larger than memory stay queryable.
#[derive(Debug)]
pub struct CacheBudget {
    remaining: AtomicI64,
}

impl CacheBudget {
    /// A budget of `bytes`.
    pub fn new(bytes: i64) -> Arc<Self> {
        Arc::new(CacheBudget {
            remaining: AtomicI64::new(bytes),
        })
    }

    fn try_take(&self, bytes: usize) -> bool {
        let b = bytes as i64;
        if self.remaining.fetch_sub(b, Ordering::AcqRel) >= b {
            true
        } else {
            self.remaining.fetch_add(b, Ordering::AcqRel);
            false
        }
    }

    fn give_back(&self, bytes: usize) {
        self.remaining.fetch_add(bytes as i64, Ordering::AcqRel);
    }
}

/// One committed batch: where it lies in the log, and its decoded form when cached.
#[derive(Debug)]
pub struct Chunk {
    offset: u64,
    len: u32,
    /// Number of rows in the batch.
    pub rows: usize,
    cached: Option<RecordBatch>,
    budget: Arc<CacheBudget>,
}

impl Drop for Chunk {
    fn drop(&mut self) {
        if let Some(b) = &self.cached {
            self.budget.give_back(b.get_array_memory_size());
        }
    }
}

/// The committed contents of a relation at one moment.
pub type Snapshot = Arc<Vec<Arc<Chunk>>>;

/// The log of one relation.
#[derive(Debug)]
pub struct TableStore {
    path: PathBuf,
    file: Mutex<File>,
    committed: RwLock<Snapshot>,
    write_lock: Arc<tokio::sync::Mutex<()>>,
    next_txid: AtomicU64,
    budget: Arc<CacheBudget>,
    /// Bumped after every commit; continuous queries wait on it.
    commits: tokio::sync::watch::Sender<u64>,
}

impl TableStore {
    /// Create an empty log (the relation is new).
    pub fn create(dir: &Path, budget: Arc<CacheBudget>) -> Result<Arc<TableStore>> {
        std::fs::create_dir_all(dir)?;
        let path = dir.join("data.log");
        let file = OpenOptions::new()
            .create(true)
            .truncate(true)
            .read(true)
            .write(true)
            .open(&path)?;
        file.sync_all()?;
        sync_dir(dir)?;
        Ok(Arc::new(TableStore::new(path, file, Vec::new(), 1, budget)))
    }

    /// Open an existing log and replay it.
    pub fn open(dir: &Path, budget: Arc<CacheBudget>) -> Result<Arc<TableStore>> {
        std::fs::create_dir_all(dir)?;
        let path = dir.join("data.log");
        let mut file = OpenOptions::new()
            .create(true)
            .truncate(false)
            .read(true)
            .write(true)
            .open(&path)?;
        let (chunks, next_txid, valid_len) = replay(&mut file, &budget)?;
        if file.metadata()?.len() != valid_len {
            tracing::warn!(path = %path.display(), valid_len, "truncating torn tail of log");
            file.set_len(valid_len)?;
            file.sync_all()?;
        }
        file.seek(SeekFrom::End(0))?;
        Ok(Arc::new(TableStore::new(
            path, file, chunks, next_txid, budget,
        )))
    }

    fn new(
        path: PathBuf,
        file: File,
        chunks: Vec<Arc<Chunk>>,
        next_txid: u64,
        budget: Arc<CacheBudget>,
    ) -> Self {
        TableStore {
            path,
            file: Mutex::new(file),
            committed: RwLock::new(Arc::new(chunks)),
            write_lock: Arc::new(tokio::sync::Mutex::new(())),
            next_txid: AtomicU64::new(next_txid),
            budget,
            commits: tokio::sync::watch::Sender::new(0),
        }
    }

    /// How many commits the relation has had since it was opened.
    pub fn version(&self) -> u64 {
        *self.commits.borrow()
    }

    /// A receiver that wakes after each commit. Subscribe before taking the snapshot you
    /// diff against, so that no commit in between goes unnoticed.
    pub fn subscribe(&self) -> tokio::sync::watch::Receiver<u64> {
        self.commits.subscribe()
    }

    /// The committed chunks now.
    pub fn snapshot(&self) -> Snapshot {
        match self.committed.read() {
            Ok(g) => g.clone(),
            Err(p) => p.into_inner().clone(),
        }
    }

    /// Committed row count.
    pub fn row_count(&self) -> usize {
        self.snapshot().iter().map(|c| c.rows).sum()
    }

    /// Read a chunk's batch (from cache or from the log).
    pub fn read(&self, chunk: &Chunk) -> Result<RecordBatch> {
        if let Some(b) = &chunk.cached {
            return Ok(b.clone());
        }
        let file = self
            .file
            .lock()
            .map_err(|_| BrookError::internal("log file lock poisoned"))?;
        let mut buf = vec![0u8; chunk.len as usize];
        file.read_exact_at(&mut buf, chunk.offset + HEADER_LEN)?;
        drop(file);
        decode_batch(&buf)
    }

    /// Start a write transaction; waits for the relation's previous writer to finish.
    pub async fn begin(self: &Arc<Self>, replace: bool) -> Result<WriteTxn> {
        let guard = self.write_lock.clone().lock_owned().await;
        let start_len = {
            let f = self
                .file
                .lock()
                .map_err(|_| BrookError::internal("log file lock poisoned"))?;
            f.metadata()?.len()
        };
        let txid = self.next_txid.fetch_add(1, Ordering::AcqRel);
        Ok(WriteTxn {
            store: self.clone(),
            _guard: guard,
            txid,
            start_len,
            chunks: Vec::new(),
            replace,
            done: false,
            unflushed: 0,
            flushing: None,
        })
    }

    fn append_record(&self, kind: u8, txid: u64, payload: &[u8]) -> Result<u64> {
        let mut header = Vec::with_capacity(HEADER_LEN as usize);
        header.extend_from_slice(&MAGIC.to_le_bytes());
        header.push(kind);
        header.extend_from_slice(&txid.to_le_bytes());
        header.extend_from_slice(&(payload.len() as u32).to_le_bytes());
        header.extend_from_slice(&crc32fast::hash(payload).to_le_bytes());
        let mut f = self
            .file
            .lock()
            .map_err(|_| BrookError::internal("log file lock poisoned"))?;
        let offset = f.seek(SeekFrom::End(0))?;
        f.write_all(&header)?;
        f.write_all(payload)?;
        Ok(offset)
    }

    /// Path of the log file.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// A write in progress: its batches are in the log but invisible until [`WriteTxn::commit`].
/// Dropping it without commit rolls the log back to where the transaction began.
pub struct WriteTxn {
    store: Arc<TableStore>,
    _guard: tokio::sync::OwnedMutexGuard<()>,
    txid: u64,
    start_len: u64,
    chunks: Vec<Arc<Chunk>>,
    replace: bool,
    done: bool,
    /// Bytes appended since the last background flush began.
    unflushed: usize,
    /// The background flush in flight, if any; its result must reach the commit (an fsync
    /// error is reported once, to whichever call sees it first).
    flushing: Option<std::thread::JoinHandle<std::io::Result<()>>>,
}

impl WriteTxn {
    /// Append a batch (written to the log now, visible at commit).
    pub fn append(&mut self, batch: &RecordBatch) -> Result<()> {
        if batch.num_rows() == 0 {
            return Ok(());
        }
        let payload = encode_batch(batch)?;
        let offset = self.store.append_record(KIND_BATCH, self.txid, &payload)?;
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
            .map_err(|_| BrookError::internal("log file lock poisoned"))?
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
            Some(Err(_)) => Err(BrookError::internal("log flush thread panicked")),
        }
    }

    /// Rows appended so far.
    pub fn rows(&self) -> usize {
        self.chunks.iter().map(|c| c.rows).sum()
    }

    /// Write the commit record, fsync, and publish the batches.
    pub fn commit(mut self) -> Result<()> {
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
                .map_err(|_| BrookError::internal("log file lock poisoned"))?;
            f.sync_data()?;
        }
        let mut committed = self
            .store
            .committed
            .write()
            .map_err(|_| BrookError::internal("snapshot lock poisoned"))?;
        let mut next: Vec<Arc<Chunk>> = if self.replace {
            Vec::new()
        } else {
            committed.as_ref().clone()
        };
        next.append(&mut self.chunks);
        *committed = Arc::new(next);
        drop(committed);
        self.done = true;
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

fn encode_batch(batch: &RecordBatch) -> Result<Vec<u8>> {
    let mut buf = Vec::with_capacity(batch.get_array_memory_size() + 512);
    buf.extend_from_slice(&(batch.num_rows() as u64).to_le_bytes());
    let mut w = StreamWriter::try_new(&mut buf, batch.schema_ref())?;
    w.write(batch)?;
    w.finish()?;
    drop(w);
    Ok(buf)
}

fn decode_batch(payload: &[u8]) -> Result<RecordBatch> {
    let ipc = payload
        .get(8..)
        .ok_or_else(|| BrookError::internal("short batch record"))?;
    let mut r = StreamReader::try_new(std::io::Cursor::new(ipc), None)?;
    match r.next() {
        Some(b) => Ok(b?),
        None => Err(BrookError::internal("empty batch record")),
    }
}

/// Replays a log: returns the committed chunks, the next transaction id and the length of
/// the valid prefix of the file.
fn replay(file: &mut File, budget: &Arc<CacheBudget>) -> Result<(Vec<Arc<Chunk>>, u64, u64)> {
    file.seek(SeekFrom::Start(0))?;
    let total = file.metadata()?.len();
    let mut r = BufReader::with_capacity(1 << 20, &*file);
    let mut pos = 0u64;
    let mut committed: Vec<Arc<Chunk>> = Vec::new();
    let mut pending: Vec<(u64, Arc<Chunk>)> = Vec::new();
    let mut max_txid = 0u64;
    let mut last_commit_end = 0u64;
    let mut header = [0u8; HEADER_LEN as usize];
    while pos + HEADER_LEN <= total {
        if r.read_exact(&mut header).is_err() {
            break;
        }
        let magic = u32::from_le_bytes([header[0], header[1], header[2], header[3]]);
        let kind = header[4];
        let mut t = [0u8; 8];
        t.copy_from_slice(&header[5..13]);
        let txid = u64::from_le_bytes(t);
        let len = u32::from_le_bytes([header[13], header[14], header[15], header[16]]);
        let crc = u32::from_le_bytes([header[17], header[18], header[19], header[20]]);
        if magic != MAGIC || pos + HEADER_LEN + len as u64 > total {
            break;
        }
        let mut payload = vec![0u8; len as usize];
        if r.read_exact(&mut payload).is_err() || crc32fast::hash(&payload) != crc {
            break;
        }
        max_txid = max_txid.max(txid);
        match kind {
            KIND_BATCH => {
                let mut rows = [0u8; 8];
                rows.copy_from_slice(payload.get(..8).unwrap_or(&[0; 8]));
                let rows = u64::from_le_bytes(rows) as usize;
                let cached = match decode_batch(&payload) {
                    Ok(b) if budget.try_take(b.get_array_memory_size()) => Some(b),
                    _ => None,
                };
                pending.push((
                    txid,
                    Arc::new(Chunk {
                        offset: pos,
                        len,
                        rows,
                        cached,
                        budget: budget.clone(),
                    }),
                ));
            }
            KIND_COMMIT => {
                if payload.first() == Some(&1) {
                    committed.clear();
                }
                let (mine, rest): (Vec<_>, Vec<_>) =
                    pending.into_iter().partition(|(t, _)| *t == txid);
                committed.extend(mine.into_iter().map(|(_, c)| c));
                pending = rest;
                last_commit_end = pos + HEADER_LEN + len as u64;
            }
            _ => break,
        }
        pos += HEADER_LEN + len as u64;
    }
    // One writer at a time writes its batches then its commit, so whatever follows the last
    // commit record belongs to a statement that was never acknowledged: cut it.
    Ok((committed, max_txid + 1, last_commit_end))
}

/// fsync a directory so that a file created or renamed in it survives a crash.
pub fn sync_dir(dir: &Path) -> Result<()> {
    File::open(dir)?.sync_all()?;
    Ok(())
}

/// A schema-checked view: a batch read back from the log, adapted to the relation's current
/// schema (columns matched by name; missing ones are NULL).
pub fn adapt_batch(batch: RecordBatch, schema: &SchemaRef) -> Result<RecordBatch> {
    if batch.schema_ref().fields() == schema.fields() {
        return Ok(batch);
    }
    let mut cols = Vec::with_capacity(schema.fields().len());
    for f in schema.fields() {
        let col = match batch.schema_ref().index_of(f.name()) {
            Ok(i) => {
                let c = batch.column(i).clone();
                if c.data_type() == f.data_type() {
                    c
                } else {
                    datafusion::arrow::compute::cast(&c, f.data_type())?
                }
            }
            Err(_) => datafusion::arrow::array::new_null_array(f.data_type(), batch.num_rows()),
        };
        cols.push(col);
    }
    Ok(RecordBatch::try_new_with_options(
        schema.clone(),
        cols,
        &datafusion::arrow::array::RecordBatchOptions::new().with_row_count(Some(batch.num_rows())),
    )?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::arrow::array::{Int32Array, StringArray};
    use datafusion::arrow::datatypes::{DataType, Field, Schema};

    fn batch(ids: &[i32]) -> RecordBatch {
        let schema = Arc::new(Schema::new(vec![
            Field::new("id", DataType::Int32, false),
            Field::new("s", DataType::Utf8, true),
        ]));
        let s: Vec<String> = ids.iter().map(|i| format!("row{i}")).collect();
        RecordBatch::try_new(
            schema,
            vec![
                Arc::new(Int32Array::from(ids.to_vec())),
                Arc::new(StringArray::from(s)),
            ],
        )
        .unwrap()
    }

    fn ids(store: &TableStore) -> Vec<i32> {
        let mut out = vec![];
        for c in store.snapshot().iter() {
            let b = store.read(c).unwrap();
            let a = b.column(0).as_any().downcast_ref::<Int32Array>().unwrap();
            out.extend(a.values().iter().copied());
        }
        out
    }

    #[tokio::test]
    async fn committed_rows_survive_reopen_and_aborted_do_not() {
        let dir = tempfile::tempdir().unwrap();
        let budget = CacheBudget::new(0); // force reads from disk
        let store = TableStore::create(dir.path(), budget.clone()).unwrap();
        let mut t = store.begin(false).await.unwrap();
        t.append(&batch(&[1, 2])).unwrap();
        t.commit().unwrap();
        let mut t = store.begin(false).await.unwrap();
        t.append(&batch(&[3])).unwrap();
        drop(t); // abort
        let mut t = store.begin(false).await.unwrap();
        t.append(&batch(&[4])).unwrap();
        t.commit().unwrap();
        assert_eq!(ids(&store), vec![1, 2, 4]);
        drop(store);
        let store = TableStore::open(dir.path(), budget).unwrap();
        assert_eq!(ids(&store), vec![1, 2, 4]);
    }

    /// A transaction larger than `FLUSH_EVERY` flushes in the background as it goes, and
    /// an abort after a flush still leaves nothing.
    #[tokio::test]
    async fn a_large_transaction_flushes_as_it_goes() {
        let dir = tempfile::tempdir().unwrap();
        let budget = CacheBudget::new(0);
        let store = TableStore::create(dir.path(), budget.clone()).unwrap();
        // Three batches of 2^20 rows (over 12 MiB each) pass FLUSH_EVERY.
        let rows: Vec<i32> = (0..1 << 20).collect();
        let mut t = store.begin(false).await.unwrap();
        for _ in 0..3 {
            t.append(&batch(&rows)).unwrap();
        }
        assert!(t.flushing.is_some());
        t.commit().unwrap();
        let mut t = store.begin(false).await.unwrap();
        for _ in 0..3 {
            t.append(&batch(&vec![-1; 1 << 20])).unwrap();
        }
        assert!(t.flushing.is_some());
        drop(t); // abort
        drop(store);
        let store = TableStore::open(dir.path(), budget).unwrap();
        assert_eq!(ids(&store).len(), 3 * rows.len());
        assert!(!ids(&store).contains(&-1));
    }

    #[tokio::test]
    async fn replace_commit_hides_older_rows() {
        let dir = tempfile::tempdir().unwrap();
        let budget = CacheBudget::new(1 << 20);
        let store = TableStore::create(dir.path(), budget.clone()).unwrap();
        let mut t = store.begin(false).await.unwrap();
        t.append(&batch(&[1, 2])).unwrap();
        t.commit().unwrap();
        let mut t = store.begin(true).await.unwrap();
        t.append(&batch(&[7])).unwrap();
        t.commit().unwrap();
        assert_eq!(ids(&store), vec![7]);
        drop(store);
        assert_eq!(ids(&TableStore::open(dir.path(), budget).unwrap()), vec![7]);
    }

    #[tokio::test]
    async fn torn_tail_is_cut_and_uncommitted_batches_ignored() {
        let dir = tempfile::tempdir().unwrap();
        let budget = CacheBudget::new(1 << 20);
        let store = TableStore::create(dir.path(), budget.clone()).unwrap();
        let mut t = store.begin(false).await.unwrap();
        t.append(&batch(&[1])).unwrap();
        t.commit().unwrap();
        // a batch without commit, as a crash mid-COPY leaves it, then garbage
        let payload = encode_batch(&batch(&[9])).unwrap();
        store.append_record(KIND_BATCH, 99, &payload).unwrap();
        let path = store.path().to_path_buf();
        drop(store);
        let mut f = OpenOptions::new().append(true).open(&path).unwrap();
        f.write_all(&[1, 2, 3]).unwrap();
        drop(f);
        let store = TableStore::open(dir.path(), budget.clone()).unwrap();
        assert_eq!(ids(&store), vec![1]);
        // the next transaction id is past the uncommitted one
        let mut t = store.begin(false).await.unwrap();
        t.append(&batch(&[2])).unwrap();
        t.commit().unwrap();
        drop(store);
        assert_eq!(
            ids(&TableStore::open(dir.path(), budget).unwrap()),
            vec![1, 2]
        );
    }

    mod batch_boundaries {
        use super::*;
        use proptest::prelude::*;

        proptest! {
            #![proptest_config(ProptestConfig::with_cases(24))]
            /// The stored contents are the rows written, in order, however they were cut into
            /// batches and transactions, before and after a reopen.
            #[test]
            fn contents_do_not_depend_on_batching(txns in proptest::collection::vec(proptest::collection::vec(1usize..40, 1..4), 1..6), budget in prop_oneof![Just(0i64), Just(1i64 << 20)]) {
                let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
                let dir = tempfile::tempdir().unwrap();
                let budget = CacheBudget::new(budget);
                let store = TableStore::create(dir.path(), budget.clone()).unwrap();
                let mut next = 0i32;
                let mut want = Vec::new();
                for sizes in &txns {
                    let mut t = rt.block_on(store.begin(false)).unwrap();
                    for &n in sizes {
                        let ids: Vec<i32> = (next..next + n as i32).collect();
                        next += n as i32;
                        want.extend(ids.iter().copied());
                        t.append(&batch(&ids)).unwrap();
                    }
                    t.commit().unwrap();
                }
                prop_assert_eq!(ids(&store), want.clone());
                drop(store);
                let store = TableStore::open(dir.path(), budget).unwrap();
                prop_assert_eq!(ids(&store), want);
            }
        }
    }
}
