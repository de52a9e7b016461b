//! The merged columns of joins with USING.
//!
//! In PostgreSQL a column named in USING is one column of the join: the left side's value
//! in an inner or left join, the right side's in a right join, `COALESCE(left, right)` in a
//! full join; `SELECT *` shows the USING columns first, then the left side's other columns,
//! then the right side's. DataFusion always reads the left side's value and keeps the
//! sides' column order, so a right or full join's rows from the right side alone had NULL
//! there (`SELECT id FROM a FULL JOIN b USING (id)` lost the ids only `b` has: a wrong
//! answer, and the usual way to align two series by time), and `SELECT *` put the column
//! where the left side has it.
//!
//! Two rewrites, for a join of two named FROM items:
//! - [`UsingJoins`] (a rule of the parser, so a view's stored text has it): an unqualified
//!   reference to the merged column of a right or full join in the select list, WHERE,
//!   GROUP BY, HAVING and ORDER BY becomes the right side's column or the COALESCE (named
//!   as the column in the select list). Subqueries keep their own scopes.
//! - [`expand_using_wildcards`] (after the output names are taken, since it writes
//!   DataFusion's `EXCLUDE`, which is not PostgreSQL's syntax and so never stored): `*`
//!   becomes the merged columns, then `left.* EXCLUDE (...)` and `right.* EXCLUDE (...)`;
//!   a select list naming the column qualified too (`SELECT id, a.id`) gets the merged
//!   column under an internal alias, which the wire layer shows as the column's name
//!   ([`crate::rewrite::rename_output`]).
//!
//! Left as DataFusion plans them: joins of more than two items or of an unnamed one (which
//! side has a column is known only from the catalog there). NATURAL joins of two named
//! relations are written as USING joins by the server, which knows their columns
//! (`session/natural_joins.rs`), and this rule is run again on the result.

use datafusion::sql::sqlparser::ast::{
    ExcludeSelectItem, Expr, GroupByExpr, Ident, JoinConstraint, JoinOperator, NamedWindowExpr,
    ObjectName, ObjectNamePart, OrderByExpr, OrderByKind, Query, Select, SelectItem,
    SelectItemQualifiedWildcardKind, SetExpr, Statement, TableFactor, VisitMut, VisitorMut,
    WildcardAdditionalOptions,
};
use datafusion_pg_catalog::sql::rules::SqlStatementRewriteRule;
use std::ops::ControlFlow;

use crate::output_names::folded;
use crate::rewrite::INTERNAL_ALIAS;

/// The rewrite rule.
#[derive(Debug)]
pub struct UsingJoins;

impl SqlStatementRewriteRule for UsingJoins {
    fn rewrite(&self, mut s: Statement) -> Statement {
        each_query(&mut s, &mut |q| {
            let order_qualified = order_by_names_qualified(q);
            crate::pg_functions::each_select(&mut q.body, &mut |s| {
                rewrite_select(s, order_qualified)
            });
            if let SetExpr::Select(s) = q.body.as_mut() {
                rewrite_order_by(order_by(&mut q.order_by), s);
            }
        });
        s
    }
}

/// `*` of a USING join as PostgreSQL expands it (see the module's comment). Applied to the
/// statement a query is planned from, after its output names were taken.
pub fn expand_using_wildcards(s: &mut Statement) {
    each_query(s, &mut |q| {
        let order_qualified = order_by_names_qualified(q);
        crate::pg_functions::each_select(&mut q.body, &mut |s| expand_select(s, order_qualified));
    });
}

/// Apply `f` to every query of `s`, each after the queries inside it.
fn each_query(s: &mut Statement, f: &mut dyn FnMut(&mut Query)) {
    struct Queries<'a>(&'a mut dyn FnMut(&mut Query));
    impl VisitorMut for Queries<'_> {
        type Break = ();
        fn post_visit_query(&mut self, q: &mut Query) -> ControlFlow<()> {
            (self.0)(q);
            ControlFlow::Continue(())
        }
    }
    let _ = s.visit(&mut Queries(f));
}

