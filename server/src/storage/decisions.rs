//! The commit decisions of transaction blocks that wrote several relations:
//! `<data-dir>/transactions.log`, one record per committed block.
//!
//! Each relation has a log of its own, so a COMMIT that wrote several cannot be one record.
//! It commits in two steps (as two-phase commit's coordinator log does): every relation
//! first gets a commit record naming the block (fsynced), then the block's id is appended
//! here (fsynced) — the moment the block commits — and only then are its rows published.
//! Recovery counts a relation's commit record that names a block only when the block is
//! here, so a crash before this record undoes the block everywhere and a crash after it
//! keeps it everywhere. Records: `magic u32 | block id u64 | crc32 u32` (of the id); a torn
//! last record (a crash while appending it) was never acknowledged and is cut.
//!
//! Written by hand: it is sixteen bytes per record, below what a library would add.

use brook_common::{brook_err, Result};
use std::collections::HashSet;
use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

const MAGIC: u32 = 0x4252_4b44; // "BRKD"
const RECORD_LEN: usize = 16;
/// The file, under the data directory.
pub const DECISIONS_FILE: &str = "transactions.log";

/// The committed blocks, and the file new decisions are appended to.
#[derive(Debug)]
pub struct Decisions {
    file: Mutex<File>,
    committed: HashSet<u64>,
    next_id: AtomicU64,
}

/// The ids of the blocks the file at `path` records (none when it does not exist), and the
/// length of its whole records.
fn read_committed(path: &Path) -> Result<(HashSet<u64>, u64)> {
    let mut bytes = Vec::new();
    match File::open(path) {
        Ok(mut f) => {
            f.read_to_end(&mut bytes)?;
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(e.into()),
    }
    let mut committed = HashSet::new();
    let mut whole = 0u64;
    for (i, rec) in bytes.chunks(RECORD_LEN).enumerate() {
        let Some(id) = parse(rec) else {
            let last = (i + 1) * RECORD_LEN >= bytes.len();
            if last {
                break;
            }
            return Err(brook_err!(DataCorrupted, "{} is damaged at byte offset {}: a record fails its checksum, and later records follow it. Restore the file from a backup; without it, tables written by one transaction block may disagree",
                path.display(),
                i * RECORD_LEN));
        };
        committed.insert(id);
        whole += RECORD_LEN as u64;
    }
    Ok((committed, whole))
}

fn parse(rec: &[u8]) -> Option<u64> {
    let magic = u32::from_le_bytes(rec.get(0..4)?.try_into().ok()?);
    let id = rec.get(4..12)?;
    let crc = u32::from_le_bytes(rec.get(12..16)?.try_into().ok()?);
    (magic == MAGIC && crc32fast::hash(id) == crc)
        .then(|| u64::from_le_bytes(id.try_into().unwrap_or([0; 8])))
}

impl Decisions {
    /// Open (or create) the decisions of `data_dir`, cutting a torn last record.
    pub fn open(data_dir: &Path) -> Result<Decisions> {
        let path = data_dir.join(DECISIONS_FILE);
        let (committed, whole) = read_committed(&path)?;
        let file = OpenOptions::new()
            .create(true)
            .truncate(false)
            .read(true)
            .write(true)
            .open(&path)?;
        if file.metadata()?.len() != whole {
            file.set_len(whole)?;
            file.sync_all()?;
        }
        // Ids are not reused across restarts, not even a block's that never committed (its
        // records were cut, but a damaged log kept aside might still hold one): they start
        // past the last recorded one and past the clock's microseconds.
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_micros() as u64);
        let next = committed.iter().max().map_or(1, |m| m + 1).max(now);
        Ok(Decisions {
            file: Mutex::new(file),
            committed,
            next_id: AtomicU64::new(next),
        })
    }

    /// The committed blocks recorded in `data_dir`, read only (`brook repair`'s check).
    pub fn read(data_dir: &Path) -> Result<HashSet<u64>> {
        Ok(read_committed(&data_dir.join(DECISIONS_FILE))?.0)
    }

    /// Whether block `id` committed (as recorded when the server started).
    pub fn committed(&self, id: u64) -> bool {
        self.committed.contains(&id)
    }

    /// The id of a new block commit.
    pub fn next_id(&self) -> u64 {
        self.next_id.fetch_add(1, Ordering::AcqRel)
    }

    /// Record that block `id` committed, durably: from here on it is committed.
    pub fn record(&self, id: u64) -> Result<()> {
        let mut rec = Vec::with_capacity(RECORD_LEN);
        rec.extend_from_slice(&MAGIC.to_le_bytes());
        rec.extend_from_slice(&id.to_le_bytes());
        rec.extend_from_slice(&crc32fast::hash(&id.to_le_bytes()).to_le_bytes());
        let mut f = self
            .file
            .lock()
            .map_err(|_| brook_err!(Internal, "decision log lock poisoned"))?;
        f.seek(SeekFrom::End(0))?;
        f.write_all(&rec)?;
        f.sync_data()?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decisions_survive_reopen_and_a_torn_record_is_cut() {
        let dir = tempfile::tempdir().unwrap();
        let d = Decisions::open(dir.path()).unwrap();
        let (a, b) = (d.next_id(), d.next_id());
        d.record(a).unwrap();
        drop(d);
        // A crash in the middle of b's record.
        let path = dir.path().join(DECISIONS_FILE);
        let mut f = OpenOptions::new().append(true).open(&path).unwrap();
        f.write_all(&MAGIC.to_le_bytes()).unwrap();
        drop(f);
        let d = Decisions::open(dir.path()).unwrap();
        assert!(d.committed(a));
        assert!(!d.committed(b));
        assert_eq!(std::fs::metadata(&path).unwrap().len(), RECORD_LEN as u64);
        assert!(d.next_id() > b, "ids are not reused after a restart");
    }

    #[test]
    fn damage_before_later_records_refuses() {
        let dir = tempfile::tempdir().unwrap();
        let d = Decisions::open(dir.path()).unwrap();
        d.record(1).unwrap();
        d.record(2).unwrap();
        drop(d);
        let path = dir.path().join(DECISIONS_FILE);
        let mut bytes = std::fs::read(&path).unwrap();
        bytes[5] ^= 0xff;
        std::fs::write(&path, bytes).unwrap();
        let err = Decisions::open(dir.path()).unwrap_err();
        assert!(
            err.to_string().contains("damaged at byte offset 0"),
            "{err}"
        );
    }
}
