//! Durable table and stream data: one append-only log file per relation.
//!
//! A log is a sequence of framed records:
//!
//! ```text
//! magic u32 | kind u8 | txid u64 | len u32 | crc32 u32 | payload[len]
//! ```
//!
//! `kind` is [`KIND_BATCH`] (payload: row count u64 + one Arrow IPC stream holding one
//! batch), [`KIND_COMMIT`] (payload: one byte, 1 when the transaction replaces the whole
//! relation, as UPDATE/DELETE/ALTER do) or [`KIND_RESET`] (the transaction's earlier batches
//! are void: a transaction block rewrote what it had written). A write statement appends its
//! batches, then a commit record, then fsyncs; only then is it acknowledged and made visible.
//! A transaction block (BEGIN ... COMMIT) keeps one transaction per relation it writes, open
//! until COMMIT, under the relation's write lock.
//!
//! Invariants:
//! - Batches of a transaction become visible only once its commit record is on disk.
//! - Recovery replays committed transactions in log order. A bad record (wrong magic, length
//!   past the end, checksum mismatch) followed by nothing but the records of one unfinished
//!   transaction is a torn tail: a crash mid-write, cut back to the last commit (only the
//!   unacknowledged statement is lost). A bad record followed by later transactions is
//!   damage: the log refuses to open ([`BrookError::DataCorrupted`], naming file and
//!   offset) and nothing is cut; `brook repair --salvage` keeps every readable commit.
//! - A log that the catalog names must exist: a missing `data.log` refuses to open, and
//!   creating a relation never overwrites a log holding records.
//! - One writer per relation at a time (an async mutex); readers take a snapshot (`Arc` of the
//!   committed chunk list) and never block writers.
//! - A log that replacing commits (UPDATE, DELETE, TRUNCATE, ALTER) have grown past twice its
//!   live records is compacted right after such a commit, under the write lock: the live
//!   records are written to a new file that is renamed over the log (crash-safe either side
//!   of the rename); snapshots taken before keep reading the old file.
//!
//! Arrow IPC is the on-disk format because the engine computes on Arrow: no conversion on
//! the read path, and the format is stable and well-kept (arrow-ipc).

mod compact;
mod decisions;
mod recover;
mod txn;

pub use decisions::{Decisions, DECISIONS_FILE};
use recover::replay;
pub use recover::{check, names_a_block, salvage, Damage, Salvaged};
pub use txn::{OwnRows, TxnMark, TxnSlot, WriteLock, WriteTxn};

use brook_common::{brook_err, Result};
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::arrow::ipc::reader::StreamReader;
use datafusion::arrow::ipc::writer::StreamWriter;
use datafusion::arrow::record_batch::RecordBatch;
use std::fs::{File, OpenOptions};
use std::io::{Seek, SeekFrom, Write};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};

const MAGIC: u32 = 0x4252_4b31; // "BRK1"
const HEADER_LEN: u64 = 4 + 1 + 8 + 4 + 4;

/// Bytes a transaction writes between background flushes of the log (see
/// [`WriteTxn::append`]).
const FLUSH_EVERY: usize = 32 << 20;
/// A log is compacted once it is larger than twice its live records plus this much.
const COMPACT_SLACK: u64 = 1 << 20;
/// The temporary file a compaction writes before renaming it over `data.log`.
const COMPACT_TMP: &str = "data.log.compact";
/// Record kind: a batch of rows of a transaction.
pub const KIND_BATCH: u8 = 1;
/// Record kind: a transaction's commit.
pub const KIND_COMMIT: u8 = 2;
/// Record kind: the transaction's batches so far are void, and its commit replaces the
/// relation (a statement of a transaction block that rewrites a relation the block wrote
/// before: UPDATE or DELETE after INSERT). Empty payload.
pub const KIND_RESET: u8 = 3;

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
    /// The log file holding it: a compaction writes a new file, and snapshots taken before
    /// it keep reading the old one (still open, though no longer named).
    log: Arc<File>,
    offset: u64,
    len: u32,
    /// Number of rows in the batch.
    pub rows: usize,
    cached: Option<RecordBatch>,
    budget: Arc<CacheBudget>,
}

