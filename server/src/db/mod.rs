//! The engine shared by all sessions: data directory, catalog, relation stores, and one
//! DataFusion context per database.

mod block_ddl;
pub mod cluster;
pub mod cluster_nodes;
pub mod cluster_partitions;
pub mod functions;
pub mod lock_waits;
mod namespaces;
mod partitioned_views;
mod rename;
mod sequences;
mod views;

use crate::catalog::sequence::{self, SequenceMeta};
use crate::catalog::table::BrookTable;
use crate::catalog::{Catalog, CatalogDoc, RelKind, RelationMeta};
use crate::storage::{CacheBudget, TableStore};
use brook_common::{brook_err, BrookError, Result};
use datafusion::catalog::{
    CatalogProvider, MemoryCatalogProvider, MemoryCatalogProviderList, MemorySchemaProvider,
    SchemaProvider,
};
use datafusion::execution::session_state::SessionStateBuilder;
use datafusion::prelude::{SessionConfig, SessionContext};
use fs2::FileExt;
use std::collections::HashMap;
use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

/// A database: its DataFusion catalog (shared by the sessions connected to it).
pub struct Database {
    /// Database name.
    pub name: String,
    /// Template context; sessions clone its state.
    pub ctx: SessionContext,
    catalog: Arc<MemoryCatalogProvider>,
    /// Its user functions, planned (see `functions`).
    user_functions: Mutex<functions::UserFunctions>,
}

impl Database {
    /// Stop maintaining every materialized view and synopsis (the database is dropped).
    fn stop_maintenance(&self) {
        use datafusion::catalog::CatalogProvider;
        for schema in self.catalog.schema_names() {
            let Some(provider) = self.catalog.schema(&schema) else {
                continue;
            };
            for name in provider.table_names() {
                if let Ok(Some(t)) = crate::catalog::table::table_in(provider.as_ref(), &name) {
                    if let Some(v) = t.downcast_ref::<crate::stream::view::ViewTable>() {
                        v.state.stop_token().cancel();
                    }
                }
            }
        }
    }
}

