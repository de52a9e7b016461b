//! SET, RESET, SHOW and DISCARD.

use crate::catalog::DEFAULT_SCHEMA;
use crate::handler::query::rows_outcome;
use crate::ident::ident_name;
use crate::ident::object_parts;
use crate::session::Outcome;
use crate::session::Session;
use crate::settings::default_settings;
use crate::settings::parse_setting_f64;
use crate::settings::parse_timeout;
use crate::settings::APPROX_CONFIDENCE;
use crate::settings::APPROX_ERROR;
use crate::settings::APPROX_REPORT;
use brook_common::{brook_err, Result};
use datafusion::arrow::array::{RecordBatch, StringArray};
use datafusion::arrow::datatypes::{DataType, Field, Schema};
use datafusion::sql::sqlparser::ast::{self, Expr, Ident};
use std::sync::Arc;

pub(crate) fn setting_value(e: &Expr) -> String {
    match e {
        Expr::Value(v) => match &v.value {
            ast::Value::SingleQuotedString(s) | ast::Value::DoubleQuotedString(s) => s.clone(),
            other => other.to_string(),
        },
        Expr::Identifier(i) => i.value.clone(),
        other => other.to_string(),
    }
}

/// `SET TIME ZONE INTERVAL '+02:00' HOUR TO MINUTE`: the offset as the hours east of UTC
/// a numeric `SET TIME ZONE` takes (`2`, `-3.5`); 22023 for an interval with days or
/// months, as PostgreSQL's.
fn zone_of_interval(i: &ast::Interval) -> Result<String> {
    let text = setting_value(&i.value);
    let bad = || {
        brook_err!(
            InvalidParameter,
            "invalid interval value for time zone: {text} (only hours, minutes and seconds)"
        )
    };
    let span = brook_common::interval_text::parse_interval(&text).ok_or_else(bad)?;
    if span.months != 0 || span.days != 0 {
        return Err(bad());
    }
    Ok((span.nanoseconds as f64 / 3.6e12).to_string())
}

impl Session {
    /// DISCARD ALL: close every cursor, deallocate every prepared statement, reset every
    /// setting, forget the sequence values `currval` and `lastval` give (only as a
    /// transaction of its own: see `transaction::own_transaction_only`). DISCARD SEQUENCES
    /// only the last; DISCARD TEMP drops the session's temporary tables and views; DISCARD
    /// PLANS has nothing to discard (Brook caches no plans).
    pub(crate) fn discard(&mut self, what: ast::DiscardObject) -> Result<Outcome> {
        match what {
            ast::DiscardObject::ALL => {
                self.cursors.clear();
                self.deallocate(&ast::Ident::new("all"));
                self.reset_all();
                self.forget_sequence_values();
                self.drop_temp_schema()?;
            }
            ast::DiscardObject::SEQUENCES => self.forget_sequence_values(),
            ast::DiscardObject::TEMP => self.drop_temp_schema()?,
            ast::DiscardObject::PLANS => {}
        }
        Ok(Outcome::Command(format!("DISCARD {what}")))
    }

    /// `currval` and `lastval` start again as in a new session (their per-session state is
    /// the registered functions').
    fn forget_sequence_values(&self) {
        crate::udf::sequences::register(
            &self.ctx,
            self.engine.catalog.clone(),
            &self.db.name,
            self.temp_schema_slot.clone(),
        );
    }

    /// RESET name | ALL.
    pub(crate) fn reset(&mut self, r: ast::ResetStatement) -> Result<Outcome> {
        match r.reset {
            ast::Reset::ALL => self.reset_all(),
            ast::Reset::ConfigurationParameter(name) => {
                // Case-insensitive even quoted (`RESET "TimeZone"`), as PostgreSQL's.
                let key = object_parts(&name)?.join(".").to_ascii_lowercase();
                crate::settings::check_settable(&key)?;
                let reset_value = self.reset_values.get(&key.to_ascii_lowercase()).cloned();
                match reset_value.or_else(|| default_settings().get(&key).cloned()) {
                    Some(v) => {
                        let v = v.clone();
                        self.set_var(&key, &v)?;
                    }
                    None if key.starts_with("datafusion.") || key.contains('.') => {
                        self.settings.remove(&key);
                    }
                    None => {
                        return Err(brook_err!(
                            UndefinedObject,
                            "unrecognized configuration parameter \"{key}\""
                        ))
                    }
                }
            }
        }
        Ok(Outcome::Command("RESET".into()))
    }