fn order_by(
    o: &mut Option<datafusion::sql::sqlparser::ast::OrderBy>,
) -> Option<&mut Vec<OrderByExpr>> {
    match o.as_mut().map(|o| &mut o.kind) {
        Some(OrderByKind::Expressions(exprs)) => Some(exprs),
        _ => None,
    }
}

/// True when the ORDER BY of query `q` over a USING join names a USING column qualified
/// (`ORDER BY b.id`): DataFusion adds it beside the outputs, where an unqualified `id`
/// would be ambiguous.
fn order_by_names_qualified(q: &Query) -> bool {
    let (SetExpr::Select(s), Some(o)) = (q.body.as_ref(), q.order_by.as_ref()) else {
        return false;
    };
    let (Some(merged), OrderByKind::Expressions(exprs)) = (Merged::of(s), &o.kind) else {
        return false;
    };
    exprs.iter().any(|o| {
        let mut found = false;
        let _ = datafusion::sql::sqlparser::ast::visit_expressions(&o.expr, |e| {
            if let Expr::CompoundIdentifier(parts) = e {
                found |= parts.last().is_some_and(|c| merged.column(c).is_some());
            }
            ControlFlow::<()>::Continue(())
        });
        found
    })
}

/// Which value a USING column of the join reads.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Side {
    Left,
    Right,
    Both,
}

/// A join of two named FROM items with USING.
struct Merged {
    columns: Vec<Ident>,
    /// The names the two sides' columns are qualified by.
    left: Vec<Ident>,
    right: Vec<Ident>,
    side: Side,
}

impl Merged {
    fn of(s: &Select) -> Option<Merged> {
        let [from] = s.from.as_slice() else {
            return None;
        };
        let [join] = from.joins.as_slice() else {
            return None;
        };
        let (side, constraint) = match &join.join_operator {
            JoinOperator::Join(c)
            | JoinOperator::Inner(c)
            | JoinOperator::Left(c)
            | JoinOperator::LeftOuter(c) => (Side::Left, c),
            JoinOperator::Right(c) | JoinOperator::RightOuter(c) => (Side::Right, c),
            JoinOperator::FullOuter(c) => (Side::Both, c),
            _ => return None,
        };
        let JoinConstraint::Using(names) = constraint else {
            return None;
        };
        let columns = names
            .iter()
            .map(|n| match n.0.as_slice() {
                [part] => part.as_ident().map(|i| Ident::with_quote('"', folded(i))),
                _ => None,
            })
            .collect::<Option<Vec<Ident>>>()?;
        Some(Merged {
            columns,
            left: factor_name(&from.relation)?,
            right: factor_name(&join.relation)?,
            side,
        })
    }

    /// The merged value of USING column `c`.
    fn value(&self, c: &Ident) -> Expr {
        let of = |side: &[Ident]| {
            let mut parts = side.to_vec();
            parts.push(c.clone());
            Expr::CompoundIdentifier(parts)
        };
        match self.side {
            Side::Left => of(&self.left),
            Side::Right => of(&self.right),
            Side::Both => crate::pg_functions::function_call(
                "coalesce",
                vec![of(&self.left), of(&self.right)],
            ),
        }
    }

    /// The USING column an unqualified identifier names, if any.
    fn column(&self, i: &Ident) -> Option<&Ident> {
        self.columns.iter().find(|c| c.value == folded(i))
    }

    /// True when `item` names a USING column qualified (`a.id`, or `a.*` which has it).
    fn qualified(&self, item: &SelectItem) -> bool {
        match item {
            SelectItem::UnnamedExpr(Expr::CompoundIdentifier(parts)) => {
                parts.last().is_some_and(|c| self.column(c).is_some())
            }
            SelectItem::QualifiedWildcard(..) => true,
            _ => false,
        }
    }

    /// True when `item` is an output named as USING column `c` other than its merged
    /// value (`SELECT *, id`, `SELECT 1 AS id, *`).
    fn names(&self, item: &SelectItem, c: &Ident) -> bool {
        match item {
            SelectItem::UnnamedExpr(Expr::Identifier(i)) => folded(i) == c.value,
            SelectItem::ExprWithAlias { alias, .. } => folded(alias) == c.value,
            _ => false,
        }
    }
}