impl std::fmt::Debug for Database {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Database")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

impl Database {
    /// The DataFusion schema provider of `schema`, when it exists.
    pub fn schema_provider(&self, schema: &str) -> Option<Arc<dyn SchemaProvider>> {
        self.catalog.schema(schema)
    }
}

/// Process-wide state.
#[derive(Debug)]
pub struct Engine {
    /// Data directory.
    pub data_dir: PathBuf,
    /// The persistent catalog.
    pub catalog: Arc<Catalog>,
    stores: Mutex<HashMap<u64, Arc<TableStore>>>,
    /// Every database opened since the server started. Kept open (not dropped with its last
    /// session) so its materialized views and synopses stay maintained without clients, and
    /// are started once: a context is never rebuilt per connection.
    databases: Mutex<HashMap<String, Arc<Database>>>,
    budget: Arc<CacheBudget>,
    /// Running continuous queries (for `brook_continuous_queries()`).
    pub queries: Arc<crate::stream::registry::QueryRegistry>,
    /// What each connection is doing (for `pg_stat_activity`, `pg_cancel_backend`).
    pub activity: Arc<crate::exec::activity::Activity>,
    /// The commit decisions of transaction blocks that wrote several relations.
    pub decisions: crate::storage::Decisions,
    /// The relation locks transaction blocks hold and wait for (deadlock detection).
    pub lock_waits: lock_waits::LockWaits,
    /// In cluster mode, the link to the cluster's log (set once, when the node joins).
    pub cluster: Arc<std::sync::OnceLock<Arc<cluster::ClusterLink>>>,
    /// In cluster mode, how views maintained per partition are read from the nodes that
    /// own their partitions (set once, when the node joins).
    pub gather: std::sync::OnceLock<Arc<dyn crate::stream::partitioned_view::Gather>>,
    /// DataFusion's runtime of every database: one memory pool for all queries.
    runtime_env: Arc<datafusion::execution::runtime_env::RuntimeEnv>,
    _lock: File,
}

/// The runtime environment all databases share: a memory pool of `limit` bytes, divided
/// fairly between the operators that can spill (sorts, joins, aggregates spill to disk when
/// their share runs out) and taken first come by those that cannot; a query that needs more
/// than what is left gets 53200 instead of taking the server's memory.
fn query_runtime_env(limit: usize) -> Result<Arc<datafusion::execution::runtime_env::RuntimeEnv>> {
    use datafusion::execution::memory_pool::{FairSpillPool, TrackConsumersPool};
    let pool = TrackConsumersPool::new(
        FairSpillPool::new(limit),
        std::num::NonZeroUsize::new(3).unwrap_or(std::num::NonZeroUsize::MIN),
    );
    Ok(datafusion::execution::runtime_env::RuntimeEnvBuilder::new()
        .with_memory_pool(Arc::new(pool))
        .build_arc()?)
}

/// A data directory without its decisions file (`transactions.log`, or with it empty) is new, or from
/// before transaction blocks over several relations committed there. Should a relation's
/// log hold such a commit all the same, the file was lost: refuse (XX001) rather than undo
/// those commits by starting without it.
pub(crate) fn refuse_lost_decisions(data_dir: &Path, catalog: &Catalog) -> Result<()> {
    // (An empty file counts as missing: one emptied would undo every such commit.)
    let file = data_dir.join(crate::storage::DECISIONS_FILE);
    if std::fs::metadata(&file).is_ok_and(|m| m.len() > 0) {
        return Ok(());
    }
    // A block's DDL recorded in the catalog is settled by the file (`block_ddl`): without
    // it a committed block's DDL would be undone. (The file exists from the first start
    // on, empty until a block commits through it.)
    if !file.exists() && !catalog.read().pending.is_empty() {
        return Err(brook_err!(DataCorrupted, "{} is missing, and catalog.json holds the DDL of transaction blocks it decides: restore the file from a backup (starting without it would undo that DDL)",
            file.display()));
    }
    for (db, schema, name, id) in crate::catalog::all_relations(&catalog.read()) {
        let dir = relation_dir(data_dir, id);
        if dir.join("data.log").exists() && crate::storage::names_a_block(&dir)? {
            return Err(brook_err!(DataCorrupted, "{} is missing, and relation {db}.{schema}.{name} holds commits of transaction blocks it decides: restore the file from a backup (starting without it would undo those commits)",
                data_dir.join(crate::storage::DECISIONS_FILE).display()));
        }
    }
    Ok(())
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    match m.lock() {
        Ok(g) => g,
        Err(p) => p.into_inner(),
    }
}

impl Engine {
    /// Open (or create) a data directory and recover its contents.
    /// `memory_limit` bounds the memory all queries together may hold (53200 beyond it).
    pub fn open(data_dir: &Path, cache_bytes: i64, memory_limit: usize) -> Result<Arc<Engine>> {
        let lock_file = lock_data_dir(data_dir)?;
        Self::open_locked(data_dir, cache_bytes, memory_limit, lock_file)
    }

    fn open_locked(
        data_dir: &Path,
        cache_bytes: i64,
        memory_limit: usize,
        lock_file: File,
    ) -> Result<Arc<Engine>> {
        let catalog = Arc::new(Catalog::open(data_dir)?);
        let budget = CacheBudget::new(cache_bytes);
        refuse_lost_decisions(data_dir, &catalog)?;
        let decisions = crate::storage::Decisions::open(data_dir)?;
        block_ddl::settle_pending(data_dir, &catalog, &decisions)?;
        let mut stores = HashMap::new();
        for (db, schema, name, id) in crate::catalog::all_relations(&catalog.read()) {
            let store = TableStore::open_with(&relation_dir(data_dir, id), budget.clone(), &|b| {
                decisions.committed(b)
            })
            .map_err(|e| match e {
                BrookError::DataCorrupted(m) => {
                    brook_err!(DataCorrupted, "relation {db}.{schema}.{name}: {m}")
                }
                other => other,
            })?;
            stores.insert(id, store);
        }
        report_orphans(data_dir, &catalog)?;
        let runtime_env = query_runtime_env(memory_limit)?;
        Ok(Arc::new(Engine {
            data_dir: data_dir.to_path_buf(),
            catalog,
            stores: Mutex::new(stores),
            databases: Mutex::new(HashMap::new()),
            budget,
            queries: Arc::new(crate::stream::registry::QueryRegistry::new(
                runtime_env.memory_pool.clone(),
            )),
            activity: Arc::default(),
            decisions,
            lock_waits: Default::default(),
            cluster: Arc::default(),
            gather: std::sync::OnceLock::new(),
            runtime_env,
            _lock: lock_file,
        }))
    }

    /// The database `name`, building its context on first use (3D000 when it does not exist).
    pub fn database(&self, name: &str) -> Result<Arc<Database>> {
        let mut dbs = lock(&self.databases);
        if let Some(db) = dbs.get(name) {
            return Ok(db.clone());
        }
        let db = Arc::new(self.build_database(name)?);
        self.drop_leftover_temp_schemas(&db)?;
        dbs.insert(name.to_string(), db.clone());
        // Views and materialized views may call user functions.
        self.refresh_functions(&db)?;
        self.register_views(&db)?;
        self.start_views(&db)?;
        Ok(db)
    }

