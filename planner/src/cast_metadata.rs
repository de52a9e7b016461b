//! A cast's value is of the cast's type, whatever its operand was declared as.
//!
//! DataFusion gives a cast to a bare type (`CAST(x AS TEXT)`) its operand's field metadata,
//! where the server records a column's declared PostgreSQL type (`jsonb`, `varchar(5)`). So
//! `j::text` over a jsonb column was still jsonb to `pg_typeof` and to the jsonb operators
//! (`j::text || '{..}'` merged objects instead of concatenating text). This analyzer rule
//! gives such a cast a target field of its own, which DataFusion keeps without metadata.
//!
//! A cast between two numeric types keeps its operand's metadata: type coercion inserts
//! those (a `numeric(5,2)` column in a UNION with a wider numeric) and the declared scale is
//! how the value prints. A cast to fewer decimals does not (coercion never narrows).

use datafusion::arrow::datatypes::{DataType, Field};
use datafusion::common::config::ConfigOptions;
use datafusion::common::tree_node::{Transformed, TreeNode};
use datafusion::common::{DFSchema, Result};
use datafusion::logical_expr::{Cast, Expr, ExprSchemable, LogicalPlan, TryCast, Union};
use datafusion::optimizer::AnalyzerRule;
use std::sync::Arc;

/// The rule.
#[derive(Debug, Default)]
pub struct CastsTakeTheirType;

impl AnalyzerRule for CastsTakeTheirType {
    fn analyze(&self, plan: LogicalPlan, _config: &ConfigOptions) -> Result<LogicalPlan> {
        let changed = std::cell::Cell::new(false);
        let plan = crate::checked::rewrite_plan_expressions(plan, true, &|e, schema| {
            let e = e.transform_up(|e| own_field(e, schema))?;
            changed.set(changed.get() || e.transformed);
            Ok(e)
        })?;
        if changed.get() {
            with_schemas_rebuilt(plan)
        } else {
            Ok(plan)
        }
    }

    fn name(&self) -> &str {
        "brook_casts_take_their_type"
    }
}

/// `e` with a target field of its own when it is a bare cast of a value with metadata.
fn own_field(e: Expr, schema: &DFSchema) -> Result<Transformed<Expr>> {
    let (inner, field) = match &e {
        Expr::Cast(Cast { expr, field }) | Expr::TryCast(TryCast { expr, field }) => (expr, field),
        _ => return Ok(Transformed::no(e)),
    };
    let bare = field.name().is_empty() && field.metadata().is_empty();
    if !bare {
        return Ok(Transformed::no(e));
    }
    let Ok((_, source)) = inner.to_field(schema) else {
        return Ok(Transformed::no(e));
    };
    if source.metadata().is_empty()
        || (is_decimal(source.data_type())
            && is_decimal(field.data_type())
            && !narrows_scale(source.data_type(), field.data_type()))
    {
        return Ok(Transformed::no(e));
    }
    let own = Arc::new(Field::new("cast", field.data_type().clone(), true));
    Ok(Transformed::yes(match e {
        Expr::Cast(c) => Expr::Cast(Cast::new_from_field(c.expr, own)),
        Expr::TryCast(c) => Expr::TryCast(TryCast::new_from_field(c.expr, own)),
        other => other,
    }))
}

/// `plan` with every node's schema derived again from its inputs, bottom up: a field that
/// lost its metadata below a UNION (whose schema `recompute_schema` keeps) made the
/// physical plan's schema differ from the logical one (XX000).
fn with_schemas_rebuilt(plan: LogicalPlan) -> Result<LogicalPlan> {
    plan.transform_up_with_subqueries(|p| {
        Ok(Transformed::yes(match p {
            LogicalPlan::Union(u) => LogicalPlan::Union(Union::try_new(u.inputs)?),
            other => other.recompute_schema()?,
        }))
    })
    .map(|t| t.data)
}

fn is_decimal(t: &DataType) -> bool {
    matches!(t, DataType::Decimal128(..) | DataType::Decimal256(..))
}

/// A cast to fewer decimals: one written in the query (`(x / 3)::numeric(10, 2)`, whose
/// value prints at its own scale), never one type coercion inserts (coercion widens).
fn narrows_scale(from: &DataType, to: &DataType) -> bool {
    let scale = |t: &DataType| match t {
        DataType::Decimal128(_, s) | DataType::Decimal256(_, s) => *s,
        _ => 0,
    };
    scale(to) < scale(from)
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::common::Column;
    use std::collections::HashMap;

    fn schema() -> DFSchema {
        let declared = |name: &str, t: DataType, pg: &str| {
            Field::new(name, t, true).with_metadata(HashMap::from([(
                "brook.pg_type".to_string(),
                pg.to_string(),
            )]))
        };
        DFSchema::try_from(datafusion::arrow::datatypes::Schema::new(vec![
            declared("j", DataType::Utf8, "jsonb"),
            declared("n", DataType::Decimal128(5, 2), "numeric(5,2)"),
            Field::new("t", DataType::Utf8, true),
        ]))
        .expect("schema")
    }

    fn metadata_after(e: Expr) -> HashMap<String, String> {
        let schema = schema();
        let e = own_field(e, &schema).expect("rewrite").data;
        e.to_field(&schema).expect("field").1.metadata().clone()
    }

    fn cast(column: &str, t: DataType) -> Expr {
        Expr::Cast(Cast::new(
            Box::new(Expr::Column(Column::from_name(column))),
            t,
        ))
    }

    #[test]
    fn a_cast_drops_the_declared_type_but_a_numeric_widening_keeps_it() {
        assert!(metadata_after(cast("j", DataType::Utf8)).is_empty());
        assert!(metadata_after(cast("j", DataType::Int64)).is_empty());
        assert!(metadata_after(cast("t", DataType::Utf8)).is_empty());
        assert_eq!(
            metadata_after(cast("n", DataType::Decimal128(38, 10)))
                .get("brook.pg_type")
                .map(String::as_str),
            Some("numeric(5,2)")
        );
        assert!(metadata_after(cast("n", DataType::Decimal128(5, 1))).is_empty());
    }
}
