//! Sequence options in any order, as PostgreSQL takes them: sqlparser reads them only in
//! one fixed order (INCREMENT, MINVALUE, MAXVALUE, START, CACHE, CYCLE), and pg_dump
//! writes `START WITH` before `INCREMENT BY`. `CREATE SEQUENCE` is parsed here; the
//! options of an identity column are put in sqlparser's order before the statement is
//! parsed.

use crate::statement::{AlterSequence, SequenceClauses};
use brook_common::{brook_err, Result};
use datafusion::sql::sqlparser::ast::{SequenceOptions, Statement};
use datafusion::sql::sqlparser::dialect::PostgreSqlDialect;
use datafusion::sql::sqlparser::keywords::Keyword;
use datafusion::sql::sqlparser::parser::Parser;
use datafusion::sql::sqlparser::tokenizer::{Token, TokenWithSpan, Tokenizer};

use crate::lexical::{span_bytes, LineOffsets};

/// The rest of a `CREATE [TEMPORARY] SEQUENCE` after `SEQUENCE`.
pub fn parse_create_sequence(p: &mut Parser<'_>, temporary: bool) -> Result<Statement> {
    let if_not_exists = p.parse_keywords(&[Keyword::IF, Keyword::NOT, Keyword::EXISTS]);
    let name = p.parse_object_name(false)?;
    let c = parse_clauses(p, false)?;
    Ok(Statement::CreateSequence {
        temporary,
        if_not_exists,
        name,
        data_type: c.data_type,
        sequence_options: c.options,
        owned_by: c.owned_by,
    })
}

/// The rest of an `ALTER SEQUENCE` after `SEQUENCE` (sqlparser has no ALTER SEQUENCE).
pub fn parse_alter_sequence(p: &mut Parser<'_>) -> Result<AlterSequence> {
    let if_exists = p.parse_keywords(&[Keyword::IF, Keyword::EXISTS]);
    let name = p.parse_object_name(false)?;
    for (words, what) in [
        (&[Keyword::RENAME][..], "RENAME TO"),
        (&[Keyword::SET, Keyword::SCHEMA][..], "SET SCHEMA"),
    ] {
        if p.parse_keywords(words) {
            return Err(brook_err!(Unsupported, "ALTER SEQUENCE ... {what}"));
        }
    }
    let clauses = parse_clauses(p, true)?;
    Ok(AlterSequence {
        name,
        if_exists,
        clauses,
    })
}

/// A sequence's clauses, each at most once, in any order; `RESTART` only in ALTER.
fn parse_clauses(p: &mut Parser<'_>, alter: bool) -> Result<SequenceClauses> {
    let mut c = SequenceClauses::default();
    let mut seen = Vec::new();
    while !matches!(p.peek_token().token, Token::EOF | Token::SemiColon) {
        parse_clause(p, alter, &mut c, &mut seen)?;
    }
    Ok(c)
}

/// One clause into `c` (`seen`: the clauses so far, each allowed once); `RESTART` only
/// when `alter`.
pub(crate) fn parse_clause(
    p: &mut Parser<'_>,
    alter: bool,
    c: &mut SequenceClauses,
    seen: &mut Vec<Keyword>,
) -> Result<()> {
    {
        // NO MINVALUE / NO MAXVALUE / NO CYCLE count as the option they negate.
        let negated = p.parse_keyword(Keyword::NO);
        let option = if negated {
            p.expect_one_of_keywords(&[Keyword::MINVALUE, Keyword::MAXVALUE, Keyword::CYCLE])?
        } else {
            let mut words = vec![
                Keyword::AS,
                Keyword::INCREMENT,
                Keyword::MINVALUE,
                Keyword::MAXVALUE,
                Keyword::START,
                Keyword::CACHE,
                Keyword::CYCLE,
                Keyword::OWNED,
            ];
            if alter {
                words.push(Keyword::RESTART);
            }
            p.expect_one_of_keywords(&words)?
        };
        if seen.contains(&option) {
            return Err(brook_err!(Syntax, "conflicting or redundant options"));
        }
        seen.push(option);
        match option {
            Keyword::AS => c.data_type = Some(p.parse_data_type()?),
            Keyword::INCREMENT => {
                let by = p.parse_keyword(Keyword::BY);
                c.options
                    .push(SequenceOptions::IncrementBy(p.parse_number()?, by));
            }
            Keyword::MINVALUE => c.options.push(SequenceOptions::MinValue(if negated {
                None
            } else {
                Some(p.parse_number()?)
            })),
            Keyword::MAXVALUE => c.options.push(SequenceOptions::MaxValue(if negated {
                None
            } else {
                Some(p.parse_number()?)
            })),
            Keyword::START => {
                let with = p.parse_keyword(Keyword::WITH);
                c.options
                    .push(SequenceOptions::StartWith(p.parse_number()?, with));
            }
            Keyword::CACHE => c.options.push(SequenceOptions::Cache(p.parse_number()?)),
            Keyword::CYCLE => c.options.push(SequenceOptions::Cycle(negated)),
            Keyword::OWNED => {
                p.expect_keyword(Keyword::BY)?;
                c.owned_by = Some(p.parse_object_name(false)?);
            }
            Keyword::RESTART => {
                let with = p.parse_keyword(Keyword::WITH);
                let number = matches!(
                    p.peek_token().token,
                    Token::Number(..) | Token::Minus | Token::Plus
                );
                let value = if with || number {
                    Some(p.parse_number()?)
                } else {
                    None
                };
                c.restart = Some(value);
            }
            other => return Err(brook_err!(Syntax, "syntax error at or near \"{other:?}\"")),
        }
    }
    Ok(())
}

