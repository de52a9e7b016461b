//! Settings: a connection's configuration parameters (`SET`/`SHOW`, `current_setting()`),
//! their defaults, and how a setting's text is read as a number or a duration.

use crate::config::SERVER_VERSION;
use brook_common::{brook_err, Result};
use std::collections::BTreeMap;
use std::sync::Arc;

/// A session's settings, shared with its `current_setting()` function.
#[derive(Debug, Clone)]
pub struct Settings(Arc<std::sync::RwLock<BTreeMap<String, String>>>);

impl Default for Settings {
    fn default() -> Self {
        Settings(Arc::new(std::sync::RwLock::new(default_settings())))
    }
}

impl Settings {
    pub(crate) fn read(&self) -> std::sync::RwLockReadGuard<'_, BTreeMap<String, String>> {
        self.0.read().unwrap_or_else(|p| p.into_inner())
    }

    pub(crate) fn write(&self) -> std::sync::RwLockWriteGuard<'_, BTreeMap<String, String>> {
        self.0.write().unwrap_or_else(|p| p.into_inner())
    }

    /// The value of `key` (lower case).
    pub fn get(&self, key: &str) -> Option<String> {
        self.read().get(key).cloned()
    }

    pub(crate) fn set(&self, key: impl Into<String>, value: impl Into<String>) {
        self.write().insert(key.into(), value.into());
    }

    pub(crate) fn remove(&self, key: &str) {
        self.write().remove(key);
    }

    pub(crate) fn contains(&self, key: &str) -> bool {
        self.read().contains_key(key)
    }

    pub(crate) fn reset(&self) {
        *self.write() = default_settings();
    }

    pub(crate) fn entries(&self) -> Vec<(String, String)> {
        self.read()
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect()
    }
}

pub(crate) fn default_settings() -> BTreeMap<String, String> {
    [
        ("server_version", SERVER_VERSION),
        ("server_version_num", "160006"),
        ("server_encoding", "UTF8"),
        ("client_encoding", "UTF8"),
        ("datestyle", "ISO, MDY"),
        ("intervalstyle", "postgres"),
        ("timezone", "UTC"),
        ("integer_datetimes", "on"),
        ("standard_conforming_strings", "on"),
        ("extra_float_digits", "1"),
        ("application_name", ""),
        ("search_path", "\"$user\", public"),
        ("transaction_isolation", "read committed"),
        ("default_transaction_isolation", "read committed"),
        ("transaction_read_only", "off"),
        ("default_transaction_read_only", "off"),
        ("statement_timeout", "0"),
        ("lock_timeout", "0"),
        ("idle_in_transaction_session_timeout", "0"),
        ("max_identifier_length", "63"),
        // read only in PostgreSQL too (a build constant); pgjdbc reads it before foreign keys
        ("max_index_keys", "32"),
        ("lc_collate", "C"),
        ("lc_ctype", "C"),
        ("lc_messages", "C"),
        ("lc_monetary", "C"),
        ("lc_numeric", "C"),
        ("is_superuser", "on"),
        // SET ROLE's: `none` until a session sets one (current_user follows it).
        ("role", "none"),
        ("bytea_output", "hex"),
        ("client_min_messages", "notice"),
        ("row_security", "on"),
        ("synchronous_commit", "on"),
        // What pg_dump sets when it dumps and what its scripts set when they restore:
        // Brook's scans always start at a relation's beginning, keeps no XML, and has one
        // storage (no tablespaces, no table access methods) and no function bodies to check.
        ("synchronize_seqscans", "on"),
        ("transaction_timeout", "0"),
        ("xmloption", "content"),
        ("default_tablespace", ""),
        ("default_table_access_method", "heap"),
        ("check_function_bodies", "on"),
        // Brook compiles no expressions to machine code; asyncpg turns JIT off through this.
        ("jit", "off"),
        ("geqo", "on"),
        ("work_mem", "4MB"),
        ("max_connections", "100"),
        ("default_with_oids", "off"),
        (FETCH_TIMEOUT, "1s"),
        (APPROX_ERROR, "0"),
        (APPROX_CONFIDENCE, "0.95"),
        (APPROX_REPORT, "notice"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect()
}

/// 55P02 for a parameter a session cannot change (`SET`, `RESET`, `set_config`): those
/// PostgreSQL fixes when it is built or initialised, or at server start.
pub(crate) fn check_settable(name: &str) -> Result<()> {
    let key = name.to_ascii_lowercase();
    let why = match key.as_str() {
        "server_version"
        | "server_version_num"
        | "server_encoding"
        | "integer_datetimes"
        | "max_identifier_length"
        | "max_index_keys"
        | "lc_collate"
        | "lc_ctype"
        | "is_superuser" => "",
        "max_connections" => " without restarting the server",
        _ => return Ok(()),
    };
    Err(brook_common::BrookError::Semantic {
        message: format!("parameter \"{key}\" cannot be changed{why}"),
        code: "55P02",
    })
}

/// Setting: how long FETCH on a continuous cursor waits for rows when none are ready.
pub const FETCH_TIMEOUT: &str = "brook.fetch_timeout";
/// Setting: the accepted error of approximate answers (`0`: every answer exact).
pub const APPROX_ERROR: &str = "approx.error";
/// Setting: how sure the error bound of an approximate answer must be.
pub const APPROX_CONFIDENCE: &str = "approx.confidence";
/// Setting: how approximate answers report their bound (`notice` or `columns`).
pub const APPROX_REPORT: &str = "approx.report";

/// A numeric setting's value (22023 when not a number).
pub(crate) fn parse_setting_f64(name: &str, value: &str) -> Result<f64> {
    value.trim().parse().map_err(|_| {
        brook_err!(
            InvalidParameter,
            "invalid value for parameter \"{name}\": \"{value}\""
        )
    })
}

/// A duration setting: a number with unit `ms`, `s`, `min` (or their long names); a bare
/// number is milliseconds, as PostgreSQL's `statement_timeout`.
pub fn parse_timeout(text: &str) -> Result<std::time::Duration> {
    let t = text.trim().trim_matches('\'').trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let bad = || {
        brook_err!(
            InvalidParameter,
            "invalid timeout \"{text}\" (use e.g. '500ms' or '2s')"
        )
    };
    let n: f64 = num.parse().map_err(|_| bad())?;
    let scale = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "ms" | "millisecond" | "milliseconds" => 0.001,
        "s" | "sec" | "secs" | "second" | "seconds" => 1.0,
        "min" | "mins" | "minute" | "minutes" => 60.0,
        _ => return Err(bad()),
    };
    let secs = n * scale;
    if !secs.is_finite() || !(0.0..=86_400.0).contains(&secs) {
        return Err(bad());
    }
    Ok(std::time::Duration::from_secs_f64(secs))
}

/// A parameter's name as PostgreSQL spells it in `SHOW`'s column and `pg_settings.name`
/// (`TimeZone`, which clients look up by that name); settings are kept by lower-case key.
pub fn display_name(key: &str) -> &str {
    match key {
        "datestyle" => "DateStyle",
        "intervalstyle" => "IntervalStyle",
        "timezone" => "TimeZone",
        _ => key,
    }
}
