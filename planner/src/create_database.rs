//! `CREATE DATABASE name [WITH] [option [=] value] ...` with PostgreSQL's options, as
//! `pg_dumpall` and `pg_restore -C` write it (`WITH TEMPLATE = template0 ENCODING = 'UTF8'
//! LOCALE_PROVIDER = libc LOCALE = 'C'`); sqlparser reads only MySQL's and Snowflake's
//! options (42601 before). What Brook has is accepted: UTF8, template0/template1, the
//! default connection settings; the locale is passed on in `default_collation` for the
//! server to say that text compares as in the C locale when another is asked for. Any other
//! value is 0A000 naming it, never silently ignored.

use brook_common::{brook_err, BrookError, Result};
use datafusion::sql::sqlparser::ast::Statement;
use datafusion::sql::sqlparser::dialect::PostgreSqlDialect;
use datafusion::sql::sqlparser::keywords::Keyword;
use datafusion::sql::sqlparser::parser::Parser;
use datafusion::sql::sqlparser::tokenizer::Token;

/// The statement, or None when the text is no `CREATE DATABASE`.
pub fn parse_create_database(text: &str) -> Result<Option<Statement>> {
    if !crate::lexical::mentions(text, "database") {
        return Ok(None);
    }
    let mut p = Parser::new(&PostgreSqlDialect {}).try_with_sql(text)?;
    if !p.parse_keywords(&[Keyword::CREATE, Keyword::DATABASE]) {
        return Ok(None);
    }
    let if_not_exists = p.parse_keywords(&[Keyword::IF, Keyword::NOT, Keyword::EXISTS]);
    let name = p.parse_object_name(false)?;
    let _ = p.parse_keyword(Keyword::WITH);
    let mut locale = None;
    while !matches!(p.peek_token().token, Token::EOF | Token::SemiColon) {
        let option = if p.parse_keywords(&[Keyword::CONNECTION, Keyword::LIMIT]) {
            "connection_limit".to_string()
        } else {
            p.parse_identifier()?.value.to_ascii_lowercase()
        };
        let _ = p.consume_token(&Token::Eq);
        let value = option_value(&mut p)?;
        match option.as_str() {
            "encoding" => encoding(&value)?,
            "template" => template(&value)?,
            "locale" | "lc_collate" | "lc_ctype" | "icu_locale" => {
                if value != "default" {
                    locale = Some(value)
                }
            }
            "allow_connections" => default_only(&option, &value, &["true", "on", "1", "default"])?,
            "connection_limit" => default_only(&option, &value, &["-1", "default"])?,
            "is_template" => default_only(&option, &value, &["false", "off", "0", "default"])?,
            "tablespace" => default_only(&option, &value, &["pg_default", "default"])?,
            // Who owns it, how PostgreSQL copies its template, which library provides its
            // locale and which version of it, and its oid: nothing Brook keeps.
            "owner" | "strategy" | "locale_provider" | "collation_version" | "icu_rules"
            | "oid" => {}
            other => {
                return Err(BrookError::Syntax(format!(
                    "option \"{other}\" not recognized"
                )))
            }
        }
    }
    let mut head = format!(
        "CREATE DATABASE {}{name}",
        if if_not_exists { "IF NOT EXISTS " } else { "" }
    );
    if let Some(locale) = &locale {
        head.push_str(&format!(" COLLATE \"{}\"", locale.replace('"', "\"\"")));
    }
    Ok(Some(
        Parser::new(&datafusion::sql::sqlparser::dialect::GenericDialect {})
            .try_with_sql(&head)?
            .parse_statement()?,
    ))
}

/// An option's value: a string, a name or a number, as PostgreSQL takes them; lowercased
/// unless quoted as a string.
fn option_value(p: &mut Parser<'_>) -> Result<String> {
    let token = p.next_token().token;
    Ok(match token {
        Token::SingleQuotedString(s) => s,
        Token::Word(w) if w.quote_style.is_some() => w.value,
        Token::Word(w) => w.value.to_ascii_lowercase(),
        Token::Number(n, _) => n,
        Token::Minus => match p.next_token().token {
            Token::Number(n, _) => format!("-{n}"),
            other => {
                return Err(BrookError::Syntax(format!(
                    "syntax error at or near \"{other}\""
                )))
            }
        },
        other => {
            return Err(BrookError::Syntax(format!(
                "syntax error at or near \"{other}\""
            )))
        }
    })
}

fn encoding(value: &str) -> Result<()> {
    match value.to_ascii_lowercase().replace(['-', '_'], "").as_str() {
        "utf8" | "unicode" | "6" | "default" => Ok(()),
        _ => Err(brook_err!(
            Unsupported,
            "encoding \"{value}\": Brook stores text as UTF8 (create the database with ENCODING 'UTF8')"
        )),
    }
}

fn template(value: &str) -> Result<()> {
    match value {
        "template0" | "template1" | "default" => Ok(()),
        other => Err(brook_err!(
            Unsupported,
            "TEMPLATE {other}: copying a database (Brook creates databases empty, as from template0)"
        )),
    }
}

fn default_only(option: &str, value: &str, defaults: &[&str]) -> Result<()> {
    if defaults.contains(&value.to_ascii_lowercase().as_str()) {
        Ok(())
    } else {
        Err(brook_err!(
            Unsupported,
            "CREATE DATABASE with {} = {value}",
            option.to_ascii_uppercase()
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pg_dumpall_s_options_are_read() {
        let s = parse_create_database(
            "CREATE DATABASE shop WITH TEMPLATE = template0 ENCODING = 'UTF8' \
             LOCALE_PROVIDER = libc LOCALE = 'C' OWNER = brook CONNECTION LIMIT = -1",
        )
        .expect("reads")
        .expect("a CREATE DATABASE");
        let Statement::CreateDatabase {
            db_name,
            default_collation,
            ..
        } = s
        else {
            panic!("{s}");
        };
        assert_eq!(
            (db_name.to_string(), default_collation),
            ("shop".into(), Some("C".into()))
        );
        let s = parse_create_database("create database x encoding 'utf-8' template template1")
            .expect("reads")
            .expect("a CREATE DATABASE");
        assert_eq!(s.to_string(), "CREATE DATABASE x");
        assert!(parse_create_database("SELECT 1").expect("reads").is_none());
    }

    #[test]
    fn what_brook_lacks_is_named() {
        for (sql, says) in [
            ("CREATE DATABASE x ENCODING 'LATIN1'", "encoding \"LATIN1\""),
            ("CREATE DATABASE x TEMPLATE shop", "TEMPLATE shop"),
            (
                "CREATE DATABASE x CONNECTION LIMIT 5",
                "CONNECTION_LIMIT = 5",
            ),
            ("CREATE DATABASE x IS_TEMPLATE true", "IS_TEMPLATE = true"),
        ] {
            let e = parse_create_database(sql).expect_err(sql);
            assert_eq!(e.sqlstate(), "0A000", "{sql}: {e}");
            assert!(e.to_string().contains(says), "{sql}: {e}");
        }
        let e = parse_create_database("CREATE DATABASE x COLOUR = 'red'").expect_err("unknown");
        assert_eq!(e.sqlstate(), "42601");
    }
}
