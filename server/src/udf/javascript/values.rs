//! SQL values into JavaScript and back, for `LANGUAGE javascript` functions.
//!
//! The mapping follows PL/v8, PostgreSQL's JavaScript language, where it does not lose
//! data: booleans, numbers, strings, `null`; json and jsonb are parsed into objects and
//! results are `JSON.stringify`'d; date and timestamp are `Date`s; arrays are arrays.
//! Where a JavaScript number cannot hold the value exactly, the value is not rounded in
//! silence: a bigint beyond 2^53 arrives as a `BigInt`, a numeric whose digits no double
//! holds is an error (22003) naming the cast to make. A result of the wrong kind (an
//! object for an integer, `2.5` for an integer) is an error, not a guess.

use crate::pg::types::PgType;
use brook_common::{brook_err, BrookError, Result};
use datafusion::arrow::datatypes::DataType;
use datafusion::scalar::ScalarValue;
use rquickjs::function::This;
use rquickjs::{BigInt, Constructor, Ctx, Function, Value};
use std::cell::Cell;

/// Largest integer every JavaScript number below it holds exactly (2^53 - 1).
const SAFE_INTEGER: i64 = (1 << 53) - 1;
const MICROS_PER_MILLI: i64 = 1_000;
const MILLIS_PER_DAY: i64 = 86_400_000;

/// Whether a function may take or return values of `ty` (and why not, for the message).
pub fn supported(ty: &PgType) -> std::result::Result<(), String> {
    match ty {
        PgType::Bytea | PgType::Time(_) | PgType::Interval => Err(ty.name()),
        PgType::Array(elem) => supported(elem).map_err(|_| ty.name()),
        _ => Ok(()),
    }
}

/// Convert one argument (`value`, of SQL type `ty`) into a JavaScript value.
pub fn to_js<'js>(ctx: &Ctx<'js>, value: &ScalarValue, ty: &PgType) -> Result<Value<'js>> {
    if value.is_null() {
        return Ok(Value::new_null(ctx.clone()));
    }
    Ok(match value {
        ScalarValue::Boolean(Some(b)) => Value::new_bool(ctx.clone(), *b),
        ScalarValue::Int16(Some(v)) => Value::new_int(ctx.clone(), i32::from(*v)),
        ScalarValue::Int32(Some(v)) => Value::new_int(ctx.clone(), *v),
        ScalarValue::Int64(Some(v)) if (-SAFE_INTEGER..=SAFE_INTEGER).contains(v) => {
            Value::new_number(ctx.clone(), *v as f64)
        }
        ScalarValue::Int64(Some(v)) => BigInt::from_i64(ctx.clone(), *v)
            .map_err(js_internal)?
            .into_value(),
        ScalarValue::Float32(Some(v)) => Value::new_float(ctx.clone(), f64::from(*v)),
        ScalarValue::Float64(Some(v)) => Value::new_float(ctx.clone(), *v),
        ScalarValue::Decimal128(Some(v), _, s) => {
            Value::new_number(ctx.clone(), exact_double(*v, *s)?)
        }
        ScalarValue::Utf8(Some(s))
        | ScalarValue::LargeUtf8(Some(s))
        | ScalarValue::Utf8View(Some(s)) => {
            if matches!(ty, PgType::Json | PgType::Jsonb) {
                ctx.json_parse(s.as_str()).map_err(js_internal)?
            } else {
                rquickjs::String::from_str(ctx.clone(), s)
                    .map_err(js_internal)?
                    .into_value()
            }
        }
        ScalarValue::Date32(Some(days)) => date(ctx, i64::from(*days) * MILLIS_PER_DAY)?,
        ScalarValue::TimestampMicrosecond(Some(us), _) => {
            date(ctx, us.div_euclid(MICROS_PER_MILLI))?
        }
        ScalarValue::List(list) => {
            let elem = match ty {
                PgType::Array(e) => e.as_ref(),
                other => other,
            };
            let values = list.value(0);
            let array = rquickjs::Array::new(ctx.clone()).map_err(js_internal)?;
            for i in 0..values.len() {
                let v = ScalarValue::try_from_array(&values, i)?;
                array.set(i, to_js(ctx, &v, elem)?).map_err(js_internal)?;
            }
            array.into_value()
        }
        other => {
            return Err(brook_err!(
                Unsupported,
                "a {} argument of a JavaScript function",
                brook_common::types::sql_name(&other.data_type())
            ))
        }
    })
}

