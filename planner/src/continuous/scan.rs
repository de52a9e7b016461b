//! Sources: a scanned table or stream (its columns, change kind and event time), a
//! materialized view read as the stream of its changes, a count window, UNNEST.

use super::join::fixed_intervals_as_durations;
use super::*;
use brook_common::{brook_err, Result};
use brook_operators::graph::Endpoint;
use brook_operators::project::ProjectNode;
use brook_operators::source::SourceSpec;
use datafusion::arrow::datatypes::DataType;
use datafusion::common::{DFSchema, TableReference};
use datafusion::logical_expr::TableSource;
use datafusion::physical_expr::expressions::Column;
use datafusion::physical_expr::PhysicalExpr;
use std::sync::Arc;

impl Builder<'_> {
    /// The source reading `table` (one per relation, however often the query scans it:
    /// a self-join, or HOP's one branch per window, reads the log once).
    pub(super) fn source(
        &mut self,
        table: &TableReference,
        source: &Arc<dyn TableSource>,
    ) -> Result<usize> {
        let name = table.to_string();
        let source = match self.sources.iter().position(|s| s.relation == name) {
            Some(i) => i,
            None => {
                let facts = self.resolver.resolve(table, source)?;
                let watermark = match &facts.watermark {
                    Some(w) => {
                        let schema = DFSchema::try_from(facts.table_schema.as_ref().clone())?;
                        Some(self.physical(&fixed_intervals_as_durations(w.clone())?, &schema)?)
                    }
                    None => None,
                };
                // A stream's event time: the one column its watermark reads.
                let time = match &facts.watermark {
                    Some(w) if !facts.updating => {
                        let refs = w.column_refs();
                        match refs.iter().next() {
                            Some(c) if refs.len() == 1 => facts.table_schema.index_of(&c.name).ok(),
                            _ => None,
                        }
                    }
                    _ => None,
                };
                self.source_times.push(time);
                self.sources.push(SourceSpec {
                    relation: name,
                    projection: None,
                    schema: facts.table_schema.clone(),
                    table_schema: facts.table_schema,
                    watermark,
                    watermark_sql: facts.watermark_sql,
                    updating: facts.updating,
                    idle_timeout: facts.idle_timeout,
                });
                self.sources.len() - 1
            }
        };
        Ok(source)
    }

    /// The scan's columns of `at` (the scanned relation's full row), named as the scan
    /// names them.
    pub(super) fn scan_columns(
        &mut self,
        scan: &datafusion::logical_expr::TableScan,
        at: Endpoint,
    ) -> Result<Endpoint> {
        let stored = scan.source.schema();
        let columns: Vec<usize> = match &scan.projection {
            Some(p) => p.clone(),
            None => (0..stored.fields().len()).collect(),
        };
        let exprs: Vec<Arc<dyn PhysicalExpr>> = columns
            .iter()
            .map(|&i| {
                let e: Arc<dyn PhysicalExpr> = Arc::new(Column::new(stored.field(i).name(), i));
                e
            })
            .collect();
        let times = self.times_of(at).projected(&exprs);
        let node = ProjectNode {
            exprs,
            schema: Arc::new(scan.projected_schema.as_arrow().clone()),
            updating: self.updating(at),
        };
        Ok(self.add_with_times(Arc::new(node), vec![at], times))
    }

    /// Count windows (`TUMBLE_ROWS`/`HOP_ROWS`) over a stream, in arrival order.
    pub(super) fn row_operator_scan(
        &mut self,
        scan: &datafusion::logical_expr::TableScan,
        op: RowOperatorDefinition,
    ) -> Result<Endpoint> {
        let source = self.source(&op.relation, &op.source)?;
        if self.sources[source].updating {
            return Err(refuse(&format!(
                "{} over a table (its rows have no arrival order once they change)",
                op.what
            )));
        }
        let at = self.add(op.node, vec![Endpoint::Source(source)], None);
        self.scan_columns(scan, at)
    }

    /// `MATCH_RECOGNIZE` after its input's operators: the input's rows in arrival order,
    /// which only an input whose rows never change has.
    pub(super) fn match_recognize(
        &mut self,
        mr: &crate::match_recognize::plan::MatchRecognizePlan,
    ) -> Result<Endpoint> {
        if mr.node.pattern.uses_end() {
            return Err(refuse(
                "MATCH_RECOGNIZE with $ (the end of a partition, which a stream never reaches)",
            ));
        }
        // A variable restricts rows when its DEFINE is more than `true`.
        let defined = |v: usize| {
            mr.node
                .conditions
                .get(v)
                .is_some_and(|c| c.as_ref().is_some_and(|c| !c.always_true()))
        };
        if mr.node.within.is_none() && mr.node.pattern.repeats_any_row(&defined) {
            return Err(refuse(
                "MATCH_RECOGNIZE over a stream repeating without bound a variable no DEFINE \
                 restricts, and without WITHIN: an attempt would hold every later row of its \
                 partition (bound it with WITHIN INTERVAL '...', or DEFINE the variable)",
            ));
        }
        if !mr.node.ascending() {
            return Err(refuse(
                "MATCH_RECOGNIZE ORDER BY ... DESC (a stream's rows are matched as they \
                 arrive, in ascending order)",
            ));
        }
        let input = self.build(&mr.input)?;
        if self.updating(input) {
            return Err(refuse(
                "MATCH_RECOGNIZE over rows that change (a table, or an aggregate or join that \
                 updates its rows: matches are decided in arrival order)",
            ));
        }
        // Ordered by the event time of a stream with a watermark: its rows within the
        // watermark's delay are put in order before matching (rather than late), so the
        // matches are those over the table.
        let time = self.time_of(input);
        let input = match mr.node.order.first() {
            Some(first) if time == Some(*first) => {
                let node = brook_operators::reorder::ReorderNode {
                    schema: mr.node.input_schema.clone(),
                    time: *first,
                    order: mr
                        .node
                        .order
                        .iter()
                        .copied()
                        .zip(mr.node.order_options.iter().copied())
                        .collect(),
                };
                self.add(Arc::new(node), vec![input], time)
            }
            _ => input,
        };
        Ok(self.add(mr.node.clone(), vec![input], None))
    }

    /// A materialized view as input: a stream of its changes. Its defining query is planned
    /// in place (with the view's own options), so the changes are exactly those the view
    /// applies to its state, from its first input row on.
    pub(super) fn view_scan(
        &mut self,
        scan: &datafusion::logical_expr::TableScan,
        view: ViewDefinition,
    ) -> Result<Endpoint> {
        let (options, windowed) = (self.options, self.windowed);
        self.options = view.options;
        let at = self.build(&view.plan);
        (self.options, self.windowed) = (options, windowed);
        let at = at?;
        let stored = scan.source.schema();
        let produced: Vec<&DataType> = view
            .plan
            .schema()
            .fields()
            .iter()
            .map(|f| f.data_type())
            .collect();
        if !stored
            .fields()
            .iter()
            .map(|f| f.data_type())
            .eq(produced.iter().copied())
        {
            return Err(brook_err!(
                Internal,
                "materialized view {} no longer matches its definition",
                scan.table_name
            ));
        }
        // The view's columns by the names the query sees.
        self.scan_columns(scan, at)
    }

    /// `unnest` of list columns (depth 1), in step.
    pub(super) fn unnest(&mut self, u: &datafusion::logical_expr::Unnest) -> Result<Endpoint> {
        if !u.struct_type_columns.is_empty() {
            return Err(refuse("unnest of a struct"));
        }
        if u.list_type_columns.iter().any(|(_, list)| list.depth != 1)
            || u.options.recursions.iter().any(|r| r.depth != 1)
        {
            return Err(refuse("unnest of nested lists"));
        }
        // Each list column once (DataFusion lists a column once per output it feeds).
        let mut list_columns: Vec<usize> = u.list_type_columns.iter().map(|(c, _)| *c).collect();
        list_columns.dedup();
        if list_columns.len() != u.list_type_columns.len() {
            return Err(refuse("unnest of one list into several columns"));
        }
        let input = self.build(&u.input)?;
        let node = brook_operators::unnest::UnnestNode {
            list_columns,
            dependencies: u.dependency_indices.clone(),
            null_handling: u.options.null_handling,
            schema: Arc::new(u.schema.as_arrow().clone()),
            updating: self.updating(input),
        };
        Ok(self.add(Arc::new(node), vec![input], None))
    }
}
