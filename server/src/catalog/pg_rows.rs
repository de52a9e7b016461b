//! The tables pg_catalog's views are built on, computed from Brook's catalog at each scan:
//! `brook_columns` (a row per column), `brook_indexes` (per primary key and index),
//! `brook_sequences` (per sequence), `brook_views` (per view), `brook_comments` (per
//! comment) and `brook_storage` (the bytes of each relation).

use crate::catalog::{Catalog, CatalogDoc, Identity, RelKind};
use async_trait::async_trait;
use brook_common::{brook_err, Result};
use datafusion::arrow::array::{
    ArrayRef, BooleanArray, Int16Array, Int32Array, Int64Array, ListArray, RecordBatch, StringArray,
};
use datafusion::arrow::datatypes::{DataType, Field, Int16Type, Int32Type, Schema, SchemaRef};
use datafusion::catalog::{Session, TableProvider};
use datafusion::datasource::memory::MemorySourceConfig;
use datafusion::datasource::TableType;
use datafusion::error::DataFusionError;
use datafusion::physical_plan::ExecutionPlan;
use datafusion::prelude::Expr;
use std::collections::HashMap;
use std::sync::Arc;

/// Where the computed tables read: the persistent catalog, one database of it.
#[derive(Debug, Clone)]
pub(super) struct Source {
    pub catalog: Arc<Catalog>,
    pub database: String,
}

/// A table computed from the catalog at each scan.
#[derive(Debug)]
pub(super) struct Computed {
    pub(super) schema: SchemaRef,
    pub(super) source: Source,
    pub(super) rows: fn(&CatalogDoc, &Source, &SchemaRef) -> Result<RecordBatch>,
}

impl Computed {
    /// `brook_columns`: a row per column of every table, stream and materialized view.
    pub(super) fn columns(source: Source) -> Computed {
        Computed {
            schema: Arc::new(Schema::new(vec![
                Field::new("nspname", DataType::Utf8, false),
                Field::new("relname", DataType::Utf8, false),
                Field::new("attnum", DataType::Int16, false),
                Field::new("atttypid", DataType::Int32, false),
                Field::new("atttypmod", DataType::Int32, false),
                Field::new("adsrc", DataType::Utf8, true),
                Field::new("attidentity", DataType::Utf8, false),
                Field::new("attnotnull", DataType::Boolean, false),
                Field::new("attstorage", DataType::Utf8, false),
                Field::new("attndims", DataType::Int16, false),
            ])),
            source,
            rows: column_rows,
        }
    }

    /// `brook_databases`: every database of the server, with a stable oid (PostgreSQL's
    /// for `template1`, 1, and `postgres`, 5; others from their name).
    pub(super) fn databases(source: Source) -> Computed {
        Computed {
            schema: Arc::new(Schema::new(vec![
                Field::new("datname", DataType::Utf8, false),
                Field::new("oid", DataType::Int32, false),
            ])),
            source,
            rows: database_rows,
        }
    }

    /// `brook_storage`: the bytes on disk of every relation of every database.
    pub(super) fn storage(source: Source) -> Computed {
        Computed {
            schema: Arc::new(Schema::new(vec![
                Field::new("datname", DataType::Utf8, false),
                Field::new("nspname", DataType::Utf8, false),
                Field::new("relname", DataType::Utf8, false),
                Field::new("bytes", DataType::Int64, false),
            ])),
            source,
            rows: storage_rows,
        }
    }

    /// `brook_indexes`: a row per primary key (`<table>_pkey`) and per index.
    pub(super) fn indexes(source: Source) -> Computed {
        let list = |t: DataType| DataType::List(Arc::new(Field::new_list_field(t, true)));
        Computed {
            schema: Arc::new(Schema::new(vec![
                Field::new("nspname", DataType::Utf8, false),
                Field::new("relname", DataType::Utf8, false),
                Field::new("indexname", DataType::Utf8, false),
                Field::new("ordinal", DataType::Int64, false),
                Field::new("indisprimary", DataType::Boolean, false),
                Field::new("indisunique", DataType::Boolean, false),
                // int2vector: an array here (for `unnest(indkey)`), printed as PostgreSQL
                // prints the vector (`1 3`, what pg_dump parses).
                Field::new("indkey", list(DataType::Int16), false).with_metadata(
                    [(
                        crate::pg::types::PG_TYPE_KEY.to_string(),
                        crate::pg::encode::VECTOR_TYPE.to_string(),
                    )]
                    .into(),
                ),
                Field::new("indcollation", list(DataType::Int32), false),
                Field::new("indclass", list(DataType::Int32), false),
                // int2vector as text ("0 0"): SQLAlchemy selects it and splits it on spaces.
                Field::new("indoption", DataType::Utf8, false),
                Field::new("defparts", list(DataType::Utf8), false),
            ])),
            source,
            rows: index_rows,
        }
    }
}

