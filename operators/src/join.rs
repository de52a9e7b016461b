//! Equi-joins of two changelogs (a symmetric hash join with retraction): inner joins, and
//! semi joins (`EXISTS`/`IN` subqueries, and inner joins whose other side only filters).
//!
//! Each side keeps its live rows indexed by join key. A change on one side is paired with
//! the other side's live rows of the same key (the extra join condition, if any, decides
//! which pairs match), then updates its own side. An inner join emits the matching pairs
//! with the change's kind. A semi join emits a row of its kept side while it has at least
//! one match: each kept row counts its matches, and a change on the other side that moves a
//! count between zero and non-zero inserts or retracts that row. Either way the result stays
//! equal to the join of the two inputs' current contents.
//!
//! State holds every live row of both inputs: the planner admits a join only when that is
//! bounded by what the SQL reads (at least one side comes from a table or an aggregate),
//! never a join of two unbounded streams without a time bound.

use crate::{change, NodeSpec, Operator};
use brook_common::{BrookError, Result};
use datafusion::arrow::array::{Array, ArrayRef, Int8Array, UInt32Array};
use datafusion::arrow::compute::{interleave, take};
use datafusion::arrow::datatypes::{DataType, SchemaRef};
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::arrow::row::{RowConverter, Rows, SortField};
use datafusion::physical_expr::PhysicalExpr;
use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

/// What a join emits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JoinKind {
    /// Matching pairs (left columns, then right columns).
    Inner,
    /// Rows of input `0` (left) or `1` (right) that have at least one match.
    Semi(usize),
    /// Matching pairs, plus each row of the kept input (`0`: LEFT JOIN, `1`: RIGHT JOIN)
    /// that has no match, with NULLs for the other side's columns.
    Outer(usize),
}

/// Plan node of an equi-join.
#[derive(Debug)]
pub struct JoinNode {
    /// Inner or semi.
    pub kind: JoinKind,
    /// Key expressions over the left input.
    pub left_keys: Vec<Arc<dyn PhysicalExpr>>,
    /// Key expressions over the right input (same count and types as the left).
    pub right_keys: Vec<Arc<dyn PhysicalExpr>>,
    /// Extra (non-equi) condition over a pair (left columns, then right columns).
    pub filter: Option<Arc<dyn PhysicalExpr>>,
    /// Left input schema.
    pub left_schema: SchemaRef,
    /// Right input schema.
    pub right_schema: SchemaRef,
    /// Output schema: left columns then right columns (inner), or the kept side's (semi).
    pub schema: SchemaRef,
    /// Whether either input retracts.
    pub updating: bool,
}

impl fmt::Display for JoinNode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let pairs: Vec<String> = self
            .left_keys
            .iter()
            .zip(&self.right_keys)
            .map(|(l, r)| format!("{l} = {r}"))
            .collect();
        let kind = match self.kind {
            JoinKind::Inner => "inner".to_string(),
            JoinKind::Semi(0) => "left semi".to_string(),
            JoinKind::Semi(_) => "right semi".to_string(),
            JoinKind::Outer(0) => "left outer".to_string(),
            JoinKind::Outer(_) => "right outer".to_string(),
        };
        write!(f, "Join: {kind} on [{}]", pairs.join(", "))?;
        if let Some(c) = &self.filter {
            write!(f, " filter={c}")?;
        }
        write!(f, " state=live rows of both inputs by key")
    }
}

impl NodeSpec for JoinNode {
    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }
    fn updating(&self) -> bool {
        self.updating
    }
    fn instantiate(&self) -> Result<Box<dyn Operator>> {
        let key_types =
            |schema: &SchemaRef, keys: &[Arc<dyn PhysicalExpr>]| -> Result<Vec<DataType>> {
                keys.iter().map(|k| Ok(k.data_type(schema)?)).collect()
            };
        let left_types = key_types(&self.left_schema, &self.left_keys)?;
        if left_types != key_types(&self.right_schema, &self.right_keys)? {
            return Err(BrookError::internal("join keys of different types"));
        }
        let left_types: Vec<SortField> = left_types.into_iter().map(SortField::new).collect();
        let all = |schema: &SchemaRef| -> Vec<SortField> {
            schema
                .fields()
                .iter()
                .map(|f| SortField::new(f.data_type().clone()))
                .collect()
        };
        let mut fields: Vec<_> = self.left_schema.fields().iter().cloned().collect();
        fields.extend(self.right_schema.fields().iter().cloned());
        Ok(Box::new(JoinOp {
            kind: self.kind,
            pair_schema: Arc::new(datafusion::arrow::datatypes::Schema::new(fields)),
            keys: [self.left_keys.clone(), self.right_keys.clone()],
            key_rows: RowConverter::new(left_types)?,
            full_rows: [
                RowConverter::new(all(&self.left_schema))?,
                RowConverter::new(all(&self.right_schema))?,
            ],
            widths: [
                self.left_schema.fields().len(),
                self.right_schema.fields().len(),
            ],
            filter: self.filter.clone(),
            schema: self.schema.clone(),
            sides: [Side::default(), Side::default()],
        }))
    }
}

