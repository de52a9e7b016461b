//! `FROM generate_series(1, 3) g`: a function returning one column, aliased without a
//! column list, names its column after the alias, as PostgreSQL does (`SELECT g FROM
//! generate_series(1, 3) g`). DataFusion keeps the function's own column name (`value`),
//! so `g` was 42703. The alias gets its column list: `AS g(g)`.

use datafusion::sql::sqlparser::ast::{
    Statement, TableAliasColumnDef, TableFactor, VisitMut, VisitorMut,
};
use std::ops::ControlFlow;

/// The table functions that return one column.
const ONE_COLUMN: [&str; 2] = ["generate_series", "range"];

/// Give each such aliased call its column name.
pub fn name_function_columns(stmt: &mut Statement) {
    let _ = stmt.visit(&mut Functions);
}

struct Functions;

impl VisitorMut for Functions {
    type Break = ();

    fn pre_visit_table_factor(&mut self, t: &mut TableFactor) -> ControlFlow<()> {
        if let TableFactor::Table {
            name,
            args: Some(_),
            alias: Some(alias),
            ..
        } = t
        {
            let one_column = name
                .0
                .last()
                .and_then(|p| p.as_ident())
                .is_some_and(|i| ONE_COLUMN.iter().any(|f| i.value.eq_ignore_ascii_case(f)));
            if one_column && alias.columns.is_empty() {
                alias.columns = vec![TableAliasColumnDef {
                    name: alias.name.clone(),
                    data_type: None,
                }];
            }
        }
        ControlFlow::Continue(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::sql::sqlparser::dialect::PostgreSqlDialect;
    use datafusion::sql::sqlparser::parser::Parser;

    fn rewritten(sql: &str) -> String {
        let mut s = Parser::parse_sql(&PostgreSqlDialect {}, sql)
            .unwrap()
            .remove(0);
        name_function_columns(&mut s);
        s.to_string()
    }

    #[test]
    fn an_aliased_series_names_its_column() {
        assert_eq!(
            rewritten("SELECT g FROM generate_series(1, 3) g"),
            "SELECT g FROM generate_series(1, 3) g (g)"
        );
        assert_eq!(
            rewritten("SELECT x FROM generate_series(1, 3) AS t(x)"),
            "SELECT x FROM generate_series(1, 3) AS t (x)"
        );
        assert_eq!(rewritten("SELECT * FROM t AS g"), "SELECT * FROM t AS g");
    }
}
