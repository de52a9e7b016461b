//! One accepted connection's life: TLS negotiation, the protocol loop over pgwire's
//! handlers with every client message checked before pgwire decodes it ([`crate::wire::framing`]),
//! duplicate handles on its socket (to notice a vanished client and to say why a
//! connection ends), the idle watchdog, and containment of a panic in the protocol layer.

use crate::wire::framing::{CheckedStream, MalformedMessage};
use crate::wire::Front;
use futures::{SinkExt, StreamExt};
use pgwire::api::PgWireServerHandlers;
use pgwire::api::{ClientInfo, ErrorHandler, PgWireConnectionState};
use pgwire::error::PgWireError;
use pgwire::messages::{PgWireBackendMessage, PgWireFrontendMessage};
use pgwire::tokio::server::{negotiate_tls, process_error, process_message};
use std::sync::Arc;
use std::time::Duration;
use tokio_util::codec::{Framed, FramedParts};

/// How long a client has to finish TLS negotiation and authentication (as pgwire's and
/// PostgreSQL's `authentication_timeout`, 60 s).
const STARTUP_TIMEOUT: Duration = Duration::from_secs(60);

/// Serve one accepted connection to its end. A malformed message (an unknown type, or
/// fields that do not fit its length) gets FATAL 08P01 and ends the connection. A panic in
/// the protocol layer ends only this connection's task: the client then gets a FATAL 08P01
/// ErrorResponse (on a plain connection; under TLS the connection just closes) and the
/// server goes on.
pub async fn serve_connection(
    front: Arc<Front>,
    socket: tokio::net::TcpStream,
    peer: std::net::SocketAddr,
    tls: Option<pgwire::tokio::TlsAcceptor>,
) {
    let _ = socket.set_nodelay(true);
    // Duplicates of the socket: one only peeked at (tells when the client is gone), one to
    // say why the connection ends when the protocol layer could not.
    let (socket, probe, last_word) = match split_peer(socket) {
        Ok(x) => x,
        Err(e) => {
            tracing::warn!(%peer, error = %e, "could not set up the connection");
            return;
        }
    };
    let plain = tls.is_none();
    let began = std::time::Instant::now();
    tracing::info!(%peer, tls = !plain, "connection received");
    let handlers = front.connection(Some(probe));
    let watchdog = match last_word.try_clone() {
        Ok(socket) => Some(tokio::spawn(idle_watchdog(
            handlers.idle_watch(),
            socket,
            peer,
            plain,
        ))),
        Err(_) => None,
    };
    let served = tokio::spawn(serve_messages(socket, tls, handlers)).await;
    if let Some(w) = watchdog {
        w.abort();
    }
    match served {
        Ok(Ok(())) => {}
        Ok(Err(e)) => tracing::debug!(%peer, error = %e, "connection ended with error"),
        Err(e) if e.is_panic() => {
            tracing::error!(%peer, "connection closed: a malformed message broke the protocol layer (08P01 sent)");
            if plain {
                let _ = std::io::Write::write_all(
                    &mut &last_word,
                    &fatal_response(
                        "08P01",
                        "invalid frontend message: malformed lengths or counts",
                    ),
                );
            }
        }
        Err(e) => tracing::debug!(%peer, error = %e, "connection task ended"),
    }
    tracing::info!(%peer, seconds = began.elapsed().as_secs_f64(), "disconnection");
}

/// pgwire's message loop (`pgwire::tokio::process_socket`), with the client's bytes read
/// through a [`CheckedStream`] and a malformed message answered with FATAL 08P01.
async fn serve_messages<H: PgWireServerHandlers>(
    socket: tokio::net::TcpStream,
    tls: Option<pgwire::tokio::TlsAcceptor>,
    handlers: H,
) -> std::io::Result<()> {
    let startup_timeout = tokio::time::sleep(STARTUP_TIMEOUT);
    tokio::pin!(startup_timeout);
    let negotiated = tokio::select! {
        _ = &mut startup_timeout => return Ok(()),
        negotiated = negotiate_tls(socket, tls) => negotiated?,
    };
    // None: a direct TLS handshake to a server without TLS.
    let Some(negotiated) = negotiated else {
        return Ok(());
    };
    let parts = negotiated.into_parts();
    let mut checked = FramedParts::new(CheckedStream::new(parts.io, parts.read_buf), parts.codec);
    checked.write_buf = parts.write_buf;
    let mut socket = Framed::from_parts(checked);

    let startup = handlers.startup_handler();
    let simple = handlers.simple_query_handler();
    let extended = handlers.extended_query_handler();
    let copy = handlers.copy_handler();
    let cancel = handlers.cancel_handler();
    let on_error = handlers.error_handler();
    loop {
        let starting = matches!(
            socket.state(),
            PgWireConnectionState::AwaitingStartup
                | PgWireConnectionState::AuthenticationInProgress
        );
        let next = if starting {
            tokio::select! {
                _ = &mut startup_timeout => None,
                next = socket.next() => next,
            }
        } else {
            socket.next().await
        };
        let message = match next {
            None => break,
            Some(Ok(message)) => message,
            Some(Err(e)) => {
                refuse_malformed(&mut socket, e).await;
                break;
            }
        };
        // The client is leaving: drop the socket (asyncpg waits for the close).
        if matches!(message, PgWireFrontendMessage::Terminate(_)) {
            break;
        }
        // A CancelRequest comes on a connection of its own, which ends after it.
        let cancel_request = matches!(message, PgWireFrontendMessage::CancelRequest(_));
        let extended_protocol = match socket.state() {
            PgWireConnectionState::CopyInProgress(extended) => extended,
            _ => message.is_extended_query(),
        };
        let copy_done = matches!(message, PgWireFrontendMessage::CopyDone(_));
        let processed = process_message(
            message,
            &mut socket,
            startup.clone(),
            simple.clone(),
            extended.clone(),
            copy.clone(),
            cancel.clone(),
        )
        .await;
        if cancel_request {
            break;
        }
        // pgwire skips every message up to Sync after an extended-protocol COPY that ended
        // well, as it does after an error: a pipeline's INSERT after its COPY was dropped
        // without a word. PostgreSQL goes on with the pipeline; so does Brook (the skipping
        // is left to errors, which is how Sync tells a failed pipeline).
        if copy_done
            && extended_protocol
            && processed.is_ok()
            && matches!(socket.state(), PgWireConnectionState::AwaitingSync)
        {
            socket.set_state(PgWireConnectionState::ReadyForQuery);
        }
        if let Err(mut e) = processed {
            on_error.on_error(&socket, &mut e);
            let fatal = e.is_fatal();
            process_error(&mut socket, e, extended_protocol).await?;
            if fatal {
                break;
            }
        }
    }
    Ok(())
}

