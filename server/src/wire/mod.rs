//! The PostgreSQL wire protocol front end (pgwire): startup and authentication, simple and
//! extended query protocol, COPY, cancel. Every error is mapped here, once, from
//! [`BrookError`] to pgwire's `ErrorInfo`.

pub mod cancel;
pub mod connection;
pub mod framing;
pub mod idle;
pub mod rows;

use crate::config::SERVER_VERSION;
use crate::copy::CopyOutEncoder;
use crate::db::Engine;
use crate::exec::cancel::SessionCancel;
use crate::pg::types::cast_name;
use crate::session::{Outcome, Session};
use crate::wire::cancel::CancelRegistry;
use crate::wire::rows::{field_infos, RowEncoder};
use async_trait::async_trait;
use brook_common::BrookError;
use brook_planner::rewrite::{bind_parameters, placeholder_count, BoundParam};
use brook_planner::BrookStatement;
use datafusion::arrow::datatypes::SchemaRef;
use futures::{stream, Sink, SinkExt, StreamExt};
use pgwire::api::auth::sasl::scram::{gen_salted_password, ScramAuth};
use pgwire::api::auth::sasl::SASLAuthStartupHandler;
use pgwire::api::auth::{AuthSource, LoginInfo, Password, ServerParameterProvider, StartupHandler};
use pgwire::api::cancel::CancelHandler;
use pgwire::api::copy::CopyHandler;
use pgwire::api::portal::{Format, Portal};
use pgwire::api::query::{send_execution_response, ExtendedQueryHandler, SimpleQueryHandler};
use pgwire::api::results::{
    CopyResponse, DescribePortalResponse, DescribeResponse, DescribeStatementResponse, FieldFormat,
    FieldInfo, QueryResponse, Response, Tag,
};
use pgwire::api::stmt::{QueryParser, StoredStatement};
use pgwire::api::store::PortalStore;
use pgwire::api::{
    ClientInfo, ClientPortalStore, PgWireConnectionState, PgWireServerHandlers, Type,
};
use pgwire::error::{ErrorInfo, PgWireError, PgWireResult};
use pgwire::messages::copy::{CopyData, CopyDone, CopyFail};
use pgwire::messages::response::{ReadyForQuery, TransactionStatus};
use pgwire::messages::startup::Authentication;
use pgwire::messages::{PgWireBackendMessage, PgWireFrontendMessage};
use std::collections::HashMap;
use std::fmt::Debug;
use std::sync::Arc;
use tokio::sync::Mutex;
use tokio_util::sync::CancellationToken;

/// Map a Brook error to the wire, once.
pub fn to_pg(e: BrookError) -> PgWireError {
    if let BrookError::Internal(m) = &e {
        tracing::error!(error = %m, "internal error");
    } else {
        tracing::debug!(sqlstate = e.sqlstate(), error = %e, "statement failed");
    }
    // Messages quote user data; a NUL byte would corrupt the protocol message.
    let message = e.to_string().replace('\0', "\\0");
    PgWireError::UserError(Box::new(ErrorInfo::new(
        "ERROR".into(),
        e.sqlstate().into(),
        message,
    )))
}

