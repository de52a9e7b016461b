//! SQL `FETCH` and `MOVE` naming a protocol portal that is no cursor, as PostgreSQL allows
//! (a portal and a cursor are the same thing there): asyncpg's `cursor.forward(n)` binds a
//! portal, reads it with Execute, and skips rows with `MOVE FORWARD n "portal"` in a simple
//! query. The rows come from the portal's own stream (pgwire's), so FETCH and Execute
//! share one position.

use super::extended::{bind, bound_params, portal_param_types};
use super::statement::execute_on_statement_runtime;
use super::{to_pg, BrookHandler, Prepared};
use brook_common::brook_err;
use brook_planner::{BrookStatement, StatementBody};
use datafusion::sql::sqlparser::ast::{FetchDirection, Statement};
use futures::StreamExt;
use pgwire::api::portal::{Format, Portal, PortalExecutionState};
use pgwire::api::results::{QueryResponse, Response, Tag};
use pgwire::api::store::{Entry, MemPortalStore, PortalStore};
use pgwire::error::PgWireResult;
use tokio_util::sync::CancellationToken;

impl BrookHandler {
    /// The answer of `stmt` when it is a FETCH or MOVE of a protocol portal of `store`
    /// that is no open cursor; None to run it as any statement.
    pub(super) async fn portal_fetch<P: PortalStore>(
        &self,
        store: &P,
        stmt: &BrookStatement,
        token: &CancellationToken,
    ) -> Option<PgWireResult<Response>> {
        let (fetch, keep): (&Statement, bool) = match &stmt.body {
            StatementBody::Move(f) => (f, false),
            StatementBody::Sql(f) => (f, true),
            _ => return None,
        };
        let Statement::Fetch {
            name,
            direction,
            into: None,
            ..
        } = fetch
        else {
            return None;
        };
        let name = crate::ident::ident_name(name);
        if name.is_empty() || self.is_open_cursor(&name).await {
            return None;
        }
        // (The simple protocol's handler does not name the store's statement type.)
        let store = store.as_any().downcast_ref::<MemPortalStore<Prepared>>()?;
        let Some(Entry::Value(portal)) = store.get_portal(&name) else {
            return None;
        };
        let count = match forward_count(direction) {
            Ok(n) => n,
            Err(e) => return Some(Err(to_pg(e))),
        };
        if keep && !matches!(portal.result_column_format, Format::UnifiedText) {
            return Some(Err(to_pg(brook_err!(
                Unsupported,
                "FETCH of portal \"{name}\", whose rows were bound in binary (read it with Execute)"
            ))));
        }
        let initial = matches!(*portal.state().lock().await, PortalExecutionState::Initial);
        if initial {
            if let Err(e) = self.start_portal(&portal, token).await {
                return Some(Err(e));
            }
        }
        Some(read_portal(&portal, count, keep).await)
    }
}

/// Take up to `count` rows (0: all) of a started portal, in pieces: pgwire's own fetch
/// reserves room for every row asked at once (`MOVE 1000000000` aborted the server
/// reserving 40 GB), and MOVE keeps none of the rows it passes over. FETCH answers its
/// rows, MOVE their count.
async fn read_portal(
    portal: &Portal<Prepared>,
    count: usize,
    keep: bool,
) -> PgWireResult<Response> {
    let mut rows = Vec::new();
    let mut taken = 0;
    let mut schema = None;
    loop {
        let piece = match count {
            0 => PORTAL_PIECE_ROWS,
            n => (n - taken).min(PORTAL_PIECE_ROWS),
        };
        let mut fetched = portal.fetch(piece).await?;
        schema.get_or_insert_with(|| fetched.response.row_schema());
        let data = fetched.response.data_rows();
        while let Some(row) = data.next().await {
            let row = row?;
            taken += 1;
            if keep {
                rows.push(row);
            }
        }
        if !fetched.suspended || (count > 0 && taken >= count) {
            break;
        }
    }
    if !keep {
        return Ok(Response::Execution(Tag::new("MOVE").with_rows(taken)));
    }
    let schema = schema.unwrap_or_default();
    let mut q = QueryResponse::new(schema, futures::stream::iter(rows.into_iter().map(Ok)));
    q.set_command_tag("FETCH");
    Ok(Response::Query(q))
}

/// The rows FETCH and MOVE of a portal take from it at a time.
const PORTAL_PIECE_ROWS: usize = 10_000;

impl BrookHandler {
    /// Run a bound portal's query, as its first Execute would, leaving its rows to be read.
    async fn start_portal(
        &self,
        portal: &Portal<Prepared>,
        token: &CancellationToken,
    ) -> PgWireResult<()> {
        let stmt = portal.statement.statement.stmt.clone();
        let Some(stmt) = stmt.filter(|s| matches!(s.as_sql(), Some(Statement::Query(_)))) else {
            return Err(to_pg(brook_err!(
                Unsupported,
                "FETCH or MOVE of portal \"{}\", which is no query",
                portal.name
            )));
        };
        let mut g = self.session.lock().await;
        let s = g
            .as_mut()
            .ok_or_else(|| to_pg(brook_err!(Internal, "no session")))?;
        let types = portal_param_types(s, portal).await?;
        let stmt = bind(stmt, &bound_params(portal, &types)?)?;
        let (outcome, _) =
            execute_on_statement_runtime(&mut g, stmt, token.clone(), self.cancel.clone()).await?;
        drop(g);
        let fmt = portal.result_column_format.clone();
        match Self::respond(
            outcome,
            &|i| fmt.format_for(i),
            token.clone(),
            self.cancel.clone(),
        )? {
            Response::Query(q) => {
                portal.start(q).await;
                Ok(())
            }
            _ => Err(to_pg(brook_err!(Internal, "a query answered no rows"))),
        }
    }
}

/// The rows a forward FETCH or MOVE takes (0: all); 55000 for one that goes back, as
/// for a cursor (PostgreSQL's protocol portals do not scroll).
fn forward_count(direction: &FetchDirection) -> brook_common::Result<usize> {
    let back = || crate::session::cursor::backward(&format!("FETCH {direction}"));
    match direction {
        FetchDirection::Next | FetchDirection::Forward { limit: None } => Ok(1),
        FetchDirection::All | FetchDirection::ForwardAll => Ok(0),
        FetchDirection::Count { limit } | FetchDirection::Forward { limit: Some(limit) } => {
            match limit.to_string().parse::<i64>() {
                Ok(n) if n > 0 => Ok(n as usize),
                Ok(_) => Err(back()),
                Err(_) => Err(brook_err!(
                    Syntax,
                    "FETCH takes a whole number of rows, not {limit}"
                )),
            }
        }
        _ => Err(back()),
    }
}
