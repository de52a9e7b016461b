//! A function FROM item's bare name as its value: `SELECT e ->> 'x' FROM
//! jsonb_array_elements(doc) e` reads the element, as PostgreSQL reads the whole-row
//! reference of a function returning one value per row. The statement rewrite of
//! [`crate::whole_row`] writes such a name as `brook_bare_value(e.value, 'e')`, typed as
//! its first argument (so operators over it are planned for the value's type); its analyzer
//! rule replaces the call ([`bare_value`]) by the column named `e` of another FROM item if
//! there is one (a column goes first, as in PostgreSQL), else by the function's column.

use datafusion::arrow::datatypes::{DataType, FieldRef};
use datafusion::common::tree_node::Transformed;
use datafusion::common::{plan_err, Column, DFSchema, Result, ScalarValue};
use datafusion::logical_expr::{
    ColumnarValue, Expr, ReturnFieldArgs, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature,
    Volatility,
};
use datafusion::sql::sqlparser::ast::ObjectName;

/// The marker of a function FROM item's bare name: its value, unless a column has the name.
pub const BARE_VALUE: &str = "brook_bare_value";

/// Set-returning functions whose one column has a name of its own (PostgreSQL's `OUT
/// value`), which a bare reference to the FROM item reads.
const VALUE_FUNCTIONS: [&str; 4] = [
    "jsonb_array_elements",
    "jsonb_array_elements_text",
    "json_array_elements",
    "json_array_elements_text",
];

/// The column of `name`'s call when it is one of [`VALUE_FUNCTIONS`].
pub(crate) fn value_column(name: &ObjectName) -> Option<&'static str> {
    let last = name.0.last()?.as_ident()?.value.to_ascii_lowercase();
    VALUE_FUNCTIONS.contains(&last.as_str()).then_some("value")
}

/// `brook_bare_value(value, 'name')`: the one column called `name` of the node's inputs
/// when there is one, else the function's value.
pub(crate) fn bare_value(args: &[Expr], schema: &DFSchema) -> Result<Transformed<Expr>> {
    let [value, Expr::Literal(ScalarValue::Utf8(Some(name)), _)] = args else {
        return plan_err!("{BARE_VALUE} takes a value and a name");
    };
    let same_name: Vec<_> = schema.iter().filter(|(_, f)| f.name() == name).collect();
    Ok(Transformed::yes(match same_name.as_slice() {
        [(q, f)] => Expr::Column(Column::new(q.cloned(), f.name())),
        _ => value.clone(),
    }))
}

/// The function a bare value's marker is: its first argument (the analyzer replaces every
/// call, but what it would compute is that).
#[derive(Debug, PartialEq, Eq, Hash)]
struct BareValue {
    signature: Signature,
}

impl ScalarUDFImpl for BareValue {
    fn name(&self) -> &str {
        BARE_VALUE
    }
    fn signature(&self) -> &Signature {
        &self.signature
    }
    fn return_type(&self, args: &[DataType]) -> Result<DataType> {
        match args.first() {
            Some(t) => Ok(t.clone()),
            None => plan_err!("{BARE_VALUE} takes a value and a name"),
        }
    }
    fn return_field_from_args(&self, args: ReturnFieldArgs<'_>) -> Result<FieldRef> {
        // The value's field, metadata and all (a jsonb value stays jsonb).
        match args.arg_fields.first() {
            Some(f) => Ok(f.clone()),
            None => plan_err!("{BARE_VALUE} takes a value and a name"),
        }
    }
    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        match args.args.into_iter().next() {
            Some(v) => Ok(v),
            None => plan_err!("{BARE_VALUE} takes a value and a name"),
        }
    }
}

/// The marker of a function FROM item's bare name.
pub fn bare_value_function() -> ScalarUDF {
    ScalarUDF::new_from_impl(BareValue {
        signature: Signature::any(2, Volatility::Immutable),
    })
}
