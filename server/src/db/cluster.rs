//! A cluster node's link to the cluster's log: what a statement on this node sends to the
//! log, and how it waits for its own node to have applied it.
//!
//! In cluster mode every catalog change and every committed write goes through one
//! JetStream stream, the log (see `docs/cluster.md`). Each node applies the log in order to
//! its own data directory (`cluster/apply.rs`), so all nodes hold the same catalog and data
//! at each position. A statement on a node therefore does not commit locally: it publishes
//! what it would commit, and returns once its own node has applied that entry — with the
//! verdict the applier reached, which is the same on every node (a write validated against
//! the log's order, a DDL statement executed at its position).

use brook_common::{BrookError, Result};
use bytes::Bytes;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap};
use std::sync::Mutex;

/// The newest version of the log's entries this build writes and reads: 2 for the writes
/// of a partitioned stream (records on the partitions' subjects) and partition ownership
/// changes; every other entry is still written as version 1, so a node of an earlier build follows a log without them.
pub const LOG_FORMAT: u32 = 2;
/// The version of the entries that existed before partitioned streams.
pub const FIRST_LOG_FORMAT: u32 = 1;
/// Header naming the node that published an entry.
pub const NODE_HEADER: &str = "Brook-Node";
/// Header naming the statement (transaction) an entry belongs to.
pub const TXN_HEADER: &str = "Brook-Txn";
/// Header on the last message of a write: its payload is the [`WriteEntry`].
pub const COMMIT_HEADER: &str = "Brook-Commit";
/// Header carrying [`LOG_FORMAT`].
pub const FORMAT_HEADER: &str = "Brook-Format";

/// How long a statement waits for the log to answer again (a NATS failover) before 08006.
const FAILOVER_WAIT: std::time::Duration = std::time::Duration::from_secs(30);

/// Most messages one atomic batch may hold (JetStream's limit), so most per statement.
const MAX_BATCH_MESSAGES: usize = 1000;

/// How recently a replicated log's leader must have heard from a majority of its replicas
/// for its last position to be the log's (see [`current_end`]).
const LEADER_LEASE: std::time::Duration = std::time::Duration::from_secs(2);

/// The last position of the log as its leader describes it in `info`, if that leader can
/// still be the only one. JetStream's stream info is answered by the stream's leader
/// without consulting the other replicas, and a leader cut off from the others by the
/// network goes on answering for about 10 s before it steps down, while the majority
/// elects another leader after 4 to 9 s without one (NATS's Raft) and goes on writing: a
/// node reading through the old leader would answer from a past state of the log without a
/// word. So a replicated log's position counts only when its leader heard from a majority
/// of the replicas (itself included) within [`LEADER_LEASE`], half the shortest election
/// timeout: no other leader can have been elected since (a leader lease, as Raft-based
/// databases read).
fn current_end(info: &async_nats::jetstream::stream::Info) -> std::result::Result<u64, String> {
    let replicas = info.config.num_replicas.max(1);
    if replicas == 1 {
        return Ok(info.state.last_sequence);
    }
    let Some(cluster) = &info.cluster else {
        return Err("the log's stream info has no cluster part".into());
    };
    let Some(leader) = &cluster.leader else {
        return Err("the log has no leader".into());
    };
    let heard = 1 + cluster
        .replicas
        .iter()
        .filter(|p| !p.offline && p.active < LEADER_LEASE)
        .count();
    if heard * 2 > replicas {
        Ok(info.state.last_sequence)
    } else {
        Err(format!(
            "the log's leader ({leader}) heard from {heard} of its {replicas} replicas within {} s: it may no longer be the leader",
            LEADER_LEASE.as_secs()
        ))
    }
}

/// A catalog change as the log carries it: run `sql` in database `db` as `user` with the
/// session's settings.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct DdlEntry {
    /// The database the statement ran in.
    pub db: String,
    /// The role that ran it.
    pub user: String,
    /// The session's settings when it ran (`search_path`, an accuracy budget a view's
    /// definition takes, ...), but for [`LOCAL_SETTINGS`].
    pub settings: BTreeMap<String, String>,
    /// The statement's text.
    pub sql: String,
}

