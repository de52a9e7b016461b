//! NATURAL joins as PostgreSQL reads them: `a NATURAL JOIN b` is `a JOIN b USING (c, ...)`
//! over the columns both sides have, in the left side's order, and a cross join (`ON
//! true`) when they have none. DataFusion plans NATURAL joins with the left side's value
//! of each common column, so a right or full join's rows from the right side alone had
//! NULL there, and `SELECT *` kept the sides' column order.
//!
//! Which columns the sides have is known only from the catalog, so a statement's NATURAL
//! joins are resolved when it is executed or described (after the statements before it
//! created what it reads), and the parser's rewrites of USING joins
//! (`brook_planner::using_joins`) are run again on the result. As USING joins are, a join
//! of two named relations (tables, streams, views, materialized views) is resolved; a
//! NATURAL join with a subquery, a common table expression or a third item is left as
//! DataFusion plans it (docs/sql.md).

use crate::ident::ident_name;
use crate::session::Session;
use brook_planner::{BrookStatement, StatementBody};
use datafusion::sql::sqlparser::ast::{
    Expr, Ident, JoinConstraint, JoinOperator, ObjectName, ObjectNamePart, Query, SetExpr,
    Statement, TableFactor, TableWithJoins, Value, VisitMut, VisitorMut,
};
use datafusion_pg_catalog::sql::rules::SqlStatementRewriteRule;
use std::collections::HashSet;
use std::ops::ControlFlow;

impl Session {
    /// `stmt` with its NATURAL joins of two named relations written as USING joins (see
    /// the module's comment).
    pub(crate) fn natural_joins_resolved(&self, mut stmt: BrookStatement) -> BrookStatement {
        let StatementBody::Sql(s) = &mut stmt.body else {
            return stmt;
        };
        if !has_natural_join(s) {
            return stmt;
        }
        let ctes = cte_names(s);
        let mut resolver = Resolver {
            session: self,
            ctes: &ctes,
            changed: false,
        };
        let _ = s.visit(&mut resolver);
        if resolver.changed {
            let rewritten = brook_planner::using_joins::UsingJoins.rewrite((**s).clone());
            **s = rewritten;
        }
        stmt
    }

    /// The column names of the relation `name` names, or `None` when it is not a relation
    /// of the catalog (a common table expression, a system table, a missing one).
    pub(super) fn relation_columns(&self, name: &ObjectName) -> Option<Vec<String>> {
        let (schema, rel) = self.resolve(name).ok()?;
        let (meta, _) = self.relation(&schema, &rel).ok()?;
        Some(meta.columns.into_iter().map(|c| c.name).collect())
    }
}

struct Resolver<'a> {
    session: &'a Session,
    ctes: &'a HashSet<String>,
    changed: bool,
}

impl VisitorMut for Resolver<'_> {
    type Break = ();

    fn pre_visit_query(&mut self, q: &mut Query) -> ControlFlow<()> {
        each_from(&mut q.body, &mut |from| self.resolve(from));
        ControlFlow::Continue(())
    }
}

impl Resolver<'_> {
    fn resolve(&mut self, from: &mut TableWithJoins) {
        let [join] = from.joins.as_mut_slice() else {
            return;
        };
        let Some(constraint) = constraint_mut(&mut join.join_operator) else {
            return;
        };
        if !matches!(constraint, JoinConstraint::Natural) {
            return;
        }
        let (Some(left), Some(right)) =
            (self.columns(&from.relation), self.columns(&join.relation))
        else {
            return;
        };
        let common: Vec<ObjectName> = left
            .iter()
            .filter(|c| right.contains(c))
            .map(|c| ObjectName(vec![ObjectNamePart::Identifier(Ident::with_quote('"', c))]))
            .collect();
        *constraint = if common.is_empty() {
            JoinConstraint::On(Expr::Value(Value::Boolean(true).into()))
        } else {
            JoinConstraint::Using(common)
        };
        self.changed = true;
    }

    /// The columns of a FROM item that names a relation of the catalog.
    fn columns(&self, item: &TableFactor) -> Option<Vec<String>> {
        let TableFactor::Table {
            name,
            args: None,
            alias,
            ..
        } = item
        else {
            return None;
        };
        // `a AS x (c1, c2)` renames the columns: left as DataFusion plans it.
        if alias.as_ref().is_some_and(|a| !a.columns.is_empty()) {
            return None;
        }
        if let [ObjectNamePart::Identifier(only)] = name.0.as_slice() {
            if self.ctes.contains(&ident_name(only)) {
                return None;
            }
        }
        self.session.relation_columns(name)
    }
}

/// The constraint of a join that has one (not CROSS JOIN, APPLY, ...).
fn constraint_mut(op: &mut JoinOperator) -> Option<&mut JoinConstraint> {
    match op {
        JoinOperator::Join(c)
        | JoinOperator::Inner(c)
        | JoinOperator::Left(c)
        | JoinOperator::LeftOuter(c)
        | JoinOperator::Right(c)
        | JoinOperator::RightOuter(c)
        | JoinOperator::FullOuter(c) => Some(c),
        _ => None,
    }
}

/// Call `f` on each FROM item of the SELECTs of `body` (set operations' too; nested
/// queries are visited on their own).
fn each_from(body: &mut SetExpr, f: &mut dyn FnMut(&mut TableWithJoins)) {
    match body {
        SetExpr::Select(s) => s.from.iter_mut().for_each(&mut *f),
        SetExpr::SetOperation { left, right, .. } => {
            each_from(left, f);
            each_from(right, f);
        }
        _ => {}
    }
}

/// Whether `s` has a NATURAL join anywhere (most statements have none: they are left
/// untouched, without a look at the catalog).
fn has_natural_join(s: &mut Statement) -> bool {
    struct Find;
    impl VisitorMut for Find {
        type Break = ();
        fn pre_visit_query(&mut self, q: &mut Query) -> ControlFlow<()> {
            let mut found = false;
            each_from(&mut q.body, &mut |from| {
                found |= from.joins.iter_mut().any(|j| {
                    constraint_mut(&mut j.join_operator)
                        .is_some_and(|c| matches!(c, JoinConstraint::Natural))
                });
            });
            if found {
                ControlFlow::Break(())
            } else {
                ControlFlow::Continue(())
            }
        }
    }
    s.visit(&mut Find).is_break()
}

/// The names of the common table expressions anywhere in `s` (a NATURAL join naming one
/// is left alone: its columns are not in the catalog).
fn cte_names(s: &mut Statement) -> HashSet<String> {
    struct Names(HashSet<String>);
    impl VisitorMut for Names {
        type Break = ();
        fn pre_visit_query(&mut self, q: &mut Query) -> ControlFlow<()> {
            if let Some(with) = &q.with {
                for cte in &with.cte_tables {
                    self.0.insert(ident_name(&cte.alias.name));
                }
            }
            ControlFlow::Continue(())
        }
    }
    let mut names = Names(HashSet::new());
    let _ = s.visit(&mut names);
    names.0
}
