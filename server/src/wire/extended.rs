//! The extended query protocol: Parse, Bind (parameters in text or binary), Describe and
//! Execute with row limits and suspended portals.

use super::cursor_portals::cursor_portal_changes;
use super::portals::Rerun;
use super::send::{send_copy_body, send_data_rows, send_notices};
use super::simple::{
    end_implicit, is_chain, is_rollback_to_savepoint, is_txn_control, settled_status,
};
use super::statement::{copy_header_lines, execute_on_statement_runtime, rows_tag};
use super::*;
use crate::pg::types::cast_name;
use crate::session::Session;
use crate::wire::rows::field_infos;
use async_trait::async_trait;
use brook_common::{brook_err, BrookError};
use brook_planner::rewrite::{bind_parameters, placeholder_count, BoundParam};
use brook_planner::{BrookStatement, StatementBody};
use futures::{Sink, SinkExt};
use pgwire::api::portal::{Format, Portal};
use pgwire::api::query::ExtendedQueryHandler;
use pgwire::api::results::{
    DescribePortalResponse, DescribeResponse, DescribeStatementResponse, FieldFormat, FieldInfo,
    Response, Tag,
};
use pgwire::api::stmt::{QueryParser, StoredStatement};
use pgwire::api::store::PortalStore;
use pgwire::api::{ClientInfo, ClientPortalStore, PgWireConnectionState, Type};
use pgwire::error::{PgWireError, PgWireResult};
use pgwire::messages::response::TransactionStatus;
use pgwire::messages::PgWireBackendMessage;
use std::fmt::Debug;
use std::sync::Arc;

/// Parses statements for the extended protocol.
#[derive(Debug)]
pub struct BrookParser;

#[async_trait]
impl QueryParser for BrookParser {
    type Statement = Prepared;

    async fn parse_sql<C>(
        &self,
        _client: &C,
        sql: &str,
        types: &[Option<Type>],
    ) -> PgWireResult<Option<Prepared>>
    where
        C: ClientInfo + Unpin + Send + Sync,
    {
        check_query_text(sql).map_err(to_pg)?;
        let mut stmts = brook_planner::parse_sql(sql).map_err(to_pg)?;
        if stmts.len() > 1 {
            return Err(to_pg(brook_err!(
                Syntax,
                "cannot insert multiple commands into a prepared statement"
            )));
        }
        let stmt = stmts.pop();
        let n = stmt.as_ref().map_or(0, statement_placeholders);
        // The protocol counts parameters in 16 bits; a larger `$n` must not size a list.
        if n > MAX_PARAMETERS {
            return Err(to_pg(BrookError::Limit {
                message: format!(
                    "the statement refers to parameter ${n}: at most {MAX_PARAMETERS} parameters are allowed"
                ),
                code: "54023",
            }));
        }
        let params = (0..n.max(types.len()))
            .map(|i| types.get(i).cloned().flatten().unwrap_or(Type::UNKNOWN))
            .collect();
        Ok(Some(Prepared {
            stmt,
            sql: sql.to_string(),
            params,
            schema: None,
        }))
    }

    fn get_parameter_types(&self, stmt: &Prepared) -> PgWireResult<Vec<Type>> {
        Ok(stmt.params.clone())
    }

    fn get_result_schema(
        &self,
        stmt: &Prepared,
        format: Option<&Format>,
    ) -> PgWireResult<Vec<FieldInfo>> {
        Ok(match &stmt.schema {
            Some(s) => field_infos(s, &|i| {
                format.map(|f| f.format_for(i)).unwrap_or(FieldFormat::Text)
            }),
            None => vec![],
        })
    }
}

