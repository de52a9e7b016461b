//! COPY FROM STDIN over the wire: CopyData, CopyDone and CopyFail.

use super::*;
use async_trait::async_trait;
use brook_common::brook_err;
use futures::{Sink, SinkExt};
use pgwire::api::copy::CopyHandler;
use pgwire::api::results::Tag;
use pgwire::api::{ClientInfo, PgWireConnectionState};
use pgwire::error::{PgWireError, PgWireResult};
use pgwire::messages::copy::{CopyData, CopyDone, CopyFail};
use pgwire::messages::PgWireBackendMessage;
use std::fmt::Debug;

#[async_trait]
impl CopyHandler for BrookHandler {
    async fn on_copy_data<C>(&self, client: &mut C, copy_data: CopyData) -> PgWireResult<()>
    where
        C: ClientInfo + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let _busy = self.idle.busy();
        let mut g = self.session.lock().await;
        let s = g
            .as_mut()
            .ok_or_else(|| to_pg(brook_err!(Protocol, "COPY data without a session")))?;
        let r = if self.cancel.cancelled() {
            // A cancel or the statement timeout: the COPY ends without its rows.
            s.copy_fail().await;
            Err(to_pg(self.cancel.error()))
        } else {
            s.copy_data(&copy_data.data).await.map_err(to_pg)
        };
        let limit = s
            .timeout_setting("idle_in_transaction_session_timeout")
            .ok()
            .flatten();
        self.idle.idle(limit);
        if r.is_err() {
            self.idle.set_copy(false);
            self.cancel.end();
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
                .ok_or_else(|| to_pg(brook_err!(Protocol, "CopyDone without a session")))?;
            let done = if self.cancel.cancelled() {
                s.copy_fail().await;
                Err(self.cancel.error())
            } else {
                s.copy_done().await
            };
            self.cancel.end();
            done.map_err(to_pg)?
        };
        let complete = PgWireBackendMessage::CommandComplete(Tag::new("COPY").with_rows(n).into());
        if matches!(client.state(), PgWireConnectionState::CopyInProgress(true)) {
            // The extended protocol's COPY commits at Sync (its implicit transaction), so
            // its CommandComplete goes out with the ReadyForQuery after that commit, as
            // PostgreSQL's does: a client that takes CommandComplete as the COPY's
            // acknowledgement (tokio-postgres) never holds one for rows a crash can undo.
            client.feed(complete).await?;
        } else {
            client.send(complete).await?;
        }
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
            s.copy_fail().await;
        }
        self.cancel.end();
        // PostgreSQL reports a COPY the client failed as canceled (57014), with its message.
        to_pg(BrookError::Timeout {
            message: format!("COPY from stdin failed: {}", fail.message),
            code: "57014",
        })
    }
}
