//! The accuracy budget: exact aggregates replaced by synopses sized for a stated error.
//!
//! With a budget (`SET approx.error`/`approx.confidence`, or a query's
//! `WITH ERROR e [CONFIDENCE c]`), `count(DISTINCT x)` becomes an HLL sketch and
//! `percentile_cont`/`percentile_disc(p) WITHIN GROUP (ORDER BY x)` a KLL sketch and
//! `mode() WITHIN GROUP (ORDER BY x)` and top-k shaped queries (`SELECT x, count(*) … GROUP
//! BY x ORDER BY count(*) DESC LIMIT k`) a frequent-items sketch, each sized so the error
//! holds at the confidence. The rewrite is on the SQL text's syntax tree, before
//! DataFusion plans it, so the same replacement runs ad hoc, in cursors and in views, and
//! `EXPLAIN` shows the sketch and its size. Each replacement is reported back (for a NOTICE);
//! with [`Report::Columns`] every replaced top-level result column gets `<name>_lower` and
//! `<name>_upper` columns holding its interval. Without a budget nothing changes.
//!
//! Replacements keep the original's result name (`count`, `percentile_cont`) and `FILTER`
//! clause; aggregates used as window functions (`OVER`) and percentiles of a non-constant
//! fraction stay exact.

use brook_common::{brook_err, Result};
use brook_synopses::frequent::Frequent;
use brook_synopses::hll::Hll;
use brook_synopses::kll::Kll;
use brook_synopses::{check_error, check_rank, Confidence};
use datafusion::sql::sqlparser::ast::{
    DuplicateTreatment, Expr, FunctionArg, FunctionArgExpr, FunctionArguments, GroupByExpr, Ident,
    LimitClause, OrderBy, OrderByKind, Query, Select, SelectItem, SetExpr, Statement, Value,
};
use datafusion::sql::sqlparser::dialect::PostgreSqlDialect;
use datafusion::sql::sqlparser::parser::Parser;

/// How much error the user accepts, and how sure the bound must be.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Budget {
    /// Relative error for counts, rank error for percentiles, in (0, 1).
    pub error: f64,
    /// Probability that the error bound holds.
    pub confidence: Confidence,
}

impl Budget {
    /// A budget from its two numbers (22023 when out of range).
    pub fn new(error: f64, confidence: f64) -> Result<Self> {
        Ok(Budget {
            error: check_error(error)?,
            confidence: Confidence::new(confidence)?,
        })
    }
}

/// How the bound of an approximate answer reaches the user.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Report {
    /// A NOTICE per replacement (the default).
    Notice,
    /// Extra `<name>_lower` / `<name>_upper` result columns (and the NOTICE).
    Columns,
}

impl Report {
    /// Parse the `approx.report` setting (22023 for other values).
    pub fn parse(text: &str) -> Result<Self> {
        match text.trim().to_ascii_lowercase().as_str() {
            "notice" => Ok(Report::Notice),
            "columns" => Ok(Report::Columns),
            other => Err(brook_err!(InvalidParameter, "invalid value for parameter \"approx.report\": \"{other}\" (use 'notice' or 'columns')")),
        }
    }
}

/// One exact aggregate replaced by a synopsis.
#[derive(Debug, Clone, PartialEq)]
pub struct Replacement {
    /// The aggregate as written.
    pub original: String,
    /// The synopsis and its size (`HLL lg_k=16`).
    pub synopsis: String,
    /// The bound it keeps (`relative error ≤ 1% at 95% confidence`).
    pub bound: String,
}

impl Replacement {
    /// The NOTICE text.
    pub fn notice(&self) -> String {
        format!(
            "approximate answer: {} computed with {} ({})",
            self.original, self.synopsis, self.bound
        )
    }
}

