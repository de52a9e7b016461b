//! `information_schema.columns` as PostgreSQL fills it. DataFusion's own table names Arrow
//! types (`Int32`, `Utf8`, `Timestamp(µs)`), counts positions from 0 and knows no
//! defaults, so Grafana does not recognise a time column and pgjdbc/dbt read wrong types.
//! The server keeps a view with PostgreSQL's answers (`pg_catalog.
//! brook_information_schema_columns`, built on DataFusion's table and pg_catalog); a query
//! that reads `information_schema.columns` reads that view instead, under the same name
//! for its column references.

use datafusion::sql::sqlparser::ast::{
    Ident, ObjectName, ObjectNamePart, Statement, TableAlias, TableFactor, VisitMut, VisitorMut,
};
use datafusion_pg_catalog::sql::rules::SqlStatementRewriteRule;
use std::ops::ControlFlow;

/// The rewrite.
#[derive(Debug)]
pub struct InformationSchemaColumns;

/// The server's view.
const VIEW: &str = "brook_information_schema_columns";

impl SqlStatementRewriteRule for InformationSchemaColumns {
    fn rewrite(&self, mut s: Statement) -> Statement {
        struct Factors;
        impl VisitorMut for Factors {
            type Break = ();
            fn pre_visit_table_factor(&mut self, t: &mut TableFactor) -> ControlFlow<()> {
                let TableFactor::Table {
                    name,
                    alias,
                    args: None,
                    ..
                } = t
                else {
                    return ControlFlow::Continue(());
                };
                let parts: Vec<String> = name
                    .0
                    .iter()
                    .filter_map(|p| p.as_ident().map(|i| i.value.to_ascii_lowercase()))
                    .collect();
                if parts.len() != 2 || parts[0] != "information_schema" || parts[1] != "columns" {
                    return ControlFlow::Continue(());
                }
                *name = ObjectName(vec![
                    ObjectNamePart::Identifier(Ident::new("pg_catalog")),
                    ObjectNamePart::Identifier(Ident::new(VIEW)),
                ]);
                if alias.is_none() {
                    *alias = Some(TableAlias {
                        explicit: true,
                        name: Ident::new("columns"),
                        columns: vec![],
                        at: None,
                    });
                }
                ControlFlow::Continue(())
            }
        }
        let _ = s.visit(&mut Factors);
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_view_under_the_standard_name() {
        assert_eq!(
            crate::rewritten_by(
                &InformationSchemaColumns,
                "SELECT column_name, data_type FROM information_schema.columns WHERE table_name = 't'"
            ),
            "SELECT column_name, data_type FROM pg_catalog.brook_information_schema_columns AS columns WHERE table_name = 't'"
        );
        assert_eq!(
            crate::rewritten_by(
                &InformationSchemaColumns,
                "SELECT c.data_type FROM INFORMATION_SCHEMA.COLUMNS c"
            ),
            "SELECT c.data_type FROM pg_catalog.brook_information_schema_columns c"
        );
    }
}
