//! CREATE [OR REPLACE] FUNCTION ... LANGUAGE SQL | javascript and DROP FUNCTION.
//!
//! A SQL function's body is one expression over its arguments (`SELECT expr`, `RETURN
//! expr`), inlined where it is called (`crate::udf::sql_function`); a JavaScript function's
//! body runs in a sandbox (`crate::udf::javascript`). One signature per name. The catalog
//! keeps it, the database plans it (`Engine::refresh_functions`) and every session
//! registers it before its next statement.

use crate::catalog::function::{FunctionArgMeta, FunctionMeta, Language};
use crate::ident::ident_name;
use crate::pg::types::PgType;
use crate::session::{Outcome, Session};
use brook_common::{brook_err, BrookError, Result};
use datafusion::sql::sqlparser::ast::{
    self, ArgMode, CreateFunction, CreateFunctionBody, Expr, FunctionBehavior,
    FunctionCalledOnNull, FunctionReturnType, SetExpr, Statement, Value,
};
use datafusion::sql::sqlparser::dialect::PostgreSqlDialect;
use datafusion::sql::sqlparser::parser::Parser;
use datafusion::sql::sqlparser::tokenizer::{Token, Tokenizer};

impl Session {
    pub(crate) fn create_function(&mut self, cf: CreateFunction) -> Result<Outcome> {
        let (schema, name) = self.resolve(&cf.name)?;
        crate::session::temp::refuse_temp_routine(&schema)?;
        let meta = function_meta(&cf)?;
        if let Some((_, a)) = self.aggregate(&name) {
            return Err(BrookError::DuplicateObject {
                what: "function",
                name: a.signature(&name),
                code: "42723",
            });
        }
        let existing = self.function(&name);
        if existing.is_none() && self.built_in(&name) {
            return Err(BrookError::Semantic {
                message: format!(
                    "function \"{name}\" already exists: it is built in, and Brook does not \
                     overload built-in functions"
                ),
                code: "42723",
            });
        }
        if let Some((old_schema, old)) = &existing {
            if !cf.or_replace {
                return Err(BrookError::DuplicateObject {
                    what: "function",
                    name: old.signature(&name),
                    code: "42723",
                });
            }
            if old
                .args
                .iter()
                .map(|a| &a.ty)
                .ne(meta.args.iter().map(|a| &a.ty))
            {
                return Err(brook_err!(
                    Unsupported,
                    "overloading function {name}: {} exists, and a function name has one \
                     signature in Brook (DROP FUNCTION it first)",
                    old.signature(&name)
                ));
            }
            if *old_schema != schema {
                return Err(brook_err!(
                    Unsupported,
                    "function {name} in schema \"{schema}\": it exists in schema \
                     \"{old_schema}\", and function names are one namespace per database"
                ));
            }
            if old.returns != meta.returns {
                return Err(return_type_changed(&old.returns.name()));
            }
            self.refuse_replacing(&name, &old.signature(&name))?;
        }
        // Plan it now, so a body that does not plan is refused here, not at its first call.
        crate::udf::plan_user_function(&name, &meta, &self.ctx.state())?;
        if meta.language == Language::Javascript {
            crate::udf::javascript::check(&name, &meta)?;
        }
        let db = self.db.name.clone();
        self.engine.catalog.update(|doc| {
            let s = doc.schema_mut(&db, &schema)?;
            let comment = s.functions.get(&name).and_then(|f| f.comment.clone());
            s.functions
                .insert(name.clone(), FunctionMeta { comment, ..meta });
            Ok(())
        })?;
        self.engine.refresh_functions(&self.db)?;
        self.sync_functions();
        Ok(Outcome::Command("CREATE FUNCTION".into()))
    }

