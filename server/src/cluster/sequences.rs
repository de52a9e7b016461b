//! The cluster's sequence counters: a JetStream key-value bucket (`BROOK_<NAME>_SEQUENCES`,
//! one key `s<id>` per sequence, replicated as the log is), advanced by compare-and-set on
//! the key's revision (see `catalog/sequence_shared.rs` for how nodes take values).
//!
//! `nextval` is evaluated inside a query, on a statement thread and synchronously, so each
//! call here runs the bucket's request on the server's main runtime (where the NATS
//! connection is served) and waits for its answer, giving the thread up to the statement
//! runtime meanwhile.

use crate::catalog::sequence_shared::{SharedSequences, SharedState};
use async_nats::jetstream::kv;
use brook_common::{BrookError, Result};
use bytes::Bytes;
use std::future::Future;
use std::time::Duration;

/// How long a node waits for the bucket to answer (NATS's request timeout, and a failover
/// of its servers) before 08006.
const ANSWER_WAIT: Duration = Duration::from_secs(30);

/// The sequences' bucket of one cluster.
pub struct KvSequences {
    store: kv::Store,
    bucket: String,
    /// The runtime the NATS client was started on.
    runtime: tokio::runtime::Handle,
}

impl std::fmt::Debug for KvSequences {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KvSequences")
            .field("bucket", &self.bucket)
            .finish()
    }
}

/// Open (or create) the bucket of cluster `name` with `replicas` copies.
pub async fn open(
    js: &async_nats::jetstream::Context,
    name: &str,
    replicas: usize,
) -> anyhow::Result<KvSequences> {
    let bucket = format!("BROOK_{}_SEQUENCES", name.to_uppercase());
    let store = super::key_value_bucket(js, &bucket, replicas).await?;
    Ok(KvSequences {
        store,
        bucket,
        runtime: tokio::runtime::Handle::current(),
    })
}

fn unreachable(bucket: &str, e: impl std::fmt::Display) -> BrookError {
    BrookError::Cluster {
        message: format!("could not reach the cluster's sequences ({bucket}): {e}"),
        code: "08006",
    }
}

fn key(id: u64) -> String {
    format!("s{id}")
}

impl KvSequences {
    /// Run `fut` on the NATS client's runtime and wait for it on this thread.
    fn wait<T: Send + 'static>(&self, fut: impl Future<Output = T> + Send + 'static) -> Result<T> {
        let (tx, rx) = std::sync::mpsc::channel();
        self.runtime.spawn(async move {
            let _ = tx.send(tokio::time::timeout(ANSWER_WAIT, fut).await);
        });
        let answer = match tokio::runtime::Handle::try_current() {
            Ok(h) if h.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread => {
                tokio::task::block_in_place(|| rx.recv_timeout(ANSWER_WAIT + ANSWER_WAIT))
            }
            Ok(_) => {
                return Err(brook_common::brook_err!(
                    Internal,
                    "a sequence of a cluster was used on a single-threaded runtime"
                ))
            }
            Err(_) => rx.recv_timeout(ANSWER_WAIT + ANSWER_WAIT),
        };
        // The request's own timeout runs on the NATS client's runtime; waiting here is
        // bounded as well, should that runtime be too busy to run it.
        match answer {
            Ok(Ok(v)) => Ok(v),
            Ok(Err(_)) | Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
                Err(unreachable(&self.bucket, "no answer in 30 s"))
            }
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {
                Err(unreachable(&self.bucket, "the request was dropped"))
            }
        }
    }
}

impl SharedSequences for KvSequences {
    fn get(&self, id: u64) -> Result<(Option<SharedState>, u64)> {
        let store = self.store.clone();
        let entry = self
            .wait(async move { store.entry(key(id)).await })?
            .map_err(|e| unreachable(&self.bucket, e))?;
        let Some(entry) = entry else {
            return Ok((None, 0));
        };
        if entry.operation != kv::Operation::Put {
            return Ok((None, entry.revision));
        }
        let state: SharedState = serde_json::from_slice(&entry.value).map_err(|e| {
            brook_common::brook_err!(
                DataCorrupted,
                "sequence {id}'s state in {} is unreadable: {e}",
                self.bucket
            )
        })?;
        Ok((Some(state), entry.revision))
    }

    fn put_if(&self, id: u64, state: SharedState, revision: u64) -> Result<bool> {
        let store = self.store.clone();
        let value = Bytes::from(
            serde_json::to_vec(&state)
                .map_err(|e| brook_common::brook_err!(Internal, "sequence state: {e}"))?,
        );
        match self.wait(async move { store.update(key(id), value, revision).await })? {
            Ok(_) => Ok(true),
            Err(e) if e.kind() == kv::UpdateErrorKind::WrongLastRevision => Ok(false),
            Err(e) => Err(unreachable(&self.bucket, e)),
        }
    }
}
