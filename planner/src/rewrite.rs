//! AST rewrites applied before DataFusion plans a statement.

use brook_common::{brook_err, Result};
use datafusion::sql::sqlparser::ast::{
    visit_expressions, visit_expressions_mut, AccessExpr, CastKind, DataType, Expr, GroupByExpr,
    Ident, LimitClause, OrderByKind, Query, Select, SelectItem, SetExpr, Statement, Value,
    VisitMut, VisitorMut,
};
use datafusion::sql::sqlparser::dialect::PostgreSqlDialect;
use datafusion::sql::sqlparser::parser::Parser;
use std::ops::ControlFlow;

/// One bound parameter of the extended protocol, already decoded to PostgreSQL text form.
#[derive(Debug, Clone)]
pub struct BoundParam {
    /// The value's text representation, `None` for SQL NULL.
    pub text: Option<String>,
    /// The PostgreSQL type name to cast to (`int4`, `text`, ...); `None` when unknown, in
    /// which case the literal stays untyped and the planner coerces it like a quoted literal.
    pub type_name: Option<String>,
}

/// The highest `$n` placeholder in a statement (0 when there is none).
pub fn placeholder_count(stmt: &Statement) -> usize {
    // A PREPARE's `$n` are its own parameters (bound by EXECUTE), not the protocol's.
    if matches!(stmt, Statement::Prepare { .. }) {
        return 0;
    }
    let mut max = 0usize;
    let _ = visit_expressions(stmt, |e| {
        if let Some(n) = placeholder_index(e) {
            max = max.max(n);
        }
        ControlFlow::<()>::Continue(())
    });
    max
}

/// `n` of a `$n` placeholder.
pub fn placeholder_index(e: &Expr) -> Option<usize> {
    match e {
        Expr::Value(v) => match &v.value {
            Value::Placeholder(p) => p.strip_prefix('$').and_then(|n| n.parse().ok()),
            _ => None,
        },
        _ => None,
    }
}

