//! A cursor is also a protocol portal of the same name (DECLARE makes it, CLOSE and the
//! end of the cursor remove it), so clients may Describe it and read it with Execute, as
//! PostgreSQL allows. An Execute of it is a FETCH of the cursor, run here rather than by
//! pgwire's portal: pgwire would take every remaining row into its own buffer at the first
//! Execute with a row limit (a SQL `FETCH` then found none, and a 3M-row cursor held
//! 330 MB), and would end the portal when a page came out exactly full. As in PostgreSQL,
//! a full page ends with PortalSuspended, the last with `SELECT n`.

use super::{BrookHandler, Prepared};
use brook_planner::BrookStatement;
use futures::{Sink, SinkExt};
use pgwire::api::portal::Portal;
use pgwire::api::query::ExtendedQueryHandler;
use pgwire::api::results::Response;
use pgwire::api::stmt::StoredStatement;
use pgwire::api::store::PortalStore;
use pgwire::api::{ClientInfo, ClientPortalStore};
use pgwire::error::{PgWireError, PgWireResult};
use pgwire::messages::extendedquery::PortalSuspended;
use pgwire::messages::response::CommandComplete;
use pgwire::messages::PgWireBackendMessage;
use std::fmt::Debug;
use std::sync::Arc;

/// The rows an Execute of a snapshot cursor's portal fetches at a time.
const CURSOR_PAGE_ROWS: usize = 10_000;

impl BrookHandler {
    /// Whether `name` is a cursor's own portal.
    pub(super) fn is_cursor(&self, name: &str) -> bool {
        self.cursors
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .contains(name)
    }

    /// The transaction ended: its portals go, as PostgreSQL drops them, but the portals of
    /// the cursors still open (Brook's cursors may outlive transactions). A half-read
    /// query's portal read on after COMMIT or ROLLBACK, and portals nobody closed piled up
    /// (20,000 half-read ones held 3.5 GB; a cursor's portal, 0.5 MB per transaction).
    pub(super) async fn transaction_ended<P: PortalStore>(&self, store: &P) {
        let open: std::collections::HashSet<String> = match self.session.lock().await.as_ref() {
            Some(s) => s.cursors.keys().cloned().collect(),
            None => Default::default(),
        };
        let cursors = {
            let mut cursors = self.cursors.lock().unwrap_or_else(|p| p.into_inner());
            cursors.retain(|name| open.contains(name));
            cursors.clone()
        };
        let kept: Vec<_> = cursors
            .iter()
            .filter_map(|name| match store.get_portal(name) {
                Some(pgwire::api::store::Entry::Value(p)) => Some(p),
                _ => None,
            })
            .collect();
        store.clear_portals();
        for p in kept {
            store.put_portal(p);
        }
        self.suspended
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .retain(|name, _| cursors.contains(name));
    }

    /// Whether `name` is a cursor of the session, declared by either protocol.
    pub(super) async fn is_open_cursor(&self, name: &str) -> bool {
        if self.is_cursor(name) {
            return true;
        }
        let session = self.session.lock().await;
        session
            .as_ref()
            .is_some_and(|s| s.cursors.contains_key(name))
    }

