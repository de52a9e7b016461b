//! INSERT ... ON CONFLICT: DO NOTHING and DO UPDATE.

use crate::catalog::RelationMeta;
use crate::ident::ident_name;
use crate::ident::object_parts;
use crate::ident::quote_ident;
use crate::session::Session;
use crate::storage::TableStore;
use crate::write::coerce::to_relation_batch;
use crate::write::keys::KeyCheck;
use brook_common::{brook_err, Result};
use datafusion::arrow::array::{Array, ArrayRef, BooleanArray, RecordBatch};
use datafusion::arrow::compute::filter_record_batch;
use datafusion::arrow::row::{RowConverter, SortField};
use datafusion::execution::SendableRecordBatchStream;
use datafusion::prelude::SessionContext;
use datafusion::sql::sqlparser::ast::{self, AssignmentTarget, Expr, Ident};
use futures::StreamExt;
use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;

/// The `SET col = expr` list of UPDATE / ON CONFLICT DO UPDATE as column index -> SQL text
/// (42703 for unknown columns, 42601 for a column assigned twice).
pub(crate) fn assignments(
    meta: &RelationMeta,
    name: &str,
    list: &[ast::Assignment],
    render: impl Fn(&Expr) -> String,
) -> Result<BTreeMap<usize, String>> {
    let mut sets = BTreeMap::new();
    for a in list {
        let AssignmentTarget::ColumnName(c) = &a.target else {
            return Err(brook_err!(Unsupported, "assignment to a column tuple"));
        };
        let cname = object_parts(c)?.pop().unwrap_or_default();
        let i = meta.column_index(&cname, name)?;
        // `SET tags = '{a,b}'`, `SET iv = '1 day'`: the literal is read as the column's type.
        let ty = &meta.columns[i].ty;
        let value = crate::handler::insert::typed_array_literal(&a.value, ty)
            .or_else(|| crate::handler::insert::typed_literal(&a.value, ty));
        if sets
            .insert(i, render(value.as_ref().unwrap_or(&a.value)))
            .is_some()
        {
            return Err(brook_err!(
                Syntax,
                "multiple assignments to same column \"{cname}\""
            ));
        }
    }
    Ok(sets)
}

/// In ON CONFLICT DO UPDATE, unqualified columns mean the target table's (the proposed row
/// is `excluded.col`); qualify them so the rewrite query is unambiguous.
pub(crate) fn qualify_bare_columns(e: &Expr, table: &str) -> Expr {
    let mut e = e.clone();
    let _ = ast::visit_expressions_mut(&mut e, |x| {
        if let Expr::Identifier(i) = x {
            *x = Expr::CompoundIdentifier(vec![Ident::with_quote('"', table), i.clone()]);
        }
        std::ops::ControlFlow::<()>::Continue(())
    });
    e
}

impl Session {
    /// A context with this session's functions, planner hooks and analyzer rules whose only
    /// relations are those the caller registers (the upsert's target rows and `excluded`).
    fn private_context(&self) -> Result<SessionContext> {
        use datafusion::catalog::{
            CatalogProvider, CatalogProviderList, MemoryCatalogProvider, MemoryCatalogProviderList,
            MemorySchemaProvider,
        };
        let state = self.ctx.state();
        let options = state.config().options();
        let (catalog_name, schema_name) = (
            options.catalog.default_catalog.clone(),
            options.catalog.default_schema.clone(),
        );
        let catalog = MemoryCatalogProvider::new();
        catalog.register_schema(&schema_name, Arc::new(MemorySchemaProvider::new()))?;
        let list = MemoryCatalogProviderList::new();
        list.register_catalog(catalog_name, Arc::new(catalog));
        let state = datafusion::execution::SessionStateBuilder::new_from_existing(state)
            .with_catalog_list(Arc::new(list))
            .build();
        Ok(SessionContext::new_with_state(state))
    }

