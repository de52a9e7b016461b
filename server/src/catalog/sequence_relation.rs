//! A sequence read as a relation: `SELECT last_value, log_cnt, is_called FROM s`, one
//! row, as PostgreSQL shows a sequence's state (pg_dump reads it to write `setval`).
//! `last_value` is the last value handed out (or the next one when `is_called` is false),
//! not the state reserved ahead in the catalog; `log_cnt` is how many values after it the
//! catalog already covers, which PostgreSQL's column counts for its WAL the same way.
//!
//! Schemas resolve sequences by name when no relation has it ([`UserSchema`]): a sequence
//! is created, renamed and dropped in the catalog alone, and reading it finds it there.
//! [`SequenceTable::all`] is the `pg_sequences` view of them all.

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

/// Which sequences a [`SequenceTable`] shows.
#[derive(Debug)]
enum Which {
    /// One sequence, as its own relation (`SELECT ... FROM s`).
    One { schema: String, name: String },
    /// Every sequence of the database (`pg_sequences`).
    All,
}

/// Sequences as a relation computed at each scan: one sequence's state, or `pg_sequences`.
#[derive(Debug)]
pub struct SequenceTable {
    catalog: Arc<Catalog>,
    db: String,
    which: Which,
    schema: SchemaRef,
}

impl SequenceTable {
    /// Sequence `schema.name` as a one-row relation.
    pub fn one(catalog: Arc<Catalog>, db: &str, schema: &str, name: &str) -> Self {
        SequenceTable {
            catalog,
            db: db.to_string(),
            which: Which::One {
                schema: schema.to_string(),
                name: name.to_string(),
            },
            schema: Arc::new(Schema::new(vec![
                Field::new("last_value", DataType::Int64, false),
                Field::new("log_cnt", DataType::Int64, false),
                Field::new("is_called", DataType::Boolean, false),
            ])),
        }
    }

    /// `pg_sequences`: every sequence of database `db` with its options and the last value
    /// handed out (NULL before the first, as PostgreSQL shows it).
    pub fn all(catalog: Arc<Catalog>, db: &str) -> Self {
        let text = |n: &str| Field::new(n, DataType::Utf8, false);
        let int = |n: &str| Field::new(n, DataType::Int64, false);
        SequenceTable {
            catalog,
            db: db.to_string(),
            which: Which::All,
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
        match &self.which {
            Which::One { schema, name } => self.one_row(schema, name),
            Which::All => self.all_rows(),
        }
    }

    /// One sequence's state.
    fn one_row(&self, schema: &str, name: &str) -> brook_common::Result<RecordBatch> {
        let state = self.catalog.sequence_state(&self.db, schema, name)?;
        Ok(RecordBatch::try_new(
            self.schema.clone(),
            vec![
                Arc::new(Int64Array::from(vec![state.last_value])),
                Arc::new(Int64Array::from(vec![state.log_cnt])),
                Arc::new(BooleanArray::from(vec![state.is_called])),
            ],
        )?)
    }

    /// Every sequence of the database (`pg_sequences`).
    fn all_rows(&self) -> brook_common::Result<RecordBatch> {
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
impl TableProvider for SequenceTable {
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
            Arc::new(SequenceTable::one(
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
