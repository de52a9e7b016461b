//! Mutation fuzzing of what clients send as data: COPY input (text, CSV, binary) through the
//! parser and the conversion to column types, and SQL text through Brook's parser. Seeds are
//! the corpus kept in `sql-tests/fuzz/copy/` and the statements of `sql-tests/slt/`; each
//! case mutates one (byte flips, insertions, deletions, duplications, cuts) and feeds it in
//! random chunks. The oracle: nothing panics, and every error is a user error with its
//! SQLSTATE — never XX000 (an internal error means Brook did not expect that input).
//!
//! `BROOK_FUZZ_CASES` sets the number of cases per target (default 400, the CI slice;
//! `sql-tests/soak` runs many more). Written with proptest because cargo-fuzz needs a
//! nightly toolchain; proptest shrinks a failing input to a small reproduction.

use brook::copy::{BatchBuilder, CopyFormat, CopyOptions, CopyParser, CopyTarget, RowSink};
use brook::pg::types::PgType;
use brook_common::BrookError;
use datafusion::sql::sqlparser::ast::CopyOption;
use proptest::prelude::*;
use std::path::PathBuf;
use std::sync::Arc;

fn cases() -> u32 {
    std::env::var("BROOK_FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(400)
}

/// This crate's directory, read when the test runs (cargo sets it), so a test binary built
/// from another checkout sharing the build directory reads this checkout's files.
fn manifest_dir() -> PathBuf {
    PathBuf::from(
        std::env::var_os("CARGO_MANIFEST_DIR").expect("CARGO_MANIFEST_DIR (set by cargo test)"),
    )
}

fn corpus_dir() -> PathBuf {
    manifest_dir().join("../sql-tests")
}

/// The COPY seeds: (format, bytes).
fn copy_seeds() -> Vec<(CopyFormat, Vec<u8>)> {
    let mut seeds = Vec::new();
    let dir = corpus_dir().join("fuzz/copy");
    let mut entries: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .collect();
    entries.sort();
    for p in entries {
        let format = match p.extension().and_then(|e| e.to_str()) {
            Some("csv") => CopyFormat::Csv,
            Some("bin") => CopyFormat::Binary,
            _ => CopyFormat::Text,
        };
        seeds.push((format, std::fs::read(&p).expect("seed")));
    }
    seeds
}

/// The `.slt` files under `dir`, in subdirectories too.
fn slt_files(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).expect("slt dir").flatten() {
        let path = entry.path();
        if path.is_dir() {
            files.extend(slt_files(&path));
        } else if path.extension().is_some_and(|e| e == "slt") {
            files.push(path);
        }
    }
    files.sort();
    files
}

/// The SQL seeds: every statement of the slt files.
fn sql_seeds() -> Vec<String> {
    let mut out = Vec::new();
    for f in slt_files(&corpus_dir().join("slt")) {
        let text = std::fs::read_to_string(&f).expect("slt");
        let mut stmt: Option<String> = None;
        for line in text.lines() {
            if line.starts_with("statement ") || line.starts_with("query ") {
                stmt = Some(String::new());
            } else if line.trim().is_empty() || line == "----" {
                if let Some(s) = stmt.take().filter(|s| !s.is_empty()) {
                    out.push(s);
                }
            } else if let Some(s) = stmt.as_mut() {
                s.push_str(line);
                s.push('\n');
            }
        }
    }
    out
}

/// One edit of the input.
#[derive(Debug, Clone)]
enum Mutation {
    Flip { at: usize, bits: u8 },
    Insert { at: usize, bytes: Vec<u8> },
    Delete { at: usize, len: usize },
    Duplicate { at: usize, len: usize },
    Cut { at: usize },
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        (any::<usize>(), 1..=255u8).prop_map(|(at, bits)| Mutation::Flip { at, bits }),
        (
            any::<usize>(),
            prop::collection::vec(interesting_byte(), 1..8)
        )
            .prop_map(|(at, bytes)| Mutation::Insert { at, bytes }),
        (any::<usize>(), 1..16usize).prop_map(|(at, len)| Mutation::Delete { at, len }),
        (any::<usize>(), 1..64usize).prop_map(|(at, len)| Mutation::Duplicate { at, len }),
        any::<usize>().prop_map(|at| Mutation::Cut { at }),
    ]
}

/// Bytes that mean something to the formats, and some that mean nothing.
fn interesting_byte() -> impl Strategy<Value = u8> {
    prop_oneof![
        Just(b'\t'),
        Just(b'\n'),
        Just(b'\r'),
        Just(b','),
        Just(b'"'),
        Just(b'\\'),
        Just(b'N'),
        Just(0u8),
        Just(0xffu8),
        Just(0x7fu8),
        Just(0x80u8),
        any::<u8>(),
    ]
}

fn apply(mut data: Vec<u8>, edits: &[Mutation]) -> Vec<u8> {
    for m in edits {
        let n = data.len().max(1);
        match m {
            Mutation::Flip { at, bits } => {
                if !data.is_empty() {
                    let i = at % n;
                    data[i] ^= bits;
                }
            }
            Mutation::Insert { at, bytes } => {
                let i = at % (data.len() + 1);
                data.splice(i..i, bytes.iter().copied());
            }
            Mutation::Delete { at, len } => {
                let i = at % n;
                let end = (i + len).min(data.len());
                if i < end {
                    data.drain(i..end);
                }
            }
            Mutation::Duplicate { at, len } => {
                let i = at % n;
                let end = (i + len).min(data.len());
                if i < end {
                    let copy = data[i..end].to_vec();
                    data.splice(end..end, copy);
                }
            }
            Mutation::Cut { at } => data.truncate(at % n),
        }
    }
    data
}

