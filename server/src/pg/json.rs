//! json and jsonb values: checked on the way in, jsonb kept as PostgreSQL prints it.

use brook_common::{brook_err, Result};
use serde_json::Value;

/// A json or jsonb value's text as stored: the text as it is for json, PostgreSQL's
/// spacing for jsonb; 22P02 for text that is not JSON.
pub fn stored(text: &str, jsonb: bool) -> Result<String> {
    let value: Value = serde_json::from_str(text).map_err(invalid_json)?;
    if !jsonb {
        return Ok(text.to_string());
    }
    let mut out = String::new();
    write_jsonb(&mut out, &value);
    Ok(out)
}

/// 22P02 for text serde_json could not read as JSON.
pub fn invalid_json(e: serde_json::Error) -> brook_common::BrookError {
    brook_err!(InvalidText, "invalid input syntax for type json: {e}")
}

/// An object's members in jsonb's order: shorter keys first, keys of one length by their
/// bytes (`{"b": 1, "aa": 2}`).
pub fn jsonb_order(members: &serde_json::Map<String, Value>) -> Vec<(&String, &Value)> {
    let mut ordered: Vec<_> = members.iter().collect();
    ordered.sort_by(|(a, _), (b, _)| a.len().cmp(&b.len()).then_with(|| a.cmp(b)));
    ordered
}

/// JSON text spaced and ordered as PostgreSQL prints jsonb (`{"a": 1, "b": [1, 2]}`).
pub fn write_jsonb(out: &mut String, v: &Value) {
    match v {
        Value::Object(members) => {
            out.push('{');
            for (i, (k, m)) in jsonb_order(members).into_iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                out.push_str(&Value::String(k.clone()).to_string());
                out.push_str(": ");
                write_jsonb(out, m);
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, m) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                write_jsonb(out, m);
            }
            out.push(']');
        }
        scalar => out.push_str(&scalar.to_string()),
    }
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
        assert_eq!(
            stored(r#"{"b":1,"aa":2,"a":3,"b":4}"#, true).unwrap(),
            r#"{"a": 3, "b": 4, "aa": 2}"#
        );
    }
}
