//! PostgreSQL functions Brook answers by rewriting a statement into SQL DataFusion plans,
//! where the function is a lookup over the catalogs rather than a computation on values.
//!
//! `x::uuid` is `brook_uuid(x)`: a uuid is kept as its canonical text, and the cast checks
//! and canonicalises its input (DataFusion has no uuid type: "Unsupported SQL type").
//!
//! `to_regtype(name)` is `name::regtype` that yields NULL instead of an error for an unknown
//! type: the compatibility rewrites of `datafusion-pg-catalog` already turn a cast of a name
//! to `regtype` into a lookup in `pg_type` (no row: NULL), so `to_regtype` becomes that cast
//! and the same rewrite runs after it. psycopg (and through it SQLAlchemy) asks
//! `... WHERE t.oid = to_regtype($1)` when it connects.

use datafusion::sql::sqlparser::ast::{
    visit_expressions_mut, AccessExpr, CastKind, DataType, Expr, FunctionArg, FunctionArgExpr,
    FunctionArguments, Ident, ObjectName, ObjectNamePart, Query, Select, SetExpr, Statement,
    TableAlias, TableFactor, TableFunctionArgs, TimezoneInfo, Value, VisitMut, VisitorMut,
};
use datafusion_pg_catalog::sql::rules::SqlStatementRewriteRule;
use std::ops::ControlFlow;

/// Name of the table function `pg_stat_activity` becomes (registered by the server).
pub const STAT_ACTIVITY: &str = "brook_stat_activity";

/// Name of the table function `pg_stat_progress_copy` becomes (registered by the server).
pub const STAT_PROGRESS_COPY: &str = "brook_stat_progress_copy";

/// Catalog views Brook answers with table functions, as (view, function): the server's
/// connections (which the catalog tables of `datafusion-pg-catalog` do not know), and
/// Brook's own running queries and synopses.
const FUNCTION_VIEWS: [(&str, &str); 6] = [
    ("pg_stat_activity", STAT_ACTIVITY),
    ("pg_stat_progress_copy", STAT_PROGRESS_COPY),
    ("brook_continuous_queries", "brook_continuous_queries"),
    ("brook_synopses", "brook_synopses"),
    ("brook_cluster_nodes", "brook_cluster_nodes"),
    ("brook_partitions", "brook_partitions"),
];

/// `FROM pg_stat_activity` (or `pg_catalog.pg_stat_activity`) as `FROM brook_stat_activity()
/// AS pg_stat_activity`, and `FROM brook_synopses` as `FROM brook_synopses() AS
/// brook_synopses` (likewise `brook_continuous_queries`): views over table functions.
#[derive(Debug)]
pub struct StatActivityView;

impl SqlStatementRewriteRule for StatActivityView {
    fn rewrite(&self, mut s: Statement) -> Statement {
        struct Tables;
        impl VisitorMut for Tables {
            type Break = ();
            fn pre_visit_table_factor(&mut self, t: &mut TableFactor) -> ControlFlow<()> {
                if let TableFactor::Table {
                    name, args, alias, ..
                } = t
                {
                    if let (None, Some((view, function))) = (&args, function_view(name)) {
                        *name = ObjectName(vec![ObjectNamePart::Identifier(Ident::new(function))]);
                        *args = Some(TableFunctionArgs {
                            args: vec![],
                            settings: None,
                        });
                        if alias.is_none() {
                            *alias = Some(TableAlias {
                                explicit: true,
                                name: Ident::new(view),
                                columns: vec![],
                                at: None,
                            });
                        }
                    }
                }
                ControlFlow::Continue(())
            }
        }
        let _ = s.visit(&mut Tables);
        s
    }
}

/// The (view, function) `name` reads: unqualified or in `pg_catalog` (a relation of that
/// name in another schema is read when named with its schema).
fn function_view(name: &ObjectName) -> Option<(&'static str, &'static str)> {
    let parts: Vec<Option<&Ident>> = name.0.iter().map(|p| p.as_ident()).collect();
    let is = |i: &Option<&Ident>, w: &str| i.is_some_and(|i| i.value.eq_ignore_ascii_case(w));
    FUNCTION_VIEWS
        .into_iter()
        .find(|(view, _)| match parts.as_slice() {
            [t] => is(t, view),
            [s, t] => is(s, "pg_catalog") && is(t, view),
            _ => false,
        })
}

