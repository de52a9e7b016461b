//! The parts of `MATCH_RECOGNIZE` sqlparser does not read, rewritten before parsing into
//! forms it does — forms that print back as they parse, since the clause travels to the
//! table function as its own SQL text (see the module above):
//!
//! - `RUNNING f(...)` / `FINAL f(...)` → `brook_running_f(...)` / `brook_final_f(...)`;
//! - `SUBSET u = (a, b)` → the first `DEFINE` item `u AS brook_subset(a, b)`;
//! - Flink's `WITHIN INTERVAL ...` after `PATTERN (...)` → `DEFINE brook_within AS INTERVAL ...`;
//! - `{- p -}` (sqlparser takes a single variable there) → `({- brook_excluded -} (p))`;
//! - `AFTER MATCH SKIP TO v` → `AFTER MATCH SKIP TO LAST v` (what the standard says it means);
//! - `permute(a, b)` in any case → `PERMUTE(a, b)` (sqlparser reads the capitals only);
//! - `PERMUTE` of patterns, not only variables (`PERMUTE(a+, b)`) → the alternation of their
//!   orders, in the lexicographic order PERMUTE prefers (`((a+) (b) | (b) (a+))`), and the
//!   quantifier `{,}` → `*` (sqlparser reads neither); an empty pattern or alternative
//!   (`()`, `(a|)`) is refused as any pattern that can match no rows is (0A000), not as a
//!   syntax error;
//! - Brook's `ALL ROWS PER MATCH SHOW PARTIAL MATCHES` → `ALL ROWS PER MATCH` and the first
//!   `DEFINE` item `brook_partial AS true`;
//! - a subquery or parenthesized join as the input (sqlparser reads the clause only after a
//!   name): `(query) [AS] s MATCH_RECOGNIZE` → `brook_match_recognize_input((query)) [AS] s
//!   MATCH_RECOGNIZE`, a table function call, whose query the clause reads.
//!
//! Each rewritten form is read back by the planner of the clause ([`super::plan_node`]).

use crate::dialect::WITH_MATCH_RECOGNIZE;
use brook_common::{brook_err, Result};
use datafusion::sql::sqlparser::keywords::Keyword;
use datafusion::sql::sqlparser::tokenizer::{Token, Tokenizer, Whitespace};

/// `RUNNING f(` / `FINAL f(` become `brook_running_f(` / `brook_final_f(` (one name: the
/// compatibility rules strip a function's qualifier).
pub const SEMANTICS_PREFIX: &str = "brook_";
/// Words a `(` may follow that are no function: after them `RUNNING` and `FINAL` are
/// variables or columns (`AFTER MATCH SKIP TO LAST running PATTERN (...)`, `DEFINE final
/// AS (...)`), not qualifiers of a function.
const CLAUSE_WORDS: &[&str] = &[
    "pattern", "define", "subset", "measures", "permute", "as", "and", "or", "not", "in", "is",
    "like", "between",
];
/// Function a `SUBSET` item becomes.
pub const SUBSET_FUNCTION: &str = "brook_subset";
/// `DEFINE` name `WITHIN` becomes.
pub const WITHIN_NAME: &str = "brook_within";
/// Variable that marks an exclusion.
pub const EXCLUDED_MARK: &str = "brook_excluded";
/// `DEFINE` name `SHOW PARTIAL MATCHES` becomes.
pub const PARTIAL_NAME: &str = "brook_partial";
/// The table function a subquery input of the clause is written as.
pub const DERIVED_INPUT_FUNCTION: &str = "brook_match_recognize_input";

fn is_word(t: &Token, word: &str) -> bool {
    matches!(t, Token::Word(w) if w.quote_style.is_none() && w.value.eq_ignore_ascii_case(word))
}

fn is_space(t: &Token) -> bool {
    matches!(t, Token::Whitespace(_))
}

/// The index of the next token after `i` that is not whitespace.
fn next_solid(tokens: &[Token], i: usize) -> Option<usize> {
    (i + 1..tokens.len()).find(|&j| !is_space(&tokens[j]))
}