fn fatal(code: &str, msg: String) -> PgWireError {
    PgWireError::UserError(Box::new(ErrorInfo::new("FATAL".into(), code.into(), msg)))
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
            max_connections: self.startup.max_connections,
            peer,
            idle: Arc::default(),
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

/// Parameter statuses sent at startup.
#[derive(Debug)]
struct Params;

impl ServerParameterProvider for Params {
    fn server_parameters<C>(&self, client: &C) -> Option<HashMap<String, String>>
    where
        C: ClientInfo,
    {
        let user = client.metadata().get("user").cloned().unwrap_or_default();
        let app = client
            .metadata()
            .get("application_name")
            .cloned()
            .unwrap_or_default();
        Some(HashMap::from([
            ("server_version".to_string(), SERVER_VERSION.to_string()),
            ("server_encoding".into(), "UTF8".into()),
            ("client_encoding".into(), "UTF8".into()),
            ("DateStyle".into(), "ISO, MDY".into()),
            ("IntervalStyle".into(), "postgres".into()),
            ("TimeZone".into(), "UTC".into()),
            ("integer_datetimes".into(), "on".into()),
            ("standard_conforming_strings".into(), "on".into()),
            ("is_superuser".into(), "on".into()),
            ("in_hot_standby".into(), "off".into()),
            ("default_transaction_read_only".into(), "off".into()),
            ("application_name".into(), app),
            ("session_authorization".into(), user),
        ]))
    }
}

/// The password of role `brook`, for SCRAM.
#[derive(Debug)]
struct PasswordSource {
    salted: Vec<u8>,
    salt: Vec<u8>,
}

#[async_trait]
impl AuthSource for PasswordSource {
    // The trait declares this signature with an elided lifetime; matching it exactly is required.
    #[allow(elided_lifetimes_in_paths)]
    async fn get_password(&self, login: &LoginInfo) -> PgWireResult<Password> {
        if login.user() != Some("brook") {
            return Err(fatal(
                "28P01",
                format!(
                    "password authentication failed for user \"{}\"",
                    login.user().unwrap_or("")
                ),
            ));
        }
        Ok(Password::new(Some(self.salt.clone()), self.salted.clone()))
    }
}

/// Startup: the connection limit and TLS requirement, then trust (loopback, no password:
/// the database is checked at once) or SCRAM (the database is checked only after the
/// password, so an unauthenticated client learns nothing about what exists).
pub struct Startup {
    engine: Arc<Engine>,
    scram: Option<SASLAuthStartupHandler<Params>>,
    open: Arc<std::sync::atomic::AtomicUsize>,
    max_connections: usize,
    require_tls: bool,
}

const SCRAM_ITERATIONS: usize = 4096;

/// Backend "process ids" handed to clients: one counter for every connection, so that a
/// CancelRequest reaches exactly one session.
static NEXT_PID: std::sync::atomic::AtomicI32 = std::sync::atomic::AtomicI32::new(1000);

/// A pid from [`NEXT_PID`] and a random secret key (4 bytes, or 32 on protocol 3.2).
fn next_pid_and_secret(client: &dyn ClientInfo) -> (i32, pgwire::messages::startup::SecretKey) {
    use pgwire::messages::startup::SecretKey;
    let pid = NEXT_PID.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let key = match client.protocol_version() {
        pgwire::messages::ProtocolVersion::PROTOCOL3_0 => SecretKey::I32(rand::random::<i32>()),
        _ => SecretKey::Bytes(bytes::Bytes::from(rand::random::<[u8; 32]>().to_vec())),
    };
    (pid, key)
}

/// Hands SCRAM connections their pid from [`NEXT_PID`] (pgwire's own generator starts at
/// the same number in every handler).
#[derive(Debug)]
struct BrookPids;

impl pgwire::api::PidSecretKeyGenerator for BrookPids {
    fn generate(&self, client: &dyn ClientInfo) -> (i32, pgwire::messages::startup::SecretKey) {
        next_pid_and_secret(client)
    }
}

impl Startup {
    fn new(
        engine: Arc<Engine>,
        config: &WireConfig,
        open: Arc<std::sync::atomic::AtomicUsize>,
    ) -> Self {
        let scram = config.password.as_ref().map(|pw| {
            let salt: Vec<u8> = rand::random::<[u8; 16]>().to_vec();
            let salted = gen_salted_password(pw, &salt, SCRAM_ITERATIONS);
            let mut auth = ScramAuth::new(Arc::new(PasswordSource { salted, salt }));
            auth.set_iterations(SCRAM_ITERATIONS);
            SASLAuthStartupHandler::new(Arc::new(Params))
                .with_scram(auth)
                .with_pid_secret_key_generator(Arc::new(BrookPids))
        });
        Startup {
            engine,
            scram,
            open,
            max_connections: config.max_connections,
            require_tls: config.require_tls,
        }
    }
}

#[async_trait]
impl StartupHandler for Startup {
    async fn on_startup<C>(
        &self,
        client: &mut C,
        message: PgWireFrontendMessage,
    ) -> PgWireResult<()>
    where
        C: ClientInfo + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        if let PgWireFrontendMessage::Startup(ref startup) = message {
            if self.open.load(std::sync::atomic::Ordering::Acquire) > self.max_connections {
                return Err(fatal("53300", "sorry, too many clients already".into()));
            }
            if self.require_tls && !client.is_secure() {
                return Err(fatal(
                    "28000",
                    "this server accepts only TLS connections (connect with sslmode=require)"
                        .into(),
                ));
            }
            let db = startup
                .parameters
                .get("database")
                .cloned()
                .unwrap_or_else(|| crate::catalog::DEFAULT_DATABASE.into());
            let db = if db.is_empty() {
                crate::catalog::DEFAULT_DATABASE.to_string()
            } else {
                db
            };
            if self.scram.is_none() && self.engine.catalog.read().database(&db).is_err() {
                return Err(fatal("3D000", format!("database \"{db}\" does not exist")));
            }
        }
        if let Some(scram) = &self.scram {
            return scram.on_startup(client, message).await;
        }
        if let PgWireFrontendMessage::Startup(ref startup) = message {
            pgwire::api::auth::protocol_negotiation(client, startup).await?;
            pgwire::api::auth::save_startup_parameters_to_metadata(client, startup);
            // Unique per connection: cancel requests are routed by pid.
            let (pid, secret) = next_pid_and_secret(client);
            client.set_pid_and_secret_key(pid, secret);
            client
                .feed(PgWireBackendMessage::Authentication(Authentication::Ok))
                .await?;
            if let Some(params) = Params.server_parameters(client) {
                for (k, v) in params {
                    client
                        .feed(PgWireBackendMessage::ParameterStatus(
                            pgwire::messages::startup::ParameterStatus::new(k, v),
                        ))
                        .await?;
                }
            }
            let (pid, key) = client.pid_and_secret_key();
            client
                .feed(PgWireBackendMessage::BackendKeyData(
                    pgwire::messages::startup::BackendKeyData::new(pid, key),
                ))
                .await?;
            client
                .send(PgWireBackendMessage::ReadyForQuery(ReadyForQuery::new(
                    TransactionStatus::Idle,
                )))
                .await?;
            client.set_state(PgWireConnectionState::ReadyForQuery);
        }
        Ok(())
    }
}

/// A prepared statement of the extended protocol.
#[derive(Debug, Clone)]
pub struct Prepared {
    /// The parsed statement (None: empty query).
    pub stmt: Option<BrookStatement>,
    /// Parameter types (declared by the client or inferred).
    pub params: Vec<Type>,
    /// Result schema, when known at Parse time.
    pub schema: Option<SchemaRef>,
}

/// 22021 for query text that held invalid UTF-8. pgwire decodes message strings lossily,
/// replacing each invalid byte sequence by U+FFFD, so that character is what such text
/// arrives as: refused rather than stored in place of the client's bytes (the character
/// itself can still be written as `chr(65533)`).
fn check_query_text(sql: &str) -> Result<(), BrookError> {
    if sql.contains('\u{FFFD}') {
        return Err(BrookError::BadEncoding(
            "invalid byte sequence for encoding \"UTF8\" in the query text (U+FFFD as a literal character is refused too; write it as chr(65533))".into(),
        ));
    }
    Ok(())
}

/// Largest row limit of an Execute (a client's fetch size); see `on_execute`.
const MAX_EXECUTE_ROWS: usize = 1_000_000;

/// Most parameters a statement may have (the protocol's 16-bit count, as PostgreSQL).
const MAX_PARAMETERS: usize = 65_535;

/// Parses statements for the extended protocol.
#[derive(Debug)]
pub struct BrookParser;

#[async_trait]
impl QueryParser for BrookParser {
    type Statement = Prepared;

