//! Text to `numeric` as PostgreSQL reads it where Arrow's decimal parser does not:
//! exponent notation (`'2e1'::numeric`, `'1.5E-3'` compared with a numeric column) was
//! "Cannot cast string '2e1'", and `'NaN'` / `'Infinity'` read as bad text. An analyzer rule
//! puts `brook_numeric_text` under every text-to-numeric cast ([`crate::text_input`]); it
//! writes exponents out in plain digits, all of them (Arrow's parser rounds them to the
//! type's scale or refuses a number too large: 22003), and passes other text through, so
//! the accepted language only grows. NaN and the infinities, which PostgreSQL's numeric
//! has and Brook's (a 128-bit decimal) has not, are 0A000. COPY and INSERT read numeric
//! text through [`numeric_input`] too.

use crate::numeric_literals::plain_number_of;
use crate::text_input::{result_like, text_argument, under_text_casts};
use brook_common::{brook_err, BrookError};
use datafusion::arrow::array::StringArray;
use datafusion::arrow::datatypes::DataType;
use datafusion::common::config::ConfigOptions;
use datafusion::common::{DataFusionError, Result};
use datafusion::logical_expr::{
    ColumnarValue, LogicalPlan, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, Volatility,
};
use datafusion::optimizer::AnalyzerRule;
use std::borrow::Cow;
use std::sync::Arc;

/// `text` as Arrow's decimal parser reads it: an exponent written out in plain digits,
/// other text unchanged (Arrow's cast reports bad text).
pub fn numeric_input(text: &str) -> Result<Cow<'_, str>, BrookError> {
    let t = text.trim();
    let word = t.trim_start_matches(['+', '-']).to_ascii_lowercase();
    if matches!(word.as_str(), "nan" | "inf" | "infinity") {
        return Err(brook_err!(
            Unsupported,
            "numeric NaN and infinity are not supported: \"{text}\""
        ));
    }
    if !t.contains(['e', 'E']) {
        return Ok(Cow::Borrowed(text));
    }
    // Exponents are at most ±1000 (more: `None`), so 1,100 digits hold every number.
    match plain_number_of(t, 1_100) {
        Some(digits) if integer_digits(&digits) > 38 => Err(brook_err!(
            OutOfRange,
            "value overflows numeric format: \"{text}\""
        )),
        Some(digits) => Ok(Cow::Owned(digits)),
        // A number, but of more digits than Brook's numeric holds.
        None if t.parse::<f64>().is_ok() => Err(brook_err!(
            OutOfRange,
            "value overflows numeric format: \"{text}\""
        )),
        None => Ok(Cow::Borrowed(text)),
    }
}

/// The digits before the point of plain number text, without sign and leading zeros.
fn integer_digits(plain: &str) -> usize {
    let unsigned = plain.trim_start_matches('-');
    let int = unsigned.split('.').next().unwrap_or("");
    int.trim_start_matches('0').len()
}

/// `brook_numeric_text(text) -> text`.
#[derive(Debug, PartialEq, Eq, Hash)]
struct NumericText {
    signature: Signature,
}

impl ScalarUDFImpl for NumericText {
    fn name(&self) -> &str {
        "brook_numeric_text"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(DataType::Utf8)
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let text = text_argument(&args.args)?;
        let out = text
            .iter()
            .map(|v| {
                v.map(|v| numeric_input(v).map(Cow::into_owned))
                    .transpose()
                    .map_err(|e| DataFusionError::External(Box::new(e)))
            })
            .collect::<Result<StringArray>>()?;
        result_like(&args.args, Arc::new(out))
    }
}

/// The analyzer rule (runs after type coercion, so coercion's casts are seen too).
#[derive(Debug)]
pub struct NumericInput {
    udf: Arc<ScalarUDF>,
}

impl Default for NumericInput {
    fn default() -> Self {
        NumericInput {
            udf: Arc::new(ScalarUDF::new_from_impl(NumericText {
                signature: Signature::any(1, Volatility::Immutable),
            })),
        }
    }
}

fn is_decimal(t: &DataType) -> bool {
    matches!(t, DataType::Decimal128(..) | DataType::Decimal256(..))
}

impl AnalyzerRule for NumericInput {
    fn analyze(&self, plan: LogicalPlan, _config: &ConfigOptions) -> Result<LogicalPlan> {
        crate::checked::rewrite_plan_expressions(plan, true, &|e, schema| {
            under_text_casts(e, schema, is_decimal, &self.udf)
        })
    }

    fn name(&self) -> &str {
        "brook_numeric_input"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exponents_are_written_out_and_other_text_passes() {
        for (text, want) in [
            ("2e1", "20"),
            (" 1.5E-3 ", "0.0015"),
            ("-2e+2", "-200"),
            ("12.5", "12.5"),
            ("abc", "abc"),
            ("1e", "1e"),
            // Written out whole: Arrow's parser rounds to the type's scale.
            ("1e-40", &format!("0.{}1", "0".repeat(39))),
        ] {
            assert_eq!(numeric_input(text).ok().as_deref(), Some(want), "{text}");
        }
    }

    #[test]
    fn what_brooks_numeric_cannot_hold_is_named() {
        let code = |t| numeric_input(t).map(|_| ()).unwrap_err().sqlstate();
        assert_eq!(code("1e2000"), "22003");
        assert_eq!(code("1e400"), "22003");
        assert_eq!(code("-1.5e38"), "22003");
        assert_eq!(code("NaN"), "0A000");
        assert_eq!(code("-Infinity"), "0A000");
    }
}
