//! Whole-row references: a FROM item's name used as a value, as PostgreSQL reads
//! `row_to_json(t)`, `json_agg(t)`, `to_jsonb(s)` or `json_build_object('row', t.*)` — the
//! row of that FROM item, its columns in order, as a composite value.
//!
//! DataFusion has no composite values of a relation: a bare `t` is a column that does not
//! exist (42703). Brook builds the row as a struct, which the JSON functions write as
//! PostgreSQL writes a record. Written here because no library does it; two steps:
//!
//! - [`WholeRowReferences`] (a statement rewrite): an argument of one of the JSON
//!   functions ([`TAKE_ROWS`]) that is a bare identifier naming a FROM item of its SELECT,
//!   or `name.*`, becomes `brook_whole_row(name.*)` (the FROM item as written: alias, else
//!   its table name with any schema); a bare identifier also gets its own text as a second
//!   argument, because PostgreSQL prefers a column of that name when there is one. Innermost
//!   SELECTs first, and a SELECT's rewrite does not reach into its subqueries.
//! - [`WholeRows`] (an analyzer rule, before type coercion): `brook_whole_row(name.*)`
//!   becomes `brook_row('a', name.a, 'b', name.b, ...)` over the columns the node's input
//!   has from that FROM item — or the column itself when the input has exactly one column of
//!   the bare identifier's name. `brook_row` is DataFusion's `named_struct` except that each
//!   field keeps its column's metadata, so a json column of the row stays JSON.
//!
//! A FROM item that is a call of a function returning one value per row under a column
//! of its own name (`jsonb_array_elements(doc) e`, whose column is `value`) is, named
//! bare, that value in PostgreSQL (`SELECT e ->> 'x' FROM jsonb_array_elements(doc) e`):
//! such a bare name anywhere in its SELECT becomes `brook_bare_value(e.value, 'e')`, typed
//! as its first argument (operators over it are planned for the value's type), which
//! [`WholeRows`] makes the column named `e` of another FROM item if there is one (a column
//! goes first, as in PostgreSQL), else `e.value`.
//!
//! `SELECT t FROM t` selects the record (a result column named `t`, printed as PostgreSQL
//! prints a record: `(1,ann)`), unless a column is called `t`.

use crate::bare_value::{bare_value, value_column, BARE_VALUE};
use brook_common::BrookError;
use datafusion::arrow::array::{ArrayRef, StructArray};
use datafusion::arrow::datatypes::{DataType, Field, FieldRef, Fields};
use datafusion::common::config::ConfigOptions;
use datafusion::common::tree_node::{Transformed, TreeNode, TreeNodeRecursion};
use datafusion::common::{
    internal_err, plan_err, Column, DFSchema, DataFusionError, Result, ScalarValue, TableReference,
};
use datafusion::logical_expr::expr::ScalarFunction;
use datafusion::logical_expr::expr_rewriter::NamePreserver;
use datafusion::logical_expr::{
    Case, ColumnarValue, Expr, JoinType, LogicalPlan, ReturnFieldArgs, ScalarFunctionArgs,
    ScalarUDF, ScalarUDFImpl, Signature, Volatility,
};
use datafusion::optimizer::AnalyzerRule;
use datafusion::sql::sqlparser::ast::{
    Expr as SqlExpr, FunctionArg, FunctionArgExpr, FunctionArgumentClause, FunctionArguments,
    Ident, ObjectName, ObjectNamePart, Query, Select, SelectItem, SetExpr, Statement, TableFactor,
    TableWithJoins, Value, VisitMut, VisitorMut,
};
use datafusion_pg_catalog::sql::rules::SqlStatementRewriteRule;
use std::ops::ControlFlow;
use std::sync::Arc;

/// The marker function the statement rewrite writes and the analyzer rule replaces.
pub const WHOLE_ROW: &str = "brook_whole_row";

/// The function that builds a row from names and values.
pub const ROW: &str = "brook_row";

