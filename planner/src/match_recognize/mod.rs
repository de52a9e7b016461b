//! `MATCH_RECOGNIZE` (SQL:2016 row pattern recognition) in FROM.
//!
//! DataFusion does not plan the clause. Before the other rewrites, each `input
//! MATCH_RECOGNIZE (...)` becomes `brook_match_recognize('clause', (query))`: the clause as
//! its own SQL (so those rewrites leave its expressions as written) and its input — a
//! table, stream, view, `WITH` query, subquery or join — as a query planned as any other.
//! A relation planner of the SQL planner ([`relation::MatchRecognizeRelations`]) plans that
//! call: the input's plan, then the clause against the input's columns with [`plan_node`],
//! as a [`plan::MatchRecognizePlan`] node. The server runs it ad hoc over the input's rows in
//! `ORDER BY` order; a continuous query puts the same operator
//! (`brook_operators::match_recognize`) after its input's operators — so a stream and its
//! table give the same matches.
//!
//! PostgreSQL's dialect of sqlparser lacks the clause; statements that contain it
//! ([`uses_match_recognize`]) are parsed with Brook's dialect with the clause on
//! ([`crate::dialect::WITH_MATCH_RECOGNIZE`]).

use crate::dialect::WITH_MATCH_RECOGNIZE;
use brook_common::{brook_err, ident, BrookError, Result};
use brook_operators::match_recognize::pattern::Program;
use brook_operators::match_recognize::{AfterMatch, MatchRecognizeNode, RowsPerMatch};
use datafusion::arrow::compute::SortOptions;
use datafusion::arrow::datatypes::{Field, Schema, SchemaRef};
use datafusion::common::DFSchema;
use datafusion::logical_expr::Expr as LogicalExpr;
use datafusion::physical_expr::PhysicalExpr;
use datafusion::sql::sqlparser::ast::{
    self, EmptyMatchesMode, Expr, FunctionArg, FunctionArgExpr, FunctionArguments,
    MatchRecognizePattern, Statement, TableFactor, Value, VisitMut, VisitorMut,
};
use datafusion::sql::sqlparser::keywords::Keyword;
use datafusion::sql::sqlparser::parser::{Parser, ParserError};
use datafusion::sql::sqlparser::tokenizer::{Token, Tokenizer};
use std::ops::ControlFlow;
use std::sync::Arc;

mod aggregate_call;
mod define;
mod extensions;
mod measures;
mod pattern;
pub mod plan;
pub mod relation;

pub use extensions::rewrite_extensions;
pub use extensions::DERIVED_INPUT_FUNCTION;
use extensions::{PARTIAL_NAME, SUBSET_FUNCTION, WITHIN_NAME};
use pattern::convert_pattern;

use define::plan_conditions;
use measures::plan_measure;

/// Name of the table function the clause becomes (planned by [`relation`]).
pub const MATCH_RECOGNIZE_FUNCTION: &str = "brook_match_recognize";

/// The name the clause's text gives its input (the input travels as a query beside it).
const INPUT_PLACEHOLDER: &str = "brook_match_recognize_input";

/// How the clause's expressions are planned: as the SQL planner plans the query around the
/// clause (its functions, operators and types), over a schema of the clause's making.
pub trait ExprPlanning {
    /// A logical expression over `schema`.
    fn logical(&mut self, e: Expr, schema: &DFSchema) -> Result<LogicalExpr>;
    /// The physical expression of `e` (types coerced) over `schema`.
    fn physical(&self, e: LogicalExpr, schema: &DFSchema) -> Result<Arc<dyn PhysicalExpr>>;
    /// The aggregate function `name` (lower case), if there is one.
    fn aggregate(&self, name: &str) -> Option<Arc<datafusion::logical_expr::AggregateUDF>>;
}

/// Most pattern variables (a row's eligibility is one bit per variable).
pub(super) const MAX_VARIABLES: usize = 64;

