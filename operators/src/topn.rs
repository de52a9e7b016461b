//! Top-N: the first rows by an ORDER BY, overall (`ORDER BY .. LIMIT n [OFFSET m]`) or per
//! group (`row_number() OVER (PARTITION BY k ORDER BY ..) <= n`), as a changelog.
//!
//! Each group keeps its rows ordered by the sort key (row-encoded so that byte order is the
//! ORDER BY's order, ties broken by the whole row) and the top rows it last emitted. When a
//! batch touches a group, its new top rows are compared with the emitted ones and only the
//! difference is emitted: a row entering the top is inserted, one pushed out is retracted,
//! and with a rank column a row whose rank moved is retracted and re-inserted.
//!
//! State: over an append-only input a row below the first `offset + n` can never come back
//! into the top, so each group keeps only those rows (bounded by n per group). Over an input
//! that retracts, a retracted top row must be replaced by the next one, so every live row is
//! kept.

use crate::{change, NodeSpec, Operator};
use brook_common::{brook_err, Result};
use datafusion::arrow::array::{ArrayRef, Int8Array, UInt64Array};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, SchemaRef};
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::arrow::row::{RowConverter, SortField};
use datafusion::common::HashMap;
use datafusion::physical_expr::{PhysicalExpr, PhysicalSortExpr};
use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

/// Plan node of a top-N.
#[derive(Debug)]
pub struct TopNNode {
    /// Sort order over the input.
    pub order: Vec<PhysicalSortExpr>,
    /// Groups over the input (none: one top-N over all rows).
    pub partition_by: Vec<Arc<dyn PhysicalExpr>>,
    /// Rows skipped before the top (OFFSET).
    pub offset: usize,
    /// Rows in the top (LIMIT, or the bound on the row number).
    pub limit: usize,
    /// Append each row's 1-based row number in its group (a `row_number()` column).
    pub rank_column: bool,
    /// Whether the input retracts (then every live row is kept).
    pub input_updating: bool,
    /// Input schema.
    pub input_schema: SchemaRef,
    /// Output schema: the input's columns (then the row number).
    pub schema: SchemaRef,
}

impl fmt::Display for TopNNode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let order: Vec<String> = self.order.iter().map(|o| o.to_string()).collect();
        let keys: Vec<String> = self.partition_by.iter().map(|k| k.to_string()).collect();
        write!(
            f,
            "TopN: order=[{}] limit={} offset={} keys=[{}]{} state={}",
            order.join(", "),
            self.limit,
            self.offset,
            keys.join(", "),
            if self.rank_column {
                " rank=row_number"
            } else {
                ""
            },
            if self.input_updating {
                "live rows per group (the input retracts)"
            } else {
                "offset+limit rows per group"
            }
        )
    }
}

impl NodeSpec for TopNNode {
    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }
    fn updating(&self) -> bool {
        true
    }
    fn instantiate(&self) -> Result<Box<dyn Operator>> {
        let sort_fields = self
            .order
            .iter()
            .map(|o| {
                Ok(SortField::new_with_options(
                    o.expr.data_type(&self.input_schema)?,
                    o.options,
                ))
            })
            .collect::<Result<Vec<_>>>()?;
        let group_fields = self
            .partition_by
            .iter()
            .map(|e| Ok(SortField::new(e.data_type(&self.input_schema)?)))
            .collect::<Result<Vec<_>>>()?;
        let row_fields = self
            .input_schema
            .fields()
            .iter()
            .map(|f| SortField::new(f.data_type().clone()))
            .collect();
        // Brook's row_number() is a bigint as PostgreSQL's; DataFusion's own is unsigned.
        let rank_type = self.schema.fields().last().map(|f| f.data_type());
        if self.rank_column && !matches!(rank_type, Some(DataType::Int64 | DataType::UInt64)) {
            return Err(brook_err!(Internal, "row number column is not an integer"));
        }
        Ok(Box::new(TopNOp {
            order: self.order.clone(),
            partition_by: self.partition_by.clone(),
            keep: self.offset.saturating_add(self.limit),
            offset: self.offset,
            rank_column: self.rank_column,
            bounded: !self.input_updating,
            schema: self.schema.clone(),
            sort_rows: RowConverter::new(sort_fields)?,
            group_rows: (!group_fields.is_empty())
                .then(|| RowConverter::new(group_fields))
                .transpose()?,
            full_rows: RowConverter::new(row_fields)?,
            groups: HashMap::new(),
            bytes: 0,
        }))
    }
}

/// A row's place: (sort key, whole row), both row-encoded; byte order is the ORDER BY's.
type Place = (Box<[u8]>, Box<[u8]>);

/// A group's rows and what it last emitted.
#[derive(Default)]
struct Group {
    /// Row → live copies, in ORDER BY order.
    rows: BTreeMap<Place, i64>,
    /// The top rows last emitted, with their row numbers.
    emitted: Vec<(Box<[u8]>, u64)>,
}

