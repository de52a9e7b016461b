//! ALTER TABLE operations that change a relation's shape and so rewrite its rows in one
//! replacing commit: ADD COLUMN (in `alter`), DROP COLUMN and RENAME COLUMN here. The
//! stored batches carry their column names, so a rename rewrites them too.
//!
//! Views keep their queries as text: a column dropped or renamed under one would break it,
//! and Brook cannot tell which columns a view uses, so both are refused while a view or
//! materialized view reads the relation (2BP01 for DROP, as PostgreSQL answers for a
//! column a view uses; 0A000 for RENAME, which PostgreSQL allows by rewriting the view).
//! ADD COLUMN is refused (0A000) while a view reads the relation through what expands to
//! its columns as they are when planned — `*`, a NATURAL join, a column alias list naming
//! the new column: the view's columns would shift (PostgreSQL expands them when the view
//! is made).

use crate::catalog::{RelationMeta, SchemaMeta};
use crate::ident::ident_name;
use crate::session::Session;
use crate::storage::{adapt_batch, TableStore};
use brook_common::{brook_err, BrookError, Result};
use datafusion::arrow::array::{ArrayRef, RecordBatch};
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::sql::sqlparser::ast::{
    Ident, JoinConstraint, JoinOperator, Query, SelectItem, SetExpr, TableFactor, Visit, Visitor,
};
use std::ops::ControlFlow;
use std::sync::Arc;

impl Session {
    /// 0A000 when a view or materialized view reads `schema.name` through what expands to
    /// the relation's columns as they are when planned (see the module's comment).
    pub(crate) fn check_add_column(&self, schema: &str, name: &str, added: &str) -> Result<()> {
        self.check_new_column(
            schema,
            name,
            added,
            &format!("ADD COLUMN to {name}"),
            "add the column",
        )
    }

    /// [`Session::check_add_column`] for any change that gives `schema.name` the column
    /// `added` (`change` names it in the message, `redo` says what to do instead).
    pub(crate) fn check_new_column(
        &self,
        schema: &str,
        name: &str,
        added: &str,
        change: &str,
        redo: &str,
    ) -> Result<()> {
        for (vschema, vname, kind) in self.dependents(schema, name)? {
            let Ok((meta, _)) = self.relation(&vschema, &vname) else {
                continue;
            };
            let Some(how) = meta
                .query
                .as_deref()
                .and_then(|q| expands_columns(q, added))
            else {
                continue;
            };
            return Err(brook_err!(
                Unsupported,
                "{change} while {} {vschema}.{vname} reads it through {how}: its columns would shift; drop the {}, {redo}, then create it again (or name its columns)",
                kind.noun(),
                kind.noun()
            ));
        }
        Ok(())
    }

    /// Write every row of `schema.name` again in the shape of `next` (`columns` gives a
    /// stored batch's columns, read in the current shape), then switch the catalog to
    /// `next` — with `edit` applied to the schema's other entries in the same catalog
    /// update — before the next writer starts. In a transaction block the rewrite is one of
    /// the block's writes (of the rows the block sees): it commits with the block, and a
    /// ROLLBACK leaves the old rows under the old definition.
    pub(crate) async fn reshape_rows(
        &self,
        schema: &str,
        name: &str,
        (meta, store): (&RelationMeta, &Arc<TableStore>),
        next: RelationMeta,
        columns: impl Fn(&RecordBatch) -> Result<Vec<ArrayRef>>,
        edit: impl FnOnce(&mut SchemaMeta),
    ) -> Result<RelationMeta> {
        let new_schema: SchemaRef = next.schema();
        let reshape = |b: RecordBatch| -> Result<RecordBatch> {
            let b = adapt_batch(b, &meta.schema())?;
            Ok(RecordBatch::try_new_with_options(
                new_schema.clone(),
                columns(&b)?,
                &datafusion::arrow::array::RecordBatchOptions::new()
                    .with_row_count(Some(b.num_rows())),
            )?)
        };
        if crate::catalog::undo::journal().is_some() && self.in_block() {
            let rows = self.visible_snapshot(meta, store);
            let mut txn = self.block_write(meta, store, name, true).await?;
            for c in rows.iter() {
                txn.append(&reshape(store.read(c)?)?)?;
            }
            self.block_statement_done(txn)?;
            self.engine
                .reshape_relation(&self.db, schema, name, next.clone(), edit)?;
            return Ok(next);
        }
        let mut txn = self.begin_write(meta, store, true).await?;
        for c in store.snapshot().iter() {
            txn.append(&reshape(store.read(c)?)?)?;
        }
        // The catalog switches before the next writer may start: one that waited with the
        // old definition sees the change (40001), none writes rows of the old shape after.
        self.mark_ddl_write(&mut txn);
        let _lock = txn.commit_holding_lock()?;
        self.engine
            .reshape_relation(&self.db, schema, name, next.clone(), edit)?;
        Ok(next)
    }

