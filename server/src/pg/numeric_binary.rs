//! PostgreSQL's binary form of a numeric, written from its text and read back to text.
//!
//! The wire's binary numeric is base-10000 digits with a weight, a sign and a display scale.
//! `rust_decimal`, which `postgres-types` writes it with, holds at most 28 digits, so a
//! numeric of Brook's 38 (`div(1e30, 7)`, a quotient's 37 decimals) could not be sent in
//! binary, and read as many (a binary COPY or parameter of more digits was rounded).
//! Written here because no maintained crate reads or writes the format at any precision.

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

/// The text of PostgreSQL's binary numeric `b` (`-123.4500`: every digit of its display
/// scale), `NaN`/`Infinity`/`-Infinity` for those values (which Brook's numeric input
/// refuses by name); `None` for bytes that are not a binary numeric. `rust_decimal`, which
/// read these before, holds 28 digits and rounded the rest away without a word
/// (`1234567890123456789012345678.1234567891` arrived as `...678.1`, `1e-38` as 0).
pub fn read_numeric(b: &[u8]) -> Option<String> {
    let field = |i: usize| Some(u16::from_be_bytes([*b.get(i)?, *b.get(i + 1)?]));
    let ndigits = usize::from(field(0)?);
    let weight = i64::from(field(2)? as i16);
    let sign = field(4)?;
    let dscale = usize::from(field(6)?);
    if ndigits > 0x7FFF || b.len() != 8 + 2 * ndigits {
        return None;
    }
    match sign {
        POSITIVE | NEGATIVE => {}
        0xC000 => return Some("NaN".into()),
        0xD000 => return Some("Infinity".into()),
        0xF000 => return Some("-Infinity".into()),
        _ => return None,
    }
    if dscale > 0x3FFF {
        return None;
    }
    let digits = (0..ndigits)
        .map(|i| field(8 + 2 * i).filter(|d| *d < 10_000))
        .collect::<Option<Vec<u16>>>()?;
    // The group of weight `w` (a digit's weight falls by one along the list).
    let group = |w: i64| {
        usize::try_from(weight - w)
            .ok()
            .and_then(|i| digits.get(i).copied())
            .unwrap_or(0)
    };
    let mut text = String::new();
    if weight < 0 {
        text.push('0');
    } else {
        text.push_str(&group(weight).to_string());
        for w in (0..weight).rev() {
            text.push_str(&format!("{:04}", group(w)));
        }
    }
    if dscale > 0 {
        let mut frac = String::with_capacity(dscale + 4);
        let mut w = -1;
        while frac.len() < dscale {
            frac.push_str(&format!("{:04}", group(w)));
            w -= 1;
        }
        frac.truncate(dscale);
        text.push('.');
        text.push_str(&frac);
    }
    let zero = digits.iter().all(|d| *d == 0);
    Some(if sign == NEGATIVE && !zero {
        format!("-{text}")
    } else {
        text
    })
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
    fn binary_numerics_read_every_digit() {
        // Beyond `rust_decimal`'s 28 digits (the values below are read back too).
        for t in [
            "1234567890123456789012345678.1234567891",
            "0.00000000000000000000000000000000000001",
            "99999999999999999999999999999999999999",
            "0.000",
        ] {
            let mut out = BytesMut::new();
            assert!(write_numeric(t, &mut out), "{t}");
            assert_eq!(read_numeric(&out).as_deref(), Some(t), "{t}");
        }
        // NaN, and bytes that are no numeric.
        assert_eq!(
            read_numeric(&[0, 0, 0, 0, 0xC0, 0, 0, 0]).as_deref(),
            Some("NaN")
        );
        assert_eq!(read_numeric(&[0, 1, 0, 0, 0, 0, 0, 0]), None);
        assert_eq!(read_numeric(&[0, 1, 0, 0, 0, 0, 0, 0, 0x27, 0x10]), None);
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
            let mut out = BytesMut::new();
            assert!(write_numeric(t, &mut out), "{t}");
            assert_eq!(read_numeric(&out).as_deref(), Some(t), "{t}");
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
