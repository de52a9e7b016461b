//! LATERAL: FROM items that read the columns of earlier ones, one row at a time.
//!
//! DataFusion plans a LATERAL subquery as a join whose right side reads the left row through
//! outer references, and decorrelates it only when the references are in the subquery's
//! WHERE (`decorrelate_lateral_join`); a reference in a select list or a function argument
//! stayed, and execution failed ("Physical plan does not support logical expression
//! OuterReferenceColumn"). Its table functions take constants only, so
//! `FROM g, generate_series(1, g.n)` failed at planning. Written here because no library
//! does it:
//!
//! - [`lateral_functions`]: a set-returning function in FROM whose arguments read columns
//!   (`generate_series(1, g.n) AS s`, `unnest(g.tags) AS tag`) becomes the LATERAL subquery
//!   `LATERAL (SELECT unnest(f(args)) AS s) AS s`, its column named as PostgreSQL names it
//!   (the alias's column, the alias, or the function).
//! - A LATERAL subquery's unnamed columns are named as PostgreSQL names them (`SELECT g.x`
//!   gives `x`, not DataFusion's `outer_ref(g.x)`).
//! - [`LateralRows`]: a LATERAL subquery that computes from the left row alone (projections,
//!   filters and `unnest` over no FROM) is those operators applied to the left side, each
//!   keeping the left columns: `g JOIN LATERAL (SELECT unnest(generate_series(1, g.n)) AS s)
//!   q` is `SELECT g.*, s FROM (SELECT g.*, unnest(generate_series(1, g.n)) AS s FROM g)`.
//!   Over a stream it runs continuously (a projection and an unnest per row).
//!
//! Other LATERAL subqueries are left to DataFusion; what it cannot decorrelate is 0A000
//! naming LATERAL.

use crate::set_returning::{record_returning_function, set_returning_function};
use datafusion::common::config::ConfigOptions;
use datafusion::common::tree_node::{Transformed, TransformedResult, TreeNode};
use datafusion::common::{plan_err, Column, Result, ScalarValue};
use datafusion::logical_expr::{
    Expr, Filter, JoinType, LogicalPlan, LogicalPlanBuilder, Projection,
};
use datafusion::optimizer::AnalyzerRule;
use datafusion::sql::sqlparser::ast::{
    Expr as SqlExpr, FunctionArg, FunctionArgExpr, Ident, ObjectName, SelectItem, SetExpr,
    Statement, TableAlias, TableFactor, Visit, VisitMut, Visitor, VisitorMut,
};
use std::ops::ControlFlow;
use std::sync::Arc;

/// Rewrite the set-returning functions in FROM that read columns of earlier FROM items;
/// 0A000 for `LATERAL (SELECT g.*)`, which DataFusion cannot plan (it said relation `g`
/// did not exist).
pub fn lateral_functions(stmt: &mut Statement) -> brook_common::Result<()> {
    match stmt.visit(&mut LateralCalls) {
        ControlFlow::Break(e) => Err(e),
        ControlFlow::Continue(()) => Ok(()),
    }
}

struct LateralCalls;

impl VisitorMut for LateralCalls {
    /// What cannot be planned.
    type Break = brook_common::BrookError;

    fn pre_visit_table_factor(
        &mut self,
        t: &mut TableFactor,
    ) -> ControlFlow<brook_common::BrookError> {
        if let Some(lateral) = as_lateral_subquery(t) {
            *t = lateral;
        }
        // DataFusion's table functions leave the ordinality column out (a silent wrong
        // answer: one column where PostgreSQL gives two); those rewritten above have it.
        if matches!(
            t,
            TableFactor::Table {
                with_ordinality: true,
                ..
            } | TableFactor::UNNEST {
                with_ordinality: true,
                ..
            } | TableFactor::Function {
                with_ordinality: true,
                ..
            }
        ) {
            return ControlFlow::Break(brook_common::BrookError::Unsupported(
                "WITH ORDINALITY of this function, or with an alias of more columns than it \
                 returns and the ordinality"
                    .into(),
            ));
        }
        if let TableFactor::Derived {
            lateral: true,
            subquery,
            ..
        } = t
        {
            if let SetExpr::Select(select) = subquery.body.as_mut() {
                if let Some(wildcard) = outer_wildcard(select) {
                    return ControlFlow::Break(brook_common::BrookError::Unsupported(format!(
                        "{wildcard} in a LATERAL subquery (a wildcard over an earlier FROM \
                         item's columns; name the columns)"
                    )));
                }
                name_outputs(&mut select.projection);
            }
        }
        ControlFlow::Continue(())
    }
}

