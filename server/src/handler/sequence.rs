//! CREATE, ALTER and DROP SEQUENCE, and the sequences SERIAL and identity columns own.

use crate::catalog::sequence::{SequenceMeta, SequenceOptions};
use crate::catalog::{ColumnMeta, Identity};
use crate::ident::object_parts;
use crate::pg::types::PgType;
use crate::session::{Notice, Outcome, Session};
use brook_common::{brook_err, BrookError, Result};
use brook_planner::parser::AlterSequence;
use datafusion::sql::sqlparser::ast::{
    self, ColumnOption, DataType, Expr, GeneratedAs, ObjectName,
};

/// `CREATE SEQUENCE` as sqlparser gives it.
pub(crate) struct CreateSequence {
    pub temporary: bool,
    pub if_not_exists: bool,
    pub name: ObjectName,
    pub data_type: Option<DataType>,
    pub options: Vec<ast::SequenceOptions>,
    pub owned_by: Option<ObjectName>,
}

impl Session {
    pub(crate) fn create_sequence(&mut self, cs: CreateSequence) -> Result<Outcome> {
        if cs.temporary {
            return Err(brook_err!(Unsupported, "CREATE TEMPORARY SEQUENCE"));
        }
        let (schema, name) = self.resolve(&cs.name)?;
        let ty = match &cs.data_type {
            Some(t) => PgType::from_sql(t)?,
            None => PgType::Int8,
        };
        let mut meta = SequenceMeta::new(ty, &sequence_options(&cs.options)?)?;
        if let Some(owner) = &cs.owned_by {
            meta.owned_by = owner_of(owner, &schema)?;
        }
        let created =
            self.engine
                .create_sequence(&self.db, &schema, &name, meta, cs.if_not_exists)?;
        if !created {
            self.notices.push(Notice::relation_exists(&name));
        }
        Ok(Outcome::Command("CREATE SEQUENCE".into()))
    }

    pub(crate) fn alter_sequence(&mut self, a: AlterSequence) -> Result<Outcome> {
        let (schema, name) = self.resolve(&a.name)?;
        let c = a.clauses;
        let ty = c.data_type.as_ref().map(PgType::from_sql).transpose()?;
        let given = sequence_options(&c.options)?;
        let owner = match &c.owned_by {
            Some(o) => {
                let owner = owner_of(o, &schema)?;
                if let Some((table, column)) = &owner {
                    let (meta, _) = self.relation(&schema, table)?;
                    meta.column_index(column, table)?;
                }
                Some(owner)
            }
            None => None,
        };
        let restart = match &c.restart {
            Some(Some(e)) => Some(Some(integer(e)?)),
            Some(None) => Some(None),
            None => None,
        };
        // On a cluster node the value the sequence continues from is the cluster's counter,
        // which each node reads at another time: only a RESTART value (in the catalog,
        // alike on every node) is checked against the bounds there; a counter beyond a new
        // bound fails its next `nextval` (2200H).
        let check_current = restart.is_some() || self.engine.cluster.get().is_none();
        let altered = self
            .engine
            .catalog
            .alter_sequence(&self.db.name, &schema, &name, |old| {
                let mut next = old.altered(ty.clone(), &given)?;
                if let Some(o) = &owner {
                    next.owned_by = o.clone();
                }
                if let Some(at) = restart {
                    next.last_value = at.unwrap_or(next.start);
                    next.is_called = false;
                    next.epoch += 1;
                }
                if check_current {
                    next.check_state()?;
                }
                Ok(next)
            });
        match altered {
            Err(BrookError::UndefinedTable(_)) if a.if_exists => {
                self.notices
                    .push(format!("relation \"{name}\" does not exist, skipping").into());
            }
            other => other?,
        }
        Ok(Outcome::Command("ALTER SEQUENCE".into()))
    }

    pub(crate) fn drop_sequences(
        &mut self,
        names: &[ObjectName],
        if_exists: bool,
        cascade: bool,
    ) -> Result<Outcome> {
        // Every name is checked before any is dropped (a failed DROP drops nothing).
        let mut targets = Vec::new();
        for n in names {
            let (schema, name) = self.resolve(n)?;
            {
                let doc = self.engine.catalog.read();
                match crate::catalog::sequence::find(&doc, &self.db.name, &schema, &name) {
                    Err(BrookError::UndefinedTable(_)) if if_exists => {}
                    Err(e) => return Err(e),
                    Ok(_) => {}
                }
            }
            targets.push((schema, name));
        }
        for (schema, name) in targets {
            if !self
                .engine
                .drop_sequence(&self.db, &schema, &name, if_exists, cascade)?
            {
                self.notices
                    .push(format!("sequence \"{name}\" does not exist, skipping").into());
            }
        }
        Ok(Outcome::Command("DROP SEQUENCE".into()))
    }
}

