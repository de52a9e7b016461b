//! One accepted connection's life around pgwire's protocol loop: duplicate handles on its
//! socket (to notice a vanished client and to say why a connection ends), the idle
//! watchdog, and containment of a panic in pgwire's message decoding.

use crate::wire::Front;
use std::sync::Arc;

/// Serve one accepted connection to its end. pgwire decodes the client's messages; some
/// malformed ones (a Bind or Parse whose lengths run past the message) make that decoding
/// panic. The panic ends only this connection's task: the client then gets a FATAL 08P01
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
    let served = tokio::spawn(pgwire::tokio::process_socket(socket, tls, handlers)).await;
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
}

/// Ends a connection that stays idle inside a transaction block or an open COPY past its
/// `idle_in_transaction_session_timeout`: FATAL 25P03 (on a plain connection), then the
/// socket is shut down, so pgwire's loop ends and the session (and an open COPY's write
/// lock) is released.
async fn idle_watchdog(
    watch: Arc<crate::idle::IdleWatch>,
    socket: std::net::TcpStream,
    peer: std::net::SocketAddr,
    plain: bool,
) {
    loop {
        tokio::time::sleep(crate::idle::CHECK_EVERY).await;
        if watch.expired() {
            tracing::info!(%peer, "terminating connection due to idle-in-transaction timeout");
            if plain {
                let _ = std::io::Write::write_all(
                    &mut &socket,
                    &fatal_response(
                        "25P03",
                        "terminating connection due to idle-in-transaction timeout",
                    ),
                );
            }
            let _ = socket.shutdown(std::net::Shutdown::Both);
            return;
        }
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
