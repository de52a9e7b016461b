//! Transactional DDL: the catalog changes an open transaction block made, kept in the
//! catalog document itself (`CatalogDoc::pending`, by the block's commit id) so that
//! ROLLBACK, a failed block, a closed connection and a crash all undo them.
//!
//! A statement of a block runs [`journaled`]: each catalog update it makes records, in the
//! same atomic write of `catalog.json`, the entries it changed with their values before and
//! after. The block's COMMIT records its decision (`storage::decisions`, the commit point
//! its row writes share), then forgets the changes; ROLLBACK (or ROLLBACK TO SAVEPOINT)
//! puts the entries back as they were, newest first. At startup a block with changes but
//! no decision never committed: its changes are undone before anything reads the catalog.
//!
//! Entries are a schema's own row (its existence), and each relation, index, sequence,
//! function and aggregate by name. Databases are not entries: CREATE and DROP DATABASE run
//! only outside blocks. A sequence's counter is no part of its entry: values handed out
//! stay handed out, as PostgreSQL's `nextval` is never rolled back. A session's temporary
//! schema is no entry either (its tables are): it stays the session's until it ends.

use super::{CatalogDoc, IndexMeta, RelationMeta, SchemaMeta};
use crate::catalog::aggregate::AggregateMeta;
use crate::catalog::function::FunctionMeta;
use crate::catalog::sequence::SequenceMeta;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};

tokio::task_local! {
    /// The commit id of the block whose statement runs in this task.
    static JOURNAL: u64;
}

/// Run `statement` with its catalog changes recorded as block `block`'s.
pub async fn journaled<F: std::future::Future>(block: u64, statement: F) -> F::Output {
    JOURNAL.scope(block, statement).await
}

/// The block whose catalog changes the running statement records, if any.
pub fn journal() -> Option<u64> {
    JOURNAL.try_with(|b| *b).ok()
}

/// What kind of catalog entry a [`Change`] is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum EntryKind {
    Schema,
    Relation,
    Index,
    Sequence,
    Function,
    Aggregate,
}

/// An entry's value.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum Entry {
    /// A schema exists (its entries are entries of their own).
    Schema,
    Relation(RelationMeta),
    Index(IndexMeta),
    Sequence(SequenceMeta),
    Function(FunctionMeta),
    Aggregate(AggregateMeta),
}

/// One entry changed by a statement of a block: its value before and after (None: absent).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Change {
    pub db: String,
    pub schema: String,
    pub kind: EntryKind,
    /// Empty for a schema's own entry.
    pub name: String,
    pub before: Option<Entry>,
    pub after: Option<Entry>,
}

/// The entries that differ between `before` and `after`, in an order that undoes cleanly
/// backwards: schemas that appear first, then the entries, then schemas that go.
pub fn diff(before: &CatalogDoc, after: &CatalogDoc) -> Vec<Change> {
    let mut appeared = Vec::new();
    let mut entries = Vec::new();
    let mut gone = Vec::new();
    for (db, before_db) in &before.databases {
        let Some(after_db) = after.databases.get(db) else {
            continue;
        };
        let (b, a) = (&before_db.schemas, &after_db.schemas);
        if a == b {
            continue;
        }
        for schema in b.keys().chain(a.keys()).collect::<BTreeSet<_>>() {
            let (bs, as_) = (b.get(schema), a.get(schema));
            if bs == as_ {
                continue;
            }
            let temporary = bs.or(as_).is_some_and(|s| s.temporary);
            let change = |kind, name: &str, before, after| Change {
                db: db.clone(),
                schema: schema.clone(),
                kind,
                name: name.to_string(),
                before,
                after,
            };
            match (bs.is_some(), as_.is_some()) {
                (false, true) if !temporary => {
                    appeared.push(change(EntryKind::Schema, "", None, Some(Entry::Schema)))
                }
                (true, false) if !temporary => {
                    gone.push(change(EntryKind::Schema, "", Some(Entry::Schema), None))
                }
                _ => {}
            }
            let none = SchemaMeta::default();
            let (bs, as_) = (bs.unwrap_or(&none), as_.unwrap_or(&none));
            let mut push = |kind, name: &str, before, after| {
                entries.push(change(kind, name, before, after));
            };
            diff_map(
                &bs.relations,
                &as_.relations,
                EntryKind::Relation,
                Entry::Relation,
                &mut push,
            );
            diff_map(
                &bs.indexes,
                &as_.indexes,
                EntryKind::Index,
                Entry::Index,
                &mut push,
            );
            diff_map(
                &bs.sequences,
                &as_.sequences,
                EntryKind::Sequence,
                Entry::Sequence,
                &mut push,
            );
            diff_map(
                &bs.functions,
                &as_.functions,
                EntryKind::Function,
                Entry::Function,
                &mut push,
            );
            diff_map(
                &bs.aggregates,
                &as_.aggregates,
                EntryKind::Aggregate,
                Entry::Aggregate,
                &mut push,
            );
        }
    }
    appeared.into_iter().chain(entries).chain(gone).collect()
}

