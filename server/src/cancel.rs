//! Query cancellation: a CancelRequest (sent on a separate connection with the backend's pid
//! and secret key) cancels the statement running on the matching session.
//!
//! Kept by Brook rather than pgwire's connection manager because a statement's rows are
//! computed while they are sent, after pgwire's cancellable section has ended; each
//! statement gets a fresh token that guards both planning and row streaming.

use pgwire::messages::startup::SecretKey;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use tokio_util::sync::CancellationToken;

/// The cancellation state of one session.
#[derive(Debug, Default)]
pub struct SessionCancel {
    current: Mutex<CancellationToken>,
}

impl SessionCancel {
    /// A fresh token for the statement that starts now.
    pub fn begin(&self) -> CancellationToken {
        let t = CancellationToken::new();
        match self.current.lock() {
            Ok(mut g) => *g = t.clone(),
            Err(p) => *p.into_inner() = t.clone(),
        }
        t
    }

    /// Cancel the running statement (if any).
    pub fn cancel(&self) {
        match self.current.lock() {
            Ok(g) => g.cancel(),
            Err(p) => p.into_inner().cancel(),
        }
    }
}

/// All sessions that can be cancelled, by backend pid.
#[derive(Debug, Default)]
pub struct CancelRegistry {
    sessions: Mutex<HashMap<i32, (SecretKey, Arc<SessionCancel>)>>,
}

impl CancelRegistry {
    /// Register a session under its pid and secret key.
    pub fn register(&self, pid: i32, key: SecretKey, s: Arc<SessionCancel>) {
        if let Ok(mut m) = self.sessions.lock() {
            m.insert(pid, (key, s));
        }
    }

    /// Forget a session (its connection ended).
    pub fn unregister(&self, pid: i32) {
        if let Ok(mut m) = self.sessions.lock() {
            m.remove(&pid);
        }
    }

    /// Cancel the statement of the session with this pid and key; a wrong key is ignored,
    /// as PostgreSQL does, so a guessed pid cancels nothing.
    pub fn cancel(&self, pid: i32, key: &SecretKey) {
        let target = self.sessions.lock().ok().and_then(|m| {
            m.get(&pid)
                .filter(|(k, _)| k.eq_value(key))
                .map(|(_, s)| s.clone())
        });
        tracing::debug!(pid, found = target.is_some(), "cancel request");
        if let Some(s) = target {
            s.cancel();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_right_key_cancels_and_only_the_current_statement() {
        let reg = CancelRegistry::default();
        let s = Arc::new(SessionCancel::default());
        reg.register(7, SecretKey::I32(42), s.clone());
        let first = s.begin();
        reg.cancel(7, &SecretKey::I32(1));
        assert!(!first.is_cancelled());
        reg.cancel(7, &SecretKey::I32(42));
        assert!(first.is_cancelled());
        // clients on another protocol version send the same key as bytes
        let again = s.begin();
        reg.cancel(
            7,
            &SecretKey::Bytes(bytes::Bytes::from_static(&[0, 0, 0, 42])),
        );
        assert!(again.is_cancelled());
        let second = s.begin();
        assert!(!second.is_cancelled());
        reg.unregister(7);
        reg.cancel(7, &SecretKey::I32(42));
        assert!(!second.is_cancelled());
    }
}
