//! `ALTER TABLE t ALTER [COLUMN] c [SET DATA] TYPE type [USING expr]`: every row written
//! again with the column converted, in one replacing commit (`column_shape::reshape_rows`).
//!
//! As in PostgreSQL, without USING the old type must convert to the new one by assignment
//! (numbers among themselves, anything to text, dates and times among themselves); any
//! other change needs `USING`, an expression over the row's columns whose result converts
//! by assignment. A value the new type cannot hold fails the statement (22003, 22001,
//! 22P02 ...) and nothing changes, and so does a column default the new type cannot take.
//! A primary-key column is checked for keys made equal by the conversion (23505).
//!
//! A value of another type becomes text as its `::text` cast writes it (PostgreSQL's
//! output form), then must fit the column's length like any value stored.

use crate::catalog::RelationMeta;
use crate::exec::column_default::ColumnDefault;
use crate::ident::{ident_name, quote_if_needed};
use crate::pg::types::PgType;
use crate::session::Session;
use crate::storage::TableStore;
use crate::write::coerce::coerce_column;
use crate::write::keys::KeyCheck;
use brook_common::{brook_err, BrookError, Result};
use datafusion::arrow::array::{Array, RecordBatch};
use datafusion::arrow::datatypes::DataType;
use datafusion::common::tree_node::TreeNode;
use datafusion::logical_expr::simplify::SimplifyContext;
use datafusion::logical_expr::{Expr, ExprSchemable, LogicalPlan};
use datafusion::optimizer::simplify_expressions::ExprSimplifier;
use datafusion::physical_expr::PhysicalExpr;
use datafusion::sql::sqlparser::ast::{self, Ident};
use std::sync::{Arc, Mutex};

