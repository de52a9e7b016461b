//! `TABLE name`, SQL's short form of `SELECT * FROM name`, where PostgreSQL takes it: as a
//! statement, as an operand of UNION / INTERSECT / EXCEPT, and in parentheses (`(TABLE t)`,
//! `WITH x AS (TABLE t)`, `COPY (TABLE t) TO STDOUT`). sqlparser does not read it as a
//! statement or in parentheses, and where it does read it (after a set operator) it takes
//! the two tokens after the name as well (`UNION ALL TABLE b LIMIT 1` lost its LIMIT) and
//! drops quotes; DataFusion plans none of it. So the text is rewritten before parsing: the
//! keyword becomes `SELECT * FROM`, with `ONLY` and a trailing `*` (inheritance, which
//! Brook has none of) dropped. Only a name may follow, then the end of the query or one of
//! the clauses a query may go on with; other text (`TABLE a, b`, `TABLE t WHERE ...`) is
//! 42601 as in PostgreSQL.

use crate::lexical::{mentions, span_bytes, LineOffsets};
use brook_common::{brook_err, Result};
use datafusion::sql::sqlparser::dialect::PostgreSqlDialect;
use datafusion::sql::sqlparser::tokenizer::{Token, TokenWithSpan, Tokenizer};

/// Words after which `TABLE` starts a query operand.
const BEFORE: [&str; 5] = ["UNION", "INTERSECT", "EXCEPT", "ALL", "DISTINCT"];

/// Words that may follow `TABLE name`.
const AFTER: [&str; 8] = [
    "UNION",
    "INTERSECT",
    "EXCEPT",
    "ORDER",
    "LIMIT",
    "OFFSET",
    "FETCH",
    "FOR",
];

/// The statement text with each `TABLE name` operand written as `SELECT * FROM name`; None
/// when it has none.
pub(crate) fn select_star_text(text: &str) -> Result<Option<String>> {
    if !mentions(text, "table") {
        return Ok(None);
    }
    let tokens = Tokenizer::new(&PostgreSqlDialect {}, text)
        .tokenize_with_location()
        .map_err(|e| brook_err!(Syntax, "syntax error: {}", e.message))?;
    let t: Vec<&TokenWithSpan> = tokens
        .iter()
        .filter(|t| !matches!(t.token, Token::Whitespace(_) | Token::EOF))
        .collect();
    let is_word = |k: usize, words: &[&str]| matches!(t.get(k).map(|t| &t.token), Some(Token::Word(w)) if w.quote_style.is_none() && words.iter().any(|x| w.value.eq_ignore_ascii_case(x)));
    let mut offsets = LineOffsets::new(text);
    let mut out = String::new();
    let mut copied = 0;
    for k in 0..t.len() {
        if !is_word(k, &["TABLE"]) {
            continue;
        }
        let operand = k == 0 || matches!(t[k - 1].token, Token::LParen) || is_word(k - 1, &BEFORE);
        if !operand {
            continue;
        }
        // [ONLY] name [. name] [*]
        let mut n = k + 1;
        let only =
            is_word(n, &["ONLY"]) && matches!(t.get(n + 1).map(|t| &t.token), Some(Token::Word(_)));
        if only {
            n += 1;
        }
        if !matches!(t.get(n).map(|t| &t.token), Some(Token::Word(_))) {
            continue;
        }
        let name_start = n;
        if matches!(t.get(n + 1).map(|t| &t.token), Some(Token::Period))
            && matches!(t.get(n + 2).map(|t| &t.token), Some(Token::Word(_)))
        {
            n += 2;
        }
        let name_end = n;
        let star = matches!(t.get(n + 1).map(|t| &t.token), Some(Token::Mul));
        if star {
            n += 1;
        }
        let follows = match t.get(n + 1).map(|t| &t.token) {
            None | Some(Token::RParen) | Some(Token::SemiColon) => true,
            Some(_) => is_word(n + 1, &AFTER),
        };
        if !follows {
            return Err(brook_err!(
                Syntax,
                "syntax error at or near \"{}\"",
                t[n + 1].token
            ));
        }
        let (start, _) = span_bytes(&mut offsets, t[k]);
        let (name_from, _) = span_bytes(&mut offsets, t[name_start]);
        let (_, name_to) = span_bytes(&mut offsets, t[name_end]);
        let (_, end) = span_bytes(&mut offsets, t[n]);
        out.push_str(&text[copied..start]);
        out.push_str("SELECT * FROM ");
        out.push_str(&text[name_from..name_to]);
        copied = end;
    }
    if copied == 0 {
        return Ok(None);
    }
    out.push_str(&text[copied..]);
    Ok(Some(out))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rewritten(sql: &str) -> Option<String> {
        select_star_text(sql).expect("no error")
    }

    #[test]
    fn table_operands_become_selects() {
        assert_eq!(
            rewritten("TABLE t ORDER BY 1").as_deref(),
            Some("SELECT * FROM t ORDER BY 1")
        );
        assert_eq!(
            rewritten("SELECT * FROM a UNION ALL TABLE \"S\".\"B\" LIMIT 1").as_deref(),
            Some("SELECT * FROM a UNION ALL SELECT * FROM \"S\".\"B\" LIMIT 1")
        );
        assert_eq!(
            rewritten("WITH x AS (TABLE ONLY t *) SELECT * FROM (TABLE x) s").as_deref(),
            Some("WITH x AS (SELECT * FROM t) SELECT * FROM (SELECT * FROM x) s")
        );
        assert_eq!(rewritten("CREATE TABLE t (a int)"), None);
        assert_eq!(rewritten("SELECT 'TABLE t'"), None);
        assert_eq!(rewritten("DROP TABLE t"), None);
    }

    #[test]
    fn only_a_name_may_follow() {
        for bad in [
            "TABLE a, b",
            "TABLE t WHERE a = 1",
            "TABLE t x",
            "TABLE t JOIN u USING (a)",
        ] {
            let e = select_star_text(bad).expect_err(bad);
            assert_eq!(e.sqlstate(), "42601", "{bad}");
        }
    }
}