/// Whether `name` is `function`, unqualified or qualified with `schema` (either case).
pub(crate) fn names_function(name: &ObjectName, function: &str, schema: &str) -> bool {
    let parts: Vec<String> = name
        .0
        .iter()
        .filter_map(|p| p.as_ident().map(|i| i.value.to_ascii_lowercase()))
        .collect();
    match parts.as_slice() {
        [n] => n == function,
        [s, n] => n == function && s == schema,
        _ => false,
    }
}

/// Name of the function a cast to uuid becomes.
pub const UUID_CAST: &str = "brook_uuid";

/// `name(args...)`, a plain call of a function Brook registers.
pub fn function_call(name: &str, args: Vec<Expr>) -> Expr {
    Expr::Function(datafusion::sql::sqlparser::ast::Function {
        name: ObjectName(vec![ObjectNamePart::Identifier(Ident::new(name))]),
        uses_odbc_syntax: false,
        parameters: FunctionArguments::None,
        args: FunctionArguments::List(datafusion::sql::sqlparser::ast::FunctionArgumentList {
            duplicate_treatment: None,
            args: args
                .into_iter()
                .map(|e| FunctionArg::Unnamed(FunctionArgExpr::Expr(e)))
                .collect(),
            clauses: vec![],
        }),
        filter: None,
        null_treatment: None,
        over: None,
        within_group: vec![],
    })
}

/// Apply `f` to every expression of `s`, the operands of an expression before it (as
/// sqlparser's `visit_expressions_mut` walks them): what each of these rewrites does.
pub fn rewrite_expressions(s: &mut Statement, f: impl Fn(&mut Expr)) {
    let _ = visit_expressions_mut(s, |e| {
        f(e);
        ControlFlow::<()>::Continue(())
    });
}

/// Apply `f` to every SELECT of `s` (of subqueries too, each after the queries inside it,
/// and of both sides of a set operation).
pub fn rewrite_selects(s: &mut Statement, f: impl FnMut(&mut Select)) {
    struct Selects<F>(F);
    impl<F: FnMut(&mut Select)> VisitorMut for Selects<F> {
        type Break = ();
        fn post_visit_query(&mut self, q: &mut Query) -> ControlFlow<()> {
            each_select(&mut q.body, &mut self.0);
            ControlFlow::Continue(())
        }
    }
    let _ = s.visit(&mut Selects(f));
}

/// Apply `f` to each SELECT of a query body (both sides of a set operation).
pub fn each_select(body: &mut SetExpr, f: &mut dyn FnMut(&mut Select)) {
    match body {
        SetExpr::Select(s) => f(s),
        SetExpr::SetOperation { left, right, .. } => {
            each_select(left, f);
            each_select(right, f);
        }
        _ => {}
    }
}

/// Apply `f` to every expression of `e` outside its subqueries (which are queries of their
/// own scope), the operands of an expression before it.
pub fn rewrite_outside_subqueries(e: &mut Expr, f: impl FnMut(&mut Expr)) {
    struct Outside<F> {
        f: F,
        depth: usize,
    }
    impl<F: FnMut(&mut Expr)> VisitorMut for Outside<F> {
        type Break = ();
        fn pre_visit_query(&mut self, _q: &mut Query) -> ControlFlow<()> {
            self.depth += 1;
            ControlFlow::Continue(())
        }
        fn post_visit_query(&mut self, _q: &mut Query) -> ControlFlow<()> {
            self.depth -= 1;
            ControlFlow::Continue(())
        }
        fn post_visit_expr(&mut self, e: &mut Expr) -> ControlFlow<()> {
            if self.depth == 0 {
                (self.f)(e);
            }
            ControlFlow::Continue(())
        }
    }
    let _ = e.visit(&mut Outside { f, depth: 0 });
}

