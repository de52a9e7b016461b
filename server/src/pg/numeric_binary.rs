//! PostgreSQL's binary form of a numeric, written from its text.
//!
//! The wire's binary numeric is base-10000 digits with a weight, a sign and a display scale.
//! `rust_decimal`, which `postgres-types` writes it with, holds at most 28 digits, so a
//! numeric of Brook's 38 (`div(1e30, 7)`, a quotient's 37 decimals) could not be sent in
//! binary. Written here because no maintained crate writes the format from 38-digit values.

use bytes::{BufMut, BytesMut};

const POSITIVE: u16 = 0x0000;
const NEGATIVE: u16 = 0x4000;

/// Append the binary numeric of decimal text `text` (`-123.4500`, digits with an optional
/// sign and point, as the text encoder writes them) to `out`; `false` for other text.
pub fn write_numeric(text: &str, out: &mut BytesMut) -> bool {
    let (negative, digits) = match text.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, text),
    };
    let (int, frac) = digits.split_once('.').unwrap_or((digits, ""));
    if !int.chars().chain(frac.chars()).all(|c| c.is_ascii_digit()) || int.is_empty() {
        return false;
    }
    // Pad to whole groups of four digits on both sides of the point.
    let int_pad = (4 - int.len() % 4) % 4;
    let frac_pad = (4 - frac.len() % 4) % 4;
    let padded = format!("{}{int}{frac}{}", "0".repeat(int_pad), "0".repeat(frac_pad));
    let mut groups: Vec<i16> = padded
        .as_bytes()
        .chunks(4)
        .map(|c| c.iter().fold(0i16, |v, d| v * 10 + i16::from(d - b'0')))
        .collect();
    let mut weight = ((int.len() + int_pad) / 4) as i16 - 1;
    let leading = groups.iter().take_while(|g| **g == 0).count();
    groups.drain(..leading);
    weight -= leading as i16;
    while groups.last() == Some(&0) {
        groups.pop();
    }
    if groups.is_empty() {
        weight = 0;
    }
    out.put_i16(groups.len() as i16);
    out.put_i16(weight);
    out.put_u16(if negative && !groups.is_empty() {
        NEGATIVE
    } else {
        POSITIVE
    });
    out.put_u16(frac.len() as u16);
    for g in groups {
        out.put_i16(g);
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use postgres_types::{FromSql, Type};

    fn round_trip(text: &str) -> String {
        let mut out = BytesMut::new();
        assert!(write_numeric(text, &mut out), "{text}");
        rust_decimal::Decimal::from_sql(&Type::NUMERIC, &out)
            .expect("decodes")
            .to_string()
    }

    #[test]
    fn values_read_back_as_written() {
        for t in [
            "0",
            "1",
            "-1.5",
            "123.4500",
            "10000",
            "0.0001",
            "-0.00012345",
            "12345678.9",
        ] {
            assert_eq!(round_trip(t), t);
        }
    }

    #[test]
    fn thirty_eight_digits_are_written() {
        let mut out = BytesMut::new();
        assert!(write_numeric("142857142857142857142857142857", &mut out));
        // ndigits 8, weight 7, positive, scale 0, first group 14.
        assert_eq!(&out[..10], &[0, 8, 0, 7, 0, 0, 0, 0, 0, 14]);
        assert!(!write_numeric("1e5", &mut BytesMut::new()));
    }
}
