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
use datafusion::error::DataFusionError;
use datafusion::execution::SendableRecordBatchStream;
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use futures::{FutureExt, StreamExt};
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

/// XX000 for a panic caught while computing a statement's rows, with its message.
fn panicked(panic: &(dyn std::any::Any + Send)) -> brook_common::BrookError {
    let message = panic
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_default();
    tracing::error!("a statement's computation panicked: {message}");
    brook_err!(Internal, "a statement's computation panicked: {message}")
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
/// stream (the client went away, or cancelled) stops the producer at its next batch. A
/// panic while computing a batch ends the stream with an internal error (XX000): the
/// reader must not take the end of the channel for the end of the rows.
pub fn offload(mut stream: SendableRecordBatchStream) -> SendableRecordBatchStream {
    let schema = stream.schema();
    let (tx, rx) = tokio::sync::mpsc::channel(2);
    statements().spawn(async move {
        loop {
            let next = std::panic::AssertUnwindSafe(stream.next()).catch_unwind();
            tokio::select! {
                next = next => {
                    let item = match next {
                        Ok(Some(item)) => item,
                        Ok(None) => break,
                        Err(panic) => Err(DataFusionError::External(Box::new(panicked(panic.as_ref())))),
                    };
                    let failed = item.is_err();
                    if tx.send(item).await.is_err() || failed {
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

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::arrow::datatypes::Schema;
    use std::sync::Arc;

    /// A panic while computing rows ends the stream with an error: a reader that saw the
    /// channel close took it for the end of the rows (a SELECT answered 0 rows, no error).
    #[tokio::test]
    async fn a_panic_is_an_error_not_the_end_of_the_rows() {
        let rows = futures::stream::once(async {
            if std::hint::black_box(true) {
                panic!("a function's bug");
            }
            Err(DataFusionError::Internal("unreachable".into()))
        });
        let stream: SendableRecordBatchStream = Box::pin(RecordBatchStreamAdapter::new(
            Arc::new(Schema::empty()),
            rows,
        ));
        let mut out = offload(stream);
        let first = out.next().await.expect("an item, not the end");
        let message = first.expect_err("an error").to_string();
        assert!(message.contains("a function's bug"), "{message}");
        assert!(out.next().await.is_none());
    }
}