/// The double that a numeric of `digits` at `scale` names, when it holds all its digits
/// (its shortest decimal text is the numeric's); 22003 otherwise.
fn exact_double(digits: i128, scale: i8) -> Result<f64> {
    let text = crate::pg::encode::numeric_text(digits, scale, true);
    let double: f64 = text
        .parse()
        .map_err(|_| brook_err!(Internal, "numeric {text} is not a number"))?;
    let back = format!("{double}");
    if back == text || (back == "-0" && text == "0") {
        Ok(double)
    } else {
        Err(brook_err!(
            OutOfRange,
            "numeric value {text} has more digits than a JavaScript number holds: pass it as \
             double precision (::float8) or as text (::text)"
        ))
    }
}

/// `new Date(millis)`.
fn date<'js>(ctx: &Ctx<'js>, millis: i64) -> Result<Value<'js>> {
    let ctor: Constructor<'js> = ctx.globals().get("Date").map_err(js_internal)?;
    ctor.construct((millis as f64,)).map_err(js_internal)
}

/// What reading a batch's results needs besides each value.
pub struct Reading<'a> {
    /// The function's signature, for messages.
    pub function: &'a str,
    /// The error of an exception a result's code throws while it is read (`toJSON`,
    /// `getTime`, a getter).
    pub thrown: &'a dyn Fn(rquickjs::Error) -> BrookError,
    /// Array elements the batch's results may still hold (an array's `length` can be set
    /// far past the elements it has: each element read costs memory here).
    pub elements_left: &'a Cell<usize>,
}

/// Array elements all results of one batch may hold together.
pub const ELEMENTS_PER_BATCH: usize = 1 << 20;

