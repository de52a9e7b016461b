//! `brook_synopses()`: the status report of every synopsis of the database — what it
//! summarises, its kind and size, its keys, rows seen, memory and the error its size gives —
//! the table users check before adding another.

use crate::catalog::RelKind;
use crate::continuous::QueryRegistry;
use crate::view::ViewTable;
use datafusion::arrow::array::{ArrayRef, Int64Array, StringArray};
use datafusion::arrow::datatypes::{DataType, Field, Schema};
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::catalog::{
    CatalogProvider, MemoryCatalogProvider, TableFunctionImpl, TableProvider,
};
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// The table function.
#[derive(Debug)]
pub struct SynopsesFunction {
    /// The server's continuous queries (a synopsis' maintenance is one).
    pub registry: Arc<QueryRegistry>,
    /// The database whose synopses are listed.
    pub database: String,
    /// The database's relations.
    pub catalog: Arc<MemoryCatalogProvider>,
}

/// One synopsis' row.
struct Row {
    schema: String,
    name: String,
    options: std::collections::BTreeMap<String, String>,
    rows_seen: i64,
    memory_bytes: i64,
    keys: i64,
}

impl TableFunctionImpl for SynopsesFunction {
    fn call_with_args(
        &self,
        _args: datafusion::catalog::TableFunctionArgs<'_, '_>,
    ) -> datafusion::error::Result<Arc<dyn TableProvider>> {
        let live = self.registry.live();
        let mut rows = Vec::new();
        for schema in self.catalog.schema_names() {
            let Some(provider) = self.catalog.schema(&schema) else {
                continue;
            };
            for name in provider.table_names() {
                let Ok(Some(table)) = futures::executor::block_on(provider.table(&name)) else {
                    continue;
                };
                let Some(view) = table.downcast_ref::<ViewTable>() else {
                    continue;
                };
                if view.kind != RelKind::Synopsis {
                    continue;
                }
                let stats = live.iter().find(|q| {
                    q.database == self.database
                        && q.kind == RelKind::Synopsis.noun()
                        && q.name == name
                });
                let (rows_seen, memory_bytes) = match stats {
                    Some(q) => (
                        q.rows_in.load(Ordering::Relaxed) as i64,
                        q.graph.lock().map(|g| g.state_bytes as i64).unwrap_or(0),
                    ),
                    None => (0, 0),
                };
                // Memory: the operator state (live sketches) and the maintained result rows.
                let (keys, result_bytes) = view.state.size();
                rows.push(Row {
                    schema: schema.clone(),
                    name,
                    options: view.options.clone(),
                    rows_seen,
                    memory_bytes: memory_bytes + result_bytes as i64,
                    keys: keys as i64,
                });
            }
        }
        rows.sort_by(|a, b| (&a.schema, &a.name).cmp(&(&b.schema, &b.name)));
        let text = |key: &str| -> ArrayRef {
            Arc::new(
                rows.iter()
                    .map(|r| r.options.get(key).cloned())
                    .collect::<StringArray>(),
            )
        };
        let schema = Arc::new(Schema::new(vec![
            Field::new("schema", DataType::Utf8, false),
            Field::new("name", DataType::Utf8, false),
            Field::new("source", DataType::Utf8, true),
            Field::new("kind", DataType::Utf8, true),
            Field::new("column", DataType::Utf8, true),
            Field::new("parameters", DataType::Utf8, true),
            Field::new("keys", DataType::Utf8, true),
            Field::new("synopses", DataType::Int64, false),
            Field::new("rows_seen", DataType::Int64, false),
            Field::new("memory_bytes", DataType::Int64, false),
            Field::new("error_bound", DataType::Utf8, true),
        ]));
        let columns: Vec<ArrayRef> = vec![
            Arc::new(
                rows.iter()
                    .map(|r| Some(r.schema.as_str()))
                    .collect::<StringArray>(),
            ),
            Arc::new(
                rows.iter()
                    .map(|r| Some(r.name.as_str()))
                    .collect::<StringArray>(),
            ),
            text("synopsis.source"),
            text("synopsis.kind"),
            text("synopsis.column"),
            text("synopsis.parameters"),
            text("synopsis.keys"),
            Arc::new(rows.iter().map(|r| r.keys).collect::<Int64Array>()),
            Arc::new(rows.iter().map(|r| r.rows_seen).collect::<Int64Array>()),
            Arc::new(rows.iter().map(|r| r.memory_bytes).collect::<Int64Array>()),
            text("synopsis.bound"),
        ];
        let batch = RecordBatch::try_new(schema.clone(), columns)?;
        Ok(Arc::new(datafusion::datasource::MemTable::try_new(
            schema,
            vec![vec![batch]],
        )?))
    }
}
