//! Cursors: DECLARE, FETCH (and Brook's FETCH ... WITH TIMEOUT) and CLOSE.

use crate::handler::query::rows_outcome;
use crate::ident::ident_name;
use crate::pg::sql::pg_literals;
use crate::pg::sql::pg_named;
use crate::session::cursor::{backward, no_last_row, Cursor, Step};
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
            } => self.fetch(&name, &direction, timeout, true).await,
            _ => Err(brook_err!(Internal, "FETCH WITH is not a FETCH")),
        }
    }

    /// MOVE: a FETCH that returns no rows; its tag counts the rows it moved over.
    pub(crate) async fn move_cursor(&mut self, fetch: Statement) -> Result<Outcome> {
        match fetch {
            Statement::Fetch {
                name, direction, ..
            } => self.fetch(&name, &direction, None, false).await,
            _ => Err(brook_err!(Internal, "MOVE is not a FETCH")),
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
                    let stream = df.execute_stream().await?;
                    // The rows' own shape (the analyzer may retype a column).
                    let schema = pg_named(stream.schema().as_ref().clone(), names);
                    (schema, stream, None)
                }
            };
            let (hold, in_block) = (d.hold == Some(true), self.block_savepoints());
            let mut cursor = Cursor::new(schema, stream, hold, in_block, continuous.clone());
            if continuous.is_none() {
                cursor.cancel = self.statement_cancel();
            }
            self.cursors.insert(name, cursor);
        }
        Ok(Outcome::Command("DECLARE CURSOR".into()))
    }

    /// FETCH (`keep`) or MOVE (not `keep`: the cursor moves, no rows return; the tag
    /// counts them).
    pub(crate) async fn fetch(
        &mut self,
        name: &Ident,
        direction: &ast::FetchDirection,
        timeout: Option<std::time::Duration>,
        keep: bool,
    ) -> Result<Outcome> {
        let key = ident_name(name);
        let timeout = match timeout {
            Some(t) => t,
            None => parse_timeout(&self.settings.get(FETCH_TIMEOUT).unwrap_or_default())?,
        };
        let now = self.statement_cancel();
        let cursor = self
            .cursors
            .get_mut(&key)
            .ok_or_else(|| BrookError::UndefinedCursor(key.clone()))?;
        if cursor.failed || cursor.fetched_by.as_ref().is_some_and(|t| t.is_cancelled()) {
            cursor.failed = true;
            return Err(brook_err!(ObjectState, "portal \"{key}\" cannot be run"));
        }
        if let Some(now) = now {
            if let Some(plan) = &cursor.cancel {
                plan.replace(now.token());
            }
            cursor.fetched_by = Some(now.token());
        }
        let step = step_of(direction, cursor.position)?;
        if matches!(step, Step::FromEnd(_)) && cursor.continuous.is_some() {
            return Err(no_last_row());
        }
        let wait = cursor.continuous.is_some().then_some(timeout);
        let schema = cursor.schema.clone();
        match cursor.step(step, wait, keep).await {
            Ok((batches, _)) if keep => Ok(rows_outcome(schema, batches, "FETCH")),
            Ok((_, moved)) => Ok(Outcome::Command(format!("MOVE {moved}"))),
            // The query behind the cursor failed (a continuous query past the memory limit,
            // a cycle in a recursive query): the cursor fails, as PostgreSQL's portal does,
            // so a later FETCH says it cannot run (55000) instead of answering an empty
            // result as if the query were alive; CLOSE still closes it.
            Err(e) => {
                if let Some(c) = self.cursors.get_mut(&key) {
                    c.failed = true;
                }
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

/// Where a FETCH or MOVE `direction` goes from row `position`; 55000 for one that goes back.
fn step_of(direction: &ast::FetchDirection, position: usize) -> Result<Step> {
    use ast::FetchDirection as D;
    let back = || Err(backward(&format!("FETCH {direction}")));
    Ok(match direction {
        D::Next | D::Forward { limit: None } => Step::Next(Some(1)),
        D::All | D::ForwardAll => Step::Next(None),
        D::Count { limit } | D::Forward { limit: Some(limit) } => match count(limit)? {
            0 => Step::Current,
            n if n > 0 => Step::Next(Some(n.unsigned_abs() as usize)),
            _ => return back(),
        },
        D::Backward { limit: Some(limit) } if count(limit)? == 0 => Step::Current,
        D::Prior | D::Backward { .. } | D::BackwardAll => return back(),
        D::First => return absolute(1, position).map_or_else(back, Ok),
        D::Last => Step::FromEnd(1),
        D::Absolute { limit } => return absolute(count(limit)?, position).map_or_else(back, Ok),
        D::Relative { limit } => match count(limit)? {
            0 => Step::Current,
            n if n > 0 => Step::Ahead {
                skip: n.unsigned_abs() as usize - 1,
            },
            _ => return back(),
        },
    })
}

/// `ABSOLUTE n` from row `position`: None when row `n` is behind it.
fn absolute(n: i64, position: usize) -> Option<Step> {
    let target = usize::try_from(n).ok();
    match target {
        None => Some(Step::FromEnd(n.unsigned_abs() as usize)),
        Some(t) if t > position => Some(Step::Ahead {
            skip: t - position - 1,
        }),
        // ABSOLUTE 0 before the first row stays there.
        Some(t) if t == position => Some(Step::Current),
        Some(_) => None,
    }
}

/// A FETCH count (signed, as written).
fn count(v: &ast::ValueWithSpan) -> Result<i64> {
    match &v.value {
        ast::Value::Number(n, _) => n
            .parse::<i64>()
            .map_err(|_| brook_err!(Syntax, "invalid FETCH count {n}")),
        other => Err(brook_err!(Syntax, "invalid FETCH count {other}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The step of `FETCH <direction> c` from row `position`, or the SQLSTATE.
    fn step(direction: &str, position: usize) -> std::result::Result<Step, &'static str> {
        let sql = format!("FETCH {direction} FROM c");
        let stmt = brook_planner::parser::parse_one(&sql).unwrap_or_else(|e| panic!("{sql}: {e}"));
        let Some(Statement::Fetch { direction, .. }) = stmt.as_sql() else {
            panic!("{sql} is not a FETCH")
        };
        step_of(direction, position).map_err(|e| e.sqlstate())
    }

    #[test]
    fn forward_directions() {
        assert_eq!(step("NEXT", 0), Ok(Step::Next(Some(1))));
        assert_eq!(step("5", 3), Ok(Step::Next(Some(5))));
        assert_eq!(step("FORWARD ALL", 3), Ok(Step::Next(None)));
        assert_eq!(step("ABSOLUTE 7", 5), Ok(Step::Ahead { skip: 1 }));
        assert_eq!(step("ABSOLUTE 6", 5), Ok(Step::Ahead { skip: 0 }));
        assert_eq!(step("RELATIVE 3", 5), Ok(Step::Ahead { skip: 2 }));
        assert_eq!(step("FIRST", 0), Ok(Step::Ahead { skip: 0 }));
        assert_eq!(step("LAST", 4), Ok(Step::FromEnd(1)));
        assert_eq!(step("ABSOLUTE -2", 4), Ok(Step::FromEnd(2)));
    }

    #[test]
    fn the_current_row_again() {
        assert_eq!(step("RELATIVE 0", 5), Ok(Step::Current));
        assert_eq!(step("0", 5), Ok(Step::Current));
        assert_eq!(step("FORWARD 0", 5), Ok(Step::Current));
        assert_eq!(step("BACKWARD 0", 5), Ok(Step::Current));
        assert_eq!(step("ABSOLUTE 5", 5), Ok(Step::Current));
        assert_eq!(step("FIRST", 1), Ok(Step::Current));
        assert_eq!(step("ABSOLUTE 0", 0), Ok(Step::Current));
    }

    #[test]
    fn going_back_is_55000() {
        for (direction, position) in [
            ("PRIOR", 2),
            ("BACKWARD 1", 2),
            ("BACKWARD ALL", 2),
            ("-1", 2),
            ("RELATIVE -1", 2),
            ("ABSOLUTE 1", 2),
            ("ABSOLUTE 0", 2),
            ("FIRST", 2),
        ] {
            assert_eq!(step(direction, position), Err("55000"), "{direction}");
        }
    }
}