impl Session {
    /// `ALTER COLUMN c TYPE data_type [USING using]` of relation `schema.name`: its new
    /// definition, its rows rewritten.
    #[allow(clippy::too_many_arguments)]
    pub(crate) async fn alter_column_type(
        &self,
        schema: &str,
        name: &str,
        (meta, store): (&RelationMeta, &Arc<TableStore>),
        column: &Ident,
        data_type: &ast::DataType,
        using: Option<&ast::Expr>,
    ) -> Result<RelationMeta> {
        let cname = ident_name(column);
        let i = meta.column_index(&cname, name)?;
        let ty = PgType::from_sql(data_type)?;
        if let Some((vschema, vname, kind)) = self.dependents(schema, name)?.into_iter().next() {
            // PostgreSQL refuses it for a column a view uses (0A000); Brook cannot tell
            // which columns a view uses.
            return Err(brook_err!(
                Unsupported,
                "cannot alter type of a column used by a view or rule: {} {vschema}.{vname} \
                 reads {name} (drop it, alter the column, then create it again)",
                kind.noun()
            ));
        }
        if meta.watermark.as_ref().is_some_and(|w| w.column == cname) {
            return Err(BrookError::DependentObjects(format!(
                "cannot alter type of column {cname} of stream {name} because its watermark \
                 is declared on it"
            )));
        }
        if crate::catalog::partitioning::key_includes(meta, &cname) {
            return Err(BrookError::DependentObjects(format!(
                "cannot alter type of column {cname} of stream {name} because its rows are \
                 partitioned by it (a new type would move rows to other partitions)"
            )));
        }
        let old = &meta.columns[i];
        if old.identity.is_some() && !matches!(ty, PgType::Int2 | PgType::Int4 | PgType::Int8) {
            return Err(brook_err!(
                InvalidDefinition,
                "identity column type must be smallint, integer, or bigint"
            ));
        }
        if using.is_none() && !converts_by_assignment(&old.ty, &ty) {
            return Err(BrookError::DatatypeMismatch(format!(
                "column \"{cname}\" cannot be cast automatically to type {} (specify \
                 USING {cname}::{})",
                ty.name(),
                ty.name()
            )));
        }
        // Another type becomes text as its `::text` cast writes it; time and interval
        // convert by their casts.
        let explicit = match (&old.ty, &ty) {
            (from, to) if is_text(to) && !is_text(from) => Some("text".to_string()),
            (PgType::Time(_), PgType::Interval) | (PgType::Interval, PgType::Time(_)) => {
                Some(ty.name())
            }
            _ => None,
        };
        let convert = match (using, explicit) {
            (Some(e), _) => {
                let (expr, result) = self.using_expression(schema, name, &e.to_string()).await?;
                let literal = matches!(e, ast::Expr::Value(v) if matches!(v.value, ast::Value::SingleQuotedString(_)));
                // json, jsonb, uuid and xml are kept as text: their casts give text too.
                let stored_as_text = is_text(&ty)
                    || matches!(
                        ty,
                        PgType::Json | PgType::Jsonb | PgType::Uuid | PgType::Xml
                    );
                let text_result = matches!(
                    result,
                    DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View
                );
                if !literal && !stored_as_text && text_result {
                    return Err(BrookError::DatatypeMismatch(format!(
                        "result of USING clause for column \"{cname}\" cannot be cast \
                         automatically to type {}",
                        ty.name()
                    )));
                }
                Some(expr)
            }
            (None, Some(target)) => {
                let sql = format!("{}::{target}", quote_if_needed(&cname));
                Some(self.using_expression(schema, name, &sql).await?.0)
            }
            (None, None) => None,
        };
        let mut next = meta.clone();
        next.columns[i].ty = ty.clone();
        let not_null = next.columns[i].not_null;
        let new_schema = next.schema();
        let field = new_schema.field(i).clone();
        let zone = self.time_zone();
        if next.columns[i].default.is_some() && next.columns[i].identity.is_none() {
            // As PostgreSQL: a default the new type cannot take refuses the change.
            let refused = || {
                BrookError::DatatypeMismatch(format!(
                    "default for column \"{cname}\" cannot be cast automatically to type {}",
                    ty.name()
                ))
            };
            if let ColumnDefault::Once(value) =
                self.default_value(&next, i).await.map_err(|_| refused())?
            {
                coerce_column(&value, &field, &ty, &cname, zone.as_deref())
                    .map_err(|_| refused())?;
            }
        }
        let keys = match meta.primary_key.contains(&i) {
            true => KeyCheck::new(&next, name)?,
            false => None,
        };
        // The rows are converted batch by batch by the closure below, which may not
        // mutate what it captures.
        let keys = Mutex::new(keys);
        let relation = name.to_string();
        self.reshape_rows(
            schema,
            name,
            (meta, store),
            next,
            |b| {
                let value = match &convert {
                    Some(e) => e.evaluate(b)?.into_array(b.num_rows())?,
                    None => b.column(i).clone(),
                };
                let converted = coerce_column(&value, &field, &ty, &cname, zone.as_deref())?;
                if not_null && converted.null_count() > 0 {
                    return Err(brook_err!(
                        NotNullViolation,
                        "column \"{cname}\" of relation \"{relation}\" contains null values"
                    ));
                }
                let mut cols = b.columns().to_vec();
                cols[i] = converted;
                let mut keys = keys
                    .lock()
                    .map_err(|_| brook_err!(Internal, "key check poisoned"))?;
                if let Some(k) = keys.as_mut() {
                    let rows = RecordBatch::try_new(new_schema.clone(), cols.clone())?;
                    if let Some(row) = k.conflicts(&rows, true)?.iter().position(|&c| c) {
                        return Err(k.violation(&rows, row));
                    }
                }
                Ok(cols)
            },
            |_| {},
        )
        .await
    }