/// Rewrite every replaceable aggregate of `stmt` under `budget`; returns what was replaced.
pub fn approximate(
    stmt: &mut Statement,
    budget: Budget,
    report: Report,
) -> Result<Vec<Replacement>> {
    let mut done = Vec::new();
    match stmt {
        Statement::Query(q) => query(q, budget, report, &mut done)?,
        Statement::Explain { statement, .. } => {
            done = approximate(statement, budget, report)?;
        }
        Statement::Declare { stmts } => {
            for d in stmts {
                if let Some(q) = d.for_query.as_mut() {
                    query(q, budget, report, &mut done)?;
                }
            }
        }
        Statement::CreateView(v) => query(&mut v.query, budget, report, &mut done)?,
        Statement::CreateTable(ct) => {
            if let Some(q) = ct.query.as_mut() {
                query(q, budget, report, &mut done)?;
            }
        }
        Statement::Copy {
            source: datafusion::sql::sqlparser::ast::CopySource::Query(q),
            ..
        } => query(q, budget, report, &mut done)?,
        Statement::Insert(ins) => {
            if let Some(q) = ins.source.as_mut() {
                query(q, budget, report, &mut done)?;
            }
        }
        _ => {}
    }
    Ok(done)
}

fn query(q: &mut Query, b: Budget, report: Report, done: &mut Vec<Replacement>) -> Result<()> {
    if let Some(with) = q.with.as_mut() {
        for cte in &mut with.cte_tables {
            query(&mut cte.query, b, report, done)?;
        }
    }
    if top_k(q, b, report, done)? {
        return Ok(());
    }
    set_expr(&mut q.body, b, report, done)
}

/// A top-k shaped query: `SELECT x, count(*) FROM … [WHERE …] GROUP BY x ORDER BY count(*)
/// DESC LIMIT k` (either column order, any aliases).
struct TopK {
    x: Expr,
    k: usize,
    /// Result names of the value and the count, in the query's column order.
    value_name: Ident,
    count_name: Ident,
    value_first: bool,
}

/// `count(*)` or `count(<constant>)`: counts rows.
fn counts_rows(e: &Expr) -> bool {
    let Expr::Function(f) = e else {
        return false;
    };
    let FunctionArguments::List(list) = &f.args else {
        return false;
    };
    f.name.to_string().eq_ignore_ascii_case("count")
        && f.over.is_none()
        && f.filter.is_none()
        && list.duplicate_treatment.is_none()
        && matches!(
            list.args.as_slice(),
            [FunctionArg::Unnamed(FunctionArgExpr::Wildcard)]
                | [FunctionArg::Unnamed(FunctionArgExpr::Expr(Expr::Value(_)))]
        )
}

/// The name a result column gets: its alias, else a column's own name, else the text.
fn result_name(e: &Expr, alias: Option<&Ident>, default: &str) -> Ident {
    match (alias, e) {
        (Some(a), _) => a.clone(),
        (None, Expr::Identifier(i)) => i.clone(),
        (None, Expr::CompoundIdentifier(parts)) => {
            parts.last().cloned().unwrap_or_else(|| Ident::new(default))
        }
        (None, _) if default.is_empty() => Ident::with_quote('"', e.to_string()),
        (None, _) => Ident::new(default),
    }
}