    /// `SET [LOCAL] name = value` (and the statements that are one).
    fn assign(&mut self, name: &str, value: String, local: bool) -> Result<()> {
        crate::settings::check_settable(name)?;
        if local && !self.set_local(name) {
            return Ok(());
        }
        if name.eq_ignore_ascii_case("transaction_read_only") {
            // The open block's access mode, as SET TRANSACTION READ ONLY sets it.
            let mode = if crate::handler::transaction::is_on(&value) {
                ast::TransactionAccessMode::ReadOnly
            } else {
                ast::TransactionAccessMode::ReadWrite
            };
            return self.set_transaction_modes(&[ast::TransactionMode::AccessMode(mode)]);
        }
        self.set_var(name, &value)?;
        if !local {
            let now = self
                .settings
                .get(&name.to_ascii_lowercase())
                .unwrap_or(value);
            self.block_session_set(name, &now);
        }
        Ok(())
    }

    /// A role a session may become: the one it connected as, or Brook's own (`brook`, the
    /// role pg_roles lists, which every session has the rights of); 22023 for another, as
    /// PostgreSQL answers a role that does not exist.
    fn check_role(&self, role: &str) -> Result<()> {
        if role == self.user || role == crate::catalog::pg_views::ROLE {
            return Ok(());
        }
        Err(brook_err!(
            InvalidParameter,
            "role \"{role}\" does not exist"
        ))
    }

    pub(crate) fn set(&mut self, set: ast::Set) -> Result<Outcome> {
        match set {
            ast::Set::SingleAssignment {
                variable,
                values,
                scope,
                ..
            } => {
                let name = object_parts(&variable)?.join(".");
                let path = name.eq_ignore_ascii_case("search_path");
                let value = match values.as_slice() {
                    // `SET search_path TO DEFAULT` (other settings read DEFAULT themselves).
                    [Expr::Identifier(i)]
                        if path
                            && i.quote_style.is_none()
                            && i.value.eq_ignore_ascii_case("default") =>
                    {
                        (crate::settings::default_settings().remove("search_path"))
                            .unwrap_or_default()
                    }
                    _ if path => (values.iter())
                        .map(crate::session::search_path::path_element)
                        .collect::<Vec<_>>()
                        .join(", "),
                    _ => (values.iter())
                        .map(setting_value)
                        .collect::<Vec<_>>()
                        .join(", "),
                };
                self.assign(&name, value, scope == Some(ast::ContextModifier::Local))?;
            }
            // SET ROLE / SET SESSION AUTHORIZATION: to the connected role (or back), the
            // only one a session can be (see `set_var`'s "role").
            ast::Set::SetRole {
                context_modifier,
                role_name,
            } => {
                let role = role_name.map_or_else(|| "none".to_string(), |r| r.value);
                let local = context_modifier == Some(ast::ContextModifier::Local);
                self.assign("role", role, local)?;
            }
            ast::Set::SetSessionAuthorization(param) => {
                if let ast::SetSessionAuthorizationParamKind::User(user) = param.kind {
                    self.check_role(&user.value)?;
                }
            }
            ast::Set::SetTimeZone { value, local } => {
                let zone = match &value {
                    Expr::Interval(i) => zone_of_interval(i)?,
                    other => setting_value(other),
                };
                // `SET LOCAL TIME ZONE ...` lasts until the block ends, as `SET LOCAL`.
                self.assign("timezone", zone, local)?;
            }
            ast::Set::SetTransaction {
                modes,
                session: false,
                ..
            } => self.set_transaction_modes(&modes)?,
            ast::Set::SetTransaction {
                modes,
                session: true,
                ..
            } => {
                // SET SESSION CHARACTERISTICS AS TRANSACTION: the next blocks' defaults.
                for m in modes {
                    if let ast::TransactionMode::AccessMode(a) = m {
                        let on = matches!(a, ast::TransactionAccessMode::ReadOnly);
                        self.set_var(
                            "default_transaction_read_only",
                            if on { "on" } else { "off" },
                        )?;
                    }
                }
            }
            ast::Set::SetSessionParam(_)
            | ast::Set::SetNames { .. }
            | ast::Set::SetNamesDefault {} => {}
            other => return Err(brook_err!(Unsupported, "{other}")),
        }
        Ok(Outcome::Command("SET".into()))
    }

    /// RESET ALL: every setting back to its default, the search path included.
    /// (Back to the defaults, and to the values the startup packet gave, as PostgreSQL's
    /// settings of source `client`.)
    pub(crate) fn reset_all(&mut self) {
        self.settings.reset();
        // The zone the session computes in follows its setting (a startup zone, below,
        // replaces it).
        if let Err(e) = self.set_var("timezone", "UTC") {
            tracing::warn!(error = %e, "could not reset the session's time zone");
        }
        {
            let state = self.ctx.state_ref();
            let mut st = state.write();
            st.config_mut().options_mut().catalog.default_schema = DEFAULT_SCHEMA.to_string();
        }
        for (key, value) in self.reset_values.clone() {
            if let Err(e) = self.set_var(&key, &value) {
                tracing::warn!(setting = %key, error = %e, "could not reset a setting to its startup value");
            }
        }
    }

