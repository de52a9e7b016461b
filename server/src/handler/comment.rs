//! COMMENT ON TABLE / VIEW / MATERIALIZED VIEW / COLUMN: a description kept in the catalog,
//! which `obj_description`, `col_description` and `pg_description` give back (psql's `\dt+`
//! and `\d+`, SQLAlchemy's `get_table_comment` and column comments).

use crate::catalog::RelKind;
use crate::ident::object_parts;
use crate::session::{Outcome, Session};
use brook_common::{brook_err, Result};
use datafusion::sql::sqlparser::ast::{CommentObject, ObjectName};

impl Session {
    pub(crate) fn comment_on(
        &mut self,
        object_type: CommentObject,
        object_name: &ObjectName,
        comment: Option<String>,
    ) -> Result<Outcome> {
        // An empty comment removes it, as in PostgreSQL.
        let comment = comment.filter(|c| !c.is_empty());
        let (relation, column) = match object_type {
            CommentObject::Table | CommentObject::View | CommentObject::MaterializedView => {
                (object_name.clone(), None)
            }
            CommentObject::Column => {
                let mut parts = object_name.0.clone();
                let Some(column) = parts.pop() else {
                    return Err(brook_err!(Syntax, "column name must be qualified"));
                };
                if parts.is_empty() {
                    return Err(brook_err!(Syntax, "column name must be qualified"));
                }
                let column = object_parts(&ObjectName(vec![column]))?.remove(0);
                (ObjectName(parts), Some(column))
            }
            other => return Err(brook_err!(Unsupported, "COMMENT ON {other}")),
        };
        let (schema, name) = self.resolve(&relation)?;
        let (mut meta, _) = self.relation(&schema, &name)?;
        // COMMENT ON TABLE names a table or stream; VIEW and MATERIALIZED VIEW their kind.
        let fits = match object_type {
            CommentObject::View => meta.kind == RelKind::View,
            CommentObject::MaterializedView => meta.kind == RelKind::MaterializedView,
            CommentObject::Table => matches!(meta.kind, RelKind::Table | RelKind::Stream),
            _ => true,
        };
        if !fits {
            let what = match object_type {
                CommentObject::View => "view",
                CommentObject::MaterializedView => "materialized view",
                _ => "table",
            };
            return Err(brook_err!(WrongObjectType, "\"{name}\" is not a {what}"));
        }
        match column {
            Some(c) => {
                let i = meta.column_index(&c, &name)?;
                meta.columns[i].comment = comment;
            }
            None => meta.comment = comment,
        }
        self.engine
            .update_relation(&self.db, &schema, &name, meta)?;
        Ok(Outcome::Command("COMMENT".into()))
    }
}
