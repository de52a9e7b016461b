//! Table functions over synopses.
//!
//! - `brook_synopses()`: the status report of every synopsis of the database — what it
//!   summarises, its kind and size, its keys, rows seen, memory and the error its size
//!   gives, its scope (`global`: merged from every node's partial sketches) and the bytes
//!   its last read gathered — the table users check before adding another.
//! - `correlated_pairs('name', threshold)`: every pair of keys of a `dft` synopsis whose
//!   current windows correlate at `threshold` or more (StatStream's grid search).

use crate::catalog::RelKind;
use crate::stream::registry::QueryRegistry;
use crate::stream::view::{ViewState, ViewTable};
use brook_common::{brook_err, BrookError};
use brook_synopses::dft::{correlated_pairs, Dft};
use brook_synopses::Synopsis;
use datafusion::arrow::array::{
    Array, ArrayRef, AsArray, Float64Array, Int64Array, StringArray, UInt32Array,
};
use datafusion::arrow::compute::take;
use datafusion::arrow::datatypes::{DataType, Field, Schema};
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::catalog::{
    CatalogProvider, MemoryCatalogProvider, TableFunctionArgs, TableFunctionImpl, TableProvider,
};
use datafusion::error::DataFusionError;
use datafusion::logical_expr::Expr;
use datafusion::scalar::ScalarValue;
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
    gathered_bytes: i64,
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
                let Ok(Some(table)) = crate::catalog::table::table_in(provider.as_ref(), &name)
                else {
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
                        && q.name() == name
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
                    gathered_bytes: view.state.gathered_bytes.load(Ordering::Relaxed) as i64,
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
            Field::new("scope", DataType::Utf8, false),
            Field::new("gathered_bytes", DataType::Int64, false),
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
            Arc::new(
                rows.iter()
                    .map(|r| {
                        let global = r
                            .options
                            .contains_key(brook_planner::view_merge::MERGE_OPTION);
                        Some(if global { "global" } else { "local" })
                    })
                    .collect::<StringArray>(),
            ),
            Arc::new(
                rows.iter()
                    .map(|r| r.gathered_bytes)
                    .collect::<Int64Array>(),
            ),
        ];
        let batch = RecordBatch::try_new(schema.clone(), columns)?;
        Ok(Arc::new(datafusion::datasource::MemTable::try_new(
            schema,
            vec![vec![batch]],
        )?))
    }
}

/// `correlated_pairs('name', threshold)`.
#[derive(Debug)]
pub struct CorrelatedPairsFunction {
    /// The database's relations.
    pub catalog: Arc<MemoryCatalogProvider>,
}

impl CorrelatedPairsFunction {
    /// The `dft` synopsis named by the first argument (`name` or `schema.name`; folded to
    /// lower case unless double-quoted, as identifiers are).
    fn synopsis(&self, name: &str) -> Result<Arc<ViewState>, BrookError> {
        let missing = || brook_err!(UndefinedTable, "synopsis \"{name}\" does not exist");
        let table = crate::catalog::table::lookup(&self.catalog, name)?.ok_or_else(missing)?;
        let not_dft = || {
            brook_err!(
                WrongObjectType,
                "\"{name}\" is not a dft synopsis (CREATE SYNOPSIS ... USING dft(column, window))"
            )
        };
        let view = table.downcast_ref::<ViewTable>().ok_or_else(not_dft)?;
        let kind = view.options.get("synopsis.kind").map(String::as_str);
        if view.kind != RelKind::Synopsis || kind != Some("dft") {
            return Err(not_dft());
        }
        Ok(view.state.clone())
    }
}

impl TableFunctionImpl for CorrelatedPairsFunction {
    fn call_with_args(
        &self,
        args: TableFunctionArgs<'_, '_>,
    ) -> datafusion::error::Result<Arc<dyn TableProvider>> {
        let usage = || {
            DataFusionError::from(brook_err!(InvalidParameter, "correlated_pairs(synopsis, threshold): a synopsis name and a correlation between -1 and 1"))
        };
        let exprs = args.exprs();
        let name = match exprs.first() {
            Some(Expr::Literal(ScalarValue::Utf8(Some(n)), _)) => n.clone(),
            _ => return Err(usage()),
        };
        let threshold = match exprs.get(1) {
            Some(Expr::Literal(v, _)) if !v.is_null() => match v.cast_to(&DataType::Float64) {
                Ok(ScalarValue::Float64(Some(t))) => t,
                _ => return Err(usage()),
            },
            _ => return Err(usage()),
        };
        if exprs.len() != 2 {
            return Err(usage());
        }
        let state = self.synopsis(&name).map_err(DataFusionError::from)?;
        let snapshot = state.snapshot().map_err(DataFusionError::from)?;
        let schema = snapshot.schema();
        let sketch_at = schema.index_of("sketch")?;
        let keys: Vec<usize> = (0..schema.fields().len())
            .filter(|&i| i != sketch_at && schema.field(i).name() != "rows_seen")
            .collect();
        let sketches = snapshot
            .column(sketch_at)
            .as_binary_opt::<i32>()
            .ok_or_else(|| {
                DataFusionError::from(brook_err!(Internal, "dft synopsis sketch is not bytea"))
            })?;
        let mut series = Vec::with_capacity(sketches.len());
        for bytes in sketches.iter() {
            let bytes =
                bytes.ok_or_else(|| DataFusionError::from(brook_err!(Internal, "null sketch")))?;
            series.push(Dft::from_bytes(bytes).map_err(DataFusionError::from)?);
        }
        let refs: Vec<&Dft> = series.iter().collect();
        let mut pairs = correlated_pairs(&refs, threshold)
            .map_err(DataFusionError::from)?
            .pairs;
        pairs.sort_by(|a, b| b.correlation.total_cmp(&a.correlation));
        let left = UInt32Array::from_iter_values(pairs.iter().map(|p| p.left as u32));
        let right = UInt32Array::from_iter_values(pairs.iter().map(|p| p.right as u32));
        let mut fields = Vec::new();
        let mut columns: Vec<ArrayRef> = Vec::new();
        for (side, rows) in [("left", &left), ("right", &right)] {
            for &k in &keys {
                let f = schema.field(k);
                fields.push(Field::new(
                    format!("{side}_{}", f.name()),
                    f.data_type().clone(),
                    true,
                ));
                columns.push(take(snapshot.column(k), rows, None)?);
            }
        }
        fields.push(Field::new("correlation", DataType::Float64, false));
        columns.push(Arc::new(Float64Array::from_iter_values(
            pairs.iter().map(|p| p.correlation),
        )));
        let schema = Arc::new(Schema::new(fields));
        let batch = RecordBatch::try_new(schema.clone(), columns)?;
        Ok(Arc::new(datafusion::datasource::MemTable::try_new(
            schema,
            vec![vec![batch]],
        )?))
    }
}