/// True when `sql` holds the MATCH_RECOGNIZE keyword (outside strings and comments).
pub fn uses_match_recognize(sql: &str) -> bool {
    // Most statements do not mention it: only those that do are tokenized again.
    const WORD: &[u8] = b"match_recognize";
    if !sql
        .as_bytes()
        .windows(WORD.len())
        .any(|w| w.eq_ignore_ascii_case(WORD))
    {
        return false;
    }
    Tokenizer::new(&WITH_MATCH_RECOGNIZE, sql)
        .tokenize()
        .map(|tokens| {
            tokens
                .iter()
                .any(|t| matches!(t, Token::Word(w) if w.keyword == Keyword::MATCH_RECOGNIZE))
        })
        .unwrap_or(false)
}

/// sqlparser reads MATCH_RECOGNIZE only after a table name; after a subquery, a join or a
/// function it stops there. That is valid SQL Brook does not run yet: 0A000, not 42601.
pub fn refuse_unparsed_input(e: ParserError) -> BrookError {
    if e.to_string().contains("found: MATCH_RECOGNIZE") {
        return brook_err!(
            Unsupported,
            "MATCH_RECOGNIZE over this input (a LATERAL subquery, a function WITH \
             ORDINALITY, or another MATCH_RECOGNIZE without parentheses): put it in a WITH \
             query or a plain subquery"
        );
    }
    e.into()
}

/// Replace every `input MATCH_RECOGNIZE (...)` in FROM by the table function call
/// `brook_match_recognize('clause', (query))`.
pub fn rewrite_match_recognize(stmt: &mut Statement) -> Result<()> {
    match stmt.visit(&mut Rewrite) {
        ControlFlow::Break(e) => Err(e),
        ControlFlow::Continue(()) => Ok(()),
    }
}

struct Rewrite;

impl VisitorMut for Rewrite {
    type Break = BrookError;

    // The call's query is visited after this: a MATCH_RECOGNIZE inside it is rewritten too.
    fn pre_visit_table_factor(&mut self, tf: &mut TableFactor) -> ControlFlow<BrookError> {
        let TableFactor::MatchRecognize { table, alias, .. } = tf else {
            return ControlFlow::Continue(());
        };
        let input = match input_query(table) {
            Ok(q) => q,
            Err(e) => return ControlFlow::Break(e),
        };
        let alias = alias.take();
        **table = named_table(INPUT_PLACEHOLDER, None, None);
        let clause = tf.to_string();
        let args = ast::TableFunctionArgs {
            args: vec![
                FunctionArg::Unnamed(FunctionArgExpr::Expr(Expr::value(
                    Value::SingleQuotedString(clause),
                ))),
                FunctionArg::Unnamed(FunctionArgExpr::Expr(Expr::Subquery(input))),
            ],
            settings: None,
        };
        *tf = named_table(MATCH_RECOGNIZE_FUNCTION, Some(args), alias);
        ControlFlow::Continue(())
    }
}

/// The rows the clause reads, as a query: a subquery as written, any other input (a
/// table, stream, view, `WITH` query, join or table function) as `SELECT * FROM` it.
fn input_query(table: &TableFactor) -> Result<Box<ast::Query>> {
    let from = match (derived_input(table), table) {
        // Its columns renamed by the alias.
        (
            Some(q),
            TableFactor::Table {
                alias: Some(alias), ..
            },
        ) if !alias.columns.is_empty() => TableFactor::Derived {
            lateral: false,
            subquery: Box::new(q.clone()),
            alias: Some(alias.clone()),
            sample: None,
        },
        (Some(q), _) => return Ok(Box::new(q.clone())),
        (None, table) => table.clone(),
    };
    let mut q = match Parser::parse_sql(&WITH_MATCH_RECOGNIZE, "SELECT * FROM t")?.pop() {
        Some(Statement::Query(q)) => q,
        _ => return Err(brook_err!(Internal, "SELECT * did not parse as a query")),
    };
    match q.body.as_mut() {
        ast::SetExpr::Select(select) if select.from.len() == 1 => {
            select.from[0].relation = from;
            Ok(q)
        }
        _ => Err(brook_err!(Internal, "SELECT * did not parse as a SELECT")),
    }
}

