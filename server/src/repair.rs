//! `brook repair`: inspect a data directory the server refuses to open, and fix it only by
//! the explicit choices the user names (nothing is deleted by default).
//!
//! Without options it reports, per relation, whether its log opens, has a torn tail (cut
//! at the next start), is damaged (a bad record before later commits) or is missing, and
//! which relation directories the catalog does not name. The options act:
//! - `--salvage`: rewrite each damaged log keeping every record whose checksum holds (the
//!   original kept as `data.log.damaged`);
//! - `--forget-missing`: drop from the catalog the relations whose log is gone;
//! - `--remove-orphans`: delete the relation directories the catalog does not name.

use crate::catalog::{all_relations, relation_dirs, Catalog};
use crate::db::{lock_data_dir, relation_dir};
use crate::storage;
use brook_common::Result;
use std::collections::HashSet;
use std::fmt::Write as _;
use std::path::Path;

/// What `brook repair` was asked to do.
#[derive(Debug, Clone, Copy, Default)]
pub struct RepairOptions {
    /// Rewrite damaged logs keeping every readable record.
    pub salvage: bool,
    /// Drop relations whose log is missing from the catalog.
    pub forget_missing: bool,
    /// Delete relation directories the catalog does not name.
    pub remove_orphans: bool,
}

/// The report of one run: what was found and done, and whether problems remain.
#[derive(Debug, Default)]
pub struct RepairReport {
    /// Human-readable lines.
    pub text: String,
    /// Problems left that keep the server from opening the directory.
    pub unresolved: usize,
}

/// Inspect (and with options, repair) the data directory `dir`. Holds the directory's lock,
/// so it refuses to run beside a server.
pub fn repair(dir: &Path, opts: RepairOptions) -> Result<RepairReport> {
    let _lock = lock_data_dir(dir)?;
    // Which transaction blocks over several relations committed (their relations' commit
    // records count only then).
    let decided = storage::Decisions::read(dir)?;
    let catalog = Catalog::open(dir)?;
    let mut out = RepairReport::default();
    if let Err(e) = crate::db::refuse_lost_decisions(dir, &catalog) {
        out.unresolved += 1;
        let _ = writeln!(out.text, "{e}");
    }
    let relations = all_relations(&catalog.read());
    let mut forget = Vec::new();
    for (db, schema, name, id) in &relations {
        let rdir = relation_dir(dir, *id);
        let label = format!("{db}.{schema}.{name} (relations/{id})");
        if !rdir.join("data.log").exists() {
            if opts.forget_missing {
                forget.push((db.clone(), schema.clone(), name.clone()));
                let _ = writeln!(
                    out.text,
                    "{label}: data.log missing; dropped from the catalog"
                );
            } else {
                out.unresolved += 1;
                let _ = writeln!(
                    out.text,
                    "{label}: data.log missing (restore it, or --forget-missing drops the relation)"
                );
            }
            continue;
        }
        match storage::check(&rdir, &|b| decided.contains(&b))? {
            None => {
                let _ = writeln!(out.text, "{label}: ok");
            }
            Some(d) if opts.salvage => {
                let s = storage::salvage(&rdir)?;
                let _ = writeln!(
                    out.text,
                    "{label}: damaged at byte {} ({}); salvaged {} commit(s), skipped {} unreadable byte(s), original kept as {}",
                    d.offset,
                    d.why,
                    s.commits,
                    s.skipped_bytes,
                    s.kept_as.display()
                );
            }
            Some(d) => {
                out.unresolved += 1;
                let _ = writeln!(
                    out.text,
                    "{label}: damaged at byte {} ({}), {} commit(s) after it (restore the file, or --salvage keeps every readable commit)",
                    d.offset, d.why, d.later_commits
                );
            }
        }
    }
    if !forget.is_empty() {
        catalog.update(|doc| {
            for (db, schema, name) in &forget {
                doc.schema_mut(db, schema)?.relations.remove(name);
            }
            Ok(())
        })?;
    }
    // A relation an open block dropped (the server stopped before its end) is no orphan:
    // the next start undoes the drop.
    let pending: Vec<_> = catalog.read().pending.values().flatten().cloned().collect();
    let named: HashSet<u64> = relations
        .iter()
        .map(|r| r.3)
        .chain(
            crate::catalog::undo::relation_ids(&pending)
                .into_iter()
                .map(|r| r.0),
        )
        .collect();
    for id in relation_dirs(dir)? {
        if named.contains(&id) {
            continue;
        }
        if opts.remove_orphans {
            std::fs::remove_dir_all(relation_dir(dir, id))?;
            let _ = writeln!(out.text, "relations/{id}: not in the catalog; removed");
        } else {
            let _ = writeln!(
                out.text,
                "relations/{id}: not in the catalog; kept (--remove-orphans deletes it)"
            );
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reports_and_removes_orphans_only_when_asked() {
        let dir = tempfile::tempdir().unwrap();
        Catalog::open(dir.path()).unwrap();
        std::fs::create_dir_all(dir.path().join("relations/42")).unwrap();
        let r = repair(dir.path(), RepairOptions::default()).unwrap();
        assert!(
            r.text.contains("relations/42: not in the catalog; kept"),
            "{}",
            r.text
        );
        assert!(dir.path().join("relations/42").exists());
        let opts = RepairOptions {
            remove_orphans: true,
            ..Default::default()
        };
        let r = repair(dir.path(), opts).unwrap();
        assert!(r.text.contains("removed"), "{}", r.text);
        assert!(!dir.path().join("relations/42").exists());
    }
}
