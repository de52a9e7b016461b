//! Splits a query string into statements and parses each one.

use brook_common::{brook_err, BrookError, Result};
use datafusion::sql::sqlparser::ast::{SqlOption, Statement};
use datafusion::sql::sqlparser::dialect::PostgreSqlDialect;
use datafusion::sql::sqlparser::keywords::Keyword;
use datafusion::sql::sqlparser::parser::Parser;
use datafusion::sql::sqlparser::tokenizer::{Token, Tokenizer};
use datafusion_pg_catalog::sql::rules::{
    AliasDuplicatedProjectionRewrite, CurrentUserVariableToSessionUserFunctionCall,
    FixArrayLiteral, FixVersionColumnName, PrependUnqualifiedPgTableName,
    RemoveSubqueryFromProjection, ResolveUnqualifiedIdentifier, RewriteArrayAnyAllOperation,
    RewritePgCatalogOperator, RewriteRegCastToSubquery, SqlStatementRewriteRule,
    StripCallableQualifier, StripCollate,
};
use datafusion_pg_catalog::sql::PostgresCompatibilityParser;
use std::sync::{Arc, LazyLock};

/// The compatibility parser compiles its rewrite tables once; it is stateless afterwards.
/// It serves client catalog queries (psql, JDBC, ODBC metadata), whose known shapes it
/// rewrites wholesale, including dropping correlated subqueries from select lists.
static COMPAT: LazyLock<PostgresCompatibilityParser> =
    LazyLock::new(PostgresCompatibilityParser::new);

/// The compatibility rewrites that keep a query's meaning (syntax PostgreSQL accepts and
/// DataFusion does not); applied to every user statement.
static SAFE_RULES: LazyLock<Vec<Arc<dyn SqlStatementRewriteRule>>> = LazyLock::new(|| {
    vec![
        // First: only the `unnest` calls the user wrote.
        Arc::new(crate::unnest_arrays::UnnestElements),
        Arc::new(crate::distinct_from::DistinctFromPrecedence),
        Arc::new(crate::array_literal::ArrayLiteralCasts),
        Arc::new(crate::extract_numeric::ExtractCalls),
        Arc::new(crate::system_columns::TableOid),
        Arc::new(crate::system_columns::CatalogRegclass),
        Arc::new(crate::information_schema::InformationSchemaColumns),
        Arc::new(crate::using_joins::UsingJoins),
        Arc::new(crate::partial_aliases::PartialAliases),
        Arc::new(crate::regproc_columns::RegprocColumns),
        Arc::new(crate::empty_catalogs::EmptyCatalogs),
        Arc::new(crate::reloptions::OptionsToTable),
        Arc::new(crate::pg_functions::ToRegtypeAsCast),
        Arc::new(crate::pg_functions::GenerateSubscripts),
        Arc::new(crate::named_arguments::NamedArguments),
        Arc::new(crate::set_returning::SeriesInSelectList),
        Arc::new(crate::pg_functions::ExpandArray),
        Arc::new(crate::pg_functions::FieldSelection),
        Arc::new(crate::quantified_subquery::QuantifiedSubqueries),
        Arc::new(crate::row_in_subquery::RowInSubqueries),
        Arc::new(crate::row_comparison::RowComparisons),
        Arc::new(crate::where_in_subquery::WhereInSubqueries),
        Arc::new(crate::in_subquery_projection::InSubqueryInProjection),
        Arc::new(crate::array_subquery::ArraySubquery),
        Arc::new(crate::pg_functions::SerialSequenceIsNull),
        Arc::new(crate::pg_functions::SequenceNameArguments),
        Arc::new(crate::catalog_lookups::CatalogLookups),
        Arc::new(crate::like_escape::LikeEscapeAsBackslash),
        Arc::new(crate::whole_row::WholeRowReferences),
        Arc::new(crate::json_aggregates::JsonAggregates),
        Arc::new(crate::json_ops::JsonOperators),
        Arc::new(crate::array_operators::ArrayOperators),
        Arc::new(crate::pg_functions::StatActivityView),
        Arc::new(crate::niladic::NiladicFunctions),
        Arc::new(crate::current_times::CurrentTimes),
        Arc::new(crate::prefix_operators::PrefixOperators),
        Arc::new(crate::string_casts::StringLengthCasts),
        Arc::new(AliasDuplicatedProjectionRewrite),
        Arc::new(RewriteArrayAnyAllOperation),
        Arc::new(PrependUnqualifiedPgTableName),
        Arc::new(StripCallableQualifier),
        Arc::new(FixArrayLiteral),
        Arc::new(StripCollate),
        Arc::new(RewritePgCatalogOperator),
        Arc::new(crate::system_columns::RegclassChecked),
        Arc::new(crate::regtype_names::RegtypeNames),
        Arc::new(RewriteRegCastToSubquery::new()),
    ]
});

/// The compatibility parser's rewrite rules, in its order, with Brook's
/// `SelectListSubqueries` in place of its `RemoveSubqueryFromProjection` (which replaces
/// every correlated select-list subquery by NULL).
static CATALOG_RULES: LazyLock<Vec<Arc<dyn SqlStatementRewriteRule>>> = LazyLock::new(|| {
    vec![
        Arc::new(AliasDuplicatedProjectionRewrite),
        Arc::new(ResolveUnqualifiedIdentifier),
        Arc::new(RewriteArrayAnyAllOperation),
        Arc::new(PrependUnqualifiedPgTableName),
        Arc::new(StripCallableQualifier),
        Arc::new(FixArrayLiteral),
        Arc::new(CurrentUserVariableToSessionUserFunctionCall),
        Arc::new(StripCollate),
        Arc::new(RewritePgCatalogOperator),
        Arc::new(RewriteRegCastToSubquery::new()),
    ]
});