/// A `q.*` of a LATERAL subquery's select list whose `q` is none of its own FROM items.
fn outer_wildcard(select: &datafusion::sql::sqlparser::ast::Select) -> Option<String> {
    let own: Vec<String> = select
        .from
        .iter()
        .flat_map(|t| std::iter::once(&t.relation).chain(t.joins.iter().map(|j| &j.relation)))
        .filter_map(|r| match r {
            TableFactor::Table { name, alias, .. } => Some(
                alias
                    .as_ref()
                    .map_or_else(|| name.to_string(), |a| a.name.value.clone()),
            ),
            TableFactor::Derived { alias, .. } | TableFactor::Function { alias, .. } => {
                alias.as_ref().map(|a| a.name.value.clone())
            }
            _ => None,
        })
        .collect();
    select.projection.iter().find_map(|item| match item {
        SelectItem::QualifiedWildcard(
            datafusion::sql::sqlparser::ast::SelectItemQualifiedWildcardKind::ObjectName(q),
            _,
        ) => {
            let q = q.to_string();
            let last = q.rsplit('.').next().unwrap_or(&q);
            (!own
                .iter()
                .any(|o| o.eq_ignore_ascii_case(&q) || o.eq_ignore_ascii_case(last)))
            .then(|| format!("{q}.*"))
        }
        _ => None,
    })
}

/// Name a LATERAL subquery's unnamed columns as PostgreSQL does: a column reference after
/// the column (`SELECT g.x` gives `x`), a function call after the function (`unnest`).
/// DataFusion names them after the expression, with the left row's columns as
/// `outer_ref(g.x)`, so `q.x` was 42703. A name two columns would share is left alone.
fn name_outputs(items: &mut [SelectItem]) {
    let name = |item: &SelectItem| -> Option<Ident> {
        match item {
            SelectItem::UnnamedExpr(SqlExpr::Identifier(i)) => Some(i.clone()),
            SelectItem::UnnamedExpr(SqlExpr::CompoundIdentifier(parts)) => parts.last().cloned(),
            SelectItem::UnnamedExpr(SqlExpr::Function(f)) => {
                let last = f.name.0.last()?.as_ident()?;
                Some(Ident::new(last.value.to_ascii_lowercase()))
            }
            SelectItem::ExprWithAlias { alias, .. } => Some(alias.clone()),
            _ => None,
        }
    };
    let names: Vec<Option<Ident>> = items.iter().map(name).collect();
    for (item, n) in items.iter_mut().zip(&names) {
        let (SelectItem::UnnamedExpr(expr), Some(n)) = (&*item, n) else {
            continue;
        };
        let shared = names
            .iter()
            .flatten()
            .filter(|m| m.value.eq_ignore_ascii_case(&n.value))
            .count();
        if shared == 1 {
            *item = SelectItem::ExprWithAlias {
                expr: expr.clone(),
                alias: n.clone(),
            };
        }
    }
}

/// A set-returning function Brook rewrites, as a FROM item calls it.
struct Call<'a> {
    /// `unnest`, `generate_series`, ...
    function: String,
    /// Its arguments, as SQL.
    args: Vec<String>,
    alias: Option<&'a TableAlias>,
    /// `WITH ORDINALITY`: a last column numbering its rows from 1.
    ordinality: bool,
}

/// The set-returning function a FROM item calls, when Brook rewrites it.
fn call_of(t: &TableFactor) -> Option<Call<'_>> {
    match t {
        TableFactor::Table {
            name,
            args: Some(args),
            alias,
            with_ordinality,
            ..
        } => Some(Call {
            function: function_name(name)?,
            args: args_sql(&args.args)?,
            alias: alias.as_ref(),
            ordinality: *with_ordinality,
        }),
        TableFactor::Function {
            name,
            args,
            alias,
            with_ordinality,
            ..
        } => Some(Call {
            function: function_name(name)?,
            args: args_sql(args)?,
            alias: alias.as_ref(),
            ordinality: *with_ordinality,
        }),
        TableFactor::UNNEST {
            alias,
            array_exprs,
            with_offset: false,
            with_ordinality,
            ..
        } if array_exprs.len() == 1 => Some(Call {
            function: "unnest".to_string(),
            args: vec![array_exprs[0].to_string()],
            alias: alias.as_ref(),
            ordinality: *with_ordinality,
        }),
        _ => None,
    }
}