/// One live row of a side.
struct Entry {
    /// The whole row, row-encoded (to find the row a delete names).
    full: Box<[u8]>,
    /// Where its values are: (batch, row) in the side's batches.
    at: (usize, usize),
    /// How many copies are live.
    count: i64,
    /// Semi join, kept side: how many live rows of the other side match this row.
    matches: i64,
}

#[derive(Default)]
struct Side {
    /// Batches holding rows the side has seen (data columns only).
    batches: Vec<RecordBatch>,
    /// Join key (row-encoded) → live rows with that key.
    index: HashMap<Box<[u8]>, Vec<Entry>>,
    /// Bytes held, for statistics.
    bytes: usize,
}

struct JoinOp {
    kind: JoinKind,
    /// Schema of a pair: left columns, then right columns (what the condition reads).
    pair_schema: SchemaRef,
    keys: [Vec<Arc<dyn PhysicalExpr>>; 2],
    key_rows: RowConverter,
    full_rows: [RowConverter; 2],
    /// Column counts of the inputs.
    widths: [usize; 2],
    filter: Option<Arc<dyn PhysicalExpr>>,
    schema: SchemaRef,
    sides: [Side; 2],
}

impl JoinOp {
    fn encode_keys(&self, side: usize, batch: &RecordBatch) -> Result<(Rows, Vec<bool>)> {
        let n = batch.num_rows();
        let cols: Vec<ArrayRef> = self.keys[side]
            .iter()
            .map(|k| Ok(k.evaluate(batch)?.into_array(n)?))
            .collect::<Result<_>>()?;
        // SQL equality: a NULL key matches nothing.
        let mut valid = vec![true; n];
        for c in &cols {
            if c.null_count() > 0 {
                for (i, v) in valid.iter_mut().enumerate() {
                    *v &= c.is_valid(i);
                }
            }
        }
        Ok((self.key_rows.convert_columns(&cols)?, valid))
    }
}

/// Pairs, the distinct keys they refer to, and whether each pair meets the join condition.
type Pairing = (Vec<Pair>, Vec<Box<[u8]>>, Vec<bool>);

/// A change row paired with a live row of the other side.
struct Pair {
    /// Row of the change batch.
    row: u32,
    /// Key of the other side's entry and its position under that key.
    key: usize,
    entry: usize,
}

impl JoinOp {
    /// Pairs of change rows with the other side's live rows of the same key, and whether each
    /// pair satisfies the extra condition. `keys` lists the distinct keys the pairs refer to.
    fn pairs(
        &self,
        port: usize,
        data: &RecordBatch,
        keys: &Rows,
        valid: &[bool],
    ) -> Result<Pairing> {
        let other = &self.sides[1 - port];
        let mut pairs = Vec::new();
        let mut key_list: Vec<Box<[u8]>> = Vec::new();
        let mut key_pos: HashMap<&[u8], usize> = HashMap::new();
        for (i, ok) in valid.iter().enumerate().take(data.num_rows()) {
            if !ok {
                continue;
            }
            let k = keys.row(i).data();
            let Some(entries) = other.index.get(k) else {
                continue;
            };
            let key = *key_pos.entry(k).or_insert_with(|| {
                key_list.push(k.into());
                key_list.len() - 1
            });
            for entry in 0..entries.len() {
                pairs.push(Pair {
                    row: i as u32,
                    key,
                    entry,
                });
            }
        }
        let matched = match (&self.filter, pairs.is_empty()) {
            (Some(f), false) => {
                let joined = self.pair_batch(port, data, &pairs, &key_list)?;
                let mask = f.evaluate(&joined)?.into_array(joined.num_rows())?;
                let mask = mask
                    .as_any()
                    .downcast_ref::<datafusion::arrow::array::BooleanArray>()
                    .ok_or_else(|| BrookError::internal("join condition is not boolean"))?
                    .clone();
                (0..mask.len())
                    .map(|i| mask.is_valid(i) && mask.value(i))
                    .collect()
            }
            _ => vec![true; pairs.len()],
        };
        Ok((pairs, key_list, matched))
    }

