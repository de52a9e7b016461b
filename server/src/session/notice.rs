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
