//! Startup and authentication: trust or SCRAM-SHA-256 (the salted password computed once),
//! the TLS requirement, the connection limit, one backend pid and secret per connection, and
//! the parameters reported at startup.

use super::*;
use crate::config::SERVER_VERSION;
use crate::db::Engine;
use async_trait::async_trait;
use futures::{Sink, SinkExt};
use pgwire::api::auth::sasl::scram::{gen_salted_password, ScramAuth};
use pgwire::api::auth::sasl::SASLAuthStartupHandler;
use pgwire::api::auth::{AuthSource, LoginInfo, Password, ServerParameterProvider, StartupHandler};
use pgwire::api::{ClientInfo, PgWireConnectionState};
use pgwire::error::{PgWireError, PgWireResult};
use pgwire::messages::response::{ReadyForQuery, TransactionStatus};
use pgwire::messages::startup::Authentication;
use pgwire::messages::{PgWireBackendMessage, PgWireFrontendMessage};
use std::collections::HashMap;
use std::fmt::Debug;
use std::sync::Arc;

/// Parameter statuses sent at startup.
#[derive(Debug)]
pub(super) struct Params;

impl ServerParameterProvider for Params {
    fn server_parameters<C>(&self, client: &C) -> Option<HashMap<String, String>>
    where
        C: ClientInfo,
    {
        let user = client.metadata().get("user").cloned().unwrap_or_default();
        let app = client
            .metadata()
            .get("application_name")
            .cloned()
            .unwrap_or_default();
        Some(HashMap::from([
            ("server_version".to_string(), SERVER_VERSION.to_string()),
            ("server_encoding".into(), "UTF8".into()),
            ("client_encoding".into(), "UTF8".into()),
            ("DateStyle".into(), "ISO, MDY".into()),
            ("IntervalStyle".into(), "postgres".into()),
            ("TimeZone".into(), "UTC".into()),
            ("integer_datetimes".into(), "on".into()),
            ("standard_conforming_strings".into(), "on".into()),
            ("is_superuser".into(), "on".into()),
            ("in_hot_standby".into(), "off".into()),
            ("default_transaction_read_only".into(), "off".into()),
            ("application_name".into(), app),
            ("session_authorization".into(), user),
        ]))
    }
}

/// The password of role `brook`, for SCRAM.
#[derive(Debug)]
pub(super) struct PasswordSource {
    salted: Vec<u8>,
    salt: Vec<u8>,
}

#[async_trait]
impl AuthSource for PasswordSource {
    // The trait declares this signature with an elided lifetime; matching it exactly is required.
    #[allow(elided_lifetimes_in_paths)]
    async fn get_password(&self, login: &LoginInfo) -> PgWireResult<Password> {
        if login.user() != Some("brook") {
            return Err(fatal(
                "28P01",
                format!(
                    "password authentication failed for user \"{}\"",
                    login.user().unwrap_or("")
                ),
            ));
        }
        Ok(Password::new(Some(self.salt.clone()), self.salted.clone()))
    }
}

/// Startup: the connection limit and TLS requirement, then trust (loopback, no password:
/// the database is checked at once) or SCRAM (the database is checked only after the
/// password, so an unauthenticated client learns nothing about what exists).
pub struct Startup {
    engine: Arc<Engine>,
    scram: Option<SASLAuthStartupHandler<Params>>,
    open: Arc<std::sync::atomic::AtomicUsize>,
    pub(super) max_connections: usize,
    require_tls: bool,
}

pub(super) const SCRAM_ITERATIONS: usize = 4096;

/// Backend "process ids" handed to clients: one counter for every connection, so that a
/// CancelRequest reaches exactly one session.
pub(super) static NEXT_PID: std::sync::atomic::AtomicI32 = std::sync::atomic::AtomicI32::new(1000);

