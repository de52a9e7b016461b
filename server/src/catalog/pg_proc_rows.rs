//! `brook_functions` and `brook_aggregates`: the user functions and aggregates of a
//! database in pg_proc's and pg_aggregate's terms (the `pg_proc` and `pg_aggregate` views
//! add them to the crate's rows), computed from the catalog at each scan.

use super::pg_rows::{stable_oid, Computed, Source};
use crate::catalog::function::{FunctionMeta, Language};
use crate::catalog::{CatalogDoc, SchemaMeta};
use brook_common::Result;
use datafusion::arrow::array::{
    ArrayRef, BooleanArray, Int16Array, Int32Array, RecordBatch, StringArray,
};
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use std::collections::BTreeMap;
use std::sync::Arc;

impl Computed {
    /// `brook_functions`: a row per SQL function and per aggregate, in pg_proc's terms.
    pub(super) fn functions(source: Source) -> Computed {
        Computed {
            schema: Arc::new(Schema::new(vec![
                Field::new("nspname", DataType::Utf8, false),
                Field::new("proname", DataType::Utf8, false),
                Field::new("oid", DataType::Int32, false),
                Field::new("proargtypes", DataType::Utf8, false),
                Field::new("proargnames", DataType::Utf8, true),
                Field::new("pronargs", DataType::Int16, false),
                Field::new("prorettype", DataType::Int32, false),
                Field::new("prosrc", DataType::Utf8, false),
                Field::new("provolatile", DataType::Utf8, false),
                Field::new("proisstrict", DataType::Boolean, false),
                Field::new("arguments", DataType::Utf8, false),
                Field::new("prokind", DataType::Utf8, false),
                // `pg_get_functiondef`'s text (NULL for an aggregate, as PostgreSQL has
                // none: it refuses one)
                Field::new("definition", DataType::Utf8, true),
                Field::new("prolang", DataType::Int32, false),
            ])),
            source,
            rows: function_rows,
        }
    }

    /// `brook_aggregates`: a row per aggregate, in pg_aggregate's terms (functions by name,
    /// schema-qualified for user functions as `regproc` prints them for pg_dump).
    pub(super) fn aggregates(source: Source) -> Computed {
        Computed {
            schema: Arc::new(Schema::new(vec![
                Field::new("oid", DataType::Int32, false),
                Field::new("aggtransfn", DataType::Utf8, false),
                Field::new("aggfinalfn", DataType::Utf8, false),
                Field::new("aggcombinefn", DataType::Utf8, false),
                Field::new("aggtranstype", DataType::Int32, false),
                Field::new("agginitval", DataType::Utf8, true),
                Field::new("aggmtransfn", DataType::Utf8, false),
                Field::new("aggminvtransfn", DataType::Utf8, false),
                Field::new("aggmfinalfn", DataType::Utf8, false),
                Field::new("aggmtranstype", DataType::Int32, false),
                Field::new("aggminitval", DataType::Utf8, true),
            ])),
            source,
            rows: aggregate_rows,
        }
    }
}

/// The oid of a function or aggregate `name` of schema `schema`.
fn proc_oid(schema: &str, name: &str) -> i32 {
    stable_oid(&format!("{schema}.{name}"))
}

/// One pg_proc row's columns, gathered.
#[derive(Default)]
struct ProcRows {
    text: [Vec<String>; 7],
    oid: Vec<i32>,
    names: Vec<Option<String>>,
    nargs: Vec<i16>,
    ret: Vec<i32>,
    strict: Vec<bool>,
    definition: Vec<Option<String>>,
    language: Vec<i32>,
}

