//! `CREATE [OR REPLACE] AGGREGATE` and `DROP AGGREGATE`, which sqlparser does not read.
//!
//! PostgreSQL's form `CREATE AGGREGATE name (arg types) (SFUNC = f, STYPE = t [, ...])` and
//! its old form `CREATE AGGREGATE name (BASETYPE = t, SFUNC = f, STYPE = t [, ...])`, with
//! the options Brook runs: `SFUNC`, `STYPE`, `FINALFUNC`, `COMBINEFUNC`, `INITCOND`, and
//! the moving-aggregate mode's `MSFUNC`, `MINVFUNC`, `MSTYPE`, `MFINALFUNC`, `MINITCOND`;
//! the planner hints `SSPACE`, `MSSPACE`, `PARALLEL`, `FINALFUNC_MODIFY` and
//! `MFINALFUNC_MODIFY` are accepted and change nothing (a state is a value, never modified
//! in place). The rest of PostgreSQL's options are refused by name.

use crate::statement::{CreateAggregate, MovingAggregate, StatementBody};
use brook_common::{brook_err, BrookError, Result};
use datafusion::sql::sqlparser::ast::{DataType, ObjectName};
use datafusion::sql::sqlparser::keywords::Keyword;
use datafusion::sql::sqlparser::parser::Parser;
use datafusion::sql::sqlparser::tokenizer::Token;

/// Whether the next two tokens are `name type` (an argument name before its type) rather
/// than a type of two words (`double precision`, `character varying`, `time with ...`).
fn named_argument(p: &Parser<'_>) -> bool {
    let (Token::Word(_), Token::Word(second)) = (
        &p.peek_nth_token_ref(0).token,
        &p.peek_nth_token_ref(1).token,
    ) else {
        return false;
    };
    !matches!(
        second.keyword,
        Keyword::PRECISION | Keyword::VARYING | Keyword::WITH | Keyword::WITHOUT | Keyword::ORDER
    )
}

/// The argument types of `(type, ...)`: `IN` and argument names before a type are
/// skipped; `(*)` is no argument (an aggregate over rows, as `count(*)`).
fn argument_types(p: &mut Parser<'_>) -> Result<Vec<DataType>> {
    p.expect_token(&Token::LParen)?;
    if p.consume_token(&Token::Mul) {
        p.expect_token(&Token::RParen)?;
        return Ok(Vec::new());
    }
    if p.consume_token(&Token::RParen) {
        return Ok(Vec::new());
    }
    let mut types = Vec::new();
    loop {
        if p.parse_keyword(Keyword::VARIADIC) {
            return Err(brook_err!(Unsupported, "VARIADIC aggregate arguments"));
        }
        if p.parse_keyword(Keyword::ORDER) {
            return Err(ordered_set());
        }
        let _ = p.parse_keyword(Keyword::IN);
        if named_argument(p) {
            p.next_token();
        }
        types.push(p.parse_data_type()?);
        if p.parse_keyword(Keyword::ORDER) {
            return Err(ordered_set());
        }
        if !p.consume_token(&Token::Comma) {
            break;
        }
    }
    p.expect_token(&Token::RParen)?;
    Ok(types)
}

fn ordered_set() -> BrookError {
    brook_err!(
        Unsupported,
        "ordered-set aggregates (CREATE AGGREGATE ... ORDER BY, called WITHIN GROUP)"
    )
}

/// A constant option value (`INITCOND = '(0,0)'`, `= 0`, `= -1.5`) as its text.
fn constant(p: &mut Parser<'_>) -> Result<String> {
    let negative = p.consume_token(&Token::Minus);
    let text = match p.next_token().token {
        Token::SingleQuotedString(s) => s,
        Token::DollarQuotedString(d) => d.value,
        Token::Number(n, _) => n,
        Token::Word(w) => w.value,
        other => {
            return Err(brook_err!(
                Syntax,
                "syntax error at or near \"{other}\": INITCOND is a constant"
            ))
        }
    };
    Ok(if negative { format!("-{text}") } else { text })
}

