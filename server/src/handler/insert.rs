//! INSERT (VALUES or a query) and RETURNING.

use crate::catalog::{Identity, RelationMeta};
use crate::handler::query::rows_outcome;
use crate::handler::write::default_query;
use crate::handler::write::Returning;
use crate::ident::ident_name;
use crate::ident::object_parts;
use crate::ident::quote_ident;
use crate::pg::sql::pg_literals;
use crate::pg::sql::pg_named;
use crate::session::Outcome;
use crate::session::Session;
use crate::write::WriteMode;
use brook_common::{brook_err, BrookError, Result};
use brook_planner::statement::Overriding;
use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::datatypes::Schema;
use datafusion::execution::SendableRecordBatchStream;
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::prelude::SessionContext;
use datafusion::sql::parser::Statement as DFStatement;
use datafusion::sql::sqlparser::ast::{
    self, Expr, OnConflictAction, OnInsert, SelectItem, SetExpr, Statement, TableObject,
};
use std::sync::Arc;

/// The query `SELECT <items> FROM <from>` of a RETURNING list, ready to plan, with the
/// PostgreSQL names of its columns.
pub(crate) fn returning_query(
    items: &[SelectItem],
    from: &str,
) -> Result<(Statement, Option<Vec<brook_planner::rewrite::OutputName>>)> {
    let items: Vec<String> = items.iter().map(|i| i.to_string()).collect();
    let sql = format!("SELECT {} FROM {from}", items.join(", "));
    let Some(mut q) = brook_planner::parser::parse_one(&sql)?.into_plain_sql() else {
        return Err(brook_err!(
            Internal,
            "RETURNING list did not parse as a query"
        ));
    };
    let names = brook_planner::rewrite::output_names(&q);
    pg_literals(&mut q)?;
    Ok((q, names))
}

/// `OVERRIDING USER VALUE`: the values given for identity columns are left out (the
/// column, and each row's value or the query's column), so the columns take their
/// sequences' values, as PostgreSQL ignores them.
fn leave_identity_to_sequences(ins: &mut ast::Insert, meta: &RelationMeta) -> Result<()> {
    let listed: Vec<String> = if ins.columns.is_empty() {
        // Without a column list, a VALUES row of n values fills the first n columns.
        let width = match ins.source.as_ref().map(|q| q.body.as_ref()) {
            Some(SetExpr::Values(v)) => v.rows.first().map_or(0, |r| r.content.len()),
            _ => meta.columns.len(),
        };
        meta.columns
            .iter()
            .take(width)
            .map(|c| c.name.clone())
            .collect()
    } else {
        ins.columns
            .iter()
            .map(|c| Ok(object_parts(c)?.last().cloned().unwrap_or_default()))
            .collect::<Result<_>>()?
    };
    let identity = |name: &String| {
        meta.columns
            .iter()
            .any(|c| &c.name == name && c.identity.is_some())
    };
    let keep: Vec<usize> = (0..listed.len())
        .filter(|&j| !identity(&listed[j]))
        .collect();
    if keep.len() == listed.len() {
        return Ok(());
    }
    let Some(source) = ins.source.as_mut() else {
        return Ok(());
    };
    // VALUES: each identity value becomes DEFAULT (the column's sequence).
    if let SetExpr::Values(values) = source.body.as_mut() {
        for row in values.rows.iter_mut() {
            for (j, cell) in row.content.iter_mut().enumerate() {
                if !keep.contains(&j) {
                    *cell = Expr::Identifier(ast::Ident::new("DEFAULT"));
                }
            }
        }
        return Ok(());
    }
    if keep.is_empty() {
        return Err(brook_err!(
            Unsupported,
            "OVERRIDING USER VALUE with a query that gives only identity columns (list the other columns, or use VALUES (DEFAULT))"
        ));
    }
    ins.columns = keep
        .iter()
        .map(|&j| ast::ObjectName::from(vec![ast::Ident::with_quote('"', &listed[j])]))
        .collect();
    // A query: its columns by position, the identity ones left out.
    let names: Vec<String> = (1..=listed.len()).map(|j| format!("c{j}")).collect();
    let kept: Vec<&str> = keep.iter().map(|&j| names[j].as_str()).collect();
    let sql = format!(
        "SELECT {} FROM ({source}) AS brook_overriding({})",
        kept.join(", "),
        names.join(", ")
    );
    match brook_planner::parser::parse_one(&sql)?.into_plain_sql() {
        Some(Statement::Query(q)) => {
            *source = q;
            Ok(())
        }
        _ => Err(brook_err!(
            Internal,
            "OVERRIDING USER VALUE: the query did not parse again"
        )),
    }
}