/// `sql` (one PostgreSQL statement) after `rewrite`, as text: what the rewrites' tests
/// compare.
#[cfg(test)]
pub(crate) fn rewritten_by(sql: &str, rewrite: impl Fn(&mut Statement)) -> String {
    let mut s = datafusion::sql::sqlparser::parser::Parser::parse_sql(
        &datafusion::sql::sqlparser::dialect::PostgreSqlDialect {},
        sql,
    )
    .unwrap()
    .remove(0);
    rewrite(&mut s);
    s.to_string()
}

/// Every `CAST(x AS uuid)` / `x::uuid` of `stmt` as `brook_uuid(x)`.
pub fn uuid_casts(stmt: &mut Statement) {
    rewrite_expressions(stmt, |expr| {
        if let Expr::Cast {
            expr: inner,
            data_type: DataType::Uuid,
            ..
        } = expr
        {
            *expr = function_call(UUID_CAST, vec![(**inner).clone()]);
        }
    });
}

/// Every `CAST(x AS time)` / `x::time` of `stmt` as `arrow_cast(x, 'Time64(Microsecond)')`
/// (and `x::time[]` as a list of those): PostgreSQL's time has microseconds, as Brook's
/// time columns do (Time64(µs)), while DataFusion's `TIME` is nanoseconds, and the two do
/// not compare (`tm = '13:45:30'::time` and a bound time parameter were 42804 "Cannot
/// infer common argument type"; `t = ANY('{01:30}'::time[])` 42883).
pub fn time_casts(stmt: &mut Statement) {
    rewrite_expressions(stmt, |expr| {
        let (value, target) = match expr {
            // `time '01:02:03'`, the typed literal
            Expr::TypedString(typed) if is_plain_time(&typed.data_type) => {
                (Expr::value(typed.value.value.clone()), TIME_TYPE)
            }
            Expr::Cast {
                kind: CastKind::Cast | CastKind::DoubleColon,
                expr: inner,
                data_type,
                format: None,
                ..
            } if is_plain_time(data_type) => ((**inner).clone(), TIME_TYPE),
            Expr::Cast {
                kind: CastKind::Cast | CastKind::DoubleColon,
                expr: inner,
                data_type:
                    DataType::Array(
                        datafusion::sql::sqlparser::ast::ArrayElemTypeDef::SquareBracket(elem, _)
                        | datafusion::sql::sqlparser::ast::ArrayElemTypeDef::AngleBracket(elem),
                    ),
                format: None,
                ..
            } if is_plain_time(elem) => {
                // `ARRAY['0130', ...]::time[]`: each element read as a time is (Arrow's
                // cast of a text list reads `0130` as a fraction of a second).
                if let Expr::Array(array) = inner.as_ref().clone() {
                    if array.elem.is_empty() {
                        *expr = time_cast_as(Expr::Array(array), "List(Time64(Microsecond))");
                        return;
                    }
                    let mut each = array;
                    for e in &mut each.elem {
                        *e = time_cast_of(e.clone());
                    }
                    *expr = Expr::Array(each);
                    return;
                }
                ((**inner).clone(), "List(Time64(Microsecond))")
            }
            _ => return,
        };
        *expr = time_cast_as(value, target);
    });
}

/// The Arrow type of a time, as `arrow_cast` names it.
pub const TIME_TYPE: &str = "Time64(Microsecond)";

/// `arrow_cast(value, 'Time64(Microsecond)')`: `value` read as a time.
pub fn time_cast_of(value: Expr) -> Expr {
    time_cast_as(value, TIME_TYPE)
}

/// `arrow_cast(value, 'target')`.
fn time_cast_as(value: Expr, target: &str) -> Expr {
    function_call(
        "arrow_cast",
        vec![
            value,
            Expr::value(datafusion::sql::sqlparser::ast::Value::SingleQuotedString(
                target.into(),
            )),
        ],
    )
}

/// `time` or `time without time zone`, without a precision.
fn is_plain_time(t: &DataType) -> bool {
    matches!(
        t,
        DataType::Time(
            None,
            datafusion::sql::sqlparser::ast::TimezoneInfo::None
                | datafusion::sql::sqlparser::ast::TimezoneInfo::WithoutTimeZone
        )
    )
}