    async fn parse_sql<C>(
        &self,
        _client: &C,
        sql: &str,
        types: &[Option<Type>],
    ) -> PgWireResult<Option<Prepared>>
    where
        C: ClientInfo + Unpin + Send + Sync,
    {
        check_query_text(sql).map_err(to_pg)?;
        let mut stmts = brook_planner::parse_sql(sql).map_err(to_pg)?;
        if stmts.len() > 1 {
            return Err(to_pg(BrookError::Syntax(
                "cannot insert multiple commands into a prepared statement".into(),
            )));
        }
        let stmt = stmts.pop();
        let n = stmt.as_ref().map_or(0, statement_placeholders);
        // The protocol counts parameters in 16 bits; a larger `$n` must not size a list.
        if n > MAX_PARAMETERS {
            return Err(to_pg(BrookError::Limit {
                message: format!(
                    "the statement refers to parameter ${n}: at most {MAX_PARAMETERS} parameters are allowed"
                ),
                code: "54023",
            }));
        }
        let params = (0..n.max(types.len()))
            .map(|i| types.get(i).cloned().flatten().unwrap_or(Type::UNKNOWN))
            .collect();
        Ok(Some(Prepared {
            stmt,
            params,
            schema: None,
        }))
    }

    fn get_parameter_types(&self, stmt: &Prepared) -> PgWireResult<Vec<Type>> {
        Ok(stmt.params.clone())
    }

    fn get_result_schema(
        &self,
        stmt: &Prepared,
        format: Option<&Format>,
    ) -> PgWireResult<Vec<FieldInfo>> {
        Ok(match &stmt.schema {
            Some(s) => field_infos(s, &|i| {
                format.map(|f| f.format_for(i)).unwrap_or(FieldFormat::Text)
            }),
            None => vec![],
        })
    }
}

/// Per-connection query, extended-query and COPY handler.
pub struct BrookHandler {
    engine: Arc<Engine>,
    session: Mutex<Option<Session>>,
    parser: Arc<BrookParser>,
    cancel: Arc<SessionCancel>,
    cancels: Arc<CancelRegistry>,
    /// Backend pid under which `cancel` is registered (once the session exists).
    pid: std::sync::Mutex<Option<i32>>,
    /// The server's connection limit (shown as `max_connections`).
    max_connections: usize,
    /// A second handle on the client's socket, only peeked at (never read): tells when the
    /// client has gone while a statement waits for rows.
    peer: Option<std::net::TcpStream>,
    /// What the connection is doing, for `idle_in_transaction_session_timeout`.
    idle: Arc<crate::wire::idle::IdleWatch>,
}

impl Drop for BrookHandler {
    fn drop(&mut self) {
        if let Some(pid) = self.pid.lock().ok().and_then(|p| *p) {
            self.cancels.unregister(pid);
        }
    }
}

impl BrookHandler {
    /// The session, created on first use from the startup parameters.
    async fn session<'a, C: ClientInfo>(
        &'a self,
        client: &C,
    ) -> PgWireResult<tokio::sync::MutexGuard<'a, Option<Session>>> {
        let mut g = self.session.lock().await;
        if g.is_none() {
            let (pid, key) = client.pid_and_secret_key();
            self.cancels.register(pid, key, self.cancel.clone());
            if let Ok(mut p) = self.pid.lock() {
                *p = Some(pid);
            }
            let user = client
                .metadata()
                .get("user")
                .cloned()
                .unwrap_or_else(|| "brook".into());
            let dbname = client
                .metadata()
                .get("database")
                .cloned()
                .filter(|d| !d.is_empty())
                .unwrap_or_else(|| crate::catalog::DEFAULT_DATABASE.into());
            let db = self.engine.database(&dbname).map_err(to_pg)?;
            let mut session = Session::new(self.engine.clone(), db, user);
            session.report_setting("max_connections", &self.max_connections.to_string());
            *g = Some(session);
        }
        Ok(g)
    }

    /// Whether the client closed its connection: the socket reads end-of-file (or fails),
    /// seen by peeking, so no byte of the protocol is taken from pgwire.
    fn client_gone(&self) -> bool {
        let Some(peer) = &self.peer else {
            return false;
        };
        let mut byte = [0u8; 1];
        match peer.peek(&mut byte) {
            Ok(0) => true,
            Ok(_) => false,
            Err(e) => e.kind() != std::io::ErrorKind::WouldBlock,
        }
    }

    /// The session's `idle_in_transaction_session_timeout` (None when off).
    async fn idle_limit(&self) -> Option<std::time::Duration> {
        let g = self.session.lock().await;
        g.as_ref()
            .and_then(|s| {
                s.timeout_setting("idle_in_transaction_session_timeout")
                    .ok()
            })
            .flatten()
    }

    /// Note a response's effect on the transaction block (for the idle watchdog).
    fn note_response(&self, r: &Response) {
        match r {
            Response::TransactionStart(_) => self.idle.set_block(true),
            Response::TransactionEnd(_) => self.idle.set_block(false),
            Response::CopyIn(_) => self.idle.set_copy(true),
            _ => {}
        }
    }

    /// The session's `statement_timeout` (None when off).
    async fn statement_timeout<C: ClientInfo>(
        &self,
        client: &C,
    ) -> PgWireResult<Option<std::time::Duration>> {
        let g = self.session(client).await?;
        match g.as_ref() {
            Some(s) => s.timeout_setting("statement_timeout").map_err(to_pg),
            None => Ok(None),
        }
    }

    /// Turn an outcome into a pgwire response.
    fn respond(
        outcome: Outcome,
        format: &dyn Fn(usize) -> FieldFormat,
        token: CancellationToken,
        cancel: Arc<SessionCancel>,
    ) -> PgWireResult<Response> {
        Ok(match outcome {
            Outcome::Rows {
                schema,
                stream,
                tag,
            } => Response::Query(rows_response(
                &schema,
                crate::exec::runtime::offload(stream),
                tag,
                format,
                token,
                cancel,
            )),
            Outcome::Command(tag) => Response::Execution(command_tag(&tag)),
            Outcome::TxnStart(tag) => Response::TransactionStart(Tag::new(&tag)),
            Outcome::TxnEnd(tag) => Response::TransactionEnd(Tag::new(&tag)),
            Outcome::CopyIn { columns, binary } => Response::CopyIn(CopyResponse::new(
                i8::from(binary),
                columns,
                stream::empty(),
            )),
            Outcome::CopyOut { opts, stream: rows } => {
                let columns = rows.schema().fields().len();
                let rows = crate::exec::runtime::offload(rows);
                let mut enc = CopyOutEncoder::new(opts).map_err(to_pg)?;
                let data = cancellable(rows, token, cancel).flat_map(move |b| {
                    let items: Vec<PgWireResult<CopyData>> =
                        match b.map_err(BrookError::from).and_then(|b| enc.encode(&b)) {
                            Ok(lines) => lines
                                .into_iter()
                                .map(|l| Ok(CopyData::new(l.into())))
                                .collect(),
                            Err(e) => vec![Err(to_pg(e))],
                        };
                    stream::iter(items)
                });
                Response::CopyOut(CopyResponse::new(0, columns, data))
            }
        })
    }
}

