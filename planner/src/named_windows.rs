//! Named windows copied into the windows that name them, as PostgreSQL resolves them:
//! `OVER (w ORDER BY ts)`, `OVER (w ROWS BETWEEN 1 PRECEDING AND CURRENT ROW)` and
//! `WINDOW w2 AS (w1 ...)` take w's PARTITION BY (and its ORDER BY, unless they give one).
//!
//! DataFusion reads a bare `OVER w` but ignores a window name inside parentheses, so such
//! a window lost the named window's PARTITION BY and ORDER BY: a wrong answer without an
//! error. The copy follows PostgreSQL's rules and its errors (42P20 for overriding what
//! the named window sets, 42704 for a name no WINDOW clause defines).

use crate::output_names::folded as name;
use brook_common::{brook_err, BrookError, Result};
use datafusion::sql::sqlparser::ast::{
    visit_expressions_mut, Expr, Ident, NamedWindowDefinition, NamedWindowExpr, OrderBy,
    OrderByKind, Query, Select, SetExpr, Statement, VisitMut, VisitorMut, WindowSpec, WindowType,
};
use std::ops::ControlFlow;

/// Copy the named windows of every SELECT of `stmt` into the windows that name them.
pub fn resolve(stmt: &mut Statement) -> Result<()> {
    match stmt.visit(&mut Resolver) {
        ControlFlow::Break(e) => Err(e),
        ControlFlow::Continue(()) => Ok(()),
    }
}

struct Resolver;

impl VisitorMut for Resolver {
    type Break = BrookError;

    fn pre_visit_query(&mut self, q: &mut Query) -> ControlFlow<BrookError> {
        match resolve_body(q.body.as_mut(), q.order_by.as_mut()) {
            Ok(()) => ControlFlow::Continue(()),
            Err(e) => ControlFlow::Break(e),
        }
    }
}

/// The SELECTs of a query body (the query's ORDER BY belongs to a body that is one).
fn resolve_body(body: &mut SetExpr, order_by: Option<&mut OrderBy>) -> Result<()> {
    match body {
        SetExpr::Select(s) => resolve_select(s, order_by),
        SetExpr::SetOperation { left, right, .. } => {
            resolve_body(left, None)?;
            resolve_body(right, None)
        }
        _ => Ok(()),
    }
}

fn resolve_select(s: &mut Select, order_by: Option<&mut OrderBy>) -> Result<()> {
    if s.named_window.is_empty() {
        return Ok(());
    }
    // The definitions, each resolved against those before it.
    let mut defs: Vec<(String, WindowSpec)> = Vec::new();
    for NamedWindowDefinition(window, expr) in &mut s.named_window {
        let spec = match expr {
            NamedWindowExpr::NamedWindow(other) => lookup(&defs, other)?.clone(),
            NamedWindowExpr::WindowSpec(spec) => {
                if let Some(base) = spec.window_name.clone() {
                    *spec = merge(lookup(&defs, &base)?, spec, &base)?;
                }
                spec.clone()
            }
        };
        defs.push((name(window), spec));
    }
    let mut failed = None;
    let mut copy = |e: &mut Expr| {
        if let Expr::Function(f) = e {
            if let Some(WindowType::WindowSpec(spec)) = &mut f.over {
                if let Some(base) = spec.window_name.clone() {
                    match lookup(&defs, &base).and_then(|b| merge(b, spec, &base)) {
                        Ok(merged) => *spec = merged,
                        Err(err) => {
                            failed = Some(err);
                            return ControlFlow::Break(());
                        }
                    }
                }
            }
        }
        ControlFlow::Continue(())
    };
    let _ = visit_expressions_mut(&mut s.projection, &mut copy);
    let _ = visit_expressions_mut(&mut s.having, &mut copy);
    let _ = visit_expressions_mut(&mut s.qualify, &mut copy);
    if let Some(OrderBy {
        kind: OrderByKind::Expressions(exprs),
        ..
    }) = order_by
    {
        let _ = visit_expressions_mut(exprs, &mut copy);
    }
    match failed {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

fn lookup<'a>(defs: &'a [(String, WindowSpec)], window: &Ident) -> Result<&'a WindowSpec> {
    let wanted = name(window);
    defs.iter()
        .find(|(n, _)| *n == wanted)
        .map(|(_, s)| s)
        .ok_or_else(|| brook_err!(UndefinedObject, "window \"{wanted}\" does not exist"))
}

