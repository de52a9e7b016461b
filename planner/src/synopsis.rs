//! `CREATE SYNOPSIS` as the continuous query that maintains it.
//!
//! A synopsis is a materialized relation with one row per key (and window): the key
//! columns, the sketch (`bytea`, DataSketches format) or sample (`bytea`, read with
//! `sample_values`), and `rows_seen`.
//! It is maintained by the continuous engine like a materialized view, so it starts, stops
//! and survives restarts the same way, and `SELECT key, estimate(sketch) FROM name` reads it.
//! This module turns the statement into that query and describes the synopsis for the
//! catalog (kind, size parameter, the error bound the size gives).

use crate::parser::CreateSynopsis;
use brook_common::{brook_err, BrookError, Result};
use brook_synopses::ams::{self, Ams};
use brook_synopses::bloom::{self, Bloom};
use brook_synopses::countmin::CountMin;
use brook_synopses::dft::{self, Dft};
use brook_synopses::frequent::{self, Frequent};
use brook_synopses::hll::{self, Hll};
use brook_synopses::kll::{self, Kll};
use brook_synopses::{check_error, cpc, req, tdigest, theta, Confidence};
use datafusion::sql::sqlparser::ast::{Expr, SqlOption, Value};

/// The query maintaining a synopsis and how the catalog describes it.
#[derive(Debug, Clone, PartialEq)]
pub struct SynopsisPlan {
    /// `SELECT keys..., <aggregate> AS sketch, count(*) AS rows_seen FROM ... GROUP BY keys`.
    pub sql: String,
    /// The kind (`hll`, `kll`, `sample`, ...).
    pub kind: String,
    /// The summarised column (as written).
    pub column: String,
    /// The size parameter (`lg_k=12`, `k=200`, `n=100`).
    pub parameters: String,
    /// The key columns (window bounds first when windowed).
    pub keys: Vec<String>,
    /// The error the size gives (`relative error 3.2% at 95%`).
    pub bound: String,
    /// For `WITH (scope = 'global')`, the query merging the nodes' partial rows
    /// (`synopsis_merge`).
    pub merge: Option<String>,
}

/// A number from `WITH (name = value)`.
fn option_f64(options: &[SqlOption], name: &str) -> Result<Option<f64>> {
    for o in options {
        let SqlOption::KeyValue { key, value } = o else {
            return Err(brook_err!(Syntax, "invalid synopsis option {o}"));
        };
        let key = key.value.to_ascii_lowercase();
        if !matches!(key.as_str(), "error" | "confidence" | "scope") {
            return Err(brook_err!(
                InvalidParameter,
                "unknown synopsis option \"{key}\" (use error, confidence, scope)"
            ));
        }
        if key == name {
            return match value {
                Expr::Value(v) => match &v.value {
                    Value::Number(n, _) => n.parse().map(Some).map_err(|_| bad_number(name)),
                    _ => Err(bad_number(name)),
                },
                _ => Err(bad_number(name)),
            };
        }
    }
    Ok(None)
}

fn bad_number(name: &str) -> BrookError {
    brook_err!(InvalidParameter, "synopsis option {name} must be a number")
}

/// The size argument (second of `USING kind(column, size)`), a positive integer constant.
fn size_arg(cs: &CreateSynopsis) -> Result<Option<i64>> {
    match cs.args.get(1) {
        None => Ok(None),
        Some(Expr::Value(v)) => match &v.value {
            Value::Number(n, _) => n
                .parse::<i64>()
                .map(Some)
                .map_err(|_| brook_err!(InvalidParameter, "synopsis size {n} is not an integer")),
            _ => Err(brook_err!(
                InvalidParameter,
                "synopsis size {v} is not a number"
            )),
        },
        Some(other) => Err(brook_err!(
            InvalidParameter,
            "synopsis size {other} must be a constant"
        )),
    }
}

