//! The steps of a write that INSERT, upsert, UPDATE/DELETE and COPY share: taking the
//! relation's write lock with its definition checked, key checks, defaults, and shaping a
//! batch to the relation's columns.

use crate::catalog::RelationMeta;
use crate::exec::column_default::ColumnDefault;
use crate::pg::sql::pg_literals;
use crate::session::Outcome;
use crate::session::Session;
use crate::storage::TableStore;
use crate::write::coerce::coerce_column;
use crate::write::keys::KeyCheck;
use crate::write::WriteMode;
use brook_common::{brook_err, Result};
use datafusion::arrow::array::{new_null_array, Array, ArrayRef, BooleanArray, RecordBatch};
use datafusion::arrow::compute::filter_record_batch;
use datafusion::common::DFSchema;
use datafusion::execution::SendableRecordBatchStream;
use datafusion::logical_expr::{cast, LogicalPlan};
use datafusion::sql::sqlparser::ast::Statement;
use futures::StreamExt;
use std::sync::Arc;

/// `SELECT <default>` for a column's DEFAULT text, parsed with Brook's rewrites (as a
/// statement's own expressions are).
pub(crate) fn default_query(default: &str) -> Result<Statement> {
    let sql = format!("SELECT {default}");
    let Some(mut stmt) = brook_planner::parser::parse_one(&sql)?.into_plain_sql() else {
        return Err(brook_err!(
            Internal,
            "DEFAULT {default} did not parse as an expression"
        ));
    };
    pg_literals(&mut stmt)?;
    Ok(stmt)
}

impl Session {
    /// Start a statement's write of rows to `meta` (INSERT, UPDATE, DELETE, COPY,
    /// TRUNCATE): inside a transaction block, on the block's transaction of the relation
    /// (committed at COMMIT); otherwise one of its own. A stream's rows commit with their
    /// statement, in a block too: a stream is a log of events, read as they arrive by
    /// continuous queries (the session's own cursors among them), and a block open in one
    /// client never holds another's ingest back. (In cluster mode every write commits with
    /// its statement: the cluster's log orders statements one by one.)
    pub(crate) async fn begin_dml_write(
        &self,
        meta: &RelationMeta,
        store: &Arc<TableStore>,
        name: &str,
        replace: bool,
    ) -> Result<crate::storage::WriteTxn> {
        if self.read_only_now() {
            // (A prepared statement's EXECUTE gets here without the statement check.)
            return Err(crate::handler::transaction::read_only_error("a write"));
        }
        // A stream's rows commit with their statement, unless the block's DDL holds the
        // stream (its rows are then the block's, in the stream's new shape).
        if self.in_block()
            && (meta.kind != crate::catalog::RelKind::Stream || self.block_holds(meta.id))
        {
            return self.block_write(meta, store, name, replace).await;
        }
        self.block_committed_early(name);
        self.begin_write(meta, store, replace).await
    }

    /// Start a write to `meta` (see [`Engine::begin_write`]) under this session's
    /// `lock_timeout`, committed by the statement itself (DDL's rewrites use it directly).
    pub(crate) async fn begin_write(
        &self,
        meta: &RelationMeta,
        store: &Arc<TableStore>,
        replace: bool,
    ) -> Result<crate::storage::WriteTxn> {
        self.refuse_ddl_on_block_write(meta)?;
        if self.engine.cluster.get().is_some() && self.applying.is_none() {
            // A cluster node's statement: staged, and ordered by the cluster's log.
            let txn = store.stage(replace);
            self.engine.check_definition(meta)?;
            return Ok(txn);
        }
        let lock_timeout = self.timeout_setting("lock_timeout")?;
        self.engine
            .begin_write(meta, store, replace, lock_timeout)
            .await
    }

    /// Primary-key state for a write: the keys already committed.
    pub(crate) async fn key_check(
        &self,
        meta: &RelationMeta,
        store: &Arc<TableStore>,
        name: &str,
    ) -> Result<Option<KeyCheck>> {
        let Some(mut k) = KeyCheck::new(meta, name)? else {
            return Ok(None);
        };
        let schema = meta.schema();
        for c in self.visible_snapshot(meta, store).iter() {
            let b = crate::storage::adapt_batch(store.read(c)?, &schema)?;
            k.conflicts(&b, true)?;
        }
        Ok(Some(k))
    }

    /// Column `i`'s DEFAULT, ready to fill rows (NULL when it has none). A volatile
    /// expression (`nextval`, `random()`) is evaluated for each row; any other once, now.
    pub(crate) async fn default_value(
        &self,
        meta: &RelationMeta,
        i: usize,
    ) -> Result<ColumnDefault> {
        let col = &meta.columns[i];
        let Some(expr) = &col.default else {
            return Ok(ColumnDefault::Once(new_null_array(&col.ty.arrow(), 1)));
        };
        let plan = self.plan(default_query(expr)?).await?;
        if let LogicalPlan::Projection(p) = &plan {
            if let [e] = p.expr.as_slice() {
                if e.is_volatile() {
                    let typed = cast(e.clone().unalias(), col.ty.arrow());
                    let physical = self.ctx.create_physical_expr(typed, &DFSchema::empty())?;
                    return Ok(ColumnDefault::PerRow(physical));
                }
            }
        }
        let batches = self.ctx.execute_logical_plan(plan).await?.collect().await?;
        let Some(b) = batches.first() else {
            return Err(brook_err!(Internal, "default expression produced no row"));
        };
        let f = b.schema().field(0).clone();
        Ok(ColumnDefault::Once(coerce_column(
            b.column(0),
            &f,
            &col.ty,
            &col.name,
            self.time_zone().as_deref(),
        )?))
    }

