//! Reads of materialized views maintained per partition (`stream::partitioned_view`).
//!
//! Each node answers, over NATS request-reply on `brook_views.<name>.<node>`, with the
//! rows its state of a view holds for the partitions it owns; a node reading the view
//! gathers the answers of every owner ([`ClusterGather`]; its own partitions' rows it
//! takes from its own state the same way, without NATS). An answer is given once the
//! answering node has applied the log up to the position the reader had applied (so it
//! holds every write the reader's statement must see) and its view state is fresh; a node
//! whose state holds other partitions than those asked (ownership moved, or its state is
//! being rebuilt for a move) refuses, and the reader asks again as the log tells it the
//! new owners. Why request-reply rather than results published to JetStream: a view's rows
//! are read far less often than its input changes, and a reply carries only the rows
//! asked for, when asked.

use crate::db::cluster::{ClusterLink, Progress};
use crate::db::Engine;
use crate::stream::partitioned_view::{owned_rows, Gather, ViewIdentity};
use async_trait::async_trait;
use brook_common::{brook_err, BrookError, Result};
use bytes::Bytes;
use datafusion::arrow::ipc::reader::StreamReader;
use datafusion::arrow::ipc::writer::StreamWriter;
use datafusion::arrow::record_batch::RecordBatch;
use futures::StreamExt;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Weak};
use std::time::Duration;

/// Header of an answer's message: which part of how many it is (`i/n`).
const PART_HEADER: &str = "Brook-Part";
/// Header of a refusal: why.
const REFUSED_HEADER: &str = "Brook-Refused";
/// Header of a refusal that asking again cannot change: the error's SQLSTATE.
const CODE_HEADER: &str = "Brook-Code";
/// How long a node waits for another's answer, and to be fresh itself.
const ASK_TIMEOUT: Duration = Duration::from_secs(5);
/// How long a read of a view waits for every partition's owner to answer (a node that
/// died is replaced as owner within about 15 s, then its partitions' new owner rebuilds).
const GATHER_WAIT: Duration = Duration::from_secs(60);

/// What a reader asks a node.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Ask {
    database: String,
    /// The view's relation id, and its name for messages.
    view: u64,
    name: String,
    partitions: BTreeSet<u32>,
    /// The log position the reader had applied: the answer covers at least that.
    position: u64,
}

/// Why a node does not answer: for a while (`code` None: behind the log, rebuilding, its
/// ownership moved), or for good (the view was dropped, its maintenance failed), with the
/// error's SQLSTATE.
#[derive(Debug)]
struct Refusal {
    message: String,
    code: Option<String>,
}

impl Refusal {
    fn for_now(message: String) -> Refusal {
        Refusal {
            message,
            code: None,
        }
    }

    fn for_good(e: &BrookError) -> Refusal {
        Refusal {
            message: e.to_string(),
            code: Some(e.sqlstate().to_string()),
        }
    }
}

/// The subject node `node` takes asks on: outside the log's subjects (`brook.<name>.>`),
/// which JetStream stores.
fn subject(link: &ClusterLink, node: &str) -> String {
    let name = link.prefix().trim_start_matches("brook.");
    format!("brook_views.{name}.{node}")
}

/// Answer asks for this node's rows of views maintained per partition, for as long as the
/// node runs.
pub(super) async fn spawn_responder(
    engine: Arc<Engine>,
    link: Arc<ClusterLink>,
    client: async_nats::Client,
) -> anyhow::Result<()> {
    let mut asks = client.subscribe(subject(&link, &link.node)).await?;
    tokio::spawn(async move {
        while let Some(m) = asks.next().await {
            let (engine, link, client) = (engine.clone(), link.clone(), client.clone());
            tokio::spawn(async move {
                let Some(reply) = m.reply.clone() else {
                    return;
                };
                let answer = match serde_json::from_slice::<Ask>(&m.payload) {
                    Ok(ask) => rows_for(&engine, &link, &ask).await,
                    Err(e) => Err(Refusal::for_now(format!(
                        "an ask this node cannot read: {e}"
                    ))),
                };
                if let Err(e) = send(&client, &link, reply, answer).await {
                    tracing::warn!(error = %e, "could not answer a read of a materialized view maintained per partition");
                }
            });
        }
    });
    Ok(())
}