/// Settings that are the sending node's alone and do not travel with a catalog change: a
/// client's timeouts would make a change fail on one node and not on another.
pub const LOCAL_SETTINGS: [&str; 5] = [
    "lock_timeout",
    "statement_timeout",
    "idle_in_transaction_session_timeout",
    "idle_session_timeout",
    "application_name",
];

/// A committed write as the log carries it (the batches precede it in the same atomic
/// batch of messages).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct WriteEntry {
    /// The relation's database, its name as the statement gave it (for messages), its id.
    pub db: String,
    pub relation: String,
    pub id: u64,
    /// The relation's definition the write was planned against (a digest of its catalog
    /// entry): a write planned before an ALTER TABLE that the log orders first is refused.
    pub definition: u32,
    /// Whether the write replaces the relation's rows (UPDATE, DELETE, upsert).
    pub replace: bool,
    /// The relation's log position the write was computed from: a replacing write, or one
    /// marked `validate`, is applied only when it still is the relation's position
    /// (appends commute; their keys are checked when applied).
    pub based_on: u64,
    /// Whether the write depends on the rows it saw although it only appends
    /// (`INSERT ... ON CONFLICT DO NOTHING` left out the keys it found).
    #[serde(default)]
    pub validate: bool,
    /// The partitions of a partitioned stream the write has rows in: their records are
    /// on the partitions' subjects, before the entry (empty for any other relation).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub partitions: Vec<u32>,
    /// For a partitioned stream's write, the rows of each batch of the statement: its
    /// records carry each row's position, and are stored in the statement's order and
    /// batches (`catalog::partitioning::restore_statement`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub batch_rows: Vec<u64>,
}

/// Partition ownership changes as the log carries them (`cluster/partitions.rs`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OwnEntry {
    pub changes: Vec<OwnChange>,
}

/// Partition `partition` of stream `stream` moves from `from` (no owner: `None`) to `to`,
/// if `from` still owns it when the log applies the change.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OwnChange {
    pub stream: u64,
    pub partition: u32,
    pub from: Option<String>,
    pub to: String,
}

/// What a subject of the log holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Subject {
    /// Catalog changes ([`DdlEntry`]).
    Ddl,
    /// Partition ownership changes ([`OwnEntry`]).
    Ownership,
    /// Writes of relation `id` (or of one of its partitions).
    Data(u64),
}

/// A write to publish: its entry and its batch records (storage payloads), by the
/// partition their rows belong to (`None` for a relation that is not partitioned).
pub struct Write {
    pub entry: WriteEntry,
    pub payloads: PartitionedPayloads,
}

/// Batch records (storage payloads) by partition (`None`: not partitioned).
pub type PartitionedPayloads = BTreeMap<Option<u32>, Vec<Vec<u8>>>;

/// What the applier decided for an entry: a DDL statement's command tag, or an error.
pub type Verdict = Result<String>;

/// Where the applier is: the position it applied last, or why it stopped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Progress {
    /// Every entry up to this position is applied.
    At(u64),
    /// The applier stopped (the node must be restarted once the cause is fixed).
    Stopped(String),
}

/// This node's link to the cluster's log.
pub struct ClusterLink {
    /// This node's id (`--node-id`).
    pub node: String,
    js: async_nats::jetstream::Context,
    /// The log's JetStream stream.
    stream: String,
    /// Subject prefix of the log (`brook.<cluster name>`).
    prefix: String,
    /// The largest message the NATS server accepts.
    max_message: usize,
    progress: tokio::sync::watch::Sender<Progress>,
    /// Verdicts for this node's own entries, by transaction id, until their statement
    /// takes them.
    verdicts: Mutex<HashMap<String, Verdict>>,
    /// Where this node takes connections (set once it listens).
    address: std::sync::OnceLock<String>,
    /// The cluster's nodes as the node directory last listed them (`cluster_nodes.rs`).
    members: Mutex<Vec<super::cluster_nodes::Member>>,
}

