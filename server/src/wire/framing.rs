//! The client's bytes, checked message by message before pgwire decodes them.
//!
//! pgwire 0.42 decodes a message's body from the whole read buffer, trusting the counts and
//! lengths inside it: a Bind, Parse, Describe, Execute or SASL message whose fields run past
//! its declared length makes its decoder read the next message's bytes or panic, and an
//! unknown message type ends the connection without a word. [`CheckedStream`] sits between
//! the socket (after TLS) and pgwire's framing: it lets each message through only once the
//! whole message is in and its fields fit its length exactly, as PostgreSQL's backend checks
//! them (`pq_getmsgend`). A message that does not is never handed to pgwire: the read fails
//! with [`MalformedMessage`], which the connection's loop answers with FATAL 08P01. CopyData
//! bodies stream through unchecked (they are data, checked by the COPY parser). Written by
//! hand because the check belongs in pgwire's decoder, which offers no hook for it.

use bytes::{Buf, BytesMut};
use std::io;
use std::pin::Pin;
use std::task::{ready, Context, Poll};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// The largest message a client may send (PostgreSQL's `PQ_LARGE_MESSAGE_LIMIT`, 1 GB).
const MAX_MESSAGE: usize = 0x3fff_ffff;
/// The largest startup packet (PostgreSQL's `MAX_STARTUP_PACKET_LENGTH`).
const MAX_STARTUP: usize = 10_000;
/// Request codes of the untyped messages that may open a connection.
const CANCEL_REQUEST: u32 = 80_877_102;
const SSL_REQUEST: u32 = 80_877_103;
const GSSENC_REQUEST: u32 = 80_877_104;

/// Why a client's message was refused; carried inside the `io::Error` of the failed read.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct MalformedMessage(pub String);

/// What the bytes at the front of the buffer are.
#[derive(Debug, PartialEq)]
enum Verdict {
    /// More bytes are needed to judge the next message.
    Incomplete,
    /// The next `len` bytes are one well-formed message.
    Whole {
        len: usize,
        kind: Kind,
    },
    /// A CopyData message of `len` bytes: header and body go through unchecked.
    Streamed {
        len: usize,
    },
    Invalid(String),
}

#[derive(Debug, PartialEq, Clone, Copy)]
enum Kind {
    /// An untyped message of the connection's opening (startup packet, cancel request).
    Opening {
        code: u32,
    },
    Typed(u8),
}

/// Where the connection is in the protocol, as far as framing cares.
#[derive(Debug, Default)]
struct Phase {
    /// The startup packet has gone by: every later message starts with a type byte.
    started: bool,
    /// Password-family ('p') messages seen: the first is a password or SASLInitialResponse.
    passwords: usize,
}

impl Phase {
    fn passed(&mut self, kind: Kind) {
        match kind {
            Kind::Opening { code } if code != SSL_REQUEST && code != GSSENC_REQUEST => {
                self.started = true
            }
            Kind::Typed(b'p') => self.passwords += 1,
            _ => {}
        }
    }
}

/// Judges the message at the front of `buf`.
fn judge(buf: &[u8], phase: &Phase) -> Verdict {
    if !phase.started {
        return judge_opening(buf);
    }
    let Some(header) = buf.get(..5) else {
        return Verdict::Incomplete;
    };
    let kind = header[0];
    let declared = i32::from_be_bytes([header[1], header[2], header[3], header[4]]);
    let len = match usize::try_from(declared) {
        Ok(n) if (4..=MAX_MESSAGE).contains(&n) => n + 1,
        _ => {
            return Verdict::Invalid(format!(
                "invalid message length {declared} for message type \"{}\"",
                kind.escape_ascii()
            ));
        }
    };
    if kind == b'd' {
        return Verdict::Streamed { len };
    }
    let Some(message) = buf.get(..len) else {
        return Verdict::Incomplete;
    };
    match check_body(kind, &message[5..], phase) {
        Ok(()) => Verdict::Whole {
            len,
            kind: Kind::Typed(kind),
        },
        Err(reason) => Verdict::Invalid(reason),
    }
}

