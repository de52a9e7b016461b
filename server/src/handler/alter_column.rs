//! ALTER TABLE operations that change the catalog only: RENAME TO, ALTER COLUMN SET/DROP
//! DEFAULT, SET/DROP NOT NULL and ADD GENERATED AS IDENTITY, ADD PRIMARY KEY (after
//! checking the rows).

use crate::catalog::{RelKind, RelationMeta};
use crate::ident::{ident_name, object_parts};
use crate::session::Session;
use crate::storage::TableStore;
use crate::write::keys::KeyCheck;
use brook_common::{brook_err, BrookError, Result};
use datafusion::arrow::array::Array;
use datafusion::sql::sqlparser::ast::{
    self, AlterColumnOperation, Expr, Ident, ObjectName, PrimaryKeyConstraint,
};
use std::sync::Arc;

impl Session {
    /// `ALTER TABLE schema.name RENAME TO new`: the relation keeps its data, indexes and
    /// owned sequences. Refused while a view reads it (a view keeps its query as text, and
    /// would no longer find the relation by its old name).
    pub(crate) fn rename_table(
        &mut self,
        schema: &str,
        name: &str,
        to: &ObjectName,
    ) -> Result<String> {
        let parts = object_parts(to)?;
        let new = match parts.as_slice() {
            [n] => n.clone(),
            [s, n] if s == schema => n.clone(),
            _ => {
                return Err(brook_err!(
                    Syntax,
                    "ALTER TABLE ... RENAME TO takes a name without a schema: the relation stays in its schema"
                ))
            }
        };
        if let Some((vschema, vname, kind)) = self.dependents(schema, name)?.into_iter().next() {
            return Err(brook_err!(
                Unsupported,
                "renaming {name} while {} {vschema}.{vname} reads it (drop the {}, rename, then create it again)",
                kind.noun(),
                kind.noun()
            ));
        }
        self.engine.rename_relation(&self.db, schema, name, &new)?;
        Ok(new)
    }

    /// `ALTER TABLE ... ALTER COLUMN c SET/DROP DEFAULT | SET/DROP NOT NULL`: the new
    /// definition of the relation.
    pub(crate) async fn alter_column(
        &self,
        meta: &RelationMeta,
        store: &Arc<TableStore>,
        relation: &str,
        column: &Ident,
        op: AlterColumnOperation,
    ) -> Result<RelationMeta> {
        let cname = ident_name(column);
        let i = meta.column_index(&cname, relation)?;
        let mut next = meta.clone();
        let col = &mut next.columns[i];
        match op {
            AlterColumnOperation::SetDefault { value } => {
                if col.identity.is_some() {
                    return Err(identity_column(&cname, relation));
                }
                col.default = Some(value.to_string());
                self.default_value(&next, i).await?;
            }
            AlterColumnOperation::DropDefault => {
                if col.identity.is_some() {
                    return Err(identity_column(&cname, relation));
                }
                col.default = None;
            }
            AlterColumnOperation::SetNotNull => {
                if !col.not_null {
                    let schema = meta.schema();
                    for c in store.snapshot().iter() {
                        let b = crate::storage::adapt_batch(store.read(c)?, &schema)?;
                        if b.column(i).null_count() > 0 {
                            return Err(brook_err!(
                                NotNullViolation,
                                "column \"{cname}\" of relation \"{relation}\" contains null values"
                            ));
                        }
                    }
                }
                col.not_null = true;
            }
            AlterColumnOperation::DropNotNull => {
                if meta.primary_key.contains(&i) {
                    return Err(brook_err!(
                        InvalidDefinition,
                        "column \"{cname}\" is in a primary key"
                    ));
                }
                if col.identity.is_some() {
                    return Err(brook_err!(
                        InvalidDefinition,
                        "column \"{cname}\" of relation \"{relation}\" is an identity column"
                    ));
                }
                col.not_null = false;
            }
            other => {
                return Err(brook_err!(
                    Unsupported,
                    "ALTER TABLE ... ALTER COLUMN {other}"
                ))
            }
        }
        Ok(next)
    }
}