fn function_name(name: &ObjectName) -> Option<String> {
    let [part] = name.0.as_slice() else {
        return None;
    };
    let f = part.as_ident()?.value.to_ascii_lowercase();
    (f == "unnest"
        || set_returning_function(&f).is_some()
        || record_returning_function(&f).is_some())
    .then_some(f)
}

fn args_sql(args: &[FunctionArg]) -> Option<Vec<String>> {
    args.iter()
        .map(|a| match a {
            FunctionArg::Unnamed(FunctionArgExpr::Expr(e)) => Some(e.to_string()),
            _ => None,
        })
        .collect()
}

/// `f(args) [AS] a[(c)]` reading a column as `LATERAL (SELECT unnest(f(args)) AS c) AS a`.
/// `WITH ORDINALITY` adds `unnest(generate_series(1, array_length(f(args), 1))) AS ordinality`,
/// unnested in step with the rows (a function over constants is rewritten so too).
fn as_lateral_subquery(t: &TableFactor) -> Option<TableFactor> {
    let Call {
        function,
        args,
        alias,
        ordinality,
    } = call_of(t)?;
    // Over constants, `unnest` and `generate_series` are DataFusion's table functions; the
    // others have none.
    if !ordinality
        && !reads_columns(t)
        && ["unnest", "generate_series"].contains(&function.as_str())
    {
        return None;
    }
    if function == "unnest" && args.len() != 1 {
        return None;
    }
    let given = alias.map_or(0, |a| a.columns.len());
    // The ordinality column's name: the alias's column after the function's, or PostgreSQL's.
    let numbered = |columns: usize, array: &str| -> Option<String> {
        if !ordinality {
            return (given <= columns).then(String::new);
        }
        if given > columns + 1 {
            return None;
        }
        let name = alias
            .and_then(|a| a.columns.get(columns))
            .map_or_else(|| Ident::new("ordinality"), |c| c.name.clone());
        Some(format!(
            ", unnest(generate_series(1, array_length({array}, 1))) AS {name}"
        ))
    };
    if let Some(record) = record_returning_function(&function) {
        let first = record.columns.first()?.1;
        let extra = numbered(
            record.columns.len(),
            &format!("{first}({})", args.join(", ")),
        )?;
        return record_subquery(record, &args, alias, &extra);
    }
    // PostgreSQL names a one-column function's column after the alias's column list, else
    // its OUT parameter (`value` of `jsonb_array_elements`), else the alias, else the
    // function.
    let srf = set_returning_function(&function);
    let out = srf.and_then(|f| f.column).map(Ident::new);
    let table = alias.map_or_else(|| Ident::new(&function), |a| a.name.clone());
    let array = match srf {
        Some(f) => format!("{}({})", f.array_function, args.join(", ")),
        None => args[0].clone(),
    };
    let extra = numbered(1, &array)?;
    let column = match alias {
        Some(a) => a
            .columns
            .first()
            .map(|c| c.name.clone())
            .or(out)
            .unwrap_or_else(|| a.name.clone()),
        None => out.unwrap_or_else(|| Ident::new(&function)),
    };
    crate::function_alias::from_item(&format!(
        "LATERAL (SELECT unnest({array}) AS {column}{extra}) AS {table}"
    ))
}

/// `f(args) [AS] a[(k, v)]` of a function of several columns as `LATERAL (SELECT
/// unnest(fk(args)) AS k, unnest(fv(args)) AS v) AS a`: the unnests run in step, one row
/// per member. Columns are named by the alias's column list, else as PostgreSQL names
/// them (`key`, `value`).
fn record_subquery(
    record: &crate::set_returning::RecordReturning,
    args: &[String],
    alias: Option<&TableAlias>,
    ordinality: &str,
) -> Option<TableFactor> {
    let given = alias.map_or(&[][..], |a| a.columns.as_slice());
    let items: Vec<String> = record
        .columns
        .iter()
        .enumerate()
        .map(|(i, (column, function))| {
            let name = given
                .get(i)
                .map_or_else(|| Ident::new(*column), |c| c.name.clone());
            format!("unnest({function}({})) AS {name}", args.join(", "))
        })
        .collect();
    let table = alias.map_or_else(|| Ident::new(record.name), |a| a.name.clone());
    crate::function_alias::from_item(&format!(
        "LATERAL (SELECT {}{ordinality}) AS {table}",
        items.join(", ")
    ))
}

