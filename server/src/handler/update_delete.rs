//! UPDATE and DELETE: the relation is rewritten with the changed rows.

use crate::catalog::{Identity, RelKind, RelationMeta};
use crate::handler::insert::default_expr;
use crate::handler::upsert::assignments;
use crate::ident::ident_name;
use crate::ident::quote_ident;
use crate::session::Outcome;
use crate::session::Session;
use crate::storage::TableStore;
use crate::write::coerce::to_relation_batch;
use crate::write::keys::KeyCheck;
use brook_common::{brook_err, BrookError, Result};
use datafusion::arrow::array::{Array, BooleanArray};
use datafusion::arrow::compute::filter_record_batch;
use datafusion::sql::sqlparser::ast::{self, FromTable, SelectItem, TableFactor};
use futures::StreamExt;
use std::sync::Arc;

/// The table an UPDATE or DELETE changes.
pub(crate) struct DmlTarget {
    schema: String,
    name: String,
    alias: Option<String>,
    pub(crate) meta: RelationMeta,
    store: Arc<TableStore>,
}

impl Session {
    pub(crate) fn dml_target(&self, tf: &TableFactor, verb: &str) -> Result<DmlTarget> {
        let TableFactor::Table { name, alias, .. } = tf else {
            return Err(brook_err!(Unsupported, "{verb} of a derived table"));
        };
        let (schema, tname) = self.resolve(name)?;
        let (meta, store) = self.writable(&schema, &tname)?;
        if meta.kind == RelKind::Stream {
            return Err(brook_err!(
                WrongObjectType,
                "cannot {} stream \"{tname}\": streams are append-only",
                verb.to_lowercase()
            ));
        }
        Ok(DmlTarget {
            schema,
            name: tname,
            alias: alias.as_ref().map(|a| ident_name(&a.name)),
            meta,
            store,
        })
    }

    pub(crate) async fn update(&mut self, u: ast::Update) -> Result<Outcome> {
        if u.from.is_some() {
            return Err(brook_err!(Unsupported, "UPDATE ... FROM"));
        }
        if !u.table.joins.is_empty() {
            return Err(brook_err!(Unsupported, "UPDATE with joins"));
        }
        let DmlTarget {
            schema,
            name,
            alias,
            meta,
            store,
        } = self.dml_target(&u.table.relation, "UPDATE")?;
        let sets = assignments(&meta, &name, &u.assignments, |e| e.to_string())?;
        let pred = u
            .selection
            .as_ref()
            .map(|e| format!("({e}) IS TRUE"))
            .unwrap_or_else(|| "TRUE".into());
        let mut items = Vec::new();
        for (i, c) in meta.columns.iter().enumerate() {
            let col = quote_ident(&c.name);
            match sets.get(&i) {
                Some(v)
                    if c.identity == Some(Identity::Always)
                        && !v.eq_ignore_ascii_case("DEFAULT") =>
                {
                    return Err(BrookError::GeneratedAlways(format!(
                        "column \"{}\" can only be updated to DEFAULT: it is an identity column defined as GENERATED ALWAYS",
                        c.name
                    )));
                }
                Some(v) if v.eq_ignore_ascii_case("DEFAULT") => {
                    // With Brook's rewrites applied (a sequence's `::regclass` name).
                    let d = match &c.default {
                        Some(text) => default_expr(text)?.to_string(),
                        None => "NULL".into(),
                    };
                    items.push(format!("CASE WHEN {pred} THEN {d} ELSE {col} END AS {col}"));
                }
                Some(v) => items.push(format!("CASE WHEN {pred} THEN {v} ELSE {col} END AS {col}")),
                None => items.push(col),
            }
        }
        items.push(format!("{pred} AS \"__brook_hit\""));
        let from = format!(
            "{}.{}{}",
            quote_ident(&schema),
            quote_ident(&name),
            alias
                .map(|a| format!(" AS {}", quote_ident(&a)))
                .unwrap_or_default()
        );
        let sql = format!("SELECT {} FROM {from}", items.join(", "));
        self.rewrite_relation(&meta, &store, &name, &sql, true, u.returning.as_deref())
            .await
    }

    pub(crate) async fn delete(&mut self, d: ast::Delete) -> Result<Outcome> {
        if d.using.is_some() {
            return Err(brook_err!(Unsupported, "DELETE ... USING"));
        }
        let tables = match &d.from {
            FromTable::WithFromKeyword(t) | FromTable::WithoutKeyword(t) => t,
        };
        let [twj] = tables.as_slice() else {
            return Err(brook_err!(Unsupported, "DELETE from several tables"));
        };
        let DmlTarget {
            schema,
            name,
            alias,
            meta,
            store,
        } = self.dml_target(&twj.relation, "DELETE FROM")?;
        let pred = d
            .selection
            .as_ref()
            .map(|e| format!("({e}) IS TRUE"))
            .unwrap_or_else(|| "TRUE".into());
        let cols: Vec<String> = meta.columns.iter().map(|c| quote_ident(&c.name)).collect();
        let from = format!(
            "{}.{}{}",
            quote_ident(&schema),
            quote_ident(&name),
            alias
                .map(|a| format!(" AS {}", quote_ident(&a)))
                .unwrap_or_default()
        );
        let sql = format!(
            "SELECT {}, {pred} AS \"__brook_hit\" FROM {from}",
            cols.join(", ")
        );
        self.rewrite_relation(&meta, &store, &name, &sql, false, d.returning.as_deref())
            .await
    }

    /// Rewrite a whole table from `sql` (table columns + a `__brook_hit` flag): UPDATE keeps
    /// every row (changed ones flagged), DELETE keeps the unflagged rows. Atomic: the new
    /// contents replace the old in one commit.
    pub(crate) async fn rewrite_relation(
        &self,
        meta: &RelationMeta,
        store: &Arc<TableStore>,
        name: &str,
        sql: &str,
        keep_hits: bool,
        returning: Option<&[SelectItem]>,
    ) -> Result<Outcome> {
        let mut txn = self.begin_dml_write(meta, store, name, true).await?;
        let df = self.ctx.sql(sql).await?;
        let mut stream = df.execute_stream().await?;
        let mut keys = KeyCheck::new(meta, name)?;
        let mut hits = 0usize;
        let mut affected = Vec::new();
        while let Some(b) = stream.next().await {
            let b = b?;
            let n = b.num_columns();
            let hit = b
                .column(n - 1)
                .as_any()
                .downcast_ref::<BooleanArray>()
                .ok_or_else(|| brook_err!(Internal, "hit flag is not boolean"))?
                .clone();
            hits += hit.true_count();
            let rows = to_relation_batch(meta, name, &b)?;
            if returning.is_some() {
                affected.push(filter_record_batch(&rows, &hit)?);
            }
            let kept = if keep_hits {
                rows
            } else {
                let not_hit = datafusion::arrow::compute::not(&hit)?;
                filter_record_batch(&rows, &not_hit)?
            };
            if let Some(k) = keys.as_mut() {
                if let Some(row) = k.conflicts(&kept, true)?.iter().position(|&c| c) {
                    return Err(k.violation(&kept, row));
                }
            }
            txn.append(&kept)?;
        }
        self.commit_write(txn, meta, name, true).await?;
        if let Some(items) = returning {
            let mut out = self.returning(name, meta, affected, items).await?;
            if let Outcome::Rows { tag, .. } = &mut out {
                *tag = if keep_hits { "UPDATE" } else { "DELETE" };
            }
            return Ok(out);
        }
        Ok(Outcome::Command(format!(
            "{} {hits}",
            if keep_hits { "UPDATE" } else { "DELETE" }
        )))
    }
}
