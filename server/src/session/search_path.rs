//! Unqualified relation names found along `search_path`, as PostgreSQL finds them: this
//! session's temporary schema first, then each schema of the path that exists, the first
//! that holds the name winning. A name no schema holds stays in the current schema (the
//! first of the path), where it is created and where its absence is reported.
//!
//! DataFusion knows one default schema, so before it plans a statement
//! [`Session::qualify_relations`] writes each name found in another schema with that
//! schema. A view's query is kept as text and planned later against the database, whose
//! default schema is `public` (`Engine::view_provider`): its names are written with their
//! schema whenever that is not `public`, so the view reads what it read when it was made
//! whatever the `search_path` of its readers, and after a restart.
//!
//! `"$user"` is skipped (as `SET search_path` skips it for the current schema), and so is
//! `pg_catalog`, whose tables DataFusion finds itself.

use crate::catalog::DEFAULT_SCHEMA;
use crate::session::Session;
use brook_common::{BrookError, Result};
use datafusion::sql::sqlparser::ast::{
    Expr, FunctionArg, FunctionArgExpr, Ident, ObjectName, ObjectNamePart, Query, Statement,
    TableAlias, TableFactor, VisitMut, VisitorMut,
};
use std::collections::HashSet;
use std::ops::ControlFlow;

impl Session {
    /// The schemas an unqualified relation name is looked up in, in order.
    fn lookup_path(&self) -> Vec<String> {
        let mut path = Vec::new();
        if self.has_temp_schema {
            path.push(self.temp_schema_name());
        }
        let listed = self.settings.get("search_path").unwrap_or_default();
        let doc = self.engine.catalog.read();
        let Ok(db) = doc.database(&self.db.name) else {
            return path;
        };
        for s in path_names(&listed) {
            let skipped = matches!(s.as_str(), "" | "$user" | "pg_catalog" | "pg_temp");
            if !skipped && db.schemas.contains_key(&s) && !path.contains(&s) {
                path.push(s);
            }
        }
        path
    }

    /// The schema of the first relation, sequence or index named `rel` along the path.
    pub(crate) fn schema_of(&self, rel: &str) -> Option<String> {
        let path = self.lookup_path();
        let doc = self.engine.catalog.read();
        let db = doc.database(&self.db.name).ok()?;
        path.into_iter()
            .find(|s| db.schemas.get(s).is_some_and(|m| m.name_taken(rel)))
    }

    /// Qualify the relation names of `stmt` that DataFusion will look up (see the module's
    /// comment): a bare name found in a schema other than the current one gets that
    /// schema (in a view's query, any schema but `public`), `pg_temp.x` this session's
    /// temporary schema; another session's temporary schema is 0A000. Names a statement
    /// creates, drops or alters are resolved by [`Session::resolve`] instead, so only
    /// queries are rewritten in them.
    pub(crate) fn qualify_relations(&self, stmt: &mut Statement) -> Result<()> {
        match stmt {
            Statement::CreateTable(ct) => match ct.query.as_mut() {
                Some(q) => self.qualify(q.as_mut(), false),
                None => Ok(()),
            },
            Statement::CreateView(cv) => self.qualify(cv.query.as_mut(), true),
            Statement::Drop { .. }
            | Statement::AlterTable(_)
            | Statement::Truncate(_)
            | Statement::CreateIndex(_)
            | Statement::Comment { .. } => Ok(()),
            other => self.qualify(other, false),
        }
    }

    fn qualify<V: VisitMut>(&self, node: &mut V, for_view: bool) -> Result<()> {
        let current = self.current_schema();
        // Only a path beyond the current schema (or a view's query outside `public`) has
        // bare names to qualify.
        let bare_names = self
            .lookup_path()
            .iter()
            .any(|s| *s != current || (for_view && s != DEFAULT_SCHEMA));
        for_each_relation(node, |name, place| {
            let parts = object_parts(name);
            let read_in_public = for_view || matches!(place, Place::CountWindow);
            match parts.as_slice() {
                [rel] if bare_names || matches!(place, Place::CountWindow) => {
                    let Some(s) = self.schema_of(rel) else {
                        return Ok(());
                    };
                    if s == current && !(read_in_public && s != DEFAULT_SCHEMA) {
                        return Ok(());
                    }
                    // Columns qualified by the name as written still find the relation.
                    if let (Place::FromItem(slot @ None), Some(written)) =
                        (place, name.0[0].as_ident())
                    {
                        *slot = Some(TableAlias {
                            explicit: true,
                            name: written.clone(),
                            columns: vec![],
                            at: None,
                        });
                    }
                    *name = qualified(&s, rel);
                }
                [schema, rel] => {
                    let s = self.schema_named(schema)?;
                    if s != *schema {
                        *name = qualified(&s, rel);
                    }
                }
                _ => {}
            }
            Ok(())
        })
    }

