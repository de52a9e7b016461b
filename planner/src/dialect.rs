//! PostgreSQL's dialect of sqlparser with what PostgreSQL reads and that dialect does not:
//! `x BETWEEN SYMMETRIC a AND b` (and `ASYMMETRIC`), and, in a statement holding it,
//! `MATCH_RECOGNIZE`, which only sqlparser's generic and Oracle-like dialects read. Such a
//! statement is read as PostgreSQL reads everything else in it (`^` is a power, `|/` a
//! square root, `E'...'` an escape string), not as the generic dialect does.
//!
//! Written by hand: sqlparser has no way to add one feature to a dialect. Every method
//! PostgreSQL's dialect defines is passed on to it (the list of sqlparser 0.62's
//! `impl Dialect for PostgreSqlDialect`) but one (`?` with `MATCH_RECOGNIZE`, below), and
//! the dialect reports itself as PostgreSQL's for the parser's own dialect checks.

use datafusion::sql::sqlparser::ast::{BinaryOperator, Expr};
use datafusion::sql::sqlparser::dialect::{Dialect, PostgreSqlDialect, Precedence};
use datafusion::sql::sqlparser::keywords::Keyword;
use datafusion::sql::sqlparser::parser::{Parser, ParserError};
use datafusion::sql::sqlparser::tokenizer::Token;
use std::any::TypeId;

/// PostgreSQL's dialect, reading `BETWEEN SYMMETRIC` and, when `match_recognize` is set,
/// `MATCH_RECOGNIZE`.
#[derive(Debug, Default, Clone, Copy)]
pub struct BrookDialect {
    pub match_recognize: bool,
}

/// The dialect for statements holding `MATCH_RECOGNIZE`.
pub const WITH_MATCH_RECOGNIZE: BrookDialect = BrookDialect {
    match_recognize: true,
};

impl Dialect for BrookDialect {
    fn dialect(&self) -> TypeId {
        TypeId::of::<PostgreSqlDialect>()
    }

    fn supports_match_recognize(&self) -> bool {
        self.match_recognize
    }

    fn parse_infix(
        &self,
        parser: &mut Parser<'_>,
        expr: &Expr,
        _precedence: u8,
    ) -> Option<Result<Expr, ParserError>> {
        between_symmetric(parser, expr)
    }

    fn identifier_quote_style(&self, identifier: &str) -> Option<char> {
        PostgreSqlDialect {}.identifier_quote_style(identifier)
    }

    fn is_delimited_identifier_start(&self, ch: char) -> bool {
        PostgreSqlDialect {}.is_delimited_identifier_start(ch)
    }

    fn is_identifier_start(&self, ch: char) -> bool {
        PostgreSqlDialect {}.is_identifier_start(ch)
    }

    fn is_identifier_part(&self, ch: char) -> bool {
        PostgreSqlDialect {}.is_identifier_part(ch)
    }

    fn supports_unicode_string_literal(&self) -> bool {
        PostgreSqlDialect {}.supports_unicode_string_literal()
    }

    fn is_reserved_for_identifier(&self, kw: Keyword) -> bool {
        PostgreSqlDialect {}.is_reserved_for_identifier(kw)
    }

    fn is_custom_operator_part(&self, ch: char) -> bool {
        PostgreSqlDialect {}.is_custom_operator_part(ch)
    }

    fn get_next_precedence(&self, parser: &Parser<'_>) -> Option<Result<u8, ParserError>> {
        PostgreSqlDialect {}.get_next_precedence(parser)
    }

    fn supports_filter_during_aggregation(&self) -> bool {
        PostgreSqlDialect {}.supports_filter_during_aggregation()
    }

    fn supports_group_by_expr(&self) -> bool {
        PostgreSqlDialect {}.supports_group_by_expr()
    }

    fn prec_value(&self, prec: Precedence) -> u8 {
        PostgreSqlDialect {}.prec_value(prec)
    }

    fn allow_extract_custom(&self) -> bool {
        PostgreSqlDialect {}.allow_extract_custom()
    }

    fn allow_extract_single_quotes(&self) -> bool {
        PostgreSqlDialect {}.allow_extract_single_quotes()
    }

