//! json and jsonb values: checked on the way in, jsonb kept as PostgreSQL prints it.
//!
//! jsonb is written from the text's own pieces, not from a `serde_json::Value`: a Value
//! holds numbers as `f64`/`i64`/`u64`, so `0.1234567890123456789` became
//! `0.12345678901234568` and a 24-digit integer `1.2345678901234567e+23` (PostgreSQL's
//! jsonb keeps a number as a numeric). Each level is read as raw values (`RawValue`, the
//! text as written) and a number is printed as numeric prints it.

use brook_common::{brook_err, Result};
use serde_json::value::RawValue;
use serde_json::Value;
use std::collections::HashMap;

/// A json or jsonb value's text as stored: the text as it is for json, PostgreSQL's
/// spacing for jsonb; 22P02 for text that is not JSON.
pub fn stored(text: &str, jsonb: bool) -> Result<String> {
    if !jsonb {
        check_json(text)?;
        return Ok(text.to_string());
    }
    jsonb_text(text)
}

/// 22P02 for text that is not JSON, 54001 for JSON nested deeper than [`MAX_DEPTH`] (the
/// functions that read json take no deeper nesting: DataFusion's JSON functions gave NULL
/// for 203 levels).
pub fn check_json(text: &str) -> Result<()> {
    serde_json::from_str::<&RawValue>(text).map_err(invalid_json)?;
    if nesting(text) > MAX_DEPTH {
        return Err(too_deep());
    }
    Ok(())
}