/// The functions whose arguments may be whole rows.
const TAKE_ROWS: [&str; 11] = [
    "row_to_json",
    "to_json",
    "to_jsonb",
    "json_agg",
    "jsonb_agg",
    "json_object_agg",
    "jsonb_object_agg",
    "json_build_object",
    "jsonb_build_object",
    "json_build_array",
    "jsonb_build_array",
];

/// The statement rewrite.
#[derive(Debug)]
pub struct WholeRowReferences;

impl SqlStatementRewriteRule for WholeRowReferences {
    fn rewrite(&self, mut s: Statement) -> Statement {
        let _ = s.visit(&mut Queries);
        s
    }
}

/// Visits every query after its subqueries (innermost first).
struct Queries;

impl VisitorMut for Queries {
    type Break = ();

    fn post_visit_query(&mut self, q: &mut Query) -> ControlFlow<()> {
        let names = match q.body.as_mut() {
            SetExpr::Select(select) => rewrite_select(select),
            other => {
                set_expr(other);
                return ControlFlow::Continue(());
            }
        };
        // The query's ORDER BY reads the same FROM items as its SELECT, after its output
        // names (`SELECT DISTINCT e ... ORDER BY e` orders by the output column).
        if let (Some(order_by), false) = (&mut q.order_by, names.is_empty()) {
            let _ = order_by.visit(&mut Arguments {
                outputs: output_names(&q.body),
                ..Arguments::new(&names)
            });
        }
        ControlFlow::Continue(())
    }
}

fn set_expr(body: &mut SetExpr) {
    match body {
        SetExpr::Select(select) => {
            rewrite_select(select);
        }
        SetExpr::SetOperation { left, right, .. } => {
            set_expr(left);
            set_expr(right);
        }
        _ => {}
    }
}

/// Rewrites the whole-row arguments of `select` naming its own FROM items; returns those.
fn rewrite_select(select: &mut Select) -> Vec<FromName> {
    row_constructors(select);
    let mut names = Vec::new();
    for from in &select.from {
        from_names(from, &mut names);
    }
    if names.is_empty() {
        return names;
    }
    // A FROM item selected bare is its row, named as the item (`SELECT t FROM t`).
    let rows = Arguments::new(&names);
    for item in &mut select.projection {
        let SelectItem::UnnamedExpr(SqlExpr::Identifier(id)) = item else {
            continue;
        };
        let id = id.clone();
        if rows.find(&folded(&id)).is_some_and(|n| n.value.is_none()) {
            if let Some(row) =
                rows.whole_row(&FunctionArgExpr::Expr(SqlExpr::Identifier(id.clone())))
            {
                *item = SelectItem::ExprWithAlias {
                    expr: row,
                    alias: id,
                };
            }
        }
    }
    // A function's value selected bare (cast or parenthesized too) keeps its name as the
    // column's (`SELECT e`, `SELECT e::text`), as PostgreSQL names it.
    for item in &mut select.projection {
        let SelectItem::UnnamedExpr(expr) = item else {
            continue;
        };
        let named = match &*expr {
            SqlExpr::Identifier(id) => Some(id),
            SqlExpr::Cast { expr, .. } | SqlExpr::Nested(expr) => match expr.as_ref() {
                SqlExpr::Identifier(id) => Some(id),
                _ => None,
            },
            _ => None,
        };
        let Some(id) = named.cloned() else {
            continue;
        };
        if names
            .iter()
            .any(|n| n.value.is_some() && n.reference == folded(&id))
        {
            *item = SelectItem::ExprWithAlias {
                expr: expr.clone(),
                alias: id,
            };
        }
    }
    // The FROM items are not the SELECT's expressions to rewrite (their subqueries were,
    // as queries of their own); the rest of the SELECT is, at its own depth only. In the
    // FROM, a function's value may be named bare in a join's ON or a later function's
    // arguments.
    let mut from = std::mem::take(&mut select.from);
    let _ = select.visit(&mut Arguments::new(&names));
    let _ = from.visit(&mut Arguments {
        values_only: true,
        ..Arguments::new(&names)
    });
    select.from = from;
    names
}

