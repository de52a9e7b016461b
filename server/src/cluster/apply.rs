//! The applier: a node's one task that reads the cluster's log in order and applies each
//! entry to the node's data directory.
//!
//! A catalog change is executed by a session of the entry's database and role (with
//! [`Session::apply_log_entry`], so it runs here rather than going to the log again); a
//! write is validated against the log's order — its relation still has the definition it
//! was planned against, and a replacing or key-checked write was computed from the
//! relation's latest position — and committed at its position, or refused (40001) on every
//! node alike. The verdict reaches the statement that published the entry when it is this
//! node's. An error of this node's own storage (a full disk) stops the applier rather than
//! let the node's copy diverge; restarted, the node resumes where it stopped.

use super::write_position;
use crate::catalog::partitioning::restore_statement;
use crate::db::cluster::{
    definition_digest, unframe, ClusterLink, DdlEntry, OwnEntry, Subject, Verdict, WriteEntry,
    COMMIT_HEADER, FIRST_LOG_FORMAT, FORMAT_HEADER, LOG_FORMAT, NODE_HEADER, TXN_HEADER,
};
use crate::db::Engine;
use crate::session::{Outcome, Session};
use crate::storage::{adapt_batch, decode_payload};
use crate::write::keys::KeyCheck;
use async_nats::jetstream;
use brook_common::{brook_err, BrookError, Result};
use futures::StreamExt;
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How long to wait before reading the log again after a failure; doubled after each
/// failure in a row, up to [`RETRY_MAX`].
const RETRY_AFTER: Duration = Duration::from_millis(200);
/// The longest wait between two attempts to read the log while it cannot be read.
const RETRY_MAX: Duration = Duration::from_secs(2);
/// How often, at most, a failure to read the log that goes on is logged again.
const WARN_EVERY: Duration = Duration::from_secs(30);

/// How often, at most, the applied position is noted in the data directory.
const NOTE_EVERY: Duration = Duration::from_millis(200);
/// How long the reader may deliver nothing before the applier asks whether the log holds
/// more (see [`stalled`]).
const STALL_CHECK: Duration = Duration::from_secs(5);

/// The applier's state.
pub(super) struct Applier {
    engine: Arc<Engine>,
    link: Arc<ClusterLink>,
    position_file: PathBuf,
    /// The framed records of writes whose entry has not arrived yet, by transaction (an
    /// atomic batch's messages are consecutive in the log).
    pending: HashMap<String, Vec<u8>>,
    noted: Instant,
}

/// What one message of the log is.
struct Message {
    position: u64,
    node: String,
    txn: String,
    payload: bytes::Bytes,
    commit: bool,
    /// What the message is: a catalog change, an ownership change, a write.
    subject: Subject,
}

impl Applier {
    pub(super) fn new(engine: Arc<Engine>, link: Arc<ClusterLink>, position_file: PathBuf) -> Self {
        Applier {
            engine,
            link,
            position_file,
            pending: HashMap::new(),
            noted: Instant::now(),
        }
    }

    /// Apply the log from after `start` for as long as the node runs.
    pub(super) async fn run(mut self, stream: jetstream::stream::Stream, start: u64) {
        let why = match self.follow(stream, start).await {
            Ok(()) => "the cluster's log ended".to_string(),
            Err(e) => e.to_string(),
        };
        tracing::error!(node = %self.link.node, error = %why, "stopped applying the cluster's log: this node's data no longer follows the cluster; fix the cause and restart it (it resumes where it stopped)");
        self.link.stopped(why);
    }

