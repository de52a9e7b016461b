//! `array::text` as PostgreSQL's array text (`{1,2,NULL}`, `{"a b",c}`).
//!
//! DataFusion casts a list to text with Arrow's display (`[1, 2, ]`: brackets, spaces, a
//! NULL as nothing) — a wrong answer wherever the text is kept, compared or shown. This
//! analyzer rule replaces a cast of a list to text by a call of the function the server
//! gives it, which writes the value as the wire does (the formats live in the server).

use datafusion::arrow::datatypes::DataType;
use datafusion::common::config::ConfigOptions;
use datafusion::common::tree_node::{Transformed, TreeNode};
use datafusion::common::Result;
use datafusion::logical_expr::expr::ScalarFunction;
use datafusion::logical_expr::{Expr, ExprSchemable, LogicalPlan, ScalarUDF};
use datafusion::optimizer::AnalyzerRule;
use std::sync::Arc;

/// The rule, with the function that prints an array as PostgreSQL does.
#[derive(Debug)]
pub struct ArrayTextCasts {
    udf: Arc<ScalarUDF>,
}

impl ArrayTextCasts {
    pub fn new(udf: Arc<ScalarUDF>) -> Self {
        ArrayTextCasts { udf }
    }
}

impl AnalyzerRule for ArrayTextCasts {
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
                let from_list = matches!(
                    expr.get_type(schema),
                    Ok(DataType::List(_) | DataType::LargeList(_) | DataType::FixedSizeList(..))
                );
                if !(to_text && from_list) {
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
        "brook_array_text"
    }
}
