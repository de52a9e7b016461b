//! The statement text as PostgreSQL's lexer reads it, where sqlparser reads it otherwise:
//! a query string split into statements at top-level semicolons (with each statement's
//! place in the string, for error positions), byte offsets of token locations, and the
//! spellings rewritten before parsing (`OPERATOR(pg_catalog.=)`, `a<>-1`), and Brook's
//! trailing clauses (`EMIT ...`, `WITH ERROR ...`) taken off the text.

use crate::statement::{Emit, ErrorBudget, Overriding};
use brook_common::{brook_err, Result};
use datafusion::sql::sqlparser::dialect::PostgreSqlDialect;
use datafusion::sql::sqlparser::tokenizer::{Token, TokenWithSpan, Tokenizer};

/// Split at top-level semicolons, keeping each statement's original text (the compatibility
/// rewrites match on tokens of the text the client sent).
pub fn split_statements(sql: &str) -> Result<Vec<String>> {
    Ok(split_statements_at(sql)?
        .into_iter()
        .map(|(_, s)| s)
        .collect())
}

/// [`split_statements`], each statement with the byte offset where it starts.
pub(crate) fn split_statements_at(sql: &str) -> Result<Vec<(usize, String)>> {
    let tokens = Tokenizer::new(&PostgreSqlDialect {}, sql)
        .tokenize_with_location()
        .map_err(|e| brook_err!(Syntax, "syntax error: {}", e.message))?;
    let mut offsets = LineOffsets::new(sql);
    let mut out = Vec::new();
    let mut start: Option<usize> = None;
    let mut end = 0usize;
    for t in &tokens {
        match &t.token {
            Token::SemiColon => {
                if let Some(s) = start.take() {
                    out.push((s, sql[s..end].to_string()));
                }
            }
            Token::Whitespace(_) | Token::EOF => {}
            _ => {
                let (s, e) = span_bytes(&mut offsets, t);
                if start.is_none() {
                    start = Some(s);
                }
                end = e;
            }
        }
    }
    if let Some(s) = start {
        out.push((s, sql[s..end].to_string()));
    }
    Ok(out)
}

pub(crate) fn span_bytes(offsets: &mut LineOffsets<'_>, t: &TokenWithSpan) -> (usize, usize) {
    let s = offsets.byte(t.span.start.line, t.span.start.column);
    let e = offsets.byte(t.span.end.line, t.span.end.column);
    (s, e)
}

/// Maps sqlparser's (line, column) locations — 1-based, counted in characters — to byte
/// offsets of the original text. Tokens are asked for in order, so a cursor moves forward
/// through the text: linear in its length however long a line is (walking each line from
/// its start per token made a 100 K-element IN list on one line take a minute).
pub(crate) struct LineOffsets<'a> {
    text: &'a str,
    starts: Vec<usize>,
    /// Where the cursor is: line, column (both 1-based) and byte offset.
    line: u64,
    column: u64,
    byte: usize,
}

impl<'a> LineOffsets<'a> {
    pub(crate) fn new(text: &'a str) -> Self {
        let mut starts = vec![0];
        for (i, c) in text.char_indices() {
            if c == '\n' {
                starts.push(i + 1);
            }
        }
        LineOffsets {
            text,
            starts,
            line: 1,
            column: 1,
            byte: 0,
        }
    }

    pub(crate) fn byte(&mut self, line: u64, column: u64) -> usize {
        if line != self.line || column < self.column {
            let Some(&ls) = self.starts.get(line.saturating_sub(1) as usize) else {
                return self.text.len();
            };
            (self.line, self.column, self.byte) = (line, 1, ls);
        }
        while self.column < column {
            match self.text[self.byte..].chars().next() {
                Some(c) if c != '\n' => {
                    self.byte += c.len_utf8();
                    self.column += 1;
                }
                _ => break,
            }
        }
        self.byte
    }
}

