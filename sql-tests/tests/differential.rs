//! The differential suite: every query of `sql-tests/differential/queries.sql` three ways —
//! PostgreSQL over tables, Brook ad hoc over tables, and Brook continuously (a materialized
//! view created over an empty stream, then fed by COPY in random chunks) — with equal
//! answers required. Queries marked `[adhoc]` must be refused continuously with 0A000.

use brook_sql_tests::postgres::PgServer;
use brook_sql_tests::BrookServer;
use futures::SinkExt;
use std::collections::BTreeMap;

const EVENTS: usize = 3000;
const DDL: &str = "(id integer, k text, v integer, price numeric(8,2), ts timestamp)";

/// A seeded generator (SplitMix64): the same data on every run.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// Events as COPY text lines.
fn events() -> Vec<String> {
    let mut rng = Rng(42);
    let base = chrono::NaiveDate::from_ymd_opt(2026, 1, 1)
        .and_then(|d| d.and_hms_opt(0, 0, 0))
        .expect("base time");
    let mut at = base;
    (0..EVENTS)
        .map(|id| {
            at += chrono::Duration::milliseconds(rng.below(250) as i64);
            let k = (b'a' + rng.below(8) as u8) as char;
            let v = if rng.below(10) == 0 {
                "\\N".to_string()
            } else {
                rng.below(101).to_string()
            };
            let price = format!("{}.{:02}", rng.below(100), rng.below(100));
            format!(
                "{id}\t{k}\t{v}\t{price}\t{}\n",
                at.format("%Y-%m-%d %H:%M:%S%.3f")
            )
        })
        .collect()
}

const DIM: &str = "CREATE TABLE dim (k text, region text, weight integer);
    INSERT INTO dim VALUES ('a', 'north', 1), ('b', 'north', 2), ('c', 'south', 3),
        ('d', 'south', 1), ('e', 'east', 5), ('f', 'east', 2)";

async fn connect(conn: &str) -> tokio_postgres::Client {
    let (client, connection) = tokio_postgres::connect(conn, tokio_postgres::NoTls)
        .await
        .unwrap_or_else(|e| panic!("connect {conn}: {e}"));
    tokio::spawn(async move {
        let _ = connection.await;
    });
    client
}

async fn copy_lines(c: &tokio_postgres::Client, rel: &str, lines: &[String]) {
    let sink = c
        .copy_in::<_, std::io::Cursor<Vec<u8>>>(&format!("COPY {rel} FROM STDIN"))
        .await
        .expect("copy in");
    futures::pin_mut!(sink);
    sink.send(std::io::Cursor::new(lines.concat().into_bytes()))
        .await
        .expect("copy data");
    sink.finish().await.expect("copy done");
}

/// A cell as compared: numbers by value (PostgreSQL prints avg() as numeric with 16
/// decimals, Brook as float8), everything else as text.
fn normal(cell: Option<&str>) -> String {
    match cell {
        None => "NULL".into(),
        Some(s) => match s.parse::<f64>() {
            Ok(v) if s.chars().all(|c| c.is_ascii_digit() || "-.eE+".contains(c)) => {
                format!("{:.6}", (v * 1e6).round() / 1e6)
            }
            _ => s.to_string(),
        },
    }
}

async fn answer(
    c: &tokio_postgres::Client,
    sql: &str,
) -> Result<BTreeMap<String, usize>, tokio_postgres::Error> {
    let mut out = BTreeMap::new();
    for m in c.simple_query(sql).await? {
        if let tokio_postgres::SimpleQueryMessage::Row(r) = m {
            let line: Vec<String> = (0..r.len()).map(|i| normal(r.get(i))).collect();
            *out.entry(line.join("|")).or_insert(0) += 1;
        }
    }
    Ok(out)
}

fn why(e: &tokio_postgres::Error) -> String {
    match e.as_db_error() {
        Some(d) => format!("{} {}", d.code().code(), d.message()),
        None => e.to_string(),
    }
}

