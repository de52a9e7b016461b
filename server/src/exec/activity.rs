//! What every connection is doing — the rows of `pg_stat_activity`, and of
//! `pg_stat_progress_copy` for a COPY FROM STDIN in progress — and cancelling a
//! connection's statement by its pid (`pg_cancel_backend`), as a CancelRequest does.

use crate::exec::cancel::SessionCancel;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

/// Every connection with a session, by backend pid.
#[derive(Debug, Default)]
pub struct Activity {
    backends: Mutex<BTreeMap<i32, Arc<Backend>>>,
}

/// One connection.
#[derive(Debug)]
pub struct Backend {
    /// Backend pid (what CancelRequest and `pg_cancel_backend` name).
    pub pid: i32,
    /// Role.
    pub user: String,
    /// Database.
    pub database: String,
    /// The client's address.
    pub client_addr: String,
    /// When the connection began, microseconds since the epoch.
    pub backend_start: i64,
    cancel: Arc<SessionCancel>,
    doing: Mutex<Doing>,
}

/// What a connection is doing now.
#[derive(Debug, Clone)]
pub struct Doing {
    /// The session's `application_name` (empty when not given).
    pub application_name: String,
    /// The COPY FROM STDIN in progress, if any.
    pub copy: Option<CopyProgress>,
    /// `active`, `idle` or `idle in transaction`.
    pub state: &'static str,
    /// The statement running, or the last one.
    pub query: String,
    /// When that statement began (microseconds since the epoch).
    pub query_start: Option<i64>,
    /// When the transaction in progress began (its first statement), None when idle
    /// outside a transaction block.
    pub xact_start: Option<i64>,
    /// When `state` last changed.
    pub state_change: i64,
}

/// A COPY FROM STDIN in progress.
#[derive(Debug, Clone, PartialEq)]
pub struct CopyProgress {
    /// The relation written, schema-qualified.
    pub relation: String,
    /// Bytes of COPY data received so far.
    pub bytes: u64,
    /// Rows read so far.
    pub tuples: u64,
}

/// Microseconds since the epoch, now.
pub fn now_micros() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_micros() as i64)
        .unwrap_or(0)
}

impl Backend {
    /// A connection that has just started, idle.
    pub fn new(
        pid: i32,
        user: String,
        database: String,
        application_name: String,
        client_addr: String,
        cancel: Arc<SessionCancel>,
    ) -> Self {
        let now = now_micros();
        Backend {
            pid,
            user,
            database,
            client_addr,
            backend_start: now,
            cancel,
            doing: Mutex::new(Doing {
                application_name,
                copy: None,
                state: "idle",
                query: String::new(),
                query_start: None,
                xact_start: None,
                state_change: now,
            }),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Doing> {
        self.doing.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A statement (`query`, the text the client sent) starts.
    pub fn active(&self, query: &str) {
        let now = now_micros();
        let mut d = self.lock();
        d.state = "active";
        d.query = query.to_string();
        d.query_start = Some(now);
        d.xact_start.get_or_insert(now);
        d.state_change = now;
    }

    /// The statement ended; the connection waits for the next one.
    pub fn idle(&self, in_transaction: bool) {
        let mut d = self.lock();
        d.state = if in_transaction {
            "idle in transaction"
        } else {
            d.xact_start = None;
            "idle"
        };
        d.state_change = now_micros();
    }

    /// The session set `application_name`.
    pub fn set_application_name(&self, name: &str) {
        self.lock().application_name = name.to_string();
    }

    /// Where its COPY FROM STDIN is (None: it ended).
    pub fn copy_progress(&self, progress: Option<CopyProgress>) {
        self.lock().copy = progress;
    }

    /// What it is doing now.
    pub fn doing(&self) -> Doing {
        self.lock().clone()
    }
}

impl Activity {
    /// List a connection (once its session exists).
    pub fn register(&self, backend: Arc<Backend>) {
        if let Ok(mut m) = self.backends.lock() {
            m.insert(backend.pid, backend);
        }
    }

    /// Forget a connection (it ended).
    pub fn unregister(&self, pid: i32) {
        if let Ok(mut m) = self.backends.lock() {
            m.remove(&pid);
        }
    }

    /// Every listed connection, by pid.
    pub fn backends(&self) -> Vec<Arc<Backend>> {
        self.backends
            .lock()
            .map(|m| m.values().cloned().collect())
            .unwrap_or_default()
    }

    /// Where connection `pid`'s COPY FROM STDIN is (None: it ended).
    pub fn copy_progress(&self, pid: i32, progress: Option<CopyProgress>) {
        let target = self.backends.lock().ok().and_then(|m| m.get(&pid).cloned());
        if let Some(b) = target {
            b.copy_progress(progress);
        }
    }

    /// Cancel the running statement of connection `pid`; false when there is none by
    /// that pid.
    pub fn cancel(&self, pid: i32) -> bool {
        let target = self.backends.lock().ok().and_then(|m| m.get(&pid).cloned());
        match target {
            Some(b) => {
                b.cancel.cancel();
                true
            }
            None => false,
        }
    }

    /// End connection `pid` (`pg_terminate_backend`): its running statement is cancelled
    /// and the connection closes with FATAL 57P01; false when there is none by that pid.
    pub fn terminate(&self, pid: i32) -> bool {
        let target = self.backends.lock().ok().and_then(|m| m.get(&pid).cloned());
        match target {
            Some(b) => {
                b.cancel.terminate();
                true
            }
            None => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn states_follow_statements_and_cancel_reaches_the_running_one() {
        let activity = Activity::default();
        let cancel = Arc::new(SessionCancel::default());
        let b = Arc::new(Backend::new(
            7,
            "brook".into(),
            "brook".into(),
            "app".into(),
            "127.0.0.1:5".into(),
            cancel.clone(),
        ));
        activity.register(b.clone());
        assert_eq!(b.doing().state, "idle");
        let token = cancel.begin();
        b.active("SELECT 1");
        assert_eq!(
            (b.doing().state, b.doing().query.as_str()),
            ("active", "SELECT 1")
        );
        assert!(activity.cancel(7));
        assert!(token.is_cancelled());
        b.idle(true);
        assert_eq!(b.doing().state, "idle in transaction");
        let progress = CopyProgress {
            relation: "public.t".into(),
            bytes: 10,
            tuples: 2,
        };
        activity.copy_progress(7, Some(progress.clone()));
        assert_eq!(b.doing().copy, Some(progress));
        activity.copy_progress(7, None);
        assert_eq!(b.doing().copy, None);
        assert!(!activity.cancel(8));
        assert!(!cancel.terminated());
        assert!(activity.terminate(7));
        assert!(cancel.terminated());
        assert!(!activity.terminate(8));
        activity.unregister(7);
        assert!(activity.backends().is_empty());
    }
}