/// Every `substring(s FROM a [FOR n])` of `stmt` as the call `substring(s, a [, n])`, so the
/// server's `substring` chooses PostgreSQL's form by the type of `a`: a position, or a
/// regular expression whose first group is returned. (DataFusion plans the SQL form as its
/// positional `substr` directly, whatever `a` is.) `substring(s FOR n)` starts at 1.
pub fn substring_calls(stmt: &mut Statement) {
    rewrite_expressions(stmt, |expr| {
        if let Expr::Substring {
            expr: text,
            substring_from,
            substring_for,
            shorthand,
            ..
        } = expr
        {
            let name = if *shorthand { "substr" } else { "substring" };
            let from = substring_from
                .as_deref()
                .cloned()
                .or_else(|| substring_for.is_some().then(|| Expr::value(number("1"))));
            let args = [
                Some((**text).clone()),
                from,
                substring_for.as_deref().cloned(),
            ];
            *expr = function_call(name, args.into_iter().flatten().collect());
        }
    });
}

fn number(digits: &str) -> datafusion::sql::sqlparser::ast::Value {
    datafusion::sql::sqlparser::ast::Value::Number(digits.to_string(), false)
}

/// Name of the function a cast to json becomes.
pub const JSON_CAST: &str = "brook_json";
/// Name of the function a cast to jsonb becomes.
pub const JSONB_CAST: &str = "brook_jsonb";

/// Every `x::json` / `x::jsonb` of `stmt` as `brook_json(x)` / `brook_jsonb(x)`: Brook keeps
/// JSON as text, and the cast checks it (22P02 for text that is not JSON) and, for jsonb,
/// prints it as PostgreSQL prints jsonb (DataFusion has no JSON type: "Unsupported SQL type").
pub fn json_casts(stmt: &mut Statement) {
    rewrite_expressions(stmt, |expr| {
        if let Expr::Cast {
            expr: inner,
            data_type,
            ..
        } = expr
        {
            let name = match data_type {
                DataType::JSON => JSON_CAST,
                DataType::JSONB => JSONB_CAST,
                _ => return,
            };
            *expr = function_call(name, vec![(**inner).clone()]);
        }
    });
}

/// Every `ts AT TIME ZONE zone` of `stmt` as `timezone(zone, ts)`, PostgreSQL's function
/// of the operator (Brook's `udf::time_zone`). DataFusion's reading, a cast to a
/// timestamp labelled with the zone, kept a timestamptz's instant and type.
pub fn at_time_zone_calls(stmt: &mut Statement) {
    rewrite_expressions(stmt, |expr| {
        if let Expr::AtTimeZone {
            timestamp,
            time_zone,
        } = expr
        {
            // An untyped literal is a timestamp with time zone, as PostgreSQL resolves it
            // (read by Brook's timestamp input: `'July 1 2024'`, `'now'`).
            let value = match timestamp.as_ref() {
                Expr::Value(v) if matches!(v.value, Value::SingleQuotedString(_)) => Expr::Cast {
                    kind: CastKind::DoubleColon,
                    expr: timestamp.clone(),
                    data_type: DataType::Timestamp(None, TimezoneInfo::WithTimeZone),
                    format: None,
                    array: false,
                },
                other => other.clone(),
            };
            *expr = function_call("timezone", vec![(**time_zone).clone(), value]);
        }
    });
}

/// Name of the function a cast to xml becomes.
pub const XML_CAST: &str = "brook_xml";

/// Every `x::xml` of `stmt` as `brook_xml(x)`: Brook keeps XML as text, and the cast checks
/// it is well-formed content (2200N) and types the value `xml` (DataFusion has no XML type:
/// "Unsupported SQL type xml").
pub fn xml_casts(stmt: &mut Statement) {
    rewrite_expressions(stmt, |expr| {
        if let Expr::Cast {
            expr: inner,
            data_type: DataType::Custom(name, args),
            ..
        } = expr
        {
            if args.is_empty() && is_named(name, "xml") {
                *expr = function_call(XML_CAST, vec![(**inner).clone()]);
            }
        }
    });
}

/// `to_regtype(x)` (or `pg_catalog.to_regtype(x)`) as `CAST(x AS regtype)`.
#[derive(Debug)]
pub struct ToRegtypeAsCast;

