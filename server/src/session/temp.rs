//! Temporary tables and views (`CREATE TEMP TABLE`, `CREATE TEMP VIEW`), as PostgreSQL has
//! them: each session's live in its own schema `pg_temp_<pid>`, are found before other
//! relations of the same name, are not visible to other sessions (0A000 when named), and
//! go away when the session ends (or at `DISCARD TEMP` / `DISCARD ALL`).
//!
//! A temporary relation is an ordinary relation of that schema, so every statement works
//! on it as on any table. Unqualified names reach it two ways: Brook's own name resolution
//! ([`Session::resolve`]) looks in the temporary schema first, and before DataFusion plans
//! a statement [`Session::qualify_temp_relations`] qualifies each relation name that is a
//! temporary relation (a CTE of the same name keeps its name). After a crash the next
//! start drops every `pg_temp_*` schema before anyone connects (`Engine::database`), as
//! PostgreSQL empties temporary schemas: their rows were never meant to outlive the
//! session.

use crate::session::Session;
use brook_common::{brook_err, BrookError, Result};
use datafusion::sql::sqlparser::ast::{
    visit_relations_mut, Ident, ObjectName, ObjectNamePart, Query, Statement, Visit, Visitor,
};
use std::collections::HashSet;
use std::ops::ControlFlow;

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

    /// Whether `name` is a relation, sequence or index in this session's temporary schema.
    pub(crate) fn is_temp_relation(&self, name: &str) -> bool {
        if !self.has_temp_schema {
            return false;
        }
        let doc = self.engine.catalog.read();
        doc.database(&self.db.name)
            .ok()
            .and_then(|d| d.schemas.get(&self.temp_schema_name()))
            .is_some_and(|s| s.name_taken(name))
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

    /// Qualify the relation names of `stmt` that DataFusion will look up: a bare name of a
    /// temporary relation gets this session's temporary schema, `pg_temp.x` too; another
    /// session's temporary schema is 0A000. Names a statement creates, drops or alters are
    /// resolved by [`Session::resolve`] instead, so only queries are rewritten in them.
    pub(crate) fn qualify_temp_relations(&self, stmt: &mut Statement) -> Result<()> {
        match stmt {
            Statement::CreateTable(ct) => match ct.query.as_mut() {
                Some(q) => self.qualify_in_query(q),
                None => Ok(()),
            },
            Statement::CreateView(cv) => self.qualify_in_query(&mut cv.query),
            Statement::Drop { .. }
            | Statement::AlterTable(_)
            | Statement::Truncate(_)
            | Statement::CreateIndex(_)
            | Statement::Comment { .. } => Ok(()),
            other => self.qualify(other),
        }
    }

    fn qualify_in_query(&self, q: &mut Query) -> Result<()> {
        let mut stmt = Statement::Query(Box::new(q.clone()));
        self.qualify(&mut stmt)?;
        if let Statement::Query(rewritten) = stmt {
            *q = *rewritten;
        }
        Ok(())
    }

    fn qualify<V: datafusion::sql::sqlparser::ast::VisitMut + Visit>(
        &self,
        node: &mut V,
    ) -> Result<()> {
        // Only a session with temporary relations has bare names to qualify.
        let ctes = if self.has_temp_schema {
            cte_names(node)
        } else {
            HashSet::new()
        };
        let temp = self.temp_schema_name();
        let flow = visit_relations_mut(node, |name| {
            let parts: Vec<String> = name
                .0
                .iter()
                .filter_map(|p| p.as_ident().map(crate::ident::ident_name))
                .collect();
            match parts.as_slice() {
                [rel] if !ctes.contains(rel) && self.is_temp_relation(rel) => {
                    *name = qualified(&temp, rel);
                }
                [schema, rel] => match self.schema_named(schema) {
                    Ok(s) if s != *schema => *name = qualified(&s, rel),
                    Ok(_) => {}
                    Err(e) => return ControlFlow::Break(e),
                },
                _ => {}
            }
            ControlFlow::Continue(())
        });
        match flow {
            ControlFlow::Break(e) => Err(e),
            ControlFlow::Continue(()) => Ok(()),
        }
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

fn qualified(schema: &str, rel: &str) -> ObjectName {
    ObjectName(vec![
        ObjectNamePart::Identifier(Ident::with_quote('"', schema)),
        ObjectNamePart::Identifier(Ident::with_quote('"', rel)),
    ])
}

/// The names of every CTE the statement defines (a reference of that name is the CTE's).
fn cte_names<V: Visit>(node: &V) -> HashSet<String> {
    struct Ctes(HashSet<String>);
    impl Visitor for Ctes {
        type Break = ();
        fn pre_visit_query(&mut self, q: &Query) -> ControlFlow<()> {
            if let Some(with) = &q.with {
                for cte in &with.cte_tables {
                    self.0.insert(crate::ident::ident_name(&cte.alias.name));
                }
            }
            ControlFlow::Continue(())
        }
    }
    let mut ctes = Ctes(HashSet::new());
    let _ = node.visit(&mut ctes);
    ctes.0
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
