//! A notice or warning a statement leaves for its client (sent before its result, as
//! PostgreSQL sends NoticeResponse messages).

/// One message: a NOTICE (00000) or a WARNING with its SQLSTATE.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Notice {
    /// WARNING rather than NOTICE.
    pub warning: bool,
    /// SQLSTATE.
    pub code: &'static str,
    pub message: String,
}

impl Notice {
    /// A WARNING (PostgreSQL's for a transaction command outside its place: 25P01 "there
    /// is no transaction in progress", 25001 "there is already a transaction in progress").
    pub fn warning(code: &'static str, message: impl Into<String>) -> Self {
        Notice {
            warning: true,
            code,
            message: message.into(),
        }
    }
}

impl Notice {
    /// A NOTICE that IF [NOT] EXISTS skipped a statement with: the SQLSTATE of the error it
    /// avoided, as PostgreSQL sends it (42P07 for `CREATE TABLE IF NOT EXISTS` on an existing
    /// relation; a missing object's is 00000 there, and here).
    pub fn skipped(code: &'static str, message: impl Into<String>) -> Self {
        Notice {
            warning: false,
            code,
            message: format!("{}, skipping", message.into()),
        }
    }

    /// `CREATE ... IF NOT EXISTS` of a relation (or index, or sequence) that exists.
    pub fn relation_exists(name: &str) -> Self {
        Notice::skipped("42P07", format!("relation \"{name}\" already exists"))
    }
}

/// A NOTICE.
impl From<String> for Notice {
    fn from(message: String) -> Self {
        Notice {
            warning: false,
            code: "00000",
            message,
        }
    }
}

impl From<&str> for Notice {
    fn from(message: &str) -> Self {
        Notice::from(message.to_string())
    }
}
