//! CREATE TABLE, CREATE TABLE AS and CREATE STREAM: column definitions to catalog entries.

use crate::catalog::partitioning::{self, Partitioning};
use crate::catalog::sequence::SequenceMeta;
use crate::catalog::{ColumnMeta, RelKind, RelationMeta, WatermarkMeta};
use crate::handler::sequence::{owned_sequence, serial_type};
use crate::ident::ident_name;
use crate::pg::types::PgType;
use crate::session::Outcome;
use crate::session::{Notice, Session};
use crate::settings::parse_timeout;
use crate::write::WriteMode;
use brook_common::{brook_err, BrookError, Result};
use brook_planner::CreateStream;
use datafusion::arrow::datatypes::{DataType, SchemaRef};
use datafusion::sql::sqlparser::ast::{self, ColumnOption, Expr, Statement, TableConstraint};
use std::collections::BTreeMap;
use std::sync::Arc;

/// Catalog columns for a query result stored by `what` (CREATE TABLE AS, a view): types
/// from `types`, names from `names` (the names the client sees).
pub(crate) fn stored_columns(
    types: &SchemaRef,
    names: &SchemaRef,
    what: &str,
) -> Result<Vec<ColumnMeta>> {
    types
        .fields()
        .iter()
        .zip(names.fields())
        .map(|(f, named)| {
            // A declared type carried in the field's metadata holds only while the values
            // are still of its Arrow type (a cast keeps the metadata of its input).
            let ty = PgType::from_field(f)
                .and_then(|t| kept_type(t, f.data_type()))
                .or_else(|| pg_type_of_arrow(f.data_type()))
                .ok_or_else(|| {
                    brook_err!(
                        Unsupported,
                        "column \"{}\" has type {} which {what} cannot store",
                        named.name(),
                        f.data_type()
                    )
                })?;
            Ok(ColumnMeta {
                name: named.name().clone(),
                ty,
                not_null: false,
                default: None,
                identity: None,
                comment: None,
                sketch_item: f
                    .metadata()
                    .get(brook_synopses::functions::SKETCH_ITEM_KEY)
                    .cloned(),
            })
        })
        .collect()
}

/// The declared type `t` of a result column of Arrow type `dt`, while the values are still
/// of its Arrow type; an unconstrained numeric also at another scale of 38 digits (a
/// quotient's, `udf::numeric_division`), which it keeps.
fn kept_type(t: PgType, dt: &DataType) -> Option<PgType> {
    match (&t, dt) {
        (
            PgType::Numeric {
                precision: None, ..
            },
            DataType::Decimal128(38, s),
        ) if *s >= 0 => Some(PgType::Numeric {
            precision: None,
            scale: (*s != 10).then_some(*s),
        }),
        _ => (t.arrow() == *dt).then_some(t),
    }
}

/// The column type a query result column gets in CREATE TABLE AS.
pub(crate) fn pg_type_of_arrow(dt: &DataType) -> Option<PgType> {
    Some(match dt {
        DataType::Boolean => PgType::Bool,
        DataType::Int8 | DataType::Int16 | DataType::UInt8 => PgType::Int2,
        DataType::Int32 | DataType::UInt16 => PgType::Int4,
        DataType::Int64 | DataType::UInt32 => PgType::Int8,
        DataType::UInt64 => PgType::Numeric {
            precision: Some(20),
            scale: Some(0),
        },
        DataType::Float16 | DataType::Float32 => PgType::Float4,
        DataType::Float64 => PgType::Float8,
        DataType::Decimal128(p, s) => PgType::Numeric {
            precision: Some(*p),
            scale: Some(*s),
        },
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View | DataType::Null => PgType::Text,
        DataType::Binary | DataType::LargeBinary | DataType::BinaryView => PgType::Bytea,
        DataType::Date32 | DataType::Date64 => PgType::Date,
        DataType::Timestamp(_, None) => PgType::Timestamp(None),
        DataType::Timestamp(_, Some(_)) => PgType::Timestamptz(None),
        DataType::Time64(_) | DataType::Time32(_) => PgType::Time(None),
        DataType::Interval(_) => PgType::Interval,
        DataType::List(f) | DataType::LargeList(f) | DataType::FixedSizeList(f, _) => {
            match pg_type_of_arrow(f.data_type())? {
                // One dimension is stored; a list of lists has no column type.
                PgType::Array(_) => return None,
                elem => PgType::Array(Box::new(elem)),
            }
        }
        _ => return None,
    })
}