/// `DEFAULT` in a VALUES list as the column's default expression (NULL when it has none),
/// and the check that no value is given for a `GENERATED ALWAYS` identity column (428C9)
/// other than `DEFAULT`, unless `system_value` (`OVERRIDING SYSTEM VALUE`). `targets` are
/// the listed columns (empty: the table's, in order).
fn fill_default_keywords(
    ins: &mut ast::Insert,
    meta: &RelationMeta,
    targets: &[usize],
    system_value: bool,
) -> Result<()> {
    let column_at = |j: usize| targets.get(j).copied().or(targets.is_empty().then_some(j));
    let always = |i: usize| {
        !system_value
            && meta
                .columns
                .get(i)
                .is_some_and(|c| c.identity == Some(Identity::Always))
    };
    let refuse = |i: usize| {
        Err(BrookError::GeneratedAlways(format!("cannot insert a non-DEFAULT value into column \"{}\": it is an identity column defined as GENERATED ALWAYS (leave it out of the column list, or use OVERRIDING SYSTEM VALUE to override)", meta.columns[i].name)))
    };
    let Some(source) = ins.source.as_mut() else {
        return Ok(());
    };
    let SetExpr::Values(values) = source.body.as_mut() else {
        let width = if targets.is_empty() {
            meta.columns.len()
        } else {
            targets.len()
        };
        return match (0..width).filter_map(column_at).find(|&i| always(i)) {
            Some(i) => refuse(i),
            None => Ok(()),
        };
    };
    // Each column's default is parsed once, however many rows say DEFAULT.
    let mut defaults: Vec<Option<Expr>> = vec![None; meta.columns.len()];
    for row in values.rows.iter_mut() {
        for (j, cell) in row.iter_mut().enumerate() {
            let Some(i) = column_at(j) else {
                continue;
            };
            let is_default = matches!(cell, Expr::Identifier(id)
                if id.quote_style.is_none() && id.value.eq_ignore_ascii_case("default"));
            if !is_default {
                if always(i) {
                    return refuse(i);
                }
                continue;
            }
            if defaults[i].is_none() {
                defaults[i] = Some(match &meta.columns[i].default {
                    Some(text) => default_expr(text)?,
                    None => Expr::value(ast::Value::Null),
                });
            }
            if let Some(d) = &defaults[i] {
                *cell = d.clone();
            }
        }
    }
    Ok(())
}

/// A quoted literal in a VALUES list of several rows as a cast to its column's type:
/// PostgreSQL types an untyped literal by its column, while DataFusion unifies each VALUES
/// column across rows and could not unify `'{1,2}'` with `ARRAY[3]` (XX000) or read
/// `'Infinity'` beside `1` in a float column (it typed the column integer: 22P02). One row
/// needs no unifying and keeps the assignment's own messages.
fn type_literals(ins: &mut ast::Insert, meta: &RelationMeta, targets: &[usize]) {
    let Some(SetExpr::Values(values)) = ins.source.as_mut().map(|q| q.body.as_mut()) else {
        return;
    };
    if values.rows.len() < 2 {
        return;
    }
    for row in values.rows.iter_mut() {
        for (j, cell) in row.iter_mut().enumerate() {
            let column = targets.get(j).copied().or(targets.is_empty().then_some(j));
            let typed = column.and_then(|i| meta.columns.get(i)).and_then(|c| {
                typed_array_literal(cell, &c.ty).or_else(|| typed_literal(cell, &c.ty))
            });
            if let Some(typed) = typed {
                *cell = typed;
            }
        }
    }
}

/// A quoted literal assigned to an array column, as `CAST(ARRAY[...] AS type[])` of its
/// elements: what the literal means there in PostgreSQL. `None` for anything else.
pub(crate) fn typed_array_literal(e: &Expr, ty: &crate::pg::types::PgType) -> Option<Expr> {
    let text = literal_text(e)?;
    if !matches!(ty, crate::pg::types::PgType::Array(_)) {
        return None;
    }
    let data_type =
        crate::pg::types::cast_name(&ty.wire()).and_then(crate::pg::types::sql_data_type)?;
    let ast::DataType::Array(ast::ArrayElemTypeDef::SquareBracket(elem, _)) = &data_type else {
        return None;
    };
    Some(Expr::Cast {
        kind: ast::CastKind::Cast,
        expr: Box::new(brook_planner::array_literal::literal_as_array(text, elem)),
        data_type,
        array: false,
        format: None,
    })
}