/// The SQL value (of `ty`) a function's result `v` is, or the error saying why it is none.
pub fn from_js<'js>(
    ctx: &Ctx<'js>,
    v: Value<'js>,
    ty: &PgType,
    r: &Reading<'_>,
) -> Result<ScalarValue> {
    let (function, thrown) = (r.function, r.thrown);
    let arrow = ty.arrow();
    if v.is_null() || v.is_undefined() {
        return Ok(ScalarValue::try_from(&super::carrier(ty))?);
    }
    let wrong = |expected: &str| {
        BrookError::DatatypeMismatch(format!(
            "JavaScript function {function} returned {} where {} ({expected}) is expected",
            kind(&v),
            ty.name()
        ))
    };
    Ok(match ty {
        PgType::Bool => ScalarValue::Boolean(Some(v.as_bool().ok_or_else(|| wrong("a boolean"))?)),
        PgType::Int2 | PgType::Int4 | PgType::Int8 => {
            let n = integer(&v, ty).ok_or_else(|| wrong("an integral number or a BigInt"))??;
            let out_of_range = || brook_err!(OutOfRange, "{} out of range", ty.name());
            match ty {
                PgType::Int2 => {
                    ScalarValue::Int16(Some(i16::try_from(n).map_err(|_| out_of_range())?))
                }
                PgType::Int4 => {
                    ScalarValue::Int32(Some(i32::try_from(n).map_err(|_| out_of_range())?))
                }
                _ => ScalarValue::Int64(Some(n)),
            }
        }
        PgType::Float4 | PgType::Float8 => {
            let x = number(&v).ok_or_else(|| wrong("a number"))??;
            if matches!(ty, PgType::Float4) {
                let r = x as f32;
                if r.is_infinite() && x.is_finite() {
                    return Err(brook_err!(OutOfRange, "value out of range: overflow"));
                }
                if r == 0.0 && x != 0.0 {
                    return Err(brook_err!(OutOfRange, "value out of range: underflow"));
                }
                ScalarValue::Float32(Some(r))
            } else {
                ScalarValue::Float64(Some(x))
            }
        }
        // Numeric results are read from their text by the cast after the call.
        PgType::Numeric { .. } => {
            let text = match v.as_big_int() {
                Some(_) => big_int_text(&v)?,
                None => {
                    let x = v.as_number().ok_or_else(|| wrong("a number"))?;
                    if !x.is_finite() {
                        return Err(brook_err!(
                            OutOfRange,
                            "JavaScript function {function} returned {x}, which numeric cannot hold"
                        ));
                    }
                    format!("{x}")
                }
            };
            ScalarValue::Utf8(Some(text))
        }
        PgType::Json | PgType::Jsonb => {
            let Some(text) = ctx.json_stringify(v.clone()).map_err(thrown)? else {
                return Ok(ScalarValue::try_from(&arrow)?);
            };
            let text = text.to_string().map_err(js_internal)?;
            if matches!(ty, PgType::Jsonb) && text.contains("\\u0000") {
                return Err(BrookError::Semantic {
                    message: "unsupported Unicode escape sequence: \\u0000 cannot be \
                              converted to text"
                        .into(),
                    code: "22P05",
                });
            }
            ScalarValue::Utf8(Some(crate::pg::json::stored(
                &text,
                matches!(ty, PgType::Jsonb),
            )?))
        }
        PgType::Date | PgType::Timestamp(_) | PgType::Timestamptz(_) => {
            let millis = date_millis(&v)
                .ok_or_else(|| wrong("a Date"))?
                .map_err(thrown)?;
            if !millis.is_finite() {
                return Err(brook_err!(
                    InvalidDatetime,
                    "JavaScript function {function} returned an invalid Date"
                ));
            }
            let millis = millis as i64;
            let out_of_range = || brook_err!(DatetimeOverflow, "{} out of range", ty.name());
            match ty {
                PgType::Date => ScalarValue::Date32(Some(
                    i32::try_from(millis.div_euclid(MILLIS_PER_DAY)).map_err(|_| out_of_range())?,
                )),
                _ => {
                    let DataType::Timestamp(_, tz) = arrow else {
                        return Err(brook_err!(Internal, "{} is no timestamp", ty.name()));
                    };
                    let micros = millis
                        .checked_mul(MICROS_PER_MILLI)
                        .ok_or_else(out_of_range)?;
                    ScalarValue::TimestampMicrosecond(Some(micros), tz)
                }
            }
        }
        PgType::Array(elem) => {
            let array = v.as_array().ok_or_else(|| wrong("an array"))?;
            // `length` may be set far past the elements an array holds (up to 2^32 - 1):
            // read it as a number, and within what the batch may still hold.
            let length: f64 = array.as_object().get("length").map_err(thrown)?;
            let left = r.elements_left.get();
            if length > left as f64 {
                return Err(BrookError::Limit {
                    message: format!(
                        "JavaScript function {function} returned arrays of more than \
                         {ELEMENTS_PER_BATCH} elements in one batch of rows (this one's \
                         length is {length})"
                    ),
                    code: "54000",
                });
            }
            let length = length as usize;
            r.elements_left.set(left - length);
            let mut values = Vec::with_capacity(length);
            for i in 0..length {
                let e: Value<'js> = array.get(i).map_err(thrown)?;
                values.push(from_js(ctx, e, elem, r)?);
            }
            ScalarValue::List(ScalarValue::new_list_nullable(
                &values,
                &super::carrier(elem),
            ))
        }
        // Text types (and uuid, xml): a string, or a number, boolean or BigInt as
        // JavaScript's String() writes it; checked as a value of the type.
        _ => {
            if v.is_object() {
                return Err(wrong("a string"));
            }
            let text: rquickjs::convert::Coerced<String> = v.get().map_err(thrown)?;
            ScalarValue::Utf8(Some(checked_text(text.0, ty)?))
        }
    })
}