impl Computed {
    /// `brook_comments`: the comments on relations (`objsubid` 0) and their columns (the
    /// column's number).
    pub(super) fn comments(source: Source) -> Computed {
        Computed {
            schema: Arc::new(Schema::new(vec![
                Field::new("nspname", DataType::Utf8, false),
                Field::new("relname", DataType::Utf8, false),
                Field::new("objsubid", DataType::Int32, false),
                // Nullable: a lookup of it that finds no row answers NULL (DataFusion takes a
                // scalar subquery's nullability from the column it selects).
                Field::new("description", DataType::Utf8, true),
            ])),
            source,
            rows: comment_rows,
        }
    }

    /// `brook_view_deps`: a row per relation a view or materialized view reads.
    pub(super) fn view_deps(source: Source) -> Computed {
        Computed {
            schema: Arc::new(Schema::new(vec![
                Field::new("nspname", DataType::Utf8, false),
                Field::new("relname", DataType::Utf8, false),
                Field::new("ref_nspname", DataType::Utf8, false),
                Field::new("ref_relname", DataType::Utf8, false),
            ])),
            source,
            rows: view_dep_rows,
        }
    }

    /// `brook_views`: the query of every view and materialized view, as
    /// `pg_get_viewdef` gives it (a leading space, a closing semicolon), and its
    /// `pg_class.relkind` (`v`, `m`: DataFusion shows both as views).
    pub(super) fn views(source: Source) -> Computed {
        Computed {
            schema: Arc::new(Schema::new(vec![
                Field::new("nspname", DataType::Utf8, false),
                Field::new("relname", DataType::Utf8, false),
                Field::new("definition", DataType::Utf8, true),
                Field::new("relkind", DataType::Utf8, false),
            ])),
            source,
            rows: view_rows,
        }
    }

    /// `brook_sequences`: a row per sequence, with its oid, options and owning column.
    pub(super) fn sequences(source: Source) -> Computed {
        Computed {
            schema: Arc::new(Schema::new(vec![
                Field::new("nspname", DataType::Utf8, false),
                Field::new("relname", DataType::Utf8, false),
                Field::new("oid", DataType::Int32, false),
                Field::new("seqtypid", DataType::Int32, false),
                Field::new("seqstart", DataType::Int64, false),
                Field::new("seqincrement", DataType::Int64, false),
                Field::new("seqmax", DataType::Int64, false),
                Field::new("seqmin", DataType::Int64, false),
                Field::new("seqcache", DataType::Int64, false),
                Field::new("seqcycle", DataType::Boolean, false),
                Field::new("owner_table", DataType::Utf8, true),
                Field::new("owner_column", DataType::Utf8, true),
                // the DEFAULT of a column that takes its values from the sequence
                Field::new("nextval_default", DataType::Utf8, false),
            ])),
            source,
            rows: sequence_rows,
        }
    }
}

#[async_trait]
impl TableProvider for Computed {
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
        let batch = {
            let doc = self.source.catalog.read();
            (self.rows)(&doc, &self.source, &self.schema)
        }
        .map_err(|e| DataFusionError::External(Box::new(e)))?;
        Ok(MemorySourceConfig::try_new_exec(
            &[vec![batch]],
            self.schema.clone(),
            projection.cloned(),
        )?)
    }
}

