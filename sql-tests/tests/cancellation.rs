//! A cancelled statement stops computing, not only answering: a CancelRequest or
//! `statement_timeout` reaches work that runs inside one poll of an operator (a user
//! aggregate over a moving window frame), the query behind a cursor that a FETCH drives,
//! and a COPY FROM STDIN whose data is still arriving (which then keeps none of its rows).
//! The checks read the server's CPU time from /proc: after the cancel it must go idle.

use brook_sql_tests::{count, sqlstate, BrookServer};
use futures::SinkExt;
use std::io::Cursor;
use std::time::Duration;

/// CPU seconds the process has used (user + system), from /proc/<pid>/stat.
fn cpu_seconds(pid: u32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).expect("proc stat");
    // Fields after the command name (which is in parentheses and may hold spaces).
    let after = stat.rsplit_once(')').expect("stat format").1;
    let fields: Vec<&str> = after.split_whitespace().collect();
    // utime and stime: fields 14 and 15 of the line, 12 and 13 after the name.
    let ticks: f64 =
        fields[11].parse::<f64>().expect("utime") + fields[12].parse::<f64>().expect("stime");
    ticks / 100.0
}

/// The server's CPU seconds over the next `window`, once the statement was answered.
async fn cpu_over(server: &BrookServer, window: Duration) -> f64 {
    let pid = server.pid().expect("server pid");
    let before = cpu_seconds(pid);
    tokio::time::sleep(window).await;
    cpu_seconds(pid) - before
}

/// A table of 40,000 rows and a user aggregate without an inverse: over a frame of 3,000
/// rows it folds each frame again (minutes of work in one poll of the window operator).
async fn slow_window_setup(c: &tokio_postgres::Client) {
    c.batch_execute(
        "CREATE TABLE big AS SELECT g AS v FROM generate_series(1, 40000) g;
         CREATE FUNCTION addi(s bigint, v bigint) RETURNS bigint LANGUAGE sql AS 'SELECT s + v';
         CREATE AGGREGATE mysum(bigint) (SFUNC = addi, STYPE = bigint, INITCOND = '0');",
    )
    .await
    .expect("setup");
}

const SLOW_WINDOW: &str = "SELECT max(s) FROM (SELECT mysum(v) OVER (ORDER BY v ROWS BETWEEN 3000 PRECEDING AND CURRENT ROW) s FROM big) x";