/// Parameter types of a portal's statement: as declared at Parse, else inferred (needed to
/// decode binary parameters the client sent for types it let the server choose).
pub(super) async fn portal_param_types(
    s: &Session,
    portal: &Portal<Prepared>,
) -> PgWireResult<Vec<Type>> {
    let prepared = &portal.statement.statement;
    let declared: Vec<Type> = (0..prepared.params.len().max(portal.parameter_len()))
        .map(|i| {
            portal
                .statement
                .parameter_types
                .get(i)
                .cloned()
                .flatten()
                .or_else(|| prepared.params.get(i).cloned())
                .unwrap_or(Type::UNKNOWN)
        })
        .collect();
    // A binary value needs its type to be read; a text one only when it is an array the
    // statement tests membership in (`x = ANY($1)`), which would else be one text value.
    let array_parameter = prepared
        .stmt
        .as_ref()
        .is_some_and(brook_planner::parameter_types::has_array_parameter);
    let needs_inference = declared.iter().enumerate().any(|(i, t)| {
        *t == Type::UNKNOWN && (array_parameter || portal.parameter_format.is_binary(i))
    });
    match (&prepared.stmt, needs_inference) {
        (Some(stmt), true) => Ok(s
            .describe_with_params(stmt, &declared)
            .await
            .map_err(to_pg)?
            .0),
        _ => Ok(declared),
    }
}

/// Decode the bound parameters of a portal to PostgreSQL text with their cast types.
pub(super) fn bound_params(
    portal: &Portal<Prepared>,
    types: &[Type],
) -> PgWireResult<Vec<BoundParam>> {
    let declared = &portal.statement.parameter_types;
    let mut out = Vec::with_capacity(portal.parameter_len());
    for i in 0..portal.parameter_len() {
        let ty = declared
            .get(i)
            .cloned()
            .flatten()
            .or_else(|| types.get(i).cloned())
            .unwrap_or(Type::UNKNOWN);
        let raw = portal.parameters.get(i).cloned().flatten();
        let text = match raw {
            None => None,
            Some(bytes) if !portal.parameter_format.is_binary(i) => {
                let text = utf8_param(&bytes).map_err(to_pg)?;
                // A date or time given with a zone (pgjdbc's setDate/setTime): the zone
                // is ignored, as PostgreSQL's input of these types does.
                let as_type = match ty {
                    Type::UNKNOWN => types.get(i).cloned().unwrap_or(Type::UNKNOWN),
                    _ => ty.clone(),
                };
                Some(match as_type {
                    Type::DATE => crate::pg::datetime::without_zone(&text, true).to_string(),
                    Type::TIME => crate::pg::datetime::without_zone(&text, false).to_string(),
                    _ => text,
                })
            }
            Some(bytes) => Some(binary_param_text(&bytes, &ty).map_err(to_pg)?),
        };
        out.push(BoundParam {
            text,
            type_name: cast_name(&ty).map(str::to_string),
        });
    }
    Ok(out)
}

/// A binary-format parameter as PostgreSQL text.
pub(super) fn binary_param_text(b: &[u8], ty: &Type) -> Result<String, BrookError> {
    use postgres_types::FromSql;
    let bad = |e: Box<dyn std::error::Error + Sync + Send>| {
        brook_err!(
            Protocol,
            "incorrect binary data format in bind parameter: {e}"
        )
    };
    Ok(match *ty {
        Type::BOOL => bool::from_sql(ty, b).map_err(bad)?.to_string(),
        Type::INT2 => i16::from_sql(ty, b).map_err(bad)?.to_string(),
        Type::INT4 => i32::from_sql(ty, b).map_err(bad)?.to_string(),
        Type::INT8 => i64::from_sql(ty, b).map_err(bad)?.to_string(),
        Type::OID => u32::from_sql(ty, b).map_err(bad)?.to_string(),
        Type::FLOAT4 => f32::from_sql(ty, b).map_err(bad)?.to_string(),
        Type::FLOAT8 => f64::from_sql(ty, b).map_err(bad)?.to_string(),
        Type::NUMERIC => crate::pg::numeric_binary::read_numeric(b)
            .ok_or_else(|| bad("not a binary numeric".into()))?,
        Type::DATE => chrono::NaiveDate::from_sql(ty, b).map_err(bad)?.to_string(),
        Type::TIMESTAMP => chrono::NaiveDateTime::from_sql(ty, b)
            .map_err(bad)?
            .to_string(),
        // An instant: with its offset, so that a session's zone does not move it.
        Type::TIMESTAMPTZ => format!(
            "{}+00",
            chrono::DateTime::<chrono::Utc>::from_sql(ty, b)
                .map_err(bad)?
                .naive_utc()
        ),
        Type::BYTEA => {
            let mut s = String::from("\\x");
            for x in b {
                s.push_str(&format!("{x:02x}"));
            }
            s
        }
        Type::TIME => chrono::NaiveTime::from_sql(ty, b).map_err(bad)?.to_string(),
        Type::UUID => uuid_text(b)?,
        Type::INTERVAL => interval_text(b)?,
        // The binary form of these is their text (jsonb's after a version byte).
        Type::TEXT
        | Type::VARCHAR
        | Type::BPCHAR
        | Type::NAME
        | Type::UNKNOWN
        | Type::JSON
        | Type::XML => utf8_param(b)?,
        Type::JSONB => match b.split_first() {
            Some((1, text)) => utf8_param(text)?,
            _ => {
                return Err(brook_err!(
                    Protocol,
                    "unsupported jsonb version number in bind parameter"
                ))
            }
        },
        _ if matches!(ty.kind(), postgres_types::Kind::Array(_)) => array_text(b, ty)?,
        // Reading other bytes as text would store garbage: refuse them by name.
        _ => {
            return Err(brook_err!(
                Unsupported,
                "binary parameters of type {} (send it in text format)",
                ty.name()
            ))
        }
    })
}