impl SqlStatementRewriteRule for ToRegtypeAsCast {
    fn rewrite(&self, mut s: Statement) -> Statement {
        rewrite_expressions(&mut s, |expr| {
            if let Some(arg) = to_regtype_argument(expr) {
                *expr = Expr::Cast {
                    kind: CastKind::DoubleColon,
                    expr: Box::new(arg),
                    data_type: DataType::Custom(
                        ObjectName(vec![ObjectNamePart::Identifier(Ident::new("regtype"))]),
                        vec![],
                    ),
                    array: false,
                    format: None,
                };
            }
        });
        s
    }
}

/// The function `information_schema._pg_expandarray(a)` becomes: a list of `{x, n}`
/// structs, each element with its position.
pub const EXPAND_ARRAY: &str = "brook_expandarray";

/// `information_schema._pg_expandarray(a)` — PostgreSQL's set-returning function of rows
/// `(x, n)`, each element of `a` with its 1-based position, which pgjdbc's metadata calls
/// select and read as `(…).x` and `(…).n` — as `unnest(brook_expandarray(a))`: the same
/// rows, as structs with those fields. Two calls over the same array in one select list
/// unnest in step, as PostgreSQL runs two set-returning functions.
#[derive(Debug)]
pub struct ExpandArray;

impl SqlStatementRewriteRule for ExpandArray {
    fn rewrite(&self, mut s: Statement) -> Statement {
        rewrite_expressions(&mut s, |expr| {
            let Expr::Function(f) = expr else {
                return;
            };
            let named = names_function(&f.name, "_pg_expandarray", "information_schema");
            let FunctionArguments::List(list) = &f.args else {
                return;
            };
            let [FunctionArg::Unnamed(FunctionArgExpr::Expr(array))] = list.args.as_slice() else {
                return;
            };
            if named {
                *expr = function_call(
                    "unnest",
                    vec![function_call(EXPAND_ARRAY, vec![array.clone()])],
                );
            }
        });
        s
    }
}

/// `(composite).field`, PostgreSQL's field selection (pgjdbc's `(…_pg_expandarray(…)).n`),
/// as `get_field(composite, 'field')`: DataFusion reads a dot after an expression only on
/// a column.
#[derive(Debug)]
pub struct FieldSelection;

impl SqlStatementRewriteRule for FieldSelection {
    fn rewrite(&self, mut s: Statement) -> Statement {
        rewrite_expressions(&mut s, |expr| {
            let Expr::CompoundFieldAccess { root, access_chain } = expr else {
                return;
            };
            let [AccessExpr::Dot(Expr::Identifier(field))] = access_chain.as_slice() else {
                return;
            };
            let Expr::Nested(inner) = root.as_ref() else {
                return;
            };
            let name = Expr::value(datafusion::sql::sqlparser::ast::Value::SingleQuotedString(
                field.value.to_ascii_lowercase(),
            ));
            *expr = function_call("get_field", vec![(**inner).clone(), name]);
        });
        s
    }
}

/// `generate_subscripts(a, d)` as `unnest(generate_series(1, CASE WHEN d = 1 THEN
/// cardinality(a) ELSE 0 END))`: the subscripts of a one-dimensional array (Brook's arrays
/// start at 1, as PostgreSQL's do by default), none for another dimension. SQLAlchemy and
/// pgjdbc number `pg_index.indkey`'s columns this way.
#[derive(Debug)]
pub struct GenerateSubscripts;