/// A parenthesized list selected (`SELECT (a, 'x')`) is a row constructor, as `ROW(a,
/// 'x')` is, named `row` as PostgreSQL names it (DataFusion reads a tuple only as a list
/// of literals to compare with).
fn row_constructors(select: &mut Select) {
    for item in &mut select.projection {
        let (SelectItem::UnnamedExpr(e) | SelectItem::ExprWithAlias { expr: e, .. }) = item else {
            continue;
        };
        let SqlExpr::Tuple(fields) = e else {
            continue;
        };
        let row = crate::pg_functions::function_call("row", std::mem::take(fields));
        *item = match item {
            SelectItem::ExprWithAlias { alias, .. } => SelectItem::ExprWithAlias {
                expr: row,
                alias: alias.clone(),
            },
            _ => SelectItem::ExprWithAlias {
                expr: row,
                alias: Ident::new("row"),
            },
        };
    }
}

/// The output names of a SELECT's list (what an ORDER BY name reads first).
fn output_names(body: &SetExpr) -> Vec<String> {
    let SetExpr::Select(select) = body else {
        return Vec::new();
    };
    select
        .projection
        .iter()
        .filter_map(|item| match item {
            SelectItem::ExprWithAlias { alias, .. } => Some(folded(alias)),
            SelectItem::UnnamedExpr(SqlExpr::Identifier(id)) => Some(folded(id)),
            _ => None,
        })
        .collect()
}

/// A FROM item's name as a whole-row reference reads it (folded to lower case unless
/// quoted, as identifiers are), and the name its columns are qualified with.
struct FromName {
    reference: String,
    qualifier: ObjectName,
    /// The column a bare reference reads, for a call of a function [`crate::bare_value`]
    /// knows.
    value: Option<String>,
}

impl FromName {
    fn new(alias: &Ident) -> Self {
        FromName {
            reference: folded(alias),
            qualifier: ObjectName(vec![ObjectNamePart::Identifier(alias.clone())]),
            value: None,
        }
    }
}

fn from_names(from: &TableWithJoins, out: &mut Vec<FromName>) {
    factor_name(&from.relation, out);
    for join in &from.joins {
        factor_name(&join.relation, out);
    }
}

fn factor_name(factor: &TableFactor, out: &mut Vec<FromName>) {
    match factor {
        // A table function's row is its value in PostgreSQL (`to_json(g)` of
        // `generate_series(1, 2) g(x)` is 1): not a row here, but the value of those
        // whose column has a name of its own.
        // (With ORDINALITY its row has two columns: a row in PostgreSQL.)
        TableFactor::Table {
            name,
            args: Some(_),
            alias: Some(a),
            with_ordinality: false,
            ..
        }
        | TableFactor::Function {
            name,
            alias: Some(a),
            with_ordinality: false,
            ..
        } if a.columns.len() <= 1 => {
            if let Some(value) = value_column(name) {
                // `e(v)` names the column v.
                let value = match a.columns.first() {
                    Some(c) => folded(&c.name),
                    None => value.to_string(),
                };
                out.push(FromName {
                    value: Some(value),
                    ..FromName::new(&a.name)
                });
            }
        }
        TableFactor::Table { args: Some(_), .. } => {}
        TableFactor::Table { name, alias, .. } => match alias {
            Some(a) => out.push(FromName::new(&a.name)),
            None => {
                if let Some(last) = name.0.last().and_then(|p| p.as_ident()) {
                    out.push(FromName {
                        reference: folded(last),
                        qualifier: name.clone(),
                        value: None,
                    });
                }
            }
        },
        TableFactor::Derived { alias: Some(a), .. } => out.push(FromName::new(&a.name)),
        TableFactor::NestedJoin {
            table_with_joins, ..
        } => from_names(table_with_joins, out),
        _ => {}
    }
}

