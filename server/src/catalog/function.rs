//! User-defined functions in the catalog: `CREATE FUNCTION ... LANGUAGE SQL` whose body is
//! one expression over the arguments (inlined where it is called; see
//! `crate::udf::sql_function`).

use crate::pg::types::PgType;
use serde::{Deserialize, Serialize};

/// One argument: its name (None: read as `$n`) and type.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FunctionArgMeta {
    pub name: Option<String>,
    pub ty: PgType,
}

/// A SQL function.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FunctionMeta {
    pub args: Vec<FunctionArgMeta>,
    pub returns: PgType,
    /// The body: one SQL expression over the arguments (`SELECT expr` or `RETURN expr`
    /// as written, reduced to `expr`).
    pub body: String,
    /// `immutable`, `stable` or `volatile` (PostgreSQL's default).
    pub volatility: String,
    /// `STRICT` / `RETURNS NULL ON NULL INPUT`: NULL when an argument is.
    pub strict: bool,
    #[serde(default)]
    pub comment: Option<String>,
}

impl FunctionMeta {
    /// `name(type, ...)`, as PostgreSQL names a function in messages.
    pub fn signature(&self, name: &str) -> String {
        let types: Vec<String> = self.args.iter().map(|a| a.ty.name()).collect();
        format!("{name}({})", types.join(", "))
    }
}
