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

    /// CREATE DATABASE name.
    pub(crate) fn create_database(
        &mut self,
        db_name: &ObjectName,
        if_not_exists: bool,
    ) -> Result<Outcome> {
        let name = object_parts(db_name)?.join(".");
        if !self.engine.create_database(&name, if_not_exists)? {
            self.notices.push(Notice::skipped(
                "42P04",
                format!("database \"{name}\" already exists"),
            ));
        }
        Ok(Outcome::Command("CREATE DATABASE".into()))
    }
}