/// A catalog query as the compatibility parser reads it, except that select-list
/// subqueries Brook can run are kept (`select_list_subqueries`). The parser also swaps
/// whole known client queries for replacements (token matching); when it did, its result
/// is taken as it is. It did not when its result equals the query parsed plainly with its
/// own rules applied.
fn parse_catalog_query(text: &str) -> Result<Vec<Statement>> {
    let compat = COMPAT.parse(text)?;
    let Ok(plain) = Parser::parse_sql(&PostgreSqlDialect {}, text) else {
        return Ok(compat);
    };
    let with_rules = |s: Statement| CATALOG_RULES.iter().fold(s, |s, rule| rule.rewrite(s));
    let same = plain.len() == compat.len()
        && plain.iter().zip(&compat).all(|(p, c)| {
            let theirs = RemoveSubqueryFromProjection.rewrite(with_rules(p.clone()));
            FixVersionColumnName.rewrite(theirs).to_string() == c.to_string()
        });
    if !same && !runs_itself(text) {
        return Ok(compat);
    }
    Ok(plain
        .into_iter()
        .map(|s| {
            let s = crate::pg_functions::SequenceNameArguments.rewrite(s);
            let s = crate::select_list_subqueries::SelectListSubqueries.rewrite(with_rules(s));
            FixVersionColumnName.rewrite(s)
        })
        .collect())
}

/// Known client queries whose replacement by the compatibility parser Brook does not take,
/// because it runs them: Grafana's search-path schemas (`string_to_array(current_setting(
/// 'search_path'), ',')`), which the crate replaces by `''` for want of `current_setting`
/// (so Grafana's table lists came back empty, or qualified every table).
fn runs_itself(text: &str) -> bool {
    let bare: String = text
        .chars()
        .filter(|c| !c.is_whitespace())
        .collect::<String>()
        .to_ascii_lowercase();
    bare.contains("string_to_array(current_setting('search_path'),',')")
}

/// Names cast to `regclass`/`regtype`/... as catalog lookups: run again on a catalog query
/// after Brook's own rewrites have made such casts (`to_regtype`).
static REGCAST: LazyLock<RewriteRegCastToSubquery> = LazyLock::new(RewriteRegCastToSubquery::new);

/// True for queries against the system catalogs (what drivers and psql send).
fn is_catalog_query(text: &str) -> bool {
    let lower = text.to_ascii_lowercase();
    // A whole name: `pg_typeof(x)` is not a read of `pg_type`.
    let names = |name: &str| {
        lower.match_indices(name).any(|(at, _)| {
            !lower[at + name.len()..].starts_with(|c: char| c.is_ascii_alphanumeric() || c == '_')
        })
    };
    [
        "pg_catalog",
        "pg_class",
        "pg_type",
        "pg_namespace",
        "pg_attribute",
        "pg_proc",
        "pg_database",
        "pg_settings",
        "information_schema",
    ]
    .into_iter()
    .any(names)
}

/// Brook's rewrites that must see a catalog query before the compatibility crate's rules
/// (which turn casts to `regproc` into integer casts and qualify bare columns): the query
/// text again when one of them changed it, else the text as sent (which the crate's
/// replacements of known client queries match on).
fn before_compat_rules(text: &str) -> String {
    let Ok(mut parsed) = Parser::parse_sql(&PostgreSqlDialect {}, text) else {
        return text.to_string();
    };
    let [s] = parsed.as_mut_slice() else {
        return text.to_string();
    };
    let before = s.to_string();
    let after = [
        // Before the crate's `FixArrayLiteral`, which splits `'{1,NULL}'` at every comma.
        &crate::array_literal::ArrayLiteralCasts as &dyn SqlStatementRewriteRule,
        &crate::empty_catalogs::EmptyCatalogs,
        &crate::system_columns::TableOid,
        &crate::system_columns::CatalogRegclass,
        &crate::regproc_columns::RegprocColumns,
        &crate::information_schema::InformationSchemaColumns,
        &crate::pg_functions::ExpandArray,
        &crate::pg_functions::FieldSelection,
        &crate::in_subquery_projection::InSubqueryInProjection,
    ]
    .iter()
    .fold(s.clone(), |s, rule| rule.rewrite(s))
    .to_string();
    if after == before {
        text.to_string()
    } else {
        after
    }
}

/// psql's relation lists (`\d`, `\dt`, `\dv`, `\dm`) name a kind by `pg_class.relkind`,
/// which knows no streams: there the kind's name comes from `brook_relkind(schema, name)`, so
/// streams list as `stream` and materialized views as `materialized view`, and `\dm` (which
/// asks for relkind 'm') finds the materialized views.
fn describe_brook_kinds(text: &str) -> String {
    if !(text.contains("c.relname") && text.contains("n.nspname")) {
        return text.to_string();
    }
    text.replace(
        "c.relkind IN ('m','')",
        "(c.relkind IN ('m','') OR brook_relkind(n.nspname, c.relname) = 'materialized view')",
    )
    .replace(
        "WHEN 'r' THEN 'table'",
        "WHEN 'r' THEN COALESCE(brook_relkind(n.nspname, c.relname), 'table')",
    )
    .replace(
        "WHEN 'v' THEN 'view'",
        "WHEN 'v' THEN COALESCE(brook_relkind(n.nspname, c.relname), 'view')",
    )
}

pub use crate::lexical::split_statements;
use crate::lexical::{
    plain_catalog_operators, split_signed_comparisons, split_statements_at, strip_budget,
    strip_emit, strip_overriding, strip_with_data, LineOffsets,
};

pub use crate::statement::{
    AlterIdentity, AlterSequence, BrookStatement, CreateStream, CreateSynopsis, Emit, ErrorBudget,
    RenameKind, StatementBody, Watermark,
};

