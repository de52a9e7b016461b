//! CREATE [OR REPLACE] VIEW: a named query. The catalog keeps its text; each query that
//! reads the view plans it in (so a continuous query over a view over a stream reads the
//! stream incrementally, as if the view's query were written in its place).

use crate::catalog::{RelKind, RelationMeta};
use crate::handler::create_table::stored_columns;
use crate::ident::ident_name;
use crate::pg::sql::pg_named;
use crate::session::{Outcome, Session};
use brook_common::{brook_err, BrookError, Result};
use datafusion::arrow::datatypes::{Field, Schema};
use datafusion::sql::sqlparser::ast::{self, Statement};
use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;

impl Session {
    pub(crate) async fn create_view(&mut self, cv: ast::CreateView) -> Result<Outcome> {
        if cv.or_alter {
            return Err(brook_err!(Unsupported, "CREATE OR ALTER VIEW"));
        }
        // A view reading a temporary relation is temporary too, as in PostgreSQL.
        let temp = self.temp_schema_name();
        let reads_temp = self
            .relations_read(&cv.query)
            .iter()
            .any(|(s, _)| *s == temp);
        if reads_temp && !cv.temporary {
            self.notices
                .push(format!("view \"{}\" will be a temporary view", cv.name).into());
        }
        let (schema, name) = self.resolve_new(&cv.name, cv.temporary || reads_temp)?;
        duplicate_aliases(&cv.query)?;
        let mut stmt = Statement::Query(cv.query.clone());
        let output = brook_planner::rewrite::output_names(&stmt);
        // As every query (and the view's readers, `Engine::view_provider`) plans it.
        crate::pg::sql::pg_literals(&mut stmt)?;
        let plan = self.plan(stmt).await?;
        if plan.get_parameter_types().is_ok_and(|p| !p.is_empty()) {
            return Err(brook_err!(
                Parameter,
                "there is no parameter $1: a view's query cannot take parameters"
            ));
        }
        let types = Arc::new(self.analyzed_schema(&plan).as_arrow().clone());
        let named = pg_named(types.as_ref().clone(), output);
        let names = column_names(&named, &cv.columns)?;
        let fields: Vec<Field> = named
            .fields()
            .iter()
            .zip(&names)
            .map(|(f, n)| f.as_ref().clone().with_name(n))
            .collect();
        let columns = stored_columns(&types, &Arc::new(Schema::new(fields)), "a view")?;
        let meta = RelationMeta {
            id: 0,
            kind: RelKind::View,
            columns,
            primary_key: vec![],
            watermark: None,
            options: BTreeMap::new(),
            query: Some(cv.query.to_string()),
            depends_on: self.relations_read(&cv.query),
            comment: None,
        };
        // The view is planned against the database (not this session) whenever it is read
        // or the server starts: check now that it plans so, before the catalog names it.
        self.engine.view_provider(&self.db, &meta)?;
        if cv.or_replace {
            if let Ok((old, _)) = self.relation(&schema, &name) {
                check_replacement(&old, &meta, &name)?;
                // The views that read this one through `*` would see the added columns.
                for added in &meta.columns[old.columns.len()..] {
                    self.check_new_column(
                        &schema,
                        &name,
                        &added.name,
                        &format!("CREATE OR REPLACE VIEW {name} adding column {}", added.name),
                        &format!("replace {name}"),
                    )?;
                }
                self.refuse_cycle(&meta.depends_on, &schema, &name)?;
                let meta = RelationMeta {
                    id: old.id,
                    comment: old.comment.clone(),
                    ..meta
                };
                self.engine
                    .update_relation(&self.db, &schema, &name, meta)?;
                return Ok(Outcome::Command("CREATE VIEW".into()));
            }
        }
        self.engine
            .create_relation(&self.db, &schema, &name, meta, cv.if_not_exists)?;
        Ok(Outcome::Command("CREATE VIEW".into()))
    }

    /// `REFRESH MATERIALIZED VIEW`: a view is kept up to date as its inputs commit, so a
    /// refresh waits until it has applied every commit made before the statement (what
    /// PostgreSQL's recomputation would show), or reports why its maintenance failed.
    pub(crate) async fn refresh_materialized_view(
        &mut self,
        name: &ast::ObjectName,
        no_data: bool,
    ) -> Result<Outcome> {
        let (schema, rel) = self.resolve(name)?;
        let (meta, _) = self.relation(&schema, &rel)?;
        if meta.kind != RelKind::MaterializedView {
            return Err(brook_err!(
                WrongObjectType,
                "\"{rel}\" is not a materialized view"
            ));
        }
        if no_data {
            return Err(brook_err!(
                Unsupported,
                "REFRESH MATERIALIZED VIEW ... WITH NO DATA (a materialized view is kept up \
                 to date as its inputs change and is always readable)"
            ));
        }
        let mut view = self.engine.view_state(&self.db, &schema, &rel)?;
        // A failed view is rebuilt from its inputs as they are now (the row that made it
        // fail may have been deleted); a healthy one is only waited for.
        if view.has_failed() {
            view = self.engine.rebuild_view(&self.db, &schema, &rel)?;
        }
        view.wait_fresh().await?;
        Ok(Outcome::Command("REFRESH MATERIALIZED VIEW".into()))
    }
}

