//! An open transaction block's state (BEGIN ... COMMIT, or an implicit one): the relations it wrote, each with
//! its open storage transaction, its savepoints, and whether a statement failed in it. What
//! BEGIN, COMMIT, ROLLBACK and SAVEPOINT do with it is in `crate::handler::transaction`.

use crate::catalog::RelationMeta;
use crate::storage::{TxnMark, TxnSlot};
use std::collections::BTreeMap;

/// A transaction block.
#[derive(Default)]
pub struct TxnBlock {
    /// The relations written so far, by id.
    pub(crate) writes: BTreeMap<u64, Held>,
    /// A statement failed: the block only rolls back (25P02 for anything but its end).
    pub(crate) failed: bool,
    /// The implicit transaction of a multi-statement query string, or of the extended
    /// protocol's statements up to Sync (no BEGIN: it ends with them; see
    /// `crate::handler::implicit`).
    pub(crate) implicit: bool,
    /// That implicit transaction is a query string's of several statements (not the
    /// extended protocol's up to Sync, which may hold one statement only).
    pub(crate) multi_statement: bool,
    /// Savepoints, oldest first.
    pub(crate) savepoints: Vec<Savepoint>,
    /// READ ONLY: statements that write are refused (25006).
    pub(crate) read_only: bool,
    /// A statement other than the block's own control ran in it (READ WRITE comes too late).
    pub(crate) queried: bool,
    /// The value of each setting given by a plain SET in the block (what a SET LOCAL of it
    /// goes back to at COMMIT).
    pub(crate) session_values: BTreeMap<String, String>,
    /// The session's settings when the block began: a ROLLBACK restores them, a COMMIT
    /// those set with SET LOCAL.
    pub(crate) settings_before: BTreeMap<String, String>,
    /// Settings set with SET LOCAL in the block.
    pub(crate) local: std::collections::BTreeSet<String>,
    /// Relations written in the block whose rows committed with each statement (streams;
    /// every relation in cluster mode).
    pub(crate) committed_early: std::collections::BTreeSet<String>,
    /// The block's commit id, under which its statements' catalog changes are recorded
    /// (`catalog::undo`); taken by its first statement.
    pub(crate) journal: Option<u64>,
}

/// A relation the block wrote: its open transaction (in its slot between statements, lent
/// to the statement running on it), and the definition it was written against.
pub(crate) struct Held {
    pub(crate) slot: TxnSlot,
    pub(crate) meta: RelationMeta,
    pub(crate) name: String,
}

/// A SAVEPOINT: where each relation written before it was. Relations first written after
/// it are let go on ROLLBACK TO it.
pub(crate) struct Savepoint {
    pub(crate) name: String,
    pub(crate) marks: Vec<(u64, TxnMark)>,
    /// The session's settings at the savepoint.
    pub(crate) settings: BTreeMap<String, String>,
    /// Whether the block was READ ONLY then.
    pub(crate) read_only: bool,
    /// How many catalog changes the block had made then.
    pub(crate) ddl_len: usize,
}
