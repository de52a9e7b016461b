//! The running statement's cancellation where an operator computes inside one poll.
//!
//! [`crate::exec::cancellable`] stops a plan where its leaves hand out batches. Some
//! operators compute for long between two input batches: a window function over a moving
//! frame folds every frame again with a user aggregate (O(frame) per row), all inside the
//! one poll that ends the partition. Code on such paths asks [`check`] now and then; it
//! answers from the token of the plan being polled on this thread, set for the duration
//! of each poll by the plan's [`CancellableExec`](crate::exec::cancellable::CancellableExec)
//! wrappers (at the root and below every operator that polls its input from tasks of its
//! own). A poll runs on one thread from start to end, so the token set around it is the
//! one of the statement whose code runs; outside any plan (a continuous operator, a
//! unit test) there is none and [`check`] always passes.

use crate::exec::cancellable::StatementCancel;
use brook_common::BrookError;
use std::cell::RefCell;

thread_local! {
    static CURRENT: RefCell<Option<StatementCancel>> = const { RefCell::new(None) };
}

/// The cancellation of the plan polled on this thread, until dropped (the outer one then
/// again).
pub(crate) struct Scope {
    outer: Option<StatementCancel>,
}

/// Make `cancel` the one [`check`] reads on this thread until the scope is dropped. Its
/// token is read at each check: a poll that began under one FETCH of a cursor and goes on
/// (in a task of the plan) sees the token of the FETCH that drives the cursor now.
pub(crate) fn enter(cancel: &StatementCancel) -> Scope {
    let outer = CURRENT.with(|c| c.replace(Some(cancel.clone())));
    Scope { outer }
}

impl Drop for Scope {
    fn drop(&mut self) {
        let outer = self.outer.take();
        CURRENT.with(|c| *c.borrow_mut() = outer);
    }
}

/// 57014 when the statement whose plan runs on this thread was cancelled (a
/// CancelRequest, `statement_timeout`).
pub(crate) fn check() -> Result<(), BrookError> {
    let cancelled = CURRENT.with(|c| {
        c.borrow()
            .as_ref()
            .is_some_and(|s| s.token().is_cancelled())
    });
    if cancelled {
        Err(BrookError::Canceled)
    } else {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use tokio_util::sync::CancellationToken;

    #[test]
    fn a_scope_answers_for_its_token_and_restores_the_outer_one() {
        assert!(check().is_ok());
        let outer = CancellationToken::new();
        let inner = CancellationToken::new();
        let _o = enter(&StatementCancel::new(outer.clone()));
        {
            let _i = enter(&StatementCancel::new(inner.clone()));
            inner.cancel();
            assert!(matches!(check(), Err(BrookError::Canceled)));
        }
        assert!(check().is_ok());
        outer.cancel();
        assert!(check().is_err());
    }

    #[test]
    fn a_scope_reads_the_token_in_force_now() {
        let cancel = StatementCancel::new(CancellationToken::new());
        let _s = enter(&cancel);
        let next = CancellationToken::new();
        cancel.replace(next.clone());
        assert!(check().is_ok());
        next.cancel();
        assert!(check().is_err());
    }

    #[test]
    fn no_plan_no_interrupt() {
        std::thread::spawn(|| assert!(check().is_ok()))
            .join()
            .expect("thread");
    }
}
