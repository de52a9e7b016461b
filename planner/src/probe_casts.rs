//! A quoted or temporal item probed in a count-min or bloom sketch of dates or times is
//! cast, in the plan, to the type of the values the sketch summarises (the sketch column's metadata,
//! `brook_synopses::functions::SKETCH_ITEM_KEY`).
//!
//! The probe functions themselves cast an item they are given (`probe_items` in the
//! synopses crate), but with Arrow's casts: a text item of a timestamp sketch had to be
//! spelled as Arrow reads timestamps (`'2000-01-01 00:00'` was absent), and a timestamp
//! probed in a timestamptz sketch was read in UTC, not the session's zone. Cast here,
//! before type coercion, the item is read by the server's rules for such casts
//! (PostgreSQL's date and time input, the session's time zone), and a text that is no
//! date is 22007 as PostgreSQL's `ts = 'abc'` is. A typed date or time is cast only where
//! it comes back unchanged (`'2000-01-01 05:30'::timestamp` is no date: absent, as
//! PostgreSQL's `d = ...` compares it as a timestamp). Other items stay the functions' to
//! convert: they must tell `2.5` (absent from an integer sketch) from 3, which a cast that
//! rounds would not, and a text that is no number is absent there.

use brook_synopses::functions::{PROBES, SKETCH_ITEM_KEY};
use datafusion::arrow::datatypes::DataType;
use datafusion::common::config::ConfigOptions;
use datafusion::common::tree_node::{Transformed, TreeNode};
use datafusion::common::{DFSchema, Result};
use datafusion::logical_expr::expr::ScalarFunction;
use datafusion::logical_expr::{cast, when, Expr, ExprSchemable, LogicalPlan};
use datafusion::optimizer::AnalyzerRule;
use std::str::FromStr;

/// The rule.
#[derive(Debug, Default)]
pub struct ProbeCasts;

impl AnalyzerRule for ProbeCasts {
    fn analyze(&self, plan: LogicalPlan, _config: &ConfigOptions) -> Result<LogicalPlan> {
        crate::checked::rewrite_plan_expressions(plan, true, &|e, schema| {
            e.transform_up(|e| cast_item(e, schema))
        })
    }

    fn name(&self) -> &str {
        "brook_probe_casts"
    }
}

fn cast_item(e: Expr, schema: &DFSchema) -> Result<Transformed<Expr>> {
    let Expr::ScalarFunction(mut f) = e else {
        return Ok(Transformed::no(e));
    };
    if !PROBES.contains(&f.func.name()) || f.args.len() != 2 {
        return Ok(Transformed::no(Expr::ScalarFunction(f)));
    }
    let summarised = f.args[0]
        .to_field(schema)
        .ok()
        .and_then(|(_, field)| field.metadata().get(SKETCH_ITEM_KEY).cloned())
        .and_then(|t| DataType::from_str(&t).ok());
    let item = f.args[1].get_type(schema)?;
    match summarised {
        Some(t) if t != item && reads_as(&item, &t) => {
            let arg = f.args.pop().expect("two arguments");
            let converted = if is_text(&item) {
                cast(arg, t)
            } else {
                // NULL (absent) where the item is no value of the type.
                let back = cast(cast(arg.clone(), t.clone()), item);
                when(back.eq(arg.clone()), cast(arg, t)).end()?
            };
            f.args.push(converted);
            Ok(Transformed::yes(Expr::ScalarFunction(
                ScalarFunction::new_udf(f.func, f.args),
            )))
        }
        _ => Ok(Transformed::no(Expr::ScalarFunction(f))),
    }
}

/// Whether an item of type `item` is cast to `summarised` in the plan: a text or another
/// date or time, for a sketch of dates or times.
fn reads_as(item: &DataType, summarised: &DataType) -> bool {
    let temporal = |t: &DataType| {
        matches!(
            t,
            DataType::Date32
                | DataType::Date64
                | DataType::Timestamp(..)
                | DataType::Time32(_)
                | DataType::Time64(_)
        )
    };
    temporal(summarised) && (is_text(item) || temporal(item))
}

fn is_text(t: &DataType) -> bool {
    matches!(t, DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View)
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::arrow::datatypes::TimeUnit;

    #[test]
    fn texts_and_temporal_items_are_cast_numbers_are_not() {
        let ts = DataType::Timestamp(TimeUnit::Microsecond, Some("+00:00".into()));
        assert!(reads_as(&DataType::Utf8, &ts));
        assert!(!reads_as(&DataType::Utf8, &DataType::Decimal128(10, 2)));
        assert!(reads_as(
            &DataType::Timestamp(TimeUnit::Nanosecond, None),
            &ts
        ));
        assert!(reads_as(&DataType::Date32, &ts));
        assert!(!reads_as(&DataType::Float64, &DataType::Int32));
        assert!(!reads_as(&DataType::Int64, &ts));
    }
}