/// The query of `brook_match_recognize_input((query))`, a subquery input as written before
/// parsing (see [`extensions`]).
pub fn derived_input(table: &TableFactor) -> Option<&ast::Query> {
    let TableFactor::Table {
        name,
        args: Some(args),
        ..
    } = table
    else {
        return None;
    };
    if !name
        .to_string()
        .eq_ignore_ascii_case(DERIVED_INPUT_FUNCTION)
    {
        return None;
    }
    match args.args.as_slice() {
        [FunctionArg::Unnamed(FunctionArgExpr::Expr(Expr::Subquery(q)))] => Some(q),
        _ => None,
    }
}

/// The FROM item `name`, a relation or (with `args`) a table function's call.
fn named_table(
    name: &str,
    args: Option<ast::TableFunctionArgs>,
    alias: Option<ast::TableAlias>,
) -> TableFactor {
    TableFactor::Table {
        name: ast::ObjectName::from(vec![ast::Ident::new(name)]),
        alias,
        args,
        with_hints: Vec::new(),
        version: None,
        with_ordinality: false,
        partitions: Vec::new(),
        json_path: None,
        sample: None,
        index_hints: Vec::new(),
    }
}

/// The pattern variables (a variable's index is its bit) and the `SUBSET`s of them.
pub(super) struct Names {
    variables: Vec<String>,
    subsets: Vec<(String, u64)>,
}

impl Names {
    /// The variables `name` stands for (bit v: variable v).
    fn set(&self, name: &ast::Ident) -> Result<u64> {
        let name = ident::ident_name(name);
        if let Some(v) = self.variables.iter().position(|v| *v == name) {
            return Ok(1 << v);
        }
        self.subsets
            .iter()
            .find(|(s, _)| *s == name)
            .map(|(_, m)| *m)
            .ok_or_else(|| {
                brook_err!(
                    Syntax,
                    "pattern variable \"{name}\" is not in PATTERN or SUBSET"
                )
            })
    }
}

/// The parts of a clause, as parsed back from its text.
struct Clause {
    partition_by: Vec<Expr>,
    order_by: Vec<ast::OrderByExpr>,
    measures: Vec<ast::Measure>,
    rows_per_match: Option<ast::RowsPerMatch>,
    after_match_skip: Option<ast::AfterMatchSkip>,
    pattern: MatchRecognizePattern,
    symbols: Vec<ast::SymbolDefinition>,
}

fn parse_clause(text: &str) -> Result<Clause> {
    let sql = format!("SELECT * FROM {text}");
    let mut stmts = Parser::parse_sql(&WITH_MATCH_RECOGNIZE, &sql)?;
    // The clause left the statement before its PostgreSQL rewrites: those of typed
    // values (`'{"a": 1}'::jsonb`, `'...'::uuid`, `time '...'`, `'{1,2}'::int[]`) apply
    // to its expressions too.
    // So do the precedence of `IS [NOT] DISTINCT FROM` (`p IS DISTINCT FROM true AND q` in
    // a DEFINE was read as `p IS DISTINCT FROM (true AND q)`: a wrong answer).
    for stmt in &mut stmts {
        crate::distinct_from::rebind_all(stmt);
        crate::pg_functions::uuid_casts(stmt);
        crate::time_precision::precision_casts(stmt);
        crate::pg_functions::time_casts(stmt);
        crate::pg_functions::json_casts(stmt);
        crate::pg_functions::xml_casts(stmt);
        crate::array_literal::array_literal_casts(stmt);
    }
    let Some(Statement::Query(q)) = stmts.pop() else {
        return Err(brook_err!(
            Internal,
            "MATCH_RECOGNIZE clause did not parse back"
        ));
    };
    let ast::SetExpr::Select(select) = *q.body else {
        return Err(brook_err!(
            Internal,
            "MATCH_RECOGNIZE clause did not parse back"
        ));
    };
    match select.from.into_iter().next().map(|t| t.relation) {
        Some(TableFactor::MatchRecognize {
            partition_by,
            order_by,
            measures,
            rows_per_match,
            after_match_skip,
            pattern,
            symbols,
            ..
        }) => Ok(Clause {
            partition_by,
            order_by,
            measures,
            rows_per_match,
            after_match_skip,
            pattern,
            symbols,
        }),
        _ => Err(brook_err!(
            Internal,
            "MATCH_RECOGNIZE clause did not parse back"
        )),
    }
}

