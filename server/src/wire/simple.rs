//! The simple query protocol: a Query message's statements run one after another.

use super::send::{send_copy_out, send_notices, send_rows};
use super::statement::{copy_header_lines, execute_on_statement_runtime};
use super::*;
use async_trait::async_trait;
use brook_common::{brook_err, BrookError};
use brook_planner::BrookStatement;
use futures::{Sink, SinkExt};
use pgwire::api::query::{send_execution_response, SimpleQueryHandler};
use pgwire::api::results::{FieldFormat, Response, Tag};
use pgwire::api::store::PortalStore;
use pgwire::api::{ClientInfo, ClientPortalStore, PgWireConnectionState};
use pgwire::error::{ErrorInfo, PgWireError, PgWireResult};
use pgwire::messages::response::{ReadyForQuery, TransactionStatus};
use pgwire::messages::PgWireBackendMessage;
use std::fmt::Debug;

pub(super) fn is_txn_control(s: &BrookStatement) -> bool {
    use datafusion::sql::sqlparser::ast::Statement as S;
    matches!(s.as_sql(), Some(S::Commit { .. } | S::Rollback { .. }))
}

/// The transaction status to report once a statement failed: a failed COMMIT has ended its
/// block (the session holds none), so the connection is idle, not in a failed transaction.
pub(super) fn settled_status(
    status: TransactionStatus,
    s: &crate::session::Session,
) -> TransactionStatus {
    if status == TransactionStatus::Error && !s.block_open() {
        TransactionStatus::Idle
    } else {
        status
    }
}

/// End the session's implicit transaction, if one is open (see
/// `crate::handler::implicit`): commit it (`commit`) or roll it back, and send the error of
/// a commit that failed.
pub(super) async fn end_implicit<C>(
    client: &mut C,
    s: &mut crate::session::Session,
    commit: bool,
) -> PgWireResult<()>
where
    C: Sink<PgWireBackendMessage> + Unpin,
    PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
{
    if let Err(e) = s.end_implicit(commit) {
        client
            .feed(PgWireBackendMessage::ErrorResponse(
                ErrorInfo::from(to_pg(e)).into(),
            ))
            .await?;
    }
    Ok(())
}

/// Queue the ErrorResponse of `e` (ReadyForQuery follows at the end of the query string).
async fn feed_error<C>(client: &mut C, e: PgWireError) -> PgWireResult<()>
where
    C: Sink<PgWireBackendMessage> + Unpin,
    PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
{
    client
        .feed(PgWireBackendMessage::ErrorResponse(
            ErrorInfo::from(e).into(),
        ))
        .await?;
    Ok(())
}

/// 0A000 for statements after a COPY FROM STDIN in one query string: they would run after
/// its data, which Brook does not do (they were dropped without a word).
fn nothing_after_copy_from_stdin(
    stmts: Vec<BrookStatement>,
) -> Result<Vec<BrookStatement>, BrookError> {
    let last = stmts.len().saturating_sub(1);
    if stmts.iter().take(last).any(is_copy_from_stdin) {
        return Err(brook_err!(
            Unsupported,
            "statements after COPY ... FROM STDIN in the same query string (send them in a query of their own)"
        ));
    }
    Ok(stmts)
}

/// COPY ... FROM STDIN (its data follows the query string).
fn is_copy_from_stdin(s: &BrookStatement) -> bool {
    use datafusion::sql::sqlparser::ast::{CopyTarget, Statement as S};
    matches!(
        s.as_sql(),
        Some(S::Copy {
            to: false,
            target: CopyTarget::Stdin,
            ..
        })
    )
}

/// COMMIT AND CHAIN or ROLLBACK AND CHAIN.
pub(super) fn is_chain(s: &BrookStatement) -> bool {
    use datafusion::sql::sqlparser::ast::Statement as S;
    matches!(
        s.as_sql(),
        Some(
            S::Commit { chain: true, .. }
                | S::Rollback {
                    chain: true,
                    savepoint: None
                }
        )
    )
}

pub(super) fn is_rollback_to_savepoint(s: &BrookStatement) -> bool {
    use datafusion::sql::sqlparser::ast::Statement as S;
    matches!(
        s.as_sql(),
        Some(S::Rollback {
            savepoint: Some(_),
            ..
        })
    )
}

