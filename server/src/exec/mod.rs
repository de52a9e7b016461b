//! How statements execute: on a runtime of their own, cancellable (CancelRequest,
//! `statement_timeout`) down to the leaves of their plans; what each connection is doing
//! (`activity`); code that computes inside one poll asks `interrupt` whether to stop.

pub mod activity;
pub mod cancel;
pub mod cancellable;
pub mod column_default;
pub mod interrupt;
pub mod lateral_apply;
pub mod runtime;