    /// ON CONFLICT (key): the target must be the primary key (42P10 otherwise).
    pub(crate) fn check_conflict_target(
        &self,
        meta: &RelationMeta,
        target: Option<&ast::ConflictTarget>,
    ) -> Result<()> {
        let no_match = || {
            brook_err!(
                InvalidDefinition,
                "there is no unique or exclusion constraint matching the ON CONFLICT specification"
            )
        };
        match target {
            Some(ast::ConflictTarget::Columns(cols)) => {
                let mut want: Vec<&str> = meta
                    .primary_key
                    .iter()
                    .map(|&i| meta.columns[i].name.as_str())
                    .collect();
                let mut got: Vec<String> = cols.iter().map(ident_name).collect();
                want.sort_unstable();
                got.sort_unstable();
                if want.is_empty() || got != want {
                    return Err(no_match());
                }
                Ok(())
            }
            Some(ast::ConflictTarget::OnConstraint(_)) => {
                Err(brook_err!(Unsupported, "ON CONFLICT ON CONSTRAINT"))
            }
            None => Err(brook_err!(
                Syntax,
                "ON CONFLICT DO UPDATE requires a conflict target"
            )),
        }
    }

    /// INSERT ... ON CONFLICT (pk) DO UPDATE: new keys are inserted; rows whose key exists
    /// are updated with the SET list, where `excluded.col` is the proposed row. One atomic
    /// replace of the relation (like UPDATE). Returns inserted + updated rows.
    ///
    /// Long because its steps (plan the proposed rows, split them by key, plan the updates,
    /// rewrite the relation) run under one write lock and one transaction; split, they would
    /// pass that state between each other.
    pub(crate) async fn upsert(
        &self,
        meta: &RelationMeta,
        store: &Arc<TableStore>,
        name: &str,
        mut stream: SendableRecordBatchStream,
        targets: Option<Vec<usize>>,
        du: ast::DoUpdate,
    ) -> Result<usize> {
        let schema = meta.schema();
        let mut defaults: Vec<Option<crate::exec::column_default::ColumnDefault>> =
            vec![None; meta.columns.len()];
        let mut incoming = Vec::new();
        while let Some(b) = stream.next().await {
            incoming.push(
                self.shape_batch(meta, name, &b?, targets.as_deref(), &mut defaults)
                    .await?,
            );
        }
        let incoming = datafusion::arrow::compute::concat_batches(&schema, &incoming)?;
        let mut txn = self.begin_dml_write(meta, store, name, true).await?;
        let existing_batches = self
            .visible_snapshot(meta, store)
            .iter()
            .map(|c| crate::storage::adapt_batch(store.read(c)?, &schema))
            .collect::<Result<Vec<_>>>()?;
        // Split the proposed rows by whether their key exists; a key proposed twice is an
        // error, as in PostgreSQL.
        let fields: Vec<SortField> = meta
            .primary_key
            .iter()
            .map(|&i| SortField::new(schema.field(i).data_type().clone()))
            .collect();
        let converter = RowConverter::new(fields)?;
        let key_cols = |b: &RecordBatch| -> Vec<ArrayRef> {
            meta.primary_key
                .iter()
                .map(|&i| b.column(i).clone())
                .collect()
        };
        let mut existing: HashSet<Box<[u8]>> = HashSet::new();
        for b in &existing_batches {
            for r in converter.convert_columns(&key_cols(b))?.iter() {
                existing.insert(r.as_ref().into());
            }
        }
        let mut proposed: HashSet<Box<[u8]>> = HashSet::new();
        let mut conflict = Vec::with_capacity(incoming.num_rows());
        for r in converter.convert_columns(&key_cols(&incoming))?.iter() {
            let key: Box<[u8]> = r.as_ref().into();
            if !proposed.insert(key.clone()) {
                return Err(brook_err!(
                    Cardinality,
                    "ON CONFLICT DO UPDATE command cannot affect row a second time"
                ));
            }
            conflict.push(existing.contains(&key));
        }
        let conflict = BooleanArray::from(conflict);
        let fresh = filter_record_batch(&incoming, &datafusion::arrow::compute::not(&conflict)?)?;
        let excluded = filter_record_batch(&incoming, &conflict)?;
        // Rewrite the relation: each row joined with its proposed replacement, if any.
        let ctx = self.private_context()?;
        ctx.register_batch("excluded", excluded)?;
        let target = Arc::new(datafusion::datasource::MemTable::try_new(
            schema.clone(),
            vec![existing_batches],
        )?);
        ctx.register_table(datafusion::common::TableReference::bare(name), target)?;
        let t = quote_ident(name);
        let sets = assignments(meta, name, &du.assignments, |e| {
            qualify_bare_columns(e, name).to_string()
        })?;
        let cond = match &du.selection {
            Some(w) => format!(
                "excluded.\"__brook_hit\" IS TRUE AND ({}) IS TRUE",
                qualify_bare_columns(w, name)
            ),
            None => "excluded.\"__brook_hit\" IS TRUE".to_string(),
        };
        let mut items = Vec::new();
        for (i, c) in meta.columns.iter().enumerate() {
            let col = format!("{t}.{}", quote_ident(&c.name));
            match sets.get(&i) {
                Some(v) => items.push(format!(
                    "CASE WHEN {cond} THEN {v} ELSE {col} END AS {}",
                    quote_ident(&c.name)
                )),
                None => items.push(format!("{col} AS {}", quote_ident(&c.name))),
            }
        }
        items.push(format!("{cond} AS \"__brook_hit\""));
        let on: Vec<String> = meta
            .primary_key
            .iter()
            .map(|&i| {
                format!(
                    "{t}.{q} = excluded.{q}",
                    q = quote_ident(&meta.columns[i].name)
                )
            })
            .collect();
        let sql = format!(
            "SELECT {} FROM {t} LEFT JOIN (SELECT *, TRUE AS \"__brook_hit\" FROM excluded) AS excluded ON {}",
            items.join(", "),
            on.join(" AND ")
        );
        // Planned as every query is (Brook's rewrites, planner hooks and analyzer rules), so
        // the SET expressions mean what they mean elsewhere: overflow-checked integers,
        // numerics, jsonb operators. (A bare DataFusion context made `c + 1` wrap around and
        // `n + 0.000000001` a double: wrong values stored.)
        let mut stmt = match brook_planner::parser::parse_one(&sql)?.into_plain_sql() {
            Some(s) => s,
            None => return Err(brook_err!(Internal, "upsert rewrite did not parse as SQL")),
        };
        crate::pg::sql::pg_literals(&mut stmt)?;
        let plan = ctx
            .state()
            .statement_to_plan(datafusion::sql::parser::Statement::Statement(Box::new(
                stmt,
            )))
            .await?;
        let rows = ctx.execute_logical_plan(plan).await?.collect().await?;
        let Some(mut keys) = KeyCheck::new(meta, name)? else {
            return Err(brook_err!(
                Internal,
                "upsert on a relation without a primary key"
            ));
        };
        let mut updated = 0usize;
        let zone = self.time_zone();
        for b in rows.iter().chain(std::iter::once(&fresh)) {
            // rewritten rows carry the hit flag after the relation's columns; fresh rows do not
            if let Some(hit) = b
                .columns()
                .get(meta.columns.len())
                .and_then(|h| h.as_any().downcast_ref::<BooleanArray>())
            {
                updated += hit.true_count();
            }
            let out = to_relation_batch(meta, name, b, zone.as_deref())?;
            if let Some(row) = keys.conflicts(&out, true)?.iter().position(|&c| c) {
                return Err(keys.violation(&out, row));
            }
            txn.append(&out)?;
        }
        self.commit_write(txn, meta, name, true).await?;
        Ok(fresh.num_rows() + updated)
    }
}
