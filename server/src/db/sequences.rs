//! Sequences as catalog objects: CREATE, DROP and ALTER SEQUENCE ... RENAME (the values
//! they hand out are `catalog::sequence`'s).

use super::{Database, Engine};
use crate::catalog::sequence::{nextval_default, SequenceMeta};
use crate::catalog::{CatalogDoc, RelationMeta};
use brook_common::{brook_err, BrookError, Result};

impl Engine {
    /// Create sequence `schema.name`; false when it exists and `if_not_exists` is set.
    pub fn create_sequence(
        &self,
        db: &Database,
        schema: &str,
        name: &str,
        meta: SequenceMeta,
        if_not_exists: bool,
    ) -> Result<bool> {
        self.catalog.update(|doc| {
            let s = doc.schema_mut(&db.name, schema)?;
            if s.name_taken(name) {
                return if if_not_exists {
                    Ok(false)
                } else {
                    Err(BrookError::DuplicateTable(name.into()))
                };
            }
            if let Some((table, column)) = &meta.owned_by {
                let rel = s
                    .relations
                    .get(table)
                    .ok_or_else(|| BrookError::UndefinedTable(table.clone()))?;
                rel.column_index(column, table)?;
            }
            let mut m = meta.clone();
            m.id = doc.next_id;
            doc.next_id += 1;
            doc.schema_mut(&db.name, schema)?
                .sequences
                .insert(name.to_string(), m);
            Ok(true)
        })
    }

    /// Make column `column` of `schema.table` an identity column: `meta` is the new
    /// definition (the column's `identity` set), `seq` the sequence it owns, named
    /// `<table>_<column>_seq` and recorded in the same catalog update; the column's default
    /// becomes its `nextval`.
    pub fn add_identity(
        &self,
        db: &Database,
        schema: &str,
        table: &str,
        column: usize,
        meta: RelationMeta,
        seq: SequenceMeta,
    ) -> Result<()> {
        let registered = self.catalog.update(|doc| {
            let mut m = meta.clone();
            let col = m
                .columns
                .get_mut(column)
                .ok_or_else(|| brook_err!(Internal, "no column {column} in {table}"))?;
            let name = crate::catalog::sequence::owned_name(
                doc.schema_mut(&db.name, schema)?,
                table,
                &col.name,
            );
            let mut q = seq.clone();
            q.id = doc.next_id;
            doc.next_id += 1;
            q.owned_by = Some((table.to_string(), col.name.clone()));
            col.default = Some(nextval_default(schema, &name));
            let s = doc.schema_mut(&db.name, schema)?;
            s.sequences.insert(name, q);
            s.relations.insert(table.to_string(), m.clone());
            Ok(m)
        })?;
        self.register(db, schema, table, registered)?;
        self.register_views(db)
    }

    /// Drop sequence `schema.name`. Column defaults that take values from it are
    /// dependents: without `cascade` the drop is refused (2BP01), with it they are removed;
    /// an identity column's sequence can only go with its table.
    pub fn drop_sequence(
        &self,
        db: &Database,
        schema: &str,
        name: &str,
        if_exists: bool,
        cascade: bool,
    ) -> Result<bool> {
        let changed = self.catalog.update(|doc| {
            let s = doc.schema_mut(&db.name, schema)?;
            if !s.sequences.contains_key(name) {
                return if s.relations.contains_key(name) {
                    Err(brook_err!(WrongObjectType, "\"{name}\" is not a sequence"))
                } else if if_exists {
                    Ok(None)
                } else {
                    Err(BrookError::UndefinedTable(name.into()))
                };
            }
            let users = users_of(doc, &db.name, schema, name);
            if let Some((_, table, column)) = users
                .iter()
                .find(|(s, t, c)| identity_column(doc, &db.name, s, t, c))
            {
                return Err(BrookError::DependentObjects(format!("cannot drop sequence {name} because column {column} of table {table} requires it")));
            }
            if !users.is_empty() && !cascade {
                let (_, table, column) = &users[0];
                return Err(BrookError::DependentObjects(format!("cannot drop sequence {name} because other objects depend on it (default value for column {column} of table {table} depends on sequence {name}); use DROP ... CASCADE to drop the dependent objects too")));
            }
            let mut changed: Vec<(String, String, RelationMeta)> = Vec::new();
            for (sname, table, column) in users {
                let s = doc.schema_mut(&db.name, &sname)?;
                if let Some(rel) = s.relations.get_mut(&table) {
                    for c in rel.columns.iter_mut().filter(|c| c.name == column) {
                        c.default = None;
                    }
                    changed.push((sname.clone(), table.clone(), rel.clone()));
                }
            }
            doc.schema_mut(&db.name, schema)?.sequences.remove(name);
            Ok(Some(changed))
        })?;
        let Some(changed) = changed else {
            return Ok(false);
        };
        for (sname, table, meta) in changed {
            self.register(db, &sname, &table, meta)?;
        }
        Ok(true)
    }
}