    fn supports_create_index_with_clause(&self) -> bool {
        PostgreSqlDialect {}.supports_create_index_with_clause()
    }

    fn supports_explain_with_utility_options(&self) -> bool {
        PostgreSqlDialect {}.supports_explain_with_utility_options()
    }

    fn supports_listen_notify(&self) -> bool {
        PostgreSqlDialect {}.supports_listen_notify()
    }

    fn supports_factorial_operator(&self) -> bool {
        PostgreSqlDialect {}.supports_factorial_operator()
    }

    fn supports_bitwise_shift_operators(&self) -> bool {
        PostgreSqlDialect {}.supports_bitwise_shift_operators()
    }

    fn supports_comment_on(&self) -> bool {
        PostgreSqlDialect {}.supports_comment_on()
    }

    fn supports_load_extension(&self) -> bool {
        PostgreSqlDialect {}.supports_load_extension()
    }

    fn supports_named_fn_args_with_colon_operator(&self) -> bool {
        PostgreSqlDialect {}.supports_named_fn_args_with_colon_operator()
    }

    fn supports_named_fn_args_with_expr_name(&self) -> bool {
        PostgreSqlDialect {}.supports_named_fn_args_with_expr_name()
    }

    fn supports_empty_projections(&self) -> bool {
        PostgreSqlDialect {}.supports_empty_projections()
    }

    fn supports_nested_comments(&self) -> bool {
        PostgreSqlDialect {}.supports_nested_comments()
    }

    fn supports_string_escape_constant(&self) -> bool {
        PostgreSqlDialect {}.supports_string_escape_constant()
    }

    fn supports_numeric_literal_underscores(&self) -> bool {
        PostgreSqlDialect {}.supports_numeric_literal_underscores()
    }

    fn supports_array_typedef_with_brackets(&self) -> bool {
        PostgreSqlDialect {}.supports_array_typedef_with_brackets()
    }

    // A `?` is a pattern's quantifier (`a?`, `a+?`), which sqlparser reads as a placeholder
    // token; PostgreSQL's geometric operators would make it an operator (the operators
    // starting with `?` — geometric and jsonb — are not read in a statement holding the
    // clause).
    fn supports_geometric_types(&self) -> bool {
        !self.match_recognize && PostgreSqlDialect {}.supports_geometric_types()
    }

    fn supports_set_names(&self) -> bool {
        PostgreSqlDialect {}.supports_set_names()
    }

    fn supports_alter_column_type_using(&self) -> bool {
        PostgreSqlDialect {}.supports_alter_column_type_using()
    }

    fn supports_notnull_operator(&self) -> bool {
        PostgreSqlDialect {}.supports_notnull_operator()
    }

    fn supports_interval_options(&self) -> bool {
        PostgreSqlDialect {}.supports_interval_options()
    }

    fn supports_insert_table_alias(&self) -> bool {
        PostgreSqlDialect {}.supports_insert_table_alias()
    }

    fn supports_create_table_like_parenthesized(&self) -> bool {
        PostgreSqlDialect {}.supports_create_table_like_parenthesized()
    }

    fn supports_select_wildcard_with_alias(&self) -> bool {
        PostgreSqlDialect {}.supports_select_wildcard_with_alias()
    }

    fn supports_comma_separated_trim(&self) -> bool {
        PostgreSqlDialect {}.supports_comma_separated_trim()
    }

    fn supports_xml_expressions(&self) -> bool {
        PostgreSqlDialect {}.supports_xml_expressions()
    }

    fn supports_comment_optimizer_hint(&self) -> bool {
        PostgreSqlDialect {}.supports_comment_optimizer_hint()
    }
}