impl Chunk {
    /// The record's payload, read from its log.
    fn payload(&self) -> Result<Vec<u8>> {
        let mut buf = vec![0u8; self.len as usize];
        self.log.read_exact_at(&mut buf, self.offset + HEADER_LEN)?;
        Ok(buf)
    }
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
    /// The current log file (appends go here; replaced by a compaction).
    file: Mutex<Arc<File>>,
    committed: RwLock<Snapshot>,
    write_lock: Arc<tokio::sync::Mutex<()>>,
    next_txid: AtomicU64,
    budget: Arc<CacheBudget>,
    /// Bumped after every commit; continuous queries wait on it.
    commits: tokio::sync::watch::Sender<u64>,
    /// In a cluster: the position in the cluster's log of the last transaction committed
    /// here (0 before any); kept in each commit record, so that a restarted node applies
    /// every log entry once (see `cluster/`).
    log_position: AtomicU64,
}

impl TableStore {
    /// Create an empty log (the relation is new).
    pub fn create(dir: &Path, budget: Arc<CacheBudget>) -> Result<Arc<TableStore>> {
        std::fs::create_dir_all(dir)?;
        let path = dir.join("data.log");
        // A relation's id is never reused, so a log with records here belongs to something
        // the catalog lost track of: keep it rather than cut it to nothing.
        if std::fs::metadata(&path).is_ok_and(|m| m.len() > 0) {
            return Err(brook_err!(DataCorrupted, "refusing to create relation data in {}: a log with records is already there (run `brook repair` to inspect the data directory)",
                dir.display()));
        }
        let file = OpenOptions::new()
            .create(true)
            .truncate(true)
            .read(true)
            .write(true)
            .open(&path)?;
        file.sync_all()?;
        sync_dir(dir)?;
        Ok(Arc::new(TableStore::new(
            path,
            Arc::new(file),
            Vec::new(),
            1,
            budget,
        )))
    }

    /// Open an existing log written by no transaction block that committed several
    /// relations (tests, tools); see [`TableStore::open_with`].
    pub fn open(dir: &Path, budget: Arc<CacheBudget>) -> Result<Arc<TableStore>> {
        Self::open_with(dir, budget, &|_| false)
    }

