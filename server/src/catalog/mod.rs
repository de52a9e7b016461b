//! The persistent catalog: databases, schemas, tables, streams and indexes.
//!
//! Stored as one JSON document (`catalog.json`) in the data directory, replaced atomically
//! (write a temporary file, fsync, rename, fsync the directory) on every DDL statement.
//! Invariants: a relation's id is allocated once, under the catalog's lock, in the same
//! update that names it (two concurrent CREATEs never share a data directory). Its data
//! directory exists before the catalog names it and is removed only after the catalog
//! stopped naming it, so a crash leaves at most an orphan directory, which startup reports
//! and keeps (`brook repair --remove-orphans` deletes them). A missing `catalog.json` beside
//! relation data is damage, never a fresh start: opening refuses.

pub mod pg_views;
pub mod table;

use crate::pg::types::PgType;
use crate::storage::sync_dir;
use brook_common::{brook_err, BrookError, Result};
use datafusion::arrow::datatypes::{Schema, SchemaRef};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

/// Name of the database every server has (where a client without a database name lands).
pub const DEFAULT_DATABASE: &str = "brook";
/// The databases every PostgreSQL installation has, which tools connect to before they list
/// or create anything (`psql -l`, pg_dumpall, createdb connect to `postgres` or
/// `template1`): present in every catalog, added to an older one when it opens.
pub const STANDARD_DATABASES: [&str; 2] = ["postgres", "template1"];
/// Name of the schema every database has.
pub const DEFAULT_SCHEMA: &str = "public";

/// Table or stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum RelKind {
    /// A relational table (INSERT, UPDATE, DELETE).
    Table,
    /// An append-only stream (INSERT and COPY only).
    Stream,
    /// A materialized view: a continuous query's maintained result (read-only).
    MaterializedView,
    /// A synopsis (`CREATE SYNOPSIS`): a maintained sketch or sample per key (read-only).
    Synopsis,
}

impl RelKind {
    /// Whether the relation is a continuous query's maintained result (a view or synopsis).
    pub fn is_maintained(self) -> bool {
        matches!(self, RelKind::MaterializedView | RelKind::Synopsis)
    }

    /// How PostgreSQL-style messages name this kind.
    pub fn noun(self) -> &'static str {
        match self {
            RelKind::Table => "table",
            RelKind::Stream => "stream",
            RelKind::MaterializedView => "materialized view",
            RelKind::Synopsis => "synopsis",
        }
    }
}

/// A column of a table or stream.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ColumnMeta {
    /// Column name (already normalised: lower case unless quoted).
    pub name: String,
    /// Declared type.
    pub ty: PgType,
    /// `NOT NULL` (primary-key columns are always not null).
    pub not_null: bool,
    /// `DEFAULT` expression as SQL text.
    pub default: Option<String>,
}

/// The event-time column of a stream and its watermark expression.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WatermarkMeta {
    /// Event-time column.
    pub column: String,
    /// Watermark expression (SQL text).
    pub expr: String,
}

/// A table or stream.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RelationMeta {
    /// Unique id; names the data directory.
    pub id: u64,
    /// Table or stream.
    pub kind: RelKind,
    /// Columns in order.
    pub columns: Vec<ColumnMeta>,
    /// Indexes (into `columns`) of the primary key, empty when there is none.
    pub primary_key: Vec<usize>,
    /// Stream watermark declaration.
    pub watermark: Option<WatermarkMeta>,
    /// `WITH (...)` options as given.
    pub options: BTreeMap<String, String>,
    /// A materialized view's defining query (SQL text, with its EMIT clause if any).
    #[serde(default)]
    pub query: Option<String>,
    /// A materialized view's inputs as (schema, name): DROP of one of them is refused.
    #[serde(default)]
    pub depends_on: Vec<(String, String)>,
}

impl RelationMeta {
    /// Position of column `column` (42703 naming the relation when absent).
    pub fn column_index(&self, column: &str, relation: &str) -> Result<usize> {
        self.columns
            .iter()
            .position(|c| c.name == column)
            .ok_or_else(|| {
                brook_err!(
                    UndefinedColumn,
                    "column \"{column}\" of relation \"{relation}\" does not exist"
                )
            })
    }

    /// The Arrow schema of the relation's rows.
    pub fn schema(&self) -> SchemaRef {
        Arc::new(Schema::new(
            self.columns
                .iter()
                .map(|c| c.ty.field(&c.name, !c.not_null))
                .collect::<Vec<_>>(),
        ))
    }
}