/// An identifier as it names: its text when quoted, else folded to lower case.
fn folded(id: &Ident) -> String {
    match id.quote_style {
        Some(_) => id.value.clone(),
        None => id.value.to_ascii_lowercase(),
    }
}

/// Rewrites the arguments of the functions that take rows, and bare names of functions'
/// values, outside subqueries.
struct Arguments<'a> {
    names: &'a [FromName],
    depth: usize,
    /// Names that are the query's output columns (in its ORDER BY): left as they are.
    outputs: Vec<String>,
    /// Only bare names of functions' values (in the FROM).
    values_only: bool,
}

impl<'a> Arguments<'a> {
    fn new(names: &'a [FromName]) -> Self {
        Arguments {
            names,
            depth: 0,
            outputs: Vec::new(),
            values_only: false,
        }
    }
}

impl VisitorMut for Arguments<'_> {
    type Break = ();

    fn pre_visit_query(&mut self, _q: &mut Query) -> ControlFlow<()> {
        self.depth += 1;
        ControlFlow::Continue(())
    }

    fn post_visit_query(&mut self, _q: &mut Query) -> ControlFlow<()> {
        self.depth -= 1;
        ControlFlow::Continue(())
    }

    fn pre_visit_expr(&mut self, e: &mut SqlExpr) -> ControlFlow<()> {
        if self.depth > 0 {
            return ControlFlow::Continue(());
        }
        // A bare name of a function's value, anywhere.
        if let SqlExpr::Identifier(id) = e {
            let name = folded(id);
            if !self.outputs.contains(&name) && self.find(&name).is_some_and(|n| n.value.is_some())
            {
                if let Some(value) = self.whole_row(&FunctionArgExpr::Expr(e.clone())) {
                    *e = value;
                }
            }
            return ControlFlow::Continue(());
        }
        let SqlExpr::Function(f) = e else {
            return ControlFlow::Continue(());
        };
        if self.values_only {
            return ControlFlow::Continue(());
        }
        let takes_rows = f
            .name
            .0
            .last()
            .and_then(|p| p.as_ident())
            .is_some_and(|n| TAKE_ROWS.contains(&n.value.to_ascii_lowercase().as_str()));
        let FunctionArguments::List(list) = &mut f.args else {
            return ControlFlow::Continue(());
        };
        if !takes_rows {
            return ControlFlow::Continue(());
        }
        for arg in &mut list.args {
            let FunctionArg::Unnamed(a) = arg else {
                continue;
            };
            if let Some(row) = self.whole_row(a) {
                *a = FunctionArgExpr::Expr(row);
            }
        }
        // `json_agg(DISTINCT t ORDER BY t)`: the ORDER BY names the argument.
        for clause in &mut list.clauses {
            if let FunctionArgumentClause::OrderBy(order) = clause {
                for o in order {
                    let arg = FunctionArgExpr::Expr(o.expr.clone());
                    if let Some(row) = self.whole_row(&arg) {
                        o.expr = row;
                    }
                }
            }
        }
        ControlFlow::Continue(())
    }
}