    pub(crate) fn drop_function(&mut self, df: ast::DropFunction) -> Result<Outcome> {
        if matches!(df.drop_behavior, Some(ast::DropBehavior::Cascade)) {
            return Err(brook_err!(
                Unsupported,
                "DROP FUNCTION ... CASCADE (drop what calls the function first)"
            ));
        }
        let mut dropped = Vec::new();
        for desc in &df.func_desc {
            let (_, name) = self.resolve(&desc.name)?;
            let Some((schema, meta)) = self.function(&name) else {
                if let Some((_, a)) = self.aggregate(&name) {
                    return Err(BrookError::WrongObjectType(format!(
                        "{} is an aggregate function (use DROP AGGREGATE to drop aggregate \
                         functions)",
                        a.signature(&name)
                    )));
                }
                if df.if_exists {
                    self.notices
                        .push(format!("function {name}() does not exist, skipping").into());
                    continue;
                }
                return Err(brook_err!(
                    UndefinedFunction,
                    "function {name} does not exist"
                ));
            };
            if let Some(args) = &desc.args {
                let types = args
                    .iter()
                    .map(|a| PgType::from_sql(&a.data_type))
                    .collect::<Result<Vec<_>>>()?;
                if meta.args.iter().map(|a| &a.ty).ne(types.iter()) {
                    let names: Vec<String> = types.iter().map(PgType::name).collect();
                    return Err(brook_err!(
                        UndefinedFunction,
                        "function {name}({}) does not exist (it is {})",
                        names.join(", "),
                        meta.signature(&name)
                    ));
                }
            }
            self.refuse_callers(&name, &meta.signature(&name))?;
            dropped.push((schema, name));
        }
        self.remove_routines(&dropped, |s, name| {
            s.functions.remove(name);
        })?;
        Ok(Outcome::Command("DROP FUNCTION".into()))
    }

    /// Take the functions or aggregates `dropped` (schema, name) out of the catalog with
    /// `remove`, then plan the database's functions again and register them here.
    pub(super) fn remove_routines(
        &mut self,
        dropped: &[(String, String)],
        remove: fn(&mut crate::catalog::SchemaMeta, &str),
    ) -> Result<()> {
        if dropped.is_empty() {
            return Ok(());
        }
        let db = self.db.name.clone();
        self.engine.catalog.update(|doc| {
            for (schema, name) in dropped {
                remove(doc.schema_mut(&db, schema)?, name);
            }
            Ok(())
        })?;
        self.engine.refresh_functions(&self.db)?;
        self.sync_functions();
        Ok(())
    }

    /// The user function `name` of this database and its schema.
    pub(super) fn function(&self, name: &str) -> Option<(String, FunctionMeta)> {
        let doc = self.engine.catalog.read();
        let db = doc.database(&self.db.name).ok()?;
        db.schemas
            .iter()
            .find_map(|(s, m)| m.functions.get(name).map(|f| (s.clone(), f.clone())))
    }

    /// Whether `name` is a built-in function: scalar, aggregate, window or table function
    /// (a user function of that name would hide it in every query, or be taken for it).
    pub(super) fn built_in(&self, name: &str) -> bool {
        use datafusion::execution::FunctionRegistry;
        self.ctx.udf(name).is_ok()
            || self.ctx.udaf(name).is_ok()
            || self.ctx.udwf(name).is_ok()
            || self.ctx.table_function(name).is_ok()
            || brook_planner::windows::is_window_function(&name.to_ascii_lowercase())
    }

    /// 0A000 when a view (or a materialized view, a synopsis) calls the function or
    /// aggregate `name` that CREATE OR REPLACE is about to change, directly or through other
    /// functions and aggregates: its plan, and a materialized view's state, were built with
    /// the old definition, and would go on answering with it until a restart planned them
    /// again.
    pub(super) fn refuse_replacing(&self, name: &str, signature: &str) -> Result<()> {
        let doc = self.engine.catalog.read();
        let schemas = &doc.database(&self.db.name)?.schemas;
        // `name` and every function and aggregate that calls it, to a fixed point.
        let mut reached = vec![name.to_string()];
        loop {
            let before = reached.len();
            for s in schemas.values() {
                for (f, meta) in &s.functions {
                    if !reached.contains(f) && reached.iter().any(|r| body_calls(meta, r)) {
                        reached.push(f.clone());
                    }
                }
                for (a, meta) in &s.aggregates {
                    if !reached.contains(a)
                        && meta.functions().any(|f| reached.iter().any(|r| r == f))
                    {
                        reached.push(a.clone());
                    }
                }
            }
            if reached.len() == before {
                break;
            }
        }
        for (rel, r) in schemas.values().flat_map(|s| s.relations.iter()) {
            let Some(query) = r.query.as_deref() else {
                continue;
            };
            if let Some(via) = reached.iter().find(|n| calls(query, n)) {
                let through = if via == name {
                    String::new()
                } else {
                    format!(" through {via}")
                };
                return Err(brook_err!(
                    Unsupported,
                    "CREATE OR REPLACE of {signature} while {} {rel} calls it{through} (it was \
                     planned, and its state built, with the old definition): drop {rel} \
                     first, then create it again",
                    r.kind.noun()
                ));
            }
        }
        Ok(())
    }

