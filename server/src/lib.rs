//! The Brook server: PostgreSQL wire front end, sessions, catalog and durable storage.
//!
//! # Layout
//! Modules form layers; each uses only the layers listed before it (and its own directory),
//! which `tests/layering.rs` checks. Lowest first:
//! - leaves: [`config`] (the version Brook reports), [`ident`] (identifier folding),
//!   [`settings`] (configuration parameters and their defaults), [`exec`] (the statement
//!   runtime, cancellation and timeouts, cancellation inside plans);
//! - [`pg`]: PostgreSQL column types and their text and binary formats;
//! - [`storage`]: per-relation append-only logs of Arrow IPC batches with commit records,
//!   recovery and compaction;
//! - [`catalog`]: the persistent catalog (JSON, replaced atomically) and relations as
//!   DataFusion table providers;
//! - [`copy`]: COPY text/CSV/binary parsing and formatting (knows no connection);
//! - [`stream`]: continuous queries: planning, the registry and tasks that run them,
//!   materialized views, `TUMBLE_ROWS`/`HOP_ROWS`;
//! - [`udf`]: the SQL functions Brook adds (PostgreSQL compatibility, checked arithmetic,
//!   synopses' status, the Nexmark generator, `mode`, `sum(bigint)` as numeric);
//! - [`db`]: the engine: the data directory, its databases and their DataFusion contexts;
//! - [`session`]: one connection's state (context, settings, cursors, an open COPY);
//! - [`write`]: the write path shared by INSERT, upsert, UPDATE/DELETE and COPY;
//! - [`handler`]: one file per statement family, and the dispatch of a statement;
//! - [`cluster`]: cluster mode: joining the cluster's log on NATS JetStream and applying it;
//! - [`wire`]: the PostgreSQL protocol over pgwire (the only module naming pgwire types):
//!   startup and authentication, simple and extended query, COPY, cancel, message checks,
//!   a connection's life;
//! - [`server`]: the accept loop (a data directory's engine behind a listener, TLS set-up,
//!   shutdown on SIGTERM/SIGINT); `main.rs` is the command line only;
//! - [`repair`]: `brook repair`, which inspects and (when told) fixes a data directory.

pub mod catalog;
pub mod cluster;
pub mod config;
pub mod copy;
pub mod db;
pub mod exec;
pub mod handler;
pub mod ident;
pub mod pg;
pub mod repair;
pub mod server;
pub mod session;
pub mod settings;
pub mod storage;
pub mod stream;
pub mod udf;
pub mod wire;
pub mod write;
