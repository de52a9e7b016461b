//! The PostgreSQL wire protocol front end (pgwire), the only module naming pgwire types:
//! startup and authentication (`startup`), the simple (`simple`) and extended (`extended`)
//! query protocols, COPY (`copy`), CancelRequest routing (`cancel`), running a statement for
//! a connection (`statement`) and sending its results (`send`, `rows`), the check of every
//! client message (`framing`), a connection's life (`connection`, `idle`). Here: the
//! per-server front (`Front`), the per-connection handlers, and the mapping of every error,
//! once, from [`BrookError`] to pgwire's `ErrorInfo`. The private submodules share this
//! module's items (`use super::*`).

pub mod cancel;
pub mod connection;
pub mod framing;
pub mod idle;
pub mod rows;

mod copy;
mod cursor_portals;
mod extended;
mod portal_fetch;
mod portals;
mod send;
mod simple;
mod startup;
mod statement;

pub use extended::BrookParser;
pub use startup::Startup;

use crate::db::Engine;
use crate::exec::cancel::SessionCancel;
use crate::session::Session;
use crate::wire::cancel::CancelRegistry;
use async_trait::async_trait;
use brook_common::{brook_err, BrookError};
use brook_planner::BrookStatement;
use datafusion::arrow::datatypes::SchemaRef;
use pgwire::api::auth::StartupHandler;
use pgwire::api::cancel::CancelHandler;
use pgwire::api::copy::CopyHandler;
use pgwire::api::query::{ExtendedQueryHandler, SimpleQueryHandler};
use pgwire::api::{PgWireServerHandlers, Type};
use pgwire::error::{ErrorInfo, PgWireError};
use std::fmt::Debug;
use std::sync::Arc;
use tokio::sync::Mutex;

/// Map a Brook error to the wire, once.
pub fn to_pg(e: BrookError) -> PgWireError {
    if let BrookError::Internal(m) = &e {
        tracing::error!(error = %m, "internal error");
    } else {
        tracing::info!(sqlstate = e.sqlstate(), error = %e, "statement failed");
    }
    // Messages quote user data; a NUL byte would corrupt the protocol message.
    let message = e.to_string().replace('\0', "\\0");
    let mut info = error_info("ERROR", e.sqlstate(), message);
    match e {
        BrookError::SyntaxAt { position, .. } => info.position = Some(position.to_string()),
        BrookError::DuplicateKey(key) => {
            info.detail = Some(key.detail.replace('\0', "\\0"));
            info.table = Some(key.table);
            info.constraint = Some(key.constraint);
        }
        _ => {}
    }
    PgWireError::UserError(Box::new(info))
}

fn fatal(code: &str, msg: String) -> PgWireError {
    PgWireError::UserError(Box::new(error_info("FATAL", code, msg)))
}

/// An error or notice message's fields: its severity (also as the field libpq and
/// psycopg read whatever the server's language, `V`), SQLSTATE and text.
pub(crate) fn error_info(severity: &str, code: &str, message: String) -> ErrorInfo {
    let mut info = ErrorInfo::new(severity.to_string(), code.to_string(), message);
    info.severity_nonlocalized = Some(severity.to_string());
    info
}

/// Server configuration the front end needs.
#[derive(Debug, Clone)]
pub struct WireConfig {
    /// Password of role `brook`; when set, SCRAM-SHA-256 is required of every connection.
    pub password: Option<String>,
    /// Most client connections at once; the next is refused with 53300.
    pub max_connections: usize,
    /// Refuse connections that did not negotiate TLS (28000).
    pub require_tls: bool,
}

/// Creates the handlers of each new connection.
pub struct Front {
    engine: Arc<Engine>,
    cancels: Arc<CancelRegistry>,
    /// One startup handler for all connections: the salted password is computed once, and
    /// backend pids come from one counter.
    startup: Arc<Startup>,
    /// Connections open now (each holds a [`ConnectionSlot`]).
    open: Arc<std::sync::atomic::AtomicUsize>,
}

/// One open connection, counted while it lives.
pub struct ConnectionSlot(Arc<std::sync::atomic::AtomicUsize>);

impl Drop for ConnectionSlot {
    fn drop(&mut self) {
        self.0.fetch_sub(1, std::sync::atomic::Ordering::AcqRel);
    }
}

impl Front {
    /// A front end over `engine`.
    pub fn new(engine: Arc<Engine>, config: WireConfig) -> Self {
        let open = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        Front {
            startup: Arc::new(Startup::new(engine.clone(), &config, open.clone())),
            engine,
            cancels: Arc::new(CancelRegistry::default()),
            open,
        }
    }

    /// Handlers for one new connection; `peer` is a non-blocking duplicate of its socket
    /// (see [`BrookHandler::client_gone`]).
    pub fn connection(&self, peer: Option<std::net::TcpStream>) -> ConnHandlers {
        self.open.fetch_add(1, std::sync::atomic::Ordering::AcqRel);
        let slot = ConnectionSlot(self.open.clone());
        let handler = Arc::new(BrookHandler {
            engine: self.engine.clone(),
            session: Mutex::new(None),
            parser: Arc::new(BrookParser),
            cancel: Arc::new(SessionCancel::default()),
            cancels: self.cancels.clone(),
            pid: std::sync::Mutex::new(None),
            backend: std::sync::Mutex::new(None),
            max_connections: self.startup.max_connections,
            peer,
            idle: Arc::default(),
            reported: std::sync::Mutex::default(),
            suspended: std::sync::Mutex::default(),
            finished: portals::FinishedPortals::default(),
            cursors: std::sync::Mutex::default(),
        });
        ConnHandlers {
            handler,
            startup: self.startup.clone(),
            cancel: Arc::new(BrookCancel {
                registry: self.cancels.clone(),
            }),
            _slot: slot,
        }
    }
}