    /// True when some session is connected to database `name` (holds it besides the engine).
    pub fn database_in_use(&self, name: &str) -> bool {
        lock(&self.databases)
            .get(name)
            .is_some_and(|db| Arc::strong_count(db) > 1)
    }

    /// The schema provider of user schema `schema` of database `db`: its registered
    /// relations, and its sequences by name.
    fn user_schema(
        &self,
        relations: Arc<MemorySchemaProvider>,
        db: &str,
        schema: &str,
    ) -> Arc<crate::catalog::sequence_relation::UserSchema> {
        Arc::new(crate::catalog::sequence_relation::UserSchema::new(
            relations,
            self.catalog.clone(),
            db,
            schema,
        ))
    }

    fn build_database(&self, name: &str) -> Result<Database> {
        let doc = self.catalog.read().clone();
        let meta = doc.database(name)?;
        let catalog = Arc::new(MemoryCatalogProvider::new());
        for (sname, schema) in &meta.schemas {
            let provider = Arc::new(MemorySchemaProvider::new());
            // Views are planned once the database's context exists (`register_views`).
            for (rname, rel) in schema
                .relations
                .iter()
                .filter(|(_, r)| r.kind != RelKind::View)
            {
                provider.register_table(
                    rname.clone(),
                    self.provider(name, sname, rname, rel.clone())?,
                )?;
            }
            catalog.register_schema(sname, self.user_schema(provider, name, sname))?;
        }
        let list = Arc::new(MemoryCatalogProviderList::new());
        datafusion::catalog::CatalogProviderList::register_catalog(
            list.as_ref(),
            name.to_string(),
            catalog.clone(),
        );
        let config = SessionConfig::new()
            .with_default_catalog_and_schema(name, crate::catalog::DEFAULT_SCHEMA)
            .with_create_default_catalog_and_schema(false)
            .with_information_schema(true)
            .with_target_partitions(2)
            .set_str("datafusion.sql_parser.dialect", "PostgreSQL")
            .set_str("datafusion.sql_parser.parse_float_as_decimal", "true")
            .set_str(
                "datafusion.optimizer.enable_round_robin_repartition",
                "false",
            )
            .set_str("datafusion.execution.time_zone", "+00:00")
            // DataFusion 55's leaf-expression pushdown fails to plan a JSON operator over a
            // view or subquery that renames its columns (`doc ->> 'a'` over `CREATE VIEW v AS
            // SELECT * FROM t` was 42702; apache/datafusion#25446). It only moves cheap field
            // reads nearer a scan, which Brook's in-memory scans do not use.
            .set_str(
                "datafusion.optimizer.enable_leaf_expression_pushdown",
                "false",
            );
        let mut physical_rules =
            datafusion::physical_optimizer::optimizer::PhysicalOptimizer::new().rules;
        physical_rules.push(Arc::new(
            crate::udf::sql_aggregate::single_phase::SinglePhaseUserAggregates,
        ));
        physical_rules.push(Arc::new(crate::exec::cancellable::CancellableLeaves));
        let state = SessionStateBuilder::new()
            .with_config(config)
            .with_runtime_env(self.runtime_env.clone())
            .with_physical_optimizer_rules(physical_rules)
            .with_catalog_list(list)
            .with_default_features()
            // `(array_agg(v))[i]` before DataFusion's planners, which make it `nth_value`.
            .with_expr_planners(
                std::iter::once(
                    Arc::new(brook_planner::aggregate_subscript::AggregateSubscript)
                        as Arc<dyn datafusion::logical_expr::planner::ExprPlanner>,
                )
                .chain(datafusion::execution::SessionStateDefaults::default_expr_planners())
                .collect(),
            )
            .with_analyzer_rules(analyzer_rules())
            .with_optimizer_rules(brook_planner::lateral_apply::optimizer_rules())
            .with_query_planner(Arc::new(crate::stream::match_recognize::BrookQueryPlanner))
            .with_relation_planners(vec![Arc::new(
                brook_planner::match_recognize::relation::MatchRecognizeRelations,
            )])
            .build();
        let mut ctx = SessionContext::new_with_state(state);
        // `timestamp - timestamp` is an interval, and intervals scale, as in PostgreSQL.
        datafusion::execution::FunctionRegistry::register_expr_planner(
            &mut ctx,
            Arc::new(brook_planner::timestamp_difference::TimestampDifferencePlanner::default()),
        )?;
        datafusion::execution::FunctionRegistry::register_expr_planner(
            &mut ctx,
            Arc::new(brook_planner::interval_scale::IntervalScalePlanner::default()),
        )?;
        datafusion::execution::FunctionRegistry::register_expr_planner(
            &mut ctx,
            Arc::new(brook_planner::date_interval::DateIntervalPlanner),
        )?;
        datafusion::execution::FunctionRegistry::register_expr_planner(
            &mut ctx,
            Arc::new(brook_planner::array_comparison::ArrayComparisonPlanner),
        )?;
        datafusion::execution::FunctionRegistry::register_expr_planner(
            &mut ctx,
            Arc::new(brook_planner::untyped_arithmetic::UntypedArithmetic),
        )?;
        // After `untyped_arithmetic`, which types a quoted literal divided by a numeric.
        datafusion::execution::FunctionRegistry::register_expr_planner(
            &mut ctx,
            Arc::new(crate::udf::numeric_division::NumericDivision::default()),
        )?;
        datafusion::execution::FunctionRegistry::register_expr_planner(
            &mut ctx,
            Arc::new(crate::udf::jsonb_operators::JsonbOperators),
        )?;
        ctx.add_analyzer_rule(Arc::new(
            brook_planner::checked::CheckedIntegerArithmetic::default(),
        ));
        ctx.add_analyzer_rule(Arc::new(brook_planner::bytea::ByteaInput::default()));
        ctx.add_analyzer_rule(Arc::new(
            brook_planner::timestamp_text::TimestampInput::default(),
        ));
        ctx.add_analyzer_rule(Arc::new(
            brook_planner::numeric_text::NumericInput::default(),
        ));
        ctx.add_analyzer_rule(Arc::new(
            brook_planner::single_row_subquery::SingleRowSubqueries,
        ));
        ctx.add_analyzer_rule(Arc::new(brook_planner::lateral::LateralRows));
        ctx.add_analyzer_rule(Arc::new(brook_planner::cast_metadata::CastsTakeTheirType));
        ctx.add_analyzer_rule(Arc::new(brook_planner::cast_rounding::CastsRound::default()));
        ctx.add_analyzer_rule(Arc::new(brook_planner::similar_to::SimilarTo::default()));
        ctx.add_analyzer_rule(Arc::new(brook_planner::array_slice::ArraySubscripts));
        ctx.add_analyzer_rule(Arc::new(
            brook_planner::regexp_replacement::RegexpReplacement::default(),
        ));
        // After `cast_metadata`: `j::text = '..'` compares text.
        ctx.add_analyzer_rule(Arc::new(
            crate::udf::jsonb_literals::JsonbLiterals::default(),
        ));
        // After `jsonb_literals`: a literal beside jsonb is jsonb, compared by value.
        ctx.add_analyzer_rule(Arc::new(crate::udf::jsonb_order::JsonbOrder::default()));
        ctx.add_analyzer_rule(Arc::new(brook_planner::value_text::ValueTextCasts::new(
            crate::udf::value_text::udf(),
        )));
        // Last: every instant of the plan labelled with the session's zone.
        ctx.add_analyzer_rule(Arc::new(
            brook_planner::session_time_zone::SessionTimeZone::new(crate::udf::time_zone::udf()),
        ));

        datafusion_pg_catalog::setup_pg_catalog(&ctx, name, crate::catalog::pg_views::Roles)
            .map_err(|e| BrookError::from(*e))?;
        crate::catalog::pg_views::install(&ctx, name, self.catalog.clone())?;
        crate::udf::functions::register(&ctx);
        crate::udf::bounded_series::register(&ctx);
        crate::udf::sleep::register(&ctx);
        crate::udf::regexp_split::register(&ctx);
        crate::udf::json_elements::register(&ctx);
        crate::udf::json_members::register(&ctx);
        crate::udf::regexp_matches::register(&ctx);
        crate::udf::numeric_functions::register(&ctx);
        crate::udf::interval_functions::register(&ctx);
        crate::udf::make_datetime::register(&ctx);
        crate::udf::to_char::register(&ctx);
        crate::udf::pg_admin::register(&ctx);
        crate::udf::pg_encoding::register(&ctx);
        crate::udf::expand_array::register(&ctx);
        crate::udf::parse_ident::register(&ctx);
        crate::udf::regclass_check::register(&ctx);
        crate::udf::oid_array::register(&ctx);
        crate::udf::format::register(&ctx);
        ctx.register_udf(brook_planner::bytea::octet_length());
        ctx.register_udf(
            crate::stream::partitioned_view::partition_udf()
                .as_ref()
                .clone(),
        );
        crate::udf::substring::register(&ctx);
        crate::udf::json_build::register(&ctx);
        crate::udf::json_path::register(&ctx);
        // After `udf::functions`: wraps the crate's `json_get_json`.
        crate::udf::json_get::register(&ctx);
        crate::udf::xml::register(&ctx);
        crate::udf::activity::register(&ctx, self.activity.clone());
        crate::udf::checked::register(&ctx);
        // After `checked`: it wraps the checked `to_timestamp`.
        crate::udf::to_timestamp::register(&ctx);
        crate::udf::time_zone::register(&ctx);
        crate::udf::untyped_array_arguments::register(&ctx);
        crate::udf::array_functions::register(&ctx);
        crate::udf::array_elements::register(&ctx);
        crate::udf::jsonb_edit::register(&ctx);
        // After `array_functions`: jsonb containment wraps its `array_has_all`.
        crate::udf::jsonb_operators::register(&ctx);
        crate::udf::sum_numeric::register(&ctx);
        crate::udf::avg_numeric::register(&ctx);
        crate::udf::float_extremes::register(&ctx);
        crate::udf::unknown_literals::register(&ctx);
        crate::udf::statement_time::register(&ctx);
        crate::udf::operator_functions::register(&ctx)?;
        brook_synopses::functions::register(&ctx);
        ctx.register_udaf(crate::udf::mode::udaf());
        ctx.register_udaf(crate::udf::percentile_disc::udaf());
        ctx.register_udaf(crate::udf::percentile_cont::udaf());
        crate::udf::json_aggregates::register(&ctx);
        // PostgreSQL's other names of DataFusion's aggregates.
        ctx.register_udaf(
            datafusion::functions_aggregate::bool_and_or::bool_and_udaf()
                .as_ref()
                .clone()
                .with_aliases(["every"]),
        );
        ctx.register_udaf(
            datafusion::functions_aggregate::variance::var_samp_udaf()
                .as_ref()
                .clone()
                .with_aliases(["variance"]),
        );
        crate::udf::functions::register_relkind(&ctx, catalog.clone());
        ctx.register_udtf("nexmark", Arc::new(crate::udf::nexmark::NexmarkFunction));
        ctx.register_udtf(
            "brook_continuous_queries",
            Arc::new(crate::stream::registry::QueriesFunction {
                registry: self.queries.clone(),
                database: name.to_string(),
            }),
        );
        ctx.register_udtf(
            brook_planner::windows::COUNT_WINDOW_FUNCTION,
            Arc::new(crate::stream::row_windows::CountWindowFunction {
                catalog: catalog.clone(),
            }),
        );
        ctx.register_udtf(
            crate::catalog::numbered::NUMBERED_ROWS_FUNCTION,
            Arc::new(crate::catalog::numbered::NumberedRowsFunction {
                catalog: catalog.clone(),
            }),
        );
        ctx.register_udtf(
            "correlated_pairs",
            Arc::new(crate::udf::synopses::CorrelatedPairsFunction {
                catalog: catalog.clone(),
            }),
        );
        ctx.register_udtf(
            "brook_cluster_nodes",
            Arc::new(cluster_nodes::ClusterNodesFunction {
                cluster: self.cluster.clone(),
            }),
        );
        ctx.register_udtf(
            "brook_partitions",
            Arc::new(cluster_partitions::PartitionsFunction {
                catalog: self.catalog.clone(),
                database: name.to_string(),
                cluster: self.cluster.clone(),
            }),
        );
        ctx.register_udtf(
            "brook_synopses",
            Arc::new(crate::udf::synopses::SynopsesFunction {
                registry: self.queries.clone(),
                database: name.to_string(),
                catalog: catalog.clone(),
            }),
        );
        Ok(Database {
            name: name.to_string(),
            ctx,
            catalog,
            user_functions: Mutex::new(Default::default()),
        })
    }

