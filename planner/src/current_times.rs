//! SQL's current-time functions with a precision, and the local ones: `current_timestamp(p)`,
//! `current_time(p)`, `localtimestamp [(p)]` and `localtime [(p)]`, as PostgreSQL has them.
//!
//! DataFusion's `now()` takes no precision (`current_timestamp(0)` was 42883) and has no
//! `localtimestamp` or `localtime` (42703). `localtimestamp` is the session's wall clock,
//! `now()` as a timestamp without time zone (the session's zone applies to that cast);
//! `localtime` its time of day; a precision rounds as a cast to `timestamp(p)` does
//! (`time_precision`). PostgreSQL's `current_time` is a `time with time zone`, which Brook
//! has not: it stays DataFusion's time of day in UTC.

use crate::pg_functions::{function_call, time_cast_of};
use crate::time_precision::{MAX_PRECISION, TIME_PRECISION};
use datafusion::sql::sqlparser::ast::{
    visit_expressions_mut, CastKind, DataType, Expr, FunctionArg, FunctionArgExpr,
    FunctionArguments, Statement, TimezoneInfo, Value,
};
use datafusion_pg_catalog::sql::rules::SqlStatementRewriteRule;
use std::ops::ControlFlow;

/// Rewrite rule: see the module's comment.
#[derive(Debug)]
pub struct CurrentTimes;

impl SqlStatementRewriteRule for CurrentTimes {
    fn rewrite(&self, mut s: Statement) -> Statement {
        let _ = visit_expressions_mut(&mut s, |e| {
            if let Some(call) = current_time_call(e) {
                *e = call;
            }
            ControlFlow::<()>::Continue(())
        });
        s
    }
}

/// What `e` becomes when it is one of the functions, written as a word or called with a
/// precision.
fn current_time_call(e: &Expr) -> Option<Expr> {
    let (word, precision) = match e {
        Expr::Identifier(i) if i.quote_style.is_none() => (i.value.to_ascii_lowercase(), None),
        Expr::Function(f) if f.over.is_none() && f.filter.is_none() => {
            let [part] = f.name.0.as_slice() else {
                return None;
            };
            let word = part.as_ident()?.value.to_ascii_lowercase();
            match &f.args {
                FunctionArguments::None => (word, None),
                FunctionArguments::List(list) => match list.args.as_slice() {
                    [FunctionArg::Unnamed(FunctionArgExpr::Expr(Expr::Value(v)))] => {
                        match &v.value {
                            Value::Number(n, _) => (word, Some(n.parse::<u64>().ok()?)),
                            _ => return None,
                        }
                    }
                    _ => return None,
                },
                FunctionArguments::Subquery(_) => return None,
            }
        }
        _ => return None,
    };
    let now = || function_call("now", vec![]);
    let wall_clock = || Expr::Cast {
        kind: CastKind::Cast,
        expr: Box::new(now()),
        data_type: DataType::Timestamp(None, TimezoneInfo::None),
        array: false,
        format: None,
    };
    let value = match (word.as_str(), precision) {
        ("localtimestamp", _) => wall_clock(),
        ("localtime", _) => time_cast_of(wall_clock()),
        ("current_timestamp", Some(_)) => now(),
        // Also without a precision: DataFusion's is of nanoseconds, which a time of
        // microseconds (a column, a literal) does not compare with.
        ("current_time", _) => function_call("current_time", vec![]),
        _ => return None,
    };
    // Microseconds, as PostgreSQL's values (DataFusion's `now()` has nanoseconds).
    let p = precision.unwrap_or(MAX_PRECISION);
    // The function's name rides along as a third argument: the result column is named
    // after it, as PostgreSQL names it (`output_names`).
    Some(function_call(
        TIME_PRECISION,
        vec![
            value,
            Expr::value(Value::Number(p.min(MAX_PRECISION).to_string(), false)),
            Expr::value(Value::SingleQuotedString(word)),
        ],
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rewritten(sql: &str) -> String {
        crate::test_support::rewritten(&CurrentTimes, sql)
    }

    #[test]
    fn local_times_and_precisions_become_calls() {
        assert_eq!(
            rewritten("SELECT localtimestamp, LOCALTIME, current_timestamp(0), localtimestamp(2)"),
            "SELECT brook_time_precision(CAST(now() AS TIMESTAMP), 6, 'localtimestamp'), \
             brook_time_precision(arrow_cast(CAST(now() AS TIMESTAMP), \
             'Time64(Microsecond)'), 6, 'localtime'), \
             brook_time_precision(now(), 0, 'current_timestamp'), \
             brook_time_precision(CAST(now() AS TIMESTAMP), 2, 'localtimestamp')"
        );
        assert_eq!(
            rewritten("SELECT current_time(9)"),
            "SELECT brook_time_precision(current_time(), 6, 'current_time')"
        );
    }

    #[test]
    fn other_uses_stay() {
        for sql in [
            "SELECT current_timestamp",
            "SELECT t.current_time FROM t",
            "SELECT \"localtime\" FROM t",
            "SELECT t.localtimestamp FROM t",
            "SELECT current_date",
        ] {
            assert_eq!(rewritten(sql), sql);
        }
    }
}