/// A user function's `CREATE OR REPLACE FUNCTION`, laid out as PostgreSQL's
/// `pg_get_functiondef` lays it out (psql's `\sf` and `\ef` print it).
fn function_definition(schema: &str, name: &str, args: &str, f: &FunctionMeta) -> String {
    let quote = crate::ident::quote_if_needed;
    let mut def = format!(
        "CREATE OR REPLACE FUNCTION {}.{}({args})\n RETURNS {}\n LANGUAGE {}\n",
        quote(schema),
        quote(name),
        f.returns.name(),
        f.language.name()
    );
    let mut options = vec![];
    match f.volatility.as_str() {
        "immutable" => options.push("IMMUTABLE"),
        "stable" => options.push("STABLE"),
        _ => {}
    }
    if f.strict {
        options.push("STRICT");
    }
    if !options.is_empty() {
        def.push_str(&format!(" {}\n", options.join(" ")));
    }
    let body = source_text(f);
    // As PostgreSQL's: a quote the body does not hold (`$function$`, `$functionx$`, ...).
    let mut tag = "function".to_string();
    while body.contains(&format!("${tag}$")) {
        tag.push('x');
    }
    def.push_str(&format!("AS ${tag}${body}${tag}$\n"));
    def
}

/// A function's body as PostgreSQL keeps a body given as a string (`prosrc`): a SQL
/// function's whole SELECT, a JavaScript function's text.
fn source_text(f: &FunctionMeta) -> String {
    match f.language {
        Language::Sql => format!("SELECT {}", f.body),
        Language::Javascript => f.body.clone(),
    }
}

fn function_rows(doc: &CatalogDoc, source: &Source, schema: &SchemaRef) -> Result<RecordBatch> {
    let mut r = ProcRows::default();
    let schemas = &doc.database(&source.database)?.schemas;
    for (sname, s) in schemas {
        for (fname, f) in &s.functions {
            let types: Vec<String> = f
                .args
                .iter()
                .map(|a| a.ty.wire().oid().to_string())
                .collect();
            let args: Vec<String> = f
                .args
                .iter()
                .map(|a| match &a.name {
                    Some(n) => format!("{} {}", crate::ident::quote_if_needed(n), a.ty.name()),
                    None => a.ty.name(),
                })
                .collect();
            r.text[0].push(sname.clone());
            r.text[1].push(fname.clone());
            r.text[2].push(types.join(" "));
            r.text[3].push(source_text(f));
            r.text[4].push(f.volatility.chars().next().unwrap_or('v').to_string());
            r.definition
                .push(Some(function_definition(sname, fname, &args.join(", "), f)));
            r.text[5].push(args.join(", "));
            r.text[6].push("f".into());
            r.oid.push(proc_oid(sname, fname));
            r.names
                .push(f.args.iter().any(|a| a.name.is_some()).then(|| {
                    let n: Vec<String> = f
                        .args
                        .iter()
                        .map(|a| a.name.clone().unwrap_or_default())
                        .collect();
                    format!("{{{}}}", n.join(","))
                }));
            r.nargs
                .push(i16::try_from(f.args.len()).unwrap_or(i16::MAX));
            r.ret.push(f.returns.wire().oid() as i32);
            r.strict.push(f.strict);
            r.language.push(f.language.oid());
        }
        for (aname, a) in &s.aggregates {
            let types: Vec<String> = a.args.iter().map(|t| t.wire().oid().to_string()).collect();
            let names: Vec<String> = a.args.iter().map(|t| t.name()).collect();
            r.text[0].push(sname.clone());
            r.text[1].push(aname.clone());
            r.text[2].push(types.join(" "));
            // PostgreSQL's aggregates have this body.
            r.text[3].push("aggregate_dummy".into());
            r.text[4].push("i".into());
            r.text[5].push(names.join(", "));
            r.text[6].push("a".into());
            r.definition.push(None);
            r.oid.push(proc_oid(sname, aname));
            r.names.push(None);
            r.nargs
                .push(i16::try_from(a.args.len()).unwrap_or(i16::MAX));
            // The final function's result, or the state's.
            let returns = a
                .finalfunc
                .as_deref()
                .and_then(|f| user_function(schemas, f))
                .map_or_else(|| a.stype.clone(), |(_, f)| f.returns.clone());
            r.ret.push(returns.wire().oid() as i32);
            r.strict.push(false);
            // PostgreSQL's aggregates are `internal` (12).
            r.language.push(12);
        }
    }
    let [nsp, pro, argtypes, src, vol, args, kind] = r.text;
    Ok(RecordBatch::try_new(
        schema.clone(),
        vec![
            Arc::new(StringArray::from(nsp)) as ArrayRef,
            Arc::new(StringArray::from(pro)),
            Arc::new(Int32Array::from(r.oid)),
            Arc::new(StringArray::from(argtypes)),
            Arc::new(StringArray::from(r.names)),
            Arc::new(Int16Array::from(r.nargs)),
            Arc::new(Int32Array::from(r.ret)),
            Arc::new(StringArray::from(src)),
            Arc::new(StringArray::from(vol)),
            Arc::new(BooleanArray::from(r.strict)),
            Arc::new(StringArray::from(args)),
            Arc::new(StringArray::from(kind)),
            Arc::new(StringArray::from(r.definition)),
            Arc::new(Int32Array::from(r.language)),
        ],
    )?)
}