impl SqlStatementRewriteRule for GenerateSubscripts {
    fn rewrite(&self, mut s: Statement) -> Statement {
        rewrite_expressions(&mut s, |expr| {
            let Some((array, dimension)) = subscripts_of(expr) else {
                return;
            };
            let number = |n: &str| {
                Expr::value(datafusion::sql::sqlparser::ast::Value::Number(
                    n.into(),
                    false,
                ))
            };
            // Arrays are one-dimensional: any other dimension has no subscripts.
            let upper = Expr::Case {
                case_token:
                    datafusion::sql::sqlparser::ast::helpers::attached_token::AttachedToken::empty(),
                end_token:
                    datafusion::sql::sqlparser::ast::helpers::attached_token::AttachedToken::empty(),
                operand: None,
                conditions: vec![datafusion::sql::sqlparser::ast::CaseWhen {
                    condition: Expr::BinaryOp {
                        left: Box::new(dimension),
                        op: datafusion::sql::sqlparser::ast::BinaryOperator::Eq,
                        right: Box::new(number("1")),
                    },
                    result: function_call("cardinality", vec![array]),
                }],
                else_result: Some(Box::new(number("0"))),
            };
            let upper = Expr::Cast {
                kind: CastKind::Cast,
                expr: Box::new(upper),
                data_type: DataType::BigInt(None),
                array: false,
                format: None,
            };
            *expr = function_call(
                "unnest",
                vec![function_call("generate_series", vec![number("1"), upper])],
            );
        });
        s
    }
}

/// `pg_get_serial_sequence(table, column)::regclass` as an integer NULL. The compatibility
/// rewrite of a `::regclass` cast looks up names written in the statement; this one names a
/// sequence computed per row of a catalog query (SQLAlchemy's column reflection asks it, in
/// a correlated subquery, for the options of identity columns), which DataFusion cannot
/// plan. Folded, the subquery is not correlated and the identity options read as NULL (the
/// column reflects as an autoincrementing one). A direct call of `pg_get_serial_sequence`
/// is left to the server's function, which answers from the catalog.
#[derive(Debug)]
pub struct SerialSequenceIsNull;

impl SqlStatementRewriteRule for SerialSequenceIsNull {
    fn rewrite(&self, mut s: Statement) -> Statement {
        rewrite_expressions(&mut s, |expr| {
            if serial_sequence_as_regclass(expr) {
                *expr = Expr::Cast {
                    kind: CastKind::Cast,
                    expr: Box::new(Expr::value(datafusion::sql::sqlparser::ast::Value::Null)),
                    data_type: DataType::Integer(None),
                    array: false,
                    format: None,
                };
            }
        });
        s
    }
}

/// `nextval('name'::regclass)` (and `currval`, `setval`) as `nextval('name')`: the server's
/// sequence functions take the name and resolve it themselves. Left as it was, the cast
/// would become a `pg_class` subquery, which a column DEFAULT (evaluated per row while
/// rows are written) cannot run. `::regclass` is what PostgreSQL shows in a SERIAL
/// column's default and what pg_dump writes.
#[derive(Debug)]
pub struct SequenceNameArguments;

impl SqlStatementRewriteRule for SequenceNameArguments {
    fn rewrite(&self, mut s: Statement) -> Statement {
        rewrite_expressions(&mut s, |expr| {
            let Some((name, _)) = pg_call(expr) else {
                return;
            };
            if !matches!(name.as_str(), "nextval" | "currval" | "setval") {
                return;
            }
            let Expr::Function(f) = expr else {
                return;
            };
            let FunctionArguments::List(list) = &mut f.args else {
                return;
            };
            if let Some(FunctionArg::Unnamed(FunctionArgExpr::Expr(first))) = list.args.first_mut()
            {
                if let Expr::Cast {
                    expr: inner,
                    data_type: DataType::Regclass,
                    ..
                } = first
                {
                    *first = inner.as_ref().clone();
                } else if let Expr::Cast {
                    expr: inner,
                    data_type: DataType::Custom(t, _),
                    ..
                } = first
                {
                    if is_named(t, "regclass") {
                        *first = inner.as_ref().clone();
                    }
                }
            }
        });
        s
    }
}

fn is_named(name: &ObjectName, wanted: &str) -> bool {
    name.0
        .last()
        .and_then(|p| p.as_ident())
        .is_some_and(|i| i.value.eq_ignore_ascii_case(wanted))
}

/// True for `CAST(pg_get_serial_sequence(t, c) AS regclass)`.
fn serial_sequence_as_regclass(expr: &Expr) -> bool {
    let Expr::Cast {
        expr: inner,
        data_type,
        ..
    } = expr
    else {
        return false;
    };
    let regclass = match data_type {
        DataType::Regclass => true,
        DataType::Custom(name, _) => is_named(name, "regclass"),
        _ => false,
    };
    regclass
        && pg_call(inner).is_some_and(|(n, args)| n == "pg_get_serial_sequence" && args.len() == 2)
}