/// The text with each `OPERATOR(pg_catalog.op)` written as the plain operator `op` (the
/// same operator: every operator lives in pg_catalog). psql and pg_dump write them so;
/// sqlparser reads the form between two operands but not before `ANY`/`ALL`
/// (`c.relkind OPERATOR(pg_catalog.=) ANY (array[...])`, pg_dump's `-t`). None when the
/// text has none.
pub(crate) fn plain_catalog_operators(text: &str) -> Result<Option<String>> {
    if !text.contains("OPERATOR(pg_catalog.") {
        return Ok(None);
    }
    let tokens = Tokenizer::new(&PostgreSqlDialect {}, text)
        .tokenize()
        .map_err(|e| brook_err!(Syntax, "syntax error: {}", e.message))?;
    let word = |t: Option<&Token>, w: &str| matches!(t, Some(Token::Word(x)) if x.quote_style.is_none() && x.value.eq_ignore_ascii_case(w));
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < tokens.len() {
        let t = |k: usize| tokens.get(i + k);
        if word(t(0), "OPERATOR")
            && t(1) == Some(&Token::LParen)
            && word(t(2), "pg_catalog")
            && t(3) == Some(&Token::Period)
            && t(5) == Some(&Token::RParen)
        {
            if let Some(op) = t(4) {
                out.push_str(&op.to_string());
                i += 6;
                continue;
            }
        }
        out.push_str(&tokens[i].to_string());
        i += 1;
    }
    Ok(Some(out))
}

/// A window frame's exclusion clause, which sqlparser does not read (a valid statement was
/// a syntax error): `EXCLUDE NO OTHERS`, the default, is taken off the text; `EXCLUDE
/// CURRENT ROW`, `EXCLUDE GROUP` and `EXCLUDE TIES` are 0A000 (DataFusion's frames have
/// no exclusion). None when the text has none (`EXCLUDE` of a table constraint is followed
/// by neither).
pub(crate) fn window_exclusion(text: &str) -> Result<Option<String>> {
    if !mentions(text, "exclude") {
        return Ok(None);
    }
    let tokens = Tokenizer::new(&PostgreSqlDialect {}, text)
        .tokenize_with_location()
        .map_err(|e| brook_err!(Syntax, "syntax error: {}", e.message))?;
    let words: Vec<&TokenWithSpan> = tokens
        .iter()
        .filter(|t| !matches!(t.token, Token::Whitespace(_)))
        .collect();
    let word = |k: usize, w: &str| matches!(words.get(k).map(|t| &t.token), Some(Token::Word(x)) if x.quote_style.is_none() && x.value.eq_ignore_ascii_case(w));
    let mut offsets = LineOffsets::new(text);
    let mut out = String::new();
    let mut copied = 0;
    for k in 0..words.len() {
        if !word(k, "EXCLUDE") {
            continue;
        }
        let excluded = if word(k + 1, "CURRENT") && word(k + 2, "ROW") {
            "CURRENT ROW"
        } else if word(k + 1, "GROUP") {
            "GROUP"
        } else if word(k + 1, "TIES") {
            "TIES"
        } else if word(k + 1, "NO") && word(k + 2, "OTHERS") {
            let (start, _) = span_bytes(&mut offsets, words[k]);
            let (_, end) = span_bytes(&mut offsets, words[k + 2]);
            out.push_str(&text[copied..start]);
            copied = end;
            continue;
        } else {
            continue;
        };
        return Err(brook_err!(
            Unsupported,
            "window frame exclusion EXCLUDE {excluded}"
        ));
    }
    if copied == 0 {
        return Ok(None);
    }
    out.push_str(&text[copied..]);
    Ok(Some(out))
}

