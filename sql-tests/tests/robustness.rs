//! Bad input at the protocol and data level: clear errors with the right SQLSTATE, nothing
//! committed lost, and the server keeps serving other sessions.

use brook_sql_tests::{
    brook_bin, copy_in, count, running_queries as running, sqlstate, BrookServer,
};
use futures::SinkExt;
use std::io::Cursor;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

async fn copy(
    client: &tokio_postgres::Client,
    sql: &str,
    data: &str,
) -> Result<u64, tokio_postgres::Error> {
    copy_in(client, sql, data.as_bytes()).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_copy_rows_abort_the_copy_with_line_numbers() {
    let server = BrookServer::start();
    let c = server.connect("brook").await;
    c.batch_execute("CREATE TABLE t (id int, name text, at date)")
        .await
        .expect("ddl");
    assert_eq!(
        copy(&c, "COPY t FROM STDIN", "1\ta\t2026-01-01\n2\tb\t\\N\n")
            .await
            .expect("copy"),
        2
    );
    let cases = [
        (
            "COPY t FROM STDIN",
            "3\tc\t2026-01-01\nx\td\t2026-01-01\n",
            "22P02",
            "line 2",
        ),
        (
            "COPY t FROM STDIN",
            "3\tc\n",
            "22P04",
            "missing data for column \"at\"",
        ),
        (
            "COPY t FROM STDIN",
            "3\tc\t2026-01-01\textra\n",
            "22P04",
            "extra data",
        ),
        (
            "COPY t FROM STDIN WITH (FORMAT csv)",
            "3,\"unterminated,2026-01-01\n",
            "22P04",
            "unterminated CSV",
        ),
        // PostgreSQL: a date with a field out of range is 22008, text that is no date 22007.
        (
            "COPY t FROM STDIN WITH (FORMAT csv)",
            "3,c,2026-13-45\n",
            "22008",
            "date/time field value out of range",
        ),
        (
            "COPY t FROM STDIN WITH (FORMAT csv)",
            "3,c,someday\n",
            "22007",
            "invalid input syntax for type date",
        ),
        (
            "COPY t FROM STDIN WITH (FORMAT binary)",
            "not a binary copy file",
            "22P04",
            "signature",
        ),
    ];
    for (sql, data, code, text) in cases {
        let err = copy(&c, sql, data).await.expect_err("bad COPY must fail");
        assert_eq!(sqlstate(&err), code, "{sql} {data:?}: {err:?}");
        let msg = err
            .as_db_error()
            .map(|d| d.message().to_string())
            .unwrap_or_default();
        assert!(
            msg.contains(text),
            "message {msg:?} should mention {text:?}"
        );
        assert_eq!(
            count(&c, "t").await,
            2,
            "a failed COPY must leave nothing behind"
        );
    }
    // Large COPYs are converted and written on a thread of their own: a bad row several
    // batches in still fails the whole COPY, named by its line, and leaves nothing.
    let good: String = (0..30_000)
        .map(|i| format!("{i}\tn{i}\t2026-01-01\n"))
        .collect();
    // Line 10,001 is in the second batch, which the writer thread converts.
    let late_bad = format!(
        "{}x\tbad\t2026-01-01\n{good}",
        &good[..good.find("10000\t").unwrap_or(0)]
    );
    let err = copy(&c, "COPY t FROM STDIN", &late_bad)
        .await
        .expect_err("bad row in a large COPY");
    assert_eq!(sqlstate(&err), "22P02", "{err:?}");
    let msg = err
        .as_db_error()
        .map(|d| d.message().to_string())
        .unwrap_or_default();
    assert!(
        msg.contains("line 10001"),
        "message {msg:?} should name line 10001"
    );
    assert_eq!(
        count(&c, "t").await,
        2,
        "a failed large COPY must leave nothing"
    );
    let mut raw = good.clone().into_bytes();
    raw.extend_from_slice(b"1\t\xff\t2026-01-01\n");
    raw.extend_from_slice(good.as_bytes());
    let sink = c
        .copy_in::<_, Cursor<Vec<u8>>>("COPY t FROM STDIN")
        .await
        .expect("copy starts");
    futures::pin_mut!(sink);
    let sent = sink.send(Cursor::new(raw)).await;
    let err = match sent {
        Err(e) => e,
        Ok(()) => sink.finish().await.expect_err("bad UTF-8 must fail"),
    };
    assert_eq!(sqlstate(&err), "22021", "{err:?}");
    assert_eq!(count(&c, "t").await, 2);
    assert_eq!(
        copy(&c, "COPY t FROM STDIN", &good)
            .await
            .expect("large copy"),
        30_000
    );
    // the relation is not left locked: the next COPY works
    assert_eq!(
        copy(&c, "COPY t (id) FROM STDIN WITH (FORMAT csv)", "9\n")
            .await
            .expect("copy"),
        1
    );
    assert_eq!(count(&c, "t").await, 30_003);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn client_vanishing_mid_copy_commits_nothing() {
    let server = BrookServer::start();
    let c = server.connect("brook").await;
    c.batch_execute("CREATE STREAM s (id bigint, v text)")
        .await
        .expect("ddl");
    {
        let (c2, task) = server.connect_vanishable("brook").await;
        let sink = c2
            .copy_in::<_, Cursor<Vec<u8>>>("COPY s FROM STDIN")
            .await
            .expect("copy starts");
        futures::pin_mut!(sink);
        let mut rows = String::new();
        for i in 0..50_000 {
            rows.push_str(&format!("{i}\tvalue {i}\n"));
        }
        sink.send(Cursor::new(rows.into_bytes()))
            .await
            .expect("send");
        // vanish without CopyDone: drop the connection
        task.abort();
    }
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    assert_eq!(count(&c, "s").await, 0);
    assert_eq!(
        copy(&c, "COPY s FROM STDIN", "1\tafter\n")
            .await
            .expect("copy after vanish"),
        1
    );
}

/// A client that gives up a COPY with CopyFail gets PostgreSQL's error — 57014
/// (query_canceled) with its message, not a data-format error — and nothing is written.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn copy_fail_cancels_the_copy_with_57014() {
    let server = BrookServer::start();
    let c = server.connect("brook").await;
    c.batch_execute("CREATE TABLE t (i int)")
        .await
        .expect("ddl");
    let mut s = brook_sql_tests::raw_session(&server.addr).await;
    let mut out = Vec::new();
    brook_sql_tests::push_message(&mut out, b'Q', b"COPY t FROM STDIN\0");
    brook_sql_tests::push_message(&mut out, b'd', b"1\n2\n");
    brook_sql_tests::push_message(&mut out, b'f', b"the client gave up\0");
    s.write_all(&out).await.expect("send");
    let mut reply = Vec::new();
    brook_sql_tests::read_until_ready(&mut s, &mut reply, 1).await;
    let text = String::from_utf8_lossy(&reply);
    assert!(text.contains("C57014\0"), "{text:?}");
    assert!(
        text.contains("COPY from stdin failed: the client gave up"),
        "{text:?}"
    );
    assert_eq!(count(&c, "t").await, 0);
}

/// A reader of a continuous query that vanishes (a push over COPY, a cursor on a dropped
/// connection) stops its query and frees its state; other sessions keep working.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn vanished_continuous_readers_stop_their_queries() {
    let server = BrookServer::start();
    let c = server.connect("brook").await;
    c.batch_execute(
        "CREATE STREAM ticks (sym text, px integer); INSERT INTO ticks VALUES ('a', 1)",
    )
    .await
    .expect("setup");
    {
        let (c2, task) = server.connect_vanishable("brook").await;
        let reader = tokio::spawn(async move {
            let stream = c2
                .copy_out(
                    "COPY (SELECT sym, sum(px) FROM ticks GROUP BY sym EMIT CHANGES) TO STDOUT",
                )
                .await;
            if let Ok(stream) = stream {
                futures::pin_mut!(stream);
                while let Some(Ok(_)) = futures::StreamExt::next(&mut stream).await {}
            }
        });
        let (c3, task3) = server.connect_vanishable("brook").await;
        c3.batch_execute("BEGIN; DECLARE cur CURSOR FOR SELECT sym FROM ticks")
            .await
            .expect("declare");
        // Both queries are running.
        let mut seen = 0;
        for _ in 0..100 {
            seen = running(&c).await;
            if seen == 2 {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
        assert_eq!(seen, 2);
        // Vanish: drop both connections without a word.
        task.abort();
        reader.abort();
        task3.abort();
    }
    // New rows make the push query write to its vanished client, which fails (TCP may take
    // a write or two to notice); a dropped cursor's query ends at once.
    let mut left = -1;
    let mut rows = 1;
    for _ in 0..200 {
        c.batch_execute("INSERT INTO ticks VALUES ('b', 2)")
            .await
            .expect("insert");
        rows += 1;
        left = running(&c).await;
        if left == 0 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    if left != 0 {
        let rows = c
            .query(
                "SELECT kind, name, rows_out FROM brook_continuous_queries()",
                &[],
            )
            .await
            .expect("list");
        let list: Vec<String> = rows
            .iter()
            .map(|r| {
                format!(
                    "{} {} {}",
                    r.get::<_, String>(0),
                    r.get::<_, String>(1),
                    r.get::<_, i64>(2)
                )
            })
            .collect();
        panic!("continuous queries outlived their readers: {list:?}");
    }
    assert_eq!(count(&c, "ticks").await, rows);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn protocol_garbage_gets_an_error_and_others_keep_working() {
    let server = BrookServer::start();
    let c = server.connect("brook").await;
    c.batch_execute("CREATE TABLE k (a int); INSERT INTO k VALUES (1)")
        .await
        .expect("setup");
    for garbage in [
        &b"\x00\x00\x00\x08\x04\xd2\x16\x2f"[..],
        b"GET / HTTP/1.1\r\n\r\n",
        &[0xffu8; 64][..],
        b"\x00\x00\x00\x03",
    ] {
        let mut s = tokio::net::TcpStream::connect(&server.addr)
            .await
            .expect("tcp");
        let _ = s.write_all(garbage).await;
        let mut buf = vec![0u8; 1024];
        let _ = tokio::time::timeout(std::time::Duration::from_secs(2), s.read(&mut buf)).await;
    }
    // a started session that then sends an unknown message type
    let mut s = tokio::net::TcpStream::connect(&server.addr)
        .await
        .expect("tcp");
    let mut startup = Vec::new();
    let params = b"user\0brook\0database\0brook\0\0";
    startup.extend_from_slice(&((8 + params.len()) as i32).to_be_bytes());
    startup.extend_from_slice(&196608i32.to_be_bytes());
    startup.extend_from_slice(params);
    s.write_all(&startup).await.expect("startup");
    let mut buf = vec![0u8; 4096];
    let _ = tokio::time::timeout(std::time::Duration::from_secs(2), s.read(&mut buf)).await;
    let _ = s.write_all(b"Z\x00\x00\x00\x04").await;
    let _ = tokio::time::timeout(std::time::Duration::from_secs(2), s.read(&mut buf)).await;
    drop(s);
    assert_eq!(count(&c, "k").await, 1, "the other session keeps working");
    let fresh = server.connect("brook").await;
    assert_eq!(count(&fresh, "k").await, 1, "new sessions still connect");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_database_is_3d000_and_databases_are_isolated() {
    let server = BrookServer::start();
    let err = tokio_postgres::connect(&server.conn_str("nosuchdb"), tokio_postgres::NoTls)
        .await
        .err()
        .expect("must fail");
    assert_eq!(sqlstate(&err), "3D000");
    let c = server.connect("brook").await;
    c.batch_execute("CREATE DATABASE other").await.expect("ddl");
    c.batch_execute("CREATE TABLE only_here (a int)")
        .await
        .expect("ddl");
    let o = server.connect("other").await;
    let err = o
        .query("SELECT * FROM only_here", &[])
        .await
        .expect_err("isolated");
    assert_eq!(sqlstate(&err), "42P01");
    o.batch_execute("CREATE TABLE only_here (b text); INSERT INTO only_here VALUES ('x')")
        .await
        .expect("same name elsewhere");
    assert_eq!(count(&c, "only_here").await, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_sessions_all_commit() {
    let server = BrookServer::start();
    let c = server.connect("brook").await;
    c.batch_execute("CREATE TABLE conc (w int, i int)")
        .await
        .expect("ddl");
    let mut tasks = Vec::new();
    for w in 0..8 {
        let conn = server.conn_str("brook");
        tasks.push(tokio::spawn(async move {
            let (c, conn) = tokio_postgres::connect(&conn, tokio_postgres::NoTls)
                .await
                .expect("connect");
            tokio::spawn(conn);
            for i in 0..25 {
                c.execute("INSERT INTO conc VALUES ($1, $2)", &[&w, &i])
                    .await
                    .expect("insert");
            }
        }));
    }
    for t in tasks {
        t.await.expect("task");
    }
    assert_eq!(count(&c, "conc").await, 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn password_turns_on_scram() {
    let dir = tempfile::tempdir().expect("tempdir");
    let server = BrookServer::start_on(dir.path(), &[("BROOK_PASSWORD", "s3cret")]).expect("start");
    let base = format!("host=127.0.0.1 port={} dbname=brook", server.port());
    let ok = tokio_postgres::connect(
        &format!("{base} user=brook password=s3cret"),
        tokio_postgres::NoTls,
    )
    .await;
    assert!(ok.is_ok(), "right password: {:?}", ok.err());
    let bad = tokio_postgres::connect(
        &format!("{base} user=brook password=wrong"),
        tokio_postgres::NoTls,
    )
    .await
    .err()
    .expect("wrong password");
    assert_eq!(sqlstate(&bad), "28P01");
    let none = tokio_postgres::connect(&format!("{base} user=brook"), tokio_postgres::NoTls).await;
    assert!(none.is_err(), "no password must not connect");
}

#[test]
fn non_loopback_without_password_is_refused() {
    let out = std::process::Command::new(brook_bin())
        .args(["serve", "--listen", "0.0.0.0:0", "--data-dir"])
        .arg(tempfile::tempdir().expect("tempdir").path())
        .env_remove("BROOK_PASSWORD")
        .output()
        .expect("run brook");
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("without a password"), "{err}");
}

/// `generate_series(1, $1)` with a `smallint` or `integer` parameter (psycopg binds a small
/// Python int as int2): DataFusion's table function took only 64-bit literals (42601).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn generate_series_takes_integer_parameters_of_any_width() {
    let server = BrookServer::start();
    let c = server.connect("brook").await;
    // Typed as the client declares them (as psycopg does).
    let series = c
        .prepare_typed(
            "SELECT count(*) FROM generate_series(1, $1) g(x)",
            &[tokio_postgres::types::Type::INT2],
        )
        .await
        .expect("prepare with an int2 parameter");
    let n: i64 = c
        .query_one(&series, &[&5i16])
        .await
        .expect("int2 parameter")
        .get(0);
    assert_eq!(n, 5);
    let range = c
        .prepare_typed(
            "SELECT count(*) FROM range($1, 10) g(x)",
            &[tokio_postgres::types::Type::INT4],
        )
        .await
        .expect("prepare with an int4 parameter");
    let n: i64 = c
        .query_one(&range, &[&4i32])
        .await
        .expect("int4 parameter")
        .get(0);
    assert_eq!(n, 6);
}

/// Binary COPY applies the same checks as text: a too-long varchar is 22001, PostgreSQL's
/// infinite timestamp 22008, a boolean byte other than 0/1 is refused, and a uuid's 16 bytes
/// are stored as the uuid (they were stored raw, or as garbage, or wrapped).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn binary_copy_checks_its_values() {
    fn file(fields: &[&[u8]]) -> Vec<u8> {
        let mut d = b"PGCOPY\n\xff\r\n\x00".to_vec();
        d.extend_from_slice(&[0u8; 8]);
        d.extend_from_slice(&(fields.len() as i16).to_be_bytes());
        for f in fields {
            d.extend_from_slice(&(f.len() as i32).to_be_bytes());
            d.extend_from_slice(f);
        }
        d.extend_from_slice(&(-1i16).to_be_bytes());
        d
    }
    let server = BrookServer::start();
    let c = server.connect("brook").await;
    c.batch_execute(
        "CREATE TABLE v (s varchar(3)); CREATE TABLE ts (t timestamp); CREATE TABLE b (x boolean); CREATE TABLE u (id uuid)",
    )
    .await
    .expect("ddl");
    let bin = "WITH (FORMAT binary)";
    let cases: [(&str, Vec<u8>, &str); 3] = [
        ("v", file(&[b"abcdef"]), "22001"),
        ("ts", file(&[&i64::MAX.to_be_bytes()]), "22008"),
        ("b", file(&[&[2u8]]), "22P04"),
    ];
    for (table, data, code) in cases {
        let err = copy_in(&c, &format!("COPY {table} FROM STDIN {bin}"), &data)
            .await
            .expect_err("refused");
        assert_eq!(sqlstate(&err), code, "{table}: {err:?}");
        assert_eq!(count(&c, table).await, 0);
    }
    let id: [u8; 16] = [
        0x12, 0x34, 0x56, 0x78, 0x9a, 0xbc, 0xde, 0xf0, 0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd,
        0xef,
    ];
    copy_in(&c, &format!("COPY u FROM STDIN {bin}"), &file(&[&id]))
        .await
        .expect("uuid");
    let text: String = c
        .query_one("SELECT CAST(id AS text) FROM u", &[])
        .await
        .expect("read")
        .get(0);
    assert_eq!(text, "12345678-9abc-def0-0123-456789abcdef");
}
