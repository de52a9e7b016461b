//! Crash recovery: COPY batches into a table and a stream, `kill -9` the server at random
//! moments, restart on the same data directory, and check that exactly the acknowledged rows
//! are there (plus, at most, the one COPY in flight when the kill hit, whose commit may have
//! reached the disk before its acknowledgement reached the client).

use brook_sql_tests::{count, BrookServer};
use futures::SinkExt;
use std::time::Duration;

const ROWS_PER_COPY: usize = 2_000;

fn copy_payload(start: usize) -> Vec<u8> {
    let mut s = String::with_capacity(ROWS_PER_COPY * 24);
    for i in start..start + ROWS_PER_COPY {
        s.push_str(&format!("{i}\tname-{i}\t{}.5\n", i % 97));
    }
    s.into_bytes()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill9_keeps_exactly_the_acknowledged_copies() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut server = BrookServer::start_on(dir.path(), &[]).expect("start");
    {
        let c = server.connect("brook").await;
        c.batch_execute("CREATE TABLE t (id bigint, name text, v double precision); CREATE STREAM s (id bigint, name text, v double precision)")
            .await
            .expect("ddl");
    }
    let mut acked = 0usize;
    // Deterministic "random" kill delays, spread over a COPY's duration.
    let delays_ms = [35u64, 80, 7, 150, 55, 20];
    for (round, delay) in delays_ms.iter().enumerate() {
        let client = server.connect("brook").await;
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<(usize, bool)>();
        let base = acked + round * 1_000_000;
        let writer = tokio::spawn(async move {
            let mut i = 0usize;
            loop {
                let rel = if i.is_multiple_of(2) { "t" } else { "s" };
                // announce the COPY in flight, then report whether it was acknowledged
                let _ = tx.send((ROWS_PER_COPY, false));
                let sink = match client
                    .copy_in::<_, bytes_like::Bytes>(&format!("COPY {rel} FROM STDIN"))
                    .await
                {
                    Ok(s) => s,
                    Err(_) => return,
                };
                futures::pin_mut!(sink);
                if sink
                    .send(bytes_like::Bytes::new(copy_payload(
                        base + i * ROWS_PER_COPY,
                    )))
                    .await
                    .is_err()
                {
                    return;
                }
                match sink.finish().await {
                    Ok(n) => {
                        assert_eq!(n as usize, ROWS_PER_COPY);
                        let _ = tx.send((ROWS_PER_COPY, true));
                    }
                    Err(_) => return,
                }
                i += 1;
            }
        });
        tokio::time::sleep(Duration::from_millis(*delay + 40)).await;
        server.kill9();
        let _ = writer.await;
        let mut in_flight = 0;
        while let Ok((n, ack)) = rx.try_recv() {
            if ack {
                acked += n;
                in_flight = 0;
            } else {
                in_flight = n;
            }
        }
        server = BrookServer::start_on(dir.path(), &[]).expect("restart after kill -9");
        let c = server.connect("brook").await;
        let total = (count(&c, "t").await + count(&c, "s").await) as usize;
        assert!(
            total == acked || total == acked + in_flight,
            "round {round}: {total} rows after restart, {acked} acknowledged (+{in_flight} in flight)"
        );
        // the in-flight COPY committed after all: it counts from now on
        acked = total;
    }
    assert!(
        acked > 0,
        "no COPY was acknowledged: the test did not exercise anything"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn second_server_on_same_data_dir_is_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    let _first = BrookServer::start_on(dir.path(), &[]).expect("start");
    let err = BrookServer::start_on(dir.path(), &[])
        .err()
        .expect("second server must not start");
    assert!(
        err.contains("in use by another Brook server"),
        "unexpected message: {err}"
    );
}

/// A materialized view is rebuilt from its durable inputs after kill -9: the same rows, none
/// lost or counted twice, and maintenance goes on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn materialized_view_survives_kill9() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut server = BrookServer::start_on(dir.path(), &[]).expect("start");
    let before: Vec<(String, i64, i64)> = {
        let c = server.connect("brook").await;
        c.batch_execute(
            "CREATE STREAM ev (k text, v integer);
             INSERT INTO ev SELECT 'k' || (g % 5), g FROM generate_series(1, 5000) AS t(g);
             CREATE MATERIALIZED VIEW mv_totals AS SELECT k, sum(v) AS total, count(*) AS n FROM ev GROUP BY k;
             CREATE MATERIALIZED VIEW mv_keys AS SELECT count(*) AS keys, sum(n) AS n FROM mv_totals;
             INSERT INTO ev VALUES ('k1', 100000), ('new', 7);",
        )
        .await
        .expect("setup");
        let rows = c
            .query("SELECT k, total, n FROM mv_totals ORDER BY k", &[])
            .await
            .expect("read view");
        rows.iter()
            .map(|r| (r.get(0), r.get(1), r.get(2)))
            .collect()
    };
    assert_eq!(before.len(), 6);
    assert!(before.contains(&("new".to_string(), 7, 1)));
    server.kill9();
    let server = BrookServer::start_on(dir.path(), &[]).expect("restart");
    let c = server.connect("brook").await;
    let after: Vec<(String, i64, i64)> = c
        .query("SELECT k, total, n FROM mv_totals ORDER BY k", &[])
        .await
        .expect("read view after restart")
        .iter()
        .map(|r| (r.get(0), r.get(1), r.get(2)))
        .collect();
    assert_eq!(after, before);
    // A view over a view is rebuilt too (its definition re-planned over the first's).
    // (sum of a bigint is numeric, as in PostgreSQL.)
    let keys: (i64, rust_decimal::Decimal) = c
        .query_one("SELECT keys, n FROM mv_keys", &[])
        .await
        .map(|r| (r.get(0), r.get(1)))
        .expect("read view of a view after restart");
    assert_eq!(keys, (6, rust_decimal::Decimal::from(5002)));
    c.batch_execute("INSERT INTO ev VALUES ('new', 3)")
        .await
        .expect("insert after restart");
    let n: i64 = c
        .query_one("SELECT total FROM mv_totals WHERE k = 'new'", &[])
        .await
        .expect("maintained after restart")
        .get(0);
    assert_eq!(n, 10);
}