/// A name Brook's rewrites of the clause give its own `DEFINE` items, used otherwise.
fn reserved(name: &str) -> BrookError {
    brook_err!(
        Syntax,
        "\"{name}\" is a name Brook's MATCH_RECOGNIZE reserves (for SHOW PARTIAL MATCHES and \
         WITHIN): name the pattern variable otherwise"
    )
}

/// Plan the clause `text` over an input of schema `input`.
pub fn plan_node(
    text: &str,
    input: SchemaRef,
    exprs: &mut dyn ExprPlanning,
) -> Result<MatchRecognizeNode> {
    let clause = parse_clause(text)?;
    let column = |e: &Expr, what: &str| -> Result<usize> {
        let name = match e {
            Expr::Identifier(i) => ident::ident_name(i),
            other => {
                return Err(brook_err!(
                    Unsupported,
                    "MATCH_RECOGNIZE {what} {other}: name a column of the input"
                ))
            }
        };
        input
            .index_of(&name)
            .map_err(|_| BrookError::UndefinedColumn(name))
    };
    let partition = clause
        .partition_by
        .iter()
        .map(|e| column(e, "PARTITION BY"))
        .collect::<Result<Vec<_>>>()?;
    if clause.order_by.is_empty() {
        return Err(brook_err!(
            Syntax,
            "MATCH_RECOGNIZE needs ORDER BY: rows are matched in that order"
        ));
    }
    let mut order = Vec::new();
    let mut order_options = Vec::new();
    for o in &clause.order_by {
        order.push(column(&o.expr, "ORDER BY")?);
        // PostgreSQL's defaults: NULLs sort as larger than any value.
        let descending = o.options.asc == Some(false);
        order_options.push(SortOptions {
            descending,
            nulls_first: o.options.nulls_first.unwrap_or(descending),
        });
    }
    let mut variables: Vec<String> = Vec::new();
    let pattern = convert_pattern(&clause.pattern, &mut variables)?;
    if let Some(v) = variables
        .iter()
        .find(|v| [PARTIAL_NAME, WITHIN_NAME].contains(&v.as_str()))
    {
        return Err(reserved(v));
    }
    pattern.validate()?;
    if pattern.can_be_empty() {
        return Err(brook_err!(
            Unsupported,
            "PATTERN {} can match an empty sequence of rows: empty matches",
            clause.pattern
        ));
    }
    let program = Program::compile(&pattern)?;
    // DEFINE holds the SUBSETs and WITHIN too (see `extensions`).
    let mut names = Names {
        variables,
        subsets: Vec::new(),
    };
    let mut within = None;
    let mut partial = false;
    let mut defines: Vec<(String, &Expr)> = Vec::new();
    for s in &clause.symbols {
        let name = ident::ident_name(&s.symbol);
        match &s.definition {
            Expr::Function(f) if f.name.to_string().eq_ignore_ascii_case(SUBSET_FUNCTION) => {
                let members = subset_members(f, &names.variables)?;
                if names.variables.contains(&name) || names.subsets.iter().any(|(n, _)| *n == name)
                {
                    return Err(brook_err!(
                        Syntax,
                        "SUBSET {name}: the name is already a pattern variable or SUBSET"
                    ));
                }
                names.subsets.push((name, members));
            }
            e if name == PARTIAL_NAME => {
                // Written by SHOW PARTIAL MATCHES (see `extensions`); a condition of the
                // user's under the name would otherwise switch it on.
                if !matches!(e, Expr::Value(v) if v.value == ast::Value::Boolean(true)) {
                    return Err(reserved(PARTIAL_NAME));
                }
                if partial {
                    return Err(brook_err!(Syntax, "SHOW PARTIAL MATCHES given twice"));
                }
                partial = true
            }
            e if name == WITHIN_NAME => {
                within = Some((within_bound(e, &clause, &input, exprs)?, e.to_string()))
            }
            e => defines.push((name, e)),
        }
    }
    if within.is_some() && order_options.iter().any(|o| o.descending || o.nulls_first) {
        return Err(brook_err!(
            Unsupported,
            "WITHIN with ORDER BY ... DESC or NULLS FIRST (a match is bounded forward in time)"
        ));
    }
    if within.is_some() && pattern.uses_end() {
        return Err(brook_err!(
            Unsupported,
            "WITHIN with $ in PATTERN (an attempt bounded in time does not reach the end of \
             its partition)"
        ));
    }
    let (conditions, prev) = plan_conditions(&defines, &names, &input, exprs)?;
    let after_match = match &clause.after_match_skip {
        None | Some(ast::AfterMatchSkip::PastLastRow) => AfterMatch::PastLastRow,
        Some(ast::AfterMatchSkip::ToNextRow) => AfterMatch::ToNextRow,
        Some(ast::AfterMatchSkip::ToFirst(v)) => AfterMatch::ToFirst {
            vars: names.set(v)?,
            name: ident::ident_name(v),
        },
        Some(ast::AfterMatchSkip::ToLast(v)) => AfterMatch::ToLast {
            vars: names.set(v)?,
            name: ident::ident_name(v),
        },
    };
    let rows_per_match = match (&clause.rows_per_match, partial) {
        (Some(ast::RowsPerMatch::AllRows(None)), true) => RowsPerMatch::AllWithPartial,
        (_, true) => {
            return Err(brook_err!(
                Syntax,
                "SHOW PARTIAL MATCHES is an option of ALL ROWS PER MATCH, in place of SHOW \
                 EMPTY MATCHES, OMIT EMPTY MATCHES or WITH UNMATCHED ROWS"
            ))
        }
        (None | Some(ast::RowsPerMatch::OneRow), false) => RowsPerMatch::One,
        (Some(ast::RowsPerMatch::AllRows(mode)), false) => RowsPerMatch::All {
            unmatched: matches!(mode, Some(EmptyMatchesMode::WithUnmatched)),
        },
    };
    if partial && pattern.uses_end() {
        return Err(brook_err!(
            Unsupported,
            "SHOW PARTIAL MATCHES with $ in PATTERN (a partial match is one the partition's \
             later rows may still complete: it has no end)"
        ));
    }
    if rows_per_match == (RowsPerMatch::All { unmatched: true }) && pattern.excludes() {
        return Err(brook_err!(
            Syntax,
            "pattern exclusion {{- -}} with ALL ROWS PER MATCH WITH UNMATCHED ROWS"
        ));
    }
    let mut measures = Vec::new();
    let mut measure_fields = Vec::new();
    for m in &clause.measures {
        let (mut measure, ty) = plan_measure(&m.expr, &names, &input, exprs)?;
        measure.text = m.to_string();
        measure_fields.push(Field::new(ident::ident_name(&m.alias), ty, true));
        measures.push(measure);
    }
    if rows_per_match == RowsPerMatch::AllWithPartial
        && measures
            .iter()
            .flat_map(|m| m.reads.iter())
            .any(|n| n.shift() > 0)
    {
        return Err(brook_err!(
            Unsupported,
            "NEXT in MEASURES with SHOW PARTIAL MATCHES (a partial match's rows are shown \
             before the rows NEXT reads arrive)"
        ));
    }
    let variables = names.variables;
    let mut node = MatchRecognizeNode {
        input_schema: input.clone(),
        partition,
        order,
        order_options,
        variables,
        conditions,
        prev,
        pattern,
        program,
        rows_per_match,
        after_match,
        measures,
        within,
        schema: Arc::new(Schema::empty()),
    };
    let (lead, rest) = node.carried_columns();
    let carried = |c: &usize| input.field(*c).as_ref().clone().with_nullable(true);
    let mut fields: Vec<Field> = lead.iter().map(carried).collect();
    fields.extend(measure_fields);
    fields.extend(rest.iter().map(carried));
    for (i, f) in fields.iter().enumerate() {
        if fields[..i].iter().any(|g| g.name() == f.name()) {
            return Err(BrookError::duplicate_column(format!(
                "MATCH_RECOGNIZE output column \"{}\" specified more than once",
                f.name()
            )));
        }
    }
    node.schema = Arc::new(Schema::new(fields));
    Ok(node)
}

