//! `FROM generate_series(1, 3) g`: a function returning one column (`generate_series`,
//! `range`, `unnest` of one array), aliased without a column list, names its column after
//! the alias, as PostgreSQL does (`SELECT g FROM generate_series(1, 3) g`). DataFusion
//! keeps the function's own column name (`value`), so `g` was 42703. The alias gets its
//! column list: `AS g(g)`; an unaliased call is named after the function, `AS
//! generate_series(generate_series)`, as PostgreSQL names it.
//!
//! `FROM string_to_array(current_setting('search_path'), ',') s`: a scalar function in
//! FROM is, in PostgreSQL, a one-row relation whose column is named after the alias
//! (Grafana's schema lists read the search path so). DataFusion looks such a name up among
//! table functions only; the call becomes `(SELECT f(...) AS s) AS s`. Only the scalar
//! functions listed here are rewritten: a name that may be a table function (Brook's
//! window functions, `unnest`, user ones) is left as it is.

use datafusion::sql::sqlparser::ast::{
    Ident, ObjectName, SetExpr, Statement, TableAlias, TableAliasColumnDef, TableFactor, VisitMut,
    VisitorMut,
};
use datafusion::sql::sqlparser::dialect::PostgreSqlDialect;
use datafusion::sql::sqlparser::parser::Parser;
use std::ops::ControlFlow;

/// The table functions that return one column.
const ONE_COLUMN: [&str; 2] = ["generate_series", "range"];

/// Scalar functions clients call in FROM.
const SCALAR_IN_FROM: [&str; 5] = [
    "current_schemas",
    "current_setting",
    "split_part",
    "string_to_array",
    "trim",
];

/// Give each such aliased call its column name.
pub fn name_function_columns(stmt: &mut Statement) {
    let _ = stmt.visit(&mut Functions);
}

struct Functions;

impl VisitorMut for Functions {
    type Break = ();

    fn pre_visit_table_factor(&mut self, t: &mut TableFactor) -> ControlFlow<()> {
        if let Some(derived) = scalar_call_as_relation(t) {
            *t = derived;
            return ControlFlow::Continue(());
        }
        // `f(args)` unaliased: named after the function, as `f(args) AS f`.
        match t {
            TableFactor::Table {
                name,
                args: Some(args),
                alias: alias @ None,
                ..
            } => *alias = function_alias(name, args.args.len()),
            TableFactor::Function {
                name,
                args,
                alias: alias @ None,
                ..
            } => *alias = function_alias(name, args.len()),
            TableFactor::UNNEST {
                alias: alias @ None,
                array_exprs,
                with_offset: false,
                with_ordinality: false,
                ..
            } if array_exprs.len() == 1 => *alias = Some(named("unnest")),
            _ => {}
        }
        // `f(args) a` and `LATERAL f(args) a`.
        match t {
            TableFactor::Table {
                name,
                args: Some(args),
                alias: Some(alias),
                ..
            } => name_the_column(name, args.args.len(), alias),
            TableFactor::Function {
                name,
                args,
                alias: Some(alias),
                ..
            } => name_the_column(name, args.len(), alias),
            // `unnest(a) u`: sqlparser's own table factor.
            TableFactor::UNNEST {
                alias: Some(alias),
                array_exprs,
                with_offset: false,
                with_ordinality: false,
                ..
            } if array_exprs.len() == 1 && alias.columns.is_empty() => {
                alias.columns = vec![TableAliasColumnDef {
                    name: alias.name.clone(),
                    data_type: None,
                }];
            }
            _ => {}
        }
        ControlFlow::Continue(())
    }
}

/// The name of a one-column function (of `arguments` arguments), lower case.
fn one_column_function(function: &ObjectName, arguments: usize) -> Option<String> {
    let name = function.0.last()?.as_ident()?.value.to_ascii_lowercase();
    // `LATERAL unnest(a)` returns one column; `unnest(a, b)` one per array.
    (ONE_COLUMN.contains(&name.as_str()) || (name == "unnest" && arguments == 1)).then_some(name)
}

/// The alias PostgreSQL gives an unaliased call of a one-column function: its name, for
/// the relation and its column (`SELECT * FROM generate_series(1, 3)` shows a column
/// `generate_series`; DataFusion's was `value`).
fn function_alias(function: &ObjectName, arguments: usize) -> Option<TableAlias> {
    one_column_function(function, arguments).map(|name| named(&name))
}

/// `AS name(name)`.
fn named(name: &str) -> TableAlias {
    TableAlias {
        explicit: true,
        name: Ident::new(name),
        columns: vec![TableAliasColumnDef {
            name: Ident::new(name),
            data_type: None,
        }],
        at: None,
    }
}

