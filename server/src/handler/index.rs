//! CREATE INDEX.

use crate::catalog::IndexMeta;
use crate::ident::ident_name;
use crate::ident::object_parts;
use crate::session::Outcome;
use crate::session::{Notice, Session};
use brook_common::{brook_err, BrookError, Result};
use datafusion::sql::sqlparser::ast::{self, Expr};

impl Session {
    pub(crate) fn create_index(&mut self, ci: ast::CreateIndex) -> Result<Outcome> {
        let (schema, table) = self.resolve(&ci.table_name)?;
        let (meta, _) = self.relation(&schema, &table)?;
        let mut columns = Vec::new();
        for c in &ci.columns {
            match &c.column.expr {
                Expr::Identifier(i) => {
                    let n = ident_name(i);
                    if !meta.columns.iter().any(|m| m.name == n) {
                        return Err(brook_err!(UndefinedColumn, "column \"{n}\" does not exist"));
                    }
                    columns.push(n);
                }
                other => return Err(brook_err!(Unsupported, "index on expression {other}")),
            }
        }
        if ci.unique {
            return Err(brook_err!(
                Unsupported,
                "CREATE UNIQUE INDEX (use a PRIMARY KEY)"
            ));
        }
        let named = match &ci.name {
            Some(n) => Some(object_parts(n)?.pop().unwrap_or_default()),
            None => None,
        };
        let if_not_exists = ci.if_not_exists;
        let db = self.db.name.clone();
        let mut name = String::new();
        let created = self.engine.catalog.update(|doc| {
            let s = doc.schema_mut(&db, &schema)?;
            // Unnamed, it takes PostgreSQL's name, numbered past the names in use.
            name = match &named {
                Some(n) => n.clone(),
                None => s.free_name(&format!("{table}_{}_idx", columns.join("_"))),
            };
            if s.name_taken(&name) {
                return if if_not_exists {
                    Ok(false)
                } else {
                    Err(BrookError::DuplicateTable(name.clone()))
                };
            }
            s.indexes.insert(
                name.clone(),
                IndexMeta {
                    table: table.clone(),
                    columns: columns.clone(),
                    unique: false,
                },
            );
            Ok(true)
        })?;
        if !created {
            self.notices.push(Notice::relation_exists(&name));
        }
        Ok(Outcome::Command("CREATE INDEX".into()))
    }
}
