//! UPDATE and DELETE: the relation is rewritten with the changed rows.
//!
//! A plain condition is evaluated per row in one scan (`CASE WHEN cond ...`). UPDATE ...
//! FROM, DELETE ... USING and conditions or values holding a subquery join the target to
//! other rows instead: the target is read with its rows numbered
//! ([`crate::catalog::numbered`]), the joined rows that satisfy the condition are reduced to
//! one per target row (PostgreSQL, too, uses one of several matching rows, unspecified which),
//! and a left join of the target with them gives every row, changed or not, in its order.

use crate::catalog::{Identity, RelKind, RelationMeta};
use crate::handler::insert::default_expr;
use crate::handler::upsert::assignments;
use crate::handler::write::Returning;
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
use datafusion::sql::sqlparser::ast::{
    self, FromTable, SelectItem, TableFactor, TableWithJoins, UpdateTableFromKind,
};
use futures::StreamExt;
use std::collections::BTreeMap;
use std::ops::ControlFlow;
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

    /// UPDATE, with the WITH clause of `WITH ... UPDATE` if any.
    pub(crate) async fn update(
        &mut self,
        u: ast::Update,
        with: Option<ast::With>,
    ) -> Result<Outcome> {
        if !u.table.joins.is_empty() {
            return Err(brook_err!(Unsupported, "UPDATE with joins"));
        }
        let from: &[TableWithJoins] = match &u.from {
            None => &[],
            Some(UpdateTableFromKind::AfterSet(items)) => items,
            Some(UpdateTableFromKind::BeforeSet(_)) => {
                return Err(brook_err!(Unsupported, "UPDATE ... FROM before SET"));
            }
        };
        let target = self.dml_target(&u.table.relation, "UPDATE")?;
        let sets = assignments(&target.meta, &target.name, &u.assignments, |e| {
            e.to_string()
        })?;
        let values = set_values(&target.meta, &sets)?;
        let joined = with.is_some()
            || !from.is_empty()
            || u.selection.as_ref().is_some_and(has_subquery)
            || u.assignments.iter().any(|a| has_subquery(&a.value));
        let sql = if joined {
            refuse_returning_of_others(
                target.reference(),
                u.returning.as_deref(),
                !from.is_empty(),
            )?;
            let outputs: Vec<String> = values
                .iter()
                .enumerate()
                .filter_map(|(i, v)| v.as_ref().map(|v| format!("{v} AS \"__brook_v{i}\"")))
                .collect();
            let matched =
                target.matched_rows(with.as_ref(), &outputs, from, u.selection.as_ref())?;
            let items: Vec<String> = target
                .meta
                .columns
                .iter()
                .zip(&values)
                .enumerate()
                .map(|(i, (c, v))| {
                    let col = quote_ident(&c.name);
                    match v {
                        Some(_) => format!(
                            "CASE WHEN __brook_m.__brook_rid IS NULL THEN __brook_t.{col} \
                             ELSE __brook_m.\"__brook_v{i}\" END AS {col}"
                        ),
                        None => format!("__brook_t.{col}"),
                    }
                })
                .collect();
            target.joined(&items, &matched)
        } else {
            let pred = plain_condition(u.selection.as_ref());
            let mut items: Vec<String> = target
                .meta
                .columns
                .iter()
                .zip(&values)
                .map(|(c, v)| {
                    let col = quote_ident(&c.name);
                    match v {
                        Some(v) => format!("CASE WHEN {pred} THEN {v} ELSE {col} END AS {col}"),
                        None => col,
                    }
                })
                .collect();
            items.push(format!("{pred} AS \"__brook_hit\""));
            format!("SELECT {} FROM {}", items.join(", "), target.table_clause())
        };
        self.rewrite_relation(&target, &sql, true, u.returning.as_deref())
            .await
    }

    /// DELETE, with the WITH clause of `WITH ... DELETE` if any.
    pub(crate) async fn delete(
        &mut self,
        d: ast::Delete,
        with: Option<ast::With>,
    ) -> Result<Outcome> {
        let tables = match &d.from {
            FromTable::WithFromKeyword(t) | FromTable::WithoutKeyword(t) => t,
        };
        let [twj] = tables.as_slice() else {
            return Err(brook_err!(Unsupported, "DELETE from several tables"));
        };
        if !twj.joins.is_empty() {
            return Err(brook_err!(Unsupported, "DELETE with joins"));
        }
        let target = self.dml_target(&twj.relation, "DELETE FROM")?;
        let using = d.using.as_deref().unwrap_or_default();
        let cols: Vec<String> = target
            .meta
            .columns
            .iter()
            .map(|c| quote_ident(&c.name))
            .collect();
        let joined =
            with.is_some() || !using.is_empty() || d.selection.as_ref().is_some_and(has_subquery);
        let sql = if joined {
            refuse_returning_of_others(
                target.reference(),
                d.returning.as_deref(),
                !using.is_empty(),
            )?;
            let matched = target.matched_rows(with.as_ref(), &[], using, d.selection.as_ref())?;
            let items: Vec<String> = cols.iter().map(|c| format!("__brook_t.{c}")).collect();
            target.joined(&items, &matched)
        } else {
            format!(
                "SELECT {}, {} AS \"__brook_hit\" FROM {}",
                cols.join(", "),
                plain_condition(d.selection.as_ref()),
                target.table_clause()
            )
        };
        self.rewrite_relation(&target, &sql, false, d.returning.as_deref())
            .await
    }

    /// Rewrite a whole table from `sql` (table columns + a `__brook_hit` flag): UPDATE keeps
    /// every row (changed ones flagged), DELETE keeps the unflagged rows. Atomic: the new
    /// contents replace the old in one commit.
    async fn rewrite_relation(
        &self,
        target: &DmlTarget,
        sql: &str,
        keep_hits: bool,
        returning: Option<&[SelectItem]>,
    ) -> Result<Outcome> {
        let (meta, store, name) = (&target.meta, &target.store, target.name.as_str());
        let returning = target.returning(returning);
        let mut txn = self.begin_dml_write(meta, store, name, true).await?;
        let df = self.ctx.sql(sql).await?;
        let mut stream = df.execute_stream().await?;
        let mut keys = KeyCheck::new(meta, name)?;
        let mut hits = 0usize;
        let mut affected = Vec::new();
        let zone = self.time_zone();
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
            let rows = to_relation_batch(meta, name, &b, zone.as_deref())?;
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
        let verb = if keep_hits { "UPDATE" } else { "DELETE" };
        // RETURNING is computed before the commit: an error in it fails the whole statement.
        let out = match returning {
            Some(r) => {
                let mut out = self
                    .returning(name, r.alias, meta, affected, r.items)
                    .await?;
                if let Outcome::Rows { tag, .. } = &mut out {
                    *tag = verb;
                }
                out
            }
            None => Outcome::Command(format!("{verb} {hits}")),
        };
        self.commit_write(txn, meta, name, true).await?;
        Ok(out)
    }
}