/// The variables of `brook_subset(a, b, ...)` (a `SUBSET` item), as a bit set.
fn subset_members(f: &ast::Function, variables: &[String]) -> Result<u64> {
    let FunctionArguments::List(l) = &f.args else {
        return Err(brook_err!(Syntax, "SUBSET takes name = (variable, ...)"));
    };
    let mut set = 0u64;
    for a in &l.args {
        let FunctionArg::Unnamed(FunctionArgExpr::Expr(Expr::Identifier(i))) = a else {
            return Err(brook_err!(Syntax, "SUBSET takes name = (variable, ...)"));
        };
        let name = ident::ident_name(i);
        let v = variables.iter().position(|x| *x == name).ok_or_else(|| {
            brook_err!(
                Syntax,
                "SUBSET member \"{name}\" is not a variable of PATTERN"
            )
        })?;
        set |= 1 << v;
    }
    if set == 0 {
        return Err(brook_err!(Syntax, "SUBSET takes at least one variable"));
    }
    Ok(set)
}

/// Refuse, by name, what an expression of `DEFINE` or `MEASURES` may not hold once its
/// navigations are read: an aggregate other than those of a match (count, sum, avg, min,
/// max), a window function or a subquery.
fn refuse_unplannable(e: &datafusion::logical_expr::Expr, clause: &str) -> Result<()> {
    use datafusion::common::tree_node::{TreeNode, TreeNodeRecursion};
    use datafusion::logical_expr::Expr as L;
    let mut found: Option<String> = None;
    e.apply(|x| {
        found = match x {
            L::AggregateFunction(a) => Some(format!(
                "aggregate {}() in MATCH_RECOGNIZE {clause} (count, sum, avg, min and max \
                 of a match are supported)",
                a.func.name()
            )),
            L::WindowFunction(_) => Some(format!("window functions in MATCH_RECOGNIZE {clause}")),
            L::ScalarSubquery(_) | L::Exists(_) | L::InSubquery(_) => {
                Some(format!("subqueries in MATCH_RECOGNIZE {clause}"))
            }
            _ => None,
        };
        Ok(if found.is_some() {
            TreeNodeRecursion::Stop
        } else {
            TreeNodeRecursion::Continue
        })
    })?;
    match found {
        Some(what) => Err(brook_err!(Unsupported, "{what}")),
        None => Ok(()),
    }
}