/// Replace every `$n` with its bound value as a typed literal (`CAST('v' AS type)`).
///
/// Substituting at the AST level lets every statement kind (SELECT, INSERT, UPDATE, COPY
/// queries, ...) take parameters through the one planning path.
pub fn bind_parameters(stmt: &mut Statement, params: &[BoundParam]) -> Result<()> {
    if matches!(stmt, Statement::Prepare { .. }) {
        return Ok(()); // its `$n` are EXECUTE's to bind
    }
    let mut failure = None;
    let _ = visit_expressions_mut(stmt, |e| {
        if let Some(n) = placeholder_index(e) {
            let Some(p) = n.checked_sub(1).and_then(|i| params.get(i)) else {
                failure = Some(brook_err!(
                    Protocol,
                    "bind message supplies {} parameters, but the statement uses ${n}",
                    params.len()
                ));
                return ControlFlow::Break(());
            };
            match literal(p) {
                Ok(lit) => *e = lit,
                Err(err) => {
                    failure = Some(err);
                    return ControlFlow::Break(());
                }
            }
        }
        ControlFlow::Continue(())
    });
    match failure {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

fn literal(p: &BoundParam) -> Result<Expr> {
    let value = match &p.text {
        Some(t) => format!("'{}'", t.replace('\'', "''")),
        None => "NULL".to_string(),
    };
    let sql = match &p.type_name {
        Some(ty) => format!("CAST({value} AS {ty})"),
        None => value,
    };
    let dialect = PostgreSqlDialect {};
    Ok(Parser::new(&dialect).try_with_sql(&sql)?.parse_expr()?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parser::parse_one;

    fn stmt(sql: &str) -> Statement {
        let parsed = parse_one(sql).unwrap();
        match parsed.clone().into_plain_sql() {
            Some(s) => s,
            None => panic!("unexpected {parsed:?}"),
        }
    }

    #[test]
    fn counts_placeholders() {
        assert_eq!(placeholder_count(&stmt("select $1 + $3")), 3);
        assert_eq!(placeholder_count(&stmt("select 1")), 0);
    }

    #[test]
    fn binds_typed_and_null_values() {
        let mut s = stmt("select $1, $2");
        let params = vec![
            BoundParam {
                text: Some("it's".into()),
                type_name: Some("text".into()),
            },
            BoundParam {
                text: None,
                type_name: Some("int4".into()),
            },
        ];
        bind_parameters(&mut s, &params).unwrap();
        assert_eq!(
            s.to_string(),
            "SELECT CAST('it''s' AS TEXT), CAST(NULL AS INT4)"
        );
    }

    #[test]
    fn missing_parameter_is_an_error() {
        let mut s = stmt("select $2");
        let e = bind_parameters(&mut s, &[]).unwrap_err();
        assert_eq!(e.sqlstate(), "08P01");
    }
}

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
                    OutputName::Name(if alias.quote_style.is_some() {
                        alias.value.clone()
                    } else {
                        alias.value.to_lowercase()
                    })
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
            if n == "trim" {
                "btrim".to_string()
            } else {
                n
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

/// Give integer literals that fit PostgreSQL's `integer` that type, as PostgreSQL does
/// (DataFusion types every integer literal `bigint`). Positional references (`ORDER BY 1`,
/// `GROUP BY 1`) and `LIMIT`/`OFFSET`/`FETCH` counts keep their literals.
/// `ORDER BY`, `LIMIT` or `OFFSET` on a recursive query (`WITH RECURSIVE r AS (... UNION ALL
/// ... ORDER BY 1 LIMIT 3)`): 0A000 as PostgreSQL answers (DataFusion ignored them).
pub fn refuse_recursive_order(stmt: &Statement) -> brook_common::Result<()> {
    match datafusion::sql::sqlparser::ast::Visit::visit(stmt, &mut RecursiveOrder) {
        ControlFlow::Break(e) => Err(e),
        ControlFlow::Continue(()) => Ok(()),
    }
}

struct RecursiveOrder;

impl datafusion::sql::sqlparser::ast::Visitor for RecursiveOrder {
    type Break = brook_common::BrookError;

    fn pre_visit_query(&mut self, q: &Query) -> ControlFlow<Self::Break> {
        let Some(with) = q.with.as_ref().filter(|w| w.recursive) else {
            return ControlFlow::Continue(());
        };
        for cte in &with.cte_tables {
            let cq = &cte.query;
            if !matches!(cq.body.as_ref(), SetExpr::SetOperation { .. }) {
                continue;
            }
            let name = cte.alias.name.value.to_ascii_lowercase();
            let reads_itself = datafusion::sql::sqlparser::ast::visit_relations(cq, |r| {
                match r.0.last().and_then(|p| p.as_ident()) {
                    Some(i) if i.value.to_ascii_lowercase() == name => ControlFlow::Break(()),
                    _ => ControlFlow::Continue(()),
                }
            })
            .is_break();
            let clause = if cq.order_by.is_some() {
                "ORDER BY"
            } else if cq.limit_clause.is_some() || cq.fetch.is_some() {
                "LIMIT"
            } else {
                continue;
            };
            if reads_itself {
                return ControlFlow::Break(brook_err!(
                    Unsupported,
                    "{clause} in a recursive query is not implemented"
                ));
            }
        }
        ControlFlow::Continue(())
    }
}

/// `[OFFSET m ROWS] FETCH FIRST n ROWS ONLY`, the standard's LIMIT, which DataFusion does not
/// plan ("FETCH clause is not supported"), as `LIMIT n [OFFSET m]`; `WITH TIES` and `PERCENT`
/// are refused by name (0A000).
pub fn fetch_as_limit(stmt: &mut Statement) -> brook_common::Result<()> {
    match stmt.visit(&mut FetchAsLimit) {
        ControlFlow::Break(e) => Err(e),
        ControlFlow::Continue(()) => Ok(()),
    }
}

struct FetchAsLimit;

/// `LIMIT 2.5` / `OFFSET 0.5`: PostgreSQL rounds a fractional count (to 3 and 1), as a
/// numeric becomes a bigint; DataFusion failed (XX000 "invalid digit found in string").
fn whole_count(e: &mut Expr) {
    if let Expr::Value(v) = e {
        if let Value::Number(n, _) = &v.value {
            if n.contains('.') {
                if let Ok(f) = n.parse::<f64>() {
                    v.value = Value::Number(format!("{}", f.round() as i64), false);
                }
            }
        }
    }
}

impl VisitorMut for FetchAsLimit {
    type Break = brook_common::BrookError;

    fn pre_visit_query(&mut self, q: &mut Query) -> ControlFlow<Self::Break> {
        if let Some(LimitClause::LimitOffset { limit, offset, .. }) = q.limit_clause.as_mut() {
            limit.iter_mut().for_each(whole_count);
            offset.iter_mut().for_each(|o| whole_count(&mut o.value));
        }
        let Some(fetch) = q.fetch.take() else {
            return ControlFlow::Continue(());
        };
        if fetch.with_ties || fetch.percent {
            return ControlFlow::Break(brook_common::BrookError::unsupported(format!(
                "FETCH FIRST ... {}",
                if fetch.with_ties {
                    "WITH TIES"
                } else {
                    "PERCENT"
                }
            )));
        }
        let n = fetch
            .quantity
            .unwrap_or_else(|| Expr::value(Value::Number("1".into(), false)));
        q.limit_clause = Some(match q.limit_clause.take() {
            Some(LimitClause::LimitOffset {
                offset, limit_by, ..
            }) => LimitClause::LimitOffset {
                limit: Some(n),
                offset,
                limit_by,
            },
            _ => LimitClause::LimitOffset {
                limit: Some(n),
                offset: None,
                limit_by: Vec::new(),
            },
        });
        ControlFlow::Continue(())
    }
}

pub fn int4_literals(stmt: &mut Statement) {
    let _ = stmt.visit(&mut Int4Literals);
}

struct Int4Literals;

fn is_small_int(e: &Expr) -> bool {
    matches!(e, Expr::Value(v) if matches!(&v.value, Value::Number(n, false) if n.parse::<i32>().is_ok()))
}

fn unwrap_int_cast(e: &mut Expr) {
    if let Expr::Cast {
        expr,
        data_type: DataType::Int(None),
        ..
    } = e
    {
        if is_small_int(expr) {
            let inner = std::mem::replace(expr.as_mut(), Expr::value(Value::Null));
            *e = inner;
        }
    }
}

/// Frame offsets of a window definition back from int4 casts to plain row counts.
fn plain_frame_offsets(spec: &mut datafusion::sql::sqlparser::ast::WindowSpec) {
    use datafusion::sql::sqlparser::ast::WindowFrameBound as B;
    if let Some(frame) = spec.window_frame.as_mut() {
        let bounds = std::iter::once(&mut frame.start_bound).chain(frame.end_bound.as_mut());
        for b in bounds {
            if let B::Preceding(Some(x)) | B::Following(Some(x)) = b {
                unwrap_int_cast(x);
            }
        }
    }
}

impl VisitorMut for Int4Literals {
    type Break = ();

    fn post_visit_expr(&mut self, e: &mut Expr) -> ControlFlow<()> {
        // Window frame offsets (`ROWS 2 PRECEDING`) are row counts, not int4 values.
        if let Expr::Function(f) = e {
            if let Some(datafusion::sql::sqlparser::ast::WindowType::WindowSpec(spec)) =
                f.over.as_mut()
            {
                plain_frame_offsets(spec);
            }
        }
        if is_small_int(e) {
            let lit = std::mem::replace(e, Expr::value(Value::Null));
            *e = Expr::Cast {
                kind: CastKind::Cast,
                expr: Box::new(lit),
                data_type: DataType::Int(None),
                array: false,
                format: None,
            };
        }
        ControlFlow::Continue(())
    }

    fn post_visit_query(&mut self, q: &mut Query) -> ControlFlow<()> {
        if let Some(ob) = q.order_by.as_mut() {
            if let OrderByKind::Expressions(items) = &mut ob.kind {
                for i in items {
                    unwrap_int_cast(&mut i.expr);
                }
            }
        }
        match q.limit_clause.as_mut() {
            Some(LimitClause::LimitOffset { limit, offset, .. }) => {
                if let Some(l) = limit {
                    unwrap_int_cast(l);
                }
                if let Some(o) = offset {
                    unwrap_int_cast(&mut o.value);
                }
            }
            Some(LimitClause::OffsetCommaLimit { offset, limit }) => {
                unwrap_int_cast(offset);
                unwrap_int_cast(limit);
            }
            None => {}
        }
        if let Some(f) = q.fetch.as_mut() {
            if let Some(n) = f.quantity.as_mut() {
                unwrap_int_cast(n);
            }
        }
        ControlFlow::Continue(())
    }

    fn post_visit_select(&mut self, s: &mut Select) -> ControlFlow<()> {
        // Named windows (`WINDOW w AS (ROWS BETWEEN 100 PRECEDING ...)`) hold frames too.
        for w in &mut s.named_window {
            if let datafusion::sql::sqlparser::ast::NamedWindowExpr::WindowSpec(spec) = &mut w.1 {
                plain_frame_offsets(spec);
            }
        }
        if let GroupByExpr::Expressions(exprs, _) = &mut s.group_by {
            for e in exprs {
                unwrap_int_cast(e);
            }
        }
        ControlFlow::Continue(())
    }
}

#[cfg(test)]
mod naming_tests {
    use super::*;
    use crate::parser::parse_one;

    fn stmt(sql: &str) -> Statement {
        let parsed = parse_one(sql).unwrap();
        match parsed.clone().into_plain_sql() {
            Some(s) => s,
            None => panic!("unexpected {parsed:?}"),
        }
    }

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

    #[test]
    fn int_literals_become_int4_except_positions() {
        let mut s = stmt("select 1, 3000000000 from t where a > 2 group by 1 order by 1 limit 5");
        int4_literals(&mut s);
        assert_eq!(
            s.to_string(),
            "SELECT CAST(1 AS INT), 3000000000 FROM t WHERE a > CAST(2 AS INT) GROUP BY 1 ORDER BY 1 LIMIT 5"
        );
    }
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
    let folded = |x: &Ident| {
        if x.quote_style.is_some() {
            x.value.clone()
        } else {
            x.value.to_lowercase()
        }
    };
    folded(a) == folded(b)
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
                let name = if alias.quote_style.is_some() {
                    alias.value.clone()
                } else {
                    alias.value.to_lowercase()
                };
                let to = Ident::with_quote('"', format!("{INTERNAL_ALIAS}{name}"));
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
