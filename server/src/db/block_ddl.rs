//! The end of a transaction block's DDL (see `catalog::undo`): COMMIT forgets its catalog
//! changes and removes the data of what it dropped; ROLLBACK puts the catalog back and
//! makes the database's context match it again (relations registered anew, materialized
//! views rebuilt, what the block created removed); startup settles the blocks a crash left
//! open. A relation a block dropped keeps its store and data directory until the block
//! commits.

use super::{lock, relation_dir, Database, Engine};
use crate::catalog::undo::{self, Change, EntryKind};
use crate::catalog::{all_relations, Catalog, CatalogDoc, RelKind};
use crate::storage::Decisions;
use brook_common::{BrookError, Result};
use datafusion::catalog::{CatalogProvider, MemorySchemaProvider};
use std::collections::BTreeSet;
use std::path::Path;
use std::sync::Arc;

/// The ids of the relations `changes` name that `doc` names no more.
fn gone(doc: &CatalogDoc, changes: &[Change]) -> Vec<u64> {
    let named: BTreeSet<u64> = all_relations(doc).into_iter().map(|r| r.3).collect();
    undo::relation_ids(changes)
        .into_iter()
        .map(|(id, _)| id)
        .filter(|id| !named.contains(id))
        .collect()
}

/// At startup, before any relation is opened: keep the catalog changes of blocks whose
/// decision is recorded (the crash came after their COMMIT) and undo the others; remove
/// the data of the relations either left unnamed (dropped by a committed block, created by
/// one that never committed).
pub(super) fn settle_pending(
    data_dir: &Path,
    catalog: &Catalog,
    decisions: &Decisions,
) -> Result<()> {
    if catalog.read().pending.is_empty() {
        return Ok(());
    }
    let gone_ids = catalog.update(|doc| {
        let pending = std::mem::take(&mut doc.pending);
        let mut all = Vec::new();
        for (block, changes) in pending.into_iter().rev() {
            if decisions.committed(block) {
                tracing::info!(block, "the DDL of a transaction block that committed before the server stopped is kept");
            } else {
                tracing::info!(block, changes = changes.len(), "undoing the DDL of a transaction block that had not committed when the server stopped");
                undo::undo(doc, &changes);
            }
            all.extend(changes);
        }
        Ok(gone(doc, &all))
    })?;
    for id in gone_ids {
        remove_data(data_dir, id);
    }
    Ok(())
}

fn remove_data(data_dir: &Path, id: u64) {
    let dir = relation_dir(data_dir, id);
    match std::fs::remove_dir_all(&dir) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => {
            tracing::warn!(dir = %dir.display(), error = %e, "could not remove a dropped relation's data; it is reported as an orphan at next start")
        }
    }
}

impl Engine {
    /// How many catalog changes block `block` has made so far (where a SAVEPOINT is).
    pub fn block_ddl_len(&self, block: u64) -> usize {
        self.catalog.read().pending.get(&block).map_or(0, Vec::len)
    }

    /// Whether block `block` changed the catalog (its COMMIT then records a decision).
    pub fn block_changed_catalog(&self, block: u64) -> bool {
        self.catalog.read().pending.contains_key(&block)
    }

    /// The relations block `block` dropped (named before its changes, not now).
    pub fn dropped_by_block(&self, block: u64) -> Vec<u64> {
        let doc = self.catalog.read();
        doc.pending
            .get(&block)
            .map(|changes| gone(&doc, changes))
            .unwrap_or_default()
    }

    /// 42P01 for a write to a relation another session's open block created (it does not
    /// exist for others until that block commits, as in PostgreSQL).
    pub fn check_created_visible(&self, meta: &crate::catalog::RelationMeta) -> Result<()> {
        let doc = self.catalog.read();
        match undo::created_by(&doc, meta.id) {
            Some(block) if undo::journal() != Some(block) => {
                let name = all_relations(&doc)
                    .into_iter()
                    .find(|r| r.3 == meta.id)
                    .map_or_else(|| meta.id.to_string(), |r| r.2);
                Err(BrookError::UndefinedTable(name))
            }
            _ => Ok(()),
        }
    }