fn tokenize(sql: &str) -> Result<Vec<Token>> {
    Tokenizer::new(&WITH_MATCH_RECOGNIZE, sql)
        .tokenize()
        .map_err(|e| brook_err!(Syntax, "syntax error: {}", e.message))
}

/// `sql` with every MATCH_RECOGNIZE clause's extensions rewritten; None when it has none.
pub fn rewrite_extensions(sql: &str) -> Result<Option<String>> {
    let tokens = tokenize(sql)?;
    let mut out: Vec<Token> = Vec::with_capacity(tokens.len());
    let mut changed = false;
    let mut i = 0;
    while i < tokens.len() {
        let t = &tokens[i];
        out.push(t.clone());
        i += 1;
        if !matches!(t, Token::Word(w) if w.keyword == Keyword::MATCH_RECOGNIZE) {
            continue;
        }
        if let Some(keyword) = out.pop() {
            changed |= wrap_derived_input(&mut out)?;
            out.push(keyword);
        }
        let Some(open) = next_solid(&tokens, i - 1).filter(|&j| tokens[j] == Token::LParen) else {
            continue;
        };
        let Some(close) = closing(&tokens, open) else {
            continue;
        };
        let clause = &tokens[i..=close];
        if let Some(rewritten) = rewrite_clause(clause)? {
            out.extend(rewritten);
            changed = true;
        } else {
            out.extend(clause.iter().cloned());
        }
        i = close + 1;
    }
    if !changed {
        return Ok(None);
    }
    Ok(Some(out.iter().map(token_sql).collect()))
}

/// A token as SQL that reads back as the same token. sqlparser prints a string's or a
/// quoted name's value between quotes as it is, so a quote inside it would end it early
/// (`'it''s'` would come back as `'it's'`).
fn token_sql(t: &Token) -> String {
    let quoted = |open: &str, s: &str, close: char| {
        let doubled = format!("{close}{close}");
        format!("{open}{}{close}", s.replace(close, &doubled))
    };
    match t {
        Token::SingleQuotedString(s) | Token::UnicodeStringLiteral(s) => quoted("'", s, '\''),
        Token::NationalStringLiteral(s) => quoted("N'", s, '\''),
        Token::EscapedStringLiteral(s) => {
            format!("E'{}'", s.replace('\\', "\\\\").replace('\'', "\\'"))
        }
        Token::DoubleQuotedString(s) => quoted("\"", s, '"'),
        Token::Word(w) if w.quote_style == Some('"') => quoted("\"", &w.value, '"'),
        other => other.to_string(),
    }
}

/// The index of the last token before `end` that is not whitespace.
fn solid_before(tokens: &[Token], end: usize) -> Option<usize> {
    (0..end).rev().find(|&j| !is_space(&tokens[j]))
}