    /// 2BP01 when another function, an aggregate or a view calls the function or aggregate
    /// `name` (they would stop planning); `signature` names it.
    pub(super) fn refuse_callers(&self, name: &str, signature: &str) -> Result<()> {
        let doc = self.engine.catalog.read();
        let db = doc.database(&self.db.name)?;
        for schema in db.schemas.values() {
            for (other, f) in &schema.functions {
                if other != name && body_calls(f, name) {
                    return Err(function_dependents(
                        signature,
                        &format!("function {}", f.signature(other)),
                    ));
                }
            }
            for (other, a) in &schema.aggregates {
                if a.functions().any(|f| f == name) {
                    return Err(function_dependents(
                        signature,
                        &format!("aggregate {}", a.signature(other)),
                    ));
                }
            }
            for (rel, r) in &schema.relations {
                if r.query.as_deref().is_some_and(|q| calls(q, name)) {
                    return Err(function_dependents(
                        signature,
                        &format!("{} {rel}", r.kind.noun()),
                    ));
                }
            }
        }
        Ok(())
    }
}

/// 42P13: CREATE OR REPLACE of a function (or aggregate) with another result type.
pub(super) fn return_type_changed(old: &str) -> BrookError {
    BrookError::invalid_function(format!(
        "cannot change return type of existing function (it returns {old}; DROP it first)"
    ))
}

/// 2BP01: `what` calls the function `signature` about to be dropped.
fn function_dependents(signature: &str, what: &str) -> BrookError {
    BrookError::DependentObjects(format!(
        "cannot drop function {signature} because other objects depend on it: {what} calls it"
    ))
}

/// True when the body of `f` calls a function `name` (a JavaScript body calls none).
fn body_calls(f: &FunctionMeta, name: &str) -> bool {
    f.language == Language::Sql && calls(&f.body, name)
}

/// True when SQL `text` calls a function `name` (the word, then `(`).
fn calls(text: &str, name: &str) -> bool {
    let Ok(tokens) = Tokenizer::new(&PostgreSqlDialect {}, text).tokenize() else {
        return false;
    };
    let solid: Vec<&Token> = tokens
        .iter()
        .filter(|t| !matches!(t, Token::Whitespace(_)))
        .collect();
    solid.windows(2).any(|w| {
        matches!(w[0], Token::Word(x) if (x.quote_style.is_none() && x.value.eq_ignore_ascii_case(name)) || x.value == name)
            && *w[1] == Token::LParen
    })
}