    /// The store of relation `id`.
    pub fn store(&self, id: u64) -> Result<Arc<TableStore>> {
        lock(&self.stores)
            .get(&id)
            .cloned()
            .ok_or_else(|| brook_err!(Internal, "no store for relation {id}"))
    }

    /// Create a relation: its id is allocated, its data directory made and its catalog
    /// entry written in one catalog update (under the catalog's lock), then it is made
    /// visible to the database's sessions.
    pub fn create_relation(
        &self,
        db: &Database,
        schema: &str,
        name: &str,
        meta: RelationMeta,
        if_not_exists: bool,
    ) -> Result<bool> {
        self.create_relation_owning(db, schema, name, meta, Vec::new(), if_not_exists)
    }

    /// [`Engine::create_relation`] with the sequences its SERIAL and identity columns own,
    /// as (column index, sequence): each is named `<table>_<column>_seq` (a number appended
    /// when that name is taken), created in the same catalog update, and the column's
    /// default becomes its `nextval`.
    pub fn create_relation_owning(
        &self,
        db: &Database,
        schema: &str,
        name: &str,
        meta: RelationMeta,
        sequences: Vec<(usize, SequenceMeta)>,
        if_not_exists: bool,
    ) -> Result<bool> {
        let created = self.catalog.update(|doc: &mut CatalogDoc| {
            let s = doc.schema_mut(&db.name, schema)?;
            if s.name_taken(name) {
                return if if_not_exists {
                    Ok(None)
                } else {
                    Err(BrookError::DuplicateTable(name.into()))
                };
            }
            let mut m = meta.clone();
            for (column, mut seq) in sequences.clone() {
                let col = &mut m.columns[column];
                let seq_name =
                    sequence::owned_name(doc.schema_mut(&db.name, schema)?, name, &col.name);
                seq.id = doc.next_id;
                doc.next_id += 1;
                seq.owned_by = Some((name.to_string(), col.name.clone()));
                col.default = Some(sequence::nextval_default(schema, &seq_name));
                doc.schema_mut(&db.name, schema)?
                    .sequences
                    .insert(seq_name, seq);
            }
            let id = doc.next_id;
            doc.next_id += 1;
            let store = TableStore::create(&relation_dir(&self.data_dir, id), self.budget.clone())?;
            m.id = id;
            doc.schema_mut(&db.name, schema)?
                .relations
                .insert(name.to_string(), m.clone());
            Ok(Some((m, store)))
        })?;
        let Some((created, store)) = created else {
            return Ok(false);
        };
        lock(&self.stores).insert(created.id, store);
        self.register(db, schema, name, created)?;
        Ok(true)
    }