/// When `out` ends with a derived table — `(query) [[AS] alias]` or a parenthesized join, in
/// FROM, after `,` or JOIN — make it `brook_match_recognize_input((query)) [[AS] alias]`
/// (a join becomes `SELECT * FROM` it). True when it did.
fn wrap_derived_input(out: &mut Vec<Token>) -> Result<bool> {
    let Some(last) = solid_before(out, out.len()) else {
        return Ok(false);
    };
    // Before an alias (perhaps after AS, perhaps with a column list), its `)`.
    let before_alias = |alias: usize| -> Option<usize> {
        let mut at = solid_before(out, alias)?;
        if matches!(&out[at], Token::Word(w) if w.keyword == Keyword::AS) {
            at = solid_before(out, at)?;
        }
        (out[at] == Token::RParen).then_some(at)
    };
    let close = match &out[last] {
        Token::Word(_) => before_alias(last),
        Token::RParen => match matching_open(out, last)
            .and_then(|o| solid_before(out, o))
            .filter(|&w| matches!(&out[w], Token::Word(_)))
        {
            // `alias (columns)` after the derived table's `)`, or a function's arguments.
            Some(w) => before_alias(w).or(Some(last)),
            None => Some(last),
        },
        _ => None,
    };
    let Some(close) = close else { return Ok(false) };
    let Some(open) = matching_open(out, close) else {
        return Ok(false);
    };
    // A derived table follows FROM, JOIN or a comma; after a name the parentheses are a
    // table function's arguments, which sqlparser reads already.
    let in_from = solid_before(out, open).is_some_and(|p| match &out[p] {
        Token::Comma | Token::LParen => true,
        Token::Word(w) => matches!(w.keyword, Keyword::FROM | Keyword::JOIN),
        _ => false,
    });
    if !in_from {
        return Ok(false);
    }
    let inner: Vec<Token> = out[open + 1..close].to_vec();
    let first = inner.iter().find(|t| !is_space(t));
    let keyword = |k: Keyword| first.is_some_and(|t| matches!(t, Token::Word(w) if w.keyword == k));
    // What an expression reads as a subquery: SELECT or WITH; VALUES is read from, as a
    // join is.
    let (before, after) = if keyword(Keyword::SELECT) || keyword(Keyword::WITH) {
        ("(", ")")
    } else if keyword(Keyword::VALUES) {
        ("(SELECT * FROM (", ") AS brook_values)")
    } else {
        ("(SELECT * FROM ", ")")
    };
    let mut call = vec![
        Token::make_word(DERIVED_INPUT_FUNCTION, None),
        Token::LParen,
    ];
    call.extend(tokenize(before)?);
    call.extend(inner);
    call.extend(tokenize(after)?);
    call.push(Token::RParen);
    out.splice(open..=close, call);
    Ok(true)
}

/// The `(` the `)` at `close` closes.
fn matching_open(tokens: &[Token], close: usize) -> Option<usize> {
    let mut depth = 0usize;
    for j in (0..=close).rev() {
        match tokens[j] {
            Token::RParen => depth += 1,
            Token::LParen => {
                depth = depth.checked_sub(1)?;
                if depth == 0 {
                    return Some(j);
                }
            }
            _ => {}
        }
    }
    None
}