    /// Turn one batch of INSERT values into a batch of the relation: map to target columns,
    /// fill defaults, cast with PostgreSQL's assignment rules, check NOT NULL.
    pub(crate) async fn shape_batch(
        &self,
        meta: &RelationMeta,
        name: &str,
        batch: &RecordBatch,
        targets: Option<&[usize]>,
        defaults: &mut [Option<ColumnDefault>],
    ) -> Result<RecordBatch> {
        let schema = meta.schema();
        let src_schema = batch.schema();
        let width = batch.num_columns();
        let zone = self.time_zone();
        let zone = zone.as_deref();
        let targets: Vec<usize> = match targets {
            Some(t) => {
                if width > t.len() {
                    return Err(brook_err!(
                        Syntax,
                        "INSERT has more expressions than target columns"
                    ));
                }
                if width < t.len() {
                    return Err(brook_err!(
                        Syntax,
                        "INSERT has more target columns than expressions"
                    ));
                }
                t.to_vec()
            }
            None => {
                if width > meta.columns.len() {
                    return Err(brook_err!(
                        Syntax,
                        "INSERT has more expressions than target columns"
                    ));
                }
                (0..width).collect()
            }
        };
        let mut cols: Vec<Option<ArrayRef>> = vec![None; meta.columns.len()];
        for (src, &dst) in targets.iter().enumerate() {
            let c = &meta.columns[dst];
            cols[dst] = Some(coerce_column(
                batch.column(src),
                src_schema.field(src),
                &c.ty,
                &c.name,
                zone,
            )?);
        }
        let rows = batch.num_rows();
        let mut arrays = Vec::with_capacity(cols.len());
        for (i, c) in cols.into_iter().enumerate() {
            let a = match c {
                Some(a) => a,
                None => {
                    if defaults[i].is_none() {
                        defaults[i] = Some(self.default_value(meta, i).await?);
                    }
                    match &defaults[i] {
                        Some(d) => d.values(rows)?,
                        None => return Err(brook_err!(Internal, "default missing")),
                    }
                }
            };
            if meta.columns[i].not_null && a.null_count() > 0 {
                return Err(brook_err!(NotNullViolation, "null value in column \"{}\" of relation \"{name}\" violates not-null constraint",
                    meta.columns[i].name));
            }
            arrays.push(a);
        }
        Ok(RecordBatch::try_new_with_options(
            schema,
            arrays,
            &datafusion::arrow::array::RecordBatchOptions::new().with_row_count(Some(rows)),
        )?)
    }

    /// Write query output into a relation: map columns, fill defaults, cast, check
    /// constraints, then commit atomically.
    #[allow(clippy::too_many_arguments)]
    pub(crate) async fn write_stream_mapped(
        &self,
        meta: &RelationMeta,
        store: &Arc<TableStore>,
        name: &str,
        mut stream: SendableRecordBatchStream,
        targets: Option<Vec<usize>>,
        mode: WriteMode,
        returning: Option<Returning<'_>>,
    ) -> Result<(usize, Option<Outcome>)> {
        let mut written = Vec::new();
        let mut txn = self.begin_dml_write(meta, store, name, false).await?;
        let mut keys = self.key_check(meta, store, name).await?;
        let mut defaults: Vec<Option<ColumnDefault>> = vec![None; meta.columns.len()];
        let mut total = 0usize;
        while let Some(batch) = stream.next().await {
            let mut out = self
                .shape_batch(meta, name, &batch?, targets.as_deref(), &mut defaults)
                .await?;
            if let Some(k) = keys.as_mut() {
                let conflicts = k.conflicts(&out, true)?;
                if let Some(row) = conflicts.iter().position(|&c| c) {
                    if mode == WriteMode::Append {
                        return Err(k.violation(&out, row));
                    }
                    let keep_mask =
                        BooleanArray::from(conflicts.iter().map(|c| !c).collect::<Vec<_>>());
                    out = filter_record_batch(&out, &keep_mask)?;
                }
            }
            total += out.num_rows();
            txn.append(&out)?;
            if returning.is_some() {
                written.push(out);
            }
        }
        // RETURNING is computed before the commit: an error in it fails the whole statement.
        let out = match returning {
            Some(r) => Some(
                self.returning(name, r.alias, meta, written, r.items)
                    .await?,
            ),
            None => None,
        };
        self.commit_write(txn, meta, name, mode == WriteMode::SkipConflicts)
            .await?;
        Ok((total, out))
    }
}

/// A RETURNING list and the name the statement gave its target (an alias, if any).
#[derive(Clone, Copy)]
pub(crate) struct Returning<'a> {
    pub(crate) items: &'a [datafusion::sql::sqlparser::ast::SelectItem],
    pub(crate) alias: Option<&'a str>,
}
