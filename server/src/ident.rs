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

/// A name as SQL writes it: double-quoted unless it is lower case letters, digits and `_`
/// (as PostgreSQL prints names in `nextval('...')` defaults and `pg_get_serial_sequence`).
pub(crate) fn quote_if_needed(name: &str) -> String {
    let plain = name.starts_with(|c: char| c.is_ascii_lowercase() || c == '_')
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
    if plain {
        name.to_string()
    } else {
        quote_ident(name)
    }
}
