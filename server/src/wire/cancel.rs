//! CancelRequest routing: every connection that can be cancelled, by backend pid and secret
//! key; a request with the right key cancels that connection's running statement.

use crate::exec::cancel::SessionCancel;
use pgwire::messages::startup::SecretKey;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

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