fn command_tag(tag: &str) -> Tag {
    // "INSERT 0 3" / "UPDATE 2" / "CREATE TABLE": split a trailing row count off.
    let mut parts: Vec<&str> = tag.split(' ').collect();
    match parts.last().and_then(|n| n.parse::<usize>().ok()) {
        Some(n) if parts.len() > 1 => {
            parts.pop();
            if parts.len() == 2 && parts[0] == "INSERT" {
                return Tag::new("INSERT").with_oid(0).with_rows(n);
            }
            Tag::new(&parts.join(" ")).with_rows(n)
        }
        _ => Tag::new(tag),
    }
}

/// Execute `stmt` with the session on the statement runtime ([`crate::exec::runtime`]), so that
/// a long computation holds none of the threads serving connections. The session moves to
/// that runtime for the statement and comes back with its outcome; a cancel or the
/// statement timeout ends the statement at its next yield.
async fn execute_on_statement_runtime(
    slot: &mut Option<Session>,
    stmt: BrookStatement,
    token: CancellationToken,
    cancel: Arc<SessionCancel>,
) -> PgWireResult<(Outcome, Vec<String>)> {
    let mut session = slot
        .take()
        .ok_or_else(|| to_pg(BrookError::internal("no session")))?;
    session.set_statement_token(token.clone());
    let (session, outcome) = crate::exec::runtime::run(async move {
        let outcome = tokio::select! {
            r = session.execute(stmt) => r,
            _ = token.cancelled() => Err(cancel.error()),
        };
        (session, outcome)
    })
    .await
    .map_err(to_pg)?;
    let mut session = session;
    let notices = session.take_notices();
    *slot = Some(session);
    Ok((outcome.map_err(to_pg)?, notices))
}

/// Rows are computed while they are sent: a cancel (or the statement timeout) ends the
/// stream with 57014.
fn cancellable(
    stream: datafusion::execution::SendableRecordBatchStream,
    token: CancellationToken,
    cancel: Arc<SessionCancel>,
) -> impl futures::Stream<Item = datafusion::error::Result<datafusion::arrow::record_batch::RecordBatch>>
{
    let stop = token.clone();
    stream.take_until(stop.cancelled_owned()).chain(
        stream::once(async move { token.is_cancelled() }).filter_map(move |c| {
            let cancel = cancel.clone();
            async move {
                c.then(|| {
                    Err(datafusion::error::DataFusionError::External(Box::new(
                        cancel.error(),
                    )))
                })
            }
        }),
    )
}

fn rows_response(
    schema: &SchemaRef,
    stream: datafusion::execution::SendableRecordBatchStream,
    tag: &str,
    format: &dyn Fn(usize) -> FieldFormat,
    token: CancellationToken,
    cancel: Arc<SessionCancel>,
) -> QueryResponse {
    let fields = Arc::new(field_infos(schema, format));
    let stream = cancellable(stream, token, cancel);
    let mut enc = RowEncoder::new(fields.clone());
    let rows = stream.flat_map(move |b| {
        let items: Vec<PgWireResult<pgwire::messages::data::DataRow>> =
            match b.map_err(BrookError::from).and_then(|b| enc.encode(&b)) {
                Ok(rows) => rows.into_iter().map(Ok).collect(),
                Err(e) => vec![Err(to_pg(e))],
            };
        stream::iter(items)
    });
    let mut r = QueryResponse::new(fields, rows);
    r.set_command_tag(tag);
    r
}

/// Send NOTICE messages (e.g. the bound of an approximate answer) ahead of the result.
async fn send_notices<C>(client: &mut C, notices: Vec<String>) -> PgWireResult<()>
where
    C: Sink<PgWireBackendMessage> + Unpin,
    C::Error: Debug,
    PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
{
    for text in notices {
        let info = ErrorInfo::new("NOTICE".to_string(), "00000".to_string(), text);
        client
            .feed(PgWireBackendMessage::NoticeResponse(info.into()))
            .await?;
    }
    Ok(())
}