    /// The pairs as rows: left columns, then right columns.
    fn pair_batch(
        &self,
        port: usize,
        data: &RecordBatch,
        pairs: &[Pair],
        keys: &[Box<[u8]>],
    ) -> Result<RecordBatch> {
        let other = &self.sides[1 - port];
        let idx = UInt32Array::from(pairs.iter().map(|p| p.row).collect::<Vec<_>>());
        let mine: Vec<ArrayRef> = data
            .columns()
            .iter()
            .map(|c| Ok(take(c.as_ref(), &idx, None)?))
            .collect::<Result<_>>()?;
        let at: Vec<(usize, usize)> = pairs
            .iter()
            .map(|p| {
                other
                    .index
                    .get(&keys[p.key])
                    .and_then(|e| e.get(p.entry))
                    .map(|e| e.at)
                    .ok_or_else(|| BrookError::internal("join entry vanished"))
            })
            .collect::<Result<_>>()?;
        let width = self.sides_width(1 - port);
        let mut theirs = Vec::with_capacity(width);
        for c in 0..width {
            let arrays: Vec<&dyn Array> =
                other.batches.iter().map(|b| b.column(c).as_ref()).collect();
            theirs.push(interleave(&arrays, &at)?);
        }
        let columns = if port == 0 {
            mine.into_iter().chain(theirs).collect()
        } else {
            theirs.into_iter().chain(mine).collect()
        };
        Ok(RecordBatch::try_new(self.pair_schema.clone(), columns)?)
    }

    /// Number of columns of input `side`.
    fn sides_width(&self, side: usize) -> usize {
        self.widths[side]
    }
}
impl Operator for JoinOp {
    fn on_data(&mut self, port: usize, batch: RecordBatch) -> Result<Vec<RecordBatch>> {
        if port > 1 {
            return Err(BrookError::internal("join has two inputs"));
        }
        let kinds = change::kinds(&batch)?.clone();
        let data = change::strip(&batch)?;
        let (keys, valid) = self.encode_keys(port, &data)?;
        let (pairs, key_list, matched) = self.pairs(port, &data, &keys, &valid)?;
        let out = match self.kind {
            JoinKind::Inner => self.emit_pairs(port, &data, &kinds, &pairs, &key_list, &matched)?,
            JoinKind::Semi(kept) if kept == port => {
                self.emit_kept(port, &data, &kinds, &pairs, &key_list, &matched, true)?
            }
            JoinKind::Semi(_) => {
                self.emit_flips(port, &kinds, &pairs, &key_list, &matched, false)?
            }
            JoinKind::Outer(kept) => {
                let mut out = self.emit_pairs(port, &data, &kinds, &pairs, &key_list, &matched)?;
                out.extend(if kept == port {
                    self.emit_kept(port, &data, &kinds, &pairs, &key_list, &matched, false)?
                } else {
                    self.emit_flips(port, &kinds, &pairs, &key_list, &matched, true)?
                });
                out
            }
        };
        self.apply(
            port, &data, &kinds, &keys, &valid, &pairs, &key_list, &matched,
        )?;
        Ok(out)
    }

    fn state_size(&self) -> usize {
        self.sides.iter().map(|s| s.bytes).sum()
    }
}

impl JoinOp {
    /// Inner join: every matching pair, as often as the other row is live.
    fn emit_pairs(
        &self,
        port: usize,
        data: &RecordBatch,
        kinds: &Int8Array,
        pairs: &[Pair],
        keys: &[Box<[u8]>],
        matched: &[bool],
    ) -> Result<Vec<RecordBatch>> {
        let other = &self.sides[1 - port];
        let mut chosen = Vec::new();
        let mut out_kinds = Vec::new();
        for (p, ok) in pairs.iter().zip(matched) {
            if !ok {
                continue;
            }
            let count = other.index[&keys[p.key]][p.entry].count;
            for _ in 0..count.max(0) {
                chosen.push(Pair {
                    row: p.row,
                    key: p.key,
                    entry: p.entry,
                });
                out_kinds.push(kinds.value(p.row as usize));
            }
        }
        if chosen.is_empty() {
            return Ok(Vec::new());
        }
        let joined = self.pair_batch(port, data, &chosen, keys)?;
        Ok(vec![change::attach(
            &self.schema,
            joined.columns().to_vec(),
            Arc::new(Int8Array::from(out_kinds)),
        )?])
    }

