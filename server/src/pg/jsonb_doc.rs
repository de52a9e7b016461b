//! A jsonb document held in memory for the functions that edit or compare documents
//! (`||`, `-`, `#-`, `jsonb_set`, `@>`): a number keeps its digits as numeric prints them,
//! and numbers compare by value, as jsonb's numerics do (`1.0` and `1` are equal).
//!
//! These functions read documents into `serde_json::Value` before, whose numbers are
//! `f64`/`i64`/`u64`: editing one member rounded every other number of the document
//! (`doc || '{"x": 1}'` turned a 24-digit id into `1.2345678901234567e+23` and
//! `0.1234567890123456789` into `0.12345678901234568`) and refused `1e309`. Written here
//! because serde_json keeps a number's text only under its `arbitrary_precision` feature,
//! which would change the numbers of every crate in the build that uses serde_json (its
//! numbers then deserialize through a private map in buffered, untagged and flattened
//! types).

use super::json::{invalid_json, jsonb_key_order, numeric_text, open, too_deep, Raw, MAX_DEPTH};
use brook_common::Result;
use serde_json::value::RawValue;

/// A jsonb value.
#[derive(Debug, Clone, PartialEq)]
pub enum Doc {
    Null,
    Bool(bool),
    /// The number's text as numeric prints it (see [`numeric_text`]).
    Number(String),
    String(String),
    Array(Vec<Doc>),
    Object(Members),
}

/// An object's members, in jsonb's order of keys, each key once.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Members(Vec<(String, Doc)>);

impl Members {
    fn find(&self, key: &str) -> std::result::Result<usize, usize> {
        self.0.binary_search_by(|(k, _)| jsonb_key_order(k, key))
    }

    pub fn get(&self, key: &str) -> Option<&Doc> {
        self.find(key).ok().map(|i| &self.0[i].1)
    }

    pub fn get_mut(&mut self, key: &str) -> Option<&mut Doc> {
        self.find(key).ok().map(|i| &mut self.0[i].1)
    }

    /// Member `key` set to `value` (replaced when there is one).
    pub fn insert(&mut self, key: String, value: Doc) {
        match self.find(&key) {
            Ok(i) => self.0[i].1 = value,
            Err(i) => self.0.insert(i, (key, value)),
        }
    }

    pub fn remove(&mut self, key: &str) -> Option<Doc> {
        self.find(key).ok().map(|i| self.0.remove(i).1)
    }

    pub fn iter(&self) -> impl Iterator<Item = (&String, &Doc)> {
        self.0.iter().map(|(k, v)| (k, v))
    }
}

impl IntoIterator for Members {
    type Item = (String, Doc);
    type IntoIter = std::vec::IntoIter<(String, Doc)>;

    fn into_iter(self) -> Self::IntoIter {
        self.0.into_iter()
    }
}

impl Doc {
    /// JSON text read as jsonb: 22P02 for text that is not JSON, 54001 for nesting deeper
    /// than [`MAX_DEPTH`].
    pub fn parse(text: &str) -> Result<Doc> {
        let raw: &RawValue = serde_json::from_str(text).map_err(invalid_json)?;
        Doc::of(raw, 0)
    }

    fn of(raw: &RawValue, depth: usize) -> Result<Doc> {
        let opened = open(raw)?;
        if depth >= MAX_DEPTH && matches!(opened, Raw::Object(_) | Raw::Array(_)) {
            return Err(too_deep());
        }
        Ok(match opened {
            // `open` gives the members in jsonb's order, a repeated key's last value only.
            Raw::Object(members) => Doc::Object(Members(
                members
                    .into_iter()
                    .map(|(k, m)| Ok((k, Doc::of(m, depth + 1)?)))
                    .collect::<Result<_>>()?,
            )),
            Raw::Array(items) => Doc::Array(
                items
                    .into_iter()
                    .map(|m| Doc::of(m, depth + 1))
                    .collect::<Result<_>>()?,
            ),
            Raw::String(s) => Doc::String(s),
            Raw::Number(n) => Doc::Number(numeric_text(n)),
            Raw::Literal("true") => Doc::Bool(true),
            Raw::Literal("false") => Doc::Bool(false),
            Raw::Literal(_) => Doc::Null,
        })
    }