/// The array and dimension of a `generate_subscripts(array, dimension)` call.
fn subscripts_of(expr: &Expr) -> Option<(Expr, Expr)> {
    let Expr::Function(f) = expr else {
        return None;
    };
    let name = f.name.0.last()?.as_ident()?;
    if !name.value.eq_ignore_ascii_case("generate_subscripts") {
        return None;
    }
    let FunctionArguments::List(list) = &f.args else {
        return None;
    };
    match list.args.as_slice() {
        [FunctionArg::Unnamed(FunctionArgExpr::Expr(a)), FunctionArg::Unnamed(FunctionArgExpr::Expr(d))] => {
            Some((a.clone(), d.clone()))
        }
        _ => None,
    }
}

/// The argument of a one-argument `to_regtype` call.
fn to_regtype_argument(expr: &Expr) -> Option<Expr> {
    match pg_call(expr)? {
        (name, [FunctionArg::Unnamed(FunctionArgExpr::Expr(e))]) if name == "to_regtype" => {
            Some(e.clone())
        }
        _ => None,
    }
}

/// A call of a PostgreSQL function, unqualified or qualified by `pg_catalog`, with an
/// argument list: its lower-case name and its arguments.
pub fn pg_call(expr: &Expr) -> Option<(String, &[FunctionArg])> {
    let Expr::Function(f) = expr else {
        return None;
    };
    let qualifier_ok = match f.name.0.len() {
        1 => true,
        2 => f.name.0[0]
            .as_ident()
            .is_some_and(|q| q.value.eq_ignore_ascii_case("pg_catalog")),
        _ => false,
    };
    if !qualifier_ok {
        return None;
    }
    let name = f.name.0.last()?.as_ident()?.value.to_ascii_lowercase();
    let FunctionArguments::List(list) = &f.args else {
        return None;
    };
    Some((name, list.args.as_slice()))
}

#[cfg(test)]
mod tests {
    use crate::parser::parse_one;

    fn sql(text: &str) -> String {
        parse_one(text).unwrap().as_sql().unwrap().to_string()
    }

    #[test]
    fn generate_subscripts_becomes_unnest_of_a_series() {
        assert_eq!(
            sql("SELECT generate_subscripts(i.indkey, 1) AS ord FROM t AS i"),
            "SELECT unnest(generate_series(1, CAST(CASE WHEN 1 = 1 THEN cardinality(i.indkey) ELSE 0 END AS BIGINT))) AS ord FROM t AS i"
        );
    }

    #[test]
    fn to_regtype_becomes_a_pg_type_lookup() {
        let out = sql("SELECT typname FROM pg_type t WHERE t.oid = to_regtype('hstore')");
        assert!(
            out.contains("SELECT oid FROM pg_catalog.pg_type WHERE typname = 'hstore'"),
            "{out}"
        );
        let out = sql("SELECT pg_catalog.to_regtype($1)");
        assert!(out.contains("WHERE typname = $1"), "{out}");
        // pg_stat_activity reads the server's connections.
        let out = sql("SELECT pid, state FROM pg_catalog.pg_stat_activity WHERE pid <> 1");
        assert_eq!(
            out,
            "SELECT pid, state FROM brook_stat_activity() AS pg_stat_activity WHERE pid <> 1"
        );
        // Other functions of that name shape are left alone.
        assert_eq!(sql("SELECT to_regtypes('a')"), "SELECT to_regtypes('a')");
    }

    #[test]
    fn sequence_functions_take_the_name_of_a_regclass_cast() {
        assert_eq!(
            sql("SELECT nextval('public.t_id_seq'::regclass), pg_catalog.setval('s'::pg_catalog.regclass, 5, false)"),
            "SELECT nextval('public.t_id_seq'), setval('s', 5, false)"
        );
        assert_eq!(
            sql("SELECT pg_get_serial_sequence('t', 'id'), pg_get_serial_sequence('t', 'id')::regclass"),
            "SELECT pg_get_serial_sequence('t', 'id'), CAST(NULL AS INTEGER)"
        );
    }
}