    fn register(&self, db: &Database, schema: &str, name: &str, meta: RelationMeta) -> Result<()> {
        let provider = db
            .schema_provider(schema)
            .ok_or_else(|| brook_err!(Internal, "schema {schema} missing from context"))?;
        let table = match meta.kind {
            RelKind::View => self.view_provider(db, &meta)?,
            _ => self.provider(&db.name, schema, name, meta)?,
        };
        provider.deregister_table(name)?;
        provider.register_table(name.to_string(), table)?;
        Ok(())
    }

    /// How DataFusion reads relation `meta` of schema `schema`: a table or stream from its
    /// log, a materialized view from its maintained state (fresh, not yet maintained).
    fn provider(
        &self,
        database: &str,
        schema: &str,
        name: &str,
        meta: RelationMeta,
    ) -> Result<Arc<dyn datafusion::catalog::TableProvider>> {
        Ok(match meta.kind {
            RelKind::MaterializedView | RelKind::Synopsis => {
                Arc::new(crate::stream::view::ViewTable {
                    state: crate::stream::view::ViewState::new(meta.schema())?,
                    kind: meta.kind,
                    options: meta.options.clone(),
                    definition: meta.query.clone(),
                    identity: crate::stream::partitioned_view::ViewIdentity {
                        database: database.to_string(),
                        id: meta.id,
                        name: format!("{schema}.{name}"),
                    },
                    gather: self.gather.get().cloned(),
                })
            }
            _ => Arc::new(
                BrookTable::new(meta.clone(), self.store(meta.id)?)
                    .temporary(crate::catalog::is_temp_schema(schema)),
            ),
        })
    }