impl std::fmt::Debug for ClusterLink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClusterLink")
            .field("node", &self.node)
            .field("stream", &self.stream)
            .field("progress", &*self.progress.borrow())
            .finish()
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

fn unreachable(what: &str, e: impl std::fmt::Display) -> BrookError {
    BrookError::Cluster {
        message: format!("could not {what} the cluster's log: {e}"),
        code: "08006",
    }
}

impl ClusterLink {
    /// A link over JetStream context `js`, the log's subjects under `prefix`, applied up to
    /// `position` so far.
    pub fn new(
        node: String,
        js: async_nats::jetstream::Context,
        (stream, prefix): (String, String),
        max_message: usize,
        position: u64,
    ) -> ClusterLink {
        ClusterLink {
            node,
            js,
            stream,
            prefix,
            max_message,
            progress: tokio::sync::watch::Sender::new(Progress::At(position)),
            verdicts: Mutex::new(HashMap::new()),
            address: std::sync::OnceLock::new(),
            members: Mutex::new(Vec::new()),
        }
    }

    /// Note where this node takes connections (the first address given stays).
    pub fn set_address(&self, address: String) {
        let _ = self.address.set(address);
    }

    /// Where this node takes connections ("" before it listens).
    pub fn address(&self) -> String {
        self.address.get().cloned().unwrap_or_default()
    }

    /// The cluster's nodes as the node directory last listed them.
    pub fn members(&self) -> Vec<super::cluster_nodes::Member> {
        lock(&self.members).clone()
    }

    /// The node directory's latest listing.
    pub fn set_members(&self, members: Vec<super::cluster_nodes::Member>) {
        *lock(&self.members) = members;
    }

    /// The log's subject prefix (`brook.<cluster name>`).
    pub fn prefix(&self) -> &str {
        &self.prefix
    }

    /// The largest message the NATS server takes.
    pub fn max_message(&self) -> usize {
        self.max_message
    }

    /// The NATS connection.
    pub fn client(&self) -> async_nats::Client {
        self.js.client()
    }

    /// The subject of catalog changes.
    pub fn ddl_subject(&self) -> String {
        format!("{}.ddl", self.prefix)
    }

    /// The subject of relation `id`'s writes.
    pub fn data_subject(&self, id: u64) -> String {
        format!("{}.data.{id}", self.prefix)
    }

    /// The subject of partition `partition` of stream `id`'s writes.
    pub fn partition_subject(&self, id: u64, partition: u32) -> String {
        format!("{}.data.{id}.{partition}", self.prefix)
    }

    /// The subject of partition ownership changes.
    pub fn ownership_subject(&self) -> String {
        format!("{}.own", self.prefix)
    }

    /// What `subject` holds (`None`: not a subject Brook writes).
    pub fn parse_subject(&self, subject: &str) -> Option<Subject> {
        let rest = subject.strip_prefix(&self.prefix)?.strip_prefix('.')?;
        match rest {
            "ddl" => return Some(Subject::Ddl),
            "own" => return Some(Subject::Ownership),
            _ => {}
        }
        let rest = rest.strip_prefix("data.")?;
        let id = match rest.split_once('.') {
            Some((id, partition)) => {
                partition.parse::<u32>().ok()?;
                id
            }
            None => rest,
        };
        id.parse().ok().map(Subject::Data)
    }

    /// The applier's position.
    pub fn progress(&self) -> Progress {
        self.progress.borrow().clone()
    }

    /// A receiver that wakes when the applier moves on (or stops).
    pub fn subscribe(&self) -> tokio::sync::watch::Receiver<Progress> {
        self.progress.subscribe()
    }

