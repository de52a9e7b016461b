//! Describe: the result columns of a statement before it runs (extended protocol).

use crate::handler::continuous::wire_schema;
use crate::handler::insert::returning_query;
use crate::handler::update_delete::{refuse_returning_of_others, with_dml};
use crate::ident::ident_name;
use crate::ident::object_parts;
use crate::ident::quote_ident;
use crate::pg::sql::pg_literals;
use crate::pg::sql::pg_named;
use crate::session::Session;
use crate::stream::plan::plan_query_continuous;
use brook_common::Result;
use brook_planner::continuous::ContinuousOptions;
use brook_planner::{BrookStatement, StatementBody};
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use datafusion::sql::sqlparser::ast::{self, Expr, FromTable, Statement, TableFactor, TableObject};
use std::collections::BTreeMap;
use std::sync::Arc;

impl Session {
    /// The result schema of a query without running it (for Describe).
    pub async fn describe(&self, stmt: &BrookStatement) -> Result<Option<SchemaRef>> {
        let (stmt, _) = self.approximated(
            self.table_aliases_completed(self.natural_joins_resolved(stmt.clone())),
        )?;
        let stmt = &stmt;
        let plan_schema = || -> SchemaRef {
            Arc::new(Schema::new(vec![Field::new(
                "QUERY PLAN",
                DataType::Utf8,
                false,
            )]))
        };
        match (&stmt.body, stmt.emit) {
            (StatementBody::FetchWith { fetch, .. }, _) => self.describe_fetch(fetch),
            (StatementBody::Move(fetch), _) => self.describe_fetch(fetch).map(|_| None),
            (StatementBody::Sql(s), Some(emit)) => match s.as_ref() {
                Statement::Explain { .. } => Ok(Some(plan_schema())),
                Statement::Query(_) => {
                    // The continuous result: with the change kind when it is updating.
                    let options = ContinuousOptions {
                        emit_on_window_close: emit.on_window_close(),
                    };
                    let p =
                        plan_query_continuous(&self.ctx, s.as_ref().clone(), options, true).await?;
                    Ok(Some(wire_schema(&p.graph, p.names)))
                }
                _ => Ok(Some(Arc::new(Schema::empty()))),
            },
            (StatementBody::Sql(s), None) => match s.as_ref() {
                Statement::Fetch { .. } => self.describe_fetch(s),
                Statement::Explain { statement, .. }
                    if matches!(statement.as_ref(), Statement::Declare { .. }) =>
                {
                    Ok(Some(plan_schema()))
                }
                Statement::Query(q) if with_dml(q).is_some() => {
                    self.returning_schema(with_dml(q).unwrap_or(s)).await
                }
                Statement::Query(_) | Statement::Explain { .. } => {
                    self.describe_query(s).await.map(Some)
                }
                Statement::Execute { .. } => {
                    let (bound, names) = self.bound_execute(s)?;
                    let plan = self.plan(bound).await?;
                    Ok(Some(pg_named(plan.schema().as_arrow().clone(), names)))
                }
                Statement::ShowVariable { variable } => {
                    let name = variable
                        .iter()
                        .map(ident_name)
                        .collect::<Vec<_>>()
                        .join(" ");
                    Ok(Some(Arc::new(Schema::new(vec![Field::new(
                        name,
                        DataType::Utf8,
                        true,
                    )]))))
                }
                Statement::Insert(_) | Statement::Update(_) | Statement::Delete(_) => {
                    self.returning_schema(s).await
                }
                _ => Ok(Some(Arc::new(Schema::empty()))),
            },
            _ => Ok(Some(Arc::new(Schema::empty()))),
        }
    }

    /// The row shape of a query (or EXPLAIN) from its plan, with PostgreSQL's column names.
    pub(crate) async fn describe_query(&self, stmt: &Statement) -> Result<SchemaRef> {
        let mut stmt = stmt.clone();
        let names = brook_planner::rewrite::output_names(&stmt);
        pg_literals(&mut stmt)?;
        let plan = self.plan(stmt).await?;
        Ok(pg_named(
            self.analyzed_schema(&plan).as_arrow().clone(),
            names,
        ))
    }