/// The name a FROM item's columns are qualified by: its alias, else its table's name (as
/// written, `schema.table` too).
fn factor_name(t: &TableFactor) -> Option<Vec<Ident>> {
    match t {
        TableFactor::Table { alias: Some(a), .. } | TableFactor::Derived { alias: Some(a), .. } => {
            Some(vec![a.name.clone()])
        }
        TableFactor::Table {
            name: ObjectName(parts),
            alias: None,
            ..
        } => parts.iter().map(|p| p.as_ident().cloned()).collect(),
        _ => None,
    }
}

/// `order_qualified`: the query's ORDER BY names a USING column qualified.
fn rewrite_select(s: &mut Select, order_qualified: bool) {
    let Some(merged) = Merged::of(s) else {
        return;
    };
    // Beside `a.id`, the merged `id` needs an internal alias: `expand_select` gives it.
    let qualified_too = order_qualified || s.projection.iter().any(|item| merged.qualified(item));
    for item in s.projection.iter_mut() {
        match item {
            SelectItem::UnnamedExpr(Expr::Identifier(i)) => {
                if let (Some(c), false) = (merged.column(i), qualified_too) {
                    *item = SelectItem::ExprWithAlias {
                        expr: merged.value(c),
                        alias: i.clone(),
                    };
                }
            }
            SelectItem::UnnamedExpr(e) => {
                // Named as PostgreSQL names it before the rewrite (`(id)`, `id::text`: id).
                let name = crate::rewrite::figure_colname(e);
                replace_references(e, &merged);
                if let Some(name) =
                    name.filter(|n| crate::rewrite::figure_colname(e).as_ref() != Some(n))
                {
                    let expr = std::mem::replace(
                        e,
                        Expr::value(datafusion::sql::sqlparser::ast::Value::Null),
                    );
                    *item = SelectItem::ExprWithAlias {
                        expr,
                        alias: Ident::with_quote('"', name),
                    };
                }
            }
            SelectItem::ExprWithAlias { expr: e, .. } => replace_references(e, &merged),
            _ => {}
        }
    }
    if let Some(e) = s.selection.as_mut() {
        replace_references(e, &merged);
    }
    if let Some(e) = s.having.as_mut() {
        replace_references(e, &merged);
    }
    if let GroupByExpr::Expressions(exprs, _) = &mut s.group_by {
        for e in exprs {
            replace_references(e, &merged);
        }
    }
    for window in s.named_window.iter_mut() {
        if let NamedWindowExpr::WindowSpec(spec) = &mut window.1 {
            for e in spec.partition_by.iter_mut() {
                replace_references(e, &merged);
            }
            for o in spec.order_by.iter_mut() {
                replace_references(&mut o.expr, &merged);
            }
        }
    }
}

/// ORDER BY of a query over the join: a USING column reads the merged value too, unless
/// the select list gives its name to another expression (`SELECT x AS id ... ORDER BY id`
/// sorts by that output column).
fn rewrite_order_by(order_by: Option<&mut Vec<OrderByExpr>>, s: &Select) {
    let (Some(order_by), Some(merged)) = (order_by, Merged::of(s)) else {
        return;
    };
    // An output named as the column: another expression, or the merged value itself (from
    // `*` or `SELECT id`), which ORDER BY then names as it is (as SELECT DISTINCT needs).
    let named_output = |c: &Ident| {
        s.projection.iter().any(|item| match item {
            SelectItem::ExprWithAlias { alias, .. } => folded(alias) == c.value,
            SelectItem::Wildcard(_) => true,
            _ => false,
        })
    };
    let qualified_too = s.projection.iter().any(|item| merged.qualified(item));
    for o in order_by {
        if let Expr::Identifier(i) = &o.expr {
            if let Some(c) = merged.column(i) {
                if qualified_too || !named_output(c) {
                    o.expr = merged.value(c);
                }
                continue;
            }
        }
        replace_references(&mut o.expr, &merged);
    }
}

