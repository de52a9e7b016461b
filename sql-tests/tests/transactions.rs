//! Transaction blocks across sessions and crashes: other sessions see a block's rows only
//! after its COMMIT, a writer of the same table waits for it (and `lock_timeout` bounds the
//! wait), two blocks waiting for each other end with 40P01, a dropped connection rolls its
//! block back, and after `kill -9` a committed block is there whole and an open one is not.

use brook_sql_tests::{brook_bin, count, sqlstate, BrookServer};
use std::time::{Duration, Instant};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn other_sessions_see_a_block_only_after_commit_and_wait_to_write() {
    let server = BrookServer::start();
    let a = server.connect("brook").await;
    let b = server.connect("brook").await;
    a.batch_execute("CREATE TABLE t (id int PRIMARY KEY, v text); INSERT INTO t VALUES (1, 'one')")
        .await
        .expect("setup");
    a.batch_execute("BEGIN; INSERT INTO t VALUES (2, 'two'); UPDATE t SET v = 'uno' WHERE id = 1")
        .await
        .expect("block");
    assert_eq!(
        count(&b, "t").await,
        1,
        "an open block's INSERT is invisible"
    );
    let v: String = b
        .query_one("SELECT v FROM t WHERE id = 1", &[])
        .await
        .expect("read")
        .get(0);
    assert_eq!(v, "one", "an open block's UPDATE is invisible");

    // A writer of the same table waits for the block; lock_timeout ends the wait with 55P03.
    b.batch_execute("SET lock_timeout = '300ms'")
        .await
        .expect("set");
    let e = b
        .execute("INSERT INTO t VALUES (3, 'three')", &[])
        .await
        .expect_err("waits past lock_timeout");
    assert_eq!(sqlstate(&e), "55P03");
    b.batch_execute("SET lock_timeout = 0").await.expect("set");
    let waiter = tokio::spawn(async move {
        let started = Instant::now();
        b.execute("INSERT INTO t VALUES (3, 'three')", &[])
            .await
            .expect("insert after the block ends");
        (b, started.elapsed())
    });
    tokio::time::sleep(Duration::from_millis(400)).await;
    a.batch_execute("COMMIT").await.expect("commit");
    let (b, waited) = waiter.await.expect("waiter");
    assert!(
        waited >= Duration::from_millis(300),
        "the writer did not wait ({waited:?})"
    );
    let rows: Vec<(i32, String)> = b
        .query("SELECT id, v FROM t ORDER BY id", &[])
        .await
        .expect("read")
        .iter()
        .map(|r| (r.get(0), r.get(1)))
        .collect();
    assert_eq!(
        rows,
        vec![(1, "uno".into()), (2, "two".into()), (3, "three".into())]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_blocks_waiting_for_each_other_end_in_a_deadlock_error() {
    let server = BrookServer::start();
    let a = server.connect("brook").await;
    let b = server.connect("brook").await;
    a.batch_execute("CREATE TABLE x (i int); CREATE TABLE y (i int)")
        .await
        .expect("setup");
    a.batch_execute("BEGIN; INSERT INTO x VALUES (1)")
        .await
        .expect("a");
    b.batch_execute("BEGIN; INSERT INTO y VALUES (2)")
        .await
        .expect("b");
    let a_side = tokio::spawn(async move {
        let r = a.batch_execute("INSERT INTO y VALUES (1)").await;
        (a, r)
    });
    tokio::time::sleep(Duration::from_millis(200)).await;
    let b_result = b.batch_execute("INSERT INTO x VALUES (2)").await;
    // The victim's block is aborted at once, so the other side goes on.
    let (a, a_result) = tokio::time::timeout(Duration::from_secs(20), a_side)
        .await
        .expect("no deadlock left standing")
        .expect("task");
    let failed: Vec<String> = [&a_result, &b_result]
        .iter()
        .filter_map(|r| r.as_ref().err().map(sqlstate))
        .collect();
    assert_eq!(
        failed,
        vec!["40P01".to_string()],
        "exactly one side is the victim"
    );
    a.batch_execute("COMMIT").await.expect("commit a");
    b.batch_execute("COMMIT").await.expect("commit b");
    let c = server.connect("brook").await;
    let total = count(&c, "x").await + count(&c, "y").await;
    assert_eq!(total, 2, "the survivor's two rows, none of the victim's");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dropped_connection_rolls_its_block_back() {
    let server = BrookServer::start();
    let c = server.connect("brook").await;
    c.batch_execute("CREATE TABLE t (i int)")
        .await
        .expect("ddl");
    let (gone, task) = server.connect_vanishable("brook").await;
    gone.batch_execute("BEGIN; INSERT INTO t VALUES (1), (2)")
        .await
        .expect("block");
    task.abort();
    drop(gone);
    // The lock goes with the connection: this write does not wait forever.
    tokio::time::timeout(
        Duration::from_secs(20),
        c.batch_execute("INSERT INTO t VALUES (3)"),
    )
    .await
    .expect("the dropped block let its lock go")
    .expect("insert");
    assert_eq!(count(&c, "t").await, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill9_keeps_committed_blocks_whole_and_drops_open_ones() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut server = BrookServer::start_on(dir.path(), &[]).expect("start");
    {
        let c = server.connect("brook").await;
        c.batch_execute(
            "CREATE TABLE orders (id int PRIMARY KEY, state text); CREATE TABLE ledger (id int, amount int)",
        )
        .await
        .expect("ddl");
        // A committed block over two tables, rewriting one after inserting into it.
        c.batch_execute(
            "BEGIN; INSERT INTO orders VALUES (1, 'new'), (2, 'new'); \
             UPDATE orders SET state = 'paid' WHERE id = 1; \
             INSERT INTO ledger VALUES (1, 100); COMMIT",
        )
        .await
        .expect("committed block");
        // An open block, killed before its COMMIT.
        c.batch_execute(
            "BEGIN; INSERT INTO orders VALUES (3, 'new'); DELETE FROM orders WHERE id = 2; \
             INSERT INTO ledger VALUES (3, 300)",
        )
        .await
        .expect("open block");
        server.kill9();
    }
    server = BrookServer::start_on(dir.path(), &[]).expect("restart after kill -9");
    let c = server.connect("brook").await;
    let orders: Vec<(i32, String)> = c
        .query("SELECT id, state FROM orders ORDER BY id", &[])
        .await
        .expect("orders")
        .iter()
        .map(|r| (r.get(0), r.get(1)))
        .collect();
    assert_eq!(orders, vec![(1, "paid".into()), (2, "new".into())]);
    assert_eq!(count(&c, "ledger").await, 1);
    // The tables take writes again (the open block's locks and log records are gone).
    c.batch_execute("BEGIN; INSERT INTO orders VALUES (3, 'new'); COMMIT")
        .await
        .expect("write after restart");
    assert_eq!(count(&c, "orders").await, 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_commit_ends_the_block() {
    let server = BrookServer::start();
    let a = server.connect("brook").await;
    let b = server.connect("brook").await;
    a.batch_execute("CREATE TABLE e1 (id int PRIMARY KEY); CREATE TABLE e2 (id int)")
        .await
        .expect("ddl");
    a.batch_execute("BEGIN; INSERT INTO e1 VALUES (1); INSERT INTO e2 VALUES (1)")
        .await
        .expect("block");
    b.batch_execute("DROP TABLE e1").await.expect("drop");
    let e = a
        .batch_execute("COMMIT")
        .await
        .expect_err("the commit fails");
    assert_eq!(sqlstate(&e), "40001", "{e}");
    // The block is over (rolled back): the session is idle, not in a failed transaction.
    a.batch_execute("SELECT 1")
        .await
        .expect("idle after a failed COMMIT");
    assert_eq!(count(&a, "e2").await, 0, "nothing of the block committed");
    // Over the extended protocol too.
    a.batch_execute("CREATE TABLE e3 (id int)")
        .await
        .expect("ddl");
    a.execute("BEGIN", &[]).await.expect("begin");
    a.execute("INSERT INTO e3 VALUES ($1)", &[&1i32])
        .await
        .expect("insert");
    b.batch_execute("DROP TABLE e3").await.expect("drop");
    let e = a
        .execute("COMMIT", &[])
        .await
        .expect_err("the commit fails");
    assert_eq!(sqlstate(&e), "40001", "{e}");
    a.execute("SELECT 1", &[])
        .await
        .expect("idle after a failed COMMIT");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lost_decisions_file_refuses_to_start_instead_of_undoing_commits() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut server = BrookServer::start_on(dir.path(), &[]).expect("start");
    {
        let c = server.connect("brook").await;
        c.batch_execute(
            "CREATE TABLE a (i int); CREATE TABLE b (i int); \
             BEGIN; INSERT INTO a VALUES (1); INSERT INTO b VALUES (1); COMMIT",
        )
        .await
        .expect("a block over two tables");
    }
    server.kill9();
    let decisions = dir.path().join("transactions.log");
    let saved = std::fs::read(&decisions).expect("the decisions file");
    std::fs::remove_file(&decisions).expect("lose it");
    let refused = BrookServer::start_on(dir.path(), &[])
        .err()
        .expect("refuses to start");
    assert!(refused.contains("transactions.log is missing"), "{refused}");
    let repair = std::process::Command::new(brook_bin())
        .args(["repair", "--data-dir"])
        .arg(dir.path())
        .output()
        .expect("brook repair");
    let report = String::from_utf8_lossy(&repair.stdout);
    assert!(
        !repair.status.success(),
        "repair calls it a problem: {report}"
    );
    assert!(report.contains("transactions.log is missing"), "{report}");
    // An emptied file is a lost one too (it would undo every such commit).
    std::fs::write(&decisions, b"").expect("empty it");
    let refused = BrookServer::start_on(dir.path(), &[])
        .err()
        .expect("refuses to start");
    assert!(refused.contains("transactions.log is missing"), "{refused}");
    std::fs::write(&decisions, saved).expect("restore it");
    let server = BrookServer::start_on(dir.path(), &[]).expect("starts with the file back");
    let c = server.connect("brook").await;
    assert_eq!(count(&c, "a").await + count(&c, "b").await, 2);
}