/// `WINDOW LAST_ROWS(n)`: the row count of the sliding window a sample follows; only a
/// sample can (chain sampling forgets what leaves the window; sketches cannot).
fn last_rows(cs: &CreateSynopsis) -> Result<Option<u64>> {
    let Some((kind, args)) = &cs.window else {
        return Ok(None);
    };
    if kind != "LAST_ROWS" {
        return Ok(None);
    }
    if cs.kind != "sample" {
        return Err(brook_err!(
            Unsupported,
            "WINDOW LAST_ROWS for a {} synopsis (only a sample follows the last n rows; \
             use TUMBLE_ROWS or HOP_ROWS for windows of rows)",
            cs.kind
        ));
    }
    let max = brook_synopses::chain::MAX_WINDOW;
    match args.as_slice() {
        [Expr::Value(v)] => match &v.value {
            Value::Number(n, _) => n
                .parse::<u64>()
                .ok()
                .filter(|n| (1..=max).contains(n))
                .map(Some)
                .ok_or_else(|| {
                    brook_err!(
                        InvalidParameter,
                        "LAST_ROWS({n}): the window must be between 1 and {max} rows"
                    )
                }),
            _ => Err(brook_err!(
                InvalidParameter,
                "LAST_ROWS({v}): the window is a row count"
            )),
        },
        _ => Err(brook_err!(
            Syntax,
            "WINDOW LAST_ROWS(n) takes one row count"
        )),
    }
}

fn pct(v: f64) -> String {
    format!("{:.2}%", v * 100.0)
}

/// The DFT kind: `USING dft(column, window [, coefficients])`, sized by its window (no error
/// option, no WINDOW clause: it keeps its own sliding window). Returns the aggregate, its
/// output column, the parameters and the bound, as the other kinds' arms do.
fn dft_synopsis(
    cs: &CreateSynopsis,
    column: &Expr,
    size: Option<i64>,
    has_error: bool,
) -> Result<(String, &'static str, String, String)> {
    let usage = "USING dft(column, window [, coefficients])";
    if has_error {
        return Err(brook_err!(
            InvalidParameter,
            "a DFT synopsis is sized by its window and coefficients: {usage}"
        ));
    }
    if cs.window.is_some() {
        return Err(brook_err!(Unsupported, "WINDOW on a dft synopsis (it keeps its own sliding window of the last `window` values)"));
    }
    let window = size
        .ok_or_else(|| brook_err!(InvalidParameter, "a DFT synopsis needs its window: {usage}"))?;
    let window = usize::try_from(window).unwrap_or(0);
    let coefficients = match cs.args.get(2) {
        None => dft::DEFAULT_COEFFICIENTS.min(window.saturating_sub(1) / 2),
        Some(Expr::Value(v)) => match &v.value {
            Value::Number(n, _) => n.parse::<usize>().map_err(|_| {
                brook_err!(
                    InvalidParameter,
                    "DFT coefficients {n} is not a positive integer"
                )
            })?,
            _ => {
                return Err(brook_err!(
                    InvalidParameter,
                    "DFT coefficients {v} is not a number"
                ))
            }
        },
        Some(other) => {
            return Err(brook_err!(
                InvalidParameter,
                "DFT coefficients {other} must be a constant"
            ))
        }
    };
    // Checks window and coefficients now, so a bad definition fails at CREATE.
    Dft::new(window, coefficients)?;
    Ok((
        format!("dft_sketch_agg({column}, {window}, {coefficients})"),
        "sketch",
        format!("window={window}, coefficients={coefficients}"),
        "correlation bounds from the energy outside the kept coefficients (always hold)"
            .to_string(),
    ))
}

/// The synopsis kinds Brook has (a user-defined aggregate of another name is one too).
pub const KINDS: [&str; 12] = [
    "hll",
    "cpc",
    "theta",
    "kll",
    "req",
    "tdigest",
    "frequent_items",
    "countmin",
    "bloom",
    "ams",
    "sample",
    "dft",
];