fn column_rows(doc: &CatalogDoc, source: &Source, schema: &SchemaRef) -> Result<RecordBatch> {
    let database = source.database.as_str();
    let (mut nsp, mut rel, mut num, mut typ, mut typmod, mut default, mut identity) =
        (vec![], vec![], vec![], vec![], vec![], vec![], vec![]);
    let (mut not_null, mut storage, mut dims) = (vec![], vec![], vec![]);
    for (sname, s) in &doc.database(database)?.schemas {
        for (rname, r) in &s.relations {
            for (i, c) in r.columns.iter().enumerate() {
                // NOT NULL as declared, and implied by a primary key or an identity.
                not_null.push(c.not_null || r.primary_key.contains(&i) || c.identity.is_some());
                storage.push(storage_of(&c.ty));
                dims.push(i16::from(matches!(
                    c.ty,
                    crate::pg::types::PgType::Array(_)
                )));
                nsp.push(sname.clone());
                rel.push(rname.clone());
                num.push(attnum(i)?);
                typ.push(c.ty.wire().oid() as i32);
                typmod.push(c.ty.typmod());
                // An identity column has no default in PostgreSQL's catalogs: its kind
                // says where its values come from.
                let kind = match c.identity {
                    Some(Identity::Always) => "a",
                    Some(Identity::ByDefault) => "d",
                    None => "",
                };
                default.push(c.default.clone().filter(|_| c.identity.is_none()));
                identity.push(kind);
            }
        }
    }
    Ok(RecordBatch::try_new(
        schema.clone(),
        vec![
            Arc::new(StringArray::from(nsp)) as ArrayRef,
            Arc::new(StringArray::from(rel)),
            Arc::new(Int16Array::from(num)),
            Arc::new(Int32Array::from(typ)),
            Arc::new(Int32Array::from(typmod)),
            Arc::new(StringArray::from(default)),
            Arc::new(StringArray::from(identity)),
            Arc::new(BooleanArray::from(not_null)),
            Arc::new(StringArray::from(storage)),
            Arc::new(Int16Array::from(dims)),
        ],
    )?)
}

/// `pg_type.typstorage` of a declared type (`p` plain for fixed-size types, `m` numeric,
/// `x` extended for variable-length ones): a column's storage, which pg_dump compares with
/// its type's to decide on `SET STORAGE`.
fn storage_of(ty: &crate::pg::types::PgType) -> &'static str {
    use crate::pg::types::PgType as T;
    match ty {
        T::Numeric { .. } => "m",
        T::Text | T::Varchar(_) | T::Char(_) | T::Bytea | T::Json | T::Jsonb | T::Array(_) => "x",
        _ => "p",
    }
}

fn comment_rows(doc: &CatalogDoc, source: &Source, schema: &SchemaRef) -> Result<RecordBatch> {
    let (mut nsp, mut rel, mut sub, mut text) = (vec![], vec![], vec![], vec![]);
    for (sname, s) in &doc.database(&source.database)?.schemas {
        for (rname, r) in &s.relations {
            let columns = r
                .columns
                .iter()
                .enumerate()
                .map(|(i, c)| (i as i32 + 1, &c.comment));
            for (n, comment) in std::iter::once((0, &r.comment)).chain(columns) {
                if let Some(c) = comment {
                    nsp.push(sname.clone());
                    rel.push(rname.clone());
                    sub.push(n);
                    text.push(c.clone());
                }
            }
        }
    }
    Ok(RecordBatch::try_new(
        schema.clone(),
        vec![
            Arc::new(StringArray::from(nsp)) as ArrayRef,
            Arc::new(StringArray::from(rel)),
            Arc::new(Int32Array::from(sub)),
            Arc::new(StringArray::from(text)),
        ],
    )?)
}

fn view_rows(doc: &CatalogDoc, source: &Source, schema: &SchemaRef) -> Result<RecordBatch> {
    let (mut nsp, mut rel, mut def, mut kind) = (vec![], vec![], vec![], vec![]);
    for (sname, s) in &doc.database(&source.database)?.schemas {
        for (rname, r) in &s.relations {
            let (RelKind::View | RelKind::MaterializedView, Some(q)) = (r.kind, &r.query) else {
                continue;
            };
            nsp.push(sname.clone());
            rel.push(rname.clone());
            def.push(format!(" {q};"));
            kind.push(if r.kind == RelKind::View { "v" } else { "m" });
        }
    }
    Ok(RecordBatch::try_new(
        schema.clone(),
        vec![
            Arc::new(StringArray::from(nsp)) as ArrayRef,
            Arc::new(StringArray::from(rel)),
            Arc::new(StringArray::from(def)),
            Arc::new(StringArray::from(kind)),
        ],
    )?)
}

fn view_dep_rows(doc: &CatalogDoc, source: &Source, schema: &SchemaRef) -> Result<RecordBatch> {
    let mut cols: [Vec<String>; 4] = Default::default();
    for (sname, s) in &doc.database(&source.database)?.schemas {
        for (rname, r) in &s.relations {
            for (ref_schema, ref_name) in &r.depends_on {
                for (col, v) in cols.iter_mut().zip([sname, rname, ref_schema, ref_name]) {
                    col.push(v.clone());
                }
            }
        }
    }
    let arrays: Vec<ArrayRef> = cols
        .into_iter()
        .map(|c| Arc::new(StringArray::from(c)) as ArrayRef)
        .collect();
    Ok(RecordBatch::try_new(schema.clone(), arrays)?)
}

