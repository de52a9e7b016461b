//! uuid values: kept as their canonical text (lower-case `8-4-4-4-12` hex digits), read
//! from any input form PostgreSQL accepts and sent as 16 bytes in binary format.
//!
//! Written here rather than with the `uuid` crate: the accepted input forms are
//! PostgreSQL's (hyphens after any group of four digits, optional braces), not RFC 4122's.

/// The 16 bytes of uuid input text, or None when PostgreSQL would refuse it: 32 hex digits,
/// optionally in braces, with a hyphen allowed after any group of four digits.
pub fn parse(text: &str) -> Option<[u8; 16]> {
    let inner = match text.strip_prefix('{') {
        Some(rest) => rest.strip_suffix('}')?,
        None => text,
    };
    let bytes = inner.as_bytes();
    let mut out = [0u8; 16];
    let mut digits = 0usize;
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'-' {
            // Only between groups of four digits, never first, last or doubled.
            if digits == 0
                || !digits.is_multiple_of(4)
                || digits == 32
                || bytes.get(i + 1) == Some(&b'-')
            {
                return None;
            }
            i += 1;
            continue;
        }
        let d = (bytes[i] as char).to_digit(16)? as u8;
        if digits == 32 {
            return None;
        }
        out[digits / 2] |= if digits.is_multiple_of(2) { d << 4 } else { d };
        digits += 1;
        i += 1;
    }
    (digits == 32).then_some(out)
}

/// The canonical text of 16 uuid bytes.
pub fn from_bytes(b: &[u8; 16]) -> String {
    let hex: String = b.iter().map(|x| format!("{x:02x}")).collect();
    format!(
        "{}-{}-{}-{}-{}",
        &hex[..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..]
    )
}

/// The canonical text of uuid input text, or None when it is no uuid.
pub fn canonical(text: &str) -> Option<String> {
    parse(text).map(|b| from_bytes(&b))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn input_forms_postgresql_accepts() {
        let canon = "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11";
        for text in [
            "A0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A11",
            "{a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11}",
            "a0eebc999c0b4ef8bb6d6bb9bd380a11",
            "a0ee-bc99-9c0b-4ef8-bb6d-6bb9-bd38-0a11",
            "{a0eebc99-9c0b4ef8-bb6d6bb9-bd380a11}",
        ] {
            assert_eq!(canonical(text).as_deref(), Some(canon), "{text}");
        }
        for bad in [
            "",
            "a0eebc99",
            "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a1g",
            "-a0eebc999c0b4ef8bb6d6bb9bd380a11",
            "a0eebc999c0b4ef8bb6d6bb9bd380a11-",
            "a0eebc999c0b4ef8bb6d6bb9bd380a11ff",
            "{a0eebc999c0b4ef8bb6d6bb9bd380a11",
            "a0e-ebc999c0b4ef8bb6d6bb9bd380a11",
        ] {
            assert_eq!(canonical(bad), None, "{bad}");
        }
    }
}
