//! Materialized views maintained per partition (cluster mode, docs/cluster.md).
//!
//! A materialized view that reads one partitioned stream and whose rows each come from the
//! rows of one partition — every aggregate groups by the stream's partition key, every
//! window function is partitioned by it, no LIMIT — is maintained on each node over the
//! partitions the node owns only: its stream's rows are filtered by
//! `brook_partition(partitions, key...)` before the view's query. A read of the view on
//! any node gathers each owner's rows ([`Gather`], implemented in `cluster/views.rs`), and
//! their union is the view's answer, as one server computes it. Whether a view qualifies
//! is decided on its optimized plan, by following the key's columns from the stream's scan
//! up to each aggregate and window ([`restrict`]); a view that does not is maintained
//! whole on every node, as before.

use crate::catalog::partitioning::Partitioning;
use crate::stream::view::ViewState;
use async_trait::async_trait;
use brook_common::Result;
use datafusion::arrow::array::{Int32Array, RecordBatch};
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use datafusion::common::tree_node::{Transformed, TreeNode};
use datafusion::common::{Column, ScalarValue};
use datafusion::error::DataFusionError;
use datafusion::logical_expr::expr::ScalarFunction;
use datafusion::logical_expr::{
    ColumnarValue, Distinct, Expr, LogicalPlan, LogicalPlanBuilder, ScalarFunctionArgs, ScalarUDF,
    ScalarUDFImpl, Signature, TableScan, TableScanBuilder, Volatility,
};
use std::collections::{BTreeSet, HashSet};
use std::sync::Arc;

/// The materialized view option asking, in cluster mode, for maintenance by the owners of
/// its stream's partitions (`CREATE MATERIALIZED VIEW v WITH (distributed = true) AS ...`):
/// reads of such a view gather each owner's current rows, not a snapshot across owners.
pub const DISTRIBUTED_OPTION: &str = "distributed";

/// How a materialized view is maintained per partition on this node.
#[derive(Debug, Clone, PartialEq)]
pub struct Distribution {
    /// The partitioned stream the view reads: its schema, name and id.
    pub schema: String,
    pub name: String,
    pub id: u64,
    /// The stream's partitioning, and its key's column names.
    pub partitioning: Partitioning,
    pub key: Vec<String>,
    /// The partitions this node owns, whose rows the view's state holds here.
    pub owned: BTreeSet<u32>,
    /// Whether the owners' rows are merged when read, rows of equal keys from several
    /// owners becoming one (a global synopsis, `brook_planner::synopsis_merge`; a view of
    /// partial aggregates, `brook_planner::view_merge`), so the query need not be
    /// partition-local.
    pub merged: bool,
}

/// Which view a read of a view maintained per partition asks the owners for: its
/// database and relation id (which a rename keeps, and a view dropped and created again
/// under its name does not), and its name for messages.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ViewIdentity {
    pub database: String,
    pub id: u64,
    pub name: String,
}

/// The rows of a view maintained per partition, gathered from the nodes that own its
/// stream's partitions (this one included).
#[async_trait]
pub trait Gather: Send + Sync + std::fmt::Debug {
    async fn gather(
        &self,
        view: &ViewIdentity,
        partitions: u32,
        stream: u64,
    ) -> Result<Vec<RecordBatch>>;
}

/// The name of the function giving a row's partition.
pub const PARTITION_FUNCTION: &str = "brook_partition";

