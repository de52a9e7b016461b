//! Column aliases that name only the first columns of a table, stream or view in FROM
//! (`FROM t AS x (a)`): PostgreSQL renames those and keeps the other columns' names;
//! DataFusion requires a name for every column. The relation's columns are known only from
//! the catalog, so the list is completed when the statement is executed or described, as
//! NATURAL joins are resolved (`natural_joins.rs`); FROM items that are queries are
//! completed by the parser's rule (`brook_planner::partial_aliases`).

use crate::ident::ident_name;
use crate::session::Session;
use brook_planner::partial_aliases::complete;
use brook_planner::{BrookStatement, StatementBody};
use datafusion::sql::sqlparser::ast::{ObjectNamePart, Query, TableFactor, VisitMut, VisitorMut};
use std::collections::HashSet;
use std::ops::ControlFlow;

impl Session {
    /// `stmt` with the column alias lists of its named FROM items completed (see the
    /// module's comment).
    pub(crate) fn table_aliases_completed(&self, mut stmt: BrookStatement) -> BrookStatement {
        let StatementBody::Sql(s) = &mut stmt.body else {
            return stmt;
        };
        let mut completer = Completer {
            session: self,
            ctes: HashSet::new(),
        };
        let _ = s.visit(&mut completer);
        stmt
    }
}

struct Completer<'a> {
    session: &'a Session,
    /// `WITH` names seen so far: a FROM item naming one is not the catalog's relation.
    ctes: HashSet<String>,
}

impl VisitorMut for Completer<'_> {
    type Break = ();

    fn pre_visit_query(&mut self, q: &mut Query) -> ControlFlow<()> {
        if let Some(with) = &q.with {
            for cte in &with.cte_tables {
                self.ctes.insert(ident_name(&cte.alias.name));
            }
        }
        ControlFlow::Continue(())
    }

    fn pre_visit_table_factor(&mut self, t: &mut TableFactor) -> ControlFlow<()> {
        let TableFactor::Table {
            name,
            args: None,
            alias: Some(alias),
            ..
        } = t
        else {
            return ControlFlow::Continue(());
        };
        if alias.columns.is_empty() {
            return ControlFlow::Continue(());
        }
        if let [ObjectNamePart::Identifier(only)] = name.0.as_slice() {
            if self.ctes.contains(&ident_name(only)) {
                return ControlFlow::Continue(());
            }
        }
        if let Some(columns) = self.session.relation_columns(name) {
            complete(alias, &columns);
        }
        ControlFlow::Continue(())
    }
}