/// Poll `sql` (one row, one bigint) until it returns `want` (synopses answer from their latest
/// maintained state without waiting for ingest).
async fn poll_i64(c: &tokio_postgres::Client, sql: &str, want: i64) -> i64 {
    let mut got = -1;
    for _ in 0..100 {
        got = c.query_one(sql, &[]).await.map(|r| r.get(0)).unwrap_or(-1);
        if got == want {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    got
}

#[tokio::test(flavor = "multi_thread")]
async fn synopsis_survives_kill9() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut server = BrookServer::start_on(dir.path(), &[]).expect("start");
    let count = "SELECT CAST(round(estimate(sketch)) AS BIGINT) FROM uniq WHERE k = 'k1'";
    {
        let c = server.connect("brook").await;
        c.batch_execute(
            "CREATE STREAM ev (k text, v integer);
             CREATE SYNOPSIS uniq ON ev USING hll(v) PARTITION BY k;
             INSERT INTO ev SELECT 'k' || (g % 5), g % 200 FROM generate_series(1, 5000) AS t(g);",
        )
        .await
        .expect("setup");
        assert_eq!(poll_i64(&c, count, 40).await, 40);
    }
    server.kill9();
    let server = BrookServer::start_on(dir.path(), &[]).expect("restart");
    let c = server.connect("brook").await;
    // Rebuilt from the durable stream: the same sketch, so the same estimate, from the
    // first read on (it read the state being rebuilt: no row at all).
    // (The simple protocol: planning does not run ahead of the read, as a Parse would.)
    let first = c
        .simple_query(count)
        .await
        .expect("the first read after a restart");
    let first: Vec<&str> = first
        .iter()
        .filter_map(|m| match m {
            tokio_postgres::SimpleQueryMessage::Row(r) => r.get(0),
            _ => None,
        })
        .collect();
    assert_eq!(first, ["40"]);
    let n: i64 = c
        .query_one(
            "SELECT rows_seen FROM brook_synopses() WHERE name = 'uniq'",
            &[],
        )
        .await
        .expect("status")
        .get(0);
    assert_eq!(n, 5000);
    c.batch_execute("INSERT INTO ev SELECT 'k1', g FROM generate_series(1000, 1009) AS t(g)")
        .await
        .expect("insert after restart");
    assert_eq!(poll_i64(&c, count, 50).await, 50);
}

/// tokio-postgres' copy sink takes any `Buf`; `Vec<u8>`-backed bytes keep this test free of
/// an extra dependency.
mod bytes_like {
    pub type Bytes = std::io::Cursor<Vec<u8>>;
}

/// `kill -9` while UPDATEs rewrite a table whose log gets compacted every few commits:
/// after each restart the table holds all its rows, each updated exactly as often as the
/// acknowledged UPDATEs (or once more: the one in flight may have committed), and the log
/// stays near its live size.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill9_during_updates_and_compaction_keeps_the_committed_version() {
    const ROWS: i64 = 20_000;
    let dir = tempfile::tempdir().expect("tempdir");
    let mut server = BrookServer::start_on(dir.path(), &[]).expect("start");
    {
        let c = server.connect("brook").await;
        c.batch_execute(&format!(
            "CREATE TABLE u (id int PRIMARY KEY, v int, pad text);
             INSERT INTO u SELECT g, 0, repeat('x', 80) FROM generate_series(1, {ROWS}) AS t(g)"
        ))
        .await
        .expect("setup");
    }
    let mut acked = 0i64;
    for (round, delay) in [120u64, 35, 260, 80, 10, 190].iter().enumerate() {
        let c = server.connect("brook").await;
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<i64>();
        let writer = tokio::spawn(async move {
            loop {
                if c.batch_execute("UPDATE u SET v = v + 1").await.is_err() {
                    return;
                }
                let _ = tx.send(1);
            }
        });
        tokio::time::sleep(Duration::from_millis(*delay + 100)).await;
        server.kill9();
        let _ = writer.await;
        while let Ok(n) = rx.try_recv() {
            acked += n;
        }
        server = BrookServer::start_on(dir.path(), &[]).expect("restart after kill -9");
        let c = server.connect("brook").await;
        let row = c
            .query_one("SELECT count(*), min(v), max(v) FROM u", &[])
            .await
            .expect("read after restart");
        let (n, lo, hi): (i64, i32, i32) = (row.get(0), row.get(1), row.get(2));
        assert_eq!(n, ROWS, "round {round}: rows");
        assert_eq!(lo, hi, "round {round}: one version of the table");
        let v = i64::from(lo);
        assert!(
            v == acked || v == acked + 1,
            "round {round}: v = {v} after {acked} acknowledged UPDATEs"
        );
        acked = v;
    }
    assert!(
        acked >= 6,
        "too few UPDATEs were acknowledged to exercise compaction"
    );
    let log = dir.path().join("relations/1/data.log");
    let len = std::fs::metadata(&log).expect("log").len();
    assert!(len < 12 << 20, "the log was not compacted: {len} bytes");
}

