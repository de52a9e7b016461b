//! Continuous statements: `EMIT` queries, materialized views, synopses, and the planning and
//! start of a continuous query for them and for cursors.

use crate::catalog::{RelKind, RelationMeta};
use crate::copy::CopyOptions;
use crate::handler::create_table::stored_columns;
use crate::handler::query::rows_outcome;
use crate::ident::quote_ident;
use crate::pg::sql::pg_literals;
use crate::pg::sql::pg_named;
use crate::session::Outcome;
use crate::session::{Notice, Session};
use crate::storage::TableStore;
use crate::stream::plan::continuous_plan;
use crate::stream::plan::plan_query_continuous;
use crate::stream::plan::plan_view_sql;
use crate::stream::registry::QueryStats;
use brook_common::{brook_err, BrookError, Result};
use brook_operators::graph::GraphPlan;
use brook_planner::continuous::ContinuousOptions;
use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use datafusion::execution::SendableRecordBatchStream;
use datafusion::sql::sqlparser::ast::{self, CopySource, CopyTarget as SqlCopyTarget, Statement};
use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;

/// Built-in functions whose value changes from call to call (see
/// [`Session::refuse_values_of_its_own`]).
const CHANGING_FUNCTIONS: [&str; 10] = [
    "nextval",
    "currval",
    "setval",
    "lastval",
    "random",
    "random_normal",
    "uuid",
    "gen_random_uuid",
    "clock_timestamp",
    "timeofday",
];

/// A maintained relation to create: where, its query, and how the catalog records it.
pub(crate) struct Maintained {
    schema: String,
    name: String,
    sql: String,
    kind: RelKind,
    options: BTreeMap<String, String>,
    depends_on: Vec<(String, String)>,
    if_not_exists: bool,
}

/// The columns a continuous query sends: its own, plus `_brook_op` when it is updating.
pub(crate) fn wire_schema(
    graph: &GraphPlan,
    names: Option<Vec<brook_planner::rewrite::OutputName>>,
) -> SchemaRef {
    let schema = pg_named(graph.schema().as_ref().clone(), names);
    if graph.updating() {
        brook_operators::change::with_change_field(&schema)
    } else {
        schema
    }
}

pub(crate) fn emit_misplaced() -> BrookError {
    brook_err!(
        Unsupported,
        "EMIT ON WINDOW CLOSE outside DECLARE CURSOR (it applies to continuous queries)"
    )
}

impl Session {
    /// EXPLAIN DECLARE name CURSOR FOR query: the continuous plan the cursor would run.
    pub(crate) async fn explain_declare(&mut self, declare: Statement) -> Result<Outcome> {
        let Statement::Declare { stmts } = declare else {
            return Err(brook_err!(Internal, "EXPLAIN DECLARE lost its DECLARE"));
        };
        let [d] = stmts.as_slice() else {
            return Err(brook_err!(Syntax, "DECLARE takes one cursor name"));
        };
        let q = d
            .for_query
            .clone()
            .ok_or_else(|| brook_err!(Syntax, "DECLARE CURSOR needs FOR <query>"))?;
        Box::pin(self.explain_continuous(Statement::Query(q), ContinuousOptions::default(), false))
            .await
    }

