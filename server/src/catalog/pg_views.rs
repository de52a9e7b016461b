//! The pg_catalog tables that describe user objects, from Brook's catalog.
//!
//! `datafusion-pg-catalog` derives `pg_class` and `pg_attribute` from Arrow schemas and
//! serves `pg_index`, `pg_constraint` and `pg_attrdef` as PostgreSQL's own system rows: a
//! client reflecting a table (SQLAlchemy's `get_pk_constraint`, pgjdbc's `getPrimaryKeys`,
//! psql's `\d`) would find no primary key, no index, no default, and `varchar(30)` as
//! `text`. Brook knows these; this module puts them where clients look:
//!
//! - `pg_index`: one row per primary key and per index, `indkey` (and `indclass`,
//!   `indcollation`) an array so `unnest(indkey)` works as on PostgreSQL's vectors, and
//!   `indoption` in int2vector's text form, which SQLAlchemy splits;
//! - `pg_constraint`: one `p` row per primary key, backed by its `pg_index` row;
//! - `pg_attrdef`: one row per column default, `adbin` the default's SQL text (the
//!   `pg_get_expr` registered here gives it back);
//! - `pg_class`'s branches (relations, indexes, sequences) all without the crate's oid
//!   field metadata (`brook_plain`), which some branches alone made DataFusion refuse the
//!   UNION's plan (`SELECT DISTINCT relnamespace FROM pg_class` was XX000);
//! - `pg_class` and `pg_attribute` give the system catalogs PostgreSQL's oids
//!   (`brook_catalog_oids`: pg_class is 1259, as `'pg_class'::regclass` and `tableoid`);
//! - `pg_attribute`: the crate's rows with Brook's declared type (`atttypid`, `atttypmod`)
//!   and `atthasdef`, the option arrays (`attoptions`, `attfdwoptions`) NULL arrays
//!   (no column has options), as pg_dump passes them to `array_to_string`;
//! - `pg_class`: the crate's rows (`relhasindex` true for indexed tables, and the
//!   `reloptions`/`relacl` columns clients select) plus a row of kind `i` per index;
//! - `pg_class` rows of kind `S` and `pg_sequence`: the sequences (`CREATE SEQUENCE`, and
//!   those SERIAL and identity columns own); `pg_attribute.attidentity` marks identity
//!   columns (which, as in PostgreSQL, have no `pg_attrdef` row);
//! - `pg_roles`: the one role, with oid 10, the owner every catalog names;
//! - `pg_namespace`: the crate's rows (and `information_schema`, oid 13283, where the
//!   crate's pg_type and pg_proc put its types and functions) with `nspacl` an array (NULL: default privileges), as
//!   psql's `\dn+` passes it to `array_to_string`;
//! - `pg_policy`: no rows (Brook has no row-level security), `polroles` an array as
//!   psql's `\dp` reads it;
//! - `pg_description`: the comments of `COMMENT ON` (relations and their columns; the
//!   rewritten `obj_description`/`col_description` read it), `classoid` pg_class's
//!   PostgreSQL oid, 1259 (what `'pg_class'::regclass` is: `brook_planner::system_columns`),
//!   and schema `public`'s standard comment;
//! - `pg_depend`: the crate's rows and Brook's dependencies pg_dump orders its output by:
//!   a sequence on the column that owns it (`a`, `i` for identity), a column default on the
//!   sequence its `nextval` reads (`n`), a view on each relation it reads (`n`; PostgreSQL
//!   records that through the view's rewrite rule, Brook's views have none);
//! - `brook_view_defs`: what `pg_get_viewdef(view)` looks up (rewritten so);
//! - `brook_function_args`: a function's argument types, what
//!   `pg_get_function_arguments` looks up (rewritten so; psql's `\df`);
//! - `brook_function_defs`: a SQL function's `CREATE OR REPLACE FUNCTION`, what
//!   `pg_get_functiondef` looks up (rewritten so; psql's `\sf`);
//! - `brook_index_defs`: what `pg_get_indexdef(index, column)` looks up (rewritten so);
//! - `pg_settings`: the scanning session's settings (`pg_settings.rs`), and
//!   `pg_parameter_acl`: no rows (no privileges granted on settings; psql's `\dconfig+`);
//! - `pg_views`, `pg_matviews`: the views and materialized views with their definitions,
//!   and `information_schema.views` (`brook_information_schema_views`) the plain views;
//! - `pg_indexes`: each index with its `CREATE INDEX`; `pg_sequences`: each sequence with
//!   its options and the last value handed out (`sequence_relation`);
//! - `brook_relation_sizes`, `brook_storage`: the bytes of each relation's files, what
//!   `pg_table_size`, `pg_relation_size`, `pg_total_relation_size` and `pg_database_size`
//!   look up.
//!
//! The tables are views over tables computed at each scan from the catalog
//! (`pg_rows`: `brook_columns`, `brook_indexes`, `brook_sequences`) joined to the crate's `pg_class`/`pg_namespace` for the
//! oids it assigns. Oids of indexes, constraints and defaults are derived from their
//! relation's oid (they need only be unique within their own table, as PostgreSQL's are).

use crate::catalog::pg_rows::{Computed, Source};
use crate::catalog::Catalog;
use async_trait::async_trait;
use brook_common::{brook_err, BrookError, Result};
use datafusion::arrow::datatypes::DataType;
use datafusion::catalog::{SchemaProvider, TableProvider};
use datafusion::datasource::ViewTable;
use datafusion::error::DataFusionError;
use datafusion::logical_expr::{
    ColumnarValue, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, Volatility,
};
use datafusion::prelude::SessionContext;
use std::collections::HashMap;
use std::sync::{Arc, RwLock};

/// Prefix under which the overlay shows the crate's own table `x` (`brook_base_x`), so a
/// view can read the table it replaces.
const BASE: &str = "brook_base_";