/// Sequences under concurrency and crashes: writers in several sessions take keys from one
/// SERIAL column at once, the server is killed while they do, and after the restart no key
/// is handed out twice — every acknowledged row keeps its key, and new rows get keys above
/// every key handed out before the crash.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serial_keys_are_unique_across_sessions_and_kill9() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut server = BrookServer::start_on(dir.path(), &[]).expect("start");
    {
        let c = server.connect("brook").await;
        c.batch_execute("CREATE TABLE k (id bigserial PRIMARY KEY, writer int, n int)")
            .await
            .expect("ddl");
    }
    // Each writer inserts small multi-row statements until the server dies, and reports the
    // keys each acknowledged statement returned.
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<Vec<i64>>();
    let mut writers = Vec::new();
    for w in 0..3 {
        let client = server.connect("brook").await;
        let tx = tx.clone();
        writers.push(tokio::spawn(async move {
            for n in 0.. {
                let sql = format!(
                    "INSERT INTO k (writer, n) VALUES ({w}, {n}), ({w}, {n}), ({w}, {n}) RETURNING id"
                );
                match client.query(sql.as_str(), &[]).await {
                    Ok(rows) => {
                        let _ = tx.send(rows.iter().map(|r| r.get(0)).collect());
                    }
                    Err(_) => return,
                }
            }
        }));
    }
    drop(tx);
    tokio::time::sleep(Duration::from_millis(700)).await;
    server.kill9();
    for w in writers {
        let _ = w.await;
    }
    let mut acked = Vec::new();
    while let Ok(ids) = rx.try_recv() {
        acked.extend(ids);
    }
    assert!(
        acked.len() >= 3,
        "the writers inserted nothing before the kill"
    );
    let mut unique = acked.clone();
    unique.sort_unstable();
    unique.dedup();
    assert_eq!(unique.len(), acked.len(), "a key was handed out twice");

    let server = BrookServer::start_on(dir.path(), &[]).expect("restart");
    let c = server.connect("brook").await;
    let stored: Vec<i64> = c
        .query("SELECT id FROM k", &[])
        .await
        .expect("read")
        .iter()
        .map(|r| r.get(0))
        .collect();
    for id in &acked {
        assert!(stored.contains(id), "acknowledged key {id} lost");
    }
    let max_before = stored.iter().copied().max().unwrap_or(0);
    let after: Vec<i64> = c
        .query(
            "INSERT INTO k (writer, n) VALUES (99, 0), (99, 1) RETURNING id",
            &[],
        )
        .await
        .expect("insert after restart (a reused key would be a duplicate)")
        .iter()
        .map(|r| r.get(0))
        .collect();
    assert!(
        after.iter().all(|&id| id > max_before),
        "keys after the restart {after:?} not above {max_before}"
    );
}

