//! A COPY FROM STDIN in progress: its parser, the writer thread that converts batches, checks
//! their keys and appends them to the statement's transaction.

use crate::copy::{BatchBuilder, CopyParser, CopyTarget, RawBatch, BATCH_ROWS};
use crate::storage::WriteTxn;
use crate::write::keys::KeyCheck;
use brook_common::{brook_err, Result};
use std::sync::Arc;

/// A COPY FROM STDIN in progress.
pub struct CopyIn {
    pub(crate) parser: CopyParser,
    pub(crate) builder: BatchBuilder,
    pub(crate) writer: CopyWriter,
    /// The relation written, schema-qualified (for `pg_stat_progress_copy`).
    pub(crate) relation: String,
    /// Bytes of data received so far.
    pub(crate) bytes: u64,
    /// Rows passed on to the writer so far (those in `builder` not counted).
    pub(crate) rows_sent: u64,
}

impl CopyIn {
    /// Where the COPY is: the rows read so far are those sent on and those buffered.
    pub(crate) fn progress(&self) -> crate::exec::activity::CopyProgress {
        crate::exec::activity::CopyProgress {
            relation: self.relation.clone(),
            bytes: self.bytes,
            tuples: self.rows_sent + self.builder.len() as u64,
        }
    }
}

/// Where a COPY's rows are converted and written to the log.
pub(crate) enum CopyWriter {
    /// In the connection's task, as they are read (until the COPY fills a batch).
    Here(Box<BatchWriter>),
    /// On a thread of its own, so that reading and splitting the next rows (this task) and
    /// converting and writing the last ones (that thread) use two cores. Batches arrive in
    /// order; the thread hands the transaction back when the channel closes.
    Thread {
        batches: tokio::sync::mpsc::Sender<RawBatch>,
        done: tokio::task::JoinHandle<Result<BatchWriter>>,
    },
    /// Moved out while switching or finishing (the COPY ends right after).
    Switching,
}

/// Converts a COPY's batches, checks their keys and appends them to its transaction.
pub(crate) struct BatchWriter {
    /// The relation written, as the COPY was planned against it.
    pub(crate) meta: crate::catalog::RelationMeta,
    pub(crate) target: Arc<CopyTarget>,
    pub(crate) txn: WriteTxn,
    pub(crate) keys: Option<KeyCheck>,
}

/// Parse `data` (the last of it when `eof`) and pass full batches on to the writer.
pub(crate) async fn copy_feed(c: &mut CopyIn, data: &[u8], eof: bool) -> Result<()> {
    let mut ready = Vec::new();
    let mut sink = CopySink {
        builder: &mut c.builder,
        ready: &mut ready,
    };
    if eof {
        // A last partial batch stays in the builder: `copy_done` writes it after the rest.
        c.parser.finish(&mut sink)?;
    } else {
        c.parser.feed(data, &mut sink)?;
    }
    c.bytes += data.len() as u64;
    c.rows_sent += ready.iter().map(|r| r.len() as u64).sum::<u64>();
    c.writer.send(ready).await
}

/// Routes parsed COPY fields into the batch builder and sets full batches aside.
pub(crate) struct CopySink<'a> {
    pub(crate) builder: &'a mut BatchBuilder,
    pub(crate) ready: &'a mut Vec<RawBatch>,
}

impl BatchWriter {
    pub(crate) fn write(&mut self, raw: RawBatch) -> Result<()> {
        if raw.is_empty() {
            return Ok(());
        }
        let batch = raw.into_batch(&self.target)?;
        if let Some(k) = self.keys.as_mut() {
            if let Some(row) = k.conflicts(&batch, true)?.iter().position(|&c| c) {
                return Err(k.violation(&batch, row));
            }
        }
        self.txn.append(&batch)
    }

    /// Write what arrives until the sender is dropped.
    pub(crate) fn write_all(
        mut self,
        mut batches: tokio::sync::mpsc::Receiver<RawBatch>,
    ) -> Result<Self> {
        while let Some(raw) = batches.blocking_recv() {
            self.write(raw)?;
        }
        Ok(self)
    }
}

impl CopyWriter {
    /// Hand over the batches read, starting the writer thread once there are any (a COPY
    /// of less than one batch never starts it).
    pub(crate) async fn send(&mut self, ready: Vec<RawBatch>) -> Result<()> {
        if ready.is_empty() {
            return Ok(());
        }
        if let CopyWriter::Here(_) = self {
            let CopyWriter::Here(w) = std::mem::replace(self, CopyWriter::Switching) else {
                return Err(brook_err!(Internal, "COPY writer vanished"));
            };
            // A few batches in flight: enough to keep both cores busy, bounded so that a
            // fast client cannot make the server buffer its whole input.
            let (tx, rx) = tokio::sync::mpsc::channel(4);
            let done = tokio::task::spawn_blocking(move || w.write_all(rx));
            *self = CopyWriter::Thread { batches: tx, done };
        }
        let CopyWriter::Thread { batches, .. } = self else {
            return Err(brook_err!(Internal, "COPY writer vanished"));
        };
        for raw in ready {
            if batches.send(raw).await.is_err() {
                // The writer stopped on an error: that error is the COPY's.
                return Err(self.finish().await.err().unwrap_or_else(|| {
                    brook_err!(Internal, "COPY writer stopped without an error")
                }));
            }
        }
        Ok(())
    }

    /// Wait for every batch to be written; the writer back.
    pub(crate) async fn finish(&mut self) -> Result<BatchWriter> {
        match std::mem::replace(self, CopyWriter::Switching) {
            CopyWriter::Here(w) => Ok(*w),
            CopyWriter::Thread { batches, done } => {
                drop(batches);
                done.await
                    .map_err(|e| brook_err!(Internal, "COPY writer failed: {e}"))?
            }
            CopyWriter::Switching => Err(brook_err!(Internal, "COPY writer vanished")),
        }
    }
}

impl crate::copy::RowSink for CopySink<'_> {
    fn field(&mut self, value: Option<&[u8]>) -> Result<()> {
        self.builder.field(value)
    }

    fn end_row(&mut self, line: u64) -> Result<()> {
        self.builder.end_row(line)?;
        if self.builder.len() >= BATCH_ROWS {
            self.ready.push(self.builder.take_raw());
        }
        Ok(())
    }
}