fn windowing(message: String) -> BrookError {
    BrookError::Semantic {
        message,
        code: "42P20",
    }
}

/// `spec` (which names `window`, defined as `base`) with what `base` sets.
fn merge(base: &WindowSpec, spec: &WindowSpec, window: &Ident) -> Result<WindowSpec> {
    let w = name(window);
    if !base.partition_by.is_empty() && !spec.partition_by.is_empty() {
        return Err(windowing(format!(
            "cannot override PARTITION BY clause of window \"{w}\""
        )));
    }
    if !base.order_by.is_empty() && !spec.order_by.is_empty() {
        return Err(windowing(format!(
            "cannot override ORDER BY clause of window \"{w}\""
        )));
    }
    if base.window_frame.is_some() {
        return Err(windowing(format!(
            "cannot copy window \"{w}\" because it has a frame clause (omit the parentheses: \
             OVER {w})"
        )));
    }
    Ok(WindowSpec {
        window_name: None,
        partition_by: if base.partition_by.is_empty() {
            spec.partition_by.clone()
        } else {
            base.partition_by.clone()
        },
        order_by: if spec.order_by.is_empty() {
            base.order_by.clone()
        } else {
            spec.order_by.clone()
        },
        window_frame: spec.window_frame.clone(),
    })
}

#[cfg(test)]
mod tests {
    use crate::parser::parse_one;

    fn sql(text: &str) -> brook_common::Result<String> {
        Ok(parse_one(text)?
            .into_plain_sql()
            .expect("a plain statement")
            .to_string())
    }

    #[test]
    fn a_window_naming_another_takes_its_partition_and_order() {
        let out = sql("SELECT sum(v) OVER (w ROWS BETWEEN 1 PRECEDING AND CURRENT ROW), sum(v) OVER (w), \
                       count(*) OVER (p ORDER BY ts) FROM t WINDOW w AS (PARTITION BY k ORDER BY ts), p AS (PARTITION BY k)")
        .unwrap();
        assert!(
            out.contains(
                "sum(v) OVER (PARTITION BY k ORDER BY ts ROWS BETWEEN 1 PRECEDING AND CURRENT ROW)"
            ),
            "{out}"
        );
        assert!(
            out.contains("sum(v) OVER (PARTITION BY k ORDER BY ts)"),
            "{out}"
        );
        assert!(
            out.contains("count(*) OVER (PARTITION BY k ORDER BY ts)"),
            "{out}"
        );
        let chained = sql(
            "SELECT sum(v) OVER w2 FROM t WINDOW w1 AS (PARTITION BY k), w2 AS (w1 ORDER BY ts)",
        )
        .unwrap();
        assert!(
            chained.contains("w2 AS (PARTITION BY k ORDER BY ts)"),
            "{chained}"
        );
    }

    #[test]
    fn what_a_named_window_sets_cannot_be_overridden() {
        let cases = [
            (
                "SELECT sum(v) OVER (w PARTITION BY j) FROM t WINDOW w AS (PARTITION BY k)",
                "42P20",
                "cannot override PARTITION BY",
            ),
            (
                "SELECT sum(v) OVER (w ORDER BY j) FROM t WINDOW w AS (ORDER BY k)",
                "42P20",
                "cannot override ORDER BY",
            ),
            (
                "SELECT sum(v) OVER (w) FROM t WINDOW w AS (ORDER BY k ROWS 2 PRECEDING)",
                "42P20",
                "has a frame clause",
            ),
            (
                "SELECT sum(v) OVER (x ORDER BY k) FROM t WINDOW w AS (PARTITION BY k)",
                "42704",
                "window \"x\" does not exist",
            ),
        ];
        for (text, code, message) in cases {
            let e = sql(text).unwrap_err();
            assert_eq!(e.sqlstate(), code, "{text}: {e}");
            assert!(e.to_string().contains(message), "{text}: {e}");
        }
    }
}