fn top_k_shape(q: &Query) -> Option<TopK> {
    let SetExpr::Select(s) = q.body.as_ref() else {
        return None;
    };
    if s.distinct.is_some()
        || s.having.is_some()
        || s.qualify.is_some()
        || s.from.is_empty()
        || !s.named_window.is_empty()
        || q.fetch.is_some()
    {
        return None;
    }
    let GroupByExpr::Expressions(keys, modifiers) = &s.group_by else {
        return None;
    };
    let ([x], true) = (keys.as_slice(), modifiers.is_empty()) else {
        return None;
    };
    let Some(LimitClause::LimitOffset {
        limit: Some(limit),
        offset: None,
        limit_by,
    }) = &q.limit_clause
    else {
        return None;
    };
    let k = numeric_literal(limit).filter(|k| k.fract() == 0.0 && (1.0..=10_000.0).contains(k))?;
    if !limit_by.is_empty() {
        return None;
    }
    let item = |i: &SelectItem| match i {
        SelectItem::UnnamedExpr(e) => Some((e.clone(), None)),
        SelectItem::ExprWithAlias { expr, alias } => Some((expr.clone(), Some(alias.clone()))),
        _ => None,
    };
    let [first, second] = s.projection.as_slice() else {
        return None;
    };
    let (first, second) = (item(first)?, item(second)?);
    let value_first = first.0 == *x && counts_rows(&second.0);
    let count_first = second.0 == *x && counts_rows(&first.0);
    if !(value_first || count_first) {
        return None;
    }
    let (value, count) = if value_first {
        (first, second)
    } else {
        (second, first)
    };
    let value_name = result_name(&value.0, value.1.as_ref(), "");
    let count_name = result_name(&count.0, count.1.as_ref(), "count");
    let Some(OrderBy {
        kind: OrderByKind::Expressions(order),
        interpolate: None,
    }) = &q.order_by
    else {
        return None;
    };
    let [by] = order.as_slice() else {
        return None;
    };
    let by_count = counts_rows(&by.expr)
        || matches!(&by.expr, Expr::Identifier(i) if count.1.as_ref() == Some(i));
    if !by_count || by.options.asc != Some(false) {
        return None;
    }
    Some(TopK {
        x: x.clone(),
        k: k as usize,
        value_name,
        count_name,
        value_first,
    })
}

/// Replace a top-k shaped query by the `k` heaviest items of a frequent-items sketch sized
/// for the error (each count is then within `error` of the rows, always). Returns whether
/// `q` was replaced.
fn top_k(q: &mut Query, b: Budget, report: Report, done: &mut Vec<Replacement>) -> Result<bool> {
    let Some(t) = top_k_shape(q) else {
        return Ok(false);
    };
    let SetExpr::Select(s) = q.body.as_ref() else {
        return Ok(false);
    };
    let from: Vec<String> = s.from.iter().map(|f| f.to_string()).collect();
    let filter = s
        .selection
        .as_ref()
        .map(|w| format!(" WHERE {w}"))
        .unwrap_or_default();
    let (x, k) = (&t.x, t.k);
    let field = |f: &str| format!("__brook_top['{f}']");
    let value = format!("{} AS {}", field("value"), t.value_name);
    let mut count = format!("{} AS {}", field("count"), t.count_name);
    if report == Report::Columns {
        for suffix in ["lower", "upper"] {
            let name = Ident::with_quote('"', format!("{}_{suffix}", t.count_name.value));
            count.push_str(&format!(
                ", {} AS {name}",
                field(&format!("count_{suffix}"))
            ));
        }
    }
    let columns = if t.value_first {
        format!("{value}, {count}")
    } else {
        format!("{count}, {value}")
    };
    let sql = format!(
        "SELECT {columns} FROM (SELECT unnest(approx_top_k_counts({x}, {k}, {})) AS __brook_top FROM {}{filter}) AS __brook_topk ORDER BY {} DESC LIMIT {k}",
        b.error,
        from.join(", "),
        field("count"),
    );
    let mut replaced = Parser::new(&PostgreSqlDialect {})
        .try_with_sql(&sql)?
        .parse_query()?;
    replaced.with = q.with.take();
    let lg = Frequent::lg_map_size_for_top_k(k, Some(b.error))?;
    done.push(Replacement {
        original: format!("GROUP BY {x} ORDER BY count(*) DESC LIMIT {k}"),
        synopsis: format!("a frequent-items sketch, lg_map_size={lg}"),
        bound: format!("each count within {} of the rows, always", percent(b.error)),
    });
    *q = *replaced;
    Ok(true)
}

fn set_expr(
    body: &mut SetExpr,
    b: Budget,
    report: Report,
    done: &mut Vec<Replacement>,
) -> Result<()> {
    match body {
        SetExpr::Select(s) => select(s, b, report, done),
        SetExpr::Query(q) => query(q, b, report, done),
        SetExpr::SetOperation { left, right, .. } => {
            set_expr(left, b, report, done)?;
            set_expr(right, b, report, done)
        }
        _ => Ok(()),
    }
}