/// `WITHIN interval` as units of the order column (a single timestamp or date column).
fn within_bound(
    e: &Expr,
    clause: &Clause,
    input: &SchemaRef,
    exprs: &mut dyn ExprPlanning,
) -> Result<i64> {
    use datafusion::arrow::datatypes::{DataType, TimeUnit};
    use datafusion::common::ScalarValue;
    let ty = match clause.order_by.as_slice() {
        [o] => match &o.expr {
            Expr::Identifier(i) => input
                .field_with_name(&ident::ident_name(i))
                .map(|f| f.data_type().clone())
                .ok(),
            _ => None,
        },
        _ => None,
    };
    let per_unit: i64 = match ty {
        Some(DataType::Timestamp(TimeUnit::Second, _)) => 1_000_000_000,
        Some(DataType::Timestamp(TimeUnit::Millisecond, _)) => 1_000_000,
        Some(DataType::Timestamp(TimeUnit::Microsecond, _)) => 1_000,
        Some(DataType::Timestamp(TimeUnit::Nanosecond, _)) => 1,
        Some(DataType::Date32) => 86_400_000_000_000,
        _ => {
            return Err(brook_err!(
                DatatypeMismatch,
                "WITHIN bounds a match in time: ORDER BY one timestamp or date column"
            ))
        }
    };
    let value = exprs.logical(e.clone(), &DFSchema::empty())?;
    let nanos = match value {
        datafusion::logical_expr::Expr::Literal(v, _) => match v {
            ScalarValue::IntervalMonthDayNano(Some(i)) if i.months == 0 => {
                Some(i128::from(i.days) * 86_400_000_000_000 + i128::from(i.nanoseconds))
            }
            ScalarValue::IntervalDayTime(Some(i)) => Some(
                i128::from(i.days) * 86_400_000_000_000 + i128::from(i.milliseconds) * 1_000_000,
            ),
            ScalarValue::IntervalMonthDayNano(Some(_)) | ScalarValue::IntervalYearMonth(_) => {
                return Err(brook_err!(
                    Unsupported,
                    "WITHIN an interval of months (months have no fixed length; use days)"
                ))
            }
            _ => None,
        },
        _ => None,
    }
    .filter(|n| *n > 0)
    .ok_or_else(|| brook_err!(Syntax, "WITHIN takes a positive INTERVAL constant"))?;
    Ok(i64::try_from(nanos / i128::from(per_unit)).unwrap_or(i64::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rewritten(sql: &str) -> Result<String> {
        let mut stmts = Parser::parse_sql(&WITH_MATCH_RECOGNIZE, sql)?;
        rewrite_match_recognize(&mut stmts[0])?;
        Ok(stmts[0].to_string())
    }

    #[test]
    fn the_clause_becomes_a_table_function_over_its_input() {
        let s = rewritten(
            "SELECT * FROM ticks MATCH_RECOGNIZE (PARTITION BY sym ORDER BY t \
             MEASURES FIRST(a.t) AS s ONE ROW PER MATCH PATTERN (a b+) \
             DEFINE b AS b.price < PREV(price)) AS m",
        )
        .unwrap();
        assert!(
            s.starts_with(
                "SELECT * FROM brook_match_recognize('brook_match_recognize_input \
                 MATCH_RECOGNIZE(PARTITION BY sym"
            ),
            "{s}"
        );
        assert!(s.ends_with(", (SELECT * FROM ticks)) AS m"), "{s}");
        assert!(uses_match_recognize(
            "select * from t match_recognize (pattern (a))"
        ));
        assert!(!uses_match_recognize("select 'match_recognize' from t"));
    }

    #[test]
    fn a_subquery_or_join_input_is_read_as_a_query() {
        let clause = "MATCH_RECOGNIZE (ORDER BY x PATTERN (a) DEFINE a AS true)";
        for (from, input) in [
            (
                "(SELECT * FROM t WHERE x > 1) AS s",
                "(SELECT * FROM t WHERE x > 1)",
            ),
            ("(SELECT * FROM t) s", "(SELECT * FROM t)"),
            (
                "(VALUES (1)) v",
                "(SELECT * FROM (VALUES (1)) AS brook_values)",
            ),
            (
                "(SELECT 1, 2) AS s (x, y)",
                "(SELECT * FROM (SELECT 1, 2) AS s (x, y))",
            ),
            ("(t JOIN u USING (x))", "(SELECT * FROM t JOIN u USING(x))"),
            (
                "generate_series(1, 3) g(x)",
                "(SELECT * FROM generate_series(1, 3) g (x))",
            ),
        ] {
            let sql = format!("SELECT * FROM {from} {clause}");
            let mut stmt = crate::parse_sql(&sql).unwrap();
            let crate::StatementBody::Sql(stmt) = &mut stmt[0].body else {
                panic!("{sql}")
            };
            rewrite_match_recognize(stmt).unwrap();
            let s = stmt.to_string();
            assert!(
                s.ends_with(&format!(", {input})")) || s.contains(&format!(", {input}) AS")),
                "{sql}: {s}"
            );
        }
    }
}