/// Plan `cs`: its maintaining query and its catalog description.
pub fn plan_synopsis(cs: &CreateSynopsis) -> Result<SynopsisPlan> {
    let Some(column) = cs.args.first() else {
        return Err(brook_err!(
            Syntax,
            "USING {}() needs the column to summarise",
            cs.kind
        ));
    };
    // Only a DFT synopsis has a third argument (its coefficient count).
    let max_args = if cs.kind == "dft" { 3 } else { 2 };
    if cs.args.len() > max_args {
        return Err(brook_err!(
            Syntax,
            "USING {}(column [, size]) takes at most {max_args} arguments",
            cs.kind
        ));
    }
    let error = option_f64(&cs.options, "error")?
        .map(check_error)
        .transpose()?;
    let confidence = match option_f64(&cs.options, "confidence")? {
        Some(c) => Confidence::new(c)?,
        None => Confidence::default(),
    };
    let size = size_arg(cs)?;
    // A bloom filter's size (distinct values) and error (false-positive rate) are separate.
    if size.is_some() && error.is_some() && cs.kind != "bloom" {
        return Err(brook_err!(
            InvalidParameter,
            "give a synopsis either a size or an error, not both"
        ));
    }
    let last_rows = last_rows(cs)?;
    let conf = pct(confidence.probability());
    let z = confidence.z();
    let lg = |range: (u8, u8), default: u8, for_error: &dyn Fn(f64) -> Result<u8>| -> Result<u8> {
        match (size, error) {
            (Some(s), _) if s >= i64::from(range.0) && s <= i64::from(range.1) => Ok(s as u8),
            (Some(s), _) => Err(brook_err!(
                InvalidParameter,
                "{} lg_k must be between {} and {}, got {s}",
                cs.kind,
                range.0,
                range.1
            )),
            (None, Some(e)) => for_error(e),
            (None, None) => Ok(default),
        }
    };
    let rse_bound = |lg_k: u8, c: f64| -> String {
        let rse = c / f64::from(1u32 << lg_k).sqrt();
        format!("relative error {} at {conf}", pct(rse * z))
    };
    let (aggregate, output, parameters, bound) = match cs.kind.as_str() {
        "hll" => {
            let lg_k = lg(hll::LG_K_RANGE, hll::DEFAULT_LG_K, &|e| {
                Hll::lg_k_for(e, confidence)
            })?;
            (
                format!("hll_sketch_agg({column}, {lg_k})"),
                "sketch",
                format!("lg_k={lg_k}"),
                rse_bound(lg_k, 1.04),
            )
        }
        "cpc" => {
            let lg_k = lg(cpc::LG_K_RANGE, cpc::DEFAULT_LG_K, &|e| {
                cpc::Cpc::lg_k_for(e, confidence)
            })?;
            (
                format!("cpc_sketch_agg({column}, {lg_k})"),
                "sketch",
                format!("lg_k={lg_k}"),
                rse_bound(lg_k, 0.7),
            )
        }
        "theta" => {
            let lg_k = lg(theta::LG_K_RANGE, theta::DEFAULT_LG_K, &|e| {
                theta::Theta::lg_k_for(e, confidence)
            })?;
            (
                format!("theta_sketch_agg({column}, {lg_k})"),
                "sketch",
                format!("lg_k={lg_k}"),
                rse_bound(lg_k, 1.0),
            )
        }
        "kll" => {
            let k = match (size, error) {
                (Some(s), _) => u16::try_from(s)
                    .ok()
                    .filter(|k| *k >= kll::K_RANGE.0)
                    .ok_or_else(|| {
                        brook_err!(
                            InvalidParameter,
                            "kll k must be between {} and {}, got {s}",
                            kll::K_RANGE.0,
                            kll::K_RANGE.1
                        )
                    })?,
                (None, Some(e)) => Kll::k_for(e, confidence)?,
                (None, None) => kll::DEFAULT_K,
            };
            let eps = Kll::new(k)?.rank_error(confidence);
            (
                format!("kll_sketch_agg({column}, {k})"),
                "sketch",
                format!("k={k}"),
                format!("rank error {} at {conf}", pct(eps)),
            )
        }
        "req" => {
            let k = match (size, error) {
                (Some(s), _)
                    if s >= i64::from(req::K_RANGE.0)
                        && s <= i64::from(req::K_RANGE.1)
                        && s % 2 == 0 =>
                {
                    s as u16
                }
                (Some(s), _) => {
                    return Err(brook_err!(
                        InvalidParameter,
                        "req k must be even, between {} and {}, got {s}",
                        req::K_RANGE.0,
                        req::K_RANGE.1
                    ))
                }
                (None, Some(e)) => req::Req::k_for(e, confidence)?,
                (None, None) => req::DEFAULT_K,
            };
            (
                format!("req_sketch_agg({column}, {k})"),
                "sketch",
                format!("k={k}"),
                format!(
                    "relative rank error about {} at 95% (high ranks)",
                    pct(0.01 * f64::from(req::DEFAULT_K) / f64::from(k))
                ),
            )
        }
        "tdigest" => {
            if error.is_some() {
                return Err(brook_err!(
                    InvalidParameter,
                    "a t-digest has no error bound to size it by; give its compression k"
                ));
            }
            let k = match size {
                Some(s) if (10..=i64::from(u16::MAX)).contains(&s) => s as u16,
                Some(s) => {
                    return Err(brook_err!(
                        InvalidParameter,
                        "tdigest k must be between 10 and {}, got {s}",
                        u16::MAX
                    ))
                }
                None => tdigest::DEFAULT_K,
            };
            (
                format!("tdigest_sketch_agg({column}, {k})"),
                "sketch",
                format!("k={k}"),
                "no a-priori bound (t-digest)".to_string(),
            )
        }
        "frequent_items" => {
            let lg = lg(
                (3, frequent::MAX_LG_MAP_SIZE),
                frequent::DEFAULT_LG_MAP_SIZE,
                &Frequent::lg_map_size_for,
            )?;
            let eps = 3.5 / f64::from(1u32 << lg);
            (
                format!("frequent_items_sketch_agg({column}, {lg})"),
                "sketch",
                format!("lg_map_size={lg}"),
                format!("count error at most {} of the rows (always)", pct(eps)),
            )
        }
        "sample" => {
            if error.is_some() {
                return Err(brook_err!(
                    InvalidParameter,
                    "a sample is sized by its row count: USING sample(column, n)"
                ));
            }
            let n = size.unwrap_or(100);
            if !(1..=1 << 24).contains(&n) {
                return Err(brook_err!(
                    InvalidParameter,
                    "sample size must be between 1 and {}, got {n}",
                    1 << 24
                ));
            }
            match last_rows {
                Some(w) => (format!("chain_sample_agg({column}, {n}, {w})"), "sample", format!("n={n}, last_rows={w}"), format!("{n} draws with replacement, each uniform over the last {w} rows (chain sampling)")),
                None => (format!("sample_sketch_agg({column}, {n})"), "sample", format!("n={n}"), "uniform sample (exact inclusion probability n / rows)".to_string()),
            }
        }
        "countmin" => {
            if size.is_some() {
                return Err(brook_err!(InvalidParameter, "a count-min sketch is sized by its error: USING countmin(column) WITH (error = 0.001)"));
            }
            let e = error.unwrap_or(0.01);
            let sketch = CountMin::for_error(e, confidence)?;
            let (depth, width) = sketch.shape();
            (
                format!(
                    "countmin_sketch_agg({column}, {e}, {})",
                    confidence.probability()
                ),
                "sketch",
                format!("width={width}, depth={depth}"),
                format!(
                    "count overestimate at most {} of the rows at {}",
                    pct(e),
                    pct(sketch.confidence())
                ),
            )
        }
        "bloom" => {
            if option_f64(&cs.options, "confidence")?.is_some() {
                return Err(brook_err!(
                    InvalidParameter,
                    "a bloom filter has no confidence; its error is the false-positive probability"
                ));
            }
            let max_items = match size {
                Some(n) if (1..=1_000_000_000).contains(&n) => n,
                Some(n) => {
                    return Err(brook_err!(
                        InvalidParameter,
                        "bloom max_items must be between 1 and 1000000000, got {n}"
                    ))
                }
                None => bloom::DEFAULT_MAX_ITEMS,
            };
            let fpp = error.unwrap_or(bloom::DEFAULT_FPP);
            Bloom::for_items(max_items as u64, fpp)?;
            (format!("bloom_sketch_agg({column}, {max_items}, {fpp})"), "sketch", format!("max_items={max_items}"), format!("false-positive probability {} up to {max_items} distinct values, no false negatives", pct(fpp)))
        }
        "ams" => {
            if size.is_some() {
                return Err(brook_err!(
                    InvalidParameter,
                    "an AMS sketch is sized by its error: USING ams(column) WITH (error = 0.05)"
                ));
            }
            let e = error.unwrap_or(ams::DEFAULT_ERROR);
            let sketch = Ams::for_error(e, confidence, ams::SEED)?;
            (
                format!(
                    "ams_sketch_agg({column}, {e}, {})",
                    confidence.probability()
                ),
                "sketch",
                format!("width={}, depth={}", sketch.width(), sketch.depth()),
                format!(
                    "self-join size within {} at {}",
                    pct(sketch.relative_error()),
                    pct(sketch.confidence())
                ),
            )
        }
        "dft" => dft_synopsis(cs, column, size, error.is_some())?,
        other => {
            return Err(brook_err!(
                Unsupported,
                "synopsis kind {other} (use {}, or a user-defined aggregate with a COMBINEFUNC)",
                KINDS.join(", ")
            ))
        }
    };
    maintaining_query(cs, column, &aggregate, output, parameters, bound)
}

