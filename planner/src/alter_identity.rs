//! `ALTER TABLE t ALTER [COLUMN] c { SET GENERATED { ALWAYS | BY DEFAULT } | SET
//! sequence_option | RESTART [[WITH] n] } ...`: an identity column's options, as PostgreSQL
//! takes them (sqlparser reads none of them). The sequence options are those of `ALTER
//! SEQUENCE`, applied to the sequence the column owns.

use crate::create_sequence::{option_rank, parse_clause};
use crate::statement::{AlterIdentity, SequenceClauses};
use brook_common::Result;
use datafusion::sql::sqlparser::dialect::PostgreSqlDialect;
use datafusion::sql::sqlparser::keywords::Keyword;
use datafusion::sql::sqlparser::parser::Parser;
use datafusion::sql::sqlparser::tokenizer::{Token, Tokenizer};

/// `text` as an identity column's ALTER, or None when it is another statement.
pub fn parse_alter_identity(text: &str) -> Result<Option<AlterIdentity>> {
    if !is_alter_identity(text) {
        return Ok(None);
    }
    let dialect = PostgreSqlDialect {};
    let mut p = Parser::new(&dialect).try_with_sql(text)?;
    p.expect_keywords(&[Keyword::ALTER, Keyword::TABLE])?;
    let if_exists = p.parse_keywords(&[Keyword::IF, Keyword::EXISTS]);
    let _only = p.parse_keyword(Keyword::ONLY);
    let table = p.parse_object_name(false)?;
    p.expect_keyword(Keyword::ALTER)?;
    let _column = p.parse_keyword(Keyword::COLUMN);
    let column = p.parse_identifier()?;
    let mut generated_always = None;
    let mut clauses = SequenceClauses::default();
    let mut seen = Vec::new();
    loop {
        if matches!(p.peek_token().token, Token::EOF | Token::SemiColon) {
            break;
        }
        if p.parse_keyword(Keyword::RESTART) {
            p.prev_token();
            parse_clause(&mut p, true, &mut clauses, &mut seen)?;
            continue;
        }
        p.expect_keyword(Keyword::SET)?;
        if p.parse_keyword(Keyword::GENERATED) {
            generated_always = Some(if p.parse_keyword(Keyword::ALWAYS) {
                true
            } else {
                p.expect_keywords(&[Keyword::BY, Keyword::DEFAULT])?;
                false
            });
            continue;
        }
        parse_clause(&mut p, false, &mut clauses, &mut seen)?;
    }
    while p.consume_token(&Token::SemiColon) {}
    p.expect_token(&Token::EOF)?;
    Ok(Some(AlterIdentity {
        table,
        if_exists,
        column,
        generated_always,
        clauses,
    }))
}

/// Whether `text` is `ALTER TABLE ... ALTER [COLUMN] c` followed by `RESTART` or `SET`
/// and an identity option (not `SET DEFAULT`, `SET NOT NULL`, `SET DATA TYPE`).
fn is_alter_identity(text: &str) -> bool {
    let alter = text
        .trim_start()
        .get(..5)
        .is_some_and(|w| w.eq_ignore_ascii_case("alter"));
    if !alter
        || !(crate::lexical::mentions(text, "RESTART") || crate::lexical::mentions(text, "SET"))
    {
        return false;
    }
    let Ok(tokens) = Tokenizer::new(&PostgreSqlDialect {}, text).tokenize() else {
        return false;
    };
    let words: Vec<&Token> = tokens
        .iter()
        .filter(|t| !matches!(t, Token::Whitespace(_)))
        .collect();
    let is = |k: usize, w: &str| matches!(words.get(k), Some(Token::Word(x)) if x.quote_style.is_none() && x.value.eq_ignore_ascii_case(w));
    if !(is(0, "ALTER") && is(1, "TABLE")) {
        return false;
    }
    let mut k = 2;
    if is(k, "IF") && is(k + 1, "EXISTS") {
        k += 2;
    }
    if is(k, "ONLY") {
        k += 1;
    }
    // The table's name: words joined by periods.
    while matches!(words.get(k), Some(Token::Word(_))) {
        k += 1;
        if matches!(words.get(k), Some(Token::Period)) {
            k += 1;
        } else {
            break;
        }
    }
    if !is(k, "ALTER") {
        return false;
    }
    k += 1;
    if is(k, "COLUMN") {
        k += 1;
    }
    if !matches!(words.get(k), Some(Token::Word(_))) {
        return false;
    }
    k += 1;
    // After SET: GENERATED, or a sequence option (`NO CYCLE`, `OWNED BY` among them).
    let option = |w: &str| {
        ["GENERATED", "NO", "OWNED"]
            .iter()
            .any(|o| o.eq_ignore_ascii_case(w))
            || option_rank(w).is_some()
    };
    is(k, "RESTART")
        || (is(k, "SET")
            && matches!(words.get(k + 1), Some(Token::Word(x)) if x.quote_style.is_none() && option(&x.value)))
}

#[cfg(test)]
mod tests {
    use super::parse_alter_identity;

    #[test]
    fn identity_options_are_read() {
        let a = parse_alter_identity("ALTER TABLE s.t ALTER COLUMN id RESTART WITH 100")
            .unwrap()
            .unwrap();
        assert_eq!(a.table.to_string(), "s.t");
        assert_eq!(a.column.value, "id");
        assert!(a.clauses.restart.is_some());
        let a = parse_alter_identity(
            "alter table if exists t alter id set generated always set increment by 5 restart",
        )
        .unwrap()
        .unwrap();
        assert!(a.if_exists);
        assert_eq!(a.generated_always, Some(true));
        assert_eq!(a.clauses.options.len(), 1);
        assert_eq!(a.clauses.restart, Some(None));
        // Other ALTER COLUMN forms are sqlparser's.
        for other in [
            "ALTER TABLE t ALTER COLUMN id SET DEFAULT 1",
            "ALTER TABLE t ALTER COLUMN id SET NOT NULL",
            "ALTER TABLE t ALTER COLUMN id SET DATA TYPE bigint",
            "ALTER TABLE t RENAME COLUMN restart TO r",
        ] {
            assert!(parse_alter_identity(other).unwrap().is_none(), "{other}");
        }
        assert!(parse_alter_identity("ALTER TABLE t ALTER id SET GENERATED SOMETIMES").is_err());
    }
}
