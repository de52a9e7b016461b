//! The system column `tableoid`: the oid of the relation a row comes from. pg_dump selects
//! it from every catalog table it reads (`SELECT c.tableoid, c.oid, ... FROM pg_class c`)
//! to name each object's catalog, and matches it against `pg_description.classoid` to find
//! comments. DataFusion has no hidden columns, so a reference to it is rewritten into the
//! relation's oid: `c.tableoid` with `c` a relation of the same SELECT becomes
//! `'pg_catalog.pg_class'::regclass` (which the catalog rewrites then look up), and a bare
//! `tableoid` does when the SELECT reads exactly one relation (with several, PostgreSQL
//! calls it ambiguous, and so does the planner here: the column is left as written).
//!
//! Queries are rewritten innermost first, so a subquery's own relations take its
//! references; what a subquery leaves (a correlated `outer.tableoid`) the enclosing query
//! resolves.
//!
//! The system catalogs' own oids are PostgreSQL's ([`CATALOG_OIDS`]: pg_class is 1259,
//! pg_namespace 2615, ...): pg_dump finds an object by (catalog oid, object oid) with the
//! catalog oids compiled in, and clients match `pg_description.classoid` against
//! `'pg_class'::regclass`. So `tableoid` of a catalog, and a catalog's name cast to
//! `regclass` (rewritten by [`CatalogRegclass`] before the compatibility crate looks names
//! up in its pg_class, which numbers its tables from 16384), are those numbers.

use crate::decorrelate::parse_expr;
use datafusion::sql::sqlparser::ast::{
    visit_expressions_mut, DataType, Expr, Ident, ObjectName, Query, SelectItem, SetExpr,
    Statement, TableFactor, TableWithJoins, Value, VisitMut, VisitorMut,
};
use datafusion_pg_catalog::sql::rules::SqlStatementRewriteRule;
use std::ops::ControlFlow;

/// The rewrite.
#[derive(Debug)]
pub struct TableOid;

/// The system column's name.
const TABLEOID: &str = "tableoid";

impl SqlStatementRewriteRule for TableOid {
    fn rewrite(&self, mut s: Statement) -> Statement {
        let mut named = false;
        let _ = datafusion::sql::sqlparser::ast::visit_expressions(&s, |e| {
            named |= match e {
                Expr::Identifier(i) => i.value.eq_ignore_ascii_case(TABLEOID),
                Expr::CompoundIdentifier(p) => p
                    .last()
                    .is_some_and(|i| i.value.eq_ignore_ascii_case(TABLEOID)),
                _ => false,
            };
            ControlFlow::<()>::Continue(())
        });
        if !named {
            return s;
        }
        struct Queries;
        impl VisitorMut for Queries {
            type Break = ();
            fn post_visit_query(&mut self, q: &mut Query) -> ControlFlow<()> {
                rewrite_set_expr(&mut q.body);
                ControlFlow::Continue(())
            }
        }
        let _ = s.visit(&mut Queries);
        s
    }
}

fn rewrite_set_expr(body: &mut SetExpr) {
    match body {
        SetExpr::Select(select) => {
            let relations = relations(&select.from);
            if relations.is_empty() {
                return;
            }
            // A selected `tableoid` keeps its name (pg_dump reads the column by it).
            for item in select.projection.iter_mut() {
                if let SelectItem::UnnamedExpr(e) = item {
                    if oid_of(e, &relations).is_some() {
                        *item = SelectItem::ExprWithAlias {
                            expr: e.clone(),
                            alias: Ident::new(TABLEOID),
                        };
                    }
                }
            }
            let _ = visit_expressions_mut(select.as_mut(), |e| {
                if let Some(oid) = oid_of(e, &relations) {
                    *e = oid;
                }
                ControlFlow::<()>::Continue(())
            });
        }
        SetExpr::SetOperation { left, right, .. } => {
            rewrite_set_expr(left);
            rewrite_set_expr(right);
        }
        _ => {}
    }
}

/// The relations a FROM clause reads by name: (the name rows are qualified with, the
/// relation's name).
fn relations(from: &[TableWithJoins]) -> Vec<(String, ObjectName)> {
    let mut out = Vec::new();
    let factors = from
        .iter()
        .flat_map(|t| std::iter::once(&t.relation).chain(t.joins.iter().map(|j| &j.relation)));
    for factor in factors {
        if let TableFactor::Table {
            name,
            alias,
            args: None,
            ..
        } = factor
        {
            let Some(last) = name.0.last().and_then(|p| p.as_ident()) else {
                continue;
            };
            let qualifier = alias
                .as_ref()
                .map_or_else(|| last.value.clone(), |a| a.name.value.clone());
            out.push((qualifier.to_ascii_lowercase(), name.clone()));
        }
    }
    out
}