/// The synopsis' query: its keys (window bounds first), the aggregate as `output`, and
/// `rows_seen`, grouped by the keys.
fn maintaining_query(
    cs: &CreateSynopsis,
    column: &Expr,
    aggregate: &str,
    output: &str,
    parameters: String,
    bound: String,
) -> Result<SynopsisPlan> {
    let source = cs.source.to_string();
    let (from, mut keys) = match &cs.window {
        // The sample itself follows the last rows: no window relation, no window key.
        Some((kind, _)) if kind == "LAST_ROWS" => (source.clone(), Vec::new()),
        Some((kind, args)) => {
            let mut args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
            // Sessions and count windows are per key: the synopsis' own keys.
            let per_key = matches!(kind.as_str(), "SESSION" | "TUMBLE_ROWS" | "HOP_ROWS");
            if per_key {
                for k in &cs.partition_by {
                    if !matches!(k, datafusion::sql::sqlparser::ast::Expr::Identifier(_)) {
                        return Err(brook_err!(
                            Unsupported,
                            "PARTITION BY {k} with WINDOW {kind} (partition by columns)"
                        ));
                    }
                    args.push(k.to_string());
                }
            }
            let bounds = if kind.ends_with("_ROWS") {
                vec!["window_id".to_string()]
            } else {
                vec!["window_start".to_string(), "window_end".to_string()]
            };
            (format!("{kind}({source}, {})", args.join(", ")), bounds)
        }
        None => (source.clone(), Vec::new()),
    };
    keys.extend(cs.partition_by.iter().map(|e| e.to_string()));
    let mut select = keys.clone();
    select.push(format!("{aggregate} AS {output}"));
    select.push("count(*) AS rows_seen".to_string());
    let mut sql = format!("SELECT {} FROM {from}", select.join(", "));
    if !keys.is_empty() {
        sql.push_str(&format!(" GROUP BY {}", keys.join(", ")));
    }
    Ok(SynopsisPlan {
        sql,
        kind: cs.kind.clone(),
        column: column.to_string(),
        merge: crate::synopsis_merge::merge_query(cs, &parameters)?,
        parameters,
        keys,
        bound,
    })
}