    /// `ALTER TABLE t DROP [COLUMN] [IF EXISTS] c [RESTRICT]`. The column's indexes go
    /// with it, and the primary key when it is one of its columns, and the sequence a
    /// SERIAL or identity column owns, as in PostgreSQL.
    pub(crate) async fn drop_column(
        &self,
        schema: &str,
        name: &str,
        (meta, store): (&RelationMeta, &Arc<TableStore>),
        column: &Ident,
        if_exists: bool,
        cascade: bool,
    ) -> Result<RelationMeta> {
        let cname = ident_name(column);
        if if_exists && !meta.columns.iter().any(|c| c.name == cname) {
            return Ok(meta.clone());
        }
        let i = meta.column_index(&cname, name)?;
        if let Some((vschema, vname, kind)) = self.dependents(schema, name)?.into_iter().next() {
            let why = format!(
                "cannot drop column {cname} of table {name} because {} {vschema}.{vname} reads the table",
                kind.noun()
            );
            return Err(if cascade {
                brook_err!(Unsupported, "{why} (Brook cannot tell which of the relations that read it use the column: drop those first)")
            } else {
                BrookError::DependentObjects(format!("{why}; drop the {} first", kind.noun()))
            });
        }
        if meta.columns.len() == 1 {
            return Err(brook_err!(
                Unsupported,
                "dropping the only column of {name} (a relation without columns)"
            ));
        }
        if meta.watermark.as_ref().is_some_and(|w| w.column == cname) {
            return Err(BrookError::DependentObjects(format!(
                "cannot drop column {cname} of stream {name} because its watermark is declared on it"
            )));
        }
        if crate::catalog::partitioning::key_includes(meta, &cname) {
            return Err(BrookError::DependentObjects(format!(
                "cannot drop column {cname} of stream {name} because its rows are partitioned by it"
            )));
        }
        let mut next = meta.clone();
        next.columns.remove(i);
        next.primary_key = if meta.primary_key.contains(&i) {
            Vec::new()
        } else {
            meta.primary_key
                .iter()
                .map(|&k| if k > i { k - 1 } else { k })
                .collect()
        };
        let (table, col) = (name.to_string(), cname.clone());
        self.reshape_rows(
            schema,
            name,
            (meta, store),
            next,
            |b| {
                let mut cols = b.columns().to_vec();
                cols.remove(i);
                Ok(cols)
            },
            move |s| {
                s.indexes
                    .retain(|_, ix| !(ix.table == table && ix.columns.contains(&col)));
                s.sequences
                    .retain(|_, q| q.owned_by.as_ref() != Some(&(table.clone(), col.clone())));
            },
        )
        .await
    }