/// The user function `name` and its schema.
fn user_function<'a>(
    schemas: &'a BTreeMap<String, SchemaMeta>,
    name: &str,
) -> Option<(&'a str, &'a crate::catalog::function::FunctionMeta)> {
    schemas
        .iter()
        .find_map(|(s, m)| m.functions.get(name).map(|f| (s.as_str(), f)))
}

fn aggregate_rows(doc: &CatalogDoc, source: &Source, schema: &SchemaRef) -> Result<RecordBatch> {
    let schemas = &doc.database(&source.database)?.schemas;
    // regproc's text: a user function qualified by its schema, a built-in one bare, `-`
    // for none.
    let regproc = |f: Option<&str>| match f {
        None => "-".to_string(),
        Some(f) => match user_function(schemas, f) {
            Some((s, _)) => format!(
                "{}.{}",
                crate::ident::quote_if_needed(s),
                crate::ident::quote_if_needed(f)
            ),
            None => f.to_string(),
        },
    };
    let mut cols: [Vec<String>; 6] = Default::default();
    let (mut oid, mut transtype, mut initval) = (vec![], vec![], vec![]);
    let (mut mtranstype, mut minitval) = (vec![], vec![]);
    for (sname, s) in schemas {
        for (aname, a) in &s.aggregates {
            oid.push(proc_oid(sname, aname));
            cols[0].push(regproc(Some(&a.sfunc)));
            cols[1].push(regproc(a.finalfunc.as_deref()));
            cols[2].push(regproc(a.combinefunc.as_deref()));
            transtype.push(a.stype.wire().oid() as i32);
            initval.push(a.initcond.clone());
            let m = a.moving.as_ref();
            cols[3].push(regproc(m.map(|m| m.msfunc.as_str())));
            cols[4].push(regproc(m.map(|m| m.minvfunc.as_str())));
            cols[5].push(regproc(m.and_then(|m| m.mfinalfunc.as_deref())));
            mtranstype.push(m.map_or(0, |m| m.mstype.wire().oid() as i32));
            minitval.push(m.and_then(|m| m.minitcond.clone()));
        }
    }
    let [transfn, finalfn, combinefn, mtransfn, minvtransfn, mfinalfn] = cols;
    Ok(RecordBatch::try_new(
        schema.clone(),
        vec![
            Arc::new(Int32Array::from(oid)) as ArrayRef,
            Arc::new(StringArray::from(transfn)),
            Arc::new(StringArray::from(finalfn)),
            Arc::new(StringArray::from(combinefn)),
            Arc::new(Int32Array::from(transtype)),
            Arc::new(StringArray::from(initval)),
            Arc::new(StringArray::from(mtransfn)),
            Arc::new(StringArray::from(minvtransfn)),
            Arc::new(StringArray::from(mfinalfn)),
            Arc::new(Int32Array::from(mtranstype)),
            Arc::new(StringArray::from(minitval)),
        ],
    )?)
}
