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
            // (The session, and with it the connection's activity entry, exists from here.)
            let timeout = self.statement_timeout(client).await?;
            let token = self.cancel.begin_with_timeout(timeout);
            self.activity_active(&query.query);
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
                if let Some(s) = g.as_mut().filter(|_| commit_in_failed) {
                    // (Rows that failed while being sent fail the block too.)
                    s.block_failed();
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
                    self.cancel.end();
                    self.idle.idle(self.idle_limit().await);
                    return Ok(());
                }
                Response::CopyOut(r) => {
                    if let Err(e) =
                        send_copy_out(client, r, &|| self.client_gone(), header_lines).await
                    {
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
        // (Read without creating the session: an empty query string has none yet.)
        let changed = {
            let g = self.session.lock().await;
            if let Some(s) = g.as_ref() {
                status = settled_status(status, s);
            }
            self.changed_parameters(client, g.as_ref())
        };
        for message in changed {
            client.feed(message).await?;
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