impl Arguments<'_> {
    /// `arg` as a whole-row marker when it names one of the FROM items.
    fn whole_row(&self, arg: &FunctionArgExpr) -> Option<SqlExpr> {
        let (from, column) = match arg {
            FunctionArgExpr::Expr(SqlExpr::Identifier(id)) => {
                let name = folded(id);
                (self.find(&name)?, Some(name))
            }
            FunctionArgExpr::QualifiedWildcard(name) => {
                let [ObjectNamePart::Identifier(written)] = name.0.as_slice() else {
                    return None;
                };
                (self.find(&folded(written))?, None)
            }
            _ => return None,
        };
        if let (Some(value), Some(column)) = (&from.value, &column) {
            let mut path: Vec<Ident> = from
                .qualifier
                .0
                .iter()
                .filter_map(|p| p.as_ident().cloned())
                .collect();
            path.push(Ident::with_quote('"', value.clone()));
            return Some(crate::pg_functions::function_call(
                BARE_VALUE,
                vec![
                    SqlExpr::CompoundIdentifier(path),
                    SqlExpr::value(Value::SingleQuotedString(column.clone())),
                ],
            ));
        }
        let mut args = vec![FunctionArg::Unnamed(FunctionArgExpr::QualifiedWildcard(
            from.qualifier.clone(),
        ))];
        if let Some(column) = column {
            args.push(FunctionArg::Unnamed(FunctionArgExpr::Expr(SqlExpr::value(
                Value::SingleQuotedString(column),
            ))));
        }
        let mut call = crate::pg_functions::function_call(WHOLE_ROW, vec![]);
        if let SqlExpr::Function(f) = &mut call {
            if let FunctionArguments::List(list) = &mut f.args {
                list.args = args;
            }
        }
        Some(call)
    }

    /// The FROM item referred to as `name` (as [`folded`] gives it).
    fn find(&self, name: &str) -> Option<&FromName> {
        self.names.iter().find(|n| n.reference == name)
    }
}

/// The marker function, typed as the NULL a wildcard is while the statement is planned;
/// [`WholeRows`] replaces every call before anything runs.
#[derive(Debug, PartialEq, Eq, Hash)]
struct WholeRowMarker {
    signature: Signature,
}

impl ScalarUDFImpl for WholeRowMarker {
    fn name(&self) -> &str {
        WHOLE_ROW
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _args: &[DataType]) -> Result<DataType> {
        Ok(DataType::Null)
    }

    fn invoke_with_args(&self, _args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        plan_err!("{WHOLE_ROW} is replaced by the row it names before a query runs")
    }
}

/// The marker function, to register on a context.
pub fn whole_row_function() -> ScalarUDF {
    ScalarUDF::new_from_impl(WholeRowMarker {
        signature: Signature::variadic_any(Volatility::Immutable),
    })
}

/// The analyzer rule.
#[derive(Debug, Default)]
pub struct WholeRows;

impl AnalyzerRule for WholeRows {
    fn analyze(&self, plan: LogicalPlan, _config: &ConfigOptions) -> Result<LogicalPlan> {
        plan.transform_up_with_subqueries(|node| {
            // Most plans have no whole row: they are left without copying their inputs.
            let mut marked = false;
            node.apply_expressions(|e| {
                marked |= e.exists(|e| {
                    Ok(matches!(e, Expr::ScalarFunction(f)
                        if f.func.name() == WHOLE_ROW || f.func.name() == BARE_VALUE))
                })?;
                Ok(TreeNodeRecursion::Continue)
            })?;
            if !marked {
                return Ok(Transformed::no(node));
            }
            let mut schema = DFSchema::empty();
            for input in node.inputs() {
                schema.merge(input.schema());
            }
            let inputs: Vec<LogicalPlan> = node.inputs().into_iter().cloned().collect();
            let sorting = matches!(node, LogicalPlan::Sort(_));
            let preserver = NamePreserver::new(&node);
            let node = node.map_expressions(|e| {
                let saved = preserver.save(&e);
                let t = e.transform_up(|e| expand(e, &schema, &inputs, sorting))?;
                Ok(t.update_data(|e| saved.restore(e)))
            })?;
            if node.transformed {
                node.map_data(|p| p.recompute_schema())
            } else {
                Ok(node)
            }
        })
        .map(|t| t.data)
    }

    fn name(&self) -> &str {
        "brook_whole_rows"
    }
}

