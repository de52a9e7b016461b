//! `TUMBLE`, `HOP` and `SESSION` window table functions in FROM, as plain SQL over the
//! relation.
//!
//! `TUMBLE(rel, ts, size)` is `rel` with `window_start = brook_window_start(ts, size)` (the
//! bins of `date_bin(size, ts)`, see [`crate::window_start`]) and
//! `window_end = window_start + size`; `HOP(rel, ts, slide, size)` (size a whole multiple
//! of slide, as in Flink) is the UNION ALL of `size / slide` such projections, one per
//! window a row falls in. Being ordinary SQL, the same rewrite serves ad-hoc queries over
//! tables and continuous queries over streams (where it plans as stateless projections and
//! the aggregate above recognises `window_end` as a key the watermark closes).
//! `SESSION(rel, ts, gap [, key ...])` is `rel` with `session_start(ts, gap)` and
//! `session_end(ts, gap)` over `(PARTITION BY key ... ORDER BY ts)` (see
//! [`crate::session_window`]): rows of one key less than `gap` apart share a session.

use brook_common::{brook_err, BrookError, Result};
use datafusion::arrow::compute::kernels::cast_utils::parse_interval_month_day_nano;
use datafusion::sql::sqlparser::ast::{
    Expr, FunctionArg, FunctionArgExpr, GroupByExpr, Ident, ObjectName, Query, Select, SelectItem,
    SetExpr, Statement, TableAlias, TableFactor, Value, Visit, VisitMut, Visitor, VisitorMut,
};
use datafusion::sql::sqlparser::dialect::PostgreSqlDialect;
use datafusion::sql::sqlparser::parser::Parser;
use std::ops::ControlFlow;

/// Replace every `TUMBLE(...)` / `HOP(...)` / `SESSION(...)` in FROM clauses by its
/// derived table.
pub fn rewrite_windows(stmt: &mut Statement) -> Result<()> {
    let mut v = Windows;
    match stmt.visit(&mut v) {
        ControlFlow::Break(e) => Err(e),
        ControlFlow::Continue(()) => Ok(()),
    }
}

/// The relations `q` reads through window table functions (the first argument of each
/// `TUMBLE`, `HOP`, `SESSION`, `TUMBLE_ROWS`, `HOP_ROWS`), which are not table names to
/// `visit_relations`: a view over `TUMBLE(s, ...)` depends on `s`.
pub fn window_relations(q: &Query) -> Vec<ObjectName> {
    let mut found = WindowRelations(Vec::new());
    let _ = q.visit(&mut found);
    found.0
}

struct WindowRelations(Vec<ObjectName>);

impl Visitor for WindowRelations {
    type Break = ();

    fn pre_visit_table_factor(&mut self, tf: &TableFactor) -> ControlFlow<()> {
        // A subquery input of MATCH_RECOGNIZE, as parsed.
        if let Some(q) = crate::match_recognize::derived_input(tf) {
            let _ = datafusion::sql::sqlparser::ast::visit_relations(q, |r| {
                self.0.push(r.clone());
                ControlFlow::<()>::Continue(())
            });
        }
        if let TableFactor::Table {
            name,
            args: Some(args),
            ..
        } = tf
        {
            let func = name.to_string().to_ascii_lowercase();
            if is_window_function(&func) {
                match args.args.first().and_then(|a| input(&func, a).ok()) {
                    Some(Input::Named(rel)) => self.0.push(rel),
                    // What the subquery reads: sqlparser's `visit_relations` does not look
                    // inside a table function's arguments.
                    Some(Input::Query(q)) => {
                        let _ = datafusion::sql::sqlparser::ast::visit_relations(&*q, |r| {
                            self.0.push(r.clone());
                            ControlFlow::<()>::Continue(())
                        });
                    }
                    None => {}
                }
            }
        }
        ControlFlow::Continue(())
    }
}

/// Whether `name` (lower case) is one of Brook's window table functions.
pub fn is_window_function(name: &str) -> bool {
    matches!(
        name,
        "tumble" | "hop" | "session" | "tumble_rows" | "hop_rows"
    )
}

