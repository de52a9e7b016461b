//! `information_schema.columns` and `information_schema.views` as PostgreSQL fills them.
//! DataFusion's own `columns` names Arrow types (`Int32`, `Utf8`, `Timestamp(µs)`), counts
//! positions from 0 and knows no defaults, so Grafana does not recognise a time column and
//! pgjdbc/dbt read wrong types; its `views` lists every table, with a `definition` column
//! where the standard has `view_definition`. The server keeps views with PostgreSQL's
//! answers (`pg_catalog.brook_information_schema_columns`, `..._views`, built on DataFusion's
//! tables and pg_catalog); a query that reads the standard name reads that view instead,
//! under the same name for its column references.

use datafusion::sql::sqlparser::ast::{
    Ident, ObjectName, ObjectNamePart, Statement, TableAlias, TableFactor, VisitMut, VisitorMut,
};
use datafusion_pg_catalog::sql::rules::SqlStatementRewriteRule;
use std::ops::ControlFlow;

/// The rewrite.
#[derive(Debug)]
pub struct InformationSchemaColumns;

/// The standard tables the server replaces, and its view for each.
const VIEWS: [(&str, &str); 2] = [
    ("columns", "brook_information_schema_columns"),
    ("views", "brook_information_schema_views"),
];

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
                let [schema, table] = parts.as_slice() else {
                    return ControlFlow::Continue(());
                };
                let Some((standard, view)) = VIEWS
                    .iter()
                    .find(|(standard, _)| schema == "information_schema" && table == standard)
                else {
                    return ControlFlow::Continue(());
                };
                *name = ObjectName(vec![
                    ObjectNamePart::Identifier(Ident::new("pg_catalog")),
                    ObjectNamePart::Identifier(Ident::new(*view)),
                ]);
                if alias.is_none() {
                    *alias = Some(TableAlias {
                        explicit: true,
                        name: Ident::new(*standard),
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
        assert_eq!(
            crate::rewritten_by(
                &InformationSchemaColumns,
                "SELECT view_definition FROM information_schema.views"
            ),
            "SELECT view_definition FROM pg_catalog.brook_information_schema_views AS views"
        );
    }
}
