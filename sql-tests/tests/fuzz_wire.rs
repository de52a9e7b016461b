//! Mutation fuzzing of the wire protocol against a running server: sequences of frontend
//! messages (simple and extended query, COPY, malformed Bind, absurd lengths and counts) are
//! mutated and sent on fresh connections. The oracle: the server process stays up, never
//! logs a panic (malformed messages are refused with 08P01 before pgwire decodes them), and
//! a second client's `SELECT 1` is answered throughout.
//!
//! Seeds are built here (one per message kind and known-bad shape) plus the files in
//! `sql-tests/fuzz/wire/` (raw message bytes sent after startup; a regression is added there
//! as a file). `BROOK_FUZZ_CASES` sets the number of cases (default 120, the CI slice).

use brook_sql_tests::{crate_dir, raw_session, read_until_ready, startup_message, BrookServer};
use proptest::prelude::*;
use proptest::strategy::ValueTree;
use proptest::test_runner::{Config, TestRunner};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

fn msg(tag: u8, body: &[u8]) -> Vec<u8> {
    let mut m = vec![tag];
    m.extend_from_slice(&((body.len() + 4) as i32).to_be_bytes());
    m.extend_from_slice(body);
    m
}

fn cstr(s: &str) -> Vec<u8> {
    let mut v = s.as_bytes().to_vec();
    v.push(0);
    v
}

fn parse(name: &str, sql: &str, types: &[i32]) -> Vec<u8> {
    let mut b = cstr(name);
    b.extend(cstr(sql));
    b.extend_from_slice(&(types.len() as i16).to_be_bytes());
    for t in types {
        b.extend_from_slice(&t.to_be_bytes());
    }
    msg(b'P', &b)
}

/// A Bind with the given parameter format codes, values (None = NULL, Some(len, bytes)) and
/// result format codes, exactly as given (counts may disagree on purpose).
fn bind(formats: &[i16], values: &[Option<(i32, Vec<u8>)>], results: &[i16]) -> Vec<u8> {
    let mut b = cstr("");
    b.extend(cstr(""));
    b.extend_from_slice(&(formats.len() as i16).to_be_bytes());
    for f in formats {
        b.extend_from_slice(&f.to_be_bytes());
    }
    b.extend_from_slice(&(values.len() as i16).to_be_bytes());
    for v in values {
        match v {
            None => b.extend_from_slice(&(-1i32).to_be_bytes()),
            Some((len, bytes)) => {
                b.extend_from_slice(&len.to_be_bytes());
                b.extend_from_slice(bytes);
            }
        }
    }
    b.extend_from_slice(&(results.len() as i16).to_be_bytes());
    for r in results {
        b.extend_from_slice(&r.to_be_bytes());
    }
    msg(b'B', &b)
}

fn execute() -> Vec<u8> {
    execute_limited(0)
}

fn execute_limited(max_rows: i32) -> Vec<u8> {
    let mut b = cstr("");
    b.extend_from_slice(&max_rows.to_be_bytes());
    msg(b'E', &b)
}

fn sync() -> Vec<u8> {
    msg(b'S', &[])
}

