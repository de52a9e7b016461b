//! PostgreSQL's array literals: `'{a,"b c",NULL}'::text[]`.
//!
//! DataFusion casts a string to an array type by wrapping it (`'{a,b}'::text[]` became the
//! one-element array `['{a,b}']`, a wrong answer); PostgreSQL reads the text as the array's
//! elements. A bound parameter of an array type (psycopg sends a list as `'{a,b}'` typed
//! `text[]`) is such a cast once bound. The rewrite reads the literal into `ARRAY[...]` of
//! its elements' texts, cast to the array type, so each element is cast as PostgreSQL casts
//! it. Written here because no library parses the format; one-dimensional arrays only (a
//! nested literal is left to DataFusion).

use datafusion::sql::sqlparser::ast::{
    Array, ArrayElemTypeDef, DataType, Expr, Statement, Value, ValueWithSpan,
};

/// A one-dimensional `text[]` literal: `{a,"b c",NULL}`.
pub fn parse_text_array(text: &str) -> Option<Vec<Option<String>>> {
    let inner = text
        .trim()
        .strip_prefix('{')
        .and_then(|t| t.strip_suffix('}'))?;
    let mut items = Vec::new();
    if inner.trim().is_empty() {
        return Some(items);
    }
    let mut chars = inner.chars().peekable();
    loop {
        while chars.peek().is_some_and(|c| c.is_whitespace()) {
            chars.next();
        }
        let mut item = String::new();
        let mut escaped = false;
        let quoted = chars.peek() == Some(&'"');
        if quoted {
            chars.next();
            loop {
                match chars.next() {
                    Some('"') => break,
                    Some('\\') => item.push(chars.next()?),
                    Some(c) => item.push(c),
                    None => return None,
                }
            }
            while chars.peek().is_some_and(|c| c.is_whitespace()) {
                chars.next();
            }
        } else {
            // A backslash takes the next character as it is, outside quotes too (`a\,b` is
            // one element); escaped characters are never trimmed and make `NULL` a text.
            let mut kept = 0;
            while let Some(&c) = chars.peek() {
                if c == ',' {
                    break;
                }
                if c == '{' || c == '}' || c == '"' {
                    return None;
                }
                chars.next();
                if c == '\\' {
                    item.push(chars.next()?);
                    escaped = true;
                    kept = item.len();
                    continue;
                }
                item.push(c);
            }
            let end = item.trim_end().len().max(kept);
            item.truncate(end);
            if item.is_empty() && !escaped {
                // `{a,}`, `{,a}`: PostgreSQL's "malformed array literal".
                return None;
            }
        }
        if !quoted && !escaped && item.eq_ignore_ascii_case("null") {
            items.push(None);
        } else {
            items.push(Some(item));
        }
        match chars.next() {
            Some(',') => continue,
            None => return Some(items),
            Some(_) => return None,
        }
    }
}

/// Elements as a one-dimensional array literal, quoted where PostgreSQL quotes them (the
/// inverse of [`parse_text_array`]).
pub fn array_text(items: &[Option<String>]) -> String {
    let mut out = String::from("{");
    for (i, item) in items.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        match item {
            Some(s) => push_element(&mut out, s),
            None => out.push_str("NULL"),
        }
    }
    out.push('}');
    out
}

/// One element's text in an array literal: as it is, or double-quoted with `"` and `\`
/// escaped where PostgreSQL quotes it (empty, `NULL`, delimiters, quotes, white space).
pub fn push_element(out: &mut String, s: &str) {
    let quote = s.is_empty()
        || s.eq_ignore_ascii_case("null")
        || s.chars()
            .any(|c| matches!(c, '{' | '}' | ',' | '"' | '\\') || c.is_whitespace());
    if !quote {
        out.push_str(s);
        return;
    }
    out.push('"');
    for c in s.chars() {
        if c == '"' || c == '\\' {
            out.push('\\');
        }
        out.push(c);
    }
    out.push('"');
}

/// The function a literal that is not a one-dimensional array becomes (registered by the
/// server; it raises the literal's error).
pub const ARRAY_LITERAL_ERROR: &str = "brook_array_literal_error";

/// The rewrite as a parser rule: it runs before the compatibility crate's `FixArrayLiteral`,
/// which splits the text at every comma (`'{a,"b,c"}'` gave three elements, `NULL` the text
/// `'NULL'`).
#[derive(Debug)]
pub struct ArrayLiteralCasts;

impl datafusion_pg_catalog::sql::rules::SqlStatementRewriteRule for ArrayLiteralCasts {
    fn rewrite(&self, mut s: Statement) -> Statement {
        array_literal_casts(&mut s);
        s
    }
}

