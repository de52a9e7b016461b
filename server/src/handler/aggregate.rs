//! CREATE [OR REPLACE] AGGREGATE and DROP AGGREGATE.
//!
//! An aggregate's transition, final and combine functions are built-in functions or user
//! SQL functions; it is planned at CREATE (so one that does not plan is refused there) and
//! again whenever the database's functions change (`Engine::refresh_functions`). Functions
//! and aggregates share one namespace per database, one signature per name.

use crate::catalog::aggregate::{AggregateMeta, MovingMeta};
use crate::db::functions::Strictness;
use crate::pg::types::PgType;
use crate::session::{Outcome, Session};
use brook_common::{brook_err, BrookError, Result};
use brook_planner::statement::CreateAggregate;
use datafusion::sql::sqlparser::ast::{DataType, ObjectName};

impl Session {
    pub(crate) fn create_aggregate(&mut self, ca: CreateAggregate) -> Result<Outcome> {
        let (schema, name) = self.resolve(&ca.name)?;
        crate::session::temp::refuse_temp_routine(&schema)?;
        let meta = aggregate_meta(&ca)?;
        let existing = self.aggregate(&name);
        let taken = match (&existing, self.function(&name)) {
            (_, Some((_, f))) => Some((
                f.args.iter().map(|a| a.ty.clone()).collect(),
                f.signature(&name),
                "function",
            )),
            (Some((_, a)), None) if !ca.or_replace => {
                Some((a.args.clone(), a.signature(&name), "aggregate"))
            }
            _ => None,
        };
        if let Some((args, signature, kind)) = taken {
            if args == meta.args {
                return Err(same_arguments(&name));
            }
            return Err(brook_err!(
                Unsupported,
                "overloading {name}: the {kind} {signature} exists, and a name has one signature \
                 in Brook (DROP it first)"
            ));
        }
        if brook_planner::synopsis::KINDS.contains(&name.as_str()) {
            return Err(BrookError::Semantic {
                message: format!(
                    "function \"{name}\" already exists: it is a synopsis kind (CREATE \
                     SYNOPSIS ... USING {name}), and a user aggregate of that name would be \
                     taken for it"
                ),
                code: "42723",
            });
        }
        if existing.is_none() && self.built_in(&name) {
            return Err(BrookError::Semantic {
                message: format!(
                    "function \"{name}\" already exists: it is built in, and Brook does not \
                     overload built-in functions"
                ),
                code: "42723",
            });
        }
        if let Some((old_schema, old)) = &existing {
            if old.args != meta.args {
                return Err(brook_err!(
                    Unsupported,
                    "overloading aggregate {name}: {} exists, and a name has one signature \
                     in Brook (DROP AGGREGATE it first)",
                    old.signature(&name)
                ));
            }
            if *old_schema != schema {
                return Err(brook_err!(
                    Unsupported,
                    "aggregate {name} in schema \"{schema}\": it exists in schema \
                     \"{old_schema}\", and function names are one namespace per database"
                ));
            }
        }
        // Plan it now, so an aggregate that does not plan is refused here.
        let strictness = self.strictness()?;
        let state = self.ctx.state();
        let planned = crate::udf::sql_aggregate::plan(&name, &meta, &state, &strictness)?;
        if let Some((_, old)) = &existing {
            let returns = planned.return_type(&[])?;
            if let Ok(old_planned) =
                crate::udf::sql_aggregate::plan(&name, old, &state, &strictness)
            {
                let old_returns = old_planned.return_type(&[])?;
                if old_returns != returns {
                    return Err(super::function::return_type_changed(
                        &brook_common::types::sql_name(&old_returns),
                    ));
                }
            }
            self.refuse_replacing(&name, &old.signature(&name))?;
        }
        let db = self.db.name.clone();
        self.engine.catalog.update(|doc| {
            let s = doc.schema_mut(&db, &schema)?;
            let comment = s.aggregates.get(&name).and_then(|a| a.comment.clone());
            s.aggregates
                .insert(name.clone(), AggregateMeta { comment, ..meta });
            Ok(())
        })?;
        self.engine.refresh_functions(&self.db)?;
        self.sync_functions();
        Ok(Outcome::Command("CREATE AGGREGATE".into()))
    }