/// `AS a` of a one-column function (of `arguments` arguments) as `AS a(a)`.
fn name_the_column(function: &ObjectName, arguments: usize, alias: &mut TableAlias) {
    let one_column = one_column_function(function, arguments).is_some();
    if one_column && alias.columns.is_empty() {
        alias.columns = vec![TableAliasColumnDef {
            name: alias.name.clone(),
            data_type: None,
        }];
    }
}

/// `f(args) [AS] a` of a scalar function as the derived table `(SELECT f(args) AS a) AS a`.
fn scalar_call_as_relation(t: &TableFactor) -> Option<TableFactor> {
    let TableFactor::Table {
        name,
        args: Some(args),
        alias,
        ..
    } = t
    else {
        return None;
    };
    let [function] = name.0.as_slice() else {
        return None;
    };
    let function = function.as_ident()?.value.to_ascii_lowercase();
    if !SCALAR_IN_FROM.contains(&function.as_str()) {
        return None;
    }
    let (table, column) = match alias {
        Some(a) => (
            a.name.clone(),
            a.columns
                .first()
                .map_or_else(|| a.name.clone(), |c| c.name.clone()),
        ),
        None => (Ident::new(&function), Ident::new(&function)),
    };
    let call = format!(
        "{function}({})",
        args.args
            .iter()
            .map(|a| a.to_string())
            .collect::<Vec<_>>()
            .join(", ")
    );
    from_item(&format!("(SELECT {call} AS {column}) AS {table}"))
}

/// The FROM item `text` (`(SELECT ...) AS t`), parsed.
pub(crate) fn from_item(text: &str) -> Option<TableFactor> {
    let sql = format!("SELECT * FROM {text}");
    let mut parsed = Parser::parse_sql(&PostgreSqlDialect {}, &sql).ok()?;
    let Some(Statement::Query(q)) = parsed.pop() else {
        return None;
    };
    let SetExpr::Select(select) = *q.body else {
        return None;
    };
    select.from.into_iter().next().map(|from| from.relation)
}

#[cfg(test)]
mod tests {
    use super::*;

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
            rewritten("SELECT * FROM LATERAL generate_series(1, 2) s"),
            "SELECT * FROM LATERAL generate_series(1, 2) s (s)"
        );
        assert_eq!(
            rewritten("SELECT x FROM generate_series(1, 3) AS t(x)"),
            "SELECT x FROM generate_series(1, 3) AS t (x)"
        );
        assert_eq!(rewritten("SELECT * FROM t AS g"), "SELECT * FROM t AS g");
        assert_eq!(
            rewritten("SELECT u FROM unnest(ARRAY[3, 1]) u"),
            "SELECT u FROM UNNEST(ARRAY[3, 1]) u (u)"
        );
        assert_eq!(
            rewritten("SELECT * FROM unnest(ARRAY[1], ARRAY[2]) u"),
            "SELECT * FROM UNNEST(ARRAY[1], ARRAY[2]) u"
        );
    }

    #[test]
    fn an_unaliased_series_is_named_after_its_function() {
        assert_eq!(
            rewritten("SELECT * FROM generate_series(1, 3)"),
            "SELECT * FROM generate_series(1, 3) AS generate_series (generate_series)"
        );
        assert_eq!(
            rewritten("SELECT * FROM pg_catalog.generate_series(1, 3)"),
            "SELECT * FROM pg_catalog.generate_series(1, 3) AS generate_series (generate_series)"
        );
        assert_eq!(
            rewritten("SELECT * FROM unnest(ARRAY[3, 1])"),
            "SELECT * FROM UNNEST(ARRAY[3, 1]) AS unnest (unnest)"
        );
        // Several columns, or WITH ORDINALITY: left as they are.
        assert_eq!(
            rewritten("SELECT * FROM unnest(ARRAY[1], ARRAY[2])"),
            "SELECT * FROM UNNEST(ARRAY[1], ARRAY[2])"
        );
        assert_eq!(rewritten("SELECT * FROM t"), "SELECT * FROM t");
    }

    #[test]
    fn a_scalar_function_in_from_is_a_one_row_relation() {
        assert_eq!(
            rewritten("SELECT s[1] FROM string_to_array('a,b', ',') s"),
            "SELECT s[1] FROM (SELECT string_to_array('a,b', ',') AS s) AS s"
        );
        assert_eq!(
            rewritten("SELECT x FROM current_setting('search_path') AS p(x)"),
            "SELECT x FROM (SELECT current_setting('search_path') AS x) AS p"
        );
        // table functions stay
        assert_eq!(
            rewritten("SELECT * FROM generate_subscripts(a, 1) u"),
            "SELECT * FROM generate_subscripts(a, 1) u"
        );
    }
}
