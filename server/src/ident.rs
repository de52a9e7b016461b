//! Identifiers as PostgreSQL reads them: object names split into folded parts, and quoting.
//! The folding rule itself is `brook_common::ident`, shared with the planner.

use brook_common::{brook_err, Result};
use datafusion::sql::sqlparser::ast::ObjectName;

pub use brook_common::ident::ident_name;

pub(crate) fn object_parts(name: &ObjectName) -> Result<Vec<String>> {
    name.0
        .iter()
        .map(|p| match p.as_ident() {
            Some(i) => Ok(ident_name(i)),
            None => Err(brook_err!(Syntax, "syntax error: unexpected name {p}")),
        })
        .collect()
}

pub(crate) fn quote_ident(s: &str) -> String {
    format!("\"{}\"", s.replace('"', "\"\""))
}

/// A name as SQL writes it, PostgreSQL's `quote_ident`: double-quoted unless it is lower
/// case letters, digits and `_` (not starting with a digit) and no keyword PostgreSQL
/// reserves in some context (as it prints names in `nextval('...')` defaults,
/// `pg_get_serial_sequence`, `pg_get_indexdef`, `format('%I')`).
pub(crate) fn quote_if_needed(name: &str) -> String {
    let plain = name.starts_with(|c: char| c.is_ascii_lowercase() || c == '_')
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
    if plain && RESERVED.binary_search(&name).is_err() {
        name.to_string()
    } else {
        quote_ident(name)
    }
}

/// PostgreSQL's keywords that are not unreserved (reserved, column-name and type/function
/// keywords: `quote_ident` quotes them), sorted.
const RESERVED: &[&str] = &[
    "all",
    "analyse",
    "analyze",
    "and",
    "any",
    "array",
    "as",
    "asc",
    "asymmetric",
    "authorization",
    "between",
    "bigint",
    "binary",
    "bit",
    "boolean",
    "both",
    "case",
    "cast",
    "char",
    "character",
    "check",
    "coalesce",
    "collate",
    "collation",
    "column",
    "concurrently",
    "constraint",
    "create",
    "cross",
    "current_catalog",
    "current_date",
    "current_role",
    "current_schema",
    "current_time",
    "current_timestamp",
    "current_user",
    "dec",
    "decimal",
    "default",
    "deferrable",
    "desc",
    "distinct",
    "do",
    "else",
    "end",
    "except",
    "exists",
    "extract",
    "false",
    "fetch",
    "float",
    "for",
    "foreign",
    "freeze",
    "from",
    "full",
    "grant",
    "greatest",
    "group",
    "grouping",
    "having",
    "ilike",
    "in",
    "initially",
    "inner",
    "inout",
    "int",
    "integer",
    "intersect",
    "interval",
    "into",
    "is",
    "isnull",
    "join",
    "json",
    "json_array",
    "json_arrayagg",
    "json_exists",
    "json_object",
    "json_objectagg",
    "json_query",
    "json_scalar",
    "json_serialize",
    "json_table",
    "json_value",
    "lateral",
    "leading",
    "least",
    "left",
    "like",
    "limit",
    "localtime",
    "localtimestamp",
    "merge_action",
    "national",
    "natural",
    "nchar",
    "none",
    "normalize",
    "not",
    "notnull",
    "null",
    "nullif",
    "numeric",
    "offset",
    "on",
    "only",
    "or",
    "order",
    "out",
    "outer",
    "overlaps",
    "overlay",
    "placing",
    "position",
    "precision",
    "primary",
    "real",
    "references",
    "returning",
    "right",
    "row",
    "select",
    "session_user",
    "setof",
    "similar",
    "smallint",
    "some",
    "substring",
    "symmetric",
    "system_user",
    "table",
    "tablesample",
    "then",
    "time",
    "timestamp",
    "to",
    "trailing",
    "treat",
    "trim",
    "true",
    "union",
    "unique",
    "user",
    "using",
    "values",
    "varchar",
    "variadic",
    "verbose",
    "when",
    "where",
    "window",
    "with",
    "xmlattributes",
    "xmlconcat",
    "xmlelement",
    "xmlexists",
    "xmlforest",
    "xmlnamespaces",
    "xmlparse",
    "xmlpi",
    "xmlroot",
    "xmlserialize",
    "xmltable",
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_quoted_as_postgresql_quotes_them() {
        assert!(
            RESERVED.windows(2).all(|w| w[0] < w[1]),
            "RESERVED must stay sorted"
        );
        assert_eq!(quote_if_needed("items"), "items");
        assert_eq!(quote_if_needed("select"), "\"select\"");
        assert_eq!(quote_if_needed("Weird T"), "\"Weird T\"");
        assert_eq!(quote_if_needed("a\"b"), "\"a\"\"b\"");
    }
}
