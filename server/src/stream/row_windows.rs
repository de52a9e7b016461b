//! `brook_count_window(relation, size, slide, key ...)`: the table function `TUMBLE_ROWS` and
//! `HOP_ROWS` expand to (see `brook_planner::windows`).
//!
//! Ad hoc it reads the relation in log order (arrival order) and runs the continuous count
//! window operator over those rows, so a table and a stream give the same windows; in a
//! continuous query the planner reads the relation as a source and puts the same operator
//! after it (see `CountWindowTable` in the resolver).

use crate::catalog::table::BrookTable;
use brook_common::{brook_err, BrookError};
use brook_operators::change;
use brook_operators::count_window::CountWindowNode;
use brook_operators::NodeSpec;
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::catalog::{
    MemoryCatalogProvider, Session, TableFunctionArgs, TableFunctionImpl, TableProvider,
};
use datafusion::common::ScalarValue;
use datafusion::datasource::memory::MemorySourceConfig;
use datafusion::datasource::TableType;
use datafusion::error::{DataFusionError, Result as DfResult};
use datafusion::logical_expr::Expr;
use datafusion::physical_plan::ExecutionPlan;
use std::sync::Arc;

/// The table function, bound to a database's catalog.
#[derive(Debug)]
pub struct CountWindowFunction {
    /// Where relations are looked up.
    pub catalog: Arc<MemoryCatalogProvider>,
}

impl TableFunctionImpl for CountWindowFunction {
    fn call_with_args(&self, args: TableFunctionArgs<'_, '_>) -> DfResult<Arc<dyn TableProvider>> {
        let usage = || {
            DataFusionError::from(brook_err!(
                InvalidParameter,
                "brook_count_window(relation, size, slide, key ...): use TUMBLE_ROWS or HOP_ROWS"
            ))
        };
        let exprs = args.exprs();
        let text = |e: Option<&Expr>| match e {
            Some(Expr::Literal(ScalarValue::Utf8(Some(s)), _)) => Some(s.clone()),
            _ => None,
        };
        let count = |e: Option<&Expr>| match e {
            Some(Expr::Literal(v, _)) => match v.cast_to(&DataType::Int64) {
                Ok(ScalarValue::Int64(Some(n))) if n > 0 => Some(n as u64),
                _ => None,
            },
            _ => None,
        };
        let name = text(exprs.first()).ok_or_else(usage)?;
        let (size, slide) = (
            count(exprs.get(1)).ok_or_else(usage)?,
            count(exprs.get(2)).ok_or_else(usage)?,
        );
        if slide > size {
            return Err(usage());
        }
        let relation = crate::catalog::table::lookup(&self.catalog, &name)
            .map_err(DataFusionError::from)?
            .ok_or_else(|| DataFusionError::from(BrookError::UndefinedTable(name.clone())))?;
        if !relation.is::<BrookTable>() {
            return Err(DataFusionError::from(brook_err!(
                WrongObjectType,
                "count windows read a table or stream, and \"{name}\" is neither"
            )));
        }
        let input = relation.schema();
        let mut keys = Vec::new();
        for e in exprs.iter().skip(3) {
            let key = text(Some(e)).ok_or_else(usage)?;
            let at = input.index_of(&key).map_err(|_| {
                DataFusionError::from(brook_err!(
                    UndefinedColumn,
                    "column \"{key}\" does not exist in \"{name}\""
                ))
            })?;
            keys.push(at);
        }
        let mut fields: Vec<Field> = input.fields().iter().map(|f| f.as_ref().clone()).collect();
        fields.push(Field::new("window_id", DataType::Int64, false));
        Ok(Arc::new(CountWindowTable {
            relation,
            name,
            node: Arc::new(CountWindowNode {
                size,
                slide,
                keys,
                input_schema: input,
                schema: Arc::new(Schema::new(fields)),
            }),
        }))
    }
}

/// Count windows over one relation.
#[derive(Debug)]
pub struct CountWindowTable {
    /// The relation windowed (a Brook table or stream).
    pub relation: Arc<dyn TableProvider>,
    /// Its name, as given.
    pub name: String,
    /// The windows (the operator's plan node).
    pub node: Arc<CountWindowNode>,
}

#[async_trait::async_trait]
impl TableProvider for CountWindowTable {
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
        // The relation in log order (one partition), through the continuous operator.
        let plan = self.relation.scan(state, None, &[], None).await?;
        let batches = datafusion::physical_plan::collect(plan, state.task_ctx()).await?;
        let mut op = self.node.instantiate().map_err(DataFusionError::from)?;
        let mut out: Vec<RecordBatch> = Vec::new();
        for b in batches {
            out.extend(
                change::push_inserts(op.as_mut(), &self.node.input_schema, &b)
                    .map_err(DataFusionError::from)?,
            );
        }
        let exec = MemorySourceConfig::try_new_exec(
            &[out],
            self.node.schema.clone(),
            projection.cloned(),
        )?;
        Ok(exec)
    }
}
