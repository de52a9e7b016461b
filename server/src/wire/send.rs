//! Sending results: rows, notices and COPY data, flushed as they come, with a vanished
//! client noticed while a statement waits for rows.

use super::statement::cancellable;
use super::*;
use crate::exec::cancel::SessionCancel;
use crate::wire::rows::{field_infos, RowEncoder};
use brook_common::BrookError;
use datafusion::arrow::datatypes::SchemaRef;
use futures::{stream, Sink, SinkExt, StreamExt};
use pgwire::api::results::{CopyResponse, FieldFormat, QueryResponse, Tag};
use pgwire::error::{PgWireError, PgWireResult};
use pgwire::messages::copy::CopyDone;
use pgwire::messages::PgWireBackendMessage;
use std::fmt::Debug;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

pub(super) fn rows_response(
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
pub(super) async fn send_notices<C>(
    client: &mut C,
    notices: Vec<crate::session::Notice>,
) -> PgWireResult<()>
where
    C: Sink<PgWireBackendMessage> + Unpin,
    C::Error: Debug,
    PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
{
    for n in notices {
        let severity = if n.warning { "WARNING" } else { "NOTICE" };
        let info = super::error_info(severity, n.code, n.message);
        client
            .feed(PgWireBackendMessage::NoticeResponse(info.into()))
            .await?;
    }
    Ok(())
}

/// Send a query's rows (simple protocol: with its RowDescription and CommandComplete).
pub(super) async fn send_rows<C>(
    client: &mut C,
    mut q: QueryResponse,
    gone: Gone<'_>,
) -> PgWireResult<()>
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
    let done = super::statement::rows_tag(&tag, count);
    client
        .feed(PgWireBackendMessage::CommandComplete(done.into()))
        .await?;
    Ok(())
}

/// Tells whether the client has closed its connection.
type Gone<'a> = &'a (dyn Fn() -> bool + Sync);

/// How often a statement waiting for its next row looks whether its client is gone.
pub(super) const GONE_CHECK: std::time::Duration = std::time::Duration::from_millis(500);

/// Wait for `next` (a continuous query's next row may be long in coming), but give up when
/// the client has closed its connection: a push query whose client vanished ends within
/// [`GONE_CHECK`], whether or not it ever produces a row.
pub(super) async fn unless_gone<F: std::future::Future>(
    next: F,
    gone: Gone<'_>,
) -> PgWireResult<F::Output> {
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
pub(super) async fn send_data_rows<C>(
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
pub(super) async fn send_copy_out<C>(
    client: &mut C,
    resp: CopyResponse,
    gone: Gone<'_>,
    header_lines: usize,
) -> PgWireResult<()>
where
    C: Sink<PgWireBackendMessage> + Unpin,
    C::Error: Debug,
    PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
{
    let rows = send_copy_body(client, resp, gone, header_lines).await?;
    let tag = Tag::new("COPY").with_rows(rows);
    client
        .feed(PgWireBackendMessage::CommandComplete(tag.into()))
        .await?;
    Ok(())
}

/// CopyOutResponse, the data (flushed whenever the producer has nothing ready, as in
/// [`send_data_rows`], so `COPY (... EMIT CHANGES) TO STDOUT` pushes each row as it is
/// produced) and CopyDone. Returns the number of rows: the messages but `header_lines`
/// of them (a HEADER line, a binary trailer: no rows, as PostgreSQL counts).
pub(super) async fn send_copy_body<C>(
    client: &mut C,
    resp: CopyResponse,
    gone: Gone<'_>,
    header_lines: usize,
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
    let mut messages = 0usize;
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
        messages += 1;
        client.feed(PgWireBackendMessage::CopyData(data)).await?;
    }
    client
        .feed(PgWireBackendMessage::CopyDone(CopyDone::new()))
        .await?;
    Ok(messages.saturating_sub(header_lines))
}