/// Every column type a table can have.
fn pg_type() -> impl Strategy<Value = PgType> {
    prop_oneof![
        Just(PgType::Bool),
        Just(PgType::Int2),
        Just(PgType::Int4),
        Just(PgType::Int8),
        Just(PgType::Float4),
        Just(PgType::Float8),
        Just(PgType::Numeric {
            precision: Some(10),
            scale: Some(2)
        }),
        Just(PgType::Numeric {
            precision: None,
            scale: None
        }),
        Just(PgType::Text),
        Just(PgType::Varchar(Some(3))),
        Just(PgType::Char(Some(2))),
        Just(PgType::Bytea),
        Just(PgType::Date),
        Just(PgType::Time(None)),
        Just(PgType::Timestamp(None)),
        Just(PgType::Timestamptz(None)),
        Just(PgType::Timestamp(Some(0))),
        Just(PgType::Time(Some(2))),
        Just(PgType::Interval),
        Just(PgType::Json),
        Just(PgType::Jsonb),
        Just(PgType::Uuid),
    ]
}

/// The target the seeds were written for, with some columns retyped at random.
fn target(binary: bool, retype: &[(usize, PgType)], not_null: bool) -> Arc<CopyTarget> {
    let mut types = vec![
        PgType::Int4,
        PgType::Text,
        PgType::Float8,
        PgType::Date,
        PgType::Timestamp(None),
        PgType::Bool,
        PgType::Jsonb,
        PgType::Bytea,
        PgType::Interval,
    ];
    for (i, t) in retype {
        let n = types.len();
        types[i % n] = t.clone();
    }
    let fields: Vec<_> = types
        .iter()
        .enumerate()
        .map(|(i, t)| t.field(&format!("c{i}"), !not_null))
        .collect();
    let n = types.len();
    Arc::new(CopyTarget {
        schema: Arc::new(datafusion::arrow::datatypes::Schema::new(fields)),
        types,
        field_columns: (0..n).collect(),
        defaults: vec![None; n],
        table: "fuzz".into(),
        not_null: vec![not_null; n],
        zone: None,
        binary,
    })
}

fn options(format: &CopyFormat, header: bool) -> CopyOptions {
    let name = match format {
        CopyFormat::Text => "text",
        CopyFormat::Csv => "csv",
        CopyFormat::Binary => "binary",
    };
    let mut opts = vec![CopyOption::Format(name.into())];
    if header && *format == CopyFormat::Csv {
        opts.push(CopyOption::Header(true));
    }
    CopyOptions::from_sql(&opts, &[]).expect("options")
}

/// Parse and convert `data` fed in `chunks`-sized pieces; the first error, if any.
fn run_copy(
    target: Arc<CopyTarget>,
    opts: CopyOptions,
    data: &[u8],
    chunks: &[usize],
) -> Result<usize, BrookError> {
    struct Sink {
        builder: BatchBuilder,
        rows: usize,
    }
    impl RowSink for Sink {
        fn field(&mut self, value: Option<&[u8]>) -> brook_common::Result<()> {
            self.builder.field(value)
        }
        fn end_row(&mut self, line: u64) -> brook_common::Result<()> {
            self.builder.end_row(line)?;
            if self.builder.len() >= 3 {
                self.rows += self.builder.take_batch()?.num_rows();
            }
            Ok(())
        }
    }
    let mut parser = CopyParser::new(opts);
    let mut sink = Sink {
        builder: BatchBuilder::new(target),
        rows: 0,
    };
    let mut rest = data;
    let mut sizes = chunks.iter().cycle();
    while !rest.is_empty() {
        let n = sizes
            .next()
            .copied()
            .unwrap_or(rest.len())
            .clamp(1, rest.len());
        parser.feed(&rest[..n], &mut sink)?;
        rest = &rest[n..];
    }
    parser.finish(&mut sink)?;
    sink.rows += sink.builder.take_batch()?.num_rows();
    Ok(sink.rows)
}

#[test]
fn the_copy_seeds_load_as_they_are() {
    for (format, data) in copy_seeds() {
        let header = data.starts_with(b"id,");
        let rows = run_copy(
            target(format == CopyFormat::Binary, &[], false),
            options(&format, header),
            &data,
            &[7, 100],
        );
        assert_eq!(rows.ok(), Some(2), "{format:?} seed");
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(), ..ProptestConfig::default() })]

    #[test]
    fn copy_input_never_panics_nor_fails_internally(
        seed in any::<prop::sample::Index>(),
        edits in prop::collection::vec(mutation(), 0..6),
        retype in prop::collection::vec((any::<usize>(), pg_type()), 0..4),
        chunks in prop::collection::vec(1..64usize, 1..4),
        not_null in any::<bool>(),
        header in any::<bool>(),
    ) {
        let seeds = copy_seeds();
        let (format, data) = &seeds[seed.index(seeds.len())];
        let data = apply(data.clone(), &edits);
        let t = target(*format == CopyFormat::Binary, &retype, not_null);
        if let Err(e) = run_copy(t, options(format, header), &data, &chunks) {
            prop_assert_ne!(e.sqlstate(), "XX000", "internal error on {:?}: {}", data, e);
        }
    }

    #[test]
    fn sql_text_never_panics_nor_fails_internally(
        seed in any::<prop::sample::Index>(),
        edits in prop::collection::vec(mutation(), 0..6),
    ) {
        let seeds = sql_seeds();
        let text = &seeds[seed.index(seeds.len())];
        let bytes = apply(text.clone().into_bytes(), &edits);
        let text = String::from_utf8_lossy(&bytes);
        if let Err(e) = brook_planner::parse_sql(&text) {
            prop_assert_ne!(e.sqlstate(), "XX000", "internal error on {:?}: {}", text, e);
        }
    }
}