/// The deepest nesting of arrays and objects in JSON text (brackets inside strings are
/// text).
fn nesting(text: &str) -> usize {
    let (mut depth, mut deepest, mut in_string, mut escaped) = (0usize, 0usize, false, false);
    for b in text.bytes() {
        match (in_string, escaped, b) {
            (true, true, _) => escaped = false,
            (true, false, b'\\') => escaped = true,
            (true, false, b'"') => in_string = false,
            (true, false, _) => {}
            (false, _, b'"') => in_string = true,
            (false, _, b'[' | b'{') => {
                depth += 1;
                deepest = deepest.max(depth);
            }
            (false, _, b']' | b'}') => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    deepest
}

pub(crate) fn too_deep() -> brook_common::BrookError {
    brook_common::BrookError::too_complex(format!(
        "stack depth limit exceeded: JSON nested more than {MAX_DEPTH} levels deep"
    ))
}

/// JSON text as jsonb keeps it: PostgreSQL's spacing, an object's members in jsonb's order
/// (the last of a repeated key), numbers as numeric prints them (every digit kept, an
/// exponent written out: `1e2` is `100`); 22P02 for text that is not JSON.
pub fn jsonb_text(text: &str) -> Result<String> {
    let raw: &RawValue = serde_json::from_str(text).map_err(invalid_json)?;
    let mut out = String::with_capacity(text.len());
    write_raw(&mut out, raw)?;
    Ok(out)
}

/// The most arrays and objects jsonb nests: serde_json's own limit, which the functions that read
/// jsonb through a `serde_json::Value` have (so every stored document can be read by all
/// of them), and a bound on [`write_raw`]'s recursion (a document 50,000 levels deep
/// overflowed the statement thread's stack and aborted the server).
pub const MAX_DEPTH: usize = 127;

/// 22P02 for text serde_json could not read as JSON.
pub fn invalid_json(e: serde_json::Error) -> brook_common::BrookError {
    brook_err!(InvalidText, "invalid input syntax for type json: {e}")
}

/// What a raw JSON value is, by its first character.
pub enum Raw<'a> {
    /// Members in jsonb's order, a repeated key's last value only.
    Object(Vec<(String, &'a RawValue)>),
    Array(Vec<&'a RawValue>),
    String(String),
    /// A number's text as written.
    Number(&'a str),
    /// `true`, `false` or `null`.
    Literal(&'a str),
}

/// `raw` taken apart one level.
pub fn open(raw: &RawValue) -> Result<Raw<'_>> {
    let text = raw.get().trim();
    Ok(match text.as_bytes().first() {
        Some(b'{') => {
            let members: HashMap<String, &RawValue> =
                serde_json::from_str(text).map_err(invalid_json)?;
            let mut members: Vec<_> = members.into_iter().collect();
            members.sort_by(|(a, _), (b, _)| jsonb_key_order(a, b));
            Raw::Object(members)
        }
        Some(b'[') => Raw::Array(serde_json::from_str(text).map_err(invalid_json)?),
        Some(b'"') => Raw::String(serde_json::from_str(text).map_err(invalid_json)?),
        Some(b'-' | b'0'..=b'9') => Raw::Number(text),
        _ => Raw::Literal(text),
    })
}

/// jsonb's order of keys: shorter keys first, keys of one length by their bytes.
pub(crate) fn jsonb_key_order(a: &str, b: &str) -> std::cmp::Ordering {
    a.len().cmp(&b.len()).then_with(|| a.cmp(b))
}

/// `raw` as jsonb prints it; 54001 when nested deeper than [`MAX_DEPTH`].
pub fn write_raw(out: &mut String, raw: &RawValue) -> Result<()> {
    write_nested(out, raw, 0)
}

fn write_nested(out: &mut String, raw: &RawValue, depth: usize) -> Result<()> {
    let opened = open(raw)?;
    if depth >= MAX_DEPTH && matches!(opened, Raw::Object(_) | Raw::Array(_)) {
        return Err(too_deep());
    }
    match opened {
        Raw::Object(members) => {
            out.push('{');
            for (i, (k, m)) in members.into_iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                out.push_str(&Value::String(k).to_string());
                out.push_str(": ");
                write_nested(out, m, depth + 1)?;
            }
            out.push('}');
        }
        Raw::Array(items) => {
            out.push('[');
            for (i, m) in items.into_iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                write_nested(out, m, depth + 1)?;
            }
            out.push(']');
        }
        Raw::String(s) => out.push_str(&Value::String(s).to_string()),
        Raw::Number(n) => out.push_str(&numeric_text(n)),
        Raw::Literal(l) => out.push_str(l),
    }
    Ok(())
}

/// A JSON number as PostgreSQL's numeric prints it: an exponent written out (`1.5e1` is
/// `15`, `2.0e0` is `2.0`), no sign on zero; the text as written otherwise (a number of
/// more than 2,000 digits written out stays in exponent form).
pub fn numeric_text(n: &str) -> String {
    let plain = if n.contains(['e', 'E']) {
        brook_planner::numeric_literals::plain_number_of(n, 2_100)
    } else {
        None
    };
    let plain = plain.unwrap_or_else(|| n.to_string());
    match plain.strip_prefix('-') {
        Some(unsigned) if unsigned.bytes().all(|b| b == b'0' || b == b'.') => unsigned.to_string(),
        _ => plain,
    }
}

/// `#>`, `->`: the value as jsonb prints it; `#>>`, `->>`: a string's own text, JSON null
/// as NULL.
pub fn render_raw(raw: &RawValue, as_text: bool) -> Result<Option<String>> {
    if as_text {
        match open(raw)? {
            Raw::String(s) => return Ok(Some(s)),
            Raw::Literal("null") => return Ok(None),
            _ => {}
        }
    }
    let mut out = String::new();
    write_raw(&mut out, raw)?;
    Ok(Some(out))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jsonb_is_respaced_and_json_kept_and_both_checked() {
        assert_eq!(
            stored(r#"{"b":[1,2],  "a":null}"#, true).unwrap(),
            r#"{"a": null, "b": [1, 2]}"#
        );
        assert_eq!(stored(r#"{"b":1}"#, false).unwrap(), r#"{"b":1}"#);
        assert_eq!(stored("{bad", true).unwrap_err().sqlstate(), "22P02");
        assert_eq!(stored("{bad", false).unwrap_err().sqlstate(), "22P02");
        assert_eq!(
            stored(r#"{"b":1,"aa":2,"a":3,"b":4}"#, true).unwrap(),
            r#"{"a": 3, "b": 4, "aa": 2}"#
        );
    }

    #[test]
    fn jsonb_numbers_keep_their_digits_as_numeric_prints_them() {
        assert_eq!(
            jsonb_text(r#"{"id": 123456789012345678901234, "x": 0.1234567890123456789}"#).unwrap(),
            r#"{"x": 0.1234567890123456789, "id": 123456789012345678901234}"#
        );
        assert_eq!(
            jsonb_text("[1e2, 1.5e1, 1E-2, -0, -0.0, 0e5, 1.50, 2.0e0, 1e-7, 123e-2]").unwrap(),
            "[100, 15, 0.01, 0, 0.0, 0, 1.50, 2.0, 0.0000001, 1.23]"
        );
        assert_eq!(jsonb_text(r#" "a\u00e9\n" "#).unwrap(), r#""aé\n""#);
        assert_eq!(jsonb_text("[true, null]").unwrap(), "[true, null]");
    }

    #[test]
    fn nesting_deeper_than_the_limit_is_refused_not_a_crash() {
        let deep = |n: usize| format!("{}1{}", "[".repeat(n), "]".repeat(n));
        assert!(jsonb_text(&deep(MAX_DEPTH)).is_ok());
        for n in [MAX_DEPTH + 1, 50_000] {
            assert_eq!(jsonb_text(&deep(n)).unwrap_err().sqlstate(), "54001", "{n}");
            assert_eq!(
                stored(&deep(n), false).unwrap_err().sqlstate(),
                "54001",
                "{n}"
            );
        }
        assert!(stored(&deep(MAX_DEPTH), false).is_ok());
        // Brackets inside strings are text.
        assert!(check_json(&format!("{{\"a\": \"{}\\\"\"}}", "[".repeat(500))).is_ok());
    }
}