/// The value each column is set to (None: kept), with `DEFAULT` read as the column's default
/// and identity columns GENERATED ALWAYS taking nothing else.
fn set_values(meta: &RelationMeta, sets: &BTreeMap<usize, String>) -> Result<Vec<Option<String>>> {
    let mut values = Vec::with_capacity(meta.columns.len());
    for (i, c) in meta.columns.iter().enumerate() {
        let value = match sets.get(&i) {
            Some(v)
                if c.identity == Some(Identity::Always) && !v.eq_ignore_ascii_case("DEFAULT") =>
            {
                return Err(BrookError::GeneratedAlways(format!(
                    "column \"{}\" can only be updated to DEFAULT: it is an identity column defined as GENERATED ALWAYS",
                    c.name
                )));
            }
            // With Brook's rewrites applied (a sequence's `::regclass` name).
            Some(v) if v.eq_ignore_ascii_case("DEFAULT") => Some(match &c.default {
                Some(text) => default_expr(text)?.to_string(),
                None => "NULL".into(),
            }),
            Some(v) => Some(v.clone()),
            None => None,
        };
        values.push(value);
    }
    Ok(values)
}

impl DmlTarget {
    /// The name the statement refers to the target by: its alias, else its name.
    fn reference(&self) -> &str {
        self.alias.as_deref().unwrap_or(&self.name)
    }

    /// The statement's RETURNING list, seeing the target under the name the statement gave it.
    fn returning<'a>(&'a self, items: Option<&'a [SelectItem]>) -> Option<Returning<'a>> {
        items.map(|items| Returning {
            items,
            alias: self.alias.as_deref(),
        })
    }

    /// `schema.name [AS alias]`, as the statement named the target.
    fn table_clause(&self) -> String {
        format!(
            "{}.{}{}",
            quote_ident(&self.schema),
            quote_ident(&self.name),
            self.alias
                .as_ref()
                .map(|a| format!(" AS {}", quote_ident(a)))
                .unwrap_or_default()
        )
    }

    /// The target read with its rows numbered.
    fn numbered(&self) -> String {
        let text = |s: &str| format!("'{}'", s.replace('\'', "''"));
        format!(
            "{}({}, {})",
            crate::catalog::numbered::NUMBERED_ROWS_FUNCTION,
            text(&self.schema),
            text(&self.name)
        )
    }

