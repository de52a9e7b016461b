//! Primary-key enforcement for one write statement (INSERT, upsert, COPY), under the
//! relation's write lock.

use crate::catalog::RelationMeta;
use brook_common::{BrookError, Result};
use datafusion::arrow::array::{ArrayRef, RecordBatch};
use datafusion::arrow::row::{RowConverter, SortField};
use std::collections::HashSet;

/// Primary-key enforcement for one write statement.
pub(crate) struct KeyCheck {
    pub(crate) columns: Vec<usize>,
    pub(crate) converter: RowConverter,
    pub(crate) seen: HashSet<Box<[u8]>>,
    pub(crate) table: String,
    pub(crate) names: Vec<String>,
}

impl KeyCheck {
    /// An empty key set for the primary key of `meta` (None when it has no key).
    pub(crate) fn new(meta: &RelationMeta, table: &str) -> Result<Option<KeyCheck>> {
        if meta.primary_key.is_empty() {
            return Ok(None);
        }
        let schema = meta.schema();
        let fields: Vec<SortField> = meta
            .primary_key
            .iter()
            .map(|&i| SortField::new(schema.field(i).data_type().clone()))
            .collect();
        Ok(Some(KeyCheck {
            columns: meta.primary_key.clone(),
            converter: RowConverter::new(fields)?,
            seen: HashSet::new(),
            table: table.to_string(),
            names: meta
                .primary_key
                .iter()
                .map(|&i| meta.columns[i].name.clone())
                .collect(),
        }))
    }

    /// Rows of `batch` whose key already exists (or repeats within the batch).
    pub(crate) fn conflicts(&mut self, batch: &RecordBatch, insert: bool) -> Result<Vec<bool>> {
        let cols: Vec<ArrayRef> = self
            .columns
            .iter()
            .map(|&i| batch.column(i).clone())
            .collect();
        let rows = self.converter.convert_columns(&cols)?;
        let mut out = Vec::with_capacity(batch.num_rows());
        for r in rows.iter() {
            let key: Box<[u8]> = r.as_ref().into();
            if self.seen.contains(&key) {
                out.push(true);
            } else {
                if insert {
                    self.seen.insert(key);
                }
                out.push(false);
            }
        }
        Ok(out)
    }

    pub(crate) fn violation(&self, batch: &RecordBatch, row: usize) -> BrookError {
        let vals: Vec<String> = self
            .columns
            .iter()
            .map(|&c| {
                datafusion::arrow::util::display::array_value_to_string(batch.column(c), row)
                    .unwrap_or_default()
            })
            .collect();
        BrookError::DuplicateKey(Box::new(brook_common::error::KeyViolation {
            constraint: format!("{}_pkey", self.table),
            table: self.table.clone(),
            detail: format!(
                "Key ({})=({}) already exists.",
                self.names.join(", "),
                vals.join(", ")
            ),
        }))
    }
}