/// A text result as a value of `ty`: no NUL character (PostgreSQL's text has none), a
/// uuid in its canonical form, xml well-formed content.
fn checked_text(text: String, ty: &PgType) -> Result<String> {
    if text.contains('\0') {
        return Err(brook_err!(
            BadEncoding,
            "invalid byte sequence for encoding \"UTF8\": 0x00"
        ));
    }
    match ty {
        PgType::Uuid => crate::pg::uuid::canonical(&text).ok_or_else(|| {
            brook_err!(
                InvalidText,
                "invalid input syntax for type uuid: \"{text}\""
            )
        }),
        PgType::Xml => crate::pg::xml::check_content(&text).map(|()| text),
        _ => Ok(text),
    }
}

/// A BigInt's decimal digits (JavaScript's `String(b)`).
fn big_int_text(v: &Value<'_>) -> Result<String> {
    let text: rquickjs::convert::Coerced<String> = v.get().map_err(js_internal)?;
    Ok(text.0)
}

/// What `v` is, for messages: "a number", "an object", ...
fn kind(v: &Value<'_>) -> &'static str {
    use rquickjs::Type;
    match v.type_of() {
        Type::Bool => "a boolean",
        Type::Int | Type::Float => "a number",
        Type::String => "a string",
        Type::BigInt => "a BigInt",
        Type::Symbol => "a symbol",
        Type::Array => "an array",
        Type::Function | Type::Constructor => "a function",
        _ => "an object",
    }
}

/// An integral number or a BigInt as an i64: None when `v` is neither a number nor a
/// BigInt, an error for a fraction or a value beyond bigint.
fn integer(v: &Value<'_>, ty: &PgType) -> Option<Result<i64>> {
    if v.as_big_int().is_some() {
        // Its digits, not `BigInt::to_i64` (which wraps modulo 2^64).
        return Some(big_int_text(v).and_then(|t| {
            t.parse::<i64>()
                .map_err(|_| brook_err!(OutOfRange, "{} out of range", ty.name()))
        }));
    }
    let x = v.as_number()?;
    Some(if x.fract() != 0.0 || !x.is_finite() {
        Err(brook_err!(
            InvalidText,
            "invalid input syntax for type {}: \"{x}\"",
            ty.name()
        ))
    } else if !(-9.223_372_036_854_776e18..9.223_372_036_854_776e18).contains(&x) {
        Err(brook_err!(OutOfRange, "{} out of range", ty.name()))
    } else {
        Ok(x as i64)
    })
}

/// A number (or a BigInt) as a double.
fn number(v: &Value<'_>) -> Option<Result<f64>> {
    if let Some(x) = v.as_number() {
        return Some(Ok(x));
    }
    v.as_big_int()?;
    Some(big_int_text(v).and_then(|t| {
        t.parse::<f64>()
            .map_err(|_| brook_err!(Internal, "BigInt {t} is not a number"))
    }))
}

/// The time of a Date (its `getTime()`), None when `v` has no `getTime` method.
fn date_millis<'js>(v: &Value<'js>) -> Option<rquickjs::Result<f64>> {
    let object = v.as_object()?;
    let get_time: Function<'js> = object.get("getTime").ok()?;
    Some(get_time.call::<_, f64>((This(object.clone()),)))
}

/// An error of the JavaScript engine that is no exception of the function's (a value that
/// does not convert, say): internal.
pub fn js_internal(e: rquickjs::Error) -> BrookError {
    brook_err!(Internal, "JavaScript engine: {e}")
}