/// Send a query's rows (simple protocol: with its RowDescription and CommandComplete).
async fn send_rows<C>(client: &mut C, mut q: QueryResponse, gone: Gone<'_>) -> PgWireResult<()>
where
    C: Sink<PgWireBackendMessage> + Unpin,
    C::Error: Debug,
    PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
{
    let fields = q.row_schema();
    let desc = pgwire::messages::data::RowDescription::new(fields.iter().map(Into::into).collect());
    client
        .feed(PgWireBackendMessage::RowDescription(desc))
        .await?;
    let tag = q.command_tag().to_string();
    let count = send_data_rows(client, &mut q, gone).await?;
    let done = Tag::new(&tag).with_rows(count);
    client
        .feed(PgWireBackendMessage::CommandComplete(done.into()))
        .await?;
    Ok(())
}

/// Tells whether the client has closed its connection.
type Gone<'a> = &'a (dyn Fn() -> bool + Sync);

/// How often a statement waiting for its next row looks whether its client is gone.
const GONE_CHECK: std::time::Duration = std::time::Duration::from_millis(500);

/// Wait for `next` (a continuous query's next row may be long in coming), but give up when
/// the client has closed its connection: a push query whose client vanished ends within
/// [`GONE_CHECK`], whether or not it ever produces a row.
async fn unless_gone<F: std::future::Future>(next: F, gone: Gone<'_>) -> PgWireResult<F::Output> {
    tokio::pin!(next);
    loop {
        tokio::select! {
            r = &mut next => return Ok(r),
            _ = tokio::time::sleep(GONE_CHECK) => {
                if gone() {
                    return Err(PgWireError::IoError(std::io::Error::new(
                        std::io::ErrorKind::ConnectionAborted,
                        "the client closed its connection",
                    )));
                }
            }
        }
    }
}

/// Send a query's DataRows, flushing whenever the producer has nothing ready: a continuous
/// query's row is on the wire as soon as it exists, while a finished result still goes out
/// in large writes. (pgwire's senders only feed, flushing at the end or at 8 KiB.) Returns
/// how many rows went out.
async fn send_data_rows<C>(
    client: &mut C,
    q: &mut QueryResponse,
    gone: Gone<'_>,
) -> PgWireResult<usize>
where
    C: Sink<PgWireBackendMessage> + Unpin,
    C::Error: Debug,
    PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
{
    use futures::FutureExt;
    let rows = q.data_rows();
    let mut count = 0;
    loop {
        let next = match rows.next().now_or_never() {
            Some(next) => next,
            None => {
                client.flush().await?;
                unless_gone(rows.next(), gone).await?
            }
        };
        match next {
            Some(row) => {
                client.feed(PgWireBackendMessage::DataRow(row?)).await?;
                count += 1;
            }
            None => return Ok(count),
        }
    }
}

/// COPY TO STDOUT (simple protocol): the copy body, then CommandComplete.
async fn send_copy_out<C>(client: &mut C, resp: CopyResponse, gone: Gone<'_>) -> PgWireResult<()>
where
    C: Sink<PgWireBackendMessage> + Unpin,
    C::Error: Debug,
    PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
{
    let rows = send_copy_body(client, resp, gone).await?;
    let tag = Tag::new("COPY").with_rows(rows);
    client
        .feed(PgWireBackendMessage::CommandComplete(tag.into()))
        .await?;
    Ok(())
}

/// CopyOutResponse, the data (flushed whenever the producer has nothing ready, as in
/// [`send_data_rows`], so `COPY (... EMIT CHANGES) TO STDOUT` pushes each row as it is
/// produced) and CopyDone. Returns the number of rows.
async fn send_copy_body<C>(
    client: &mut C,
    resp: CopyResponse,
    gone: Gone<'_>,
) -> PgWireResult<usize>
where
    C: Sink<PgWireBackendMessage> + Unpin,
    C::Error: Debug,
    PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
{
    use futures::FutureExt;
    let formats = resp.column_formats();
    let CopyResponse {
        format,
        columns,
        mut data_stream,
        ..
    } = resp;
    let head = pgwire::messages::copy::CopyOutResponse::new(format, columns as i16, formats);
    client
        .send(PgWireBackendMessage::CopyOutResponse(head))
        .await?;
    let mut rows = 0;
    loop {
        let next = match data_stream.next().now_or_never() {
            Some(next) => next,
            None => {
                client.flush().await?;
                unless_gone(data_stream.next(), gone).await?
            }
        };
        let Some(data) = next else { break };
        let data = data?;
        if data.data.is_empty() {
            continue;
        }
        // The binary trailer is not a row.
        if data.data.as_ref() != [0xFF, 0xFF] {
            rows += 1;
        }
        client.feed(PgWireBackendMessage::CopyData(data)).await?;
    }
    client
        .feed(PgWireBackendMessage::CopyDone(CopyDone::new()))
        .await?;
    Ok(rows)
}

fn is_txn_control(s: &BrookStatement) -> bool {
    use datafusion::sql::sqlparser::ast::Statement as S;
    matches!(s, BrookStatement::Sql(b) if matches!(b.as_ref(), S::Commit { .. } | S::Rollback { .. }))
}

fn is_rollback_to_savepoint(s: &BrookStatement) -> bool {
    use datafusion::sql::sqlparser::ast::Statement as S;
    matches!(s, BrookStatement::Sql(b) if matches!(b.as_ref(), S::Rollback { savepoint: Some(_), .. }))
}

#[async_trait]
impl SimpleQueryHandler for BrookHandler {
    /// Runs each statement of the query string in turn, stopping at the first error, and
    /// keeps PostgreSQL's transaction status (including 25P02 in failed transactions).
    async fn on_query<C>(
        &self,
        client: &mut C,
        query: pgwire::messages::simplequery::Query,
    ) -> PgWireResult<()>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let mut status = client.transaction_status();
        self.idle.busy();
        client.set_state(PgWireConnectionState::QueryInProgress);
        let stmts = match check_query_text(&query.query)
            .and_then(|()| brook_planner::parse_sql(&query.query))
        {
            Ok(s) => s,
            Err(e) => {
                client.set_state(PgWireConnectionState::ReadyForQuery);
                self.idle.idle(self.idle_limit().await);
                return Err(to_pg(e));
            }
        };
        if stmts.is_empty() {
            client
                .feed(PgWireBackendMessage::EmptyQueryResponse(
                    pgwire::messages::response::EmptyQueryResponse::new(),
                ))
                .await?;
        }
        for stmt in stmts {
            let timeout = self.statement_timeout(client).await?;
            let token = self.cancel.begin_with_timeout(timeout);
            if status == TransactionStatus::Error && !is_txn_control(&stmt) {
                client
                    .feed(PgWireBackendMessage::ErrorResponse(
                        ErrorInfo::from(to_pg(BrookError::InFailedTransaction)).into(),
                    ))
                    .await?;
                break;
            }
            let rollback_to = is_rollback_to_savepoint(&stmt);
            let commit_in_failed = status == TransactionStatus::Error;
            let outcome = async {
                let mut g = self.session(client).await?;
                execute_on_statement_runtime(&mut g, stmt, token.clone(), self.cancel.clone()).await
            }
            .await;
            let outcome = match outcome {
                Ok((o, notices)) => {
                    send_notices(client, notices).await?;
                    Ok(o)
                }
                Err(e) => Err(e),
            };
            let outcome = match outcome.and_then(|o| {
                Self::respond(
                    o,
                    &|_| FieldFormat::Text,
                    token.clone(),
                    self.cancel.clone(),
                )
            }) {
                Ok(o) => o,
                Err(e) => {
                    client
                        .feed(PgWireBackendMessage::ErrorResponse(
                            ErrorInfo::from(e).into(),
                        ))
                        .await?;
                    status = status.to_error_state();
                    break;
                }
            };
            self.note_response(&outcome);
            match outcome {
                Response::Query(q) => {
                    if let Err(e) = send_rows(client, q, &|| self.client_gone()).await {
                        client
                            .feed(PgWireBackendMessage::ErrorResponse(
                                ErrorInfo::from(e).into(),
                            ))
                            .await?;
                        status = status.to_error_state();
                        break;
                    }
                }
                Response::Execution(tag) => {
                    send_execution_response(client, tag).await?;
                    if rollback_to && status == TransactionStatus::Error {
                        status = TransactionStatus::Transaction;
                    }
                }
                Response::TransactionStart(tag) => {
                    send_execution_response(client, tag).await?;
                    status = status.to_in_transaction_state();
                }
                Response::TransactionEnd(tag) => {
                    let tag = if commit_in_failed {
                        Tag::new("ROLLBACK")
                    } else {
                        tag
                    };
                    send_execution_response(client, tag).await?;
                    status = TransactionStatus::Idle;
                }
                Response::CopyIn(r) => {
                    pgwire::api::copy::send_copy_in_response(client, r).await?;
                    client.set_state(PgWireConnectionState::CopyInProgress(false));
                    client.set_transaction_status(status);
                    self.cancel.end();
                    self.idle.idle(self.idle_limit().await);
                    return Ok(());
                }
                Response::CopyOut(r) => {
                    if let Err(e) = send_copy_out(client, r, &|| self.client_gone()).await {
                        client
                            .feed(PgWireBackendMessage::ErrorResponse(
                                ErrorInfo::from(e).into(),
                            ))
                            .await?;
                        status = status.to_error_state();
                        break;
                    }
                }
                Response::Error(e) => {
                    client
                        .feed(PgWireBackendMessage::ErrorResponse((*e).into()))
                        .await?;
                    status = status.to_error_state();
                    break;
                }
                Response::EmptyQuery | Response::CopyBoth(_) => {}
            }
        }
        self.cancel.end();
        self.idle.idle(self.idle_limit().await);
        client.set_state(PgWireConnectionState::ReadyForQuery);
        client.set_transaction_status(status);
        client
            .send(PgWireBackendMessage::ReadyForQuery(ReadyForQuery::new(
                status,
            )))
            .await?;
        Ok(())
    }

    async fn do_query<C>(&self, _client: &mut C, _query: &str) -> PgWireResult<Vec<Response>>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        Err(to_pg(BrookError::internal(
            "simple queries are handled by on_query",
        )))
    }
}

