//! DataFusion's array functions where PostgreSQL answers differently.
//!
//! Membership and containment with SQL's NULLs. DataFusion's `array_has` (what
//! `x = ANY(a)` becomes), `array_has_all` (`@>`, `<@`) and `array_has_any` (`&&`) answer
//! `false`/`true` where PostgreSQL answers NULL — `3 = ANY('{1,NULL}')` is NULL (the NULL
//! element might be 3), a NULL array makes every test NULL (`NULL::int[] <@ '{1}'` was
//! `true`, so `NOT (v <@ ...)` dropped rows PostgreSQL keeps as unknown) — and they match
//! a NULL element with a NULL element, which PostgreSQL never does (`'{1,NULL}' @>
//! '{NULL}'` is false). Each wraps DataFusion's function and corrects its answer.
//!
//! Integers: `array_length`, `cardinality`, `array_ndims` and `array_position` are
//! `integer`, as PostgreSQL's (DataFusion's unsigned 64-bit results reached clients as
//! numeric); `array_length` of an empty array is NULL (it has no dimension 1; DataFusion
//! says 0). `array_dims(a)` is PostgreSQL's text `[1:3]` (`[1:2][1:2]` of an array of arrays, NULL for an empty array);
//! DataFusion's is a list of lengths (`{3}`). Written here because DataFusion has no
//! option for any of it.

use datafusion::arrow::array::{Array, ArrayRef, AsArray, BooleanArray, StringArray};
use datafusion::arrow::buffer::OffsetBuffer;
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, Field, FieldRef};
use datafusion::error::Result;
use datafusion::execution::FunctionRegistry;
use datafusion::logical_expr::type_coercion::binary::comparison_coercion;
use datafusion::logical_expr::type_coercion::functions::fields_with_udf;
use datafusion::logical_expr::{
    ColumnarValue, ReturnFieldArgs, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature,
};
use datafusion::prelude::SessionContext;
use std::sync::Arc;

/// What a wrapped function answers.
#[derive(Debug, PartialEq, Eq, Hash, Clone, Copy)]
enum Test {
    /// `array_has(a, x)`: NULL when x is not found and a has a NULL element, or x is
    /// NULL and a is not empty; `false` for an empty array.
    Member,
    /// `array_has_all(a, b)`: a NULL element of b is never contained.
    ContainsAll,
    /// `array_has_any(a, b)`: NULL elements overlap nothing.
    Overlaps,
    /// `array_length(a, d)`: an integer, NULL for an empty array.
    Length,
    /// `cardinality`, `array_ndims`, `array_position`: an integer (DataFusion's are
    /// unsigned 64-bit, which clients receive as numeric).
    Integer,
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct AsPostgres {
    inner: Arc<ScalarUDF>,
    test: Test,
    /// The user-defined signature of the tests that coerce their arguments here first
    /// (`array_has`: [`member_types`]; `array_has_all`, `array_has_any`:
    /// [`list_beside_text`]).
    member_signature: Signature,
}

impl AsPostgres {
    fn integer(&self) -> bool {
        matches!(self.test, Test::Length | Test::Integer)
    }

    /// Whether the arguments are coerced here first (`member_signature`), DataFusion's
    /// coercion taking the rest.
    fn coerces(&self) -> bool {
        matches!(self.test, Test::Member | Test::ContainsAll | Test::Overlaps)
    }
}

impl ScalarUDFImpl for AsPostgres {
    fn name(&self) -> &str {
        self.inner.name()
    }

    fn aliases(&self) -> &[String] {
        self.inner.aliases()
    }

    fn signature(&self) -> &Signature {
        if self.coerces() {
            return &self.member_signature;
        }
        self.inner.signature()
    }

    fn return_type(&self, arg_types: &[DataType]) -> Result<DataType> {
        if self.integer() {
            return Ok(DataType::Int32);
        }
        self.inner.return_type(arg_types)
    }