    /// Make the value `name` has now the one RESET, RESET ALL and DISCARD ALL go back to
    /// (a setting the startup packet gave).
    pub fn keep_as_reset_value(&mut self, name: &str) {
        let key = name.to_ascii_lowercase();
        if let Some(v) = self.settings.get(&key) {
            self.reset_values.insert(key, v);
        }
    }

    /// The session's time zone as Arrow labels instants with (`Europe/Berlin`, `-07:00`);
    /// None under UTC.
    pub(crate) fn time_zone(&self) -> Option<String> {
        let zone = self
            .ctx
            .state_ref()
            .read()
            .config()
            .options()
            .execution
            .time_zone
            .clone();
        zone.filter(|z| !brook_planner::session_time_zone::is_utc(z))
    }

    /// The catalog options recording the session's time zone for a materialized view or
    /// synopsis it creates (`stream::plan::TIME_ZONE_OPTION`); empty under UTC.
    pub(crate) fn time_zone_option(&self) -> std::collections::BTreeMap<String, String> {
        self.time_zone()
            .map(|z| (crate::stream::plan::TIME_ZONE_OPTION.to_string(), z))
            .into_iter()
            .collect()
    }

    /// Set a session setting (SET name = value), validating the values Brook acts on.
    pub fn set_var(&mut self, name: &str, value: &str) -> Result<()> {
        let key = name.to_ascii_lowercase();
        if key.starts_with("datafusion.") {
            let state = self.ctx.state_ref();
            let mut st = state.write();
            st.config_mut().options_mut().set(&key, value)?;
            return Ok(());
        }
        match key.as_str() {
            "timezone" | "time zone" => {
                let v = value.trim_matches('\'');
                // `SET TIME ZONE LOCAL` / `DEFAULT`: the zone RESET goes back to (the
                // startup packet's, else the server's, UTC), as PostgreSQL's do.
                let zone = if v.eq_ignore_ascii_case("local") || v.eq_ignore_ascii_case("default") {
                    match self.reset_values.get("timezone") {
                        Some(startup) => crate::udf::time_zone::session_zone(&startup.clone())?,
                        None => None,
                    }
                } else {
                    crate::udf::time_zone::session_zone(v)?
                };
                let (shown, arrow) = zone.unwrap_or_else(|| ("UTC".into(), "+00:00".into()));
                {
                    let state = self.ctx.state_ref();
                    let mut st = state.write();
                    st.config_mut().options_mut().execution.time_zone = Some(arrow);
                }
                self.settings.set("timezone", shown);
            }
            "search_path" => {
                let first = crate::session::search_path::path_names(value)
                    .into_iter()
                    .find(|s| s != "$user" && !s.is_empty() && s != "pg_catalog");
                let schema = first.unwrap_or_else(|| DEFAULT_SCHEMA.to_string());
                {
                    let state = self.ctx.state_ref();
                    let mut st = state.write();
                    st.config_mut().options_mut().catalog.default_schema = schema;
                }
                // A list, shown as PostgreSQL shows one (`a,b` from a startup packet too).
                let list: Vec<String> = crate::session::search_path::path_names(value)
                    .iter()
                    .map(|n| crate::ident::quote_if_needed(n))
                    .collect();
                self.settings.set(key, list.join(", "));
            }
            "role" => {
                let role = value.trim().trim_matches('\'');
                if role.eq_ignore_ascii_case("none") {
                    self.settings.set(key, "none");
                } else {
                    self.check_role(role)?;
                    self.settings.set(key, role.to_string());
                }
            }
            "client_encoding" | "names" => {
                let v = value
                    .trim_matches('\'')
                    .to_ascii_uppercase()
                    .replace('-', "");
                if v != "UTF8" && v != "UNICODE" && v != "DEFAULT" {
                    return Err(brook_err!(
                        Unsupported,
                        "client_encoding {value} (only UTF8 is supported)"
                    ));
                }
            }
            "datestyle" => {
                let v = value.to_ascii_lowercase();
                if !v.contains("iso") {
                    return Err(brook_err!(
                        Unsupported,
                        "DateStyle {value} (only ISO output is supported)"
                    ));
                }
                self.settings.set(key, "ISO, MDY");
            }
            "client_min_messages" => {
                let v = value.trim().trim_matches('\'').to_ascii_lowercase();
                let level = match v.as_str() {
                    "debug" => "debug2",
                    "default" => "notice",
                    "debug5" | "debug4" | "debug3" | "debug2" | "debug1" | "log" | "notice"
                    | "warning" | "error" => v.as_str(),
                    _ => {
                        return Err(brook_err!(
                            InvalidParameter,
                            "invalid value for parameter \"client_min_messages\": \"{value}\" (available values: debug5, debug4, debug3, debug2, debug1, log, notice, warning, error)"
                        ))
                    }
                };
                self.settings.set(key, level);
            }
            "extra_float_digits" => {
                let v: i32 = value.parse().map_err(|_| {
                    brook_err!(
                        InvalidText,
                        "invalid value for parameter \"extra_float_digits\": \"{value}\""
                    )
                })?;
                if !(-15..=3).contains(&v) {
                    return Err(brook_err!(InvalidParameter, "{v} is outside the valid range for parameter \"extra_float_digits\" (-15 .. 3)"));
                }
                self.settings.set(key, value.to_string());
            }
            "transaction_timeout" => {
                // Accepted as off (what pg_dump's scripts set); a limit would not be kept.
                if !parse_timeout(value)?.is_zero() {
                    return Err(brook_err!(
                        Unsupported,
                        "transaction_timeout other than 0 (use statement_timeout and idle_in_transaction_session_timeout)"
                    ));
                }
                self.settings.set(key, "0");
            }
            "statement_timeout" | "lock_timeout" | "idle_in_transaction_session_timeout" => {
                parse_timeout(value)?;
                self.settings
                    .set(key, value.trim().trim_matches('\'').to_string());
            }
            APPROX_ERROR => {
                let v = value.trim();
                if v != "0" && !v.eq_ignore_ascii_case("off") {
                    brook_synopses::check_error(parse_setting_f64(APPROX_ERROR, v)?)?;
                }
                self.settings.set(key, v.to_string());
            }
            APPROX_CONFIDENCE => {
                brook_synopses::Confidence::new(parse_setting_f64(APPROX_CONFIDENCE, value)?)?;
                self.settings.set(key, value.trim().to_string());
            }
            APPROX_REPORT => {
                brook_planner::approx::Report::parse(value)?;
                self.settings.set(key, value.trim().to_ascii_lowercase());
            }
            _ if self.settings.contains(&key) || key.contains('.') => {
                self.settings.set(key, value.to_string());
            }
            _ => {
                return Err(brook_err!(
                    UndefinedObject,
                    "unrecognized configuration parameter \"{name}\""
                ))
            }
        }
        Ok(())
    }

