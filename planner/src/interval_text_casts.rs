//! Text cast to an interval where the plan casts it (`x::interval` of a text column,
//! `ts + '1 day 02:00:00'` whose literal DataFusion's coercion casts): read as PostgreSQL
//! reads interval input ([`brook_common::interval_text`]). Arrow's cast reads units only,
//! so PostgreSQL's own output (`1 day 02:03:04`) failed there. As for timestamps
//! ([`crate::text_input`]), an analyzer rule after type coercion puts a function under
//! each such cast that writes the text in the units-only spelling Arrow reads; text that
//! is no interval input is left as it is, for Arrow's error (22007).

use crate::text_input::{result_like, text_argument, under_text_casts};
use brook_common::interval_text::canonical_interval_text;
use datafusion::arrow::array::StringArray;
use datafusion::arrow::datatypes::DataType;
use datafusion::common::config::ConfigOptions;
use datafusion::common::Result;
use datafusion::logical_expr::{
    ColumnarValue, LogicalPlan, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, Volatility,
};
use datafusion::optimizer::AnalyzerRule;
use std::sync::Arc;

/// Interval text in the spelling Arrow reads.
#[derive(Debug, PartialEq, Eq, Hash)]
struct IntervalText {
    signature: Signature,
}

impl ScalarUDFImpl for IntervalText {
    fn name(&self) -> &str {
        "brook_interval_text"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(DataType::Utf8)
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let text = text_argument(&args.args)?;
        let out: StringArray = text
            .iter()
            .map(|v| v.map(|t| canonical_interval_text(t).unwrap_or_else(|| t.to_string())))
            .collect();
        result_like(&args.args, Arc::new(out))
    }
}

/// The rule (after DataFusion's type coercion).
#[derive(Debug)]
pub struct IntervalTextCasts {
    udf: Arc<ScalarUDF>,
}

impl Default for IntervalTextCasts {
    fn default() -> Self {
        IntervalTextCasts {
            udf: Arc::new(ScalarUDF::new_from_impl(IntervalText {
                signature: Signature::any(1, Volatility::Immutable),
            })),
        }
    }
}

impl AnalyzerRule for IntervalTextCasts {
    fn analyze(&self, plan: LogicalPlan, _config: &ConfigOptions) -> Result<LogicalPlan> {
        crate::checked::rewrite_plan_expressions(plan, true, &|e, schema| {
            under_text_casts(e, schema, |t| matches!(t, DataType::Interval(_)), &self.udf)
        })
    }

    fn name(&self) -> &str {
        "brook_interval_text_casts"
    }
}