    /// A statement with an `EMIT` clause: its query runs continuously, over streams and
    /// tables alike (a table contributes its rows, then its changes).
    pub(crate) async fn execute_emit(
        &mut self,
        stmt: Statement,
        options: ContinuousOptions,
    ) -> Result<Outcome> {
        match stmt {
            Statement::Declare { stmts } => self.declare(stmts, options, true).await,
            Statement::CreateView(cv) if cv.materialized => {
                self.create_materialized_view(cv, options).await
            }
            Statement::Explain { statement, .. } => match *statement {
                Statement::Declare { stmts } => {
                    let [d] = stmts.as_slice() else {
                        return Err(brook_err!(Syntax, "DECLARE takes one cursor name"));
                    };
                    let q = d
                        .for_query
                        .clone()
                        .ok_or_else(|| brook_err!(Syntax, "DECLARE CURSOR needs FOR <query>"))?;
                    self.explain_continuous(Statement::Query(q), options, true)
                        .await
                }
                q @ Statement::Query(_) => self.explain_continuous(q, options, true).await,
                _ => Err(emit_misplaced()),
            },
            q @ Statement::Query(_) => {
                let p = plan_query_continuous(&self.ctx, q, options, true).await?;
                let (schema, stream, _) =
                    self.start_continuous((p.graph, p.stores), p.names, None)?;
                Ok(Outcome::Rows {
                    schema,
                    stream,
                    tag: "SELECT",
                })
            }
            Statement::Copy {
                source: CopySource::Query(q),
                to: true,
                target,
                options: copy_options,
                legacy_options,
                ..
            } => {
                if !matches!(target, SqlCopyTarget::Stdout) {
                    return Err(brook_err!(
                        Unsupported,
                        "COPY TO a file or program (use COPY ... TO STDOUT)"
                    ));
                }
                let opts = CopyOptions::from_sql(&copy_options, &legacy_options)?;
                let p =
                    plan_query_continuous(&self.ctx, Statement::Query(q), options, true).await?;
                let (_, stream, _) = self.start_continuous((p.graph, p.stores), p.names, None)?;
                Ok(Outcome::CopyOut { opts, stream })
            }
            _ => Err(emit_misplaced()),
        }
    }

    /// CREATE MATERIALIZED VIEW: plan the query continuously (refusing what cannot run
    /// incrementally), record it in the catalog, and start its maintenance.
    pub(crate) async fn create_materialized_view(
        &mut self,
        cv: ast::CreateView,
        options: ContinuousOptions,
    ) -> Result<Outcome> {
        if cv.or_replace || cv.or_alter {
            return Err(brook_err!(
                Unsupported,
                "CREATE OR REPLACE MATERIALIZED VIEW"
            ));
        }
        if !cv.columns.is_empty() {
            return Err(brook_err!(
                Unsupported,
                "a column list in CREATE MATERIALIZED VIEW (alias the query's columns)"
            ));
        }
        let (schema, name) = self.resolve(&cv.name)?;
        if cv.if_not_exists && self.relation(&schema, &name).is_ok() {
            self.notices.push(Notice::relation_exists(&name));
            return Ok(Outcome::Command("CREATE MATERIALIZED VIEW".into()));
        }
        self.refuse_values_of_its_own(&cv.query).await?;
        let mut view_options = self.time_zone_option();
        if distributed_option(&cv.options)? {
            view_options.insert(
                crate::stream::partitioned_view::DISTRIBUTED_OPTION.into(),
                "true".into(),
            );
            // Partial aggregates per node, merged when read, when its aggregates merge
            // (`brook_planner::view_merge`); else partition-local or whole, as planned.
            if let Some(merge) = brook_planner::view_merge::merge_query(&cv.query) {
                view_options.insert(brook_planner::view_merge::MERGE_OPTION.into(), merge);
            }
        }
        let mut sql = cv.query.to_string();
        if options.emit_on_window_close {
            sql.push_str(" EMIT ON WINDOW CLOSE");
        }
        let (graph, stores, wire) = plan_view_sql(&self.ctx, &sql).await?;
        let mut seen = HashSet::new();
        for f in wire.fields() {
            if !seen.insert(f.name()) {
                return Err(BrookError::DuplicateObject {
                    what: "column",
                    name: f.name().clone(),
                    code: "42701",
                });
            }
        }
        let depends_on = self.relations_read(&cv.query);
        if depends_on
            .iter()
            .any(|(s, _)| crate::session::temp::is_temp_schema(s))
        {
            return Err(crate::session::temp::temp_in_maintained(
                "materialized view",
                "materialized views",
            ));
        }
        let built = self.create_maintained(
            Maintained {
                schema: schema.clone(),
                name: name.clone(),
                sql,
                kind: RelKind::MaterializedView,
                options: view_options,
                depends_on,
                if_not_exists: cv.if_not_exists,
            },
            (graph, stores, wire),
        )?;
        if built {
            self.first_build(&schema, &name, RelKind::MaterializedView)
                .await?;
        }
        Ok(Outcome::Command("CREATE MATERIALIZED VIEW".into()))
    }