/// One clause, from its `(` to its `)`.
fn rewrite_clause(clause: &[Token]) -> Result<Option<Vec<Token>>> {
    let formed = pattern_forms(clause)?;
    let changed_pattern = formed.is_some();
    let clause: &[Token] = formed.as_deref().unwrap_or(clause);
    let mut out: Vec<Token> = Vec::with_capacity(clause.len());
    let mut defines: Vec<Token> = Vec::new();
    let mut depth = 0usize;
    let mut changed = changed_pattern;
    let mut i = 0;
    let mut in_pattern = false;
    // SUBSET and WITHIN are read only between PATTERN (...) and DEFINE: elsewhere the words
    // may name columns or variables.
    let mut between_pattern_and_define = false;
    while i < clause.len() {
        let t = &clause[i];
        match t {
            Token::LParen => depth += 1,
            Token::RParen => {
                depth -= 1;
                if depth == 1 && in_pattern {
                    in_pattern = false;
                    between_pattern_and_define = true;
                }
            }
            _ => {}
        }
        if depth == 1 && is_word(t, "PATTERN") {
            in_pattern = true;
        }
        if depth == 1 && is_word(t, "DEFINE") {
            between_pattern_and_define = false;
        }
        // RUNNING f( / FINAL f(
        if (is_word(t, "RUNNING") || is_word(t, "FINAL")) && !in_pattern {
            if next_solid(clause, i).is_some_and(|f| clause[f] == Token::LParen) {
                let q = t.to_string().to_uppercase();
                return Err(brook_err!(
                    Syntax,
                    "{q} qualifies a navigation or an aggregate ({q} LAST(v.col), {q} \
                     count(*)), not an expression in parentheses"
                ));
            }
            if let Some(f) = next_solid(clause, i) {
                if matches!(&clause[f], Token::Word(_))
                    && !CLAUSE_WORDS.iter().any(|w| is_word(&clause[f], w))
                    && next_solid(clause, f).is_some_and(|p| clause[p] == Token::LParen)
                {
                    let (Token::Word(q), Token::Word(name)) = (t, &clause[f]) else {
                        unreachable!()
                    };
                    out.push(Token::make_word(
                        &format!("{SEMANTICS_PREFIX}{}_{}", q.value, name.value).to_lowercase(),
                        None,
                    ));
                    i = f + 1;
                    changed = true;
                    continue;
                }
            }
        }
        if depth == 1 && !in_pattern && is_show_partial(clause, i) {
            for t in tokenize(&format!("{PARTIAL_NAME} AS true, "))? {
                defines.push(t);
            }
            i = next_solid(clause, i)
                .and_then(|j| next_solid(clause, j))
                .map_or(clause.len(), |j| j + 1);
            while i < clause.len() && is_space(&clause[i]) {
                i += 1;
            }
            changed = true;
            continue;
        }
        let subset = is_subset(clause, i);
        if depth == 1 && between_pattern_and_define && (subset || is_within(clause, i)) {
            let end = (i + 1..clause.len())
                .find(|&j| {
                    is_word(&clause[j], "DEFINE")
                        || (!subset && is_subset(clause, j))
                        || (subset && is_within(clause, j))
                })
                .ok_or_else(|| {
                    brook_err!(
                        Syntax,
                        "MATCH_RECOGNIZE {} must be followed by DEFINE",
                        if subset { "SUBSET" } else { "WITHIN" }
                    )
                })?;
            let body = &clause[i + 1..end];
            if subset {
                subset_items(body, &mut defines)?;
            } else {
                defines.push(Token::make_word(WITHIN_NAME, None));
                defines.push(Token::Whitespace(Whitespace::Space));
                defines.push(Token::make_keyword("AS"));
                defines.extend(body.iter().cloned());
                defines.push(Token::Comma);
                defines.push(Token::Whitespace(Whitespace::Space));
            }
            i = end;
            changed = true;
            continue;
        }
        // sqlparser reads `PERMUTE` in capitals only (`permute(a, b)` was 42601).
        if in_pattern && is_word(t, "PERMUTE") && t.to_string() != "PERMUTE" {
            out.push(Token::make_word("PERMUTE", None));
            i += 1;
            changed = true;
            continue;
        }
        if in_pattern
            && *t == Token::LBrace
            && clause.get(i + 1) == Some(&Token::Minus)
            && !next_solid(clause, i + 1).is_some_and(|j| is_word(&clause[j], EXCLUDED_MARK))
        {
            out.extend(tokenize(&format!("({{- {EXCLUDED_MARK} -}} ("))?);
            let end = (i + 2..clause.len())
                .find(|&j| clause[j] == Token::Minus && clause.get(j + 1) == Some(&Token::RBrace))
                .ok_or_else(|| brook_err!(Syntax, "pattern exclusion {{- without -}}"))?;
            // A `{- ... -}` inside (a quantifier's `{2}` is no exclusion).
            if clause[i + 2..end]
                .windows(2)
                .any(|w| w[0] == Token::LBrace && w[1] == Token::Minus)
            {
                return Err(brook_err!(
                    Syntax,
                    "pattern exclusions {{- -}} cannot be nested"
                ));
            }
            out.extend(clause[i + 2..end].iter().cloned());
            out.push(Token::RParen);
            out.push(Token::RParen);
            i = end + 2;
            changed = true;
            continue;
        }
        // SKIP TO v means SKIP TO LAST v (SQL:2016); sqlparser reads only the long form.
        if depth == 1 && is_word(t, "SKIP") {
            let to = next_solid(clause, i).filter(|&j| is_word(&clause[j], "TO"));
            let var = to.and_then(|j| next_solid(clause, j));
            if let (Some(to), Some(var)) = (to, var) {
                let short = matches!(&clause[var], Token::Word(_))
                    && !["FIRST", "LAST", "NEXT"]
                        .iter()
                        .any(|w| is_word(&clause[var], w));
                if short {
                    out.extend(clause[i..=to].iter().cloned());
                    out.push(Token::Whitespace(Whitespace::Space));
                    out.push(Token::make_keyword("LAST"));
                    i = to + 1;
                    changed = true;
                    continue;
                }
            }
        }
        if depth == 1 && is_word(t, "DEFINE") && !defines.is_empty() {
            out.push(t.clone());
            out.push(Token::Whitespace(Whitespace::Space));
            out.append(&mut defines);
            i += 1;
            // The items follow the inserted ones.
            while i < clause.len() && is_space(&clause[i]) {
                i += 1;
            }
            continue;
        }
        out.push(t.clone());
        i += 1;
    }
    if !defines.is_empty() {
        return Err(brook_err!(
            Syntax,
            "MATCH_RECOGNIZE SUBSET, WITHIN and SHOW PARTIAL MATCHES need a DEFINE after them"
        ));
    }
    Ok(changed.then_some(out))
}

