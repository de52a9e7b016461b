//! A sequence read as a relation: `SELECT last_value, log_cnt, is_called FROM s`, one
//! row, as PostgreSQL shows a sequence's state (pg_dump reads it to write `setval`).
//! `last_value` is the last value handed out (or the next one when `is_called` is false),
//! not the state reserved ahead in the catalog; `log_cnt` is how many values after it the
//! catalog already covers, which PostgreSQL's column counts for its WAL the same way.
//!
//! Schemas resolve sequences by name when no relation has it ([`UserSchema`]): a sequence
//! is created, renamed and dropped in the catalog alone, and reading it finds it there.
//! [`PgSequences`] is the `pg_sequences` view of them all.

use super::Catalog;
use async_trait::async_trait;
use datafusion::arrow::array::{ArrayRef, BooleanArray, Int64Array, RecordBatch, StringArray};
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use datafusion::catalog::{SchemaProvider, Session, TableProvider};
use datafusion::datasource::memory::MemorySourceConfig;
use datafusion::datasource::TableType;
use datafusion::error::DataFusionError;
use datafusion::logical_expr::Expr;
use datafusion::physical_plan::ExecutionPlan;
use std::sync::Arc;

/// One sequence of one schema, as a one-row relation.
#[derive(Debug)]
pub struct SequenceRelation {
    catalog: Arc<Catalog>,
    db: String,
    schema_name: String,
    name: String,
    schema: SchemaRef,
}

impl SequenceRelation {
    pub fn new(catalog: Arc<Catalog>, db: &str, schema: &str, name: &str) -> Self {
        SequenceRelation {
            catalog,
            db: db.to_string(),
            schema_name: schema.to_string(),
            name: name.to_string(),
            schema: Arc::new(Schema::new(vec![
                Field::new("last_value", DataType::Int64, false),
                Field::new("log_cnt", DataType::Int64, false),
                Field::new("is_called", DataType::Boolean, false),
            ])),
        }
    }
}

#[async_trait]
impl TableProvider for SequenceRelation {
    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }

    fn table_type(&self) -> TableType {
        TableType::View
    }

    async fn scan(
        &self,
        _state: &dyn Session,
        projection: Option<&Vec<usize>>,
        _filters: &[Expr],
        _limit: Option<usize>,
    ) -> datafusion::error::Result<Arc<dyn ExecutionPlan>> {
        let state = self
            .catalog
            .sequence_state(&self.db, &self.schema_name, &self.name)
            .map_err(|e| DataFusionError::External(Box::new(e)))?;
        let batch = RecordBatch::try_new(
            self.schema.clone(),
            vec![
                Arc::new(Int64Array::from(vec![state.last_value])),
                Arc::new(Int64Array::from(vec![state.log_cnt])),
                Arc::new(BooleanArray::from(vec![state.is_called])),
            ],
        )?;
        Ok(MemorySourceConfig::try_new_exec(
            &[vec![batch]],
            self.schema.clone(),
            projection.cloned(),
        )?)
    }
}

/// `pg_sequences`: every sequence of a database with its options and the last value
/// handed out (NULL before the first, as PostgreSQL shows it).
#[derive(Debug)]
pub struct PgSequences {
    catalog: Arc<Catalog>,
    db: String,
    schema: SchemaRef,
}

impl PgSequences {
    pub fn new(catalog: Arc<Catalog>, db: &str) -> Self {
        let text = |n: &str| Field::new(n, DataType::Utf8, false);
        let int = |n: &str| Field::new(n, DataType::Int64, false);
        PgSequences {
            catalog,
            db: db.to_string(),
            schema: Arc::new(Schema::new(vec![
                text("schemaname"),
                text("sequencename"),
                text("sequenceowner"),
                text("data_type"),
                int("start_value"),
                int("min_value"),
                int("max_value"),
                int("increment_by"),
                Field::new("cycle", DataType::Boolean, false),
                int("cache_size"),
                Field::new("last_value", DataType::Int64, true),
            ])),
        }
    }