    /// Start a write to relation `meta` planned against that definition: waits for the
    /// relation's write lock (at most `lock_timeout`, then 55P03), then checks that the
    /// definition is still current. A write planned before a concurrent ALTER TABLE or DROP
    /// is refused with 40001 (retry) instead of writing rows of the old shape after it.
    pub async fn begin_write(
        &self,
        meta: &RelationMeta,
        store: &Arc<TableStore>,
        replace: bool,
        lock_timeout: Option<std::time::Duration>,
    ) -> Result<crate::storage::WriteTxn> {
        let txn = match lock_timeout {
            Some(t) => tokio::time::timeout(t, store.begin(replace))
                .await
                .map_err(|_| BrookError::Timeout {
                    message: "canceling statement due to lock timeout".into(),
                    code: "55P03",
                })??,
            None => store.begin(replace).await?,
        };
        self.check_definition(meta)?;
        self.check_created_visible(meta)?;
        Ok(txn)
    }

    /// 40001 unless `meta` is still the relation's definition (a write planned against it
    /// would write rows of an old shape, or into a dropped relation).
    pub fn check_definition(&self, meta: &RelationMeta) -> Result<()> {
        let doc = self.catalog.read();
        match doc.relation_by_id(meta.id) {
            Some(m) if m == meta => Ok(()),
            Some(_) => Err(brook_err!(SerializationFailure, "could not write: the relation's definition changed (a concurrent ALTER TABLE) while this statement waited; retry it")),
            None => Err(brook_err!(SerializationFailure, "could not write: the relation was dropped while this statement waited")),
        }
    }