    /// Refuse a materialized view whose rows would not be the same each time they are
    /// computed: sequence functions (they need a session, which the view's maintenance has
    /// not, so the view failed after a restart), and on a cluster node the built-in
    /// functions that give another value at each call (`random()`, `gen_random_uuid()`,
    /// `clock_timestamp()`): each node computes the view's rows on its own, so each would
    /// hold other rows. User functions are VOLATILE unless declared otherwise, as in
    /// PostgreSQL, though most compute from their arguments alone: they are not refused.
    async fn refuse_values_of_its_own(&self, query: &ast::Query) -> Result<()> {
        use datafusion::common::tree_node::{TreeNode, TreeNodeRecursion};
        // A query only the continuous planner reads (a window function of Brook's) is
        // checked by that planner; this plan is for its functions only.
        let Ok(plan) = self.plan(Statement::Query(Box::new(query.clone()))).await else {
            return Ok(());
        };
        let mut volatile = None;
        plan.apply_with_subqueries(|node| {
            for e in node.expressions() {
                e.apply(|e| {
                    if let datafusion::logical_expr::Expr::ScalarFunction(f) = e {
                        if CHANGING_FUNCTIONS.contains(&f.func.name()) {
                            volatile = Some(f.func.name().to_string());
                            return Ok(TreeNodeRecursion::Stop);
                        }
                    }
                    Ok(TreeNodeRecursion::Continue)
                })?;
            }
            Ok(if volatile.is_some() {
                TreeNodeRecursion::Stop
            } else {
                TreeNodeRecursion::Continue
            })
        })?;
        let Some(function) = volatile else {
            return Ok(());
        };
        if matches!(
            function.as_str(),
            "nextval" | "currval" | "setval" | "lastval"
        ) {
            return Err(brook_err!(
                Unsupported,
                "{function}() in a materialized view (a sequence function needs a session; take the values in an INSERT instead)"
            ));
        }
        if self.engine.cluster.get().is_some() {
            return Err(brook_err!(
                Unsupported,
                "{function}() in a materialized view in cluster mode: each node computes the view on its own, so each would hold other rows"
            ));
        }
        Ok(())
    }

    /// Record a maintained relation (view or synopsis) in the catalog and start the
    /// continuous query that maintains it (unless it existed and `IF NOT EXISTS` was given).
    /// Wait until the materialized view or synopsis `schema.name` just created covers the
    /// rows committed before it: reads right after CREATE see them (later reads answer from
    /// the latest state at once). A build that fails (a row of its inputs made its query
    /// fail: `10 / x` with an `x` of 0) drops it and fails the CREATE with the build's error,
    /// as PostgreSQL's CREATE MATERIALIZED VIEW fails; it was created and then failed every
    /// read.
    async fn first_build(&self, schema: &str, name: &str, kind: RelKind) -> Result<()> {
        let mut created = crate::handler::create_table::CreatedRelation {
            engine: self.engine.clone(),
            db: self.db.clone(),
            schema: schema.to_string(),
            name: name.to_string(),
            kind,
            kept: false,
        };
        let state = self.engine.view_state(&self.db, schema, name)?;
        match state.wait_fresh().await {
            Ok(()) => {
                created.kept = true;
                Ok(())
            }
            Err(e) => Err(state.failure().unwrap_or(e)),
        }
    }

    /// Create a materialized view or synopsis and start maintaining it. True when it was
    /// created and its first build runs on this node (not when IF NOT EXISTS found one, nor
    /// for a view maintained per partition on a cluster).
    pub(crate) fn create_maintained(
        &mut self,
        m: Maintained,
        (graph, stores, wire): (GraphPlan, Vec<Arc<TableStore>>, SchemaRef),
    ) -> Result<bool> {
        if crate::session::temp::is_temp_schema(&m.schema) {
            return Err(crate::session::temp::temp_in_maintained(
                "materialized view or synopsis",
                "materialized views and synopses",
            ));
        }
        let columns = stored_columns(&graph.schema(), &wire, "a view")?;
        let meta = RelationMeta {
            id: 0,
            kind: m.kind,
            columns,
            primary_key: vec![],
            watermark: None,
            options: m.options,
            query: Some(m.sql),
            depends_on: m.depends_on,
            comment: None,
        };
        let distributed = self.engine.distribution_of(&self.db.name, &meta).is_some();
        if !self
            .engine
            .create_relation(&self.db, &m.schema, &m.name, meta, m.if_not_exists)?
        {
            self.notices.push(Notice::relation_exists(&m.name));
            return Ok(false);
        }
        if distributed {
            // Planned again over the partitions this node owns (`stream::partitioned_view`).
            self.engine.rebuild_view(&self.db, &m.schema, &m.name)?;
            return Ok(false);
        }
        let view = self.engine.view_state(&self.db, &m.schema, &m.name)?;
        let stats = self
            .engine
            .queries
            .register(&self.db.name, m.kind.noun(), &m.name);
        view.start(Arc::new(graph), stores, stats);
        Ok(true)
    }

