//! Text to `numeric` as PostgreSQL reads it where Arrow's decimal parser does not:
//! exponent notation (`'2e1'::numeric`, `'1.5E-3'` compared with a numeric column) was
//! "Cannot cast string '2e1'", and `'NaN'` / `'Infinity'` read as bad text. An analyzer rule
//! puts `brook_numeric_text` under every text-to-numeric cast ([`crate::text_input`]); it
//! writes exponents out in plain digits, all of them (Arrow's parser rounds them to the
//! type's scale or refuses a number too large: 22003), and passes other text through, so
//! the accepted language only grows. NaN and the infinities, which PostgreSQL's numeric
//! has and Brook's (a 128-bit decimal) has not, are 0A000. COPY and INSERT read numeric
//! text through [`numeric_input`] too.
//!
//! An unconstrained `numeric` is a decimal of [`UNCONSTRAINED_SCALE`] decimals in Brook
//! (PostgreSQL's keeps every digit). Rounding a value to it would lose digits without a
//! word, so: a constant cast to `numeric` keeps its own digits (`'1.123456789012345678'::
//! numeric` is a decimal of scale 18), and text read at run time that has more decimals
//! than the type keeps is 22003 naming the limit ([`check_kept`]; the write path applies it
//! to unconstrained columns).

use crate::numeric_literals::plain_number_of;
use crate::text_input::{result_like, text_argument, under_text_casts};
use brook_common::{brook_err, BrookError};
use datafusion::arrow::array::{AsArray, Decimal128Array, ListArray, StringArray};
use datafusion::arrow::datatypes::DataType;
use datafusion::common::config::ConfigOptions;
use datafusion::common::tree_node::{Transformed, TreeNode};
use datafusion::common::{DFSchema, DataFusionError, Result, ScalarValue};
use datafusion::logical_expr::expr::{Cast, ScalarFunction};
use datafusion::logical_expr::{
    ColumnarValue, Expr, ExprSchemable, LogicalPlan, LogicalPlanBuilder, ScalarFunctionArgs,
    ScalarUDF, ScalarUDFImpl, Signature, Volatility,
};
use datafusion::optimizer::analyzer::type_coercion::TypeCoercion;
use datafusion::optimizer::AnalyzerRule;
use std::borrow::Cow;
use std::sync::Arc;

/// The decimals Brook's unconstrained `numeric` keeps (it is a `Decimal128(38, 10)`).
pub const UNCONSTRAINED_SCALE: i8 = 10;

/// The digits after the point of plain number text, without its trailing zeros.
pub fn fraction_digits(plain: &str) -> usize {
    plain
        .split_once('.')
        .map_or(0, |(_, f)| f.trim().trim_end_matches('0').len())
}

/// `text` (read as `plain`, its digits written out) refused when a numeric of `scale`
/// decimals that stands for PostgreSQL's unconstrained numeric would round it.
pub fn check_kept(text: &str, plain: &str, scale: i8) -> Result<(), BrookError> {
    let digits = fraction_digits(plain);
    if digits > scale.max(0) as usize {
        return Err(lost_digits(text, digits, scale));
    }
    Ok(())
}

/// The error for a value of `digits` decimals given to an unconstrained numeric that keeps
/// `scale` of them.
pub fn lost_digits(value: &str, digits: usize, scale: i8) -> BrookError {
    brook_err!(
        OutOfRange,
        "numeric value {value} has {digits} decimal digits, more than the {scale} Brook's \
         unconstrained numeric keeps: declare the column numeric(p, s) with the scale it \
         needs, or round the value"
    )
}

/// Decimals of scale `scale` refused when a numeric of `keeps` decimals that stands for
/// PostgreSQL's unconstrained numeric would round one of them (the first is named).
pub fn check_decimals_kept(
    values: &Decimal128Array,
    scale: i8,
    keeps: i8,
) -> Result<(), BrookError> {
    use datafusion::arrow::datatypes::{Decimal128Type, DecimalType};
    if scale <= keeps {
        return Ok(());
    }
    let cut = 10i128.pow((scale - keeps.max(0)) as u32);
    match values.iter().flatten().find(|v| v % cut != 0) {
        Some(v) => {
            let text = Decimal128Type::format_decimal(v, 38, scale);
            Err(lost_digits(&text, fraction_digits(&text), keeps))
        }
        None => Ok(()),
    }
}

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