    /// Replace a relation's metadata (ALTER TABLE) and re-register it.
    pub fn update_relation(
        &self,
        db: &Database,
        schema: &str,
        name: &str,
        meta: RelationMeta,
    ) -> Result<()> {
        self.catalog.update(|doc| {
            let s = doc.schema_mut(&db.name, schema)?;
            s.relations.insert(name.to_string(), meta.clone());
            Ok(())
        })?;
        self.register(db, schema, name, meta)?;
        // Views read the relations as they were planned: plan them again over the new shape.
        self.register_views(db)
    }

    /// [`Engine::update_relation`] with `edit` applied to the relation's schema (its
    /// indexes, its sequences) in the same catalog update.
    pub fn reshape_relation(
        &self,
        db: &Database,
        schema: &str,
        name: &str,
        meta: RelationMeta,
        edit: impl FnOnce(&mut crate::catalog::SchemaMeta),
    ) -> Result<()> {
        self.catalog.update(|doc| {
            let s = doc.schema_mut(&db.name, schema)?;
            s.relations.insert(name.to_string(), meta.clone());
            edit(s);
            Ok(())
        })?;
        self.register(db, schema, name, meta)?;
        self.register_views(db)
    }

    /// Drop a relation of kind `kind`: catalog first, then the data. In a transaction
    /// block's statement the data stays until the block commits (`block_ddl`).
    pub fn drop_relation(
        &self,
        db: &Database,
        schema: &str,
        name: &str,
        kind: RelKind,
        if_exists: bool,
    ) -> Result<bool> {
        let removed = self.catalog.update(|doc| {
            let s = doc.schema_mut(&db.name, schema)?;
            match s.relations.get(name) {
                None => {
                    if if_exists {
                        Ok(None)
                    } else {
                        Err(BrookError::UndefinedTable(name.into()))
                    }
                }
                Some(r) if r.kind != kind => Err(brook_err!(
                    WrongObjectType,
                    "\"{name}\" is not a {}; use DROP {}",
                    kind.noun(),
                    r.kind.noun().to_uppercase()
                )),
                Some(_) => {
                    s.indexes.retain(|_, ix| ix.table != name);
                    s.sequences
                        .retain(|_, q| q.owned_by.as_ref().is_none_or(|(table, _)| table != name));
                    Ok(s.relations.remove(name))
                }
            }
        })?;
        let Some(meta) = removed else {
            return Ok(false);
        };
        if let Some(p) = db.schema_provider(schema) {
            // A view's maintenance stops now, not whenever the last reference goes.
            if let Some(t) = p.deregister_table(name)? {
                if let Some(v) = t.downcast_ref::<crate::stream::view::ViewTable>() {
                    v.state.stop_token().cancel();
                }
            }
        }
        if crate::catalog::undo::journal().is_some() {
            return Ok(true);
        }
        lock(&self.stores).remove(&meta.id);
        let dir = relation_dir(&self.data_dir, meta.id);
        if let Err(e) = std::fs::remove_dir_all(&dir) {
            tracing::warn!(dir = %dir.display(), error = %e, "could not remove dropped relation's data; it is removed at next start");
        }
        Ok(true)
    }
}

/// Take the data directory's lock (one server, or one `brook repair`, at a time); the lock
/// holds while the returned file is open.
pub fn lock_data_dir(data_dir: &Path) -> Result<File> {
    std::fs::create_dir_all(data_dir.join("relations"))?;
    let lock_path = data_dir.join("brook.lock");
    let mut lock_file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .read(true)
        .write(true)
        .open(&lock_path)?;
    if lock_file.try_lock_exclusive().is_err() {
        let holder = std::fs::read_to_string(&lock_path).unwrap_or_default();
        return Err(BrookError::Io(std::io::Error::new(
                std::io::ErrorKind::WouldBlock,
                format!(
                    "data directory {} is in use by another Brook server (pid {}); stop it or choose another --data-dir",
                    data_dir.display(),
                    holder.trim()
                ),
            )));
    }
    lock_file.set_len(0)?;
    write!(lock_file, "{}", std::process::id())?;
    lock_file.sync_all()?;

    Ok(lock_file)
}

/// The data directory of relation `id`.
pub fn relation_dir(data_dir: &Path, id: u64) -> PathBuf {
    crate::catalog::relation_path(data_dir, id)
}

/// Report relation directories the catalog does not name (a crash between creating the
/// directory and writing the catalog, or between a DROP's catalog update and its removal)
/// and keep them: deleting data is `brook repair --remove-orphans`'s decision, not startup's.
/// The catalog's next id moves past them so that no new relation lands in one.
fn report_orphans(data_dir: &Path, catalog: &Catalog) -> Result<()> {
    let named: std::collections::HashSet<u64> = crate::catalog::all_relations(&catalog.read())
        .into_iter()
        .map(|r| r.3)
        .collect();
    let orphans: Vec<u64> = crate::catalog::relation_dirs(data_dir)?
        .into_iter()
        .filter(|id| !named.contains(id))
        .collect();
    if let Some(&max) = orphans.iter().max() {
        tracing::warn!(
            ?orphans,
            dir = %data_dir.join("relations").display(),
            "relation directories the catalog does not name are kept; `brook repair --remove-orphans` deletes them"
        );
        catalog.update(|doc| {
            doc.next_id = doc.next_id.max(max + 1);
            Ok(())
        })?;
    }
    Ok(())
}

/// DataFusion's analyzer rules with Brook's that must run before its type coercion.
/// The context a materialized view or synopsis is maintained with: the database's, in the
/// time zone it was created in.
fn maintenance_context(db: &Database, meta: &RelationMeta) -> datafusion::prelude::SessionContext {
    let zone = meta.options.get(crate::stream::plan::TIME_ZONE_OPTION);
    match zone {
        Some(z) => crate::stream::plan::in_time_zone(&db.ctx, Some(z)),
        None => db.ctx.clone(),
    }
}

fn analyzer_rules() -> Vec<Arc<dyn datafusion::optimizer::AnalyzerRule + Send + Sync>> {
    let mut rules = datafusion::optimizer::Analyzer::new().rules;
    let coercion = rules
        .iter()
        .position(|r| r.name() == "type_coercion")
        .unwrap_or(0);
    rules.insert(
        coercion,
        Arc::new(brook_planner::float_beside_numeric::FloatBesideNumeric),
    );
    // After type coercion, which casts an untyped literal to an array parameter's type.
    rules.insert(
        coercion + 2,
        Arc::new(brook_planner::array_literal_arguments::ArrayLiteralArguments),
    );
    rules.insert(
        coercion + 3,
        Arc::new(brook_planner::interval_text_casts::IntervalTextCasts::default()),
    );
    // Before type coercion, which types what reads `extract(second ...)` as a numeric.
    rules.insert(
        coercion,
        Arc::new(brook_planner::extract_fields::ExtractFields::default()),
    );
    // Before type coercion, which would cast a bytea to text for `length`.
    rules.insert(
        coercion,
        Arc::new(brook_planner::bytea::ByteaLength::default()),
    );
    // Before type coercion, which would cast concat's booleans to `true`/`false`.
    rules.insert(coercion, Arc::new(brook_planner::concat_text::ConcatText));
    // Before type coercion, which refuses a RANGE frame ordered by an interval (the rule
    // orders by the interval's length, a number).
    rules.insert(
        coercion,
        Arc::new(brook_planner::interval_order::IntervalOrder::default()),
    );
    // Before type coercion, which types the copy numbers and join keys it adds; before
    // `interval_order`, which numbers and joins the copies of intervals by their length.
    rules.insert(coercion, Arc::new(brook_planner::set_all::SetOperationsAll));
    // Before type coercion and the casts' own rules, which read the cast it adds.
    rules.insert(coercion, Arc::new(brook_planner::probe_casts::ProbeCasts));
    // First of all: the rows it builds take part in the expressions the others rewrite.
    rules.insert(coercion, Arc::new(brook_planner::whole_row::WholeRows));
    // Last: VALUES rows typed as their columns.
    rules.push(Arc::new(brook_planner::values_subqueries::ValuesSubqueries));
    rules
}