/// Parse a whole query string (possibly several `;`-separated statements) from a client:
/// each statement's expressions may nest at most [`MAX_EXPR_DEPTH`] deep (54001 beyond).
pub fn parse_sql(sql: &str) -> Result<Vec<BrookStatement>> {
    split_statements_at(sql)?
        .iter()
        .map(|(start, s)| {
            let mut stmt = parse_one(s).map_err(|e| with_position(e, sql, *start, s))?;
            check_depth(&stmt)?;
            stmt.text = Some(s.to_string());
            Ok(stmt)
        })
        .collect()
}

/// A syntax error of statement `stmt` (starting at byte `start` of the query text `sql`)
/// that names its line and column, as the position in `sql` clients point at.
fn with_position(e: BrookError, sql: &str, start: usize, stmt: &str) -> BrookError {
    let BrookError::Syntax(message) = e else {
        return e;
    };
    let Some((text, line, column)) = message.rsplit_once(" at Line: ").and_then(|(text, at)| {
        let (line, column) = at.split_once(", Column: ")?;
        Some((text, line.parse::<u64>().ok()?, column.parse::<u64>().ok()?))
    }) else {
        return BrookError::Syntax(message);
    };
    let byte = start + LineOffsets::new(stmt).byte(line, column);
    let position = sql.get(..byte).map_or(0, |before| before.chars().count()) + 1;
    BrookError::SyntaxAt {
        message: text.to_string(),
        position,
    }
}

/// How deep a statement's expressions may nest (`1 + 1 + ... + 1` with n terms nests n
/// deep). Planning and evaluation walk expressions recursively, so a limit checked before
/// them keeps a client's statement from overflowing a thread's stack and aborting the
/// server; PostgreSQL answers such statements with 54001 as well (max_stack_depth).
pub const MAX_EXPR_DEPTH: usize = 2_000;

/// 54001 when an expression of `stmt` nests deeper than [`MAX_EXPR_DEPTH`]. The visitor
/// stops at the limit, so the check itself recurses at most that deep.
pub fn check_depth(stmt: &BrookStatement) -> Result<()> {
    use datafusion::sql::sqlparser::ast::{Visit, Visitor};
    use std::ops::ControlFlow;
    struct Depth {
        now: usize,
    }
    impl Visitor for Depth {
        type Break = ();
        fn pre_visit_expr(&mut self, _: &datafusion::sql::sqlparser::ast::Expr) -> ControlFlow<()> {
            self.now += 1;
            if self.now > MAX_EXPR_DEPTH {
                ControlFlow::Break(())
            } else {
                ControlFlow::Continue(())
            }
        }
        fn post_visit_expr(
            &mut self,
            _: &datafusion::sql::sqlparser::ast::Expr,
        ) -> ControlFlow<()> {
            self.now -= 1;
            ControlFlow::Continue(())
        }
    }
    let inner: Option<&Statement> = match &stmt.body {
        StatementBody::Sql(s) => Some(s),
        StatementBody::FetchWith { fetch, .. } | StatementBody::Move(fetch) => Some(fetch),
        _ => None,
    };
    match inner.map(|s| s.visit(&mut Depth { now: 0 })) {
        Some(ControlFlow::Break(())) => Err(BrookError::too_complex(format!(
            "stack depth limit exceeded: an expression nests more than {MAX_EXPR_DEPTH} deep (split it, or use IN (...) / a VALUES list / a table instead of a long chain of operators)"
        ))),
        _ => Ok(()),
    }
}

/// The first two words of a statement, upper-cased.
fn leading_words(text: &str) -> (String, String) {
    let mut words = text
        .split(|c: char| c.is_whitespace() || c == ';')
        .filter(|w| !w.is_empty())
        .map(str::to_ascii_uppercase);
    (
        words.next().unwrap_or_default(),
        words.next().unwrap_or_default(),
    )
}

/// PostgreSQL's transaction statements the parser lacks: `ABORT` is `ROLLBACK`; two-phase
/// commit's statements answer as a PostgreSQL with `max_prepared_transactions = 0` does
/// (Brook keeps no prepared transactions).
fn transaction_statement(text: &str) -> Option<Result<BrookStatement>> {
    let trimmed = text.trim_start();
    if let Some(plain) = without_deferrable(trimmed) {
        return Some(parse_one(&plain));
    }
    match leading_words(trimmed) {
        (first, _) if first == "ABORT" => {
            Some(parse_one(&format!("ROLLBACK{}", &trimmed["ABORT".len()..])))
        }
        (first, second) if first == "PREPARE" && second == "TRANSACTION" => Some(Err(
            brook_err!(ObjectState, "prepared transactions are disabled (Brook does not keep transactions prepared for two-phase commit)"),
        )),
        (first, second)
            if (first == "COMMIT" || first == "ROLLBACK") && second == "PREPARED" =>
        {
            let id = trimmed
                .split_whitespace()
                .nth(2)
                .unwrap_or("")
                .trim_end_matches(';')
                .trim_matches('\'');
            Some(Err(brook_err!(
                UndefinedObject,
                "prepared transaction with identifier \"{id}\" does not exist"
            )))
        }
        _ => None,
    }
}

/// BEGIN / START TRANSACTION / SET TRANSACTION / SET SESSION CHARACTERISTICS without
/// their `[NOT] DEFERRABLE` mode, which the parser lacks. It matters only to a
/// SERIALIZABLE READ ONLY transaction (it may then wait for a safe snapshot), and Brook's
/// blocks are READ COMMITTED, so it changes nothing (pg_dump `--serializable-deferrable`,
/// asyncpg's `deferrable=True` send it).
fn without_deferrable(text: &str) -> Option<String> {
    let (first, second) = leading_words(text);
    let transaction = first == "BEGIN"
        || first == "START"
        || (first == "SET" && (second == "TRANSACTION" || second == "SESSION"));
    if !transaction || !text.to_ascii_uppercase().contains("DEFERRABLE") {
        return None;
    }
    let mut kept: Vec<String> = Vec::new();
    let mut dropped = false;
    for token in text.split_whitespace() {
        let word = token.trim_end_matches([',', ';']);
        if !word.eq_ignore_ascii_case("DEFERRABLE") {
            kept.push(token.to_string());
            continue;
        }
        dropped = true;
        if kept.last().is_some_and(|w| w.eq_ignore_ascii_case("NOT")) {
            kept.pop();
        }
        // `..., DEFERRABLE` leaves a comma behind; `DEFERRABLE, ...` takes its own.
        if !token.ends_with(',') {
            if let Some(last) = kept.last_mut() {
                if last.ends_with(',') {
                    last.pop();
                }
            }
        }
    }
    dropped.then(|| kept.join(" "))
}