struct Windows;

impl VisitorMut for Windows {
    type Break = BrookError;

    fn pre_visit_query(&mut self, q: &mut Query) -> ControlFlow<BrookError> {
        if let SetExpr::Select(select) = q.body.as_mut() {
            group_by_window_end(select);
        }
        ControlFlow::Continue(())
    }

    fn pre_visit_table_factor(&mut self, tf: &mut TableFactor) -> ControlFlow<BrookError> {
        let TableFactor::Table {
            name,
            alias,
            args: Some(args),
            ..
        } = tf
        else {
            return ControlFlow::Continue(());
        };
        let func = name.to_string().to_ascii_lowercase();
        if !is_window_function(&func) {
            return ControlFlow::Continue(());
        }
        match window_table(&func, &args.args, alias.take()) {
            Ok(derived) => {
                *tf = derived;
                ControlFlow::Continue(())
            }
            Err(e) => ControlFlow::Break(e),
        }
    }
}

/// A GROUP BY over `TUMBLE`/`HOP` that names `window_start` but not `window_end` also
/// groups by `window_end` (the same groups: the end is the start plus the size), so a
/// continuous aggregate sees the key the watermark closes: its windows free their state and
/// `EMIT ON WINDOW CLOSE` applies, as when both are named.
fn group_by_window_end(select: &mut Select) {
    let over_window = select.from.iter().any(|t| {
        std::iter::once(&t.relation)
            .chain(t.joins.iter().map(|j| &j.relation))
            .any(|tf| {
                matches!(tf, TableFactor::Table { name, args: Some(_), .. }
                    if matches!(name.to_string().to_ascii_lowercase().as_str(), "tumble" | "hop"))
            })
    });
    let GroupByExpr::Expressions(keys, _) = &mut select.group_by else {
        return;
    };
    if !over_window {
        return;
    }
    let projection = &select.projection;
    // The key's column name and qualifier, through a GROUP BY ordinal to its select item.
    let named = |e: &Expr| -> Option<(String, Vec<Ident>)> {
        let e = match e {
            Expr::Value(v) => match &v.value {
                Value::Number(n, _) => {
                    match projection.get(n.parse::<usize>().ok()?.checked_sub(1)?)? {
                        SelectItem::UnnamedExpr(e) => e,
                        _ => return None,
                    }
                }
                _ => return None,
            },
            other => other,
        };
        match e {
            Expr::Identifier(i) => Some((i.value.to_ascii_lowercase(), Vec::new())),
            Expr::CompoundIdentifier(parts) => {
                let (last, qualifier) = parts.split_last()?;
                Some((last.value.to_ascii_lowercase(), qualifier.to_vec()))
            }
            _ => None,
        }
    };
    let names: Vec<Option<(String, Vec<Ident>)>> = keys.iter().map(named).collect();
    if names.iter().flatten().any(|(n, _)| n == "window_end") {
        return;
    }
    let Some((_, qualifier)) = names
        .into_iter()
        .flatten()
        .find(|(n, _)| n == "window_start")
    else {
        return;
    };
    let end = Ident::new("window_end");
    keys.push(if qualifier.is_empty() {
        Expr::Identifier(end)
    } else {
        Expr::CompoundIdentifier(qualifier.into_iter().chain([end]).collect())
    });
}

fn arg_expr(a: &FunctionArg) -> Result<&Expr> {
    match a {
        FunctionArg::Unnamed(FunctionArgExpr::Expr(e)) => Ok(e),
        other => Err(brook_err!(
            Syntax,
            "window function argument {other} must be a plain expression"
        )),
    }
}

