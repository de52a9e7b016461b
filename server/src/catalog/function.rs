//! User-defined functions in the catalog: `CREATE FUNCTION ... LANGUAGE SQL` whose body is
//! one expression over the arguments (inlined where it is called; see
//! `crate::udf::sql_function`), and `LANGUAGE javascript` whose body is a JavaScript
//! function's (run in a sandbox; see `crate::udf::javascript`).

use crate::pg::types::PgType;
use serde::{Deserialize, Serialize};

/// One argument: its name (None: read as `$n`) and type.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FunctionArgMeta {
    pub name: Option<String>,
    pub ty: PgType,
}

/// The language of a function's body.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Language {
    #[default]
    Sql,
    Javascript,
}

impl Language {
    /// Its name, as `LANGUAGE` takes it and `pg_language` lists it.
    pub fn name(self) -> &'static str {
        match self {
            Language::Sql => "sql",
            Language::Javascript => "javascript",
        }
    }

    /// Its `pg_language` oid (`pg_proc.prolang`): PostgreSQL's for sql; javascript's is
    /// Brook's row of the `pg_language` view (`catalog::pg_views`), an oid below the
    /// range of user objects that PostgreSQL's own catalogs do not use.
    pub fn oid(self) -> i32 {
        match self {
            Language::Sql => 14,
            Language::Javascript => JAVASCRIPT_LANGUAGE_OID,
        }
    }
}

/// `pg_language.oid` of javascript (written out in the `pg_language` view's SQL too).
pub const JAVASCRIPT_LANGUAGE_OID: i32 = 13900;

/// A user function.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FunctionMeta {
    pub args: Vec<FunctionArgMeta>,
    pub returns: PgType,
    /// LANGUAGE SQL (the catalog's functions from before JavaScript had none) or javascript.
    #[serde(default)]
    pub language: Language,
    /// The body. SQL: one expression over the arguments (`SELECT expr` or `RETURN expr`
    /// as written, reduced to `expr`). JavaScript: the function's body as written.
    pub body: String,
    /// `immutable`, `stable` or `volatile` (PostgreSQL's default).
    pub volatility: String,
    /// `STRICT` / `RETURNS NULL ON NULL INPUT`: NULL when an argument is.
    pub strict: bool,
    #[serde(default)]
    pub comment: Option<String>,
}

impl FunctionMeta {
    /// Its volatility as DataFusion plans with it (constant-folded, or called per row).
    pub fn df_volatility(&self) -> datafusion::logical_expr::Volatility {
        use datafusion::logical_expr::Volatility;
        match self.volatility.as_str() {
            "immutable" => Volatility::Immutable,
            "stable" => Volatility::Stable,
            _ => Volatility::Volatile,
        }
    }

    /// `name(type, ...)`, as PostgreSQL names a function in messages.
    pub fn signature(&self, name: &str) -> String {
        let types: Vec<String> = self.args.iter().map(|a| a.ty.name()).collect();
        format!("{name}({})", types.join(", "))
    }
}