/// A synopsis kept by a user-defined aggregate (`USING my_aggregate(col, ...)`): its
/// value per key, exact, in the column `value`. The server admits only aggregates with a
/// COMBINEFUNC: partial synopses of one must merge.
pub fn plan_user_synopsis(cs: &CreateSynopsis, combinefunc: &str) -> Result<SynopsisPlan> {
    let Some(column) = cs.args.first() else {
        return Err(brook_err!(
            Syntax,
            "USING {}() needs the columns the aggregate reads",
            cs.kind
        ));
    };
    if crate::synopsis_merge::is_global(&cs.options)? {
        return Err(brook_err!(
            Unsupported,
            "scope = 'global' for a synopsis kept by the aggregate {} (global synopses are of \
             the built-in kinds whose sketches merge)",
            cs.kind
        ));
    }
    if !cs.options.is_empty() {
        return Err(brook_err!(
            InvalidParameter,
            "a synopsis kept by the aggregate {} has no error or confidence: its value is exact",
            cs.kind
        ));
    }
    last_rows(cs)?;
    let args: Vec<String> = cs.args.iter().map(|a| a.to_string()).collect();
    let plain = cs
        .kind
        .chars()
        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
        && !cs.kind.starts_with(|c: char| c.is_ascii_digit());
    let function = if plain {
        cs.kind.clone()
    } else {
        format!("\"{}\"", cs.kind.replace('"', "\"\""))
    };
    maintaining_query(
        cs,
        column,
        &format!("{function}({})", args.join(", ")),
        "value",
        String::new(),
        format!(
            "exact (user-defined aggregate {}, partial values merged by {combinefunc})",
            cs.kind
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parser::{parse_one, StatementBody};

    fn plan(sql: &str) -> Result<SynopsisPlan> {
        let StatementBody::CreateSynopsis(cs) = parse_one(sql)?.body else {
            panic!("not CREATE SYNOPSIS");
        };
        plan_synopsis(&cs)
    }

    #[test]
    fn frequency_membership_and_moment_kinds() {
        let p = plan("CREATE SYNOPSIS f ON clicks USING countmin(page) WITH (error = 0.001, confidence = 0.99)")
            .unwrap();
        assert_eq!(
            p.sql,
            "SELECT countmin_sketch_agg(page, 0.001, 0.99) AS sketch, count(*) AS rows_seen FROM clicks"
        );
        assert_eq!(p.parameters, "width=2719, depth=5");
        // A bloom filter's size and error are separate settings.
        let p = plan("CREATE SYNOPSIS b ON clicks USING bloom(user_id, 5000) PARTITION BY page WITH (error = 0.02)")
            .unwrap();
        assert_eq!(
            p.sql,
            "SELECT page, bloom_sketch_agg(user_id, 5000, 0.02) AS sketch, count(*) AS rows_seen FROM clicks GROUP BY page"
        );
        let p = plan("CREATE SYNOPSIS a ON clicks USING ams(user_id) WITH (error = 0.1)").unwrap();
        assert_eq!(p.parameters, "width=800, depth=9");
        for (sql, state) in [
            ("CREATE SYNOPSIS x ON c USING countmin(v, 10)", "22023"),
            ("CREATE SYNOPSIS x ON c USING ams(v, 10)", "22023"),
            ("CREATE SYNOPSIS x ON c USING bloom(v, 0)", "22023"),
            (
                "CREATE SYNOPSIS x ON c USING bloom(v) WITH (error = 2)",
                "22023",
            ),
            (
                "CREATE SYNOPSIS x ON c USING bloom(v) WITH (confidence = 0.9)",
                "22023",
            ),
        ] {
            assert_eq!(plan(sql).unwrap_err().sqlstate(), state, "{sql}");
        }
    }

    #[test]
    fn keyed_sketch_sized_by_error() {
        let p = plan(
            "CREATE SYNOPSIS u ON clicks USING hll(user_id) PARTITION BY page WITH (error = 0.01)",
        )
        .unwrap();
        assert_eq!(
            p.sql,
            "SELECT page, hll_sketch_agg(user_id, 16) AS sketch, count(*) AS rows_seen FROM clicks GROUP BY page"
        );
        assert_eq!(p.parameters, "lg_k=16");
        assert!(
            p.bound.starts_with("relative error 0.80% at 95.00%"),
            "{}",
            p.bound
        );
    }

    #[test]
    fn count_and_session_windows_are_per_key() {
        let p = plan("CREATE SYNOPSIS s ON trades USING sample(price, 10) PARTITION BY sym WINDOW TUMBLE_ROWS(1000)").unwrap();
        assert_eq!(
            p.sql,
            "SELECT window_id, sym, sample_sketch_agg(price, 10) AS sample, count(*) AS rows_seen FROM TUMBLE_ROWS(trades, 1000, sym) GROUP BY window_id, sym"
        );
        let p = plan("CREATE SYNOPSIS s ON clicks USING hll(page) PARTITION BY u WINDOW SESSION(ts, INTERVAL '30 minutes')").unwrap();
        assert!(
            p.sql.contains("FROM SESSION(clicks, ts, INTERVAL '30 minutes', u) GROUP BY window_start, window_end, u"),
            "{}",
            p.sql
        );
    }

    #[test]
    fn a_sample_of_the_last_rows_is_a_chain_sample() {
        let p = plan("CREATE SYNOPSIS s ON trades USING sample(price, 10) PARTITION BY sym WINDOW LAST_ROWS(1000)").unwrap();
        assert_eq!(
            p.sql,
            "SELECT sym, chain_sample_agg(price, 10, 1000) AS sample, count(*) AS rows_seen FROM trades GROUP BY sym"
        );
        assert_eq!(p.parameters, "n=10, last_rows=1000");
        let code = |sql: &str| plan(sql).unwrap_err().sqlstate();
        let cases = [
            (
                "a sketch",
                "CREATE SYNOPSIS x ON t USING hll(v) WINDOW LAST_ROWS(10)",
                "0A000",
            ),
            (
                "no rows",
                "CREATE SYNOPSIS x ON t USING sample(v) WINDOW LAST_ROWS(0)",
                "22023",
            ),
            (
                "not a count",
                "CREATE SYNOPSIS x ON t USING sample(v) WINDOW LAST_ROWS('x')",
                "22023",
            ),
            (
                "two counts",
                "CREATE SYNOPSIS x ON t USING sample(v) WINDOW LAST_ROWS(1, 2)",
                "42601",
            ),
        ];
        for (name, sql, state) in cases {
            assert_eq!(code(sql), state, "{name}");
        }
    }

    #[test]
    fn windowed_sample_and_global_quantiles() {
        let p = plan("CREATE SYNOPSIS s ON trades USING sample(price, 10) PARTITION BY sym WINDOW TUMBLE(ts, INTERVAL '1 minute')").unwrap();
        assert_eq!(
            p.sql,
            "SELECT window_start, window_end, sym, sample_sketch_agg(price, 10) AS sample, count(*) AS rows_seen FROM TUMBLE(trades, ts, INTERVAL '1 minute') GROUP BY window_start, window_end, sym"
        );
        let q = plan("CREATE SYNOPSIS q ON trades USING kll(price)").unwrap();
        assert_eq!(
            q.sql,
            "SELECT kll_sketch_agg(price, 200) AS sketch, count(*) AS rows_seen FROM trades"
        );
    }

    #[test]
    fn bad_definitions_are_named_errors() {
        let code = |sql: &str| plan(sql).unwrap_err().sqlstate();
        assert_eq!(code("CREATE SYNOPSIS x ON t USING wavelet(v)"), "0A000");
        assert_eq!(code("CREATE SYNOPSIS x ON t USING hll(v, 40)"), "22023");
        assert_eq!(
            code("CREATE SYNOPSIS x ON t USING hll(v, 12) WITH (error = 0.01)"),
            "22023"
        );
        assert_eq!(
            code("CREATE SYNOPSIS x ON t USING hll(v) WITH (colour = 1)"),
            "22023"
        );
        assert_eq!(
            code("CREATE SYNOPSIS x ON t USING sample(v) WITH (error = 0.1)"),
            "22023"
        );
        assert_eq!(code("CREATE SYNOPSIS x ON t USING hll()"), "42601");
        assert_eq!(code("CREATE SYNOPSIS x ON t USING dft(v)"), "22023");
        assert_eq!(code("CREATE SYNOPSIS x ON t USING dft(v, 16, 8)"), "22023");
        assert_eq!(
            code("CREATE SYNOPSIS x ON t USING dft(v, 64) WINDOW TUMBLE(ts, INTERVAL '1 minute')"),
            "0A000"
        );
        assert_eq!(code("CREATE SYNOPSIS x ON t USING hll(v, 12, 3)"), "42601");
    }

    #[test]
    fn correlation_synopsis_per_series() {
        let p = plan("CREATE SYNOPSIS c ON ticks USING dft(price, 128) PARTITION BY sym").unwrap();
        assert_eq!(
            p.sql,
            "SELECT sym, dft_sketch_agg(price, 128, 8) AS sketch, count(*) AS rows_seen FROM ticks GROUP BY sym"
        );
        assert_eq!(p.parameters, "window=128, coefficients=8");
    }
}