/// Microseconds of a fixed-length interval literal (`INTERVAL '5 seconds'`,
/// `INTERVAL '5' SECOND`).
fn interval_micros(e: &Expr) -> Result<i64> {
    let bad = || {
        brook_err!(
            DatatypeMismatch,
            "window size {e} must be an interval literal such as INTERVAL '10 seconds'"
        )
    };
    let Expr::Interval(iv) = e else {
        return Err(bad());
    };
    let text = match iv.value.as_ref() {
        Expr::Value(v) => match &v.value {
            Value::SingleQuotedString(s) => s.clone(),
            Value::Number(n, _) => n.clone(),
            _ => return Err(bad()),
        },
        _ => return Err(bad()),
    };
    let text = match &iv.leading_field {
        Some(f) => format!("{text} {f}"),
        None => text,
    };
    let v = parse_interval_month_day_nano(&text).map_err(|_| bad())?;
    if v.months != 0 {
        return Err(brook_err!(
            Unsupported,
            "windows measured in months or years (their length varies; use days)"
        ));
    }
    let micros = i64::from(v.days) * 86_400_000_000 + v.nanoseconds / 1000;
    if micros <= 0 {
        return Err(brook_err!(
            InvalidParameter,
            "window size {e} must be positive"
        ));
    }
    Ok(micros)
}

/// A fixed length of `micros` microseconds as an Arrow duration: adding it to a timestamp
/// is one integer addition per row, where adding an interval goes through calendar
/// arithmetic per row (ten times slower in a profile of a tumbling window).
fn duration(micros: i64) -> String {
    format!("arrow_cast({micros}, 'Duration(Microsecond)')")
}

fn parse_query(sql: &str) -> Result<Query> {
    let mut p = Parser::new(&PostgreSqlDialect {}).try_with_sql(sql)?;
    Ok(*p.parse_query()?)
}

fn window_table(
    func: &str,
    args: &[FunctionArg],
    alias: Option<TableAlias>,
) -> Result<TableFactor> {
    if func == "session" {
        return session_table(args, alias);
    }
    if func.ends_with("_rows") {
        return count_table(func, args, alias);
    }
    let want = if func == "tumble" { 3 } else { 4 };
    if args.len() != want {
        return Err(brook_err!(
            Syntax,
            "{} takes {want} arguments: {}",
            func.to_uppercase(),
            if func == "tumble" {
                "(relation, time column, size)"
            } else {
                "(relation, time column, slide, size)"
            }
        ));
    }
    let rel = input(func, &args[0])?;
    let from = rel.as_from_item();
    let ts = arg_expr(&args[1])?;
    let sql = if func == "tumble" {
        let size = arg_expr(&args[2])?;
        let micros = interval_micros(size)?;
        format!(
            "SELECT *, brook_window_start({ts}, {micros}) AS window_start, \
             brook_window_start({ts}, {micros}) + {} AS window_end FROM {from}",
            duration(micros)
        )
    } else {
        let (slide_e, size_e) = (arg_expr(&args[2])?, arg_expr(&args[3])?);
        let (slide, size) = (interval_micros(slide_e)?, interval_micros(size_e)?);
        if size % slide != 0 {
            return Err(brook_err!(
                InvalidParameter,
                "HOP size {size_e} must be a whole multiple of its slide {slide_e}"
            ));
        }
        let k = size / slide;
        if k > 1000 {
            return Err(brook_err!(
                Unsupported,
                "HOP windows with more than 1000 windows per row"
            ));
        }
        (0..k)
            .map(|i| {
                format!(
                    "SELECT *, brook_window_start({ts}, {slide}) - {} AS window_start, \
                     brook_window_start({ts}, {slide}) + {} AS window_end FROM {from}",
                    duration(i * slide),
                    duration(size - i * slide)
                )
            })
            .collect::<Vec<_>>()
            .join(" UNION ALL ")
    };
    derived(rel.default_alias(func), &sql, alias)
}

/// The relation a window function's first argument names.
fn relation(func: &str, a: &FunctionArg) -> Result<ObjectName> {
    match input(func, a)? {
        Input::Named(name) => Ok(name),
        Input::Query(_) => Err(brook_err!(
            Unsupported,
            "{} over a subquery (count windows follow a table's or stream's arrival order; \
             name the table or stream and filter the windows' rows instead)",
            func.to_uppercase()
        )),
    }
}