fn utf8_param(b: &[u8]) -> Result<String, BrookError> {
    String::from_utf8(b.to_vec()).map_err(|_| {
        brook_err!(
            BadEncoding,
            "invalid byte sequence for encoding \"UTF8\" in parameter"
        )
    })
}

/// A binary one-dimensional array as PostgreSQL's array text (`{1,NULL,"a b"}`), each
/// element read as a parameter of the element type is.
fn array_text(b: &[u8], ty: &Type) -> Result<String, BrookError> {
    let postgres_types::Kind::Array(elem) = ty.kind() else {
        return Err(brook_err!(Internal, "{} is not an array type", ty.name()));
    };
    let elements = crate::pg::binary_array::elements(b, elem).map_err(|e| match e {
        crate::pg::binary_array::ArrayError::Layout(what) => brook_err!(
            Protocol,
            "incorrect binary data format in bind parameter: {what}"
        ),
        crate::pg::binary_array::ArrayError::Other(e) => e,
    })?;
    let items = elements
        .into_iter()
        .map(|v| v.map(|v| binary_param_text(v, elem)).transpose())
        .collect::<Result<Vec<_>, _>>()?;
    Ok(brook_planner::array_literal::array_text(&items))
}

/// A binary uuid (16 bytes) in its text form, `8-4-4-4-12` hex digits.
fn uuid_text(b: &[u8]) -> Result<String, BrookError> {
    let bytes = <[u8; 16]>::try_from(b).map_err(|_| {
        brook_err!(
            Protocol,
            "incorrect binary data format in bind parameter: a uuid is 16 bytes, not {}",
            b.len()
        )
    })?;
    Ok(crate::pg::uuid::from_bytes(&bytes))
}

/// A binary interval (microseconds: i64, days: i32, months: i32) as interval text.
fn interval_text(b: &[u8]) -> Result<String, BrookError> {
    let field = |at: usize, n: usize| b.get(at..at + n).filter(|_| b.len() == 16);
    let (Some(us), Some(days), Some(months)) = (field(0, 8), field(8, 4), field(12, 4)) else {
        return Err(brook_err!(
            Protocol,
            "incorrect binary data format in bind parameter: an interval is 16 bytes, not {}",
            b.len()
        ));
    };
    let int = |x: &[u8]| x.iter().fold(0i64, |acc, &d| (acc << 8) | i64::from(d));
    // Two's complement of the 32-bit fields.
    let int32 = |x: &[u8]| int(x) as u32 as i32;
    Ok(format!(
        "{} months {} days {} microseconds",
        int32(months),
        int32(days),
        int(us)
    ))
}

#[async_trait]
impl ExtendedQueryHandler for BrookHandler {
    type Statement = Prepared;
    type QueryParser = BrookParser;

    fn query_parser(&self) -> Arc<BrookParser> {
        self.parser.clone()
    }

