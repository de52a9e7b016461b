//! Transaction control: a transaction's end closes the cursors not declared WITH HOLD.
//! (BEGIN, SAVEPOINT and RELEASE only answer: each statement commits on its own.) And
//! `LOCK TABLE` in the modes that only keep a table from being dropped or altered.

use crate::session::{Outcome, Session};
use brook_common::{brook_err, BrookError, Result};
use datafusion::sql::sqlparser::ast::{Lock, LockTableMode};

impl Session {
    /// COMMIT or ROLLBACK (`tag`): close the cursors not declared WITH HOLD.
    pub(crate) fn end_transaction(&mut self, tag: &str) -> Outcome {
        self.cursors.retain(|_, c| c.hold);
        Outcome::TxnEnd(tag.into())
    }

    /// `LOCK TABLE t IN ACCESS SHARE MODE` (what pg_dump takes on every table it dumps) and
    /// `ROW SHARE`: the tables must exist (42P01). These modes conflict only with DDL, and
    /// Brook takes no lock for them: a table dropped while pg_dump reads it ends the dump
    /// with 42P01 rather than with wrong data. Modes that would hold writers back are
    /// refused (0A000): accepting them without blocking anyone would be a silent promise.
    pub(crate) fn lock_tables(&self, lock: Lock) -> Result<Outcome> {
        match &lock.lock_mode {
            Some(LockTableMode::AccessShare | LockTableMode::RowShare) => {}
            other => {
                let mode = other
                    .as_ref()
                    .map_or("ACCESS EXCLUSIVE".to_string(), |m| m.to_string());
                return Err(brook_err!(
                    Unsupported,
                    "LOCK TABLE ... IN {mode} MODE (Brook takes no table locks that hold writers back; ACCESS SHARE and ROW SHARE are accepted)"
                ));
            }
        }
        for target in &lock.tables {
            let (schema, name) = self.resolve(&target.name)?;
            let doc = self.engine.catalog.read();
            let exists = doc
                .database(&self.db.name)?
                .schemas
                .get(&schema)
                .is_some_and(|s| s.relations.contains_key(&name));
            if !exists {
                return Err(BrookError::UndefinedTable(name));
            }
        }
        Ok(Outcome::Command("LOCK TABLE".into()))
    }
}