/// `clause` with its PATTERN's forms sqlparser does not read written as forms it does
/// (see the module's comment), or None when it has none.
fn pattern_forms(clause: &[Token]) -> Result<Option<Vec<Token>>> {
    let mut depth = 0usize;
    let mut start = None;
    for (i, t) in clause.iter().enumerate() {
        match t {
            Token::LParen => depth += 1,
            Token::RParen => depth = depth.saturating_sub(1),
            _ => {}
        }
        if depth == 1 && is_word(t, "PATTERN") {
            start = next_solid(clause, i).filter(|&j| clause[j] == Token::LParen);
            break;
        }
    }
    let Some(open) = start else {
        return Ok(None);
    };
    let close = matching(clause, open)?;
    let body = &clause[open + 1..close];
    refuse_empty_parts(body)?;
    let formed = pattern_body(body)?;
    if formed == body {
        return Ok(None);
    }
    let mut out = clause[..=open].to_vec();
    out.extend(formed);
    out.extend(clause[close..].iter().cloned());
    Ok(Some(out))
}

/// The index of the `)` that closes the `(` at `open`, if one does.
fn closing(tokens: &[Token], open: usize) -> Option<usize> {
    let mut depth = 0usize;
    for (j, t) in tokens.iter().enumerate().skip(open) {
        match t {
            Token::LParen => depth += 1,
            Token::RParen => {
                depth -= 1;
                if depth == 0 {
                    return Some(j);
                }
            }
            _ => {}
        }
    }
    None
}

/// [`closing`], or 42601 for a PATTERN's parenthesis left open.
fn matching(tokens: &[Token], open: usize) -> Result<usize> {
    closing(tokens, open).ok_or_else(|| {
        brook_err!(
            Syntax,
            "MATCH_RECOGNIZE PATTERN without its closing parenthesis"
        )
    })
}

/// 0A000 for an empty pattern, group or alternative: it matches the empty sequence of rows.
fn refuse_empty_parts(body: &[Token]) -> Result<()> {
    let solid: Vec<&Token> = body.iter().filter(|t| !is_space(t)).collect();
    let open = |t: &Token| *t == Token::LParen || *t == Token::Pipe;
    let close = |t: &Token| *t == Token::RParen || *t == Token::Pipe;
    let empty = solid.is_empty()
        || solid.first().is_some_and(|t| **t == Token::Pipe)
        || solid.last().is_some_and(|t| **t == Token::Pipe)
        || solid.windows(2).any(|w| open(w[0]) && close(w[1]));
    if empty {
        let text: String = body.iter().map(|t| t.to_string()).collect();
        return Err(brook_err!(
            Unsupported,
            "PATTERN ({text}) has an empty part, which matches an empty sequence of rows: empty matches"
        ));
    }
    Ok(())
}