/// Replace pg_catalog's user-object tables of database `database` by views over Brook's
/// catalog. Runs once, when the database's context is built.
pub fn install(ctx: &SessionContext, database: &str, catalog: Arc<Catalog>) -> Result<()> {
    let db = ctx
        .catalog(database)
        .ok_or_else(|| brook_err!(Internal, "database {database} has no context catalog"))?;
    let inner = db
        .schema("pg_catalog")
        .ok_or_else(|| brook_err!(Internal, "pg_catalog missing from {database}"))?;
    let overlay = Arc::new(Overlay {
        inner,
        tables: RwLock::new(HashMap::new()),
    });
    let source = Source {
        catalog,
        database: database.to_string(),
    };
    overlay.add("brook_columns", Arc::new(Computed::columns(source.clone())));
    overlay.add(
        "brook_sequences",
        Arc::new(Computed::sequences(source.clone())),
    );
    overlay.add("brook_indexes", Arc::new(Computed::indexes(source.clone())));
    overlay.add("brook_views", Arc::new(Computed::views(source.clone())));
    overlay.add(
        "brook_functions",
        Arc::new(Computed::functions(source.clone())),
    );
    overlay.add(
        "brook_aggregates",
        Arc::new(Computed::aggregates(source.clone())),
    );
    overlay.add(
        "brook_databases",
        Arc::new(Computed::databases(source.clone())),
    );
    overlay.add(
        "brook_view_deps",
        Arc::new(Computed::view_deps(source.clone())),
    );
    overlay.add(
        "brook_comments",
        Arc::new(Computed::comments(source.clone())),
    );
    let sequences =
        crate::catalog::sequence_relation::SequenceTable::all(source.catalog.clone(), database);
    overlay.add("brook_storage", Arc::new(Computed::storage(source)));
    overlay.add("pg_sequences", Arc::new(sequences));
    overlay.add(
        "pg_settings",
        Arc::new(crate::catalog::pg_settings::PgSettings::new()),
    );
    db.register_schema("pg_catalog", overlay.clone())?;
    // `brook_plain(oid)`: the value without the crate's oid field metadata (the branches
    // of a UNION must agree on it; a cast to the same type keeps it).
    ctx.register_udf(datafusion::logical_expr::create_udf(
        "brook_plain",
        vec![DataType::Int32],
        DataType::Int32,
        Volatility::Immutable,
        Arc::new(|args: &[ColumnarValue]| Ok(args[0].clone())),
    ));
    let catalog_oids = catalog_oids_view();
    let standard_views = information_schema_views(database);
    let views = std::iter::once(("brook_catalog_oids", catalog_oids.as_str()))
        .chain(VIEWS.iter().map(|(n, q)| (*n, *q)))
        .chain(std::iter::once((
            "brook_information_schema_views",
            standard_views.as_str(),
        )));
    for (name, sql) in views {
        let plan = futures::executor::block_on(ctx.state().create_logical_plan(sql))?;
        overlay.add(name, Arc::new(ViewTable::new(plan, Some(sql.to_string()))));
    }
    ctx.register_udf(ScalarUDF::new_from_impl(PgGetExpr {
        signature: Signature::variadic_any(Volatility::Stable),
    }));
    Ok(())
}

/// `brook_catalog_oids`: the crate's oid of each system catalog it lists and PostgreSQL's
/// (`brook_planner::system_columns::CATALOG_OIDS`), which pg_class and pg_attribute show,
/// so `'pg_class'::regclass`, `tableoid` and pg_class agree on 1259 (pg_dump finds objects
/// by these compiled-in numbers; SQLAlchemy matches `pg_description.classoid` against
/// `'pg_catalog.pg_class'::regclass` looked up in pg_class).
fn catalog_oids_view() -> String {
    let values: Vec<String> = brook_planner::system_columns::CATALOG_OIDS
        .iter()
        .map(|(name, oid)| format!("('{name}', {oid})"))
        .collect();
    format!(
        "SELECT c.oid AS crate_oid, CAST(k.column2 AS INT) AS pg_oid
           FROM pg_catalog.brook_base_pg_class c
           JOIN (VALUES {}) k ON k.column1 = c.relname
          WHERE c.relnamespace = 11",
        values.join(", ")
    )
}

/// `information_schema.views` as PostgreSQL fills it (`brook_planner::information_schema`
/// reads it for the standard name): a row per plain view of `database`, none per table or
/// materialized view, the definition under `view_definition`. Brook's views take no
/// writes, so every `is_*` column is `NO`.
fn information_schema_views(database: &str) -> String {
    format!(
        "SELECT '{}' AS table_catalog, v.nspname AS table_schema, v.relname AS table_name,
                v.definition AS view_definition, 'NONE' AS check_option,
                'NO' AS is_updatable, 'NO' AS is_insertable_into,
                'NO' AS is_trigger_updatable, 'NO' AS is_trigger_deletable,
                'NO' AS is_trigger_insertable_into
           FROM pg_catalog.brook_views v
          WHERE v.relkind = 'v'",
        database.replace('\'', "''")
    )
}

