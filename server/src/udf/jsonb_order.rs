//! jsonb values compared and sorted as PostgreSQL compares them: an analyzer rule puts the
//! value's sort key ([`crate::pg::jsonb_key`], bytes in jsonb's order) in the place of each
//! jsonb operand of a comparison (`=`, `<>`, `<`, `<=`, `>`, `>=`, `IS [NOT] DISTINCT
//! FROM`), of `BETWEEN` and of an `IN` list, of each jsonb sort key (`ORDER BY`, a
//! window's or an aggregate's `ORDER BY`) and window partition, and of `count(DISTINCT j)`.
//!
//! Brook keeps jsonb as its text, and compared the text: `'2'::jsonb > '10'` was true,
//! `null` sorted after numbers and arrays, `'[1, 2]' < '[3]'` was true (PostgreSQL orders
//! arrays by length first) and `'1.0'::jsonb = '1'` false — wrong answers. Untyped
//! literals beside jsonb are jsonb already ([`super::jsonb_literals`], which runs first).
//!
//! Not covered: `GROUP BY`, `DISTINCT` (also an aggregate's), set operations and join keys
//! `USING` a jsonb column still group by the text, which is the value's except for equal
//! numbers written differently (`1.0` and `1` are two groups); a simple `CASE j WHEN ...`,
//! `EXISTS` and `IN (subquery)` (DataFusion decorrelates them after this rule), a scalar
//! subquery as an operand, `= ANY (array)`, `greatest`/`least` and keys (`PRIMARY KEY`,
//! `UNIQUE`) compare text too.

use crate::pg::jsonb_doc::Doc;
use crate::pg::jsonb_key::sort_key;
use datafusion::arrow::array::{ArrayRef, AsArray, BinaryArray};
use datafusion::arrow::datatypes::DataType;
use datafusion::common::config::ConfigOptions;
use datafusion::common::tree_node::{Transformed, TreeNode, TreeNodeRecursion};
use datafusion::common::{DFSchema, Result};
use datafusion::error::DataFusionError;
use datafusion::logical_expr::expr::{ScalarFunction, Sort};
use datafusion::logical_expr::{
    BinaryExpr, ColumnarValue, Expr, LogicalPlan, Operator, ScalarFunctionArgs, ScalarUDF,
    ScalarUDFImpl, Signature, Volatility,
};
use datafusion::optimizer::AnalyzerRule;
use std::sync::Arc;

/// The name of the sort key function (seen in EXPLAIN).
pub const JSONB_SORT_KEY: &str = "jsonb_sort_key";

/// The analyzer rule, with the sort key function it applies.
#[derive(Debug)]
pub struct JsonbOrder {
    key: Arc<ScalarUDF>,
}

impl Default for JsonbOrder {
    fn default() -> Self {
        JsonbOrder {
            key: Arc::new(ScalarUDF::new_from_impl(JsonbSortKey {
                signature: Signature::user_defined(Volatility::Immutable),
            })),
        }
    }
}

impl AnalyzerRule for JsonbOrder {
    fn analyze(&self, plan: LogicalPlan, _config: &ConfigOptions) -> Result<LogicalPlan> {
        let plan = brook_planner::checked::rewrite_plan_expressions_by_node(
            plan,
            false,
            &|e, schema, join| e.transform_up(|e| self.rewrite(e, schema, join)),
        )?;
        brook_planner::checked::key_sort_nodes(plan, &super::jsonb_operators::is_jsonb, &|e| {
            self.key(e)
        })
    }

    fn name(&self) -> &str {
        "brook_jsonb_order"
    }
}

impl JsonbOrder {
    fn key(&self, e: Expr) -> Expr {
        Expr::ScalarFunction(ScalarFunction::new_udf(self.key.clone(), vec![e]))
    }

    fn sort_keys(&self, order_by: &mut [Sort], schema: &DFSchema) -> bool {
        brook_planner::checked::key_sort_exprs(
            order_by,
            schema,
            &super::jsonb_operators::is_jsonb,
            &|e| self.key(e),
        )
    }