/// The catalog entry of `CREATE FUNCTION`, or the error naming what Brook does not take.
fn function_meta(cf: &CreateFunction) -> Result<FunctionMeta> {
    if cf.temporary || cf.or_alter {
        return Err(brook_err!(
            Unsupported,
            "CREATE {}FUNCTION",
            if cf.temporary {
                "TEMPORARY "
            } else {
                "OR ALTER "
            }
        ));
    }
    let language = match cf.language.as_ref().map(|l| l.value.to_ascii_lowercase()) {
        None => None,
        Some(l) if l == "sql" => Some(Language::Sql),
        Some(l) if l == "javascript" => Some(Language::Javascript),
        Some(l) => {
            return Err(brook_err!(
                Unsupported,
                "LANGUAGE {l} functions (Brook runs LANGUAGE sql and LANGUAGE javascript)"
            ))
        }
    };
    let body = match &cf.function_body {
        Some(CreateFunctionBody::AsBeforeOptions {
            body,
            link_symbol: None,
        })
        | Some(CreateFunctionBody::AsAfterOptions(body))
            if language == Some(Language::Javascript) =>
        {
            string_constant(body)?
        }
        _ if language == Some(Language::Javascript) => {
            return Err(brook_err!(
                Syntax,
                "a JavaScript function's body is a string constant (AS $$ ... $$)"
            ))
        }
        Some(CreateFunctionBody::Return(e)) => e.to_string(),
        Some(CreateFunctionBody::AsBeforeOptions {
            body,
            link_symbol: None,
        })
        | Some(CreateFunctionBody::AsAfterOptions(body)) => {
            if language.is_none() {
                return Err(BrookError::invalid_function("no language specified"));
            }
            body_expression(body)?
        }
        Some(CreateFunctionBody::AsBeginEnd(_)) => {
            return Err(brook_err!(
                Unsupported,
                "a function body of statements (BEGIN ATOMIC ... END): Brook runs SQL \
                 functions whose body is one expression"
            ))
        }
        Some(_) => {
            return Err(brook_err!(
                Unsupported,
                "this form of function body (Brook takes AS 'SELECT expr' and RETURN expr)"
            ));
        }
        None => return Err(BrookError::invalid_function("no function body specified")),
    };
    let returns = match &cf.return_type {
        Some(FunctionReturnType::DataType(t)) => PgType::from_sql(t)?,
        Some(FunctionReturnType::SetOf(_)) => {
            return Err(brook_err!(
                Unsupported,
                "RETURNS SETOF (set-returning functions)"
            ))
        }
        None => {
            return Err(BrookError::invalid_function(
                "function result type must be specified",
            ))
        }
    };
    let mut args = Vec::new();
    for a in cf.args.iter().flatten() {
        if matches!(a.mode, Some(ArgMode::Out) | Some(ArgMode::InOut)) {
            return Err(brook_err!(Unsupported, "OUT and INOUT function arguments"));
        }
        if matches!(a.mode, Some(ArgMode::Variadic)) {
            return Err(brook_err!(Unsupported, "VARIADIC function arguments"));
        }
        if a.default_expr.is_some() {
            return Err(brook_err!(Unsupported, "function argument defaults"));
        }
        let name = a.name.as_ref().map(argument_name);
        if name.is_some() && args.iter().any(|x: &FunctionArgMeta| x.name == name) {
            return Err(BrookError::invalid_function(format!(
                "parameter name \"{}\" used more than once",
                name.unwrap_or_default()
            )));
        }
        args.push(FunctionArgMeta {
            name,
            ty: PgType::from_sql(&a.data_type)?,
        });
    }
    if !cf.set_params.is_empty() || cf.using.is_some() || cf.options.is_some() {
        return Err(brook_err!(
            Unsupported,
            "CREATE FUNCTION with SET, USING or OPTIONS"
        ));
    }
    let volatility = match cf.behavior {
        Some(FunctionBehavior::Immutable) => "immutable",
        Some(FunctionBehavior::Stable) => "stable",
        _ => "volatile",
    };
    Ok(FunctionMeta {
        args,
        returns,
        language: language.unwrap_or_default(),
        body,
        volatility: volatility.into(),
        strict: matches!(
            cf.called_on_null,
            Some(FunctionCalledOnNull::Strict) | Some(FunctionCalledOnNull::ReturnsNullOnNullInput)
        ),
        comment: None,
    })
}

/// An argument's name as PostgreSQL reads it. sqlparser hands a quoted argument name over
/// with its quotes in the text and no quote style (`"Abc"` would fold to `"abc"`).
fn argument_name(i: &ast::Ident) -> String {
    let quoted = i.quote_style.is_none()
        && i.value.len() >= 2
        && i.value.starts_with('"')
        && i.value.ends_with('"');
    if quoted {
        i.value[1..i.value.len() - 1].replace("\"\"", "\"")
    } else {
        ident_name(i)
    }
}

/// The text of an `AS '...'` or `AS $$...$$` body.
fn string_constant(body: &Expr) -> Result<String> {
    match body {
        Expr::Value(v) => match &v.value {
            Value::SingleQuotedString(s) => Ok(s.clone()),
            Value::DollarQuotedString(d) => Ok(d.value.clone()),
            _ => Err(brook_err!(Syntax, "a function body is a string constant")),
        },
        _ => Err(brook_err!(Syntax, "a function body is a string constant")),
    }
}

/// The expression of an `AS '...'` body: one `SELECT expr` without FROM.
fn body_expression(body: &Expr) -> Result<String> {
    let text = string_constant(body)?;
    let mut stmts = Parser::parse_sql(&PostgreSqlDialect {}, &text)?;
    let one_select = match stmts.as_mut_slice() {
        [Statement::Query(q)]
            if q.with.is_none() && q.order_by.is_none() && q.limit_clause.is_none() =>
        {
            match q.body.as_mut() {
                SetExpr::Select(s)
                    if s.from.is_empty()
                        && s.selection.is_none()
                        && s.having.is_none()
                        && s.projection.len() == 1 =>
                {
                    match &s.projection[0] {
                        ast::SelectItem::UnnamedExpr(e)
                        | ast::SelectItem::ExprWithAlias { expr: e, .. } => Some(e.to_string()),
                        _ => None,
                    }
                }
                _ => None,
            }
        }
        _ => None,
    };
    one_select.ok_or_else(|| {
        brook_err!(
            Unsupported,
            "SQL function body {text:?}: Brook runs bodies of one SELECT expression without \
             FROM (a body of several statements, or one that reads tables, is not supported)"
        )
    })
}
