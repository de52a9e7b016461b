//! The sequence functions: `nextval`, `currval`, `setval`, `lastval` and
//! `pg_get_serial_sequence`. They are registered per session: `currval` and `lastval`
//! answer what this session's `nextval` returned last, as in PostgreSQL.

use crate::catalog::sequence::find;
use crate::catalog::Catalog;
use crate::ident::{object_parts, quote_if_needed};
use brook_common::{brook_err, BrookError, Result};
use datafusion::arrow::array::{Array, ArrayRef, AsArray, Int64Array, StringArray};
use datafusion::arrow::datatypes::DataType;
use datafusion::error::{DataFusionError, Result as DfResult};
use datafusion::logical_expr::{
    ColumnarValue, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, TypeSignature,
    Volatility,
};
use datafusion::prelude::SessionContext;
use datafusion::scalar::ScalarValue;
use datafusion::sql::sqlparser::dialect::PostgreSqlDialect;
use datafusion::sql::sqlparser::parser::Parser;
use datafusion::sql::sqlparser::tokenizer::Token;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// This session's sequence values: per sequence id the last `nextval` returned (or
/// `setval` set as called), and the sequence `nextval` took a value of last (`lastval`
/// reads that one's, as PostgreSQL's: a `setval` of another sequence does not change it).
#[derive(Debug, Default)]
struct Returned {
    by_sequence: HashMap<u64, i64>,
    last: Option<u64>,
}

/// Which function an instance is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Kind {
    Nextval,
    Currval,
    Setval,
    Lastval,
    SerialSequence,
}

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::Nextval => "nextval",
            Kind::Currval => "currval",
            Kind::Setval => "setval",
            Kind::Lastval => "lastval",
            Kind::SerialSequence => "pg_get_serial_sequence",
        }
    }
}

/// One of the sequence functions of a session on database `db`.
#[derive(Debug)]
struct SequenceFunction {
    kind: Kind,
    catalog: Arc<Catalog>,
    db: String,
    returned: Arc<Mutex<Returned>>,
    /// The session's temporary schema, once it has one (`session::temp`).
    temp_schema: Arc<Mutex<Option<String>>>,
    signature: Signature,
}

/// Where an unqualified sequence or table name is looked for: the session's temporary
/// schema first (with the names it holds), then the current schema.
struct Search {
    schema: String,
    temp: Option<(String, std::collections::HashSet<String>)>,
}

impl Search {
    fn schema_of(&self, name: &str) -> String {
        match &self.temp {
            Some((temp, names)) if names.contains(name) => temp.clone(),
            _ => self.schema.clone(),
        }
    }

    /// The temporary schema `pg_temp` names (a name no schema has when there is none).
    fn temp_schema(&self) -> String {
        self.temp
            .as_ref()
            .map_or_else(|| "pg_temp".to_string(), |(t, _)| t.clone())
    }
}

// One instance per name and session, never compared across sessions.
impl PartialEq for SequenceFunction {
    fn eq(&self, other: &Self) -> bool {
        self.kind == other.kind
    }
}
impl Eq for SequenceFunction {}
impl std::hash::Hash for SequenceFunction {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.kind.hash(state);
    }
}

/// Register the sequence functions of a session on database `db`.
pub fn register(
    ctx: &SessionContext,
    catalog: Arc<Catalog>,
    db: &str,
    temp_schema: Arc<Mutex<Option<String>>>,
) {
    let returned = Arc::new(Mutex::new(Returned::default()));
    let text = DataType::Utf8;
    let signatures = [
        (
            Kind::Nextval,
            Signature::exact(vec![text.clone()], Volatility::Volatile),
        ),
        (
            Kind::Currval,
            Signature::exact(vec![text.clone()], Volatility::Volatile),
        ),
        (
            Kind::Setval,
            Signature::one_of(
                vec![
                    TypeSignature::Exact(vec![text.clone(), DataType::Int64]),
                    TypeSignature::Exact(vec![text.clone(), DataType::Int64, DataType::Boolean]),
                ],
                Volatility::Volatile,
            ),
        ),
        (
            Kind::Lastval,
            Signature::exact(vec![], Volatility::Volatile),
        ),
        (
            Kind::SerialSequence,
            Signature::exact(vec![text.clone(), text], Volatility::Stable),
        ),
    ];
    for (kind, signature) in signatures {
        ctx.register_udf(ScalarUDF::new_from_impl(SequenceFunction {
            kind,
            catalog: catalog.clone(),
            db: db.to_string(),
            returned: returned.clone(),
            temp_schema: temp_schema.clone(),
            signature,
        }));
    }
}

