//! `value::text` as PostgreSQL's text of the value.
//!
//! DataFusion casts to text with Arrow's display, which differs from PostgreSQL's output for
//! several types: a list prints `[1, 2, ]` (PostgreSQL `{1,2,NULL}`), a timestamp
//! `2020-01-02T03:04:05Z` (`2020-01-02 03:04:05+00`), an interval `1 days 2 hours`
//! (`1 day 02:00:00`), a float `1e20` or `-inf` (`1e+20`, `-Infinity`), and bytea fails as
//! invalid UTF-8 (`\x01ab`). Each is a wrong answer wherever the text is kept, compared or
//! shown. This analyzer rule replaces a cast of such a value to text by a call of the function
//! the server gives it, which writes the value as the wire does (the formats live in the
//! server). An unconstrained numeric, kept at a fixed Arrow scale, prints `1.5` rather than
//! Arrow's `1.5000000000`. Types whose Arrow text is PostgreSQL's (integers, text) keep the cast;
//! so does boolean, whose cast text is `true` while its output is `t`.

use datafusion::arrow::datatypes::DataType;
use datafusion::common::config::ConfigOptions;
use datafusion::common::tree_node::{Transformed, TreeNode};
use datafusion::common::Result;
use datafusion::logical_expr::expr::ScalarFunction;
use datafusion::logical_expr::{Expr, ExprSchemable, LogicalPlan, ScalarUDF};
use datafusion::optimizer::AnalyzerRule;
use std::sync::Arc;

/// The rule, with the function that prints a value as PostgreSQL does.
#[derive(Debug)]
pub struct ValueTextCasts {
    udf: Arc<ScalarUDF>,
}

impl ValueTextCasts {
    pub fn new(udf: Arc<ScalarUDF>) -> Self {
        ValueTextCasts { udf }
    }
}

/// Whether Arrow's text of a value of this type differs from PostgreSQL's.
pub fn text_differs(t: &DataType) -> bool {
    use DataType as T;
    matches!(
        t,
        T::List(_)
            | T::LargeList(_)
            | T::FixedSizeList(..)
            | T::Float16
            | T::Float32
            | T::Float64
            | T::Decimal128(..)
            | T::Binary
            | T::LargeBinary
            | T::BinaryView
            | T::Date32
            | T::Date64
            | T::Time32(_)
            | T::Time64(_)
            | T::Timestamp(..)
            | T::Interval(_)
            | T::Duration(_)
    )
}

impl AnalyzerRule for ValueTextCasts {
    fn analyze(&self, plan: LogicalPlan, _config: &ConfigOptions) -> Result<LogicalPlan> {
        crate::checked::rewrite_plan_expressions(plan, true, &|e, schema| {
            e.transform_up(|e| {
                let (Expr::Cast(datafusion::logical_expr::Cast { expr, field })
                | Expr::TryCast(datafusion::logical_expr::TryCast { expr, field })) = &e
                else {
                    return Ok(Transformed::no(e));
                };
                let data_type = field.data_type();
                let to_text = matches!(
                    data_type,
                    DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View
                );
                if !to_text || !expr.get_type(schema).is_ok_and(|t| text_differs(&t)) {
                    return Ok(Transformed::no(e));
                }
                let call = Expr::ScalarFunction(ScalarFunction::new_udf(
                    self.udf.clone(),
                    vec![(**expr).clone()],
                ));
                Ok(Transformed::yes(if *data_type == DataType::Utf8 {
                    call
                } else {
                    Expr::Cast(datafusion::logical_expr::Cast::new(
                        Box::new(call),
                        data_type.clone(),
                    ))
                }))
            })
        })
    }

    fn name(&self) -> &str {
        "brook_value_text"
    }
}
