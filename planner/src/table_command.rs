//! `TABLE name`, SQL's short form of `SELECT * FROM name`. PostgreSQL takes it as a
//! statement and wherever a SELECT may stand. sqlparser reads it as a query's body or an
//! operand of a set operation (`WITH x AS (...) TABLE x`, `SELECT ... UNION TABLE b`) but
//! not as a statement (a syntax error) nor in FROM or after INSERT, and DataFusion
//! plans no `SetExpr::Table` (0A000): a statement that starts with it is read with
//! `SELECT * FROM` in its place ([`select_star_text`]), and the rest become
//! `SELECT * FROM name` in the tree ([`TableCommands`]).

use crate::lexical::{span_bytes, LineOffsets};
use datafusion::sql::sqlparser::ast::{
    Ident, ObjectName, Query, SetExpr, Statement, Table, VisitMut, VisitorMut,
};
use datafusion::sql::sqlparser::dialect::PostgreSqlDialect;
use datafusion::sql::sqlparser::keywords::Keyword;
use datafusion::sql::sqlparser::parser::Parser;
use datafusion::sql::sqlparser::tokenizer::{Token, Tokenizer};
use datafusion_pg_catalog::sql::rules::SqlStatementRewriteRule;
use std::ops::ControlFlow;

/// The statement text with its leading `TABLE` keyword read as `SELECT * FROM`, when it
/// starts so (None otherwise).
pub(crate) fn select_star_text(text: &str) -> Option<String> {
    let tokens = Tokenizer::new(&PostgreSqlDialect {}, text)
        .tokenize_with_location()
        .ok()?;
    let first = tokens
        .iter()
        .find(|t| !matches!(t.token, Token::Whitespace(_)))?;
    let Token::Word(w) = &first.token else {
        return None;
    };
    if w.keyword != Keyword::TABLE || w.quote_style.is_some() {
        return None;
    }
    let (start, end) = span_bytes(&mut LineOffsets::new(text), first);
    Some(format!("{}SELECT * FROM{}", &text[..start], &text[end..]))
}

/// Every `TABLE name` inside a statement as `SELECT * FROM name`.
#[derive(Debug)]
pub struct TableCommands;

impl SqlStatementRewriteRule for TableCommands {
    fn rewrite(&self, mut s: Statement) -> Statement {
        let _ = s.visit(&mut Tables);
        s
    }
}

struct Tables;

impl VisitorMut for Tables {
    type Break = ();

    fn pre_visit_query(&mut self, q: &mut Query) -> ControlFlow<()> {
        select_star(&mut q.body);
        ControlFlow::Continue(())
    }
}

/// The `TABLE name` operands of a query body (and of its set operations) as selects.
fn select_star(body: &mut SetExpr) {
    match body {
        SetExpr::Table(t) => {
            if let Some(select) = select_star_from(t) {
                *body = select;
            }
        }
        SetExpr::SetOperation { left, right, .. } => {
            select_star(left);
            select_star(right);
        }
        _ => {}
    }
}

fn select_star_from(t: &Table) -> Option<SetExpr> {
    let name = ObjectName::from(
        t.schema_name
            .iter()
            .chain(t.table_name.iter())
            .map(|n| Ident::new(n.as_str()))
            .collect::<Vec<_>>(),
    );
    let sql = format!("SELECT * FROM {name}");
    let mut parsed = Parser::parse_sql(&PostgreSqlDialect {}, &sql).ok()?;
    match parsed.pop()? {
        Statement::Query(q) => Some(*q.body),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::rewritten;

    #[test]
    fn a_leading_table_keyword_reads_as_select_star() {
        assert_eq!(
            select_star_text("TABLE t ORDER BY 1").as_deref(),
            Some("SELECT * FROM t ORDER BY 1")
        );
        assert_eq!(
            select_star_text("  table s.t").as_deref(),
            Some("  SELECT * FROM s.t")
        );
        assert_eq!(select_star_text("SELECT 1"), None);
        assert_eq!(select_star_text("\"table\""), None);
    }

    #[test]
    fn table_operands_become_selects() {
        assert_eq!(
            rewritten(&TableCommands, "SELECT * FROM a UNION TABLE s.b"),
            "SELECT * FROM a UNION SELECT * FROM s.b"
        );
        assert_eq!(
            rewritten(&TableCommands, "WITH x AS (SELECT 1) TABLE x"),
            "WITH x AS (SELECT 1) SELECT * FROM x"
        );
    }
}