/// Parameter types of a portal's statement: as declared at Parse, else inferred (needed to
/// decode binary parameters the client sent for types it let the server choose).
async fn portal_param_types(s: &Session, portal: &Portal<Prepared>) -> PgWireResult<Vec<Type>> {
    let prepared = &portal.statement.statement;
    let declared: Vec<Type> = (0..prepared.params.len().max(portal.parameter_len()))
        .map(|i| {
            portal
                .statement
                .parameter_types
                .get(i)
                .cloned()
                .flatten()
                .or_else(|| prepared.params.get(i).cloned())
                .unwrap_or(Type::UNKNOWN)
        })
        .collect();
    let needs_inference = declared
        .iter()
        .enumerate()
        .any(|(i, t)| *t == Type::UNKNOWN && portal.parameter_format.is_binary(i));
    match (&prepared.stmt, needs_inference) {
        (Some(stmt), true) => Ok(s
            .describe_with_params(stmt, &declared)
            .await
            .map_err(to_pg)?
            .0),
        _ => Ok(declared),
    }
}

/// Decode the bound parameters of a portal to PostgreSQL text with their cast types.
fn bound_params(portal: &Portal<Prepared>, types: &[Type]) -> PgWireResult<Vec<BoundParam>> {
    let declared = &portal.statement.parameter_types;
    let mut out = Vec::with_capacity(portal.parameter_len());
    for i in 0..portal.parameter_len() {
        let ty = declared
            .get(i)
            .cloned()
            .flatten()
            .or_else(|| types.get(i).cloned())
            .unwrap_or(Type::UNKNOWN);
        let raw = portal.parameters.get(i).cloned().flatten();
        let text = match raw {
            None => None,
            Some(bytes) if !portal.parameter_format.is_binary(i) => {
                Some(String::from_utf8(bytes.to_vec()).map_err(|_| {
                    to_pg(BrookError::BadEncoding(
                        "invalid byte sequence for encoding \"UTF8\" in parameter".into(),
                    ))
                })?)
            }
            Some(bytes) => Some(binary_param_text(&bytes, &ty).map_err(to_pg)?),
        };
        out.push(BoundParam {
            text,
            type_name: cast_name(&ty).map(str::to_string),
        });
    }
    Ok(out)
}