    /// The last step of block `block`'s COMMIT, after its decision is recorded: forget its
    /// catalog changes, and remove the data of the relations it dropped.
    pub fn commit_block_ddl(&self, block: u64) -> Result<()> {
        let gone_ids = self.catalog.update(|doc| {
            let changes = doc.pending.remove(&block).unwrap_or_default();
            Ok(gone(doc, &changes))
        })?;
        for id in gone_ids {
            lock(&self.stores).remove(&id);
            remove_data(&self.data_dir, id);
        }
        Ok(())
    }

    /// Undo block `block`'s catalog changes from the `from`th on (0: ROLLBACK; a
    /// savepoint's count: ROLLBACK TO it), and make `db`'s context match the catalog again.
    pub fn undo_block_ddl(&self, db: &Arc<Database>, block: u64, from: usize) -> Result<()> {
        let undone = self.catalog.update(|doc| {
            let Some(all) = doc.pending.get_mut(&block) else {
                return Ok(Vec::new());
            };
            let tail = all.split_off(from.min(all.len()));
            if all.is_empty() {
                doc.pending.remove(&block);
            }
            undo::undo(doc, &tail);
            Ok(tail)
        })?;
        if undone.is_empty() {
            return Ok(());
        }
        self.resync(db, &undone)
    }

    /// After `undone` was undone in the catalog: schemas, relations and functions of `db`
    /// as the catalog has them now.
    fn resync(&self, db: &Arc<Database>, undone: &[Change]) -> Result<()> {
        let ours: Vec<&Change> = undone.iter().filter(|c| c.db == db.name).collect();
        let doc = self.catalog.read().clone();
        let schemas = &doc.database(&db.name)?.schemas;
        for c in ours.iter().filter(|c| c.kind == EntryKind::Schema) {
            let exists = schemas.contains_key(&c.schema);
            match (exists, db.catalog.schema(&c.schema)) {
                (true, None) => {
                    let provider = Arc::new(MemorySchemaProvider::new());
                    db.catalog.register_schema(
                        &c.schema,
                        self.user_schema(provider, &db.name, &c.schema),
                    )?;
                }
                (false, Some(provider)) => {
                    for name in provider.table_names() {
                        stop_view(provider.deregister_table(&name)?);
                    }
                    db.catalog.deregister_schema(&c.schema, true)?;
                }
                _ => {}
            }
        }
        let relations: BTreeSet<(&str, &str)> = ours
            .iter()
            .filter(|c| c.kind == EntryKind::Relation)
            .map(|c| (c.schema.as_str(), c.name.as_str()))
            .collect();
        for (schema, name) in relations {
            let Some(provider) = db.schema_provider(schema) else {
                continue;
            };
            stop_view(provider.deregister_table(name)?);
            let Some(meta) = schemas.get(schema).and_then(|s| s.relations.get(name)) else {
                continue;
            };
            match meta.kind {
                // Planned below, with every view.
                RelKind::View => {}
                RelKind::MaterializedView | RelKind::Synopsis => {
                    self.rebuild_view(db, schema, name)?;
                }
                RelKind::Table | RelKind::Stream => {
                    self.register(db, schema, name, meta.clone())?;
                }
            }
        }
        for id in gone(&doc, undone) {
            lock(&self.stores).remove(&id);
            remove_data(&self.data_dir, id);
        }
        if ours
            .iter()
            .any(|c| matches!(c.kind, EntryKind::Function | EntryKind::Aggregate))
        {
            self.refresh_functions(db)?;
        }
        self.register_views(db)
    }
}

/// Stop maintaining a deregistered materialized view or synopsis.
fn stop_view(table: Option<Arc<dyn datafusion::catalog::TableProvider>>) {
    if let Some(t) = table {
        if let Some(v) = t.downcast_ref::<crate::stream::view::ViewTable>() {
            v.state.stop_token().cancel();
        }
    }
}