fn select(s: &mut Select, b: Budget, report: Report, done: &mut Vec<Replacement>) -> Result<()> {
    let mut items = Vec::with_capacity(s.projection.len());
    for item in std::mem::take(&mut s.projection) {
        let (expr, alias) = match item {
            SelectItem::UnnamedExpr(e) => (e, None),
            SelectItem::ExprWithAlias { expr, alias } => (expr, Some(alias)),
            other => {
                items.push(other);
                continue;
            }
        };
        // A result column that is exactly one replaceable aggregate keeps its name and, when
        // asked, gets its interval as two more columns.
        if let Some(r) = replaceable(&expr, b)? {
            let name = alias.unwrap_or_else(|| Ident::new(r.pg_name));
            items.push(SelectItem::ExprWithAlias {
                expr: parse_expr(&r.value)?,
                alias: name.clone(),
            });
            if let (Report::Columns, Some((lower, upper))) = (report, &r.interval) {
                for (suffix, text) in [("lower", lower), ("upper", upper)] {
                    items.push(SelectItem::ExprWithAlias {
                        expr: parse_expr(text)?,
                        alias: Ident::with_quote('"', format!("{}_{suffix}", name.value)),
                    });
                }
            }
            done.push(r.replacement);
            continue;
        }
        let mut expr = expr;
        nested(&mut expr, b, done)?;
        items.push(match alias {
            Some(alias) => SelectItem::ExprWithAlias { expr, alias },
            None => SelectItem::UnnamedExpr(expr),
        });
    }
    s.projection = items;
    if let Some(h) = s.having.as_mut() {
        nested(h, b, done)?;
    }
    for t in &mut s.from {
        if let datafusion::sql::sqlparser::ast::TableFactor::Derived { subquery, .. } =
            &mut t.relation
        {
            query(subquery, b, report, done)?;
        }
    }
    Ok(())
}

