//! Sequences: their definitions in the catalog and the counters that hand out values.
//!
//! As in PostgreSQL, a sequence is not transactional: a value handed out is never handed
//! out again, even when the statement that took it fails or is rolled back, and values may
//! be skipped. Durability follows PostgreSQL's `SEQ_LOG_VALS`: before values are handed
//! out, the catalog records a state at least as far on as the last of them — a block
//! ahead, so most calls write nothing — and after a crash the sequence continues after the
//! recorded state, skipping at most the unused rest of the block. A value handed out
//! before a crash is therefore never handed out again after it.

use super::{Catalog, CatalogDoc, SchemaMeta};
use crate::ident::quote_if_needed;
use crate::pg::types::PgType;
use brook_common::{brook_err, BrookError, Result};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard};

/// How many values past the ones a call needs are reserved with each catalog write.
const RESERVE_AHEAD: u64 = 32;

/// First `pg_class` oid of sequences: a sequence's oid is this plus its id (relation oids
/// are allocated from 16384 by the catalog tables, index oids from 1,000,000,000).
const SEQUENCE_OID_BASE: i64 = 2_000_000_000;

/// A sequence (`CREATE SEQUENCE`, or the one a SERIAL or identity column owns).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SequenceMeta {
    /// Unique id, from the same counter as relation ids.
    pub id: u64,
    /// `smallint`, `integer` or `bigint`: the range MINVALUE/MAXVALUE default to.
    pub ty: PgType,
    /// `START WITH`.
    pub start: i64,
    /// `INCREMENT BY` (never 0).
    pub increment: i64,
    /// `MINVALUE`.
    pub min: i64,
    /// `MAXVALUE`.
    pub max: i64,
    /// `CACHE` as declared (values are reserved in blocks whatever it says).
    pub cache: i64,
    /// `CYCLE`: wrap around at the limit instead of failing.
    pub cycle: bool,
    /// The (table, column) of the same schema whose SERIAL or identity column owns the
    /// sequence: dropping the table drops it.
    pub owned_by: Option<(String, String)>,
    /// The durable state: after a restart `nextval` continues from here (the next value is
    /// `last_value` itself when `is_called` is false, the one after it otherwise).
    pub last_value: i64,
    /// Whether `last_value` has been handed out (or reserved).
    pub is_called: bool,
    /// Raised by each `ALTER SEQUENCE ... RESTART`: on a cluster, a shared state of an
    /// older epoch is superseded by `last_value` (see `sequence_shared.rs`).
    #[serde(default)]
    pub epoch: u64,
}

/// The options of `CREATE SEQUENCE` or of an identity column, as given.
#[derive(Debug, Clone, Default)]
pub struct SequenceOptions {
    pub increment: Option<i64>,
    pub min: Option<i64>,
    pub max: Option<i64>,
    pub start: Option<i64>,
    pub cache: Option<i64>,
    pub cycle: Option<bool>,
    /// `NO MINVALUE` / `NO MAXVALUE` in ALTER SEQUENCE: back to the default bound.
    pub default_min: bool,
    pub default_max: bool,
}

impl SequenceMeta {
    /// A new sequence of integer type `ty`, with PostgreSQL's defaults for the options not
    /// given and its checks of the ones given.
    pub fn new(ty: PgType, o: &SequenceOptions) -> Result<SequenceMeta> {
        let (lo, hi) = type_range(&ty)?;
        let increment = o.increment.unwrap_or(1);
        if increment == 0 {
            return Err(brook_err!(InvalidParameter, "INCREMENT must not be zero"));
        }
        let min = o.min.unwrap_or(if increment > 0 { 1 } else { lo });
        let max = o.max.unwrap_or(if increment > 0 { hi } else { -1 });
        for (what, v) in [("MINVALUE", min), ("MAXVALUE", max)] {
            if v < lo || v > hi {
                return Err(brook_err!(
                    InvalidParameter,
                    "{what} ({v}) is out of range for sequence data type {}",
                    ty.name()
                ));
            }
        }
        if min >= max {
            return Err(brook_err!(
                InvalidParameter,
                "MINVALUE ({min}) must be less than MAXVALUE ({max})"
            ));
        }
        let start = o.start.unwrap_or(if increment > 0 { min } else { max });
        if start < min {
            return Err(brook_err!(
                InvalidParameter,
                "START value ({start}) cannot be less than MINVALUE ({min})"
            ));
        }
        if start > max {
            return Err(brook_err!(
                InvalidParameter,
                "START value ({start}) cannot be greater than MAXVALUE ({max})"
            ));
        }
        let cache = o.cache.unwrap_or(1);
        if cache < 1 {
            return Err(brook_err!(
                InvalidParameter,
                "CACHE ({cache}) must be greater than zero"
            ));
        }
        Ok(SequenceMeta {
            id: 0,
            ty,
            start,
            increment,
            min,
            max,
            cache,
            cycle: o.cycle.unwrap_or(false),
            owned_by: None,
            last_value: start,
            is_called: false,
            epoch: 0,
        })
    }