/// The text with each `XMLEXISTS(path PASSING [BY REF | BY VALUE] doc [BY REF | BY VALUE])`
/// (SQL/XML's predicate, which sqlparser does not read) written as the call
/// `xpath_exists(path, doc)` — the same test in PostgreSQL. The original text is edited at
/// the keywords' spans, so literals stay as written. None when the text has no such call
/// (the word alone, as a name or in a string, is left to the parser).
pub(crate) fn xmlexists_calls(text: &str) -> Result<Option<String>> {
    if !mentions(text, "xmlexists") {
        return Ok(None);
    }
    let tokens = Tokenizer::new(&PostgreSqlDialect {}, text)
        .tokenize_with_location()
        .map_err(|e| brook_err!(Syntax, "syntax error: {}", e.message))?;
    let word = |k: usize, w: &str| matches!(tokens.get(k).map(|t| &t.token), Some(Token::Word(x)) if x.quote_style.is_none() && x.value.eq_ignore_ascii_case(w));
    let next_solid = |from: usize| {
        (from..tokens.len()).find(|&k| !matches!(tokens[k].token, Token::Whitespace(_)))
    };
    let mut offsets = LineOffsets::new(text);
    // (start byte, end byte, replacement), in text order.
    let mut edits: Vec<(usize, usize, &str)> = Vec::new();
    // Paren depth, and the depths just inside each open XMLEXISTS call.
    let (mut depth, mut calls) = (0usize, Vec::new());
    let mut i = 0;
    while i < tokens.len() {
        if word(i, "xmlexists") {
            if let Some(open) = next_solid(i + 1).filter(|&k| tokens[k].token == Token::LParen) {
                let (start, _) = span_bytes(&mut offsets, &tokens[i]);
                let (_, end) = span_bytes(&mut offsets, &tokens[open]);
                edits.push((start, end, "xpath_exists("));
                depth += 1;
                calls.push(depth);
                i = open + 1;
                continue;
            }
        }
        let inside = calls.last() == Some(&depth);
        if inside && word(i, "passing") {
            let (start, end) = span_bytes(&mut offsets, &tokens[i]);
            edits.push((start, end, ","));
            i += 1;
            continue;
        }
        if inside && word(i, "by") {
            if let Some(k) = next_solid(i + 1).filter(|&k| word(k, "ref") || word(k, "value")) {
                let (start, _) = span_bytes(&mut offsets, &tokens[i]);
                let (_, end) = span_bytes(&mut offsets, &tokens[k]);
                edits.push((start, end, ""));
                i = k + 1;
                continue;
            }
        }
        match tokens[i].token {
            Token::LParen => depth += 1,
            Token::RParen => {
                if calls.last() == Some(&depth) {
                    calls.pop();
                }
                depth = depth.saturating_sub(1);
            }
            _ => {}
        }
        i += 1;
    }
    if edits.is_empty() {
        return Ok(None);
    }
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    for (start, end, with) in edits {
        out.push_str(&text[at..start]);
        out.push_str(with);
        at = end;
    }
    out.push_str(&text[at..]);
    Ok(Some(out))
}

/// The text with a comparison operator glued to the sign of the number after it split in
/// two (`a<>-1` is `a <> -1`): PostgreSQL's lexer drops a trailing `+`/`-` from an
/// operator made only of `< > = !` characters, sqlparser reads `<>-` as one unknown
/// operator. None when the text has none.
pub(crate) fn split_signed_comparisons(text: &str) -> Result<Option<String>> {
    // Most statements have none: look for a comparison character right before a sign
    // before tokenizing the whole text again.
    let b = text.as_bytes();
    let glued_sign = b
        .windows(2)
        .any(|w| matches!(w[0], b'=' | b'<' | b'>') && matches!(w[1], b'-' | b'+'));
    if !glued_sign {
        return Ok(None);
    }
    let tokens = Tokenizer::new(&PostgreSqlDialect {}, text)
        .tokenize()
        .map_err(|e| brook_err!(Syntax, "syntax error: {}", e.message))?;
    let glued = |op: &str| {
        let (head, sign) = op.split_at(op.len().saturating_sub(1));
        matches!(sign, "+" | "-") && matches!(head, "=" | "<>" | "!=" | "<" | ">" | "<=" | ">=")
    };
    if !tokens
        .iter()
        .any(|t| matches!(t, Token::CustomBinaryOperator(op) if glued(op)))
    {
        return Ok(None);
    }
    let mut out = String::with_capacity(text.len() + 4);
    for t in &tokens {
        match t {
            Token::CustomBinaryOperator(op) if glued(op) => {
                let (head, sign) = op.split_at(op.len() - 1);
                out.push_str(head);
                out.push(' ');
                out.push_str(sign);
            }
            other => out.push_str(&other.to_string()),
        }
    }
    Ok(Some(out))
}

