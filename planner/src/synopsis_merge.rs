//! `CREATE SYNOPSIS ... WITH (scope = 'global')`: a synopsis over a partitioned stream kept,
//! in cluster mode, by each node over the partitions it owns, and read as the merge of
//! every node's partial sketches (the Synopses Data Engine's federated mode). This module
//! reads the option and derives the query that merges the gathered partial rows: per key
//! (and window), the union of the sketches — the kind's `*_union_agg` with the synopsis'
//! own size, so the merged sketch and its bound are those of one sketch over every row —
//! and the sum of `rows_seen`.
//!
//! Only kinds whose sketches merge into the sketch of the union are accepted (HLL, CPC,
//! theta, KLL, count-min, bloom, AMS); windows by time only (count and session windows
//! and `LAST_ROWS` follow each key's row order, which no node sees whole); keys that are
//! columns.

use crate::parser::CreateSynopsis;
use brook_common::{brook_err, Result};
use datafusion::sql::sqlparser::ast::{Expr, SqlOption, Value};

use crate::view_merge::GATHERED;

/// Kinds whose partial sketches merge, and the union aggregate of each (whether it takes
/// the synopsis' size as its second argument).
const UNIONS: [(&str, &str, bool); 7] = [
    ("hll", "hll_union_agg", true),
    ("cpc", "cpc_union_agg", true),
    ("theta", "theta_union_agg", true),
    ("kll", "kll_union_agg", true),
    ("countmin", "countmin_union_agg", false),
    ("bloom", "bloom_union_agg", false),
    ("ams", "ams_union_agg", false),
];

/// Whether `WITH (scope = 'global')` was given (`'local'`, the default, is not); 22023 for
/// another value.
pub fn is_global(options: &[SqlOption]) -> Result<bool> {
    let mut global = None;
    for o in options {
        let SqlOption::KeyValue { key, value } = o else {
            continue;
        };
        if !key.value.eq_ignore_ascii_case("scope") {
            continue;
        }
        if global.is_some() {
            return Err(brook_err!(
                InvalidParameter,
                "parameter \"scope\" specified more than once"
            ));
        }
        let text = match value {
            Expr::Value(v) => match &v.value {
                Value::SingleQuotedString(s) => Some(s.to_ascii_lowercase()),
                _ => None,
            },
            Expr::Identifier(i) => Some(i.value.to_ascii_lowercase()),
            _ => None,
        };
        global = match text.as_deref() {
            Some("global") => Some(true),
            Some("local") => Some(false),
            _ => {
                return Err(brook_err!(
                    InvalidParameter,
                    "synopsis option scope must be 'local' or 'global', got {value}"
                ))
            }
        };
    }
    Ok(global.unwrap_or(false))
}

/// The query merging the gathered partial rows of a global synopsis of `cs` whose size is
/// given by `parameters` (`lg_k=12`); None for a local synopsis. 0A000 for what cannot be
/// merged (see the module's comment).
pub fn merge_query(cs: &CreateSynopsis, parameters: &str) -> Result<Option<String>> {
    if !is_global(&cs.options)? {
        return Ok(None);
    }
    let Some((_, union, sized)) = UNIONS.iter().find(|(kind, _, _)| *kind == cs.kind) else {
        return Err(brook_err!(
            Unsupported,
            "scope = 'global' for a synopsis of kind {}: its partial sketches do not merge \
             into the sketch of every row (global synopses are of kinds {})",
            cs.kind,
            UNIONS.map(|(k, _, _)| k).join(", ")
        ));
    };
    if let Some((window, _)) = &cs.window {
        if !matches!(window.as_str(), "TUMBLE" | "HOP") {
            return Err(brook_err!(
                Unsupported,
                "scope = 'global' with WINDOW {window}: its windows follow each key's rows in \
                 order, which no node sees whole (windows by time, TUMBLE and HOP, merge)"
            ));
        }
    }
    // The synopsis' key columns as its query names them: window bounds first.
    let mut keys: Vec<String> = match &cs.window {
        Some(_) => vec!["window_start".into(), "window_end".into()],
        None => Vec::new(),
    };
    for k in &cs.partition_by {
        let Expr::Identifier(column) = k else {
            return Err(brook_err!(
                Unsupported,
                "scope = 'global' with PARTITION BY {k} (partition a global synopsis by columns)"
            ));
        };
        keys.push(crate::output_names::folded(column));
    }
    let size = parameters
        .split_once('=')
        .map(|(_, n)| n.trim())
        .filter(|n| *sized && n.chars().all(|c| c.is_ascii_digit()));
    let quoted: Vec<String> = keys
        .iter()
        .map(|k| format!("\"{}\"", k.replace('"', "\"\"")))
        .collect();
    let mut select = quoted.clone();
    select.push(match size {
        Some(n) => format!("{union}(sketch, {n}) AS sketch"),
        None => format!("{union}(sketch) AS sketch"),
    });
    select.push("CAST(sum(rows_seen) AS bigint) AS rows_seen".to_string());
    let mut sql = format!("SELECT {} FROM {GATHERED}", select.join(", "));
    if !quoted.is_empty() {
        sql.push_str(&format!(" GROUP BY {}", quoted.join(", ")));
    }
    Ok(Some(sql))
}