    /// One row per target row the statement changes: its number and `outputs` (the new
    /// values), computed over the target (under the name the statement gave it) joined
    /// with `from`, where `condition` holds.
    ///
    /// The target is a CTE of that name over its numbered rows, after the statement's own
    /// CTEs (which see the table itself), so that Brook's decorrelation, which reads tables
    /// named in FROM, takes the correlated scalar subqueries of the values and condition
    /// (DataFusion plans only those correlated by equality).
    fn matched_rows(
        &self,
        with: Option<&ast::With>,
        outputs: &[String],
        from: &[TableWithJoins],
        condition: Option<&ast::Expr>,
    ) -> Result<String> {
        let me = quote_ident(self.reference());
        let mut ctes: Vec<String> = with
            .map(|w| w.cte_tables.iter().map(|c| c.to_string()).collect())
            .unwrap_or_default();
        ctes.push(format!("{me} AS (SELECT * FROM {})", self.numbered()));
        let recursive = if with.is_some_and(|w| w.recursive) {
            "RECURSIVE "
        } else {
            ""
        };
        let mut sql = format!(
            "WITH {recursive}{} SELECT {me}.__brook_rid AS __brook_rid",
            ctes.join(", ")
        );
        for o in outputs {
            sql.push_str(", ");
            sql.push_str(o);
        }
        sql.push_str(&format!(" FROM {me}"));
        for item in from {
            sql.push_str(&format!(", {item}"));
        }
        if let Some(c) = condition {
            sql.push_str(&format!(" WHERE {c}"));
        }
        let Some(mut q) = brook_planner::parser::parse_one(&sql)?.into_plain_sql() else {
            return Err(brook_err!(
                Internal,
                "the rows an UPDATE or DELETE changes did not parse as a query"
            ));
        };
        brook_planner::decorrelate::decorrelate_scalar_subqueries(&mut q);
        // The values are computed below DISTINCT ON: DataFusion decorrelates a subquery in
        // a plain select list, not in DISTINCT ON's.
        Ok(format!(
            "SELECT DISTINCT ON (__brook_rid) * FROM ({q}) AS __brook_j"
        ))
    }

    /// Every target row (`items` over `__brook_t`, the target, and `__brook_m`, its matched
    /// row if any) in the target's order, flagged when matched.
    fn joined(&self, items: &[String], matched: &str) -> String {
        format!(
            "SELECT {}, __brook_m.__brook_rid IS NOT NULL AS \"__brook_hit\" \
             FROM {} AS __brook_t LEFT JOIN ({matched}) AS __brook_m \
             ON __brook_t.__brook_rid = __brook_m.__brook_rid ORDER BY __brook_t.__brook_rid",
            items.join(", "),
            self.numbered()
        )
    }
}

/// A condition evaluated per row in a select list: NULL is false.
fn plain_condition(selection: Option<&ast::Expr>) -> String {
    selection
        .map(|e| format!("({e}) IS TRUE"))
        .unwrap_or_else(|| "TRUE".into())
}

/// Whether `e` holds a subquery (which a select list cannot evaluate per row as a condition).
fn has_subquery(e: &ast::Expr) -> bool {
    ast::visit_expressions(e, |x| match x {
        ast::Expr::Subquery(_) | ast::Expr::InSubquery { .. } | ast::Expr::Exists { .. } => {
            ControlFlow::Break(())
        }
        _ => ControlFlow::Continue(()),
    })
    .is_break()
}

/// RETURNING lists the changed rows of the target (`me`, its name or alias) only: a column
/// of a FROM (USING) item, which PostgreSQL also returns, and `*`, which in PostgreSQL takes
/// in the FROM items' columns, are refused by name rather than reported missing.
pub(crate) fn refuse_returning_of_others(
    me: &str,
    returning: Option<&[SelectItem]>,
    has_from: bool,
) -> Result<()> {
    let Some(items) = returning.filter(|_| has_from) else {
        return Ok(());
    };
    let foreign =
        |parts: &[ast::Ident]| parts.len() > 1 && ident_name(&parts[parts.len() - 2]) != me;
    for item in items {
        let outside = match item {
            SelectItem::QualifiedWildcard(
                ast::SelectItemQualifiedWildcardKind::ObjectName(n),
                _,
            ) => {
                n.0.last()
                    .and_then(|p| p.as_ident())
                    .is_some_and(|i| ident_name(i) != me)
            }
            SelectItem::Wildcard(_) => true,
            other => ast::visit_expressions(other, |x| match x {
                ast::Expr::CompoundIdentifier(parts) if foreign(parts) => ControlFlow::Break(()),
                _ => ControlFlow::Continue(()),
            })
            .is_break(),
        };
        if outside {
            return Err(brook_err!(
                Unsupported,
                "RETURNING * or a column of a FROM or USING item (list the target table's columns)"
            ));
        }
    }
    Ok(())
}

/// The UPDATE or DELETE of `WITH ... UPDATE` / `WITH ... DELETE`.
pub(crate) fn with_dml(q: &ast::Query) -> Option<&ast::Statement> {
    match q.body.as_ref() {
        ast::SetExpr::Update(s) | ast::SetExpr::Delete(s) => Some(s),
        _ => None,
    }
}
