//! Text to `bytea` as PostgreSQL reads it.
//!
//! DataFusion casts text to binary by taking the UTF-8 bytes, so `'\x0102'::bytea` would be
//! six bytes; PostgreSQL reads the hex format (`\x0102`, two bytes) or the escape format
//! (`a\\b\001`). Every bound `bytea` parameter arrives as such text, so sketches and other
//! binary values sent by drivers depend on it. This analyzer rule puts `brook_bytea_in` under
//! each text-to-binary cast ([`crate::text_input`]); it decodes PostgreSQL's formats and
//! rejects malformed text with 22P02.
//!
//! `length(bytea)` and `octet_length(bytea)` count bytes, as PostgreSQL's do; DataFusion
//! measured the value's text (`length('\x0102'::bytea)` was 6, not 2) or refused it
//! (XX000). [`ByteaLength`], an analyzer rule before type coercion, calls Arrow's length
//! kernel for `length`; [`octet_length`] replaces DataFusion's function.

use crate::text_input::{result_like, text_argument, under_text_casts};
use brook_common::brook_err;
use datafusion::arrow::array::{Array, BinaryBuilder};
use datafusion::arrow::datatypes::DataType;
use datafusion::common::config::ConfigOptions;
use datafusion::common::Result;
use datafusion::error::DataFusionError;
use datafusion::logical_expr::{
    ColumnarValue, LogicalPlan, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, Volatility,
};
use datafusion::optimizer::AnalyzerRule;
use std::sync::Arc;

/// Decode PostgreSQL's `bytea` text input: hex (`\x` then pairs of hex digits) or the
/// escape format (`\\` for a backslash, `\ooo` octal, other bytes as themselves).
pub fn parse_bytea(v: &[u8]) -> Option<Vec<u8>> {
    if let Some(hex) = v.strip_prefix(b"\\x") {
        if hex.len() % 2 != 0 {
            return None;
        }
        return hex
            .chunks(2)
            .map(|p| u8::from_str_radix(std::str::from_utf8(p).ok()?, 16).ok())
            .collect();
    }
    let mut out = Vec::with_capacity(v.len());
    let mut i = 0;
    while i < v.len() {
        if v[i] == b'\\' {
            if v.get(i + 1) == Some(&b'\\') {
                out.push(b'\\');
                i += 2;
            } else {
                let oct = v.get(i + 1..i + 4)?;
                let s = std::str::from_utf8(oct).ok()?;
                out.push(u8::from_str_radix(s, 8).ok()?);
                i += 4;
            }
        } else {
            out.push(v[i]);
            i += 1;
        }
    }
    Some(out)
}

/// `brook_bytea_in(text) -> bytea`.
#[derive(Debug, PartialEq, Eq, Hash)]
struct ByteaIn {
    signature: Signature,
}

impl ScalarUDFImpl for ByteaIn {
    fn name(&self) -> &str {
        "brook_bytea_in"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(DataType::Binary)
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let text = text_argument(&args.args)?;
        let mut out = BinaryBuilder::with_capacity(text.len(), text.value_data().len());
        for v in text.iter() {
            match v {
                None => out.append_null(),
                Some(v) => match parse_bytea(v.as_bytes()) {
                    Some(b) => out.append_value(b),
                    None => {
                        return Err(DataFusionError::External(Box::new(brook_err!(
                            InvalidText,
                            "invalid input syntax for type bytea"
                        ))))
                    }
                },
            }
        }
        result_like(&args.args, Arc::new(out.finish()))
    }
}

/// The analyzer rule (runs after type coercion, so coercion's casts are seen too).
#[derive(Debug)]
pub struct ByteaInput {
    udf: Arc<ScalarUDF>,
}

impl Default for ByteaInput {
    fn default() -> Self {
        ByteaInput {
            udf: Arc::new(ScalarUDF::new_from_impl(ByteaIn {
                signature: Signature::any(1, Volatility::Immutable),
            })),
        }
    }
}

fn is_binary(t: &DataType) -> bool {
    matches!(
        t,
        DataType::Binary | DataType::LargeBinary | DataType::BinaryView
    )
}

impl AnalyzerRule for ByteaInput {
    fn analyze(&self, plan: LogicalPlan, _config: &ConfigOptions) -> Result<LogicalPlan> {
        // VALUES rows are visited too: their text literals may be cast to bytea in place.
        crate::checked::rewrite_plan_expressions(plan, true, &|e, schema| {
            under_text_casts(e, schema, is_binary, &self.udf)
        })
    }

    fn name(&self) -> &str {
        "brook_bytea_input"
    }
}

/// The rule for `length`/`octet_length` of a `bytea`.
#[derive(Debug)]
pub struct ByteaLength {
    udf: Arc<ScalarUDF>,
}

impl Default for ByteaLength {
    fn default() -> Self {
        ByteaLength {
            udf: Arc::new(ScalarUDF::new_from_impl(OctetLength {
                name: "brook_octet_length",
                signature: Signature::any(1, Volatility::Immutable),
            })),
        }
    }
}

impl AnalyzerRule for ByteaLength {
    fn analyze(&self, plan: LogicalPlan, _config: &ConfigOptions) -> Result<LogicalPlan> {
        use datafusion::common::tree_node::{Transformed, TreeNode};
        use datafusion::logical_expr::{Expr, ExprSchemable};
        crate::checked::rewrite_plan_expressions(plan, true, &|e, schema| {
            e.transform_up(|e| match e {
                Expr::ScalarFunction(f)
                    if matches!(f.name(), "length" | "character_length")
                        && f.args.len() == 1
                        && f.args[0].get_type(schema).is_ok_and(|t| is_binary(&t)) =>
                {
                    Ok(Transformed::yes(Expr::ScalarFunction(
                        datafusion::logical_expr::expr::ScalarFunction::new_udf(
                            self.udf.clone(),
                            f.args,
                        ),
                    )))
                }
                e => Ok(Transformed::no(e)),
            })
        })
    }

    fn name(&self) -> &str {
        "brook_bytea_length"
    }
}

/// `octet_length(text | bytea)` as PostgreSQL's: the bytes of each value (an `integer`).
/// DataFusion's takes text only (XX000 for a bytea).
pub fn octet_length() -> ScalarUDF {
    ScalarUDF::new_from_impl(OctetLength {
        name: "octet_length",
        signature: Signature::any(1, Volatility::Immutable),
    })
}

/// The bytes of each value (an `integer`), under `name`.
#[derive(Debug, PartialEq, Eq, Hash)]
struct OctetLength {
    name: &'static str,
    signature: Signature,
}

impl ScalarUDFImpl for OctetLength {
    fn name(&self) -> &str {
        self.name
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(DataType::Int32)
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let scalar = matches!(args.args.first(), Some(ColumnarValue::Scalar(_)));
        let arrays = ColumnarValue::values_to_arrays(&args.args)?;
        let lengths = datafusion::arrow::compute::kernels::length::length(&arrays[0])?;
        let lengths = datafusion::arrow::compute::cast(&lengths, &DataType::Int32)?;
        Ok(if scalar {
            ColumnarValue::Scalar(datafusion::common::ScalarValue::try_from_array(
                &lengths, 0,
            )?)
        } else {
            ColumnarValue::Array(lengths)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_and_escape_formats() {
        assert_eq!(parse_bytea(b"\\x0a0B"), Some(vec![10, 11]));
        assert_eq!(parse_bytea(b"ab\\\\c\\001"), Some(b"ab\\c\x01".to_vec()));
        assert_eq!(parse_bytea(b"\\x0"), None);
        assert_eq!(parse_bytea(b"\\9"), None);
    }
}