    /// The applier applied everything up to `position`.
    pub fn applied(&self, position: u64) {
        self.progress.send_replace(Progress::At(position));
    }

    /// The applier stopped: statements waiting for it fail with `why`.
    pub fn stopped(&self, why: String) {
        self.progress.send_replace(Progress::Stopped(why));
    }

    /// The applier's verdict on an entry of this node's (`txn`); others' are not kept.
    pub fn decided(&self, node: &str, txn: &str, verdict: Verdict) {
        if node == self.node {
            lock(&self.verdicts).insert(txn.to_string(), verdict);
        }
    }

    fn headers(&self, txn: &str, format: u32) -> async_nats::HeaderMap {
        let mut h = async_nats::HeaderMap::new();
        h.insert(NODE_HEADER, self.node.as_str());
        h.insert(TXN_HEADER, txn);
        h.insert(FORMAT_HEADER, format.to_string().as_str());
        h
    }

    /// Run a catalog change through the log; its command tag as this node executed it.
    pub async fn ddl(&self, entry: &DdlEntry) -> Result<String> {
        let txn = nuid::next().to_string();
        let payload = serde_json::to_vec(entry)
            .map_err(|e| BrookError::Internal(format!("DDL entry: {e}")))?;
        let ack = self
            .js
            .publish_with_headers(
                self.ddl_subject(),
                self.headers(&txn, FIRST_LOG_FORMAT),
                payload.into(),
            )
            .await
            .map_err(|e| unreachable("send a catalog change to", e))?
            .await
            .map_err(|e| unknown_outcome("catalog change", e))?;
        self.wait(ack.sequence, &txn).await
    }

    /// Send partition ownership changes to the log, without waiting for them to be
    /// applied (the node looks again at its next heartbeat).
    pub async fn own(&self, entry: &OwnEntry) -> Result<()> {
        let payload = serde_json::to_vec(entry)
            .map_err(|e| BrookError::Internal(format!("ownership entry: {e}")))?;
        let txn = nuid::next().to_string();
        self.js
            .publish_with_headers(
                self.ownership_subject(),
                self.headers(&txn, LOG_FORMAT),
                payload.into(),
            )
            .await
            .map_err(|e| unreachable("send partition ownership to", e))?
            .await
            .map_err(|e| unknown_outcome("ownership change", e))?;
        Ok(())
    }

