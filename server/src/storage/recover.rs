//! Recovery: replaying a log's committed transactions at open, telling a torn tail (cut
//! off) from damage before later commits (refused, naming file and offset), and the salvage
//! and check that `brook repair` runs.

use super::*;
use brook_common::{brook_err, BrookError, Result};
use std::fs::File;
use std::io::{BufReader, Read, Seek, SeekFrom, Write};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Damage found before later commits: the log must not be cut there.
#[derive(Debug, Clone, PartialEq)]
pub struct Damage {
    /// Byte offset of the first bad record.
    pub offset: u64,
    /// What is wrong with it.
    pub why: &'static str,
    /// Valid commit records after it.
    pub later_commits: usize,
}

/// What replaying a log found.
pub(super) struct Replayed {
    pub(super) committed: Vec<Arc<Chunk>>,
    pub(super) next_txid: u64,
    /// Length of the prefix up to the last commit record.
    pub(super) valid_len: u64,
    /// The highest cluster log position a commit carries (0: none).
    pub(super) log_position: u64,
    /// Set when a bad record is followed by more than one unfinished transaction.
    pub(super) damage: Option<Damage>,
}

/// One record's header.
#[derive(Debug, Clone, Copy)]
pub(super) struct Header {
    pub(super) magic: u32,
    pub(super) kind: u8,
    pub(super) txid: u64,
    pub(super) len: u32,
    pub(super) crc: u32,
}

impl Header {
    fn parse(b: &[u8; HEADER_LEN as usize]) -> Header {
        let u32_at = |i: usize| u32::from_le_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]]);
        let mut t = [0u8; 8];
        t.copy_from_slice(&b[5..13]);
        Header {
            magic: u32_at(0),
            kind: b[4],
            txid: u64::from_le_bytes(t),
            len: u32_at(13),
            crc: u32_at(17),
        }
    }
}

/// The record at `pos` when it is whole and its checksum holds (header and payload).
pub(super) fn record_at(file: &File, pos: u64, total: u64) -> Option<(Header, Vec<u8>)> {
    if pos + HEADER_LEN > total {
        return None;
    }
    let mut hb = [0u8; HEADER_LEN as usize];
    file.read_exact_at(&mut hb, pos).ok()?;
    let h = Header::parse(&hb);
    if h.magic != MAGIC
        || !matches!(h.kind, KIND_BATCH | KIND_COMMIT | KIND_RESET)
        || pos + HEADER_LEN + u64::from(h.len) > total
    {
        return None;
    }
    let mut payload = vec![0u8; h.len as usize];
    file.read_exact_at(&mut payload, pos + HEADER_LEN).ok()?;
    (crc32fast::hash(&payload) == h.crc).then_some((h, payload))
}

/// The first whole record starting after `from`, found by looking for the magic at every
/// byte (damage can shift record boundaries), accepted only when its checksum holds. Used
/// only when a log has a bad record, so its cost does not matter on the normal path.
pub(super) fn next_record(file: &File, from: u64, total: u64) -> Result<Option<(u64, Header)>> {
    let magic = MAGIC.to_le_bytes();
    let mut buf = vec![0u8; 1 << 20];
    let mut pos = from + 1;
    while pos + HEADER_LEN <= total {
        let n = ((total - pos) as usize).min(buf.len());
        file.read_exact_at(&mut buf[..n], pos)?;
        for i in 0..n.saturating_sub(3) {
            if buf[i..i + 4] == magic {
                let at = pos + i as u64;
                if let Some((h, _)) = record_at(file, at, total) {
                    return Ok(Some((at, h)));
                }
            }
        }
        // A magic may straddle the window's end: the next window starts 3 bytes back.
        pos += (n as u64).saturating_sub(3).max(1);
    }
    Ok(None)
}

/// Every whole record after a bad one at `bad`, in order.
pub(super) fn records_after(file: &File, bad: u64, total: u64) -> Result<Vec<(u64, Header)>> {
    let mut found = Vec::new();
    let mut from = bad;
    while let Some((mut at, h)) = next_record(file, from, total)? {
        found.push((at, h));
        at += HEADER_LEN + u64::from(h.len);
        // Records after the damage usually follow one another: read them in turn.
        while let Some((h, _)) = record_at(file, at, total) {
            found.push((at, h));
            at += HEADER_LEN + u64::from(h.len);
        }
        if at >= total {
            break;
        }
        from = at;
    }
    Ok(found)
}

