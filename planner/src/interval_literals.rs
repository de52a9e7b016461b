//! Interval constants as PostgreSQL reads them: `INTERVAL '1 day 02:03:04'` and
//! `'-08:00'::interval` (PostgreSQL's own output, a time of day, ISO 8601, `@ ... ago`)
//! are given to DataFusion in the units-only spelling its parser reads
//! (`brook_common::interval_text`); they were 22007 "Invalid input syntax".

use crate::pg_functions::rewrite_expressions;
use brook_common::interval_text::canonical_interval_text;
use datafusion::sql::sqlparser::ast::{DataType, Expr, Statement, UnaryOperator, Value};

/// Every interval constant of `stmt` without fields (`INTERVAL '1' DAY` keeps its own
/// reading) in the spelling DataFusion reads.
pub fn pg_interval_literals(stmt: &mut Statement) {
    rewrite_expressions(stmt, |e| match e {
        Expr::Interval(iv) if iv.leading_field.is_none() && iv.last_field.is_none() => {
            canonical(&mut iv.value)
        }
        // DataFusion negates an interval constant by writing `-` before its text, which
        // negates only the first field of the spelling above: the constant is negated here
        // (its operand is already in that spelling).
        Expr::UnaryOp {
            op: UnaryOperator::Minus,
            expr: inner,
        } => {
            if let Expr::Interval(iv) = inner.as_mut() {
                if iv.leading_field.is_none() && iv.last_field.is_none() {
                    if let Expr::Value(v) = iv.value.as_mut() {
                        if let Value::SingleQuotedString(s) = &v.value {
                            if let Some(n) = negated(s) {
                                v.value = Value::SingleQuotedString(n);
                                *e = (**inner).clone();
                            }
                        }
                    }
                }
            }
        }
        Expr::Cast {
            expr,
            data_type: DataType::Interval { fields: None, .. },
            ..
        } => canonical(expr),
        _ => {}
    });
}

/// The negation of an interval in the spelling [`canonical_interval_text`] makes.
fn negated(text: &str) -> Option<String> {
    let words: Vec<&str> = text.split_whitespace().collect();
    let [m, "months", d, "days", n, "nanoseconds"] = words.as_slice() else {
        return None;
    };
    let (m, d, n): (i64, i64, i64) = (m.parse().ok()?, d.parse().ok()?, n.parse().ok()?);
    Some(format!(
        "{} months {} days {} nanoseconds",
        m.checked_neg()?,
        d.checked_neg()?,
        n.checked_neg()?
    ))
}

fn canonical(e: &mut Expr) {
    if let Expr::Value(v) = e {
        if let Value::SingleQuotedString(s) = &mut v.value {
            if let Some(c) = canonical_interval_text(s) {
                *s = c;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::sql::sqlparser::dialect::PostgreSqlDialect;
    use datafusion::sql::sqlparser::parser::Parser;

    fn rewritten(sql: &str) -> String {
        let mut s = Parser::parse_sql(&PostgreSqlDialect {}, sql)
            .expect("test SQL parses")
            .remove(0);
        pg_interval_literals(&mut s);
        s.to_string()
    }

    #[test]
    fn constants_in_postgresql_spellings() {
        assert_eq!(
            rewritten("SELECT INTERVAL '1 day 02:00:00', '-08:00'::interval"),
            "SELECT INTERVAL '0 months 1 days 7200000000000 nanoseconds', \
             '0 months 0 days -28800000000000 nanoseconds'::INTERVAL"
        );
        assert_eq!(
            rewritten("SELECT -INTERVAL '1 day 02:00:00'"),
            "SELECT INTERVAL '0 months -1 days -7200000000000 nanoseconds'"
        );
        // Not interval input, or with fields: as written.
        assert_eq!(
            rewritten("SELECT INTERVAL '1' DAY, 'x'::interval"),
            "SELECT INTERVAL '1' DAY, 'x'::INTERVAL"
        );
    }
}
