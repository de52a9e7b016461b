//! Cursors: DECLARE, FETCH (and Brook's FETCH ... WITH TIMEOUT) and CLOSE.

use crate::handler::query::rows_outcome;
use crate::ident::ident_name;
use crate::pg::sql::pg_literals;
use crate::pg::sql::pg_named;
use crate::session::cursor::Cursor;
use crate::session::Outcome;
use crate::session::Session;
use crate::settings::parse_timeout;
use crate::settings::FETCH_TIMEOUT;
use brook_common::{brook_err, BrookError, Result};
use brook_planner::continuous::ContinuousOptions;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::sql::sqlparser::ast::{self, Ident, Statement};

impl Session {
    /// `FETCH ... WITH (timeout = ...)`: a FETCH that waits at most the given time for rows.
    pub(crate) async fn fetch_with(
        &mut self,
        fetch: Statement,
        timeout: Option<String>,
    ) -> Result<Outcome> {
        let timeout = match timeout {
            Some(t) => Some(parse_timeout(&t)?),
            None => None,
        };
        match fetch {
            Statement::Fetch {
                name, direction, ..
            } => self.fetch(&name, &direction, timeout).await,
            _ => Err(brook_err!(Internal, "FETCH WITH is not a FETCH")),
        }
    }

    /// CLOSE one cursor (34000 when there is none of that name) or ALL.
    pub(crate) fn close(&mut self, cursor: ast::CloseCursor) -> Result<Outcome> {
        match cursor {
            ast::CloseCursor::All => self.cursors.clear(),
            ast::CloseCursor::Specific { name } => {
                let n = ident_name(&name);
                if self.cursors.remove(&n).is_none() {
                    return Err(BrookError::UndefinedCursor(n));
                }
            }
        }
        Ok(Outcome::Command("CLOSE CURSOR".into()))
    }

    /// DECLARE: a continuous cursor when the query reads a stream (or `force`, for
    /// `EMIT`), else a cursor over a snapshot.
    pub(crate) async fn declare(
        &mut self,
        stmts: Vec<ast::Declare>,
        options: ContinuousOptions,
        force: bool,
    ) -> Result<Outcome> {
        for d in stmts {
            let [name] = d.names.as_slice() else {
                return Err(brook_err!(Syntax, "DECLARE takes one cursor name"));
            };
            let name = ident_name(name);
            let Some(q) = d.for_query else {
                return Err(brook_err!(Syntax, "DECLARE CURSOR needs FOR <query>"));
            };
            if d.scroll == Some(true) {
                return Err(brook_err!(
                    Unsupported,
                    "SCROLL cursors (cursors scan forward only)"
                ));
            }
            if self.cursors.contains_key(&name) {
                return Err(BrookError::DuplicateObject {
                    what: "cursor",
                    name,
                    code: "42P03",
                });
            }
            let mut stmt = Statement::Query(q);
            let names = brook_planner::rewrite::output_names(&stmt);
            pg_literals(&mut stmt)?;
            let plan = self.plan(stmt).await?;
            let (schema, stream, continuous) = match self.continuous(&plan, options, force).await? {
                Some(graph) => {
                    let (schema, stream, stats) =
                        self.start_continuous(graph, names, Some(&name))?;
                    (schema, stream, Some(stats))
                }
                None => {
                    if options.emit_on_window_close {
                        return Err(brook_err!(Unsupported, "EMIT ON WINDOW CLOSE over tables only (it applies to queries over streams)"));
                    }
                    let df = self.ctx.execute_logical_plan(plan).await?;
                    let schema = pg_named(df.schema().as_arrow().clone(), names);
                    (schema, df.execute_stream().await?, None)
                }
            };
            self.cursors.insert(
                name,
                Cursor {
                    schema,
                    stream: std::sync::Mutex::new(stream),
                    pending: None,
                    hold: d.hold == Some(true),
                    in_block: self.block_savepoints(),
                    continuous,
                },
            );
        }
        Ok(Outcome::Command("DECLARE CURSOR".into()))
    }

    pub(crate) async fn fetch(
        &mut self,
        name: &Ident,
        direction: &ast::FetchDirection,
        timeout: Option<std::time::Duration>,
    ) -> Result<Outcome> {
        use ast::FetchDirection as D;
        let count = |v: &ast::ValueWithSpan| -> Result<usize> {
            match &v.value {
                ast::Value::Number(n, _) if n.starts_with('-') => Err(brook_err!(
                    ObjectState,
                    "FETCH {n}: cursors can only scan forward"
                )),
                ast::Value::Number(n, _) => n
                    .parse::<usize>()
                    .map_err(|_| brook_err!(Syntax, "invalid FETCH count {n}")),
                other => Err(brook_err!(Syntax, "invalid FETCH count {other}")),
            }
        };
        let n = match direction {
            D::Count { limit } => Some(count(limit)?),
            D::Next => Some(1),
            D::Forward { limit: Some(l) } => Some(count(l)?),
            D::Forward { limit: None } => Some(1),
            D::All | D::ForwardAll => None,
            other => {
                return Err(brook_err!(
                    ObjectState,
                    "FETCH {other}: cursors can only scan forward"
                ))
            }
        };
        let key = ident_name(name);
        let timeout = match timeout {
            Some(t) => t,
            None => parse_timeout(&self.settings.get(FETCH_TIMEOUT).unwrap_or_default())?,
        };
        let cursor = self
            .cursors
            .get_mut(&key)
            .ok_or_else(|| BrookError::UndefinedCursor(key.clone()))?;
        let wait = cursor.continuous.is_some().then_some(timeout);
        let schema = cursor.schema.clone();
        match cursor.fetch(n, wait).await {
            Ok(batches) => Ok(rows_outcome(schema, batches, "FETCH")),
            // The query behind the cursor failed (a continuous query past the memory limit,
            // a cycle in a recursive query): the cursor closes, as PostgreSQL drops a
            // portal whose execution failed, so a later FETCH says it is gone (34000)
            // instead of answering an empty result as if the query were alive.
            Err(e) => {
                self.cursors.remove(&key);
                Err(e)
            }
        }
    }

    /// The row shape of a FETCH: its cursor's.
    pub(crate) fn describe_fetch(&self, fetch: &Statement) -> Result<Option<SchemaRef>> {
        let Statement::Fetch { name, .. } = fetch else {
            return Err(brook_err!(Internal, "not a FETCH"));
        };
        let key = ident_name(name);
        match self.cursors.get(&key) {
            Some(c) => Ok(Some(c.schema.clone())),
            None => Err(BrookError::UndefinedCursor(key)),
        }
    }
}