    /// Parameter types and result schema of a prepared statement (for Describe). Declared
    /// types win; others are inferred from the plan (queries) or the target columns (INSERT).
    pub async fn describe_with_params(
        &self,
        stmt: &BrookStatement,
        declared: &[postgres_types::Type],
    ) -> Result<(Vec<postgres_types::Type>, Option<SchemaRef>)> {
        use postgres_types::Type;
        let mut types: Vec<Type> = declared.to_vec();
        let (stmt, _) = self.approximated(
            self.table_aliases_completed(self.natural_joins_resolved(stmt.clone())),
        )?;
        let stmt = &stmt;
        let (StatementBody::Sql(s), None) = (&stmt.body, stmt.emit) else {
            return Ok((types, self.describe(stmt).await?));
        };
        let mut inferred: BTreeMap<usize, Type> = BTreeMap::new();
        let schema = match s.as_ref() {
            Statement::Explain { statement, .. }
                if matches!(statement.as_ref(), Statement::Declare { .. }) =>
            {
                self.describe(stmt).await?
            }
            Statement::Query(q) if with_dml(q).is_some() => {
                self.returning_schema(with_dml(q).unwrap_or(s)).await?
            }
            Statement::Query(_) | Statement::Explain { .. } => {
                let mut q = (**s).clone();
                let names = brook_planner::rewrite::output_names(&q);
                pg_literals(&mut q)?;
                let plan = self.plan(q).await?;
                plan_parameter_types(&plan, &mut inferred)?;
                Some(pg_named(
                    self.analyzed_schema(&plan).as_arrow().clone(),
                    names,
                ))
            }
            Statement::Insert(ins) => {
                if let (TableObject::TableName(tn), Some(src)) = (&ins.table, &ins.source) {
                    if let Ok((schema, name)) = self.resolve(tn) {
                        if let Ok((meta, _)) = self.relation(&schema, &name) {
                            let cols: Vec<usize> = if ins.columns.is_empty() {
                                (0..meta.columns.len()).collect()
                            } else {
                                ins.columns
                                    .iter()
                                    .filter_map(|c| {
                                        object_parts(c).ok().and_then(|p| p.last().cloned())
                                    })
                                    .filter_map(|n| meta.columns.iter().position(|m| m.name == n))
                                    .collect()
                            };
                            if let ast::SetExpr::Values(v) = src.body.as_ref() {
                                for row in &v.rows {
                                    for (j, e) in row.iter().enumerate() {
                                        if let (Expr::Value(val), Some(&ci)) = (e, cols.get(j)) {
                                            if let ast::Value::Placeholder(p) = &val.value {
                                                if let Some(i) = p
                                                    .strip_prefix('$')
                                                    .and_then(|n| n.parse::<usize>().ok())
                                                {
                                                    inferred.insert(i, meta.columns[ci].ty.wire());
                                                }
                                            }
                                        }
                                    }
                                }
                            }
                        }
                    }
                }
                self.returning_schema(s).await?
            }
            // `DECLARE c CURSOR FOR SELECT ... $1`: the parameters of its query, which
            // PostgreSQL infers (pgx encodes a parameter by the type described).
            Statement::Declare { stmts } => {
                if let Some(query) = stmts.first().and_then(|d| d.for_query.clone()) {
                    let mut q = Statement::Query(query);
                    pg_literals(&mut q)?;
                    if let Ok(plan) = self.plan(q).await {
                        plan_parameter_types(&plan, &mut inferred)?;
                    }
                }
                Some(Arc::new(Schema::empty()))
            }
            Statement::ShowVariable { .. }
            | Statement::Fetch { .. }
            | Statement::Execute { .. } => self.describe(stmt).await?,
            Statement::Update(u) => {
                // `SET col = $n`: the column's type, as PostgreSQL infers it (asyncpg then
                // sends a list for an array column).
                if let Ok(target) = self.dml_target(&u.table.relation, "UPDATE") {
                    for a in &u.assignments {
                        let (ast::AssignmentTarget::ColumnName(c), Expr::Value(v)) =
                            (&a.target, &a.value)
                        else {
                            continue;
                        };
                        let ast::Value::Placeholder(p) = &v.value else {
                            continue;
                        };
                        let column = object_parts(c)
                            .ok()
                            .and_then(|p| p.last().cloned())
                            .and_then(|n| target.meta.columns.iter().find(|m| m.name == n));
                        let n = p.strip_prefix('$').and_then(|n| n.parse::<usize>().ok());
                        if let (Some(column), Some(n)) = (column, n) {
                            inferred.insert(n, column.ty.wire());
                        }
                    }
                }
                self.where_parameter_types(&u.table.relation, u.selection.as_ref(), &mut inferred)
                    .await;
                self.returning_schema(s).await?
            }
            Statement::Delete(d) => {
                let tables = match &d.from {
                    ast::FromTable::WithFromKeyword(t) | ast::FromTable::WithoutKeyword(t) => t,
                };
                if let [table] = tables.as_slice() {
                    self.where_parameter_types(
                        &table.relation,
                        d.selection.as_ref(),
                        &mut inferred,
                    )
                    .await;
                }
                self.returning_schema(s).await?
            }
            _ => Some(Arc::new(Schema::empty())),
        };
        // `$n::type` / `CAST($n AS type)` gives the parameter that type, as in PostgreSQL
        // (asyncpg then sends an int for `$1::int`, not its text).
        inferred.extend(cast_placeholder_types(s));
        let n = brook_planner::rewrite::placeholder_count(s).max(types.len());
        types.resize(n, Type::UNKNOWN);
        for (i, t) in types.iter_mut().enumerate() {
            if *t == Type::UNKNOWN {
                if let Some(x) = inferred.get(&(i + 1)) {
                    *t = x.clone();
                }
            }
        }
        Ok((types, schema))
    }

