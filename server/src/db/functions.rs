//! The user functions of a database (`CREATE FUNCTION ... LANGUAGE SQL`), planned against
//! its context: registered there (for new sessions and materialized views) and handed to
//! the sessions already connected, which register them before their next statement.

use super::{lock, Database, Engine};
use crate::catalog::function::FunctionMeta;
use brook_common::Result;
use datafusion::logical_expr::ScalarUDF;
use std::sync::Arc;

/// A database's planned user functions and their version (bumped by every change).
#[derive(Debug, Default)]
pub struct UserFunctions {
    pub version: u64,
    pub udfs: Vec<Arc<ScalarUDF>>,
}

impl Engine {
    /// Plan every user function of `db` again — after CREATE or DROP FUNCTION, or when the
    /// database opens — and register them in its context. A body may call another user
    /// function, so they are planned in rounds until no more plan; one whose body no longer
    /// plans (a function it called was dropped) is left out and logged.
    pub fn refresh_functions(&self, db: &Database) -> Result<()> {
        let mut pending: Vec<(String, FunctionMeta)> = {
            let doc = self.catalog.read();
            doc.database(&db.name)?
                .schemas
                .values()
                .flat_map(|s| s.functions.iter().map(|(n, f)| (n.clone(), f.clone())))
                .collect()
        };
        let mut current = lock(&db.user_functions);
        for old in &current.udfs {
            db.ctx.deregister_udf(old.name());
        }
        let mut planned = Vec::new();
        let mut failures = Vec::new();
        loop {
            let before = pending.len();
            let state = db.ctx.state();
            failures.clear();
            pending.retain(|(name, meta)| {
                match crate::udf::sql_function::plan(name, meta, &state) {
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
        for f in &failures {
            tracing::warn!(database = %db.name, "function left out: {f}");
        }
        current.version += 1;
        current.udfs = planned;
        Ok(())
    }
}

impl Database {
    /// The planned user functions and their version.
    pub fn user_functions(&self) -> (u64, Vec<Arc<ScalarUDF>>) {
        let f = lock(&self.user_functions);
        (f.version, f.udfs.clone())
    }
}