/// A pid from [`NEXT_PID`] and a random secret key (4 bytes, or 32 on protocol 3.2).
pub(super) fn next_pid_and_secret(
    client: &dyn ClientInfo,
) -> (i32, pgwire::messages::startup::SecretKey) {
    use pgwire::messages::startup::SecretKey;
    let pid = NEXT_PID.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let key = match client.protocol_version() {
        pgwire::messages::ProtocolVersion::PROTOCOL3_0 => SecretKey::I32(rand::random::<i32>()),
        _ => SecretKey::Bytes(bytes::Bytes::from(rand::random::<[u8; 32]>().to_vec())),
    };
    let meta = client.metadata();
    tracing::info!(
        pid,
        peer = %client.socket_addr(),
        user = meta.get(pgwire::api::METADATA_USER).map_or("", String::as_str),
        database = meta.get(pgwire::api::METADATA_DATABASE).map_or("", String::as_str),
        application_name = meta.get("application_name").map_or("", String::as_str),
        "connection authorized"
    );
    (pid, key)
}

/// Hands SCRAM connections their pid from [`NEXT_PID`] (pgwire's own generator starts at
/// the same number in every handler).
#[derive(Debug)]
pub(super) struct BrookPids;

impl pgwire::api::PidSecretKeyGenerator for BrookPids {
    fn generate(&self, client: &dyn ClientInfo) -> (i32, pgwire::messages::startup::SecretKey) {
        next_pid_and_secret(client)
    }
}

impl Startup {
    pub(super) fn new(
        engine: Arc<Engine>,
        config: &WireConfig,
        open: Arc<std::sync::atomic::AtomicUsize>,
    ) -> Self {
        let scram = config.password.as_ref().map(|pw| {
            let salt: Vec<u8> = rand::random::<[u8; 16]>().to_vec();
            let salted = gen_salted_password(pw, &salt, SCRAM_ITERATIONS);
            let mut auth = ScramAuth::new(Arc::new(PasswordSource { salted, salt }));
            auth.set_iterations(SCRAM_ITERATIONS);
            SASLAuthStartupHandler::new(Arc::new(Params))
                .with_scram(auth)
                .with_pid_secret_key_generator(Arc::new(BrookPids))
        });
        Startup {
            engine,
            scram,
            open,
            max_connections: config.max_connections,
            require_tls: config.require_tls,
        }
    }
}

#[async_trait]
impl StartupHandler for Startup {
    async fn on_startup<C>(
        &self,
        client: &mut C,
        message: PgWireFrontendMessage,
    ) -> PgWireResult<()>
    where
        C: ClientInfo + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        if let PgWireFrontendMessage::Startup(ref startup) = message {
            if self.open.load(std::sync::atomic::Ordering::Acquire) > self.max_connections {
                return Err(fatal("53300", "sorry, too many clients already".into()));
            }
            if self.require_tls && !client.is_secure() {
                return Err(fatal(
                    "28000",
                    "this server accepts only TLS connections (connect with sslmode=require)"
                        .into(),
                ));
            }
            let db = startup
                .parameters
                .get("database")
                .cloned()
                .unwrap_or_else(|| crate::catalog::DEFAULT_DATABASE.into());
            let db = if db.is_empty() {
                crate::catalog::DEFAULT_DATABASE.to_string()
            } else {
                db
            };
            if self.scram.is_none() && self.engine.catalog.read().database(&db).is_err() {
                return Err(fatal("3D000", format!("database \"{db}\" does not exist")));
            }
        }
        if let Some(scram) = &self.scram {
            return scram.on_startup(client, message).await;
        }
        if let PgWireFrontendMessage::Startup(ref startup) = message {
            pgwire::api::auth::protocol_negotiation(client, startup).await?;
            pgwire::api::auth::save_startup_parameters_to_metadata(client, startup);
            // Unique per connection: cancel requests are routed by pid.
            let (pid, secret) = next_pid_and_secret(client);
            client.set_pid_and_secret_key(pid, secret);
            client
                .feed(PgWireBackendMessage::Authentication(Authentication::Ok))
                .await?;
            if let Some(params) = Params.server_parameters(client) {
                for (k, v) in params {
                    client
                        .feed(PgWireBackendMessage::ParameterStatus(
                            pgwire::messages::startup::ParameterStatus::new(k, v),
                        ))
                        .await?;
                }
            }
            let (pid, key) = client.pid_and_secret_key();
            client
                .feed(PgWireBackendMessage::BackendKeyData(
                    pgwire::messages::startup::BackendKeyData::new(pid, key),
                ))
                .await?;
            client
                .send(PgWireBackendMessage::ReadyForQuery(ReadyForQuery::new(
                    TransactionStatus::Idle,
                )))
                .await?;
            client.set_state(PgWireConnectionState::ReadyForQuery);
        }
        Ok(())
    }
}