    /// Publish a write as one atomic batch of messages and wait until this node applied
    /// it. The records are framed (length, then bytes; see [`unframe`]) into one byte
    /// string per subject (a partitioned stream's partition, or the relation) cut into
    /// messages as large as the NATS server takes, so many small records share a message
    /// and a large one spans several; the entry is the last message, on the relation's
    /// subject. The framed strings follow each other whole, so their concatenation is the
    /// write's records.
    pub async fn write(&self, w: Write) -> Result<()> {
        use jetstream_extra::batch_publish::BatchPublishExt;
        let txn = nuid::next().to_string();
        let id = w.entry.id;
        let subject = self.data_subject(id);
        let format = if w.entry.partitions.is_empty() {
            FIRST_LOG_FORMAT
        } else {
            LOG_FORMAT
        };
        // Room for the headers in each message.
        let piece = self.max_message.saturating_sub(1024).max(1024);
        let framed: Vec<(String, Vec<u8>)> = w
            .payloads
            .into_iter()
            .map(|(partition, payloads)| {
                let mut framed = Vec::with_capacity(payloads.iter().map(|p| p.len() + 8).sum());
                for p in &payloads {
                    framed.extend_from_slice(&(p.len() as u64).to_le_bytes());
                    framed.extend_from_slice(p);
                }
                let subject = match partition {
                    Some(p) => self.partition_subject(id, p),
                    None => self.data_subject(id),
                };
                (subject, framed)
            })
            .collect();
        let bytes: usize = framed.iter().map(|(_, f)| f.len()).sum();
        let messages: usize = framed.iter().map(|(_, f)| f.len().div_ceil(piece)).sum();
        if messages + 1 > MAX_BATCH_MESSAGES {
            return Err(BrookError::Limit {
                message: format!(
                    "a statement may write at most {} MB in cluster mode (this one writes {} MB{}): split it (e.g. COPY in parts)",
                    (MAX_BATCH_MESSAGES - 1) * piece / 1_000_000,
                    bytes / 1_000_000,
                    match framed.len() {
                        1 => String::new(),
                        n => format!(
                            ", to {n} partitions, each in messages of its own: {messages} messages of the {} a statement may have",
                            MAX_BATCH_MESSAGES - 1
                        ),
                    }
                ),
                code: "54000",
            });
        }
        let mut batch = self.js.batch_publish().build();
        for (on, framed) in &framed {
            for p in framed.chunks(piece) {
                batch
                    .add_message(async_nats::jetstream::message::OutboundMessage::new(
                        on.clone().into(),
                        Bytes::copy_from_slice(p),
                        Some(self.headers(&txn, format)),
                    ))
                    .await
                    .map_err(|e| unreachable("send a write to", e))?;
            }
        }
        drop(framed);
        let mut h = self.headers(&txn, format);
        h.insert(COMMIT_HEADER, "1");
        let entry = serde_json::to_vec(&w.entry)
            .map_err(|e| BrookError::Internal(format!("write entry: {e}")))?;
        let ack = batch
            .commit_message(async_nats::jetstream::message::OutboundMessage::new(
                subject.into(),
                entry.into(),
                Some(h),
            ))
            .await
            .map_err(|e| unknown_outcome("write", e))?;
        self.wait(ack.sequence, &txn).await.map(|_| ())
    }

    /// Wait until this node applied everything the log held when the call began: a
    /// statement then sees every write any node acknowledged before it started.
    pub async fn sync(&self) -> Result<()> {
        let end = self.log_end().await?;
        // A node that stops moving towards the log's end (its NATS connection lost while
        // it reads) answers 08006 rather than keep the statement waiting for ever.
        loop {
            let before = self.progress();
            match tokio::time::timeout(FAILOVER_WAIT, self.reach(end)).await {
                Ok(Ok(())) => return Ok(()),
                Ok(Err(why)) => {
                    return Err(BrookError::Cluster {
                        message: format!("this node stopped applying the cluster's log ({why}): it cannot answer with the cluster's data"),
                        code: "08006",
                    })
                }
                Err(_) if self.progress() == before => {
                    return Err(BrookError::Cluster {
                        message: format!("this node has not applied the cluster's log up to position {end} and made no progress for {} s: it cannot answer with the cluster's data", FAILOVER_WAIT.as_secs()),
                        code: "08006",
                    })
                }
                Err(_) => {}
            }
        }
    }

    /// The log's last position. While NATS fails over (a server of a NATS cluster died and
    /// the log's leader is elected again, or the connection moves to another server) the
    /// request is tried again for up to [`FAILOVER_WAIT`].
    async fn log_end(&self) -> Result<u64> {
        let began = std::time::Instant::now();
        loop {
            let answer = match self.js.get_stream(&self.stream).await {
                Ok(s) => current_end(s.cached_info()),
                Err(e) => Err(e.to_string()),
            };
            match answer {
                Ok(end) => return Ok(end),
                Err(e) if began.elapsed() >= FAILOVER_WAIT => return Err(unreachable("read", e)),
                Err(e) => {
                    tracing::debug!(error = %e, "the cluster's log did not answer; trying again");
                    tokio::time::sleep(std::time::Duration::from_millis(250)).await;
                }
            }
        }
    }

    /// Wait until the applier passed `position`; the reason when it stopped instead.
    pub async fn reach(&self, position: u64) -> std::result::Result<(), String> {
        let mut rx = self.progress.subscribe();
        loop {
            match &*rx.borrow_and_update() {
                Progress::At(p) if *p >= position => return Ok(()),
                Progress::At(_) => {}
                Progress::Stopped(why) => return Err(why.clone()),
            }
            if rx.changed().await.is_err() {
                return Err("the applier is gone".into());
            }
        }
    }