/// `rel.tableoid` (or a bare `tableoid` over one relation) as that relation's oid.
fn oid_of(e: &Expr, relations: &[(String, ObjectName)]) -> Option<Expr> {
    let name = match e {
        Expr::Identifier(id) if id.value.eq_ignore_ascii_case(TABLEOID) => match relations {
            [(_, name)] => name,
            _ => return None,
        },
        Expr::CompoundIdentifier(parts)
            if parts.len() == 2 && parts[1].value.eq_ignore_ascii_case(TABLEOID) =>
        {
            let qualifier = parts[0].value.to_ascii_lowercase();
            &relations.iter().find(|(q, _)| *q == qualifier)?.1
        }
        _ => return None,
    };
    regclass(name)
}

/// PostgreSQL's oids of its system catalogs (`pg_class.oid` of each, fixed since 8.x).
pub const CATALOG_OIDS: [(&str, u32); 56] = [
    ("pg_aggregate", 2600),
    ("pg_am", 2601),
    ("pg_amop", 2602),
    ("pg_amproc", 2603),
    ("pg_attrdef", 2604),
    ("pg_attribute", 1249),
    ("pg_auth_members", 1261),
    ("pg_authid", 1260),
    ("pg_cast", 2605),
    ("pg_class", 1259),
    ("pg_collation", 3456),
    ("pg_constraint", 2606),
    ("pg_conversion", 2607),
    ("pg_database", 1262),
    ("pg_default_acl", 826),
    ("pg_depend", 2608),
    ("pg_description", 2609),
    ("pg_enum", 3501),
    ("pg_event_trigger", 3466),
    ("pg_extension", 3079),
    ("pg_foreign_data_wrapper", 2328),
    ("pg_foreign_server", 1417),
    ("pg_foreign_table", 3118),
    ("pg_index", 2610),
    ("pg_inherits", 2611),
    ("pg_init_privs", 3394),
    ("pg_language", 2612),
    ("pg_largeobject", 2613),
    ("pg_largeobject_metadata", 2995),
    ("pg_namespace", 2615),
    ("pg_opclass", 2616),
    ("pg_operator", 2617),
    ("pg_opfamily", 2753),
    ("pg_partitioned_table", 3350),
    ("pg_policy", 3256),
    ("pg_proc", 1255),
    ("pg_publication", 6104),
    ("pg_publication_namespace", 6237),
    ("pg_publication_rel", 6106),
    ("pg_range", 3541),
    ("pg_rewrite", 2618),
    ("pg_seclabel", 3596),
    ("pg_sequence", 2224),
    ("pg_shdescription", 2396),
    ("pg_statistic", 2619),
    ("pg_statistic_ext", 3381),
    ("pg_subscription", 6100),
    ("pg_tablespace", 1213),
    ("pg_transform", 3576),
    ("pg_trigger", 2620),
    ("pg_ts_config", 3602),
    ("pg_ts_dict", 3600),
    ("pg_ts_parser", 3601),
    ("pg_ts_template", 3764),
    ("pg_type", 1247),
    ("pg_user_mapping", 1418),
];

/// The oid of system catalog `name` (bare or `pg_catalog.name`).
fn catalog_oid(name: &str) -> Option<u32> {
    let lower = name.to_ascii_lowercase();
    let bare = lower.strip_prefix("pg_catalog.").unwrap_or(&lower);
    CATALOG_OIDS
        .binary_search_by(|(n, _)| n.cmp(&bare))
        .ok()
        .map(|i| CATALOG_OIDS[i].1)
}

/// A system catalog's oid as an expression of the type of pg_catalog's oid columns.
fn oid_literal(oid: u32) -> Option<Expr> {
    parse_expr(&format!("CAST({oid} AS INT)"))
}

/// `'pg_class'::regclass` (or `'pg_catalog.pg_class'`, or `CAST(... AS regclass)`) of a
/// system catalog as its PostgreSQL oid.
#[derive(Debug)]
pub struct CatalogRegclass;

impl SqlStatementRewriteRule for CatalogRegclass {
    fn rewrite(&self, mut s: Statement) -> Statement {
        crate::pg_functions::rewrite_expressions(&mut s, |e| {
            let Some(name) = regclass_literal(e) else {
                return;
            };
            if let Some(oid) = catalog_oid(&name) {
                if let Some(literal) = oid_literal(oid) {
                    *e = literal;
                }
            }
        });
        s
    }
}

