//! Runs every `.slt` file under `sql-tests/slt/` against a fresh Brook server, once over the
//! simple and once over the extended query protocol; then the SQLite `select` corpus from
//! `../shared/corpora/sqlite/` (when present).

use brook_sql_tests::{BrookServer, Mode, SltClient};
use std::path::{Path, PathBuf};

fn slt_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(rd) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in rd.flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "slt") {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

async fn run_file(path: &Path, mode: Mode) -> Result<(), String> {
    let server = BrookServer::start();
    let addr = server.conn_str("brook");
    let mut runner = sqllogictest::Runner::new(move || {
        let addr = addr.clone();
        async move {
            let (client, conn) = tokio_postgres::connect(&addr, tokio_postgres::NoTls)
                .await
                .map_err(|e| brook_sql_tests::SltError(e.to_string()))?;
            tokio::spawn(async move {
                let _ = conn.await;
            });
            Ok(SltClient::new(client, mode))
        }
    });
    runner
        .run_file_async(path)
        .await
        .map_err(|e| format!("{}", e.display(true)))
}

/// Per-record pass counts over a corpus file (the SQLite corpus has ~1,000 queries a file),
/// with the most frequent failure kinds.
async fn run_corpus_file(path: &Path) -> (usize, usize, Vec<String>) {
    let server = BrookServer::start();
    let addr = server.conn_str("brook");
    let records = match sqllogictest::parse_file::<sqllogictest::DefaultColumnType>(path) {
        Ok(r) => r,
        Err(e) => return (0, 1, vec![format!("parse {}: {e}", path.display())]),
    };
    let mut runner = sqllogictest::Runner::new(move || {
        let addr = addr.clone();
        async move {
            let (client, conn) = tokio_postgres::connect(&addr, tokio_postgres::NoTls)
                .await
                .map_err(|e| brook_sql_tests::SltError(e.to_string()))?;
            tokio::spawn(async move {
                let _ = conn.await;
            });
            Ok(SltClient::new(client, Mode::Simple))
        }
    });
    let (mut pass, mut fail) = (0, 0);
    let mut kinds: std::collections::BTreeMap<String, usize> = Default::default();
    for r in records {
        let counts = matches!(
            r,
            sqllogictest::Record::Statement { .. } | sqllogictest::Record::Query { .. }
        );
        match runner.run_async(r).await {
            Ok(_) => pass += usize::from(counts),
            Err(e) => {
                fail += 1;
                let text = format!("{}", e.display(false));
                let kind: String = text
                    .lines()
                    .next()
                    .unwrap_or("")
                    .chars()
                    .take(110)
                    .collect();
                *kinds.entry(kind).or_default() += 1;
            }
        }
    }
    let mut kinds: Vec<(String, usize)> = kinds.into_iter().collect();
    kinds.sort_by_key(|k| std::cmp::Reverse(k.1));
    let samples = kinds
        .into_iter()
        .take(6)
        .map(|(k, n)| format!("{n} x {k}"))
        .collect();
    (pass, fail, samples)
}

fn main() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let root_dir = brook_sql_tests::crate_dir();
    let root = root_dir.as_path();
    let filter = std::env::args().nth(1).filter(|a| !a.starts_with('-'));
    let mut passed = 0;
    let mut failed = Vec::new();
    for f in slt_files(&root.join("slt")) {
        let name = f.strip_prefix(root).unwrap_or(&f).display().to_string();
        if filter.as_ref().is_some_and(|x| !name.contains(x.as_str())) {
            continue;
        }
        for mode in [Mode::Simple, Mode::Extended] {
            match rt.block_on(run_file(&f, mode)) {
                Ok(()) => {
                    passed += 1;
                    println!("ok      {name} ({mode:?})");
                }
                Err(e) => {
                    println!("FAILED  {name} ({mode:?})\n{e}");
                    failed.push(format!("{name} ({mode:?})"));
                }
            }
        }
    }
    // The SQLite corpus: every statement and query must pass, as on PostgreSQL.
    let corpus = root.join("../../shared/corpora/sqlite");
    if filter.as_ref().is_none_or(|x| x.contains("sqlite")) && corpus.is_dir() {
        for f in slt_files(&corpus) {
            let name = f
                .file_name()
                .map(|n| n.to_string_lossy().to_string())
                .unwrap_or_default();
            let (p, n, samples) = rt.block_on(run_corpus_file(&f));
            let pct = 100.0 * p as f64 / (p + n).max(1) as f64;
            println!("corpus  {name}: {p} passed, {n} failed ({pct:.1} %)");
            for s in samples {
                println!("  e.g. {s}");
            }
            if n == 0 {
                passed += 1;
            } else {
                failed.push(format!("corpus {name} ({n} records failed)"));
            }
        }
    } else if filter.is_none() {
        println!("note: SQLite corpus not found at {}", corpus.display());
    }
    println!("\nslt: {} passed, {} failed", passed, failed.len());
    if !failed.is_empty() {
        for f in &failed {
            println!("  failed: {f}");
        }
        std::process::exit(1);
    }
}