impl ScalarUDFImpl for SequenceFunction {
    fn name(&self) -> &str {
        self.kind.name()
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _arg_types: &[DataType]) -> DfResult<DataType> {
        Ok(match self.kind {
            Kind::SerialSequence => DataType::Utf8,
            _ => DataType::Int64,
        })
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> DfResult<ColumnarValue> {
        let search = Search {
            schema: args.config_options.catalog.default_schema.clone(),
            temp: self.temp_names(),
        };
        let rows = args.number_rows;
        let out = match self.kind {
            Kind::Nextval => self.nextval(&args.args, &search, rows),
            Kind::Currval => self.currval(&args.args, &search, rows),
            Kind::Setval => self.setval(&args.args, &search, rows),
            Kind::Lastval => self.lastval(rows),
            Kind::SerialSequence => self.serial_sequence(&args.args, &search, rows),
        };
        out.map(ColumnarValue::Array)
            .map_err(|e| DataFusionError::External(Box::new(e)))
    }
}

impl SequenceFunction {
    /// The session's temporary schema and the sequences and relations in it.
    fn temp_names(&self) -> Option<(String, std::collections::HashSet<String>)> {
        let temp = self.temp_schema.lock().ok()?.clone()?;
        let doc = self.catalog.read();
        let schema = doc.database(&self.db).ok()?.schemas.get(&temp)?;
        let names = schema
            .sequences
            .keys()
            .chain(schema.relations.keys())
            .cloned()
            .collect();
        Some((temp, names))
    }

    fn returned(&self) -> std::sync::MutexGuard<'_, Returned> {
        match self.returned.lock() {
            Ok(g) => g,
            Err(p) => p.into_inner(),
        }
    }

    /// `nextval(name)`: a sequence named once for all rows (the usual case, and a column
    /// default) takes its `rows` values in one call.
    fn nextval(&self, args: &[ColumnarValue], search: &Search, rows: usize) -> Result<ArrayRef> {
        if let ColumnarValue::Scalar(name) = &args[0] {
            let Some(name) = scalar_text(name) else {
                return Ok(Arc::new(Int64Array::new_null(rows)));
            };
            let (s, n) = resolve(&name, search)?;
            let values = self.catalog.nextval(&self.db, &s, &n, rows)?;
            self.remember(&s, &n, values.last().copied(), true)?;
            return Ok(Arc::new(Int64Array::from(values)));
        }
        per_name(&args[0], rows, search, |s, n| {
            let v = self.catalog.nextval(&self.db, s, n, 1)?[0];
            self.remember(s, n, Some(v), true)?;
            Ok(v)
        })
    }

    fn remember(
        &self,
        schema: &str,
        name: &str,
        value: Option<i64>,
        from_nextval: bool,
    ) -> Result<()> {
        let Some(v) = value else {
            return Ok(());
        };
        let id = find(&self.catalog.read(), &self.db, schema, name)?.id;
        let mut r = self.returned();
        r.by_sequence.insert(id, v);
        if from_nextval {
            r.last = Some(id);
        }
        Ok(())
    }

    fn currval(&self, args: &[ColumnarValue], search: &Search, rows: usize) -> Result<ArrayRef> {
        per_name(&args[0], rows, search, |s, n| {
            let id = find(&self.catalog.read(), &self.db, s, n)?.id;
            let v = self.returned().by_sequence.get(&id).copied();
            v.ok_or_else(|| {
                brook_err!(
                    ObjectState,
                    "currval of sequence \"{n}\" is not yet defined in this session"
                )
            })
        })
    }

    fn lastval(&self, rows: usize) -> Result<ArrayRef> {
        let returned = self.returned();
        // A sequence dropped since has no last value (as in PostgreSQL).
        let exists = |id: u64| {
            let doc = self.catalog.read();
            doc.database(&self.db).is_ok_and(|d| {
                d.schemas
                    .values()
                    .any(|s| s.sequences.values().any(|q| q.id == id))
            })
        };
        let v = returned
            .last
            .filter(|&id| exists(id))
            .and_then(|id| returned.by_sequence.get(&id).copied())
            .ok_or_else(|| brook_err!(ObjectState, "lastval is not yet defined in this session"))?;
        Ok(Arc::new(Int64Array::from(vec![v; rows])))
    }