impl Engine {
    /// `ALTER SEQUENCE schema.name RENAME TO new`. The sequence keeps its id, and so its
    /// counter (a cluster's key is the id too); the column defaults that call its `nextval`
    /// are rewritten to name it anew in the same catalog update (PostgreSQL's defaults hold
    /// the sequence's oid, so they follow a rename: Brook's hold its name).
    pub fn rename_sequence(
        &self,
        db: &Database,
        schema: &str,
        name: &str,
        new: &str,
    ) -> Result<()> {
        let changed = self.catalog.update(|doc| {
            let users = users_of(doc, &db.name, schema, name);
            let s = doc.schema_mut(&db.name, schema)?;
            if s.name_taken(new) {
                return Err(BrookError::DuplicateTable(new.into()));
            }
            let seq = s
                .sequences
                .remove(name)
                .ok_or_else(|| BrookError::UndefinedTable(name.into()))?;
            s.sequences.insert(new.to_string(), seq);
            let mut changed = Vec::new();
            for (sname, table, column) in users {
                let Some(rel) = doc.schema_mut(&db.name, &sname)?.relations.get_mut(&table) else {
                    continue;
                };
                for c in rel.columns.iter_mut().filter(|c| c.name == column) {
                    c.default = c
                        .default
                        .as_deref()
                        .map(|d| renamed_default(d, schema, &sname, name, new));
                }
                changed.push((sname, table, rel.clone()));
            }
            Ok(changed)
        })?;
        for (sname, table, meta) in changed {
            self.register(db, &sname, &table, meta)?;
        }
        Ok(())
    }
}

/// A DEFAULT that calls the `nextval` of sequence `schema.old` (as [`users_of`] recognises
/// it, on a column of schema `column_schema`), calling that of `schema.new` instead.
fn renamed_default(
    default: &str,
    schema: &str,
    column_schema: &str,
    old: &str,
    new: &str,
) -> String {
    if default == nextval_default(schema, old) {
        return nextval_default(schema, new);
    }
    let quoted = |s: &str| crate::ident::quote_if_needed(s).replace('\'', "''");
    let spelled = [
        (
            format!("nextval('{schema}.{old}'"),
            format!("nextval('{}.{}'", quoted(schema), quoted(new)),
        ),
        (
            format!("nextval('{old}'"),
            format!("nextval('{}'", quoted(new)),
        ),
    ];
    for (i, (before, after)) in spelled.iter().enumerate() {
        if (i == 0 || schema == column_schema) && default.starts_with(before.as_str()) {
            return format!("{after}{}", &default[before.len()..]);
        }
    }
    default.to_string()
}

/// The columns (schema, table, column) of database `db` whose DEFAULT is the `nextval` of
/// sequence `schema.name`.
fn users_of(doc: &CatalogDoc, db: &str, schema: &str, name: &str) -> Vec<(String, String, String)> {
    let Ok(d) = doc.database(db) else {
        return Vec::new();
    };
    // How a default names it: as written for the column (`nextval_default`), or with the
    // schema spelled out, or without it when the schema is public.
    let spellings = [
        nextval_default(schema, name),
        format!("nextval('{schema}.{name}'"),
        format!("nextval('{name}'"),
    ];
    let mut out = Vec::new();
    for (sname, s) in &d.schemas {
        for (rname, rel) in &s.relations {
            for c in &rel.columns {
                let Some(default) = &c.default else {
                    continue;
                };
                let named = spellings[0] == *default
                    || default.starts_with(&spellings[1])
                    || (schema == sname && default.starts_with(&spellings[2]));
                if named {
                    out.push((sname.clone(), rname.clone(), c.name.clone()));
                }
            }
        }
    }
    out
}

fn identity_column(doc: &CatalogDoc, db: &str, schema: &str, table: &str, column: &str) -> bool {
    doc.database(db)
        .ok()
        .and_then(|d| d.schemas.get(schema))
        .and_then(|s| s.relations.get(table))
        .and_then(|r| r.columns.iter().find(|c| c.name == column))
        .is_some_and(|c| c.identity.is_some())
}