fn sequence_rows(doc: &CatalogDoc, source: &Source, schema: &SchemaRef) -> Result<RecordBatch> {
    let mut nsp = vec![];
    let mut rel = vec![];
    let mut oid = vec![];
    let mut typ = vec![];
    let (mut start, mut inc, mut max, mut min, mut cache) =
        (vec![], vec![], vec![], vec![], vec![]);
    let (mut cycle, mut table, mut column, mut default) = (vec![], vec![], vec![], vec![]);
    for (sname, s) in &doc.database(&source.database)?.schemas {
        for (qname, q) in &s.sequences {
            default.push(crate::catalog::sequence::nextval_default(sname, qname));
            nsp.push(sname.clone());
            rel.push(qname.clone());
            oid.push(
                i32::try_from(q.oid())
                    .map_err(|_| brook_err!(Internal, "sequence oid {} over int4", q.oid()))?,
            );
            typ.push(q.ty.wire().oid() as i32);
            start.push(q.start);
            inc.push(q.increment);
            max.push(q.max);
            min.push(q.min);
            cache.push(q.cache);
            cycle.push(q.cycle);
            table.push(q.owned_by.as_ref().map(|o| o.0.clone()));
            column.push(q.owned_by.as_ref().map(|o| o.1.clone()));
        }
    }
    Ok(RecordBatch::try_new(
        schema.clone(),
        vec![
            Arc::new(StringArray::from(nsp)) as ArrayRef,
            Arc::new(StringArray::from(rel)),
            Arc::new(Int32Array::from(oid)),
            Arc::new(Int32Array::from(typ)),
            Arc::new(Int64Array::from(start)),
            Arc::new(Int64Array::from(inc)),
            Arc::new(Int64Array::from(max)),
            Arc::new(Int64Array::from(min)),
            Arc::new(Int64Array::from(cache)),
            Arc::new(BooleanArray::from(cycle)),
            Arc::new(StringArray::from(table)),
            Arc::new(StringArray::from(column)),
            Arc::new(StringArray::from(default)),
        ],
    )?)
}

fn database_rows(doc: &CatalogDoc, _source: &Source, schema: &SchemaRef) -> Result<RecordBatch> {
    let names: Vec<&String> = doc.databases.keys().collect();
    let oids: Vec<i32> = names.iter().map(|n| database_oid(n)).collect();
    Ok(RecordBatch::try_new(
        schema.clone(),
        vec![
            Arc::new(StringArray::from_iter_values(names)) as ArrayRef,
            Arc::new(Int32Array::from(oids)),
        ],
    )?)
}

/// A database's oid: the same every time the server lists it (pg_database is shared by
/// all databases, and each database's context would number them its own way). FNV-1a of
/// the name, above the range PostgreSQL reserves for its own objects.
fn database_oid(name: &str) -> i32 {
    match name {
        "template1" => 1,
        "postgres" => 5,
        _ => stable_oid(name),
    }
}

/// An oid from a name: FNV-1a of it, above the range PostgreSQL reserves for its own
/// objects (16384 ..= i32::MAX), the same every time.
pub(super) fn stable_oid(name: &str) -> i32 {
    let hash = name.bytes().fold(0x811c_9dc5u32, |h, b| {
        (h ^ u32::from(b)).wrapping_mul(0x0100_0193)
    });
    16384 + (hash % (i32::MAX as u32 - 16384)) as i32
}

fn storage_rows(doc: &CatalogDoc, source: &Source, schema: &SchemaRef) -> Result<RecordBatch> {
    let (mut dat, mut nsp, mut rel, mut bytes) = (vec![], vec![], vec![], vec![]);
    for (dname, sname, rname, id) in crate::catalog::all_relations(doc) {
        dat.push(dname);
        nsp.push(sname);
        rel.push(rname);
        bytes.push(dir_bytes(&crate::catalog::relation_path(
            source.catalog.dir(),
            id,
        )));
    }
    Ok(RecordBatch::try_new(
        schema.clone(),
        vec![
            Arc::new(StringArray::from(dat)) as ArrayRef,
            Arc::new(StringArray::from(nsp)),
            Arc::new(StringArray::from(rel)),
            Arc::new(Int64Array::from(bytes)),
        ],
    )?)
}

/// The bytes of the files under `dir` (a file that vanishes meanwhile counts 0).
fn dir_bytes(dir: &std::path::Path) -> i64 {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    entries
        .flatten()
        .map(|e| match e.metadata() {
            Ok(m) if m.is_dir() => dir_bytes(&e.path()),
            Ok(m) => i64::try_from(m.len()).unwrap_or(i64::MAX),
            Err(_) => 0,
        })
        .sum()
}