    /// The existing relations a query names, as (schema, name): not a CTE's name in
    /// scope, and a window function's input too.
    pub(crate) fn relations_read(&self, q: &Query) -> Vec<(String, String)> {
        let mut out = Vec::new();
        let mut q = q.clone();
        let _ = for_each_relation(&mut q, |name, _| {
            if let Ok((schema, rel)) = self.resolve(name) {
                if self.relation(&schema, &rel).is_ok()
                    && !out.contains(&(schema.clone(), rel.clone()))
                {
                    out.push((schema, rel));
                }
            }
            Ok(())
        });
        out
    }
}

/// The schema names of a `search_path` value (`a, "My Schema"`): separated by commas
/// outside double quotes; a quoted name as written (`""` a quote), another in lower case.
pub(crate) fn path_names(list: &str) -> Vec<String> {
    let mut names = Vec::new();
    let mut chars = list.chars().peekable();
    loop {
        while chars.next_if(|c| c.is_whitespace()).is_some() {}
        let mut name = String::new();
        if chars.next_if_eq(&'"').is_some() {
            while let Some(c) = chars.next() {
                match c {
                    '"' if chars.next_if_eq(&'"').is_some() => name.push('"'),
                    '"' => break,
                    c => name.push(c),
                }
            }
            while chars.next_if(|c| *c != ',').is_some() {}
        } else {
            while let Some(c) = chars.next_if(|c| *c != ',') {
                name.push(c);
            }
            name = name.trim_end().to_lowercase();
        }
        names.push(name);
        if chars.next().is_none() {
            return names;
        }
    }
}

/// One element of `SET search_path = ...` as the setting keeps it: a bare name in lower
/// case, a quoted one or a string quoted where SQL needs it.
pub(crate) fn path_element(e: &Expr) -> String {
    match e {
        Expr::Identifier(i) if i.quote_style.is_none() => i.value.to_lowercase(),
        Expr::Identifier(i) => crate::ident::quote_if_needed(&i.value),
        Expr::Value(v) => match &v.value {
            datafusion::sql::sqlparser::ast::Value::SingleQuotedString(s) => {
                crate::ident::quote_if_needed(s)
            }
            other => other.to_string(),
        },
        other => other.to_string(),
    }
}

fn object_parts(name: &ObjectName) -> Vec<String> {
    name.0
        .iter()
        .filter_map(|p| p.as_ident().map(crate::ident::ident_name))
        .collect()
}

/// Where a relation name was found (what qualifying it must keep).
enum Place<'a> {
    /// A FROM item, with its alias.
    FromItem(&'a mut Option<TableAlias>),
    /// A count window's input (`TUMBLE_ROWS(t, ...)`), which Brook looks up in `public`
    /// when unqualified, whatever the current schema.
    CountWindow,
    /// Any other (an INSERT's table, a time window's input).
    Other,
}

