//! The names of a query's result columns as PostgreSQL gives them (`FigureColname`), and
//! the internal aliases DataFusion needs where PostgreSQL allows duplicate names, which
//! the wire layer shows by their PostgreSQL names.

use datafusion::sql::sqlparser::ast::{
    AccessExpr, DataType, Expr, Ident, OrderByKind, Select, SelectItem, SetExpr, Statement, Value,
};

/// How one output column of a query is named on the wire.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OutputName {
    /// Keep the planner's name (plain columns, aliased expressions).
    Keep,
    /// PostgreSQL's name for an unaliased expression (`?column?`, `count`, `int4`, ...).
    Name(String),
    /// A `*` or `t.*`, expanding to an unknown number of kept names.
    Wildcard,
}

/// PostgreSQL's output column names of a query's select list (its leftmost SELECT for set
/// operations), as `FigureColname` computes them; `None` when the statement is not a query.
pub fn output_names(stmt: &Statement) -> Option<Vec<OutputName>> {
    let Statement::Query(q) = stmt else {
        return None;
    };
    let select = leftmost_select(&q.body)?;
    Some(
        select
            .projection
            .iter()
            .map(|item| match item {
                SelectItem::UnnamedExpr(e) => match e {
                    Expr::Identifier(_) | Expr::CompoundIdentifier(_)
                        if repeats_earlier_column(&select.projection, item) =>
                    {
                        OutputName::Name(figure_colname(e).unwrap_or_else(|| "?column?".into()))
                    }
                    Expr::Identifier(_) | Expr::CompoundIdentifier(_) => OutputName::Keep,
                    other => {
                        OutputName::Name(figure_colname(other).unwrap_or_else(|| "?column?".into()))
                    }
                },
                SelectItem::Wildcard(_) | SelectItem::QualifiedWildcard(..) => OutputName::Wildcard,
                // `SELECT 1 AS a, 2 AS a`: the second was shown as `__brook_col_1`.
                SelectItem::ExprWithAlias { alias, .. }
                    if repeats_earlier_alias(&select.projection, item) =>
                {
                    OutputName::Name(folded(alias))
                }
                _ => OutputName::Keep,
            })
            .collect(),
    )
}

fn leftmost_select(body: &SetExpr) -> Option<&Select> {
    match body {
        SetExpr::Select(s) => Some(s),
        SetExpr::SetOperation { left, .. } => leftmost_select(left),
        SetExpr::Query(q) => leftmost_select(&q.body),
        _ => None,
    }
}

/// The functions array operators become (`crate::array_operators`, and the compatibility
/// parser's `= ANY`), none of them a PostgreSQL function.
const ARRAY_OPERATOR_FUNCTIONS: [&str; 3] = ["array_has_all", "array_has_any", "array_contains"];