fn attnum(index: usize) -> Result<i16> {
    i16::try_from(index + 1).map_err(|_| brook_err!(Internal, "column number {index} over int2"))
}

fn index_rows(doc: &CatalogDoc, source: &Source, schema: &SchemaRef) -> Result<RecordBatch> {
    let database = source.database.as_str();
    let mut nsp = vec![];
    let mut rel = vec![];
    let mut name = vec![];
    let mut ordinal = vec![];
    let mut primary = vec![];
    let mut unique = vec![];
    let mut keys: Vec<Vec<i16>> = vec![];
    let mut defparts: Vec<Vec<String>> = vec![];
    for (sname, s) in &doc.database(database)?.schemas {
        let mut per_relation: HashMap<String, i64> = HashMap::new();
        let mut push = |relname: &str,
                        index: String,
                        is_primary: bool,
                        is_unique: bool,
                        key: Vec<i16>,
                        names: Vec<String>| {
            let n = per_relation.entry(relname.to_string()).or_insert(0);
            nsp.push(sname.clone());
            rel.push(relname.to_string());
            name.push(index.clone());
            ordinal.push(*n);
            *n += 1;
            primary.push(is_primary);
            unique.push(is_unique);
            keys.push(key);
            // `pg_get_indexdef(index, 0)` and then each column's (`pg_get_indexdef(index, k)`).
            // Names quoted where they must be, as PostgreSQL prints them (pg_dump replays it).
            let q = crate::ident::quote_if_needed;
            let quoted: Vec<String> = names.iter().map(|n| q(n)).collect();
            let mut parts = vec![format!(
                "CREATE {}INDEX {} ON {}.{} USING btree ({})",
                if is_unique { "UNIQUE " } else { "" },
                q(&index),
                q(sname),
                q(relname),
                quoted.join(", ")
            )];
            parts.extend(quoted);
            defparts.push(parts);
        };
        for (rname, r) in &s.relations {
            if !r.primary_key.is_empty() {
                let key = r
                    .primary_key
                    .iter()
                    .map(|&i| attnum(i))
                    .collect::<Result<_>>()?;
                let names = r
                    .primary_key
                    .iter()
                    .filter_map(|&i| r.columns.get(i))
                    .map(|c| c.name.clone())
                    .collect();
                push(rname, format!("{rname}_pkey"), true, true, key, names);
            }
        }
        for (iname, index) in &s.indexes {
            let Some(r) = s.relations.get(&index.table) else {
                continue;
            };
            let key = index
                .columns
                .iter()
                .map(|c| {
                    let i = r.columns.iter().position(|m| &m.name == c).ok_or_else(|| {
                        brook_err!(Internal, "index {iname} names a missing column {c}")
                    })?;
                    attnum(i)
                })
                .collect::<Result<_>>()?;
            push(
                &index.table,
                iname.clone(),
                false,
                index.unique,
                key,
                index.columns.clone(),
            );
        }
    }
    let zeros32 = |k: &Vec<i16>| Some(k.iter().map(|_| Some(0i32)).collect::<Vec<_>>());
    Ok(RecordBatch::try_new(
        schema.clone(),
        vec![
            Arc::new(StringArray::from(nsp)) as ArrayRef,
            Arc::new(StringArray::from(rel)),
            Arc::new(StringArray::from(name)),
            Arc::new(Int64Array::from(ordinal)),
            Arc::new(BooleanArray::from(primary)),
            Arc::new(BooleanArray::from(unique)),
            Arc::new(ListArray::from_iter_primitive::<Int16Type, _, _>(
                keys.iter()
                    .map(|k| Some(k.iter().map(|&a| Some(a)).collect::<Vec<_>>())),
            )),
            Arc::new(ListArray::from_iter_primitive::<Int32Type, _, _>(
                keys.iter().map(zeros32),
            )),
            Arc::new(ListArray::from_iter_primitive::<Int32Type, _, _>(
                keys.iter().map(zeros32),
            )),
            Arc::new(StringArray::from_iter_values(
                keys.iter().map(|k| vec!["0"; k.len()].join(" ")),
            )),
            Arc::new(text_lists(&defparts)),
        ],
    )?)
}

/// A list column of texts.
fn text_lists(lists: &[Vec<String>]) -> ListArray {
    let mut builder =
        datafusion::arrow::array::ListBuilder::new(datafusion::arrow::array::StringBuilder::new())
            .with_field(Arc::new(Field::new_list_field(DataType::Utf8, true)));
    for list in lists {
        for name in list {
            builder.values().append_value(name);
        }
        builder.append(true);
    }
    builder.finish()
}