    pub(crate) fn show(&self, variable: &[Ident]) -> Result<Outcome> {
        let name = variable
            .iter()
            .map(ident_name)
            .collect::<Vec<_>>()
            .join(" ");
        // sqlparser splits `SHOW a.b` into words as it does `SHOW time zone`: the
        // multi-word names PostgreSQL knows, else a dotted (custom) parameter name.
        let (key, name) = match name.as_str() {
            "time zone" => ("timezone".to_string(), name),
            "transaction isolation level" => ("transaction_isolation".to_string(), name),
            // A parameter's name is case-insensitive even quoted (`SHOW "TimeZone"`).
            _ => {
                let dotted = name.replace(' ', ".");
                (dotted.to_ascii_lowercase(), dotted)
            }
        };
        if key == "all" {
            let (names, values): (Vec<String>, Vec<String>) =
                self.settings.entries().into_iter().unzip();
            let schema = Arc::new(Schema::new(vec![
                Field::new("name", DataType::Utf8, false),
                Field::new("setting", DataType::Utf8, false),
            ]));
            let batch = RecordBatch::try_new(
                schema.clone(),
                vec![
                    Arc::new(StringArray::from(names)),
                    Arc::new(StringArray::from(values)),
                ],
            )?;
            return Ok(rows_outcome(schema, vec![batch], "SHOW"));
        }
        let value = if key.starts_with("datafusion.") {
            let opts = self.ctx.state().config().options().entries();
            opts.into_iter()
                .find(|e| e.key == key)
                .and_then(|e| e.value)
        } else {
            self.settings.get(&key)
        };
        let value = value.ok_or_else(|| {
            brook_err!(
                UndefinedObject,
                "unrecognized configuration parameter \"{name}\""
            )
        })?;
        // The column is named as PostgreSQL names the parameter (`SHOW timezone` gives
        // `TimeZone`, which clients read by that name).
        let column = crate::settings::display_name(&key).to_string();
        let schema = Arc::new(Schema::new(vec![Field::new(column, DataType::Utf8, true)]));
        let batch = RecordBatch::try_new(
            schema.clone(),
            vec![Arc::new(StringArray::from(vec![value]))],
        )?;
        Ok(rows_outcome(schema, vec![batch], "SHOW"))
    }
}
