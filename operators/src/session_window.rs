//! `SESSION` windows over event time: rows of one key whose event times lie less than a gap
//! apart form a session; each row gets its session's `window_start` (first event time) and
//! `window_end` (last event time plus the gap).
//!
//! A row can extend a session or bridge two, so a session's bounds move until the watermark
//! passes its end (no row still to come can be less than a gap after its last). Each key
//! keeps its open sessions with their rows. By default every change is emitted: when a batch
//! touches a session, its rows are retracted with the old bounds and inserted with the new
//! ones (an updating result whose final state is the ad-hoc answer). Under `EMIT ON WINDOW
//! CLOSE` a session's rows are emitted once, with final bounds, when the watermark passes
//! its end (an append-only result). Either way a closed session leaves the state, and a row
//! behind the watermark (it could belong to a session already closed) is dropped as late.
//!
//! [`session_runs`] is the same rule over rows sorted by time: the ad-hoc window function
//! uses it, so a stream and a table give the same sessions.

use crate::{change, NodeSpec, Operator};
use brook_common::{brook_err, Result};
use datafusion::arrow::array::{Array, ArrayRef, Int64Array, UInt32Array};
use datafusion::arrow::compute::{cast, concat_batches, take};
use datafusion::arrow::datatypes::{DataType, SchemaRef, TimeUnit};
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::arrow::row::{RowConverter, SortField};
use datafusion::common::HashMap;
use datafusion::physical_expr::PhysicalExpr;
use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap};
use std::fmt;
use std::sync::Arc;

/// Session bounds `(start, end)` of event times sorted ascending (NULLs anywhere): a row
/// less than `gap` after the previous one continues its session. NULL times get no session.
pub fn session_runs(times: &[Option<i64>], gap: i64) -> Vec<Option<(i64, i64)>> {
    let mut out = vec![None; times.len()];
    let mut run: Vec<usize> = Vec::new();
    let mut bounds: Option<(i64, i64)> = None;
    let close = |run: &mut Vec<usize>, b: (i64, i64), out: &mut Vec<Option<(i64, i64)>>| {
        for &i in run.iter() {
            out[i] = Some((b.0, b.1.saturating_add(gap)));
        }
        run.clear();
    };
    for (i, t) in times.iter().enumerate() {
        let Some(t) = *t else { continue };
        match bounds {
            Some((start, last)) if t.saturating_sub(last) < gap => bounds = Some((start, t)),
            Some(b) => {
                close(&mut run, b, &mut out);
                bounds = Some((t, t));
            }
            None => bounds = Some((t, t)),
        }
        run.push(i);
    }
    if let Some(b) = bounds {
        close(&mut run, b, &mut out);
    }
    out
}

/// Which bound an output column carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SessionBound {
    /// First event time of the session.
    Start,
    /// Last event time of the session plus the gap.
    End,
}

/// Plan node of SESSION windows.
#[derive(Debug)]
pub struct SessionNode {
    /// Event time over the input (the stream's watermark column).
    pub time: Arc<dyn PhysicalExpr>,
    /// Session keys over the input (none: one sequence of sessions).
    pub keys: Vec<Arc<dyn PhysicalExpr>>,
    /// The gap, in microseconds.
    pub gap: i64,
    /// The bound columns appended to the input's, in order.
    pub bounds: Vec<SessionBound>,
    /// Emit each session once, when it closes.
    pub emit_on_close: bool,
    /// Input schema.
    pub input_schema: SchemaRef,
    /// Output schema: the input's columns, then one per bound.
    pub schema: SchemaRef,
}

impl fmt::Display for SessionNode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let keys: Vec<String> = self.keys.iter().map(|k| k.to_string()).collect();
        let gap = match self.gap {
            g if g % 1_000_000 == 0 => format!("{}s", g / 1_000_000),
            g if g % 1000 == 0 => format!("{}ms", g / 1000),
            g => format!("{g}us"),
        };
        write!(
            f,
            "Session: time={} gap={gap} keys=[{}] emit={} state=rows of open sessions per key",
            self.time,
            keys.join(", "),
            if self.emit_on_close {
                "on window close"
            } else {
                "on update"
            }
        )
    }
}

