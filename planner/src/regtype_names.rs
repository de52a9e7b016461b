//! `'integer'::regtype` and `to_regtype('double precision')` name their type as PostgreSQL's
//! grammar does: a cast of a string to regtype is looked up in `pg_type` by name, and the
//! SQL standard's names (`integer`, `double precision`, `character varying(32)`,
//! `timestamp with time zone`, `int[]`) are not `pg_type` names (`int4`, `float8`,
//! `varchar`, `timestamptz`, `_int4`): the lookup found nothing (NULL, or XX000 for a
//! bare cast). This rule writes the literal as the `pg_type` name before the lookup.

use datafusion::sql::sqlparser::ast::{DataType, Expr, Statement, Value};
use datafusion_pg_catalog::sql::rules::SqlStatementRewriteRule;

/// The rewrite.
#[derive(Debug)]
pub struct RegtypeNames;

impl SqlStatementRewriteRule for RegtypeNames {
    fn rewrite(&self, mut s: Statement) -> Statement {
        crate::pg_functions::rewrite_expressions(&mut s, |e| {
            let Expr::Cast {
                expr, data_type, ..
            } = e
            else {
                return;
            };
            let DataType::Custom(name, modifiers) = data_type else {
                return;
            };
            let is_regtype = modifiers.is_empty()
                && name
                    .0
                    .last()
                    .and_then(|p| p.as_ident())
                    .is_some_and(|i| i.value.eq_ignore_ascii_case("regtype"));
            if !is_regtype {
                return;
            }
            if let Expr::Value(v) = expr.as_mut() {
                if let Value::SingleQuotedString(text) = &mut v.value {
                    if let Some(typname) = pg_type_name(text) {
                        *text = typname;
                    }
                }
            }
        });
        s
    }
}

/// The `pg_type` name of a type as SQL writes it; None when it is written so already (or
/// is no name this rule knows: the lookup then decides).
pub fn pg_type_name(written: &str) -> Option<String> {
    let mut t = written.trim().to_ascii_lowercase();
    let mut array = false;
    while let Some(base) = t.strip_suffix("[]") {
        t = base.trim_end().to_string();
        array = true;
    }
    if let Some(rest) = t.strip_prefix("pg_catalog.") {
        t = rest.to_string();
    }
    // A type modifier (`varchar(32)`, `numeric(10, 2)`, `timestamp(3) with time zone`)
    // does not change the type.
    let mut plain = String::new();
    let mut depth = 0;
    for c in t.chars() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            c if depth == 0 => plain.push(c),
            _ => {}
        }
    }
    let words = plain.split_whitespace().collect::<Vec<_>>().join(" ");
    let base = match words.as_str() {
        "integer" | "int" => "int4",
        "smallint" => "int2",
        "bigint" => "int8",
        "real" => "float4",
        "double precision" | "float" => "float8",
        "boolean" => "bool",
        "character varying" | "char varying" => "varchar",
        "character" | "char" => "bpchar",
        "decimal" | "dec" => "numeric",
        "timestamp without time zone" => "timestamp",
        "timestamp with time zone" => "timestamptz",
        "time without time zone" => "time",
        "time with time zone" => "timetz",
        "bit varying" => "varbit",
        "\"char\"" => "char",
        other if array || other != written => other,
        _ => return None,
    };
    let name = if array {
        format!("_{base}")
    } else {
        base.to_string()
    };
    (name != written).then_some(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn standard_names_are_pg_type_names() {
        for (written, typname) in [
            ("integer", "int4"),
            ("double precision", "float8"),
            ("character varying(32)", "varchar"),
            ("timestamp(3) with time zone", "timestamptz"),
            ("int[]", "_int4"),
            ("pg_catalog.bool", "bool"),
            ("Numeric(10,2)", "numeric"),
            ("text[]", "_text"),
        ] {
            assert_eq!(pg_type_name(written).as_deref(), Some(typname), "{written}");
        }
        for written in ["int4", "text", "nosuch", "timestamptz"] {
            assert_eq!(pg_type_name(written), None, "{written}");
        }
    }
}
