//! Text cast to an interval where the plan casts it (`x::interval` of a text column,
//! `ts + '1 day 02:00:00'` whose literal DataFusion's coercion casts): read as PostgreSQL
//! reads interval input ([`brook_common::interval_text`]). Arrow's cast reads units only,
//! so PostgreSQL's own output (`1 day 02:03:04`) failed there. This analyzer rule runs
//! after DataFusion's type coercion: a constant becomes the interval, other text
//! [`TextToInterval`] of it, row by row (22007 for text that is no interval).

use brook_common::brook_err;
use brook_common::interval_text::parse_interval;
use datafusion::arrow::array::{Array, ArrayRef, AsArray, IntervalMonthDayNanoArray};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, IntervalUnit};
use datafusion::common::config::ConfigOptions;
use datafusion::common::tree_node::{Transformed, TreeNode};
use datafusion::common::{DFSchema, DataFusionError, Result, ScalarValue};
use datafusion::logical_expr::expr::{Cast, ScalarFunction};
use datafusion::logical_expr::{
    ColumnarValue, Expr, ExprSchemable, LogicalPlan, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl,
    Signature, Volatility,
};
use datafusion::optimizer::AnalyzerRule;
use std::sync::Arc;

/// The rule (after DataFusion's type coercion).
#[derive(Debug, Default)]
pub struct IntervalTextCasts;

impl AnalyzerRule for IntervalTextCasts {
    fn analyze(&self, plan: LogicalPlan, _config: &ConfigOptions) -> Result<LogicalPlan> {
        crate::checked::rewrite_plan_expressions(plan, true, &|e, schema| {
            e.transform_up(|e| interval_cast(e, schema))
        })
    }

    fn name(&self) -> &str {
        "brook_interval_text_casts"
    }
}

fn interval_type() -> DataType {
    DataType::Interval(IntervalUnit::MonthDayNano)
}

fn invalid(text: &str) -> DataFusionError {
    DataFusionError::External(Box::new(brook_err!(
        InvalidDatetime,
        "invalid input syntax for type interval: \"{text}\""
    )))
}

/// `CAST(text AS interval)` as the interval, or as [`TextToInterval`] of the text.
fn interval_cast(e: Expr, schema: &DFSchema) -> Result<Transformed<Expr>> {
    let Expr::Cast(Cast { expr, field }) = &e else {
        return Ok(Transformed::no(e));
    };
    if field.data_type() != &interval_type() {
        return Ok(Transformed::no(e));
    }
    match expr.as_ref() {
        Expr::Literal(ScalarValue::Utf8(Some(text)), _) => match parse_interval(text) {
            Some(v) => Ok(Transformed::yes(Expr::Literal(
                ScalarValue::IntervalMonthDayNano(Some(v)),
                None,
            ))),
            // Arrow's reading, with its error for text that is no interval.
            None => Ok(Transformed::no(e)),
        },
        Expr::Literal(..) => Ok(Transformed::no(e)),
        other
            if matches!(
                other.get_type(schema).ok(),
                Some(DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View)
            ) =>
        {
            Ok(Transformed::yes(Expr::ScalarFunction(
                ScalarFunction::new_udf(
                    Arc::new(ScalarUDF::new_from_impl(TextToInterval::default())),
                    vec![other.clone()],
                ),
            )))
        }
        _ => Ok(Transformed::no(e)),
    }
}

/// Each row's text read as interval input.
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct TextToInterval {
    signature: Signature,
}

impl Default for TextToInterval {
    fn default() -> Self {
        TextToInterval {
            signature: Signature::any(1, Volatility::Immutable),
        }
    }
}

impl ScalarUDFImpl for TextToInterval {
    fn name(&self) -> &str {
        "brook_text_to_interval"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _args: &[DataType]) -> Result<DataType> {
        Ok(interval_type())
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let rows = args.number_rows;
        let scalar = matches!(args.args[0], ColumnarValue::Scalar(_));
        let texts = cast(&args.args[0].to_array(rows)?, &DataType::Utf8)?;
        let texts = texts.as_string::<i32>();
        let values = (0..rows)
            .map(|i| {
                if texts.is_null(i) {
                    return Ok(None);
                }
                let text = texts.value(i);
                parse_interval(text).map(Some).ok_or_else(|| invalid(text))
            })
            .collect::<Result<IntervalMonthDayNanoArray>>()?;
        let out: ArrayRef = Arc::new(values);
        if scalar {
            Ok(ColumnarValue::Scalar(ScalarValue::try_from_array(&out, 0)?))
        } else {
            Ok(ColumnarValue::Array(out))
        }
    }
}
