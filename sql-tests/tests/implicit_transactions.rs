//! Implicit transactions, as PostgreSQL runs them: a query string of several statements,
//! and the extended protocol's statements up to Sync, commit together or not at all,
//! without BEGIN. (Multi-statement strings cannot be slt records: the suite also runs each
//! record through the extended protocol, where one statement is one Parse.)

use brook_sql_tests::{
    copy_in, count, push_message, raw_session, read_until_ready, sqlstate, BrookServer,
};
use tokio::io::AsyncWriteExt;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_query_string_commits_all_its_statements_or_none() {
    let server = BrookServer::start();
    let c = server.connect("brook").await;
    c.batch_execute("CREATE TABLE t (id int PRIMARY KEY, v text)")
        .await
        .expect("ddl");

    let e = c
        .batch_execute("INSERT INTO t VALUES (1, 'one'); INSERT INTO t VALUES ('x', 'bad')")
        .await
        .expect_err("the second statement fails");
    assert_eq!(sqlstate(&e), "22P02");
    assert_eq!(count(&c, "t").await, 0, "the first INSERT rolled back too");

    let e = c
        .batch_execute("INSERT INTO t VALUES (2, 'two'); INSERT INTO t VALUES (2, 'again')")
        .await
        .expect_err("duplicate key");
    assert_eq!(sqlstate(&e), "23505", "the second INSERT sees the first");
    assert_eq!(count(&c, "t").await, 0);

    // The statements read each other's writes; the rows commit at the end.
    let rows = c
        .simple_query(
            "INSERT INTO t VALUES (3, 'three'); UPDATE t SET v = 'drei' WHERE id = 3; \
             SELECT v FROM t WHERE id = 3",
        )
        .await
        .expect("string");
    let v = rows.iter().find_map(|m| match m {
        tokio_postgres::SimpleQueryMessage::Row(r) => r.get(0).map(str::to_string),
        _ => None,
    });
    assert_eq!(v.as_deref(), Some("drei"));
    let other = server.connect("brook").await;
    assert_eq!(count(&other, "t").await, 1, "committed at the string's end");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ddl_in_a_query_string_sees_the_writes_before_it() {
    let server = BrookServer::start();
    let c = server.connect("brook").await;
    let rows = c
        .simple_query(
            "CREATE TABLE u (id int); INSERT INTO u VALUES (1), (2); \
             CREATE MATERIALIZED VIEW n AS SELECT count(*) AS n FROM u; SELECT n FROM n",
        )
        .await
        .expect("string");
    let n = rows.iter().find_map(|m| match m {
        tokio_postgres::SimpleQueryMessage::Row(r) => r.get(0).map(str::to_string),
        _ => None,
    });
    assert_eq!(
        n.as_deref(),
        Some("2"),
        "the view counts the rows before it"
    );
    // ALTER TABLE of a table the string wrote: not refused as in a BEGIN block.
    c.batch_execute(
        "INSERT INTO u VALUES (3); ALTER TABLE u ADD COLUMN w int; INSERT INTO u VALUES (4, 4)",
    )
    .await
    .expect("alter after insert");
    assert_eq!(count(&c, "u").await, 4);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn begin_commit_and_settings_in_a_query_string_act_as_in_postgresql() {
    let server = BrookServer::start();
    let c = server.connect("brook").await;
    let other = server.connect("brook").await;
    c.batch_execute("CREATE TABLE t (i int)")
        .await
        .expect("ddl");

    // BEGIN makes the statements before it part of its block.
    c.batch_execute("INSERT INTO t VALUES (1); BEGIN; INSERT INTO t VALUES (2)")
        .await
        .expect("begin in the middle");
    assert_eq!(count(&other, "t").await, 0, "the block holds both rows");
    c.batch_execute("ROLLBACK").await.expect("rollback");
    assert_eq!(
        count(&c, "t").await,
        0,
        "ROLLBACK undid the row before BEGIN too"
    );

    // COMMIT ends the implicit transaction; what follows is another one.
    let e = c
        .batch_execute("INSERT INTO t VALUES (3); COMMIT; INSERT INTO t VALUES (4); SELECT 1/0")
        .await
        .expect_err("division by zero");
    assert_eq!(sqlstate(&e), "22012");
    let rows: Vec<i32> = c
        .query("SELECT i FROM t", &[])
        .await
        .expect("read")
        .iter()
        .map(|r| r.get(0))
        .collect();
    assert_eq!(
        rows,
        vec![3],
        "the row before COMMIT stays, the one after does not"
    );

    // A failed string undoes its SETs; SAVEPOINT needs a block (25P01).
    c.batch_execute("SET lock_timeout = '7s'; SELECT 1/0")
        .await
        .expect_err("fails");
    let v: String = c
        .query_one("SHOW lock_timeout", &[])
        .await
        .expect("show")
        .get(0);
    assert_eq!(v, "0");
    let e = c
        .batch_execute("INSERT INTO t VALUES (5); SAVEPOINT s")
        .await
        .expect_err("savepoint without a block");
    assert_eq!(sqlstate(&e), "25P01");
    assert_eq!(count(&c, "t").await, 1);

    // A cursor declared in a string is the session's, as one declared alone; one declared
    // in a string that fails closes with it (its rows were the string's own writes).
    c.batch_execute("DECLARE k CURSOR FOR SELECT i FROM t; FETCH 1 FROM k")
        .await
        .expect("declare and fetch");
    c.batch_execute("CLOSE k")
        .await
        .expect("the cursor is still open");
    c.batch_execute(
        "INSERT INTO t VALUES (500); DECLARE gone CURSOR WITH HOLD FOR SELECT i FROM t; SELECT 1/0",
    )
    .await
    .expect_err("fails");
    let e = c
        .batch_execute("FETCH ALL FROM gone")
        .await
        .expect_err("closed with the failed string");
    assert_eq!(sqlstate(&e), "34000");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_statement_after_writes_commits_none_of_them() {
    let server = BrookServer::start();
    let c = server.connect("brook").await;
    c.batch_execute("CREATE TABLE t (i int)")
        .await
        .expect("ddl");
    // DDL that fails, a no-op, and an unsupported statement: the writes before them wait
    // for the string's end, and roll back with it.
    for tail in [
        "CREATE TABLE t (i int)",
        "DROP TABLE IF EXISTS nosuch; SELECT 1/0",
        "ALTER TABLE nosuch ADD COLUMN x int",
        "CREATE INDEX ON t (nocol)",
    ] {
        c.batch_execute(&format!("INSERT INTO t VALUES (1); {tail}"))
            .await
            .expect_err(tail);
        assert_eq!(count(&c, "t").await, 0, "after {tail}");
    }
    // Statements after COPY FROM STDIN would run after its data: refused, nothing runs.
    let e = c
        .batch_execute("INSERT INTO t VALUES (1); COPY t FROM STDIN; SELECT 1")
        .await
        .expect_err("statements after COPY");
    assert_eq!(sqlstate(&e), "0A000");
    assert_eq!(count(&c, "t").await, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn copy_in_a_block_counts_its_own_rows() {
    let server = BrookServer::start();
    let c = server.connect("brook").await;
    c.batch_execute("CREATE TABLE t (i int); BEGIN; INSERT INTO t VALUES (1), (2)")
        .await
        .expect("block");
    let n = copy_in(&c, "COPY t FROM STDIN", b"3\n")
        .await
        .expect("copy");
    assert_eq!(n, 1, "the COPY's tag counts its rows, not the block's");
    c.batch_execute("COMMIT").await.expect("commit");
    assert_eq!(count(&c, "t").await, 3);
}

/// CREATE and DROP DATABASE and DISCARD ALL run only as transactions of their own, as in
/// PostgreSQL: not in a query string of several statements (25001); alone they do.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn create_database_is_refused_in_a_query_string_of_several() {
    let server = BrookServer::start();
    let c = server.connect("brook").await;
    c.batch_execute("CREATE TABLE t (i int)")
        .await
        .expect("ddl");
    let err = c
        .batch_execute("INSERT INTO t VALUES (1); CREATE DATABASE d2")
        .await
        .expect_err("in a string of several");
    assert_eq!(sqlstate(&err), "25001", "{err:?}");
    assert_eq!(count(&c, "t").await, 0, "the string rolled back");
    let err = c
        .batch_execute("CREATE DATABASE d2; SELECT 1")
        .await
        .expect_err("first of several");
    assert_eq!(sqlstate(&err), "25001", "{err:?}");
    c.batch_execute("CREATE DATABASE d2").await.expect("alone");
    // The extended protocol's one statement up to Sync is a transaction of its own.
    c.execute("DROP DATABASE d2", &[])
        .await
        .expect("alone, extended");
    let err = c
        .batch_execute("SELECT 1; DISCARD ALL")
        .await
        .expect_err("DISCARD ALL in a string of several");
    assert_eq!(sqlstate(&err), "25001", "{err:?}");
    c.batch_execute("DISCARD ALL").await.expect("alone");
}

/// A Parse/Bind/Execute of `sql` (unnamed statement and portal, no parameters).
fn execute_message(sql: &str) -> Vec<u8> {
    let mut m = Vec::new();
    let mut parse = vec![0u8];
    parse.extend_from_slice(sql.as_bytes());
    parse.extend_from_slice(&[0, 0, 0]);
    push_message(&mut m, b'P', &parse);
    push_message(&mut m, b'B', &[0, 0, 0, 0, 0, 0, 0, 0]);
    push_message(&mut m, b'E', &[0, 0, 0, 0, 0]);
    m
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_extended_protocol_commits_at_sync() {
    let server = BrookServer::start();
    let c = server.connect("brook").await;
    c.batch_execute("CREATE TABLE t (i int)")
        .await
        .expect("ddl");
    let mut s = raw_session(&server.addr).await;

    // Two INSERTs and a failing one before Sync: none commits (a pipelined batch).
    let mut batch = execute_message("INSERT INTO t VALUES (1)");
    batch.extend(execute_message("INSERT INTO t VALUES (2)"));
    batch.extend(execute_message("INSERT INTO t VALUES (1/0)"));
    push_message(&mut batch, b'S', &[]);
    s.write_all(&batch).await.expect("send");
    let mut reply = Vec::new();
    read_until_ready(&mut s, &mut reply, 1).await;
    assert!(
        reply.windows(5).any(|w| w == b"22012"),
        "the third INSERT failed"
    );
    assert_eq!(count(&c, "t").await, 0, "the batch rolled back whole");

    // Without an error, the batch commits at Sync.
    let mut batch = execute_message("INSERT INTO t VALUES (1)");
    batch.extend(execute_message("INSERT INTO t VALUES (2)"));
    s.write_all(&batch).await.expect("send");
    let mut reply = Vec::new();
    s.write_all(&[b'H', 0, 0, 0, 4]).await.expect("flush");
    while reply.windows(6).filter(|w| *w == b"INSERT").count() < 2 {
        use tokio::io::AsyncReadExt;
        let mut buf = [0u8; 4096];
        let n = s.read(&mut buf).await.expect("read");
        assert!(n > 0, "closed");
        reply.extend_from_slice(&buf[..n]);
    }
    assert_eq!(count(&c, "t").await, 0, "not before Sync");
    let mut sync = Vec::new();
    push_message(&mut sync, b'S', &[]);
    s.write_all(&sync).await.expect("sync");
    read_until_ready(&mut s, &mut reply, 1).await;
    assert_eq!(count(&c, "t").await, 2, "both at Sync");
}
