//! A jsonb value's sort key: bytes that compare (as bytes) in PostgreSQL's order of jsonb
//! values, equal exactly when the values are equal. Comparisons, `ORDER BY`, `IN` lists and
//! `BETWEEN` of jsonb go through it ([`crate::udf::jsonb_order`]); Brook keeps jsonb as
//! its text, whose order is not jsonb's (`'2' > '10'`, `null` after numbers) and whose
//! equality misses equal numbers (`1.0` and `1`).
//!
//! PostgreSQL's order (`compareJsonbContainers`): `null` < strings < numbers < booleans <
//! arrays < objects; strings by their bytes (the C collation), numbers by value, `false` <
//! `true`; arrays first by length, then element by element; objects first by their number
//! of keys, then key and value by key and value in jsonb's order of keys (shorter keys
//! first). At the top level a scalar is a one-element array marked raw: it sorts below a
//! one-element array, above an empty one (`'[]' < 'null'`), and below any longer array.
//!
//! The encoding, one tag byte per value:
//! - scalars: `0x10` null; `0x20` string, its bytes with `0x00` written `0x00 0x01`, then
//!   `0x00 0x00`; `0x30` number ([`number`]); `0x40` then `0`/`1` for a boolean;
//! - `0x50` array: its length (8 bytes, big-endian), `0` when it is a top-level scalar's
//!   array and `1` otherwise, then its elements; `0x60` object: its number of keys, then
//!   each key (as a string, without the tag) and value.
//!
//! Written here because no crate orders jsonb as PostgreSQL does.

use super::jsonb_doc::Doc;

const NULL: u8 = 0x10;
const STRING: u8 = 0x20;
const NUMBER: u8 = 0x30;
const BOOL: u8 = 0x40;
const ARRAY: u8 = 0x50;
const OBJECT: u8 = 0x60;

/// The sort key of a top-level jsonb value.
pub fn sort_key(doc: &Doc) -> Vec<u8> {
    let mut out = Vec::new();
    if doc.is_container() {
        value(doc, &mut out);
    } else {
        // A top-level scalar: a raw one-element array.
        out.push(ARRAY);
        out.extend_from_slice(&1u64.to_be_bytes());
        out.push(0);
        value(doc, &mut out);
    }
    out
}

fn value(doc: &Doc, out: &mut Vec<u8>) {
    match doc {
        Doc::Null => out.push(NULL),
        Doc::String(s) => {
            out.push(STRING);
            string(s, out);
        }
        Doc::Number(n) => {
            out.push(NUMBER);
            number(n, out);
        }
        Doc::Bool(b) => out.extend_from_slice(&[BOOL, u8::from(*b)]),
        Doc::Array(items) => {
            out.push(ARRAY);
            out.extend_from_slice(&(items.len() as u64).to_be_bytes());
            out.push(1);
            for item in items {
                value(item, out);
            }
        }
        Doc::Object(members) => {
            out.push(OBJECT);
            let pairs: Vec<_> = members.iter().collect();
            out.extend_from_slice(&(pairs.len() as u64).to_be_bytes());
            for (k, v) in pairs {
                string(k, out);
                value(v, out);
            }
        }
    }
}

/// A string's bytes, escaped so that a string sorts before every longer string it begins.
fn string(s: &str, out: &mut Vec<u8>) {
    for &b in s.as_bytes() {
        out.push(b);
        if b == 0 {
            out.push(1);
        }
    }
    out.extend_from_slice(&[0, 0]);
}