/// The name PostgreSQL gives an unaliased expression, `None` for `?column?`.
pub(crate) fn figure_colname(e: &Expr) -> Option<String> {
    match e {
        Expr::Identifier(i) => Some(norm(i)),
        Expr::CompoundIdentifier(parts) => parts.last().map(norm),
        Expr::Function(f) if rewritten_set_returning(f).is_some() => rewritten_set_returning(f),
        // `localtimestamp`, `current_timestamp(0)` as `current_times` rewrote them: the
        // function's name is the call's third argument.
        Expr::Function(f) if named_time_function(f).is_some() => named_time_function(f),
        // An operator the statement rewrite made a function call (`j -> 'a'`, `a @> b`,
        // `x = ANY (arr)`).
        Expr::Function(f)
            if f.name.0.last().and_then(|p| p.as_ident()).is_some_and(|i| {
                crate::json_ops::OPERATOR_FUNCTIONS.contains(&i.value.as_str())
                    || ARRAY_OPERATOR_FUNCTIONS.contains(&i.value.as_str())
            }) =>
        {
            None
        }
        Expr::Function(f) => f.name.0.last().and_then(|p| p.as_ident()).map(|i| {
            let n = norm(i);
            match n.as_str() {
                "trim" => "btrim".to_string(),
                // `EXTRACT` and `date_part` as `extract_numeric` named them.
                crate::extract_numeric::EXTRACT => "extract".to_string(),
                crate::extract_numeric::DATE_PART => "date_part".to_string(),
                _ => n,
            }
        }),
        // A cast of a constant (or of a cast of one) is named after its type, a cast of
        // anything else after that thing, as FigureColname weighs names.
        Expr::Cast {
            expr, data_type, ..
        } => match figure_colname(crate::string_casts::unwrapped(expr)) {
            Some(name) if !names_a_constant(crate::string_casts::unwrapped(expr)) => Some(name),
            _ => Some(type_colname(data_type)),
        },
        Expr::TypedString(ts) => Some(type_colname(&ts.data_type)),
        Expr::Nested(inner) => figure_colname(inner),
        // `v[1]` is named after `v`, `(r).f` after `f`.
        Expr::CompoundFieldAccess { root, access_chain } => match access_chain.last() {
            Some(AccessExpr::Dot(field)) => figure_colname(field),
            _ => figure_colname(root),
        },
        Expr::Case { .. } => Some("case".into()),
        // PostgreSQL reads TRUE/FALSE as 't'::bool / 'f'::bool
        Expr::Value(v) if matches!(v.value, Value::Boolean(_)) => Some("bool".into()),
        Expr::Exists { .. } => Some("exists".into()),
        Expr::Subquery(q) => {
            let s = leftmost_select(&q.body)?;
            match s.projection.first()? {
                SelectItem::UnnamedExpr(e) => figure_colname(e),
                SelectItem::ExprWithAlias { alias, .. } => Some(norm(alias)),
                _ => None,
            }
        }
        Expr::Array(_) => Some("array".into()),
        Expr::Interval(_) => Some("interval".into()),
        Expr::Extract { .. } => Some("extract".into()),
        Expr::Substring {
            shorthand: true, ..
        } => Some("substr".into()),
        Expr::Substring { .. } => Some("substring".into()),
        Expr::Trim { .. } => Some("btrim".into()),
        Expr::Position { .. } => Some("position".into()),
        Expr::Ceil { .. } => Some("ceil".into()),
        Expr::Floor { .. } => Some("floor".into()),
        Expr::Overlay { .. } => Some("overlay".into()),
        _ => None,
    }
}

/// The SQL function a `brook_time_precision(value, p, 'name')` call stands for.
fn named_time_function(f: &datafusion::sql::sqlparser::ast::Function) -> Option<String> {
    use datafusion::sql::sqlparser::ast::{FunctionArg, FunctionArgExpr, FunctionArguments};
    let name = f.name.0.last()?.as_ident()?;
    if name.value != crate::time_precision::TIME_PRECISION {
        return None;
    }
    let FunctionArguments::List(list) = &f.args else {
        return None;
    };
    match list.args.get(2)? {
        FunctionArg::Unnamed(FunctionArgExpr::Expr(Expr::Value(v))) => match &v.value {
            Value::SingleQuotedString(s) => Some(s.clone()),
            _ => None,
        },
        _ => None,
    }
}

/// The set-returning function a call `unnest(brook_...(args))` was rewritten from
/// ([`crate::set_returning`]), by which PostgreSQL names the column (`(regexp_matches(s,
/// p))[1]` is `regexp_matches`). Only Brook's own array functions are mapped back: a
/// user's `unnest(string_to_array(...))` is named `unnest`. (Set-returning calls in a
/// select list are rewritten when the statement is parsed, before it is named.)
fn rewritten_set_returning(f: &datafusion::sql::sqlparser::ast::Function) -> Option<String> {
    use datafusion::sql::sqlparser::ast::{FunctionArg, FunctionArgExpr, FunctionArguments};
    let outer = f.name.0.last()?.as_ident()?;
    if !outer.value.eq_ignore_ascii_case("unnest") {
        return None;
    }
    let FunctionArguments::List(list) = &f.args else {
        return None;
    };
    let [FunctionArg::Unnamed(FunctionArgExpr::Expr(Expr::Function(inner)))] = list.args.as_slice()
    else {
        return None;
    };
    let inner = inner.name.0.last()?.as_ident()?.value.to_ascii_lowercase();
    // One name only where a single function has that array function (json and jsonb
    // share theirs).
    let mut from = crate::set_returning::SET_RETURNING
        .iter()
        .filter(|srf| srf.array_function.starts_with("brook_") && srf.array_function == inner);
    match (from.next(), from.next()) {
        (Some(srf), None) => Some(srf.name.to_string()),
        _ => None,
    }
}

