//! Statements on a cluster node (see `db/cluster.rs`): a catalog change runs through the
//! cluster's log, and a write is published there instead of committed here. The node's
//! applier (`cluster/apply.rs`) runs the same code with [`Session::applying`] set, which
//! executes and commits locally at the entry's log position.

use crate::catalog::partitioning::Partitioning;
use crate::catalog::RelationMeta;
use crate::db::cluster::{
    definition_digest, DdlEntry, PartitionedPayloads, Write, WriteEntry, LOCAL_SETTINGS,
};
use crate::ident::quote_if_needed;
use crate::session::Outcome;
use crate::session::{Notice, Session};
use crate::storage::{adapt_batch, decode_payload, encode_payload, WriteTxn};
use brook_common::{brook_err, Result};
use brook_planner::{BrookStatement, StatementBody};
use datafusion::sql::sqlparser::ast::Statement;
use std::collections::BTreeMap;

/// Whether a statement changes the catalog (and so runs through a cluster's log). Writes of
/// rows are not: they are published at their commit ([`Session::commit_write`]).
pub(crate) fn changes_catalog(stmt: &BrookStatement) -> bool {
    match &stmt.body {
        StatementBody::Sql(s) => matches!(
            **s,
            Statement::CreateView(_)
                | Statement::CreateTable(_)
                | Statement::Drop { .. }
                | Statement::CreateSchema { .. }
                | Statement::CreateDatabase { .. }
                | Statement::CreateIndex(_)
                | Statement::Comment { .. }
                | Statement::CreateSequence { .. }
                | Statement::AlterTable(_)
                | Statement::Truncate(_)
                | Statement::CreateFunction(_)
                | Statement::DropFunction(_)
        ),
        StatementBody::CreateStream(_)
        | StatementBody::AlterSequence(_)
        | StatementBody::AlterIdentity(_)
        | StatementBody::AlterOwner { .. }
        | StatementBody::Rename { .. }
        | StatementBody::DropStream { .. }
        | StatementBody::CreateSynopsis(_)
        | StatementBody::DropSynopsis { .. }
        | StatementBody::CreateAggregate(_)
        | StatementBody::DropAggregate { .. } => true,
        StatementBody::FetchWith { .. }
        | StatementBody::Move(_)
        | StatementBody::RefreshMaterializedView { .. } => false,
    }
}

/// Whether a statement's text has bind parameters (`$1`): the log carries the text, not
/// the values.
fn has_placeholders(sql: &str) -> bool {
    use datafusion::sql::sqlparser::dialect::PostgreSqlDialect;
    use datafusion::sql::sqlparser::tokenizer::{Token, Tokenizer};
    Tokenizer::new(&PostgreSqlDialect {}, sql)
        .tokenize()
        .is_ok_and(|tokens| tokens.iter().any(|t| matches!(t, Token::Placeholder(_))))
}

/// Whether a catalog change fills existing rows with values each node would compute
/// apart: `ALTER TABLE ... ADD COLUMN` that is SERIAL or an identity column, or whose
/// default calls a function (`nextval`, `now()`, `random()`): every node runs the change
/// from the log, at its own time. Names and string literals that merely spell `serial`
/// or `identity` are not.
fn fills_per_node(stmt: &BrookStatement) -> bool {
    use datafusion::sql::sqlparser::ast::{AlterTableOperation, ColumnOption};
    match stmt.as_sql() {
        Some(Statement::AlterTable(at)) => at.operations.iter().any(|op| match op {
            AlterTableOperation::AddColumn { column_def, .. } => {
                column_uses_sequence(column_def)
                    || column_def.options.iter().any(|o| match &o.option {
                        ColumnOption::Default(e) => calls_function(e, |_| true),
                        _ => false,
                    })
            }
            _ => false,
        }),
        _ => false,
    }
}

/// Whether a column is SERIAL, an identity column, or defaults to `nextval(...)`.
fn column_uses_sequence(c: &datafusion::sql::sqlparser::ast::ColumnDef) -> bool {
    use datafusion::sql::sqlparser::ast::ColumnOption;
    let serial = matches!(
        c.data_type.to_string().to_ascii_uppercase().as_str(),
        "SERIAL" | "SERIAL2" | "SERIAL4" | "SERIAL8" | "SMALLSERIAL" | "BIGSERIAL"
    );
    serial
        || c.options.iter().any(|o| match &o.option {
            ColumnOption::Default(e) => calls_function(e, |name| name.ends_with("nextval")),
            ColumnOption::Generated {
                generation_expr: None,
                ..
            } => true,
            ColumnOption::Identity(_) => true,
            _ => false,
        })
}