    /// Open an existing log and replay it: a torn tail is cut back to the last commit;
    /// a missing log or damage before later commits refuses to open (XX001). A commit
    /// record of a transaction block counts when `committed_block` says the block committed.
    pub fn open_with(
        dir: &Path,
        budget: Arc<CacheBudget>,
        committed_block: &dyn Fn(u64) -> bool,
    ) -> Result<Arc<TableStore>> {
        let path = dir.join("data.log");
        // A compaction interrupted before its rename left only a temporary file.
        let _ = std::fs::remove_file(dir.join(COMPACT_TMP));
        let file = match OpenOptions::new().read(true).write(true).open(&path) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(brook_err!(DataCorrupted, "{} is missing: the catalog names this relation but its data is gone; restore the file from a backup, or drop the relation with `brook repair --forget-missing`",
                    path.display()));
            }
            Err(e) => return Err(e.into()),
        };
        let file = Arc::new(file);
        let replayed = replay(&file, &budget, committed_block)?;
        if let Some(damage) = replayed.damage {
            return Err(brook_err!(DataCorrupted, "{} is damaged at byte offset {}: {}; {} later committed transaction(s) follow it, so it is not a torn tail and nothing was cut. Restore the file from a backup, or run `brook repair --salvage` to keep every readable commit",
                path.display(),
                damage.offset,
                damage.why,
                damage.later_commits));
        }
        let (chunks, next_txid, valid_len) =
            (replayed.committed, replayed.next_txid, replayed.valid_len);
        let log_position = replayed.log_position;
        let len = file.metadata()?.len();
        if len != valid_len {
            tracing::warn!(
                path = %path.display(),
                valid_len,
                cut = len - valid_len,
                "cutting the torn tail of an unacknowledged write"
            );
            file.set_len(valid_len)?;
            file.sync_all()?;
        }
        let store = TableStore::new(path, file, chunks, next_txid, budget);
        store.log_position.store(log_position, Ordering::Release);
        Ok(Arc::new(store))
    }

    fn new(
        path: PathBuf,
        file: Arc<File>,
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
            log_position: AtomicU64::new(0),
        }
    }

    /// In a cluster: the log position of the last transaction committed here (0: none).
    pub fn log_position(&self) -> u64 {
        self.log_position.load(Ordering::Acquire)
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
        decode_batch(&chunk.payload()?)
    }

    /// Start a staged write transaction (a cluster node's statement): it takes no lock and
    /// writes nothing here; its records are kept in memory to be published to the
    /// cluster's log, which orders it and validates it against the writes ordered first.
    /// The relation's log position is read before anything the statement reads, so a
    /// write computed from older rows is never taken for one computed from newer.
    pub fn stage(self: &Arc<Self>, replace: bool) -> WriteTxn {
        let based_on = self.log_position();
        WriteTxn {
            store: self.clone(),
            guard: None,
            txid: 0,
            start_len: 0,
            chunks: Vec::new(),
            replace,
            log_position: None,
            staged: Some(txn::Staged {
                payloads: Vec::new(),
                bytes: 0,
                based_on,
            }),
            done: false,
            unflushed: 0,
            flushing: None,
            statement: None,
            home: None,
            poisoned: false,
        }
    }

    /// Start a write transaction; waits for the relation's previous writer to finish.
    pub async fn begin(self: &Arc<Self>, replace: bool) -> Result<WriteTxn> {
        let guard = self.write_lock.clone().lock_owned().await;
        let start_len = {
            let f = self
                .file
                .lock()
                .map_err(|_| brook_err!(Internal, "log file lock poisoned"))?;
            f.metadata()?.len()
        };
        let txid = self.next_txid.fetch_add(1, Ordering::AcqRel);
        Ok(WriteTxn {
            store: self.clone(),
            guard: Some(guard),
            txid,
            start_len,
            chunks: Vec::new(),
            replace,
            log_position: None,
            staged: None,
            done: false,
            unflushed: 0,
            flushing: None,
            statement: None,
            home: None,
            poisoned: false,
        })
    }

    fn append_record(&self, kind: u8, txid: u64, payload: &[u8]) -> Result<u64> {
        let header = record_header(kind, txid, payload);
        let f = self
            .file
            .lock()
            .map_err(|_| brook_err!(Internal, "log file lock poisoned"))?;
        let mut w: &File = &f;
        let offset = w.seek(SeekFrom::End(0))?;
        w.write_all(&header)?;
        w.write_all(payload)?;
        Ok(offset)
    }

    /// The current log file.
    fn current_file(&self) -> Result<Arc<File>> {
        Ok(self
            .file
            .lock()
            .map_err(|_| brook_err!(Internal, "log file lock poisoned"))?
            .clone())
    }

    /// Path of the log file.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// The header of a record holding `payload`.
