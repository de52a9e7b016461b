//! Identifiers as PostgreSQL reads them — the one rule every crate uses.
//!
//! An unquoted name folds to lower case, a quoted one is kept as written. Like PostgreSQL
//! with a UTF-8 database (`downcase_identifier`) and like DataFusion's planner, only ASCII
//! letters fold: `CREATE TABLE Ärger` names the table `Ärger`, and the planner, which
//! resolves names the same way, finds it.

use datafusion::sql::sqlparser::ast::Ident;

/// The name an identifier refers to: unquoted names fold ASCII letters to lower case.
pub fn ident_name(i: &Ident) -> String {
    fold(&i.value, i.quote_style.is_some())
}

/// The name of identifier text `value`, quoted or not.
pub fn fold(value: &str, quoted: bool) -> String {
    if quoted {
        value.to_string()
    } else {
        value.to_ascii_lowercase()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unquoted_names_fold_ascii_only() {
        assert_eq!(ident_name(&Ident::new("Sensor_ID")), "sensor_id");
        assert_eq!(
            ident_name(&Ident::with_quote('"', "Sensor_ID")),
            "Sensor_ID"
        );
        // PostgreSQL (UTF-8) and DataFusion leave non-ASCII letters alone.
        assert_eq!(ident_name(&Ident::new("ÄrgerX")), "Ärgerx");
    }
}
