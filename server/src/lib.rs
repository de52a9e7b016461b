//! The Brook server: PostgreSQL wire front end, sessions, catalog and durable storage.
//!
//! # Layout
//! - [`wire`]: pgwire handlers (startup/auth, simple and extended query, COPY, cancel).
//! - [`session`]: one connection's state and the execution of every statement kind.
//! - [`cancel`]: CancelRequest handling (per-statement cancellation tokens).
//! - [`cancellable`]: cancellation checked inside DataFusion plans (at their leaves).
//! - [`checked_functions`]: `repeat`/`lpad`/`rpad` bounded to 1 GB, `to_timestamp` range-checked.
//! - [`connection`]: one connection's life around pgwire's loop (gone-client handle, idle watchdog, panic containment).
//! - [`engine`]: data directory, catalog and one DataFusion context per database.
//! - [`catalog`]: the persistent catalog (JSON, replaced atomically).
//! - [`idle`]: `idle_in_transaction_session_timeout` (idle in a block or an open COPY).
//! - [`storage`]: per-relation append-only logs of Arrow IPC batches with commit records.
//! - [`repair`]: `brook repair`, which inspects and (when told) fixes a data directory.
//! - [`runtime`]: the runtime statements run on, apart from connection I/O.
//! - [`table`]: tables and streams as DataFusion table providers.
//! - [`continuous`]: running continuous queries (one task per query, fed by commits).
//! - [`view`]: materialized views (state rebuilt from durable inputs, read by scans).
//! - [`count_window`]: `TUMBLE_ROWS`/`HOP_ROWS` count windows as a table function.
//! - [`copy`]: COPY text/CSV/binary parsing and formatting.
//! - [`datetime`]: a fast path for the commonest timestamp text.
//! - [`encode`]: Arrow values to PostgreSQL text and binary formats.
//! - [`types`]: PostgreSQL column types and their Arrow representation.
//! - [`functions`]: SQL functions added for PostgreSQL clients.
//! - [`sum_numeric`]: `sum(bigint)` as `numeric`, as PostgreSQL (no wrap-around).
//! - [`synopses`]: `brook_synopses()`, the status report of the database's synopses.
//! - [`nexmark`]: the built-in Nexmark generator, `nexmark(kind, events [, rate])`.

pub mod cancel;
pub mod cancellable;
pub mod catalog;
pub mod checked_functions;
pub mod connection;
pub mod continuous;
pub mod copy;
pub mod count_window;
pub mod datetime;
pub mod encode;
pub mod engine;
pub mod fast_text;
pub mod framing;
pub mod functions;
pub mod handler;
pub mod ident;
pub mod idle;
pub mod mode;
pub mod nexmark;
pub mod repair;
pub mod runtime;
pub mod session;
pub mod settings;
pub mod storage;
pub mod stream;
pub mod sum_numeric;
pub mod synopses;
pub mod table;
pub mod types;
pub mod view;
pub mod wire;
pub mod write;
