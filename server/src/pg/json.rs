//! json and jsonb values: checked on the way in, jsonb kept as PostgreSQL prints it.

use brook_common::{brook_err, Result};
use serde_json::Value;

/// A json or jsonb value's text as stored: the text as it is for json, PostgreSQL's
/// spacing for jsonb; 22P02 for text that is not JSON.
pub fn stored(text: &str, jsonb: bool) -> Result<String> {
    let value: Value = serde_json::from_str(text)
        .map_err(|e| brook_err!(InvalidText, "invalid input syntax for type json: {e}"))?;
    if !jsonb {
        return Ok(text.to_string());
    }
    let mut out = String::new();
    write_jsonb(&mut out, &value);
    Ok(out)
}

/// JSON text spaced as PostgreSQL prints jsonb (`{"a": 1, "b": [1, 2]}`); members in
/// `serde_json`'s order (by key), where PostgreSQL orders shorter keys first.
pub fn write_jsonb(out: &mut String, v: &Value) {
    match v {
        Value::Object(members) => {
            out.push('{');
            for (i, (k, m)) in members.iter().enumerate() {
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
    }
}
