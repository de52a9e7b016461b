//! ALTER TABLE ... RENAME TO: one catalog update moves the relation (its id, and so its
//! data directory, stay), its indexes and the sequences it owns to the new name. A
//! materialized view or synopsis keeps its maintained state and its maintenance, which
//! read their inputs, not the view's name.

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
        if meta.kind.is_maintained() {
            return self.move_maintained(db, schema, name, new);
        }
        if let Some(p) = db.schema_provider(schema) {
            p.deregister_table(name)?;
        }
        self.register(db, schema, new, meta)
    }

    /// The provider of maintained relation `schema.name`, with its state, under `new`.
    fn move_maintained(&self, db: &Database, schema: &str, name: &str, new: &str) -> Result<()> {
        let state = self.view_state(db, schema, name)?;
        let provider = db
            .schema_provider(schema)
            .ok_or_else(|| BrookError::UndefinedSchema(schema.into()))?;
        let table = provider
            .deregister_table(name)?
            .ok_or_else(|| BrookError::UndefinedTable(name.into()))?;
        provider.register_table(new.to_string(), table)?;
        state.renamed(new);
        Ok(())
    }
}