    /// A change on the kept side: a semi join emits the rows that have matches
    /// (`want_matched`), an outer join the ones that have none (padded with NULLs).
    #[allow(clippy::too_many_arguments)]
    fn emit_kept(
        &self,
        port: usize,
        data: &RecordBatch,
        kinds: &Int8Array,
        pairs: &[Pair],
        key_list: &[Box<[u8]>],
        matched: &[bool],
        want_matched: bool,
    ) -> Result<Vec<RecordBatch>> {
        let other = &self.sides[1 - port];
        let mut has = vec![false; data.num_rows()];
        for (p, ok) in pairs.iter().zip(matched) {
            if *ok && other.index[&key_list[p.key]][p.entry].count > 0 {
                has[p.row as usize] = true;
            }
        }
        let rows: Vec<u32> = (0..data.num_rows() as u32)
            .filter(|i| has[*i as usize] == want_matched)
            .collect();
        if rows.is_empty() {
            return Ok(Vec::new());
        }
        let idx = UInt32Array::from(rows.clone());
        let cols: Vec<ArrayRef> = data
            .columns()
            .iter()
            .map(|c| Ok(take(c.as_ref(), &idx, None)?))
            .collect::<Result<_>>()?;
        let k: Vec<i8> = rows.iter().map(|i| kinds.value(*i as usize)).collect();
        Ok(vec![change::attach(
            &self.schema,
            self.shape_kept(port, cols),
            Arc::new(Int8Array::from(k)),
        )?])
    }

    /// Columns of kept-side rows as output columns: as they are for a semi join; for an
    /// outer join beside NULLs for the other side.
    fn shape_kept(&self, kept: usize, cols: Vec<ArrayRef>) -> Vec<ArrayRef> {
        if !matches!(self.kind, JoinKind::Outer(_)) {
            return cols;
        }
        let rows = cols.first().map(|c| c.len()).unwrap_or(0);
        let other = 1 - kept;
        let offset = if other == 0 { 0 } else { self.widths[0] };
        let nulls: Vec<ArrayRef> = (0..self.widths[other])
            .map(|c| {
                datafusion::arrow::array::new_null_array(
                    self.schema.field(offset + c).data_type(),
                    rows,
                )
            })
            .collect();
        if kept == 0 {
            cols.into_iter().chain(nulls).collect()
        } else {
            nulls.into_iter().chain(cols).collect()
        }
    }

    /// A change on the other side: kept rows whose match count leaves or reaches zero are
    /// inserted or retracted (as many times as they are live) — for a semi join the row, for
    /// an outer join (`padded`) its NULL-padded row, the other way round.
    fn emit_flips(
        &mut self,
        port: usize,
        kinds: &Int8Array,
        pairs: &[Pair],
        key_list: &[Box<[u8]>],
        matched: &[bool],
        padded: bool,
    ) -> Result<Vec<RecordBatch>> {
        let kept = 1 - port;
        let mut delta: HashMap<(usize, usize), i64> = HashMap::new();
        for (p, ok) in pairs.iter().zip(matched) {
            if *ok {
                *delta.entry((p.key, p.entry)).or_insert(0) +=
                    i64::from(kinds.value(p.row as usize));
            }
        }
        let mut at = Vec::new();
        let mut out_kinds = Vec::new();
        let side = &mut self.sides[kept];
        for ((key, entry), d) in delta {
            let Some(e) = side
                .index
                .get_mut(&key_list[key])
                .and_then(|v| v.get_mut(entry))
            else {
                continue;
            };
            let before = e.matches;
            e.matches += d;
            let kind = match (before > 0, e.matches > 0, padded) {
                (false, true, false) | (true, false, true) => change::INSERT,
                (true, false, false) | (false, true, true) => change::DELETE,
                _ => continue,
            };
            for _ in 0..e.count.max(0) {
                at.push(e.at);
                out_kinds.push(kind);
            }
        }
        if at.is_empty() {
            return Ok(Vec::new());
        }
        let mut cols = Vec::with_capacity(self.widths[kept]);
        for c in 0..self.widths[kept] {
            let arrays: Vec<&dyn Array> =
                side.batches.iter().map(|b| b.column(c).as_ref()).collect();
            cols.push(interleave(&arrays, &at)?);
        }
        Ok(vec![change::attach(
            &self.schema,
            self.shape_kept(kept, cols),
            Arc::new(Int8Array::from(out_kinds)),
        )?])
    }

