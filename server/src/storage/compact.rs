//! Compaction: a log that UPDATE, DELETE or TRUNCATE left mostly dead is rewritten with its
//! live records only and renamed over the old one, under the write lock (crash-safe: the new
//! file is complete and synced before the rename).

use super::*;
use brook_common::{brook_err, Result};
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::sync::atomic::Ordering;
use std::sync::Arc;

impl TableStore {
    /// After a replacing commit (UPDATE, DELETE, TRUNCATE, ALTER) the log holds every
    /// earlier version of the relation. When it has grown past twice its live records
    /// (plus [`COMPACT_SLACK`]), write the live records alone to a new log as one
    /// replacing transaction, fsync it, and rename it over the old one: a crash before the
    /// rename leaves the old log whole (and the temporary file is removed at open), after
    /// it the new one. Runs under the write lock; readers keep reading their snapshot's
    /// chunks from the old file. Returns the chunks as they lie in the new log. The new
    /// log's commit carries `log_position` (that of the commit being compacted after).
    pub(super) fn compact_if_outgrown(
        &self,
        live: &[Arc<Chunk>],
        log_position: u64,
    ) -> Result<Option<Vec<Arc<Chunk>>>> {
        let live_bytes: u64 = live.iter().map(|c| HEADER_LEN + u64::from(c.len)).sum();
        let len = self.current_file()?.metadata()?.len();
        if len <= 2 * live_bytes + COMPACT_SLACK {
            return Ok(None);
        }
        let dir = self
            .path
            .parent()
            .ok_or_else(|| brook_err!(Internal, "log without a directory"))?;
        let tmp = dir.join(COMPACT_TMP);
        let out = Arc::new(
            OpenOptions::new()
                .create(true)
                .truncate(true)
                .read(true)
                .write(true)
                .open(&tmp)?,
        );
        let written = self.write_compacted(&out, live, log_position);
        let written = written.and_then(|chunks| {
            out.sync_all()?;
            std::fs::rename(&tmp, &self.path)?;
            sync_dir(dir)?;
            Ok(chunks)
        });
        match written {
            Ok(chunks) => {
                *self
                    .file
                    .lock()
                    .map_err(|_| brook_err!(Internal, "log file lock poisoned"))? = out;
                tracing::info!(path = %self.path.display(), from = len, to = live_bytes, "compacted the log");
                Ok(Some(chunks))
            }
            Err(e) => {
                let _ = std::fs::remove_file(&tmp);
                Err(e)
            }
        }
    }

    /// Write `live`'s records to `out` as one committed, replacing transaction (at cluster
    /// log position `log_position`, 0 for none).
    pub(super) fn write_compacted(
        &self,
        out: &Arc<File>,
        live: &[Arc<Chunk>],
        log_position: u64,
    ) -> Result<Vec<Arc<Chunk>>> {
        let txid = self.next_txid.fetch_add(1, Ordering::AcqRel);
        let mut w = std::io::BufWriter::with_capacity(1 << 20, &**out);
        let mut pos = 0u64;
        let mut chunks = Vec::with_capacity(live.len());
        for c in live {
            let payload = c.payload()?;
            w.write_all(&record_header(KIND_BATCH, txid, &payload))?;
            w.write_all(&payload)?;
            let cached = c
                .cached
                .as_ref()
                .filter(|b| self.budget.try_take(b.get_array_memory_size()))
                .cloned();
            chunks.push(Arc::new(Chunk {
                log: out.clone(),
                offset: pos,
                len: c.len,
                rows: c.rows,
                cached,
                budget: self.budget.clone(),
            }));
            pos += HEADER_LEN + u64::from(c.len);
        }
        let commit = commit_payload(true, (log_position > 0).then_some(log_position), None);
        w.write_all(&record_header(KIND_COMMIT, txid, &commit))?;
        w.write_all(&commit)?;
        w.flush()?;
        Ok(chunks)
    }
}