    /// `CREATE SYNOPSIS`: a sketch (or sample) per key, maintained like a materialized view
    /// by the query `brook_planner::synopsis` derives from the statement; `USING` a user
    /// aggregate with a COMBINEFUNC keeps its value per key.
    pub(crate) async fn create_synopsis(
        &mut self,
        cs: brook_planner::parser::CreateSynopsis,
    ) -> Result<Outcome> {
        let (schema, name) = self.resolve(&cs.name)?;
        let user_aggregate = (!brook_planner::synopsis::KINDS.contains(&cs.kind.as_str()))
            .then(|| self.aggregate(&cs.kind))
            .flatten();
        let plan = match user_aggregate {
            None => brook_planner::synopsis::plan_synopsis(&cs)?,
            Some((_, a)) => {
                let Some(combine) = &a.combinefunc else {
                    return Err(brook_err!(
                        Unsupported,
                        "a synopsis kept by the aggregate {}: it has no COMBINEFUNC, and \
                         partial synopses must merge (add one with CREATE OR REPLACE \
                         AGGREGATE)",
                        a.signature(&cs.kind)
                    ));
                };
                brook_planner::synopsis::plan_user_synopsis(&cs, combine)?
            }
        };
        // The one relation a synopsis reads (dropping it answers 2BP01).
        let depends_on = vec![self.resolve(&cs.source)?];
        if crate::session::temp::is_temp_schema(&depends_on[0].0) {
            return Err(crate::session::temp::temp_in_maintained(
                "synopsis", "synopses",
            ));
        }
        let planned = plan_view_sql(&self.ctx, &plan.sql).await?;
        let mut options = self.time_zone_option();
        options.extend([
            ("synopsis.kind".to_string(), plan.kind.clone()),
            ("synopsis.column".to_string(), plan.column.clone()),
            ("synopsis.parameters".to_string(), plan.parameters.clone()),
            ("synopsis.keys".to_string(), plan.keys.join(", ")),
            ("synopsis.bound".to_string(), plan.bound.clone()),
            ("synopsis.source".to_string(), cs.source.to_string()),
        ]);
        if let Some(merge) = &plan.merge {
            options.insert(
                brook_planner::view_merge::MERGE_OPTION.to_string(),
                merge.clone(),
            );
        }
        let built = self.create_maintained(
            Maintained {
                schema: schema.clone(),
                name: name.clone(),
                sql: plan.sql,
                kind: RelKind::Synopsis,
                options,
                depends_on,
                if_not_exists: cs.if_not_exists,
            },
            planned,
        )?;
        if built {
            self.first_build(&schema, &name, RelKind::Synopsis).await?;
        }
        Ok(Outcome::Command("CREATE SYNOPSIS".into()))
    }

    /// The continuous plan of a query that reads a stream (or any query when `force`);
    /// `None` for queries over tables only (they run once, ad hoc).
    pub(crate) async fn continuous(
        &self,
        plan: &datafusion::logical_expr::LogicalPlan,
        options: ContinuousOptions,
        force: bool,
    ) -> Result<Option<(GraphPlan, Vec<Arc<TableStore>>)>> {
        continuous_plan(&self.ctx, plan, options, force).await
    }