/// `brook_numeric_text(text) -> text`; with `keeps`, text of more decimals than that is
/// refused ([`check_kept`]): the cast it stands under is to an unconstrained numeric.
#[derive(Debug, PartialEq, Eq, Hash)]
struct NumericText {
    signature: Signature,
    name: &'static str,
    keeps: Option<i8>,
}

impl ScalarUDFImpl for NumericText {
    fn name(&self) -> &str {
        self.name
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
                v.map(|v| {
                    let plain = numeric_input(v)?;
                    if let Some(scale) = self.keeps {
                        check_kept(&format!("\"{v}\""), &plain, scale)?;
                    }
                    Ok::<_, BrookError>(plain.into_owned())
                })
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
    /// For casts to an unconstrained numeric: refuses text it would round.
    unconstrained: Arc<ScalarUDF>,
    /// For casts of `text[]` to an unconstrained `numeric[]`: the same, element by element.
    unconstrained_list: Arc<ScalarUDF>,
}

impl Default for NumericInput {
    fn default() -> Self {
        let udf = |name, keeps| {
            Arc::new(ScalarUDF::new_from_impl(NumericText {
                signature: Signature::any(1, Volatility::Immutable),
                name,
                keeps,
            }))
        };
        NumericInput {
            udf: udf("brook_numeric_text", None),
            unconstrained: udf(
                "brook_unconstrained_numeric_text",
                Some(UNCONSTRAINED_SCALE),
            ),
            unconstrained_list: Arc::new(ScalarUDF::new_from_impl(NumericListText {
                signature: Signature::any(1, Volatility::Immutable),
            })),
        }
    }
}

/// The type SQL's `numeric` (and `decimal`) without precision is planned as.
fn unconstrained() -> DataType {
    DataType::Decimal128(38, UNCONSTRAINED_SCALE)
}

fn is_unconstrained(t: &DataType) -> bool {
    *t == unconstrained()
}

fn is_constrained_decimal(t: &DataType) -> bool {
    matches!(t, DataType::Decimal128(..) | DataType::Decimal256(..)) && !is_unconstrained(t)
}

/// A constant cast to an unconstrained numeric, cast instead to a numeric of the
/// constant's own decimals when it has more than the type keeps: PostgreSQL's `numeric`
/// keeps every digit of `'1.123456789012345678'::numeric` (and of a constant inserted into
/// such a column, whose assignment then refuses what the column cannot hold). `None` when
/// the cast keeps every digit already.
fn constant_keeping_digits(e: &Expr) -> Result<Option<Expr>> {
    let Expr::Cast(Cast { expr, field }) = e else {
        return Ok(None);
    };
    if !is_unconstrained(field.data_type()) {
        return Ok(None);
    }
    let value = match expr.as_ref() {
        Expr::Literal(value, _) => value,
        // A constant kept whole already (a bound parameter is `CAST(CAST('v' AS numeric) AS
        // numeric)`): the outer cast goes.
        Expr::Cast(Cast { expr: inner, field })
            if matches!(inner.as_ref(), Expr::Literal(..))
                && matches!(field.data_type(), DataType::Decimal128(..))
                && !is_unconstrained(field.data_type()) =>
        {
            return Ok(Some(expr.as_ref().clone()));
        }
        _ => return Ok(None),
    };
    // The integer digits a numeric of the unconstrained type's scale holds.
    let whole = 38 - UNCONSTRAINED_SCALE as usize;
    let (text, ints, decimals, written) = match value {
        ScalarValue::Utf8(Some(t))
        | ScalarValue::LargeUtf8(Some(t))
        | ScalarValue::Utf8View(Some(t)) => {
            let plain = numeric_input(t).map_err(|e| DataFusionError::External(Box::new(e)))?;
            let written = plain.split_once('.').map_or(0, |(_, f)| f.trim().len());
            let ints = integer_digits(&plain);
            (format!("\"{t}\""), ints, fraction_digits(&plain), written)
        }
        ScalarValue::Decimal128(Some(v), _, s) if *s >= 0 => {
            let text = value.to_string();
            let ints = integer_digits(&text);
            (text.clone(), ints, fraction_digits(&text), *s as usize)
        }
        _ => return Ok(None),
    };
    if decimals <= UNCONSTRAINED_SCALE as usize && ints <= whole {
        return Ok(None);
    }
    // As many decimals as written, as fit beside the integer digits (38 in all): a
    // 38-digit integer (a `numeric(38, 0)` key bound as a parameter) is of scale 0.
    let scale = written.min(38usize.saturating_sub(ints));
    if decimals > scale {
        return Err(DataFusionError::External(Box::new(lost_digits(
            &text,
            decimals,
            scale as i8,
        ))));
    }
    let to = DataType::Decimal128(38, scale as i8);
    Ok(Some(Expr::Cast(Cast::new(expr.clone(), to))))
}

impl AnalyzerRule for NumericInput {
    fn analyze(&self, plan: LogicalPlan, config: &ConfigOptions) -> Result<LogicalPlan> {
        let kept = std::cell::Cell::new(false);
        let plan = crate::checked::rewrite_plan_expressions(plan, true, &|e, _| {
            let out = e.transform_up(|e| {
                Ok(match constant_keeping_digits(&e)? {
                    Some(kept) => Transformed::yes(kept),
                    None => Transformed::no(e),
                })
            })?;
            kept.set(kept.get() || out.transformed);
            Ok(out)
        })?;
        // A constant of another type than the one coercion gave it: the relations above it
        // take its type (a VALUES list types its columns again) and the types around it (a
        // comparison's, a UNION's columns) are coerced again.
        let plan = if kept.get() {
            let plan = plan
                .transform_up_with_subqueries(|p| match p {
                    LogicalPlan::Values(v) => LogicalPlanBuilder::values(v.values)?
                        .build()
                        .map(Transformed::yes),
                    other => other.recompute_schema().map(Transformed::yes),
                })?
                .data;
            TypeCoercion::new().analyze(plan, config)?
        } else {
            plan
        };
        crate::checked::rewrite_plan_expressions(plan, true, &|e, schema| {
            let e = under_text_casts(e, schema, is_unconstrained, &self.unconstrained)?;
            let e = e.transform_data(|e| {
                under_text_casts(e, schema, is_constrained_decimal, &self.udf)
            })?;
            e.transform_data(|e| e.transform_up(|e| self.under_list_cast(e, schema)))
        })
    }

