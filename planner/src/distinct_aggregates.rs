//! `array_agg(DISTINCT x)` in PostgreSQL's order: the distinct values sorted (NULL last),
//! as PostgreSQL's sort-based DISTINCT leaves them. DataFusion's hash-based DISTINCT gives
//! them in no order (`{2,1,3}` where PostgreSQL gives `{1,2,3}`); the rewrite adds the
//! ordering PostgreSQL's result has: `array_agg(DISTINCT x ORDER BY x)`.

use datafusion::sql::sqlparser::ast::{
    DuplicateTreatment, Expr, FunctionArg, FunctionArgExpr, FunctionArgumentClause,
    FunctionArguments, OrderByExpr, OrderByOptions, Statement,
};

/// Every `array_agg(DISTINCT x)` / `string_agg(DISTINCT x, d)` of `stmt` without an ORDER BY
/// of its own, ordered by `x`.
pub fn ordered_distinct_aggregates(stmt: &mut Statement) {
    crate::pg_functions::rewrite_expressions(stmt, |e| {
        let Expr::Function(f) = e else { return };
        let name = f.name.to_string().to_ascii_lowercase();
        if name != "array_agg" && name != "string_agg" {
            return;
        }
        let FunctionArguments::List(list) = &mut f.args else {
            return;
        };
        if list.duplicate_treatment != Some(DuplicateTreatment::Distinct)
            || list
                .clauses
                .iter()
                .any(|c| matches!(c, FunctionArgumentClause::OrderBy(_)))
        {
            return;
        }
        let Some(FunctionArg::Unnamed(FunctionArgExpr::Expr(value))) = list.args.first() else {
            return;
        };
        let order = OrderByExpr {
            expr: value.clone(),
            options: OrderByOptions {
                asc: None,
                nulls_first: None,
            },
            with_fill: None,
        };
        list.clauses
            .push(FunctionArgumentClause::OrderBy(vec![order]));
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rewritten(sql: &str) -> String {
        crate::pg_functions::rewritten_by(sql, ordered_distinct_aggregates)
    }

    #[test]
    fn distinct_values_are_ordered_unless_the_call_orders_them() {
        assert_eq!(
            rewritten("SELECT array_agg(DISTINCT x) FROM t"),
            "SELECT array_agg(DISTINCT x ORDER BY x) FROM t"
        );
        assert_eq!(
            rewritten("SELECT array_agg(DISTINCT x ORDER BY x DESC) FROM t"),
            "SELECT array_agg(DISTINCT x ORDER BY x DESC) FROM t"
        );
        assert_eq!(
            rewritten("SELECT array_agg(x) FROM t"),
            "SELECT array_agg(x) FROM t"
        );
    }
}
