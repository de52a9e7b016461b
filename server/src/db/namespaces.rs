//! Schemas and databases: CREATE and DROP of each, and the temporary schemas of sessions
//! (`session::temp`) — created flagged, dropped with their session or, after a crash, when
//! the database is next opened.

use super::{lock, relation_dir, Database, Engine};
use crate::catalog::{RelKind, DEFAULT_DATABASE};
use brook_common::{brook_err, BrookError, Result};
use datafusion::catalog::{CatalogProvider, MemorySchemaProvider};
use std::sync::Arc;

impl Engine {
    /// Drop the temporary schemas of sessions of an earlier run of the server (it stopped
    /// before they ended): their tables were the sessions' own.
    pub(super) fn drop_leftover_temp_schemas(&self, db: &Database) -> Result<()> {
        let leftovers: Vec<String> = {
            let doc = self.catalog.read();
            doc.database(&db.name)?
                .schemas
                .iter()
                .filter(|(_, s)| s.temporary)
                .map(|(n, _)| n.clone())
                .collect()
        };
        for schema in leftovers {
            tracing::info!(schema, "dropping a temporary schema left by an earlier run");
            self.drop_schema(db, &schema, true, true)?;
        }
        Ok(())
    }

    /// Create a schema in a database; false when IF NOT EXISTS found it.
    pub fn create_schema(&self, db: &Database, name: &str, if_not_exists: bool) -> Result<bool> {
        self.create_schema_of(db, name, if_not_exists, false)
    }

    /// Create a session's temporary schema (see `session::temp`).
    pub fn create_temp_schema(&self, db: &Database, name: &str) -> Result<()> {
        self.create_schema_of(db, name, true, true).map(|_| ())
    }

    fn create_schema_of(
        &self,
        db: &Database,
        name: &str,
        if_not_exists: bool,
        temporary: bool,
    ) -> Result<bool> {
        let created = self.catalog.update(|doc| {
            let d = doc.database_mut(&db.name)?;
            if d.schemas.contains_key(name) {
                return if if_not_exists {
                    Ok(false)
                } else {
                    Err(BrookError::DuplicateObject {
                        what: "schema",
                        name: name.into(),
                        code: "42P06",
                    })
                };
            }
            d.schemas.insert(
                name.to_string(),
                crate::catalog::SchemaMeta {
                    temporary,
                    ..Default::default()
                },
            );
            Ok(true)
        })?;
        if created {
            let provider = Arc::new(MemorySchemaProvider::new());
            db.catalog
                .register_schema(name, self.user_schema(provider, &db.name, name))?;
        }
        Ok(created)
    }

    /// Drop an empty schema (or with CASCADE, its relations, functions and aggregates too);
    /// false when IF EXISTS found none.
    pub fn drop_schema(
        &self,
        db: &Database,
        name: &str,
        if_exists: bool,
        cascade: bool,
    ) -> Result<bool> {
        let (rels, functions): (Vec<(String, RelKind)>, bool) = {
            let doc = self.catalog.read();
            match doc.database(&db.name)?.schemas.get(name) {
                None if if_exists => return Ok(false),
                None => return Err(BrookError::UndefinedSchema(name.into())),
                Some(s) => (
                    s.relations
                        .iter()
                        .map(|(n, r)| (n.clone(), r.kind))
                        .collect(),
                    !s.functions.is_empty() || !s.aggregates.is_empty(),
                ),
            }
        };
        if (!rels.is_empty() || functions) && !cascade {
            return Err(brook_err!(DependentObjects, "cannot drop schema {name} because other objects depend on it (use DROP SCHEMA ... CASCADE)"));
        }
        for (r, kind) in rels {
            self.drop_relation(db, name, &r, kind, true)?;
        }
        self.catalog.update(|doc| {
            doc.database_mut(&db.name)?.schemas.remove(name);
            Ok(())
        })?;
        db.catalog.deregister_schema(name, true)?;
        if functions {
            self.refresh_functions(db)?;
        }
        Ok(true)
    }

    /// Create a database; false when IF NOT EXISTS found it.
    pub fn create_database(&self, name: &str, if_not_exists: bool) -> Result<bool> {
        self.catalog.update(|doc| {
            if doc.databases.contains_key(name) {
                return if if_not_exists {
                    Ok(false)
                } else {
                    Err(BrookError::DuplicateObject {
                        what: "database",
                        name: name.into(),
                        code: "42P04",
                    })
                };
            }
            doc.databases
                .insert(name.to_string(), crate::catalog::DatabaseMeta::new());
            Ok(true)
        })
    }

    /// Drop a database nobody is connected to.
    pub fn drop_database(&self, name: &str, if_exists: bool) -> Result<()> {
        if name == DEFAULT_DATABASE {
            return Err(brook_err!(
                InvalidDefinition,
                "cannot drop the default database \"{name}\""
            ));
        }
        if name == "template1" {
            return Err(brook_err!(
                WrongObjectType,
                "cannot drop a template database"
            ));
        }
        if self.database_in_use(name) {
            return Err(brook_err!(
                ObjectInUse,
                "database \"{name}\" is being accessed by other users"
            ));
        }
        let removed = self
            .catalog
            .update(|doc| match doc.databases.remove(name) {
                Some(d) => Ok(Some(d)),
                None if if_exists => Ok(None),
                None => Err(BrookError::UndefinedDatabase(name.into())),
            })?;
        if let Some(db) = lock(&self.databases).remove(name) {
            db.stop_maintenance();
        }
        if let Some(d) = removed {
            for s in d.schemas.values() {
                for r in s.relations.values() {
                    lock(&self.stores).remove(&r.id);
                    let _ = std::fs::remove_dir_all(relation_dir(&self.data_dir, r.id));
                }
            }
        }
        Ok(())
    }
}