/// Seeds: message sequences sent after startup.
fn seeds() -> Vec<Vec<u8>> {
    let int4 = |v: i32| Some((4, v.to_be_bytes().to_vec()));
    let text = |s: &str| Some((s.len() as i32, s.as_bytes().to_vec()));
    let mut seeds: Vec<Vec<Vec<u8>>> = vec![
        vec![msg(b'Q', &cstr("SELECT 1; SELECT 'a' || 'b'"))],
        vec![msg(
            b'Q',
            &cstr("CREATE TABLE IF NOT EXISTS f (a int, b text); INSERT INTO f VALUES (1, 'x')"),
        )],
        vec![
            msg(b'Q', &cstr("COPY f FROM STDIN")),
            msg(b'd', b"2\ty\n"),
            msg(b'c', &[]),
        ],
        vec![
            msg(b'Q', &cstr("COPY f FROM STDIN")),
            msg(b'd', b"zz\n"),
            msg(b'f', &cstr("stop")),
        ],
        vec![
            parse("", "SELECT $1::int + 1", &[23]),
            bind(&[1], &[int4(41)], &[1]),
            execute(),
            sync(),
        ],
        vec![
            parse("", "SELECT $1, $2", &[]),
            bind(&[0], &[text("a"), text("b")], &[]),
            execute(),
            sync(),
        ],
        // Counts that disagree: more format codes than parameters, fewer values than the
        // statement has, a result format code that is neither text nor binary.
        vec![
            parse("", "SELECT $1::int", &[23]),
            bind(&[1, 1, 1], &[int4(1)], &[7]),
            execute(),
            sync(),
        ],
        vec![
            parse("", "SELECT $1::int, $2::int", &[23, 23]),
            bind(&[1], &[int4(1)], &[]),
            execute(),
            sync(),
        ],
        // A value length past the message, and a negative length that is not NULL.
        vec![
            parse("", "SELECT $1::text", &[25]),
            bind(&[0], &[Some((1 << 30, b"x".to_vec()))], &[]),
            execute(),
            sync(),
        ],
        vec![
            parse("", "SELECT $1::text", &[25]),
            bind(&[0], &[Some((-7, vec![]))], &[]),
            execute(),
            sync(),
        ],
        // Binary values of the wrong size for their type.
        vec![
            parse("", "SELECT $1::int8", &[20]),
            bind(&[1], &[Some((3, vec![1, 2, 3]))], &[]),
            execute(),
            sync(),
        ],
        vec![
            parse("", "SELECT $1::uuid", &[2950]),
            bind(&[1], &[Some((2, vec![1, 2]))], &[]),
            execute(),
            sync(),
        ],
        vec![parse("", "SELECT $99999999999", &[]), sync()],
        vec![
            msg(b'D', &cstr("Snope")),
            msg(b'C', &cstr("Pnope")),
            msg(b'H', &[]),
            sync(),
        ],
        vec![msg(b'X', &[])],
        vec![msg(b'?', b"unknown message type"), sync()],
    ];
    let dir = crate_dir().join("fuzz/wire");
    if let Ok(entries) = std::fs::read_dir(&dir) {
        let mut files: Vec<_> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
        files.sort();
        for f in files {
            seeds.push(vec![std::fs::read(&f).expect("seed")]);
        }
    }
    seeds.into_iter().map(|s| s.concat()).collect()
}

#[derive(Debug, Clone)]
enum Edit {
    Flip(usize, u8),
    Insert(usize, Vec<u8>),
    Delete(usize, usize),
    Duplicate(usize, usize),
    Cut(usize),
}

fn edit() -> impl Strategy<Value = Edit> {
    prop_oneof![
        (any::<usize>(), 1..=255u8).prop_map(|(a, b)| Edit::Flip(a, b)),
        (any::<usize>(), prop::collection::vec(any::<u8>(), 1..6))
            .prop_map(|(a, b)| Edit::Insert(a, b)),
        (any::<usize>(), 1..8usize).prop_map(|(a, n)| Edit::Delete(a, n)),
        (any::<usize>(), 1..40usize).prop_map(|(a, n)| Edit::Duplicate(a, n)),
        any::<usize>().prop_map(Edit::Cut),
    ]
}

fn apply(mut d: Vec<u8>, edits: &[Edit]) -> Vec<u8> {
    for e in edits {
        let n = d.len().max(1);
        match e {
            Edit::Flip(a, b) => {
                if !d.is_empty() {
                    d[a % n] ^= b;
                }
            }
            Edit::Insert(a, b) => {
                let i = a % (d.len() + 1);
                d.splice(i..i, b.iter().copied());
            }
            Edit::Delete(a, len) => {
                let i = a % n;
                let end = (i + len).min(d.len());
                if i < end {
                    d.drain(i..end);
                }
            }
            Edit::Duplicate(a, len) => {
                let i = a % n;
                let end = (i + len).min(d.len());
                if i < end {
                    let c = d[i..end].to_vec();
                    d.splice(end..end, c);
                }
            }
            Edit::Cut(a) => d.truncate(a % n),
        }
    }
    d
}