/// Where an option starts in sqlparser's order, by its first word (`NO` by the next);
/// None for a word that starts no option.
pub(crate) fn option_rank(word: &str) -> Option<usize> {
    const ORDER: [&str; 6] = [
        "INCREMENT",
        "MINVALUE",
        "MAXVALUE",
        "START",
        "CACHE",
        "CYCLE",
    ];
    ORDER.iter().position(|o| o.eq_ignore_ascii_case(word))
}

fn word(t: &TokenWithSpan) -> Option<&str> {
    match &t.token {
        Token::Word(w) if w.quote_style.is_none() => Some(&w.value),
        _ => None,
    }
}

/// The tokens that are not whitespace.
fn significant(tokens: &[TokenWithSpan]) -> Vec<&TokenWithSpan> {
    tokens
        .iter()
        .filter(|t| !matches!(t.token, Token::Whitespace(_) | Token::EOF))
        .collect()
}

/// True when token `k` is the word `w` (any case).
fn is_word(words: &[&TokenWithSpan], k: usize, w: &str) -> bool {
    words
        .get(k)
        .and_then(|t| word(t))
        .is_some_and(|x| x.eq_ignore_ascii_case(w))
}

/// `text` with the options of each `AS IDENTITY ( ... )` in sqlparser's order; None when
/// no list is out of that order.
pub fn identity_options_in_order(text: &str) -> Result<Option<String>> {
    if !crate::lexical::mentions(text, "IDENTITY") {
        return Ok(None);
    }
    let Ok(tokens) = Tokenizer::new(&PostgreSqlDialect {}, text).tokenize_with_location() else {
        // The parser reports the error with its position.
        return Ok(None);
    };
    let words = significant(&tokens);
    let is = |k: usize, w: &str| is_word(&words, k, w);
    let mut offsets = LineOffsets::new(text);
    let (mut out, mut copied) = (String::new(), 0usize);
    let mut i = 0;
    while i + 2 < words.len() {
        if !(is(i, "AS") && is(i + 1, "IDENTITY") && words[i + 2].token == Token::LParen) {
            i += 1;
            continue;
        }
        let first = i + 3;
        let Some(close) = (first..words.len()).find(|&k| words[k].token == Token::RParen) else {
            break;
        };
        // Each option: its rank and the byte range of its words.
        let mut options: Vec<(usize, usize, usize)> = Vec::new();
        for k in first..close {
            let w = word(words[k]).unwrap_or("");
            let starts = option_rank(w).is_some() || w.eq_ignore_ascii_case("NO");
            let (a, b) = span_bytes(&mut offsets, words[k]);
            match options.last_mut() {
                Some(last) if !starts || (k > first && is(k - 1, "NO")) => last.2 = b,
                _ => {
                    let named = if w.eq_ignore_ascii_case("NO") {
                        word(words[k + 1]).unwrap_or("")
                    } else {
                        w
                    };
                    options.push((option_rank(named).unwrap_or(ORDER_LAST), a, b));
                }
            }
        }
        let mut sorted = options.clone();
        sorted.sort_by_key(|o| o.0);
        if sorted != options {
            let (start, end) = (options[0].1, options[options.len() - 1].2);
            out.push_str(&text[copied..start]);
            let parts: Vec<&str> = sorted.iter().map(|o| &text[o.1..o.2]).collect();
            out.push_str(&parts.join(" "));
            copied = end;
        }
        i = close + 1;
    }
    if copied == 0 {
        return Ok(None);
    }
    out.push_str(&text[copied..]);
    Ok(Some(out))
}

