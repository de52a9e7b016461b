//! Cluster mode: a node joins the cluster's log on NATS JetStream and applies it.
//!
//! The log is one JetStream stream (`BROOK_<NAME>`, subjects `brook.<name>.>`) holding, in
//! one order, every catalog change (`brook.<name>.ddl`: the statement's text, run on each
//! node at its position) and every committed write (`brook.<name>.data.<relation id>`: the
//! batch records and an entry describing the write, published as one JetStream atomic
//! batch, so a statement's rows are in the log whole or not at all; a partitioned stream's
//! records are on `brook.<name>.data.<relation id>.<partition>`, in the same batch). Each node applies the
//! log in order to its own data directory (`apply.rs`), so at every position all nodes have
//! the same catalog and the same rows, and each node's continuous queries and views compute
//! the same answers. Why a log of statements rather than a catalog document, and what is not
//! built yet (partitions, ownership, distributed plans): `docs/cluster.md`.
//!
//! Invariants:
//! - A node applies each entry once: a write's commit record in a relation's log carries
//!   the entry's position, and the catalog carries the position of the last catalog change
//!   applied, so entries delivered again after a restart are recognised and skipped.
//! - A write is acknowledged to its client only after the log stored it (replicated as the
//!   stream is) and its own node applied it: a client reads its writes on its node.
//! - A data directory belongs to one log: a node refuses to start on a directory that holds
//!   data from outside cluster mode or from another log, and a single server refuses a
//!   directory that belongs to a cluster.

mod apply;
mod nodes;
mod partitions;
mod sequences;
mod views;

use crate::catalog::{CatalogDoc, ClusterMark};
use crate::db::cluster::{ClusterLink, Progress};
use crate::db::Engine;
use anyhow::{bail, Context};
use async_nats::jetstream;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

/// How a node joins a cluster (the command line's `--cluster*` options).
#[derive(Debug, Clone)]
pub struct ClusterOptions {
    /// NATS server URL(s), comma-separated.
    pub url: String,
    /// This node's id, unique in the cluster.
    pub node_id: String,
    /// The cluster's name: names the log's stream and subjects.
    pub name: String,
    /// Replicas of the log (JetStream's R; 3 on a three-server NATS cluster).
    pub replicas: usize,
}

/// How often the node pings its NATS server (see `join`).
const PING_INTERVAL: Duration = Duration::from_secs(2);

/// The file where a node notes how far it applied the log (a hint that is never ahead of
/// what is applied: the exact positions are in the catalog and the relations' logs).
const POSITION_FILE: &str = "cluster-position";