/// Whether an expression calls a function whose name (lower case) `matches`.
fn calls_function(
    e: &datafusion::sql::sqlparser::ast::Expr,
    matches: impl Fn(&str) -> bool,
) -> bool {
    use datafusion::sql::sqlparser::ast::{Expr, Visit, Visitor};
    use std::ops::ControlFlow;
    struct Finder<F>(F);
    impl<F: Fn(&str) -> bool> Visitor for Finder<F> {
        type Break = ();
        fn pre_visit_expr(&mut self, e: &Expr) -> ControlFlow<()> {
            match e {
                Expr::Function(f) if (self.0)(&f.name.to_string().to_ascii_lowercase()) => {
                    ControlFlow::Break(())
                }
                _ => ControlFlow::Continue(()),
            }
        }
    }
    e.visit(&mut Finder(matches)).is_break()
}

impl Session {
    /// On a cluster node, a catalog change not being applied from the log yet: send it to
    /// the log and return the command tag this node's applier got for it. `None` when the
    /// statement is to run here — on a cluster node once the node has caught up with the
    /// log (an error when it cannot).
    pub(crate) async fn through_cluster_log(
        &mut self,
        stmt: &BrookStatement,
    ) -> Option<Result<String>> {
        let link = self.engine.cluster.get()?;
        if self.applying.is_some() {
            return None;
        }
        if !changes_catalog(stmt) {
            // Any other statement first waits for this node to have applied what the
            // log holds now: it sees every write acknowledged anywhere before it began.
            return link.sync().await.err().map(Err);
        }
        Some(self.catalog_change(stmt).await)
    }

    /// Send a catalog change to the log (see [`Session::through_cluster_log`]).
    async fn catalog_change(&mut self, stmt: &BrookStatement) -> Result<String> {
        let Some(sql) = stmt.text.clone() else {
            return Err(brook_err!(
                Internal,
                "a catalog change without its text cannot be sent to the cluster's log"
            ));
        };
        if has_placeholders(&sql) {
            return Err(brook_err!(
                Unsupported,
                "a catalog change with bind parameters in cluster mode: the other nodes run its text, so write the values into it"
            ));
        }
        if fills_per_node(stmt) {
            return Err(brook_err!(
                Unsupported,
                "ADD COLUMN with a SERIAL, identity or function default in cluster mode: each node would fill the existing rows with values of its own (add the column without it, UPDATE the rows, then SET DEFAULT)"
            ));
        }
        if let Some(split) = self.table_as_rows(stmt).await? {
            return split;
        }
        self.log_catalog_change(sql).await
    }

    /// Send the catalog change `sql` to the log with this session's settings.
    async fn log_catalog_change(&self, sql: String) -> Result<String> {
        let Some(link) = self.engine.cluster.get() else {
            return Err(brook_err!(Internal, "not a cluster node"));
        };
        let mut settings = self.settings.read().clone();
        settings.retain(|k, _| !LOCAL_SETTINGS.contains(&k.as_str()));
        let entry = DdlEntry {
            db: self.db.name.clone(),
            user: self.user.clone(),
            settings,
            sql,
        };
        link.ddl(&entry).await
    }

    /// `CREATE TABLE ... AS query` on a cluster node: its rows are computed here, once, and
    /// logged as a write (each node evaluating the query at the log's position would give
    /// other `now()` or `random()` values, and a node killed while filling the table would
    /// not fill it again). The table is created through the log from the query's shape (no
    /// rows), then the rows are inserted from here. `None` for any other statement.
    async fn table_as_rows(&mut self, stmt: &BrookStatement) -> Result<Option<Result<String>>> {
        // With Brook's clauses (EMIT, an accuracy budget) the statement goes as it is.
        let Some(Statement::CreateTable(ct)) = stmt.as_sql() else {
            return Ok(None);
        };
        if stmt.emit.is_some() || stmt.budget.is_some() {
            return Ok(None);
        }
        let Some(query) = &ct.query else {
            return Ok(None);
        };
        let (schema, name) = self.resolve(&ct.name)?;
        if ct.if_not_exists && self.relation(&schema, &name).is_ok() {
            self.notices.push(Notice::relation_exists(&name));
            return Ok(Some(Ok("CREATE TABLE AS".into())));
        }
        let mut shape = ct.clone();
        shape.if_not_exists = false;
        let Some(empty) = brook_planner::parser::parse_one(&format!(
            "SELECT * FROM ({query}) AS brook_ctas LIMIT 0"
        ))?
        .into_plain_sql() else {
            return Err(brook_err!(Internal, "CREATE TABLE AS: no query"));
        };
        let Statement::Query(empty) = empty else {
            return Err(brook_err!(Internal, "CREATE TABLE AS: not a query"));
        };
        shape.query = Some(empty);
        self.log_catalog_change(Statement::CreateTable(shape).to_string())
            .await?;
        let insert = format!(
            "INSERT INTO {}.{} SELECT * FROM ({query}) AS brook_ctas",
            quote_if_needed(&schema),
            quote_if_needed(&name)
        );
        let mut tag = String::new();
        for s in brook_planner::parse_sql(&insert)? {
            match Box::pin(self.execute(s)).await {
                Ok(Outcome::Command(t)) => tag = t,
                Ok(_) => {}
                Err(e) => {
                    // The query failed: the table goes with it, as on a single server.
                    let drop = format!(
                        "DROP TABLE IF EXISTS {}.{}",
                        quote_if_needed(&schema),
                        quote_if_needed(&name)
                    );
                    if let Err(d) = self.log_catalog_change(drop).await {
                        tracing::warn!(table = %name, error = %d, "could not drop the table of a failed CREATE TABLE AS");
                    }
                    return Err(e);
                }
            }
        }
        let rows = tag.rsplit(' ').next().unwrap_or("0");
        Ok(Some(Ok(format!("SELECT {rows}"))))
    }