    /// This sequence with `ALTER SEQUENCE`'s changes: options given replace the current
    /// ones (and are checked together, as at creation), a new type `ty` too; the state and
    /// owner stay. (`NO MINVALUE`/`NO MAXVALUE` keep the current bound.)
    pub fn altered(&self, ty: Option<PgType>, given: &SequenceOptions) -> Result<SequenceMeta> {
        // A bound that was its type's own follows a new type (`AS integer` of a smallint
        // sequence widens MAXVALUE 32767), as PostgreSQL's does.
        let retyped = ty.as_ref().is_some_and(|t| *t != self.ty);
        let (lo, hi) = type_range(&self.ty)?;
        let keep_min = !(given.default_min || retyped && self.min == lo);
        let keep_max = !(given.default_max || retyped && self.max == hi);
        let merged = SequenceOptions {
            increment: given.increment.or(Some(self.increment)),
            min: given.min.or(Some(self.min).filter(|_| keep_min)),
            max: given.max.or(Some(self.max).filter(|_| keep_max)),
            start: given.start.or(Some(self.start)),
            cache: given.cache.or(Some(self.cache)),
            cycle: given.cycle.or(Some(self.cycle)),
            default_min: false,
            default_max: false,
        };
        let fresh = SequenceMeta::new(ty.unwrap_or_else(|| self.ty.clone()), &merged)?;
        Ok(SequenceMeta {
            id: self.id,
            owned_by: self.owned_by.clone(),
            last_value: self.last_value,
            is_called: self.is_called,
            epoch: self.epoch,
            ..fresh
        })
    }

    /// 22023 unless the sequence's state (the value `nextval` continues from) is within
    /// its bounds (after an ALTER SEQUENCE: PostgreSQL names it the RESTART value).
    pub fn check_state(&self) -> Result<()> {
        let v = self.last_value;
        if v < self.min || v > self.max {
            let (what, bound, limit) = if v < self.min {
                ("less", "MINVALUE", self.min)
            } else {
                ("greater", "MAXVALUE", self.max)
            };
            return Err(brook_err!(
                InvalidParameter,
                "RESTART value ({v}) cannot be {what} than {bound} ({limit})"
            ));
        }
        Ok(())
    }

    /// The sequence's `pg_class` oid.
    pub fn oid(&self) -> i64 {
        SEQUENCE_OID_BASE + self.id as i64
    }

    /// The value after state (`last`, `is_called`), or None when the sequence is at its
    /// limit and does not cycle.
    pub(super) fn next_after(&self, last: i64, is_called: bool) -> Option<i64> {
        if !is_called {
            return Some(last);
        }
        match last.checked_add(self.increment) {
            Some(v) if v >= self.min && v <= self.max => Some(v),
            _ if self.cycle => Some(if self.increment > 0 {
                self.min
            } else {
                self.max
            }),
            _ => None,
        }
    }

    pub(super) fn exhausted(&self, name: &str) -> BrookError {
        let (what, limit) = if self.increment > 0 {
            ("maximum", self.max)
        } else {
            ("minimum", self.min)
        };
        BrookError::SequenceLimit(format!(
            "nextval: reached {what} value of sequence \"{name}\" ({limit})"
        ))
    }
}

/// The values of a sequence type (22023 for a type that is not one).
fn type_range(ty: &PgType) -> Result<(i64, i64)> {
    match ty {
        PgType::Int2 => Ok((i16::MIN as i64, i16::MAX as i64)),
        PgType::Int4 => Ok((i32::MIN as i64, i32::MAX as i64)),
        PgType::Int8 => Ok((i64::MIN, i64::MAX)),
        other => Err(brook_err!(
            InvalidParameter,
            "sequence type must be smallint, integer, or bigint, not {}",
            other.name()
        )),
    }
}