/// Parse one statement's text.
pub fn parse_one(text: &str) -> Result<BrookStatement> {
    if let Some(stmt) = transaction_statement(text) {
        return stmt;
    }
    if let Some(plain) = plain_catalog_operators(text)? {
        return parse_one(&plain);
    }
    if let Some(split) = split_signed_comparisons(text)? {
        return parse_one(&split);
    }
    if let Some(calls) = crate::lexical::xmlexists_calls(text)? {
        return parse_one(&calls);
    }
    if let Some(framed) = crate::lexical::window_exclusion(text)? {
        return parse_one(&framed);
    }
    if let Some(select) = crate::table_command::select_star_text(text)? {
        return parse_one(&select);
    }
    if let Some(unnamed) = crate::create_sequence::identity_sequence_name(text)? {
        return parse_one(&unnamed);
    }
    if let Some(reordered) = crate::create_sequence::identity_options_in_order(text)? {
        return parse_one(&reordered);
    }
    if let Some(create) = crate::create_database::parse_create_database(text)? {
        return Ok(BrookStatement::sql(create));
    }
    // PostgreSQL's dialect of sqlparser lacks MATCH_RECOGNIZE: one that has it.
    let match_recognize = crate::match_recognize::uses_match_recognize(text);
    if match_recognize {
        if let Some(rewritten) = crate::match_recognize::rewrite_extensions(text)? {
            return parse_one(&rewritten);
        }
    }
    let dialect: Box<dyn datafusion::sql::sqlparser::dialect::Dialect> = if match_recognize {
        Box::new(crate::dialect::WITH_MATCH_RECOGNIZE)
    } else {
        Box::new(crate::dialect::BrookDialect::default())
    };
    let mut p = Parser::new(dialect.as_ref()).try_with_sql(text)?;
    if p.parse_keywords(&[Keyword::CREATE, Keyword::STREAM]) {
        return Ok(BrookStatement::new(StatementBody::CreateStream(Box::new(
            parse_create_stream(&mut p)?,
        ))));
    }
    if p.parse_keyword(Keyword::CREATE) {
        if parse_word(&mut p, "SYNOPSIS") {
            return Ok(BrookStatement::new(StatementBody::CreateSynopsis(
                Box::new(parse_create_synopsis(&mut p)?),
            )));
        }
        let or_replace = p.parse_keywords(&[Keyword::OR, Keyword::REPLACE]);
        if parse_word(&mut p, "AGGREGATE") {
            let a = crate::create_aggregate::parse_create_aggregate(&mut p, or_replace)?;
            expect_end(&mut p)?;
            return Ok(BrookStatement::new(StatementBody::CreateAggregate(
                Box::new(a),
            )));
        }
        if or_replace {
            p.prev_token();
            p.prev_token();
        }
        let temporary = p
            .parse_one_of_keywords(&[Keyword::TEMP, Keyword::TEMPORARY])
            .is_some();
        if p.parse_keyword(Keyword::SEQUENCE) {
            let s = crate::create_sequence::parse_create_sequence(&mut p, temporary)?;
            expect_end(&mut p)?;
            return Ok(BrookStatement::sql(s));
        }
        if temporary {
            p.prev_token();
        }
        p.prev_token();
    }
    // `RESET TIME ZONE`, PostgreSQL's spelling of `RESET timezone` (sqlparser has `SET
    // TIME ZONE` only).
    if p.parse_keywords(&[Keyword::RESET, Keyword::TIME, Keyword::ZONE]) {
        expect_end(&mut p)?;
        return Ok(BrookStatement::sql(Statement::Reset(
            datafusion::sql::sqlparser::ast::ResetStatement {
                reset: datafusion::sql::sqlparser::ast::Reset::ConfigurationParameter(
                    datafusion::sql::sqlparser::ast::ObjectName::from(vec![
                        datafusion::sql::sqlparser::ast::Ident::new("timezone"),
                    ]),
                ),
            },
        )));
    }
    if let Some(owner) = parse_alter_owner(text)? {
        return Ok(owner);
    }
    if let Some(rename) = parse_alter_rename(text)? {
        return Ok(rename);
    }
    if let Some(a) = crate::alter_identity::parse_alter_identity(text)? {
        return Ok(BrookStatement::new(StatementBody::AlterIdentity(Box::new(
            a,
        ))));
    }
    if p.parse_keywords(&[Keyword::ALTER, Keyword::SEQUENCE]) {
        let a = crate::create_sequence::parse_alter_sequence(&mut p)?;
        expect_end(&mut p)?;
        return Ok(BrookStatement::new(StatementBody::AlterSequence(Box::new(
            a,
        ))));
    }
    if p.parse_keyword(Keyword::DROP) {
        if parse_word(&mut p, "AGGREGATE") {
            let d = crate::create_aggregate::parse_drop_aggregate(&mut p)?;
            expect_end(&mut p)?;
            return Ok(BrookStatement::new(d));
        }
        if parse_word(&mut p, "SYNOPSIS") {
            let if_exists = p.parse_keywords(&[Keyword::IF, Keyword::EXISTS]);
            let names = p.parse_comma_separated(|p| p.parse_object_name(false))?;
            let cascade = p.parse_one_of_keywords(&[Keyword::CASCADE, Keyword::RESTRICT])
                == Some(Keyword::CASCADE);
            expect_end(&mut p)?;
            return Ok(BrookStatement::new(StatementBody::DropSynopsis {
                names,
                if_exists,
                cascade,
            }));
        }
        p.prev_token();
    }
    if parse_word(&mut p, "REFRESH") {
        p.expect_keywords(&[Keyword::MATERIALIZED, Keyword::VIEW])?;
        let _ = p.parse_keyword(Keyword::CONCURRENTLY);
        let name = p.parse_object_name(false)?;
        let mut no_data = false;
        if p.parse_keyword(Keyword::WITH) {
            no_data = p.parse_keyword(Keyword::NO);
            p.expect_keyword(Keyword::DATA)?;
        }
        expect_end(&mut p)?;
        return Ok(BrookStatement::new(
            StatementBody::RefreshMaterializedView { name, no_data },
        ));
    }
    if p.parse_keywords(&[Keyword::DROP, Keyword::STREAM]) {
        let if_exists = p.parse_keywords(&[Keyword::IF, Keyword::EXISTS]);
        let names = p.parse_comma_separated(|p| p.parse_object_name(false))?;
        let cascade = p.parse_one_of_keywords(&[Keyword::CASCADE, Keyword::RESTRICT])
            == Some(Keyword::CASCADE);
        expect_end(&mut p)?;
        return Ok(BrookStatement::new(StatementBody::DropStream {
            names,
            if_exists,
            cascade,
        }));
    }
    if let Some((rest, budget)) = strip_budget(text)? {
        let mut stmt = parse_one(&rest)?;
        if stmt.budget.is_some() {
            return Err(brook_err!(Syntax, "syntax error: WITH ERROR given twice"));
        }
        stmt.budget = Some(budget);
        return Ok(stmt);
    }
    if let Some((rest, emit)) = strip_emit(text)? {
        let mut stmt = parse_one(&rest)?;
        if !matches!(stmt.body, StatementBody::Sql(_)) || stmt.emit.is_some() {
            return Err(brook_err!(Syntax, "syntax error at or near \"EMIT\""));
        }
        stmt.emit = Some(emit);
        return Ok(stmt);
    }
    if let Some((rest, overriding)) = strip_overriding(text)? {
        let mut stmt = parse_one(&rest)?;
        let is_insert =
            matches!(&stmt.body, StatementBody::Sql(s) if matches!(**s, Statement::Insert(_)));
        if !is_insert || stmt.overriding.is_some() {
            return Err(brook_err!(Syntax, "syntax error at or near \"OVERRIDING\""));
        }
        stmt.overriding = Some(overriding);
        return Ok(stmt);
    }
    if let Some((rest, no_data)) = strip_with_data(text)? {
        let mut stmt = parse_one(&rest)?;
        let materialized = matches!(&stmt.body, StatementBody::Sql(s)
            if matches!(&**s, Statement::CreateView(v) if v.materialized));
        if !materialized {
            return Err(brook_err!(Syntax, "syntax error at or near \"WITH\""));
        }
        stmt.with_no_data = no_data;
        return Ok(stmt);
    }
    if let Some(fetch) = crate::fetch::parse_move(&mut p)? {
        expect_end(&mut p)?;
        return Ok(BrookStatement::new(StatementBody::Move(Box::new(fetch))));
    }
    if p.peek_keyword(Keyword::FETCH) {
        let fetch = crate::fetch::parse_fetch(&mut p)?;
        if p.peek_keyword(Keyword::WITH) {
            let mut timeout = None;
            for o in p.parse_options(Keyword::WITH)? {
                match o {
                    SqlOption::KeyValue { key, value }
                        if key.value.eq_ignore_ascii_case("timeout") =>
                    {
                        timeout = Some(match value {
                            datafusion::sql::sqlparser::ast::Expr::Value(v) => match v.value {
                                datafusion::sql::sqlparser::ast::Value::SingleQuotedString(s) => s,
                                other => other.to_string(),
                            },
                            other => other.to_string(),
                        });
                    }
                    other => {
                        return Err(brook_err!(
                            Syntax,
                            "unrecognized FETCH option {other} (FETCH takes timeout)"
                        ))
                    }
                }
            }
            expect_end(&mut p)?;
            return Ok(BrookStatement::new(StatementBody::FetchWith {
                fetch: Box::new(fetch),
                timeout,
            }));
        }
        expect_end(&mut p)?;
        return Ok(BrookStatement::sql(fetch));
    }
    let mut stmts = if is_catalog_query(text) {
        parse_catalog_query(&before_compat_rules(&describe_brook_kinds(text)))?
            .into_iter()
            .map(|s| {
                let s = crate::distinct_from::DistinctFromPrecedence.rewrite(s);
                let s = crate::like_escape::LikeEscapeAsBackslash.rewrite(s);
                // A user query can land here too (`pg_typeof(...)` names pg_type).
                let s = crate::whole_row::WholeRowReferences.rewrite(s);
                let s = crate::json_aggregates::JsonAggregates.rewrite(s);
                let s = crate::json_ops::JsonOperators.rewrite(s);
                let s = crate::array_operators::ArrayOperators.rewrite(s);
                let s = crate::pg_functions::StatActivityView.rewrite(s);
                let s = crate::reloptions::ReloptionsHaveNoRows.rewrite(s);
                let s = crate::pg_functions::GenerateSubscripts.rewrite(s);
                let s = crate::named_arguments::NamedArguments.rewrite(s);
                let s = crate::array_subquery::ArraySubquery.rewrite(s);
                let s = crate::oid_arrays::OidArrays.rewrite(s);
                let s = crate::domain_base::DomainBase.rewrite(s);
                let s = crate::pg_functions::SerialSequenceIsNull.rewrite(s);
                let s = crate::catalog_lookups::CatalogLookups.rewrite(s);
                let s = crate::pg_functions::ToRegtypeAsCast.rewrite(s);
                REGCAST.rewrite(crate::regtype_names::RegtypeNames.rewrite(s))
            })
            .collect()
    } else {
        let mut parsed = Parser::new(dialect.as_ref())
            .try_with_sql(text)?
            .parse_statements()
            .map_err(crate::match_recognize::refuse_unparsed_input)?;
        for rule in SAFE_RULES.iter() {
            parsed = parsed.into_iter().map(|s| rule.rewrite(s)).collect();
        }
        for s in &mut parsed {
            crate::named_windows::resolve(s)?;
        }
        parsed
    };
    match stmts.len() {
        1 => Ok(BrookStatement::sql(stmts.remove(0))),
        0 => Err(brook_err!(Syntax, "syntax error: empty statement")),
        _ => Err(brook_err!(
            Internal,
            "statement splitting left several statements together"
        )),
    }
}