impl NodeSpec for SessionNode {
    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }
    fn updating(&self) -> bool {
        !self.emit_on_close
    }
    fn instantiate(&self) -> Result<Box<dyn Operator>> {
        if self.gap <= 0 {
            return Err(brook_err!(Internal, "session gap must be positive"));
        }
        let key_types = self
            .keys
            .iter()
            .map(|e| Ok(SortField::new(e.data_type(&self.input_schema)?)))
            .collect::<Result<Vec<_>>>()?;
        let bound_types = self
            .bounds
            .iter()
            .enumerate()
            .map(|(i, _)| {
                self.schema
                    .field(self.input_schema.fields().len() + i)
                    .data_type()
                    .clone()
            })
            .collect();
        Ok(Box::new(SessionOp {
            node: SessionSpec {
                time: self.time.clone(),
                keys: self.keys.clone(),
                gap: self.gap,
                bounds: self.bounds.clone(),
                bound_types,
                emit_on_close: self.emit_on_close,
                schema: self.schema.clone(),
            },
            key_rows: (!key_types.is_empty())
                .then(|| RowConverter::new(key_types))
                .transpose()?,
            keys: HashMap::new(),
            closing: BinaryHeap::new(),
            watermark: None,
            late: 0,
            bytes: 0,
        }))
    }
}

/// What the runtime needs of the node.
struct SessionSpec {
    time: Arc<dyn PhysicalExpr>,
    keys: Vec<Arc<dyn PhysicalExpr>>,
    gap: i64,
    bounds: Vec<SessionBound>,
    bound_types: Vec<DataType>,
    emit_on_close: bool,
    schema: SchemaRef,
}

/// An open session.
struct Session {
    /// Latest event time.
    last: i64,
    /// Its rows (data columns), as they arrived.
    rows: Vec<RecordBatch>,
    /// The bounds its rows were last emitted with (emit on update), if they were.
    emitted: Option<(i64, i64)>,
}

/// Open sessions of one key, by start.
type Sessions = BTreeMap<i64, Session>;

/// A session's (end, key, start), ordered earliest end first in a max-heap.
type Closing = Reverse<(i64, Box<[u8]>, i64)>;

struct SessionOp {
    node: SessionSpec,
    /// Row encoding of keys (`None`: no keys).
    key_rows: Option<RowConverter>,
    keys: HashMap<Box<[u8]>, Sessions>,
    /// (end, key, start) of sessions, earliest end first; stale entries (the session grew
    /// or merged) are skipped when popped.
    closing: BinaryHeap<Closing>,
    watermark: Option<i64>,
    late: u64,
    /// Bytes of the sessions' rows.
    bytes: usize,
}

impl SessionSpec {
    /// `rows` with their session's bounds, as changes of `kind`.
    fn emit(
        &self,
        rows: &[RecordBatch],
        (start, end): (i64, i64),
        kind: i8,
    ) -> Result<RecordBatch> {
        let Some(first) = rows.first() else {
            return Err(brook_err!(Internal, "session without rows"));
        };
        let data = concat_batches(&first.schema(), rows)?;
        let n = data.num_rows();
        let mut cols = data.columns().to_vec();
        for (b, ty) in self.bounds.iter().zip(&self.bound_types) {
            let v = match b {
                SessionBound::Start => start,
                SessionBound::End => end,
            };
            cols.push(timestamp_column(v, n, ty)?);
        }
        change::attach(&self.schema, cols, change::constant(kind, n))
    }
}

/// A column of `n` copies of timestamp `micros` (NULL when `None`), typed `ty`.
fn timestamp_column(micros: impl Into<Option<i64>>, n: usize, ty: &DataType) -> Result<ArrayRef> {
    let v: Int64Array = std::iter::repeat_n(micros.into(), n).collect();
    let us = cast(&v, &DataType::Timestamp(TimeUnit::Microsecond, None))?;
    Ok(cast(&us, ty)?)
}

impl SessionOp {
    /// Rows with a NULL time belong to no session: they pass with NULL bounds.
    fn pass_without_session(&self, data: &RecordBatch, rows: &[u32]) -> Result<RecordBatch> {
        let idx = UInt32Array::from(rows.to_vec());
        let mut cols: Vec<ArrayRef> = data
            .columns()
            .iter()
            .map(|c| Ok(take(c.as_ref(), &idx, None)?))
            .collect::<Result<_>>()?;
        for ty in &self.node.bound_types {
            cols.push(timestamp_column(None, rows.len(), ty)?);
        }
        change::attach(
            &self.node.schema,
            cols,
            change::constant(change::INSERT, rows.len()),
        )
    }
}