/// `'name'::regclass` of a relation other than a system catalog as
/// `brook_regclass_check('name'::regclass, 'name')`: the compatibility crate's lookup the cast
/// becomes answers NULL for a name no relation has, where PostgreSQL's regclass input fails
/// with 42P01. Runs after the rules that read such casts as names (`nextval('s'::regclass)`)
/// and before the crate's lookup; user statements only (catalog queries name what exists).
#[derive(Debug)]
pub struct RegclassChecked;

impl SqlStatementRewriteRule for RegclassChecked {
    fn rewrite(&self, mut s: Statement) -> Statement {
        crate::pg_functions::rewrite_expressions(&mut s, |e| {
            let Some(name) = regclass_literal(e) else {
                return;
            };
            if catalog_oid(&name).is_some() {
                return;
            }
            let checked = format!("{REGCLASS_CHECK}({e}, '{}')", name.replace('\'', "''"));
            if let Some(call) = parse_expr(&checked) {
                *e = call;
            }
        });
        s
    }
}

/// The name of a `'name'::regclass` cast.
fn regclass_literal(e: &Expr) -> Option<String> {
    let Expr::Cast {
        expr, data_type, ..
    } = e
    else {
        return None;
    };
    let is_regclass = match data_type {
        DataType::Regclass => true,
        DataType::Custom(ty, args) => {
            args.is_empty()
                && ty
                    .0
                    .last()
                    .and_then(|p| p.as_ident())
                    .is_some_and(|i| i.value.eq_ignore_ascii_case("regclass"))
        }
        _ => false,
    };
    let Expr::Value(v) = expr.as_ref() else {
        return None;
    };
    match &v.value {
        Value::SingleQuotedString(name) if is_regclass => Some(name.clone()),
        _ => None,
    }
}

/// The function `'name'::regclass` of a user relation is wrapped in: its argument (the oid
/// the name's lookup found), 42P01 "relation ... does not exist" when it is NULL.
pub const REGCLASS_CHECK: &str = "brook_regclass_check";

/// `'name'::regclass`, an unqualified `pg_*` name taken from pg_catalog (where PostgreSQL
/// finds it first); a system catalog's own oid as a number.
fn regclass(name: &ObjectName) -> Option<Expr> {
    let written = name.to_string();
    if let Some(oid) = catalog_oid(&written) {
        return oid_literal(oid);
    }
    let qualified = if name.0.len() == 1 && written.to_ascii_lowercase().starts_with("pg_") {
        format!("pg_catalog.{written}")
    } else {
        written
    };
    parse_expr(&format!("'{}'::regclass", qualified.replace('\'', "''")))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rewritten(sql: &str) -> String {
        crate::rewritten_by(&TableOid, sql)
    }

    #[test]
    fn qualified_and_bare_references_name_their_relation() {
        assert_eq!(
            rewritten("SELECT c.tableoid, c.oid FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace"),
            "SELECT CAST(1259 AS INT) AS tableoid, c.oid FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace"
        );
        assert_eq!(
            rewritten("SELECT tableoid, oid FROM pg_catalog.pg_type"),
            "SELECT CAST(1247 AS INT) AS tableoid, oid FROM pg_catalog.pg_type"
        );
        assert_eq!(
            rewritten("SELECT tableoid FROM public.t"),
            "SELECT 'public.t'::REGCLASS AS tableoid FROM public.t"
        );
    }

    #[test]
    fn a_subquery_resolves_its_own_relations_first() {
        assert_eq!(
            rewritten("SELECT tableoid, (SELECT max(tableoid) FROM pg_proc) FROM pg_type"),
            "SELECT CAST(1247 AS INT) AS tableoid, (SELECT max(CAST(1255 AS INT)) FROM pg_proc) FROM pg_type"
        );
        assert_eq!(
            rewritten("SELECT (SELECT t.tableoid FROM pg_proc p) FROM pg_type t"),
            "SELECT (SELECT CAST(1247 AS INT) FROM pg_proc p) FROM pg_type t"
        );
    }

    #[test]
    fn catalog_oids_are_sorted_for_search() {
        let mut sorted = CATALOG_OIDS;
        sorted.sort_unstable();
        assert_eq!(sorted, CATALOG_OIDS);
    }

    #[test]
    fn a_catalog_cast_to_regclass_is_its_postgresql_oid() {
        assert_eq!(
            crate::rewritten_by(
                &CatalogRegclass,
                "SELECT 'pg_class'::regclass, CAST('pg_catalog.pg_namespace' AS regclass), 't'::regclass"
            ),
            "SELECT CAST(1259 AS INT), CAST(2615 AS INT), 't'::REGCLASS"
        );
    }

    #[test]
    fn a_bare_reference_over_several_relations_stays_ambiguous() {
        let sql = "SELECT tableoid FROM a, b";
        assert_eq!(rewritten(sql), sql);
    }
}
