//! ALTER TABLE ... RENAME TO: one catalog update moves the relation (its id, and so its
//! data directory, stay), its indexes and the sequences it owns to the new name.

use super::{Database, Engine};
use brook_common::{BrookError, Result};

impl Engine {
    /// Rename relation `schema.name` of `db` to `schema.new`.
    pub fn rename_relation(
        &self,
        db: &Database,
        schema: &str,
        name: &str,
        new: &str,
    ) -> Result<()> {
        let meta = self.catalog.update(|doc| {
            let s = doc.schema_mut(&db.name, schema)?;
            if s.name_taken(new) {
                return Err(BrookError::DuplicateTable(new.into()));
            }
            let meta = s
                .relations
                .remove(name)
                .ok_or_else(|| BrookError::UndefinedTable(name.into()))?;
            for index in s.indexes.values_mut().filter(|i| i.table == name) {
                index.table = new.to_string();
            }
            for (table, _) in s.sequences.values_mut().filter_map(|q| q.owned_by.as_mut()) {
                if table == name {
                    *table = new.to_string();
                }
            }
            s.relations.insert(new.to_string(), meta.clone());
            Ok(meta)
        })?;
        if let Some(p) = db.schema_provider(schema) {
            p.deregister_table(name)?;
        }
        self.register(db, schema, new, meta)
    }
}