/// What a time window function reads: a table or stream by name, or a subquery (as
/// Flink's `TUMBLE(TABLE (SELECT ...), ...)`).
enum Input {
    Named(ObjectName),
    Query(Box<Query>),
}

impl Input {
    /// The input as a FROM item.
    fn as_from_item(&self) -> String {
        match self {
            Input::Named(name) => name.to_string(),
            Input::Query(q) => format!("({q}) AS brook_window_input"),
        }
    }

    /// The name the window's rows go by without an alias: the relation's, or the function's.
    fn default_alias(&self, func: &str) -> Ident {
        match self {
            Input::Named(name) => name.0.last().and_then(|p| p.as_ident()).cloned(),
            Input::Query(_) => None,
        }
        .unwrap_or_else(|| Ident::new(func))
    }
}

fn input(func: &str, a: &FunctionArg) -> Result<Input> {
    match arg_expr(a)? {
        Expr::Identifier(i) => Ok(Input::Named(ObjectName::from(vec![i.clone()]))),
        Expr::CompoundIdentifier(parts) => Ok(Input::Named(ObjectName::from(parts.clone()))),
        Expr::Subquery(q) => Ok(Input::Query(q.clone())),
        other => Err(brook_err!(
            Syntax,
            "first argument of {} must name a table or stream or be a subquery, not {other}",
            func.to_uppercase()
        )),
    }
}

/// `sql` as a derived table named `alias`, or after what it reads.
fn derived(default_alias: Ident, sql: &str, alias: Option<TableAlias>) -> Result<TableFactor> {
    Ok(TableFactor::Derived {
        lateral: false,
        subquery: Box::new(parse_query(sql)?),
        alias: Some(alias.unwrap_or(TableAlias {
            explicit: true,
            name: default_alias,
            columns: Vec::new(),
            at: None,
        })),
        sample: None,
    })
}

/// Name of the table function count windows expand to (`brook_count_window(relation,
/// size, slide, key ...)`, the server's).
pub const COUNT_WINDOW_FUNCTION: &str = "brook_count_window";

/// A positive whole number of rows.
fn row_count(e: &Expr) -> Result<u64> {
    let bad = || {
        brook_err!(
            DatatypeMismatch,
            "a count window size {e} must be a positive whole number of rows"
        )
    };
    match e {
        Expr::Value(v) => match &v.value {
            Value::Number(n, _) => match n.parse::<u64>() {
                Ok(0) => Err(brook_err!(
                    InvalidParameter,
                    "a count window size {e} must be positive"
                )),
                Ok(n) => Ok(n),
                Err(_) => Err(bad()),
            },
            _ => Err(bad()),
        },
        _ => Err(bad()),
    }
}

/// `TUMBLE_ROWS(rel, size [, key ...])` and `HOP_ROWS(rel, slide, size [, key ...])`:
/// windows of `size` consecutive rows in arrival order (per key), adding `window_id`.
fn count_table(func: &str, args: &[FunctionArg], alias: Option<TableAlias>) -> Result<TableFactor> {
    let hop = func == "hop_rows";
    let fixed = if hop { 3 } else { 2 };
    if args.len() < fixed {
        return Err(brook_err!(
            Syntax,
            "{} takes {}",
            func.to_uppercase(),
            if hop {
                "(relation, slide, size [, key ...])"
            } else {
                "(relation, size [, key ...])"
            }
        ));
    }
    let rel = relation(func, &args[0])?;
    let (slide, size) = if hop {
        (
            row_count(arg_expr(&args[1])?)?,
            row_count(arg_expr(&args[2])?)?,
        )
    } else {
        let size = row_count(arg_expr(&args[1])?)?;
        (size, size)
    };
    if slide > size {
        return Err(brook_err!(
            InvalidParameter,
            "HOP_ROWS slide {slide} must not exceed its size {size}"
        ));
    }
    let mut call = vec![
        format!("'{}'", rel.to_string().replace('\'', "''")),
        size.to_string(),
        slide.to_string(),
    ];
    for a in &args[fixed..] {
        match arg_expr(a)? {
            Expr::Identifier(i) => call.push(format!("'{}'", i.value.replace('\'', "''"))),
            other => {
                return Err(brook_err!(
                    Syntax,
                    "count window keys must be column names, not {other}"
                ))
            }
        }
    }
    let sql = format!("SELECT * FROM {COUNT_WINDOW_FUNCTION}({})", call.join(", "));
    derived(Input::Named(rel).default_alias(func), &sql, alias)
}