    /// Read the log from after `start`, in order, for as long as the node runs.
    ///
    /// By hand rather than with async-nats' ordered consumer, whose heartbeat (15 s) is
    /// fixed: after a NATS server died it took over a minute to notice, and every
    /// statement of the node waited that long. Here an ephemeral consumer starts at the
    /// next position with a 1 s heartbeat; a missed heartbeat, an error or a message out
    /// of order ends it, and a new one starts where the applier is.
    ///
    /// While the log cannot be read (a split: the node's NATS server answers 503 to each
    /// attempt for as long as it lasts), attempts slow down to one every [`RETRY_MAX`] and
    /// the failure is logged when it begins and then every [`WARN_EVERY`] (see
    /// [`Failing`]).
    async fn follow(&mut self, stream: jetstream::stream::Stream, start: u64) -> Result<()> {
        let mut next = start + 1;
        let mut failing = Failing::default();
        loop {
            let mut messages = match read_from(&stream, next).await {
                Ok(m) => m,
                Err(e) => {
                    failing.failed("cannot read the cluster's log; trying again", &e, next);
                    tokio::time::sleep(failing.wait()).await;
                    continue;
                }
            };
            let mut first = true;
            loop {
                let m = match tokio::time::timeout(STALL_CHECK, messages.next()).await {
                    Ok(Some(m)) => m,
                    Ok(None) => break,
                    Err(_) => match stalled(&stream, next).await {
                        Ok(false) => {
                            // Nothing to deliver, and the log answers: all is well.
                            failing.recovered(next);
                            continue;
                        }
                        Ok(true) => {
                            failing.failed("the cluster's log holds entries this node's reader does not deliver; reading again from the position", "", next);
                            break;
                        }
                        Err(e) => {
                            failing.failed("this node's reader of the cluster's log delivers nothing and the log cannot be asked how far it goes; reading again from the position", &e, next);
                            break;
                        }
                    },
                };
                let m = match m {
                    Ok(m) => m,
                    Err(e) => {
                        failing.failed(
                            "reading the cluster's log; reading again from the position",
                            &e.to_string(),
                            next,
                        );
                        break;
                    }
                };
                failing.recovered(next);
                let message = self.parse(&m)?;
                let position = message.position;
                if position < next {
                    continue;
                }
                if position > next {
                    if first {
                        // A consumer asked to start at `next` began after it: the log no
                        // longer holds the entries in between.
                        return Err(brook_err!(
                            DataCorrupted,
                            "the cluster's log no longer holds positions {next} to {}: this node cannot follow it (start it again with an empty data directory)",
                            position - 1
                        ));
                    }
                    tracing::warn!(
                        expected = next,
                        got = position,
                        "a log entry was missed in delivery; reading again from the position"
                    );
                    break;
                }
                first = false;
                self.apply(message).await?;
                self.link.applied(position);
                next = position + 1;
                // Noted only between writes: a start after the first messages of a write
                // would apply it without them.
                if self.pending.is_empty() && self.noted.elapsed() >= NOTE_EVERY {
                    self.note(position)?;
                }
            }
            tokio::time::sleep(failing.wait()).await;
        }
    }

    /// Note `position` as applied (a hint for the next start).
    fn note(&mut self, position: u64) -> Result<()> {
        write_position(&self.position_file, position)?;
        self.noted = Instant::now();
        Ok(())
    }

    fn parse(&self, m: &jetstream::Message) -> Result<Message> {
        let position = m
            .info()
            .map_err(|e| brook_err!(Internal, "a cluster log message without its position: {e}"))?
            .stream_sequence;
        let header = |name: &str| {
            m.headers
                .as_ref()
                .and_then(|h| h.get(name))
                .map(|v| v.as_str().to_string())
        };
        let format: u32 = header(FORMAT_HEADER)
            .and_then(|f| f.parse().ok())
            .unwrap_or(0);
        if !(FIRST_LOG_FORMAT..=LOG_FORMAT).contains(&format) {
            return Err(brook_err!(
                Unsupported,
                "the cluster log's entry at position {position} has format {format}, and this Brook reads formats {FIRST_LOG_FORMAT} to {LOG_FORMAT}: run the same Brook version on every node"
            ));
        }
        let subject = match self.link.parse_subject(m.subject.as_str()) {
            Some(r) => r,
            None => {
                return Err(brook_err!(
                    Internal,
                    "the cluster log's entry at position {position} has subject {} that Brook does not write",
                    m.subject
                ))
            }
        };
        Ok(Message {
            position,
            node: header(NODE_HEADER).unwrap_or_default(),
            txn: header(TXN_HEADER).unwrap_or_default(),
            payload: m.payload.clone(),
            commit: header(COMMIT_HEADER).is_some(),
            subject,
        })
    }

    async fn apply(&mut self, m: Message) -> Result<()> {
        let id = match m.subject {
            Subject::Ddl => {
                let verdict = self.apply_ddl(&m).await?;
                self.link.decided(&m.node, &m.txn, verdict);
                // Noted now: a catalog change is rare, and its position is worth keeping.
                return self.note(m.position);
            }
            Subject::Ownership => {
                self.apply_ownership(&m)?;
                return self.note(m.position);
            }
            Subject::Data(id) => id,
        };
        if !m.commit {
            self.pending
                .entry(m.txn.clone())
                .or_default()
                .extend_from_slice(&m.payload);
            return Ok(());
        }
        let framed = self.pending.remove(&m.txn).unwrap_or_default();
        let entry: WriteEntry = serde_json::from_slice(&m.payload)
            .map_err(|e| brook_err!(Internal, "write entry at position {}: {e}", m.position))?;
        if entry.id != id {
            return Err(brook_err!(
                Internal,
                "write entry at position {} names relation {} on the subject of relation {id}",
                m.position,
                entry.id
            ));
        }
        let verdict = self.apply_write(m.position, &entry, &framed).await?;
        self.link.decided(&m.node, &m.txn, verdict);
        Ok(())
    }

