//! ALTER TABLE (ADD COLUMN here; DROP and RENAME COLUMN in `column_shape`; RENAME TO and
//! ALTER COLUMN in `alter_column`),
//! `ALTER ... OWNER TO` and TRUNCATE.

use crate::catalog::{RelKind, RelationMeta};
use crate::ident::ident_name;
use crate::session::Outcome;
use crate::session::{Notice, Session};
use crate::storage::TableStore;
use brook_common::{brook_err, BrookError, Result};
use datafusion::sql::sqlparser::ast::{self, AlterTableOperation};
use std::sync::Arc;

impl Session {
    /// `ALTER <kind> name OWNER TO role`: Brook has one role, which owns every object, so
    /// the object must exist (42P01 / 3F000 / 3D000) and the role be that one (or
    /// CURRENT_USER / SESSION_USER / CURRENT_ROLE); another role does not exist (42704).
    pub(crate) fn alter_owner(
        &mut self,
        kind: &str,
        name: &ast::ObjectName,
        role: &str,
        if_exists: bool,
    ) -> Result<Outcome> {
        match self.check_owner(kind, name, role) {
            // IF EXISTS: a missing object is skipped with a notice, as in PostgreSQL
            Err(
                e @ (BrookError::UndefinedTable(_)
                | BrookError::UndefinedSchema(_)
                | BrookError::UndefinedDatabase(_)),
            ) if if_exists => {
                self.notices.push(format!("{e}, skipping").into());
                Ok(Outcome::Command(format!("ALTER {kind}")))
            }
            other => other,
        }
    }

    fn check_owner(&self, kind: &str, name: &ast::ObjectName, role: &str) -> Result<Outcome> {
        let is_self =
            ["current_user", "session_user", "current_role"].contains(&role) || role == self.user;
        if !is_self {
            return Err(brook_err!(
                UndefinedObject,
                "role \"{role}\" does not exist"
            ));
        }
        // Resolved before the catalog is held: resolving reads it (`search_path`).
        let resolved = match kind {
            "SCHEMA" | "DATABASE" => None,
            _ => Some(self.resolve(name)?),
        };
        let doc = self.engine.catalog.read();
        match kind {
            "SCHEMA" => {
                let schema = crate::ident::object_parts(name)?.join(".");
                if !doc.database(&self.db.name)?.schemas.contains_key(&schema) {
                    return Err(BrookError::UndefinedSchema(schema));
                }
            }
            "DATABASE" => {
                doc.database(&crate::ident::object_parts(name)?.join("."))?;
            }
            "TABLE" | "VIEW" | "MATERIALIZED VIEW" | "SEQUENCE" | "STREAM" => {
                let (schema, rel) = resolved.unwrap_or_default();
                let s = doc.database(&self.db.name)?.schemas.get(&schema);
                let exists = s.is_some_and(|s| {
                    s.relations.contains_key(&rel) || s.sequences.contains_key(&rel)
                });
                if !exists {
                    return Err(BrookError::UndefinedTable(rel));
                }
            }
            "AGGREGATE" => {
                let (_, aggregate) = resolved.unwrap_or_default();
                drop(doc);
                if self.aggregate(&aggregate).is_none() {
                    return Err(brook_err!(
                        UndefinedFunction,
                        "aggregate {aggregate} does not exist"
                    ));
                }
                return Ok(Outcome::Command("ALTER AGGREGATE".into()));
            }
            "FUNCTION" => {
                let (_, function) = resolved.unwrap_or_default();
                drop(doc);
                if self.function(&function).is_none() {
                    return Err(brook_err!(
                        UndefinedFunction,
                        "function {function} does not exist"
                    ));
                }
                return Ok(Outcome::Command("ALTER FUNCTION".into()));
            }
            other => {
                return Err(brook_err!(
                    Unsupported,
                    "ALTER {other} ... OWNER TO (Brook has no such objects)"
                ))
            }
        }
        Ok(Outcome::Command(format!("ALTER {kind}")))
    }

    /// The relation an ALTER TABLE changes; None (with PostgreSQL's notice) when `IF
    /// EXISTS` finds none.
    pub(crate) fn altered_relation(
        &mut self,
        schema: &str,
        name: &str,
        if_exists: bool,
    ) -> Result<Option<(RelationMeta, Arc<TableStore>)>> {
        match self.writable(schema, name) {
            Ok(r) => Ok(Some(r)),
            Err(BrookError::UndefinedTable(_)) if if_exists => {
                self.notices
                    .push(format!("relation \"{name}\" does not exist, skipping").into());
                Ok(None)
            }
            Err(e) => Err(e),
        }
    }

