//! `ALTER {VIEW | MATERIALIZED VIEW | INDEX | SEQUENCE} [IF EXISTS] name RENAME TO new`
//! (`ALTER TABLE ... RENAME` of a table is `alter.rs`'s). As in PostgreSQL, `ALTER INDEX`
//! and `ALTER TABLE` rename any relation, index or sequence; the others their own kind
//! only.

use crate::catalog::RelKind;
use crate::ident::ident_name;
use crate::session::{Outcome, Session};
use brook_common::{brook_err, BrookError, Result};
use brook_planner::statement::RenameKind;
use datafusion::sql::sqlparser::ast::{Ident, ObjectName};

/// What a name in a schema is.
enum Named {
    Relation(RelKind),
    Index,
    /// The index of a relation's primary key (`<table>_pkey`), which the relation holds.
    PrimaryKeyIndex,
    Sequence,
}

impl Session {
    pub(crate) fn rename_object(
        &mut self,
        kind: RenameKind,
        name: &ObjectName,
        to: &Ident,
        if_exists: bool,
    ) -> Result<Outcome> {
        let done = Outcome::Command(format!("ALTER {}", kind.sql()));
        let (schema, old) = self.resolve(name)?;
        let Some(named) = self.named(&schema, &old)? else {
            if if_exists {
                let missing = BrookError::UndefinedTable(old);
                self.notices.push(format!("{missing}, skipping").into());
                return Ok(done);
            }
            return Err(BrookError::UndefinedTable(old));
        };
        let new = ident_name(to);
        match (kind, named) {
            (RenameKind::Index | RenameKind::Table, Named::Index) => {
                self.rename_index(&schema, &old, &new)?
            }
            (RenameKind::View, Named::Relation(RelKind::View))
            | (RenameKind::MaterializedView, Named::Relation(RelKind::MaterializedView))
            | (RenameKind::Index | RenameKind::Table, Named::Relation(_)) => {
                self.rename_relation(&schema, &old, &new)?
            }
            (RenameKind::Sequence | RenameKind::Index | RenameKind::Table, Named::Sequence) => {
                self.engine.rename_sequence(&self.db, &schema, &old, &new)?
            }
            (RenameKind::Index | RenameKind::Table, Named::PrimaryKeyIndex) => {
                return Err(brook_err!(
                    Unsupported,
                    "renaming the index of a primary key (it is named after its table)"
                ))
            }
            (kind, _) => {
                let noun = match kind {
                    RenameKind::Table => "a table",
                    RenameKind::View => "a view",
                    RenameKind::MaterializedView => "a materialized view",
                    RenameKind::Index => "an index",
                    RenameKind::Sequence => "a sequence",
                };
                return Err(BrookError::WrongObjectType(format!(
                    "\"{old}\" is not {noun}"
                )));
            }
        }
        Ok(done)
    }

    /// What `name` is in `schema`, if anything.
    fn named(&self, schema: &str, name: &str) -> Result<Option<Named>> {
        let doc = self.engine.catalog.read();
        let Some(s) = doc.database(&self.db.name)?.schemas.get(schema) else {
            return Ok(None);
        };
        if let Some(r) = s.relations.get(name) {
            return Ok(Some(Named::Relation(r.kind)));
        }
        if s.indexes.contains_key(name) {
            return Ok(Some(Named::Index));
        }
        if s.sequences.contains_key(name) {
            return Ok(Some(Named::Sequence));
        }
        Ok(s.is_primary_key_index(name)
            .then_some(Named::PrimaryKeyIndex))
    }

    /// An index's new name: catalog metadata only (the index reads its table by name).
    fn rename_index(&mut self, schema: &str, old: &str, new: &str) -> Result<()> {
        let db = self.db.name.clone();
        self.engine.catalog.update(|doc| {
            let s = doc.schema_mut(&db, schema)?;
            if s.name_taken(new) {
                return Err(BrookError::DuplicateTable(new.to_string()));
            }
            let index = s
                .indexes
                .remove(old)
                .ok_or_else(|| BrookError::UndefinedTable(old.to_string()))?;
            s.indexes.insert(new.to_string(), index);
            Ok(())
        })
    }

    /// A view's (or other relation's) new name; refused while a view reads it (as a
    /// table's).
    fn rename_relation(&mut self, schema: &str, old: &str, new: &str) -> Result<()> {
        if let Some((vschema, vname, kind)) = self.dependents(schema, old)?.into_iter().next() {
            return Err(brook_err!(
                Unsupported,
                "renaming {old} while {} {vschema}.{vname} reads it (drop the {}, rename, \
                 then create it again)",
                kind.noun(),
                kind.noun()
            ));
        }
        self.engine.rename_relation(&self.db, schema, old, new)
    }
}