impl Operator for SessionOp {
    fn on_data(&mut self, _port: usize, batch: RecordBatch) -> Result<Vec<RecordBatch>> {
        let kinds = change::kinds(&batch)?;
        if kinds.iter().any(|k| k == Some(change::DELETE)) {
            return Err(brook_err!(Internal, "SESSION input retracted a row"));
        }
        let data = change::strip(&batch)?;
        let n = data.num_rows();
        let times = crate::timestamp_micros(&self.node.time.evaluate(&data)?.into_array(n)?)?;
        let key_rows = crate::key_rows(self.key_rows.as_ref(), &self.node.keys, &data)?;
        let mut out = Vec::new();
        // Rows per key in time order; late and NULL-time rows apart.
        let mut no_time = Vec::new();
        let mut order: Vec<u32> = Vec::with_capacity(n);
        for i in 0..n {
            match times.is_valid(i).then(|| times.value(i)) {
                None => no_time.push(i as u32),
                Some(t) if self.watermark.is_some_and(|w| t < w) => self.late += 1,
                Some(_) => order.push(i as u32),
            }
        }
        if !no_time.is_empty() {
            out.push(self.pass_without_session(&data, &no_time)?);
        }
        let key_of = |i: u32| -> &[u8] {
            match &key_rows {
                Some(r) => r.row(i as usize).data(),
                None => &[],
            }
        };
        order.sort_by(|&a, &b| {
            key_of(a)
                .cmp(key_of(b))
                .then(times.value(a as usize).cmp(&times.value(b as usize)))
        });
        let gap = self.node.gap;
        // Sessions this batch touched, with the batch rows that join each.
        let mut touched: Vec<(Box<[u8]>, i64, Vec<u32>)> = Vec::new();
        let mut start_row = 0;
        while start_row < order.len() {
            let key: Box<[u8]> = key_of(order[start_row]).into();
            let mut end_row = start_row;
            while end_row < order.len() && key_of(order[end_row]) == &key[..] {
                end_row += 1;
            }
            let sessions = self.keys.entry(key.clone()).or_default();
            // Batch rows per session start, for this key.
            let mut joining: BTreeMap<i64, Vec<u32>> = BTreeMap::new();
            for &row in &order[start_row..end_row] {
                let t = times.value(row as usize);
                // Sessions within a gap of t: starts below t + gap whose last is above t - gap.
                let near: Vec<i64> = sessions
                    .range(..t.saturating_add(gap))
                    .rev()
                    .take_while(|(_, s)| t.saturating_sub(s.last) < gap)
                    .map(|(start, _)| *start)
                    .collect();
                let mut merged = Session {
                    last: t,
                    rows: Vec::new(),
                    emitted: None,
                };
                let mut start = t;
                let mut rows = vec![row];
                for s in near {
                    let Some(old) = sessions.remove(&s) else {
                        continue;
                    };
                    if let Some(bounds) = old.emitted {
                        out.push(self.node.emit(&old.rows, bounds, change::DELETE)?);
                    }
                    start = start.min(s);
                    merged.last = merged.last.max(old.last);
                    merged.rows.extend(old.rows);
                    rows.extend(joining.remove(&s).unwrap_or_default());
                }
                sessions.insert(start, merged);
                joining.insert(start, rows);
            }
            for (start, rows) in joining {
                touched.push((key.clone(), start, rows));
            }
            start_row = end_row;
        }
        for (key, start, mut rows) in touched {
            rows.sort_unstable();
            let idx = UInt32Array::from(rows);
            let cols: Vec<ArrayRef> = data
                .columns()
                .iter()
                .map(|c| Ok(take(c.as_ref(), &idx, None)?))
                .collect::<Result<_>>()?;
            let joined = RecordBatch::try_new(data.schema(), cols)?;
            self.bytes += joined.get_array_memory_size();
            let Some(s) = self.keys.get_mut(&key).and_then(|m| m.get_mut(&start)) else {
                return Err(brook_err!(Internal, "touched session vanished"));
            };
            s.rows.push(joined);
            let bounds = (start, s.last.saturating_add(gap));
            if !self.node.emit_on_close {
                out.push(self.node.emit(&s.rows, bounds, change::INSERT)?);
                s.emitted = Some(bounds);
            }
            self.closing.push(Reverse((bounds.1, key, start)));
        }
        Ok(out)
    }