struct TopNOp {
    order: Vec<PhysicalSortExpr>,
    partition_by: Vec<Arc<dyn PhysicalExpr>>,
    /// Rows a group needs: offset + limit.
    keep: usize,
    offset: usize,
    rank_column: bool,
    /// Rows below the first `keep` can be dropped (append-only input).
    bounded: bool,
    schema: SchemaRef,
    sort_rows: RowConverter,
    group_rows: Option<RowConverter>,
    full_rows: RowConverter,
    groups: HashMap<Box<[u8]>, Group>,
    /// Bytes of the kept rows.
    bytes: usize,
}

impl TopNOp {
    /// The group's top rows now, with row numbers (offset + 1, ...).
    fn top(&self, g: &Group) -> Vec<(Box<[u8]>, u64)> {
        let mut out = Vec::new();
        let mut n = 0usize;
        'rows: for ((_, row), count) in &g.rows {
            for _ in 0..(*count).max(0) {
                if n >= self.keep {
                    break 'rows;
                }
                n += 1;
                if n > self.offset {
                    // Without a rank column a row's position is not part of the result.
                    let rank = if self.rank_column { n as u64 } else { 0 };
                    out.push((row.clone(), rank));
                }
            }
        }
        out
    }

    /// Drop the rows past the first `keep` (append-only input: they cannot come back).
    fn trim(&mut self, key: &[u8]) {
        let Some(g) = self.groups.get_mut(key) else {
            return;
        };
        let mut n = 0i64;
        let mut cut = None;
        for (k, count) in g.rows.iter() {
            if n >= self.keep as i64 {
                cut = Some(k.clone());
                break;
            }
            n += count;
        }
        if let Some(k) = cut {
            let dropped = g.rows.split_off(&k);
            self.bytes = self.bytes.saturating_sub(
                dropped
                    .keys()
                    .map(|(s, r)| s.len() + r.len() + 48)
                    .sum::<usize>(),
            );
        }
    }

    /// Output rows for `changes`: (whole row, row number, kind).
    fn emit(&self, changes: &[(Box<[u8]>, u64, i8)]) -> Result<Option<RecordBatch>> {
        if changes.is_empty() {
            return Ok(None);
        }
        let parser = self.full_rows.parser();
        let rows: Vec<_> = changes.iter().map(|(r, _, _)| parser.parse(r)).collect();
        let mut cols: Vec<ArrayRef> = self.full_rows.convert_rows(rows)?;
        if self.rank_column {
            let numbers: ArrayRef = Arc::new(UInt64Array::from_iter_values(
                changes.iter().map(|(_, n, _)| *n),
            ));
            let to = self.schema.fields().last().map(|f| f.data_type().clone());
            cols.push(cast(&numbers, &to.unwrap_or(DataType::UInt64))?);
        }
        let kinds = Int8Array::from_iter_values(changes.iter().map(|(_, _, k)| *k));
        Ok(Some(change::attach(&self.schema, cols, Arc::new(kinds))?))
    }
}

impl Operator for TopNOp {
    fn on_data(&mut self, _port: usize, batch: RecordBatch) -> Result<Vec<RecordBatch>> {
        let kinds = change::kinds(&batch)?.clone();
        let data = change::strip(&batch)?;
        let n = data.num_rows();
        let sort_cols = self
            .order
            .iter()
            .map(|o| Ok(o.expr.evaluate(&data)?.into_array(n)?))
            .collect::<Result<Vec<ArrayRef>>>()?;
        let sort_keys = self.sort_rows.convert_columns(&sort_cols)?;
        let full = self.full_rows.convert_columns(data.columns())?;
        let group_keys = crate::key_rows(self.group_rows.as_ref(), &self.partition_by, &data)?;
        let mut touched: Vec<Box<[u8]>> = Vec::new();
        let mut seen: std::collections::HashSet<Box<[u8]>> = std::collections::HashSet::new();
        for i in 0..n {
            let key: Box<[u8]> = match &group_keys {
                Some(r) => r.row(i).data().into(),
                None => Box::new([]),
            };
            if seen.insert(key.clone()) {
                touched.push(key.clone());
            }
            let g = self.groups.entry(key).or_default();
            let entry = (sort_keys.row(i).data().into(), full.row(i).data().into());
            if kinds.value(i) == change::DELETE {
                let Some(count) = g.rows.get_mut(&entry) else {
                    // Over an append-only input nothing retracts; over an updating one every
                    // live row is kept.
                    return Err(brook_err!(Internal, "top-N input retracted an unknown row"));
                };
                *count -= 1;
                if *count == 0 {
                    self.bytes = self
                        .bytes
                        .saturating_sub(entry.0.len() + entry.1.len() + 48);
                    g.rows.remove(&entry);
                }
            } else {
                let size = entry.0.len() + entry.1.len() + 48;
                let count = g.rows.entry(entry).or_insert(0);
                if *count == 0 {
                    self.bytes += size;
                }
                *count += 1;
            }
        }
        let mut changes: Vec<(Box<[u8]>, u64, i8)> = Vec::new();
        for key in touched {
            if self.bounded {
                self.trim(&key);
            }
            let Some(g) = self.groups.get(&key) else {
                continue;
            };
            let now = self.top(g);
            // The difference between what was emitted and the top now, as a multiset.
            let mut count: HashMap<&(Box<[u8]>, u64), i64> = HashMap::new();
            for e in &g.emitted {
                *count.entry(e).or_default() -= 1;
            }
            for e in &now {
                *count.entry(e).or_default() += 1;
            }
            for ((row, rank), c) in count {
                let kind = if c > 0 {
                    change::INSERT
                } else {
                    change::DELETE
                };
                for _ in 0..c.unsigned_abs() {
                    changes.push((row.clone(), *rank, kind));
                }
            }
            let empty = now.is_empty() && g.rows.is_empty();
            if empty {
                self.groups.remove(&key);
            } else if let Some(g) = self.groups.get_mut(&key) {
                g.emitted = now;
            }
        }
        // Retractions first, so a reader applying the changes in order never holds more
        // than the top.
        changes.sort_by_key(|c| c.2);
        Ok(self.emit(&changes)?.into_iter().collect())
    }