/// `brook_partition(partitions, key, ...)`: the partition a row with that key belongs to in
/// a stream of `partitions` partitions (the hash of `catalog::partitioning`).
pub fn partition_udf() -> Arc<ScalarUDF> {
    Arc::new(ScalarUDF::new_from_impl(PartitionOf {
        signature: Signature::variadic_any(Volatility::Immutable),
    }))
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct PartitionOf {
    signature: Signature,
}

impl ScalarUDFImpl for PartitionOf {
    fn name(&self) -> &str {
        PARTITION_FUNCTION
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _arg_types: &[DataType]) -> datafusion::error::Result<DataType> {
        Ok(DataType::Int32)
    }

    fn invoke_with_args(
        &self,
        args: ScalarFunctionArgs,
    ) -> datafusion::error::Result<ColumnarValue> {
        let usage = || {
            DataFusionError::Plan(format!(
                "{PARTITION_FUNCTION}(partitions, key, ...) takes a constant number of partitions from 1 to {} and the key's values",
                crate::catalog::partitioning::MAX_PARTITIONS
            ))
        };
        let [ColumnarValue::Scalar(count), keys @ ..] = args.args.as_slice() else {
            return Err(usage());
        };
        let partitions = match count {
            ScalarValue::Int64(Some(n)) => u32::try_from(*n).ok(),
            ScalarValue::Int32(Some(n)) => u32::try_from(*n).ok(),
            _ => None,
        }
        .filter(|n| (1..=crate::catalog::partitioning::MAX_PARTITIONS).contains(n))
        .ok_or_else(usage)?;
        if keys.is_empty() {
            return Err(usage());
        }
        let arrays = keys
            .iter()
            .map(|k| k.to_array(args.number_rows))
            .collect::<datafusion::error::Result<Vec<_>>>()?;
        let fields: Vec<Field> = arrays
            .iter()
            .enumerate()
            .map(|(i, a)| Field::new(format!("k{i}"), a.data_type().clone(), true))
            .collect();
        let batch = RecordBatch::try_new(Arc::new(Schema::new(fields)), arrays)?;
        let partitioning = Partitioning {
            partitions,
            key: (0..keys.len()).collect(),
        };
        let of = partitioning
            .partition_of_rows(&batch)
            .map_err(|e| DataFusionError::External(Box::new(e)))?;
        Ok(ColumnarValue::Array(Arc::new(
            Int32Array::from_iter_values(
                of.into_iter().map(|p| i32::try_from(p).unwrap_or(i32::MAX)),
            ),
        )))
    }
}

/// `plan` (a view's optimized plan) reading only the rows of the partitions `d` names of
/// its stream, or `None` when the view is not partition-local (see the module's comment).
pub fn restrict(plan: &LogicalPlan, d: &Distribution) -> Result<Option<LogicalPlan>> {
    if !d.merged && key_columns(plan, d).is_none() {
        return Ok(None);
    }
    let udf = partition_udf();
    let restricted = plan
        .clone()
        .transform_up(|node| match &node {
            LogicalPlan::TableScan(scan) if reads(scan, d) => {
                Ok(Transformed::yes(filtered_scan(scan, d, &udf)?))
            }
            _ => Ok(Transformed::no(node)),
        })?
        .data;
    Ok(Some(restricted))
}

/// Whether `scan` reads the view's stream.
fn reads(scan: &TableScan, d: &Distribution) -> bool {
    scan.table_name.table() == d.name && scan.table_name.schema().is_none_or(|s| s == d.schema)
}

/// `scan` with its rows filtered to the partitions `d` owns, its output columns unchanged
/// (the key's columns are read for the filter when the scan did not read them).
fn filtered_scan(
    scan: &TableScan,
    d: &Distribution,
    udf: &Arc<ScalarUDF>,
) -> datafusion::error::Result<LogicalPlan> {
    let full = scan.source.schema();
    let mut projection = scan
        .projection
        .clone()
        .unwrap_or_else(|| (0..full.fields().len()).collect());
    let outputs = scan.projected_schema.columns();
    for k in &d.key {
        let at = full.index_of(k)?;
        if !projection.contains(&at) {
            projection.push(at);
        }
    }
    let widened = projection.len() > outputs.len();
    let source = LogicalPlan::TableScan(
        TableScanBuilder::new(scan.table_name.clone(), scan.source.clone())
            .with_projection(Some(projection))
            .with_filters(scan.filters.clone())
            .with_fetch(scan.fetch)
            .with_statistics_requests(scan.statistics_requests.clone())
            .build()?,
    );
    let mut args = vec![Expr::Literal(
        ScalarValue::Int64(Some(i64::from(d.partitioning.partitions))),
        None,
    )];
    args.extend(
        d.key
            .iter()
            .map(|k| Expr::Column(Column::new(Some(scan.table_name.clone()), k))),
    );
    let partition = Expr::ScalarFunction(ScalarFunction::new_udf(udf.clone(), args));
    let owned: Vec<Expr> = d
        .owned
        .iter()
        .map(|p| Expr::Literal(ScalarValue::Int32(i32::try_from(*p).ok()), None))
        .collect();
    let predicate = if owned.is_empty() {
        Expr::Literal(ScalarValue::Boolean(Some(false)), None)
    } else {
        partition.in_list(owned, false)
    };
    let builder = LogicalPlanBuilder::from(source).filter(predicate)?;
    let builder = match widened {
        true => builder.project(outputs.into_iter().map(Expr::Column))?,
        false => builder,
    };
    builder.build()
}

/// For each of the key's columns, the output columns of `plan` that hold its value; `None`
/// when a row of `plan`'s output may depend on rows of more than one partition (an
/// aggregate or window over rows of several keys, a LIMIT, a join, a subquery) or when
/// `plan` reads another relation.
fn key_columns(plan: &LogicalPlan, d: &Distribution) -> Option<Vec<HashSet<Column>>> {
    if plan.expressions().iter().any(reads_subquery) {
        return None;
    }
    match plan {
        LogicalPlan::TableScan(scan) if reads(scan, d) => Some(
            d.key
                .iter()
                .map(|k| {
                    scan.projected_schema
                        .columns()
                        .into_iter()
                        .filter(|c| c.name == *k)
                        .collect()
                })
                .collect(),
        ),
        LogicalPlan::Filter(f) => key_columns(&f.input, d),
        LogicalPlan::Sort(s) if s.fetch.is_none() => key_columns(&s.input, d),
        LogicalPlan::Projection(p) => {
            let input = key_columns(&p.input, d)?;
            let outputs = p.schema.columns();
            Some(
                input
                    .iter()
                    .map(|held| {
                        p.expr
                            .iter()
                            .zip(&outputs)
                            .filter(|(e, _)| is_column_in(e, held))
                            .map(|(_, out)| out.clone())
                            .collect()
                    })
                    .collect(),
            )
        }
        LogicalPlan::SubqueryAlias(a) => {
            let input = key_columns(&a.input, d)?;
            let from = a.input.schema().columns();
            let to = a.schema.columns();
            Some(
                input
                    .iter()
                    .map(|held| {
                        from.iter()
                            .zip(&to)
                            .filter(|(f, _)| held.contains(f))
                            .map(|(_, t)| t.clone())
                            .collect()
                    })
                    .collect(),
            )
        }
        LogicalPlan::Aggregate(agg) => {
            let input = key_columns(&agg.input, d)?;
            let outputs = agg.schema.columns();
            let groups: Vec<HashSet<Column>> = input
                .iter()
                .map(|held| {
                    agg.group_expr
                        .iter()
                        .zip(&outputs)
                        .filter(|(e, _)| is_column_in(e, held))
                        .map(|(_, out)| out.clone())
                        .collect()
                })
                .collect();
            groups.iter().all(|g| !g.is_empty()).then_some(groups)
        }
        LogicalPlan::Window(w) => {
            let input = key_columns(&w.input, d)?;
            let partitioned = w.window_expr.iter().all(|e| match unaliased(e) {
                Expr::WindowFunction(f) => input
                    .iter()
                    .all(|held| f.params.partition_by.iter().any(|p| is_column_in(p, held))),
                _ => false,
            });
            partitioned.then_some(input)
        }
        LogicalPlan::Distinct(Distinct::All(input)) => {
            let held = key_columns(input, d)?;
            held.iter().all(|h| !h.is_empty()).then_some(held)
        }
        _ => None,
    }
}

fn unaliased(e: &Expr) -> &Expr {
    match e {
        Expr::Alias(a) => unaliased(&a.expr),
        other => other,
    }
}

fn is_column_in(e: &Expr, held: &HashSet<Column>) -> bool {
    matches!(unaliased(e), Expr::Column(c) if held.contains(c))
}

fn reads_subquery(e: &Expr) -> bool {
    e.exists(|e| {
        Ok(matches!(
            e,
            Expr::ScalarSubquery(_) | Expr::Exists(_) | Expr::InSubquery(_)
        ))
    })
    .unwrap_or(true)
}

/// The state of a view maintained per partition, as a node answers for its partitions.
pub fn owned_rows(
    state: &ViewState,
    partitions: &BTreeSet<u32>,
) -> Option<Result<Vec<RecordBatch>>> {
    let d = state.distribution()?;
    if d.owned != *partitions {
        return None;
    }
    Some(state.batches())
}

/// The rows of a global synopsis or of a view of partial aggregates: `gathered`, every
/// owner's partial rows (of `schema`), merged per key by the merge query `sql`
/// (`brook_planner::synopsis_merge`, `brook_planner::view_merge`), in `schema`'s types (a
/// final `sum` of a decimal is wider than the view's column).
pub async fn merged_rows(
    sql: &str,
    schema: &SchemaRef,
    gathered: Vec<RecordBatch>,
) -> Result<Vec<RecordBatch>> {
    let ctx = datafusion::prelude::SessionContext::new();
    brook_synopses::functions::register(&ctx);
    let table = datafusion::datasource::MemTable::try_new(schema.clone(), vec![gathered])?;
    ctx.register_table(brook_planner::view_merge::GATHERED, Arc::new(table))?;
    let merged = ctx.sql(sql).await?.collect().await?;
    let mut out = Vec::with_capacity(merged.len());
    for b in merged {
        let columns = b
            .columns()
            .iter()
            .zip(schema.fields())
            .map(|(c, f)| datafusion::arrow::compute::cast(c, f.data_type()))
            .collect::<std::result::Result<Vec<_>, _>>()?;
        out.push(RecordBatch::try_new(schema.clone(), columns)?);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::arrow::datatypes::TimeUnit;
    use datafusion::datasource::MemTable;
    use datafusion::prelude::SessionContext;

    fn distribution() -> Distribution {
        Distribution {
            schema: "public".into(),
            name: "readings".into(),
            id: 1,
            partitioning: Partitioning {
                partitions: 4,
                key: vec![0],
            },
            key: vec!["sensor".into()],
            owned: BTreeSet::from([1, 3]),
            merged: false,
        }
    }

    async fn optimized(sql: &str) -> LogicalPlan {
        let ctx = SessionContext::new();
        let schema = Arc::new(Schema::new(vec![
            Field::new("sensor", DataType::Int32, true),
            Field::new("v", DataType::Float64, true),
            Field::new("ts", DataType::Timestamp(TimeUnit::Microsecond, None), true),
        ]));
        ctx.register_table(
            "readings",
            Arc::new(MemTable::try_new(schema, vec![vec![]]).unwrap()),
        )
        .unwrap();
        ctx.sql(sql).await.unwrap().into_optimized_plan().unwrap()
    }

    #[tokio::test]
    async fn views_whose_rows_each_come_from_one_partition_are_restricted() {
        let local = [
            "SELECT sensor, count(*), max(v) FROM readings GROUP BY sensor",
            "SELECT sensor, v, count(*) FROM readings GROUP BY v, sensor",
            "SELECT r.sensor AS s, count(*) FROM readings AS r GROUP BY r.sensor",
            "SELECT s, n FROM (SELECT sensor AS s, count(*) AS n FROM readings GROUP BY sensor) t WHERE n > 1",
            "SELECT v FROM readings WHERE v > 1",
            "SELECT sensor, lag(v) OVER (PARTITION BY sensor ORDER BY ts) FROM readings",
            "SELECT DISTINCT sensor, v FROM readings",
        ];
        for sql in local {
            let plan = optimized(sql).await;
            let restricted = restrict(&plan, &distribution())
                .unwrap()
                .unwrap_or_else(|| panic!("{sql}: not restricted"));
            assert_eq!(restricted.schema(), plan.schema(), "{sql}");
            let shown = restricted.display_indent().to_string();
            assert!(
                shown.contains(
                    "brook_partition(Int64(4), readings.sensor) IN ([Int32(1), Int32(3)])"
                ),
                "{sql}: {shown}"
            );
        }
    }

    #[tokio::test]
    async fn views_mixing_partitions_are_left_whole() {
        let mixing = [
            "SELECT count(*) FROM readings",
            "SELECT v, count(*) FROM readings GROUP BY v",
            "SELECT sensor + 1 AS s, count(*) FROM readings GROUP BY sensor + 1",
            "SELECT sensor, v FROM readings ORDER BY v LIMIT 3",
            "SELECT sensor, sum(v) OVER () FROM readings",
            "SELECT sensor, sum(v) OVER (PARTITION BY v) FROM readings",
            "SELECT sensor, v FROM readings WHERE v > (SELECT avg(v) FROM readings)",
            "SELECT DISTINCT v FROM readings",
        ];
        for sql in mixing {
            let plan = optimized(sql).await;
            assert!(restrict(&plan, &distribution()).unwrap().is_none(), "{sql}");
        }
    }

    #[test]
    fn the_partition_function_is_the_streams() {
        let udf = partition_udf();
        let keys = Arc::new(datafusion::arrow::array::Int32Array::from(vec![0, 1, 2, 7]));
        let args = ScalarFunctionArgs {
            args: vec![
                ColumnarValue::Scalar(ScalarValue::Int64(Some(12))),
                ColumnarValue::Array(keys),
            ],
            arg_fields: vec![
                Arc::new(Field::new("n", DataType::Int64, false)),
                Arc::new(Field::new("k", DataType::Int32, true)),
            ],
            number_rows: 4,
            return_field: Arc::new(Field::new("p", DataType::Int32, true)),
            config_options: Arc::default(),
        };
        let ColumnarValue::Array(out) = udf.invoke_with_args(args).unwrap() else {
            panic!("an array");
        };
        // As `catalog::partitioning`'s known values.
        let out: Vec<i32> = out
            .as_any()
            .downcast_ref::<Int32Array>()
            .unwrap()
            .values()
            .to_vec();
        assert_eq!(out, vec![4, 5, 6, 3]);
    }
}
