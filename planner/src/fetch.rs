//! FETCH as PostgreSQL writes it: `FETCH [direction] [FROM | IN] cursor`, where sqlparser
//! requires `FROM`/`IN` and a direction or count (`FETCH c`, `FETCH NEXT c`, `FETCH
//! FORWARD FROM c` were 42601 for valid SQL). Without a direction a FETCH takes the next
//! row, as in PostgreSQL.

use brook_common::Result;
use datafusion::sql::sqlparser::ast::{
    FetchDirection, FetchPosition, Statement, Value, ValueWithSpan,
};
use datafusion::sql::sqlparser::keywords::Keyword;
use datafusion::sql::sqlparser::parser::Parser;
use datafusion::sql::sqlparser::tokenizer::Token;

/// Parse a FETCH statement (the parser is at `FETCH`).
pub(crate) fn parse_fetch(p: &mut Parser<'_>) -> Result<Statement> {
    p.expect_keyword(Keyword::FETCH)?;
    fetch_rest(p)
}

/// `MOVE [direction] [FROM | IN] cursor` (sqlparser has none) as the FETCH it moves like,
/// when the statement is a MOVE.
pub(crate) fn parse_move(p: &mut Parser<'_>) -> Result<Option<Statement>> {
    let is_move = matches!(&p.peek_token_ref().token,
        Token::Word(w) if w.quote_style.is_none() && w.value.eq_ignore_ascii_case("move"));
    if !is_move {
        return Ok(None);
    }
    p.next_token();
    fetch_rest(p).map(Some)
}

/// What follows FETCH or MOVE.
fn fetch_rest(p: &mut Parser<'_>) -> Result<Statement> {
    let direction = parse_direction(p)?;
    let position = if p.parse_keyword(Keyword::IN) {
        FetchPosition::In
    } else {
        let _ = p.parse_keyword(Keyword::FROM);
        FetchPosition::From
    };
    let name = p.parse_identifier()?;
    Ok(Statement::Fetch {
        name,
        direction,
        position,
        into: None,
    })
}

fn parse_direction(p: &mut Parser<'_>) -> Result<FetchDirection> {
    let direction = if p.parse_keyword(Keyword::NEXT) {
        FetchDirection::Next
    } else if p.parse_keyword(Keyword::PRIOR) {
        FetchDirection::Prior
    } else if p.parse_keyword(Keyword::FIRST) {
        FetchDirection::First
    } else if p.parse_keyword(Keyword::LAST) {
        FetchDirection::Last
    } else if p.parse_keyword(Keyword::ABSOLUTE) {
        FetchDirection::Absolute { limit: count(p)? }
    } else if p.parse_keyword(Keyword::RELATIVE) {
        FetchDirection::Relative { limit: count(p)? }
    } else if p.parse_keyword(Keyword::FORWARD) {
        if p.parse_keyword(Keyword::ALL) {
            FetchDirection::ForwardAll
        } else {
            FetchDirection::Forward {
                limit: optional_count(p)?,
            }
        }
    } else if p.parse_keyword(Keyword::BACKWARD) {
        if p.parse_keyword(Keyword::ALL) {
            FetchDirection::BackwardAll
        } else {
            FetchDirection::Backward {
                limit: optional_count(p)?,
            }
        }
    } else if p.parse_keyword(Keyword::ALL) {
        FetchDirection::All
    } else if let Some(limit) = optional_count(p)? {
        FetchDirection::Count { limit }
    } else {
        FetchDirection::Next
    };
    Ok(direction)
}

/// A row count (signed), when one comes next.
fn optional_count(p: &mut Parser<'_>) -> Result<Option<ValueWithSpan>> {
    match &p.peek_token_ref().token {
        Token::Number(..) | Token::Placeholder(_) | Token::Minus | Token::Plus => {
            Ok(Some(count(p)?))
        }
        _ => Ok(None),
    }
}

/// A row count, signed.
fn count(p: &mut Parser<'_>) -> Result<ValueWithSpan> {
    let negative = p.consume_token(&Token::Minus);
    if !negative {
        let _ = p.consume_token(&Token::Plus);
    }
    let mut v = p.parse_number_value()?;
    if negative {
        if let Value::Number(n, long) = &v.value {
            v.value = Value::Number(format!("-{n}"), *long);
        }
    }
    Ok(v)
}

#[cfg(test)]
mod tests {
    use crate::parser::parse_one;

    fn fetch(sql: &str) -> String {
        parse_one(sql)
            .unwrap_or_else(|e| panic!("{sql}: {e}"))
            .as_sql()
            .map(ToString::to_string)
            .unwrap_or_default()
    }

    #[test]
    fn fetch_takes_postgresql_forms() {
        assert_eq!(fetch("FETCH c"), "FETCH NEXT FROM c");
        assert_eq!(fetch("FETCH NEXT c"), "FETCH NEXT FROM c");
        assert_eq!(fetch("FETCH 5 c"), "FETCH 5 FROM c");
        assert_eq!(fetch("FETCH -1 IN c"), "FETCH -1 IN c");
        assert_eq!(fetch("fetch forward from c"), "FETCH FORWARD FROM c");
        assert_eq!(fetch("FETCH FORWARD 3 c"), "FETCH FORWARD 3 FROM c");
        assert_eq!(fetch("FETCH ALL FROM c"), "FETCH ALL FROM c");
        assert_eq!(fetch("FETCH BACKWARD ALL c"), "FETCH BACKWARD ALL FROM c");
        assert!(parse_one("FETCH 5 FROM").is_err());
    }

    #[test]
    fn move_takes_fetch_directions() {
        for (sql, fetch) in [
            ("MOVE c", "FETCH NEXT FROM c"),
            ("move forward 3 in c", "FETCH FORWARD 3 IN c"),
            ("MOVE ABSOLUTE 7 FROM c", "FETCH ABSOLUTE 7 FROM c"),
            ("MOVE ALL c", "FETCH ALL FROM c"),
        ] {
            let s = parse_one(sql).unwrap_or_else(|e| panic!("{sql}: {e}"));
            let crate::StatementBody::Move(f) = s.body else {
                panic!("{sql}: not a MOVE: {s:?}")
            };
            assert_eq!(f.to_string(), fetch);
        }
        assert!(parse_one("MOVE 5 FROM").is_err());
        assert!(parse_one("MOVE 5 FROM c WITH (timeout = '1s')").is_err());
    }
}