/// Whether a FROM item's call arguments name a column (of an earlier FROM item).
fn reads_columns(t: &TableFactor) -> bool {
    struct Columns;
    impl Visitor for Columns {
        type Break = ();
        fn pre_visit_expr(&mut self, e: &SqlExpr) -> ControlFlow<()> {
            // Any name counts (one inside a scalar subquery too: the rewritten call reads
            // it the same way).
            match e {
                SqlExpr::Identifier(_) | SqlExpr::CompoundIdentifier(_) => ControlFlow::Break(()),
                _ => ControlFlow::Continue(()),
            }
        }
    }
    let args: Vec<&SqlExpr> = match t {
        TableFactor::Table {
            args: Some(args), ..
        } => args.args.iter().filter_map(arg_expr).collect(),
        TableFactor::Function { args, .. } => args.iter().filter_map(arg_expr).collect(),
        TableFactor::UNNEST { array_exprs, .. } => array_exprs.iter().collect(),
        _ => Vec::new(),
    };
    args.iter().any(|e| e.visit(&mut Columns).is_break())
}

fn arg_expr(a: &FunctionArg) -> Option<&SqlExpr> {
    match a {
        FunctionArg::Unnamed(FunctionArgExpr::Expr(e)) => Some(e),
        _ => None,
    }
}

/// The analyzer rule: LATERAL subqueries over no FROM as operators on the left side.
#[derive(Debug, Default)]
pub struct LateralRows;

impl AnalyzerRule for LateralRows {
    fn analyze(&self, plan: LogicalPlan, _config: &ConfigOptions) -> Result<LogicalPlan> {
        plan.transform_up_with_subqueries(|p| match p {
            LogicalPlan::Join(ref j) => match per_row(j)? {
                Some(rewritten) => Ok(Transformed::yes(rewritten)),
                None => Ok(Transformed::no(p)),
            },
            other => Ok(Transformed::no(other)),
        })
        .data()
    }

    fn name(&self) -> &str {
        "brook_lateral_rows"
    }
}