    fn rewrite(&self, e: Expr, schema: &DFSchema, join: bool) -> Result<Transformed<Expr>> {
        let jsonb = |e: &Expr| super::jsonb_operators::is_jsonb(e, schema);
        // (A NULL's key is NULL: `j IN ('1', NULL)` is true for `1.0`.)
        let null = |e: &Expr| is_null_literal(e);
        let jsonb_or_literal =
            |e: &Expr| jsonb(e) || null(e) || super::jsonb_literals::is_text_literal(e);
        Ok(match e {
            // Left as text: a subquery's condition on the enclosing row (`x.j = m.j`), and
            // `IS NOT DISTINCT FROM` in a join. A decorrelated subquery's rows are paired
            // with the enclosing rows by those, and equal keys of different texts (`1`,
            // `1.0`) paired a row with two (rows repeated).
            Expr::BinaryExpr(BinaryExpr { left, op, right })
                if brook_planner::checked::is_comparison(op)
                    && jsonb(&left)
                    && jsonb(&right)
                    && !left.contains_outer()
                    && !right.contains_outer()
                    && !(join && is_identity(op)) =>
            {
                Transformed::yes(Expr::BinaryExpr(BinaryExpr::new(
                    Box::new(self.key(*left)),
                    op,
                    Box::new(self.key(*right)),
                )))
            }
            // (The bounds of BETWEEN may still be untyped literals: the key reads them as
            // jsonb, as the cast would.)
            Expr::Between(b)
                if jsonb(&b.expr) && jsonb_or_literal(&b.low) && jsonb_or_literal(&b.high) =>
            {
                Transformed::yes(brook_planner::checked::keyed_between(b, &|e| self.key(e)))
            }
            Expr::InList(l) if jsonb(&l.expr) && l.list.iter().all(|e| jsonb(e) || null(e)) => {
                Transformed::yes(brook_planner::checked::keyed_in_list(l, &|e| self.key(e)))
            }
            Expr::AggregateFunction(mut f) => {
                // With DISTINCT the ORDER BY must be of the arguments, which stay values.
                let mut changed =
                    !f.params.distinct && self.sort_keys(&mut f.params.order_by, schema);
                // `count(DISTINCT j)` counts distinct values.
                if f.params.distinct
                    && f.func.name() == "count"
                    && f.params.args.len() == 1
                    && jsonb(&f.params.args[0])
                {
                    f.params.args = vec![self.key(f.params.args[0].clone())];
                    changed = true;
                }
                Transformed::new(
                    Expr::AggregateFunction(f),
                    changed,
                    TreeNodeRecursion::Continue,
                )
            }
            Expr::WindowFunction(mut w) => {
                let mut changed = self.sort_keys(&mut w.params.order_by, schema);
                for p in w.params.partition_by.iter_mut() {
                    if jsonb(p) {
                        *p = self.key(p.clone());
                        changed = true;
                    }
                }
                Transformed::new(
                    Expr::WindowFunction(w),
                    changed,
                    TreeNodeRecursion::Continue,
                )
            }
            e => Transformed::no(e),
        })
    }
}

/// NULL, or NULL cast to a type (as type coercion leaves a NULL beside text).
fn is_null_literal(e: &Expr) -> bool {
    match e {
        Expr::Literal(v, _) => v.is_null(),
        Expr::Cast(c) => is_null_literal(&c.expr),
        Expr::TryCast(c) => is_null_literal(&c.expr),
        _ => false,
    }
}

fn is_identity(op: Operator) -> bool {
    matches!(op, Operator::IsNotDistinctFrom | Operator::IsDistinctFrom)
}

/// `jsonb_sort_key(j)`: the bytes of [`sort_key`] for each jsonb text (NULL for NULL).
#[derive(Debug, PartialEq, Eq, Hash)]
struct JsonbSortKey {
    signature: Signature,
}

impl ScalarUDFImpl for JsonbSortKey {
    fn name(&self) -> &str {
        JSONB_SORT_KEY
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(DataType::Binary)
    }

    fn coerce_types(&self, arg_types: &[DataType]) -> Result<Vec<DataType>> {
        match arg_types {
            [t] if super::is_text(t) || t == &DataType::Null => Ok(vec![DataType::Utf8]),
            _ => Err(DataFusionError::Plan(format!(
                "{JSONB_SORT_KEY} takes one jsonb value, not {arg_types:?}"
            ))),
        }
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let (arrays, scalar, _) = super::argument_arrays(&args)?;
        let texts = datafusion::arrow::compute::cast(&arrays[0], &DataType::Utf8)?;
        let keys = texts
            .as_string::<i32>()
            .iter()
            .map(|t| t.map(|t| Doc::parse(t).map(|d| sort_key(&d))).transpose())
            .collect::<brook_common::Result<Vec<_>>>()?;
        let out: ArrayRef = Arc::new(BinaryArray::from_iter(keys));
        super::result_value(out, scalar)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::arrow::array::{Array, StringArray};
    use datafusion::arrow::datatypes::Field;
    use datafusion::common::ScalarValue;

    fn keys(texts: &[Option<&str>]) -> Result<ArrayRef> {
        let input: ArrayRef = Arc::new(StringArray::from(texts.to_vec()));
        let udf = JsonbSortKey {
            signature: Signature::user_defined(Volatility::Immutable),
        };
        let out = udf.invoke_with_args(ScalarFunctionArgs {
            args: vec![ColumnarValue::Array(input)],
            arg_fields: vec![Arc::new(Field::new("j", DataType::Utf8, true))],
            number_rows: texts.len(),
            return_field: Arc::new(Field::new("k", DataType::Binary, true)),
            config_options: Arc::new(ConfigOptions::default()),
        })?;
        out.to_array(texts.len())
    }

    #[test]
    fn keys_order_values_and_keep_nulls() {
        let out = keys(&[Some("10"), None, Some("2")]).unwrap();
        let out = out.as_binary::<i32>();
        assert!(out.is_null(1));
        assert!(out.value(2) < out.value(0), "2 < 10");
        assert_eq!(
            ScalarValue::try_from_array(&keys(&[Some("1.0")]).unwrap(), 0).unwrap(),
            ScalarValue::try_from_array(&keys(&[Some("1")]).unwrap(), 0).unwrap()
        );
    }

    #[test]
    fn a_value_that_is_not_json_is_22p02() {
        let e = keys(&[Some("{bad")]).unwrap_err();
        assert_eq!(brook_common::BrookError::from(e).sqlstate(), "22P02");
    }
}