/// Startup-packet entries that are not settings.
const NOT_SETTINGS: [&str; 4] = ["user", "database", "options", "replication"];

/// The settings a startup packet gives, applied to the connection's new session as
/// PostgreSQL applies them: each `-c name=value` (or `--name=value`) of `options` (libpq's
/// `PGOPTIONS`, `psql "options=-c search_path=s"`), then each parameter that names a
/// setting (`application_name`, `search_path`, `DateStyle`, ...), which wins over the
/// same one in `options`. They are what RESET goes back to. A value Brook does not take is
/// skipped with a log line rather than ending the connection as PostgreSQL's FATAL would:
/// pgjdbc sends its JVM's time zone, and Brook sessions run in UTC (which the TimeZone
/// reported at startup tells the client).
pub(super) fn apply_startup_settings(session: &mut Session, metadata: &HashMap<String, String>) {
    let mut settings = metadata
        .get("options")
        .map(|o| command_line_settings(o))
        .unwrap_or_default();
    let mut given: Vec<(String, String)> = metadata
        .iter()
        .filter(|(k, _)| !NOT_SETTINGS.contains(&k.as_str()) && !k.starts_with("_pq_."))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    given.sort();
    settings.extend(given);
    for (name, value) in settings {
        match session.set_var(&name, &value) {
            Ok(()) => session.keep_as_reset_value(&name),
            Err(e) => {
                tracing::info!(setting = %name, value = %value, error = %e, "a startup parameter was not applied");
            }
        }
    }
}

/// The `-c name=value` and `--name=value` switches of a startup packet's `options`:
/// words split at white space, a backslash taking the next character literally (as
/// PostgreSQL's `pg_split_opts`), dashes in names read as underscores. Other switches are
/// skipped.
fn command_line_settings(options: &str) -> Vec<(String, String)> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut chars = options.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => word.extend(chars.next()),
            c if c.is_whitespace() => {
                if !word.is_empty() {
                    words.push(std::mem::take(&mut word));
                }
            }
            c => word.push(c),
        }
    }
    if !word.is_empty() {
        words.push(word);
    }
    let mut out = Vec::new();
    let mut words = words.into_iter();
    while let Some(w) = words.next() {
        let setting = if w == "-c" {
            words.next()
        } else {
            w.strip_prefix("--")
                .or_else(|| w.strip_prefix("-c"))
                .map(str::to_string)
        };
        if let Some((name, value)) = setting.as_deref().and_then(|s| s.split_once('=')) {
            out.push((name.replace('-', "_"), value.to_string()));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::command_line_settings;

    fn pairs(v: &[(&str, &str)]) -> Vec<(String, String)> {
        v.iter()
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect()
    }

    #[test]
    fn options_switches_read_as_postgresql_splits_them() {
        assert_eq!(
            command_line_settings("-c search_path=s1 -cstatement_timeout=5s --lock-timeout=1s"),
            pairs(&[
                ("search_path", "s1"),
                ("statement_timeout", "5s"),
                ("lock_timeout", "1s")
            ])
        );
        assert_eq!(
            command_line_settings(r"-c application_name=my\ app  -X -c"),
            pairs(&[("application_name", "my app")])
        );
        assert_eq!(command_line_settings(""), pairs(&[]));
    }
}