    /// A protocol Close: as pgwire's, and of a cursor's portal, of the cursor too.
    pub(super) async fn close<C>(
        &self,
        client: &mut C,
        message: pgwire::messages::extendedquery::Close,
    ) -> PgWireResult<()>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore<Statement = Prepared>,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        use pgwire::messages::extendedquery::{
            CloseComplete, TARGET_TYPE_BYTE_PORTAL, TARGET_TYPE_BYTE_STATEMENT,
        };
        let name = message.name.as_deref().unwrap_or(pgwire::api::DEFAULT_NAME);
        let named = message.name.as_deref().is_some_and(|n| !n.is_empty());
        match message.target_type {
            TARGET_TYPE_BYTE_STATEMENT => client.portal_store().rm_statement(name),
            TARGET_TYPE_BYTE_PORTAL => {
                if named && self.is_open_cursor(name).await {
                    self.close_cursor_portal(client, name).await?;
                }
                client.portal_store().rm_portal(name)
            }
            _ => {}
        }
        client
            .send(PgWireBackendMessage::CloseComplete(CloseComplete::new()))
            .await?;
        Ok(())
    }

    /// A protocol Close of cursor `name`'s portal: `CLOSE name`, and its portal is
    /// forgotten.
    pub(super) async fn close_cursor_portal<C>(
        &self,
        client: &mut C,
        name: &str,
    ) -> PgWireResult<()>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore<Statement = Prepared>,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        use datafusion::sql::sqlparser::ast::{CloseCursor, Ident, Statement as S};
        self.cursors
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(name);
        // In a failed block no statement runs: the cursor is closed as CLOSE would.
        if client.transaction_status() == pgwire::messages::response::TransactionStatus::Error {
            if let Some(s) = self.session.lock().await.as_mut() {
                s.cursors.remove(name);
            }
            return Ok(());
        }
        let close = S::Close {
            cursor: CloseCursor::Specific {
                name: Ident::with_quote('"', name),
            },
        };
        let page = cursor_portal(name, close, format!("CLOSE {name}"));
        ExtendedQueryHandler::do_query(self, client, &page, 0).await?;
        Ok(())
    }

    /// `FETCH FORWARD want` (None: ALL) of cursor `name`, its rows sent: how many there were.
    async fn fetch_page<C>(
        &self,
        client: &mut C,
        name: &str,
        want: Option<usize>,
    ) -> PgWireResult<usize>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore<Statement = Prepared>,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        use datafusion::sql::sqlparser::ast::{
            FetchDirection, FetchPosition, Ident, Statement as S, Value,
        };
        let direction = match want {
            None => FetchDirection::All,
            Some(n) => FetchDirection::Forward {
                limit: Some(Value::Number(n.to_string(), false).into()),
            },
        };
        let shown = want.map_or("ALL".to_string(), |n| n.to_string());
        let fetch = S::Fetch {
            name: Ident::with_quote('"', name),
            direction,
            position: FetchPosition::From,
            into: None,
        };
        let page = cursor_portal(name, fetch, format!("FETCH FORWARD {shown} FROM {name}"));
        // Without a row limit `do_query` sends the rows itself and answers their count.
        Ok(
            match ExtendedQueryHandler::do_query(self, client, &page, 0).await? {
                Response::Execution(tag) => {
                    let tag: CommandComplete = tag.into();
                    let count = tag.tag.rsplit(' ').next().and_then(|n| n.parse().ok());
                    count.unwrap_or(0)
                }
                _ => 0,
            },
        )
    }

    /// An Execute of cursor `name`'s portal: `FETCH FORWARD max_rows` (all rows for 0)
    /// of the cursor, its rows sent, then PortalSuspended when the page is full.
    pub(super) async fn execute_cursor_portal<C>(
        &self,
        client: &mut C,
        name: &str,
        max_rows: usize,
    ) -> PgWireResult<()>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore<Statement = Prepared>,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        // A cursor over a snapshot is read in pages, so neither an Execute without a limit
        // nor one with a large limit holds all its rows at once (a FETCH collects its rows
        // before sending them). A continuous cursor is read with one FETCH: it answers
        // what has arrived (pages would follow a steady producer for ever).
        let continuous = {
            let session = self.session.lock().await;
            (session.as_ref())
                .and_then(|s| s.cursors.get(name))
                .is_some_and(|c| c.continuous.is_some())
        };
        let mut rows = 0;
        loop {
            let want = if max_rows == 0 {
                (!continuous).then_some(CURSOR_PAGE_ROWS)
            } else {
                let left = max_rows.saturating_sub(rows);
                Some(if continuous {
                    left
                } else {
                    left.min(CURSOR_PAGE_ROWS)
                })
            };
            let got = self.fetch_page(client, name, want).await?;
            rows += got;
            let page_full = want.is_some_and(|w| got == w);
            if continuous || !page_full || (max_rows > 0 && rows >= max_rows) {
                break;
            }
        }
        if max_rows > 0 && rows == max_rows {
            client
                .send(PgWireBackendMessage::PortalSuspended(PortalSuspended::new()))
                .await?;
        } else {
            let tag = pgwire::api::results::Tag::new("SELECT").with_rows(rows);
            client
                .send(PgWireBackendMessage::CommandComplete(tag.into()))
                .await?;
        }
        Ok(())
    }
}

/// A portal named as cursor `name` running `stmt` (`sql`, its text for activity views).
fn cursor_portal(
    name: &str,
    stmt: datafusion::sql::sqlparser::ast::Statement,
    sql: String,
) -> Portal<Prepared> {
    let prepared = Prepared {
        stmt: Some(BrookStatement::sql(stmt)),
        sql,
        params: vec![],
        schema: None,
    };
    let stored = Arc::new(StoredStatement::new(name.to_string(), prepared, vec![]));
    Portal::new_cursor(name.to_string(), stored)
}

/// Portals to add (DECLARE: name and query) or remove (CLOSE: name, None) for a statement.
pub(super) fn cursor_portal_changes(
    stmt: &BrookStatement,
) -> Vec<(String, Option<BrookStatement>)> {
    use datafusion::sql::sqlparser::ast::{CloseCursor, Statement as S};
    let Some(s) = stmt.as_sql() else {
        return vec![];
    };
    match s {
        // Executing or describing the portal reads the cursor, as `FETCH ALL` does (a
        // continuous cursor's rows carry its change kind, which its query's plan lacks).
        S::Declare { stmts } => stmts
            .iter()
            .filter_map(|d| {
                let ident = d.names.first()?.clone();
                let name = crate::ident::ident_name(&ident);
                let fetch = S::Fetch {
                    name: ident,
                    direction: datafusion::sql::sqlparser::ast::FetchDirection::All,
                    position: datafusion::sql::sqlparser::ast::FetchPosition::From,
                    into: None,
                };
                Some((name, Some(BrookStatement::sql(fetch))))
            })
            .collect(),
        S::Close {
            cursor: CloseCursor::Specific { name },
        } => vec![(crate::ident::ident_name(name), None)],
        _ => vec![],
    }
}