/// A `CREATE INDEX`: recorded so clients see it; scans do not use it yet.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IndexMeta {
    /// Indexed relation.
    pub table: String,
    /// Indexed columns.
    pub columns: Vec<String>,
    /// `UNIQUE`.
    pub unique: bool,
}

/// A schema (namespace).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SchemaMeta {
    /// Tables and streams by name.
    pub relations: BTreeMap<String, RelationMeta>,
    /// Indexes by name.
    #[serde(default)]
    pub indexes: BTreeMap<String, IndexMeta>,
}

/// A database.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct DatabaseMeta {
    /// Schemas by name.
    pub schemas: BTreeMap<String, SchemaMeta>,
}

/// The whole catalog document.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CatalogDoc {
    /// Next relation id.
    pub next_id: u64,
    /// Databases by name.
    pub databases: BTreeMap<String, DatabaseMeta>,
}

impl Default for CatalogDoc {
    fn default() -> Self {
        let mut doc = CatalogDoc {
            next_id: 1,
            databases: BTreeMap::from([(DEFAULT_DATABASE.to_string(), DatabaseMeta::new())]),
        };
        doc.add_standard_databases();
        doc
    }
}

impl DatabaseMeta {
    /// An empty database with its `public` schema.
    pub fn new() -> Self {
        let mut db = DatabaseMeta::default();
        db.schemas
            .insert(DEFAULT_SCHEMA.into(), SchemaMeta::default());
        db
    }
}

impl CatalogDoc {
    /// Add the [`STANDARD_DATABASES`] that are missing (a catalog made before they were
    /// standard, or one where they were dropped); true when one was added.
    fn add_standard_databases(&mut self) -> bool {
        let mut added = false;
        for name in STANDARD_DATABASES {
            if !self.databases.contains_key(name) {
                self.databases.insert(name.to_string(), DatabaseMeta::new());
                added = true;
            }
        }
        added
    }

    /// A database by name or 3D000.
    pub fn database(&self, name: &str) -> Result<&DatabaseMeta> {
        self.databases
            .get(name)
            .ok_or_else(|| BrookError::UndefinedDatabase(name.into()))
    }

    /// A mutable database by name or 3D000.
    pub fn database_mut(&mut self, name: &str) -> Result<&mut DatabaseMeta> {
        self.databases
            .get_mut(name)
            .ok_or_else(|| BrookError::UndefinedDatabase(name.into()))
    }

    /// The relation with id `id`, wherever it is.
    pub fn relation_by_id(&self, id: u64) -> Option<&RelationMeta> {
        self.databases
            .values()
            .flat_map(|d| d.schemas.values())
            .flat_map(|s| s.relations.values())
            .find(|r| r.id == id)
    }

    /// A mutable schema or 3F000.
    pub fn schema_mut(&mut self, db: &str, schema: &str) -> Result<&mut SchemaMeta> {
        self.database_mut(db)?
            .schemas
            .get_mut(schema)
            .ok_or_else(|| BrookError::UndefinedSchema(schema.into()))
    }
}

/// The catalog and where it is persisted.
#[derive(Debug)]
pub struct Catalog {
    dir: PathBuf,
    doc: Mutex<CatalogDoc>,
}

impl Catalog {
    /// Load the catalog of a data directory, creating it when absent.
    pub fn open(dir: &Path) -> Result<Catalog> {
        let path = dir.join("catalog.json");
        let doc = match std::fs::read(&path) {
            Ok(bytes) => {
                let mut doc: CatalogDoc = serde_json::from_slice(&bytes).map_err(|e| {
                    brook_err!(Internal, "catalog {} is unreadable: {e}", path.display())
                })?;
                if doc.add_standard_databases() {
                    write_doc(dir, &doc)?;
                }
                doc
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                let held = relation_dirs(dir)?;
                if !held.is_empty() {
                    return Err(brook_err!(DataCorrupted, "{} is missing but {} holds data of {} relation(s): refusing to start with an empty catalog. Restore catalog.json from a backup (or start with another --data-dir)",
                        path.display(),
                        dir.join("relations").display(),
                        held.len()));
                }
                let doc = CatalogDoc::default();
                write_doc(dir, &doc)?;
                doc
            }
            Err(e) => return Err(e.into()),
        };
        Ok(Catalog {
            dir: dir.to_path_buf(),
            doc: Mutex::new(doc),
        })
    }