/// Pattern tokens with `{,}` as `*` and each `PERMUTE` of patterns spelled out.
fn pattern_body(tokens: &[Token]) -> Result<Vec<Token>> {
    let mut out = Vec::with_capacity(tokens.len());
    let mut i = 0;
    while i < tokens.len() {
        let t = &tokens[i];
        if *t == Token::LBrace {
            let comma = next_solid(tokens, i).filter(|&j| tokens[j] == Token::Comma);
            if let Some(end) = comma
                .and_then(|j| next_solid(tokens, j))
                .filter(|&j| tokens[j] == Token::RBrace)
            {
                out.push(Token::Mul);
                i = end + 1;
                continue;
            }
        }
        if is_word(t, "PERMUTE") {
            if let Some(open) = next_solid(tokens, i).filter(|&j| tokens[j] == Token::LParen) {
                let close = matching(tokens, open)?;
                let parts = top_level_items(&tokens[open + 1..close])
                    .into_iter()
                    .map(pattern_body)
                    .collect::<Result<Vec<_>>>()?;
                if parts.iter().all(|p| is_single_word(p)) {
                    out.extend(tokens[i..=close].iter().cloned());
                } else {
                    out.extend(permuted(&parts)?);
                }
                i = close + 1;
                continue;
            }
        }
        out.push(t.clone());
        i += 1;
    }
    Ok(out)
}

/// The items of a comma-separated list, split at its own commas only, without the white
/// space around them.
fn top_level_items(tokens: &[Token]) -> Vec<&[Token]> {
    let mut items = Vec::new();
    let (mut depth, mut from) = (0usize, 0);
    for (j, t) in tokens.iter().enumerate() {
        match t {
            Token::LParen | Token::LBrace => depth += 1,
            Token::RParen | Token::RBrace => depth = depth.saturating_sub(1),
            Token::Comma if depth == 0 => {
                items.push(&tokens[from..j]);
                from = j + 1;
            }
            _ => {}
        }
    }
    items.push(&tokens[from..]);
    items.into_iter().map(trimmed).collect()
}

fn trimmed(mut tokens: &[Token]) -> &[Token] {
    while let [first, rest @ ..] = tokens {
        if !is_space(first) {
            break;
        }
        tokens = rest;
    }
    while let [rest @ .., last] = tokens {
        if !is_space(last) {
            break;
        }
        tokens = rest;
    }
    tokens
}

fn is_single_word(tokens: &[Token]) -> bool {
    let mut solid = tokens.iter().filter(|t| !is_space(t));
    matches!((solid.next(), solid.next()), (Some(Token::Word(_)), None))
}

/// `PERMUTE(p1, p2, ...)` as `((p1) (p2) | (p2) (p1) ...)`.
fn permuted(parts: &[Vec<Token>]) -> Result<Vec<Token>> {
    if parts.len() > 5 {
        return Err(brook_err!(
            Unsupported,
            "PERMUTE of more than 5 patterns ({} alternatives)",
            (1..=parts.len()).product::<usize>()
        ));
    }
    let mut out = vec![Token::LParen];
    for (k, order) in super::pattern::permutations(parts.len())
        .into_iter()
        .enumerate()
    {
        if k > 0 {
            out.extend([
                Token::Whitespace(Whitespace::Space),
                Token::Pipe,
                Token::Whitespace(Whitespace::Space),
            ]);
        }
        for (n, &p) in order.iter().enumerate() {
            if n > 0 {
                out.push(Token::Whitespace(Whitespace::Space));
            }
            out.push(Token::LParen);
            out.extend(parts[p].iter().cloned());
            out.push(Token::RParen);
        }
    }
    out.push(Token::RParen);
    Ok(out)
}

/// `SUBSET name =` starts at `i`.
fn is_subset(clause: &[Token], i: usize) -> bool {
    let Some(name) = next_solid(clause, i) else {
        return false;
    };
    is_word(&clause[i], "SUBSET")
        && matches!(clause[name], Token::Word(_))
        && next_solid(clause, name).is_some_and(|eq| clause[eq] == Token::Eq)
}

