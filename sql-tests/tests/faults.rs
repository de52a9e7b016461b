//! Damaged data directories: a flipped byte before later commits, a lost catalog, a lost
//! log. The server refuses to open them (naming the file and what to do) and deletes
//! nothing; `brook repair` reports, and fixes only what its options say.

use brook_sql_tests::{brook_bin, count, BrookServer};
use std::path::Path;
use std::process::Command;

/// A data directory with table `t` (relation 1) holding three commits of three rows.
async fn three_commits(dir: &Path) {
    let mut server = BrookServer::start_on(dir, &[]).expect("start");
    let c = server.connect("brook").await;
    c.batch_execute("CREATE TABLE t (id int, note text)")
        .await
        .expect("ddl");
    for i in 0..3 {
        c.batch_execute(&format!(
            "INSERT INTO t VALUES ({0}, 'a'), ({0} + 1, 'b'), ({0} + 2, 'c')",
            i * 10
        ))
        .await
        .expect("insert");
    }
    server.kill9();
}

fn repair(dir: &Path, args: &[&str]) -> (bool, String) {
    let out = Command::new(brook_bin())
        .arg("repair")
        .arg("--data-dir")
        .arg(dir)
        .args(args)
        .output()
        .expect("run brook repair");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), text)
}

/// One flipped byte inside the first commit's batch: recovery used to cut the log there,
/// deleting the two later commits. Now the server refuses, names file and offset, and the
/// file keeps every byte; `brook repair --salvage` keeps the commits it can read.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flipped_byte_before_later_commits_refuses_and_salvage_keeps_them() {
    let dir = tempfile::tempdir().expect("tempdir");
    three_commits(dir.path()).await;
    let log = dir.path().join("relations/1/data.log");
    let mut bytes = std::fs::read(&log).expect("read log");
    let len = bytes.len();
    bytes[40] ^= 0x5a; // inside the first batch record's payload
    std::fs::write(&log, &bytes).expect("write log");

    let err = BrookServer::start_on(dir.path(), &[])
        .err()
        .expect("a damaged log must not open");
    assert!(err.contains("damaged at byte offset 0"), "{err}");
    assert!(err.contains("brook repair --salvage"), "{err}");
    assert_eq!(
        std::fs::metadata(&log).expect("log").len() as usize,
        len,
        "nothing cut"
    );

    let (ok, report) = repair(dir.path(), &[]);
    assert!(!ok, "repair without options reports a problem: {report}");
    assert!(
        report.contains("brook.public.t (relations/1): damaged at byte 0"),
        "{report}"
    );

    let (ok, report) = repair(dir.path(), &["--salvage"]);
    assert!(ok, "{report}");
    assert!(dir.path().join("relations/1/data.log.damaged").exists());
    let server = BrookServer::start_on(dir.path(), &[]).expect("opens after salvage");
    let c = server.connect("brook").await;
    let ids: Vec<i32> = c
        .query("SELECT id FROM t ORDER BY id", &[])
        .await
        .expect("select")
        .iter()
        .map(|r| r.get(0))
        .collect();
    assert_eq!(
        ids,
        vec![10, 11, 12, 20, 21, 22],
        "the two later commits are kept"
    );
}

/// Garbage after the last commit is a torn tail: cut, every commit kept.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_torn_tail_is_still_cut_at_the_last_commit() {
    let dir = tempfile::tempdir().expect("tempdir");
    three_commits(dir.path()).await;
    let log = dir.path().join("relations/1/data.log");
    let mut bytes = std::fs::read(&log).expect("read log");
    bytes.extend_from_slice(b"BRK half a record");
    std::fs::write(&log, &bytes).expect("write log");
    let server = BrookServer::start_on(dir.path(), &[]).expect("a torn tail opens");
    assert_eq!(count(&server.connect("brook").await, "t").await, 9);
}

/// A lost catalog.json used to start an empty server that deleted every relation directory
/// as an orphan.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_catalog_refuses_and_keeps_the_data() {
    let dir = tempfile::tempdir().expect("tempdir");
    three_commits(dir.path()).await;
    std::fs::remove_file(dir.path().join("catalog.json")).expect("rm catalog");
    let err = BrookServer::start_on(dir.path(), &[])
        .err()
        .expect("must refuse");
    assert!(err.contains("catalog.json is missing"), "{err}");
    assert!(dir.path().join("relations/1/data.log").exists());
}