/// The (table, column) of `OWNED BY table.column` in `schema`, None for `OWNED BY NONE`.
fn owner_of(owner: &ObjectName, schema: &str) -> Result<Option<(String, String)>> {
    let parts = object_parts(owner)?;
    match parts.as_slice() {
        [none] if none == "none" => Ok(None),
        [t, c] => Ok(Some((t.clone(), c.clone()))),
        [s, t, c] if s == schema => Ok(Some((t.clone(), c.clone()))),
        [_, _, _] => Err(brook_err!(
            InvalidParameter,
            "sequence must be in same schema as table it is linked to"
        )),
        _ => Err(brook_err!(
            Syntax,
            "invalid OWNED BY option: specify OWNED BY table.column or OWNED BY NONE"
        )),
    }
}

/// The integer type a SERIAL type name stands for (`serial`, `bigserial`, `smallserial`
/// and their `serial4`/`serial8`/`serial2` spellings).
pub(crate) fn serial_type(dt: &DataType) -> Option<PgType> {
    let DataType::Custom(name, args) = dt else {
        return None;
    };
    if !args.is_empty() || name.0.len() != 1 {
        return None;
    }
    let n = name.0[0].as_ident()?.value.to_ascii_lowercase();
    match n.as_str() {
        "serial" | "serial4" => Some(PgType::Int4),
        "bigserial" | "serial8" => Some(PgType::Int8),
        "smallserial" | "serial2" => Some(PgType::Int2),
        _ => None,
    }
}

/// The sequence a column definition asks for — SERIAL (then `serial` is its integer type)
/// or `GENERATED ... AS IDENTITY` — with the column marked accordingly: NOT NULL, and for
/// identity the kind. Its DEFAULT is set when the sequence is named (the catalog chooses
/// the name). None for other columns.
pub(crate) fn owned_sequence(
    col: &mut ColumnMeta,
    serial: bool,
    options: &[ast::ColumnOptionDef],
) -> Result<Option<SequenceMeta>> {
    let mut identity = None;
    for opt in options {
        if let ColumnOption::Generated {
            generated_as,
            sequence_options,
            generation_expr,
            ..
        } = &opt.option
        {
            if generation_expr.is_some() {
                return Err(brook_err!(
                    Unsupported,
                    "generated columns (GENERATED ALWAYS AS (expression))"
                ));
            }
            if identity.is_some() {
                return Err(brook_err!(
                    Syntax,
                    "multiple identity specifications for column \"{}\"",
                    col.name
                ));
            }
            let kind = match generated_as {
                GeneratedAs::ByDefault => Identity::ByDefault,
                _ => Identity::Always,
            };
            identity = Some((kind, sequence_options.clone().unwrap_or_default()));
        }
    }
    let options = match (&identity, serial) {
        (None, false) => return Ok(None),
        (Some(_), true) => {
            return Err(brook_err!(
                Syntax,
                "both default and identity specified for column \"{}\"",
                col.name
            ))
        }
        (Some((_, o)), false) => o.clone(),
        (None, true) => Vec::new(),
    };
    if col.default.is_some() {
        let what = if serial { "default" } else { "identity" };
        return Err(brook_err!(
            Syntax,
            "both default and {what} specified for column \"{}\"",
            col.name
        ));
    }
    if !matches!(col.ty, PgType::Int2 | PgType::Int4 | PgType::Int8) {
        return Err(brook_err!(
            InvalidParameter,
            "identity column type must be smallint, integer, or bigint"
        ));
    }
    col.not_null = true;
    col.identity = identity.map(|(kind, _)| kind);
    Ok(Some(SequenceMeta::new(
        col.ty.clone(),
        &sequence_options(&options)?,
    )?))
}

/// The options of `CREATE SEQUENCE` or of an identity column.
fn sequence_options(options: &[ast::SequenceOptions]) -> Result<SequenceOptions> {
    let mut o = SequenceOptions::default();
    for opt in options {
        match opt {
            ast::SequenceOptions::IncrementBy(e, _) => o.increment = Some(integer(e)?),
            ast::SequenceOptions::MinValue(e) => {
                o.min = e.as_ref().map(integer).transpose()?;
                o.default_min = e.is_none();
            }
            ast::SequenceOptions::MaxValue(e) => {
                o.max = e.as_ref().map(integer).transpose()?;
                o.default_max = e.is_none();
            }
            ast::SequenceOptions::StartWith(e, _) => o.start = Some(integer(e)?),
            ast::SequenceOptions::Cache(e) => o.cache = Some(integer(e)?),
            ast::SequenceOptions::Cycle(no) => o.cycle = Some(!no),
        }
    }
    Ok(o)
}

/// An option's value: an integer literal, possibly negative.
fn integer(e: &Expr) -> Result<i64> {
    let text = match e {
        Expr::UnaryOp {
            op: ast::UnaryOperator::Minus,
            expr,
        } => format!("-{expr}"),
        Expr::UnaryOp {
            op: ast::UnaryOperator::Plus,
            expr,
        } => expr.to_string(),
        other => other.to_string(),
    };
    text.parse().map_err(|_| {
        BrookError::Syntax(format!(
            "syntax error: sequence option value {e} is not an integer"
        ))
    })
}
