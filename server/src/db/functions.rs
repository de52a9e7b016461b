//! The user functions of a database (`CREATE FUNCTION ... LANGUAGE sql | javascript`) and its user
//! aggregates (`CREATE AGGREGATE`), planned against its context: registered there (for new
//! sessions and materialized views) and handed to the sessions already connected, which
//! register them before their next statement.

use super::{lock, Database, Engine};
use crate::catalog::aggregate::AggregateMeta;
use crate::catalog::function::FunctionMeta;
use brook_common::Result;
use datafusion::logical_expr::{AggregateUDF, ScalarUDF};
use std::collections::BTreeMap;
use std::sync::Arc;

/// A database's planned user functions and aggregates and their version (bumped by every
/// change).
#[derive(Debug, Default)]
pub struct UserFunctions {
    pub version: u64,
    pub udfs: Vec<Arc<ScalarUDF>>,
    pub udafs: Vec<Arc<AggregateUDF>>,
}

/// Which functions are STRICT: user functions as declared, built-in ones as PostgreSQL
/// declares them (most are; [`NOT_STRICT`] are not).
pub struct Strictness(BTreeMap<String, bool>);

/// PostgreSQL's built-in functions that are not STRICT (`proisstrict` false in `pg_proc`)
/// and may be a transition function: called with NULL arguments, and with a NULL state when
/// there is no INITCOND (`SFUNC = array_append` collects NULLs, as in PostgreSQL).
const NOT_STRICT: [&str; 17] = [
    "array_append",
    "array_cat",
    "array_position",
    "array_positions",
    "array_prepend",
    "array_remove",
    "array_replace",
    "array_to_string",
    "concat",
    "concat_ws",
    "format",
    "json_build_array",
    "json_build_object",
    "jsonb_build_array",
    "jsonb_build_object",
    "num_nonnulls",
    "num_nulls",
];

impl Strictness {
    /// The user functions of `db` as declared.
    pub fn of(db: &crate::catalog::DatabaseMeta) -> Self {
        Strictness(
            db.schemas
                .values()
                .flat_map(|s| s.functions.iter().map(|(n, f)| (n.clone(), f.strict)))
                .collect(),
        )
    }
}

impl crate::udf::sql_aggregate::FunctionStrictness for Strictness {
    fn is_strict(&self, name: &str) -> bool {
        match self.0.get(name) {
            Some(strict) => *strict,
            None => !NOT_STRICT.contains(&name.to_ascii_lowercase().as_str()),
        }
    }
}

impl Engine {
    /// Plan every user function and aggregate of `db` again — after CREATE or DROP
    /// FUNCTION or AGGREGATE, or when the database opens — and register them in its context.
    /// A body may call another user function, so they are planned in rounds until no more
    /// plan; aggregates come last (their functions may be user functions). One that no
    /// longer plans (a function it called was dropped) is left out and logged.
    pub fn refresh_functions(&self, db: &Database) -> Result<()> {
        let (mut pending, aggregates, strictness) = {
            let doc = self.catalog.read();
            let meta = doc.database(&db.name)?;
            let functions: Vec<(String, FunctionMeta)> = meta
                .schemas
                .values()
                .flat_map(|s| s.functions.iter().map(|(n, f)| (n.clone(), f.clone())))
                .collect();
            let aggregates: Vec<(String, AggregateMeta)> = meta
                .schemas
                .values()
                .flat_map(|s| s.aggregates.iter().map(|(n, a)| (n.clone(), a.clone())))
                .collect();
            (functions, aggregates, Strictness::of(meta))
        };
        let mut current = lock(&db.user_functions);
        for old in &current.udfs {
            db.ctx.deregister_udf(old.name());
        }
        for old in &current.udafs {
            db.ctx.deregister_udaf(old.name());
        }
        let mut planned = Vec::new();
        let mut failures = Vec::new();
        loop {
            let before = pending.len();
            let state = db.ctx.state();
            failures.clear();
            pending.retain(|(name, meta)| {
                match crate::udf::plan_user_function(name, meta, &state) {
                    Ok(udf) => {
                        let udf = Arc::new(udf);
                        db.ctx.register_udf(udf.as_ref().clone());
                        planned.push(udf);
                        false
                    }
                    Err(e) => {
                        failures.push(format!("{}: {e}", meta.signature(name)));
                        true
                    }
                }
            });
            if pending.is_empty() || pending.len() == before {
                break;
            }
        }
        let state = db.ctx.state();
        let mut planned_aggregates = Vec::new();
        for (name, meta) in &aggregates {
            match crate::udf::sql_aggregate::plan(name, meta, &state, &strictness) {
                Ok(udaf) => {
                    let udaf = Arc::new(udaf);
                    db.ctx.register_udaf(udaf.as_ref().clone());
                    planned_aggregates.push(udaf);
                }
                Err(e) => failures.push(format!("aggregate {}: {e}", meta.signature(name))),
            }
        }
        for f in &failures {
            tracing::warn!(database = %db.name, "function left out: {f}");
        }
        current.version += 1;
        current.udfs = planned;
        current.udafs = planned_aggregates;
        Ok(())
    }
}

impl Database {
    /// The planned user functions and aggregates and their version.
    pub fn user_functions(&self) -> (u64, Vec<Arc<ScalarUDF>>, Vec<Arc<AggregateUDF>>) {
        let f = lock(&self.user_functions);
        (f.version, f.udfs.clone(), f.udafs.clone())
    }
}