/// `ALTER {VIEW | MATERIALIZED VIEW | INDEX | SEQUENCE} [IF EXISTS] name RENAME TO new`
/// (sqlparser reads `ALTER VIEW` only with AS, `ALTER INDEX` without IF EXISTS and no
/// `ALTER MATERIALIZED VIEW` or `ALTER SEQUENCE`); None for other statements.
fn parse_alter_rename(text: &str) -> Result<Option<BrookStatement>> {
    if !crate::lexical::mentions(text, "rename") {
        return Ok(None);
    }
    let mut p = Parser::new(&PostgreSqlDialect {}).try_with_sql(text)?;
    if !p.parse_keyword(Keyword::ALTER) {
        return Ok(None);
    }
    let kind = if p.parse_keyword(Keyword::VIEW) {
        RenameKind::View
    } else if p.parse_keywords(&[Keyword::MATERIALIZED, Keyword::VIEW]) {
        RenameKind::MaterializedView
    } else if p.parse_keyword(Keyword::INDEX) {
        RenameKind::Index
    } else if p.parse_keyword(Keyword::SEQUENCE) {
        RenameKind::Sequence
    } else {
        return Ok(None);
    };
    let if_exists = p.parse_keywords(&[Keyword::IF, Keyword::EXISTS]);
    let name = p.parse_object_name(false)?;
    if !p.parse_keywords(&[Keyword::RENAME, Keyword::TO]) {
        return Ok(None);
    }
    let to = p.parse_identifier()?;
    expect_end(&mut p)?;
    Ok(Some(BrookStatement::new(StatementBody::Rename {
        kind,
        name,
        to,
        if_exists,
    })))
}