/// Views are planned again when the server starts, a view of a view after the view it
/// reads, and a materialized view over a view is rebuilt through it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn views_survive_kill9() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut server = BrookServer::start_on(dir.path(), &[]).expect("start");
    {
        let c = server.connect("brook").await;
        c.batch_execute(
            "CREATE TABLE base (k text, v int);
             INSERT INTO base VALUES ('a', 1), ('b', 2), ('a', 3);",
        )
        .await
        .expect("table");
        c.batch_execute(
            "CREATE VIEW outer_v AS SELECT k, n FROM (SELECT 1 AS one) o, inner_placeholder;",
        )
        .await
        .expect_err("a view of a missing relation is refused");
        c.batch_execute(
            "CREATE VIEW inner_v AS SELECT k, v * 10 AS v10 FROM base WHERE v > 1;
             CREATE VIEW outer_v (key, total) AS SELECT k, sum(v10) FROM inner_v GROUP BY k;
             CREATE MATERIALIZED VIEW mv_over_view AS SELECT count(*) AS n FROM inner_v;",
        )
        .await
        .expect("views");
    }
    server.kill9();
    let server = BrookServer::start_on(dir.path(), &[]).expect("restart");
    let c = server.connect("brook").await;
    let rows: Vec<(String, i64)> = c
        .query("SELECT key, total FROM outer_v ORDER BY key", &[])
        .await
        .expect("read the view of a view after restart")
        .iter()
        .map(|r| (r.get(0), r.get(1)))
        .collect();
    assert_eq!(rows, vec![("a".to_string(), 30), ("b".to_string(), 20)]);
    c.batch_execute("INSERT INTO base VALUES ('b', 5)")
        .await
        .expect("insert after restart");
    let n = poll_i64(&c, "SELECT n FROM mv_over_view", 3).await;
    assert_eq!(n, 3);
}

/// A view whose FROM renames a relation's columns (`FROM r AS x (p)`, also all of them)
/// still plans after a column is added to the relation and the server restarts: the alias
/// list is completed with the relation's columns each time the view is planned. Before,
/// the view was unreadable after the restart (42P01) and a materialized view over a stream
/// failed its maintenance.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn views_renaming_columns_survive_an_added_column_and_kill9() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut server = BrookServer::start_on(dir.path(), &[]).expect("start");
    {
        let c = server.connect("brook").await;
        c.batch_execute(
            "CREATE TABLE r (a int, b int); INSERT INTO r VALUES (1, 2);
             CREATE VIEW first_renamed AS SELECT p, b FROM r x(p);
             CREATE VIEW all_renamed AS SELECT p, q FROM r x(p, q);
             CREATE STREAM st (w int, v int); INSERT INTO st VALUES (1, 10);
             CREATE MATERIALIZED VIEW renamed_mv AS SELECT a, v FROM st AS s(a) WHERE v > 0;
             ALTER TABLE r ADD COLUMN c int DEFAULT 3;
             ALTER TABLE st ADD COLUMN z int;",
        )
        .await
        .expect("views, then a column added to their inputs");
    }
    server.kill9();
    let server = BrookServer::start_on(dir.path(), &[]).expect("restart");
    let c = server.connect("brook").await;
    let row = c
        .query_one("SELECT p, b FROM first_renamed", &[])
        .await
        .expect("the view renaming the first column after restart");
    assert_eq!((row.get::<_, i32>(0), row.get::<_, i32>(1)), (1, 2));
    let row = c
        .query_one("SELECT p, q FROM all_renamed", &[])
        .await
        .expect("the view renaming every column after restart");
    assert_eq!((row.get::<_, i32>(0), row.get::<_, i32>(1)), (1, 2));
    c.batch_execute("INSERT INTO st VALUES (2, 20, 5)")
        .await
        .expect("insert after restart");
    let n = poll_i64(&c, "SELECT count(*) FROM renamed_mv", 2).await;
    assert_eq!(n, 2);
}

