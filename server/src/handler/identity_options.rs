//! `ALTER TABLE t ALTER [COLUMN] c { SET GENERATED { ALWAYS | BY DEFAULT } | SET
//! sequence_option | RESTART [[WITH] n] } ...`: how an identity column takes its values
//! (in the column's definition) and the options of the sequence it owns (as `ALTER
//! SEQUENCE` of that sequence changes them).

use crate::catalog::Identity;
use crate::ident::ident_name;
use crate::session::{Outcome, Session};
use brook_common::{brook_err, BrookError, Result};
use brook_planner::parser::{AlterIdentity, AlterSequence};
use datafusion::sql::sqlparser::ast::{Ident, ObjectName, ObjectNamePart};

impl Session {
    pub(crate) async fn alter_identity(&mut self, a: AlterIdentity) -> Result<Outcome> {
        let (schema, name) = self.resolve(&a.table)?;
        let Some((meta, store)) = self.altered_relation(&schema, &name, a.if_exists)? else {
            return Ok(Outcome::Command("ALTER TABLE".into()));
        };
        let cname = ident_name(&a.column);
        let i = meta.column_index(&cname, &name)?;
        if meta.columns[i].identity.is_none() {
            return Err(BrookError::ObjectState(format!(
                "column \"{cname}\" of relation \"{name}\" is not an identity column"
            )));
        }
        let owner = Some((name.clone(), cname.clone()));
        let sequence = {
            let doc = self.engine.catalog.read();
            doc.database(&self.db.name)?
                .schemas
                .get(&schema)
                .and_then(|s| {
                    s.sequences
                        .iter()
                        .find(|(_, q)| q.owned_by == owner)
                        .map(|(n, _)| n.clone())
                })
        };
        let Some(sequence) = sequence else {
            return Err(brook_err!(
                Internal,
                "identity column \"{cname}\" of relation \"{name}\" owns no sequence"
            ));
        };
        // The sequence's options first: they are checked there (a bad one changes
        // nothing), and a change of GENERATED cannot fail after them.
        let c = &a.clauses;
        if c.data_type.is_some()
            || !c.options.is_empty()
            || c.owned_by.is_some()
            || c.restart.is_some()
        {
            self.alter_sequence(AlterSequence {
                name: ObjectName(vec![
                    ObjectNamePart::Identifier(Ident::with_quote('"', schema.clone())),
                    ObjectNamePart::Identifier(Ident::with_quote('"', sequence)),
                ]),
                if_exists: false,
                clauses: a.clauses,
            })?;
        }
        if let Some(always) = a.generated_always {
            // Under the write lock (an empty transaction, never committed): writers planned
            // against the old definition retry (40001).
            let txn = self.ddl_lock(&meta, &store).await?;
            let mut next = meta.clone();
            next.columns[i].identity = Some(if always {
                Identity::Always
            } else {
                Identity::ByDefault
            });
            self.engine
                .update_relation(&self.db, &schema, &name, next)?;
            drop(txn);
        }
        Ok(Outcome::Command("ALTER TABLE".into()))
    }
}
