//! How statements execute: on a runtime of their own, cancellable (CancelRequest,
//! `statement_timeout`) down to the leaves of their plans; what each connection is doing
//! (`activity`).

pub mod activity;
pub mod cancel;
pub mod cancellable;
pub mod column_default;
pub mod runtime;