/// The server is idle again within `settle` after a cancel: it used at most a fifth of a
/// core over the two seconds after that.
async fn goes_idle(server: &BrookServer, what: &str) {
    tokio::time::sleep(Duration::from_millis(500)).await;
    let used = cpu_over(server, Duration::from_secs(2)).await;
    assert!(
        used < 0.4,
        "{what}: the server computed on for {used:.2} CPU seconds of 2 s after the cancel"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_timed_out_moving_frame_aggregate_stops_computing() {
    let server = BrookServer::start();
    let c = server.connect("brook").await;
    slow_window_setup(&c).await;
    c.batch_execute("SET statement_timeout = '1s'")
        .await
        .expect("set");
    let err = c.query(SLOW_WINDOW, &[]).await.expect_err("times out");
    assert_eq!(sqlstate(&err), "57014", "{err:?}");
    goes_idle(&server, "a query").await;
    let one: i32 = c.query_one("SELECT 1", &[]).await.expect("served").get(0);
    assert_eq!(one, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancelled_fetch_stops_its_cursor_query_and_closes_the_cursor() {
    let server = BrookServer::start();
    let c = server.connect("brook").await;
    slow_window_setup(&c).await;
    c.batch_execute(&format!("DECLARE c CURSOR WITH HOLD FOR {SLOW_WINDOW}"))
        .await
        .expect("declare");
    c.batch_execute("SET statement_timeout = '1s'")
        .await
        .expect("set");
    let err = c.query("FETCH 1 FROM c", &[]).await.expect_err("times out");
    assert_eq!(sqlstate(&err), "57014", "{err:?}");
    goes_idle(&server, "a cursor's FETCH").await;
    // The query stopped part way: the cursor has failed (55000, PostgreSQL's "portal
    // cannot be run") until it is closed.
    let err = c.query("FETCH 1 FROM c", &[]).await.expect_err("failed");
    assert_eq!(sqlstate(&err), "55000", "{err:?}");
    c.batch_execute("CLOSE c")
        .await
        .expect("a failed cursor closes");
}

/// `COPY t FROM STDIN` begun, with `data` sent.
async fn copy_started(
    c: &tokio_postgres::Client,
    data: &[u8],
) -> std::pin::Pin<Box<tokio_postgres::CopyInSink<Cursor<Vec<u8>>>>> {
    let mut sink = Box::pin(
        c.copy_in::<_, Cursor<Vec<u8>>>("COPY t FROM STDIN")
            .await
            .expect("copy starts"),
    );
    sink.send(Cursor::new(data.to_vec())).await.expect("send");
    sink
}

/// A cursor's query may go on in a task of its plan between FETCHes (the first row of a
/// UNION ALL came at once, the rest computes): closing the cursor stops it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn closing_a_cursor_stops_its_query() {
    let server = BrookServer::start();
    let c = server.connect("brook").await;
    slow_window_setup(&c).await;
    c.batch_execute(&format!(
        "DECLARE c CURSOR WITH HOLD FOR SELECT 0::bigint AS a UNION ALL {SLOW_WINDOW}"
    ))
    .await
    .expect("declare");
    c.batch_execute("SET statement_timeout = '2s'")
        .await
        .expect("set");
    // The first row, or a timeout: either way the cursor's query is computing.
    let _ = c.query("FETCH 1 FROM c", &[]).await;
    c.batch_execute("SET statement_timeout = 0; CLOSE c")
        .await
        .expect("close");
    goes_idle(&server, "a closed cursor").await;
}

/// An Execute that resumes a suspended portal (a row limit, as pgjdbc's `setFetchSize`)
/// is cancelled by its own statement timeout, and the portal's query stops (it ran on for
/// minutes, and the Execute answered only then).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_resumed_portal_times_out() {
    let server = BrookServer::start();
    let mut c = server.connect("brook").await;
    slow_window_setup(&c).await;
    c.batch_execute("SET statement_timeout = '3s'")
        .await
        .expect("set");
    let tx = c.transaction().await.expect("begin");
    let query = tx
        .prepare(&format!("SELECT 0::bigint AS a UNION ALL {SLOW_WINDOW}"))
        .await
        .expect("prepare");
    let portal = tx.bind(&query, &[]).await.expect("bind");
    let first = tx.query_portal(&portal, 1).await.expect("the first row");
    assert_eq!(first.len(), 1);
    let err = tx
        .query_portal(&portal, 1)
        .await
        .expect_err("the resumed Execute times out");
    assert_eq!(sqlstate(&err), "57014", "{err:?}");
    goes_idle(&server, "a resumed portal").await;
}

/// A FETCH from a continuous cursor that was cancelled may have taken rows it did not
/// send: the cursor has failed (55000) rather than go on without them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancelled_fetch_fails_a_continuous_cursor() {
    let server = BrookServer::start();
    let c = server.connect("brook").await;
    c.batch_execute(
        "CREATE STREAM s (x int); DECLARE c CURSOR WITH HOLD FOR SELECT x FROM s;
         SET brook.fetch_timeout = '5s'; SET statement_timeout = '300ms'",
    )
    .await
    .expect("setup");
    let err = c
        .query("FETCH 10 FROM c", &[])
        .await
        .expect_err("times out");
    assert_eq!(sqlstate(&err), "57014", "{err:?}");
    c.batch_execute("SET statement_timeout = 0; INSERT INTO s VALUES (1)")
        .await
        .expect("insert");
    let err = c.query("FETCH 10 FROM c", &[]).await.expect_err("failed");
    assert_eq!(sqlstate(&err), "55000", "{err:?}");
    c.batch_execute("CLOSE c").await.expect("close");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancelled_copy_from_stdin_keeps_none_of_its_rows() {
    let server = BrookServer::start();
    let c = server.connect("brook").await;
    c.batch_execute("CREATE TABLE t (x int)")
        .await
        .expect("ddl");
    let mut sink = copy_started(&c, b"1\n2\n").await;
    c.cancel_token()
        .cancel_query(tokio_postgres::NoTls)
        .await
        .expect("cancel request");
    tokio::time::sleep(Duration::from_millis(200)).await;
    let sent = sink.send(Cursor::new(b"3\n".to_vec())).await;
    let err = match sent {
        Err(e) => e,
        Ok(()) => sink.as_mut().finish().await.expect_err("cancelled"),
    };
    assert_eq!(sqlstate(&err), "57014", "{err:?}");
    assert_eq!(count(&c, "t").await, 0);
    // The connection goes on, and the next COPY is not cancelled.
    assert_eq!(
        brook_sql_tests::copy_in(&c, "COPY t FROM STDIN", b"4\n")
            .await
            .expect("copy"),
        1
    );
    assert_eq!(count(&c, "t").await, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn statement_timeout_covers_a_copy_whose_data_is_slow() {
    let server = BrookServer::start();
    let c = server.connect("brook").await;
    c.batch_execute("CREATE TABLE t (x int); SET statement_timeout = '500ms'")
        .await
        .expect("ddl");
    let mut sink = copy_started(&c, b"1\n").await;
    tokio::time::sleep(Duration::from_millis(900)).await;
    let err = sink.as_mut().finish().await.expect_err("timed out");
    assert_eq!(sqlstate(&err), "57014", "{err:?}");
    let msg = err
        .as_db_error()
        .map(|d| d.message().to_string())
        .unwrap_or_default();
    assert!(msg.contains("statement timeout"), "{msg}");
    assert_eq!(count(&c, "t").await, 0);
}