/// `ALTER <kind> [IF EXISTS] [ONLY] name OWNER TO role`, for any kind of object (sqlparser
/// reads it for some kinds only).
fn parse_alter_owner(text: &str) -> Result<Option<BrookStatement>> {
    if !(text
        .trim_start()
        .get(..5)
        .is_some_and(|w| w.eq_ignore_ascii_case("alter"))
        && crate::lexical::mentions(text, "owner"))
    {
        return Ok(None);
    }
    let tokens = Tokenizer::new(&PostgreSqlDialect {}, text)
        .tokenize()
        .map_err(|e| brook_err!(Syntax, "syntax error: {}", e.message))?;
    let words: Vec<&Token> = tokens
        .iter()
        .filter(|t| !matches!(t, Token::Whitespace(_) | Token::EOF))
        .collect();
    let keyword = |t: &Token, w: &str| matches!(t, Token::Word(x) if x.quote_style.is_none() && x.value.eq_ignore_ascii_case(w));
    let n = words.len();
    if n < 6
        || !keyword(words[0], "ALTER")
        || !keyword(words[n - 3], "OWNER")
        || !keyword(words[n - 2], "TO")
    {
        return Ok(None);
    }
    let Token::Word(role) = words[n - 1] else {
        return Ok(None);
    };
    let kind_words = if keyword(words[1], "MATERIALIZED") || keyword(words[1], "FOREIGN") {
        2
    } else {
        1
    };
    let kind = words[1..=kind_words]
        .iter()
        .map(|t| t.to_string().to_ascii_uppercase())
        .collect::<Vec<_>>()
        .join(" ");
    let mut rest = &words[1 + kind_words..n - 3];
    let if_exists = rest.len() >= 2 && keyword(rest[0], "IF") && keyword(rest[1], "EXISTS");
    if if_exists {
        rest = &rest[2..];
    }
    if rest.first().is_some_and(|t| keyword(t, "ONLY")) {
        rest = &rest[1..];
    }
    let name_text: String = rest.iter().map(|t| t.to_string()).collect();
    let name = Parser::new(&PostgreSqlDialect {})
        .try_with_sql(&name_text)?
        .parse_object_name(false)?;
    Ok(Some(BrookStatement::new(StatementBody::AlterOwner {
        kind,
        name,
        role: if role.quote_style.is_some() {
            role.value.clone()
        } else {
            role.value.to_ascii_lowercase()
        },
        if_exists,
    })))
}

/// The statement text without its `EMIT CHANGES` / `EMIT ON WINDOW CLOSE` clause, and
/// Consume the next token when it is the (non-reserved) word `word`.
fn parse_word(p: &mut Parser<'_>, word: &str) -> bool {
    match &p.peek_token_ref().token {
        Token::Word(w) if w.quote_style.is_none() && w.value.eq_ignore_ascii_case(word) => {
            p.next_token();
            true
        }
        _ => false,
    }
}

fn expect_end(p: &mut Parser<'_>) -> Result<()> {
    let t = p.next_token();
    match t.token {
        Token::EOF => Ok(()),
        other => Err(brook_err!(Syntax, "syntax error at or near \"{other}\"")),
    }
}