/// The columns of a CREATE TABLE or CREATE STREAM.
pub(crate) struct ColumnDefs {
    pub columns: Vec<ColumnMeta>,
    /// Indexes of the primary key's columns.
    pub primary_key: Vec<usize>,
    /// The sequences SERIAL and identity columns own, by column index.
    pub sequences: Vec<(usize, SequenceMeta)>,
}

/// Whether an INTO stands anywhere in `q` (a set operation's SELECT, a subquery's).
fn into_elsewhere(q: &ast::Query) -> bool {
    struct Into;
    impl ast::Visitor for Into {
        type Break = ();
        fn pre_visit_query(&mut self, q: &ast::Query) -> std::ops::ControlFlow<()> {
            match q.body.as_ref() {
                ast::SetExpr::Select(s) if s.into.is_some() => std::ops::ControlFlow::Break(()),
                _ => std::ops::ControlFlow::Continue(()),
            }
        }
    }
    fn in_set_expr(e: &ast::SetExpr) -> bool {
        match e {
            ast::SetExpr::Select(s) => s.into.is_some(),
            ast::SetExpr::SetOperation { left, right, .. } => {
                in_set_expr(left) || in_set_expr(right)
            }
            ast::SetExpr::Query(q) => in_set_expr(&q.body),
            _ => false,
        }
    }
    in_set_expr(&q.body) || ast::Visit::visit(q, &mut Into).is_break()
}

impl Session {
    pub(crate) fn columns_from_defs(
        &self,
        defs: &[ast::ColumnDef],
        constraints: &[TableConstraint],
        kind: RelKind,
    ) -> Result<ColumnDefs> {
        let mut columns: Vec<ColumnMeta> = Vec::new();
        let mut sequences = Vec::new();
        let mut pk: Vec<String> = Vec::new();
        for d in defs {
            let name = ident_name(&d.name);
            if brook_common::columns::is_reserved(&name) {
                return Err(brook_err!(
                    InvalidDefinition,
                    "column name \"{name}\" is reserved"
                ));
            }
            if columns.iter().any(|c| c.name == name) {
                return Err(BrookError::DuplicateObject {
                    what: "column",
                    name,
                    code: "42701",
                });
            }
            let serial = serial_type(&d.data_type);
            let ty = match &serial {
                Some(t) => t.clone(),
                None => PgType::from_sql(&d.data_type)?,
            };
            let mut col = ColumnMeta {
                name: name.clone(),
                ty,
                not_null: false,
                default: None,
                identity: None,
                comment: None,
                sketch_item: None,
            };
            for opt in &d.options {
                match &opt.option {
                    ColumnOption::NotNull => col.not_null = true,
                    ColumnOption::Null => {}
                    ColumnOption::Default(e) => col.default = Some(e.to_string()),
                    ColumnOption::PrimaryKey(_) => {
                        if !pk.is_empty() {
                            return Err(brook_err!(
                                InvalidDefinition,
                                "multiple primary keys for a table are not allowed"
                            ));
                        }
                        pk.push(name.clone());
                    }
                    ColumnOption::Generated { .. } => {}
                    other => {
                        return Err(brook_err!(
                            Unsupported,
                            "column constraint {other} is not supported yet"
                        ))
                    }
                }
            }
            if let Some(seq) = owned_sequence(&mut col, serial.is_some(), &d.options)? {
                sequences.push((columns.len(), seq));
            }
            columns.push(col);
        }
        for c in constraints {
            match c {
                TableConstraint::PrimaryKey(p) => {
                    if !pk.is_empty() {
                        return Err(brook_err!(
                            InvalidDefinition,
                            "multiple primary keys for a table are not allowed"
                        ));
                    }
                    for ic in &p.columns {
                        match &ic.column.expr {
                            Expr::Identifier(i) => pk.push(ident_name(i)),
                            other => {
                                return Err(brook_err!(
                                    Unsupported,
                                    "primary key on expression {other}"
                                ))
                            }
                        }
                    }
                }
                other => {
                    return Err(brook_err!(
                        Unsupported,
                        "table constraint {other} is not supported yet"
                    ))
                }
            }
        }
        if !pk.is_empty() && kind == RelKind::Stream {
            return Err(brook_err!(
                InvalidDefinition,
                "a stream is append-only and cannot have a PRIMARY KEY"
            ));
        }
        let mut pk_idx = Vec::new();
        for k in pk {
            let i = columns.iter().position(|c| c.name == k).ok_or_else(|| {
                brook_err!(
                    UndefinedColumn,
                    "column \"{k}\" named in key does not exist"
                )
            })?;
            columns[i].not_null = true;
            pk_idx.push(i);
        }
        if columns.is_empty() {
            return Err(brook_err!(Unsupported, "tables without columns"));
        }
        Ok(ColumnDefs {
            columns,
            primary_key: pk_idx,
            sequences,
        })
    }