/// This node's rows of the view `ask` names, for the partitions it asks (an error saying
/// why not otherwise).
async fn rows_for(
    engine: &Engine,
    link: &ClusterLink,
    ask: &Ask,
) -> std::result::Result<Vec<RecordBatch>, Refusal> {
    tokio::time::timeout(ASK_TIMEOUT, link.reach(ask.position))
        .await
        .map_err(|_| Refusal::for_now(format!("node {} is behind the log", link.node)))?
        .map_err(Refusal::for_now)?;
    let db = engine
        .database(&ask.database)
        .map_err(|e| Refusal::for_good(&e))?;
    // By id: the view the reader planned, renamed or not; not one created since under
    // its name.
    let found = engine
        .catalog
        .read()
        .database(&ask.database)
        .ok()
        .and_then(|d| {
            d.schemas.iter().find_map(|(schema, s)| {
                s.relations
                    .iter()
                    .find(|(_, r)| r.id == ask.view)
                    .map(|(name, _)| (schema.clone(), name.clone()))
            })
        });
    let (schema, name) =
        found.ok_or_else(|| Refusal::for_good(&BrookError::UndefinedTable(ask.name.clone())))?;
    let state = engine
        .view_state(&db, &schema, &name)
        .map_err(|e| Refusal::for_good(&e))?;
    tokio::time::timeout(ASK_TIMEOUT, state.wait_fresh())
        .await
        .map_err(|_| {
            Refusal::for_now(format!(
                "node {} is still bringing the view up to date",
                link.node
            ))
        })?
        .map_err(|e| Refusal::for_good(&e))?;
    owned_rows(&state, &ask.partitions)
        .ok_or_else(|| {
            Refusal::for_now(format!(
                "node {} holds other partitions of the view (its ownership moved)",
                link.node
            ))
        })?
        .map_err(|e| Refusal::for_good(&e))
}

/// Send `answer` to `reply`: the rows as an Arrow IPC stream cut in messages the NATS
/// server takes, or the refusal.
async fn send(
    client: &async_nats::Client,
    link: &ClusterLink,
    reply: async_nats::Subject,
    answer: std::result::Result<Vec<RecordBatch>, Refusal>,
) -> anyhow::Result<()> {
    let batches = match answer {
        Ok(b) => b,
        Err(why) => {
            let mut h = async_nats::HeaderMap::new();
            h.insert(REFUSED_HEADER, why.message.as_str());
            if let Some(code) = &why.code {
                h.insert(CODE_HEADER, code.as_str());
            }
            client.publish_with_headers(reply, h, Bytes::new()).await?;
            return Ok(client.flush().await?);
        }
    };
    let bytes = encode(&batches)?;
    let piece = link.max_message().saturating_sub(1024).max(1024);
    let parts: Vec<&[u8]> = if bytes.is_empty() {
        vec![&[]]
    } else {
        bytes.chunks(piece).collect()
    };
    for (i, p) in parts.iter().enumerate() {
        let mut h = async_nats::HeaderMap::new();
        h.insert(PART_HEADER, format!("{i}/{}", parts.len()).as_str());
        client
            .publish_with_headers(reply.clone(), h, Bytes::copy_from_slice(p))
            .await?;
    }
    Ok(client.flush().await?)
}

fn encode(batches: &[RecordBatch]) -> anyhow::Result<Vec<u8>> {
    let Some(first) = batches.first() else {
        return Ok(Vec::new());
    };
    let mut buf = Vec::new();
    let mut w = StreamWriter::try_new(&mut buf, first.schema_ref())?;
    for b in batches {
        w.write(b)?;
    }
    w.finish()?;
    drop(w);
    Ok(buf)
}

fn decode(bytes: &[u8]) -> std::result::Result<Vec<RecordBatch>, String> {
    if bytes.is_empty() {
        return Ok(Vec::new());
    }
    let reader =
        StreamReader::try_new(std::io::Cursor::new(bytes), None).map_err(|e| e.to_string())?;
    reader
        .collect::<std::result::Result<Vec<_>, _>>()
        .map_err(|e| e.to_string())
}

/// Ask node `node` for its rows.
async fn ask_node(
    client: &async_nats::Client,
    link: &ClusterLink,
    node: &str,
    ask: &Ask,
) -> std::result::Result<Vec<RecordBatch>, Refusal> {
    let unreachable =
        |e: &dyn std::fmt::Display| Refusal::for_now(format!("could not ask node {node}: {e}"));
    let inbox = client.new_inbox();
    let mut replies = client
        .subscribe(inbox.clone())
        .await
        .map_err(|e| unreachable(&e))?;
    let payload = serde_json::to_vec(ask).map_err(|e| unreachable(&e))?;
    client
        .publish_with_reply(subject(link, node), inbox, payload.into())
        .await
        .map_err(|e| unreachable(&e))?;
    let mut parts: Vec<Option<Bytes>> = Vec::new();
    loop {
        let m = tokio::time::timeout(ASK_TIMEOUT, replies.next())
            .await
            .map_err(|_| {
                Refusal::for_now(format!(
                    "node {node} did not answer within {} s",
                    ASK_TIMEOUT.as_secs()
                ))
            })?
            .ok_or_else(|| Refusal::for_now(format!("node {node}'s answer was cut")))?;
        let header = |name: &str| {
            m.headers
                .as_ref()
                .and_then(|h| h.get(name))
                .map(|v| v.as_str().to_string())
        };
        if let Some(message) = header(REFUSED_HEADER) {
            return Err(Refusal {
                message,
                code: header(CODE_HEADER),
            });
        }
        let (i, n) = header(PART_HEADER)
            .and_then(|p| {
                let (i, n) = p.split_once('/')?;
                Some((i.parse::<usize>().ok()?, n.parse::<usize>().ok()?))
            })
            .filter(|(i, n)| i < n)
            .ok_or_else(|| {
                Refusal::for_now(format!("node {node} answered what Brook does not send"))
            })?;
        if parts.is_empty() {
            parts = vec![None; n];
        }
        if let Some(slot) = parts.get_mut(i) {
            *slot = Some(m.payload.clone());
        }
        if parts.iter().all(Option::is_some) {
            break;
        }
    }
    let bytes: Vec<u8> = parts.into_iter().flatten().flatten().collect();
    decode(&bytes).map_err(Refusal::for_now)
}

