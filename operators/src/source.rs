//! A scanned relation as the entry of a continuous plan: projection, change kind, watermark.

use crate::change;
use brook_common::{brook_err, Result};
use datafusion::arrow::compute::max;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::physical_expr::PhysicalExpr;
use std::fmt;
use std::sync::Arc;

/// Where a continuous plan reads a relation.
#[derive(Debug, Clone)]
pub struct SourceSpec {
    /// The relation as the query named it (for EXPLAIN and for the server to find it).
    pub relation: String,
    /// Columns of the relation the plan reads (`None`: all).
    pub projection: Option<Vec<usize>>,
    /// The relation's full schema (what the server hands in).
    pub table_schema: SchemaRef,
    /// The schema after projection (what the plan sees, without change kind).
    pub schema: SchemaRef,
    /// Watermark expression over the full schema (`WATERMARK FOR ts AS ts - ...`).
    pub watermark: Option<Arc<dyn PhysicalExpr>>,
    /// The watermark as its declaration reads (for EXPLAIN).
    pub watermark_sql: Option<String>,
    /// True when the relation may retract rows (a table: UPDATE/DELETE), false for a stream.
    pub updating: bool,
    /// After this long without rows (wall clock) the source is idle: it stops holding back
    /// the watermark of queries that read other streams too (`WITH (idle_timeout = ..)`).
    pub idle_timeout: Option<std::time::Duration>,
}

impl fmt::Display for SourceSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let cols: Vec<&str> = self
            .schema
            .fields()
            .iter()
            .map(|f| f.name().as_str())
            .collect();
        write!(
            f,
            "Source: {} [{}] {}",
            self.relation,
            cols.join(", "),
            if self.updating {
                "changelog"
            } else {
                "append-only"
            }
        )?;
        if let Some(w) = &self.watermark_sql {
            write!(f, " watermark={w}")?;
        }
        Ok(())
    }
}

/// Runtime state of a source: the highest watermark seen.
#[derive(Debug)]
pub struct SourceState {
    spec: SourceSpec,
    watermark: Option<i64>,
}

impl SourceState {
    /// Fresh state.
    pub fn new(spec: SourceSpec) -> Self {
        SourceState {
            spec,
            watermark: None,
        }
    }

    /// The watermark so far.
    pub fn watermark(&self) -> Option<i64> {
        self.watermark
    }

    /// The input ended: nothing earlier than the end of time follows.
    pub fn finish(&mut self) {
        self.watermark = Some(i64::MAX);
    }

    /// Raise the watermark to `watermark` (an idle source following the others); returns
    /// whether it moved.
    pub fn raise(&mut self, watermark: i64) -> bool {
        if self.spec.watermark.is_none() || self.watermark.is_some_and(|w| w >= watermark) {
            return false;
        }
        self.watermark = Some(watermark);
        true
    }

    /// Turn rows of the relation (full schema) into plan input with change `kind`; advances
    /// the watermark over inserted rows. Returns the batch and the new watermark if it moved.
    pub fn ingest(&mut self, raw: &RecordBatch, kind: i8) -> Result<(RecordBatch, Option<i64>)> {
        let mut moved = None;
        if kind == change::INSERT {
            if let Some(expr) = &self.spec.watermark {
                let v = expr.evaluate(raw)?.into_array(raw.num_rows())?;
                let micros = crate::timestamp_micros(&v)?;
                if let Some(m) = max(&micros) {
                    if self.watermark.is_none_or(|w| m > w) {
                        self.watermark = Some(m);
                        moved = Some(m);
                    }
                }
            }
        }
        let projected = match &self.spec.projection {
            Some(p) => raw.project(p)?,
            None => raw.clone(),
        };
        if projected.num_columns() != self.spec.schema.fields().len() {
            return Err(brook_err!(
                Internal,
                "source batch does not match its schema"
            ));
        }
        let rows = projected.num_rows();
        let out = change::attach(
            &self.spec.schema,
            projected.columns().to_vec(),
            change::constant(kind, rows),
        )?;
        Ok((out, moved))
    }
}