    fn on_watermark(&mut self, watermark: i64) -> Result<Vec<RecordBatch>> {
        if self.watermark.is_some_and(|w| w >= watermark) {
            return Ok(Vec::new());
        }
        self.watermark = Some(watermark);
        let mut out = Vec::new();
        // A session whose end the watermark reached can gain no row: it is final.
        while let Some(Reverse((end, _, _))) = self.closing.peek() {
            if *end > watermark {
                break;
            }
            let Some(Reverse((end, key, start))) = self.closing.pop() else {
                break;
            };
            let Some(sessions) = self.keys.get_mut(&key) else {
                continue;
            };
            let current = sessions
                .get(&start)
                .map(|s| bounds_of(s, start, self.node.gap));
            if current != Some((start, end)) {
                continue;
            }
            let Some(s) = sessions.remove(&start) else {
                continue;
            };
            if sessions.is_empty() {
                self.keys.remove(&key);
            }
            self.bytes = self
                .bytes
                .saturating_sub(s.rows.iter().map(|b| b.get_array_memory_size()).sum());
            if self.node.emit_on_close {
                out.push(self.node.emit(&s.rows, (start, end), change::INSERT)?);
            }
        }
        Ok(out)
    }

    fn state_size(&self) -> usize {
        self.bytes + self.closing.len() * 48
    }

    fn late_rows(&self) -> u64 {
        self.late
    }
}