/// A lost data.log used to be recreated empty; now it refuses, and `--forget-missing`
/// drops the relation by the user's decision.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_log_refuses_until_the_user_forgets_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    three_commits(dir.path()).await;
    std::fs::remove_file(dir.path().join("relations/1/data.log")).expect("rm log");
    let err = BrookServer::start_on(dir.path(), &[])
        .err()
        .expect("must refuse");
    assert!(err.contains("data.log is missing"), "{err}");
    let (ok, report) = repair(dir.path(), &["--forget-missing"]);
    assert!(ok, "{report}");
    let server = BrookServer::start_on(dir.path(), &[]).expect("opens");
    let c = server.connect("brook").await;
    let err = c
        .query("SELECT * FROM t", &[])
        .await
        .expect_err("t is gone");
    assert_eq!(err.as_db_error().map(|d| d.code().code()), Some("42P01"));
    // Its id is not reused for the next relation.
    c.batch_execute("CREATE TABLE u (x int); INSERT INTO u VALUES (1)")
        .await
        .expect("new table");
    assert!(dir.path().join("relations/2/data.log").exists());
}

/// An orphan directory (a crash between a DROP's catalog update and its removal) is kept
/// at startup, and no new relation is created over it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn orphan_directories_are_kept_and_never_reused() {
    let dir = tempfile::tempdir().expect("tempdir");
    three_commits(dir.path()).await;
    let orphan = dir.path().join("relations/5");
    std::fs::create_dir_all(&orphan).expect("mkdir");
    std::fs::write(orphan.join("data.log"), b"someone's data").expect("write");
    let server = BrookServer::start_on(dir.path(), &[]).expect("opens");
    let c = server.connect("brook").await;
    c.batch_execute("CREATE TABLE u (x int)")
        .await
        .expect("create");
    assert_eq!(
        std::fs::read(orphan.join("data.log")).expect("orphan kept"),
        b"someone's data"
    );
    assert!(dir.path().join("relations/6/data.log").exists());
}

/// A full disk (a 16 MiB tmpfs as the data directory): the statement that does not fit
/// fails with 53100, every acknowledged row stays (also after `kill -9` and a restart), and
/// once space is freed writes work again. Needs root to mount; CI runs as root.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_disk_fails_the_statement_and_keeps_committed_rows() {
    let mnt = tempfile::tempdir().expect("tempdir");
    let mounted = Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=16m", "tmpfs"])
        .arg(mnt.path())
        .status()
        .is_ok_and(|s| s.success());
    assert!(
        mounted,
        "cannot mount a tmpfs (this test needs root, as CI has)"
    );
    struct Unmount<'a>(&'a Path);
    impl Drop for Unmount<'_> {
        fn drop(&mut self) {
            let _ = Command::new("umount").arg("-l").arg(self.0).status();
        }
    }
    let _unmount = Unmount(mnt.path());
    let dir = mnt.path().join("data");
    let mut server = BrookServer::start_on(&dir, &[]).expect("start");
    let c = server.connect("brook").await;
    c.batch_execute("CREATE TABLE big (id int, pad text)")
        .await
        .expect("ddl");
    let mut acked = 0i64;
    let mut code = String::new();
    for i in 0..200 {
        let sql = format!(
            "INSERT INTO big SELECT g, repeat('y', 200) FROM generate_series({}, {}) AS t(g)",
            i * 5000,
            i * 5000 + 4999
        );
        match c.batch_execute(&sql).await {
            Ok(()) => acked += 5000,
            Err(e) => {
                code = brook_sql_tests::sqlstate(&e);
                break;
            }
        }
    }
    assert_eq!(code, "53100", "the statement that did not fit");
    assert!(acked > 0);
    assert_eq!(count(&c, "big").await, acked);
    server.kill9();
    let server = BrookServer::start_on(&dir, &[]).expect("restart on the full disk");
    let c = server.connect("brook").await;
    assert_eq!(
        count(&c, "big").await,
        acked,
        "acknowledged rows after restart"
    );
    c.batch_execute("TRUNCATE big; INSERT INTO big VALUES (1, 'again')")
        .await
        .expect("space freed: writes work again");
    assert_eq!(count(&c, "big").await, 1);
}