/// Push (kind, name, before, after) for each entry of one kind that differs.
fn diff_map<T: Clone + PartialEq>(
    before: &BTreeMap<String, T>,
    after: &BTreeMap<String, T>,
    kind: EntryKind,
    wrap: fn(T) -> Entry,
    push: &mut impl FnMut(EntryKind, &str, Option<Entry>, Option<Entry>),
) {
    for name in before.keys().chain(after.keys()).collect::<BTreeSet<_>>() {
        let (b, a) = (before.get(name), after.get(name));
        if b == a {
            continue;
        }
        let (b, a) = (b.cloned().map(wrap), a.cloned().map(wrap));
        if !same_definition(b.as_ref(), a.as_ref()) {
            push(kind, name, b, a);
        }
    }
}

/// Whether two values of an entry are one definition (a sequence's counter aside).
fn same_definition(a: Option<&Entry>, b: Option<&Entry>) -> bool {
    match (a, b) {
        (Some(Entry::Sequence(x)), Some(Entry::Sequence(y))) => x == &with_counter(y.clone(), x),
        _ => a == b,
    }
}

/// `seq` with the counter (the values handed out) of `from`.
fn with_counter(mut seq: SequenceMeta, from: &SequenceMeta) -> SequenceMeta {
    seq.last_value = from.last_value;
    seq.is_called = from.is_called;
    seq.epoch = from.epoch;
    seq
}

/// Put each entry of `changes` back as it was before them, newest first. A sequence put
/// back keeps the counter it has now. A name another session's relation holds now (it
/// created one there after the block dropped or renamed its own) is left to it: that
/// relation committed, and the block's is not put over it.
pub fn undo(doc: &mut CatalogDoc, changes: &[Change]) {
    for c in changes.iter().rev() {
        if let Some(other) = taken_by_another(doc, c) {
            tracing::warn!(relation = %format!("{}.{}", c.schema, c.name), id = other, "a rolled-back block's relation is not put back: another session's relation has its name now");
            continue;
        }
        let Some(db) = doc.databases.get_mut(&c.db) else {
            continue;
        };
        if c.kind == EntryKind::Schema {
            match c.before {
                Some(_) => {
                    db.schemas.entry(c.schema.clone()).or_default();
                }
                None => {
                    db.schemas.remove(&c.schema);
                }
            }
            continue;
        }
        let s = db.schemas.entry(c.schema.clone()).or_default();
        let name = c.name.clone();
        match c.before.clone() {
            None => {
                match c.kind {
                    EntryKind::Relation => s.relations.remove(&name).map(|_| ()),
                    EntryKind::Index => s.indexes.remove(&name).map(|_| ()),
                    EntryKind::Sequence => s.sequences.remove(&name).map(|_| ()),
                    EntryKind::Function => s.functions.remove(&name).map(|_| ()),
                    EntryKind::Aggregate => s.aggregates.remove(&name).map(|_| ()),
                    EntryKind::Schema => None,
                };
            }
            Some(Entry::Relation(m)) => {
                s.relations.insert(name, m);
            }
            Some(Entry::Index(m)) => {
                s.indexes.insert(name, m);
            }
            Some(Entry::Sequence(m)) => {
                let m = match s.sequences.get(&name) {
                    Some(now) => with_counter(m, now),
                    None => m,
                };
                s.sequences.insert(name, m);
            }
            Some(Entry::Function(m)) => {
                s.functions.insert(name, m);
            }
            Some(Entry::Aggregate(m)) => {
                s.aggregates.insert(name, m);
            }
            Some(Entry::Schema) => {}
        }
    }
}

/// The id of the relation named as `c`'s that is neither the one before `c` nor the one
/// after it, if one is.
fn taken_by_another(doc: &CatalogDoc, c: &Change) -> Option<u64> {
    if c.kind != EntryKind::Relation {
        return None;
    }
    let now = doc
        .databases
        .get(&c.db)?
        .schemas
        .get(&c.schema)?
        .relations
        .get(&c.name)?;
    let ours = [&c.before, &c.after]
        .into_iter()
        .any(|e| matches!(e, Some(Entry::Relation(m)) if m.id == now.id));
    (!ours).then_some(now.id)
}

/// The relations `changes` name with their id: each as (id, database) once, from the
/// values before and after.
pub fn relation_ids(changes: &[Change]) -> BTreeSet<(u64, String)> {
    changes
        .iter()
        .flat_map(|c| [&c.before, &c.after].into_iter().map(move |e| (c, e)))
        .filter_map(|(c, e)| match e {
            Some(Entry::Relation(m)) => Some((m.id, c.db.clone())),
            _ => None,
        })
        .collect()
}

