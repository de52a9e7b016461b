//! `brook_numbered_rows(schema, relation)`: a table or stream read with each row's position
//! in the scan as a last column, `__brook_rid` (0, 1, 2, ...).
//!
//! UPDATE ... FROM and DELETE ... USING (and UPDATE/DELETE whose condition holds a subquery)
//! join the target to other relations, so a target row can meet several rows or none; they
//! match the joined rows back to the target's rows by this number. A relation is read as one
//! partition in log order, and under the statement's write lock every scan of it in the
//! statement reads the same chunks, so two scans number the rows alike. DataFusion's
//! `row_number() OVER ()` would not do: the optimizer may spread its input over partitions
//! and gather them in any order.

use crate::catalog::table::{one_partition_scan, BrookTable};
use crate::storage::{adapt_batch, Snapshot, TableStore};
use async_trait::async_trait;
use brook_common::{brook_err, BrookError};
use datafusion::arrow::array::{ArrayRef, Int64Array};
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::catalog::{
    MemoryCatalogProvider, Session, TableFunctionArgs, TableFunctionImpl, TableProvider,
};
use datafusion::common::ScalarValue;
use datafusion::error::{DataFusionError, Result as DfResult};
use datafusion::execution::{SendableRecordBatchStream, TaskContext};
use datafusion::logical_expr::{Expr, TableType};
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::streaming::PartitionStream;
use datafusion::physical_plan::ExecutionPlan;
use futures::{stream, StreamExt};
use std::sync::Arc;

/// The table function's name.
pub const NUMBERED_ROWS_FUNCTION: &str = "brook_numbered_rows";

/// The column holding a row's position.
pub const ROW_NUMBER_COLUMN: &str = "__brook_rid";

/// The table function, bound to a database's catalog.
#[derive(Debug)]
pub struct NumberedRowsFunction {
    /// Where relations are looked up.
    pub catalog: Arc<MemoryCatalogProvider>,
}

impl TableFunctionImpl for NumberedRowsFunction {
    fn call_with_args(&self, args: TableFunctionArgs<'_, '_>) -> DfResult<Arc<dyn TableProvider>> {
        let text = |e: Option<&Expr>| match e {
            Some(Expr::Literal(ScalarValue::Utf8(Some(s)), _)) => Some(s.clone()),
            _ => None,
        };
        let exprs = args.exprs();
        let (Some(schema), Some(name), 2) = (text(exprs.first()), text(exprs.get(1)), exprs.len())
        else {
            return Err(DataFusionError::from(brook_err!(
                InvalidParameter,
                "{NUMBERED_ROWS_FUNCTION}(schema, relation) takes two text constants"
            )));
        };
        use datafusion::catalog::CatalogProvider;
        let relation = self
            .catalog
            .schema(&schema)
            .map(|s| crate::catalog::table::table_in(s.as_ref(), &name))
            .transpose()
            .map_err(DataFusionError::from)?
            .flatten()
            .ok_or_else(|| {
                DataFusionError::from(BrookError::UndefinedTable(format!("{schema}.{name}")))
            })?;
        let Some(table) = relation.downcast_ref::<BrookTable>() else {
            return Err(DataFusionError::from(brook_err!(
                WrongObjectType,
                "\"{schema}.{name}\" is not a table or stream"
            )));
        };
        Ok(Arc::new(NumberedTable::new(BrookTable::new(
            table.meta.clone(),
            table.store.clone(),
        ))))
    }
}

/// A relation with its rows numbered.
#[derive(Debug)]
pub struct NumberedTable {
    table: BrookTable,
    schema: SchemaRef,
}

impl NumberedTable {
    fn new(table: BrookTable) -> Self {
        let mut fields: Vec<Field> = table
            .schema()
            .fields()
            .iter()
            .map(|f| f.as_ref().clone())
            .collect();
        fields.push(Field::new(ROW_NUMBER_COLUMN, DataType::Int64, false));
        NumberedTable {
            table,
            schema: Arc::new(Schema::new(fields)),
        }
    }
}