/// The startup packet or cancel request: a length, a code, a body.
fn judge_opening(buf: &[u8]) -> Verdict {
    let Some(header) = buf.get(..8) else {
        return Verdict::Incomplete;
    };
    let declared = i32::from_be_bytes([header[0], header[1], header[2], header[3]]);
    let code = u32::from_be_bytes([header[4], header[5], header[6], header[7]]);
    let len = match usize::try_from(declared) {
        Ok(n) if (8..=MAX_STARTUP).contains(&n) => n,
        _ => return Verdict::Invalid(format!("invalid length of startup packet: {declared}")),
    };
    if code == CANCEL_REQUEST && len != 16 {
        return Verdict::Invalid(format!("invalid length of cancel request: {len}"));
    }
    if buf.len() < len {
        return Verdict::Incomplete;
    }
    Verdict::Whole {
        len,
        kind: Kind::Opening { code },
    }
}

/// Checks that a typed message's body holds exactly the fields its type has.
fn check_body(kind: u8, body: &[u8], phase: &Phase) -> Result<(), String> {
    let mut fields = Fields(body);
    let complete = match kind {
        b'Q' | b'f' => fields.cstring().and_then(|_| fields.end()),
        b'P' => fields.parse(),
        b'B' => fields.bind(),
        b'C' | b'D' => fields.describe(),
        b'E' => fields
            .cstring()
            .and_then(|_| fields.i32())
            .and_then(|_| fields.end()),
        b'H' | b'S' | b'X' | b'c' => fields.end(),
        // The first is a cleartext password or a SASLInitialResponse; later ones are SASL
        // responses, opaque bytes.
        b'p' if phase.passwords == 0 => password_end(body).or_else(|| Fields(body).sasl_initial()),
        b'p' => Some(()),
        other => {
            return Err(format!(
                "invalid frontend message type {other} (\"{}\")",
                other.escape_ascii()
            ));
        }
    };
    complete.ok_or_else(|| {
        format!(
            "malformed \"{}\" message: its fields do not fit its length",
            kind.escape_ascii()
        )
    })
}

/// A cleartext password: one NUL-terminated string filling the body.
fn password_end(body: &[u8]) -> Option<()> {
    (body.iter().position(|b| *b == 0)? + 1 == body.len()).then_some(())
}

/// A cursor over a message body; each read is `None` when the body is too short.
struct Fields<'a>(&'a [u8]);

impl Fields<'_> {
    fn take(&mut self, n: usize) -> Option<()> {
        self.0 = self.0.get(n..)?;
        Some(())
    }

    fn cstring(&mut self) -> Option<()> {
        let nul = self.0.iter().position(|b| *b == 0)?;
        self.take(nul + 1)
    }

    fn i16(&mut self) -> Option<i16> {
        let v = i16::from_be_bytes(self.0.get(..2)?.try_into().ok()?);
        self.take(2)?;
        Some(v)
    }

    fn i32(&mut self) -> Option<i32> {
        let v = i32::from_be_bytes(self.0.get(..4)?.try_into().ok()?);
        self.take(4)?;
        Some(v)
    }

    /// A non-negative count followed by that many items of `size` bytes.
    fn counted(&mut self, size: usize) -> Option<()> {
        let n = usize::try_from(self.i16()?).ok()?;
        self.take(n.checked_mul(size)?)
    }

    fn end(&self) -> Option<()> {
        self.0.is_empty().then_some(())
    }

    /// Parse: statement name, query, parameter type OIDs.
    fn parse(&mut self) -> Option<()> {
        self.cstring()?;
        self.cstring()?;
        self.counted(4)?;
        self.end()
    }

    /// Bind: portal, statement, parameter formats, parameter values, result formats.
    fn bind(&mut self) -> Option<()> {
        self.cstring()?;
        self.cstring()?;
        self.counted(2)?;
        let values = self.i16()?;
        for _ in 0..usize::try_from(values).ok()? {
            match self.i32()? {
                -1 => {}
                len => self.take(usize::try_from(len).ok()?)?,
            }
        }
        self.counted(2)?;
        self.end()
    }

    /// Describe or Close: 'S' (statement) or 'P' (portal), then a name.
    fn describe(&mut self) -> Option<()> {
        let target = *self.0.first()?;
        if target != b'S' && target != b'P' {
            return None;
        }
        self.take(1)?;
        self.cstring()?;
        self.end()
    }

    /// SASLInitialResponse: mechanism, then a length-prefixed (or -1) response.
    fn sasl_initial(&mut self) -> Option<()> {
        self.cstring()?;
        match self.i32()? {
            -1 => {}
            len => self.take(usize::try_from(len).ok()?)?,
        }
        self.end()
    }
}

