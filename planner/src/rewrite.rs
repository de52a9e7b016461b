//! AST rewrites applied before DataFusion plans a statement.

use brook_common::{brook_err, Result};
use datafusion::sql::sqlparser::ast::{
    visit_expressions, visit_expressions_mut, CastKind, DataType, Expr, GroupByExpr, LimitClause,
    OrderByKind, Query, Select, SetExpr, Statement, Value, VisitMut, VisitorMut,
};
use datafusion::sql::sqlparser::dialect::PostgreSqlDialect;
use datafusion::sql::sqlparser::parser::Parser;
use std::ops::ControlFlow;

pub(crate) use crate::output_names::figure_colname;
pub use crate::output_names::{
    alias_outputs, output_names, rename_output, OutputName, INTERNAL_ALIAS,
};

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

/// Give integer literals that fit PostgreSQL's `integer` that type, as PostgreSQL does
/// (DataFusion types every integer literal `bigint`). Positional references (`ORDER BY 1`,
/// `GROUP BY 1`) and `LIMIT`/`OFFSET`/`FETCH` counts keep their literals.
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
mod tests {
    use super::*;
    use crate::test_support::statement as stmt;

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