    /// Every Execute's row limit is checked before pgwire acts on it: pgwire sizes a buffer
    /// for the whole limit up front, also when it resumes a suspended portal without asking
    /// `do_query`, so an absurd limit allocated tens of gigabytes and aborted the server. A
    /// negative limit means all rows, as in PostgreSQL (pgwire read it as a huge one and
    /// panicked sizing that buffer).
    async fn on_execute<C>(
        &self,
        client: &mut C,
        mut message: pgwire::messages::extendedquery::Execute,
    ) -> PgWireResult<()>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore<Statement = Self::Statement>,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        message.max_rows = message.max_rows.max(0);
        let max_rows = usize::try_from(message.max_rows).unwrap_or(0);
        // A cursor is a portal, read as the cursor is (`cursor_portals.rs`), in pages of its
        // own whatever the limit. (The unnamed portal is never a cursor, whatever pgwire
        // calls it.)
        if let Some(cursor) = message.name.as_deref().filter(|n| !n.is_empty()) {
            if self.is_open_cursor(cursor).await {
                return self.execute_cursor_portal(client, cursor, max_rows).await;
            }
        }
        if max_rows > MAX_EXECUTE_ROWS {
            return Err(to_pg(BrookError::Limit {
                message: format!(
                    "an Execute row limit of {max_rows} is too large: at most {MAX_EXECUTE_ROWS} rows per Execute (0 fetches all rows)"
                ),
                code: "54000",
            }));
        }
        // pgwire keeps a failed transaction failed through any statement, while ROLLBACK
        // TO SAVEPOINT that succeeds lets the block go on (as the simple protocol does).
        let portal = message.name.as_deref().unwrap_or(pgwire::api::DEFAULT_NAME);
        // So does COMMIT/ROLLBACK AND CHAIN of a failed block: the new block is healthy.
        let revives = matches!(
            client.portal_store().get_portal(portal),
            Some(pgwire::api::store::Entry::Value(p))
                if p.statement.statement.stmt.as_ref().is_some_and(|s| is_rollback_to_savepoint(s) || is_chain(s))
        );
        let Some(entry) = client.portal_store().get_portal(portal) else {
            let shown = message.name.as_deref().unwrap_or_default();
            return Err(to_pg(BrookError::UndefinedPortal(shown.to_string())));
        };
        // In a failed block only a statement that ends it runs (25P02), also a portal pgwire
        // resumes without asking `do_query` (it returned its next rows).
        if let pgwire::api::store::Entry::Value(p) = &entry {
            let ends_block = p
                .statement
                .statement
                .stmt
                .as_ref()
                .is_some_and(is_txn_control);
            if client.transaction_status() == TransactionStatus::Error && !ends_block {
                return Err(to_pg(BrookError::InFailedTransaction));
            }
        }
        if let Some(answer) = self.rerun_answer(client, portal) {
            return match answer {
                Rerun::Refused => {
                    // The unnamed portal's name is the empty string, as the client sent it.
                    let shown = message.name.as_deref().unwrap_or_default();
                    Err(to_pg(brook_err!(
                        ObjectState,
                        "portal \"{shown}\" cannot be run"
                    )))
                }
                Rerun::NoMoreRows(command) => {
                    client
                        .send(PgWireBackendMessage::CommandComplete(
                            rows_tag(&command, 0).into(),
                        ))
                        .await?;
                    Ok(())
                }
            };
        }
        // An Execute that resumes a suspended portal is a statement of its own for a cancel
        // and the statement timeout, as in PostgreSQL: pgwire resumes the portal's rows
        // without `do_query`, so the rows' own token is cancelled with this Execute's.
        let resumed = self
            .suspended
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(portal)
            .cloned();
        let link = match resumed {
            Some(rows) => {
                let timeout = self.statement_timeout(client).await?;
                let now = self.cancel.begin_with_timeout(timeout);
                Some(tokio::spawn(async move {
                    now.cancelled().await;
                    rows.cancel();
                }))
            }
            None => None,
        };
        let started = match client.portal_store().get_portal(portal) {
            Some(pgwire::api::store::Entry::Value(p)) if link.is_none() => Some(p),
            _ => None,
        };
        let portal = portal.to_string();
        let executed = self._on_execute(client, message).await;
        if let Some(link) = link {
            link.abort();
            self.cancel.end();
        }
        // A portal that failed may not run again (PostgreSQL's is failed, then dropped with
        // its transaction): an INSERT's portal that failed wrote when executed again.
        if let (Err(_), Some(p)) = (&executed, started) {
            if !self.is_cursor(&portal) {
                self.finished.finish(&portal, p.state(), Rerun::Refused);
            }
        }
        executed?;
        if revives && client.transaction_status() == TransactionStatus::Error {
            client.set_transaction_status(TransactionStatus::Transaction);
        }
        Ok(())
    }

    /// Close of a cursor's portal closes the cursor, as in PostgreSQL (`cursor_portals.rs`).
    async fn on_close<C>(
        &self,
        client: &mut C,
        message: pgwire::messages::extendedquery::Close,
    ) -> PgWireResult<()>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore<Statement = Self::Statement>,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        self.close(client, message).await
    }

    /// ReadyForQuery as pgwire sends it, with the status settled as the simple protocol's
    /// (a COMMIT that failed ended its block).
    async fn on_sync<C>(
        &self,
        client: &mut C,
        _message: pgwire::messages::extendedquery::Sync,
    ) -> PgWireResult<()>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore<Statement = Self::Statement>,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        // pgwire waits for Sync after an error.
        let failed = matches!(client.state(), PgWireConnectionState::AwaitingSync);
        let status = client.transaction_status();
        {
            let mut g = self.session.lock().await;
            if let Some(s) = g.as_mut() {
                // The statements since the last Sync were one implicit transaction.
                end_implicit(client, s, !failed).await?;
                if status == TransactionStatus::Error {
                    client.set_transaction_status(settled_status(status, s));
                }
            }
        }
        // Outside a block the transaction ended, and its portals with it; in a block even
        // the unnamed portal lives on, as in PostgreSQL (a client may read on after Sync).
        if client.transaction_status() == TransactionStatus::Idle {
            self.finished.forget(pgwire::api::DEFAULT_NAME);
            self.transaction_ended(client.portal_store()).await;
        }
        client
            .send(PgWireBackendMessage::ReadyForQuery(
                pgwire::messages::response::ReadyForQuery::new(client.transaction_status()),
            ))
            .await?;
        client.flush().await?;
        self.idle.idle(self.idle_limit().await);
        Ok(())
    }

    async fn do_describe_statement<C>(
        &self,
        client: &mut C,
        target: &StoredStatement<Prepared>,
    ) -> PgWireResult<DescribeStatementResponse>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore<Statement = Prepared>,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let p = &target.statement;
        let Some(stmt) = &p.stmt else {
            return Ok(DescribeStatementResponse::no_data());
        };
        let g = self.session(client).await?;
        let s = g
            .as_ref()
            .ok_or_else(|| to_pg(brook_err!(Internal, "no session")))?;
        let (types, schema) = s
            .describe_with_params(stmt, &p.params)
            .await
            .map_err(to_pg)?;
        let fields = schema
            .map(|sc| field_infos(&sc, &|_| FieldFormat::Text))
            .unwrap_or_default();
        Ok(DescribeStatementResponse::new(types, fields))
    }

    async fn do_describe_portal<C>(
        &self,
        client: &mut C,
        portal: &Portal<Prepared>,
    ) -> PgWireResult<DescribePortalResponse>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore<Statement = Prepared>,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let Some(stmt) = portal.statement.statement.stmt.clone() else {
            return Ok(DescribePortalResponse::no_data());
        };
        let g = self.session(client).await?;
        let s = g
            .as_ref()
            .ok_or_else(|| to_pg(brook_err!(Internal, "no session")))?;
        let types = portal_param_types(s, portal).await?;
        let stmt = bind(stmt, &bound_params(portal, &types)?)?;
        let schema = s.describe(&stmt).await.map_err(to_pg)?;
        Ok(match schema {
            Some(sc) if !sc.fields().is_empty() => {
                DescribePortalResponse::new(field_infos(&sc, &|i| {
                    portal.result_column_format.format_for(i)
                }))
            }
            _ => DescribePortalResponse::no_data(),
        })
    }

    async fn do_query<C>(
        &self,
        client: &mut C,
        portal: &Portal<Prepared>,
        max_rows: usize,
    ) -> PgWireResult<Response>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore<Statement = Prepared>,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let Some(stmt) = portal.statement.statement.stmt.clone() else {
            return Ok(Response::EmptyQuery);
        };
        let _busy = self.idle.busy();
        if client.transaction_status() == TransactionStatus::Error && !is_txn_control(&stmt) {
            return Err(to_pg(BrookError::InFailedTransaction));
        }
        let mut g = self.session(client).await?;
        let s = g
            .as_mut()
            .ok_or_else(|| to_pg(brook_err!(Internal, "no session")))?;
        if client.transaction_status() == TransactionStatus::Error {
            // (Rows that failed while being sent fail the block too.)
            s.block_failed();
        }
        // The statements up to Sync are one transaction (see `crate::handler::implicit`).
        s.begin_implicit(false);
        let types = portal_param_types(s, portal).await?;
        let stmt = bind(stmt, &bound_params(portal, &types)?)?;
        let cursor_portals = cursor_portal_changes(&stmt);
        // A cursor's own portal is read again by each Execute.
        let reads_cursor = self.is_cursor(&portal.name);
        let timeout = s.timeout_setting("statement_timeout").map_err(to_pg)?;
        let token = self.cancel.begin_with_timeout(timeout);
        self.cancel.set_read_only(super::reads_only(&stmt));
        self.activity_active(&portal.statement.statement.sql);
        let (outcome, notices) =
            execute_on_statement_runtime(&mut g, stmt, token.clone(), self.cancel.clone()).await?;
        let changed = self.changed_parameters(client, g.as_ref());
        drop(g);
        send_notices(client, notices).await?;
        for message in changed {
            client.feed(message).await?;
        }
        // A cursor is also a protocol portal of the same name (clients Describe it).
        for (name, query) in cursor_portals {
            match query {
                Some(q) => {
                    self.cursors
                        .lock()
                        .unwrap_or_else(|p| p.into_inner())
                        .insert(name.clone());
                    let prepared = Prepared {
                        stmt: Some(q),
                        sql: format!("FETCH ALL FROM {name}"),
                        params: vec![],
                        schema: None,
                    };
                    let stored = Arc::new(StoredStatement::new(name.clone(), prepared, vec![]));
                    client
                        .portal_store()
                        .put_portal(Arc::new(Portal::new_cursor(name, stored)));
                }
                None => {
                    self.cursors
                        .lock()
                        .unwrap_or_else(|p| p.into_inner())
                        .remove(&name);
                    client.portal_store().rm_portal(&name)
                }
            }
        }
        let fmt = portal.result_column_format.clone();
        // pgwire sends an Execute's rows and COPY data by feeding only (flushing at 8 KiB or
        // at the end), which would hold a continuous query's rows back and never notice a
        // vanished client: without a row limit, send them here, flushing as they come, and
        // leave pgwire the CommandComplete. (With a row limit pgwire flushes at each suspend.)
        let header_lines = copy_header_lines(&outcome);
        let token_for_rows = token.clone();
        let response =
            match Self::respond(outcome, &|i| fmt.format_for(i), token, self.cancel.clone())? {
                Response::CopyOut(r) => {
                    let rows =
                        send_copy_body(client, r, &|| self.client_gone(), header_lines).await?;
                    self.finished
                        .finish(&portal.name, portal.state(), Rerun::Refused);
                    Response::Execution(Tag::new("COPY").with_rows(rows))
                }
                Response::Query(mut q) if max_rows == 0 => {
                    let tag = q.command_tag().to_string();
                    let rows = send_data_rows(client, &mut q, &|| self.client_gone()).await?;
                    if !reads_cursor {
                        let rerun = Rerun::NoMoreRows(tag.clone());
                        self.finished.finish(&portal.name, portal.state(), rerun);
                    }
                    Response::Execution(rows_tag(&tag, rows))
                }
                Response::Query(mut q) => {
                    // pgwire completes a paged portal's tag with the rows of the last page.
                    if q.command_tag() == "INSERT" {
                        q.set_command_tag("INSERT 0");
                    }
                    self.suspended
                        .lock()
                        .unwrap_or_else(|p| p.into_inner())
                        .insert(portal.name.clone(), token_for_rows.clone());
                    Response::Query(q)
                }
                other => {
                    if !reads_cursor {
                        self.finished
                            .finish(&portal.name, portal.state(), Rerun::Refused);
                    }
                    other
                }
            };
        // A portal executed with a row limit streams on through later Executes; the
        // statement timeout covered this one. A COPY FROM STDIN runs on while its data
        // arrives (it ends at CopyDone or CopyFail).
        if !matches!(response, Response::CopyIn(_)) {
            self.cancel.end();
        }
        if matches!(response, Response::TransactionEnd(_)) {
            self.transaction_ended(client.portal_store()).await;
        }
        self.activity_idle(client.transaction_status());
        self.note_response(&response);
        // Idle time starts at ReadyForQuery (Sync), as in PostgreSQL: a client that works
        // between two Executes of a pipeline is not idle. An open COPY FROM STDIN, which
        // holds its table's write lock, waits for its data under the limit at once.
        if matches!(response, Response::CopyIn(_)) {
            self.idle.idle(self.idle_limit().await);
        } else {
            self.idle.idle(None);
        }
        Ok(response)
    }
}

