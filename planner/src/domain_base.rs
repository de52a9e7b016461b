//! A domain's base type found by a recursive walk over `pg_type`, as asyncpg's type lookup
//! asks it:
//!
//! ```sql
//! (WITH RECURSIVE typebases(oid, depth) AS (
//!     SELECT t2.typbasetype, 0 FROM pg_type t2 WHERE t2.oid = t.oid
//!     UNION ALL SELECT t2.typbasetype, tb.depth + 1 FROM pg_type t2, typebases tb WHERE ...)
//!  SELECT oid FROM typebases ORDER BY depth DESC LIMIT 1)
//! ```
//!
//! DataFusion cannot run a recursive query correlated with the outer row ("Physical plan
//! does not support logical expression ScalarSubquery"), so asyncpg could not look up any
//! type it does not know by heart — every array type among them. Brook's domains are
//! pg_catalog's own (`information_schema.cardinal_number`, ...), each over a base type,
//! and `CREATE DOMAIN` is refused: the walk ends after one step, at `t.typbasetype`. The
//! subquery is replaced by that column of the outer row.

use datafusion::sql::sqlparser::ast::{
    BinaryOperator, Expr, Ident, Query, SetExpr, SetOperator, Statement,
};
use datafusion_pg_catalog::sql::rules::SqlStatementRewriteRule;

/// The rewrite.
#[derive(Debug)]
pub struct DomainBase;

impl SqlStatementRewriteRule for DomainBase {
    fn rewrite(&self, mut s: Statement) -> Statement {
        crate::pg_functions::rewrite_expressions(&mut s, |expr| {
            if let Expr::Subquery(q) = expr {
                if let Some(outer) = domain_walk_outer_alias(q) {
                    *expr = Expr::CompoundIdentifier(vec![outer, Ident::new("typbasetype")]);
                }
            }
        });
        s
    }
}

/// The outer row's alias when `q` is the walk: a recursive WITH whose anchor selects
/// `typbasetype` of the pg_type row whose oid equals the outer row's `oid`.
fn domain_walk_outer_alias(q: &Query) -> Option<Ident> {
    let with = q.with.as_ref().filter(|w| w.recursive)?;
    let [cte] = with.cte_tables.as_slice() else {
        return None;
    };
    let SetExpr::SetOperation {
        op: SetOperator::Union,
        left,
        ..
    } = cte.query.body.as_ref()
    else {
        return None;
    };
    let SetExpr::Select(anchor) = left.as_ref() else {
        return None;
    };
    let [from] = anchor.from.as_slice() else {
        return None;
    };
    if !from
        .relation
        .to_string()
        .to_ascii_lowercase()
        .contains("pg_type")
    {
        return None;
    }
    let selects_base = anchor.projection.first().is_some_and(|item| {
        item.to_string()
            .to_ascii_lowercase()
            .contains("typbasetype")
    });
    if !selects_base {
        return None;
    }
    let Some(Expr::BinaryOp {
        left,
        op: BinaryOperator::Eq,
        right,
    }) = &anchor.selection
    else {
        return None;
    };
    let oid_of = |e: &Expr| match e {
        Expr::CompoundIdentifier(parts) if parts.len() == 2 => parts[1]
            .value
            .eq_ignore_ascii_case("oid")
            .then(|| parts[0].clone()),
        _ => None,
    };
    let (inner, outer) = (oid_of(left)?, oid_of(right)?);
    let alias = from.relation.to_string();
    let own = alias.rsplit(' ').next().unwrap_or_default();
    if own.eq_ignore_ascii_case(&inner.value) {
        Some(outer)
    } else if own.eq_ignore_ascii_case(&outer.value) {
        Some(inner)
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rewritten(sql: &str) -> String {
        crate::rewritten_by(&DomainBase, sql)
    }

    #[test]
    fn the_walk_becomes_the_outer_rows_base_type() {
        let out = rewritten(
            "SELECT (CASE WHEN t.typtype = 'd' THEN (WITH RECURSIVE typebases(oid, depth) AS \
             (SELECT t2.typbasetype AS oid, 0 AS depth FROM pg_type t2 WHERE t2.oid = t.oid \
             UNION ALL SELECT t2.typbasetype AS oid, tb.depth + 1 AS depth FROM pg_type t2, \
             typebases tb WHERE tb.oid = t2.oid AND t2.typbasetype <> 0) SELECT oid FROM \
             typebases ORDER BY depth DESC LIMIT 1) ELSE NULL END) AS basetype FROM pg_type t",
        );
        assert_eq!(
            out,
            "SELECT (CASE WHEN t.typtype = 'd' THEN t.typbasetype ELSE NULL END) AS basetype \
             FROM pg_type t"
        );
    }

    #[test]
    fn other_recursive_subqueries_are_left_alone() {
        let sql = "SELECT (WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r \
                   WHERE n < 3) SELECT max(n) FROM r) AS m";
        assert!(!rewritten(sql).contains("typbasetype"));
        assert!(rewritten(sql).contains("WITH RECURSIVE r (n)"));
    }
}