/// A session's bounds (a free function: the closing loop holds a borrow of the map).
fn bounds_of(s: &Session, start: i64, gap: i64) -> (i64, i64) {
    (start, s.last.saturating_add(gap))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{from_pretty, to_sorted_rows};
    use datafusion::arrow::datatypes::{Field, Schema};
    use datafusion::physical_expr::expressions::col;

    const S: i64 = 1_000_000;

    #[test]
    fn runs_split_at_the_gap() {
        let t = |s: i64| Some(s * S);
        let got = session_runs(&[t(1), t(3), None, t(5), t(10), t(20)], 5 * S);
        assert_eq!(
            got,
            vec![
                Some((S, 10 * S)),
                Some((S, 10 * S)),
                None,
                Some((S, 10 * S)),
                // Exactly a gap after the last: a new session.
                Some((10 * S, 15 * S)),
                Some((20 * S, 25 * S)),
            ]
        );
    }

    fn node(emit_on_close: bool) -> SessionNode {
        let input = change::strip(&clicks(&[])).unwrap().schema();
        let ts = DataType::Timestamp(TimeUnit::Microsecond, None);
        let mut fields: Vec<_> = input.fields().iter().cloned().collect();
        fields.push(Arc::new(Field::new("window_start", ts.clone(), true)));
        fields.push(Arc::new(Field::new("window_end", ts, true)));
        SessionNode {
            time: col("ts", &input).unwrap(),
            keys: vec![col("u", &input).unwrap()],
            gap: 5 * S,
            bounds: vec![SessionBound::Start, SessionBound::End],
            emit_on_close,
            schema: Arc::new(Schema::new(fields)),
            input_schema: input,
        }
    }

    fn clicks(rows: &[&str]) -> RecordBatch {
        from_pretty(&format!(
            "u:text | ts:timestamp | _brook_op:int8\n{}",
            rows.join("\n")
        ))
    }

    #[test]
    fn sessions_grow_and_merge_with_retractions() {
        let mut op = node(false).instantiate().unwrap();
        let out = op
            .on_data(
                0,
                clicks(&[
                    "a | 1970-01-01T00:00:01 | 1",
                    "b | 1970-01-01T00:00:02 | 1",
                    "a | 1970-01-01T00:00:10 | 1",
                ]),
            )
            .unwrap();
        assert_eq!(
            to_sorted_rows(&out),
            vec![
                "a | 1970-01-01T00:00:01 | 1970-01-01T00:00:01 | 1970-01-01T00:00:06 | 1",
                "a | 1970-01-01T00:00:10 | 1970-01-01T00:00:10 | 1970-01-01T00:00:15 | 1",
                "b | 1970-01-01T00:00:02 | 1970-01-01T00:00:02 | 1970-01-01T00:00:07 | 1",
            ]
        );
        // 00:00:05.5 is within 5 s of both of a's sessions: both are retracted, one inserted.
        let out = op
            .on_data(0, clicks(&["a | 1970-01-01T00:00:05.500 | 1"]))
            .unwrap();
        assert_eq!(
            to_sorted_rows(&out),
            vec![
                "a | 1970-01-01T00:00:01 | 1970-01-01T00:00:01 | 1970-01-01T00:00:06 | -1",
                "a | 1970-01-01T00:00:01 | 1970-01-01T00:00:01 | 1970-01-01T00:00:15 | 1",
                "a | 1970-01-01T00:00:05.500 | 1970-01-01T00:00:01 | 1970-01-01T00:00:15 | 1",
                "a | 1970-01-01T00:00:10 | 1970-01-01T00:00:01 | 1970-01-01T00:00:15 | 1",
                "a | 1970-01-01T00:00:10 | 1970-01-01T00:00:10 | 1970-01-01T00:00:15 | -1",
            ]
        );
        // b's session closes at 7 s; a row behind the watermark is late.
        op.on_watermark(8 * S).unwrap();
        let out = op
            .on_data(
                0,
                clicks(&["b | 1970-01-01T00:00:03 | 1", "b | 1970-01-01T00:00:09 | 1"]),
            )
            .unwrap();
        assert_eq!(
            to_sorted_rows(&out),
            vec!["b | 1970-01-01T00:00:09 | 1970-01-01T00:00:09 | 1970-01-01T00:00:14 | 1"]
        );
        assert_eq!(op.late_rows(), 1);
        op.on_watermark(i64::MAX).unwrap();
        assert_eq!(op.state_size(), 0);
    }

    #[test]
    fn on_window_close_each_session_is_emitted_once() {
        let mut op = node(true).instantiate().unwrap();
        assert!(op
            .on_data(
                0,
                clicks(&[
                    "a | 1970-01-01T00:00:01 | 1",
                    "a | 1970-01-01T00:00:04 | 1",
                    "a | NULL | 1",
                ]),
            )
            .map(|o| to_sorted_rows(&o))
            .unwrap()
            .eq(&vec!["a | NULL | NULL | NULL | 1".to_string()]));
        assert!(op.on_watermark(8 * S).unwrap().is_empty(), "ends at 9 s");
        assert_eq!(
            to_sorted_rows(&op.on_watermark(9 * S).unwrap()),
            vec![
                "a | 1970-01-01T00:00:01 | 1970-01-01T00:00:01 | 1970-01-01T00:00:09 | 1",
                "a | 1970-01-01T00:00:04 | 1970-01-01T00:00:01 | 1970-01-01T00:00:09 | 1",
            ]
        );
    }

    /// However the rows are cut into batches, the final sessions are the ad-hoc ones.
    #[test]
    fn batches_do_not_change_the_sessions() {
        let rows: Vec<String> = (0..60)
            .map(|i| {
                let t = (i * 7919) % 97; // a scrambled order of distinct-ish times
                format!(
                    "{} | 1970-01-01T00:{:02}:{:02} | 1",
                    ["a", "b"][i % 2],
                    t / 60,
                    t % 60
                )
            })
            .collect();
        let mut expected: Vec<String> = Vec::new();
        for key in ["a", "b"] {
            let mut times: Vec<i64> = (0..60usize)
                .filter(|i| ["a", "b"][i % 2] == key)
                .map(|i| (((i * 7919) % 97) as i64) * S)
                .collect();
            times.sort_unstable();
            let runs = session_runs(&times.iter().map(|t| Some(*t)).collect::<Vec<_>>(), 5 * S);
            for (t, r) in times.iter().zip(runs) {
                let (s, e) = r.unwrap();
                let f = |us: i64| format!("1970-01-01T00:{:02}:{:02}", us / S / 60, us / S % 60);
                expected.push(format!("{key} | {} | {} | {}", f(*t), f(s), f(e)));
            }
        }
        expected.sort();
        for size in [1, 4, 60] {
            let mut op = node(false).instantiate().unwrap();
            let mut state: HashMap<String, i64> = HashMap::new();
            for chunk in rows.chunks(size) {
                let refs: Vec<&str> = chunk.iter().map(String::as_str).collect();
                for r in to_sorted_rows(&op.on_data(0, clicks(&refs)).unwrap()) {
                    let (row, kind) = r.rsplit_once(" | ").unwrap();
                    *state.entry(row.to_string()).or_default() += kind.parse::<i64>().unwrap();
                }
            }
            let mut got: Vec<String> = state
                .into_iter()
                .flat_map(|(r, c)| std::iter::repeat_n(r, c.max(0) as usize))
                .collect();
            got.sort();
            assert_eq!(got, expected, "batches of {size}");
        }
    }
}
