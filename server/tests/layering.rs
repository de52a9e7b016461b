//! The server's modules form layers, and a module uses only the layers below it (and its own
//! directory): the module graph stays one-way. This test reads `server/src/` and fails on a
//! `crate::` path that reaches up a layer or sideways into another module of the same layer.
//! The layers are listed in `ARCHITECTURE.md`; a new top-level module must be placed here.

use std::path::{Path, PathBuf};

/// Top-level modules of `server/src`, lowest layer first.
const LAYERS: &[&[&str]] = &[
    // Leaves: what everything may use.
    &["config"],
    &["ident", "settings", "exec"],
    // PostgreSQL types and their text and binary formats.
    &["pg"],
    &["storage"],
    &["catalog"],
    // COPY bytes to Arrow and back (knows no connection).
    &["copy"],
    // Continuous queries: planning, running, views.
    &["stream"],
    // SQL functions Brook adds.
    &["udf"],
    // The server's databases and their DataFusion contexts.
    &["db"],
    // The write path's parts that know no connection (coercion, keys, the COPY writer).
    &["write"],
    // One connection's state.
    &["session"],
    // One file per statement family.
    &["handler"],
    // Cluster mode: joining the cluster's log and applying it.
    &["cluster"],
    // The PostgreSQL protocol: the only module naming pgwire types.
    &["wire"],
    // The accept loop, the offline repair tool, the library root and the binary.
    &["server", "repair", "lib", "main"],
];

fn layer_of(module: &str) -> Option<usize> {
    LAYERS.iter().position(|layer| layer.contains(&module))
}

fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).expect("server/src").flatten() {
        let path = entry.path();
        if path.is_dir() {
            files.extend(rust_files(&path));
        } else if path.extension().is_some_and(|e| e == "rs") {
            files.push(path);
        }
    }
    files.sort();
    files
}

/// The top-level module a file belongs to (`src/handler/insert.rs` → `handler`).
fn module_of(src: &Path, file: &Path) -> String {
    let rel = file.strip_prefix(src).expect("under src");
    let first = rel.components().next().expect("a path");
    let name = first.as_os_str().to_string_lossy();
    name.trim_end_matches(".rs").to_string()
}

/// The top-level modules a line names with `crate::`, skipping comments.
fn crate_references(line: &str) -> Vec<String> {
    let code = line.split("//").next().unwrap_or("");
    code.match_indices("crate::")
        .filter(|(at, _)| {
            // `brook_crate::x` or `$crate::` are not this crate's paths.
            let before = code[..*at].chars().last();
            !before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '$')
        })
        .map(|(at, _)| {
            code[at + "crate::".len()..]
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect()
        })
        .filter(|m: &String| !m.is_empty())
        .collect()
}

/// Every reference from one module to another that is not to a lower layer.
fn violations(src: &Path) -> Vec<String> {
    let mut found = Vec::new();
    for file in rust_files(src) {
        let module = module_of(src, &file);
        let Some(own) = layer_of(&module) else {
            found.push(format!(
                "{}: module `{module}` is in no layer",
                file.display()
            ));
            continue;
        };
        let text = std::fs::read_to_string(&file).expect("source");
        for (n, line) in text.lines().enumerate() {
            for target in crate_references(line) {
                if target == module {
                    continue;
                }
                match layer_of(&target) {
                    Some(l) if l < own => {}
                    Some(_) => found.push(format!(
                        "{}:{}: `{module}` uses `crate::{target}`, which is not below it",
                        file.display(),
                        n + 1
                    )),
                    None => found.push(format!(
                        "{}:{}: `crate::{target}` is in no layer",
                        file.display(),
                        n + 1
                    )),
                }
            }
        }
    }
    found
}

/// This crate's directory, read when the test runs (cargo sets it), so a test binary built
/// from another checkout sharing the build directory reads this checkout's files.
fn manifest_dir() -> PathBuf {
    PathBuf::from(
        std::env::var_os("CARGO_MANIFEST_DIR").expect("CARGO_MANIFEST_DIR (set by cargo test)"),
    )
}

#[test]
fn server_modules_use_only_lower_layers() {
    let src = manifest_dir().join("src");
    let found = violations(&src);
    assert!(
        found.is_empty(),
        "imports that run up or across a layer:\n{}",
        found.join("\n")
    );
}

/// Only `wire/` names pgwire: the rest of the server knows no protocol library.
#[test]
fn only_the_wire_module_names_pgwire() {
    let src = manifest_dir().join("src");
    let outside: Vec<String> = rust_files(&src)
        .into_iter()
        .filter(|f| module_of(&src, f) != "wire")
        .filter(|f| {
            std::fs::read_to_string(f)
                .expect("source")
                .lines()
                .any(|l| l.split("//").next().unwrap_or("").contains("pgwire::"))
        })
        .map(|f| f.display().to_string())
        .collect();
    assert!(
        outside.is_empty(),
        "pgwire named outside wire/: {outside:?}"
    );
}

#[test]
fn an_upward_import_is_caught() {
    let dir = tempfile::tempdir().expect("tempdir");
    let src = dir.path();
    std::fs::create_dir_all(src.join("storage")).expect("dir");
    std::fs::write(
        src.join("storage/mod.rs"),
        "use crate::pg::types::PgType;\nuse crate::handler::insert; // upward\n",
    )
    .expect("write");
    std::fs::write(
        src.join("pg.rs"),
        "// crate::storage in a comment is fine\n",
    )
    .expect("write");
    let found = violations(src);
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(
        found[0].contains("`storage` uses `crate::handler`"),
        "{found:?}"
    );
}

#[test]
fn references_are_read_from_code_only() {
    assert_eq!(
        crate_references("use crate::pg::types; // see crate::handler"),
        vec!["pg".to_string()]
    );
    assert_eq!(
        crate_references("let x = brook_crate::y;"),
        Vec::<String>::new()
    );
    assert_eq!(
        crate_references("f(crate::a::b, crate::c)"),
        vec!["a".to_string(), "c".to_string()]
    );
}