impl Session {
    /// 42P17 when the relations `reads` read `schema.name`, directly or through others: a
    /// view replaced so would read itself.
    fn refuse_cycle(&self, reads: &[(String, String)], schema: &str, name: &str) -> Result<()> {
        let doc = self.engine.catalog.read();
        let db = doc.database(&self.db.name)?;
        let mut todo: Vec<(String, String)> = reads.to_vec();
        let mut seen = HashSet::new();
        while let Some((s, n)) = todo.pop() {
            if s == schema && n == name {
                return Err(BrookError::Semantic {
                    message: format!(
                        "infinite recursion detected in rules for relation \"{name}\""
                    ),
                    code: "42P17",
                });
            }
            if !seen.insert((s.clone(), n.clone())) {
                continue;
            }
            if let Some(r) = db.schemas.get(&s).and_then(|m| m.relations.get(&n)) {
                todo.extend(r.depends_on.iter().cloned());
            }
        }
        Ok(())
    }
}

/// 42701 for a select list that names two columns alike (`SELECT 1 AS a, 2 AS a`), as
/// PostgreSQL refuses such a view (DataFusion would fail to plan it, an internal error).
fn duplicate_aliases(q: &ast::Query) -> Result<()> {
    let ast::SetExpr::Select(select) = q.body.as_ref() else {
        return Ok(());
    };
    let mut seen = HashSet::new();
    for item in &select.projection {
        if let ast::SelectItem::ExprWithAlias { alias, .. } = item {
            let name = ident_name(alias);
            if !seen.insert(name.clone()) {
                return Err(specified_twice(&name));
            }
        }
    }
    Ok(())
}

fn specified_twice(name: &str) -> BrookError {
    BrookError::Semantic {
        message: format!("column \"{name}\" specified more than once"),
        code: "42701",
    }
}

/// The view's column names: the list given (it may name fewer columns than the query has,
/// as in PostgreSQL), then the query's own; each once.
fn column_names(query: &Schema, given: &[ast::ViewColumnDef]) -> Result<Vec<String>> {
    if given.len() > query.fields().len() {
        return Err(brook_err!(
            Syntax,
            "CREATE VIEW specifies more column names than columns"
        ));
    }
    if let Some(c) = given
        .iter()
        .find(|c| c.data_type.is_some() || c.options.is_some())
    {
        return Err(brook_err!(
            Unsupported,
            "a type or options for view column \"{}\"",
            c.name
        ));
    }
    let names: Vec<String> = query
        .fields()
        .iter()
        .enumerate()
        .map(|(i, f)| match given.get(i) {
            Some(c) => ident_name(&c.name),
            None => f.name().clone(),
        })
        .collect();
    let mut seen = HashSet::new();
    if let Some(dup) = names.iter().find(|n| !seen.insert(n.as_str())) {
        return Err(specified_twice(dup));
    }
    Ok(names)
}

/// CREATE OR REPLACE VIEW may only add columns at the end, as PostgreSQL's: the view's
/// readers keep the columns they read.
fn check_replacement(old: &RelationMeta, new: &RelationMeta, name: &str) -> Result<()> {
    if old.kind != RelKind::View {
        return Err(brook_err!(WrongObjectType, "\"{name}\" is not a view"));
    }
    if new.columns.len() < old.columns.len() {
        return Err(brook_err!(
            InvalidDefinition,
            "cannot drop columns from view"
        ));
    }
    for (o, n) in old.columns.iter().zip(&new.columns) {
        if o.name != n.name {
            return Err(brook_err!(
                InvalidDefinition,
                "cannot change name of view column \"{}\" to \"{}\"",
                o.name,
                n.name
            ));
        }
        if o.ty != n.ty {
            return Err(brook_err!(
                InvalidDefinition,
                "cannot change data type of view column \"{}\" from {} to {}",
                o.name,
                o.ty.name(),
                n.ty.name()
            ));
        }
    }
    Ok(())
}