/// A client stream whose reads yield only well-formed messages (see the module docs).
pub struct CheckedStream<S> {
    inner: S,
    /// Bytes read from the client and not yet handed on.
    pending: BytesMut,
    /// How many bytes at the front of `pending` are judged and may be handed on.
    ready: usize,
    /// Bytes of a streamed CopyData body still to come from the client, unjudged.
    unseen: usize,
    phase: Phase,
    failure: Option<String>,
}

impl<S> CheckedStream<S> {
    /// Wraps `inner`; `already_read` are bytes read from it before (not yet judged).
    pub fn new(inner: S, already_read: BytesMut) -> Self {
        CheckedStream {
            inner,
            pending: already_read,
            ready: 0,
            unseen: 0,
            phase: Phase::default(),
            failure: None,
        }
    }

    /// Hands judged bytes to `buf`; false when there are none.
    fn hand_on(&mut self, buf: &mut ReadBuf<'_>) -> bool {
        if self.ready == 0 {
            return false;
        }
        let n = self.ready.min(buf.remaining());
        buf.put_slice(&self.pending[..n]);
        self.pending.advance(n);
        self.ready -= n;
        true
    }

    /// Judges the next message in `pending`; false when more bytes are needed.
    fn judge_next(&mut self) -> bool {
        match judge(&self.pending, &self.phase) {
            Verdict::Incomplete => return false,
            Verdict::Whole { len, kind } => {
                self.phase.passed(kind);
                self.ready = len;
            }
            Verdict::Streamed { len } => {
                self.ready = len.min(self.pending.len());
                self.unseen = len - self.ready;
            }
            Verdict::Invalid(reason) => self.failure = Some(reason),
        }
        true
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for CheckedStream<S> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if buf.remaining() == 0 {
            return Poll::Ready(Ok(()));
        }
        loop {
            if this.hand_on(buf) {
                return Poll::Ready(Ok(()));
            }
            if this.unseen > 0 {
                if !this.pending.is_empty() {
                    let n = this.unseen.min(this.pending.len());
                    this.ready = n;
                    this.unseen -= n;
                    continue;
                }
                if buf.remaining() <= this.unseen {
                    // All the caller can take is body: read it straight in.
                    let before = buf.filled().len();
                    ready!(Pin::new(&mut this.inner).poll_read(cx, buf))?;
                    this.unseen -= buf.filled().len() - before;
                    return Poll::Ready(Ok(()));
                }
            } else if let Some(reason) = &this.failure {
                return Poll::Ready(Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    MalformedMessage(reason.clone()),
                )));
            } else if this.judge_next() {
                continue;
            }
            this.pending.reserve(8 * 1024);
            let read = ready!(tokio_util::io::poll_read_buf(
                Pin::new(&mut this.inner),
                cx,
                &mut this.pending
            ))?;
            if read == 0 {
                // The client closed; a partial message at the end is dropped.
                return Poll::Ready(Ok(()));
            }
        }
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for CheckedStream<S> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().inner).poll_write(cx, buf)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncReadExt;

    fn typed(kind: u8, body: &[u8]) -> Vec<u8> {
        let mut m = vec![kind];
        m.extend_from_slice(&(body.len() as i32 + 4).to_be_bytes());
        m.extend_from_slice(body);
        m
    }

    fn started() -> Phase {
        Phase {
            started: true,
            passwords: 1,
        }
    }

    fn verdict(message: &[u8]) -> Verdict {
        judge(message, &started())
    }

    #[test]
    fn well_formed_messages_pass_whole() {
        let bind = [
            &b"\0s1\0"[..],
            &1i16.to_be_bytes(),
            &0i16.to_be_bytes(),
            &2i16.to_be_bytes(),
            &1i32.to_be_bytes(),
            b"7",
            &(-1i32).to_be_bytes(),
            &0i16.to_be_bytes(),
        ]
        .concat();
        let parse = [
            &b"s1\0select $1\0"[..],
            &1i16.to_be_bytes(),
            &23u32.to_be_bytes(),
        ]
        .concat();
        let execute = [&b"\0"[..], &0i32.to_be_bytes()].concat();
        for message in [
            typed(b'Q', b"select 1\0"),
            typed(b'P', &parse),
            typed(b'B', &bind),
            typed(b'D', b"S\0"),
            typed(b'C', b"Pname\0"),
            typed(b'E', &execute),
            typed(b'S', b""),
            typed(b'X', b""),
        ] {
            let len = message.len();
            assert!(
                matches!(verdict(&message), Verdict::Whole { len: l, .. } if l == len),
                "{message:?}"
            );
            assert_eq!(verdict(&message[..len - 1]), Verdict::Incomplete);
        }
    }

    #[test]
    fn malformed_messages_are_named() {
        let cases: [(&str, Vec<u8>, &str); 7] = [
            (
                "bind count past the end",
                typed(b'B', &[&b"\0\0"[..], &5i16.to_be_bytes()].concat()),
                "malformed \"B\"",
            ),
            (
                "bind value longer than the message",
                typed(
                    b'B',
                    &[&b"\0\0"[..], &[0, 0, 0, 1], &1000i32.to_be_bytes()].concat(),
                ),
                "malformed \"B\"",
            ),
            (
                "parse with trailing bytes",
                typed(b'P', &[&b"\0q\0"[..], &0i16.to_be_bytes(), b"xx"].concat()),
                "malformed \"P\"",
            ),
            (
                "query without its NUL",
                typed(b'Q', b"select 1"),
                "malformed \"Q\"",
            ),
            (
                "describe of neither kind",
                typed(b'D', b"Z\0"),
                "malformed \"D\"",
            ),
            (
                "unknown type",
                typed(b'z', b""),
                "invalid frontend message type 122",
            ),
            (
                "length below four",
                vec![b'Q', 0, 0, 0, 2],
                "invalid message length 2",
            ),
        ];
        for (name, message, expected) in cases {
            match verdict(&message) {
                Verdict::Invalid(reason) => assert!(reason.contains(expected), "{name}: {reason}"),
                other => panic!("{name}: {other:?}"),
            }
        }
    }

    #[test]
    fn opening_packets_are_bounded() {
        let opening = Phase::default();
        let mut startup = 8i32.to_be_bytes().to_vec();
        startup.extend_from_slice(&196_608u32.to_be_bytes());
        assert!(matches!(
            judge(&startup, &opening),
            Verdict::Whole { len: 8, .. }
        ));
        let mut huge = 1_000_000i32.to_be_bytes().to_vec();
        huge.extend_from_slice(&196_608u32.to_be_bytes());
        assert!(matches!(judge(&huge, &opening), Verdict::Invalid(_)));
        let mut cancel = 12i32.to_be_bytes().to_vec();
        cancel.extend_from_slice(&CANCEL_REQUEST.to_be_bytes());
        assert!(matches!(judge(&cancel, &opening), Verdict::Invalid(_)));
    }

    #[test]
    fn the_first_password_message_is_checked() {
        let first = Phase {
            started: true,
            passwords: 0,
        };
        assert!(matches!(
            judge(&typed(b'p', b"secret\0"), &first),
            Verdict::Whole { .. }
        ));
        let sasl = [&b"SCRAM-SHA-256\0"[..], &3i32.to_be_bytes(), b"abc"].concat();
        assert!(matches!(
            judge(&typed(b'p', &sasl), &first),
            Verdict::Whole { .. }
        ));
        let short = [&b"SCRAM-SHA-256\0"[..], &30i32.to_be_bytes(), b"abc"].concat();
        assert!(matches!(
            judge(&typed(b'p', &short), &first),
            Verdict::Invalid(_)
        ));
    }

    #[tokio::test]
    async fn a_stream_hands_on_good_messages_then_fails_on_a_bad_one() {
        let copy = typed(b'd', &[7u8; 20_000]);
        let good = [typed(b'Q', b"select 1\0"), copy.clone(), typed(b'c', b"")].concat();
        let bad = typed(b'B', &[&b"\0\0"[..], &9i16.to_be_bytes()].concat());
        let bytes = [good.clone(), bad].concat();
        let mut stream = CheckedStream::new(&bytes[..], BytesMut::new());
        stream.phase = started();
        let mut out = vec![0u8; good.len()];
        stream.read_exact(&mut out).await.expect("good messages");
        assert_eq!(out, good);
        let err = stream.read(&mut [0u8; 64]).await.expect_err("the bad Bind");
        assert!(err.to_string().contains("malformed \"B\""), "{err}");
    }
}