fn parse_create_stream(p: &mut Parser<'_>) -> Result<CreateStream> {
    let if_not_exists = p.parse_keywords(&[Keyword::IF, Keyword::NOT, Keyword::EXISTS]);
    let name = p.parse_object_name(false)?;
    p.expect_token(&Token::LParen)?;
    let mut columns = Vec::new();
    let mut constraints = Vec::new();
    let mut watermark = None;
    loop {
        if parse_word(p, "WATERMARK") {
            p.expect_keyword(Keyword::FOR)?;
            let column = brook_common::ident::ident_name(&p.parse_identifier()?);
            p.expect_keyword(Keyword::AS)?;
            let expr = p.parse_expr()?;
            if watermark.is_some() {
                return Err(brook_err!(
                    InvalidDefinition,
                    "multiple WATERMARK clauses are not allowed"
                ));
            }
            watermark = Some(Watermark {
                column,
                expr: expr.to_string(),
            });
        } else if let Some(c) = p.parse_optional_table_constraint()? {
            constraints.push(c);
        } else {
            columns.push(p.parse_column_def()?);
        }
        if p.consume_token(&Token::Comma) {
            continue;
        }
        p.expect_token(&Token::RParen)?;
        break;
    }
    let options = if p.peek_keyword(Keyword::WITH) {
        p.parse_options(Keyword::WITH)?
    } else {
        Vec::new()
    };
    expect_end(p)?;
    Ok(CreateStream {
        name,
        if_not_exists,
        columns,
        constraints,
        watermark,
        options,
    })
}