/// `SESSION(rel, ts, gap [, key ...])`.
fn session_table(args: &[FunctionArg], alias: Option<TableAlias>) -> Result<TableFactor> {
    if args.len() < 3 {
        return Err(brook_err!(
            Syntax,
            "SESSION takes (relation, time column, gap [, key ...])"
        ));
    }
    let rel = input("session", &args[0])?;
    let ts = arg_expr(&args[1])?;
    let gap = arg_expr(&args[2])?;
    interval_micros(gap)?;
    let keys = args[3..]
        .iter()
        .map(|a| Ok(arg_expr(a)?.to_string()))
        .collect::<Result<Vec<_>>>()?;
    let partition = if keys.is_empty() {
        String::new()
    } else {
        format!("PARTITION BY {} ", keys.join(", "))
    };
    let over = format!("OVER ({partition}ORDER BY {ts})");
    let sql = format!(
        "SELECT *, {}({ts}, {gap}) {over} AS window_start, {}({ts}, {gap}) {over} AS window_end \
         FROM {}",
        crate::session_window::SESSION_START,
        crate::session_window::SESSION_END,
        rel.as_from_item()
    );
    derived(rel.default_alias("session"), &sql, alias)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rewritten(sql: &str) -> Result<String> {
        let mut stmts = Parser::parse_sql(&PostgreSqlDialect {}, sql)?;
        rewrite_windows(&mut stmts[0])?;
        Ok(stmts[0].to_string())
    }

    #[test]
    fn tumble_becomes_a_window_start() {
        let s = rewritten(
            "SELECT window_start, count(*) FROM TUMBLE(s, ts, INTERVAL '1 minute') GROUP BY 1",
        )
        .unwrap();
        assert!(
            s.contains("brook_window_start(ts, 60000000) AS window_start"),
            "{s}"
        );
        assert!(s.contains("AS s GROUP BY"), "{s}");
    }

    #[test]
    fn grouping_by_window_start_groups_by_window_end_too() {
        for (sql, key) in [
            ("SELECT window_start, count(*) FROM TUMBLE(s, ts, INTERVAL '1 minute') GROUP BY window_start", "GROUP BY window_start, window_end"),
            ("SELECT w.window_start, count(*) FROM TUMBLE(s, ts, INTERVAL '1 minute') AS w GROUP BY w.window_start, k", "GROUP BY w.window_start, k, w.window_end"),
            ("SELECT window_start, count(*) FROM HOP(s, ts, INTERVAL '1' MINUTE, INTERVAL '2' MINUTE) GROUP BY 1", "GROUP BY 1, window_end"),
        ] {
            let s = rewritten(sql).unwrap();
            assert!(s.ends_with(key), "{s}");
        }
        for unchanged in [
            "SELECT window_start, count(*) FROM TUMBLE(s, ts, INTERVAL '1 minute') GROUP BY window_start, window_end",
            "SELECT window_start, count(*) FROM SESSION(s, ts, INTERVAL '1 minute') GROUP BY window_start",
            "SELECT window_start, count(*) FROM t GROUP BY window_start",
        ] {
            let s = rewritten(unchanged).unwrap();
            assert_eq!(s.rsplit("GROUP BY").next(), unchanged.rsplit("GROUP BY").next(), "{s}");
        }
    }

    #[test]
    fn hop_is_one_projection_per_window() {
        let s =
            rewritten("SELECT * FROM HOP(s, ts, INTERVAL '1' MINUTE, INTERVAL '3' MINUTE) AS h")
                .unwrap();
        assert_eq!(s.matches("UNION ALL").count(), 2, "{s}");
        assert!(s.ends_with("AS h"), "{s}");
    }

    #[test]
    fn session_is_two_window_functions_per_key() {
        let s = rewritten("SELECT * FROM SESSION(clicks, ts, INTERVAL '30 minutes', u, site) AS c")
            .unwrap();
        assert!(
            s.contains("session_end(ts, INTERVAL '30 minutes') OVER (PARTITION BY u, site ORDER BY ts) AS window_end"),
            "{s}"
        );
        let s = rewritten("SELECT * FROM SESSION(clicks, ts, INTERVAL '1' MINUTE)").unwrap();
        assert!(s.contains("OVER (ORDER BY ts) AS window_start"), "{s}");
    }

    #[test]
    fn count_windows_call_the_count_window_function() {
        let s = rewritten("SELECT * FROM TUMBLE_ROWS(readings, 100, sensor) AS r").unwrap();
        assert!(
            s.contains("brook_count_window('readings', 100, 100, 'sensor')"),
            "{s}"
        );
        let s = rewritten("SELECT * FROM HOP_ROWS(readings, 25, 100)").unwrap();
        assert!(
            s.contains("brook_count_window('readings', 100, 25)) AS readings"),
            "{s}"
        );
    }

    #[test]
    fn a_time_window_reads_a_subquery() {
        let s = rewritten(
            "SELECT window_start, count(*) FROM TUMBLE((SELECT ts FROM s WHERE v > 0), ts, \
             INTERVAL '1 minute') GROUP BY 1",
        )
        .unwrap();
        assert!(
            s.contains("FROM (SELECT ts FROM s WHERE v > 0) AS brook_window_input) AS tumble"),
            "{s}"
        );
    }

    #[test]
    fn the_relations_read_through_window_functions_are_found() {
        let sql = "SELECT * FROM TUMBLE(a, ts, INTERVAL '1 minute') JOIN TUMBLE_ROWS(public.b, 3) \
                   USING (window_start) WHERE x IN (SELECT y FROM SESSION(c, ts, INTERVAL '1 s'))";
        let q = parse_query(sql).unwrap();
        let names: Vec<String> = window_relations(&q).iter().map(|n| n.to_string()).collect();
        assert_eq!(names, vec!["a", "public.b", "c"]);
        let q = parse_query(
            "SELECT * FROM HOP((SELECT * FROM s JOIN t USING (k)), ts, INTERVAL '1 s', INTERVAL '2 s')",
        )
        .unwrap();
        let names: Vec<String> = window_relations(&q).iter().map(|n| n.to_string()).collect();
        assert_eq!(names, vec!["s", "t"]);
    }

    #[test]
    fn bad_windows_are_named_errors() {
        let cases = [
            (
                "SELECT * FROM HOP(s, ts, INTERVAL '2 minutes', INTERVAL '3 minutes')",
                "22023",
            ),
            ("SELECT * FROM TUMBLE(s, ts, INTERVAL '1 month')", "0A000"),
            ("SELECT * FROM TUMBLE(s, ts, 5)", "42804"),
            ("SELECT * FROM TUMBLE(s, ts)", "42601"),
            ("SELECT * FROM SESSION(s, ts)", "42601"),
            ("SELECT * FROM TUMBLE_ROWS(s)", "42601"),
            ("SELECT * FROM TUMBLE_ROWS(s, 0)", "22023"),
            ("SELECT * FROM TUMBLE_ROWS(s, 1.5)", "42804"),
            ("SELECT * FROM HOP_ROWS(s, 10, 5)", "22023"),
            ("SELECT * FROM TUMBLE_ROWS(s, 10, k + 1)", "42601"),
            ("SELECT * FROM SESSION(s, ts, 5, k)", "42804"),
            ("SELECT * FROM TUMBLE_ROWS((SELECT * FROM s), 2)", "0A000"),
            (
                "SELECT * FROM TUMBLE(s + 1, ts, INTERVAL '1 minute')",
                "42601",
            ),
        ];
        for (sql, code) in cases {
            assert_eq!(rewritten(sql).unwrap_err().sqlstate(), code, "{sql}");
        }
    }
}