/// A number (as [`super::json::numeric_text`] writes it: plain digits, or exponent form)
/// by value: `0x80` for zero; otherwise `0xC0` (positive) or `0x40` (negative), then the
/// decimal exponent `e` of `0.d₁d₂… × 10^e` (8 bytes, biased) and the significant digits
/// ending in `0x00`, every byte after the sign inverted for a negative number (a larger
/// magnitude is then a smaller number).
fn number(text: &str, out: &mut Vec<u8>) {
    let (negative, unsigned) = match text.strip_prefix('-') {
        Some(u) => (true, u),
        None => (false, text.strip_prefix('+').unwrap_or(text)),
    };
    let (mantissa, exponent) = match unsigned.find(['e', 'E']) {
        Some(at) => (&unsigned[..at], parse_exponent(&unsigned[at + 1..])),
        None => (unsigned, 0),
    };
    let (int, frac) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    let mut e = exponent.saturating_add(int.len() as i64);
    let mut digits = int.bytes().chain(frac.bytes()).peekable();
    while digits.peek() == Some(&b'0') {
        digits.next();
        e = e.saturating_sub(1);
    }
    let mut significant: Vec<u8> = digits.collect();
    while significant.last() == Some(&b'0') {
        significant.pop();
    }
    if significant.is_empty() {
        out.push(0x80);
        return;
    }
    let mut body = Vec::with_capacity(significant.len() + 9);
    body.extend_from_slice(&((e as u64) ^ (1 << 63)).to_be_bytes());
    body.extend_from_slice(&significant);
    body.push(0);
    if negative {
        out.push(0x40);
        out.extend(body.iter().map(|b| !b));
    } else {
        out.push(0xC0);
        out.extend(body);
    }
}

/// An exponent's value, saturated far beyond any numeric's range.
fn parse_exponent(text: &str) -> i64 {
    let (negative, digits) = match text.strip_prefix('-') {
        Some(d) => (true, d),
        None => (false, text.strip_prefix('+').unwrap_or(text)),
    };
    let mut e: i64 = 0;
    for b in digits.bytes().filter(u8::is_ascii_digit) {
        e = e.saturating_mul(10).saturating_add(i64::from(b - b'0'));
    }
    if negative {
        -e
    } else {
        e
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(text: &str) -> Vec<u8> {
        sort_key(&Doc::parse(text).unwrap())
    }

    /// PostgreSQL 15's `ORDER BY j` of these values, one group of equal values per entry.
    #[test]
    fn values_sort_as_postgresql_sorts_them() {
        let ordered: &[&[&str]] = &[
            &["[]"],
            &["null"],
            &[r#""""#],
            &[r#""10""#],
            &[r#""a""#],
            &[r#""ab""#],
            &[r#""x""#],
            &["-1e400"],
            &["-10"],
            &["-5", "-5.00"],
            &["-0.5"],
            &["-0.05"],
            &["-0", "0", "0.0", "0e10"],
            &["0.001", "1e-3"],
            &["1", "1.0", "1.000"],
            &["1.5"],
            &["2"],
            &["10", "10.0", "1e1"],
            &["12345678901234567890123"],
            &["1e400"],
            &["false"],
            &["true"],
            &["[null]"],
            &["[1]"],
            &["[2]"],
            &["[[]]"],
            &["[{}]"],
            &[r#"["a", 1]"#],
            &[r#"[1, "a"]"#],
            &["[1, 2]", "[1.0, 2]"],
            &["[3, 0]"],
            &["{}"],
            &[r#"{"ab": 0}"#],
            &[r#"{"b": 1}"#],
            &[r#"{"b": 2}"#],
            &[r#"{"a": 1, "b": 2}"#],
            &[r#"{"a": 1, "bb": 1}"#],
            &[r#"{"b": 1, "aa": 1}"#],
        ];
        let keys: Vec<Vec<Vec<u8>>> = ordered
            .iter()
            .map(|group| group.iter().map(|t| key(t)).collect())
            .collect();
        for (g, group) in keys.iter().enumerate() {
            for k in group {
                assert_eq!(k, &group[0], "{:?} equal", ordered[g]);
            }
            if g > 0 {
                assert!(
                    keys[g - 1][0] < group[0],
                    "{:?} < {:?}",
                    ordered[g - 1],
                    ordered[g]
                );
            }
        }
    }
}