/// A node of a LATERAL subquery computed from the left row alone.
enum Step<'a> {
    Project(&'a Projection),
    Filter(&'a Filter),
    Unnest(&'a datafusion::logical_expr::Unnest),
}

/// `left JOIN LATERAL (steps over one row) AS q`, rewritten; `None` for other joins.
fn per_row(j: &datafusion::logical_expr::Join) -> Result<Option<LogicalPlan>> {
    let subquery = match j.right.as_ref() {
        LogicalPlan::Subquery(sq) => sq,
        LogicalPlan::SubqueryAlias(a) => match a.input.as_ref() {
            LogicalPlan::Subquery(sq) => sq,
            _ => return Ok(None),
        },
        _ => return Ok(None),
    };
    let mut steps = Vec::new();
    let mut at = subquery.subquery.as_ref();
    loop {
        at = match at {
            LogicalPlan::Projection(p) => {
                steps.push(Step::Project(p));
                &p.input
            }
            LogicalPlan::Filter(f) => {
                steps.push(Step::Filter(f));
                &f.input
            }
            LogicalPlan::Unnest(u) => {
                steps.push(Step::Unnest(u));
                &u.input
            }
            LogicalPlan::EmptyRelation(e) if e.produce_one_row => break,
            _ => return Ok(None),
        };
    }
    // A LEFT JOIN keeps a left row its subquery gives no row for: only a subquery of
    // projections gives exactly one row per left row.
    let one_row_each = steps.iter().all(|s| matches!(s, Step::Project(_)));
    let condition =
        j.on.iter()
            .map(|(l, r)| l.clone().eq(r.clone()))
            .chain(j.filter.clone())
            .filter(|c| !matches!(c, Expr::Literal(ScalarValue::Boolean(Some(true)), _)))
            .reduce(Expr::and);
    match (j.join_type, &condition) {
        (JoinType::Inner, _) => {}
        (JoinType::Left, None) if one_row_each => {}
        _ => return Ok(None),
    }
    // A subquery reading columns of a query further out does not plan here: left to
    // DataFusion.
    Ok(over_left(j, &steps, condition).ok())
}

/// The steps applied to the left side, each keeping the left columns first, then the
/// join's columns (the left's, the subquery's by its alias), filtered by its condition.
fn over_left(
    j: &datafusion::logical_expr::Join,
    steps: &[Step<'_>],
    condition: Option<Expr>,
) -> Result<LogicalPlan> {
    let left_columns: Vec<Expr> = j
        .left
        .schema()
        .columns()
        .into_iter()
        .map(Expr::Column)
        .collect();
    let width = left_columns.len();
    let mut plan = j.left.as_ref().clone();
    // Each step's columns get names of their own, which keep them apart from the left's
    // (`SELECT g.x AS x` next to `g.x`): the steps above read them by position.
    let mut renamed: Vec<(Column, Column)> = Vec::new();
    for (depth, step) in steps.iter().enumerate().rev() {
        let read = |e: &Expr| -> Result<Expr> {
            outer_as_column(e.clone())?
                .transform_up(|e| match e {
                    Expr::Column(c) => Ok(match renamed.iter().find(|(old, _)| *old == c) {
                        Some((_, new)) => Transformed::yes(Expr::Column(new.clone())),
                        None => Transformed::no(Expr::Column(c)),
                    }),
                    other => Ok(Transformed::no(other)),
                })
                .data()
        };
        let (built, schema) = match step {
            Step::Project(p) => {
                let mut exprs = left_columns.clone();
                for (i, e) in p.expr.iter().enumerate() {
                    exprs.push(
                        read(e)?
                            .unalias()
                            .alias(format!("__brook_lateral_{depth}_{i}")),
                    );
                }
                let built = LogicalPlan::Projection(Projection::try_new(exprs, Arc::new(plan))?);
                (built, &p.schema)
            }
            Step::Filter(f) => {
                let built =
                    LogicalPlan::Filter(Filter::try_new(read(&f.predicate)?, Arc::new(plan))?);
                (built, f.input.schema())
            }
            Step::Unnest(u) => {
                let columns = u
                    .exec_columns
                    .iter()
                    .map(|c| match renamed.iter().find(|(old, _)| old == c) {
                        Some((_, new)) => new.clone(),
                        None => c.clone(),
                    })
                    .collect();
                let built = LogicalPlanBuilder::from(plan)
                    .unnest_columns_with_options(columns, u.options.clone())?
                    .build()?;
                (built, &u.schema)
            }
        };
        plan = built;
        let now = plan.schema();
        if now.fields().len() != width + schema.fields().len() {
            return plan_err!("LATERAL subquery columns out of step");
        }
        renamed = schema
            .iter()
            .enumerate()
            .map(|(i, (q, f))| {
                let (nq, nf) = now.qualified_field(width + i);
                (
                    Column::new(q.cloned(), f.name()),
                    Column::new(nq.cloned(), nf.name()),
                )
            })
            .collect();
    }
    let top = Arc::clone(plan.schema());
    if top.fields().len() != width + j.right.schema().fields().len() {
        return plan_err!("LATERAL subquery columns out of step");
    }
    let mut exprs = left_columns;
    for (i, (qualifier, field)) in j.right.schema().iter().enumerate() {
        let (q, f) = top.qualified_field(width + i);
        exprs.push(
            Expr::Column(Column::new(q.cloned(), f.name()))
                .alias_qualified(qualifier.cloned(), field.name()),
        );
    }
    let plan = LogicalPlan::Projection(Projection::try_new(exprs, Arc::new(plan))?);
    Ok(match condition {
        Some(c) => LogicalPlan::Filter(Filter::try_new(c, Arc::new(plan))?),
        None => plan,
    })
}

/// The expression with the left row's columns (outer references) as plain columns.
fn outer_as_column(e: Expr) -> Result<Expr> {
    e.transform_up(|e| match e {
        Expr::OuterReferenceColumn(_, c) => Ok(Transformed::yes(Expr::Column(c))),
        other => Ok(Transformed::no(other)),
    })
    .data()
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
        lateral_functions(&mut s).unwrap();
        s.to_string()
    }

    #[test]
    fn a_series_over_a_column_becomes_a_lateral_subquery() {
        assert_eq!(
            rewritten("SELECT * FROM g, generate_series(1, g.x) s"),
            "SELECT * FROM g, LATERAL (SELECT unnest(generate_series(1, g.x)) AS s) AS s"
        );
        assert_eq!(
            rewritten("SELECT * FROM g, LATERAL generate_series(x, 3) AS s(n)"),
            "SELECT * FROM g, LATERAL (SELECT unnest(generate_series(x, 3)) AS n) AS s"
        );
        assert_eq!(
            rewritten("SELECT * FROM g CROSS JOIN unnest(g.tags)"),
            "SELECT * FROM g CROSS JOIN LATERAL (SELECT unnest(g.tags) AS unnest) AS unnest"
        );
    }

    #[test]
    fn a_wildcard_over_an_earlier_item_is_0a000() {
        let mut s = Parser::parse_sql(
            &PostgreSqlDialect {},
            "SELECT * FROM g, LATERAL (SELECT g.*) q",
        )
        .unwrap()
        .remove(0);
        let e = lateral_functions(&mut s).unwrap_err();
        assert_eq!(e.sqlstate(), "0A000", "{e}");
        assert!(e.to_string().contains("g.*"), "{e}");
        assert_eq!(
            rewritten("SELECT * FROM g, LATERAL (SELECT h.* FROM h) q"),
            "SELECT * FROM g, LATERAL (SELECT h.* FROM h) q"
        );
    }

    #[test]
    fn ordinality_is_a_series_unnested_in_step() {
        assert_eq!(
            rewritten("SELECT * FROM g, generate_series(1, g.x) WITH ORDINALITY s"),
            "SELECT * FROM g, LATERAL (SELECT unnest(generate_series(1, g.x)) AS s, \
             unnest(generate_series(1, array_length(generate_series(1, g.x), 1))) \
             AS ordinality) AS s"
        );
        assert_eq!(
            rewritten("SELECT * FROM unnest(ARRAY['a', 'b']) WITH ORDINALITY AS t (x, n)"),
            "SELECT * FROM LATERAL (SELECT unnest(ARRAY['a', 'b']) AS x, \
             unnest(generate_series(1, array_length(ARRAY['a', 'b'], 1))) AS n) AS t"
        );
        // More columns than the function's and the ordinality: left to refuse.
        let mut s = Parser::parse_sql(
            &PostgreSqlDialect {},
            "SELECT * FROM unnest(ARRAY[1]) WITH ORDINALITY AS t (a, b, c)",
        )
        .unwrap()
        .remove(0);
        let e = lateral_functions(&mut s).unwrap_err();
        assert!(e.to_string().contains("WITH ORDINALITY"), "{e}");
    }

    #[test]
    fn splits_become_unnest_of_their_arrays_also_over_constants() {
        assert_eq!(
            rewritten("SELECT * FROM g, regexp_split_to_table(g.line, ' ') w"),
            "SELECT * FROM g, LATERAL (SELECT unnest(regexp_split_to_array(g.line, ' ')) AS w) AS w"
        );
        assert_eq!(
            rewritten("SELECT * FROM string_to_table('1|2', '|') AS t(v)"),
            "SELECT * FROM LATERAL (SELECT unnest(string_to_array('1|2', '|')) AS v) AS t"
        );
    }

    #[test]
    fn a_lateral_subquerys_columns_are_named_as_in_postgresql() {
        assert_eq!(
            rewritten("SELECT * FROM g, LATERAL (SELECT g.x, unnest(g.tags), g.x + 1) q"),
            "SELECT * FROM g, LATERAL (SELECT g.x AS x, unnest(g.tags) AS unnest, g.x + 1) q"
        );
        // Names two columns would share stay as they were.
        assert_eq!(
            rewritten("SELECT * FROM g, h, LATERAL (SELECT g.x, h.x, y AS x2) q"),
            "SELECT * FROM g, h, LATERAL (SELECT g.x, h.x, y AS x2) q"
        );
    }

    #[test]
    fn constant_calls_and_other_functions_are_left_alone() {
        for sql in [
            "SELECT * FROM generate_series(1, 3) s",
            "SELECT * FROM g, generate_series(1, 3 + 1) s",
            "SELECT * FROM g, UNNEST(ARRAY[1, 2]) u",
            "SELECT * FROM g, my_function(g.x) f",
            "SELECT * FROM g, UNNEST(g.a, g.b) u",
            "SELECT * FROM g, generate_series(1, g.x) AS s (a, b)",
        ] {
            assert_eq!(rewritten(sql), sql);
        }
    }
}