/// Send startup (mutated too when `fuzz_startup`), then `body`, and read what comes back
/// for a moment.
async fn one_case(addr: &str, body: &[u8], fuzz_startup: Option<&[Edit]>) {
    let Ok(mut s) = tokio::net::TcpStream::connect(addr).await else {
        return;
    };
    let start = match fuzz_startup {
        Some(edits) => apply(startup_message(), edits),
        None => startup_message(),
    };
    if s.write_all(&start).await.is_err() {
        return;
    }
    let mut buf = vec![0u8; 16 * 1024];
    let mut seen = Vec::new();
    let ready = tokio::time::timeout(Duration::from_secs(2), async {
        while !seen.windows(5).any(|w| w == b"Z\0\0\0\x05") {
            match s.read(&mut buf).await {
                Ok(0) | Err(_) => return false,
                Ok(n) => seen.extend_from_slice(&buf[..n]),
            }
        }
        true
    })
    .await;
    if ready != Ok(true) {
        return;
    }
    let _ = s.write_all(body).await;
    let _ = tokio::time::timeout(Duration::from_millis(300), async {
        loop {
            match s.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(_) => {}
            }
        }
    })
    .await;
}

/// An Execute with an absurd row limit: pgwire preallocates a buffer for the limit, which
/// aborted the whole server (found by the fuzzer). Now 54000, and the server goes on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_execute_with_a_huge_row_limit_is_refused() {
    let mut server = BrookServer::start();
    let mut s = raw_session(&server.addr).await;
    // A first Execute suspends the portal after 10 rows; the second resumes it with the
    // absurd limit (pgwire resumes without asking Brook's do_query).
    let mut named = cstr("p");
    named.extend(cstr(""));
    named.extend_from_slice(&[0, 0, 0, 0, 0, 0]);
    let mut resume = cstr("p");
    resume.extend_from_slice(&0x5300_0000i32.to_be_bytes());
    let body = [
        parse("", "SELECT x FROM generate_series(1, 100) g(x)", &[]),
        msg(b'B', &named),
        {
            let mut first = cstr("p");
            first.extend_from_slice(&10i32.to_be_bytes());
            msg(b'E', &first)
        },
        msg(b'E', &resume),
        sync(),
        parse("", "SELECT 1", &[]),
        bind(&[], &[], &[]),
        execute_limited(0x5300_0000),
        sync(),
    ]
    .concat();
    s.write_all(&body).await.expect("send");
    let mut reply = Vec::new();
    read_until_ready(&mut s, &mut reply, 2).await;
    let text = String::from_utf8_lossy(&reply);
    assert_eq!(text.matches("C54000").count(), 2, "{text:?}");
    assert!(server.alive(), "the server is up");
    let c = server.connect("brook").await;
    let one: i32 = c.query_one("SELECT 1", &[]).await.expect("alive").get(0);
    assert_eq!(one, 1);
}

/// A negative Execute row limit means all rows, as in PostgreSQL (found by the fuzz test
/// below: pgwire read it as a huge limit and panicked sizing its buffer).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_execute_with_a_negative_row_limit_fetches_all_rows() {
    let server = BrookServer::start();
    let mut s = raw_session(&server.addr).await;
    let body = [
        parse("", "SELECT x FROM generate_series(1, 3) g(x)", &[]),
        bind(&[], &[], &[]),
        execute_limited(-5),
        sync(),
    ]
    .concat();
    s.write_all(&body).await.expect("send");
    let mut reply = Vec::new();
    read_until_ready(&mut s, &mut reply, 1).await;
    let text = String::from_utf8_lossy(&reply);
    assert!(text.contains("SELECT 3"), "{text:?}");
    assert_eq!(panics(&server), 0, "{text:?}");
}

/// A Bind whose value length runs past the message (pgwire's decoder would panic on it) is
/// refused before pgwire sees it: FATAL 08P01 naming the message, no panic, and the server
/// serves the next client.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_malformed_bind_gets_08p01() {
    let server = BrookServer::start();
    let body = [
        parse("", "SELECT $1::text", &[25]),
        bind(&[0], &[Some((1 << 30, b"x".to_vec()))], &[]),
        execute(),
        sync(),
    ]
    .concat();
    let text = reply_to(&server, &body).await;
    assert!(text.contains("C08P01"), "{text:?}");
    assert!(text.contains("malformed \"B\" message"), "{text:?}");
    assert_eq!(panics(&server), 0, "pgwire's decoder was reached");
}