    fn rows(&self) -> brook_common::Result<RecordBatch> {
        // The definitions first, with the catalog lock released before the states are read
        // (`sequence_state` takes the counters' lock, then the catalog's).
        let sequences: Vec<(String, String, super::sequence::SequenceMeta)> = {
            let doc = self.catalog.read();
            doc.database(&self.db)?
                .schemas
                .iter()
                .flat_map(|(s, m)| {
                    m.sequences
                        .iter()
                        .map(move |(n, q)| (s.clone(), n.clone(), q.clone()))
                })
                .collect()
        };
        let mut last = Vec::with_capacity(sequences.len());
        for (s, n, _) in &sequences {
            // a sequence dropped meanwhile is left out of nothing: it shows no last value
            let state = self.catalog.sequence_state(&self.db, s, n).ok();
            last.push(state.filter(|st| st.is_called).map(|st| st.last_value));
        }
        let texts = |f: &dyn Fn(&(String, String, super::sequence::SequenceMeta)) -> String| {
            Arc::new(StringArray::from_iter_values(sequences.iter().map(f))) as ArrayRef
        };
        let ints = |f: &dyn Fn(&super::sequence::SequenceMeta) -> i64| {
            Arc::new(Int64Array::from_iter_values(
                sequences.iter().map(|q| f(&q.2)),
            )) as ArrayRef
        };
        Ok(RecordBatch::try_new(
            self.schema.clone(),
            vec![
                texts(&|q| q.0.clone()),
                texts(&|q| q.1.clone()),
                texts(&|_| "brook".to_string()),
                texts(&|q| crate::pg::types::typeof_name(&q.2.ty.arrow())),
                ints(&|q| q.start),
                ints(&|q| q.min),
                ints(&|q| q.max),
                ints(&|q| q.increment),
                Arc::new(BooleanArray::from_iter(
                    sequences.iter().map(|q| Some(q.2.cycle)),
                )),
                ints(&|q| q.cache),
                Arc::new(Int64Array::from(last)),
            ],
        )?)
    }
}

#[async_trait]
impl TableProvider for PgSequences {
    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }

    fn table_type(&self) -> TableType {
        TableType::View
    }

    async fn scan(
        &self,
        _state: &dyn Session,
        projection: Option<&Vec<usize>>,
        _filters: &[Expr],
        _limit: Option<usize>,
    ) -> datafusion::error::Result<Arc<dyn ExecutionPlan>> {
        let batch = self
            .rows()
            .map_err(|e| DataFusionError::External(Box::new(e)))?;
        Ok(MemorySourceConfig::try_new_exec(
            &[vec![batch]],
            self.schema.clone(),
            projection.cloned(),
        )?)
    }
}

/// A user schema: its tables, streams and views (registered), and its sequences, found in
/// the catalog when a name is no registered relation's. Sequences are not listed among the
/// schema's tables (PostgreSQL's `information_schema.tables` does not list them either).
#[derive(Debug)]
pub struct UserSchema {
    pub relations: Arc<dyn SchemaProvider>,
    catalog: Arc<Catalog>,
    db: String,
    schema: String,
}

impl UserSchema {
    pub fn new(
        relations: Arc<dyn SchemaProvider>,
        catalog: Arc<Catalog>,
        db: &str,
        schema: &str,
    ) -> Self {
        UserSchema {
            relations,
            catalog,
            db: db.to_string(),
            schema: schema.to_string(),
        }
    }

    fn sequence(&self, name: &str) -> Option<Arc<dyn TableProvider>> {
        let exists = {
            let doc = self.catalog.read();
            doc.database(&self.db)
                .ok()
                .and_then(|d| d.schemas.get(&self.schema))
                .is_some_and(|s| s.sequences.contains_key(name))
        };
        exists.then(|| {
            Arc::new(SequenceRelation::new(
                self.catalog.clone(),
                &self.db,
                &self.schema,
                name,
            )) as Arc<dyn TableProvider>
        })
    }
}

#[async_trait]
impl SchemaProvider for UserSchema {
    fn table_names(&self) -> Vec<String> {
        self.relations.table_names()
    }

    async fn table(&self, name: &str) -> datafusion::error::Result<Option<Arc<dyn TableProvider>>> {
        match self.relations.table(name).await? {
            Some(t) => Ok(Some(t)),
            None => Ok(self.sequence(name)),
        }
    }

    fn register_table(
        &self,
        name: String,
        table: Arc<dyn TableProvider>,
    ) -> datafusion::error::Result<Option<Arc<dyn TableProvider>>> {
        self.relations.register_table(name, table)
    }

    fn deregister_table(
        &self,
        name: &str,
    ) -> datafusion::error::Result<Option<Arc<dyn TableProvider>>> {
        self.relations.deregister_table(name)
    }

    fn table_exist(&self, name: &str) -> bool {
        self.relations.table_exist(name) || self.sequence(name).is_some()
    }
}