/// The views, in planning order; each reads the crate's tables as `brook_base_*`. The first
/// two give Brook's indexes and columns the oids of their relations (and an index its own).
const VIEWS: [(&str, &str); 35] = [
    (
        "brook_index_rows",
        "SELECT CAST(1000000000 + (CAST(c.oid AS BIGINT) - 16384) * 64 + i.ordinal AS INT) AS indexrelid,
                c.oid AS indrelid, c.relnamespace AS relnamespace, c.relowner AS relowner,
                i.indexname AS indexname, i.indisprimary AS indisprimary,
                i.indisunique AS indisunique, i.indkey AS indkey,
                i.indcollation AS indcollation, i.indclass AS indclass,
                i.indoption AS indoption, i.defparts AS defparts
           FROM pg_catalog.brook_indexes i
           JOIN pg_catalog.brook_base_pg_namespace n ON n.nspname = i.nspname
           JOIN pg_catalog.brook_base_pg_class c ON c.relnamespace = n.oid AND c.relname = i.relname",
    ),
    (
        "brook_column_rows",
        "SELECT c.oid AS relid, b.attnum AS attnum, b.atttypid AS atttypid,
                b.atttypmod AS atttypmod, b.adsrc AS adsrc, b.attidentity AS attidentity,
                b.attnotnull AS attnotnull, b.attstorage AS attstorage, b.attndims AS attndims
           FROM pg_catalog.brook_columns b
           JOIN pg_catalog.brook_base_pg_namespace n ON n.nspname = b.nspname
           JOIN pg_catalog.brook_base_pg_class c ON c.relnamespace = n.oid AND c.relname = b.relname",
    ),
    (
        "pg_index",
        "SELECT i.indexrelid AS indexrelid,
                i.indrelid AS indrelid,
                CAST(cardinality(i.indkey) AS SMALLINT) AS indnatts,
                CAST(cardinality(i.indkey) AS SMALLINT) AS indnkeyatts,
                i.indisunique AS indisunique, false AS indnullsnotdistinct, i.indisprimary AS indisprimary,
                false AS indisexclusion, true AS indimmediate, false AS indisclustered,
                true AS indisvalid, false AS indcheckxmin, true AS indisready, true AS indislive,
                false AS indisreplident, i.indkey AS indkey, i.indcollation AS indcollation, i.indclass AS indclass, i.indoption AS indoption,
                CAST(NULL AS VARCHAR) AS indexprs, CAST(NULL AS VARCHAR) AS indpred
           FROM pg_catalog.brook_index_rows i",
    ),
    (
        "brook_index_defs",
        "SELECT i.indexrelid AS brook_indexrelid,
                unnest(generate_series(0, CAST(cardinality(i.defparts) AS BIGINT) - 1)) AS brook_colno,
                unnest(i.defparts) AS brook_def
           FROM pg_catalog.brook_index_rows i",
    ),
    (
        "pg_class",
        "SELECT COALESCE(ko.pg_oid, c.oid) AS oid, c.relname AS relname,
                brook_plain(c.relnamespace) AS relnamespace,
                brook_plain(c.reltype) AS reltype, brook_plain(c.reloftype) AS reloftype,
                CAST(10 AS INT) AS relowner,
                c.relam AS relam, c.relfilenode AS relfilenode,
                c.reltablespace AS reltablespace, c.relpages AS relpages,
                c.reltuples AS reltuples, c.relallvisible AS relallvisible,
                brook_plain(c.reltoastrelid) AS reltoastrelid,
                (c.relhasindex OR h.indrelid IS NOT NULL) AS relhasindex,
                c.relisshared AS relisshared,
                CASE WHEN starts_with(tn.nspname, 'pg_temp_') THEN 't' ELSE c.relpersistence END
                  AS relpersistence,
                COALESCE(v.relkind, c.relkind) AS relkind, c.relnatts AS relnatts, c.relchecks AS relchecks,
                c.relhasrules AS relhasrules, c.relhastriggers AS relhastriggers,
                c.relhassubclass AS relhassubclass, c.relrowsecurity AS relrowsecurity,
                c.relforcerowsecurity AS relforcerowsecurity,
                c.relispopulated AS relispopulated, c.relreplident AS relreplident,
                c.relispartition AS relispartition, brook_plain(c.relrewrite) AS relrewrite,
                c.relfrozenxid AS relfrozenxid, c.relminmxid AS relminmxid,
                c.relpartbound AS relpartbound,
                CAST(NULL AS VARCHAR[]) AS reloptions, CAST(NULL AS VARCHAR[]) AS relacl
           FROM pg_catalog.brook_base_pg_class c
           LEFT JOIN pg_catalog.brook_base_pg_namespace tn ON tn.oid = c.relnamespace
           LEFT JOIN pg_catalog.brook_catalog_oids ko ON ko.crate_oid = c.oid
           LEFT JOIN (SELECT DISTINCT indrelid FROM pg_catalog.brook_index_rows) h
             ON h.indrelid = c.oid
           LEFT JOIN (SELECT vn.oid AS nsp, bv.relname AS relname, bv.relkind AS relkind
                        FROM pg_catalog.brook_views bv
                        JOIN pg_catalog.brook_base_pg_namespace vn ON vn.nspname = bv.nspname) v
             ON v.nsp = c.relnamespace AND v.relname = c.relname
         UNION ALL
         SELECT i.indexrelid AS oid,
                i.indexname, brook_plain(i.relnamespace), CAST(0 AS INT), CAST(0 AS INT), CAST(10 AS INT),
                CAST(403 AS INT),
                i.indexrelid AS relfilenode,
                CAST(0 AS INT), CAST(0 AS INT), CAST(0 AS DOUBLE), CAST(0 AS INT), CAST(0 AS INT),
                false, false, 'p', 'i', CAST(cardinality(i.indkey) AS SMALLINT),
                CAST(0 AS SMALLINT), false, false, false, false, false, true, 'n', false,
                CAST(0 AS INT), CAST(0 AS INT), CAST(0 AS INT), CAST(NULL AS VARCHAR),
                CAST(NULL AS VARCHAR[]), CAST(NULL AS VARCHAR[])
           FROM pg_catalog.brook_index_rows i
         UNION ALL
         SELECT q.oid AS oid, q.relname, brook_plain(n.oid) AS relnamespace, CAST(0 AS INT), CAST(0 AS INT),
                CAST(10 AS INT), CAST(0 AS INT), q.oid AS relfilenode,
                CAST(0 AS INT), CAST(1 AS INT), CAST(1 AS DOUBLE), CAST(0 AS INT), CAST(0 AS INT),
                false, false, 'p', 'S', CAST(3 AS SMALLINT),
                CAST(0 AS SMALLINT), false, false, false, false, false, true, 'n', false,
                CAST(0 AS INT), CAST(0 AS INT), CAST(0 AS INT), CAST(NULL AS VARCHAR),
                CAST(NULL AS VARCHAR[]), CAST(NULL AS VARCHAR[])
           FROM pg_catalog.brook_sequences q
           JOIN pg_catalog.brook_base_pg_namespace n ON n.nspname = q.nspname",
    ),
    // Brook's one role has oid 10, PostgreSQL's bootstrap superuser's, which owns every
    // object (the crate lists its roles with oid 0 but its objects' owners as 10; pg_dump
    // looks every owner up among the roles).
    (
        "pg_roles",
        "SELECT r.rolname AS rolname, r.rolsuper AS rolsuper, r.rolinherit AS rolinherit,
                r.rolcreaterole AS rolcreaterole, r.rolcreatedb AS rolcreatedb,
                r.rolcanlogin AS rolcanlogin, r.rolreplication AS rolreplication,
                r.rolconnlimit AS rolconnlimit, r.rolpassword AS rolpassword,
                r.rolvaliduntil AS rolvaliduntil, r.rolbypassrls AS rolbypassrls,
                r.rolconfig AS rolconfig, CAST(10 AS INT) AS oid
           FROM pg_catalog.brook_base_pg_roles r",
    ),
    // Databases: every database of the server (the crate lists those of this database's
    // context only), each with one oid whichever database is asked; `datcollversion`
    // (pg_dump's archive formats read it), the locale provider as PostgreSQL's one-letter
    // code, no ACL (Brook grants nothing).
    (
        "pg_database",
        "SELECT b.oid AS oid, b.datname AS datname, CAST(10 AS INT) AS datdba,
                COALESCE(d.encoding, CAST(6 AS INT)) AS encoding, 'c' AS datlocprovider,
                b.datname = 'template1' AS datistemplate, true AS datallowconn,
                CAST(-1 AS INT) AS datconnlimit, d.datlastsysoid AS datlastsysoid,
                d.datfrozenxid AS datfrozenxid, d.datminmxid AS datminmxid,
                COALESCE(d.dattablespace, CAST(1663 AS INT)) AS dattablespace,
                'C' AS datcollate, 'C' AS datctype,
                d.daticulocale AS daticulocale, d.daticurules AS daticurules,
                CAST(NULL AS VARCHAR) AS datcollversion, CAST(NULL AS VARCHAR[]) AS datacl
           FROM pg_catalog.brook_databases b
           LEFT JOIN pg_catalog.brook_base_pg_database d ON d.datname = b.datname",
    ),
    // pg_authid: the one role (the crate's rows are another installation's roles, one with
    // a password hash); its password is the server's `--password-file`, never shown.
    (
        "pg_authid",
        "SELECT CAST(10 AS INT) AS oid, 'brook' AS rolname, true AS rolsuper, true AS rolinherit,
                true AS rolcreaterole, true AS rolcreatedb, true AS rolcanlogin,
                false AS rolreplication, false AS rolbypassrls, CAST(-1 AS INT) AS rolconnlimit,
                CAST(NULL AS VARCHAR) AS rolpassword,
                CAST(NULL AS TIMESTAMP WITH TIME ZONE) AS rolvaliduntil",
    ),
    // Tablespaces: the built-in two, no options or ACL (arrays, as pg_dumpall reads them).
    (
        "pg_tablespace",
        "SELECT t.oid AS oid, t.spcname AS spcname, CAST(10 AS INT) AS spcowner,
                CAST(NULL AS VARCHAR[]) AS spcacl, CAST(NULL AS VARCHAR[]) AS spcoptions
           FROM pg_catalog.brook_base_pg_tablespace t",
    ),
    (
        "pg_namespace",
        "SELECT n.oid AS oid, n.nspname AS nspname, n.nspowner AS nspowner,
                CAST(NULL AS VARCHAR[]) AS nspacl, n.options AS options
           FROM pg_catalog.brook_base_pg_namespace n
         UNION ALL
         SELECT CAST(13283 AS INT), 'information_schema', CAST(10 AS INT),
                CAST(NULL AS VARCHAR[]), CAST(NULL AS VARCHAR)
          WHERE NOT EXISTS (SELECT 1 FROM pg_catalog.brook_base_pg_namespace i
                             WHERE i.nspname = 'information_schema')",
    ),
    (
        "pg_policy",
        "SELECT p.oid AS oid, p.polname AS polname, p.polrelid AS polrelid, p.polcmd AS polcmd,
                p.polpermissive AS polpermissive, CAST(NULL AS INT[]) AS polroles,
                p.polqual AS polqual, p.polwithcheck AS polwithcheck
           FROM pg_catalog.brook_base_pg_policy p",
    ),
    (
        "pg_description",
        "SELECT c.oid AS objoid, CAST(1259 AS INT) AS classoid, b.objsubid AS objsubid,
                b.description AS description
           FROM pg_catalog.brook_comments b
           JOIN pg_catalog.brook_base_pg_namespace n ON n.nspname = b.nspname
           JOIN pg_catalog.brook_base_pg_class c ON c.relnamespace = n.oid AND c.relname = b.relname
         UNION ALL
         SELECT n.oid, CAST(2615 AS INT), CAST(0 AS INT), 'standard public schema'
           FROM pg_catalog.brook_base_pg_namespace n
          WHERE n.nspname = 'public'",
    ),
    (
        "brook_view_defs",
        "SELECT c.oid AS brook_reloid, v.definition AS brook_def
           FROM pg_catalog.brook_views v
           JOIN pg_catalog.brook_base_pg_namespace n ON n.nspname = v.nspname
           JOIN pg_catalog.brook_base_pg_class c ON c.relnamespace = n.oid AND c.relname = v.relname",
    ),
    (
        "brook_function_args",
        "SELECT a.oid AS brook_procoid,
                array_to_string(array_agg(format_type(CAST(a.t AS INT), NULL)), ', ') AS brook_args
           FROM (SELECT p.oid AS oid, unnest(string_to_array(p.proargtypes, ' ')) AS t
                   FROM pg_catalog.brook_base_pg_proc p) a
          GROUP BY a.oid
         UNION ALL
         SELECT f.oid, f.arguments FROM pg_catalog.brook_functions f",
    ),
    (
        "brook_function_defs",
        "SELECT f.oid AS brook_procoid, f.definition AS brook_def
           FROM pg_catalog.brook_functions f
          WHERE f.prokind = 'f'",
    ),
    (
        "pg_parameter_acl",
        "SELECT CAST(NULL AS INT) AS oid, CAST(NULL AS VARCHAR) AS parname,
                CAST(NULL AS VARCHAR[]) AS paracl
          WHERE false",
    ),
    // Catalogs of objects Brook does not have, empty, in the shape pg_dump reads them:
    // transforms, security labels, and partitioned tables (`partclass` an oid array, which
    // pg_dump searches with `= ANY`).
    (
        "pg_transform",
        "SELECT CAST(NULL AS INT) AS oid, CAST(NULL AS INT) AS trftype, CAST(NULL AS INT) AS trflang,
                CAST(NULL AS INT) AS trffromsql, CAST(NULL AS INT) AS trftosql
          WHERE false",
    ),
    // Rewrite rules: Brook's views are no rules (the crate's rows are PostgreSQL's own
    // system views', whose relations its pg_class does not list).
    // Languages: the crate's, and javascript (`catalog::function::JAVASCRIPT_LANGUAGE_OID`),
    // so pg_dump and psql's `\df+` name a JavaScript function's language.
    (
        "pg_language",
        "SELECT l.oid AS oid, l.lanname AS lanname, l.lanowner AS lanowner,
                l.lanispl AS lanispl, l.lanpltrusted AS lanpltrusted,
                l.lanplcallfoid AS lanplcallfoid, l.laninline AS laninline,
                l.lanvalidator AS lanvalidator, l.lanacl AS lanacl
           FROM pg_catalog.brook_base_pg_language l
         UNION ALL
         SELECT CAST(13900 AS INT), 'javascript', CAST(10 AS INT), true, true, CAST(0 AS INT),
                CAST(0 AS INT), CAST(0 AS INT), CAST(NULL AS VARCHAR)",
    ),
    // Functions: the crate's rows, the user functions (LANGUAGE sql is oid 14, javascript
    // Brook's row of pg_language) and the aggregates (prokind `a`, language internal, 12),
    // `protrftypes` an array (no function has transforms),
    // `proacl` NULL (the default privileges: Brook grants none),
    // as pg_dump passes it to `array_to_string`.
    (
        "pg_proc",
        "SELECT p.oid AS oid, p.proname AS proname, p.pronamespace AS pronamespace,
                p.proowner AS proowner, p.prolang AS prolang, p.procost AS procost,
                p.prorows AS prorows, p.provariadic AS provariadic, p.prosupport AS prosupport,
                p.prokind AS prokind, p.prosecdef AS prosecdef, p.proleakproof AS proleakproof,
                p.proisstrict AS proisstrict, p.proretset AS proretset,
                p.provolatile AS provolatile, p.proparallel AS proparallel,
                p.pronargs AS pronargs, p.pronargdefaults AS pronargdefaults,
                p.prorettype AS prorettype, p.proargtypes AS proargtypes,
                p.proallargtypes AS proallargtypes, p.proargmodes AS proargmodes,
                p.proargnames AS proargnames, p.proargdefaults AS proargdefaults,
                CAST(NULL AS VARCHAR[]) AS protrftypes, p.prosrc AS prosrc, p.probin AS probin,
                p.prosqlbody AS prosqlbody, p.proconfig AS proconfig,
                CAST(NULL AS VARCHAR[]) AS proacl
           FROM pg_catalog.brook_base_pg_proc p
         UNION ALL
         SELECT f.oid, f.proname, n.oid, CAST(10 AS INT),
                f.prolang, CAST(100 AS REAL),
                CAST(0 AS REAL), CAST(0 AS INT), '-', f.prokind, false, false, f.proisstrict, false,
                f.provolatile, 'u', f.pronargs, CAST(0 AS SMALLINT), f.prorettype,
                f.proargtypes, CAST(NULL AS VARCHAR), CAST(NULL AS VARCHAR), f.proargnames,
                CAST(NULL AS VARCHAR), CAST(NULL AS VARCHAR[]), f.prosrc, CAST(NULL AS VARCHAR),
                CAST(NULL AS VARCHAR), CAST(NULL AS VARCHAR), CAST(NULL AS VARCHAR[])
           FROM pg_catalog.brook_functions f
           JOIN pg_catalog.brook_base_pg_namespace n ON n.nspname = f.nspname",
    ),
    // Aggregates: the crate's rows (PostgreSQL's built-in aggregates) and the user ones,
    // which have no moving-aggregate mode, sort operator or serialization functions.
    // `aggfnoid` is the aggregate's oid, as pg_dump joins it to pg_proc: the crate names a
    // built-in one without its argument types, so its overloads share the oid of the first.
    (
        "pg_aggregate",
        "SELECT p.oid AS aggfnoid, b.aggkind AS aggkind, b.aggnumdirectargs AS aggnumdirectargs,
                b.aggtransfn AS aggtransfn, b.aggfinalfn AS aggfinalfn, b.aggcombinefn AS aggcombinefn,
                b.aggserialfn AS aggserialfn, b.aggdeserialfn AS aggdeserialfn,
                b.aggmtransfn AS aggmtransfn, b.aggminvtransfn AS aggminvtransfn,
                b.aggmfinalfn AS aggmfinalfn, b.aggfinalextra AS aggfinalextra,
                b.aggmfinalextra AS aggmfinalextra, b.aggfinalmodify AS aggfinalmodify,
                b.aggmfinalmodify AS aggmfinalmodify, b.aggsortop AS aggsortop,
                b.aggtranstype AS aggtranstype, b.aggtransspace AS aggtransspace,
                b.aggmtranstype AS aggmtranstype, b.aggmtransspace AS aggmtransspace,
                b.agginitval AS agginitval, b.aggminitval AS aggminitval
           FROM pg_catalog.brook_base_pg_aggregate b
           LEFT JOIN (SELECT 'pg_catalog.' || proname AS name, min(oid) AS oid
                        FROM pg_catalog.brook_base_pg_proc WHERE prokind = 'a'
                       GROUP BY proname) p ON p.name = b.aggfnoid
         UNION ALL
         SELECT a.oid, 'n', CAST(0 AS SMALLINT), a.aggtransfn, a.aggfinalfn,
                a.aggcombinefn, '-', '-', a.aggmtransfn, a.aggminvtransfn, a.aggmfinalfn,
                false, false, 'r', 'r', 0, a.aggtranstype, 0, a.aggmtranstype, 0,
                a.agginitval, a.aggminitval
           FROM pg_catalog.brook_aggregates a",
    ),
    (
        "pg_rewrite",
        "SELECT CAST(NULL AS INT) AS oid, CAST(NULL AS VARCHAR) AS rulename,
                CAST(NULL AS INT) AS ev_class, CAST(NULL AS VARCHAR) AS ev_type,
                CAST(NULL AS VARCHAR) AS ev_enabled, CAST(NULL AS BOOLEAN) AS is_instead,
                CAST(NULL AS VARCHAR) AS ev_qual, CAST(NULL AS VARCHAR) AS ev_action
          WHERE false",
    ),
    // Initial privileges: Brook grants none (the crate's rows are PostgreSQL's, which pg_dump
    // would answer with REVOKEs on system catalogs). `initprivs` an array, as the ACLs
    // pg_dump compares it with (`p.proacl IS DISTINCT FROM pip.initprivs`).
    (
        "pg_init_privs",
        "SELECT CAST(NULL AS INT) AS objoid, CAST(NULL AS INT) AS classoid,
                CAST(NULL AS INT) AS objsubid, CAST(NULL AS VARCHAR) AS privtype,
                CAST(NULL AS VARCHAR[]) AS initprivs
          WHERE false",
    ),
    // Per-role and per-database settings: Brook has none (`setconfig` an array, as pg_dump
    // and pg_dumpall unnest it).
    (
        "pg_db_role_setting",
        "SELECT CAST(NULL AS INT) AS setdatabase, CAST(NULL AS INT) AS setrole,
                CAST(NULL AS VARCHAR[]) AS setconfig
          WHERE false",
    ),
    (
        "pg_seclabels",
        "SELECT CAST(NULL AS INT) AS objoid, CAST(NULL AS INT) AS classoid,
                CAST(NULL AS INT) AS objsubid, CAST(NULL AS VARCHAR) AS objtype,
                CAST(NULL AS INT) AS objnamespace, CAST(NULL AS VARCHAR) AS objname,
                CAST(NULL AS VARCHAR) AS provider, CAST(NULL AS VARCHAR) AS label
          WHERE false",
    ),
    (
        "pg_partitioned_table",
        "SELECT CAST(NULL AS INT) AS partrelid, CAST(NULL AS VARCHAR) AS partstrat,
                CAST(NULL AS SMALLINT) AS partnatts, CAST(NULL AS INT) AS partdefid,
                CAST(NULL AS SMALLINT[]) AS partattrs, CAST(NULL AS INT[]) AS partclass,
                CAST(NULL AS INT[]) AS partcollation, CAST(NULL AS VARCHAR) AS partexprs
          WHERE false",
    ),
    (
        "pg_sequence",
        "SELECT q.oid AS seqrelid, q.seqtypid AS seqtypid, q.seqstart AS seqstart,
                q.seqincrement AS seqincrement, q.seqmax AS seqmax, q.seqmin AS seqmin,
                q.seqcache AS seqcache, q.seqcycle AS seqcycle
           FROM pg_catalog.brook_sequences q",
    ),
    (
        "brook_relation_sizes",
        "SELECT c.oid AS brook_reloid, s.bytes AS brook_bytes
           FROM pg_catalog.brook_storage s
           JOIN pg_catalog.brook_base_pg_namespace n ON n.nspname = s.nspname
           JOIN pg_catalog.brook_base_pg_class c ON c.relnamespace = n.oid AND c.relname = s.relname
          WHERE s.datname = current_database()",
    ),
    (
        "pg_constraint",
        "SELECT i.indexrelid AS oid,
                i.indexname AS conname, i.relnamespace AS connamespace, 'p' AS contype,
                false AS condeferrable, false AS condeferred, true AS convalidated,
                i.indrelid AS conrelid, 0 AS contypid,
                i.indexrelid AS conindid,
                0 AS conparentid, 0 AS confrelid, ' ' AS confupdtype, ' ' AS confdeltype,
                ' ' AS confmatchtype, true AS conislocal, CAST(0 AS SMALLINT) AS coninhcount,
                true AS connoinherit, i.indkey AS conkey, CAST(NULL AS SMALLINT[]) AS confkey,
                CAST(NULL AS INT[]) AS conpfeqop, CAST(NULL AS INT[]) AS conppeqop,
                CAST(NULL AS INT[]) AS conffeqop, CAST(NULL AS SMALLINT[]) AS confdelsetcols,
                CAST(NULL AS INT[]) AS conexclop, CAST(NULL AS VARCHAR) AS conbin
           FROM pg_catalog.brook_index_rows i
          WHERE i.indisprimary",
    ),
    (
        "pg_attrdef",
        "SELECT CAST(1000000000 + (CAST(b.relid AS BIGINT) - 16384) * 1600 + b.attnum AS INT) AS oid,
                b.relid AS adrelid, b.attnum AS adnum, b.adsrc AS adbin
           FROM pg_catalog.brook_column_rows b
          WHERE b.adsrc IS NOT NULL",
    ),
    (
        "pg_attribute",
        "SELECT a.attrelid AS attrelid, a.attname AS attname, COALESCE(b.atttypid, a.atttypid) AS atttypid,
                a.attstattarget AS attstattarget, a.attlen AS attlen, a.attnum AS attnum, COALESCE(b.attndims, a.attndims) AS attndims, a.attcacheoff AS attcacheoff,
                COALESCE(b.atttypmod, a.atttypmod) AS atttypmod, a.attbyval AS attbyval, a.attalign AS attalign,
                COALESCE(b.attstorage, a.attstorage) AS attstorage, a.attcompression AS attcompression,
                COALESCE(b.attnotnull, a.attnotnull) AS attnotnull,
                COALESCE(b.adsrc IS NOT NULL, a.atthasdef) AS atthasdef, a.atthasmissing AS atthasmissing,
                COALESCE(b.attidentity, a.attidentity) AS attidentity, a.attgenerated AS attgenerated, a.attisdropped AS attisdropped, a.attislocal AS attislocal, a.attinhcount AS attinhcount,
                a.attcollation AS attcollation, CAST(NULL AS VARCHAR[]) AS attacl, CAST(NULL AS VARCHAR[]) AS attoptions, CAST(NULL AS VARCHAR[]) AS attfdwoptions, a.attmissingval AS attmissingval
           FROM pg_catalog.brook_base_pg_attribute a
           LEFT JOIN pg_catalog.brook_column_rows b
             ON b.relid = a.attrelid AND b.attnum = a.attnum
          WHERE a.attrelid NOT IN (SELECT ko.crate_oid FROM pg_catalog.brook_catalog_oids ko)
         UNION ALL
         SELECT ko.pg_oid, a.attname, a.atttypid, a.attstattarget, a.attlen, a.attnum, a.attndims,
                a.attcacheoff, a.atttypmod, a.attbyval, a.attalign, a.attstorage,
                a.attcompression, a.attnotnull, a.atthasdef, a.atthasmissing, a.attidentity,
                a.attgenerated, a.attisdropped, a.attislocal, a.attinhcount, a.attcollation,
                CAST(NULL AS VARCHAR[]), CAST(NULL AS VARCHAR[]), CAST(NULL AS VARCHAR[]),
                a.attmissingval
           FROM pg_catalog.brook_base_pg_attribute a
           JOIN pg_catalog.brook_catalog_oids ko ON ko.crate_oid = a.attrelid",
    ),
    (
        "pg_depend",
        "SELECT d.classid AS classid, d.objid AS objid, d.objsubid AS objsubid,
                d.refclassid AS refclassid, d.refobjid AS refobjid,
                d.refobjsubid AS refobjsubid, d.deptype AS deptype
           FROM pg_catalog.brook_base_pg_depend d
         UNION ALL
         SELECT CAST(1259 AS INT), q.oid, CAST(0 AS INT), CAST(1259 AS INT), c.oid,
                CAST(a.attnum AS INT),
                CASE WHEN a.attidentity IN ('a', 'd') THEN 'i' ELSE 'a' END
           FROM pg_catalog.brook_sequences q
           JOIN pg_catalog.brook_base_pg_namespace n ON n.nspname = q.nspname
           JOIN pg_catalog.brook_base_pg_class c
             ON c.relnamespace = n.oid AND c.relname = q.owner_table
           JOIN pg_catalog.pg_attribute a ON a.attrelid = c.oid AND a.attname = q.owner_column
         UNION ALL
         SELECT CAST(2604 AS INT), ad.oid, CAST(0 AS INT), CAST(1259 AS INT), q.oid,
                CAST(0 AS INT), 'n'
           FROM pg_catalog.pg_attrdef ad
           JOIN pg_catalog.brook_base_pg_class c ON c.oid = ad.adrelid
           JOIN pg_catalog.brook_base_pg_namespace n ON n.oid = c.relnamespace
           JOIN pg_catalog.brook_sequences q
             ON ad.adbin = q.nextval_default
             OR (starts_with(ad.adbin, 'nextval(')
                 AND ((q.nspname = n.nspname AND strpos(ad.adbin, '''' || q.relname || '''') > 0)
                      OR strpos(ad.adbin, '''' || q.nspname || '.' || q.relname || '''') > 0))
         UNION ALL
         SELECT CAST(1259 AS INT), vc.oid, CAST(0 AS INT), CAST(1259 AS INT), rc.oid,
                CAST(0 AS INT), 'n'
           FROM pg_catalog.brook_view_deps vd
           JOIN pg_catalog.brook_base_pg_namespace vn ON vn.nspname = vd.nspname
           JOIN pg_catalog.brook_base_pg_class vc
             ON vc.relnamespace = vn.oid AND vc.relname = vd.relname
           JOIN pg_catalog.brook_base_pg_namespace rn ON rn.nspname = vd.ref_nspname
           JOIN pg_catalog.brook_base_pg_class rc
             ON rc.relnamespace = rn.oid AND rc.relname = vd.ref_relname",
    ),
    // information_schema.columns as PostgreSQL fills it (`brook_planner::information_schema`
    // reads it for the standard name): DataFusion's rows with the declared PostgreSQL types
    // (`integer`, `character varying` and its length, `timestamp without time zone`: what
    // Grafana, dbt and pgjdbc read), 1-based positions, defaults, NOT NULL and the udt
    // columns.
    (
        "brook_information_schema_columns",
        "SELECT c.table_catalog AS table_catalog, c.table_schema AS table_schema,
                c.table_name AS table_name, c.column_name AS column_name,
                CAST(COALESCE(CAST(a.attnum AS BIGINT), CAST(c.ordinal_position AS BIGINT) + 1) AS INT) AS ordinal_position,
                COALESCE(d.adbin, c.column_default) AS column_default,
                CASE WHEN a.attnotnull IS NULL THEN c.is_nullable
                     WHEN a.attnotnull THEN 'NO' ELSE 'YES' END AS is_nullable,
                CASE WHEN t.typname IS NULL THEN c.data_type
                     WHEN starts_with(t.typname, '_') THEN 'ARRAY'
                     WHEN t.typname = 'bool' THEN 'boolean'
                     WHEN t.typname = 'int2' THEN 'smallint'
                     WHEN t.typname = 'int4' THEN 'integer'
                     WHEN t.typname = 'int8' THEN 'bigint'
                     WHEN t.typname = 'float4' THEN 'real'
                     WHEN t.typname = 'float8' THEN 'double precision'
                     WHEN t.typname = 'varchar' THEN 'character varying'
                     WHEN t.typname = 'bpchar' THEN 'character'
                     WHEN t.typname = 'time' THEN 'time without time zone'
                     WHEN t.typname = 'timetz' THEN 'time with time zone'
                     WHEN t.typname = 'timestamp' THEN 'timestamp without time zone'
                     WHEN t.typname = 'timestamptz' THEN 'timestamp with time zone'
                     ELSE t.typname END AS data_type,
                CASE WHEN t.typname IN ('varchar', 'bpchar') AND a.atttypmod > 4
                     THEN CAST(a.atttypmod - 4 AS INT) END AS character_maximum_length,
                CAST(c.character_octet_length AS INT) AS character_octet_length,
                CASE t.typname WHEN 'int2' THEN 16 WHEN 'int4' THEN 32 WHEN 'int8' THEN 64
                     WHEN 'float4' THEN 24 WHEN 'float8' THEN 53
                     ELSE CAST(c.numeric_precision AS INT) END AS numeric_precision,
                CAST(c.numeric_precision_radix AS INT) AS numeric_precision_radix,
                CASE WHEN t.typname IN ('int2', 'int4', 'int8') THEN 0
                     ELSE CAST(c.numeric_scale AS INT) END AS numeric_scale,
                CASE WHEN t.typname IN ('timestamp', 'timestamptz', 'time', 'timetz')
                          AND a.atttypmod >= 0 THEN a.atttypmod
                     WHEN t.typname IN ('timestamp', 'timestamptz', 'time', 'timetz', 'interval')
                     THEN 6 ELSE CAST(c.datetime_precision AS INT) END AS datetime_precision,
                c.interval_type AS interval_type,
                c.table_catalog AS udt_catalog, 'pg_catalog' AS udt_schema,
                t.typname AS udt_name,
                CASE WHEN a.attidentity IN ('a', 'd') THEN 'YES' ELSE 'NO' END AS is_identity,
                'NEVER' AS is_generated, 'YES' AS is_updatable
           FROM information_schema.columns c
           LEFT JOIN pg_catalog.pg_namespace n ON n.nspname = c.table_schema
           LEFT JOIN pg_catalog.pg_class k
             ON k.relnamespace = n.oid AND k.relname = c.table_name AND k.relkind <> 'i'
           LEFT JOIN pg_catalog.pg_attribute a ON a.attrelid = k.oid AND a.attname = c.column_name
           LEFT JOIN pg_catalog.pg_type t ON t.oid = a.atttypid
           LEFT JOIN pg_catalog.pg_attrdef d ON d.adrelid = k.oid AND d.adnum = a.attnum",
    ),
    // What `CREATE VIEW` and `CREATE MATERIALIZED VIEW` made (the crate's tables are empty),
    // owned by the one role, with the definition `pg_get_viewdef` gives.
    (
        "pg_views",
        "SELECT v.nspname AS schemaname, v.relname AS viewname, r.rolname AS viewowner,
                v.definition AS definition
           FROM pg_catalog.brook_views v
           JOIN pg_catalog.pg_roles r ON r.oid = 10
          WHERE v.relkind = 'v'",
    ),
    (
        "pg_matviews",
        "SELECT v.nspname AS schemaname, v.relname AS matviewname, r.rolname AS matviewowner,
                CAST(NULL AS VARCHAR) AS tablespace, COALESCE(c.relhasindex, false) AS hasindexes,
                true AS ispopulated, v.definition AS definition
           FROM pg_catalog.brook_views v
           JOIN pg_catalog.pg_roles r ON r.oid = 10
           LEFT JOIN pg_catalog.pg_namespace n ON n.nspname = v.nspname
           LEFT JOIN pg_catalog.pg_class c ON c.relnamespace = n.oid AND c.relname = v.relname
          WHERE v.relkind = 'm'",
    ),
    (
        "pg_indexes",
        "SELECT n.nspname AS schemaname, c.relname AS tablename, i.relname AS indexname,
                CAST(NULL AS VARCHAR) AS tablespace, d.brook_def AS indexdef
           FROM pg_catalog.pg_index x
           JOIN pg_catalog.pg_class c ON c.oid = x.indrelid
           JOIN pg_catalog.pg_class i ON i.oid = x.indexrelid
           JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
           JOIN pg_catalog.brook_index_defs d
             ON d.brook_indexrelid = x.indexrelid AND d.brook_colno = 0",
    ),
];

/// The roles pg_catalog lists (`pg_roles`, psql's `\du`): Brook has one, `brook`, a
/// superuser that may log in (the role clients connect as; its password, if any, is the
/// server's `--password-file`).
#[derive(Debug, Clone)]
pub struct Roles;

#[async_trait]
impl datafusion_pg_catalog::pg_catalog::context::PgCatalogContextProvider for Roles {
    async fn roles(&self) -> Vec<String> {
        vec![ROLE.to_string()]
    }

    async fn role(&self, name: &str) -> Option<datafusion_pg_catalog::pg_catalog::context::Role> {
        (name == ROLE).then(|| datafusion_pg_catalog::pg_catalog::context::Role {
            name: ROLE.to_string(),
            is_superuser: true,
            can_login: true,
            can_create_db: true,
            can_create_role: true,
            can_create_user: true,
            can_replication: false,
            grants: vec![],
            inherited_roles: vec![],
        })
    }
}

/// Brook's role.
pub(crate) const ROLE: &str = "brook";

/// pg_catalog: the crate's tables, some replaced.
#[derive(Debug)]
struct Overlay {
    inner: Arc<dyn SchemaProvider>,
    tables: RwLock<HashMap<String, Arc<dyn TableProvider>>>,
}

impl Overlay {
    fn add(&self, name: &str, table: Arc<dyn TableProvider>) {
        let mut tables = match self.tables.write() {
            Ok(t) => t,
            Err(p) => p.into_inner(),
        };
        tables.insert(name.to_string(), table);
    }

    fn replaced(&self, name: &str) -> Option<Arc<dyn TableProvider>> {
        let tables = match self.tables.read() {
            Ok(t) => t,
            Err(p) => p.into_inner(),
        };
        tables.get(&name.to_ascii_lowercase()).cloned()
    }
}

#[async_trait]
impl SchemaProvider for Overlay {
    fn table_names(&self) -> Vec<String> {
        self.inner.table_names()
    }

    async fn table(&self, name: &str) -> datafusion::error::Result<Option<Arc<dyn TableProvider>>> {
        if let Some(t) = self.replaced(name) {
            return Ok(Some(t));
        }
        match name.strip_prefix(BASE) {
            Some(base) => self.inner.table(base).await,
            None => self.inner.table(name).await,
        }
    }

    fn table_exist(&self, name: &str) -> bool {
        self.replaced(name).is_some()
            || self
                .inner
                .table_exist(name.strip_prefix(BASE).unwrap_or(name))
    }
}

/// `pg_get_expr(expr, relation [, pretty])`: the expression's SQL text. The expressions of
/// these tables (column defaults) are stored as SQL text, so the text is the answer.
#[derive(Debug, PartialEq, Eq, Hash)]
struct PgGetExpr {
    signature: Signature,
}

impl ScalarUDFImpl for PgGetExpr {
    fn name(&self) -> &str {
        "pg_get_expr"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _arg_types: &[DataType]) -> datafusion::error::Result<DataType> {
        Ok(DataType::Utf8)
    }

    fn invoke_with_args(
        &self,
        args: ScalarFunctionArgs,
    ) -> datafusion::error::Result<ColumnarValue> {
        let Some(expr) = args.args.first() else {
            return Err(DataFusionError::External(Box::new(
                BrookError::UndefinedFunction("function pg_get_expr() does not exist".into()),
            )));
        };
        expr.cast_to(&DataType::Utf8, None)
    }
}