/// Whether `e` is a constant whose name is only its type's (`'x'::date`, `TRUE`,
/// `interval '1 day'`, and casts of these).
fn names_a_constant(e: &Expr) -> bool {
    match e {
        Expr::TypedString(_) | Expr::Interval(_) => true,
        Expr::Value(v) => matches!(v.value, Value::Boolean(_)),
        Expr::Cast { expr, .. } => names_a_constant(expr) || figure_colname(expr).is_none(),
        Expr::Nested(inner) => names_a_constant(inner),
        _ => false,
    }
}

use brook_common::ident::ident_name as norm;

/// PostgreSQL's internal type name, used as the column name of a bare cast.
fn type_colname(t: &DataType) -> String {
    use DataType as T;
    match t {
        T::Int(_) | T::Integer(_) | T::Int4(_) => "int4",
        T::SmallInt(_) | T::Int2(_) => "int2",
        T::BigInt(_) | T::Int8(_) => "int8",
        T::Real | T::Float4 => "float4",
        T::Double(_) | T::DoublePrecision | T::Float8 | T::Float(_) => "float8",
        T::Numeric(_) | T::Decimal(_) | T::Dec(_) => "numeric",
        T::Bool | T::Boolean => "bool",
        T::Text | T::String(_) => "text",
        T::Varchar(_) | T::CharacterVarying(_) | T::CharVarying(_) => "varchar",
        T::Char(_) | T::Character(_) => "bpchar",
        T::Date => "date",
        T::Time(..) => "time",
        T::Timestamp(_, tz) => match tz {
            datafusion::sql::sqlparser::ast::TimezoneInfo::WithTimeZone
            | datafusion::sql::sqlparser::ast::TimezoneInfo::Tz => "timestamptz",
            _ => "timestamp",
        },
        T::Interval { .. } => "interval",
        T::Bytea => "bytea",
        T::JSON => "json",
        T::JSONB => "jsonb",
        T::Uuid => "uuid",
        other => return other.to_string().to_lowercase(),
    }
    .to_string()
}

/// The prefix of an internal alias the wire layer shows without it: an output named as a
/// qualified column beside it (`SELECT x + 1 AS k, a.k`: DataFusion refuses an unqualified
/// `k` beside `a.k` as ambiguous, PostgreSQL shows both as `k`). It is the prefix
/// datafusion-pg-catalog's `AliasDuplicatedProjectionRewrite` gives a column beside a `*`.
pub const INTERNAL_ALIAS: &str = "__alias_";

/// Apply [`output_names`] to a planned result schema (fields matched by position; a single
/// `*` absorbs the columns the named items do not account for).
pub fn rename_output(
    schema: &datafusion::arrow::datatypes::Schema,
    names: &[OutputName],
) -> datafusion::arrow::datatypes::SchemaRef {
    use datafusion::arrow::datatypes::Schema;
    use std::sync::Arc;
    let n = schema.fields().len();
    let mut fields: Vec<_> = schema.fields().iter().cloned().collect();
    // The names before the first `*` apply from the front, those after the last from the
    // back; between two `*` only kept names can stand (`SELECT a.*, b.*`).
    let first = names.iter().position(|n| *n == OutputName::Wildcard);
    let last = names.iter().rposition(|n| *n == OutputName::Wildcard);
    let (front, back) = match (first, last) {
        (Some(f), Some(l)) => (&names[..f], &names[l + 1..]),
        _ => (names, &names[names.len()..]),
    };
    let between_kept = match (first, last) {
        (Some(f), Some(l)) => names[f..=l]
            .iter()
            .all(|n| matches!(n, OutputName::Wildcard | OutputName::Keep)),
        _ => true,
    };
    let fits = if first.is_none() {
        names.len() == n
    } else {
        front.len() + back.len() <= n
    };
    if fits && between_kept {
        let positions = (0..front.len()).chain(n - back.len()..n);
        for (i, name) in positions.zip(front.iter().chain(back)) {
            if let OutputName::Name(s) = name {
                fields[i] = Arc::new(fields[i].as_ref().clone().with_name(s));
            }
        }
    }
    // An output beside a qualified column of its name (see `INTERNAL_ALIAS`).
    for f in fields.iter_mut() {
        if let Some(name) = f.name().strip_prefix(INTERNAL_ALIAS) {
            *f = Arc::new(f.as_ref().clone().with_name(name));
        }
    }
    Arc::new(Schema::new_with_metadata(fields, schema.metadata().clone()))
}