    pub(crate) async fn alter_table(&mut self, at: ast::AlterTable) -> Result<Outcome> {
        let (schema, mut name) = self.resolve(&at.name)?;
        // `ALTER TABLE v RENAME TO w` of a view, index or sequence renames it, as in
        // PostgreSQL (a table's rename below holds its write lock).
        if let [AlterTableOperation::RenameTable {
            table_name: ast::RenameTableNameKind::To(to) | ast::RenameTableNameKind::As(to),
        }] = at.operations.as_slice()
        {
            if let ([part], Err(_)) = (to.0.as_slice(), self.writable(&schema, &name)) {
                if let Some(to) = part.as_ident() {
                    return self.rename_object(
                        brook_planner::statement::RenameKind::Table,
                        &at.name,
                        to,
                        at.if_exists,
                    );
                }
            }
        }
        let Some((mut meta, store)) = self.altered_relation(&schema, &name, at.if_exists)? else {
            return Ok(Outcome::Command("ALTER TABLE".into()));
        };
        for op in at.operations {
            match op {
                AlterTableOperation::AddColumn {
                    column_def,
                    if_not_exists,
                    ..
                } => {
                    let cname = ident_name(&column_def.name);
                    self.check_add_column(&schema, &name, &cname)?;
                    if meta.columns.iter().any(|c| c.name == cname) {
                        if if_not_exists {
                            self.notices.push(Notice::skipped(
                                "42701",
                                format!("column \"{cname}\" of relation \"{name}\" already exists"),
                            ));
                            continue;
                        }
                        return Err(BrookError::DuplicateObject {
                            what: "column",
                            name: cname,
                            code: "42701",
                        });
                    }
                    let mut defs =
                        self.columns_from_defs(std::slice::from_ref(&column_def), &[], meta.kind)?;
                    if !defs.primary_key.is_empty() {
                        return Err(brook_err!(Unsupported, "ADD COLUMN ... PRIMARY KEY"));
                    }
                    if !defs.sequences.is_empty() {
                        return Err(brook_err!(
                            Unsupported,
                            "ADD COLUMN of a SERIAL or identity column"
                        ));
                    }
                    let col = defs.columns.remove(0);
                    let mut next = meta.clone();
                    next.columns.push(col);
                    let idx = next.columns.len() - 1;
                    // Existing rows get the default (or NULL): rewrite the relation with the
                    // new column, then switch the catalog.
                    let fill = if next.columns[idx].default.is_some() {
                        Some(self.default_value(&next, idx).await?)
                    } else {
                        None
                    };
                    if next.columns[idx].not_null && fill.is_none() && store.row_count() > 0 {
                        return Err(brook_err!(
                            NotNullViolation,
                            "column \"{}\" of relation \"{name}\" contains null values",
                            next.columns[idx].name
                        ));
                    }
                    let new_schema = next.schema();
                    meta = self
                        .reshape_rows(
                            &schema,
                            &name,
                            (&meta, &store),
                            next,
                            |b| {
                                let mut cols = b.columns().to_vec();
                                cols.push(match &fill {
                                    Some(v) => v.values(b.num_rows())?,
                                    None => datafusion::arrow::array::new_null_array(
                                        new_schema.field(idx).data_type(),
                                        b.num_rows(),
                                    ),
                                });
                                Ok(cols)
                            },
                            |_| {},
                        )
                        .await?;
                }
                AlterTableOperation::DropColumn {
                    column_names,
                    if_exists,
                    drop_behavior,
                    ..
                } => {
                    let cascade = drop_behavior == Some(ast::DropBehavior::Cascade);
                    for column in &column_names {
                        let cname = ident_name(column);
                        if if_exists && !meta.columns.iter().any(|c| c.name == cname) {
                            self.notices.push(
                                format!(
                                    "column \"{cname}\" of relation \"{name}\" does not exist, \
                                     skipping"
                                )
                                .into(),
                            );
                            continue;
                        }
                        meta = self
                            .drop_column(
                                &schema,
                                &name,
                                (&meta, &store),
                                column,
                                if_exists,
                                cascade,
                            )
                            .await?;
                    }
                }
                AlterTableOperation::RenameColumn {
                    old_column_name,
                    new_column_name,
                } => {
                    meta = self
                        .rename_column(
                            &schema,
                            &name,
                            (&meta, &store),
                            &old_column_name,
                            &new_column_name,
                        )
                        .await?;
                }
                AlterTableOperation::RenameTable { table_name } => {
                    let to = match &table_name {
                        ast::RenameTableNameKind::To(n) | ast::RenameTableNameKind::As(n) => n,
                    };
                    // Under the write lock, as PostgreSQL's RENAME waits for the table's
                    // writers: a transaction block that wrote it commits under the name
                    // its statements used. A block renaming what it wrote holds the lock
                    // already, and its rows (kept by the relation's id) commit under the
                    // new name: dbt's `CREATE TABLE x__dbt_tmp AS ...; ALTER TABLE
                    // x__dbt_tmp RENAME TO x` in one block (0A000 before).
                    let txn = if self.block_wrote(&meta) {
                        None
                    } else {
                        Some(self.begin_write(&meta, &store, false).await?)
                    };
                    name = self.rename_table(&schema, &name, to)?;
                    drop(txn);
                    (meta, _) = self.relation(&schema, &name)?;
                }
                AlterTableOperation::AddConstraint {
                    constraint: ast::TableConstraint::PrimaryKey(key),
                    ..
                } => {
                    // The rows are checked under the write lock, so none arrives unchecked.
                    let txn = self.ddl_lock(&meta, &store).await?;
                    let next = self.add_primary_key(&meta, &store, &name, &key)?;
                    self.engine
                        .update_relation(&self.db, &schema, &name, next.clone())?;
                    drop(txn);
                    meta = next;
                }
                AlterTableOperation::AlterColumn {
                    column_name,
                    op:
                        ast::AlterColumnOperation::AddGenerated {
                            generated_as,
                            sequence_options,
                        },
                } => {
                    let txn = self.ddl_lock(&meta, &store).await?;
                    let (next, column, seq) = self.add_identity(
                        &meta,
                        &name,
                        &column_name,
                        generated_as,
                        sequence_options.unwrap_or_default(),
                    )?;
                    self.engine.add_identity(
                        &self.db,
                        &schema,
                        &name,
                        column,
                        next.clone(),
                        seq,
                    )?;
                    drop(txn);
                    meta = next;
                }
                AlterTableOperation::AlterColumn {
                    column_name,
                    op:
                        ast::AlterColumnOperation::SetDataType {
                            data_type, using, ..
                        },
                } => {
                    meta = self
                        .alter_column_type(
                            &schema,
                            &name,
                            (&meta, &store),
                            &column_name,
                            &data_type,
                            using.as_ref(),
                        )
                        .await?;
                }
                AlterTableOperation::AlterColumn { column_name, op } => {
                    // Under the write lock (an empty transaction, never committed), so SET
                    // NOT NULL checks every row there will be; writers planned against the
                    // old definition retry (40001).
                    let txn = self.ddl_lock(&meta, &store).await?;
                    let next = self
                        .alter_column(&meta, &store, &name, &column_name, op)
                        .await?;
                    self.engine
                        .update_relation(&self.db, &schema, &name, next.clone())?;
                    drop(txn);
                    meta = next;
                }
                other => return Err(brook_err!(Unsupported, "ALTER TABLE {other}")),
            }
        }
        Ok(Outcome::Command("ALTER TABLE".into()))
    }

    pub(crate) async fn truncate(&mut self, t: ast::Truncate) -> Result<Outcome> {
        for target in &t.table_names {
            let (schema, name) = self.resolve(&target.name)?;
            let (meta, store) = self.writable(&schema, &name)?;
            if meta.kind == RelKind::Stream {
                return Err(brook_err!(
                    WrongObjectType,
                    "cannot truncate stream \"{name}\": streams are append-only"
                ));
            }
            if self.in_block() {
                // Inside a transaction block TRUNCATE is a write of the block (undone by
                // ROLLBACK), as in PostgreSQL.
                let txn = self.begin_dml_write(&meta, &store, &name, true).await?;
                self.commit_write(txn, &meta, &name, false).await?;
                continue;
            }
            let mut txn = self.begin_write(&meta, &store, true).await?;
            self.mark_ddl_write(&mut txn);
            txn.commit()?;
        }
        Ok(Outcome::Command("TRUNCATE TABLE".into()))
    }
}
