//! Views (`CREATE VIEW`) as DataFusion views: the recorded query planned against the
//! database, which DataFusion's planner puts in place of each scan of the view.

use super::{Database, Engine};
use crate::catalog::{RelKind, RelationMeta};
use brook_common::{brook_err, Result};
use datafusion::catalog::TableProvider;
use datafusion::datasource::ViewTable;
use datafusion::logical_expr::{Expr, LogicalPlanBuilder};
use datafusion::sql::parser::Statement as DFStatement;
use std::sync::Arc;

impl Engine {
    /// View `meta` planned against database `db` now, its columns named as recorded.
    pub(crate) fn view_provider(
        &self,
        db: &Database,
        meta: &RelationMeta,
    ) -> Result<Arc<dyn TableProvider>> {
        let sql = meta
            .query
            .as_deref()
            .ok_or_else(|| brook_err!(Internal, "view {} has no query", meta.id))?;
        let Some(mut stmt) = brook_planner::parser::parse_one(sql)?.into_plain_sql() else {
            return Err(brook_err!(Internal, "view query {sql} is not plain SQL"));
        };
        crate::pg::sql::pg_literals(&mut stmt)?;
        // Planning reads the catalog only (its table lookups are ready at once).
        let plan = futures::executor::block_on(
            db.ctx
                .state()
                .statement_to_plan(DFStatement::Statement(Box::new(stmt))),
        )?;
        let named: Vec<Expr> = plan
            .schema()
            .columns()
            .into_iter()
            .zip(&meta.columns)
            .map(|(c, m)| Expr::Column(c).alias(&m.name))
            .collect();
        let plan = LogicalPlanBuilder::from(plan).project(named)?.build()?;
        Ok(Arc::new(ViewTable::new(plan, Some(sql.to_string()))))
    }

    /// (Re)register every view of `db`, in creation order (a view reads only relations
    /// older than itself, or replaced since): after the database opens, and after a
    /// relation a view may read changed shape. A view that no longer plans is reported and
    /// left unregistered (its definition stays in the catalog).
    pub(super) fn register_views(&self, db: &Database) -> Result<()> {
        let doc = self.catalog.read().clone();
        let mut views: Vec<(u64, String, String, RelationMeta)> = doc
            .database(&db.name)?
            .schemas
            .iter()
            .flat_map(|(sname, s)| {
                s.relations
                    .iter()
                    .filter(|(_, r)| r.kind == RelKind::View)
                    .map(move |(rname, r)| (r.id, sname.clone(), rname.clone(), r.clone()))
            })
            .collect();
        views.sort_by_key(|v| v.0);
        for (_, schema, name, meta) in views {
            if let Err(e) = self.register(db, &schema, &name, meta) {
                tracing::error!(database = %db.name, view = %format!("{schema}.{name}"), error = %e, "view does not plan; it is not readable until its inputs are restored");
            }
        }
        Ok(())
    }
}