/// Handlers of one connection.
pub struct ConnHandlers {
    handler: Arc<BrookHandler>,
    startup: Arc<Startup>,
    cancel: Arc<BrookCancel>,
    _slot: ConnectionSlot,
}

/// Routes CancelRequests to the session they name.
pub struct BrookCancel {
    registry: Arc<CancelRegistry>,
}

#[async_trait]
impl CancelHandler for BrookCancel {
    async fn on_cancel_request(&self, request: pgwire::messages::cancel::CancelRequest) {
        self.registry.cancel(request.pid, &request.secret_key);
    }
}

impl ConnHandlers {
    /// What the connection is doing, for its idle watchdog.
    pub fn idle_watch(&self) -> Arc<crate::wire::idle::IdleWatch> {
        self.handler.idle.clone()
    }
}

impl PgWireServerHandlers for ConnHandlers {
    fn simple_query_handler(&self) -> Arc<impl SimpleQueryHandler> {
        self.handler.clone()
    }
    fn extended_query_handler(&self) -> Arc<impl ExtendedQueryHandler> {
        self.handler.clone()
    }
    fn startup_handler(&self) -> Arc<impl StartupHandler> {
        self.startup.clone()
    }
    fn copy_handler(&self) -> Arc<impl CopyHandler> {
        self.handler.clone()
    }
    fn cancel_handler(&self) -> Arc<impl CancelHandler> {
        self.cancel.clone()
    }
}

/// A prepared statement of the extended protocol.
#[derive(Debug, Clone)]
pub struct Prepared {
    /// The parsed statement (None: empty query).
    pub stmt: Option<BrookStatement>,
    /// Its text, as the client sent it (for `pg_stat_activity`).
    pub sql: String,
    /// Parameter types (declared by the client or inferred).
    pub params: Vec<Type>,
    /// Result schema, when known at Parse time.
    pub schema: Option<SchemaRef>,
}

/// 22021 for query text that held invalid UTF-8. pgwire decodes message strings lossily,
/// replacing each invalid byte sequence by U+FFFD, so that character is what such text
/// arrives as: refused rather than stored in place of the client's bytes (the character
/// itself can still be written as `chr(65533)`).
/// Whether a statement writes nothing (a query, a cursor's FETCH, COPY TO, SHOW...): what a
/// client that vanished has cancelled. `EXECUTE` of a prepared statement counts as a
/// write, whatever it runs; `SELECT ... INTO` creates a table.
fn reads_only(stmt: &BrookStatement) -> bool {
    use datafusion::sql::sqlparser::ast::{SetExpr, Statement as S};
    let creates = |q: &datafusion::sql::sqlparser::ast::Query| matches!(q.body.as_ref(), SetExpr::Select(s) if s.into.is_some());
    match stmt.as_sql() {
        Some(S::Execute { .. }) => false,
        // SELECT ... INTO creates a table.
        Some(S::Query(q)) if creates(q) => false,
        _ => crate::handler::transaction::writes(stmt).is_none(),
    }
}

fn check_query_text(sql: &str) -> Result<(), BrookError> {
    if sql.contains('\u{FFFD}') {
        return Err(brook_err!(BadEncoding, "invalid byte sequence for encoding \"UTF8\" in the query text (U+FFFD as a literal character is refused too; write it as chr(65533))"));
    }
    Ok(())
}

/// Largest row limit of an Execute (a client's fetch size); see `on_execute`.
const MAX_EXECUTE_ROWS: usize = 1_000_000;

/// Most parameters a statement may have (the protocol's 16-bit count, as PostgreSQL).
const MAX_PARAMETERS: usize = 65_535;

/// Per-connection query, extended-query and COPY handler.
pub struct BrookHandler {
    engine: Arc<Engine>,
    session: Mutex<Option<Session>>,
    parser: Arc<BrookParser>,
    cancel: Arc<SessionCancel>,
    cancels: Arc<CancelRegistry>,
    /// Backend pid under which `cancel` is registered (once the session exists).
    pid: std::sync::Mutex<Option<i32>>,
    /// This connection in the server's activity list (once the session exists).
    backend: std::sync::Mutex<Option<Arc<crate::exec::activity::Backend>>>,
    /// The server's connection limit (shown as `max_connections`).
    max_connections: usize,
    /// A second handle on the client's socket, only peeked at (never read): tells when the
    /// client has gone while a statement waits for rows.
    peer: Option<std::net::TcpStream>,
    /// What the connection is doing, for `idle_in_transaction_session_timeout`.
    idle: Arc<crate::wire::idle::IdleWatch>,
    /// The reported parameters' values as the client last heard them (ParameterStatus),
    /// by setting name; empty until a statement changes one.
    reported: std::sync::Mutex<std::collections::HashMap<&'static str, String>>,
    /// Portals executed with a row limit, by name: the token their rows are computed
    /// under, which each later Execute that resumes them links to its own (a cancel or the
    /// statement timeout of that Execute stops them).
    suspended:
        std::sync::Mutex<std::collections::HashMap<String, tokio_util::sync::CancellationToken>>,
    /// Portals that ran to their end, which an Execute may not run again.
    finished: portals::FinishedPortals,
    /// The cursors declared through the extended protocol, each also a portal of its name
    /// (which outlives the transaction, as Brook's cursors do).
    cursors: std::sync::Mutex<std::collections::HashSet<String>>,
}

impl Drop for BrookHandler {
    fn drop(&mut self) {
        if let Some(pid) = self.pid.lock().ok().and_then(|p| *p) {
            self.cancels.unregister(pid);
            self.engine.activity.unregister(pid);
        }
    }
}