impl BrookHandler {
    /// What an Execute of `portal` answers if that portal already ran to its end (None: run
    /// it). In a failed block the statement's own check answers (25P02).
    fn rerun_answer<C>(&self, client: &mut C, portal: &str) -> Option<Rerun>
    where
        C: ClientInfo + ClientPortalStore,
        C::PortalStore: PortalStore<Statement = Prepared>,
    {
        if client.transaction_status() == TransactionStatus::Error {
            return None;
        }
        match client.portal_store().get_portal(portal) {
            Some(pgwire::api::store::Entry::Value(p)) => self.finished.rerun(portal, &p.state()),
            _ => None,
        }
    }
}

/// How many `$n` parameters a statement takes.
pub(super) fn statement_placeholders(stmt: &BrookStatement) -> usize {
    stmt.as_sql().map_or(0, placeholder_count)
}

pub(super) fn bind(
    mut stmt: BrookStatement,
    params: &[BoundParam],
) -> PgWireResult<BrookStatement> {
    if let StatementBody::Sql(s) = &mut stmt.body {
        bind_parameters(s, params).map_err(to_pg)?;
    }
    Ok(stmt)
}

#[cfg(test)]
mod binary_param_tests {
    use super::*;

    #[test]
    fn binary_parameters_read_as_postgresql_sends_them() {
        let interval: Vec<u8> = [
            5_000_000i64.to_be_bytes().to_vec(),
            (-1i32).to_be_bytes().to_vec(),
            14i32.to_be_bytes().to_vec(),
        ]
        .concat();
        assert_eq!(
            binary_param_text(&interval, &Type::INTERVAL).unwrap(),
            "14 months -1 days 5000000 microseconds"
        );
        let uuid: Vec<u8> = (1..=16).collect();
        assert_eq!(
            binary_param_text(&uuid, &Type::UUID).unwrap(),
            "01020304-0506-0708-090a-0b0c0d0e0f10"
        );
        let time = (10 * 3600 + 30 * 60) as i64 * 1_000_000;
        assert_eq!(
            binary_param_text(&time.to_be_bytes(), &Type::TIME).unwrap(),
            "10:30:00"
        );
        // an instant keeps its offset (a session in another zone reads text without one
        // as local time)
        let noon_2000 = (12 * 3600i64 * 1_000_000).to_be_bytes();
        assert_eq!(
            binary_param_text(&noon_2000, &Type::TIMESTAMPTZ).unwrap(),
            "2000-01-01 12:00:00+00"
        );
        assert_eq!(binary_param_text(b"\x01{}", &Type::JSONB).unwrap(), "{}");
        assert_eq!(
            binary_param_text(b"\x02{}", &Type::JSONB)
                .unwrap_err()
                .sqlstate(),
            "08P01"
        );
        assert_eq!(binary_param_text(b"abc", &Type::JSON).unwrap(), "abc");
        // Bytes of an unknown binary format are never read as text.
        assert_eq!(
            binary_param_text(b"abc", &Type::POINT)
                .unwrap_err()
                .sqlstate(),
            "0A000"
        );
        assert_eq!(
            binary_param_text(&[0; 15], &Type::INTERVAL)
                .unwrap_err()
                .sqlstate(),
            "08P01"
        );
    }
}