/// A quoted literal assigned to a column of a type other than an array, as `CAST(literal AS
/// type)`: PostgreSQL reads an untyped literal as the type it is assigned to. (UPDATE's
/// `CASE WHEN ... THEN '1 day' ELSE iv END` found no common type of text and interval:
/// 42804.) `None` for anything else.
pub(crate) fn typed_literal(e: &Expr, ty: &crate::pg::types::PgType) -> Option<Expr> {
    let text = literal_text(e)?;
    // The types whose cast reads text as the column's assignment does. Others are left to
    // the assignment: text, json, uuid, bytea and xml literals are read as their columns'
    // values already; a float cast reads `1e39` as Infinity (the assignment checks the
    // range: 22003), so a float literal is cast only when it is one of the special values;
    // a time cast is of another precision. A numeric literal is cast to `numeric`, which
    // keeps its digits for the assignment to round to the column's scale.
    use crate::pg::types::PgType;
    let cast = match ty {
        PgType::Bool
        | PgType::Int2
        | PgType::Int4
        | PgType::Int8
        | PgType::Numeric { .. }
        | PgType::Date
        | PgType::Timestamp(_)
        | PgType::Timestamptz(_)
        | PgType::Interval => true,
        PgType::Float4 | PgType::Float8 => is_special_float(text),
        _ => false,
    };
    if !cast {
        return None;
    }
    if let PgType::Timestamp(_) | PgType::Timestamptz(_) = ty {
        // Of microseconds, as the column is: a cast to `timestamp` is of DataFusion's
        // nanoseconds, which cannot hold `'9999-12-31'` (the text is read by
        // `brook_planner::timestamp_text` under either).
        let arrow = match ty {
            PgType::Timestamptz(_) => "Timestamp(Microsecond, Some(\"+00:00\"))",
            _ => "Timestamp(Microsecond, None)",
        };
        let arrow = Expr::value(ast::Value::SingleQuotedString(arrow.into()));
        return Some(brook_planner::pg_functions::function_call(
            "arrow_cast",
            vec![e.clone(), arrow],
        ));
    }
    let data_type =
        crate::pg::types::cast_name(&ty.wire()).and_then(crate::pg::types::sql_data_type)?;
    Some(Expr::Cast {
        kind: ast::CastKind::Cast,
        expr: Box::new(e.clone()),
        data_type,
        array: false,
        format: None,
    })
}

/// The text of a quoted literal.
fn literal_text(e: &Expr) -> Option<&str> {
    match e {
        Expr::Value(ast::ValueWithSpan {
            value:
                ast::Value::SingleQuotedString(text)
                | ast::Value::DollarQuotedString(ast::DollarQuotedString { value: text, .. }),
            ..
        }) => Some(text),
        _ => None,
    }
}

/// Whether `text` is one of the special float inputs PostgreSQL reads (`Infinity`,
/// `-inf`, `NaN`, in any case, with blanks around).
fn is_special_float(text: &str) -> bool {
    let word = text.trim().to_ascii_lowercase();
    let unsigned = word.trim_start_matches(['+', '-']);
    word.len() - unsigned.len() <= 1 && matches!(unsigned, "infinity" | "inf" | "nan")
}

/// A column's DEFAULT text as an expression.
pub(crate) fn default_expr(text: &str) -> Result<Expr> {
    if let Statement::Query(q) = default_query(text)? {
        if let SetExpr::Select(sel) = *q.body {
            if let [SelectItem::UnnamedExpr(e) | SelectItem::ExprWithAlias { expr: e, .. }] =
                sel.projection.as_slice()
            {
                return Ok(e.clone());
            }
        }
    }
    Err(brook_err!(
        Internal,
        "DEFAULT {text} did not parse as an expression"
    ))
}

