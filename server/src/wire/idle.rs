//! `idle_in_transaction_session_timeout`: a connection that sits idle inside a transaction
//! block or an open `COPY ... FROM STDIN` longer than the setting is terminated (FATAL
//! 25P03, as PostgreSQL does). An open COPY holds its table's write lock, so without this an
//! idle client could block every other writer of that table for good.
//!
//! The connection records what it is doing ([`IdleWatch`]); a watchdog task per connection
//! looks every [`CHECK_EVERY`] and, past the limit, makes the connection end. The same
//! watchdog cancels the query of a client that closed its connection while the query
//! runs ([`IdleWatch::is_busy`], [`IdleWatch::cancel_query`]).

use crate::exec::cancel::SessionCancel;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How often the watchdog looks.
pub const CHECK_EVERY: Duration = Duration::from_millis(200);

#[derive(Debug)]
struct State {
    /// A statement or COPY message is being handled now.
    busy: bool,
    /// When the connection last finished handling something.
    since: Instant,
    /// Inside BEGIN ... COMMIT.
    in_block: bool,
    /// Inside COPY FROM STDIN.
    in_copy: bool,
    /// The session's `idle_in_transaction_session_timeout` (None: off).
    limit: Option<Duration>,
}

/// What a connection is doing, for its watchdog.
#[derive(Debug)]
pub struct IdleWatch {
    state: Mutex<State>,
    /// The connection's cancellation (which `pg_terminate_backend` marks), once its
    /// session exists.
    cancel: std::sync::OnceLock<Arc<SessionCancel>>,
}

impl Default for IdleWatch {
    fn default() -> Self {
        IdleWatch {
            state: Mutex::new(State {
                busy: false,
                since: Instant::now(),
                in_block: false,
                in_copy: false,
                limit: None,
            }),
            cancel: std::sync::OnceLock::new(),
        }
    }
}

impl IdleWatch {
    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A message's handling starts; it ends at [`Self::idle`] or when the guard is dropped
    /// (also when the handling fails half-way): time spent running a statement is never
    /// idle time.
    #[must_use]
    pub fn busy(&self) -> Busy<'_> {
        self.lock().busy = true;
        Busy(self)
    }

    /// Whether a message (a statement) is being handled now.
    pub fn is_busy(&self) -> bool {
        self.lock().busy
    }

    /// A message's handling ended; `limit` is the session's setting now.
    pub fn idle(&self, limit: Option<Duration>) {
        let mut s = self.lock();
        s.busy = false;
        s.since = Instant::now();
        s.limit = limit;
    }

    /// BEGIN (true) or COMMIT/ROLLBACK (false) completed.
    pub fn set_block(&self, open: bool) {
        self.lock().in_block = open;
    }

    /// COPY FROM STDIN started (true) or ended (false).
    pub fn set_copy(&self, open: bool) {
        self.lock().in_copy = open;
    }

    /// Watch `cancel`, the connection's, for a `pg_terminate_backend` request.
    pub fn watch_terminate(&self, cancel: Arc<SessionCancel>) {
        let _ = self.cancel.set(cancel);
    }

    /// Whether `pg_terminate_backend` asked the connection to end.
    pub fn terminated(&self) -> bool {
        self.cancel.get().is_some_and(|c| c.terminated())
    }

    /// Cancel the statement running now if it writes nothing (its client is gone); whether
    /// it did.
    pub fn cancel_query(&self) -> bool {
        self.cancel.get().is_some_and(|c| c.cancel_read_only())
    }

    /// Whether the connection has been idle in a transaction or COPY past its limit.
    pub fn expired(&self) -> bool {
        let s = self.lock();
        !s.busy && (s.in_block || s.in_copy) && s.limit.is_some_and(|l| s.since.elapsed() > l)
    }
}

/// A message being handled (see [`IdleWatch::busy`]).
pub struct Busy<'a>(&'a IdleWatch);

impl Drop for Busy<'_> {
    fn drop(&mut self) {
        let mut s = self.0.lock();
        if s.busy {
            s.busy = false;
            s.since = Instant::now();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_idle_time_inside_a_transaction_or_copy_counts() {
        let w = IdleWatch::default();
        let limit = Some(Duration::from_millis(10));
        w.idle(limit);
        std::thread::sleep(Duration::from_millis(20));
        assert!(!w.expired(), "idle outside a transaction");
        w.set_copy(true);
        assert!(w.expired(), "idle in COPY past the limit");
        let busy = w.busy();
        assert!(!w.expired(), "busy");
        w.idle(None);
        drop(busy);
        std::thread::sleep(Duration::from_millis(20));
        assert!(!w.expired(), "no limit set");
        w.set_copy(false);
        w.set_block(true);
        w.idle(limit);
        assert!(!w.expired(), "just went idle");
        std::thread::sleep(Duration::from_millis(20));
        assert!(w.expired(), "idle in a block past the limit");
        {
            let _busy = w.busy();
            std::thread::sleep(Duration::from_millis(20));
            assert!(!w.expired(), "a statement running in a block is not idle");
        }
        assert!(!w.expired(), "its end starts the idle time");
    }
}
