//! COPY: FROM STDIN (the data arrives in CopyData messages), TO STDOUT, and a continuous
//! COPY (query) TO STDOUT.

use crate::copy::{BatchBuilder, CopyFormat, CopyOptions, CopyParser, CopyTarget};
use crate::ident::ident_name;
use crate::ident::quote_ident;
use crate::session::Outcome;
use crate::session::Session;
use crate::write::copy_in::copy_feed;
use crate::write::copy_in::BatchWriter;
use crate::write::copy_in::CopyIn;
use crate::write::copy_in::CopyWriter;
use brook_common::{brook_err, Result};
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::sql::sqlparser::ast::{self, CopySource, CopyTarget as SqlCopyTarget, Statement};
use futures::StreamExt;
use std::sync::Arc;

impl Session {
    pub(crate) async fn copy(
        &mut self,
        source: CopySource,
        to: bool,
        target: SqlCopyTarget,
        options: &[ast::CopyOption],
        legacy: &[ast::CopyLegacyOption],
        values: Vec<Option<String>>,
    ) -> Result<Outcome> {
        let opts = CopyOptions::from_sql(options, legacy)?;
        if to {
            if !matches!(target, SqlCopyTarget::Stdout) {
                return Err(brook_err!(
                    Unsupported,
                    "COPY TO a file or program (use COPY ... TO STDOUT)"
                ));
            }
            let mut names = None;
            let stmt = match source {
                CopySource::Query(q) => {
                    // Read as a SELECT is (literal types, function aliases, windows), its
                    // columns (a CSV header's) named as PostgreSQL names them.
                    let mut stmt = Statement::Query(q);
                    names = brook_planner::rewrite::output_names(&stmt);
                    crate::pg::sql::pg_literals(&mut stmt)?;
                    stmt
                }
                CopySource::Table {
                    table_name,
                    columns,
                } => {
                    let (schema, name) = self.resolve(&table_name)?;
                    self.relation(&schema, &name)?;
                    let cols = if columns.is_empty() {
                        "*".to_string()
                    } else {
                        columns
                            .iter()
                            .map(|c| quote_ident(&ident_name(c)))
                            .collect::<Vec<_>>()
                            .join(", ")
                    };
                    let sql = format!(
                        "SELECT {cols} FROM {}.{}",
                        quote_ident(&schema),
                        quote_ident(&name)
                    );
                    match brook_planner::parser::parse_one(&sql)?.into_plain_sql() {
                        Some(s) => s,
                        None => {
                            return Err(brook_err!(Internal, "COPY TO query did not parse as SQL"))
                        }
                    }
                }
            };
            let plan = self.plan(stmt).await?;
            let df = self.ctx.execute_logical_plan(plan).await?;
            let rows = df.execute_stream().await?;
            let schema = crate::pg::sql::pg_named(rows.schema().as_ref().clone(), names);
            let named = schema.clone();
            let rows = rows.map(move |b| {
                b.and_then(|b| Ok(RecordBatch::try_new(named.clone(), b.columns().to_vec())?))
            });
            let stream = Box::pin(RecordBatchStreamAdapter::new(schema, rows));
            return Ok(Outcome::CopyOut { opts, stream });
        }
        if !matches!(target, SqlCopyTarget::Stdin) {
            return Err(brook_err!(
                Unsupported,
                "COPY FROM a file or program (use COPY ... FROM STDIN)"
            ));
        }
        if !values.is_empty() {
            return Err(brook_err!(
                Unsupported,
                "inline COPY data in the query string"
            ));
        }
        let CopySource::Table {
            table_name,
            columns,
        } = source
        else {
            return Err(brook_err!(
                Syntax,
                "COPY ... FROM does not support a query as a source"
            ));
        };
        let (schema, name) = self.resolve(&table_name)?;
        let (meta, store) = self.writable(&schema, &name)?;
        let field_columns = if columns.is_empty() {
            (0..meta.columns.len()).collect::<Vec<_>>()
        } else {
            let mut v = Vec::new();
            for c in &columns {
                let n = ident_name(c);
                let i = meta.column_index(&n, &name)?;
                if v.contains(&i) {
                    return Err(brook_err!(
                        Syntax,
                        "column \"{n}\" specified more than once"
                    ));
                }
                v.push(i);
            }
            v
        };
        let mut defaults = vec![None; meta.columns.len()];
        for (i, d) in defaults.iter_mut().enumerate() {
            if !field_columns.contains(&i) && meta.columns[i].default.is_some() {
                *d = Some(self.default_value(&meta, i).await?);
            }
        }
        let target = Arc::new(CopyTarget {
            schema: meta.schema(),
            types: meta.columns.iter().map(|c| c.ty.clone()).collect(),
            field_columns,
            defaults,
            table: name.clone(),
            not_null: meta.columns.iter().map(|c| c.not_null).collect(),
            zone: self.time_zone(),
            binary: opts.format == CopyFormat::Binary,
        });
        let columns = target.field_columns.len();
        let binary = opts.format == CopyFormat::Binary;
        // The existing keys are read under the write lock: a concurrent writer's keys are
        // either committed before (and seen here) or written after this COPY ends.
        let txn = self.begin_dml_write(&meta, &store, &name, false).await?;
        let keys = self.key_check(&meta, &store, &name).await?;
        self.copy_in = Some(CopyIn {
            relation: format!("{schema}.{name}"),
            bytes: 0,
            rows_sent: 0,
            parser: CopyParser::new(opts),
            builder: BatchBuilder::new(target.clone()),
            writer: CopyWriter::Here(Box::new(BatchWriter {
                meta,
                target,
                txn,
                keys,
            })),
        });
        Ok(Outcome::CopyIn { columns, binary })
    }

    /// COPY data arrived. On error the COPY is aborted (nothing of it is visible).
    pub async fn copy_data(&mut self, data: &[u8]) -> Result<()> {
        let Some(c) = self.copy_in.as_mut() else {
            return Err(brook_err!(
                Protocol,
                "COPY data received outside of COPY IN"
            ));
        };
        let res = copy_feed(c, data, false).await;
        if res.is_err() {
            self.abort_copy().await;
        } else {
            let progress = c.progress();
            self.engine.activity.copy_progress(self.pid, Some(progress));
        }
        res
    }

    /// COPY data ended: flush, commit, return the row count.
    pub async fn copy_done(&mut self) -> Result<usize> {
        let Some(mut c) = self.copy_in.take() else {
            return Err(brook_err!(Protocol, "CopyDone received outside of COPY IN"));
        };
        self.engine.activity.copy_progress(self.pid, None);
        let done = async {
            copy_feed(&mut c, &[], true).await?;
            let mut w = c.writer.finish().await?;
            // Rows of a COPY too small to start the writer thread are still in the builder.
            w.write(c.builder.take_raw())?;
            let n = w.txn.statement_rows();
            self.commit_write(w.txn, &w.meta, &w.target.table, false)
                .await?;
            Ok(n)
        }
        .await;
        if done.is_err() {
            // The writer has ended (its transaction undone, or given back to the block).
            let _ = c.writer.finish().await;
            self.block_failed();
        }
        done
    }

    /// The client aborted the COPY.
    pub async fn copy_fail(&mut self) {
        self.abort_copy().await;
    }

    /// End the COPY in progress without its rows, and wait for its writer to let go of
    /// its transaction: undone, or (in a transaction block) given back to the block, which
    /// fails.
    async fn abort_copy(&mut self) {
        self.engine.activity.copy_progress(self.pid, None);
        if let Some(mut c) = self.copy_in.take() {
            let _ = c.writer.finish().await;
        }
        self.block_failed();
    }
}