/// `e` as the row (or the column) a marker call names; `schema` is the node's inputs', and
/// `inputs` the plans below it, where the FROM item's whole row is found; `sorting` when the
/// node is an ORDER BY (whose input is the select list).
fn expand(
    e: Expr,
    schema: &DFSchema,
    inputs: &[LogicalPlan],
    sorting: bool,
) -> Result<Transformed<Expr>> {
    let Expr::ScalarFunction(ScalarFunction { func, args }) = &e else {
        return Ok(Transformed::no(e));
    };
    if func.name() == BARE_VALUE {
        return bare_value(args, schema);
    }
    if func.name() != WHOLE_ROW {
        return Ok(Transformed::no(e));
    }
    #[expect(deprecated)]
    let Some(Expr::Wildcard {
        qualifier: Some(qualifier),
        ..
    }) = args.first()
    else {
        return plan_err!("{WHOLE_ROW} takes a FROM item's name");
    };
    if let Some(Expr::Literal(ScalarValue::Utf8(Some(column)), _)) = args.get(1) {
        let same_name: Vec<_> = schema.iter().filter(|(_, f)| f.name() == column).collect();
        if let [(q, f)] = same_name.as_slice() {
            return Ok(Transformed::yes(Expr::Column(Column::new(
                q.cloned(),
                f.name(),
            ))));
        }
    }
    let visible: Vec<&str> = schema
        .iter()
        .filter(|(q, _)| *q == Some(qualifier))
        .map(|(_, f)| f.name().as_str())
        .collect();
    // The row's columns in the FROM item's order, found where it is read (below any
    // grouping, which keeps only what it groups by, in its own order).
    let whole = inputs.iter().find_map(|p| source_columns(p, qualifier));
    let columns: Vec<SourceColumn> = match whole {
        Some(whole) => whole,
        None if visible.is_empty() => {
            return Err(DataFusionError::External(Box::new(
                BrookError::UndefinedTable(qualifier.to_string()),
            )))
        }
        None => visible
            .iter()
            .map(|name| SourceColumn {
                name: name.to_string(),
                nullable: true,
            })
            .collect(),
    };
    // Above GROUP BY, PostgreSQL refuses the reference unless the row is grouped (a row of
    // the grouped columns only would be another answer).
    if let Some(missing) = columns.iter().find(|c| !visible.contains(&c.name.as_str())) {
        if sorting {
            // DataFusion adds the columns an ORDER BY reads to the select list; a whole row
            // names none of them.
            return Err(DataFusionError::External(Box::new(BrookError::Unsupported(format!(
                "a whole-row reference (\"{qualifier}\") in ORDER BY when the select list does not read every column of it (select {qualifier}.* too, or order by its columns)"
            )))));
        }
        return Err(DataFusionError::External(Box::new(BrookError::grouping(format!(
            "column \"{qualifier}.{}\" must appear in the GROUP BY clause or be used in an aggregate function (the whole row \"{qualifier}\" is read)",
            missing.name
        )))));
    }
    let mut fields = Vec::new();
    for c in &columns {
        fields.push(Expr::Literal(ScalarValue::Utf8(Some(c.name.clone())), None));
        fields.push(Expr::Column(Column::new(Some(qualifier.clone()), &c.name)));
    }
    let row = Expr::ScalarFunction(ScalarFunction::new_udf(Arc::new(row_function()), fields));
    if !inputs.iter().any(|p| null_extended(p, qualifier)) {
        return Ok(Transformed::yes(row));
    }
    // The row of an outer join's side that found no match is NULL, not a row of NULLs:
    // known by a column that cannot be NULL in the FROM item, else by every column's NULL.
    let column_null =
        |c: &SourceColumn| Expr::Column(Column::new(Some(qualifier.clone()), &c.name)).is_null();
    let missing_row = match columns.iter().find(|c| !c.nullable) {
        Some(c) => column_null(c),
        None => columns
            .iter()
            .map(column_null)
            .reduce(Expr::and)
            .unwrap_or_else(|| Expr::Literal(ScalarValue::Boolean(Some(false)), None)),
    };
    Ok(Transformed::yes(Expr::Case(Case::new(
        None,
        vec![(
            Box::new(missing_row),
            Box::new(Expr::Literal(ScalarValue::Null, None)),
        )],
        Some(Box::new(row)),
    ))))
}

