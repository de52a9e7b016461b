//! Concurrent sessions writing at once: DDL, INSERT, COPY and ALTER on many connections,
//! with the invariants checked over the wire and again after a restart (no row in the wrong
//! table, no duplicate primary key, every relation readable).

use brook_sql_tests::{copy_in, count, sqlstate, BrookServer};

/// Every table keeps exactly the rows written to it: `CREATE TABLE` on eight connections at
/// once used to give two relations one data directory (the id was read, then allocated
/// again), so after a restart rows sat in the wrong table or were gone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_create_table_keeps_each_tables_rows() {
    let dir = tempfile::tempdir().expect("tempdir");
    let server = BrookServer::start_on(dir.path(), &[]).expect("start");
    const CONNS: usize = 8;
    const TABLES: usize = 10;
    let mut tasks = Vec::new();
    for conn in 0..CONNS {
        let c = server.connect("brook").await;
        tasks.push(tokio::spawn(async move {
            for t in 0..TABLES {
                let name = format!("t_{conn}_{t}");
                c.batch_execute(&format!("CREATE TABLE {name} (tag text, n int)"))
                    .await
                    .expect("create");
                let rows: Vec<String> = (0..=t).map(|n| format!("('{name}', {n})")).collect();
                c.batch_execute(&format!("INSERT INTO {name} VALUES {}", rows.join(",")))
                    .await
                    .expect("insert");
            }
        }));
    }
    for t in tasks {
        t.await.expect("writer");
    }
    let check = |c: tokio_postgres::Client| async move {
        for conn in 0..CONNS {
            for t in 0..TABLES {
                let name = format!("t_{conn}_{t}");
                let row = c
                    .query_one(
                        &format!(
                            "SELECT count(*), count(*) FILTER (WHERE tag <> '{name}') FROM {name}"
                        ),
                        &[],
                    )
                    .await
                    .expect("count");
                let (all, foreign): (i64, i64) = (row.get(0), row.get(1));
                assert_eq!((all, foreign), (t as i64 + 1, 0), "table {name}");
            }
        }
    };
    check(server.connect("brook").await).await;
    drop(server);
    let server = BrookServer::start_on(dir.path(), &[]).expect("restart");
    check(server.connect("brook").await).await;
}

/// Two COPYs of the same key into a primary-key table: exactly one commits. The existing
/// keys used to be read before the write lock was taken, so both inserted id 1.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_copies_never_duplicate_a_primary_key() {
    let server = BrookServer::start();
    let setup = server.connect("brook").await;
    setup
        .batch_execute("CREATE TABLE k (id int PRIMARY KEY, who int)")
        .await
        .expect("ddl");
    for round in 0..6 {
        let mut tasks = Vec::new();
        for who in 0..4 {
            let c = server.connect("brook").await;
            tasks.push(tokio::spawn(async move {
                let data: String = (0..200)
                    .map(|i| format!("{}\t{who}\n", round * 1000 + i))
                    .collect();
                copy_in(&c, "COPY k FROM STDIN", data.as_bytes()).await
            }));
        }
        let mut ok = 0;
        for t in tasks {
            match t.await.expect("task") {
                Ok(n) => {
                    assert_eq!(n, 200);
                    ok += 1;
                }
                Err(e) => assert_eq!(sqlstate(&e), "23505", "{e:?}"),
            }
        }
        assert_eq!(
            ok, 1,
            "round {round}: exactly one COPY of the same keys commits"
        );
    }
    let row = setup
        .query_one("SELECT count(*), count(DISTINCT id) FROM k", &[])
        .await
        .expect("count");
    let (n, distinct): (i64, i64) = (row.get(0), row.get(1));
    assert_eq!((n, distinct), (1200, 1200));
}