    pub(crate) async fn create_table(&mut self, ct: ast::CreateTable) -> Result<Outcome> {
        if matches!(
            ct.on_commit,
            Some(ast::OnCommit::DeleteRows | ast::OnCommit::Drop)
        ) {
            return Err(brook_err!(
                Unsupported,
                "ON COMMIT DELETE ROWS / DROP (a temporary table lasts until the session \
                 ends or DROP TABLE)"
            ));
        }
        let (schema, name) = self.resolve_new(&ct.name, ct.temporary)?;
        if let Some(q) = ct.query {
            return self
                .create_table_as(schema, name, ct.if_not_exists, *q)
                .await;
        }
        refuse_stream_options(&ct.table_options)?;
        let defs = self.columns_from_defs(&ct.columns, &ct.constraints, RelKind::Table)?;
        let meta = RelationMeta {
            id: 0,
            kind: RelKind::Table,
            columns: defs.columns,
            primary_key: defs.primary_key,
            watermark: None,
            options: BTreeMap::new(),
            query: None,
            depends_on: Vec::new(),
            comment: None,
        };
        self.validate_defaults(&meta).await?;
        // IF NOT EXISTS on an existing table answers with the same tag, as PostgreSQL does.
        if !self.engine.create_relation_owning(
            &self.db,
            &schema,
            &name,
            meta,
            defs.sequences,
            ct.if_not_exists,
        )? {
            self.notices.push(Notice::relation_exists(&name));
        }
        Ok(Outcome::Command("CREATE TABLE".into()))
    }

    /// `SELECT ... INTO [TEMP] [TABLE] name FROM ...`: PostgreSQL's other spelling of
    /// `CREATE [TEMP] TABLE name AS SELECT ...`, answered `SELECT n` as there. (DataFusion
    /// planned it as a table in memory only: not in the catalog, gone at restart.) None when
    /// the query has no INTO; 0A000 for an INTO not in its first SELECT.
    pub(crate) async fn select_into(&mut self, q: &ast::Query) -> Option<Result<Outcome>> {
        let ast::SetExpr::Select(select) = q.body.as_ref() else {
            return into_elsewhere(q).then(|| {
                Err(brook_err!(
                    Unsupported,
                    "SELECT ... INTO in a set operation or subquery (use CREATE TABLE ... AS)"
                ))
            });
        };
        let into = select.into.clone()?;
        let mut query = q.clone();
        if let ast::SetExpr::Select(s) = query.body.as_mut() {
            s.into = None;
        }
        Some(match self.resolve_new(&into.name, into.temporary) {
            Ok((schema, name)) => self.create_table_as(schema, name, false, query).await,
            Err(e) => Err(e),
        })
    }