/// What a sequence has handed out since the server started, and how far ahead of it the
/// catalog's record reaches.
#[derive(Debug, Clone, Copy)]
pub(super) struct Counter {
    pub(super) last_value: i64,
    pub(super) is_called: bool,
    /// Values after `last_value` the catalog (on a cluster node: this node's block of the
    /// shared counter) already covers.
    pub(super) reserved: u64,
}

impl Counter {
    /// The next `n` values of sequence `meta` (called `name`), taken from the `reserved`
    /// ones (which cover them).
    pub(super) fn hand_out(
        &mut self,
        meta: &SequenceMeta,
        name: &str,
        n: usize,
    ) -> Result<Vec<i64>> {
        let mut out = Vec::with_capacity(n);
        for _ in 0..n {
            let v = meta
                .next_after(self.last_value, self.is_called)
                .ok_or_else(|| meta.exhausted(name))?;
            self.last_value = v;
            self.is_called = true;
            out.push(v);
        }
        self.reserved -= n as u64;
        Ok(out)
    }
}

/// The counters of every sequence used since the server started, by sequence id.
#[derive(Debug, Default)]
pub struct Counters(Mutex<HashMap<u64, Counter>>);

impl Counters {
    pub(super) fn lock(&self) -> MutexGuard<'_, HashMap<u64, Counter>> {
        match self.0.lock() {
            Ok(g) => g,
            Err(p) => p.into_inner(),
        }
    }
}

/// The name of the sequence a SERIAL or identity column `column` of `table` owns:
/// `<table>_<column>_seq`, with a number appended when a relation or sequence of schema
/// `s` already has that name (as PostgreSQL chooses it).
pub fn owned_name(s: &SchemaMeta, table: &str, column: &str) -> String {
    s.free_name(&format!("{table}_{column}_seq"))
}

/// The DEFAULT of a column that takes its values from sequence `schema.name`, as
/// PostgreSQL shows it (the schema named when it is not `public`).
pub fn nextval_default(schema: &str, name: &str) -> String {
    let part = quote_if_needed;
    let qualified = if schema == super::DEFAULT_SCHEMA {
        part(name)
    } else {
        format!("{}.{}", part(schema), part(name))
    };
    format!("nextval('{}'::regclass)", qualified.replace('\'', "''"))
}

/// Find sequence `schema.name` of database `db` (42P01 when there is none, 42809 when the
/// name is another kind of relation).
pub fn find<'a>(
    doc: &'a CatalogDoc,
    db: &str,
    schema: &str,
    name: &str,
) -> Result<&'a SequenceMeta> {
    let s = doc
        .database(db)?
        .schemas
        .get(schema)
        .ok_or_else(|| BrookError::UndefinedTable(format!("{schema}.{name}")))?;
    if let Some(q) = s.sequences.get(name) {
        return Ok(q);
    }
    if s.relations.contains_key(name) {
        return Err(brook_err!(WrongObjectType, "\"{name}\" is not a sequence"));
    }
    Err(BrookError::UndefinedTable(name.into()))
}

fn set_durable(
    doc: &mut CatalogDoc,
    db: &str,
    schema: &str,
    name: &str,
    id: u64,
    last: i64,
    is_called: bool,
) -> Result<()> {
    let s = doc.schema_mut(db, schema)?;
    match s.sequences.get_mut(name) {
        Some(q) if q.id == id => {
            q.last_value = last;
            q.is_called = is_called;
            Ok(())
        }
        _ => Err(BrookError::UndefinedTable(name.into())),
    }
}

/// A sequence's state as `SELECT ... FROM sequence` shows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SequenceState {
    pub last_value: i64,
    pub log_cnt: i64,
    pub is_called: bool,
}

impl Catalog {
    /// The state of sequence `schema.name` of `db`: what has been handed out since the
    /// server started, else the recorded state (42P01 when there is no such sequence).
    pub fn sequence_state(&self, db: &str, schema: &str, name: &str) -> Result<SequenceState> {
        if let Some(shared) = self.shared_sequences() {
            return self.sequence_state_shared(shared, db, schema, name);
        }
        let counters = self.counters.lock();
        let meta = find(&self.read(), db, schema, name)?.clone();
        Ok(match counters.get(&meta.id) {
            Some(c) => SequenceState {
                last_value: c.last_value,
                log_cnt: i64::try_from(c.reserved).unwrap_or(i64::MAX),
                is_called: c.is_called,
            },
            None => SequenceState {
                last_value: meta.last_value,
                log_cnt: 0,
                is_called: meta.is_called,
            },
        })
    }

