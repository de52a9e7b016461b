//! Temporary tables and views (`CREATE TEMP TABLE`, `CREATE TEMP VIEW`), as PostgreSQL has
//! them: each session's live in its own schema `pg_temp_<pid>`, are found before other
//! relations of the same name, are not visible to other sessions (0A000 when named), and
//! go away when the session ends (or at `DISCARD TEMP` / `DISCARD ALL`).
//!
//! A temporary relation is an ordinary relation of that schema, so every statement works
//! on it as on any table. Unqualified names reach it as any name along `search_path` does
//! (`session/search_path.rs`): the temporary schema is the first looked in. After a crash the next
//! start drops every `pg_temp_*` schema before anyone connects (`Engine::database`), as
//! PostgreSQL empties temporary schemas: their rows were never meant to outlive the
//! session.

use crate::session::Session;
use brook_common::{brook_err, BrookError, Result};

pub use crate::catalog::{is_temp_schema, TEMP_SCHEMA_PREFIX};

impl Session {
    /// This session's temporary schema's name (whether or not it exists yet).
    pub(crate) fn temp_schema_name(&self) -> String {
        format!("{TEMP_SCHEMA_PREFIX}{}", self.pid)
    }

    /// This session's temporary schema, created on first use; 0A000 in cluster mode
    /// (relations there are the cluster's, not one connection's).
    pub(crate) fn temp_schema(&mut self) -> Result<String> {
        if self.engine.cluster.get().is_some() || self.pid == 0 {
            return Err(brook_err!(
                Unsupported,
                "temporary tables and views in cluster mode (create a table and drop it \
                 when done)"
            ));
        }
        let name = self.temp_schema_name();
        if !self.has_temp_schema {
            // A schema of this name left by an earlier server run was dropped at start;
            // one left by an earlier connection of this pid went with that connection.
            self.engine.create_temp_schema(&self.db, &name)?;
            self.has_temp_schema = true;
            self.set_temp_slot(Some(name.clone()));
        }
        Ok(name)
    }

    fn set_temp_slot(&self, schema: Option<String>) {
        if let Ok(mut slot) = self.temp_schema_slot.lock() {
            *slot = schema;
        }
    }

    /// The schema a qualifier names: `pg_temp` is this session's temporary schema; 0A000
    /// for another session's.
    pub(crate) fn schema_named(&self, schema: &str) -> Result<String> {
        if schema == "pg_temp" {
            return Ok(self.temp_schema_name());
        }
        if is_temp_schema(schema) && schema != self.temp_schema_name() {
            return Err(brook_err!(
                Unsupported,
                "cannot access temporary tables of other sessions"
            ));
        }
        Ok(schema.to_string())
    }

    /// `DROP SCHEMA pg_temp_<pid>`: this session's is dropped as at `DISCARD TEMP` (and
    /// made again by the next temporary table); another session's is 0A000. None for a
    /// schema that is no temporary schema.
    pub(crate) fn drop_schema_if_temp(&mut self, schema: &str) -> Option<Result<()>> {
        let schema = match self.schema_named(schema) {
            Ok(s) => s,
            Err(e) => return Some(Err(e)),
        };
        (schema == self.temp_schema_name()).then(|| self.drop_temp_schema())
    }

    /// Drop this session's temporary schema and everything in it (the session ends, or
    /// `DISCARD TEMP`).
    pub(crate) fn drop_temp_schema(&mut self) -> Result<()> {
        if !self.has_temp_schema {
            return Ok(());
        }
        self.has_temp_schema = false;
        self.set_temp_slot(None);
        let name = self.temp_schema_name();
        self.engine.drop_schema(&self.db, &name, true, true)?;
        Ok(())
    }
}

/// A `BrookError` for a materialized view or synopsis over a temporary relation, or in a
/// temporary schema (`nouns` is the plural).
pub fn temp_in_maintained(noun: &str, nouns: &str) -> BrookError {
    brook_err!(
        Unsupported,
        "{nouns} must not use temporary tables or views (a {noun} is kept by the server \
         beyond any one connection)"
    )
}

/// 0A000 for a function or aggregate created in a temporary schema: Brook's functions are
/// the database's, found by every session (PostgreSQL never finds a `pg_temp` function
/// unqualified; Brook would let one session's shadow another's).
pub fn refuse_temp_routine(schema: &str) -> Result<()> {
    if is_temp_schema(schema) {
        return Err(brook_err!(
            Unsupported,
            "functions and aggregates in a temporary schema (create it in a schema of the \
             database)"
        ));
    }
    Ok(())
}