/// Call `f` with each relation name of `node` that names a relation: not a table
/// function's name, nor a CTE's in scope (a CTE's own body does not see it unless its
/// WITH is RECURSIVE; an earlier CTE of the same WITH it does), and with a window
/// function's input (`TUMBLE(t, ...)`). A FROM item's alias comes with its name.
fn for_each_relation<V, F>(node: &mut V, f: F) -> Result<()>
where
    V: VisitMut,
    F: FnMut(&mut ObjectName, Place<'_>) -> Result<()>,
{
    let mut walk = Relations {
        scopes: vec![],
        name_seen: false,
        f,
    };
    match VisitMut::visit(node, &mut walk) {
        ControlFlow::Break(e) => Err(e),
        ControlFlow::Continue(()) => Ok(()),
    }
}

struct Relations<F> {
    /// The CTE names in scope, innermost WITH last.
    scopes: Vec<HashSet<String>>,
    /// The next relation name visited is the table factor's just seen.
    name_seen: bool,
    f: F,
}

impl<F> Relations<F>
where
    F: FnMut(&mut ObjectName, Place<'_>) -> Result<()>,
{
    fn is_cte(&self, name: &ObjectName) -> bool {
        match object_parts(name).as_slice() {
            [one] => self.scopes.iter().any(|s| s.contains(one)),
            _ => false,
        }
    }

    fn name(&mut self, name: &mut ObjectName, place: Place<'_>) -> ControlFlow<BrookError> {
        if self.is_cte(name) {
            return ControlFlow::Continue(());
        }
        match (self.f)(name, place) {
            Ok(()) => ControlFlow::Continue(()),
            Err(e) => ControlFlow::Break(e),
        }
    }
}

impl<F> VisitorMut for Relations<F>
where
    F: FnMut(&mut ObjectName, Place<'_>) -> Result<()>,
{
    type Break = BrookError;

    fn pre_visit_query(&mut self, q: &mut Query) -> ControlFlow<BrookError> {
        let Some(with) = q.with.as_mut() else {
            return ControlFlow::Continue(());
        };
        let names: Vec<String> = (with.cte_tables.iter())
            .map(|c| crate::ident::ident_name(&c.alias.name))
            .collect();
        // Each CTE's body first, with the names it sees. (The visit that follows goes
        // through the bodies again with every name in scope: it only skips more names.)
        for (i, cte) in with.cte_tables.iter_mut().enumerate() {
            let seen = if with.recursive {
                &names[..]
            } else {
                &names[..i]
            };
            self.scopes.push(seen.iter().cloned().collect());
            let flow = VisitMut::visit(cte.query.as_mut(), self);
            self.scopes.pop();
            flow?;
        }
        self.scopes.push(names.into_iter().collect());
        ControlFlow::Continue(())
    }

    fn post_visit_query(&mut self, q: &mut Query) -> ControlFlow<BrookError> {
        if q.with.is_some() {
            self.scopes.pop();
        }
        ControlFlow::Continue(())
    }

    fn pre_visit_table_factor(&mut self, tf: &mut TableFactor) -> ControlFlow<BrookError> {
        let TableFactor::Table {
            name, args, alias, ..
        } = tf
        else {
            return ControlFlow::Continue(());
        };
        self.name_seen = true;
        let Some(args) = args else {
            return self.name(name, Place::FromItem(alias));
        };
        // A table function's name is no relation, but a window function's input is one.
        let func = name.to_string().to_ascii_lowercase();
        if !brook_planner::windows::is_window_function(&func) {
            return ControlFlow::Continue(());
        }
        if let Some(FunctionArg::Unnamed(FunctionArgExpr::Expr(e))) = args.args.first_mut() {
            let mut input = match e {
                Expr::Identifier(i) => ObjectName::from(vec![i.clone()]),
                Expr::CompoundIdentifier(parts) => ObjectName::from(parts.clone()),
                _ => return ControlFlow::Continue(()),
            };
            let count_window = matches!(func.as_str(), "tumble_rows" | "hop_rows");
            let place = if count_window {
                Place::CountWindow
            } else {
                Place::Other
            };
            self.name(&mut input, place)?;
            let parts: Vec<Ident> = input
                .0
                .iter()
                .filter_map(|p| p.as_ident().cloned())
                .collect();
            *e = match parts.as_slice() {
                [one] => Expr::Identifier(one.clone()),
                _ => Expr::CompoundIdentifier(parts),
            };
        }
        ControlFlow::Continue(())
    }

    fn pre_visit_relation(&mut self, name: &mut ObjectName) -> ControlFlow<BrookError> {
        // A table factor's name was seen with the factor.
        if std::mem::take(&mut self.name_seen) {
            return ControlFlow::Continue(());
        }
        self.name(name, Place::Other)
    }
}

/// `schema.rel`, each quoted only where SQL needs it (a view's text shows it so).
fn qualified(schema: &str, rel: &str) -> ObjectName {
    let part = |name: &str| {
        let ident = if crate::ident::quote_if_needed(name) == name {
            Ident::new(name)
        } else {
            Ident::with_quote('"', name)
        };
        ObjectNamePart::Identifier(ident)
    };
    ObjectName(vec![part(schema), part(rel)])
}

#[cfg(test)]
mod tests {
    use super::path_names;

    #[test]
    fn search_path_values_split_as_postgresql_reads_them() {
        let cases: &[(&str, &[&str])] = &[
            ("public", &["public"]),
            ("\"$user\", public", &["$user", "public"]),
            ("S, Public", &["s", "public"]),
            ("\"My Schema\", b", &["My Schema", "b"]),
            ("\"x,y\"", &["x,y"]),
            ("\"q\"\"s\"", &["q\"s"]),
            ("", &[""]),
        ];
        for (list, want) in cases {
            assert_eq!(path_names(list), *want, "{list}");
        }
    }
}