    pub(crate) async fn create_table_as(
        &mut self,
        schema: String,
        name: String,
        if_not_exists: bool,
        q: ast::Query,
    ) -> Result<Outcome> {
        let mut stmt = Statement::Query(Box::new(q));
        crate::pg::sql::pg_literals(&mut stmt)?;
        let plan = self.plan(stmt).await?;
        // The shape after the analyzer's rules, which may retype a column.
        let arrow_schema = Arc::new(self.analyzed_schema(&plan).as_arrow().clone());
        let df = self.ctx.execute_logical_plan(plan).await?;
        let columns = stored_columns(&arrow_schema, &arrow_schema, "a table")?;
        let meta = RelationMeta {
            id: 0,
            kind: RelKind::Table,
            columns,
            primary_key: vec![],
            watermark: None,
            options: BTreeMap::new(),
            query: None,
            depends_on: Vec::new(),
            comment: None,
        };
        if !self
            .engine
            .create_relation(&self.db, &schema, &name, meta, if_not_exists)?
        {
            self.notices.push(Notice::relation_exists(&name));
            return Ok(Outcome::Command("CREATE TABLE AS".into()));
        }
        // Until the rows are written, the table goes with a failure: an error, or the
        // statement dropped by a cancel or its timeout (PostgreSQL's CREATE TABLE AS is one
        // transaction; Brook left the table empty, and a retry failed with 42P07).
        let mut created = CreatedRelation {
            engine: self.engine.clone(),
            db: self.db.clone(),
            schema: schema.clone(),
            name: name.clone(),
            kind: RelKind::Table,
            kept: false,
        };
        let (meta, store) = self.relation(&schema, &name)?;
        let stream = df.execute_stream().await?;
        let (n, _) = self
            .write_stream_mapped(&meta, &store, &name, stream, None, WriteMode::Append, None)
            .await?;
        created.kept = true;
        Ok(Outcome::Command(format!("SELECT {n}")))
    }

    pub(crate) async fn create_stream(&mut self, cs: CreateStream) -> Result<Outcome> {
        let (schema, name) = self.resolve(&cs.name)?;
        let defs = self.columns_from_defs(&cs.columns, &cs.constraints, RelKind::Stream)?;
        let columns = defs.columns;
        let watermark = match cs.watermark {
            Some(w) => {
                let col = columns.iter().find(|c| c.name == w.column).ok_or_else(|| {
                    brook_err!(
                        UndefinedColumn,
                        "watermark column \"{}\" does not exist",
                        w.column
                    )
                })?;
                if !matches!(col.ty, PgType::Timestamp(_) | PgType::Timestamptz(_)) {
                    return Err(brook_err!(
                        DatatypeMismatch,
                        "watermark column \"{}\" must be a timestamp, not {}",
                        col.name,
                        col.ty.name()
                    ));
                }
                Some(WatermarkMeta {
                    column: col.name.clone(),
                    expr: w.expr,
                })
            }
            None => None,
        };
        let mut options = BTreeMap::new();
        for o in &cs.options {
            let ast::SqlOption::KeyValue { key, value } = o else {
                return Err(brook_err!(Unsupported, "stream option {o}"));
            };
            let key = ident_name(key);
            if options.insert(key.clone(), option_value(value)).is_some() {
                return Err(brook_err!(
                    InvalidParameter,
                    "parameter \"{key}\" specified more than once"
                ));
            }
        }
        if let Some(unknown) = options
            .keys()
            .find(|k| !STREAM_OPTIONS.contains(&k.as_str()))
        {
            return Err(brook_err!(
                InvalidParameter,
                "unrecognized parameter \"{unknown}\" (a stream takes {})",
                STREAM_OPTIONS.join(", ")
            ));
        }
        if let Some(p) = Partitioning::from_options(&options, &columns)? {
            // Kept as one spelling, which ALTER ... RENAME COLUMN rewrites.
            options.insert(partitioning::PARTITIONS.into(), p.partitions.to_string());
            options.insert(partitioning::PARTITION_KEY.into(), p.key_names(&columns));
        }
        if let Some(text) = options.get(crate::stream::queries::IDLE_TIMEOUT) {
            parse_timeout(text)?;
            if watermark.is_none() {
                return Err(brook_err!(
                    InvalidParameter,
                    "idle_timeout applies to a stream with a WATERMARK FOR clause"
                ));
            }
        }
        let meta = RelationMeta {
            id: 0,
            kind: RelKind::Stream,
            columns,
            primary_key: vec![],
            watermark,
            options,
            query: None,
            depends_on: Vec::new(),
            comment: None,
        };
        self.validate_defaults(&meta).await?;
        if !self.engine.create_relation_owning(
            &self.db,
            &schema,
            &name,
            meta,
            defs.sequences,
            cs.if_not_exists,
        )? {
            self.notices.push(Notice::relation_exists(&name));
        }
        Ok(Outcome::Command("CREATE STREAM".into()))
    }