/// Views made under a `search_path` read, after kill -9, the relations they read when made:
/// a materialized view over a stream of schema `s` (a table of the same name in `public`)
/// kept reading `s`'s rows only until a restart, when it was rebuilt from `public`'s.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn views_keep_their_search_path_after_kill9() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut server = BrookServer::start_on(dir.path(), &[]).expect("start");
    {
        let c = server.connect("brook").await;
        c.batch_execute(
            "CREATE SCHEMA s; CREATE STREAM s.ev (k int); CREATE TABLE public.ev (k int);
             INSERT INTO s.ev VALUES (1), (1); INSERT INTO public.ev VALUES (7);
             SET search_path = s, public;
             CREATE MATERIALIZED VIEW public.counts AS SELECT k, count(*) AS n FROM ev GROUP BY k;
             CREATE VIEW public.plain AS SELECT k FROM ev;",
        )
        .await
        .expect("views over s.ev made under search_path s, public");
    }
    server.kill9();
    let server = BrookServer::start_on(dir.path(), &[]).expect("restart");
    let c = server.connect("brook").await;
    c.batch_execute("INSERT INTO s.ev VALUES (1)")
        .await
        .expect("insert after restart");
    let n = poll_i64(&c, "SELECT n FROM counts WHERE k = 1", 3).await;
    assert_eq!(n, 3, "the materialized view counts s.ev's rows");
    let rows = c
        .query("SELECT k FROM plain", &[])
        .await
        .expect("the plain view after restart");
    let ks: Vec<i32> = rows.iter().map(|r| r.get(0)).collect();
    assert_eq!(ks, vec![1, 1, 1], "the view reads s.ev, not public.ev");
}

/// A view showing partial matches (`SHOW PARTIAL MATCHES`) is rebuilt after kill -9 with
/// the rows of the attempts still open, and goes on from them: a later row that fails an
/// attempt retracts the rows shown before the restart.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn partial_matches_survive_kill9() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut server = BrookServer::start_on(dir.path(), &[]).expect("start");
    let lifecycle = "SELECT item, seq, state FROM lifecycle ORDER BY item, seq";
    let rows = |rs: Vec<tokio_postgres::Row>| -> Vec<(i32, i32, String)> {
        rs.iter().map(|r| (r.get(0), r.get(1), r.get(2))).collect()
    };
    {
        let c = server.connect("brook").await;
        c.batch_execute(
            "CREATE STREAM auction (item int, seq int, kind text);
             CREATE MATERIALIZED VIEW lifecycle AS SELECT item, seq, state FROM auction \
             MATCH_RECOGNIZE (PARTITION BY item ORDER BY seq MEASURES CLASSIFIER() AS state \
             ALL ROWS PER MATCH SHOW PARTIAL MATCHES PATTERN (opened bid* closed) \
             DEFINE opened AS kind = 'open', bid AS kind = 'bid', closed AS kind = 'close');
             INSERT INTO auction VALUES (1, 1, 'open'), (2, 1, 'open');
             INSERT INTO auction VALUES (1, 2, 'bid'), (2, 2, 'bid');
             INSERT INTO auction VALUES (1, 3, 'close');",
        )
        .await
        .expect("lifecycle");
    }
    server.kill9();
    let server = BrookServer::start_on(dir.path(), &[]).expect("restart");
    let c = server.connect("brook").await;
    let open = vec![
        (1, 1, "opened".to_string()),
        (1, 2, "bid".to_string()),
        (1, 3, "closed".to_string()),
        (2, 1, "opened".to_string()),
        (2, 2, "bid".to_string()),
    ];
    assert_eq!(rows(c.query(lifecycle, &[]).await.expect("read")), open);
    // Item 2 opens again without closing: its rows shown before the restart are retracted.
    c.batch_execute("INSERT INTO auction VALUES (2, 3, 'open')")
        .await
        .expect("insert after restart");
    let mut got = Vec::new();
    for _ in 0..100 {
        got = rows(c.query(lifecycle, &[]).await.expect("read"));
        if got.len() == 4 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let mut want = open[..3].to_vec();
    want.push((2, 3, "opened".to_string()));
    assert_eq!(got, want);
}

