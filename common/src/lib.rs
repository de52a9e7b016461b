//! Shared vocabulary of every Brook crate: the one error type (with its SQLSTATE) and the
//! reserved column names that the continuous engine adds to streams.
//!
//! # Layout
//! - [`error`]: [`BrookError`], the single error enum; `sqlstate()` maps every variant to the
//!   PostgreSQL code a client sees.
//! - [`ident`]: the identifier rule (unquoted names fold ASCII letters to lower case).
//! - [`columns`]: names of reserved columns (change kind, event time).
//! - [`types`]: PostgreSQL names of Arrow types, for messages, and PostgreSQL's text form of
//!   intervals (the wire and EXPLAIN print them alike).
//! - [`interval_text`], [`time_text`]: PostgreSQL's input of intervals and times of day.

pub mod columns;
pub mod error;
pub mod ident;
pub mod interval_text;
pub mod time_text;
pub mod types;

pub use error::{BrookError, Result};
