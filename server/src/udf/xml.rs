//! PostgreSQL's XML functions over `pg::xml`: the `x::xml` cast (`brook_xml`, checks the
//! text), `xpath(path, doc [, namespaces])` (an `xml[]` of the matches),
//! `xpath_exists(path, doc [, namespaces])` (what `XMLEXISTS(path PASSING doc)` becomes),
//! and `xml_is_well_formed[_document|_content](text)`.

use crate::pg::types::PG_TYPE_KEY;
use datafusion::arrow::array::{
    Array, ArrayRef, AsArray, BooleanArray, ListBuilder, StringArray, StringBuilder,
};
use datafusion::arrow::datatypes::{DataType, Field, FieldRef};
use datafusion::error::{DataFusionError, Result};
use datafusion::logical_expr::{
    ColumnarValue, ReturnFieldArgs, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature,
    TypeSignature, Volatility,
};
use datafusion::prelude::SessionContext;
use std::collections::HashMap;
use std::sync::Arc;

/// Which function.
#[derive(Debug, PartialEq, Eq, Hash, Clone, Copy)]
enum Kind {
    /// `x::xml`.
    Cast,
    XPath,
    XPathExists,
    /// `xml_is_well_formed` / `_content` (PostgreSQL's default XMLOPTION is CONTENT).
    WellFormedContent,
    WellFormedDocument,
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct XmlFunction {
    name: &'static str,
    kind: Kind,
    signature: Signature,
}

/// A field of PostgreSQL type `ty` (`xml`, `xml[]`) for the wire.
fn typed(name: &str, dt: DataType, ty: &str) -> FieldRef {
    Arc::new(
        Field::new(name, dt, true)
            .with_metadata(HashMap::from([(PG_TYPE_KEY.to_string(), ty.to_string())])),
    )
}

fn xml_list() -> DataType {
    DataType::List(Arc::new(Field::new_list_field(DataType::Utf8, true)))
}

impl ScalarUDFImpl for XmlFunction {
    fn name(&self) -> &str {
        self.name
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(match self.kind {
            Kind::Cast => DataType::Utf8,
            Kind::XPath => xml_list(),
            _ => DataType::Boolean,
        })
    }

    fn return_field_from_args(&self, _args: ReturnFieldArgs<'_>) -> Result<FieldRef> {
        Ok(match self.kind {
            Kind::Cast => typed(self.name, DataType::Utf8, "xml"),
            Kind::XPath => typed(self.name, xml_list(), "xml[]"),
            _ => Arc::new(Field::new(self.name, DataType::Boolean, true)),
        })
    }

    fn coerce_types(&self, arg_types: &[DataType]) -> Result<Vec<DataType>> {
        // Texts as text; a namespace array as it is.
        Ok(arg_types
            .iter()
            .enumerate()
            .map(|(i, t)| if i < 2 { DataType::Utf8 } else { t.clone() })
            .collect())
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let (arrays, scalar, rows) = super::argument_arrays(&args)?;
        let text = |i: usize| -> Result<StringArray> {
            Ok(
                datafusion::arrow::compute::cast(&arrays[i], &DataType::Utf8)?
                    .as_string::<i32>()
                    .clone(),
            )
        };
        let out: ArrayRef = match self.kind {
            Kind::Cast => {
                let values = text(0)?;
                for v in values.iter().flatten() {
                    crate::pg::xml::check_content(v).map_err(DataFusionError::from)?;
                }
                Arc::new(values)
            }
            Kind::WellFormedContent | Kind::WellFormedDocument => {
                let values = text(0)?;
                let check = if self.kind == Kind::WellFormedContent {
                    crate::pg::xml::is_content
                } else {
                    crate::pg::xml::is_document
                };
                Arc::new(
                    values
                        .iter()
                        .map(|v| v.map(check))
                        .collect::<BooleanArray>(),
                )
            }
            Kind::XPath | Kind::XPathExists => {
                let (paths, docs) = (text(0)?, text(1)?);
                let mut lists = ListBuilder::new(StringBuilder::new());
                let mut exists = Vec::with_capacity(rows);
                for r in 0..rows {
                    if paths.is_null(r) || docs.is_null(r) {
                        lists.append_null();
                        exists.push(None);
                        continue;
                    }
                    let namespaces = match arrays.get(2) {
                        Some(ns) => namespaces(ns, r)?,
                        None => Vec::new(),
                    };
                    let (path, doc) = (paths.value(r), docs.value(r));
                    if self.kind == Kind::XPathExists {
                        let found = crate::pg::xml::xpath_exists(path, doc, &namespaces);
                        exists.push(Some(found.map_err(DataFusionError::from)?));
                        continue;
                    }
                    let found = crate::pg::xml::xpath(path, doc, &namespaces)
                        .map_err(DataFusionError::from)?;
                    for f in found {
                        lists.values().append_value(f);
                    }
                    lists.append(true);
                }
                if self.kind == Kind::XPath {
                    Arc::new(lists.finish())
                } else {
                    Arc::new(BooleanArray::from(exists))
                }
            }
        };
        super::result_value(out, scalar)
    }
}

/// Row `r` of a namespace argument, PostgreSQL's two-dimensional `ARRAY[ARRAY['prefix',
/// 'uri'], ...]`, as pairs.
fn namespaces(ns: &ArrayRef, r: usize) -> Result<Vec<(String, String)>> {
    let bad = || {
        DataFusionError::from(brook_common::brook_err!(
            InvalidParameter,
            "invalid array for XML namespace mapping: it must be two-dimensional, with a second \
             axis of length 2"
        ))
    };
    if ns.is_null(r) {
        return Ok(Vec::new());
    }
    let DataType::List(_) = ns.data_type() else {
        return Err(bad());
    };
    let pairs = ns.as_list::<i32>().value(r);
    let DataType::List(_) = pairs.data_type() else {
        return Err(bad());
    };
    let pairs = pairs.as_list::<i32>();
    let mut out = Vec::with_capacity(pairs.len());
    for i in 0..pairs.len() {
        let pair = datafusion::arrow::compute::cast(&pairs.value(i), &DataType::Utf8)?;
        let pair = pair.as_string::<i32>();
        if pair.len() != 2 || pair.null_count() > 0 {
            return Err(bad());
        }
        out.push((pair.value(0).to_string(), pair.value(1).to_string()));
    }
    Ok(out)
}

/// Register the functions on a database context.
pub fn register(ctx: &SessionContext) {
    let one = || Signature::any(1, Volatility::Immutable);
    let paths = || {
        Signature::one_of(
            vec![TypeSignature::Any(2), TypeSignature::Any(3)],
            Volatility::Immutable,
        )
    };
    for (name, kind, signature) in [
        (brook_planner::pg_functions::XML_CAST, Kind::Cast, one()),
        ("xpath", Kind::XPath, paths()),
        ("xpath_exists", Kind::XPathExists, paths()),
        ("xml_is_well_formed", Kind::WellFormedContent, one()),
        ("xml_is_well_formed_content", Kind::WellFormedContent, one()),
        (
            "xml_is_well_formed_document",
            Kind::WellFormedDocument,
            one(),
        ),
    ] {
        ctx.register_udf(ScalarUDF::new_from_impl(XmlFunction {
            name,
            kind,
            signature,
        }));
    }
}