/// Join the cluster: connect, find or create the log, check that the data directory
/// belongs to it, apply the log up to its current end, then keep applying it in the
/// background. Statements on `engine` go through the log from here on.
pub async fn join(engine: &Arc<Engine>, opts: &ClusterOptions) -> anyhow::Result<()> {
    if opts.node_id.is_empty()
        || !opts
            .node_id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
    {
        bail!(
            "--node-id must be a non-empty name of letters, digits, '-' and '_' (got {:?})",
            opts.node_id
        );
    }
    if opts.name.is_empty() || !opts.name.chars().all(|c| c.is_ascii_alphanumeric()) {
        bail!(
            "--cluster-name must be letters and digits (got {:?})",
            opts.name
        );
    }
    let servers: Vec<&str> = opts.url.split(',').map(str::trim).collect();
    let client = async_nats::ConnectOptions::new()
        .name(format!("brook-{}", opts.node_id))
        .connection_timeout(Duration::from_secs(5))
        // A server cut off by the network keeps its TCP connection open without a word:
        // the client takes the connection for dead after three pings without an answer
        // and moves to another server. NATS's default (a ping a minute) left a node
        // stuck on the lost server for minutes, its statements failing with 08006 while
        // the rest of the cluster wrote on.
        .ping_interval(PING_INTERVAL)
        .connect(servers)
        .await
        .with_context(|| {
            format!(
                "cannot reach the cluster's NATS server at {} (start it with JetStream enabled, e.g. `nats-server -js`; nothing in {} was changed)",
                opts.url,
                engine.data_dir.display()
            )
        })?;
    let max_message = client.server_info().max_payload;
    let js = jetstream::new(client);
    let stream_name = format!("BROOK_{}", opts.name.to_uppercase());
    let prefix = format!("brook.{}", opts.name.to_lowercase());
    let mut stream = js
        .get_or_create_stream(jetstream::stream::Config {
            name: stream_name.clone(),
            subjects: vec![format!("{prefix}.>")],
            storage: jetstream::stream::StorageType::File,
            num_replicas: opts.replicas,
            allow_atomic_publish: true,
            ..Default::default()
        })
        .await
        .with_context(|| {
            format!("cannot open the cluster's log (JetStream stream {stream_name}) at {}: is JetStream enabled on the NATS server (`-js`)?", opts.url)
        })?;
    let info = stream.info().await.context("reading the cluster's log")?;
    if !info.config.allow_atomic_publish {
        bail!("the JetStream stream {stream_name} does not allow atomic batches (allow_atomic): it was not created by Brook");
    }
    let created = info.created.unix_timestamp_nanos().to_string();
    let end = info.state.last_sequence;
    let shared = sequences::open(&js, &opts.name, opts.replicas).await?;
    let directory = nodes::open(&js, &opts.name, opts.replicas).await?;
    nodes::refuse_a_live_namesake(&directory, &opts.node_id).await?;
    adopt_data_dir(engine, &stream_name, &created)?;
    let started = i64::try_from(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default()
            .as_micros(),
    )
    .unwrap_or(0);
    let position_file = engine.data_dir.join(POSITION_FILE);
    let start = read_position(&position_file);
    let link = Arc::new(ClusterLink::new(
        opts.node_id.clone(),
        js,
        (stream_name.clone(), prefix),
        max_message,
        start,
    ));
    if engine.cluster.set(link.clone()).is_err() {
        bail!("this engine already joined a cluster");
    }
    engine
        .catalog
        .share_sequences(Arc::new(shared))
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    let gather = views::ClusterGather {
        engine: Arc::downgrade(engine),
        link: link.clone(),
        client: link.client(),
    };
    if engine.gather.set(Arc::new(gather)).is_err() {
        bail!("this engine already joined a cluster");
    }
    views::spawn_responder(engine.clone(), link.clone(), link.client()).await?;
    tracing::info!(node = %opts.node_id, log = %stream_name, from = start + 1, to = end, "joining the cluster: applying its log");
    let applier = apply::Applier::new(engine.clone(), link.clone(), position_file);
    tokio::spawn(applier.run(stream, start));
    let mut progress = link.subscribe();
    loop {
        match &*progress.borrow_and_update() {
            Progress::At(p) if *p >= end => break,
            Progress::At(_) => {}
            Progress::Stopped(why) => bail!("could not apply the cluster's log: {why}"),
        }
        progress
            .changed()
            .await
            .context("the cluster's applier ended")?;
    }
    tracing::info!(node = %opts.node_id, position = end, "caught up with the cluster's log");
    nodes::spawn_heartbeat(directory, link, engine.clone(), started);
    Ok(())
}

/// The cluster's key-value bucket `bucket` (one value per key, `replicas` copies), created
/// when it does not exist yet.
async fn key_value_bucket(
    js: &jetstream::Context,
    bucket: &str,
    replicas: usize,
) -> anyhow::Result<jetstream::kv::Store> {
    if let Ok(store) = js.get_key_value(bucket).await {
        return Ok(store);
    }
    js.create_key_value(jetstream::kv::Config {
        bucket: bucket.to_string(),
        history: 1,
        num_replicas: replicas,
        storage: jetstream::stream::StorageType::File,
        ..Default::default()
    })
    .await
    .with_context(|| format!("cannot create the cluster's key-value bucket {bucket}"))
}

/// Check that the data directory belongs to log `log` (created at `created`), marking a
/// fresh one as its.
fn adopt_data_dir(engine: &Engine, log: &str, created: &str) -> anyhow::Result<()> {
    let doc = engine.catalog.read().clone();
    match &doc.cluster {
        Some(mark) if mark.log == log && mark.log_created == created => return Ok(()),
        Some(mark) => bail!(
            "the data directory {} belongs to another cluster log ({} created at {}), not to {} created at {}: a node joins with an empty data directory or its own",
            engine.data_dir.display(),
            mark.log,
            mark.log_created,
            log,
            created
        ),
        None => {}
    }
    let fresh = CatalogDoc {
        cluster: None,
        ..CatalogDoc::default()
    };
    if doc != fresh {
        bail!(
            "the data directory {} holds objects created outside cluster mode: a node joins a cluster with an empty data directory (its data comes from the cluster's log)",
            engine.data_dir.display()
        );
    }
    engine
        .catalog
        .update(|d| {
            d.cluster = Some(ClusterMark {
                log: log.to_string(),
                log_created: created.to_string(),
                ddl_position: 0,
                partition_owners: Default::default(),
            });
            Ok(())
        })
        .map_err(|e| anyhow::anyhow!("{e}"))
}

/// The position noted in `file` (0 when there is none or it is unreadable: the log is then
/// applied from its start, entries already applied being skipped).
fn read_position(file: &Path) -> u64 {
    std::fs::read_to_string(file)
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(0)
}

/// Note `position` in `file` (replaced whole).
fn write_position(file: &Path, position: u64) -> std::io::Result<()> {
    let tmp = file.with_extension("tmp");
    std::fs::write(&tmp, position.to_string())?;
    std::fs::rename(&tmp, file)
}