/// Replace aggregates inside a larger expression (no interval columns there).
fn nested(e: &mut Expr, b: Budget, done: &mut Vec<Replacement>) -> Result<()> {
    let mut err = None;
    let _ = datafusion::sql::sqlparser::ast::visit_expressions_mut(e, |x| {
        match replaceable(x, b) {
            Ok(Some(r)) => match parse_expr(&r.value) {
                Ok(v) => {
                    *x = Expr::Nested(Box::new(v));
                    done.push(r.replacement);
                }
                Err(e) => err = Some(e),
            },
            Ok(None) => {}
            Err(e) => err = Some(e),
        }
        std::ops::ControlFlow::<()>::Continue(())
    });
    match err {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

/// A replacement as SQL text: the value and its interval's ends.
struct Rewritten {
    pg_name: &'static str,
    value: String,
    /// The interval's ends, for kinds whose answer has one (a mode's bound is on its count).
    interval: Option<(String, String)>,
    replacement: Replacement,
}

fn parse_expr(text: &str) -> Result<Expr> {
    Ok(Parser::new(&PostgreSqlDialect {})
        .try_with_sql(text)?
        .parse_expr()?)
}

fn percent(p: f64) -> String {
    let v = p * 100.0;
    if (v - v.round()).abs() < 1e-9 {
        format!("{}%", v.round())
    } else {
        format!("{v:.2}%")
    }
}

/// The replacement of `e` when it is an aggregate the budget covers.
fn replaceable(e: &Expr, b: Budget) -> Result<Option<Rewritten>> {
    let Expr::Function(f) = e else {
        return Ok(None);
    };
    if f.over.is_some() {
        return Ok(None);
    }
    let name = f.name.to_string().to_ascii_lowercase();
    let FunctionArguments::List(list) = &f.args else {
        return Ok(None);
    };
    let filter = f
        .filter
        .as_ref()
        .map(|w| format!(" FILTER (WHERE {w})"))
        .unwrap_or_default();
    let conf = b.confidence.probability();
    match name.as_str() {
        "count" if list.duplicate_treatment == Some(DuplicateTreatment::Distinct) => {
            let [arg] = list.args.as_slice() else {
                return Ok(None);
            };
            let FunctionArg::Unnamed(FunctionArgExpr::Expr(x)) = arg else {
                return Ok(None);
            };
            let lg_k = Hll::lg_k_for(b.error, b.confidence)?;
            let sketch = format!("hll_sketch_agg({x}, {lg_k}){filter}");
            Ok(Some(Rewritten {
                pg_name: "count",
                value: format!("CAST(round(estimate({sketch})) AS BIGINT)"),
                interval: Some((
                    format!("CAST(floor(lower_bound({sketch}, {conf})) AS BIGINT)"),
                    format!("CAST(ceil(upper_bound({sketch}, {conf})) AS BIGINT)"),
                )),
                replacement: Replacement {
                    original: e.to_string(),
                    synopsis: format!("an HLL sketch, lg_k={lg_k}"),
                    bound: format!(
                        "relative error within {} at {} confidence",
                        percent(b.error),
                        percent(conf)
                    ),
                },
            }))
        }
        "percentile_cont" | "percentile_disc" => {
            let [FunctionArg::Unnamed(FunctionArgExpr::Expr(p))] = list.args.as_slice() else {
                return Ok(None);
            };
            let [order] = f.within_group.as_slice() else {
                return Ok(None);
            };
            let Some(mut p) = numeric_literal(p) else {
                return Ok(None);
            };
            p = check_rank(p)?;
            if order.options.asc == Some(false) {
                p = 1.0 - p;
            }
            let x = &order.expr;
            let k = Kll::k_for(b.error, b.confidence)?;
            let eps = Kll::new(k)?.rank_error(b.confidence);
            let sketch = format!("kll_sketch_agg({x}, {k}){filter}");
            let (lo, hi) = ((p - eps).max(0.0), (p + eps).min(1.0));
            Ok(Some(Rewritten {
                pg_name: if name == "percentile_cont" {
                    "percentile_cont"
                } else {
                    "percentile_disc"
                },
                value: format!("quantile({sketch}, {p})"),
                interval: Some((
                    format!("quantile({sketch}, {lo})"),
                    format!("quantile({sketch}, {hi})"),
                )),
                replacement: Replacement {
                    original: e.to_string(),
                    synopsis: format!("a KLL sketch, k={k}"),
                    bound: format!(
                        "rank error within {} at {} confidence",
                        percent(eps),
                        percent(conf)
                    ),
                },
            }))
        }
        "mode" if list.args.is_empty() => {
            let [order] = f.within_group.as_slice() else {
                return Ok(None);
            };
            let x = &order.expr;
            let lg = Frequent::lg_map_size_for(b.error)?;
            Ok(Some(Rewritten {
                pg_name: "mode",
                value: format!("approx_mode({x}, {}){filter}", b.error),
                interval: None,
                replacement: Replacement {
                    original: e.to_string(),
                    synopsis: format!("a frequent-items sketch, lg_map_size={lg}"),
                    bound: format!(
                        "its count within {} of the rows of the mode's count, always",
                        percent(b.error)
                    ),
                },
            }))
        }
        _ => Ok(None),
    }
}

fn numeric_literal(e: &Expr) -> Option<f64> {
    match e {
        Expr::Value(v) => match &v.value {
            Value::Number(n, _) => n.parse().ok(),
            _ => None,
        },
        Expr::Nested(inner) => numeric_literal(inner),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rewrite(sql: &str, report: Report) -> (String, Vec<Replacement>) {
        let mut stmt = Parser::new(&PostgreSqlDialect {})
            .try_with_sql(sql)
            .unwrap()
            .parse_statement()
            .unwrap();
        let done = approximate(&mut stmt, Budget::new(0.01, 0.95).unwrap(), report).unwrap();
        (stmt.to_string(), done)
    }

    #[test]
    fn count_distinct_becomes_an_hll_sized_for_the_error() {
        let (sql, done) = rewrite(
            "SELECT g, count(DISTINCT x) FROM t GROUP BY g",
            Report::Notice,
        );
        assert_eq!(
            sql,
            "SELECT g, CAST(round(estimate(hll_sketch_agg(x, 16))) AS BIGINT) AS count FROM t GROUP BY g"
        );
        assert_eq!(done.len(), 1);
        assert!(done[0].notice().contains("lg_k=16"), "{}", done[0].notice());
    }

    #[test]
    fn columns_report_adds_the_interval() {
        let (sql, _) = rewrite("SELECT count(DISTINCT x) AS d FROM t", Report::Columns);
        assert!(
            sql.to_lowercase().contains("as d, cast(floor(lower_bound("),
            "{sql}"
        );
        assert!(sql.contains("AS \"d_lower\""), "{sql}");
        assert!(sql.contains("AS \"d_upper\""), "{sql}");
    }

    #[test]
    fn percentiles_become_kll_and_desc_counts_from_the_top() {
        let (sql, done) = rewrite(
            "SELECT percentile_cont(0.9) WITHIN GROUP (ORDER BY v DESC) FROM t",
            Report::Notice,
        );
        assert!(sql.contains("quantile(kll_sketch_agg(v, "), "{sql}");
        assert!(
            sql.contains(", 0.09999999999999998)") || sql.contains(", 0.1)"),
            "{sql}"
        );
        assert!(done[0].synopsis.starts_with("a KLL sketch"));
    }

    #[test]
    fn nested_and_filtered_aggregates_are_replaced_window_ones_are_not() {
        let (sql, done) = rewrite(
            "SELECT count(DISTINCT x) FILTER (WHERE y > 0) + 1, count(DISTINCT x) OVER () FROM t",
            Report::Columns,
        );
        assert!(
            sql.contains("hll_sketch_agg(x, 16) FILTER (WHERE y > 0)"),
            "{sql}"
        );
        assert!(sql.contains("count(DISTINCT x) OVER ()"), "{sql}");
        assert_eq!(done.len(), 1);
    }

    #[test]
    fn mode_becomes_a_frequent_items_sketch_without_interval_columns() {
        let (sql, done) = rewrite(
            "SELECT mode() WITHIN GROUP (ORDER BY page) FROM t",
            Report::Columns,
        );
        assert_eq!(sql, "SELECT approx_mode(page, 0.01) AS mode FROM t");
        assert!(done[0].synopsis.contains("lg_map_size="), "{:?}", done[0]);
    }

    #[test]
    fn top_k_shaped_queries_become_the_heaviest_items_of_a_sketch() {
        let (sql, done) = rewrite(
            "SELECT count(*) AS hits, page FROM v WHERE n > 3 GROUP BY page ORDER BY hits DESC LIMIT 5",
            Report::Columns,
        );
        assert_eq!(
            sql,
            "SELECT __brook_top['count'] AS hits, __brook_top['count_lower'] AS \"hits_lower\", __brook_top['count_upper'] AS \"hits_upper\", __brook_top['value'] AS page FROM (SELECT unnest(approx_top_k_counts(page, 5, 0.01)) AS __brook_top FROM v WHERE n > 3) AS __brook_topk ORDER BY __brook_top['count'] DESC LIMIT 5"
        );
        assert!(done[0].synopsis.contains("lg_map_size="), "{:?}", done[0]);
        // Other shapes are left alone: ascending order, a second aggregate, OFFSET.
        for sql in [
            "SELECT page, count(*) FROM v GROUP BY page ORDER BY count(*) LIMIT 5",
            "SELECT page, count(*), sum(n) FROM v GROUP BY page ORDER BY count(*) DESC LIMIT 5",
            "SELECT page, count(*) FROM v GROUP BY page ORDER BY count(*) DESC LIMIT 5 OFFSET 1",
        ] {
            let (same, done) = rewrite(sql, Report::Notice);
            assert_eq!(same, sql);
            assert!(done.is_empty());
        }
    }

    #[test]
    fn without_replaceable_aggregates_nothing_changes() {
        let (sql, done) = rewrite("SELECT count(*), sum(x) FROM t", Report::Columns);
        assert_eq!(sql, "SELECT count(*), sum(x) FROM t");
        assert!(done.is_empty());
    }
}