/// SQL functions and aggregates survive a restart: functions that call others are planned
/// again in an order that works, aggregates over them after, and a materialized view over a
/// stream that calls them goes on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn functions_survive_kill9() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut server = BrookServer::start_on(dir.path(), &[]).expect("start");
    {
        let c = server.connect("brook").await;
        c.batch_execute(
            "CREATE FUNCTION z_base(x integer) RETURNS integer LANGUAGE SQL IMMUTABLE RETURN x * 10;
             CREATE FUNCTION a_caller(x integer) RETURNS integer LANGUAGE SQL AS 'SELECT z_base(x) + 1';
             CREATE STREAM readings (k text, v integer);
             CREATE FUNCTION z_step(st bigint, v integer) RETURNS bigint LANGUAGE SQL STRICT RETURN st * 10 + v;
             CREATE AGGREGATE digits(integer) (SFUNC = z_step, STYPE = bigint, INITCOND = '0');
             CREATE MATERIALIZED VIEW scaled AS SELECT k, sum(a_caller(v)) AS s, digits(v) AS d FROM readings GROUP BY k;
             INSERT INTO readings VALUES ('a', 1), ('a', 2);",
        )
        .await
        .expect("functions and view");
    }
    server.kill9();
    let server = BrookServer::start_on(dir.path(), &[]).expect("restart");
    let c = server.connect("brook").await;
    let v: i32 = c
        .query_one("SELECT a_caller(4)", &[])
        .await
        .expect("a function calling another after restart")
        .get(0);
    assert_eq!(v, 41);
    c.batch_execute("INSERT INTO readings VALUES ('a', 3)")
        .await
        .expect("insert after restart");
    let s = poll_i64(&c, "SELECT s FROM scaled WHERE k = 'a'", 63).await;
    assert_eq!(s, 63);
    let d = poll_i64(&c, "SELECT d FROM scaled WHERE k = 'a'", 123).await;
    assert_eq!(d, 123, "the aggregate's state folded on from where it was");
    let v: i64 = c
        .query_one("SELECT digits(v) FROM (VALUES (4), (5)) t(v)", &[])
        .await
        .expect("an aggregate after restart")
        .get(0);
    assert_eq!(v, 45);
}