    /// `ALTER TABLE t RENAME [COLUMN] a TO b`: indexes, the watermark and an owned
    /// sequence follow the column.
    pub(crate) async fn rename_column(
        &self,
        schema: &str,
        name: &str,
        (meta, store): (&RelationMeta, &Arc<TableStore>),
        from: &Ident,
        to: &Ident,
    ) -> Result<RelationMeta> {
        let (old, new) = (ident_name(from), ident_name(to));
        let i = meta.column_index(&old, name)?;
        if meta.columns.iter().any(|c| c.name == new) {
            return Err(BrookError::duplicate_column(format!(
                "column \"{new}\" of relation \"{name}\" already exists"
            )));
        }
        if let Some((vschema, vname, kind)) = self.dependents(schema, name)?.into_iter().next() {
            return Err(brook_err!(
                Unsupported,
                "renaming column {old} of {name} while {} {vschema}.{vname} reads it (a view keeps its query as text: drop the {}, rename, then create it again)",
                kind.noun(),
                kind.noun()
            ));
        }
        let mut next = meta.clone();
        next.columns[i].name = new.clone();
        if let Some(w) = next.watermark.as_mut().filter(|w| w.column == old) {
            w.column = new.clone();
        }
        if crate::catalog::partitioning::key_includes(meta, &old)
            && (new.contains(',') || new.trim() != new)
        {
            return Err(brook_err!(
                Unsupported,
                "a partition key column cannot be named \"{new}\" (a name with a comma, or spaces around it)"
            ));
        }
        crate::catalog::partitioning::rename_key_column(&mut next.options, &old, &new);
        let table = name.to_string();
        self.reshape_rows(
            schema,
            name,
            (meta, store),
            next,
            |b| Ok(b.columns().to_vec()),
            move |s| {
                for ix in s.indexes.values_mut().filter(|ix| ix.table == table) {
                    for c in ix.columns.iter_mut().filter(|c| **c == old) {
                        *c = new.clone();
                    }
                }
                for q in s.sequences.values_mut() {
                    if let Some((t, c)) = q.owned_by.as_mut() {
                        if *t == table && *c == old {
                            *c = new.clone();
                        }
                    }
                }
            },
        )
        .await
    }
}

/// What in a view's query expands to its inputs' columns as they are when planned and
/// would change with a column `added`: `*`, a NATURAL join, or a column alias list that
/// names a column `added` (the list is completed with the relation's other columns when
/// the view is planned, and the names would repeat). None: nothing.
fn expands_columns(sql: &str, added: &str) -> Option<&'static str> {
    struct Find<'a> {
        added: &'a str,
        found: Option<&'static str>,
    }
    impl Visitor for Find<'_> {
        type Break = ();
        fn pre_visit_query(&mut self, q: &Query) -> ControlFlow<()> {
            if let SetExpr::Select(s) = q.body.as_ref() {
                let star = s.projection.iter().any(|i| {
                    matches!(
                        i,
                        SelectItem::Wildcard(_) | SelectItem::QualifiedWildcard(..)
                    )
                });
                let natural = s.from.iter().flat_map(|f| &f.joins).any(|j| {
                    matches!(
                        &j.join_operator,
                        JoinOperator::Join(JoinConstraint::Natural)
                            | JoinOperator::Inner(JoinConstraint::Natural)
                            | JoinOperator::Left(JoinConstraint::Natural)
                            | JoinOperator::LeftOuter(JoinConstraint::Natural)
                            | JoinOperator::Right(JoinConstraint::Natural)
                            | JoinOperator::RightOuter(JoinConstraint::Natural)
                            | JoinOperator::FullOuter(JoinConstraint::Natural)
                    )
                });
                if star {
                    self.found = Some("*");
                } else if natural {
                    self.found = Some("a NATURAL join");
                }
            }
            match self.found {
                Some(_) => ControlFlow::Break(()),
                None => ControlFlow::Continue(()),
            }
        }
        fn pre_visit_table_factor(&mut self, t: &TableFactor) -> ControlFlow<()> {
            if let TableFactor::Table { alias: Some(a), .. } = t {
                if a.columns.iter().any(|c| ident_name(&c.name) == self.added) {
                    self.found = Some("a column alias list naming the new column");
                    return ControlFlow::Break(());
                }
            }
            ControlFlow::Continue(())
        }
    }
    let stmts = brook_planner::parser::parse_sql(sql).ok()?;
    let mut find = Find { added, found: None };
    for stmt in &stmts {
        if let Some(s) = stmt.as_sql() {
            let _ = s.visit(&mut find);
        }
    }
    find.found
}