impl Session {
    /// `ALTER TABLE t ALTER COLUMN c ADD GENERATED {ALWAYS | BY DEFAULT} AS IDENTITY
    /// [(options)]` (how pg_dump restores an identity column): the column must be an
    /// integer declared NOT NULL without a default (55000 / 42601 as PostgreSQL). The new
    /// definition, the column's position and the sequence it will own; rows already there
    /// keep their values.
    pub(crate) fn add_identity(
        &self,
        meta: &RelationMeta,
        relation: &str,
        column: &Ident,
        generated_as: Option<ast::GeneratedAs>,
        options: Vec<ast::SequenceOptions>,
    ) -> Result<(RelationMeta, usize, crate::catalog::sequence::SequenceMeta)> {
        let cname = ident_name(column);
        let i = meta.column_index(&cname, relation)?;
        let col = &meta.columns[i];
        if !(col.not_null || meta.primary_key.contains(&i)) {
            return Err(BrookError::ObjectState(format!(
                "column \"{cname}\" of relation \"{relation}\" must be declared NOT NULL before identity can be added"
            )));
        }
        if col.identity.is_some() {
            return Err(BrookError::ObjectState(format!(
                "column \"{cname}\" of relation \"{relation}\" is already an identity column"
            )));
        }
        if col.default.is_some() {
            return Err(BrookError::ObjectState(format!(
                "column \"{cname}\" of relation \"{relation}\" already has a default value"
            )));
        }
        let kind = match generated_as {
            Some(ast::GeneratedAs::ByDefault) => ast::GeneratedAs::ByDefault,
            _ => ast::GeneratedAs::Always,
        };
        let mut probe = col.clone();
        let option = ast::ColumnOptionDef {
            name: None,
            option: ast::ColumnOption::Generated {
                generated_as: kind,
                sequence_options: Some(options),
                generation_expr: None,
                generation_expr_mode: None,
                generated_keyword: true,
            },
        };
        let seq = crate::handler::sequence::owned_sequence(&mut probe, false, &[option])?
            .ok_or_else(|| brook_err!(Internal, "identity without a sequence"))?;
        let mut next = meta.clone();
        next.columns[i] = probe;
        Ok((next, i, seq))
    }

    /// `ALTER TABLE ... ADD [CONSTRAINT name] PRIMARY KEY (columns)` (pg_dump adds keys
    /// so, after the data): the rows already there must have no NULL and no duplicate key
    /// (23502, 23505). The relation's definition with the key.
    pub(crate) fn add_primary_key(
        &self,
        meta: &RelationMeta,
        store: &Arc<TableStore>,
        relation: &str,
        key: &PrimaryKeyConstraint,
    ) -> Result<RelationMeta> {
        if meta.kind == RelKind::Stream {
            return Err(brook_err!(
                InvalidDefinition,
                "a stream is append-only and cannot have a PRIMARY KEY"
            ));
        }
        if !meta.primary_key.is_empty() {
            return Err(brook_err!(
                InvalidDefinition,
                "multiple primary keys for table \"{relation}\" are not allowed"
            ));
        }
        let mut next = meta.clone();
        for c in &key.columns {
            let Expr::Identifier(ident) = &c.column.expr else {
                return Err(brook_err!(
                    Unsupported,
                    "primary key on expression {}",
                    c.column.expr
                ));
            };
            let i = meta.column_index(&ident_name(ident), relation)?;
            next.primary_key.push(i);
            next.columns[i].not_null = true;
        }
        let schema = meta.schema();
        let mut keys = KeyCheck::new(&next, relation)?;
        for c in store.snapshot().iter() {
            let b = crate::storage::adapt_batch(store.read(c)?, &schema)?;
            for &i in &next.primary_key {
                if b.column(i).null_count() > 0 {
                    return Err(brook_err!(
                        NotNullViolation,
                        "column \"{}\" of relation \"{relation}\" contains null values",
                        next.columns[i].name
                    ));
                }
            }
            if let Some(k) = keys.as_mut() {
                if let Some(row) = k.conflicts(&b, true)?.iter().position(|&c| c) {
                    return Err(k.violation(&b, row));
                }
            }
        }
        Ok(next)
    }
}

fn identity_column(column: &str, relation: &str) -> brook_common::BrookError {
    brook_err!(
        Syntax,
        "column \"{column}\" of relation \"{relation}\" is an identity column (use ALTER TABLE ... ALTER COLUMN ... DROP IDENTITY)"
    )
}
