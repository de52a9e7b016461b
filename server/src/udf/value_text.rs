//! `brook_value_text(value)`: a value as PostgreSQL's text (`{1,2,NULL}`, `2020-01-02
//! 03:04:05+00`, `1e+20`), written by the wire's own text format (`brook_planner::value_text`
//! puts it where a cast to text was).

use datafusion::arrow::array::StringBuilder;
use datafusion::arrow::datatypes::{DataType, Field};
use datafusion::error::Result;
use datafusion::logical_expr::{
    ColumnarValue, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, Volatility,
};
use std::sync::Arc;

#[derive(Debug, PartialEq, Eq, Hash)]
struct ValueText {
    signature: Signature,
}

impl ScalarUDFImpl for ValueText {
    fn name(&self) -> &str {
        "brook_value_text"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(DataType::Utf8)
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let scalar = matches!(args.args[0], ColumnarValue::Scalar(_));
        let values = args.args[0].to_array(args.number_rows)?;
        // The argument's field carries the PostgreSQL type (an unconstrained numeric prints
        // without the trailing zeros of its fixed Arrow scale).
        let field = match args.arg_fields.first() {
            Some(f) if f.data_type() == values.data_type() => f.as_ref().clone(),
            _ => Field::new("value", values.data_type().clone(), true),
        };
        let view = crate::pg::encode::ColumnView::new(&values, &field)
            .map_err(|e| datafusion::error::DataFusionError::External(Box::new(e)))?;
        let mut out = StringBuilder::new();
        let mut text = String::new();
        for r in 0..values.len() {
            if view.is_null(r) {
                out.append_null();
                continue;
            }
            text.clear();
            view.write_text(r, &mut text);
            out.append_value(&text);
        }
        let out: datafusion::arrow::array::ArrayRef = Arc::new(out.finish());
        Ok(if scalar {
            ColumnarValue::Scalar(datafusion::scalar::ScalarValue::try_from_array(&out, 0)?)
        } else {
            ColumnarValue::Array(out)
        })
    }
}

/// The function (the analyzer rule calls it; it is not registered by name).
pub fn udf() -> Arc<ScalarUDF> {
    Arc::new(ScalarUDF::new_from_impl(ValueText {
        signature: Signature::any(1, Volatility::Immutable),
    }))
}