/// The tokens of `text` other than whitespace, with their places.
fn significant_tokens(text: &str) -> Result<Vec<TokenWithSpan>> {
    let tokens = Tokenizer::new(&PostgreSqlDialect {}, text)
        .tokenize_with_location()
        .map_err(|e| brook_err!(Syntax, "syntax error: {}", e.message))?;
    Ok(tokens
        .into_iter()
        .filter(|t| !matches!(t.token, Token::Whitespace(_) | Token::EOF))
        .collect())
}

/// True when `t` is the unquoted word `w` (any case).
fn is_word(t: &TokenWithSpan, w: &str) -> bool {
    matches!(&t.token, Token::Word(x) if x.quote_style.is_none() && x.value.eq_ignore_ascii_case(w))
}

/// `text` without its tokens from `first` to `last`.
fn cut_out(text: &str, first: &TokenWithSpan, last: &TokenWithSpan) -> String {
    let mut offsets = LineOffsets::new(text);
    let (start, _) = span_bytes(&mut offsets, first);
    let (_, end) = span_bytes(&mut offsets, last);
    format!("{}{}", &text[..start], &text[end..])
}

/// A query's `EMIT CHANGES` or `EMIT ON WINDOW CLOSE`: the text without it, and which it
/// was.
pub(crate) fn strip_emit(text: &str) -> Result<Option<(String, Emit)>> {
    let words = significant_tokens(text)?;
    let cut = |first: &TokenWithSpan, last: &TokenWithSpan| cut_out(text, first, last);
    for (i, w) in words.iter().enumerate() {
        if !is_word(w, "EMIT") {
            continue;
        }
        let next = |k: usize, word: &str| words.get(i + k).is_some_and(|t| is_word(t, word));
        if next(1, "CHANGES") {
            return Ok(Some((cut(w, &words[i + 1]), Emit::Changes)));
        }
        if next(1, "ON") && next(2, "WINDOW") && next(3, "CLOSE") {
            return Ok(Some((cut(w, &words[i + 3]), Emit::OnWindowClose)));
        }
    }
    Ok(None)
}

/// A `CREATE [OR REPLACE] MATERIALIZED VIEW`'s closing `WITH DATA` or `WITH NO DATA` (as
/// pg_dump writes it): the text without it, and whether it was `NO DATA`; None for any
/// other text.
pub(crate) fn strip_with_data(text: &str) -> Result<Option<(String, bool)>> {
    if !mentions(text, "data") {
        return Ok(None);
    }
    let mut words = significant_tokens(text)?;
    while words
        .last()
        .is_some_and(|t| matches!(t.token, Token::SemiColon))
    {
        words.pop();
    }
    let creates =
        |k: &[&str]| words.len() > k.len() && k.iter().zip(&words).all(|(w, t)| is_word(t, w));
    if !(creates(&["CREATE", "MATERIALIZED", "VIEW"])
        || creates(&["CREATE", "OR", "REPLACE", "MATERIALIZED", "VIEW"]))
    {
        return Ok(None);
    }
    let n = words.len();
    let last = |k: usize, w: &str| n > k && is_word(&words[n - 1 - k], w);
    let (first, no_data) = if last(0, "DATA") && last(1, "NO") && last(2, "WITH") {
        (n - 3, true)
    } else if last(0, "DATA") && last(1, "WITH") {
        (n - 2, false)
    } else {
        return Ok(None);
    };
    Ok(Some((cut_out(text, &words[first], &words[n - 1]), no_data)))
}