/// Give every unaliased expression of a query's outer select list(s) a unique internal alias.
///
/// PostgreSQL allows duplicate output names (`SELECT count(*), count(*)`); DataFusion
/// requires unique ones. The wire layer names the columns as PostgreSQL does (see
/// [`output_names`] and [`rename_output`]), so the internal aliases are never seen.
pub fn alias_outputs(stmt: &mut Statement) {
    match stmt {
        Statement::Query(q) => {
            if let SetExpr::Select(s) = q.body.as_mut() {
                let renamed = alias_beside_qualified(s);
                if let Some(OrderByKind::Expressions(exprs)) =
                    q.order_by.as_mut().map(|o| &mut o.kind)
                {
                    for o in exprs {
                        if let Expr::Identifier(i) = &o.expr {
                            if let Some((_, to)) =
                                renamed.iter().find(|(from, _)| same_name(from, i))
                            {
                                o.expr = Expr::Identifier(to.clone());
                            }
                        }
                    }
                }
            }
            alias_set_expr(&mut q.body)
        }
        // `INSERT INTO t SELECT i, i ...`: the rows go to the columns by position.
        Statement::Insert(insert) => {
            if let Some(source) = &mut insert.source {
                alias_set_expr(&mut source.body);
            }
        }
        _ => {}
    }
}

/// Two names alike as PostgreSQL folds them (quoted ones as written).
fn same_name(a: &Ident, b: &Ident) -> bool {
    folded(a) == folded(b)
}

/// A name as PostgreSQL folds it: lower case unless quoted.
pub(crate) fn folded(x: &Ident) -> String {
    if x.quote_style.is_some() {
        x.value.clone()
    } else {
        x.value.to_lowercase()
    }
}

/// The aliases of a query's outer select list that a qualified column of the same list
/// also has (`SELECT x + 1 AS k, a.k`) renamed to internal ones (see [`INTERNAL_ALIAS`]);
/// returns the renames, for an ORDER BY that names the output.
fn alias_beside_qualified(s: &mut Select) -> Vec<(Ident, Ident)> {
    let qualified: Vec<Ident> = s
        .projection
        .iter()
        .filter_map(|item| match item {
            SelectItem::UnnamedExpr(Expr::CompoundIdentifier(parts)) if parts.len() > 1 => {
                parts.last().cloned()
            }
            _ => None,
        })
        .collect();
    let mut renamed = Vec::new();
    for item in s.projection.iter_mut() {
        if let SelectItem::ExprWithAlias { alias, .. } = item {
            if qualified.iter().any(|q| same_name(q, alias))
                && !alias.value.starts_with(INTERNAL_ALIAS)
            {
                let to = Ident::with_quote('"', format!("{INTERNAL_ALIAS}{}", folded(alias)));
                renamed.push((alias.clone(), to.clone()));
                *alias = to;
            }
        }
    }
    renamed
}

/// True when `item` is a plain column whose name an earlier plain column of `projection`
/// already has (`SELECT i, i`, `SELECT a.k, b.k`): PostgreSQL names both alike, DataFusion
/// needs them apart.
fn repeats_earlier_column(projection: &[SelectItem], item: &SelectItem) -> bool {
    let column = |it: &SelectItem| match it {
        SelectItem::UnnamedExpr(e @ (Expr::Identifier(_) | Expr::CompoundIdentifier(_))) => {
            figure_colname(e)
        }
        _ => None,
    };
    let Some(name) = column(item) else {
        return false;
    };
    projection
        .iter()
        .take_while(|other| !std::ptr::eq(*other, item))
        .any(|other| column(other).as_deref() == Some(name.as_str()))
}