    /// Check every DEFAULT expression evaluates to the column's type now, not at first insert.
    pub(crate) async fn validate_defaults(&self, meta: &RelationMeta) -> Result<()> {
        for (i, c) in meta.columns.iter().enumerate() {
            if c.default.is_some() {
                self.default_value(meta, i).await?;
            }
        }
        Ok(())
    }
}

/// A `WITH` option's value as PostgreSQL reads it: a string's text, an identifier folded
/// as a name (lower case unless quoted), anything else as written.
fn option_value(value: &Expr) -> String {
    match value {
        Expr::Identifier(name) => ident_name(name),
        Expr::Value(v) => v.clone().into_string().unwrap_or_else(|| v.to_string()),
        other => other.to_string(),
    }
}

/// The options `CREATE STREAM ... WITH (...)` takes.
const STREAM_OPTIONS: [&str; 3] = [
    crate::stream::queries::IDLE_TIMEOUT,
    partitioning::PARTITIONS,
    partitioning::PARTITION_KEY,
];

/// Refuse a table's `WITH` option that only a stream takes (a table given `partitions`
/// would otherwise be silently unpartitioned). PostgreSQL's storage parameters
/// (`fillfactor`, ...) are accepted and have no effect.
fn refuse_stream_options(options: &ast::CreateTableOptions) -> Result<()> {
    let ast::CreateTableOptions::With(options) = options else {
        return Ok(());
    };
    for o in options {
        if let ast::SqlOption::KeyValue { key, .. } = o {
            let key = ident_name(key);
            if STREAM_OPTIONS.contains(&key.as_str()) {
                return Err(brook_err!(
                    Unsupported,
                    "option \"{key}\" of a table: it applies to streams (CREATE STREAM ... WITH ({key} = ...))"
                ));
            }
        }
    }
    Ok(())
}

/// A relation a CREATE made, dropped when the statement ends before it is complete
/// (`kept` false): on an error, and when a cancel drops the statement's future. (A table
/// CREATE TABLE AS fills, a materialized view or synopsis whose first build runs.)
pub(crate) struct CreatedRelation {
    pub(crate) engine: Arc<crate::db::Engine>,
    pub(crate) db: Arc<crate::db::Database>,
    pub(crate) schema: String,
    pub(crate) name: String,
    pub(crate) kind: RelKind,
    pub(crate) kept: bool,
}

impl Drop for CreatedRelation {
    fn drop(&mut self) {
        if self.kept {
            return;
        }
        if let Err(e) =
            self.engine
                .drop_relation(&self.db, &self.schema, &self.name, self.kind, true)
        {
            tracing::warn!(relation = %self.name, error = %e, "could not drop the relation of a failed CREATE");
        }
    }
}