/// Whether the valid records after a bad one can all be the unfinished tail of one
/// transaction (a crash mid-write): one transaction id, nothing after its commit. If so
/// the bad record is a torn tail; otherwise it is damage, and the number of later commits.
pub(super) fn later_commits_if_damage(after: &[(u64, Header)]) -> Option<usize> {
    let torn = after.iter().all(|(_, h)| h.txid == after[0].1.txid)
        && after
            .iter()
            .position(|(_, h)| h.kind == KIND_COMMIT)
            .is_none_or(|i| i + 1 == after.len());
    if after.is_empty() || torn {
        None
    } else {
        Some(after.iter().filter(|(_, h)| h.kind == KIND_COMMIT).count())
    }
}

/// Replays a log from the start: the committed chunks, the next transaction id, the length
/// of the prefix up to the last commit, and damage if a bad record precedes later commits.
pub(super) fn replay(
    file: &Arc<File>,
    budget: &Arc<CacheBudget>,
    committed_block: &dyn Fn(u64) -> bool,
) -> Result<Replayed> {
    (&**file).seek(SeekFrom::Start(0))?;
    let total = file.metadata()?.len();
    let mut r = BufReader::with_capacity(1 << 20, &**file);
    let mut pos = 0u64;
    let mut committed: Vec<Arc<Chunk>> = Vec::new();
    let mut pending: Vec<(u64, Arc<Chunk>)> = Vec::new();
    let mut max_txid = 0u64;
    let mut log_position = 0u64;
    let mut last_commit_end = 0u64;
    // A block's commit record whose decision is missing, and where it is.
    let mut undecided: Option<(u64, u64)> = None;
    let mut header = [0u8; HEADER_LEN as usize];
    let mut bad: Option<&'static str> = None;
    while pos < total {
        if pos + HEADER_LEN > total || r.read_exact(&mut header).is_err() {
            bad = Some("a record header is cut short");
            break;
        }
        let h = Header::parse(&header);
        if h.magic != MAGIC {
            bad = Some("a record does not start with the log's magic number");
            break;
        }
        if pos + HEADER_LEN + u64::from(h.len) > total {
            bad = Some("a record's length runs past the end of the file");
            break;
        }
        let mut payload = vec![0u8; h.len as usize];
        if r.read_exact(&mut payload).is_err() {
            bad = Some("a record's payload is cut short");
            break;
        }
        if crc32fast::hash(&payload) != h.crc {
            bad = Some("a record fails its checksum");
            break;
        }
        // A block's COMMIT holds the relation's lock until it is decided or cut, so nothing
        // follows an undecided commit but a crash's torn bytes: the decision was lost.
        if let Some((block, at)) = undecided {
            return Err(brook_err!(DataCorrupted, "the commit record at byte offset {at} belongs to transaction block {block}, which {} does not record, and later records follow it: that file is missing, emptied or was replaced. Restore it from a backup; nothing was cut",
                super::DECISIONS_FILE));
        }
        max_txid = max_txid.max(h.txid);
        match h.kind {
            KIND_BATCH => {
                let mut rows = [0u8; 8];
                rows.copy_from_slice(payload.get(..8).unwrap_or(&[0; 8]));
                let rows = u64::from_le_bytes(rows) as usize;
                let cached = match decode_batch(&payload) {
                    Ok(b) if budget.try_take(b.get_array_memory_size()) => Some(b),
                    _ => None,
                };
                pending.push((
                    h.txid,
                    Arc::new(Chunk {
                        log: file.clone(),
                        offset: pos,
                        len: h.len,
                        rows,
                        cached,
                        budget: budget.clone(),
                    }),
                ));
            }
            KIND_RESET => pending.retain(|(t, _)| *t != h.txid),
            // A block's commit whose decision was never recorded (a crash in the middle of
            // its COMMIT): not a commit, so its records are an unfinished transaction's.
            KIND_COMMIT if commit_block(&payload).is_some_and(|b| !committed_block(b)) => {
                undecided = commit_block(&payload).map(|b| (b, pos));
            }
            KIND_COMMIT => {
                log_position = log_position.max(commit_log_position(&payload));
                if commit_replaces(&payload) {
                    committed.clear();
                }
                let (mine, rest): (Vec<_>, Vec<_>) =
                    pending.into_iter().partition(|(t, _)| *t == h.txid);
                committed.extend(mine.into_iter().map(|(_, c)| c));
                pending = rest;
                last_commit_end = pos + HEADER_LEN + u64::from(h.len);
            }
            _ => {
                bad = Some("a record has an unknown kind");
                break;
            }
        }
        pos += HEADER_LEN + u64::from(h.len);
    }
    drop(r);
    let mut damage = None;
    if let Some(why) = bad {
        let after = records_after(file, pos, total)?;
        if let Some(later_commits) = later_commits_if_damage(&after) {
            damage = Some(Damage {
                offset: pos,
                why,
                later_commits,
            });
        }
        if let Some((_, h)) = after.last() {
            max_txid = max_txid.max(h.txid);
        }
    }
    // One writer at a time writes its batches then its commit, so whatever follows the last
    // commit record (when no damage was found) belongs to a statement that was never
    // acknowledged: the caller cuts it.
    Ok(Replayed {
        committed,
        next_txid: max_txid + 1,
        valid_len: last_commit_end,
        log_position,
        damage,
    })
}