    /// Wait until the applier passed `position`, then take its verdict on `txn`.
    async fn wait(&self, position: u64, txn: &str) -> Result<String> {
        self.reach(position).await.map_err(|why| BrookError::Cluster {
            message: format!("this node stopped applying the cluster's log ({why}); the statement was logged at position {position} and the other nodes apply it"),
            code: "08007",
        })?;
        lock(&self.verdicts).remove(txn).unwrap_or_else(|| {
            Err(BrookError::Internal(format!(
                "no verdict for log position {position}"
            )))
        })
    }
}

/// The batch records framed by [`ClusterLink::write`], in order.
pub fn unframe(mut framed: &[u8]) -> Result<Vec<&[u8]>> {
    let mut out = Vec::new();
    while !framed.is_empty() {
        let (len, rest) = framed
            .split_first_chunk::<8>()
            .ok_or_else(|| BrookError::Internal("a write's records end mid-frame".into()))?;
        let len = usize::try_from(u64::from_le_bytes(*len))
            .map_err(|_| BrookError::Internal("a write's record is too long".into()))?;
        if rest.len() < len {
            return Err(BrookError::Internal(
                "a write's records end mid-record".into(),
            ));
        }
        let (record, rest) = rest.split_at(len);
        out.push(record);
        framed = rest;
    }
    Ok(out)
}

/// A publish whose acknowledgement did not arrive: the entry may or may not be in the log.
fn unknown_outcome(what: &str, e: impl std::fmt::Display) -> BrookError {
    BrookError::Cluster {
        message: format!("the cluster's log did not acknowledge this {what} ({e}): it may or may not have been applied; check before retrying"),
        code: "08007",
    }
}

/// A digest of a relation's catalog entry: two nodes at the same log position agree on it.
pub fn definition_digest(meta: &crate::catalog::RelationMeta) -> u32 {
    crc32fast::hash(&serde_json::to_vec(meta).unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A stream's info as a JetStream server sends it: `replicas` copies, the leader having
    /// last heard from its two peers `active` seconds ago.
    fn info(replicas: usize, active: [f64; 2]) -> async_nats::jetstream::stream::Info {
        let peer = |name: &str, secs: f64| serde_json::json!({"name": name, "current": true, "active": (secs * 1e9) as u64});
        serde_json::from_value(serde_json::json!({
            "config": {"name": "BROOK_BROOK", "subjects": ["brook.brook.>"],
                       "num_replicas": replicas, "discard": "old", "retention": "limits",
                       "storage": "file"},
            "created": "2026-12-07T00:00:00Z",
            "state": {"messages": 42, "bytes": 1, "first_seq": 1,
                      "first_ts": "2026-12-07T00:00:00Z", "last_seq": 42,
                      "last_ts": "2026-12-07T00:00:00Z", "consumer_count": 0},
            "cluster": {"name": "c", "leader": "s1",
                        "replicas": [peer("s2", active[0]), peer("s3", active[1])]},
            "ts": "2026-12-07T00:00:00Z"
        }))
        .expect("a stream info")
    }

    #[test]
    fn a_leader_counts_only_while_it_hears_from_a_majority() {
        assert_eq!(current_end(&info(3, [0.3, 0.8])), Ok(42));
        // One peer lost: the leader and the other still make a majority.
        assert_eq!(current_end(&info(3, [0.3, 12.0])), Ok(42));
        // Cut off from both (a network split): possibly no longer the leader.
        let e = current_end(&info(3, [5.0, 12.0])).unwrap_err();
        assert!(e.contains("heard from 1 of its 3 replicas"), "{e}");
        // A log of one copy has no other leader to fear.
        assert_eq!(current_end(&info(1, [99.0, 99.0])), Ok(42));
    }
}