/// True when `item` has an alias an earlier aliased output of `projection` already has
/// (`SELECT 1 AS a, 2 AS a`).
fn repeats_earlier_alias(projection: &[SelectItem], item: &SelectItem) -> bool {
    let SelectItem::ExprWithAlias { alias, .. } = item else {
        return false;
    };
    projection
        .iter()
        .take_while(|other| !std::ptr::eq(*other, item))
        .any(|other| {
            matches!(other, SelectItem::ExprWithAlias { alias: a, .. }
                if a.value.eq_ignore_ascii_case(&alias.value))
        })
}

fn alias_set_expr(body: &mut SetExpr) {
    match body {
        SetExpr::Select(s) => {
            // `SELECT 1 AS a, 2 AS a`: an alias an earlier output already has.
            let repeated: Vec<bool> = s
                .projection
                .iter()
                .map(|item| repeats_earlier_alias(&s.projection, item))
                .collect();
            for (i, item) in s.projection.iter_mut().enumerate() {
                if let (true, SelectItem::ExprWithAlias { alias, .. }) = (repeated[i], item) {
                    *alias = datafusion::sql::sqlparser::ast::Ident::with_quote(
                        '"',
                        format!("__brook_col_{i}"),
                    );
                }
            }
            let repeated: Vec<bool> = s
                .projection
                .iter()
                .map(|item| repeats_earlier_column(&s.projection, item))
                .collect();
            for (i, item) in s.projection.iter_mut().enumerate() {
                if let SelectItem::UnnamedExpr(e) = item {
                    if repeated[i]
                        || !matches!(e, Expr::Identifier(_) | Expr::CompoundIdentifier(_))
                    {
                        let expr = std::mem::replace(e, Expr::value(Value::Null));
                        *item = SelectItem::ExprWithAlias {
                            expr,
                            alias: datafusion::sql::sqlparser::ast::Ident::with_quote(
                                '"',
                                format!("__brook_col_{i}"),
                            ),
                        };
                    }
                }
            }
        }
        SetExpr::SetOperation { left, right, .. } => {
            alias_set_expr(left);
            alias_set_expr(right);
        }
        SetExpr::Query(q) => alias_set_expr(&mut q.body),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::statement as stmt;

    #[test]
    fn names_like_postgres() {
        let names = output_names(&stmt("select 1, a, count(*), 'x'::text, b::int, 1 + 2 as s, *, CASE WHEN true THEN 1 END from t")).unwrap();
        assert_eq!(
            names,
            vec![
                OutputName::Name("?column?".into()),
                OutputName::Keep,
                OutputName::Name("count".into()),
                OutputName::Name("text".into()),
                OutputName::Name("b".into()),
                OutputName::Keep,
                OutputName::Wildcard,
                OutputName::Name("case".into()),
            ]
        );
    }

    #[test]
    fn casts_of_constants_are_named_after_the_outer_type() {
        let names = output_names(&stmt("select timestamp '2020-01-01'::text, true::text, interval '1 day'::text, (1 + 2)::int::text, b::int::text, now()::date from t")).unwrap();
        let named = |n: &str| OutputName::Name(n.into());
        assert_eq!(
            names,
            vec![
                named("text"),
                named("text"),
                named("text"),
                named("text"),
                named("b"),
                named("now")
            ]
        );
    }

    #[test]
    fn casts_with_a_length_are_named_as_postgresql_names_them() {
        use datafusion_pg_catalog::sql::rules::SqlStatementRewriteRule;
        // Parsed with the rewrites applied, and once more: the rule applies once.
        let s = crate::string_casts::StringLengthCasts.rewrite(stmt(
            "select 'abcdef'::varchar(3), b::char(2), b::varchar(2)::text from t",
        ));
        let named = |n: &str| OutputName::Name(n.into());
        assert_eq!(
            output_names(&s).unwrap(),
            vec![named("varchar"), named("b"), named("b")]
        );
    }
}