/// A binary-format parameter as PostgreSQL text.
fn binary_param_text(b: &[u8], ty: &Type) -> Result<String, BrookError> {
    use postgres_types::FromSql;
    let bad = |e: Box<dyn std::error::Error + Sync + Send>| {
        BrookError::Protocol(format!(
            "incorrect binary data format in bind parameter: {e}"
        ))
    };
    Ok(match *ty {
        Type::BOOL => bool::from_sql(ty, b).map_err(bad)?.to_string(),
        Type::INT2 => i16::from_sql(ty, b).map_err(bad)?.to_string(),
        Type::INT4 => i32::from_sql(ty, b).map_err(bad)?.to_string(),
        Type::INT8 => i64::from_sql(ty, b).map_err(bad)?.to_string(),
        Type::OID => u32::from_sql(ty, b).map_err(bad)?.to_string(),
        Type::FLOAT4 => f32::from_sql(ty, b).map_err(bad)?.to_string(),
        Type::FLOAT8 => f64::from_sql(ty, b).map_err(bad)?.to_string(),
        Type::NUMERIC => rust_decimal::Decimal::from_sql(ty, b)
            .map_err(bad)?
            .to_string(),
        Type::DATE => chrono::NaiveDate::from_sql(ty, b).map_err(bad)?.to_string(),
        Type::TIMESTAMP => chrono::NaiveDateTime::from_sql(ty, b)
            .map_err(bad)?
            .to_string(),
        Type::TIMESTAMPTZ => chrono::DateTime::<chrono::Utc>::from_sql(ty, b)
            .map_err(bad)?
            .naive_utc()
            .to_string(),
        Type::BYTEA => {
            let mut s = String::from("\\x");
            for x in b {
                s.push_str(&format!("{x:02x}"));
            }
            s
        }
        _ => String::from_utf8(b.to_vec()).map_err(|_| {
            BrookError::Protocol(format!(
                "binary parameters of type {} are not supported",
                ty.name()
            ))
        })?,
    })
}

#[async_trait]
impl ExtendedQueryHandler for BrookHandler {
    type Statement = Prepared;
    type QueryParser = BrookParser;

    fn query_parser(&self) -> Arc<BrookParser> {
        self.parser.clone()
    }

    /// Every Execute's row limit is checked before pgwire acts on it: pgwire sizes a buffer
    /// for the whole limit up front, also when it resumes a suspended portal without asking
    /// `do_query`, so an absurd limit allocated tens of gigabytes and aborted the server.
    async fn on_execute<C>(
        &self,
        client: &mut C,
        message: pgwire::messages::extendedquery::Execute,
    ) -> PgWireResult<()>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore<Statement = Self::Statement>,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let max_rows = usize::try_from(message.max_rows).unwrap_or(0);
        if max_rows > MAX_EXECUTE_ROWS {
            return Err(to_pg(BrookError::Limit {
                message: format!(
                    "an Execute row limit of {max_rows} is too large: at most {MAX_EXECUTE_ROWS} rows per Execute (0 fetches all rows)"
                ),
                code: "54000",
            }));
        }
        self._on_execute(client, message).await
    }

    async fn do_describe_statement<C>(
        &self,
        client: &mut C,
        target: &StoredStatement<Prepared>,
    ) -> PgWireResult<DescribeStatementResponse>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore<Statement = Prepared>,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let p = &target.statement;
        let Some(stmt) = &p.stmt else {
            return Ok(DescribeStatementResponse::no_data());
        };
        let g = self.session(client).await?;
        let s = g
            .as_ref()
            .ok_or_else(|| to_pg(BrookError::internal("no session")))?;
        let (types, schema) = s
            .describe_with_params(stmt, &p.params)
            .await
            .map_err(to_pg)?;
        let fields = schema
            .map(|sc| field_infos(&sc, &|_| FieldFormat::Text))
            .unwrap_or_default();
        Ok(DescribeStatementResponse::new(types, fields))
    }

    async fn do_describe_portal<C>(
        &self,
        client: &mut C,
        portal: &Portal<Prepared>,
    ) -> PgWireResult<DescribePortalResponse>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore<Statement = Prepared>,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let Some(stmt) = portal.statement.statement.stmt.clone() else {
            return Ok(DescribePortalResponse::no_data());
        };
        let g = self.session(client).await?;
        let s = g
            .as_ref()
            .ok_or_else(|| to_pg(BrookError::internal("no session")))?;
        let types = portal_param_types(s, portal).await?;
        let stmt = bind(stmt, &bound_params(portal, &types)?)?;
        let schema = s.describe(&stmt).await.map_err(to_pg)?;
        Ok(match schema {
            Some(sc) if !sc.fields().is_empty() => {
                DescribePortalResponse::new(field_infos(&sc, &|i| {
                    portal.result_column_format.format_for(i)
                }))
            }
            _ => DescribePortalResponse::no_data(),
        })
    }

    async fn do_query<C>(
        &self,
        client: &mut C,
        portal: &Portal<Prepared>,
        max_rows: usize,
    ) -> PgWireResult<Response>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore<Statement = Prepared>,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let Some(stmt) = portal.statement.statement.stmt.clone() else {
            return Ok(Response::EmptyQuery);
        };
        if client.transaction_status() == TransactionStatus::Error && !is_txn_control(&stmt) {
            return Err(to_pg(BrookError::InFailedTransaction));
        }
        let mut g = self.session(client).await?;
        let s = g
            .as_mut()
            .ok_or_else(|| to_pg(BrookError::internal("no session")))?;
        let types = portal_param_types(s, portal).await?;
        let stmt = bind(stmt, &bound_params(portal, &types)?)?;
        let cursor_portals = cursor_portal_changes(&stmt);
        let timeout = s.timeout_setting("statement_timeout").map_err(to_pg)?;
        let token = self.cancel.begin_with_timeout(timeout);
        let (outcome, notices) =
            execute_on_statement_runtime(&mut g, stmt, token.clone(), self.cancel.clone()).await?;
        drop(g);
        send_notices(client, notices).await?;
        // A cursor is also a protocol portal of the same name (clients Describe it).
        for (name, query) in cursor_portals {
            match query {
                Some(q) => {
                    let prepared = Prepared {
                        stmt: Some(q),
                        params: vec![],
                        schema: None,
                    };
                    let stored = Arc::new(StoredStatement::new(name.clone(), prepared, vec![]));
                    client
                        .portal_store()
                        .put_portal(Arc::new(Portal::new_cursor(name, stored)));
                }
                None => client.portal_store().rm_portal(&name),
            }
        }
        let fmt = portal.result_column_format.clone();
        // pgwire sends an Execute's rows and COPY data by feeding only (flushing at 8 KiB or
        // at the end), which would hold a continuous query's rows back and never notice a
        // vanished client: without a row limit, send them here, flushing as they come, and
        // leave pgwire the CommandComplete. (With a row limit pgwire flushes at each suspend.)
        let response =
            match Self::respond(outcome, &|i| fmt.format_for(i), token, self.cancel.clone())? {
                Response::CopyOut(r) => {
                    let rows = send_copy_body(client, r, &|| self.client_gone()).await?;
                    Response::Execution(Tag::new("COPY").with_rows(rows))
                }
                Response::Query(mut q) if max_rows == 0 => {
                    let tag = q.command_tag().to_string();
                    let rows = send_data_rows(client, &mut q, &|| self.client_gone()).await?;
                    Response::Execution(Tag::new(&tag).with_rows(rows))
                }
                other => other,
            };
        // A portal executed with a row limit streams on through later Executes; the
        // statement timeout covered this one.
        self.cancel.end();
        self.note_response(&response);
        self.idle.idle(self.idle_limit().await);
        Ok(response)
    }
}