fn parse_create_synopsis(p: &mut Parser<'_>) -> Result<CreateSynopsis> {
    let if_not_exists = p.parse_keywords(&[Keyword::IF, Keyword::NOT, Keyword::EXISTS]);
    let name = p.parse_object_name(false)?;
    p.expect_keyword(Keyword::ON)?;
    let source = p.parse_object_name(false)?;
    p.expect_keyword(Keyword::USING)?;
    // A kind is folded to lower case unless quoted (a user aggregate's name may not be).
    let kind = p.parse_identifier()?;
    let kind = match kind.quote_style {
        Some(_) => kind.value,
        None => kind.value.to_ascii_lowercase(),
    };
    p.expect_token(&Token::LParen)?;
    let args = p.parse_comma_separated(Parser::parse_expr)?;
    p.expect_token(&Token::RParen)?;
    let partition_by = if p.parse_keywords(&[Keyword::PARTITION, Keyword::BY]) {
        p.parse_comma_separated(Parser::parse_expr)?
    } else {
        Vec::new()
    };
    let window = if p.parse_keyword(Keyword::WINDOW) {
        let kind = p.parse_identifier()?.value.to_ascii_uppercase();
        if !matches!(
            kind.as_str(),
            "TUMBLE" | "HOP" | "SESSION" | "TUMBLE_ROWS" | "HOP_ROWS" | "LAST_ROWS"
        ) {
            return Err(brook_err!(Unsupported, "WINDOW {kind} for a synopsis (use TUMBLE, HOP, SESSION, TUMBLE_ROWS, HOP_ROWS or LAST_ROWS)"));
        }
        p.expect_token(&Token::LParen)?;
        let args = p.parse_comma_separated(Parser::parse_expr)?;
        p.expect_token(&Token::RParen)?;
        Some((kind, args))
    } else {
        None
    };
    let options = if p.peek_keyword(Keyword::WITH) {
        p.parse_options(Keyword::WITH)?
    } else {
        Vec::new()
    };
    expect_end(p)?;
    Ok(CreateSynopsis {
        name,
        if_not_exists,
        source,
        kind,
        args,
        partition_by,
        window,
        options,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn catalog_queries_name_a_catalog_as_a_whole_word() {
        assert!(is_catalog_query("SELECT typname FROM pg_type"));
        assert!(is_catalog_query("select * from pg_catalog.pg_class c"));
        assert!(!is_catalog_query("SELECT k, pg_typeof(k) FROM t"));
    }

    #[test]
    fn alter_rename_of_views_indexes_and_sequences() {
        let s = parse_one("ALTER MATERIALIZED VIEW IF EXISTS s.mv RENAME TO \"New\"").unwrap();
        let StatementBody::Rename {
            kind,
            name,
            to,
            if_exists,
        } = s.body
        else {
            panic!("not a rename: {s:?}");
        };
        assert_eq!(kind, RenameKind::MaterializedView);
        assert_eq!(name.to_string(), "s.mv");
        assert_eq!(to.value, "New");
        assert!(if_exists);
        for (sql, want) in [
            ("ALTER VIEW v RENAME TO w", RenameKind::View),
            ("ALTER INDEX i RENAME TO j", RenameKind::Index),
            ("ALTER SEQUENCE q RENAME TO r", RenameKind::Sequence),
        ] {
            let s = parse_one(sql).unwrap();
            assert!(
                matches!(s.body, StatementBody::Rename { kind, .. } if kind == want),
                "{sql}"
            );
        }
        // Other ALTER VIEW forms stay sqlparser's; a trailing word is a syntax error.
        let other = parse_one("ALTER VIEW v AS SELECT 1").unwrap();
        assert!(matches!(other.body, StatementBody::Sql(_)));
        assert!(parse_one("ALTER VIEW v RENAME TO w x").is_err());
    }

    #[test]
    fn parses_create_and_drop_synopsis() {
        let s = parse_one(
            "CREATE SYNOPSIS IF NOT EXISTS px ON trades USING kll(price, 400) PARTITION BY sym WINDOW TUMBLE(ts, INTERVAL '1 minute') WITH (error = 0.01)",
        )
        .unwrap();
        let StatementBody::CreateSynopsis(c) = s.body else {
            panic!("not a CREATE SYNOPSIS");
        };
        assert!(c.if_not_exists);
        assert_eq!(c.kind, "kll");
        assert_eq!(c.args.len(), 2);
        assert_eq!(c.partition_by.len(), 1);
        assert_eq!(c.window.as_ref().map(|w| w.0.as_str()), Some("TUMBLE"));
        assert_eq!(c.options.len(), 1);
        let d = parse_one("DROP SYNOPSIS IF EXISTS px, py").unwrap();
        assert!(
            matches!(d.body, StatementBody::DropSynopsis { if_exists: true, ref names, .. } if names.len() == 2)
        );
        // Other CREATE/DROP statements still reach sqlparser.
        assert!(parse_one("CREATE TABLE x (a int)")
            .unwrap()
            .as_sql()
            .is_some());
        assert!(parse_one("DROP TABLE x").unwrap().as_sql().is_some());
    }

    #[test]
    fn splits_on_top_level_semicolons_only() {
        let parts = split_statements("select ';' ; select 2;;\n select 'a;b'").unwrap();
        assert_eq!(parts, vec!["select ';'", "select 2", "select 'a;b'"]);
    }

    #[test]
    fn splits_multibyte_text() {
        let parts = split_statements("select 'é';select 'ü'").unwrap();
        assert_eq!(parts, vec!["select 'é'", "select 'ü'"]);
    }

    /// Many statements and multi-byte text on one line and across lines: the moving cursor
    /// finds the same byte offsets a walk from each line's start did.
    #[test]
    fn splits_long_lines_with_multibyte_text() {
        let one: Vec<String> = (0..300).map(|i| format!("select 'ä{i}ö', {i}")).collect();
        let text = format!("{};\n  {}", one.join(";"), one.join(" ;"));
        let parts = split_statements(&text).unwrap();
        assert_eq!(parts.len(), 600);
        assert_eq!(parts[0], "select 'ä0ö', 0");
        assert_eq!(parts[299], "select 'ä299ö', 299");
        assert_eq!(parts[300], "select 'ä0ö', 0");
        assert_eq!(parts[599], "select 'ä299ö', 299");
    }

    #[test]
    fn create_stream_with_watermark() {
        let s = parse_one(
            "CREATE STREAM s (id int, ts timestamp, WATERMARK FOR ts AS ts - INTERVAL '5 seconds') WITH (a = 1)",
        )
        .unwrap();
        let StatementBody::CreateStream(cs) = s.body else {
            panic!("not a stream: {s:?}")
        };
        assert_eq!(cs.columns.len(), 2);
        let wm = cs.watermark.unwrap();
        assert_eq!(wm.column, "ts");
        assert_eq!(wm.expr, "ts - INTERVAL '5 seconds'");
        assert_eq!(cs.options.len(), 1);
    }

    #[test]
    fn drop_stream() {
        let s = parse_one("DROP STREAM IF EXISTS a, b").unwrap();
        assert!(
            matches!(s.body, StatementBody::DropStream { if_exists: true, ref names, .. } if names.len() == 2)
        );
    }

    #[test]
    fn fetch_with_timeout() {
        let s = parse_one("FETCH 10 FROM c WITH (timeout = '250ms')").unwrap();
        let StatementBody::FetchWith { timeout, .. } = s.body else {
            panic!("not a FETCH WITH: {s:?}")
        };
        assert_eq!(timeout.as_deref(), Some("250ms"));
        let e = parse_one("FETCH 10 FROM c WITH (speed = 1)").unwrap_err();
        assert_eq!(e.sqlstate(), "42601");
    }

    #[test]
    fn emit_on_window_close_is_lifted() {
        let s = parse_one(
            "DECLARE c CURSOR FOR SELECT window_end, count(*) FROM t GROUP BY 1 EMIT ON WINDOW CLOSE",
        )
        .unwrap();
        assert_eq!(s.emit, Some(Emit::OnWindowClose));
        assert!(s.as_sql().is_some());
        let s = parse_one("COPY (SELECT * FROM s EMIT CHANGES) TO STDOUT").unwrap();
        assert_eq!(s.emit, Some(Emit::Changes));
        // Inside a string it is just text.
        let s = parse_one("SELECT 'EMIT ON WINDOW CLOSE'").unwrap();
        assert!(s.into_plain_sql().is_some());
        // Only once, and only on SQL.
        let e = parse_one("SELECT 1 EMIT CHANGES EMIT CHANGES").unwrap_err();
        assert_eq!(e.sqlstate(), "42601");
        let e = parse_one("DROP STREAM s EMIT CHANGES").unwrap_err();
        assert_eq!(e.sqlstate(), "42601");
    }

    #[test]
    fn budget_and_emit_together() {
        let s = parse_one(
            "SELECT count(DISTINCT a) FROM s EMIT CHANGES WITH ERROR 0.02 CONFIDENCE 0.9",
        )
        .unwrap();
        assert_eq!(s.emit, Some(Emit::Changes));
        assert_eq!(
            s.budget,
            Some(ErrorBudget {
                error: 0.02,
                confidence: Some(0.9)
            })
        );
        let e = parse_one("SELECT 1 WITH ERROR 0.1 WITH ERROR 0.1").unwrap_err();
        assert_eq!(e.sqlstate(), "42601");
    }

    #[test]
    fn garbage_is_a_syntax_error() {
        let e = parse_sql("SELEC 1").unwrap_err();
        assert_eq!(e.sqlstate(), "42601");
    }

    /// The position clients point at: 1-based, in characters of the whole query text.
    #[test]
    fn syntax_errors_carry_their_position() {
        let position = |sql: &str| match parse_sql(sql).unwrap_err() {
            BrookError::SyntaxAt { position, message } => {
                assert!(!message.contains("Line:"), "{message}");
                position
            }
            other => panic!("no position: {other:?}"),
        };
        assert_eq!(position("SELEC 1"), 1);
        assert_eq!(position("SELECT * FROM t WHERE a = = 1"), 27);
        assert_eq!(position("SELECT 'é';\nSELECT 1 +* 2"), 23);
    }
}
