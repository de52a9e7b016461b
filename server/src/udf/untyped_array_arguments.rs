//! Built-in array functions called with an untyped array literal: `array_append('{1,2}',
//! 3)`, `array_prepend(0, '{1,2}')`, `array_cat('{1}', ARRAY[2])`, `array_position('{a,b}',
//! 'b')`, `array_remove('{1,2,1}', 1)`, `array_replace('{1,2,1}', 1, 9)`.
//!
//! PostgreSQL resolves such a literal's type from the function's other polymorphic
//! argument (`anyarray` beside `anyelement`: the array of the element's type; beside
//! another array: that array's type; text when nothing says more). DataFusion's signature
//! check saw a string and refused the call ("array_append does not support type Utf8").
//! Each of these functions is registered again wrapped: the wrapper's coercion gives a text
//! argument in an array position the array type PostgreSQL would resolve, then DataFusion's
//! own coercion of the function runs; the cast of the text is read as array input
//! (`brook_planner::array_literal_arguments`). Everything else is the wrapped function's.
//! `array_remove` and `array_replace` take every match, as PostgreSQL's do.

use datafusion::arrow::datatypes::{DataType, Field, FieldRef};
use datafusion::error::Result;
use datafusion::execution::FunctionRegistry;
use datafusion::logical_expr::simplify::{ExprSimplifyResult, SimplifyContext};
use datafusion::logical_expr::type_coercion::functions::fields_with_udf;
use datafusion::logical_expr::{
    ColumnarValue, Expr, ReturnFieldArgs, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature,
};
use datafusion::prelude::SessionContext;
use std::sync::Arc;

