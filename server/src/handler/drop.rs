//! DROP of tables, streams, views, synopses and indexes, with their dependents.

use crate::catalog::RelKind;
use crate::ident::object_parts;
use crate::session::Outcome;
use crate::session::Session;
use brook_common::{brook_err, BrookError, Result};
use datafusion::sql::sqlparser::ast::{ObjectName, ObjectType};
use std::collections::HashSet;

impl Session {
    /// DROP of a table, materialized view, schema, database or index.
    pub(crate) fn drop(
        &mut self,
        object_type: ObjectType,
        names: &[ObjectName],
        if_exists: bool,
        cascade: bool,
    ) -> Result<Outcome> {
        match object_type {
            ObjectType::Table => {
                self.drop_relations(names, RelKind::Table, if_exists, cascade, "DROP TABLE")
            }
            ObjectType::MaterializedView => self.drop_relations(
                names,
                RelKind::MaterializedView,
                if_exists,
                cascade,
                "DROP MATERIALIZED VIEW",
            ),
            ObjectType::Schema => {
                for n in names {
                    let name = object_parts(n)?.join(".");
                    if let Some(dropped) = self.drop_schema_if_temp(&name) {
                        dropped?;
                        continue;
                    }
                    // What reads the schema's relations from other schemas goes first.
                    if cascade {
                        for rel in self.relation_names_in(&name) {
                            self.drop_dependents(&name, &rel)?;
                        }
                    }
                    let dropped = self
                        .engine
                        .drop_schema(&self.db, &name, if_exists, cascade)?;
                    if !dropped {
                        self.notices
                            .push(format!("schema \"{name}\" does not exist, skipping").into());
                    }
                }
                Ok(Outcome::Command("DROP SCHEMA".into()))
            }
            ObjectType::Database => {
                for n in names {
                    let name = object_parts(n)?.join(".");
                    if name == self.db.name {
                        return Err(brook_err!(
                            ObjectInUse,
                            "cannot drop the currently open database \"{name}\""
                        ));
                    }
                    self.engine.drop_database(&name, if_exists)?;
                }
                Ok(Outcome::Command("DROP DATABASE".into()))
            }
            ObjectType::View => {
                self.drop_relations(names, RelKind::View, if_exists, cascade, "DROP VIEW")
            }
            ObjectType::Index => self.drop_indexes(names, if_exists),
            ObjectType::Sequence => self.drop_sequences(names, if_exists, cascade),
            other => Err(brook_err!(Unsupported, "DROP {other}")),
        }
    }

    /// The names of the relations of `schema` (none when it does not exist).
    fn relation_names_in(&self, schema: &str) -> Vec<String> {
        let doc = self.engine.catalog.read();
        doc.database(&self.db.name)
            .ok()
            .and_then(|d| d.schemas.get(schema))
            .map(|s| s.relations.keys().cloned().collect())
            .unwrap_or_default()
    }

    /// The materialized views and synopses that read `schema.name` directly.
    pub(crate) fn dependents(
        &self,
        schema: &str,
        name: &str,
    ) -> Result<Vec<(String, String, RelKind)>> {
        let doc = self.engine.catalog.read();
        let db = doc.database(&self.db.name)?;
        let mut out = Vec::new();
        for (vschema, s) in &db.schemas {
            for (vname, rel) in &s.relations {
                if rel.depends_on.iter().any(|(a, b)| a == schema && b == name) {
                    out.push((vschema.clone(), vname.clone(), rel.kind));
                }
            }
        }
        Ok(out)
    }

    /// Drop what reads `schema.name`, and what reads those, first (CASCADE), telling the
    /// client each one as PostgreSQL does.
    pub(crate) fn drop_dependents(&mut self, schema: &str, name: &str) -> Result<()> {
        let mut seen = HashSet::from([(schema.to_string(), name.to_string())]);
        self.drop_dependents_once(schema, name, &mut seen)
    }

    /// [`Session::drop_dependents`], each relation once: dependencies may form a cycle
    /// (recursion through them without `seen` overflowed the stack and aborted the server).
    fn drop_dependents_once(
        &mut self,
        schema: &str,
        name: &str,
        seen: &mut HashSet<(String, String)>,
    ) -> Result<()> {
        for (vschema, vname, kind) in self.dependents(schema, name)? {
            if !seen.insert((vschema.clone(), vname.clone())) {
                continue;
            }
            self.drop_dependents_once(&vschema, &vname, seen)?;
            if self
                .engine
                .drop_relation(&self.db, &vschema, &vname, kind, true)?
            {
                self.notices
                    .push(format!("drop cascades to {} {vname}", kind.noun()).into());
            }
        }
        Ok(())
    }

