//! Portals that ran to their end. PostgreSQL runs a portal's statement once: an Execute of a
//! finished portal that returned rows returns none (`SELECT 0`), and one of a portal that
//! returned none (INSERT, UPDATE, COPY, DDL, SET) is refused with 55000 `portal "p" cannot be
//! run`. pgwire tracks this only for the row streams it pages itself, so without this an
//! INSERT's portal executed twice before Sync inserted its rows twice.

use pgwire::api::portal::PortalExecutionState;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// A portal's execution state, which pgwire makes anew for each Bind: it tells a finished
/// portal from a later one bound under the same name.
pub(super) type PortalState = Arc<tokio::sync::Mutex<PortalExecutionState>>;

/// What a second Execute of a finished portal answers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Rerun {
    /// The statement returned rows: none are left, so the command tag with 0 rows.
    NoMoreRows(String),
    /// The statement returned no rows: it may not run again (55000).
    Refused,
}

struct Finished {
    state: PortalState,
    rerun: Rerun,
}

/// The finished portals of one connection, by name.
#[derive(Default)]
pub(super) struct FinishedPortals {
    by_name: Mutex<HashMap<String, Finished>>,
}

impl FinishedPortals {
    /// The portal `name` (with execution state `state`) ran to its end.
    pub(super) fn finish(&self, name: &str, state: PortalState, rerun: Rerun) {
        let mut by_name = self.lock();
        // Portals closed since (only this map still holds their state) are forgotten.
        by_name.retain(|_, f| Arc::strong_count(&f.state) > 1);
        by_name.insert(name.to_string(), Finished { state, rerun });
    }

    /// What an Execute of portal `name` answers if this very portal already ran.
    pub(super) fn rerun(&self, name: &str, state: &PortalState) -> Option<Rerun> {
        self.lock()
            .get(name)
            .filter(|f| Arc::ptr_eq(&f.state, state))
            .map(|f| f.rerun.clone())
    }

    /// The portal `name` is gone (closed, or its transaction ended).
    pub(super) fn forget(&self, name: &str) {
        self.lock().remove(name);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Finished>> {
        self.by_name.lock().unwrap_or_else(|p| p.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn state() -> PortalState {
        Arc::new(tokio::sync::Mutex::new(PortalExecutionState::Initial))
    }

    #[test]
    fn a_finished_portal_is_known_by_its_state_not_only_its_name() {
        let done = FinishedPortals::default();
        let first = state();
        done.finish("p", first.clone(), Rerun::Refused);
        assert_eq!(done.rerun("p", &first), Some(Rerun::Refused));
        // A Bind under the same name makes a new portal, which has not run.
        assert_eq!(done.rerun("p", &state()), None);
        assert_eq!(done.rerun("q", &first), None);
        done.forget("p");
        assert_eq!(done.rerun("p", &first), None);
    }

    #[test]
    fn closed_portals_are_forgotten() {
        let done = FinishedPortals::default();
        done.finish("closed", state(), Rerun::Refused);
        let open = state();
        done.finish("open", open.clone(), Rerun::Refused);
        assert_eq!(done.lock().len(), 1);
        assert_eq!(done.rerun("open", &open), Some(Rerun::Refused));
    }

    #[test]
    fn a_portal_that_returned_rows_returns_none_again() {
        let done = FinishedPortals::default();
        let s = state();
        done.finish("", s.clone(), Rerun::NoMoreRows("INSERT 0".into()));
        assert_eq!(
            done.rerun("", &s),
            Some(Rerun::NoMoreRows("INSERT 0".into()))
        );
    }
}
