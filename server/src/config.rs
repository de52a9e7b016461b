//! What Brook reports itself as to clients.

/// The PostgreSQL version Brook speaks for (`server_version`, `version()`).
pub const SERVER_VERSION: &str = "16.6";