    pub(crate) fn drop_relations(
        &mut self,
        names: &[ObjectName],
        kind: RelKind,
        if_exists: bool,
        cascade: bool,
        tag: &str,
    ) -> Result<Outcome> {
        // Every name is checked before any is dropped: a DROP that fails drops nothing, as
        // in PostgreSQL.
        let mut targets: Vec<(String, String)> = Vec::new();
        for n in names {
            targets.push(self.resolve(n)?);
        }
        let mut existing = Vec::new();
        for (schema, name) in &targets {
            let found = {
                let doc = self.engine.catalog.read();
                doc.database(&self.db.name)?
                    .schemas
                    .get(schema)
                    .and_then(|s| s.relations.get(name))
                    .map(|r| r.kind)
            };
            match found {
                None if if_exists => {
                    self.notices.push(
                        format!("{} \"{name}\" does not exist, skipping", kind.noun()).into(),
                    );
                    continue;
                }
                None => return Err(BrookError::UndefinedTable(name.clone())),
                Some(k) if k != kind => {
                    return Err(brook_err!(
                        WrongObjectType,
                        "\"{name}\" is not a {}; use DROP {}",
                        kind.noun(),
                        k.noun().to_uppercase()
                    ))
                }
                Some(_) => {}
            }
            let (meta, _) = self.relation(schema, name)?;
            // A block's DROP is undone with the block, so what the block wrote to the
            // relation may stay in it (the rows go with the relation when it commits).
            if !(self.block_wrote(&meta) && crate::catalog::undo::journal().is_some()) {
                self.refuse_ddl_on_block_write(&meta)?;
            }
            if !cascade {
                // A dependent dropped by the same statement does not hold the drop back.
                let blocking = self
                    .dependents(schema, name)?
                    .into_iter()
                    .find(|(vs, vn, _)| !targets.contains(&(vs.clone(), vn.clone())));
                if let Some((vschema, vname, vkind)) = blocking {
                    // 2BP01, as PostgreSQL.
                    return Err(brook_err!(
                        DependentObjects,
                        "cannot drop {} {name} because {} {vschema}.{vname} depends on it \
                         (use DROP ... CASCADE to drop the dependent objects too)",
                        kind.noun(),
                        vkind.noun()
                    ));
                }
            }
            existing.push((schema.clone(), name.clone()));
        }
        for (schema, name) in existing {
            if cascade {
                self.drop_dependents(&schema, &name)?;
            } else {
                // Dependents named in this statement go first.
                for (vschema, vname, vkind) in self.dependents(&schema, &name)? {
                    self.engine
                        .drop_relation(&self.db, &vschema, &vname, vkind, true)?;
                }
            }
            self.engine
                .drop_relation(&self.db, &schema, &name, kind, true)?;
        }
        Ok(Outcome::Command(tag.into()))
    }

    /// DROP INDEX: every name is checked before any index is dropped (a DROP that fails
    /// drops nothing, as in PostgreSQL).
    pub(crate) fn drop_indexes(
        &mut self,
        names: &[ObjectName],
        if_exists: bool,
    ) -> Result<Outcome> {
        let mut targets: Vec<(String, String)> = Vec::new();
        for n in names {
            let (schema, name) = match self.resolve(n) {
                Ok(r) => r,
                Err(BrookError::UndefinedSchema(schema)) if if_exists => {
                    self.notices
                        .push(format!("schema \"{schema}\" does not exist, skipping").into());
                    continue;
                }
                Err(e) => return Err(e),
            };
            let (index, relation) = {
                let doc = self.engine.catalog.read();
                let s = doc.database(&self.db.name)?.schemas.get(&schema);
                (
                    s.is_some_and(|s| s.indexes.contains_key(&name)),
                    s.is_some_and(|s| s.name_taken(&name)),
                )
            };
            if index {
                targets.push((schema, name));
            } else if relation {
                return Err(brook_err!(WrongObjectType, "\"{name}\" is not an index"));
            } else if if_exists {
                self.notices
                    .push(format!("index \"{name}\" does not exist, skipping").into());
            } else {
                return Err(brook_err!(
                    UndefinedObject,
                    "index \"{name}\" does not exist"
                ));
            }
        }
        let db = self.db.name.clone();
        self.engine.catalog.update(|doc| {
            for (schema, name) in &targets {
                doc.schema_mut(&db, schema)?.indexes.remove(name);
            }
            Ok(())
        })?;
        Ok(Outcome::Command("DROP INDEX".into()))
    }
}