    /// Execute a catalog change at `m.position`, unless the catalog has it already. The
    /// outer error stops the applier (this node's storage failed); the verdict is the
    /// statement's own result, the same on every node.
    async fn apply_ddl(&self, m: &Message) -> Result<Verdict> {
        let applied = self
            .engine
            .catalog
            .read()
            .cluster
            .as_ref()
            .map_or(0, |c| c.ddl_position);
        if m.position <= applied {
            return Ok(Ok(String::new()));
        }
        let entry: DdlEntry = serde_json::from_slice(&m.payload)
            .map_err(|e| brook_err!(Internal, "catalog change at position {}: {e}", m.position))?;
        let verdict = self.run_ddl(m.position, &entry).await;
        if let Err(BrookError::Io(e)) = &verdict {
            return Err(brook_err!(
                Internal,
                "applying the catalog change at position {}: {e}",
                m.position
            ));
        }
        if let Err(e) = &verdict {
            tracing::info!(position = m.position, error = %e, "a catalog change of the cluster's log failed (on every node alike)");
        }
        // The change (or its failure) is applied: a restart must not run it again.
        self.engine.catalog.update(|doc| {
            if let Some(c) = doc.cluster.as_mut() {
                c.ddl_position = m.position;
            }
            Ok(())
        })?;
        Ok(verdict)
    }

    /// Apply partition ownership changes at `m.position`, unless the catalog has them
    /// already (their position is kept with the catalog changes').
    fn apply_ownership(&self, m: &Message) -> Result<()> {
        let entry: OwnEntry = serde_json::from_slice(&m.payload).map_err(|e| {
            brook_err!(Internal, "ownership change at position {}: {e}", m.position)
        })?;
        let me = self.link.node.clone();
        let mut moved = Vec::new();
        self.engine.catalog.update(|doc| {
            let applied = doc.cluster.as_ref().map_or(0, |c| c.ddl_position);
            if m.position > applied {
                let before = super::partitions::owned_by(doc, &me);
                super::partitions::apply(doc, &entry);
                let after = super::partitions::owned_by(doc, &me);
                moved = super::partitions::changed(&before, &after);
                if let Some(c) = doc.cluster.as_mut() {
                    c.ddl_position = m.position;
                }
            }
            Ok(())
        })?;
        // The views maintained per partition over those streams hold other partitions now.
        for stream in moved {
            self.engine.rebuild_partitioned_views(stream);
        }
        Ok(())
    }

    async fn run_ddl(&self, position: u64, entry: &DdlEntry) -> Verdict {
        let db = self.engine.database(&entry.db)?;
        let mut session = Session::new(self.engine.clone(), db, entry.user.clone());
        for (key, value) in &entry.settings {
            // As SET does it: `search_path` also moves the schema names resolve in.
            session.set_var(key, value)?;
        }
        session.apply_log_entry(position);
        let mut tag = String::new();
        for stmt in brook_planner::parse_sql(&entry.sql)? {
            tag = match Box::pin(session.execute(stmt)).await? {
                Outcome::Command(t) | Outcome::TxnStart(t) | Outcome::TxnEnd(t) => t,
                _ => String::new(),
            };
        }
        Ok(tag)
    }

    /// Commit a write at `position`, or refuse it when the log's order makes it stale.
    async fn apply_write(
        &self,
        position: u64,
        entry: &WriteEntry,
        framed: &[u8],
    ) -> Result<Verdict> {
        let Some(meta) = self.engine.catalog.read().relation_by_id(entry.id).cloned() else {
            return Ok(Err(brook_err!(
                SerializationFailure,
                "could not write \"{}\": it was dropped before this write reached the cluster's log; retry",
                entry.relation
            )));
        };
        let store = self.engine.store(entry.id)?;
        if store.log_position() >= position {
            return Ok(Ok(String::new()));
        }
        if definition_digest(&meta) != entry.definition {
            return Ok(Err(brook_err!(
                SerializationFailure,
                "could not write \"{}\": its definition changed (an ALTER TABLE ordered before this write in the cluster's log); retry",
                entry.relation
            )));
        }
        if (entry.replace || entry.validate) && store.log_position() != entry.based_on {
            return Ok(Err(brook_err!(
                SerializationFailure,
                "could not serialize access due to concurrent update: \"{}\" was written by another statement ordered first in the cluster's log; retry",
                entry.relation
            )));
        }
        let mut batches = unframe(framed)?
            .into_iter()
            .map(decode_payload)
            .collect::<Result<Vec<_>>>()?;
        if !entry.batch_rows.is_empty() {
            batches = restore_statement(&batches, &entry.batch_rows)?;
        }
        let mut txn = store.begin(entry.replace).await?;
        if !entry.replace {
            // Keys inserted by a statement ordered first are checked for here, alike on
            // every node (the sending node checked the keys it knew of).
            if let Some(mut keys) = KeyCheck::new(&meta, &entry.relation)? {
                let schema = meta.schema();
                for c in store.snapshot().iter() {
                    keys.conflicts(&adapt_batch(store.read(c)?, &schema)?, true)?;
                }
                for b in &batches {
                    if let Some(row) = keys.conflicts(b, true)?.iter().position(|&c| c) {
                        return Ok(Err(keys.violation(b, row)));
                    }
                }
            }
        }
        for b in &batches {
            txn.append(b)?;
        }
        txn.at_log_position(position);
        txn.commit()?;
        Ok(Ok(String::new()))
    }
}