/// What `brook repair --salvage` did to one log.
#[derive(Debug, Clone, PartialEq)]
pub struct Salvaged {
    /// Where the original bytes were kept.
    pub kept_as: PathBuf,
    /// Bytes skipped as unreadable.
    pub skipped_bytes: u64,
    /// Commit records kept.
    pub commits: usize,
}

/// Rewrite a damaged log keeping every record whose checksum holds, in order, and skipping
/// the unreadable bytes between them (a batch lost to damage is lost; its transaction's other
/// batches stay). The original file is kept beside it as `data.log.damaged`.
pub fn salvage(dir: &Path) -> Result<Salvaged> {
    let path = dir.join("data.log");
    let kept_as = dir.join("data.log.damaged");
    let file = File::open(&path)?;
    let total = file.metadata()?.len();
    let tmp = dir.join("data.log.salvage");
    let mut out = std::io::BufWriter::new(File::create(&tmp)?);
    let (mut pos, mut kept, mut commits) = (0u64, 0u64, 0usize);
    let mut last_commit_end = 0u64;
    while pos < total {
        match record_at(&file, pos, total) {
            Some((h, payload)) => {
                out.write_all(&record_header(h.kind, h.txid, &payload))?;
                out.write_all(&payload)?;
                kept += HEADER_LEN + u64::from(h.len);
                if h.kind == KIND_COMMIT {
                    commits += 1;
                    last_commit_end = kept;
                }
                pos += HEADER_LEN + u64::from(h.len);
            }
            None => match next_record(&file, pos, total)? {
                Some((next, _)) => pos = next,
                None => break,
            },
        }
    }
    let out = out
        .into_inner()
        .map_err(|e| BrookError::Io(e.into_error()))?;
    out.set_len(last_commit_end)?;
    out.sync_all()?;
    std::fs::rename(&path, &kept_as)?;
    std::fs::rename(&tmp, &path)?;
    sync_dir(dir)?;
    Ok(Salvaged {
        kept_as,
        skipped_bytes: total - kept,
        commits,
    })
}

/// Whether the log in `dir` has a commit record of a transaction block over several
/// relations (read without changing it; run only when the decisions file is missing).
pub fn names_a_block(dir: &Path) -> Result<bool> {
    let file = Arc::new(File::open(dir.join("data.log"))?);
    let named = std::cell::Cell::new(false);
    replay(&file, &CacheBudget::new(0), &|_| {
        named.set(true);
        true
    })?;
    Ok(named.get())
}

/// Check one log without changing it: `Ok(None)` when it opens as is (a torn tail counts as
/// fine: opening cuts it), the damage otherwise. `committed_block` as for
/// [`TableStore::open_with`].
pub fn check(dir: &Path, committed_block: &dyn Fn(u64) -> bool) -> Result<Option<Damage>> {
    let file = Arc::new(File::open(dir.join("data.log"))?);
    Ok(replay(&file, &CacheBudget::new(0), committed_block)?.damage)
}