    /// The data directory the catalog describes.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Read access to the current catalog.
    pub fn read(&self) -> MutexGuard<'_, CatalogDoc> {
        match self.doc.lock() {
            Ok(g) => g,
            Err(p) => p.into_inner(),
        }
    }

    /// Apply a change and persist it; on error nothing changes.
    pub fn update<T>(&self, f: impl FnOnce(&mut CatalogDoc) -> Result<T>) -> Result<T> {
        let mut guard = self.read();
        let mut next = guard.clone();
        let out = f(&mut next)?;
        if next != *guard {
            write_doc(&self.dir, &next)?;
            *guard = next;
        }
        Ok(out)
    }
}

/// Where relation `id` of data directory `dir` keeps its files.
pub fn relation_path(dir: &Path, id: u64) -> PathBuf {
    dir.join("relations").join(id.to_string())
}

/// The ids of the relation directories under `dir/relations` (other names are ignored).
pub fn relation_dirs(dir: &Path) -> Result<Vec<u64>> {
    let rel = dir.join("relations");
    let entries = match std::fs::read_dir(&rel) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e.into()),
    };
    let mut ids = Vec::new();
    for entry in entries {
        if let Some(id) = entry?.file_name().to_str().and_then(|n| n.parse().ok()) {
            ids.push(id);
        }
    }
    ids.sort_unstable();
    Ok(ids)
}

/// Every relation the catalog names, as (database, schema, name, id).
pub fn all_relations(doc: &CatalogDoc) -> Vec<(String, String, String, u64)> {
    let mut out = Vec::new();
    for (dname, db) in &doc.databases {
        for (sname, schema) in &db.schemas {
            for (rname, rel) in &schema.relations {
                out.push((dname.clone(), sname.clone(), rname.clone(), rel.id));
            }
        }
    }
    out
}

fn write_doc(dir: &Path, doc: &CatalogDoc) -> Result<()> {
    let tmp = dir.join("catalog.json.tmp");
    let bytes = serde_json::to_vec_pretty(doc).map_err(|e| BrookError::internal(e.to_string()))?;
    {
        use std::io::Write;
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(&bytes)?;
        f.sync_all()?;
    }
    std::fs::rename(&tmp, dir.join("catalog.json"))?;
    sync_dir(dir)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn update_persists_and_failed_update_changes_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let cat = Catalog::open(dir.path()).unwrap();
        cat.update(|d| {
            d.databases.insert("other".into(), DatabaseMeta::default());
            Ok(())
        })
        .unwrap();
        let err = cat.update(|d| {
            d.databases.insert("nope".into(), DatabaseMeta::default());
            Err::<(), _>(brook_err!(Internal, "boom"))
        });
        assert!(err.is_err());
        let again = Catalog::open(dir.path()).unwrap();
        let doc = again.read();
        assert!(doc.databases.contains_key("other"));
        assert!(!doc.databases.contains_key("nope"));
    }

    /// A lost catalog beside relation data refuses to open instead of starting empty
    /// (which used to delete every relation directory as an orphan).
    #[test]
    fn missing_catalog_with_relation_data_refuses() {
        let dir = tempfile::tempdir().unwrap();
        Catalog::open(dir.path()).unwrap();
        std::fs::create_dir_all(dir.path().join("relations/7")).unwrap();
        std::fs::remove_file(dir.path().join("catalog.json")).unwrap();
        let err = Catalog::open(dir.path()).unwrap_err();
        assert_eq!(err.sqlstate(), "XX001");
        assert!(err.to_string().contains("catalog.json is missing"), "{err}");
        assert!(dir.path().join("relations/7").exists());
    }

    /// `postgres` and `template1` are in a new catalog and are added to an older one.
    #[test]
    fn standard_databases_exist() {
        let dir = tempfile::tempdir().unwrap();
        let cat = Catalog::open(dir.path()).unwrap();
        assert!(cat.read().database("postgres").is_ok());
        cat.update(|d| {
            d.databases.remove("template1");
            Ok(())
        })
        .unwrap();
        let again = Catalog::open(dir.path()).unwrap();
        assert!(again.read().database("template1").is_ok());
        assert!(again.read().database(DEFAULT_DATABASE).is_ok());
    }
}