    /// The next `n` values of sequence `schema.name` of `db` (`nextval` for `n` rows).
    pub fn nextval(&self, db: &str, schema: &str, name: &str, n: usize) -> Result<Vec<i64>> {
        if let Some(shared) = self.shared_sequences() {
            let meta = find(&self.read(), db, schema, name)?.clone();
            return self.nextval_shared(shared, &meta, name, n);
        }
        refuse_in_cluster(self)?;
        let mut counters = self.counters.lock();
        let meta = find(&self.read(), db, schema, name)?.clone();
        let counter = *counters.entry(meta.id).or_insert(Counter {
            last_value: meta.last_value,
            is_called: meta.is_called,
            reserved: 0,
        });
        let mut c = counter;
        if c.reserved < n as u64 {
            // Record a state at least `n` values on (and a block more) before handing out.
            let (mut last, mut called, mut steps) = (c.last_value, c.is_called, 0u64);
            while steps < n as u64 + RESERVE_AHEAD {
                match meta.next_after(last, called) {
                    Some(v) => {
                        last = v;
                        called = true;
                        steps += 1;
                    }
                    None => break,
                }
            }
            if steps < n as u64 {
                return Err(meta.exhausted(name));
            }
            self.update(|doc| set_durable(doc, db, schema, name, meta.id, last, called))?;
            c.reserved = steps;
        }
        let out = c.hand_out(&meta, name, n)?;
        counters.insert(meta.id, c);
        Ok(out)
    }

    /// `setval`: the sequence continues after `value` (or at it when `is_called` is false),
    /// recorded durably before it returns.
    pub fn setval(
        &self,
        db: &str,
        schema: &str,
        name: &str,
        value: i64,
        is_called: bool,
    ) -> Result<SequenceMeta> {
        let meta = find(&self.read(), db, schema, name)?.clone();
        if value < meta.min || value > meta.max {
            return Err(brook_err!(
                OutOfRange,
                "setval: value {value} is out of bounds for sequence \"{name}\" ({}..{})",
                meta.min,
                meta.max
            ));
        }
        if let Some(shared) = self.shared_sequences() {
            self.setval_shared(shared, &meta, value, is_called)?;
            return Ok(meta);
        }
        refuse_in_cluster(self)?;
        let mut counters = self.counters.lock();
        self.update(|doc| set_durable(doc, db, schema, name, meta.id, value, is_called))?;
        counters.insert(
            meta.id,
            Counter {
                last_value: value,
                is_called,
                reserved: 0,
            },
        );
        Ok(meta)
    }

    /// `ALTER SEQUENCE`: `change` edits the definition (and, for RESTART, the state) in one
    /// catalog update, from the state handed out so far; the counter then starts again from
    /// the recorded state.
    pub fn alter_sequence(
        &self,
        db: &str,
        schema: &str,
        name: &str,
        change: impl FnOnce(&SequenceMeta) -> Result<SequenceMeta>,
    ) -> Result<()> {
        let mut counters = self.counters.lock();
        // The state handed out so far (not the one reserved ahead) is what the altered
        // sequence continues from, as PostgreSQL's does.
        let mut base = find(&self.read(), db, schema, name)?.clone();
        // On a cluster node the counter is shared and the catalog's state is the one every
        // node has (the change runs on each, from the log).
        if let Some(c) = counters
            .get(&base.id)
            .filter(|_| self.shared_sequences().is_none())
        {
            base.last_value = c.last_value;
            base.is_called = c.is_called;
        }
        self.update(|doc| {
            if find(doc, db, schema, name)?.id != base.id {
                return Err(BrookError::UndefinedTable(name.into()));
            }
            let next = change(&base)?;
            doc.schema_mut(db, schema)?
                .sequences
                .insert(name.to_string(), next);
            Ok(())
        })?;
        counters.remove(&base.id);
        Ok(())
    }
}