/// The owners of a stream's partitions, as this node's copy of the log records them:
/// each owner's partitions, or which partition has none yet.
fn owners(
    engine: &Engine,
    stream: u64,
    partitions: u32,
) -> std::result::Result<BTreeMap<String, BTreeSet<u32>>, String> {
    let doc = engine.catalog.read();
    let owners = doc
        .cluster
        .as_ref()
        .and_then(|c| c.partition_owners.get(&stream));
    let mut by_node: BTreeMap<String, BTreeSet<u32>> = BTreeMap::new();
    for p in 0..partitions {
        let owner = owners
            .and_then(|o| o.get(&p))
            .ok_or_else(|| format!("partition {p} of its stream has no owner yet"))?;
        by_node.entry(owner.clone()).or_default().insert(p);
    }
    Ok(by_node)
}

/// A cluster node's reads of views maintained per partition.
#[derive(Debug)]
pub struct ClusterGather {
    pub(super) engine: Weak<Engine>,
    pub(super) link: Arc<ClusterLink>,
    pub(super) client: async_nats::Client,
}

#[async_trait]
impl Gather for ClusterGather {
    async fn gather(
        &self,
        view: &ViewIdentity,
        partitions: u32,
        stream: u64,
    ) -> Result<Vec<RecordBatch>> {
        let engine = self
            .engine
            .upgrade()
            .ok_or_else(|| brook_err!(Internal, "the server is shutting down"))?;
        let position = match self.link.progress() {
            Progress::At(p) => p,
            Progress::Stopped(why) => {
                return Err(BrookError::Cluster {
                    message: format!("this node stopped applying the cluster's log ({why})"),
                    code: "08006",
                })
            }
        };
        let deadline = tokio::time::Instant::now() + GATHER_WAIT;
        loop {
            // Dropped while the read waits (for owners, or for an owner to answer): say so
            // at once, as the owners do.
            if !exists(&engine, view) {
                return Err(BrookError::UndefinedTable(view.name.clone()));
            }
            let why = match owners(&engine, stream, partitions) {
                Ok(by_node) => {
                    let asks = by_node.into_iter().map(|(node, partitions)| {
                        let ask = Ask {
                            database: view.database.clone(),
                            view: view.id,
                            name: view.name.clone(),
                            partitions,
                            position,
                        };
                        let engine = engine.clone();
                        async move {
                            if node == self.link.node {
                                rows_for(&engine, &self.link, &ask).await
                            } else {
                                ask_node(&self.client, &self.link, &node, &ask).await
                            }
                        }
                    });
                    let answers = futures::future::join_all(asks).await;
                    match answers
                        .into_iter()
                        .collect::<std::result::Result<Vec<_>, _>>()
                    {
                        Ok(rows) => return Ok(rows.into_iter().flatten().collect()),
                        Err(Refusal {
                            message,
                            code: Some(code),
                        }) => return Err(permanent(&code, message)),
                        Err(why) => why.message,
                    }
                }
                Err(why) => why,
            };
            if tokio::time::Instant::now() >= deadline {
                return Err(BrookError::Cluster {
                    message: format!(
                        "could not read {} from the nodes that own its partitions within {} s: {why}",
                        view.name,
                        GATHER_WAIT.as_secs()
                    ),
                    code: "08006",
                });
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }
}

/// Whether relation `view` (by id) still exists in this node's catalog.
fn exists(engine: &Engine, view: &ViewIdentity) -> bool {
    engine
        .catalog
        .read()
        .database(&view.database)
        .is_ok_and(|d| {
            d.schemas
                .values()
                .any(|s| s.relations.values().any(|r| r.id == view.id))
        })
}

/// The error an owner refused a read with for good, as this node reports it.
fn permanent(code: &str, message: String) -> BrookError {
    // The view was dropped (or its database), or its maintenance failed (a row of its
    // stream made its query fail).
    let code = match code {
        "42P01" => "42P01",
        "3D000" => "3D000",
        "55000" => "55000",
        _ => return BrookError::Internal(message),
    };
    BrookError::Cluster { message, code }
}