    /// Start a continuous query; its wire schema carries `_brook_op` when it is updating.
    pub(crate) fn start_continuous(
        &self,
        (graph, stores): (GraphPlan, Vec<Arc<TableStore>>),
        names: Option<Vec<brook_planner::rewrite::OutputName>>,
        cursor: Option<&str>,
    ) -> Result<(SchemaRef, SendableRecordBatchStream, Arc<QueryStats>)> {
        let schema = wire_schema(&graph, names);
        let stats = match cursor {
            Some(name) => self.engine.queries.register(&self.db.name, "cursor", name),
            None => self.engine.queries.register(&self.db.name, "push", ""),
        };
        let stream =
            crate::stream::queries::start(Arc::new(graph), stores, schema.clone(), stats.clone());
        Ok((schema, stream, stats))
    }

    /// `EXPLAIN DECLARE c CURSOR FOR q` (and `EXPLAIN q EMIT ...`): the continuous plan of
    /// `q`, or its ad-hoc plan when it runs once (a cursor over tables only).
    pub(crate) async fn explain_continuous(
        &mut self,
        mut stmt: Statement,
        options: ContinuousOptions,
        force: bool,
    ) -> Result<Outcome> {
        let names = brook_planner::rewrite::output_names(&stmt);
        pg_literals(&mut stmt)?;
        let plan = self.plan(stmt.clone()).await?;
        let text = match self.continuous(&plan, options, force).await? {
            Some((graph, _)) => {
                let mut text = graph.explain();
                // Show the result columns by the names the client sees, not the internal
                // aliases that keep duplicate output names apart.
                let shown = pg_named(graph.schema().as_ref().clone(), names);
                for (inner, outer) in graph.schema().fields().iter().zip(shown.fields()) {
                    if inner.name() != outer.name() && inner.name().starts_with("__brook_col_") {
                        let name = outer.name();
                        let plain = name
                            .chars()
                            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
                            && !name.starts_with(|c: char| c.is_ascii_digit());
                        let shown = if plain {
                            name.clone()
                        } else {
                            quote_ident(name)
                        };
                        text =
                            text.replace(&format!("AS {}", inner.name()), &format!("AS {shown}"));
                    }
                }
                format!(
                    "Continuous plan ({} result)\n{text}",
                    if graph.updating() {
                        "updating"
                    } else {
                        "append-only"
                    }
                )
            }
            None => {
                let explain = Statement::Explain {
                    describe_alias: ast::DescribeAlias::Explain,
                    analyze: false,
                    verbose: false,
                    query_plan: false,
                    estimate: false,
                    statement: Box::new(stmt),
                    format: None,
                    options: None,
                };
                return self.run_query(explain, "EXPLAIN", None).await;
            }
        };
        let schema = Arc::new(Schema::new(vec![Field::new(
            "QUERY PLAN",
            DataType::Utf8,
            false,
        )]));
        let lines: Vec<&str> = text.lines().collect();
        let batch = RecordBatch::try_new(
            schema.clone(),
            vec![Arc::new(datafusion::arrow::array::StringArray::from(lines))],
        )?;
        Ok(rows_outcome(schema, vec![batch], "EXPLAIN"))
    }
}

/// Whether `CREATE MATERIALIZED VIEW ... WITH (distributed = true)` asks for maintenance
/// per partition (22023 for a value that is not a boolean). PostgreSQL's storage
/// parameters are accepted and have no effect.
fn distributed_option(options: &ast::CreateTableOptions) -> Result<bool> {
    let ast::CreateTableOptions::With(options) = options else {
        return Ok(false);
    };
    let mut distributed = false;
    for o in options {
        let ast::SqlOption::KeyValue { key, value } = o else {
            continue;
        };
        if crate::ident::ident_name(key) != crate::stream::partitioned_view::DISTRIBUTED_OPTION {
            continue;
        }
        let text = match value {
            ast::Expr::Value(v) => v.clone().into_string().unwrap_or_else(|| v.to_string()),
            other => other.to_string(),
        };
        distributed = match text.to_ascii_lowercase().as_str() {
            "true" | "on" | "yes" | "1" => true,
            "false" | "off" | "no" | "0" => false,
            _ => {
                return Err(brook_err!(
                    InvalidParameter,
                    "invalid value for boolean option \"distributed\": {text}"
                ))
            }
        };
    }
    Ok(distributed)
}
