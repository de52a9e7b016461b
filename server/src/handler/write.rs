//! The steps of a write that INSERT, upsert, UPDATE/DELETE and COPY share: taking the
//! relation's write lock with its definition checked, key checks, defaults, and shaping a
//! batch to the relation's columns.

use crate::catalog::RelationMeta;
use crate::session::Session;
use crate::storage::TableStore;
use crate::write::coerce::coerce_column;
use crate::write::coerce::repeat_scalar;
use crate::write::keys::KeyCheck;
use crate::write::WriteMode;
use brook_common::{brook_err, Result};
use datafusion::arrow::array::{Array, ArrayRef, BooleanArray, RecordBatch};
use datafusion::arrow::compute::filter_record_batch;
use datafusion::execution::SendableRecordBatchStream;
use futures::StreamExt;
use std::sync::Arc;

impl Session {
    /// Start a write to `meta` (see [`Engine::begin_write`]) under this session's
    /// `lock_timeout`.
    pub(crate) async fn begin_write(
        &self,
        meta: &RelationMeta,
        store: &Arc<TableStore>,
        replace: bool,
    ) -> Result<crate::storage::WriteTxn> {
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
        for c in store.snapshot().iter() {
            let b = crate::storage::adapt_batch(store.read(c)?, &schema)?;
            k.conflicts(&b, true)?;
        }
        Ok(Some(k))
    }

    /// The value of column `i`'s DEFAULT as a one-row array of the column's type.
    pub(crate) async fn default_value(&self, meta: &RelationMeta, i: usize) -> Result<ArrayRef> {
        let col = &meta.columns[i];
        let Some(expr) = &col.default else {
            return Ok(datafusion::arrow::array::new_null_array(&col.ty.arrow(), 1));
        };
        let df = self.ctx.sql(&format!("SELECT {expr}")).await?;
        let batches = df.collect().await?;
        let Some(b) = batches.first() else {
            return Err(brook_err!(Internal, "default expression produced no row"));
        };
        let f = b.schema().field(0).clone();
        coerce_column(b.column(0), &f, &col.ty, &col.name)
    }

    /// Turn one batch of INSERT values into a batch of the relation: map to target columns,
    /// fill defaults, cast with PostgreSQL's assignment rules, check NOT NULL.
    pub(crate) async fn shape_batch(
        &self,
        meta: &RelationMeta,
        name: &str,
        batch: &RecordBatch,
        targets: Option<&[usize]>,
        defaults: &mut [Option<ArrayRef>],
    ) -> Result<RecordBatch> {
        let schema = meta.schema();
        let src_schema = batch.schema();
        let width = batch.num_columns();
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
                        Some(d) => repeat_scalar(d, rows)?,
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
        mut keep: Option<&mut Vec<RecordBatch>>,
    ) -> Result<usize> {
        let mut txn = self.begin_write(meta, store, false).await?;
        let mut keys = self.key_check(meta, store, name).await?;
        let mut defaults: Vec<Option<ArrayRef>> = vec![None; meta.columns.len()];
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
            if let Some(k) = keep.as_deref_mut() {
                k.push(out);
            }
        }
        txn.commit()?;
        Ok(total)
    }
}