#[cfg(test)]
mod tests {
    use crate::parser::{parse_one, StatementBody};
    use crate::synopsis::plan_synopsis;

    fn merge(sql: &str) -> brook_common::Result<Option<String>> {
        let StatementBody::CreateSynopsis(cs) = parse_one(sql).unwrap().body else {
            panic!("not CREATE SYNOPSIS: {sql}")
        };
        plan_synopsis(&cs).map(|p| p.merge)
    }

    #[test]
    fn a_global_synopsis_merges_its_partial_sketches_per_key() {
        assert_eq!(
            merge("CREATE SYNOPSIS d ON s USING hll(user_id, 14) PARTITION BY Site WITH (scope = 'global')")
                .unwrap()
                .as_deref(),
            Some("SELECT \"site\", hll_union_agg(sketch, 14) AS sketch, CAST(sum(rows_seen) AS bigint) AS rows_seen FROM gathered GROUP BY \"site\"")
        );
        assert_eq!(
            merge("CREATE SYNOPSIS d ON s USING countmin(x) WINDOW TUMBLE(ts, INTERVAL '1 minute') WITH (scope = global, error = 0.01)")
                .unwrap()
                .as_deref(),
            Some("SELECT \"window_start\", \"window_end\", countmin_union_agg(sketch) AS sketch, CAST(sum(rows_seen) AS bigint) AS rows_seen FROM gathered GROUP BY \"window_start\", \"window_end\"")
        );
        assert_eq!(merge("CREATE SYNOPSIS d ON s USING kll(x)").unwrap(), None);
        assert_eq!(
            merge("CREATE SYNOPSIS d ON s USING kll(x) WITH (scope = 'local')").unwrap(),
            None
        );
    }

    #[test]
    fn what_does_not_merge_is_refused_by_name() {
        for (sql, code) in [
            ("CREATE SYNOPSIS d ON s USING tdigest(x) WITH (scope = 'global')", "0A000"),
            ("CREATE SYNOPSIS d ON s USING sample(x, 10) WITH (scope = 'global')", "0A000"),
            ("CREATE SYNOPSIS d ON s USING hll(x) PARTITION BY k WINDOW TUMBLE_ROWS(10) WITH (scope = 'global')", "0A000"),
            ("CREATE SYNOPSIS d ON s USING hll(x) PARTITION BY lower(k) WITH (scope = 'global')", "0A000"),
            ("CREATE SYNOPSIS d ON s USING hll(x) WITH (scope = 'everywhere')", "22023"),
            ("CREATE SYNOPSIS d ON s USING hll(x) WITH (scope = 'local', scope = 'global')", "22023"),
        ] {
            let e = merge(sql).expect_err(sql);
            assert_eq!(e.sqlstate(), code, "{sql}: {e}");
        }
    }
}