/// Answers a message that could not be read (malformed, or pgwire's own decoding error)
/// with FATAL 08P01, as PostgreSQL does.
async fn refuse_malformed<S, T>(
    socket: &mut Framed<S, pgwire::tokio::server::PgWireMessageServerCodec<T>>,
    e: PgWireError,
) where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + Sync + 'static,
{
    let message = match &e {
        PgWireError::IoError(io) => match io
            .get_ref()
            .and_then(|inner| inner.downcast_ref::<MalformedMessage>())
        {
            Some(malformed) => malformed.0.clone(),
            // The connection itself failed: nobody to answer.
            None => return,
        },
        other => format!("invalid frontend message: {other}"),
    };
    tracing::warn!(%message, "connection closed: malformed message (FATAL 08P01)");
    // FATAL: an ErrorResponse, then the connection closes (no ReadyForQuery).
    let info = super::error_info("FATAL", "08P01", message);
    let _ = socket
        .send(PgWireBackendMessage::ErrorResponse(info.into()))
        .await;
}

/// Ends a connection that stays idle inside a transaction block or an open COPY past its
/// `idle_in_transaction_session_timeout`: FATAL 25P03 (on a plain connection), then the
/// socket is shut down, so pgwire's loop ends and the session (and an open COPY's write
/// lock) is released. Cancels the running query of a client that closed its connection:
/// nobody waits for its rows, and it would otherwise run to its end (a quadratic
/// comparison of large documents for many minutes) holding a core and memory. A statement
/// that writes runs to its end, as in PostgreSQL (a client may send a write and leave).
/// (PostgreSQL cancels queries so only when `client_connection_check_interval` is set; a
/// client whose later messages are still unread is not taken for gone.)
async fn idle_watchdog(
    watch: Arc<crate::wire::idle::IdleWatch>,
    socket: std::net::TcpStream,
    peer: std::net::SocketAddr,
    plain: bool,
) {
    loop {
        tokio::time::sleep(crate::wire::idle::CHECK_EVERY).await;
        if watch.is_busy() && peer_closed(&socket) && watch.cancel_query() {
            tracing::info!(%peer, "the client closed its connection: its query is cancelled");
            let _ = socket.shutdown(std::net::Shutdown::Both);
            return;
        }
        let (code, why) = if watch.terminated() {
            (
                "57P01",
                "terminating connection due to administrator command",
            )
        } else if watch.expired() {
            (
                "25P03",
                "terminating connection due to idle-in-transaction timeout",
            )
        } else {
            continue;
        };
        tracing::info!(%peer, "{why}");
        if plain {
            let _ = std::io::Write::write_all(&mut &socket, &fatal_response(code, why));
        }
        let _ = socket.shutdown(std::net::Shutdown::Both);
        return;
    }
}

/// Whether the client closed its connection: its socket (non-blocking) reads end-of-file,
/// or fails, with every byte the client sent already read. Seen by peeking, so no byte of
/// the protocol is taken from pgwire.
pub(super) fn peer_closed(socket: &std::net::TcpStream) -> bool {
    let mut byte = [0u8; 1];
    match socket.peek(&mut byte) {
        Ok(0) => true,
        Ok(_) => false,
        Err(e) => e.kind() != std::io::ErrorKind::WouldBlock,
    }
}

/// The socket, and two non-blocking duplicates of it (same connection).
fn split_peer(
    socket: tokio::net::TcpStream,
) -> std::io::Result<(
    tokio::net::TcpStream,
    std::net::TcpStream,
    std::net::TcpStream,
)> {
    let std = socket.into_std()?;
    let probe = std.try_clone()?;
    let last_word = std.try_clone()?;
    Ok((tokio::net::TcpStream::from_std(std)?, probe, last_word))
}

/// A FATAL ErrorResponse message's bytes.
fn fatal_response(code: &str, message: &str) -> Vec<u8> {
    let mut body = Vec::new();
    for (tag, value) in [
        (b'S', "FATAL"),
        (b'V', "FATAL"),
        (b'C', code),
        (b'M', message),
    ] {
        body.push(tag);
        body.extend_from_slice(value.as_bytes());
        body.push(0);
    }
    body.push(0);
    let mut m = vec![b'E'];
    m.extend_from_slice(&((body.len() + 4) as i32).to_be_bytes());
    m.extend(body);
    m
}
