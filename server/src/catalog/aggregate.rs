//! User-defined aggregates in the catalog: `CREATE AGGREGATE` with a transition function
//! folded over the rows (see `crate::udf::sql_aggregate`).

use crate::pg::types::PgType;
use serde::{Deserialize, Serialize};

/// An aggregate as PostgreSQL defines one: `SFUNC(state, args...) -> state` from
/// `INITCOND`, then `FINALFUNC(state)`; `COMBINEFUNC(state, state) -> state` merges two
/// partial states. Functions are named as written (built-in or user functions).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AggregateMeta {
    pub args: Vec<PgType>,
    pub sfunc: String,
    pub stype: PgType,
    pub finalfunc: Option<String>,
    pub combinefunc: Option<String>,
    /// The initial state as text (read as STYPE); None: NULL.
    pub initcond: Option<String>,
    #[serde(default)]
    pub comment: Option<String>,
    /// The moving-aggregate mode (MSFUNC, MINVFUNC, ...), if defined.
    #[serde(default)]
    pub moving: Option<MovingMeta>,
}

/// PostgreSQL's moving-aggregate mode: `MSFUNC(mstate, args...)` and its inverse
/// `MINVFUNC(mstate, args...)` over a state of type MSTYPE from MINITCOND, then
/// `MFINALFUNC(mstate)`; used where a window frame's start moves.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MovingMeta {
    pub msfunc: String,
    pub minvfunc: String,
    pub mstype: PgType,
    pub mfinalfunc: Option<String>,
    pub minitcond: Option<String>,
}

impl AggregateMeta {
    /// `name(type, ...)`, as PostgreSQL names an aggregate in messages.
    pub fn signature(&self, name: &str) -> String {
        let types: Vec<String> = self.args.iter().map(PgType::name).collect();
        format!("{name}({})", types.join(", "))
    }

    /// The functions it calls.
    pub fn functions(&self) -> impl Iterator<Item = &str> {
        let moving = self.moving.iter().flat_map(|m| {
            [m.msfunc.as_str(), m.minvfunc.as_str()]
                .into_iter()
                .chain(m.mfinalfunc.as_deref())
        });
        std::iter::once(self.sfunc.as_str())
            .chain(self.finalfunc.as_deref())
            .chain(self.combinefunc.as_deref())
            .chain(moving)
    }
}