/// `SHOW PARTIAL MATCHES` starts at `i`, right after `... ROW(S) PER MATCH` (elsewhere the
/// words are left to sqlparser, which refuses them).
fn is_show_partial(clause: &[Token], i: usize) -> bool {
    let partial = next_solid(clause, i);
    let matches = partial.and_then(|j| next_solid(clause, j));
    let matched = solid_before(clause, i);
    let per = matched.and_then(|j| solid_before(clause, j));
    is_word(&clause[i], "SHOW")
        && partial.is_some_and(|j| is_word(&clause[j], "PARTIAL"))
        && matches.is_some_and(|j| is_word(&clause[j], "MATCHES"))
        && matched.is_some_and(|j| is_word(&clause[j], "MATCH"))
        && per.is_some_and(|j| is_word(&clause[j], "PER"))
}

/// `WITHIN INTERVAL` starts at `i`.
fn is_within(clause: &[Token], i: usize) -> bool {
    is_word(&clause[i], "WITHIN")
        && next_solid(clause, i).is_some_and(|j| is_word(&clause[j], "INTERVAL"))
}

/// `u = (a, b), w = (c)` → `u AS brook_subset(a, b), w AS brook_subset(c), `.
fn subset_items(body: &[Token], defines: &mut Vec<Token>) -> Result<()> {
    let solid: Vec<&Token> = body.iter().filter(|t| !is_space(t)).collect();
    let bad = || brook_err!(Syntax, "SUBSET takes name = (variable, ...), ...");
    let mut k = 0;
    while k < solid.len() {
        let (Some(Token::Word(name)), Some(Token::Eq), Some(Token::LParen)) =
            (solid.get(k), solid.get(k + 1), solid.get(k + 2))
        else {
            return Err(bad());
        };
        let close = (k + 3..solid.len())
            .find(|&j| *solid[j] == Token::RParen)
            .ok_or_else(bad)?;
        defines.push(Token::Word(name.clone()));
        defines.push(Token::Whitespace(Whitespace::Space));
        defines.push(Token::make_keyword("AS"));
        defines.push(Token::Whitespace(Whitespace::Space));
        defines.push(Token::make_word(SUBSET_FUNCTION, None));
        defines.extend(solid[k + 2..=close].iter().map(|t| (*t).clone()));
        defines.push(Token::Comma);
        defines.push(Token::Whitespace(Whitespace::Space));
        k = close + 1;
        match solid.get(k) {
            Some(Token::Comma) => k += 1,
            None => {}
            Some(_) => return Err(bad()),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rw(sql: &str) -> String {
        rewrite_extensions(sql)
            .unwrap()
            .unwrap_or_else(|| sql.to_string())
    }

    #[test]
    fn each_extension_becomes_a_form_sqlparser_reads() {
        assert_eq!(
            rw(
                "SELECT * FROM t MATCH_RECOGNIZE (ORDER BY x MEASURES FINAL LAST(a.x) AS l \
                ALL ROWS PER MATCH PATTERN (a {- b+ -} c) SUBSET u = (a, b), w = (c) \
                DEFINE a AS x > RUNNING avg(u.x))"
            ),
            "SELECT * FROM t MATCH_RECOGNIZE (ORDER BY x MEASURES brook_final_last(a.x) AS l \
             ALL ROWS PER MATCH PATTERN (a ({- brook_excluded -} ( b+ )) c) \
             DEFINE u AS brook_subset(a,b), w AS brook_subset(c), a AS x > brook_running_avg(u.x))"
        );
        assert_eq!(
            rw("SELECT * FROM t MATCH_RECOGNIZE (ORDER BY ts PATTERN (a b) WITHIN INTERVAL '1' HOUR DEFINE a AS true)"),
            "SELECT * FROM t MATCH_RECOGNIZE (ORDER BY ts PATTERN (a b) DEFINE brook_within AS INTERVAL '1' HOUR a AS true)"
                .replace("HOUR a", "HOUR , a")
        );
        assert!(rewrite_extensions("SELECT final FROM t").unwrap().is_none());
        assert_eq!(
            rw("SELECT * FROM t MATCH_RECOGNIZE (ORDER BY x ALL ROWS PER MATCH SHOW PARTIAL MATCHES PATTERN (a) DEFINE a AS true)"),
            "SELECT * FROM t MATCH_RECOGNIZE (ORDER BY x ALL ROWS PER MATCH PATTERN (a) DEFINE brook_partial AS true, a AS true)"
        );
        // Only right after ROWS PER MATCH, once.
        for elsewhere in [
            "SELECT * FROM t MATCH_RECOGNIZE (SHOW PARTIAL MATCHES ORDER BY x ALL ROWS PER MATCH PATTERN (a) DEFINE a AS true)",
            "SELECT * FROM t MATCH_RECOGNIZE (ORDER BY x ALL ROWS PER MATCH PATTERN (a) SHOW PARTIAL MATCHES DEFINE a AS true)",
        ] {
            assert!(rewrite_extensions(elsewhere).unwrap().is_none(), "{elsewhere}");
        }
        let twice = rw("SELECT * FROM t MATCH_RECOGNIZE (ORDER BY x ALL ROWS PER MATCH SHOW PARTIAL MATCHES SHOW PARTIAL MATCHES PATTERN (a) DEFINE a AS true)");
        assert!(
            twice.contains("PER MATCH SHOW PARTIAL MATCHES PATTERN"),
            "{twice}"
        );
        assert_eq!(
            rw("SELECT * FROM t MATCH_RECOGNIZE (ORDER BY x AFTER MATCH SKIP TO b PATTERN (a b) DEFINE a AS true)"),
            "SELECT * FROM t MATCH_RECOGNIZE (ORDER BY x AFTER MATCH SKIP TO LAST b PATTERN (a b) DEFINE a AS true)"
        );
        assert!(rewrite_extensions(
            "SELECT * FROM t MATCH_RECOGNIZE (ORDER BY x AFTER MATCH SKIP TO NEXT ROW PATTERN (a) DEFINE a AS true)"
        )
        .unwrap()
        .is_none());
        // Columns and variables may be named within and subset.
        let plain = "SELECT * FROM t MATCH_RECOGNIZE (ORDER BY within MEASURES subset.within AS w \
                     PATTERN (subset within) DEFINE subset AS within > 0, within AS subset = 1)";
        assert!(rewrite_extensions(plain).unwrap().is_none(), "{plain}");
        // What it writes it leaves alone when it reads it again.
        let once =
            rw("SELECT * FROM t MATCH_RECOGNIZE (ORDER BY x PATTERN (a {- b -}) DEFINE a AS true)");
        assert!(rewrite_extensions(&once).unwrap().is_none(), "{once}");
    }

    #[test]
    fn permute_of_patterns_and_open_counts_are_spelled_out() {
        assert_eq!(
            rw("SELECT * FROM t MATCH_RECOGNIZE (ORDER BY x PATTERN (PERMUTE(a+, b) c{,}?) DEFINE a AS true)"),
            "SELECT * FROM t MATCH_RECOGNIZE (ORDER BY x PATTERN (((a+) (b) | (b) (a+)) c*?) DEFINE a AS true)"
        );
        // PERMUTE of variables only is sqlparser's own.
        let plain =
            "SELECT * FROM t MATCH_RECOGNIZE (ORDER BY x PATTERN (PERMUTE(a, b)) DEFINE a AS true)";
        assert!(rewrite_extensions(plain).unwrap().is_none(), "{plain}");
        for empty in ["()", "(a|)", "a | | b", "|a"] {
            let sql = format!(
                "SELECT * FROM t MATCH_RECOGNIZE (ORDER BY x PATTERN ({empty}) DEFINE a AS true)"
            );
            let e = rewrite_extensions(&sql).unwrap_err();
            assert_eq!(e.sqlstate(), "0A000", "{empty}: {e}");
        }
    }
}
