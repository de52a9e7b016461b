//! Runs every `.slt` file under `sql-tests/slt/` against a fresh Brook server, once over the
//! simple and once over the extended query protocol; then the SQLite `select` corpus from
//! `../shared/corpora/sqlite/` (when present).
//!
//! A custom harness (`harness = false`). Name filters select files: each free argument after
//! `--`, and `$BROOK_SLT`. A file runs when its name — its path under `sql-tests/slt/` without
//! the extension, e.g. `continuous/interval_joins` — contains one of them; the corpus files are
//! named `sqlite/select1` and so on. `cargo test --test slt -- interval_join` runs one file;
//! `-- --list` lists the selected files.

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

/// A file's name for filtering: its path under `dir` without the extension, `/`-separated.
fn test_name(dir: &Path, file: &Path) -> String {
    let rel = file.strip_prefix(dir).unwrap_or(file).with_extension("");
    rel.components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect::<Vec<_>>()
        .join("/")
}

/// The name filters: `$BROOK_SLT` and the free command-line arguments. libtest's flags that
/// cargo passes on (`--nocapture`, `--test-threads=2`, `-q`, ...) are ignored, and so is the
/// value of a flag that takes it as the next argument (`--test-threads 2`).
fn name_filters() -> Vec<String> {
    const TAKES_VALUE: &[&str] = &[
        "--test-threads",
        "--skip",
        "--color",
        "--format",
        "--logfile",
        "--shuffle-seed",
        "-Z",
    ];
    let mut filters: Vec<String> = std::env::var("BROOK_SLT")
        .ok()
        .filter(|f| !f.is_empty())
        .into_iter()
        .collect();
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        if TAKES_VALUE.contains(&arg.as_str()) {
            args.next();
        } else if !arg.starts_with('-') {
            filters.push(arg);
        }
    }
    filters
}

/// Whether a file runs: no filter, or its name contains one of them; and its name contains
/// none of `$BROOK_SLT_SKIP` (comma-separated).
fn selected(name: &str, filters: &[String]) -> bool {
    let skip = std::env::var("BROOK_SLT_SKIP").unwrap_or_default();
    if skip
        .split(',')
        .any(|s| !s.is_empty() && name.contains(s.trim()))
    {
        return false;
    }
    filters.is_empty() || filters.iter().any(|f| name.contains(f.as_str()))
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
    // `skipif cluster`: a record whose answer cluster mode gives differently, as
    // docs/cluster.md says.
    if std::env::var("BROOK_TEST_CLUSTER").is_ok() {
        runner.add_label("cluster");
    }
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
    let root_dir = brook_sql_tests::crate_dir();
    let root = root_dir.as_path();
    let filters = name_filters();
    let list_only = std::env::args().any(|a| a == "--list");
    let slt_dir = root.join("slt");
    let files: Vec<(String, PathBuf)> = slt_files(&slt_dir)
        .into_iter()
        .map(|f| (test_name(&slt_dir, &f), f))
        .filter(|(name, _)| selected(name, &filters))
        .collect();
    let corpus = root.join("../../shared/corpora/sqlite");
    let corpus_files: Vec<(String, PathBuf)> = if corpus.is_dir() {
        slt_files(&corpus)
            .into_iter()
            .map(|f| (format!("sqlite/{}", test_name(&corpus, &f)), f))
            .filter(|(name, _)| selected(name, &filters))
            .collect()
    } else {
        Vec::new()
    };
    if list_only {
        for (name, _) in files.iter().chain(&corpus_files) {
            println!("{name}: test");
        }
        return;
    }
    if !filters.is_empty() && files.is_empty() && corpus_files.is_empty() {
        println!("slt: no file matches {filters:?}");
        return;
    }

    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let mut passed = 0;
    let mut failed = Vec::new();
    for (_, f) in &files {
        let name = f.strip_prefix(root).unwrap_or(f).display().to_string();
        for mode in [Mode::Simple, Mode::Extended] {
            match rt.block_on(run_file(f, mode)) {
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
    for (_, f) in &corpus_files {
        let name = f
            .file_name()
            .map(|n| n.to_string_lossy().to_string())
            .unwrap_or_default();
        let (p, n, samples) = rt.block_on(run_corpus_file(f));
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
    if filters.is_empty() && !corpus.is_dir() {
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