fn show(m: &BTreeMap<String, usize>) -> String {
    let total: usize = m.values().sum();
    let head: Vec<String> = m.iter().take(5).map(|(r, n)| format!("{r} x{n}")).collect();
    format!("{total} rows: {}", head.join("; "))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_ways_agree() {
    let corpus =
        std::fs::read_to_string(brook_sql_tests::crate_dir().join("differential/queries.sql"))
            .expect("corpus");
    let queries: Vec<(bool, &str)> = corpus
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with("--"))
        .map(|l| match l.strip_prefix("[adhoc] ") {
            Some(q) => (true, q),
            None => (false, l),
        })
        .collect();
    assert!(queries.len() >= 60, "corpus has {} queries", queries.len());

    let pg = PgServer::start().expect("PostgreSQL starts");
    let brook = BrookServer::start();
    let p = connect(&pg.conn_str()).await;
    let b = connect(&brook.conn_str("brook")).await;
    let lines = events();

    p.batch_execute(&format!("CREATE TABLE events {DDL}; {DIM}"))
        .await
        .expect("pg setup");
    copy_lines(&p, "events", &lines).await;
    b.batch_execute(&format!(
        "CREATE TABLE events_t {DDL}; CREATE STREAM events_s {DDL}; {DIM}"
    ))
    .await
    .expect("brook setup");
    copy_lines(&b, "events_t", &lines).await;

    // Continuous: views over the still-empty stream, refusals for [adhoc] queries.
    let mut failures = Vec::new();
    for (i, (adhoc_only, q)) in queries.iter().enumerate() {
        let sql = format!(
            "CREATE MATERIALIZED VIEW dq{i} AS {}",
            q.replace("{t}", "events_s")
        );
        match (b.batch_execute(&sql).await, adhoc_only) {
            (Ok(()), false) => {}
            (Err(e), true) if e.code().map(|c| c.code()) == Some("0A000") => {}
            (Ok(()), true) => failures.push(format!(
                "#{i} continuous setup accepted an [adhoc] query: {q}"
            )),
            (Err(e), _) => failures.push(format!("#{i} continuous setup: {q}: {}", why(&e))),
        }
    }
    // Feed the stream in random chunks while the views are maintained.
    let mut rng = Rng(7);
    let mut at = 0;
    let mut copies = 0;
    while at < lines.len() {
        let n = (1 + rng.below(400) as usize).min(lines.len() - at);
        copy_lines(&b, "events_s", &lines[at..at + n]).await;
        at += n;
        copies += 1;
    }
    assert!(copies > 5);

    for (i, (adhoc_only, q)) in queries.iter().enumerate() {
        let want = match answer(&p, &q.replace("{t}", "events")).await {
            Ok(a) => a,
            Err(e) => {
                failures.push(format!("#{i} PostgreSQL rejects: {q}: {}", why(&e)));
                continue;
            }
        };
        match answer(&b, &q.replace("{t}", "events_t")).await {
            Ok(got) if got == want => {}
            Ok(got) => failures.push(format!(
                "#{i} ad hoc differs: {q}\n    postgres {}\n    brook    {}",
                show(&want),
                show(&got)
            )),
            Err(e) => failures.push(format!("#{i} ad hoc error: {q}: {}", why(&e))),
        }
        if *adhoc_only {
            continue;
        }
        match answer(&b, &format!("SELECT * FROM dq{i}")).await {
            Ok(got) if got == want => {}
            Ok(got) => failures.push(format!(
                "#{i} continuous differs: {q}\n    postgres {}\n    brook    {}",
                show(&want),
                show(&got)
            )),
            Err(e) => failures.push(format!("#{i} continuous error: {q}: {}", why(&e))),
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} queries disagree:\n{}",
        failures.len(),
        queries.len(),
        failures.join("\n")
    );
}