    fn name(&self) -> &str {
        "brook_numeric_input"
    }
}

impl NumericInput {
    /// `CAST(x AS numeric[])` of a `text[]` `x` as `CAST(brook_numeric_list_text(x) AS
    /// numeric[])`.
    fn under_list_cast(&self, e: Expr, schema: &DFSchema) -> Result<Transformed<Expr>> {
        let Expr::Cast(Cast { expr, field }) = &e else {
            return Ok(Transformed::no(e));
        };
        let to_unconstrained =
            matches!(field.data_type(), DataType::List(f) if is_unconstrained(f.data_type()));
        let checked = match expr.get_type(schema)? {
            DataType::List(f) => match f.data_type() {
                DataType::Utf8 => true,
                // Constants of more decimals (`'{1e-11}'` read element by element).
                DataType::Decimal128(_, s) => {
                    *s > UNCONSTRAINED_SCALE && expr.column_refs().is_empty()
                }
                _ => false,
            },
            _ => false,
        };
        let read = matches!(expr.as_ref(), Expr::ScalarFunction(f) if f.name() == LIST_TEXT);
        if !to_unconstrained || !checked || read {
            return Ok(Transformed::no(e));
        }
        let checked = Expr::ScalarFunction(ScalarFunction::new_udf(
            self.unconstrained_list.clone(),
            vec![expr.as_ref().clone()],
        ));
        Ok(Transformed::yes(Expr::Cast(Cast {
            expr: Box::new(checked),
            field: field.clone(),
        })))
    }
}

const LIST_TEXT: &str = "brook_numeric_list_text";

/// `brook_numeric_list_text(text[]) -> text[]`: each element as [`numeric_input`] reads it
/// and as an unconstrained numeric keeps it ([`check_kept`]): `'{1e-11}'::numeric[]` was
/// `{0}`. A list of decimals is checked the same way and passed on as it is.
#[derive(Debug, PartialEq, Eq, Hash)]
struct NumericListText {
    signature: Signature,
}

impl ScalarUDFImpl for NumericListText {
    fn name(&self) -> &str {
        LIST_TEXT
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, arg_types: &[DataType]) -> Result<DataType> {
        Ok(arg_types[0].clone())
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let arrays = ColumnarValue::values_to_arrays(&args.args)?;
        let list = arrays[0].as_list::<i32>();
        if let DataType::Decimal128(_, scale) = list.values().data_type() {
            let values = list
                .values()
                .as_primitive::<datafusion::arrow::datatypes::Decimal128Type>();
            check_decimals_kept(values, *scale, UNCONSTRAINED_SCALE)
                .map_err(|e| DataFusionError::External(Box::new(e)))?;
            return Ok(args.args[0].clone());
        }
        let texts = list.values().as_string::<i32>();
        let read = texts
            .iter()
            .map(|v| {
                v.map(|v| {
                    let plain = numeric_input(v)?;
                    check_kept(&format!("\"{v}\""), &plain, UNCONSTRAINED_SCALE)?;
                    Ok::<_, BrookError>(plain.into_owned())
                })
                .transpose()
                .map_err(|e| DataFusionError::External(Box::new(e)))
            })
            .collect::<Result<StringArray>>()?;
        let (field, offsets, _, nulls) = list.clone().into_parts();
        let out = ListArray::try_new(field, offsets, Arc::new(read), nulls)?;
        result_like(&args.args, Arc::new(out))
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

    #[test]
    fn an_unconstrained_numeric_refuses_what_it_would_round() {
        assert_eq!(fraction_digits("1.1234500000"), 5);
        assert_eq!(fraction_digits("12"), 0);
        assert!(check_kept("x", "0.0000000001", 10).is_ok());
        assert!(check_kept("x", "1.12345678900000", 10).is_ok());
        let e = check_kept("1.123456789012", "1.123456789012", 10).unwrap_err();
        assert_eq!(e.sqlstate(), "22003");
        assert!(e.to_string().contains("12 decimal digits"), "{e}");
    }

    #[test]
    fn a_constant_cast_to_numeric_keeps_its_digits() {
        use datafusion::logical_expr::{cast, lit};
        let kept = |e: Expr| constant_keeping_digits(&cast(e, unconstrained())).unwrap();
        let Some(Expr::Cast(c)) = kept(lit("1.123456789012345678")) else {
            panic!("a text constant of 18 decimals is kept whole");
        };
        assert_eq!(c.field.data_type(), &DataType::Decimal128(38, 18));
        assert!(kept(lit("1.5")).is_none());
        let Some(Expr::Cast(c)) = kept(lit("12345678901234567890123456789012345678")) else {
            panic!("a 38-digit integer is kept whole");
        };
        assert_eq!(c.field.data_type(), &DataType::Decimal128(38, 0));
        assert!(kept(lit(ScalarValue::Decimal128(
            Some(15_000_000_000_000),
            38,
            13
        )))
        .is_none());
        let Some(Expr::Cast(c)) = kept(lit(ScalarValue::Decimal128(
            Some(1_123_456_789_012),
            13,
            12,
        ))) else {
            panic!("a decimal constant of 12 decimals is kept whole");
        };
        assert_eq!(c.field.data_type(), &DataType::Decimal128(38, 12));
    }
}