    /// The types of the parameters in an UPDATE's or DELETE's WHERE clause, as the same
    /// condition in a query over the table gives them (`WHERE id = $2` is an integer; it
    /// was unknown, and asyncpg then refused to send an int). Best effort: a condition
    /// that does not plan leaves its parameters to the client.
    async fn where_parameter_types(
        &self,
        relation: &TableFactor,
        selection: Option<&Expr>,
        inferred: &mut BTreeMap<usize, postgres_types::Type>,
    ) {
        let Some(selection) = selection else {
            return;
        };
        let sql = format!("SELECT 1 FROM {relation} WHERE {selection}");
        let Ok(Some(mut q)) = brook_planner::parser::parse_one(&sql).map(|s| s.into_plain_sql())
        else {
            return;
        };
        if pg_literals(&mut q).is_err() {
            return;
        }
        if let Ok(plan) = self.plan(q).await {
            let _ = plan_parameter_types(&plan, inferred);
        }
    }

    /// The result schema of a DML statement: its RETURNING list over the target table, or
    /// none.
    pub(crate) async fn returning_schema(&self, stmt: &Statement) -> Result<Option<SchemaRef>> {
        let (table, me, items) = match stmt {
            Statement::Insert(i) => match (&i.table, &i.returning) {
                (TableObject::TableName(t), Some(items)) => {
                    let me = i
                        .table_alias
                        .as_ref()
                        .map(|a| crate::ident::ident_name(&a.alias))
                        .unwrap_or_else(|| target_name(t, &None));
                    (t.clone(), me, items.clone())
                }
                _ => return Ok(Some(Arc::new(Schema::empty()))),
            },
            Statement::Update(u) => match (&u.table.relation, &u.returning) {
                (TableFactor::Table { name, alias, .. }, Some(items)) => {
                    let me = target_name(name, alias);
                    refuse_returning_of_others(&me, Some(items), u.from.is_some())?;
                    (name.clone(), me, items.clone())
                }
                _ => return Ok(Some(Arc::new(Schema::empty()))),
            },
            Statement::Delete(d) => {
                let tables = match &d.from {
                    FromTable::WithFromKeyword(t) | FromTable::WithoutKeyword(t) => t,
                };
                match (tables.first().map(|t| &t.relation), &d.returning) {
                    (Some(TableFactor::Table { name, alias, .. }), Some(items)) => {
                        let me = target_name(name, alias);
                        refuse_returning_of_others(&me, Some(items), d.using.is_some())?;
                        (name.clone(), me, items.clone())
                    }
                    _ => return Ok(Some(Arc::new(Schema::empty()))),
                }
            }
            _ => return Ok(Some(Arc::new(Schema::empty()))),
        };
        let (schema, name) = self.resolve(&table)?;
        let from = format!(
            "{}.{} AS {}",
            quote_ident(&schema),
            quote_ident(&name),
            quote_ident(&me)
        );
        let (q, names) = returning_query(&items, &from)?;
        let plan = self.plan(q).await?;
        Ok(Some(pg_named(plan.schema().as_arrow().clone(), names)))
    }
}