/// Unqualified references to a USING column in `e`, outside subqueries, as the merged value.
fn replace_references(e: &mut Expr, merged: &Merged) {
    crate::pg_functions::rewrite_outside_subqueries(e, |e| {
        if let Expr::Identifier(i) = e {
            if let Some(c) = merged.column(i) {
                *e = merged.value(c);
            }
        }
    });
}

/// `order_qualified`: the query's ORDER BY names a USING column qualified.
fn expand_select(s: &mut Select, order_qualified: bool) {
    let Some(merged) = Merged::of(s) else {
        return;
    };
    let plain_star = |item: &SelectItem| {
        matches!(item, SelectItem::Wildcard(o) if *o == WildcardAdditionalOptions {
            wildcard_token: o.wildcard_token.clone(),
            ..Default::default()
        })
    };
    let qualified_too = order_qualified || s.projection.iter().any(|item| merged.qualified(item));
    let has_star = s.projection.iter().any(plain_star);
    if !has_star && !qualified_too {
        return;
    }
    // The merged column under an internal alias when another output has its name or a
    // qualified one is beside it (`SELECT *, id`, `SELECT *, a.id`).
    let internal = |c: &Ident| {
        qualified_too
            || s.projection
                .iter()
                .any(|item| !plain_star(item) && merged.names(item, c))
    };
    let merged_item = |c: &Ident| SelectItem::ExprWithAlias {
        expr: merged.value(c),
        alias: if internal(c) {
            Ident::with_quote('"', format!("{INTERNAL_ALIAS}{}", c.value))
        } else {
            c.clone()
        },
    };
    let except_using = |side: &[Ident]| {
        let names = merged
            .columns
            .iter()
            .map(|c| ObjectName(vec![ObjectNamePart::Identifier(c.clone())]))
            .collect();
        SelectItem::QualifiedWildcard(
            SelectItemQualifiedWildcardKind::ObjectName(ObjectName(
                side.iter()
                    .cloned()
                    .map(ObjectNamePart::Identifier)
                    .collect(),
            )),
            WildcardAdditionalOptions {
                opt_exclude: Some(ExcludeSelectItem::Multiple(names)),
                ..Default::default()
            },
        )
    };
    let mut projection = Vec::with_capacity(s.projection.len() + merged.columns.len() + 2);
    for item in &s.projection {
        match item {
            star if plain_star(star) => {
                projection.extend(merged.columns.iter().map(merged_item));
                projection.push(except_using(&merged.left));
                projection.push(except_using(&merged.right));
            }
            // Left by `UsingJoins` for this case (see `rewrite_select`).
            SelectItem::UnnamedExpr(Expr::Identifier(i)) if merged.column(i).is_some() => {
                if let Some(c) = merged.column(i) {
                    projection.push(merged_item(c));
                }
            }
            // Beside a qualified `*` it was given an internal alias (datafusion-pg-catalog's
            // `AliasDuplicatedProjectionRewrite`).
            SelectItem::ExprWithAlias {
                expr: Expr::Identifier(i),
                alias,
            } if alias.value.starts_with(INTERNAL_ALIAS) && merged.column(i).is_some() => {
                if let Some(c) = merged.column(i) {
                    projection.push(SelectItem::ExprWithAlias {
                        expr: merged.value(c),
                        alias: alias.clone(),
                    });
                }
            }
            other => projection.push(other.clone()),
        }
    }
    s.projection = projection;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::rewritten;
    use datafusion::sql::sqlparser::dialect::PostgreSqlDialect;
    use datafusion::sql::sqlparser::parser::Parser;

    #[test]
    fn right_and_full_joins_read_the_merged_column() {
        let cases = [
            (
                "SELECT id, g FROM a FULL JOIN b USING (id) WHERE id > 1",
                r#"SELECT coalesce(a."id", b."id") AS id, g FROM a FULL JOIN b USING(id) WHERE coalesce(a."id", b."id") > 1"#,
            ),
            (
                "SELECT id + 1 FROM a x RIGHT JOIN b y USING (id) GROUP BY id",
                r#"SELECT y."id" + 1 FROM a x RIGHT JOIN b y USING(id) GROUP BY y."id""#,
            ),
            // `*`, and a select list naming the column qualified too, stay
            (
                "SELECT * FROM a FULL OUTER JOIN b USING (id)",
                "SELECT * FROM a FULL JOIN b USING(id)",
            ),
            (
                "SELECT id, a.id FROM a FULL JOIN b USING (id)",
                "SELECT id, a.id FROM a FULL JOIN b USING(id)",
            ),
            // a subquery's own `id`, a qualified reference and inner/left joins stay
            (
                "SELECT a.id, (SELECT max(id) FROM c) FROM a RIGHT JOIN b USING (id)",
                "SELECT a.id, (SELECT max(id) FROM c) FROM a RIGHT JOIN b USING(id)",
            ),
            // an inner or left join reads the left side's
            (
                "SELECT id FROM a LEFT JOIN b USING (id) WHERE id > 1",
                r#"SELECT a."id" AS id FROM a LEFT JOIN b USING(id) WHERE a."id" > 1"#,
            ),
        ];
        for (sql, want) in cases {
            assert_eq!(rewritten(&UsingJoins, sql), want, "{sql}");
        }
    }

    #[test]
    fn order_by_reads_the_merged_column_unless_an_output_has_its_name() {
        let cases = [
            (
                "SELECT g FROM a FULL JOIN b USING (id) ORDER BY id DESC",
                r#"SELECT g FROM a FULL JOIN b USING(id) ORDER BY coalesce(a."id", b."id") DESC"#,
            ),
            (
                "SELECT g AS id FROM a RIGHT JOIN b USING (id) ORDER BY id",
                "SELECT g AS id FROM a RIGHT JOIN b USING(id) ORDER BY id",
            ),
            (
                "SELECT g FROM a JOIN b USING (id) ORDER BY id",
                r#"SELECT g FROM a JOIN b USING(id) ORDER BY a."id""#,
            ),
        ];
        for (sql, want) in cases {
            assert_eq!(rewritten(&UsingJoins, sql), want, "{sql}");
        }
    }

    #[test]
    fn star_shows_the_using_columns_first_with_their_merged_values() {
        let expanded = |sql: &str| {
            let mut s = Parser::parse_sql(&PostgreSqlDialect {}, sql)
                .expect("test SQL parses")
                .remove(0);
            s = UsingJoins.rewrite(s);
            expand_using_wildcards(&mut s);
            s.to_string()
        };
        let cases = [
            (
                "SELECT * FROM a JOIN b USING (id, d)",
                r#"SELECT a."id" AS "id", a."d" AS "d", a.* EXCLUDE ("id", "d"), b.* EXCLUDE ("id", "d") FROM a JOIN b USING(id, d)"#,
            ),
            (
                "SELECT * FROM a x FULL JOIN b y USING (id) ORDER BY id",
                r#"SELECT coalesce(x."id", y."id") AS "id", x.* EXCLUDE ("id"), y.* EXCLUDE ("id") FROM a x FULL JOIN b y USING(id) ORDER BY id"#,
            ),
            // beside a qualified `id`, the merged one under an internal alias
            (
                "SELECT id, a.id, b.id FROM a FULL JOIN b USING (id)",
                r#"SELECT coalesce(a."id", b."id") AS "__alias_id", a.id, b.id FROM a FULL JOIN b USING(id)"#,
            ),
            (
                "SELECT *, b.id FROM a RIGHT JOIN b USING (id)",
                r#"SELECT b."id" AS "__alias_id", a.* EXCLUDE ("id"), b.* EXCLUDE ("id"), b.id FROM a RIGHT JOIN b USING(id)"#,
            ),
            // NATURAL joins, three items and a `*` with options stay
            (
                "SELECT * FROM a NATURAL JOIN b",
                "SELECT * FROM a NATURAL JOIN b",
            ),
            (
                "SELECT * FROM a JOIN b USING (id) JOIN c USING (id)",
                "SELECT * FROM a JOIN b USING(id) JOIN c USING(id)",
            ),
        ];
        for (sql, want) in cases {
            assert_eq!(expanded(sql), want, "{sql}");
        }
    }
}
