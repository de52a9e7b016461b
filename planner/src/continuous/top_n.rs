//! Top-N: ORDER BY .. LIMIT, and row_number() <= n per group.

use super::*;
use brook_common::Result;
use brook_operators::filter::FilterNode;
use brook_operators::graph::Endpoint;
use brook_operators::project::ProjectNode;
use brook_operators::topn::TopNNode;
use datafusion::arrow::datatypes::DataType;
use datafusion::common::DFSchema;
use datafusion::logical_expr::{Expr, LogicalPlan};
use datafusion::physical_expr::PhysicalSortExpr;
use std::sync::Arc;

impl Builder<'_> {
    /// `ORDER BY .. LIMIT fetch OFFSET skip`: the changing top rows.
    pub(super) fn top_n(
        &mut self,
        sort: &datafusion::logical_expr::Sort,
        skip: usize,
        fetch: usize,
    ) -> Result<Endpoint> {
        let input = self.build(&sort.input)?;
        let schema = sort.input.schema();
        let order = self.sort_exprs(&sort.expr, schema)?;
        let node = TopNNode {
            order,
            partition_by: Vec::new(),
            offset: skip,
            limit: fetch,
            rank_column: false,
            input_updating: self.updating(input),
            input_schema: Arc::new(schema.as_arrow().clone()),
            schema: Arc::new(schema.as_arrow().clone()),
        };
        Ok(self.add(Arc::new(node), vec![input], None))
    }

    pub(super) fn sort_exprs(
        &self,
        exprs: &[datafusion::logical_expr::SortExpr],
        schema: &DFSchema,
    ) -> Result<Vec<PhysicalSortExpr>> {
        exprs
            .iter()
            .map(|e| {
                Ok(PhysicalSortExpr {
                    expr: self.physical(&e.expr, schema)?,
                    options: datafusion::arrow::compute::SortOptions {
                        descending: !e.asc,
                        nulls_first: e.nulls_first,
                    },
                })
            })
            .collect()
    }

    /// Top-N per group: `WHERE rn <= n` over `row_number() OVER (PARTITION BY .. ORDER BY ..)
    /// AS rn` (directly, or through the projection naming it) keeps only the top rows of each
    /// group instead of every row; `None` for other filters.
    pub(super) fn ranked_top_n(
        &mut self,
        f: &datafusion::logical_expr::Filter,
    ) -> Result<Option<Endpoint>> {
        use datafusion::logical_expr::expr::WindowFunctionDefinition;
        use datafusion::logical_expr::{BinaryExpr, Operator};
        let bound = |e: &Expr| match e {
            Expr::Literal(v, _) => v.cast_to(&DataType::Int64).ok().and_then(|v| match v {
                datafusion::common::ScalarValue::Int64(Some(n)) => Some(n),
                _ => None,
            }),
            _ => None,
        };
        let (column, limit) = match &f.predicate {
            Expr::BinaryExpr(BinaryExpr { left, op, right }) => {
                match (left.as_ref(), op, right.as_ref()) {
                    (Expr::Column(c), Operator::LtEq, n) | (n, Operator::GtEq, Expr::Column(c)) => {
                        (c, bound(n))
                    }
                    (Expr::Column(c), Operator::Lt, n) | (n, Operator::Gt, Expr::Column(c)) => {
                        (c, bound(n).map(|n| n - 1))
                    }
                    _ => return Ok(None),
                }
            }
            _ => return Ok(None),
        };
        let Some(limit) = limit.filter(|n| *n >= 0) else {
            return Ok(None);
        };
        // The filtered column, through an optional projection, to the Window node's output.
        let (projection, window, column) = match f.input.as_ref() {
            LogicalPlan::Window(w) => (None, w, column.clone()),
            LogicalPlan::Projection(p) => {
                let LogicalPlan::Window(w) = p.input.as_ref() else {
                    return Ok(None);
                };
                let Ok(i) = p.schema.index_of_column(column) else {
                    return Ok(None);
                };
                let inner = match &p.expr[i] {
                    Expr::Alias(a) => a.expr.as_ref(),
                    e => e,
                };
                let Expr::Column(c) = inner else {
                    return Ok(None);
                };
                (Some(p), w, c.clone())
            }
            _ => return Ok(None),
        };
        let [Expr::WindowFunction(wf)] = window.window_expr.as_slice() else {
            return Ok(None);
        };
        let is_row_number =
            matches!(&wf.fun, WindowFunctionDefinition::WindowUDF(u) if u.name() == "row_number");
        let rank_at = window.input.schema().fields().len();
        if !is_row_number || window.schema.index_of_column(&column).ok() != Some(rank_at) {
            return Ok(None);
        }
        let input = self.build(&window.input)?;
        let in_schema = window.input.schema();
        let node = TopNNode {
            order: self.sort_exprs(&wf.params.order_by, in_schema)?,
            partition_by: wf
                .params
                .partition_by
                .iter()
                .map(|e| self.physical(e, in_schema))
                .collect::<Result<_>>()?,
            offset: 0,
            limit: limit as usize,
            rank_column: true,
            input_updating: self.updating(input),
            input_schema: Arc::new(in_schema.as_arrow().clone()),
            schema: Arc::new(window.schema.as_arrow().clone()),
        };
        let time = self.time_of(input);
        let mut at = self.add(Arc::new(node), vec![input], time);
        if let Some(p) = projection {
            let exprs = p
                .expr
                .iter()
                .map(|e| self.physical(e, p.input.schema()))
                .collect::<Result<Vec<_>>>()?;
            let times = self.times_of(at).projected(&exprs);
            let node = ProjectNode {
                exprs,
                schema: Arc::new(p.schema.as_arrow().clone()),
                updating: true,
            };
            at = self.add_with_times(Arc::new(node), vec![at], times);
        }
        // The top-N emits only rows within the bound; the filter states it in the plan.
        let node = FilterNode {
            predicate: self.physical(&f.predicate, f.input.schema())?,
            schema: Arc::new(f.input.schema().as_arrow().clone()),
            updating: true,
        };
        let time = self.time_of(at);
        Ok(Some(self.add(Arc::new(node), vec![at], time)))
    }
}