/// `ALTER TABLE ... ADD COLUMN c int NOT NULL DEFAULT 7` while INSERTs planned against the
/// old definition wait for the write lock: each INSERT either commits before the ALTER (and
/// its rows get 7) or is refused with 40001 — never written in the old shape after it,
/// which left `SELECT *` failing forever.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn alter_add_column_races_inserts_without_breaking_the_table() {
    let server = BrookServer::start();
    let setup = server.connect("brook").await;
    for round in 0..4 {
        let t = format!("a{round}");
        setup
            .batch_execute(&format!("CREATE TABLE {t} (id int)"))
            .await
            .expect("ddl");
        let mut tasks = Vec::new();
        for w in 0..3 {
            let c = server.connect("brook").await;
            let t = t.clone();
            tasks.push(tokio::spawn(async move {
                let mut refused = 0;
                for i in 0..30 {
                    match c
                        .batch_execute(&format!(
                            "INSERT INTO {t} SELECT {w} * 100 + {i} FROM generate_series(1, 50)"
                        ))
                        .await
                    {
                        Ok(()) => {}
                        Err(e) => {
                            assert_eq!(sqlstate(&e), "40001", "{e:?}");
                            refused += 1;
                        }
                    }
                }
                refused
            }));
        }
        setup
            .batch_execute(&format!(
                "ALTER TABLE {t} ADD COLUMN c int NOT NULL DEFAULT 7"
            ))
            .await
            .expect("alter");
        for task in tasks {
            task.await.expect("writer");
        }
        let row = setup
            .query_one(
                &format!("SELECT count(*), count(*) FILTER (WHERE c IS NULL) FROM {t}"),
                &[],
            )
            .await
            .expect("the table stays readable");
        let nulls: i64 = row.get(1);
        assert_eq!(
            nulls, 0,
            "round {round}: no row of the old shape after the ALTER"
        );
        assert!(count(&setup, &t).await > 0);
    }
}

/// A FETCH sees the results of every commit acknowledged before it (read-your-writes of a
/// continuous cursor). It returned the first commit's rows only when the second's were
/// still being computed (the `continuous/interval_joins.slt` flake).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fetch_sees_every_commit_made_before_it() {
    let server = BrookServer::start();
    let c = server.connect("brook").await;
    c.batch_execute(
        "CREATE STREAM views (page int, seen timestamp); \
         CREATE STREAM buys (page int, amount int); \
         DECLARE vb CURSOR FOR SELECT v.page, b.amount FROM views v JOIN buys b ON v.page = b.page",
    )
    .await
    .expect("setup");
    const VIEWS: usize = 20_000;
    for i in 0..10 {
        let (a, b) = (2 * i, 2 * i + 1);
        // Two commits, each completing a join pair: two result rows from two rounds.
        c.batch_execute(&format!(
            "INSERT INTO views VALUES ({a}, now()); INSERT INTO buys VALUES ({b}, 1)"
        ))
        .await
        .expect("first halves");
        // Pipelined: the FETCH arrives right after the second commit is acknowledged.
        let buy = format!("INSERT INTO buys VALUES ({a}, 10)");
        // The second commit's results are large: they take a while, and go out in parts.
        let view =
            format!("INSERT INTO views SELECT {b}, now() FROM generate_series(1, {VIEWS}) g");
        let (bought, viewed, fetched) = tokio::join!(
            c.simple_query(&buy),
            c.simple_query(&view),
            c.simple_query("FETCH ALL FROM vb")
        );
        bought.expect("buy");
        viewed.expect("view");
        let rows: Vec<_> = fetched
            .expect("fetch")
            .into_iter()
            .filter_map(|m| match m {
                tokio_postgres::SimpleQueryMessage::Row(r) => {
                    Some(r.get(0).unwrap_or_default().to_string())
                }
                _ => None,
            })
            .collect();
        let firsts = rows.iter().filter(|p| **p == a.to_string()).count();
        let seconds = rows.iter().filter(|p| **p == b.to_string()).count();
        assert_eq!(
            (firsts, seconds, rows.len()),
            (1, VIEWS, VIEWS + 1),
            "round {i}"
        );
    }
}
