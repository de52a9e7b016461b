//! Views (`CREATE VIEW`) as DataFusion views: the recorded query planned against the
//! database, which DataFusion's planner puts in place of each scan of the view; and the
//! maintained state of materialized views and synopses, started when a database opens and
//! rebuilt on REFRESH.

use super::{maintenance_context, Database, Engine};
use crate::catalog::{RelKind, RelationMeta};
use brook_common::{brook_err, BrookError, Result};
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
        // Column aliases for the first columns of a relation: completed with its columns
        // as they are now (the text holds the list as completed when the view was made).
        // Planning reads the catalog only (its table lookups are ready at once).
        futures::executor::block_on(brook_planner::partial_aliases::complete_in_context(
            &mut stmt, &db.ctx,
        ));
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

    /// The state of materialized view `schema.name` in `db`.
    pub fn view_state(
        &self,
        db: &Database,
        schema: &str,
        name: &str,
    ) -> Result<Arc<crate::stream::view::ViewState>> {
        let provider = db
            .schema_provider(schema)
            .ok_or_else(|| BrookError::UndefinedSchema(schema.into()))?;
        let table = crate::catalog::table::table_in(provider.as_ref(), name)?
            .ok_or_else(|| BrookError::UndefinedTable(name.into()))?;
        table
            .downcast_ref::<crate::stream::view::ViewTable>()
            .map(|v| v.state.clone())
            .ok_or_else(|| {
                brook_err!(
                    WrongObjectType,
                    "\"{name}\" is not a materialized view or synopsis"
                )
            })
    }

    /// Rebuild materialized view (or synopsis) `schema.name` of `db` from the start of its
    /// inputs, in fresh state: what REFRESH does for a view whose maintenance failed (a
    /// row of its inputs made its query fail; once that row is deleted, the rebuilt view
    /// holds the answer over the rows now there). Readers that began before see the old,
    /// failed state.
    pub fn rebuild_view(
        &self,
        db: &Arc<Database>,
        schema: &str,
        name: &str,
    ) -> Result<Arc<crate::stream::view::ViewState>> {
        let meta = {
            let doc = self.catalog.read();
            let dbm = doc.database(&db.name)?;
            dbm.schemas
                .get(schema)
                .and_then(|s| s.relations.get(name))
                .cloned()
                .ok_or_else(|| BrookError::UndefinedTable(name.into()))?
        };
        let (true, Some(sql)) = (meta.kind.is_maintained(), meta.query.clone()) else {
            return Err(brook_err!(
                WrongObjectType,
                "\"{name}\" is not a materialized view or synopsis"
            ));
        };
        let kind = meta.kind;
        let ctx = maintenance_context(db, &meta);
        let distribution = self.distribution_of(&db.name, &meta);
        self.register(db, schema, name, meta)?;
        let state = self.view_state(db, schema, name)?;
        let stats = self.queries.register(&db.name, kind.noun(), name);
        state.clone().replay(ctx, sql, stats, distribution);
        Ok(state)
    }

    /// Start maintaining every materialized view of a freshly opened database: each replays
    /// its inputs from the start (the durability choice of `view`).
    pub(super) fn start_views(&self, db: &Arc<Database>) -> Result<()> {
        let doc = self.catalog.read().clone();
        let meta = doc.database(&db.name)?;
        for (sname, schema) in &meta.schemas {
            for (rname, rel) in &schema.relations {
                let (true, Some(sql)) = (rel.kind.is_maintained(), rel.query.clone()) else {
                    continue;
                };
                let state = self.view_state(db, sname, rname)?;
                let stats = self.queries.register(&db.name, rel.kind.noun(), rname);
                let distribution = self.distribution_of(&db.name, rel);
                state.replay(maintenance_context(db, rel), sql, stats, distribution);
            }
        }
        Ok(())
    }
}