    pub(crate) fn drop_aggregate(
        &mut self,
        names: Vec<(ObjectName, Option<Vec<DataType>>)>,
        if_exists: bool,
        cascade: bool,
    ) -> Result<Outcome> {
        if cascade {
            return Err(brook_err!(
                Unsupported,
                "DROP AGGREGATE ... CASCADE (drop what calls the aggregate first)"
            ));
        }
        let mut dropped = Vec::new();
        for (object, args) in &names {
            let (_, name) = self.resolve(object)?;
            let types = args
                .as_ref()
                .map(|a| a.iter().map(PgType::from_sql).collect::<Result<Vec<_>>>())
                .transpose()?;
            let wanted = match &types {
                Some(t) => format!(
                    "{name}({})",
                    t.iter().map(PgType::name).collect::<Vec<_>>().join(", ")
                ),
                None => name.clone(),
            };
            let Some((schema, meta)) = self.aggregate(&name) else {
                if let Some((_, f)) = self.function(&name) {
                    return Err(BrookError::WrongObjectType(format!(
                        "function {} is not an aggregate",
                        f.signature(&name)
                    )));
                }
                if if_exists {
                    self.notices
                        .push(format!("aggregate {wanted} does not exist, skipping").into());
                    continue;
                }
                return Err(brook_err!(
                    UndefinedFunction,
                    "aggregate {wanted} does not exist"
                ));
            };
            if types.as_ref().is_some_and(|t| *t != meta.args) {
                return Err(brook_err!(
                    UndefinedFunction,
                    "aggregate {wanted} does not exist (it is {})",
                    meta.signature(&name)
                ));
            }
            self.refuse_callers(&name, &meta.signature(&name))?;
            dropped.push((schema, name));
        }
        self.remove_routines(&dropped, |s, name| {
            s.aggregates.remove(name);
        })?;
        Ok(Outcome::Command("DROP AGGREGATE".into()))
    }

    /// The user aggregate `name` of this database and its schema.
    pub(super) fn aggregate(&self, name: &str) -> Option<(String, AggregateMeta)> {
        let doc = self.engine.catalog.read();
        let db = doc.database(&self.db.name).ok()?;
        db.schemas
            .iter()
            .find_map(|(s, m)| m.aggregates.get(name).map(|a| (s.clone(), a.clone())))
    }

    /// Which of this database's functions are STRICT.
    fn strictness(&self) -> Result<Strictness> {
        let doc = self.engine.catalog.read();
        Ok(Strictness::of(doc.database(&self.db.name)?))
    }
}

/// 42723, as PostgreSQL says it.
fn same_arguments(name: &str) -> BrookError {
    BrookError::Semantic {
        message: format!("function \"{name}\" already exists with same argument types"),
        code: "42723",
    }
}

/// The catalog entry of `CREATE AGGREGATE`, or the error naming what Brook does not take.
fn aggregate_meta(ca: &CreateAggregate) -> Result<AggregateMeta> {
    if ca.args.is_empty() {
        return Err(brook_err!(
            Unsupported,
            "aggregates without arguments (name(*)): give the aggregate an argument"
        ));
    }
    let args = ca.args.iter().map(pg_type).collect::<Result<Vec<_>>>()?;
    Ok(AggregateMeta {
        args,
        sfunc: function_name(&ca.sfunc)?,
        stype: pg_type(&ca.stype)?,
        finalfunc: ca.finalfunc.as_ref().map(function_name).transpose()?,
        combinefunc: ca.combinefunc.as_ref().map(function_name).transpose()?,
        initcond: ca.initcond.clone(),
        comment: None,
        moving: ca
            .moving
            .as_ref()
            .map(|m| {
                Ok::<_, BrookError>(MovingMeta {
                    msfunc: function_name(&m.msfunc)?,
                    minvfunc: function_name(&m.minvfunc)?,
                    mstype: pg_type(&m.mstype)?,
                    mfinalfunc: m.mfinalfunc.as_ref().map(function_name).transpose()?,
                    minitcond: m.minitcond.clone(),
                })
            })
            .transpose()?,
    })
}

/// A type of the aggregate; polymorphic pseudo-types are named as what is unsupported.
fn pg_type(t: &DataType) -> Result<PgType> {
    let written = t.to_string().to_ascii_lowercase();
    if written.starts_with("any") || written == "internal" {
        return Err(brook_err!(
            Unsupported,
            "aggregates of the pseudo-type {written} (polymorphic or internal states): \
             declare concrete types"
        ));
    }
    PgType::from_sql(t)
}

/// A function named by an option (`SFUNC = [schema.]name`): functions are one namespace
/// per database, so the name alone.
fn function_name(name: &ObjectName) -> Result<String> {
    let parts = crate::ident::object_parts(name)?;
    parts
        .last()
        .cloned()
        .ok_or_else(|| brook_err!(Syntax, "a function name is required"))
}