/// Portals to add (DECLARE: name and query) or remove (CLOSE: name, None) for a statement.
/// How many `$n` parameters a statement takes.
fn statement_placeholders(stmt: &BrookStatement) -> usize {
    match stmt {
        BrookStatement::Sql(s) | BrookStatement::Emit { stmt: s, .. } => placeholder_count(s),
        BrookStatement::Approx { stmt, .. } => statement_placeholders(stmt),
        _ => 0,
    }
}

fn cursor_portal_changes(stmt: &BrookStatement) -> Vec<(String, Option<BrookStatement>)> {
    use datafusion::sql::sqlparser::ast::{CloseCursor, Statement as S};
    let s = match stmt {
        BrookStatement::Sql(s) | BrookStatement::Emit { stmt: s, .. } => s,
        BrookStatement::Approx { stmt, .. } => return cursor_portal_changes(stmt),
        _ => return vec![],
    };
    match s.as_ref() {
        // Executing or describing the portal reads the cursor, as `FETCH ALL` does (a
        // continuous cursor's rows carry its change kind, which its query's plan lacks).
        S::Declare { stmts } => stmts
            .iter()
            .filter_map(|d| {
                let ident = d.names.first()?.clone();
                let name = crate::ident::ident_name(&ident);
                let fetch = S::Fetch {
                    name: ident,
                    direction: datafusion::sql::sqlparser::ast::FetchDirection::All,
                    position: datafusion::sql::sqlparser::ast::FetchPosition::From,
                    into: None,
                };
                Some((name, Some(BrookStatement::Sql(Box::new(fetch)))))
            })
            .collect(),
        S::Close {
            cursor: CloseCursor::Specific { name },
        } => vec![(crate::ident::ident_name(name), None)],
        _ => vec![],
    }
}

fn bind(stmt: BrookStatement, params: &[BoundParam]) -> PgWireResult<BrookStatement> {
    match stmt {
        BrookStatement::Sql(mut s) => {
            bind_parameters(&mut s, params).map_err(to_pg)?;
            Ok(BrookStatement::Sql(s))
        }
        BrookStatement::Emit {
            mut stmt,
            on_window_close,
        } => {
            bind_parameters(&mut stmt, params).map_err(to_pg)?;
            Ok(BrookStatement::Emit {
                stmt,
                on_window_close,
            })
        }
        BrookStatement::Approx {
            stmt,
            error,
            confidence,
        } => Ok(BrookStatement::Approx {
            stmt: Box::new(bind(*stmt, params)?),
            error,
            confidence,
        }),
        other => Ok(other),
    }
}

#[async_trait]
impl CopyHandler for BrookHandler {
    async fn on_copy_data<C>(&self, client: &mut C, copy_data: CopyData) -> PgWireResult<()>
    where
        C: ClientInfo + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        self.idle.busy();
        let mut g = self.session.lock().await;
        let s = g
            .as_mut()
            .ok_or_else(|| to_pg(BrookError::Protocol("COPY data without a session".into())))?;
        let r = s.copy_data(&copy_data.data).await.map_err(to_pg);
        let limit = s
            .timeout_setting("idle_in_transaction_session_timeout")
            .ok()
            .flatten();
        self.idle.idle(limit);
        if r.is_err() {
            self.idle.set_copy(false);
        }
        if r.is_err() && matches!(client.state(), PgWireConnectionState::CopyInProgress(false)) {
            client.set_state(PgWireConnectionState::ReadyForQuery);
        }
        r
    }

    async fn on_copy_done<C>(&self, client: &mut C, _done: CopyDone) -> PgWireResult<()>
    where
        C: ClientInfo + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        self.idle.set_copy(false);
        let n = {
            let mut g = self.session.lock().await;
            let s = g
                .as_mut()
                .ok_or_else(|| to_pg(BrookError::Protocol("CopyDone without a session".into())))?;
            s.copy_done().await.map_err(to_pg)?
        };
        client
            .send(PgWireBackendMessage::CommandComplete(
                Tag::new("COPY").with_rows(n).into(),
            ))
            .await?;
        Ok(())
    }

    async fn on_copy_fail<C>(&self, _client: &mut C, fail: CopyFail) -> PgWireError
    where
        C: ClientInfo + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        self.idle.set_copy(false);
        if let Some(s) = self.session.lock().await.as_mut() {
            s.copy_fail();
        }
        to_pg(BrookError::BadCopyFormat(format!(
            "COPY from stdin failed: {}",
            fail.message
        )))
    }
}