    /// Commit a write of relation `meta` (called `name` by the statement). On a single
    /// server, or when applying the cluster's log, it commits here (at the entry's log
    /// position); on a cluster node otherwise it is published to the log, and is committed
    /// (on every node) when the log's order admits it — for a replacing write, or one that
    /// `depends_on_rows` it saw, only if no write of the relation was ordered between.
    pub(crate) async fn commit_write(
        &self,
        mut txn: WriteTxn,
        meta: &RelationMeta,
        name: &str,
        depends_on_rows: bool,
    ) -> Result<()> {
        if txn.in_block() {
            return self.block_statement_done(txn);
        }
        let link = match (self.engine.cluster.get(), self.applying) {
            (Some(link), None) => link,
            (_, Some(position)) => {
                txn.at_log_position(position);
                return txn.commit();
            }
            (None, None) => return txn.commit(),
        };
        let replace = txn.replaces();
        // The position the rows were computed from (read when the transaction was staged,
        // before the statement read any row).
        let based_on = txn
            .based_on()
            .ok_or_else(|| brook_err!(Internal, "only a staged transaction is published"))?;
        let payloads = txn.into_payloads()?;
        if payloads.is_empty() && !replace {
            return Ok(());
        }
        let (payloads, batch_rows) = by_partition(meta, payloads)?;
        let entry = WriteEntry {
            db: self.db.name.clone(),
            relation: name.to_string(),
            id: meta.id,
            definition: definition_digest(meta),
            replace,
            based_on,
            validate: depends_on_rows,
            partitions: payloads.keys().flatten().copied().collect(),
            batch_rows,
        };
        link.write(Write { entry, payloads }).await
    }

    /// Mark a write a catalog change makes (TRUNCATE, ALTER TABLE's rewrite), committed
    /// here: when the change is applied from a cluster's log, at the change's position.
    pub(crate) fn mark_ddl_write(&self, txn: &mut WriteTxn) {
        if let Some(position) = self.applying {
            txn.at_log_position(position);
        }
    }
}

/// A write's batch records by the partition their rows belong to, and the rows of each of
/// its batches: a partitioned stream's batches are cut by partition, their rows numbered
/// (`Partitioning::cut_statement`); any other relation's records are one group, `None`.
fn by_partition(
    meta: &RelationMeta,
    payloads: Vec<Vec<u8>>,
) -> Result<(PartitionedPayloads, Vec<u64>)> {
    let Some(partitioning) = Partitioning::of(meta)? else {
        return Ok((BTreeMap::from([(None, payloads)]), Vec::new()));
    };
    // One schema for all (the relation's), which the node applying them concatenates.
    let schema = meta.schema();
    let batches = payloads
        .iter()
        .map(|p| adapt_batch(decode_payload(p)?, &schema))
        .collect::<Result<Vec<_>>>()?;
    drop(payloads);
    let cut = partitioning.cut_statement(&batches)?;
    let mut groups = BTreeMap::new();
    for (p, parts) in cut.parts {
        let encoded = parts
            .iter()
            .map(encode_payload)
            .collect::<Result<Vec<_>>>()?;
        groups.insert(Some(p), encoded);
    }
    Ok((groups, cut.batch_rows))
}
