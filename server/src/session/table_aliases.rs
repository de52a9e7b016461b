//! Column aliases that name only the first columns of a table, stream or view in FROM
//! (`FROM t AS x (a)`): PostgreSQL renames those and keeps the other columns' names;
//! DataFusion requires a name for every column. The relation's columns are known only from
//! the catalog, so the list is completed when the statement is executed or described, as
//! NATURAL joins are resolved (`natural_joins.rs`); FROM items that are queries are
//! completed by the parser's rule (`brook_planner::partial_aliases`).

use crate::session::Session;
use brook_planner::partial_aliases::complete_table_aliases;
use brook_planner::{BrookStatement, StatementBody};

impl Session {
    /// `stmt` with the column alias lists of its named FROM items completed (see the
    /// module's comment).
    pub(crate) fn table_aliases_completed(&self, mut stmt: BrookStatement) -> BrookStatement {
        if let StatementBody::Sql(s) = &mut stmt.body {
            complete_table_aliases(s, &|name| self.relation_columns(name));
        }
        stmt
    }
}