/// `... ADD GENERATED ... AS IDENTITY (SEQUENCE NAME s ...)` (pg_dump's form) without the
/// `SEQUENCE NAME` option, which sqlparser does not read. Brook names an identity
/// column's sequence `<table>_<column>_seq`, as PostgreSQL does by default and as pg_dump
/// then writes it; another name is 0A000 rather than silently a different sequence.
/// None when the text has no such option.
pub fn identity_sequence_name(text: &str) -> Result<Option<String>> {
    let m = |w| crate::lexical::mentions(text, w);
    if !(m("IDENTITY") && m("SEQUENCE") && m("NAME")) {
        return Ok(None);
    }
    let Ok(tokens) = Tokenizer::new(&PostgreSqlDialect {}, text).tokenize_with_location() else {
        return Ok(None);
    };
    let words = significant(&tokens);
    let is = |k: usize, w: &str| is_word(&words, k, w);
    let Some(at) = (0..words.len()).find(|&k| is(k, "SEQUENCE") && is(k + 1, "NAME")) else {
        return Ok(None);
    };
    // the name: words and dots up to the next option or the closing parenthesis
    let mut end = at + 2;
    while end < words.len()
        && (matches!(words[end].token, Token::Period)
            || (word(words[end])
                .is_some_and(|w| option_rank(w).is_none() && !w.eq_ignore_ascii_case("NO"))
                && !matches!(words[end].token, Token::RParen)))
    {
        end += 1;
    }
    let mut offsets = LineOffsets::new(text);
    let (start_byte, _) = span_bytes(&mut offsets, words[at]);
    let given: String = words[at + 2..end]
        .iter()
        .map(|t| t.token.to_string())
        .collect();
    let (_, last_byte) = span_bytes(&mut offsets, words[end - 1]);
    let stripped = format!("{}{}", &text[..start_byte], &text[last_byte..]);
    let stripped = stripped.replace("( )", "").replace("()", "");
    // the name PostgreSQL would choose for the altered column
    let ordered = identity_options_in_order(&stripped)?.unwrap_or_else(|| stripped.clone());
    let parsed = Parser::parse_sql(&PostgreSqlDialect {}, &ordered)?;
    let expected = match parsed.first() {
        Some(Statement::AlterTable(at)) => at.operations.iter().find_map(|op| match op {
            datafusion::sql::sqlparser::ast::AlterTableOperation::AlterColumn {
                column_name,
                ..
            } => {
                let table = at.name.0.last()?.as_ident()?;
                Some(format!(
                    "{}_{}_seq",
                    brook_common::ident::ident_name(table),
                    brook_common::ident::ident_name(column_name)
                ))
            }
            _ => None,
        }),
        _ => None,
    };
    let given_name = Parser::new(&PostgreSqlDialect {})
        .try_with_sql(&given)?
        .parse_object_name(false)?;
    let given_last = given_name
        .0
        .last()
        .and_then(|p| p.as_ident())
        .map(brook_common::ident::ident_name);
    if expected.is_none() || given_last != expected {
        return Err(brook_err!(
            Unsupported,
            "SEQUENCE NAME {given} for an identity column (its sequence is named <table>_<column>_seq)"
        ));
    }
    Ok(Some(ordered))
}

/// The rank of words sqlparser does not read as an option: after the others, so that its
/// error names them.
const ORDER_LAST: usize = 6;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parser::parse_one;

    fn sql(text: &str) -> String {
        parse_one(text).unwrap().as_sql().unwrap().to_string()
    }

    #[test]
    fn options_in_any_order() {
        assert_eq!(
            sql("CREATE SEQUENCE public.t_id_seq AS integer START WITH 1 INCREMENT BY 1 NO MINVALUE NO MAXVALUE CACHE 1"),
            "CREATE SEQUENCE public.t_id_seq AS INTEGER START WITH 1 INCREMENT BY 1 NO MINVALUE NO MAXVALUE CACHE 1"
        );
        assert_eq!(
            sql("create sequence if not exists s cycle start 10 owned by t.a"),
            "CREATE SEQUENCE IF NOT EXISTS s CYCLE START 10 OWNED BY t.a"
        );
        let err = parse_one("CREATE SEQUENCE s START 1 START 2").unwrap_err();
        assert_eq!(err.to_string(), "conflicting or redundant options");
        assert!(parse_one("CREATE SEQUENCE s INCREMENT BY x").is_err());
    }

    #[test]
    fn alter_sequence_clauses() {
        let mut p = Parser::new(&PostgreSqlDialect {})
            .try_with_sql("IF EXISTS public.s OWNED BY public.t.id RESTART INCREMENT 2")
            .unwrap();
        let a = super::parse_alter_sequence(&mut p).unwrap();
        assert!(a.if_exists);
        assert_eq!(a.clauses.owned_by.unwrap().to_string(), "public.t.id");
        assert_eq!(a.clauses.restart, Some(None));
        assert_eq!(a.clauses.options.len(), 1);
        let mut p = Parser::new(&PostgreSqlDialect {})
            .try_with_sql("s RESTART WITH 40")
            .unwrap();
        let a = super::parse_alter_sequence(&mut p).unwrap();
        assert_eq!(a.clauses.restart.unwrap().unwrap().to_string(), "40");
    }

    #[test]
    fn identity_options_in_any_order() {
        assert_eq!(
            sql("CREATE TABLE t (id int GENERATED BY DEFAULT AS IDENTITY (START WITH 100 NO CYCLE INCREMENT BY 10), v text DEFAULT 'it''s')"),
            "CREATE TABLE t (id INT GENERATED BY DEFAULT AS IDENTITY ( INCREMENT BY 10 START WITH 100 NO CYCLE ), v TEXT DEFAULT 'it''s')"
        );
        assert_eq!(
            super::identity_options_in_order(
                "CREATE TABLE t (id int GENERATED ALWAYS AS IDENTITY (INCREMENT 2 START 5))"
            )
            .unwrap(),
            None
        );
    }
}
