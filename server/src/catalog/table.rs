//! Tables and streams as DataFusion table providers (ad-hoc queries read a snapshot).

use crate::catalog::RelationMeta;
use crate::storage::{adapt_batch, Snapshot, TableStore};
use async_trait::async_trait;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::catalog::{Session, TableProvider};
use datafusion::error::{DataFusionError, Result as DfResult};
use datafusion::execution::{SendableRecordBatchStream, TaskContext};
use datafusion::logical_expr::{Expr, TableType};
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::streaming::{PartitionStream, StreamingTableExec};
use datafusion::physical_plan::ExecutionPlan;
use futures::stream;
use std::sync::Arc;

/// A table or stream of the catalog, readable by DataFusion.
#[derive(Debug)]
pub struct BrookTable {
    /// Catalog entry.
    pub meta: RelationMeta,
    /// Its data.
    pub store: Arc<TableStore>,
    schema: SchemaRef,
    /// In a session's temporary schema: `information_schema.tables` says `LOCAL TEMPORARY`.
    temporary: bool,
}

impl BrookTable {
    /// Wrap a relation's metadata and store.
    pub fn new(meta: RelationMeta, store: Arc<TableStore>) -> Self {
        let schema = meta.schema();
        BrookTable {
            meta,
            store,
            schema,
            temporary: false,
        }
    }

    /// The same relation, in a temporary schema or not.
    pub fn temporary(self, temporary: bool) -> Self {
        BrookTable { temporary, ..self }
    }
}

#[async_trait]
impl TableProvider for BrookTable {
    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }

    fn table_type(&self) -> TableType {
        if self.temporary {
            TableType::Temporary
        } else {
            TableType::Base
        }
    }

    async fn scan(
        &self,
        state: &dyn Session,
        projection: Option<&Vec<usize>>,
        _filters: &[Expr],
        limit: Option<usize>,
    ) -> DfResult<Arc<dyn ExecutionPlan>> {
        // One partition in insertion order: a stream's rows keep their arrival order, and
        // plain scans of tables answer in insertion order as PostgreSQL's heap usually does.
        let part = SnapshotPartition {
            schema: self.schema.clone(),
            store: self.store.clone(),
            snapshot: self.snapshot(state),
        };
        one_partition_scan(Arc::new(part), projection, limit)
    }
}

/// A scan of one partition, read in order (as a relation's log is).
pub(crate) fn one_partition_scan(
    part: Arc<dyn PartitionStream>,
    projection: Option<&Vec<usize>>,
    limit: Option<usize>,
) -> DfResult<Arc<dyn ExecutionPlan>> {
    let exec = StreamingTableExec::try_new(
        part.schema().clone(),
        vec![part],
        projection,
        Vec::new(),
        false,
        limit,
    )?;
    Ok(Arc::new(exec))
}

impl BrookTable {
    /// The rows a statement of `state` sees: its transaction block's own version of the
    /// relation when the block wrote it, else the committed chunks.
    pub(crate) fn snapshot(&self, state: &dyn Session) -> Snapshot {
        state
            .config()
            .get_extension::<TxnOverlay>()
            .and_then(|o| o.0.get(&self.meta.id).map(|r| r.visible(&self.store)))
            .unwrap_or_else(|| self.store.snapshot())
    }
}

/// What a session's open transaction block has written, by relation id: its statements
/// read these rows of those relations instead of the committed ones (a session config
/// extension, set by the session after each statement of the block).
#[derive(Debug, Default)]
pub struct TxnOverlay(pub std::collections::HashMap<u64, crate::storage::OwnRows>);

/// The relation named `name` (`name` or `schema.name`, folded to lower case unless
/// double-quoted, as identifiers are) in `catalog`, if it exists.
pub fn lookup(
    catalog: &datafusion::catalog::MemoryCatalogProvider,
    name: &str,
) -> brook_common::Result<Option<Arc<dyn TableProvider>>> {
    use datafusion::catalog::CatalogProvider;
    let ident = |part: &str| match part.strip_prefix('"').and_then(|p| p.strip_suffix('"')) {
        Some(quoted) => quoted.to_string(),
        None => part.to_ascii_lowercase(),
    };
    let (schema, table) = match name.split_once('.') {
        Some((s, t)) => (ident(s), ident(t)),
        None => ("public".to_string(), ident(name)),
    };
    let Some(provider) = catalog.schema(&schema) else {
        return Ok(None);
    };
    table_in(provider.as_ref(), &table)
}

/// The relation `name` of a schema provider. Brook's schema providers are in-memory maps, so
/// the lookup is ready at once: it is polled once rather than run on an executor, which
/// would panic when the caller is itself planning inside one (a view whose query reads a
/// relation through a table function).
pub fn table_in(
    provider: &dyn datafusion::catalog::SchemaProvider,
    name: &str,
) -> brook_common::Result<Option<Arc<dyn TableProvider>>> {
    use futures::FutureExt;
    match provider.table(name).now_or_never() {
        Some(found) => found.map_err(|e| brook_common::BrookError::internal(e.to_string())),
        None => Err(brook_common::BrookError::internal(format!(
            "the lookup of relation {name} did not complete at once"
        ))),
    }
}

/// The committed chunks of a relation at scan time, read lazily.
#[derive(Debug)]
struct SnapshotPartition {
    schema: SchemaRef,
    store: Arc<TableStore>,
    snapshot: Snapshot,
}

impl PartitionStream for SnapshotPartition {
    fn schema(&self) -> &SchemaRef {
        &self.schema
    }

    fn execute(&self, _ctx: Arc<TaskContext>) -> SendableRecordBatchStream {
        let store = self.store.clone();
        let schema = self.schema.clone();
        let chunks = self.snapshot.as_ref().clone();
        let s = stream::iter(chunks).map(move |c| {
            store
                .read(&c)
                .and_then(|b| adapt_batch(b, &schema))
                .map_err(|e| DataFusionError::External(Box::new(e)))
        });
        Box::pin(RecordBatchStreamAdapter::new(self.schema.clone(), s))
    }
}

use futures::StreamExt;