/// Every `CAST('{...}' AS t[])` of `stmt` as `CAST(ARRAY['...', ...] AS t[])`.
pub fn array_literal_casts(stmt: &mut Statement) {
    crate::pg_functions::rewrite_expressions(stmt, |expr| {
        let Expr::Cast {
            expr: inner,
            data_type: DataType::Array(ArrayElemTypeDef::SquareBracket(elem, _)),
            ..
        } = expr
        else {
            return;
        };
        let Expr::Value(ValueWithSpan {
            value: Value::SingleQuotedString(text),
            ..
        }) = inner.as_ref()
        else {
            return;
        };
        **inner = literal_as_array(text, elem);
    });
}

/// The text of an array literal as `ARRAY[...]` of its elements' texts, each cast to
/// `elem` as a literal of that type is (`'\x0102'::bytea` is two bytes, not the text's six),
/// or, when it is not a one-dimensional literal, the call that raises its error when the
/// value is read (22P02, or 0A000 for a nested literal) — never the text taken as one
/// element.
pub fn literal_as_array(text: &str, elem: &DataType) -> Expr {
    let Some(items) = parse_text_array(text) else {
        return crate::pg_functions::function_call(
            ARRAY_LITERAL_ERROR,
            vec![Expr::value(Value::SingleQuotedString(text.to_string()))],
        );
    };
    let items = items
        .into_iter()
        .map(|i| match i {
            Some(t) => Expr::Cast {
                kind: datafusion::sql::sqlparser::ast::CastKind::Cast,
                expr: Box::new(Expr::value(Value::SingleQuotedString(t))),
                data_type: elem.clone(),
                array: false,
                format: None,
            },
            // Typed too: DataFusion finds no common type for `Binary` and `Null`.
            None => Expr::Cast {
                kind: datafusion::sql::sqlparser::ast::CastKind::Cast,
                expr: Box::new(Expr::value(Value::Null)),
                data_type: elem.clone(),
                array: false,
                format: None,
            },
        })
        .collect();
    Expr::Array(Array {
        elem: items,
        named: true,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn literals_parse_as_postgresql_reads_them() {
        assert_eq!(
            parse_text_array(r#"{a, "b c" ,NULL,"NULL","q\"x"}"#).unwrap(),
            vec![
                Some("a".into()),
                Some("b c".into()),
                None,
                Some("NULL".into()),
                Some("q\"x".into())
            ]
        );
        assert_eq!(
            parse_text_array("{}").unwrap(),
            Vec::<Option<String>>::new()
        );
        assert!(parse_text_array("a,b").is_none());
        assert!(parse_text_array("{a,{b}}").is_none());
        // escapes outside quotes, as PostgreSQL's array input reads them
        assert_eq!(
            parse_text_array(r#"{a\\b, c\,d ,\{,a\"b,\NULL, x\ }"#).unwrap(),
            vec![
                Some(r"a\b".into()),
                Some("c,d".into()),
                Some("{".into()),
                Some("a\"b".into()),
                Some("NULL".into()),
                Some("x ".into())
            ]
        );
    }

    #[test]
    fn texts_round_trip_through_the_literal() {
        let items = vec![
            Some("a".to_string()),
            Some("b c".into()),
            None,
            Some("NULL".into()),
            Some(r#"q"x\y"#.into()),
            Some(String::new()),
        ];
        let text = array_text(&items);
        assert_eq!(text, r#"{a,"b c",NULL,"NULL","q\"x\\y",""}"#);
        assert_eq!(parse_text_array(&text).unwrap(), items);
    }

    #[test]
    fn a_cast_of_a_literal_becomes_an_array_of_its_elements() {
        let mut s = datafusion::sql::sqlparser::parser::Parser::parse_sql(
            &datafusion::sql::sqlparser::dialect::PostgreSqlDialect {},
            "SELECT '{1,2,NULL}'::int[], CAST('{a,\"b,c\"}' AS text[]), 'x'::text",
        )
        .unwrap()
        .remove(0);
        array_literal_casts(&mut s);
        assert_eq!(
            s.to_string(),
            "SELECT ARRAY[CAST('1' AS INT), CAST('2' AS INT), CAST(NULL AS INT)]::INT[], \
             CAST(ARRAY[CAST('a' AS TEXT), CAST('b,c' AS TEXT)] AS TEXT[]), 'x'::TEXT"
        );
        let mut s = datafusion::sql::sqlparser::parser::Parser::parse_sql(
            &datafusion::sql::sqlparser::dialect::PostgreSqlDialect {},
            "SELECT '{a,b'::text[]",
        )
        .unwrap()
        .remove(0);
        array_literal_casts(&mut s);
        assert_eq!(
            s.to_string(),
            "SELECT brook_array_literal_error('{a,b')::TEXT[]"
        );
    }
}