/// The relation the uncommitted block `block` created with id `id`, if one did.
pub fn created_by(doc: &CatalogDoc, id: u64) -> Option<u64> {
    doc.pending.iter().find_map(|(block, changes)| {
        changes
            .iter()
            .any(|c| {
                c.before.is_none() && matches!(&c.after, Some(Entry::Relation(m)) if m.id == id)
            })
            .then_some(*block)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::{RelKind, DEFAULT_DATABASE, DEFAULT_SCHEMA};

    fn table(id: u64) -> RelationMeta {
        RelationMeta {
            id,
            kind: RelKind::Table,
            columns: Vec::new(),
            primary_key: Vec::new(),
            watermark: None,
            options: BTreeMap::new(),
            query: None,
            depends_on: Vec::new(),
            comment: None,
        }
    }

    fn public(doc: &mut CatalogDoc) -> &mut SchemaMeta {
        doc.schema_mut(DEFAULT_DATABASE, DEFAULT_SCHEMA).unwrap()
    }

    /// Changes made one update after another are undone back to the first state.
    #[test]
    fn undo_puts_every_entry_back() {
        let mut doc = CatalogDoc::default();
        public(&mut doc).relations.insert("kept".into(), table(1));
        public(&mut doc)
            .relations
            .insert("dropped".into(), table(2));
        let start = doc.clone();
        let mut changes = Vec::new();
        let mut step = |doc: &mut CatalogDoc, f: &dyn Fn(&mut CatalogDoc)| {
            let before = doc.clone();
            f(doc);
            changes.extend(diff(&before, doc));
        };
        step(&mut doc, &|d| {
            public(d).relations.remove("dropped");
        });
        step(&mut doc, &|d| {
            d.databases
                .get_mut(DEFAULT_DATABASE)
                .unwrap()
                .schemas
                .insert("s".into(), SchemaMeta::default());
            d.schema_mut(DEFAULT_DATABASE, "s")
                .unwrap()
                .relations
                .insert("new".into(), table(3));
        });
        step(&mut doc, &|d| {
            let mut m = table(1);
            m.comment = Some("altered".into());
            public(d).relations.insert("kept".into(), m);
        });
        assert_eq!(changes.len(), 4, "{changes:?}");
        assert_eq!(
            changes[1].kind,
            EntryKind::Schema,
            "a new schema comes first"
        );
        undo(&mut doc, &changes);
        assert_eq!(doc, start);
    }

    /// A sequence's counter is not a change, and a sequence put back keeps its counter.
    #[test]
    fn sequence_counters_are_not_undone() {
        let seq = SequenceMeta {
            id: 5,
            ty: crate::pg::types::PgType::Int8,
            start: 1,
            increment: 1,
            min: 1,
            max: i64::MAX,
            cache: 1,
            cycle: false,
            owned_by: None,
            last_value: 1,
            is_called: false,
            epoch: 0,
        };
        let mut doc = CatalogDoc::default();
        public(&mut doc).sequences.insert("q".into(), seq.clone());
        let before = doc.clone();
        public(&mut doc).sequences.get_mut("q").unwrap().last_value = 40;
        assert!(diff(&before, &doc).is_empty());
        let before = doc.clone();
        public(&mut doc).sequences.get_mut("q").unwrap().increment = 7;
        let changes = diff(&before, &doc);
        public(&mut doc).sequences.get_mut("q").unwrap().last_value = 90;
        undo(&mut doc, &changes);
        let q = &public(&mut doc).sequences["q"];
        assert_eq!((q.increment, q.last_value), (1, 90));
    }

    /// A name another session took after the block dropped its relation stays theirs.
    #[test]
    fn undo_leaves_another_sessions_relation_in_place() {
        let mut doc = CatalogDoc::default();
        public(&mut doc).relations.insert("t".into(), table(1));
        let before = doc.clone();
        public(&mut doc).relations.remove("t");
        let changes = diff(&before, &doc);
        public(&mut doc).relations.insert("t".into(), table(2));
        undo(&mut doc, &changes);
        assert_eq!(public(&mut doc).relations["t"].id, 2);
    }

    #[test]
    fn created_by_names_the_block() {
        let mut doc = CatalogDoc::default();
        let before = doc.clone();
        public(&mut doc).relations.insert("t".into(), table(9));
        let changes = diff(&before, &doc);
        doc.pending.insert(77, changes.clone());
        assert_eq!(created_by(&doc, 9), Some(77));
        assert_eq!(created_by(&doc, 8), None);
        assert_eq!(
            relation_ids(&changes),
            BTreeSet::from([(9, DEFAULT_DATABASE.to_string())])
        );
    }
}
