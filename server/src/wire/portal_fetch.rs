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
        let (fetch, keep) = match &stmt.body {
            StatementBody::Move(f) => (f.as_ref(), false),
            StatementBody::Sql(f @ Statement::Fetch { into: None, .. }) => (f, true),
            _ => return None,
        };
        let Statement::Fetch {
            name, direction, ..
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
        let initial = matches!(
            *portal.state().lock().await,
            PortalExecutionState::Initial
        );
        if initial {
            if let Err(e) = self.start_portal(&portal, token).await {
                return Some(Err(e));
            }
        }
        let fetched = match portal.fetch(count).await {
            Ok(f) => f,
            Err(e) => return Some(Err(e)),
        };
        let mut response = fetched.response;
        if keep {
            let rows: Vec<_> = response.data_rows().collect().await;
            let rows = rows.into_iter().collect::<PgWireResult<Vec<_>>>();
            return Some(rows.map(|rows| {
                let schema = response.row_schema();
                let mut q = QueryResponse::new(schema, futures::stream::iter(rows.into_iter().map(Ok)));
                q.set_command_tag("FETCH");
                Response::Query(q)
            }));
        }
        let moved = response.data_rows().count().await;
        Some(Ok(Response::Execution(Tag::new("MOVE").with_rows(moved))))
    }
}

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
        match Self::respond(outcome, &|i| fmt.format_for(i), token.clone(), self.cancel.clone())? {
            Response::Query(q) => {
                portal.start(q).await;
                Ok(())
            }
            _ => Err(to_pg(brook_err!(Internal, "a query answered no rows"))),
        }
    }
}

/// The rows a forward FETCH or MOVE takes (0: all); 0A000 for any other direction.
fn forward_count(direction: &FetchDirection) -> brook_common::Result<usize> {
    let count = |limit: &dyn std::fmt::Display| {
        limit
            .to_string()
            .parse::<usize>()
            .ok()
            .filter(|n| *n > 0)
            .ok_or_else(|| brook_err!(Unsupported, "FETCH {direction} of a protocol portal (only forward)"))
    };
    match direction {
        FetchDirection::Next | FetchDirection::Forward { limit: None } => Ok(1),
        FetchDirection::All | FetchDirection::ForwardAll => Ok(0),
        FetchDirection::Count { limit } | FetchDirection::Forward { limit: Some(limit) } => {
            count(limit)
        }
        other => Err(brook_err!(
            Unsupported,
            "FETCH {other} of a protocol portal (only forward)"
        )),
    }
}
