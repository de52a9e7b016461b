//! Query cancellation: a CancelRequest (sent on a separate connection with the backend's pid
//! and secret key) cancels the statement running on the matching session.
//!
//! Kept by Brook rather than pgwire's connection manager because a statement's rows are
//! computed while they are sent, after pgwire's cancellable section has ended; each
//! statement gets a fresh token that guards both planning and row streaming. The same token
//! enforces `statement_timeout`: a timer cancels it, and [`SessionCancel::error`] tells the
//! two causes apart (both 57014, as PostgreSQL).

use brook_common::BrookError;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// The cancellation state of one statement.
#[derive(Debug, Default)]
struct Current {
    token: CancellationToken,
    /// Set when the statement timeout, not a client, cancelled `token`.
    timed_out: Arc<AtomicBool>,
    /// Cancelled when the next statement begins: stops this statement's timer.
    ended: CancellationToken,
    /// The statement writes nothing: a client that vanished does not wait for it.
    read_only: bool,
}

/// The cancellation state of one session.
#[derive(Debug, Default)]
pub struct SessionCancel {
    current: Mutex<Current>,
    /// `pg_terminate_backend`: the connection is ending, and its statement says so.
    terminated: AtomicBool,
}

impl SessionCancel {
    fn lock(&self) -> std::sync::MutexGuard<'_, Current> {
        self.current.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A fresh token for the statement that starts now.
    pub fn begin(&self) -> CancellationToken {
        self.begin_with_timeout(None)
    }

    /// A fresh token for the statement that starts now, cancelled after `timeout` (the
    /// session's `statement_timeout`) unless the statement ends first ([`Self::end`], or
    /// the next statement begins).
    pub fn begin_with_timeout(&self, timeout: Option<Duration>) -> CancellationToken {
        let next = Current::default();
        let token = next.token.clone();
        if let Some(t) = timeout {
            let (token, flag, ended) = (token.clone(), next.timed_out.clone(), next.ended.clone());
            tokio::spawn(async move {
                tokio::select! {
                    _ = tokio::time::sleep(t) => {
                        if !token.is_cancelled() {
                            flag.store(true, Ordering::Release);
                            token.cancel();
                        }
                    }
                    _ = ended.cancelled() => {}
                    _ = token.cancelled() => {}
                }
            });
        }
        let old = std::mem::replace(&mut *self.lock(), next);
        old.ended.cancel();
        token
    }

    /// The running statement writes nothing ([`Self::cancel_read_only`] may stop it).
    pub fn set_read_only(&self, read_only: bool) {
        self.lock().read_only = read_only;
    }

    /// Cancel the running statement if it writes nothing; whether it did. For a client that
    /// closed its connection while the statement runs: a query's rows have nobody to go
    /// to, while a write the client sent whole is carried out, as PostgreSQL does.
    pub fn cancel_read_only(&self) -> bool {
        let current = self.lock();
        let running = !current.ended.is_cancelled() && !current.token.is_cancelled();
        if running && current.read_only {
            current.token.cancel();
        }
        running && current.read_only
    }

    /// The statement's response is sent: its timeout no longer applies (a cursor it
    /// declared lives on, uncancelled).
    pub fn end(&self) {
        self.lock().ended.cancel();
    }

    /// Whether the running statement was cancelled (a COPY FROM STDIN asks as its data
    /// arrives; its statement runs until CopyDone).
    pub fn cancelled(&self) -> bool {
        let current = self.lock();
        !current.ended.is_cancelled() && current.token.is_cancelled()
    }

    /// Cancel the running statement (if any). A statement that has ended is not: what its
    /// plans left behind (a cursor's query, a materialized view's expressions) still
    /// holds its token, and a cancel between statements must not stop them (PostgreSQL:
    /// a cancel with no statement running does nothing).
    pub fn cancel(&self) {
        let current = self.lock();
        if !current.ended.is_cancelled() {
            current.token.cancel();
        }
    }

    /// Cancel the running statement because the connection is being terminated: its error
    /// is 57P01, not 57014, and the connection's watchdog ends it ([`Self::terminated`]).
    pub fn terminate(&self) {
        self.terminated.store(true, Ordering::Release);
        self.cancel();
    }

    /// Whether `pg_terminate_backend` asked the connection to end.
    pub fn terminated(&self) -> bool {
        self.terminated.load(Ordering::Acquire)
    }

    /// `e`, or — when it is the 57014 of a part of the statement that saw the token
    /// cancelled and stopped (a plan's leaf, an operator) before the wire layer did — the
    /// error that names the cause ([`Self::error`]).
    pub fn cause(&self, e: BrookError) -> BrookError {
        match e {
            BrookError::Canceled => self.error(),
            e => e,
        }
    }

    /// The error of the statement cancelled now: by the statement timeout or by request.
    pub fn error(&self) -> BrookError {
        if self.terminated() {
            BrookError::Timeout {
                message: "terminating connection due to administrator command".into(),
                code: "57P01",
            }
        } else if self.lock().timed_out.load(Ordering::Acquire) {
            BrookError::Timeout {
                message: "canceling statement due to statement timeout".into(),
                code: "57014",
            }
        } else {
            BrookError::Canceled
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_terminated_statement_says_so() {
        let s = SessionCancel::default();
        let t = s.begin();
        s.terminate();
        assert!(t.is_cancelled());
        assert_eq!(s.error().sqlstate(), "57P01");
    }

    #[tokio::test]
    async fn the_statement_timeout_cancels_and_says_so() {
        let s = SessionCancel::default();
        let t = s.begin_with_timeout(Some(Duration::from_millis(20)));
        t.cancelled().await;
        assert_eq!(
            s.error().to_string(),
            "canceling statement due to statement timeout"
        );
        assert_eq!(s.error().sqlstate(), "57014");
        // The next statement starts clean; an earlier statement's timer stops with it.
        let next = s.begin_with_timeout(Some(Duration::from_secs(3600)));
        assert_eq!(
            s.error().to_string(),
            "canceling statement due to user request"
        );
        s.cancel();
        assert!(next.is_cancelled());
    }

    #[test]
    fn only_a_running_statement_that_writes_nothing_is_cancelled_for_a_vanished_client() {
        let s = SessionCancel::default();
        let write = s.begin();
        assert!(!s.cancel_read_only());
        assert!(!write.is_cancelled());
        let query = s.begin();
        s.set_read_only(true);
        assert!(s.cancel_read_only());
        assert!(query.is_cancelled());
        let done = s.begin();
        s.set_read_only(true);
        s.end();
        assert!(!s.cancel_read_only());
        assert!(!done.is_cancelled());
    }

    #[test]
    fn a_cancel_between_statements_cancels_nothing() {
        let s = SessionCancel::default();
        let t = s.begin();
        s.end();
        s.cancel();
        assert!(!t.is_cancelled());
        let next = s.begin();
        s.cancel();
        assert!(next.is_cancelled());
    }

    #[tokio::test]
    async fn a_cancel_seen_inside_the_statement_names_its_cause() {
        let s = SessionCancel::default();
        let t = s.begin_with_timeout(Some(Duration::from_millis(10)));
        t.cancelled().await;
        let e = s.cause(BrookError::Canceled);
        assert_eq!(
            e.to_string(),
            "canceling statement due to statement timeout"
        );
        assert_eq!(
            s.cause(BrookError::internal("x")).sqlstate(),
            "XX000",
            "other errors pass"
        );
    }
}