/// An unknown message type gets FATAL 08P01 naming it, as in PostgreSQL ("invalid frontend
/// message type"), rather than a silent close.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unknown_message_type_gets_08p01() {
    let server = BrookServer::start();
    let text = reply_to(&server, &msg(b'z', b"hello")).await;
    assert!(text.contains("C08P01"), "{text:?}");
    assert!(
        text.contains("invalid frontend message type 122"),
        "{text:?}"
    );
    // A message whose fields run past its length is refused the same way.
    let text = reply_to(&server, &msg(b'E', b"portal-without-nul")).await;
    assert!(text.contains("C08P01"), "{text:?}");
}

/// Panics the server logged.
fn panics(server: &BrookServer) -> usize {
    server
        .log
        .lock()
        .map(|l| l.iter().filter(|l| l.contains("panicked")).count())
        .unwrap_or_default()
}

/// Sends `body` on a fresh authenticated connection and collects what the server answers
/// until it closes (5 s at most); then checks a second client is served.
async fn reply_to(server: &BrookServer, body: &[u8]) -> String {
    let mut s = raw_session(&server.addr).await;
    let mut buf = vec![0u8; 8192];
    s.write_all(body).await.expect("send");
    let mut reply = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(5), async {
        loop {
            match s.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => reply.extend_from_slice(&buf[..n]),
            }
        }
    })
    .await;
    let c = server.connect("brook").await;
    let one: i32 = c.query_one("SELECT 1", &[]).await.expect("alive").get(0);
    assert_eq!(one, 1);
    String::from_utf8_lossy(&reply).into_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mutated_protocol_messages_never_take_the_server_down() {
    let cases: u32 = std::env::var("BROOK_FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(120);
    let mut server = BrookServer::start();
    let seeds = seeds();
    let mut runner = TestRunner::new(Config::default());
    let strategy = (
        any::<prop::sample::Index>(),
        prop::collection::vec(edit(), 0..5),
        prop::option::weighted(0.1, prop::collection::vec(edit(), 1..3)),
    );
    let checker = server.connect("brook").await;
    let started = std::time::Instant::now();
    let mut recent: Vec<(Vec<u8>, Option<Vec<Edit>>)> = Vec::new();
    for i in 0..cases {
        let (seed, edits, startup_edits) = strategy.new_tree(&mut runner).expect("case").current();
        let body = apply(seeds[seed.index(seeds.len())].clone(), &edits);
        one_case(&server.addr, &body, startup_edits.as_deref()).await;
        // Name the case that made the server panic, so that it can be turned into a test.
        assert_eq!(
            panics(&server),
            0,
            "a panic while serving the case {body:?} (startup edits {startup_edits:?})"
        );
        recent.push((body, startup_edits));
        if i % 25 == 0 {
            let answered =
                tokio::time::timeout(Duration::from_secs(10), checker.query_one("SELECT 1", &[]))
                    .await;
            let one: i32 = match answered {
                Ok(Ok(row)) => row.get(0),
                other => panic!(
                    "the second client was not answered ({other:?}) after these cases: {recent:?}"
                ),
            };
            assert_eq!(one, 1);
            recent.clear();
        }
    }
    assert!(server.alive(), "the server exited");
    // Malformed messages are refused (08P01) before pgwire decodes them: nothing panics.
    assert_eq!(panics(&server), 0, "a panic while serving the cases");
    let refused = server
        .log
        .lock()
        .map(|l| {
            l.iter()
                .filter(|l| l.contains("malformed message (FATAL 08P01)"))
                .count()
        })
        .unwrap_or_default();
    let fresh = server.connect("brook").await;
    let one: i32 = fresh
        .query_one("SELECT 1", &[])
        .await
        .expect("alive")
        .get(0);
    assert_eq!(one, 1);
    eprintln!(
        "wire fuzz: {cases} cases in {:?}, server up; {refused} malformed messages answered 08P01",
        started.elapsed()
    );
}