fn record_header(kind: u8, txid: u64, payload: &[u8]) -> Vec<u8> {
    let mut header = Vec::with_capacity(HEADER_LEN as usize);
    header.extend_from_slice(&MAGIC.to_le_bytes());
    header.push(kind);
    header.extend_from_slice(&txid.to_le_bytes());
    header.extend_from_slice(&(payload.len() as u32).to_le_bytes());
    header.extend_from_slice(&crc32fast::hash(payload).to_le_bytes());
    header
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

/// A commit record's flag (its payload's first byte): the transaction replaces the relation.
const COMMIT_REPLACES: u8 = 1;
/// A commit record's flag: the commit is one relation's part of a transaction block's, and
/// counts only when the block's decision is recorded (see [`Decisions`]).
const COMMIT_OF_BLOCK: u8 = 2;

/// The payload of a commit record: its flags, then (in a cluster) its position in the
/// cluster's log, then the transaction block it belongs to (after a position of 0 when the
/// commit has none).
fn commit_payload(replace: bool, log_position: Option<u64>, block: Option<u64>) -> Vec<u8> {
    let flags = if replace { COMMIT_REPLACES } else { 0 }
        | if block.is_some() { COMMIT_OF_BLOCK } else { 0 };
    let mut payload = vec![flags];
    if log_position.is_some() || block.is_some() {
        payload.extend_from_slice(&log_position.unwrap_or(0).to_le_bytes());
    }
    if let Some(b) = block {
        payload.extend_from_slice(&b.to_le_bytes());
    }
    payload
}

/// Whether a commit record's payload says its transaction replaces the relation.
fn commit_replaces(payload: &[u8]) -> bool {
    payload.first().is_some_and(|f| f & COMMIT_REPLACES != 0)
}

/// The transaction block a commit record belongs to, if any.
fn commit_block(payload: &[u8]) -> Option<u64> {
    if payload.first().is_some_and(|f| f & COMMIT_OF_BLOCK != 0) {
        payload
            .get(9..17)
            .and_then(|b| b.try_into().ok())
            .map(u64::from_le_bytes)
    } else {
        None
    }
}

/// The log position a commit record's payload carries (0 when it carries none).
fn commit_log_position(payload: &[u8]) -> u64 {
    payload
        .get(1..9)
        .and_then(|b| b.try_into().ok())
        .map_or(0, u64::from_le_bytes)
}

/// The payload of a batch record holding `batch` (what [`decode_payload`] reads).
pub fn encode_payload(batch: &RecordBatch) -> Result<Vec<u8>> {
    encode_batch(batch)
}

/// The batch a batch record's payload holds (what [`WriteTxn::into_payloads`] hands out).
pub fn decode_payload(payload: &[u8]) -> Result<RecordBatch> {
    decode_batch(payload)
}

fn decode_batch(payload: &[u8]) -> Result<RecordBatch> {
    let ipc = payload
        .get(8..)
        .ok_or_else(|| brook_err!(Internal, "short batch record"))?;
    let mut r = StreamReader::try_new(std::io::Cursor::new(ipc), None)?;
    match r.next() {
        Some(b) => Ok(b?),
        None => Err(brook_err!(Internal, "empty batch record")),
    }
}

/// fsync a directory so that a file created or renamed in it survives a crash.
pub fn sync_dir(dir: &Path) -> Result<()> {
    File::open(dir)?.sync_all()?;
    Ok(())
}

/// A schema-checked view: a batch read back from the log, adapted to the relation's current
/// schema (columns matched by name; missing ones are NULL).
///
/// A batch with the schema's column types in the schema's order but other names is taken
/// by position: that is the shape `ALTER TABLE ... RENAME COLUMN` writes, read with the
/// definition of before the rename when the server stopped between the rewrite's commit
/// and the catalog's switch (every other change of names, DROP and ADD, changes the number
/// of columns; each of them rewrites every row, so no older shape survives it).
pub fn adapt_batch(batch: RecordBatch, schema: &SchemaRef) -> Result<RecordBatch> {
    if batch.schema_ref().fields() == schema.fields() {
        return Ok(batch);
    }
    let fields = batch.schema_ref().fields().clone();
    let renamed = fields.len() == schema.fields().len()
        && fields
            .iter()
            .zip(schema.fields())
            .all(|(a, b)| a.data_type() == b.data_type())
        && fields
            .iter()
            .zip(schema.fields())
            .any(|(a, b)| a.name() != b.name());
    if renamed {
        return Ok(RecordBatch::try_new_with_options(
            schema.clone(),
            batch.columns().to_vec(),
            &datafusion::arrow::array::RecordBatchOptions::new()
                .with_row_count(Some(batch.num_rows())),
        )?);
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
    use super::recover::{later_commits_if_damage, Header};
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

    /// Replacing commits grow the log until it is compacted back to its live records; the
    /// contents are the same before and after a reopen, and a snapshot taken before the
    /// compaction still reads its rows.
    #[tokio::test]
    async fn replacing_commits_are_compacted() {
        let dir = tempfile::tempdir().unwrap();
        let budget = CacheBudget::new(0);
        let store = TableStore::create(dir.path(), budget.clone()).unwrap();
        let rows: Vec<i32> = (0..50_000).collect();
        let mut t = store.begin(false).await.unwrap();
        t.append(&batch(&rows)).unwrap();
        t.commit().unwrap();
        let one_version = std::fs::metadata(store.path()).unwrap().len();
        let before = store.snapshot();
        let mut max_len = 0;
        for i in 0..20 {
            let mut t = store.begin(true).await.unwrap();
            t.append(&batch(&rows[i..])).unwrap();
            t.commit().unwrap();
            max_len = max_len.max(std::fs::metadata(store.path()).unwrap().len());
        }
        assert!(
            max_len <= 3 * one_version + COMPACT_SLACK,
            "log grew to {max_len} for {one_version} live bytes"
        );
        assert_eq!(ids(&store), rows[19..].to_vec());
        // The old snapshot's chunk still reads from the file it was written to.
        let old = store.read(&before[0]).unwrap();
        assert_eq!(old.num_rows(), rows.len());
        drop(store);
        let store = TableStore::open(dir.path(), budget).unwrap();
        assert_eq!(ids(&store), rows[19..].to_vec());
        // An interrupted compaction's temporary file is removed at open.
        std::fs::write(dir.path().join(COMPACT_TMP), b"partial").unwrap();
        drop(store);
        let _store = TableStore::open(dir.path(), CacheBudget::new(0)).unwrap();
        assert!(!dir.path().join(COMPACT_TMP).exists());
    }

    /// A bad record followed by later commits is damage: open refuses and cuts nothing;
    /// salvage keeps the readable commits.
    #[tokio::test]
    async fn mid_log_damage_refuses_and_salvage_keeps_later_commits() {
        let dir = tempfile::tempdir().unwrap();
        let budget = CacheBudget::new(0);
        let store = TableStore::create(dir.path(), budget.clone()).unwrap();
        for i in 0..3 {
            let mut t = store.begin(false).await.unwrap();
            t.append(&batch(&[i])).unwrap();
            t.commit().unwrap();
        }
        let path = store.path().to_path_buf();
        drop(store);
        let mut bytes = std::fs::read(&path).unwrap();
        let len = bytes.len();
        bytes[HEADER_LEN as usize + 10] ^= 0xff;
        std::fs::write(&path, &bytes).unwrap();
        let err = TableStore::open(dir.path(), budget.clone()).unwrap_err();
        assert_eq!(err.sqlstate(), "XX001");
        assert!(
            err.to_string().contains("damaged at byte offset 0"),
            "{err}"
        );
        assert_eq!(std::fs::metadata(&path).unwrap().len() as usize, len);
        let d = check(dir.path(), &|_| false).unwrap().unwrap();
        assert_eq!(d.later_commits, 3);
        let s = salvage(dir.path()).unwrap();
        assert_eq!(s.commits, 3);
        assert_eq!(
            ids(&TableStore::open(dir.path(), budget).unwrap()),
            vec![1, 2]
        );
    }

    /// The records after a bad one that can all be one unfinished transaction are a torn
    /// tail, whatever lies between them.
    #[test]
    fn torn_tail_or_damage() {
        let h = |txid, kind| Header {
            magic: MAGIC,
            kind,
            txid,
            len: 0,
            crc: 0,
        };
        assert_eq!(later_commits_if_damage(&[]), None);
        let one_txn = [
            (10, h(5, KIND_BATCH)),
            (90, h(5, KIND_BATCH)),
            (99, h(5, KIND_COMMIT)),
        ];
        assert_eq!(later_commits_if_damage(&one_txn), None);
        let two_txns = [(10, h(5, KIND_COMMIT)), (90, h(6, KIND_BATCH))];
        assert_eq!(later_commits_if_damage(&two_txns), Some(1));
        let after_commit = [(10, h(5, KIND_COMMIT)), (90, h(5, KIND_BATCH))];
        assert_eq!(later_commits_if_damage(&after_commit), Some(1));
    }

    /// Batches are matched to the relation's schema by name (a column added later is
    /// NULL in older batches); one in the same types and order under other names (a
    /// RENAME COLUMN's rewrite read with the definition of before it) by position.
    #[test]
    fn batches_adapt_by_name_and_renames_by_position() {
        use datafusion::arrow::datatypes::{DataType, Field, Schema};
        let batch = |names: [&str; 2]| {
            RecordBatch::try_new(
                Arc::new(Schema::new(vec![
                    Field::new(names[0], DataType::Int32, true),
                    Field::new(names[1], DataType::Utf8, true),
                ])),
                vec![
                    Arc::new(Int32Array::from(vec![1, 2])),
                    Arc::new(StringArray::from(vec!["a", "b"])),
                ],
            )
            .unwrap()
        };
        let wider: SchemaRef = Arc::new(Schema::new(vec![
            Field::new("id", DataType::Int32, true),
            Field::new("name", DataType::Utf8, true),
            Field::new("added", DataType::Int32, true),
        ]));
        let adapted = adapt_batch(batch(["id", "name"]), &wider).unwrap();
        assert_eq!(adapted.column(2).null_count(), 2);
        let before_rename: SchemaRef = Arc::new(Schema::new(vec![
            Field::new("id", DataType::Int32, true),
            Field::new("label", DataType::Utf8, true),
        ]));
        let read = adapt_batch(batch(["id", "name"]), &before_rename).unwrap();
        assert_eq!(read.schema_ref().field(1).name(), "label");
        assert_eq!(read.column(1).null_count(), 0);
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