    /// `setval(name, value [, is_called])`: returns `value`.
    fn setval(&self, args: &[ColumnarValue], search: &Search, rows: usize) -> Result<ArrayRef> {
        let names = text_array(&args[0], rows)?;
        let values = args[1].to_array(rows)?;
        let values = values.as_primitive::<datafusion::arrow::datatypes::Int64Type>();
        let called = match args.get(2) {
            Some(c) => Some(c.to_array(rows)?),
            None => None,
        };
        let mut out = Vec::with_capacity(rows);
        for i in 0..rows {
            let is_called = match &called {
                Some(c) if c.is_null(i) => None,
                Some(c) => Some(c.as_boolean().value(i)),
                None => Some(true),
            };
            if names.is_null(i) || values.is_null(i) || is_called.is_none() {
                out.push(None);
                continue;
            }
            let (s, n) = resolve(names.value(i), search)?;
            let v = values.value(i);
            let is_called = is_called.unwrap_or(true);
            self.catalog.setval(&self.db, &s, &n, v, is_called)?;
            // As in PostgreSQL, a value set as called is this session's currval too.
            if is_called {
                self.remember(&s, &n, Some(v), false)?;
            }
            out.push(Some(v));
        }
        Ok(Arc::new(Int64Array::from(out)))
    }

    /// `pg_get_serial_sequence(table, column)`: the schema-qualified name of the sequence
    /// the column's SERIAL or identity owns, NULL when it owns none.
    fn serial_sequence(
        &self,
        args: &[ColumnarValue],
        search: &Search,
        rows: usize,
    ) -> Result<ArrayRef> {
        let tables = text_array(&args[0], rows)?;
        let columns = text_array(&args[1], rows)?;
        let doc = self.catalog.read();
        let db = doc.database(&self.db)?;
        let mut out = Vec::with_capacity(rows);
        for i in 0..rows {
            if tables.is_null(i) || columns.is_null(i) {
                out.push(None);
                continue;
            }
            let (s, t) = resolve(tables.value(i), search)?;
            let column = columns.value(i);
            let rel = db
                .schemas
                .get(&s)
                .and_then(|m| m.relations.get(&t))
                .ok_or_else(|| BrookError::UndefinedTable(tables.value(i).into()))?;
            rel.column_index(column, &t)?;
            let owned = db.schemas.get(&s).and_then(|m| {
                m.sequences.iter().find(|(_, q)| {
                    q.owned_by
                        .as_ref()
                        .is_some_and(|(ot, oc)| *ot == t && oc == column)
                })
            });
            out.push(
                owned.map(|(name, _)| format!("{}.{}", quote_if_needed(&s), quote_if_needed(name))),
            );
        }
        Ok(Arc::new(StringArray::from(out)))
    }
}

/// A sequence or table name as written in a string (`'s'`, `'public.s'`, `'"S"'`), as
/// (schema, name): an unqualified one in the session's temporary schema when that holds it,
/// else in the current schema; `pg_temp.x` in the temporary schema.
fn resolve(text: &str, search: &Search) -> Result<(String, String)> {
    let name = Parser::new(&PostgreSqlDialect {})
        .try_with_sql(text)
        .and_then(|mut p| {
            let name = p.parse_object_name(false)?;
            p.expect_token(&Token::EOF)?;
            Ok(name)
        })
        .map_err(|_| BrookError::Semantic {
            message: "invalid name syntax".into(),
            code: "42602",
        })?;
    let parts = object_parts(&name)?;
    match parts.as_slice() {
        [n] => Ok((search.schema_of(n), n.clone())),
        [s, n] if s == "pg_temp" => Ok((search.temp_schema(), n.clone())),
        [s, n] => Ok((s.clone(), n.clone())),
        [_, s, n] => Ok((s.clone(), n.clone())),
        _ => Err(brook_err!(
            Syntax,
            "improper relation name (too many dotted names): {text}"
        )),
    }
}

/// `f(schema, name)` for the sequence named in each row of `names` (NULL for a NULL name).
fn per_name(
    names: &ColumnarValue,
    rows: usize,
    search: &Search,
    mut f: impl FnMut(&str, &str) -> Result<i64>,
) -> Result<ArrayRef> {
    let names = text_array(names, rows)?;
    let mut out = Vec::with_capacity(rows);
    for name in names.iter() {
        out.push(match name {
            Some(name) => {
                let (s, n) = resolve(name, search)?;
                Some(f(&s, &n)?)
            }
            None => None,
        });
    }
    Ok(Arc::new(Int64Array::from(out)))
}

fn scalar_text(v: &ScalarValue) -> Option<String> {
    match v {
        ScalarValue::Utf8(s) | ScalarValue::LargeUtf8(s) | ScalarValue::Utf8View(s) => s.clone(),
        _ => None,
    }
}

fn text_array(v: &ColumnarValue, rows: usize) -> Result<StringArray> {
    let a = v.to_array(rows)?;
    let a = datafusion::arrow::compute::cast(&a, &DataType::Utf8)?;
    Ok(a.as_string::<i32>().clone())
}