/// 0A000 on a cluster node whose sequences are not shared (a counter in one node's data
/// directory would hand out the values another node's does).
fn refuse_in_cluster(catalog: &Catalog) -> Result<()> {
    if catalog.read().cluster.is_some() {
        return Err(brook_err!(
            Unsupported,
            "sequences (nextval, setval, SERIAL and identity columns) are not supported in cluster mode yet: each node would hand out the same values"
        ));
    }
    Ok(())
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;

    /// A catalog in a temporary directory with sequence `public.s` of `ty` and options `o`.
    pub(in crate::catalog) fn with_sequence(
        o: SequenceOptions,
        ty: PgType,
    ) -> (tempfile::TempDir, Catalog) {
        let dir = tempfile::tempdir().unwrap();
        let cat = Catalog::open(dir.path()).unwrap();
        let mut meta = SequenceMeta::new(ty, &o).unwrap();
        cat.update(|doc| {
            meta.id = doc.next_id;
            doc.next_id += 1;
            let s: &mut SchemaMeta = doc.schema_mut("brook", "public")?;
            s.sequences.insert("s".into(), meta.clone());
            Ok(())
        })
        .unwrap();
        (dir, cat)
    }

    #[test]
    fn counts_from_start_by_increment() {
        let (_d, cat) = with_sequence(
            SequenceOptions {
                start: Some(10),
                increment: Some(5),
                ..Default::default()
            },
            PgType::Int8,
        );
        assert_eq!(
            cat.nextval("brook", "public", "s", 3).unwrap(),
            [10, 15, 20]
        );
        assert_eq!(cat.nextval("brook", "public", "s", 1).unwrap(), [25]);
    }

    /// After a restart (the counters lost, as in a crash), no value handed out before is
    /// handed out again.
    #[test]
    fn restart_continues_after_every_value_handed_out() {
        let (dir, cat) = with_sequence(SequenceOptions::default(), PgType::Int4);
        let before = cat.nextval("brook", "public", "s", 5).unwrap();
        drop(cat);
        let again = Catalog::open(dir.path()).unwrap();
        let after = again.nextval("brook", "public", "s", 1).unwrap();
        assert!(
            after[0] > *before.last().unwrap(),
            "{before:?} then {after:?}"
        );
    }

    #[test]
    fn stops_at_the_limit_unless_it_cycles() {
        let o = SequenceOptions {
            max: Some(3),
            ..Default::default()
        };
        let (_d, cat) = with_sequence(o.clone(), PgType::Int4);
        assert_eq!(cat.nextval("brook", "public", "s", 3).unwrap(), [1, 2, 3]);
        let err = cat.nextval("brook", "public", "s", 1).unwrap_err();
        assert_eq!(err.sqlstate(), "2200H");
        assert_eq!(
            err.to_string(),
            "nextval: reached maximum value of sequence \"s\" (3)"
        );
        let (_d, cat) = with_sequence(
            SequenceOptions {
                cycle: Some(true),
                ..o
            },
            PgType::Int4,
        );
        assert_eq!(
            cat.nextval("brook", "public", "s", 5).unwrap(),
            [1, 2, 3, 1, 2]
        );
    }

    #[test]
    fn setval_moves_the_counter_durably() {
        let (dir, cat) = with_sequence(SequenceOptions::default(), PgType::Int8);
        cat.setval("brook", "public", "s", 100, true).unwrap();
        assert_eq!(cat.nextval("brook", "public", "s", 1).unwrap(), [101]);
        cat.setval("brook", "public", "s", 7, false).unwrap();
        drop(cat);
        let again = Catalog::open(dir.path()).unwrap();
        assert_eq!(again.nextval("brook", "public", "s", 1).unwrap(), [7]);
        let err = again.setval("brook", "public", "s", 0, true).unwrap_err();
        assert_eq!(err.sqlstate(), "22003");
    }

    #[test]
    fn options_are_checked_as_postgresql_does() {
        let bad =
            |o: SequenceOptions, ty: PgType| SequenceMeta::new(ty, &o).unwrap_err().to_string();
        assert_eq!(
            bad(
                SequenceOptions {
                    increment: Some(0),
                    ..Default::default()
                },
                PgType::Int8
            ),
            "INCREMENT must not be zero"
        );
        assert_eq!(
            bad(
                SequenceOptions {
                    max: Some(40_000),
                    ..Default::default()
                },
                PgType::Int2
            ),
            "MAXVALUE (40000) is out of range for sequence data type smallint"
        );
        let down = SequenceMeta::new(
            PgType::Int4,
            &SequenceOptions {
                increment: Some(-1),
                ..Default::default()
            },
        )
        .unwrap();
        assert_eq!((down.min, down.max, down.start), (i32::MIN as i64, -1, -1));
    }
}