/// A failure to read the log that goes on: how long to wait before the next attempt, and
/// when to log it.
///
/// Logged when it begins and then at most every [`WARN_EVERY`] (with the attempts since),
/// and once more when the log is read again. Before 2026-12-07 each attempt (five a
/// second) logged a warning: a split of a few minutes wrote over 100 KB of them, and a
/// node whose standard error is a pipe nobody reads at that moment (the split test's, a
/// supervisor that stalled) blocked in `write(2)` inside the applier once the pipe's
/// 64 KB were full, and applied no more of the log after the network came back (its
/// statements failed with 08006).
#[derive(Default)]
struct Failing {
    /// When the failure was last logged; `None` while the log is read.
    warned: Option<Instant>,
    /// Failed attempts since then.
    attempts: u32,
    /// Failed attempts in a row (the wait before the next one doubles with each).
    in_a_row: u32,
}

impl Failing {
    fn failed(&mut self, what: &str, error: &str, position: u64) {
        self.attempts += 1;
        self.in_a_row = self.in_a_row.saturating_add(1);
        if self.warned.is_none_or(|t| t.elapsed() >= WARN_EVERY) {
            tracing::warn!(error, position, attempts = self.attempts, "{what}");
            self.warned = Some(Instant::now());
            self.attempts = 0;
        }
    }

    /// The log was read again (an entry delivered, or none to deliver and the log answers).
    fn recovered(&mut self, position: u64) {
        if self.warned.take().is_some() {
            tracing::info!(position, "reading the cluster's log again");
        }
        self.attempts = 0;
        self.in_a_row = 0;
    }

    /// How long to wait before the next attempt.
    fn wait(&self) -> Duration {
        RETRY_AFTER
            .saturating_mul(1 << self.in_a_row.saturating_sub(1).min(4))
            .min(RETRY_MAX)
    }
}

/// Whether the log holds position `next` while the reader delivered nothing for
/// [`STALL_CHECK`]: a reader that stays silent with entries to deliver is replaced rather
/// than trusted for ever. An error when the log cannot be asked: the reader is replaced
/// then too (before 2026-12-07 it was trusted, and a reader left on a NATS server that
/// lost the log's stream after a split waited for ever without a word).
async fn stalled(
    stream: &jetstream::stream::Stream,
    next: u64,
) -> std::result::Result<bool, String> {
    let mut stream = stream.clone();
    match tokio::time::timeout(STALL_CHECK, stream.info()).await {
        Ok(Ok(info)) => Ok(info.state.last_sequence >= next),
        Ok(Err(e)) => Err(e.to_string()),
        Err(_) => Err(format!("no answer within {} s", STALL_CHECK.as_secs())),
    }
}

/// The log's entries from position `next` on: an ephemeral consumer (in memory, one
/// replica, gone 30 s after its reader) pulled with a 1 s heartbeat.
async fn read_from(
    stream: &jetstream::stream::Stream,
    next: u64,
) -> std::result::Result<jetstream::consumer::pull::Stream, String> {
    use jetstream::consumer::{pull, AckPolicy, DeliverPolicy};
    let consumer: jetstream::consumer::Consumer<pull::Config> = stream
        .create_consumer(pull::Config {
            deliver_policy: DeliverPolicy::ByStartSequence {
                start_sequence: next,
            },
            ack_policy: AckPolicy::None,
            inactive_threshold: Duration::from_secs(30),
            num_replicas: 1,
            memory_storage: true,
            ..Default::default()
        })
        .await
        .map_err(|e| e.to_string())?;
    consumer
        .stream()
        .max_messages_per_batch(500)
        // Well under the NATS server's pending limit for a client (64 MB), which drops a
        // connection that pulls more at once (a slow consumer).
        .max_bytes_per_batch(8 << 20)
        .heartbeat(Duration::from_secs(1))
        .expires(Duration::from_secs(5))
        .messages()
        .await
        .map_err(|e| e.to_string())
}