    fn return_field_from_args(&self, args: ReturnFieldArgs<'_>) -> Result<FieldRef> {
        let field = self.inner.return_field_from_args(args)?;
        if !self.integer() {
            return Ok(field);
        }
        Ok(Arc::new(Field::new(field.name(), DataType::Int32, true)))
    }

    fn coerce_types(&self, arg_types: &[DataType]) -> Result<Vec<DataType>> {
        let own = match self.test {
            Test::Member => member_types(arg_types),
            Test::ContainsAll | Test::Overlaps => list_beside_text(arg_types),
            _ => None,
        };
        if let Some(types) = own {
            return Ok(types);
        }
        if self.coerces() {
            let fields: Vec<FieldRef> = arg_types
                .iter()
                .map(|t| Arc::new(Field::new("a", t.clone(), true)))
                .collect();
            return Ok(fields_with_udf(&fields, self.inner.as_ref())?
                .iter()
                .map(|f| f.data_type().clone())
                .collect());
        }
        self.inner.coerce_types(arg_types)
    }

    fn invoke_with_args(&self, mut args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let rows = args.number_rows;
        let inputs: Vec<ArrayRef> = args
            .args
            .iter()
            .map(|a| a.to_array(rows))
            .collect::<Result<_>>()?;
        let all_scalar = args
            .args
            .iter()
            .all(|a| matches!(a, ColumnarValue::Scalar(_)));
        if self.test == Test::Overlaps {
            if let Some(second) = inputs.get(1) {
                args.args[1] = ColumnarValue::Array(without_null_elements(second)?);
            }
        }
        if self.integer() {
            args.return_field = Arc::new(Field::new(
                self.name(),
                self.inner.return_type(
                    &inputs
                        .iter()
                        .map(|a| a.data_type().clone())
                        .collect::<Vec<_>>(),
                )?,
                true,
            ));
        }
        let out = self.inner.invoke_with_args(args)?.to_array(rows)?;
        let fixed: ArrayRef = match self.test {
            Test::Length => cast(&empty_as_null(&out)?, &DataType::Int32)?,
            Test::Integer => cast(&out, &DataType::Int32)?,
            test => Arc::new(with_nulls(out.as_boolean(), &inputs, test)),
        };
        Ok(if all_scalar {
            ColumnarValue::Scalar(datafusion::scalar::ScalarValue::try_from_array(&fixed, 0)?)
        } else {
            ColumnarValue::Array(fixed)
        })
    }
}

/// DataFusion's answers `out` as PostgreSQL gives them.
fn with_nulls(out: &BooleanArray, inputs: &[ArrayRef], test: Test) -> BooleanArray {
    (0..out.len())
        .map(|r| {
            let array = &inputs[0];
            if array.is_null(r) {
                return None;
            }
            match test {
                Test::Member if element_count(array, r) == Some(0) => Some(false),
                _ if out.is_null(r) => None,
                Test::Member if inputs.iter().any(|a| a.is_null(r)) => None,
                // Found is true whatever else the array holds; not found is unknown when
                // some element is NULL.
                Test::Member if !out.value(r) && has_null_element(array, r) => None,
                _ if inputs.iter().any(|a| a.is_null(r)) => None,
                Test::ContainsAll => Some(out.value(r) && !has_null_element(&inputs[1], r)),
                _ => Some(out.value(r)),
            }
        })
        .collect()
}

/// A list column with its NULL elements left out.
fn without_null_elements(a: &ArrayRef) -> Result<ArrayRef> {
    let DataType::List(field) = a.data_type() else {
        return Ok(a.clone());
    };
    let list = a.as_list::<i32>();
    if list.values().null_count() == 0 {
        return Ok(a.clone());
    }
    let mut lengths = Vec::with_capacity(list.len());
    let mut keep = Vec::with_capacity(list.values().len());
    for r in 0..list.len() {
        let values = list.value(r);
        lengths.push((0..values.len()).filter(|&j| values.is_valid(j)).count());
    }
    let offsets = list.value_offsets();
    let (first, last) = (offsets[0] as usize, offsets[list.len()] as usize);
    for j in first..last {
        keep.push(list.values().is_valid(j));
    }
    let values = list.values().slice(first, last - first);
    let values = datafusion::arrow::compute::filter(&values, &BooleanArray::from(keep))?;
    Ok(Arc::new(datafusion::arrow::array::ListArray::try_new(
        field.clone(),
        OffsetBuffer::from_lengths(lengths),
        values,
        list.nulls().cloned(),
    )?))
}

/// Lengths with 0 as NULL.
fn empty_as_null(out: &ArrayRef) -> Result<ArrayRef> {
    let lengths = cast(out, &DataType::UInt64)?;
    let lengths = lengths.as_primitive::<datafusion::arrow::datatypes::UInt64Type>();
    let zero = datafusion::arrow::array::UInt64Array::new_scalar(0);
    let empty = datafusion::arrow::compute::kernels::cmp::eq(lengths, &zero)?;
    Ok(datafusion::arrow::compute::nullif(out, &empty)?)
}

fn has_null_element(a: &ArrayRef, r: usize) -> bool {
    row_elements(a, r).is_some_and(|values| values.null_count() > 0)
}

/// The elements of list row `r`, `None` when `a` is no list.
fn row_elements(a: &ArrayRef, r: usize) -> Option<ArrayRef> {
    Some(match a.data_type() {
        DataType::List(_) => a.as_list::<i32>().value(r),
        DataType::LargeList(_) => a.as_list::<i64>().value(r),
        DataType::FixedSizeList(..) => a.as_fixed_size_list().value(r),
        _ => return None,
    })
}

/// PostgreSQL's `[1:n]` for each dimension of array row `r` (an array of arrays has a
/// dimension per level, its length read from the first sub-array), `None` when NULL or
/// empty.
fn dims_text(a: &ArrayRef, r: usize) -> Option<String> {
    let n = element_count(a, r)?;
    if n == 0 {
        return None;
    }
    let mut text = format!("[1:{n}]");
    let mut level = row_elements(a, r)?;
    while let Some(m) = element_count(&level, 0).filter(|&m| m > 0) {
        text.push_str(&format!("[1:{m}]"));
        let Some(next) = row_elements(&level, 0) else {
            break;
        };
        level = next;
    }
    Some(text)
}

/// `array_dims` as PostgreSQL prints an array's bounds.
#[derive(Debug, PartialEq, Eq, Hash)]
struct ArrayDims {
    signature: Signature,
}

impl ScalarUDFImpl for ArrayDims {
    fn name(&self) -> &str {
        "array_dims"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(DataType::Utf8)
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let a = args.args[0].to_array(args.number_rows)?;
        let dims: StringArray = (0..a.len()).map(|r| dims_text(&a, r)).collect();
        Ok(ColumnarValue::Array(Arc::new(dims)))
    }
}

/// `x = ANY (array)` (`array_has(array, x)`) of an element and a needle of two numeric
/// types, one a numeric or a double: both of the type a comparison takes them as (a
/// double if either is one, as PostgreSQL). DataFusion's array signature refused them
/// (`f = ANY (ARRAY[0.5, 0.9])`, `i = ANY (ARRAY[1.5, 2])`: 42883).
fn member_types(arg_types: &[DataType]) -> Option<Vec<DataType>> {
    let [DataType::List(item), needle] = arg_types else {
        return None;
    };
    let element = item.data_type();
    let number = |t: &DataType| t.is_numeric();
    let inexact = |t: &DataType| t.is_floating() || matches!(t, DataType::Decimal128(..));
    if element == needle
        || !(number(element) && number(needle))
        || !(inexact(element) || inexact(needle))
    {
        return None;
    }
    let common = if element.is_floating() || needle.is_floating() {
        DataType::Float64
    } else {
        comparison_coercion(element, needle)?
    };
    Some(vec![
        DataType::List(Arc::new(Field::new_list_field(common.clone(), true))),
        common,
    ])
}

/// The number of elements of list row `r`, `None` when NULL or not a list.
fn element_count(a: &ArrayRef, r: usize) -> Option<usize> {
    if a.is_null(r) {
        return None;
    }
    match a.data_type() {
        DataType::List(_) => Some(a.as_list::<i32>().value_length(r) as usize),
        DataType::LargeList(_) => Some(a.as_list::<i64>().value_length(r) as usize),
        DataType::FixedSizeList(_, n) => Some(*n as usize),
        _ => None,
    }
}

/// Register the functions on a database context.
pub fn register(ctx: &SessionContext) {
    ctx.register_udf(ScalarUDF::new_from_impl(ArrayDims {
        signature: Signature::any(1, datafusion::logical_expr::Volatility::Immutable),
    }));
    for (name, test) in [
        ("array_has", Test::Member),
        ("array_has_all", Test::ContainsAll),
        ("array_has_any", Test::Overlaps),
        ("array_length", Test::Length),
        ("cardinality", Test::Integer),
        ("array_ndims", Test::Integer),
        ("array_position", Test::Integer),
    ] {
        if let Ok(inner) = ctx.udf(name) {
            ctx.register_udf(ScalarUDF::new_from_impl(AsPostgres {
                member_signature: Signature::user_defined(inner.signature().volatility),
                inner,
                test,
            }));
        }
    }
}

/// An array beside text (`ARRAY['x','y'] @> '{y}'`) or NULL: the text is read as that
/// array type, as PostgreSQL types an untyped literal by the other operand (the cast becomes
/// array input in `brook_planner::array_literal_arguments`; DataFusion refused the pair).
fn list_beside_text(types: &[DataType]) -> Option<Vec<DataType>> {
    let is_list = |t: &DataType| matches!(t, DataType::List(_) | DataType::LargeList(_));
    match types {
        [a, b] if is_list(a) && (super::is_text(b) || b == &DataType::Null) => {
            Some(vec![a.clone(), a.clone()])
        }
        [a, b] if (super::is_text(a) || a == &DataType::Null) && is_list(b) => {
            Some(vec![b.clone(), b.clone()])
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn answers(sql: &str) -> Vec<Option<bool>> {
        let ctx = SessionContext::new();
        register(&ctx);
        let batches = ctx.sql(sql).await.unwrap().collect().await.unwrap();
        batches
            .iter()
            .flat_map(|b| b.column(0).as_boolean().iter().collect::<Vec<_>>())
            .collect()
    }

    #[tokio::test]
    async fn membership_is_unknown_where_postgresql_says_so() {
        let sql = "SELECT array_has(a, x) FROM (VALUES (make_array(1, NULL), 3), \
                   (make_array(1, NULL), 1), (make_array(1, 2), 3), (NULL, 1), \
                   (make_array(1), NULL), (make_array(), NULL)) AS t(a, x)";
        assert_eq!(
            answers(sql).await,
            vec![None, Some(true), Some(false), None, None, Some(false)]
        );
    }

    #[tokio::test]
    async fn containment_of_a_null_array_is_unknown() {
        let sql = "SELECT array_has_all(a, make_array(1)) FROM (VALUES (make_array(1, 2)), \
                   (make_array(2)), (NULL)) AS t(a)";
        assert_eq!(answers(sql).await, vec![Some(true), Some(false), None]);
        // a NULL element is contained in nothing and overlaps nothing
        let sql = "SELECT array_has_all(make_array(1, NULL), make_array(1, NULL)) \
                   UNION ALL SELECT array_has_any(make_array(1, NULL), make_array(NULL, 2)) \
                   UNION ALL SELECT array_has_any(make_array(1, NULL), make_array(NULL, 1))";
        let mut got = answers(sql).await;
        got.sort();
        assert_eq!(got, vec![Some(false), Some(false), Some(true)]);
    }
}