    /// Apply the changes to this side's live rows (and, on a semi join's kept side, record
    /// each new row's match count).
    #[allow(clippy::too_many_arguments)]
    fn apply(
        &mut self,
        port: usize,
        data: &RecordBatch,
        kinds: &Int8Array,
        keys: &Rows,
        valid: &[bool],
        pairs: &[Pair],
        key_list: &[Box<[u8]>],
        matched: &[bool],
    ) -> Result<()> {
        let mut match_count = vec![0i64; data.num_rows()];
        if self.kind == JoinKind::Semi(port) || self.kind == JoinKind::Outer(port) {
            let other = &self.sides[1 - port];
            for (p, ok) in pairs.iter().zip(matched) {
                if *ok {
                    match_count[p.row as usize] += other.index[&key_list[p.key]][p.entry].count;
                }
            }
        }
        let full = self.full_rows[port].convert_columns(data.columns())?;
        let side = &mut self.sides[port];
        let batch_no = side.batches.len();
        let mut stored = false;
        for i in 0..data.num_rows() {
            if !valid[i] {
                continue;
            }
            let row = full.row(i).data();
            let entries = side.index.entry(keys.row(i).data().into()).or_default();
            let found = entries.iter_mut().find(|e| &*e.full == row);
            if kinds.value(i) == change::DELETE {
                match found {
                    Some(e) => e.count -= 1,
                    None => {
                        return Err(BrookError::internal(
                            "join input retracted a row it never inserted",
                        ))
                    }
                }
                entries.retain(|e| e.count > 0);
            } else {
                match found {
                    Some(e) => e.count += 1,
                    None => {
                        side.bytes += row.len() + 40;
                        entries.push(Entry {
                            full: row.into(),
                            at: (batch_no, i),
                            count: 1,
                            matches: match_count[i],
                        });
                        stored = true;
                    }
                }
            }
        }
        side.index.retain(|_, v| !v.is_empty());
        if stored {
            side.bytes += data.get_array_memory_size();
            side.batches.push(data.clone());
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{from_pretty, to_sorted_rows};
    use datafusion::arrow::datatypes::Schema;
    use datafusion::physical_expr::expressions::col;

    fn node(l: &RecordBatch, r: &RecordBatch) -> JoinNode {
        let (ls, rs) = (
            change::strip(l).unwrap().schema(),
            change::strip(r).unwrap().schema(),
        );
        let fields: Vec<_> = ls
            .fields()
            .iter()
            .chain(rs.fields().iter())
            .cloned()
            .collect();
        JoinNode {
            left_keys: vec![col("k", &ls).unwrap()],
            right_keys: vec![col("k2", &rs).unwrap()],
            filter: None,
            left_schema: ls,
            right_schema: rs,
            schema: Arc::new(Schema::new(fields)),
            updating: true,
            kind: JoinKind::Inner,
        }
    }

    #[test]
    fn joins_both_ways_and_retracts() {
        let orders = from_pretty(
            "k:text | amt:int64 | _brook_op:int8
             a      | 1         | 1
             b      | 2         | 1
             NULL   | 3         | 1",
        );
        let names = from_pretty(
            "k2:text | name:text | _brook_op:int8
             a       | Ann       | 1",
        );
        let mut op = node(&orders, &names).instantiate().unwrap();
        assert!(op.on_data(0, orders).unwrap().is_empty());
        assert_eq!(
            to_sorted_rows(&op.on_data(1, names).unwrap()),
            vec!["a | 1 | a | Ann | 1"]
        );
        // The name changes: the joined row is retracted and re-emitted.
        let rename = from_pretty(
            "k2:text | name:text | _brook_op:int8
             a       | Ann       | -1
             a       | Anna      | 1
             b       | Bob       | 1",
        );
        assert_eq!(
            to_sorted_rows(&op.on_data(1, rename).unwrap()),
            vec![
                "a | 1 | a | Ann | -1",
                "a | 1 | a | Anna | 1",
                "b | 2 | b | Bob | 1"
            ]
        );
        let more = from_pretty(
            "k:text | amt:int64 | _brook_op:int8
             b      | 5         | 1
             a      | 1         | -1",
        );
        assert_eq!(
            to_sorted_rows(&op.on_data(0, more).unwrap()),
            vec!["a | 1 | a | Anna | -1", "b | 5 | b | Bob | 1"]
        );
        assert!(op.state_size() > 0);
    }
}