#[async_trait]
impl SimpleQueryHandler for BrookHandler {
    /// Runs each statement of the query string in turn, stopping at the first error, and
    /// keeps PostgreSQL's transaction status (including 25P02 in failed transactions).
    ///
    /// Long because it is the simple protocol's loop as PostgreSQL runs it, step by step per
    /// statement (parse, transaction state, run, send, notices), which reads best in order.
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
        let _busy = self.idle.busy();
        client.set_state(PgWireConnectionState::QueryInProgress);
        let stmts = match check_query_text(&query.query)
            .and_then(|()| brook_planner::parse_sql(&query.query))
            .and_then(nothing_after_copy_from_stdin)
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
        // Several statements are one transaction, as in PostgreSQL (unless they control
        // transactions themselves); see `crate::handler::implicit`.
        let implicit = stmts.len() > 1;
        let mut failed = false;
        for stmt in stmts {
            // (The session, and with it the connection's activity entry, exists from here.)
            let timeout = self.statement_timeout(client).await?;
            let token = self.cancel.begin_with_timeout(timeout);
            self.cancel.set_read_only(super::reads_only(&stmt));
            self.activity_active(&query.query);
            if status == TransactionStatus::Error && !is_txn_control(&stmt) {
                client
                    .feed(PgWireBackendMessage::ErrorResponse(
                        ErrorInfo::from(to_pg(BrookError::InFailedTransaction)).into(),
                    ))
                    .await?;
                failed = true;
                break;
            }
            // A FETCH or MOVE of a protocol portal reads that portal (`portal_fetch.rs`).
            if let Some(answer) = self
                .portal_fetch(client.portal_store(), &stmt, &token)
                .await
            {
                let sent = match answer {
                    Ok(Response::Query(q)) => send_rows(client, q, &|| self.client_gone()).await,
                    Ok(Response::Execution(tag)) => send_execution_response(client, tag).await,
                    Ok(_) => Ok(()),
                    Err(e) => Err(e),
                };
                if let Err(e) = sent {
                    feed_error(client, e).await?;
                    status = status.to_error_state();
                    failed = true;
                    break;
                }
                continue;
            }
            let rollback_to = is_rollback_to_savepoint(&stmt);
            let commit_in_failed = status == TransactionStatus::Error;
            let outcome = async {
                let mut g = self.session(client).await?;
                if let Some(s) = g.as_mut().filter(|_| commit_in_failed) {
                    // (Rows that failed while being sent fail the block too.)
                    s.block_failed();
                }
                if let Some(s) = g.as_mut().filter(|_| implicit) {
                    if is_copy_from_stdin(&stmt) {
                        // The query string ends at COPY FROM STDIN (its data comes next):
                        // what ran before commits, and the COPY is a transaction of its own.
                        s.end_implicit(true).map_err(to_pg)?;
                    } else {
                        s.begin_implicit(true);
                    }
                }
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
            let header_lines = outcome.as_ref().map_or(0, copy_header_lines);
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
                    feed_error(client, e).await?;
                    status = status.to_error_state();
                    failed = true;
                    break;
                }
            };
            self.note_response(&outcome);
            match outcome {
                Response::Query(q) => {
                    if let Err(e) = send_rows(client, q, &|| self.client_gone()).await {
                        feed_error(client, e).await?;
                        status = status.to_error_state();
                        failed = true;
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
                    // (BEGIN, or COMMIT/ROLLBACK AND CHAIN: a new block, healthy even when
                    // the one it ended had failed.)
                    status = TransactionStatus::Transaction;
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
                    // The COPY runs on while its data arrives: a cancel or the statement
                    // timeout still reaches it (`CopyHandler`), as in PostgreSQL.
                    self.idle.idle(self.idle_limit().await);
                    return Ok(());
                }
                Response::CopyOut(r) => {
                    if let Err(e) =
                        send_copy_out(client, r, &|| self.client_gone(), header_lines).await
                    {
                        feed_error(client, e).await?;
                        status = status.to_error_state();
                        failed = true;
                        break;
                    }
                }
                Response::Error(e) => {
                    client
                        .feed(PgWireBackendMessage::ErrorResponse((*e).into()))
                        .await?;
                    status = status.to_error_state();
                    failed = true;
                    break;
                }
                Response::EmptyQuery | Response::CopyBoth(_) => {}
            }
        }
        self.cancel.end();
        // (Read without creating the session: an empty query string has none yet.)
        let changed = {
            let mut g = self.session.lock().await;
            if let Some(s) = g.as_mut() {
                // The implicit transaction ends with the query string (also one the extended
                // protocol left open without Sync, as PostgreSQL's simple query ends it).
                end_implicit(client, s, !failed).await?;
                status = settled_status(status, s);
            }
            self.changed_parameters(client, g.as_ref())
        };
        for message in changed {
            client.feed(message).await?;
        }
        if status == TransactionStatus::Idle {
            self.transaction_ended(client.portal_store()).await;
        }
        self.activity_idle(status);
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
        Err(to_pg(brook_err!(
            Internal,
            "simple queries are handled by on_query"
        )))
    }
}