/// `x [NOT] BETWEEN SYMMETRIC a AND b` as PostgreSQL reads it (`transformAExprBetween`):
/// `x BETWEEN a AND b OR x BETWEEN b AND a`, and negated `x NOT BETWEEN a AND b AND x NOT
/// BETWEEN b AND a`; `ASYMMETRIC` is the plain BETWEEN. `None` when the next tokens are not
/// such a BETWEEN (the parser goes on as usual).
fn between_symmetric(parser: &mut Parser<'_>, expr: &Expr) -> Option<Result<Expr, ParserError>> {
    let word = |n: usize| match &parser.peek_nth_token_ref(n).token {
        Token::Word(w) => Some(w.keyword),
        _ => None,
    };
    let negated = word(0) == Some(Keyword::NOT);
    let at = usize::from(negated);
    let symmetric = match (word(at), word(at + 1)) {
        (Some(Keyword::BETWEEN), Some(Keyword::SYMMETRIC)) => true,
        (Some(Keyword::BETWEEN), Some(Keyword::ASYMMETRIC)) => false,
        _ => return None,
    };
    for _ in 0..at + 2 {
        parser.next_token();
    }
    let between = match parser.parse_between(expr.clone(), negated) {
        Ok(b) => b,
        Err(e) => return Some(Err(e)),
    };
    let Expr::Between { low, high, .. } = &between else {
        return Some(Ok(between));
    };
    if !symmetric {
        return Some(Ok(between));
    }
    let swapped = Expr::Between {
        expr: Box::new(expr.clone()),
        negated,
        low: high.clone(),
        high: low.clone(),
    };
    let op = if negated {
        BinaryOperator::And
    } else {
        BinaryOperator::Or
    };
    Some(Ok(Expr::Nested(Box::new(Expr::BinaryOp {
        left: Box::new(between),
        op,
        right: Box::new(swapped),
    }))))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_postgres_operators_and_the_clause() {
        let sql = "SELECT 2 ^ 3, |/ 16.0, E'it\\'s' FROM t MATCH_RECOGNIZE (ORDER BY x \
                   MEASURES LAST(x) ^ 2 AS p PATTERN (^ a+? b* c{2,} $) DEFINE a AS x > PREV(x))";
        let stmts = Parser::parse_sql(&WITH_MATCH_RECOGNIZE, sql).unwrap();
        let text = stmts[0].to_string();
        assert!(text.contains("2 ^ 3"), "{text}");
        assert!(text.contains("MATCH_RECOGNIZE"), "{text}");
        let datafusion::sql::sqlparser::ast::Statement::Query(q) = &stmts[0] else {
            panic!("{text}")
        };
        let datafusion::sql::sqlparser::ast::SetExpr::Select(s) = q.body.as_ref() else {
            panic!("{text}")
        };
        let datafusion::sql::sqlparser::ast::SelectItem::UnnamedExpr(
            datafusion::sql::sqlparser::ast::Expr::BinaryOp { op, .. },
        ) = &s.projection[0]
        else {
            panic!("{text}")
        };
        assert_eq!(*op, datafusion::sql::sqlparser::ast::BinaryOperator::PGExp);
    }

    fn parsed(sql: &str) -> String {
        let dialect = BrookDialect::default();
        Parser::parse_sql(&dialect, sql).unwrap()[0].to_string()
    }

    #[test]
    fn between_symmetric_is_both_orders() {
        assert_eq!(
            parsed("SELECT x BETWEEN SYMMETRIC 3 AND 1"),
            "SELECT (x BETWEEN 3 AND 1 OR x BETWEEN 1 AND 3)"
        );
        assert_eq!(
            parsed("SELECT x NOT BETWEEN SYMMETRIC a + 1 AND b FROM t WHERE y"),
            "SELECT (x NOT BETWEEN a + 1 AND b AND x NOT BETWEEN b AND a + 1) FROM t WHERE y"
        );
        assert_eq!(
            parsed("SELECT x BETWEEN ASYMMETRIC 1 AND 3 AND y"),
            "SELECT x BETWEEN 1 AND 3 AND y"
        );
        // Not a BETWEEN keyword pair: the parser reads it as usual.
        assert_eq!(
            parsed("SELECT x BETWEEN 1 AND 3"),
            "SELECT x BETWEEN 1 AND 3"
        );
        // jsonb's `?` is an operator outside MATCH_RECOGNIZE.
        assert!(parsed("SELECT j ? 'a' FROM t").contains('?'));
    }
}
