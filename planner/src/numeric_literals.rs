//! Numeric constants in exponent notation (`1e10`, `1.5e-3`, `2E+5`) written out in plain
//! digits (and constants beyond 38 digits read as double precision), so that they are numerics of PostgreSQL's scale (`1.5e-3` is `0.0015`, scale 4;
//! `1e10` is `10000000000`, scale 0).
//!
//! Brook reads a decimal constant as a numeric (DataFusion's `parse_float_as_decimal`), whose
//! parser keeps an exponent as a negative decimal scale (`1e10` as 1 at scale −10, a form
//! Arrow's kernels and Brook's printing do not all take) and refuses one below −128
//! (`1e308`). A constant with more than 38 digits written out (beyond Decimal128, e.g.
//! `1e308` or `1e-50`) is read as double precision, as Brook read every decimal constant
//! before (docs/limits.md).

use datafusion::sql::sqlparser::ast::{
    visit_expressions_mut, CastKind, DataType, ExactNumberInfo, Expr, Statement, Value,
};
use std::ops::ControlFlow;

/// Decimal128's largest precision: a constant written out in more digits is a double.
const MAX_DIGITS: usize = 38;

/// Rewrite the exponent-notation constants of `stmt`.
pub fn exponent_literals(stmt: &mut Statement) {
    let _ = visit_expressions_mut(stmt, |e| {
        if let Expr::Value(v) = e {
            if let Value::Number(n, false) = &v.value {
                if let Some(new) = written_out(n) {
                    *e = new;
                }
            }
        }
        ControlFlow::<()>::Continue(())
    });
}

/// The constant `n` as a plain-digit number, or as a double precision cast when written out
/// it has more than [`MAX_DIGITS`] digits; `None` when `n` stays as it is.
fn written_out(n: &str) -> Option<Expr> {
    // A value no double holds (`1e400`, `1e-400`) is cast to numeric instead, which
    // refuses it (22003) rather than read it as infinity or zero.
    let in_double_range = n.parse::<f64>().is_ok_and(|f| {
        f.is_finite()
            && (f != 0.0
                || !n
                    .split(['e', 'E'])
                    .next()
                    .unwrap_or("")
                    .contains(|c: char| ('1'..='9').contains(&c)))
    });
    let double = || Expr::Cast {
        kind: CastKind::Cast,
        expr: Box::new(Expr::value(Value::SingleQuotedString(n.to_string()))),
        data_type: if in_double_range {
            DataType::DoublePrecision
        } else {
            DataType::Numeric(ExactNumberInfo::None)
        },
        array: false,
        format: None,
    };
    let Some((mantissa, exponent)) = n.split_once(['e', 'E']) else {
        // Plain digits: beyond Decimal128 (DataFusion would make a Decimal256, which Brook's
        // kernels and wire do not all take), a double as for an exponent.
        let (int, frac) = n.split_once('.').unwrap_or((n, ""));
        let digits = int.trim_start_matches('0').len() + frac.len();
        return (digits > MAX_DIGITS).then(double);
    };
    let Ok(exponent) = exponent.parse::<i64>() else {
        return Some(double());
    };
    Some(match plain_digits(mantissa, exponent, MAX_DIGITS) {
        // A whole number is still a numeric (`1e10`), not the bigint its digits would be.
        Some(digits) if !digits.contains('.') => Expr::Cast {
            kind: CastKind::Cast,
            data_type: DataType::Decimal(ExactNumberInfo::PrecisionAndScale(
                digits.len() as u64,
                0,
            )),
            expr: Box::new(Expr::value(Value::Number(digits, false))),
            array: false,
            format: None,
        },
        Some(digits) => Expr::value(Value::Number(digits, false)),
        None => double(),
    })
}

/// Number text in exponent notation (`-1.5e-3`, ` 2E+5 `) in plain digits (`-0.0015`),
/// `None` for other text or more than [`MAX_DIGITS`] digits. COPY reads numerics so.
pub fn plain_number(text: &str) -> Option<String> {
    plain_number_of(text, MAX_DIGITS)
}