/// An INSERT's `OVERRIDING SYSTEM VALUE` or `OVERRIDING USER VALUE` where PostgreSQL's
/// grammar has it: outside parentheses, before the VALUES or query (`SELECT`, `WITH`,
/// `TABLE`) and right before it. The text without it, and which it was; None elsewhere
/// (a trailing clause stays a syntax error).
pub(crate) fn strip_overriding(text: &str) -> Result<Option<(String, Overriding)>> {
    let words = significant_tokens(text)?;
    if !words.first().is_some_and(|t| is_word(t, "INSERT")) {
        return Ok(None);
    }
    let starts_source = |t: &TokenWithSpan| {
        ["VALUES", "SELECT", "WITH", "TABLE", "DEFAULT"]
            .iter()
            .any(|w| is_word(t, w))
    };
    let mut depth = 0i32;
    for (i, w) in words.iter().enumerate() {
        match &w.token {
            Token::LParen => depth += 1,
            Token::RParen => depth -= 1,
            _ => {}
        }
        if depth != 0 {
            continue;
        }
        // Past the start of the rows, an OVERRIDING is not the clause.
        if starts_source(w) {
            return Ok(None);
        }
        if !is_word(w, "OVERRIDING") {
            continue;
        }
        let next = |k: usize, word: &str| words.get(i + k).is_some_and(|t| is_word(t, word));
        let which = if next(1, "SYSTEM") {
            Overriding::SystemValue
        } else if next(1, "USER") {
            Overriding::UserValue
        } else {
            return Ok(None);
        };
        let source_follows = words.get(i + 3).is_some_and(|t| {
            ["VALUES", "SELECT", "WITH", "TABLE"]
                .iter()
                .any(|word| is_word(t, word))
        });
        if !next(2, "VALUE") || !source_follows {
            return Ok(None);
        }
        return Ok(Some((cut_out(text, w, &words[i + 2]), which)));
    }
    Ok(None)
}

/// A trailing `WITH ERROR e [CONFIDENCE c]`: the text without it, and the budget.
pub(crate) fn strip_budget(text: &str) -> Result<Option<(String, ErrorBudget)>> {
    let tokens = Tokenizer::new(&PostgreSqlDialect {}, text)
        .tokenize_with_location()
        .map_err(|e| brook_err!(Syntax, "syntax error: {}", e.message))?;
    let words: Vec<&TokenWithSpan> = tokens
        .iter()
        .filter(|t| {
            !matches!(
                t.token,
                Token::Whitespace(_) | Token::EOF | Token::SemiColon
            )
        })
        .collect();
    let is = |i: usize, w: &str| {
        words.get(i).is_some_and(|t| matches!(&t.token, Token::Word(x) if x.quote_style.is_none() && x.value.eq_ignore_ascii_case(w)))
    };
    let number = |i: usize| match words.get(i).map(|t| &t.token) {
        Some(Token::Number(n, _)) => n.parse::<f64>().ok(),
        _ => None,
    };
    let n = words.len();
    let (start, confidence) =
        if n >= 5 && is(n - 5, "WITH") && is(n - 4, "ERROR") && is(n - 2, "CONFIDENCE") {
            (n - 5, Some(number(n - 1)))
        } else if n >= 3 && is(n - 3, "WITH") && is(n - 2, "ERROR") {
            (n - 3, None)
        } else {
            return Ok(None);
        };
    let bad = || {
        brook_err!(
            Syntax,
            "syntax error: WITH ERROR needs numbers, e.g. WITH ERROR 0.01 CONFIDENCE 0.95"
        )
    };
    let error = number(start + 2).ok_or_else(bad)?;
    let confidence = match confidence {
        Some(Some(c)) => Some(c),
        Some(None) => return Err(bad()),
        None => None,
    };
    let (cut, _) = span_bytes(&mut LineOffsets::new(text), words[start]);
    Ok(Some((
        text[..cut].to_string(),
        ErrorBudget { error, confidence },
    )))
}

