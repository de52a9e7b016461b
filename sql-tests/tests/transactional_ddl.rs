//! DDL in transaction blocks across sessions and crashes (one session's cases are in
//! `slt/transactional_ddl.slt`): after `kill -9` a committed block's DDL is there and an
//! open block's is undone, a dropped connection undoes its block's DDL, a table an open
//! block created does not exist for other sessions' writes, and a lost decisions file with
//! a block's DDL pending refuses to start.

use brook_sql_tests::{count, sqlstate, BrookServer};
use std::time::Duration;

/// The columns of `table`, in order.
async fn columns(c: &tokio_postgres::Client, table: &str) -> Vec<String> {
    c.query(
        "SELECT column_name::text FROM information_schema.columns WHERE table_name = $1 ORDER BY ordinal_position",
        &[&table],
    )
    .await
    .expect("columns")
    .iter()
    .map(|r| r.get(0))
    .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill9_keeps_committed_ddl_and_undoes_an_open_blocks() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut server = BrookServer::start_on(dir.path(), &[]).expect("start");
    {
        let c = server.connect("brook").await;
        c.batch_execute(
            "CREATE TABLE keep (a int); INSERT INTO keep VALUES (1), (2); \
             CREATE TABLE altered (a int); INSERT INTO altered VALUES (1)",
        )
        .await
        .expect("setup");
        c.batch_execute(
            "BEGIN; CREATE TABLE made (a int); INSERT INTO made VALUES (1); \
             ALTER TABLE altered ADD COLUMN b int DEFAULT 2; COMMIT",
        )
        .await
        .expect("committed block");
        // An open block, killed before its COMMIT: each of its changes is undone.
        c.batch_execute(
            "BEGIN; DROP TABLE keep; CREATE TABLE gone (a int); INSERT INTO gone VALUES (5); \
             ALTER TABLE altered ADD COLUMN c int; ALTER TABLE made RENAME TO made2",
        )
        .await
        .expect("open block");
        server.kill9();
    }
    server = BrookServer::start_on(dir.path(), &[]).expect("restart after kill -9");
    let c = server.connect("brook").await;
    assert_eq!(
        count(&c, "keep").await,
        2,
        "the dropped table and its rows are back"
    );
    assert_eq!(count(&c, "made").await, 1);
    assert_eq!(columns(&c, "altered").await, ["a", "b"]);
    let b: i32 = c
        .query_one("SELECT b FROM altered", &[])
        .await
        .expect("altered")
        .get(0);
    assert_eq!(b, 2);
    for missing in ["gone", "made2"] {
        let e = c
            .batch_execute(&format!("SELECT * FROM {missing}"))
            .await
            .expect_err(missing);
        assert_eq!(sqlstate(&e), "42P01", "{missing}: {e}");
    }
    // The relations take DDL and writes again.
    c.batch_execute(
        "BEGIN; DROP TABLE keep; CREATE TABLE gone (a int); COMMIT; INSERT INTO gone VALUES (1)",
    )
    .await
    .expect("ddl after restart");
    assert_eq!(count(&c, "gone").await, 1);
    // A second restart finds nothing left to settle.
    server.kill9();
    let server = BrookServer::start_on(dir.path(), &[]).expect("second restart");
    let c = server.connect("brook").await;
    assert_eq!(count(&c, "gone").await, 1);
    let catalog = std::fs::read_to_string(dir.path().join("catalog.json")).expect("catalog");
    assert!(!catalog.contains("\"pending\""), "{catalog}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dropped_connection_undoes_its_blocks_ddl() {
    let server = BrookServer::start();
    let c = server.connect("brook").await;
    c.batch_execute("CREATE TABLE t (i int); INSERT INTO t VALUES (1)")
        .await
        .expect("setup");
    let (gone, task) = server.connect_vanishable("brook").await;
    gone.batch_execute("BEGIN; DROP TABLE t; CREATE TABLE fresh (i int)")
        .await
        .expect("block");
    task.abort();
    drop(gone);
    // The server notices the closed connection and rolls its block back.
    let mut back = false;
    for _ in 0..100 {
        if c.batch_execute("SELECT * FROM t").await.is_ok() {
            back = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(back, "the dropped table came back");
    assert_eq!(count(&c, "t").await, 1);
    let e = c
        .batch_execute("SELECT * FROM fresh")
        .await
        .expect_err("fresh");
    assert_eq!(sqlstate(&e), "42P01", "{e}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_table_an_open_block_created_takes_no_other_sessions_writes() {
    let server = BrookServer::start();
    let a = server.connect("brook").await;
    let b = server.connect("brook").await;
    a.batch_execute("BEGIN; CREATE TABLE p (i int)")
        .await
        .expect("block");
    // Written by another session, the table would lose those committed rows to a
    // ROLLBACK of the block: it does not exist for them, as in PostgreSQL.
    for write in ["INSERT INTO p VALUES (1)", "COPY p FROM STDIN"] {
        let e = b.batch_execute(write).await.expect_err(write);
        assert_eq!(sqlstate(&e), "42P01", "{write}: {e}");
    }
    a.batch_execute("COMMIT").await.expect("commit");
    b.batch_execute("INSERT INTO p VALUES (1)")
        .await
        .expect("insert after the commit");
    assert_eq!(count(&a, "p").await, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lost_decisions_file_with_pending_ddl_refuses_to_start() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut server = BrookServer::start_on(dir.path(), &[]).expect("start");
    {
        let c = server.connect("brook").await;
        c.batch_execute("CREATE TABLE kept (a int)")
            .await
            .expect("ddl");
        c.batch_execute("BEGIN; DROP TABLE kept")
            .await
            .expect("open block");
        server.kill9();
    }
    let decisions = dir.path().join("transactions.log");
    let saved = std::fs::read(&decisions).expect("the decisions file");
    std::fs::remove_file(&decisions).expect("lose it");
    let refused = BrookServer::start_on(dir.path(), &[])
        .err()
        .expect("refuses to start");
    assert!(refused.contains("transactions.log is missing"), "{refused}");
    std::fs::write(&decisions, saved).expect("restore it");
    let server = BrookServer::start_on(dir.path(), &[]).expect("starts with the file back");
    let c = server.connect("brook").await;
    assert_eq!(
        count(&c, "kept").await,
        0,
        "the open block's DROP is undone"
    );
}
