//! `concat` and `concat_ws` write a boolean as PostgreSQL's output does, `t` / `f`
//! (`concat('a', true)` is `at`); DataFusion's cast to text wrote `true` (`atrue`, a
//! wrong answer). A boolean's own cast to text stays `true`, as PostgreSQL's `true::text`
//! is. This analyzer rule (before type coercion, which would cast the booleans) puts
//! `CASE WHEN b THEN 't' WHEN NOT b THEN 'f' END` in the place of each boolean argument.

use datafusion::arrow::datatypes::DataType;
use datafusion::common::config::ConfigOptions;
use datafusion::common::tree_node::{Transformed, TreeNode};
use datafusion::common::Result;
use datafusion::logical_expr::{lit, when, Expr, ExprSchemable, LogicalPlan};
use datafusion::optimizer::AnalyzerRule;

/// The rule.
#[derive(Debug)]
pub struct ConcatText;

impl AnalyzerRule for ConcatText {
    fn analyze(&self, plan: LogicalPlan, _config: &ConfigOptions) -> Result<LogicalPlan> {
        crate::checked::rewrite_plan_expressions(plan, true, &|e, schema| {
            e.transform_up(|e| {
                let Expr::ScalarFunction(mut f) = e else {
                    return Ok(Transformed::no(e));
                };
                if !matches!(f.name(), "concat" | "concat_ws") {
                    return Ok(Transformed::no(Expr::ScalarFunction(f)));
                }
                let mut changed = false;
                for arg in f.args.iter_mut() {
                    if arg.get_type(schema).ok() == Some(DataType::Boolean) {
                        let b = arg.clone();
                        *arg = when(b.clone(), lit("t")).when(!b, lit("f")).end()?;
                        changed = true;
                    }
                }
                Ok(Transformed::new_transformed(
                    Expr::ScalarFunction(f),
                    changed,
                ))
            })
        })
    }

    fn name(&self) -> &str {
        "brook_concat_text"
    }
}
