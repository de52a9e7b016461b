//! Where statements run: a runtime of their own, apart from the one that serves connections.
//!
//! Network I/O (startup, reading messages, sending rows) stays on the server's main runtime;
//! each statement, and the stream of rows it produces, runs on [`statements`]. A query that
//! computes for a long time without yielding (a large nested-loop join, say) then holds one
//! of this runtime's threads, not the threads every connection needs: other clients still
//! connect, and their statements find another thread (there are more threads than cores;
//! the operating system shares the cores between them). A cancel or a statement timeout
//! answers the client at once; the computation stops at its next yield.

use brook_common::{brook_err, Result};
use datafusion::execution::SendableRecordBatchStream;
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use futures::StreamExt;
use std::sync::OnceLock;

/// Stack of every statement thread: planning and evaluation recurse over expressions,
/// up to the parser's `MAX_EXPR_DEPTH`, in a debug build with margin. Only touched pages
/// are backed by memory.
pub const THREAD_STACK_BYTES: usize = 64 << 20;

/// The statement runtime (started on first use).
pub fn statements() -> &'static tokio::runtime::Runtime {
    static RT: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    RT.get_or_init(|| {
        let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads((4 * cores).max(8))
            .thread_name("brook-statement")
            .thread_stack_size(THREAD_STACK_BYTES)
            .enable_all()
            .build()
            .unwrap_or_else(|e| panic!("cannot start the statement runtime: {e}"))
    })
}

/// Run `fut` on the statement runtime and wait for it here. A panic in it is an internal
/// error of this statement (XX000), not the end of the connection.
pub async fn run<T: Send + 'static>(
    fut: impl std::future::Future<Output = T> + Send + 'static,
) -> Result<T> {
    statements()
        .spawn(fut)
        .await
        .map_err(|e| brook_err!(Internal, "statement task failed: {e}"))
}

/// Poll `stream` on the statement runtime; its batches come through a small channel, so a
/// slow reader still stalls the producer (no unbounded buffering). Dropping the returned
/// stream (the client went away, or cancelled) stops the producer at its next batch.
pub fn offload(mut stream: SendableRecordBatchStream) -> SendableRecordBatchStream {
    let schema = stream.schema();
    let (tx, rx) = tokio::sync::mpsc::channel(2);
    statements().spawn(async move {
        loop {
            tokio::select! {
                next = stream.next() => {
                    let Some(item) = next else { break };
                    if tx.send(item).await.is_err() {
                        break;
                    }
                }
                _ = tx.closed() => break,
            }
        }
    });
    let rows = futures::stream::unfold(rx, |mut rx| async move {
        rx.recv().await.map(|item| (item, rx))
    });
    Box::pin(RecordBatchStreamAdapter::new(schema, rows))
}
