//! CREATE SCHEMA and CREATE DATABASE.

use crate::ident::object_parts;
use crate::session::{Notice, Outcome, Session};
use brook_common::{brook_err, BrookError, Result};
use datafusion::sql::sqlparser::ast::{ObjectName, SchemaName};

impl Session {
    /// CREATE SCHEMA name.
    pub(crate) fn create_schema(
        &mut self,
        schema_name: &SchemaName,
        if_not_exists: bool,
    ) -> Result<Outcome> {
        let name = match schema_name {
            SchemaName::Simple(n) => object_parts(n)?.join("."),
            other => return Err(brook_err!(Unsupported, "CREATE SCHEMA {other}")),
        };
        if name.starts_with("pg_") {
            return Err(BrookError::Semantic {
                message: format!(
                    "unacceptable schema name \"{name}\" (the prefix \"pg_\" is reserved for \
                     system schemas)"
                ),
                code: "42939",
            });
        }
        if !self.engine.create_schema(&self.db, &name, if_not_exists)? {
            self.notices.push(Notice::skipped(
                "42P06",
                format!("schema \"{name}\" already exists"),
            ));
        }
        Ok(Outcome::Command("CREATE SCHEMA".into()))
    }

    /// CREATE DATABASE name, with the locale its options asked for (`LOCALE`, `LC_COLLATE`,
    /// ...: `brook_planner::create_database`).
    pub(crate) fn create_database(
        &mut self,
        db_name: &ObjectName,
        if_not_exists: bool,
        locale: Option<String>,
    ) -> Result<Outcome> {
        let name = object_parts(db_name)?.join(".");
        if let Some(locale) = locale.filter(|l| !is_c_locale(l)) {
            self.notices.push(Notice::from(format!(
                "database \"{name}\" compares and sorts text as the C locale does (by code \
                 point), not as \"{locale}\": Brook has no other collation"
            )));
        }
        if !self.engine.create_database(&name, if_not_exists)? {
            self.notices.push(Notice::skipped(
                "42P04",
                format!("database \"{name}\" already exists"),
            ));
        }
        Ok(Outcome::Command("CREATE DATABASE".into()))
    }
}

/// The C locale under one of its names (`C`, `POSIX`, `C.UTF-8`, `C.utf8`).
fn is_c_locale(locale: &str) -> bool {
    let l = locale.to_ascii_lowercase();
    l == "c"
        || l == "posix"
        || l.strip_prefix("c.")
            .is_some_and(|e| e.replace('-', "") == "utf8")
}
