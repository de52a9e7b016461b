//! Running one statement for a connection: its session, on the statement runtime, with a
//! cancellation token and timeouts, and the command tag of its outcome.

use super::send::rows_response;
use super::*;
use crate::copy::CopyOutEncoder;
use crate::exec::cancel::SessionCancel;
use crate::session::{Outcome, Session};
use brook_common::{brook_err, BrookError};
use brook_planner::BrookStatement;
use futures::{stream, StreamExt};
use pgwire::api::results::{CopyResponse, FieldFormat, Response, Tag};
use pgwire::api::ClientInfo;
use pgwire::error::PgWireResult;
use pgwire::messages::copy::CopyData;
use pgwire::messages::response::TransactionStatus;
use pgwire::messages::PgWireBackendMessage;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

/// The parameters PostgreSQL reports with ParameterStatus when they change (GUC_REPORT):
/// (name on the wire, setting), with the value each had at startup (`startup.rs`);
/// application_name's is the startup packet's.
const REPORTED: [(&str, &str, &str); 5] = [
    ("application_name", "application_name", ""),
    ("DateStyle", "datestyle", "ISO, MDY"),
    ("IntervalStyle", "intervalstyle", "postgres"),
    ("TimeZone", "timezone", "UTC"),
    ("client_encoding", "client_encoding", "UTF8"),
];

impl BrookHandler {
    /// ParameterStatus for each reported parameter whose value differs from what the client
    /// last heard (after `SET application_name = ...`, as PostgreSQL sends it: pgjdbc's
    /// `getClientInfo` and psql's prompt read these).
    pub(super) fn changed_parameters<C: ClientInfo>(
        &self,
        client: &C,
        session: Option<&Session>,
    ) -> Vec<PgWireBackendMessage> {
        let (Some(session), Ok(mut reported)) = (session, self.reported.lock()) else {
            return vec![];
        };
        let mut out = vec![];
        for (wire, key, at_start) in REPORTED {
            let Some(now) = session.settings.get(key) else {
                continue;
            };
            let heard = reported.get(key).cloned().unwrap_or_else(|| {
                if key == "application_name" {
                    client.metadata().get(key).cloned().unwrap_or_default()
                } else {
                    at_start.to_string()
                }
            });
            if now != heard && key == "application_name" {
                // pg_stat_activity shows the name set since.
                if let Some(b) = self.backend.lock().ok().and_then(|b| b.clone()) {
                    b.set_application_name(&now);
                }
            }
            if now != heard {
                out.push(PgWireBackendMessage::ParameterStatus(
                    pgwire::messages::startup::ParameterStatus::new(wire.to_string(), now.clone()),
                ));
                reported.insert(key, now);
            }
        }
        out
    }

    /// The session, created on first use from the startup parameters.
    pub(super) async fn session<'a, C: ClientInfo>(
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
            let backend = Arc::new(crate::exec::activity::Backend::new(
                pid,
                user.clone(),
                dbname.clone(),
                client
                    .metadata()
                    .get("application_name")
                    .cloned()
                    .unwrap_or_default(),
                client.socket_addr().to_string(),
                self.cancel.clone(),
            ));
            self.engine.activity.register(backend.clone());
            self.idle.watch_terminate(self.cancel.clone());
            if let Ok(mut b) = self.backend.lock() {
                *b = Some(backend);
            }
            let db = self.engine.database(&dbname).map_err(to_pg)?;
            let mut session = Session::new(self.engine.clone(), db, user);
            super::startup::apply_startup_settings(&mut session, client.metadata());
            session.set_backend_pid(pid);
            session.report_setting("max_connections", &self.max_connections.to_string());
            *g = Some(session);
        }
        // Each statement is parsed, described and run with the user functions as they are.
        if let Some(s) = g.as_mut() {
            s.sync_functions();
        }
        Ok(g)
    }

    /// For `pg_stat_activity`: a statement (the text the client sent) starts.
    pub(super) fn activity_active(&self, query: &str) {
        if let Some(b) = self.backend.lock().ok().and_then(|b| b.clone()) {
            b.active(query);
        }
    }

    /// For `pg_stat_activity`: the connection waits for the client.
    pub(super) fn activity_idle(&self, status: TransactionStatus) {
        if let Some(b) = self.backend.lock().ok().and_then(|b| b.clone()) {
            b.idle(status != TransactionStatus::Idle);
        }
    }

    /// Whether the client closed its connection: the socket reads end-of-file (or fails),
    /// seen by peeking, so no byte of the protocol is taken from pgwire.
    pub(super) fn client_gone(&self) -> bool {
        self.peer
            .as_ref()
            .is_some_and(super::connection::peer_closed)
    }

    /// The session's `idle_in_transaction_session_timeout` (None when off).
    pub(super) async fn idle_limit(&self) -> Option<std::time::Duration> {
        let g = self.session.lock().await;
        g.as_ref()
            .and_then(|s| {
                s.timeout_setting("idle_in_transaction_session_timeout")
                    .ok()
            })
            .flatten()
    }

    /// Note a response's effect on the transaction block (for the idle watchdog).
    pub(super) fn note_response(&self, r: &Response) {
        match r {
            Response::TransactionStart(_) => self.idle.set_block(true),
            Response::TransactionEnd(_) => self.idle.set_block(false),
            Response::CopyIn(_) => self.idle.set_copy(true),
            _ => {}
        }
    }

    /// The session's `statement_timeout` (None when off).
    pub(super) async fn statement_timeout<C: ClientInfo>(
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
    pub(super) fn respond(
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
                let mut enc = CopyOutEncoder::new(opts).map_err(to_pg)?;
                let header = stream::iter(
                    enc.header(&rows.schema())
                        .map(|h| Ok(CopyData::new(h.into()))),
                );
                let rows = crate::exec::runtime::offload(rows);
                let binary = enc.is_binary();
                let header_sent = enc.binary_header_sent();
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
                let data = header.chain(data);
                if binary {
                    // The header went with the first row; the trailer ends the data (with
                    // the header when there was no row, in one message as PostgreSQL sends
                    // it). Made as text and marked binary after: `CopyResponse::new` would
                    // add a trailer of its own to a binary response.
                    let tail = stream::once(async move {
                        Ok(CopyData::new(crate::copy::binary_end(&header_sent).into()))
                    });
                    let mut response = CopyResponse::new(0, columns, data.chain(tail));
                    response.format = 1;
                    Response::CopyOut(response)
                } else {
                    Response::CopyOut(CopyResponse::new(0, columns, data))
                }
            }
        })
    }
}