/// The wire type of a cast's target: a column type, or `oid`/`oid[]`, which catalog
/// queries bind (asyncpg's type lookup sends `$1::oid[]` and, told the parameter's type
/// is unknown, looked up that type with the same query until its recursion limit).
fn cast_type(t: &ast::DataType) -> Option<postgres_types::Type> {
    use postgres_types::Type;
    let is_oid = |t: &ast::DataType| {
        matches!(t, ast::DataType::Custom(name, args)
            if args.is_empty() && name.to_string().eq_ignore_ascii_case("oid"))
    };
    // `$1::pg_catalog.int4` (asyncpg's `copy_from_query` sends it): the type's own name.
    if let ast::DataType::Custom(name, args) = t {
        if let [schema, own] = name.0.as_slice() {
            let own = own.as_ident().map(|i| i.value.clone());
            let in_catalog = schema
                .as_ident()
                .is_some_and(|s| s.value.eq_ignore_ascii_case("pg_catalog"));
            if let (true, true, Some(own)) = (in_catalog, args.is_empty(), own) {
                let unqualified = datafusion::sql::sqlparser::parser::Parser::new(
                    &datafusion::sql::sqlparser::dialect::PostgreSqlDialect {},
                )
                .try_with_sql(&own)
                .and_then(|mut p| p.parse_data_type())
                .ok()?;
                return cast_type(&unqualified);
            }
        }
    }
    match t {
        _ if is_oid(t) => Some(Type::OID),
        ast::DataType::Array(ast::ArrayElemTypeDef::SquareBracket(elem, _)) if is_oid(elem) => {
            Some(Type::OID_ARRAY)
        }
        _ => crate::pg::types::PgType::from_sql(t).ok().map(|t| t.wire()),
    }
}

/// The parameter types DataFusion infers for a plan, and those of array tests
/// (`brook_planner::parameter_types`).
fn plan_parameter_types(
    plan: &datafusion::logical_expr::LogicalPlan,
    inferred: &mut BTreeMap<usize, postgres_types::Type>,
) -> Result<()> {
    // A parameter compared with a column takes the column's field, whose metadata names
    // its declared type (`u = $1` of a uuid column is uuid, not the text it is stored as).
    for (k, v) in plan.get_parameter_fields()? {
        if let (Some(i), Some(field)) =
            (k.strip_prefix('$').and_then(|n| n.parse::<usize>().ok()), v)
        {
            let wire = crate::pg::types::PgType::from_field(&field).map_or_else(
                || crate::pg::types::arrow_wire_type(field.data_type()),
                |t| t.wire(),
            );
            inferred.insert(i, wire);
        }
    }
    for (i, dt) in brook_planner::parameter_types::array_membership_parameters(plan)? {
        inferred.insert(i, crate::pg::types::arrow_wire_type(&dt));
    }
    Ok(())
}

/// The types of parameters cast right where they appear (`$n::type`).
fn cast_placeholder_types(stmt: &Statement) -> BTreeMap<usize, postgres_types::Type> {
    use datafusion::sql::sqlparser::ast::{Visit, Visitor};
    use std::ops::ControlFlow;
    struct Casts(BTreeMap<usize, postgres_types::Type>);
    impl Visitor for Casts {
        type Break = ();
        fn pre_visit_expr(&mut self, e: &Expr) -> ControlFlow<()> {
            if let Expr::Cast {
                expr, data_type, ..
            } = e
            {
                if let Expr::Value(v) = expr.as_ref() {
                    if let ast::Value::Placeholder(p) = &v.value {
                        let n = p.strip_prefix('$').and_then(|n| n.parse::<usize>().ok());
                        if let (Some(n), Some(t)) = (n, cast_type(data_type)) {
                            self.0.insert(n, t);
                        }
                    }
                }
            }
            ControlFlow::Continue(())
        }
    }
    let mut casts = Casts(BTreeMap::new());
    let _ = stmt.visit(&mut casts);
    casts.0
}

/// The name an UPDATE or DELETE gives its target: its alias, else its (last) name.
fn target_name(name: &ast::ObjectName, alias: &Option<ast::TableAlias>) -> String {
    match alias {
        Some(a) => crate::ident::ident_name(&a.name),
        None => name
            .0
            .last()
            .and_then(|p| p.as_ident())
            .map(crate::ident::ident_name)
            .unwrap_or_default(),
    }
}
