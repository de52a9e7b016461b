//! How Arrow types are named to a PostgreSQL user in error messages, and how intervals and
//! a record's fields are written as PostgreSQL writes them.

use datafusion::arrow::datatypes::DataType;

/// Field-metadata key that records the declared PostgreSQL type of a stored column or a
/// cast, so results report `varchar`, `jsonb`, `timestamp(0)` ... rather than only the
/// Arrow type.
pub const PG_TYPE_KEY: &str = "brook.pg_type";

/// Append one non-NULL field of a record in PostgreSQL's text form (`record_out`): as it
/// is, or quoted (`"`, `\` doubled inside) when it is empty or holds a quote, a backslash,
/// a parenthesis, a comma or white space.
pub fn push_record_field(out: &mut String, value: &str) {
    let quote = value.is_empty()
        || value
            .chars()
            .any(|c| matches!(c, '"' | '\\' | '(' | ')' | ',') || c.is_ascii_whitespace());
    if !quote {
        out.push_str(value);
        return;
    }
    out.push('"');
    for c in value.chars() {
        if matches!(c, '"' | '\\') {
            out.push(c);
        }
        out.push(c);
    }
    out.push('"');
}

/// The PostgreSQL name of the type a client sees for values of `dt` (`bigint`, `text`,
/// `double precision[]`, ...); types without a PostgreSQL counterpart keep Arrow's name.
pub fn sql_name(dt: &DataType) -> String {
    let name = match dt {
        DataType::Boolean => "boolean",
        DataType::Int8 | DataType::Int16 | DataType::UInt8 => "smallint",
        DataType::Int32 | DataType::UInt16 => "integer",
        DataType::Int64 | DataType::UInt32 => "bigint",
        DataType::UInt64
        | DataType::Decimal32(_, _)
        | DataType::Decimal64(_, _)
        | DataType::Decimal128(_, _)
        | DataType::Decimal256(_, _) => "numeric",
        DataType::Float16 | DataType::Float32 => "real",
        DataType::Float64 => "double precision",
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => "text",
        DataType::Binary
        | DataType::LargeBinary
        | DataType::BinaryView
        | DataType::FixedSizeBinary(_) => "bytea",
        DataType::Date32 | DataType::Date64 => "date",
        DataType::Time32(_) | DataType::Time64(_) => "time without time zone",
        DataType::Timestamp(_, None) => "timestamp without time zone",
        DataType::Timestamp(_, Some(_)) => "timestamp with time zone",
        DataType::Interval(_) | DataType::Duration(_) => "interval",
        DataType::Null => "unknown",
        DataType::List(f)
        | DataType::LargeList(f)
        | DataType::FixedSizeList(f, _)
        | DataType::ListView(f) => return format!("{}[]", sql_name(f.data_type())),
        DataType::Dictionary(_, v) => return sql_name(v),
        other => return other.to_string(),
    };
    name.to_string()
}

/// `.ffffff` without trailing zeros (nothing for whole seconds), as PostgreSQL prints
/// fractions of a second.
pub fn push_fraction(frac_micros: i64, out: &mut String) {
    if frac_micros != 0 {
        let f = format!("{frac_micros:06}");
        out.push('.');
        out.push_str(f.trim_end_matches('0'));
    }
}

/// A duration of `micros` (what `timestamp - timestamp` gives) as PostgreSQL shows it: whole
/// days split off and the rest as time, each with the duration's sign — PostgreSQL's
/// `timestamp_mi` applies `justify_hours` (`'1 day 02:00:00'`, `'-1 days -03:00:00'`).
pub fn duration_as_interval(micros: i64) -> datafusion::arrow::datatypes::IntervalMonthDayNano {
    const DAY: i64 = 86_400_000_000;
    datafusion::arrow::datatypes::IntervalMonthDayNano {
        months: 0,
        days: (micros / DAY) as i32,
        nanoseconds: (micros % DAY) * 1000,
    }
}

/// PostgreSQL's `IntervalStyle = postgres` output: `1 year 2 mons 3 days 04:05:06.5`.
pub fn format_interval(v: datafusion::arrow::datatypes::IntervalMonthDayNano, out: &mut String) {
    format_interval_fields(v.months, v.days, v.nanoseconds / 1000, out);
}

/// [`format_interval`] of an interval's three fields (as the binary protocol sends them).
pub fn format_interval_fields(months: i32, days: i32, micros: i64, out: &mut String) {
    // A positive field after a negative one carries a `+` (`-1 days +02:00:00`), as
    // PostgreSQL writes it (and reads it back).
    let mut parts: Vec<String> = Vec::new();
    let mut after_negative = false;
    let years = months / 12;
    let months = months % 12;
    for (value, unit) in [(years, "year"), (months, "mon"), (days, "day")] {
        if value != 0 {
            let plus = if after_negative && value > 0 { "+" } else { "" };
            let plural = if value == 1 { "" } else { "s" };
            parts.push(format!("{plus}{value} {unit}{plural}"));
            after_negative = value < 0;
        }
    }
    if micros != 0 || parts.is_empty() {
        let neg = micros < 0;
        let m = micros.unsigned_abs();
        let secs = m / 1_000_000;
        let sign = if neg {
            "-"
        } else if after_negative {
            "+"
        } else {
            ""
        };
        let mut t = format!(
            "{}{:02}:{:02}:{:02}",
            sign,
            secs / 3600,
            (secs / 60) % 60,
            secs % 60
        );
        push_fraction((m % 1_000_000) as i64, &mut t);
        parts.push(t);
    }
    out.push_str(&parts.join(" "));
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::arrow::datatypes::Field;
    use std::sync::Arc;

    #[test]
    fn mixed_signs_carry_a_plus() {
        let text = |months, days, micros| {
            let mut s = String::new();
            format_interval_fields(months, days, micros, &mut s);
            s
        };
        assert_eq!(text(0, -1, 7_200_000_000), "-1 days +02:00:00");
        assert_eq!(text(-1, 2, 0), "-1 mons +2 days");
        assert_eq!(text(14, -3, -1_000_000), "1 year 2 mons -3 days -00:00:01");
    }

    #[test]
    fn names_as_postgresql_prints_them() {
        assert_eq!(sql_name(&DataType::Utf8), "text");
        assert_eq!(sql_name(&DataType::Float64), "double precision");
        let list = DataType::List(Arc::new(Field::new_list_field(DataType::Int64, true)));
        assert_eq!(sql_name(&list), "bigint[]");
    }
}