#[async_trait]
impl TableProvider for NumberedTable {
    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }

    fn table_type(&self) -> TableType {
        TableType::Base
    }

    async fn scan(
        &self,
        state: &dyn Session,
        projection: Option<&Vec<usize>>,
        _filters: &[Expr],
        limit: Option<usize>,
    ) -> DfResult<Arc<dyn ExecutionPlan>> {
        let part = NumberedPartition {
            schema: self.schema.clone(),
            table_schema: self.table.schema(),
            store: self.table.store.clone(),
            snapshot: self.table.snapshot(state),
        };
        one_partition_scan(Arc::new(part), projection, limit)
    }
}

/// The chunks of a snapshot, read in order, each batch with its rows' numbers.
#[derive(Debug)]
struct NumberedPartition {
    schema: SchemaRef,
    table_schema: SchemaRef,
    store: Arc<TableStore>,
    snapshot: Snapshot,
}

impl PartitionStream for NumberedPartition {
    fn schema(&self) -> &SchemaRef {
        &self.schema
    }

    fn execute(&self, _ctx: Arc<TaskContext>) -> SendableRecordBatchStream {
        let store = self.store.clone();
        let (schema, table_schema) = (self.schema.clone(), self.table_schema.clone());
        let chunks = self.snapshot.as_ref().clone();
        let mut next = 0i64;
        let s = stream::iter(chunks).map(move |c| {
            let batch = store
                .read(&c)
                .and_then(|b| adapt_batch(b, &table_schema))
                .map_err(|e| DataFusionError::External(Box::new(e)))?;
            let n = batch.num_rows() as i64;
            let numbers: ArrayRef = Arc::new(Int64Array::from_iter_values(next..next + n));
            next += n;
            let mut columns = batch.columns().to_vec();
            columns.push(numbers);
            Ok(RecordBatch::try_new(schema.clone(), columns)?)
        });
        Box::pin(RecordBatchStreamAdapter::new(self.schema.clone(), s))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::CacheBudget;
    use datafusion::arrow::array::{AsArray, Int32Array};
    use datafusion::arrow::datatypes::Int64Type;
    use datafusion::execution::TaskContext;

    fn ids(values: &[i32]) -> RecordBatch {
        let schema = Arc::new(Schema::new(vec![Field::new("id", DataType::Int32, false)]));
        RecordBatch::try_new(schema, vec![Arc::new(Int32Array::from(values.to_vec()))]).unwrap()
    }

    /// Rows are numbered across chunks in log order, and two reads of one snapshot agree.
    #[tokio::test]
    async fn rows_are_numbered_across_chunks() {
        let dir = tempfile::tempdir().unwrap();
        let store = TableStore::create(dir.path(), CacheBudget::new(0)).unwrap();
        for chunk in [&[7, 8][..], &[9], &[10, 11, 12]] {
            let mut t = store.begin(false).await.unwrap();
            t.append(&ids(chunk)).unwrap();
            t.commit().unwrap();
        }
        let table_schema = ids(&[]).schema();
        let mut fields: Vec<Field> = table_schema
            .fields()
            .iter()
            .map(|f| f.as_ref().clone())
            .collect();
        fields.push(Field::new(ROW_NUMBER_COLUMN, DataType::Int64, false));
        let part = NumberedPartition {
            schema: Arc::new(Schema::new(fields)),
            table_schema,
            store: store.clone(),
            snapshot: store.snapshot(),
        };
        let read = || async {
            let batches: Vec<RecordBatch> = part
                .execute(Arc::new(TaskContext::default()))
                .map(|b| b.unwrap())
                .collect()
                .await;
            batches
                .iter()
                .flat_map(|b| {
                    let id = b
                        .column(0)
                        .as_primitive::<datafusion::arrow::datatypes::Int32Type>();
                    let n = b.column(1).as_primitive::<Int64Type>();
                    (0..b.num_rows())
                        .map(|i| (id.value(i), n.value(i)))
                        .collect::<Vec<_>>()
                })
                .collect::<Vec<_>>()
        };
        let first = read().await;
        assert_eq!(
            first,
            vec![(7, 0), (8, 1), (9, 2), (10, 3), (11, 4), (12, 5)]
        );
        assert_eq!(read().await, first);
    }
}
