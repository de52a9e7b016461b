//! Identifiers as PostgreSQL reads them: unquoted names fold to lower case.

use brook_common::{BrookError, Result};
use datafusion::sql::sqlparser::ast::{Ident, ObjectName};

/// Normalise an identifier as PostgreSQL does: unquoted names fold to lower case.
pub fn ident_name(i: &Ident) -> String {
    if i.quote_style.is_some() {
        i.value.clone()
    } else {
        i.value.to_lowercase()
    }
}

pub(crate) fn object_parts(name: &ObjectName) -> Result<Vec<String>> {
    name.0
        .iter()
        .map(|p| match p.as_ident() {
            Some(i) => Ok(ident_name(i)),
            None => Err(BrookError::Syntax(format!(
                "syntax error: unexpected name {p}"
            ))),
        })
        .collect()
}

pub(crate) fn quote_ident(s: &str) -> String {
    format!("\"{}\"", s.replace('"', "\"\""))
}