/// A column of a FROM item as its source has it.
struct SourceColumn {
    name: String,
    /// False when the source never gives it NULL (a NOT NULL column).
    nullable: bool,
}

/// The columns of the FROM item `qualifier` where `plan` reads it (its table scan or its
/// subquery's alias), found below any grouping.
fn source_columns(plan: &LogicalPlan, qualifier: &TableReference) -> Option<Vec<SourceColumn>> {
    let columns = |schema: &DFSchema| {
        schema
            .fields()
            .iter()
            .map(|f| SourceColumn {
                name: f.name().clone(),
                nullable: f.is_nullable(),
            })
            .collect()
    };
    match plan {
        LogicalPlan::TableScan(scan) if &scan.table_name == qualifier => {
            Some(columns(scan.projected_schema.as_ref()))
        }
        LogicalPlan::SubqueryAlias(alias) if &alias.alias == qualifier => {
            Some(columns(alias.schema.as_ref()))
        }
        other => other
            .inputs()
            .into_iter()
            .find_map(|p| source_columns(p, qualifier)),
    }
}

/// True when `plan` reads the FROM item `qualifier` on the side of an outer join that is
/// filled with NULLs where the other side has no match.
fn null_extended(plan: &LogicalPlan, qualifier: &TableReference) -> bool {
    match plan {
        LogicalPlan::TableScan(scan) if &scan.table_name == qualifier => false,
        LogicalPlan::SubqueryAlias(alias) if &alias.alias == qualifier => false,
        LogicalPlan::Join(join) => {
            let (side, padded) = if source_columns(&join.left, qualifier).is_some() {
                (
                    &join.left,
                    matches!(join.join_type, JoinType::Right | JoinType::Full),
                )
            } else {
                (
                    &join.right,
                    matches!(join.join_type, JoinType::Left | JoinType::Full),
                )
            };
            padded || null_extended(side, qualifier)
        }
        other => other
            .inputs()
            .into_iter()
            .any(|p| null_extended(p, qualifier)),
    }
}

/// `brook_row(name, value, ...)`: a struct of the values, each field named by its constant
/// name and keeping its value's field metadata (`named_struct` drops it).
#[derive(Debug, PartialEq, Eq, Hash)]
struct Row {
    signature: Signature,
}

impl ScalarUDFImpl for Row {
    fn name(&self) -> &str {
        ROW
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _args: &[DataType]) -> Result<DataType> {
        internal_err!("{ROW} has its type from its arguments' fields")
    }

    fn return_field_from_args(&self, args: ReturnFieldArgs<'_>) -> Result<FieldRef> {
        let mut fields = Vec::new();
        for (pair, names) in args
            .arg_fields
            .chunks(2)
            .zip(args.scalar_arguments.chunks(2))
        {
            let (Some(Some(ScalarValue::Utf8(Some(name)))), Some(value)) =
                (names.first(), pair.get(1))
            else {
                return plan_err!("{ROW} takes pairs of a constant name and a value");
            };
            fields.push(
                value
                    .as_ref()
                    .clone()
                    .with_name(name.clone())
                    .with_nullable(true),
            );
        }
        Ok(Arc::new(Field::new(
            ROW,
            DataType::Struct(Fields::from(fields)),
            true,
        )))
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let DataType::Struct(fields) = args.return_field.data_type() else {
            return internal_err!("{ROW} returns a struct");
        };
        let values = args
            .args
            .iter()
            .skip(1)
            .step_by(2)
            .map(|v| v.to_array(args.number_rows))
            .collect::<Result<Vec<ArrayRef>>>()?;
        let rows = StructArray::try_new(fields.clone(), values, None)?;
        Ok(ColumnarValue::Array(Arc::new(rows)))
    }
}

/// The row function, to register on a context (a view's stored plan may name it).
pub fn row_function() -> ScalarUDF {
    ScalarUDF::new_from_impl(Row {
        signature: Signature::variadic_any(Volatility::Immutable),
    })
}

#[cfg(test)]
mod tests;