/// The `(OPTION = value, ...)` list, after its `(`; `basetype` collects the old form's
/// `BASETYPE`.
fn options(p: &mut Parser<'_>, basetype: &mut Option<Vec<DataType>>) -> Result<Options> {
    let mut o = Options::default();
    loop {
        let key = p.parse_identifier()?.value.to_ascii_uppercase();
        p.expect_token(&Token::Eq)?;
        match key.as_str() {
            "SFUNC" | "SFUNC1" => o.sfunc = Some(p.parse_object_name(false)?),
            "STYPE" | "STYPE1" => o.stype = Some(p.parse_data_type()?),
            "FINALFUNC" => o.finalfunc = Some(p.parse_object_name(false)?),
            "COMBINEFUNC" => o.combinefunc = Some(p.parse_object_name(false)?),
            "INITCOND" | "INITCOND1" => o.initcond = Some(constant(p)?),
            "BASETYPE" if basetype.is_some() => {
                // `BASETYPE = "ANY"` is an aggregate over rows (no argument).
                let any = matches!(&p.peek_token_ref().token,
                    Token::Word(w) if w.value.eq_ignore_ascii_case("any"));
                *basetype = Some(if any {
                    p.next_token();
                    Vec::new()
                } else {
                    vec![p.parse_data_type()?]
                });
            }
            "MSFUNC" => o.msfunc = Some(p.parse_object_name(false)?),
            "MINVFUNC" => o.minvfunc = Some(p.parse_object_name(false)?),
            "MSTYPE" => o.mstype = Some(p.parse_data_type()?),
            "MFINALFUNC" => o.mfinalfunc = Some(p.parse_object_name(false)?),
            "MINITCOND" => o.minitcond = Some(constant(p)?),
            "SSPACE" | "MSSPACE" => {
                constant(p)?;
            }
            "PARALLEL" | "FINALFUNC_MODIFY" | "MFINALFUNC_MODIFY" => {
                p.parse_identifier()?;
            }
            "SERIALFUNC" | "DESERIALFUNC" => {
                return Err(BrookError::invalid_function(
                    "serialization functions may be specified only when the aggregate \
                     transition data type is internal",
                ))
            }
            "FINALFUNC_EXTRA" | "MFINALFUNC_EXTRA" | "SORTOP" | "HYPOTHETICAL" => {
                return Err(brook_err!(Unsupported, "CREATE AGGREGATE option {key}"))
            }
            other => {
                return Err(brook_err!(
                    Syntax,
                    "aggregate attribute \"{}\" not recognized",
                    other.to_ascii_lowercase()
                ))
            }
        }
        if !p.consume_token(&Token::Comma) {
            break;
        }
    }
    p.expect_token(&Token::RParen)?;
    Ok(o)
}

#[derive(Default)]
struct Options {
    sfunc: Option<ObjectName>,
    stype: Option<DataType>,
    finalfunc: Option<ObjectName>,
    combinefunc: Option<ObjectName>,
    initcond: Option<String>,
    msfunc: Option<ObjectName>,
    minvfunc: Option<ObjectName>,
    mstype: Option<DataType>,
    mfinalfunc: Option<ObjectName>,
    minitcond: Option<String>,
}

/// The moving-aggregate mode of the options, checked as PostgreSQL checks it (42P13):
/// `MSTYPE` with both `MSFUNC` and `MINVFUNC`, and no other moving option without it.
fn moving_mode(o: &mut Options) -> Result<Option<MovingAggregate>> {
    let Some(mstype) = o.mstype.take() else {
        let given = [
            ("msfunc", o.msfunc.is_some()),
            ("minvfunc", o.minvfunc.is_some()),
            ("mfinalfunc", o.mfinalfunc.is_some()),
            ("minitcond", o.minitcond.is_some()),
        ];
        return match given.iter().find(|(_, g)| *g) {
            Some((what, _)) => Err(BrookError::invalid_function(format!(
                "aggregate {what} must not be specified without mstype"
            ))),
            None => Ok(None),
        };
    };
    let required = |f: Option<ObjectName>, what: &str| {
        f.ok_or_else(|| {
            BrookError::invalid_function(format!(
                "aggregate {what} must be specified when mstype is specified"
            ))
        })
    };
    Ok(Some(MovingAggregate {
        msfunc: required(o.msfunc.take(), "msfunc")?,
        minvfunc: required(o.minvfunc.take(), "minvfunc")?,
        mstype,
        mfinalfunc: o.mfinalfunc.take(),
        minitcond: o.minitcond.take(),
    }))
}

/// Whether the next tokens open the old form's option list: `(word =`.
fn old_form(p: &Parser<'_>) -> bool {
    p.peek_nth_token_ref(0).token == Token::LParen
        && matches!(p.peek_nth_token_ref(1).token, Token::Word(_))
        && p.peek_nth_token_ref(2).token == Token::Eq
}

