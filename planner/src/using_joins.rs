//! The merged columns of `RIGHT JOIN ... USING` and `FULL JOIN ... USING`.
//!
//! In PostgreSQL a column named in USING is one column of the join: the left side's value
//! in an inner or left join, the right side's in a right join, `COALESCE(left, right)` in a
//! full join. DataFusion always reads the left side's, so a right or full join's rows from
//! the right side alone had NULL there (`SELECT id FROM a FULL JOIN b USING (id)` lost the
//! ids only `b` has: a wrong answer, and the usual way to align two series by time). This
//! rewrite writes the merged column out for such a join of two named FROM items: an
//! unqualified reference to it in the select list, WHERE, GROUP BY and HAVING becomes the
//! right side's column or the COALESCE (named as the column in the select list).
//! Subqueries keep their own scopes. Left as they were: `SELECT *` (DataFusion's
//! expansion takes the left side's column; the select list would have to name every
//! column, which the statement does not show), a select list that also names the column
//! qualified (`SELECT id, a.id`: DataFusion refuses an output `id` beside `a.id` as
//! ambiguous), NATURAL joins, and joins of more than two items or of an unnamed one.

use datafusion::sql::sqlparser::ast::{
    Expr, GroupByExpr, Ident, JoinConstraint, JoinOperator, ObjectName, Select, SelectItem,
    Statement, TableFactor,
};
use datafusion_pg_catalog::sql::rules::SqlStatementRewriteRule;

/// The rewrite rule.
#[derive(Debug)]
pub struct UsingJoins;

impl SqlStatementRewriteRule for UsingJoins {
    fn rewrite(&self, mut s: Statement) -> Statement {
        crate::pg_functions::rewrite_selects(&mut s, rewrite_select);
        s
    }
}

/// How a USING column of the join reads: the right side's, or both coalesced.
struct Merged {
    columns: Vec<Ident>,
    left: Ident,
    right: Ident,
    full: bool,
}

impl Merged {
    fn of(s: &Select) -> Option<Merged> {
        let [from] = s.from.as_slice() else {
            return None;
        };
        let [join] = from.joins.as_slice() else {
            return None;
        };
        let (full, constraint) = match &join.join_operator {
            JoinOperator::Right(c) | JoinOperator::RightOuter(c) => (false, c),
            JoinOperator::FullOuter(c) => (true, c),
            _ => return None,
        };
        let JoinConstraint::Using(names) = constraint else {
            return None;
        };
        let columns = names
            .iter()
            .map(|n| match n.0.as_slice() {
                [part] => part.as_ident().cloned(),
                _ => None,
            })
            .collect::<Option<Vec<Ident>>>()?;
        Some(Merged {
            columns,
            left: factor_name(&from.relation)?,
            right: factor_name(&join.relation)?,
            full,
        })
    }

    /// The merged value of USING column `c`.
    fn value(&self, c: &Ident) -> Expr {
        let of = |side: &Ident| Expr::CompoundIdentifier(vec![side.clone(), c.clone()]);
        if !self.full {
            return of(&self.right);
        }
        crate::pg_functions::function_call("coalesce", vec![of(&self.left), of(&self.right)])
    }

    /// The USING column an unqualified identifier names, if any.
    fn column(&self, i: &Ident) -> Option<&Ident> {
        let folded = |x: &Ident| {
            if x.quote_style.is_some() {
                x.value.clone()
            } else {
                x.value.to_lowercase()
            }
        };
        self.columns.iter().find(|c| folded(c) == folded(i))
    }
}

/// The name a FROM item's columns are qualified by: its alias, else its table's name.
fn factor_name(t: &TableFactor) -> Option<Ident> {
    match t {
        TableFactor::Table { alias: Some(a), .. } | TableFactor::Derived { alias: Some(a), .. } => {
            Some(a.name.clone())
        }
        TableFactor::Table {
            name: ObjectName(parts),
            alias: None,
            ..
        } => parts.last()?.as_ident().cloned(),
        _ => None,
    }
}

fn rewrite_select(s: &mut Select) {
    let Some(merged) = Merged::of(s) else {
        return;
    };
    let qualified_too = s.projection.iter().any(|item| match item {
        SelectItem::UnnamedExpr(Expr::CompoundIdentifier(parts)) => {
            parts.last().is_some_and(|c| merged.column(c).is_some())
        }
        _ => false,
    });
    if qualified_too {
        return;
    }
    for item in s.projection.iter_mut() {
        match item {
            SelectItem::UnnamedExpr(Expr::Identifier(i)) => {
                if let Some(c) = merged.column(i) {
                    *item = SelectItem::ExprWithAlias {
                        expr: merged.value(c),
                        alias: i.clone(),
                    };
                }
            }
            SelectItem::UnnamedExpr(e) | SelectItem::ExprWithAlias { expr: e, .. } => {
                replace_references(e, &merged)
            }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::rewritten;

    #[test]
    fn right_and_full_joins_read_the_merged_column() {
        let cases = [
            (
                "SELECT id, g FROM a FULL JOIN b USING (id) WHERE id > 1",
                "SELECT coalesce(a.id, b.id) AS id, g FROM a FULL JOIN b USING(id) WHERE coalesce(a.id, b.id) > 1",
            ),
            (
                "SELECT id + 1 FROM a x RIGHT JOIN b y USING (id) GROUP BY id",
                "SELECT y.id + 1 FROM a x RIGHT JOIN b y USING(id) GROUP BY y.id",
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
            (
                "SELECT id FROM a LEFT JOIN b USING (id)",
                "SELECT id FROM a LEFT JOIN b USING(id)",
            ),
        ];
        for (sql, want) in cases {
            assert_eq!(rewritten(&UsingJoins, sql), want, "{sql}");
        }
    }
}