    /// The document as PostgreSQL prints jsonb (`{"a": 1, "b": [1, 2]}`).
    pub fn write(&self, out: &mut String) {
        match self {
            Doc::Null => out.push_str("null"),
            Doc::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
            Doc::Number(n) => out.push_str(n),
            Doc::String(s) => write_string(out, s),
            Doc::Array(items) => {
                out.push('[');
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        out.push_str(", ");
                    }
                    item.write(out);
                }
                out.push(']');
            }
            Doc::Object(members) => {
                out.push('{');
                for (i, (k, v)) in members.iter().enumerate() {
                    if i > 0 {
                        out.push_str(", ");
                    }
                    write_string(out, k);
                    out.push_str(": ");
                    v.write(out);
                }
                out.push('}');
            }
        }
    }

    /// The document's jsonb text.
    pub fn text(&self) -> String {
        let mut out = String::new();
        self.write(&mut out);
        out
    }

    /// An array or an object.
    pub fn is_container(&self) -> bool {
        matches!(self, Doc::Array(_) | Doc::Object(_))
    }

    pub fn as_str(&self) -> Option<&str> {
        match self {
            Doc::String(s) => Some(s),
            _ => None,
        }
    }

    /// Whether two scalars are equal as jsonb compares them: numbers by value.
    pub fn same_scalar(&self, other: &Doc) -> bool {
        match (self, other) {
            (Doc::Number(a), Doc::Number(b)) => same_number(a, b),
            (a, b) => a == b,
        }
    }

    /// A scalar's value as a hash key, equal for scalars [`Self::same_scalar`] finds equal
    /// (None for an array or object).
    pub fn scalar_key(&self) -> Option<ScalarKey<'_>> {
        Some(match self {
            Doc::Null => ScalarKey::Null,
            Doc::Bool(b) => ScalarKey::Bool(*b),
            Doc::Number(n) => ScalarKey::Number(canonical(n)),
            Doc::String(s) => ScalarKey::String(s),
            Doc::Array(_) | Doc::Object(_) => return None,
        })
    }
}

/// A jsonb scalar's value, hashable (see [`Doc::scalar_key`]).
#[derive(Debug, PartialEq, Eq, Hash)]
pub enum ScalarKey<'a> {
    Null,
    Bool(bool),
    Number((bool, &'a str, &'a str)),
    String(&'a str),
}

fn write_string(out: &mut String, s: &str) {
    out.push_str(&serde_json::Value::String(s.to_string()).to_string());
}

/// Whether two numbers as [`numeric_text`] prints them have the same value (`1.50` and
/// `1.5`, `0.0` and `0`). A number too long to write out stays in exponent form and is
/// compared by its text.
pub fn same_number(a: &str, b: &str) -> bool {
    canonical(a) == canonical(b)
}

/// Sign, integer digits without leading zeros and decimals without trailing zeros (zero
/// has no sign).
fn canonical(n: &str) -> (bool, &str, &str) {
    let (negative, unsigned) = match n.strip_prefix('-') {
        Some(u) => (true, u),
        None => (false, n),
    };
    let (int, frac) = unsigned.split_once('.').unwrap_or((unsigned, ""));
    let int = int.trim_start_matches('0');
    let frac = frac.trim_end_matches('0');
    (negative && !(int.is_empty() && frac.is_empty()), int, frac)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn documents_keep_every_digit_and_print_as_jsonb() {
        let text = r#"{"x":1e309,"id":123456789012345678901234,"p":0.1234567890123456789,"a":[true,null,"é"]}"#;
        let doc = Doc::parse(text).unwrap();
        assert_eq!(
            doc.text(),
            format!(
                r#"{{"a": [true, null, "é"], "p": 0.1234567890123456789, "x": 1{}, "id": 123456789012345678901234}}"#,
                "0".repeat(309)
            )
        );
        assert_eq!(Doc::parse("{bad").unwrap_err().sqlstate(), "22P02");
        let deep = format!(
            "{}1{}",
            "[".repeat(MAX_DEPTH + 1),
            "]".repeat(MAX_DEPTH + 1)
        );
        assert_eq!(Doc::parse(&deep).unwrap_err().sqlstate(), "54001");
    }

    #[test]
    fn members_stay_in_jsonb_order() {
        let Doc::Object(mut m) = Doc::parse(r#"{"bb": 1, "a": 2}"#).unwrap() else {
            panic!("an object")
        };
        m.insert("c".into(), Doc::Null);
        m.insert("bb".into(), Doc::Bool(false));
        assert_eq!(m.remove("a"), Some(Doc::Number("2".into())));
        assert_eq!(Doc::Object(m).text(), r#"{"c": null, "bb": false}"#);
    }

    #[test]
    fn numbers_compare_by_value() {
        for (a, b) in [
            ("1", "1.0"),
            ("1.50", "1.5"),
            ("0", "-0.00"),
            ("-2.0", "-2"),
        ] {
            assert!(same_number(a, b), "{a} = {b}");
        }
        for (a, b) in [("1", "-1"), ("10", "1"), ("0.1", "0.01"), ("1.1", "11")] {
            assert!(!same_number(a, b), "{a} <> {b}");
        }
    }
}