/// After `CREATE [OR REPLACE] AGGREGATE`.
pub(crate) fn parse_create_aggregate(
    p: &mut Parser<'_>,
    or_replace: bool,
) -> Result<CreateAggregate> {
    let name = p.parse_object_name(false)?;
    let (args, mut o) = if old_form(p) {
        p.expect_token(&Token::LParen)?;
        let mut basetype = Some(Vec::new());
        let o = options(p, &mut basetype)?;
        (basetype.unwrap_or_default(), o)
    } else {
        let args = argument_types(p)?;
        p.expect_token(&Token::LParen)?;
        (args, options(p, &mut None)?)
    };
    let moving = moving_mode(&mut o)?;
    let Some(stype) = o.stype else {
        return Err(BrookError::invalid_function(
            "aggregate stype must be specified",
        ));
    };
    let Some(sfunc) = o.sfunc else {
        return Err(BrookError::invalid_function(
            "aggregate sfunc must be specified",
        ));
    };
    Ok(CreateAggregate {
        name,
        or_replace,
        args,
        sfunc,
        stype,
        finalfunc: o.finalfunc,
        combinefunc: o.combinefunc,
        initcond: o.initcond,
        moving,
    })
}

/// After `DROP AGGREGATE`.
pub(crate) fn parse_drop_aggregate(p: &mut Parser<'_>) -> Result<StatementBody> {
    let if_exists = p.parse_keywords(&[Keyword::IF, Keyword::EXISTS]);
    let mut names = Vec::new();
    loop {
        let name = p.parse_object_name(false)?;
        let args = if p.peek_token_ref().token == Token::LParen {
            Some(argument_types(p)?)
        } else {
            None
        };
        names.push((name, args));
        if !p.consume_token(&Token::Comma) {
            break;
        }
    }
    let cascade =
        p.parse_one_of_keywords(&[Keyword::CASCADE, Keyword::RESTRICT]) == Some(Keyword::CASCADE);
    Ok(StatementBody::DropAggregate {
        names,
        if_exists,
        cascade,
    })
}

#[cfg(test)]
mod tests {
    use crate::parser::parse_one;
    use crate::statement::{CreateAggregate, StatementBody};

    fn create(sql: &str) -> brook_common::Result<CreateAggregate> {
        match parse_one(sql)?.body {
            StatementBody::CreateAggregate(a) => Ok(*a),
            other => panic!("not CREATE AGGREGATE: {other:?}"),
        }
    }

    #[test]
    fn reads_the_current_and_the_old_form() {
        let a = create(
            "CREATE OR REPLACE AGGREGATE s.my_sum (x double precision) \
             (sfunc = float8pl, stype = float8, initcond = 0, parallel = safe)",
        )
        .unwrap();
        assert!(a.or_replace);
        assert_eq!(a.name.to_string(), "s.my_sum");
        assert_eq!(a.args.len(), 1);
        assert_eq!(a.args[0].to_string(), "DOUBLE PRECISION");
        assert_eq!(a.initcond.as_deref(), Some("0"));
        let old = create(
            "CREATE AGGREGATE c (BASETYPE = int, SFUNC = int4pl, STYPE = int, \
             INITCOND = '-1', FINALFUNC = f)",
        )
        .unwrap();
        assert_eq!(old.args.len(), 1);
        assert_eq!(old.initcond.as_deref(), Some("-1"));
        assert_eq!(old.finalfunc.map(|f| f.to_string()).as_deref(), Some("f"));
        let rows = create("CREATE AGGREGATE n (*) (SFUNC = inc, STYPE = bigint)").unwrap();
        assert!(rows.args.is_empty());
    }

    #[test]
    fn refuses_what_it_does_not_run_by_name() {
        let cases = [
            (
                "CREATE AGGREGATE a (int) (STYPE = int)",
                "42P13",
                "sfunc must",
            ),
            (
                "CREATE AGGREGATE a (int) (SFUNC = f)",
                "42P13",
                "stype must",
            ),
            (
                "CREATE AGGREGATE a (int) (SFUNC = f, STYPE = int, MSFUNC = g)",
                "42P13",
                "msfunc must not be specified without mstype",
            ),
            (
                "CREATE AGGREGATE a (int) (SFUNC = f, STYPE = int, MSTYPE = int, MSFUNC = g)",
                "42P13",
                "minvfunc must be specified when mstype is specified",
            ),
            (
                "CREATE AGGREGATE a (int ORDER BY int) (SFUNC = f, STYPE = int)",
                "0A000",
                "ordered-set",
            ),
            (
                "CREATE AGGREGATE a (int) (SFUNC = f, STYPE = int, colour = red)",
                "42601",
                "\"colour\" not recognized",
            ),
        ];
        for (sql, code, text) in cases {
            let e = create(sql).unwrap_err();
            assert_eq!(e.sqlstate(), code, "{sql}: {e}");
            assert!(e.to_string().contains(text), "{sql}: {e}");
        }
    }
}
