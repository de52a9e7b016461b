//! How statements execute: on a runtime of their own, cancellable (CancelRequest,
//! `statement_timeout`) down to the leaves of their plans.

pub mod cancel;
pub mod cancellable;
pub mod runtime;