/// [`plain_number`] of at most `max_digits` digits (a cast's text is written out whole,
/// for Arrow's parser to round to the type's scale or refuse: `'1e-40'::numeric(6,2)` is
/// 0.00).
pub fn plain_number_of(text: &str, max_digits: usize) -> Option<String> {
    let text = text.trim();
    let (sign, unsigned) = match text.strip_prefix('-') {
        Some(rest) => ("-", rest),
        None => ("", text.strip_prefix('+').unwrap_or(text)),
    };
    let (mantissa, exponent) = unsigned.split_once(['e', 'E'])?;
    let digits = plain_digits(mantissa, exponent.parse::<i64>().ok()?, max_digits)?;
    Some(format!("{sign}{digits}"))
}

/// `mantissa · 10^exponent` in plain digits (`1.5`, −3 → `0.0015`), `None` when that takes
/// more than [`MAX_DIGITS`] digits or the mantissa is not digits with one optional point.
fn plain_digits(mantissa: &str, exponent: i64, max_digits: usize) -> Option<String> {
    if exponent.unsigned_abs() > 1000 {
        return None;
    }
    let (int, frac) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    if !(int.chars().chain(frac.chars()).all(|c| c.is_ascii_digit())) || int.len() + frac.len() == 0
    {
        return None;
    }
    let digits = format!("{int}{frac}");
    let digits = digits.trim_start_matches('0');
    if digits.is_empty() {
        // Zero: PostgreSQL keeps the scale (`0.0e1` is `0`, `0e-2` is `0.00`).
        let scale = (frac.len() as i64 - exponent).max(0);
        return (scale as usize <= max_digits).then(|| {
            format!(
                "0{}{}",
                if scale > 0 { "." } else { "" },
                "0".repeat(scale as usize)
            )
        });
    }
    // The decimal point's place, counted in `digits` from the left (each leading zero
    // stripped moves it one place).
    let stripped = int.len() + frac.len() - digits.len();
    let point = int.len() as i64 + exponent - stripped as i64;
    let written = if point <= 0 {
        (-point) as usize + digits.len()
    } else {
        (point as usize).max(digits.len())
    };
    if written > max_digits {
        return None;
    }
    Some(if point <= 0 {
        format!("0.{}{digits}", "0".repeat((-point) as usize))
    } else if point as usize >= digits.len() {
        format!("{digits}{}", "0".repeat(point as usize - digits.len()))
    } else {
        let (i, f) = digits.split_at(point as usize);
        format!("{i}.{f}")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exponents_are_written_out_as_postgresql_reads_them() {
        for (mantissa, exponent, written) in [
            ("1", 10, "10000000000"),
            ("1.5", -3, "0.0015"),
            ("2", 5, "200000"),
            ("1.50", 1, "15.0"),
            ("12.5", -1, "1.25"),
            ("0.5", 2, "50"),
            ("0.05", -1, "0.005"),
            ("001.5", 0, "1.5"),
            ("0", 3, "0"),
            ("0.0", -2, "0.000"),
        ] {
            assert_eq!(
                plain_digits(mantissa, exponent, MAX_DIGITS).as_deref(),
                Some(written),
                "{mantissa}e{exponent}"
            );
        }
    }

    #[test]
    fn copy_text_in_exponent_notation_is_written_out() {
        assert_eq!(plain_number(" -1.5e-3").as_deref(), Some("-0.0015"));
        assert_eq!(plain_number("2E+5").as_deref(), Some("200000"));
        assert_eq!(plain_number("1.5"), None);
        assert_eq!(plain_number("1e400"), None);
    }

    #[test]
    fn constants_past_38_digits_are_doubles() {
        assert_eq!(plain_digits("1", 308, MAX_DIGITS), None);
        assert_eq!(plain_digits("1", -50, MAX_DIGITS), None);
        assert!(matches!(written_out("1e308"), Some(Expr::Cast { .. })));
        assert!(written_out("1.5").is_none());
        let long = format!("0.{}1", "0".repeat(39));
        assert!(matches!(written_out(&long), Some(Expr::Cast { .. })));
        assert!(written_out(&"9".repeat(38)).is_none());
    }
}