impl Session {
    pub(crate) async fn insert(&mut self, mut ins: ast::Insert) -> Result<Outcome> {
        let overriding = self.overriding.take();
        let TableObject::TableName(tn) = &ins.table else {
            return Err(brook_err!(Unsupported, "INSERT INTO TABLE FUNCTION"));
        };
        let (schema, name) = self.resolve(tn)?;
        let (meta, store) = self.writable(&schema, &name)?;
        if overriding == Some(Overriding::UserValue) {
            leave_identity_to_sequences(&mut ins, &meta)?;
        }
        let mut targets = Vec::new();
        for c in &ins.columns {
            let parts = object_parts(c)?;
            let cname = parts.last().cloned().unwrap_or_default();
            let i = meta.column_index(&cname, &name)?;
            if targets.contains(&i) {
                return Err(brook_err!(
                    Syntax,
                    "column \"{cname}\" specified more than once"
                ));
            }
            targets.push(i);
        }
        let system_value = overriding == Some(Overriding::SystemValue);
        fill_default_keywords(&mut ins, &meta, &targets, system_value)?;
        type_literals(&mut ins, &meta, &targets);
        let mode = match &ins.on {
            None => WriteMode::Append,
            Some(OnInsert::OnConflict(oc)) => match &oc.action {
                OnConflictAction::DoNothing => WriteMode::SkipConflicts,
                OnConflictAction::DoUpdate(du) => {
                    if ins.returning.is_some() {
                        return Err(brook_err!(
                            Unsupported,
                            "RETURNING with ON CONFLICT DO UPDATE"
                        ));
                    }
                    self.check_conflict_target(&meta, oc.conflict_target.as_ref())?;
                    let Some(q) = ins.source.clone() else {
                        return Err(brook_err!(
                            Unsupported,
                            "DEFAULT VALUES with ON CONFLICT DO UPDATE"
                        ));
                    };
                    let plan = self.plan(Statement::Query(q)).await?;
                    let stream = self
                        .ctx
                        .execute_logical_plan(plan)
                        .await?
                        .execute_stream()
                        .await?;
                    let targets = if ins.columns.is_empty() {
                        None
                    } else {
                        Some(targets.clone())
                    };
                    let n = self
                        .upsert(&meta, &store, &name, stream, targets, du.clone())
                        .await?;
                    return Ok(Outcome::Command(format!("INSERT 0 {n}")));
                }
            },
            Some(other) => return Err(brook_err!(Unsupported, "INSERT {other}")),
        };
        if mode == WriteMode::SkipConflicts && meta.primary_key.is_empty() {
            return Err(brook_err!(
                InvalidDefinition,
                "there is no unique or exclusion constraint matching the ON CONFLICT specification"
            ));
        }
        let stream: SendableRecordBatchStream = match ins.source {
            Some(q) => {
                let plan = self.plan(Statement::Query(q)).await?;
                let df = self.ctx.execute_logical_plan(plan).await?;
                df.execute_stream().await?
            }
            None => {
                // DEFAULT VALUES: one row, every column from its default.
                let schema = Arc::new(Schema::empty());
                let batch = RecordBatch::try_new_with_options(
                    schema.clone(),
                    vec![],
                    &datafusion::arrow::array::RecordBatchOptions::new().with_row_count(Some(1)),
                )?;
                Box::pin(RecordBatchStreamAdapter::new(
                    schema,
                    futures::stream::iter(vec![Ok(batch)]),
                ))
            }
        };
        let targets = if targets.is_empty() && ins.columns.is_empty() {
            None
        } else {
            Some(targets)
        };
        let alias = ins.table_alias.as_ref().map(|a| ident_name(&a.alias));
        let returning = ins.returning.as_deref().map(|items| Returning {
            items,
            alias: alias.as_deref(),
        });
        let (n, out) = self
            .write_stream_mapped(&meta, &store, &name, stream, targets, mode, returning)
            .await?;
        Ok(out.unwrap_or_else(|| Outcome::Command(format!("INSERT 0 {n}"))))
    }

    pub(crate) async fn returning(
        &self,
        name: &str,
        alias: Option<&str>,
        meta: &RelationMeta,
        batches: Vec<RecordBatch>,
        items: &[SelectItem],
    ) -> Result<Outcome> {
        let ctx = SessionContext::new_with_state(self.ctx.state());
        let tmp = Arc::new(datafusion::datasource::MemTable::try_new(
            meta.schema(),
            vec![batches],
        )?);
        let tmp_schema = "brook_returning";
        let cat = ctx
            .catalog(&self.db.name)
            .ok_or_else(|| brook_err!(Internal, "session catalog missing"))?;
        // A private catalog view: the RETURNING list sees the written rows under the table's name.
        let provider = Arc::new(datafusion::catalog::MemorySchemaProvider::new());
        datafusion::catalog::SchemaProvider::register_table(
            provider.as_ref(),
            name.to_string(),
            tmp,
        )?;
        let list = Arc::new(datafusion::catalog::MemoryCatalogProviderList::new());
        let c = Arc::new(datafusion::catalog::MemoryCatalogProvider::new());
        datafusion::catalog::CatalogProvider::register_schema(c.as_ref(), tmp_schema, provider)?;
        let _ = cat;
        datafusion::catalog::CatalogProviderList::register_catalog(
            list.as_ref(),
            "brook_returning".into(),
            c,
        );
        let state = datafusion::execution::session_state::SessionStateBuilder::new_from_existing(
            ctx.state(),
        )
        .with_catalog_list(list)
        .build();
        let rctx = SessionContext::new_with_state(state);
        let from = format!(
            "brook_returning.{tmp_schema}.{} AS {}",
            quote_ident(name),
            quote_ident(alias.unwrap_or(name))
        );
        let (q, names) = returning_query(items, &from)?;
        let plan = rctx
            .state()
            .statement_to_plan(DFStatement::Statement(Box::new(q)))
            .await?;
        // Shown in the session's time zone.
        let zone = self.time_zone();
        let plan = brook_planner::session_time_zone::shown_in_zone(plan, zone.as_deref())?;
        let df = rctx.execute_logical_plan(plan).await?;
        let schema = pg_named(df.schema().as_arrow().clone(), names);
        let out = df.collect().await?;
        Ok(rows_outcome(schema, out, "INSERT"))
    }
}