/// True when `text` contains `word` in any letter case, without copying the text (the
/// checks that decide whether a statement needs a rewrite run on every statement, bulk
/// INSERTs included).
pub(crate) fn mentions(text: &str, word: &str) -> bool {
    let w = word.as_bytes();
    text.as_bytes()
        .windows(w.len())
        .any(|x| x.eq_ignore_ascii_case(w))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overriding_is_taken_only_where_postgresql_has_it() {
        let taken = |q: &str| strip_overriding(q).unwrap();
        assert_eq!(
            taken("INSERT INTO t (id, v) OVERRIDING SYSTEM VALUE VALUES (1, 'a')"),
            Some((
                "INSERT INTO t (id, v)  VALUES (1, 'a')".to_string(),
                Overriding::SystemValue
            ))
        );
        assert_eq!(
            taken("insert into t overriding user value select 1").map(|(_, o)| o),
            Some(Overriding::UserValue)
        );
        for q in [
            "INSERT INTO t (id) VALUES (1) OVERRIDING SYSTEM VALUE",
            "INSERT INTO t SELECT 1 OVERRIDING SYSTEM VALUE",
            "INSERT INTO t OVERRIDING SYSTEM VALUE DEFAULT VALUES",
            "INSERT INTO t VALUES ('OVERRIDING SYSTEM VALUE')",
            "UPDATE t SET v = 1 OVERRIDING SYSTEM VALUE",
        ] {
            assert_eq!(taken(q), None, "{q}");
        }
    }

    #[test]
    fn window_frame_exclusions() {
        let q = "SELECT sum(x) OVER (ROWS BETWEEN 1 PRECEDING AND 1 FOLLOWING EXCLUDE NO OTHERS) FROM t";
        assert_eq!(
            window_exclusion(q).unwrap().as_deref(),
            Some("SELECT sum(x) OVER (ROWS BETWEEN 1 PRECEDING AND 1 FOLLOWING ) FROM t")
        );
        for clause in ["CURRENT ROW", "GROUP", "TIES"] {
            let q =
                format!("SELECT sum(x) OVER (ROWS UNBOUNDED PRECEDING EXCLUDE {clause}) FROM t");
            assert_eq!(window_exclusion(&q).unwrap_err().sqlstate(), "0A000");
        }
        assert_eq!(window_exclusion("SELECT 'exclude ties'").unwrap(), None);
        assert_eq!(
            window_exclusion("CREATE TABLE r (c int, EXCLUDE USING gist (c WITH =))").unwrap(),
            None
        );
    }

    #[test]
    fn xmlexists_becomes_xpath_exists() {
        let out = xmlexists_calls(
            "SELECT XMLEXISTS('//b' PASSING BY REF doc) AND xmlexists(concat('//', t) \
             PASSING doc BY VALUE) FROM d WHERE passing = 1",
        )
        .unwrap()
        .unwrap();
        assert_eq!(
            out.split_whitespace().collect::<Vec<_>>().join(" "),
            "SELECT xpath_exists('//b' , doc) AND xpath_exists(concat('//', t) , doc ) \
             FROM d WHERE passing = 1"
        );
        assert!(xmlexists_calls("SELECT 1").unwrap().is_none());
        // the word alone is no call (it made the parser rewrite the text forever)
        for text in ["SELECT 'xmlexists' AS s", "SELECT 1 AS xmlexists"] {
            assert!(xmlexists_calls(text).unwrap().is_none(), "{text}");
        }
        // literals keep their quoting
        let out = xmlexists_calls(
            "SELECT xmlexists('//t[text() = ''To'']' PASSING BY VALUE '<t>To</t>')",
        )
        .unwrap()
        .unwrap();
        assert_eq!(
            out,
            "SELECT xpath_exists('//t[text() = ''To'']' ,  '<t>To</t>')"
        );
    }
}