    /// A USING expression planned as a query of the relation would plan it, as a physical
    /// expression over the relation's stored columns, and the type of its result.
    async fn using_expression(
        &self,
        schema: &str,
        name: &str,
        using: &str,
    ) -> Result<(Arc<dyn PhysicalExpr>, DataType)> {
        let sql = format!(
            "SELECT {using} FROM {}.{}",
            quote_if_needed(schema),
            quote_if_needed(name)
        );
        let Some(mut stmt) = brook_planner::parser::parse_one(&sql)?.into_plain_sql() else {
            return Err(brook_err!(
                Internal,
                "USING expression {using} is not plain SQL"
            ));
        };
        crate::pg::sql::pg_literals(&mut stmt)?;
        let plan = self.plan(stmt).await?;
        let state = self.ctx.state();
        let plan = state
            .analyzer()
            .execute_and_check(plan, state.config_options(), |_, _| {})?;
        let LogicalPlan::Projection(p) = &plan else {
            return Err(refused_using(using));
        };
        let ([expr], LogicalPlan::TableScan(_)) = (p.expr.as_slice(), p.input.as_ref()) else {
            return Err(refused_using(using));
        };
        let expr = expr.clone().unalias();
        let mut parameter = false;
        let mut subquery = false;
        expr.apply(|e| {
            parameter |= matches!(e, Expr::Placeholder(_));
            subquery |= matches!(
                e,
                Expr::ScalarSubquery(_) | Expr::Exists(_) | Expr::InSubquery(_)
            );
            Ok(datafusion::common::tree_node::TreeNodeRecursion::Continue)
        })?;
        if parameter {
            return Err(BrookError::Parameter(format!(
                "there is no parameter in USING {using}: ALTER TABLE takes none"
            )));
        }
        if subquery {
            return Err(brook_err!(
                Unsupported,
                "cannot use subquery in transform expression"
            ));
        }
        let input = p.input.schema();
        let result = expr.get_type(input.as_ref())?;
        // As a query's expressions are before they run (`coalesce` to CASE, `now()` to
        // the statement's time).
        let context = SimplifyContext::builder()
            .with_schema(input.clone())
            .with_config_options(state.config_options().clone())
            .with_current_time()
            .build();
        let simplifier = ExprSimplifier::new(context);
        let expr = simplifier.simplify(expr)?;
        Ok((state.create_physical_expr(expr, input)?, result))
    }
}

fn refused_using(using: &str) -> BrookError {
    brook_err!(
        Unsupported,
        "USING {using}: a transform expression over the row's own columns only (no \
         subquery, aggregate or window function)"
    )
}

fn is_text(t: &PgType) -> bool {
    matches!(t, PgType::Text | PgType::Varchar(_) | PgType::Char(_))
}

/// Whether a column of type `from` converts to `to` by PostgreSQL's assignment casts
/// (what ALTER COLUMN TYPE takes without USING).
fn converts_by_assignment(from: &PgType, to: &PgType) -> bool {
    use PgType::*;
    let numeric = |t: &PgType| matches!(t, Int2 | Int4 | Int8 | Float4 | Float8 | Numeric { .. });
    match (from, to) {
        (Array(a), Array(b)) => converts_by_assignment(a, b),
        (_, t) if is_text(t) => true,
        (f, t) if numeric(f) && numeric(t) => true,
        (Date | Timestamp(_) | Timestamptz(_), Date | Timestamp(_) | Timestamptz(_)) => true,
        (Timestamp(_) | Timestamptz(_), Time(_)) => true,
        (Time(_) | Interval, Time(_) | Interval) => true,
        (Json | Jsonb, Json | Jsonb) => true,
        (f, t) => std::mem::discriminant(f) == std::mem::discriminant(t),
    }
}

#[cfg(test)]
mod tests {
    use super::converts_by_assignment;
    use crate::pg::types::PgType::*;

    #[test]
    fn assignment_casts_are_postgresqls() {
        assert!(converts_by_assignment(&Int4, &Int8));
        assert!(converts_by_assignment(&Float8, &Int2));
        assert!(converts_by_assignment(&Int4, &Text));
        assert!(converts_by_assignment(&Text, &Varchar(Some(3))));
        assert!(converts_by_assignment(&Date, &Timestamptz(None)));
        assert!(converts_by_assignment(&Json, &Jsonb));
        assert!(!converts_by_assignment(&Text, &Int4));
        assert!(!converts_by_assignment(&Text, &Jsonb));
        assert!(!converts_by_assignment(&Bool, &Int4));
        assert!(!converts_by_assignment(&Int4, &Date));
        assert!(converts_by_assignment(&Time(None), &Interval));
        assert!(converts_by_assignment(&Array(Box::new(Int4)), &Text));
        assert!(converts_by_assignment(
            &Array(Box::new(Int4)),
            &Array(Box::new(Int8))
        ));
    }
}
