//! `brook_match_recognize(relation, clause)`: the table function `MATCH_RECOGNIZE` becomes
//! (see `brook_planner::match_recognize`).
//!
//! Ad hoc it reads the relation, orders its rows by the partition and `ORDER BY` columns
//! (ties in log order) and runs the continuous operator over them, then decides the matches
//! still open at the end; in a continuous query the planner reads the stream as a source and
//! puts the same operator after it (see `relation_operator` in the resolver).

use crate::catalog::table::BrookTable;
use brook_common::{brook_err, BrookError};
use brook_operators::change;
use brook_operators::match_recognize::{Interrupt, MatchRecognizeNode, MatchRecognizeOp};
use datafusion::arrow::array::{ArrayRef, UInt64Array};
use datafusion::arrow::compute::{concat_batches, lexsort_to_indices, take, SortColumn};
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::catalog::{
    MemoryCatalogProvider, Session, TableFunctionArgs, TableFunctionImpl, TableProvider,
};
use datafusion::common::ScalarValue;
use datafusion::datasource::memory::MemorySourceConfig;
use datafusion::datasource::TableType;
use datafusion::error::{DataFusionError, Result as DfResult};
use datafusion::execution::context::SessionState;
use datafusion::logical_expr::Expr;
use datafusion::physical_plan::ExecutionPlan;
use std::sync::Arc;

/// The table function, bound to a database's catalog.
#[derive(Debug)]
pub struct MatchRecognizeFunction {
    /// Where relations are looked up.
    pub catalog: Arc<MemoryCatalogProvider>,
}

impl TableFunctionImpl for MatchRecognizeFunction {
    fn call_with_args(&self, args: TableFunctionArgs<'_, '_>) -> DfResult<Arc<dyn TableProvider>> {
        let text = |i: usize| match args.exprs().get(i) {
            Some(Expr::Literal(ScalarValue::Utf8(Some(s)), _)) => Ok(s.clone()),
            _ => Err(DataFusionError::from(brook_err!(
                InvalidParameter,
                "brook_match_recognize(relation, clause): write MATCH_RECOGNIZE instead"
            ))),
        };
        let (name, clause) = (text(0)?, text(1)?);
        let relation = crate::catalog::table::lookup(&self.catalog, &name)
            .map_err(DataFusionError::from)?
            .ok_or_else(|| DataFusionError::from(BrookError::UndefinedTable(name.clone())))?;
        if !relation.is::<BrookTable>() {
            return Err(DataFusionError::from(brook_err!(
                WrongObjectType,
                "MATCH_RECOGNIZE reads a table or stream, and \"{name}\" is neither"
            )));
        }
        let state = args
            .session()
            .as_any()
            .downcast_ref::<SessionState>()
            .ok_or_else(|| {
                DataFusionError::from(brook_err!(Internal, "session is not a SessionState"))
            })?;
        let node = brook_planner::match_recognize::plan_node(&clause, relation.schema(), state)
            .map_err(DataFusionError::from)?;
        Ok(Arc::new(MatchRecognizeTable {
            relation,
            name,
            node: Arc::new(node),
        }))
    }
}

/// Row pattern matches over one relation.
#[derive(Debug)]
pub struct MatchRecognizeTable {
    /// The relation matched (a Brook table or stream).
    pub relation: Arc<dyn TableProvider>,
    /// Its name, as given.
    pub name: String,
    /// The matching (the operator's plan node).
    pub node: Arc<MatchRecognizeNode>,
}

impl MatchRecognizeTable {
    /// The relation's rows ordered by partition, then `ORDER BY`, then log position.
    fn ordered(&self, batches: &[RecordBatch]) -> brook_common::Result<RecordBatch> {
        let all = concat_batches(&self.node.input_schema, batches)?;
        let position: ArrayRef = Arc::new(UInt64Array::from_iter_values(0..all.num_rows() as u64));
        let mut keys: Vec<SortColumn> = self
            .node
            .partition
            .iter()
            .chain(&self.node.order)
            .map(|&c| SortColumn {
                values: all.column(c).clone(),
                options: Some(brook_operators::match_recognize::ORDER),
            })
            .collect();
        keys.push(SortColumn {
            values: position,
            options: None,
        });
        let at = lexsort_to_indices(&keys, None)?;
        let cols = all
            .columns()
            .iter()
            .map(|c| Ok(take(c.as_ref(), &at, None)?))
            .collect::<brook_common::Result<Vec<_>>>()?;
        Ok(RecordBatch::try_new(all.schema(), cols)?)
    }

    /// Every match over `rows` (ordered); `interrupt` stops the matching (the statement
    /// was cancelled).
    fn matches(
        node: &MatchRecognizeNode,
        rows: &RecordBatch,
        interrupt: Interrupt,
    ) -> brook_common::Result<Vec<RecordBatch>> {
        let mut op = MatchRecognizeOp::new(node)?.with_interrupt(interrupt);
        // All rows in one push (they are in memory already): a match still open at a
        // batch's end is tried again from its start when the next batch arrives, so
        // cutting the table into batches would cost a long match once per batch.
        let mut out = change::push_inserts(&mut op, &node.input_schema, rows)?;
        out.extend(op.finish()?);
        Ok(out)
    }
}

#[async_trait::async_trait]
impl TableProvider for MatchRecognizeTable {
    fn schema(&self) -> SchemaRef {
        self.node.schema.clone()
    }

    fn table_type(&self) -> TableType {
        TableType::View
    }

    async fn scan(
        &self,
        state: &dyn Session,
        projection: Option<&Vec<usize>>,
        _filters: &[Expr],
        _limit: Option<usize>,
    ) -> DfResult<Arc<dyn ExecutionPlan>> {
        let plan = self.relation.scan(state, None, &[], None).await?;
        let batches = datafusion::physical_plan::collect(plan, state.task_ctx()).await?;
        let rows = self.ordered(&batches).map_err(DataFusionError::from)?;
        // Matching is CPU work that may take long (bounded per attempt, not per query): it
        // runs off the async workers and stops when the statement is cancelled.
        let token = state
            .config()
            .get_extension::<crate::exec::cancellable::StatementCancel>()
            .map(|c| c.token());
        let interrupt: Interrupt =
            Arc::new(move || token.as_ref().is_some_and(|t| t.is_cancelled()));
        let node = self.node.clone();
        let out = tokio::task::spawn_blocking(move || Self::matches(&node, &rows, interrupt))
            .await
            .map_err(|e| {
                DataFusionError::from(BrookError::internal(format!("row pattern matching: {e}")))
            })?
            .map_err(DataFusionError::from)?;
        let exec = MemorySourceConfig::try_new_exec(
            &[out],
            self.node.schema.clone(),
            projection.cloned(),
        )?;
        Ok(exec)
    }
}