/// Each function by its PostgreSQL name, the DataFusion function that computes it, the
/// positions of its array arguments and of its element argument. PostgreSQL's
/// `array_remove` and `array_replace` take every match; DataFusion's of those names take
/// the first only (`array_remove('{1,2,1}', 1)` was `{2,1}`, PostgreSQL's `{2}`): theirs
/// are DataFusion's `_all` functions.
type Wrapped = (&'static str, &'static str, &'static [usize], Option<usize>);
const FUNCTIONS: [Wrapped; 7] = [
    ("array_append", "array_append", &[0], Some(1)),
    ("array_prepend", "array_prepend", &[1], Some(0)),
    ("array_concat", "array_concat", &[0, 1], None),
    ("array_position", "array_position", &[0], Some(1)),
    ("array_positions", "array_positions", &[0], Some(1)),
    ("array_remove", "array_remove_all", &[0], Some(1)),
    ("array_replace", "array_replace_all", &[0], Some(1)),
];

pub fn register(ctx: &SessionContext) {
    for (name, computed_by, arrays, element) in FUNCTIONS {
        let Ok(inner) = ctx.udf(computed_by) else {
            continue;
        };
        let signature = Signature::user_defined(inner.signature().volatility);
        let aliases = if name == computed_by {
            inner.aliases().to_vec()
        } else {
            vec![]
        };
        ctx.register_udf(ScalarUDF::new_from_impl(UntypedArrays {
            name,
            aliases,
            inner: inner.as_ref().clone(),
            arrays,
            element,
            signature,
        }));
    }
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct UntypedArrays {
    name: &'static str,
    aliases: Vec<String>,
    inner: ScalarUDF,
    arrays: &'static [usize],
    element: Option<usize>,
    signature: Signature,
}

fn is_text(t: &DataType) -> bool {
    matches!(t, DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View)
}

impl UntypedArrays {
    /// `types` with each text argument in an array position given the array type
    /// PostgreSQL resolves for it.
    fn resolved(&self, types: &[DataType]) -> Vec<DataType> {
        let mut types = types.to_vec();
        // A NULL in an array position is a NULL of the array type (`array_cat(ARRAY[1],
        // NULL)` is `{1}`; DataFusion typed it as the element and refused it).
        let untyped = |t: &DataType| is_text(t) || matches!(t, DataType::Null);
        if !self
            .arrays
            .iter()
            .any(|&i| types.get(i).is_some_and(untyped))
        {
            return types;
        }
        let from_array = self.arrays.iter().find_map(|&i| match types.get(i) {
            Some(DataType::List(f) | DataType::LargeList(f)) => Some(f.data_type().clone()),
            _ => None,
        });
        let from_element = self
            .element
            .and_then(|i| types.get(i))
            .filter(|t| !matches!(t, DataType::Null))
            .cloned();
        let element = from_array.or(from_element).unwrap_or(DataType::Utf8);
        let list = DataType::List(Arc::new(Field::new_list_field(element, true)));
        for &i in self.arrays {
            if types.get(i).is_some_and(untyped) {
                types[i] = list.clone();
            }
        }
        types
    }
}

impl ScalarUDFImpl for UntypedArrays {
    fn name(&self) -> &str {
        self.name
    }

    fn aliases(&self) -> &[String] {
        &self.aliases
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn coerce_types(&self, arg_types: &[DataType]) -> Result<Vec<DataType>> {
        let fields: Vec<FieldRef> = self
            .resolved(arg_types)
            .into_iter()
            .map(|t| Arc::new(Field::new("argument", t, true)))
            .collect();
        Ok(fields_with_udf(&fields, &self.inner)?
            .iter()
            .map(|f| f.data_type().clone())
            .collect())
    }

    fn return_type(&self, arg_types: &[DataType]) -> Result<DataType> {
        self.inner.return_type(arg_types)
    }

    fn return_field_from_args(&self, args: ReturnFieldArgs<'_>) -> Result<FieldRef> {
        self.inner.return_field_from_args(args)
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        if self.name == "array_remove" {
            return remove_with_nulls(&self.inner, args);
        }
        self.inner.invoke_with_args(args)
    }

    fn simplify(&self, args: Vec<Expr>, info: &SimplifyContext) -> Result<ExprSimplifyResult> {
        self.inner.simplify(args, info)
    }
}

/// `array_remove(a, e)`: DataFusion's gives NULL where `e` is NULL; PostgreSQL's removes the
/// NULL elements there (`array_remove('{1,NULL,2}', NULL)` is `{1,2}`, and an aggregate
/// with `SFUNC = array_remove` takes NULL rows so). Rows with a NULL element are done one by
/// one (written here: no array kernel removes a list's NULLs); the rest by DataFusion.
fn remove_with_nulls(inner: &ScalarUDF, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
    use datafusion::arrow::array::Array;
    use datafusion::arrow::compute::{filter, is_not_null};
    use datafusion::common::ScalarValue;
    let rows = args.number_rows;
    let (Some(list), Some(element)) = (args.args.first().cloned(), args.args.get(1).cloned())
    else {
        return inner.invoke_with_args(args);
    };
    let element = element.into_array(rows)?;
    if element.null_count() == 0 {
        return inner.invoke_with_args(args);
    }
    let scalar_list = matches!(list, ColumnarValue::Scalar(_));
    let list = list.into_array(rows)?;
    let removed = inner.invoke_with_args(args)?.into_array(rows)?;
    let values = (0..rows)
        .map(|i| {
            if !element.is_null(i) || list.is_null(i) {
                return ScalarValue::try_from_array(&removed, i);
            }
            let ScalarValue::List(one) = ScalarValue::try_from_array(&list, i)? else {
                return ScalarValue::try_from_array(&removed, i);
            };
            let items = one.value(0);
            let kept = filter(&items, &is_not_null(&items)?)?;
            Ok(ScalarValue::List(Arc::new(
                datafusion::common::utils::SingleRowListArrayBuilder::new(kept)
                    .with_field(&Field::new_list_field(items.data_type().clone(), true))
                    .build_list_array(),
            )))
        })
        .collect::<Result<Vec<_>>>()?;
    let out = ScalarValue::iter_to_array(values)?;
    Ok(if scalar_list && rows == 1 {
        ColumnarValue::Scalar(ScalarValue::try_from_array(&out, 0)?)
    } else {
        ColumnarValue::Array(out)
    })
}
