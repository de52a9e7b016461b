//! `brook_array_text(array)`: an array as PostgreSQL's text (`{1,2,NULL}`), written by the
//! wire's own text format (`brook_planner::array_text` puts it where a cast to text was).

use datafusion::arrow::array::StringBuilder;
use datafusion::arrow::datatypes::{DataType, Field};
use datafusion::error::Result;
use datafusion::logical_expr::{
    ColumnarValue, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, Volatility,
};
use std::sync::Arc;

#[derive(Debug, PartialEq, Eq, Hash)]
struct ArrayText {
    signature: Signature,
}

impl ScalarUDFImpl for ArrayText {
    fn name(&self) -> &str {
        "brook_array_text"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(DataType::Utf8)
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let scalar = matches!(args.args[0], ColumnarValue::Scalar(_));
        let lists = args.args[0].to_array(args.number_rows)?;
        let field = Field::new("array", lists.data_type().clone(), true);
        let view = crate::pg::encode::ColumnView::new(&lists, &field)
            .map_err(|e| datafusion::error::DataFusionError::External(Box::new(e)))?;
        let mut out = StringBuilder::new();
        let mut text = String::new();
        for r in 0..lists.len() {
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
    Arc::new(ScalarUDF::new_from_impl(ArrayText {
        signature: Signature::any(1, Volatility::Immutable),
    }))
}