/// Temporary tables are the session's own: another session neither sees nor may name them
/// (0A000), they go when their session ends, and after `kill -9` the next start drops them
/// (their data directories too) while every other table stays whole.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn temporary_tables_are_per_session_and_gone_after_kill9() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut server = BrookServer::start_on(dir.path(), &[]).expect("start");
    let a = server.connect("brook").await;
    let b = server.connect("brook").await;
    a.batch_execute(
        "CREATE TABLE kept (id int); INSERT INTO kept VALUES (1), (2);
         CREATE TEMP TABLE scratch (id int); INSERT INTO scratch VALUES (7);
         SELECT id * 10 AS id INTO selected FROM kept;",
    )
    .await
    .expect("setup");
    let temp_schema: String = a
        .query_one(
            "SELECT nspname FROM pg_namespace WHERE nspname LIKE 'pg_temp_%'",
            &[],
        )
        .await
        .expect("temp schema listed")
        .get(0);
    // Another session: the bare name is not its table, the qualified name is refused.
    let e = b
        .query("SELECT * FROM scratch", &[])
        .await
        .expect_err("not visible to another session");
    assert_eq!(e.code().map(|c| c.code()), Some("42P01"), "{e}");
    for sql in [
        format!("SELECT * FROM {temp_schema}.scratch"),
        format!("INSERT INTO {temp_schema}.scratch VALUES (8)"),
        format!("DROP TABLE {temp_schema}.scratch"),
    ] {
        let e = b.query(sql.as_str(), &[]).await.expect_err(&sql);
        assert_eq!(e.code().map(|c| c.code()), Some("0A000"), "{sql}: {e}");
    }
    // Its own temporary table of the same name is separate.
    b.batch_execute("CREATE TEMP TABLE scratch (id int); INSERT INTO scratch VALUES (9)")
        .await
        .expect("b's own scratch");
    let own: i32 = b
        .query_one("SELECT id FROM scratch", &[])
        .await
        .expect("b reads its scratch")
        .get(0);
    assert_eq!(own, 9);
    // b ends: its schema goes with it.
    drop(b);
    let mut schemas = 2;
    for _ in 0..50 {
        schemas = a
            .query_one(
                "SELECT count(*) FROM pg_namespace WHERE nspname LIKE 'pg_temp_%'",
                &[],
            )
            .await
            .expect("count temp schemas")
            .get::<_, i64>(0);
        if schemas == 1 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert_eq!(
        schemas, 1,
        "the ended session's temporary schema is dropped"
    );
    let relations = || std::fs::read_dir(dir.path().join("relations")).map(|d| d.count());
    let with_temp = relations().expect("relations dir");
    // kill -9 with a's temporary table alive: the restart drops it, keeps `kept`.
    server.kill9();
    let server = BrookServer::start_on(dir.path(), &[]).expect("restart");
    let c = server.connect("brook").await;
    let left: i64 = c
        .query_one(
            "SELECT count(*) FROM pg_namespace WHERE nspname LIKE 'pg_temp_%'",
            &[],
        )
        .await
        .expect("count after restart")
        .get(0);
    assert_eq!(left, 0);
    let kept: i64 = c
        .query_one("SELECT count(*) FROM kept", &[])
        .await
        .expect("kept table")
        .get(0);
    assert_eq!(kept, 2);
    // SELECT ... INTO made a durable table (DataFusion's was in memory only).
    let selected: i64 = c
        .query_one("SELECT sum(id) FROM selected", &[])
        .await
        .expect("SELECT INTO's table after restart")
        .get(0);
    assert_eq!(selected, 30);
    assert_eq!(relations().expect("relations dir"), with_temp - 1);
}

/// A materialized view created in a session of another time zone than UTC keeps computing
/// in that zone after kill -9 (its days are the zone's days), whoever reads it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn materialized_view_keeps_its_time_zone_after_kill9() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut server = BrookServer::start_on(dir.path(), &[]).expect("start");
    // The days as text in UTC: local midnights of Asia/Kolkata (+05:30).
    let days = "SELECT day::text, total FROM daily ORDER BY day";
    let rows = |rs: Vec<tokio_postgres::Row>| -> Vec<(String, i64)> {
        rs.iter().map(|r| (r.get(0), r.get(1))).collect()
    };
    let want = vec![
        ("2026-12-05 18:30:00+00".to_string(), 110),
        ("2026-12-06 18:30:00+00".to_string(), 1),
    ];
    {
        let c = server.connect("brook").await;
        c.batch_execute(
            "CREATE STREAM ev (ts timestamptz, v bigint);
             SET TimeZone = 'Asia/Kolkata';
             CREATE MATERIALIZED VIEW daily AS SELECT date_trunc('day', ts) AS day, sum(v)::bigint AS total FROM ev GROUP BY 1;
             INSERT INTO ev VALUES ('2026-12-06 20:00+00', 1), ('2026-12-06 17:00+00', 10), ('2026-12-06 23:00', 100);
             RESET TimeZone;",
        )
        .await
        .expect("setup");
        assert_eq!(rows(c.query(days, &[]).await.expect("read")), want);
    }
    server.kill9();
    let server = BrookServer::start_on(dir.path(), &[]).expect("restart");
    let c = server.connect("brook").await;
    assert_eq!(
        rows(c.query(days, &[]).await.expect("read after restart")),
        want
    );
}