    fn state_size(&self) -> usize {
        self.bytes
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{from_pretty, to_sorted_rows};
    use datafusion::arrow::compute::SortOptions;
    use datafusion::arrow::datatypes::{Field, Schema};
    use datafusion::physical_expr::expressions::col;

    fn node(rank: bool, updating: bool, limit: usize) -> TopNNode {
        let input = change::strip(&scores(&[])).unwrap().schema();
        let mut fields: Vec<_> = input.fields().iter().cloned().collect();
        if rank {
            fields.push(Arc::new(Field::new("rn", DataType::Int64, false)));
        }
        TopNNode {
            order: vec![PhysicalSortExpr {
                expr: col("v", &input).unwrap(),
                options: SortOptions {
                    descending: true,
                    nulls_first: false,
                },
            }],
            partition_by: if rank {
                vec![col("k", &input).unwrap()]
            } else {
                vec![]
            },
            offset: 0,
            limit,
            rank_column: rank,
            input_updating: updating,
            schema: Arc::new(Schema::new(fields)),
            input_schema: input,
        }
    }

    fn scores(rows: &[&str]) -> RecordBatch {
        from_pretty(&format!(
            "k:text | v:int64 | _brook_op:int8\n{}",
            rows.join("\n")
        ))
    }

    #[test]
    fn the_top_changes_as_rows_arrive_and_state_stays_bounded() {
        let mut op = node(false, false, 2).instantiate().unwrap();
        let out = op
            .on_data(0, scores(&["a | 5 | 1", "b | 3 | 1", "c | 1 | 1"]))
            .unwrap();
        assert_eq!(to_sorted_rows(&out), vec!["a | 5 | 1", "b | 3 | 1"]);
        let out = op.on_data(0, scores(&["d | 4 | 1", "e | 0 | 1"])).unwrap();
        assert_eq!(to_sorted_rows(&out), vec!["b | 3 | -1", "d | 4 | 1"]);
        let small = op.state_size();
        for i in 0..100 {
            op.on_data(0, scores(&[&format!("x | {} | 1", -i)]))
                .unwrap();
        }
        assert_eq!(op.state_size(), small, "rows below the top are not kept");
    }

    #[test]
    fn a_retracted_top_row_is_replaced_by_the_next() {
        let mut op = node(false, true, 2).instantiate().unwrap();
        op.on_data(0, scores(&["a | 5 | 1", "b | 3 | 1", "c | 1 | 1"]))
            .unwrap();
        let out = op.on_data(0, scores(&["a | 5 | -1"])).unwrap();
        assert_eq!(to_sorted_rows(&out), vec!["a | 5 | -1", "c | 1 | 1"]);
    }

    #[test]
    fn per_group_row_numbers_move_with_the_rows() {
        let mut op = node(true, false, 2).instantiate().unwrap();
        let out = op
            .on_data(0, scores(&["a | 5 | 1", "a | 3 | 1", "b | 1 | 1"]))
            .unwrap();
        assert_eq!(
            to_sorted_rows(&out),
            vec!["a | 3 | 2 | 1", "a | 5 | 1 | 1", "b | 1 | 1 | 1"]
        );
        // A new best row in a: 5 moves to rank 2, 3 drops out.
        let out = op.on_data(0, scores(&["a | 9 | 1"])).unwrap();
        assert_eq!(
            to_sorted_rows(&out),
            vec![
                "a | 3 | 2 | -1",
                "a | 5 | 1 | -1",
                "a | 5 | 2 | 1",
                "a | 9 | 1 | 1"
            ]
        );
    }
}