/// How many of a COPY TO's CopyData messages are no row: CSV or text with HEADER sends a
/// header line first, binary a last message with the trailer.
pub(super) fn copy_header_lines(outcome: &Outcome) -> usize {
    usize::from(matches!(
        outcome,
        Outcome::CopyOut { opts, .. }
            if opts.header || opts.format == crate::copy::CopyFormat::Binary
    ))
}

pub(super) fn command_tag(tag: &str) -> Tag {
    // "INSERT 0 3" / "UPDATE 2" / "CREATE TABLE": split a trailing row count off.
    let mut parts: Vec<&str> = tag.split(' ').collect();
    match parts.last().and_then(|n| n.parse::<usize>().ok()) {
        Some(n) if parts.len() > 1 => {
            parts.pop();
            if parts.len() == 2 && parts[0] == "INSERT" {
                return rows_tag("INSERT", n);
            }
            rows_tag(&parts.join(" "), n)
        }
        _ => Tag::new(tag),
    }
}

/// The CommandComplete tag of a statement that affected or returned `rows` rows. INSERT's
/// tag carries an oid (always 0) before the count, `INSERT 0 n`, also with RETURNING: psql
/// and drivers parse it by that shape ("could not interpret result from server" otherwise).
/// SHOW and EXPLAIN return rows but their tags carry no count, as PostgreSQL's.
pub(super) fn rows_tag(command: &str, rows: usize) -> Tag {
    match command {
        "INSERT" => Tag::new("INSERT").with_oid(0).with_rows(rows),
        "SHOW" | "EXPLAIN" => Tag::new(command),
        _ => Tag::new(command).with_rows(rows),
    }
}

/// Execute `stmt` with the session on the statement runtime ([`crate::exec::runtime`]), so that
/// a long computation holds none of the threads serving connections. The session moves to
/// that runtime for the statement and comes back with its outcome; a cancel or the
/// statement timeout ends the statement at its next yield.
pub(super) async fn execute_on_statement_runtime(
    slot: &mut Option<Session>,
    stmt: BrookStatement,
    token: CancellationToken,
    cancel: Arc<SessionCancel>,
) -> PgWireResult<(Outcome, Vec<crate::session::Notice>)> {
    let mut session = slot
        .take()
        .ok_or_else(|| to_pg(brook_err!(Internal, "no session")))?;
    session.set_statement_token(token.clone());
    let (session, outcome) = crate::exec::runtime::run(async move {
        let outcome = tokio::select! {
            r = session.execute(stmt) => r.map_err(|e| cancel.cause(e)),
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
pub(super) fn cancellable(
    stream: datafusion::execution::SendableRecordBatchStream,
    token: CancellationToken,
    cancel: Arc<SessionCancel>,
) -> impl futures::Stream<Item = datafusion::error::Result<datafusion::arrow::record_batch::RecordBatch>>
{
    let stop = token.clone();
    let named = cancel.clone();
    let stream = stream.map(move |r| {
        r.map_err(|e| match e {
            datafusion::error::DataFusionError::External(b)
                if matches!(b.downcast_ref::<BrookError>(), Some(BrookError::Canceled)) =>
            {
                datafusion::error::DataFusionError::External(Box::new(named.error()))
            }
            e => e,
        })
    });
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
