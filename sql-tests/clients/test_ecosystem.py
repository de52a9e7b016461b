"""Ecosystem clients: pgcli (metadata + completion), polars/connectorx, the ADBC PostgreSQL
driver (dbapi, Arrow fetch, COPY ingest) and the SQL Grafana's PostgreSQL data source sends.

Needs: pip install pgcli polars connectorx adbc-driver-postgresql pyarrow
(each test skips when its client library is missing).
"""
import datetime
import decimal
import json
import threading
import uuid

import psycopg
import pytest

UTC = datetime.timezone.utc


def connect(b):
    return psycopg.connect(host=b["host"], port=b["port"], user=b["user"], dbname=b["dbname"], autocommit=True)


def uri(b):
    return f"postgresql://{b['user']}@{b['host']}:{b['port']}/{b['dbname']}"


# --------------------------------------------------------------------------- fixtures

TYPES_DDL = """CREATE TABLE eco_types (i int, b bigint, t text, v varchar(10), n numeric(10,2), f float8,
    ok bool, ts timestamp, tz timestamptz, d date, u uuid, j jsonb, a int[])"""
TYPES_COLS = ["i", "b", "t", "v", "n", "f", "ok", "ts", "tz", "d", "u", "j", "a"]
TYPES_QUERY = "SELECT " + ", ".join(TYPES_COLS) + " FROM eco_types ORDER BY i"
UUID1 = "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11"
EXPECTED_TYPES = [
    {"i": 1, "b": 10000000000, "t": "hello", "v": "short", "n": decimal.Decimal("12.34"), "f": 1.5, "ok": True,
     "ts": datetime.datetime(2026, 1, 2, 3, 4, 5), "tz": datetime.datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC),
     "d": datetime.date(2026, 1, 2), "u": uuid.UUID(UUID1), "j": {"k": [1, 2]}, "a": [1, 2, 3]},
    {"i": 2, "b": -5, "t": None, "v": None, "n": None, "f": None, "ok": False, "ts": None, "tz": None,
     "d": None, "u": None, "j": None, "a": None},
]


@pytest.fixture(scope="module")
def eco(brook):
    with connect(brook) as c:
        c.execute("CREATE TABLE eco_orders (id int PRIMARY KEY, customer text, amount numeric(10,2), status text DEFAULT 'new')")
        c.execute("INSERT INTO eco_orders (id, customer, amount) VALUES (1, 'ann', 12.50), (2, 'bob', 3.00), (3, 'ann', 20.00)")
        c.execute("CREATE VIEW eco_big_orders AS SELECT id, amount FROM eco_orders WHERE amount > 10")
        c.execute("CREATE MATERIALIZED VIEW eco_totals AS SELECT customer, sum(amount) AS total FROM eco_orders GROUP BY customer")
        c.execute(TYPES_DDL)
        c.execute(f"""INSERT INTO eco_types VALUES
            (1, 10000000000, 'hello', 'short', 12.34, 1.5, true, '2026-01-02 03:04:05', '2026-01-02 03:04:05+00',
             '2026-01-02', '{UUID1}', '{{"k": [1, 2]}}', ARRAY[1,2,3]),
            (2, -5, NULL, NULL, NULL, NULL, false, NULL, NULL, NULL, NULL, NULL, NULL)""")
        c.execute("CREATE TABLE eco_metrics (ts timestamptz, host varchar(20), cpu float8, reqs bigint, note text)")
        c.execute("""INSERT INTO eco_metrics VALUES
            ('2026-01-01 10:00:05+00', 'a', 1.0, 10, 'x'), ('2026-01-01 10:00:55+00', 'a', 3.0, 20, 'y'),
            ('2026-01-01 10:01:10+00', 'b', 5.0, 30, 'z'), ('2026-01-01 10:02:30+00', 'a', 7.0, 40, 'w'),
            ('2026-01-01 11:00:00+00', 'a', 100.0, 50, 'outside the range')""")
        c.execute("CREATE TABLE eco_local (ts timestamp, epoch bigint, v int)")
        c.execute("""INSERT INTO eco_local VALUES
            ('2026-01-01 10:00:05', 1767261605, 1), ('2026-01-01 10:00:59', 1767261659, 2),
            ('2026-01-01 10:05:00', 1767261900, 4), ('2026-01-01 09:59:59', 1767261599, 100)""")
    return brook


def norm(col, v):
    """Client values -> the Python values inserted (Decimal, UUID, parsed JSON, aware UTC datetimes, lists)."""
    if v is None:
        return None
    if col == "n":
        return decimal.Decimal(str(v))
    if col == "u":
        if isinstance(v, (bytes, bytearray)):
            return uuid.UUID(bytes=bytes(v))
        return uuid.UUID(str(v))
    if col == "j":
        return json.loads(v) if isinstance(v, (str, bytes)) else v
    if col == "tz":
        return v.astimezone(UTC)
    if col == "a":
        return list(v)
    return v


def norm_rows(rows):
    return [{k: norm(k, v) for k, v in r.items()} for r in rows]


# --------------------------------------------------------------------------- pgcli

def pgexec(b):
    from pgcli.pgexecute import PGExecute
    return PGExecute(database=b["dbname"], user=b["user"], host=b["host"], port=b["port"])


def test_pgcli_connect_and_run(eco):
    pytest.importorskip("pgcli")
    ex = pgexec(eco)
    assert ex.conn.info.server_version >= 110000  # pgcli picks its catalog queries by this
    assert not ex.is_virtual_database()
    results = list(ex.run("SELECT id, customer, amount FROM eco_orders ORDER BY id; SELECT count(*) FROM eco_totals"))
    title, cur, headers, status, sql, success, is_special = results[0]
    assert headers == ["id", "customer", "amount"]
    assert list(cur) == [(1, "ann", decimal.Decimal("12.50")), (2, "bob", decimal.Decimal("3.00")),
                         (3, "ann", decimal.Decimal("20.00"))]
    assert status == "SELECT 3" and success and not is_special
    assert list(results[1][1]) == [(2,)]


def test_pgcli_search_path_schemata_databases(eco):
    pytest.importorskip("pgcli")
    ex = pgexec(eco)
    sp = ex.search_path()  # SELECT * FROM unnest(current_schemas(true))
    assert "public" in sp and "pg_catalog" in sp
    assert {"public", "pg_catalog", "information_schema"} <= set(ex.schemata())
    assert "brook" in ex.databases()


def test_pgcli_tables_and_views(eco):
    pytest.importorskip("pgcli")
    ex = pgexec(eco)
    tables = [tuple(r) for r in ex.tables()]   # relkind = ANY(['r','p','f'])
    views = [tuple(r) for r in ex.views()]     # relkind = ANY(['v','m'])
    assert ("public", "eco_orders") in tables
    assert ("public", "eco_big_orders") not in tables and ("public", "eco_totals") not in tables
    assert ("public", "eco_big_orders") in views and ("public", "eco_totals") in views


def test_pgcli_table_columns_have_type_names(eco):
    """pgcli's column query uses att.atttypid::regtype::text, which PostgreSQL renders as a type name."""
    pytest.importorskip("pgcli")
    ex = pgexec(eco)
    cols = [(r[2], r[3]) for r in ex.table_columns() if (r[0], r[1]) == ("public", "eco_orders")]
    assert cols == [("id", "integer"), ("customer", "text"), ("amount", "numeric"), ("status", "text")]


def test_pgcli_view_columns_have_type_names(eco):
    pytest.importorskip("pgcli")
    ex = pgexec(eco)
    rows = list(ex.view_columns())
    assert [(r[2], r[3]) for r in rows if r[1] == "eco_big_orders"] == [("id", "integer"), ("amount", "numeric")]
    assert [(r[2], r[3]) for r in rows if r[1] == "eco_totals"] == [("customer", "text"), ("total", "numeric")]


def test_pgcli_column_defaults(eco):
    pytest.importorskip("pgcli")
    ex = pgexec(eco)
    rows = {r[2]: (r[4], r[5]) for r in ex.table_columns() if r[1] == "eco_orders"}
    assert rows["id"] == (False, None)
    has_default, default = rows["status"]
    assert has_default is True and default.startswith("'new'")


@pytest.mark.xfail(strict=True, reason="known gap: pg_proc.proallargtypes/proargtypes are text, so pgcli's proallargtypes::regtype[]::text[] fails (22P02)")
def test_pgcli_functions(eco):
    """COALESCE(proallargtypes::regtype[], proargtypes::regtype[])::text[], prorettype::regtype::text, ..."""
    pytest.importorskip("pgcli")
    ex = pgexec(eco)
    funcs = list(ex.functions())
    by_name = {(f.schema_name, f.func_name): f for f in funcs}
    assert by_name[("pg_catalog", "now")].return_type == "timestamp with time zone"
    assert by_name[("pg_catalog", "count")].is_aggregate is True
    assert by_name[("pg_catalog", "generate_series")].is_set_returning is True


def test_pgcli_datatypes_and_foreignkeys(eco):
    # Brook has neither CREATE TYPE nor foreign keys, so PostgreSQL's answer for this database is empty.
    pytest.importorskip("pgcli")
    ex = pgexec(eco)
    assert list(ex.datatypes()) == []
    assert list(ex.foreignkeys()) == []


@pytest.mark.xfail(strict=True, reason="known gap: regexp_split_to_table is missing (42883)")
def test_pgcli_casing(eco):
    """The casing query (regexp_split_to_table over pg_proc.prosrc); PostgreSQL returns no rows here."""
    pytest.importorskip("pgcli")
    ex = pgexec(eco)
    assert list(ex.casing()) == []


def test_pgcli_view_definition(eco):
    pytest.importorskip("pgcli")
    ex = pgexec(eco)
    v = ex.view_definition("eco_big_orders")
    assert v.startswith('CREATE OR REPLACE VIEW "public"."eco_big_orders" AS') and "amount > 10" in v
    m = ex.view_definition("eco_totals")
    assert m.startswith('CREATE OR REPLACE MATERIALIZED VIEW "public"."eco_totals" AS') and "sum(amount)" in m


def test_pgcli_special_commands(eco):
    pytest.importorskip("pgcli")
    from pgspecial.main import PGSpecial
    ex = pgexec(eco)
    sp = PGSpecial()

    def rows(cmd):
        (title, cur, headers, status, *_), = list(ex.run(cmd, pgspecial=sp))
        return [tuple(r) for r in cur]

    assert ("public", "eco_orders", "table", "brook") in rows("\\dt")
    assert ("public", "eco_big_orders", "view", "brook") in rows("\\dv")
    assert ("public", "eco_totals", "materialized view", "brook") in rows("\\dm")
    d = rows("\\d eco_orders")
    assert d[:3] == [("id", "integer", " not null"), ("customer", "text", ""), ("amount", "numeric(10,2)", "")]
    assert d[3][:2] == ("status", "text") and "default 'new'" in d[3][2]


def completions(completer, text):
    from prompt_toolkit.document import Document
    return {c.text for c in completer.get_completions(Document(text=text, cursor_position=len(text)), None)}


def test_pgcli_completer_suggests_user_relations(eco):
    """The schemata/tables/views refreshers alone: enough for FROM and column completion."""
    pytest.importorskip("pgcli")
    from pgcli.completion_refresher import CompletionRefresher
    from pgcli.pgcompleter import PGCompleter
    from pgspecial.main import PGSpecial
    ex = pgexec(eco)
    comp = PGCompleter(smart_completion=True, pgspecial=PGSpecial(), settings={})
    for name in ("schemata", "tables", "views"):
        CompletionRefresher.refreshers[name](comp, ex)
    assert {"eco_orders", "eco_big_orders", "eco_totals"} <= completions(comp, "SELECT * FROM ")
    assert {"id", "customer", "amount", "status"} <= completions(comp, "SELECT * FROM eco_orders WHERE ")


@pytest.mark.xfail(strict=True, reason="known gap: the functions refresher fails (above) and ends pgcli's refresh thread")
def test_pgcli_completion_refresher_end_to_end(eco):
    """What pgcli does at startup: CompletionRefresher.refresh in a background thread, then the callback
    installs the completer. Any refresher that raises kills the thread and leaves no completions at all."""
    pytest.importorskip("pgcli")
    from pgcli.completion_refresher import CompletionRefresher
    from pgspecial.main import PGSpecial
    ex = pgexec(eco)
    installed, errors = [], []
    old_hook = threading.excepthook
    threading.excepthook = lambda args: errors.append(f"{type(args.exc_value).__name__}: {args.exc_value}")
    try:
        ref = CompletionRefresher()
        ref.refresh(ex, PGSpecial(), installed.append)
        ref._completer_thread.join(60)
    finally:
        threading.excepthook = old_hook
    assert errors == []
    assert len(installed) == 1
    comp = installed[0]
    assert {"eco_orders", "eco_big_orders", "eco_totals"} <= completions(comp, "SELECT * FROM ")
    assert {"id", "customer", "amount", "status"} <= completions(comp, "SELECT * FROM eco_orders WHERE ")


# --------------------------------------------------------------------------- polars / connectorx

def check_polars_frame(df):
    import polars as pl
    assert df.columns == TYPES_COLS
    assert df.schema["i"] == pl.Int32 and df.schema["b"] == pl.Int64 and df.schema["f"] == pl.Float64
    assert df.schema["ok"] == pl.Boolean and df.schema["d"] == pl.Date and df.schema["a"] == pl.List(pl.Int32)
    assert df.schema["t"] == pl.String and df.schema["v"] == pl.String
    assert isinstance(df.schema["ts"], pl.Datetime) and df.schema["ts"].time_zone is None
    assert isinstance(df.schema["tz"], pl.Datetime) and df.schema["tz"].time_zone is not None
    assert norm_rows(df.to_dicts()) == EXPECTED_TYPES


def test_polars_read_database_uri_connectorx(eco):
    pl = pytest.importorskip("polars")
    pytest.importorskip("connectorx")
    check_polars_frame(pl.read_database_uri(TYPES_QUERY, uri(eco), engine="connectorx"))


def test_polars_read_database_uri_adbc(eco):
    pl = pytest.importorskip("polars")
    pytest.importorskip("adbc_driver_postgresql")
    check_polars_frame(pl.read_database_uri(TYPES_QUERY, uri(eco), engine="adbc"))


def check_arrow_types_table(t, cols=TYPES_COLS):
    import pyarrow as pa
    assert t.column_names == cols
    s = t.schema
    assert s.field("i").type == pa.int32() and s.field("b").type == pa.int64()
    assert s.field("f").type == pa.float64() and s.field("ok").type == pa.bool_()
    assert s.field("d").type == pa.date32()
    assert pa.types.is_decimal(s.field("n").type) or str(s.field("n").type).startswith("extension")
    assert pa.types.is_timestamp(s.field("ts").type) and s.field("ts").type.tz is None
    assert pa.types.is_timestamp(s.field("tz").type) and s.field("tz").type.tz is not None
    assert pa.types.is_list(s.field("a").type) or pa.types.is_large_list(s.field("a").type)
    assert s.field("a").type.value_type == pa.int32()
    expected = [{k: r[k] for k in cols} for r in EXPECTED_TYPES]
    assert norm_rows(t.to_pylist()) == expected


@pytest.mark.parametrize("protocol", ["binary", "cursor", "csv"])
def test_connectorx_read_sql_arrow(eco, protocol):
    cx = pytest.importorskip("connectorx")
    t = cx.read_sql(uri(eco), TYPES_QUERY, return_type="arrow", protocol=protocol)
    check_arrow_types_table(t)


def test_connectorx_simple_protocol(eco):
    # jsonb is left out: connectorx's simple-query parser has no JSON support (a client-side panic).
    cx = pytest.importorskip("connectorx")
    cols = [c for c in TYPES_COLS if c != "j"]
    t = cx.read_sql(uri(eco), "SELECT " + ", ".join(cols) + " FROM eco_types ORDER BY i",
                    return_type="arrow", protocol="simple")
    check_arrow_types_table(t, cols)


@pytest.mark.parametrize("protocol", ["binary", "cursor"])
def test_connectorx_partitioned_read(eco, protocol):
    cx = pytest.importorskip("connectorx")
    t = cx.read_sql(uri(eco), "SELECT id, customer, amount FROM eco_orders", return_type="arrow",
                    protocol=protocol, partition_on="id", partition_num=2)
    rows = sorted(t.to_pylist(), key=lambda r: r["id"])
    assert [(r["id"], r["customer"], decimal.Decimal(str(r["amount"]))) for r in rows] == [
        (1, "ann", decimal.Decimal("12.50")), (2, "bob", decimal.Decimal("3.00")), (3, "ann", decimal.Decimal("20.00"))]


# --------------------------------------------------------------------------- ADBC

def adbc_connect(b):
    dbapi = pytest.importorskip("adbc_driver_postgresql.dbapi")
    return dbapi.connect(uri(b))


def test_adbc_execute_and_fetch_arrow_table(eco):
    with adbc_connect(eco) as conn:
        with conn.cursor() as cur:
            cur.execute(TYPES_QUERY)
            check_arrow_types_table(cur.fetch_arrow_table())
        with conn.cursor() as cur:
            cur.execute("SELECT t, b FROM eco_types WHERE i = $1", (1,))
            assert cur.fetchall() == [("hello", 10000000000)]


def ingest_table():
    import pyarrow as pa
    return pa.table({
        "id": pa.array([1, 2, 3], pa.int32()),
        "big": pa.array([10000000000, -5, None], pa.int64()),
        "name": pa.array(["a", None, "c"], pa.string()),
        "x": pa.array([1.5, None, -2.25], pa.float64()),
        "ok": pa.array([True, False, None], pa.bool_()),
        "ts": pa.array([datetime.datetime(2026, 1, 2, 3, 4, 5), None, datetime.datetime(2026, 1, 3)], pa.timestamp("us")),
        "tz": pa.array([datetime.datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC), None, None], pa.timestamp("us", tz="UTC")),
        "d": pa.array([datetime.date(2026, 1, 2), None, datetime.date(1999, 12, 31)], pa.date32()),
    })


INGESTED = [
    (1, 10000000000, "a", 1.5, True, datetime.datetime(2026, 1, 2, 3, 4, 5),
     datetime.datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC), datetime.date(2026, 1, 2)),
    (2, -5, None, None, False, None, None, None),
    (3, None, "c", -2.25, None, datetime.datetime(2026, 1, 3), None, datetime.date(1999, 12, 31)),
]


def test_adbc_ingest_into_new_table(eco):
    with adbc_connect(eco) as conn:
        with conn.cursor() as cur:
            assert cur.adbc_ingest("eco_ingest_new", ingest_table(), mode="create") == 3
        conn.commit()
    with connect(eco) as c:
        assert c.execute("SELECT id, big, name, x, ok, ts, tz, d FROM eco_ingest_new ORDER BY id").fetchall() == INGESTED
        assert c.execute("""SELECT column_name, data_type FROM information_schema.columns
                            WHERE table_name = 'eco_ingest_new' ORDER BY ordinal_position""").fetchall() == [
            ("id", "integer"), ("big", "bigint"), ("name", "text"), ("x", "double precision"), ("ok", "boolean"),
            ("ts", "timestamp without time zone"), ("tz", "timestamp with time zone"), ("d", "date")]


@pytest.mark.xfail(strict=True, reason="known gap: CREATE TABLE ... (a int4 ARRAY): the standard ARRAY spelling is a syntax error")
def test_adbc_ingest_into_new_table_with_array_column(eco):
    # ADBC's CREATE TABLE spells list<int32> as "int4 ARRAY" (SQL-standard array syntax)
    import pyarrow as pa
    tbl = pa.table({"id": pa.array([1, 2], pa.int32()), "a": pa.array([[1, 2, 3], None], pa.list_(pa.int32()))})
    with adbc_connect(eco) as conn:
        with conn.cursor() as cur:
            assert cur.adbc_ingest("eco_ingest_arr", tbl, mode="create") == 2
        conn.commit()
    with connect(eco) as c:
        assert c.execute("SELECT id, a FROM eco_ingest_arr ORDER BY id").fetchall() == [(1, [1, 2, 3]), (2, None)]


def test_adbc_ingest_into_existing_table(eco):
    with connect(eco) as c:
        c.execute("""CREATE TABLE eco_ingest_existing (id int, big bigint, name text, x float8, ok bool,
                     ts timestamp, tz timestamptz, d date)""")
        c.execute("INSERT INTO eco_ingest_existing (id, name) VALUES (0, 'pre-existing')")
    with adbc_connect(eco) as conn:
        with conn.cursor() as cur:
            assert cur.adbc_ingest("eco_ingest_existing", ingest_table(), mode="append") == 3
        conn.commit()
    with connect(eco) as c:
        rows = c.execute("SELECT id, big, name, x, ok, ts, tz, d FROM eco_ingest_existing ORDER BY id").fetchall()
        assert rows == [(0, None, "pre-existing", None, None, None, None, None)] + INGESTED


# --------------------------------------------------------------------------- Grafana PostgreSQL data source
# The SQL below is what Grafana sends: the metadata queries of
# public/app/plugins/datasource/grafana-postgresql-datasource/postgresMetaQuery.ts (current SQL editor),
# of public/app/plugins/datasource/postgres/meta_query.ts (the older visual query builder), and the
# macro expansions of pkg/tsdb/grafana-postgresql-datasource/macros.go.

# buildSchemaConstraint(): the schemas on search_path
def gf_search_path_schemas(column):
    """Grafana's test that a schema is on the search path (the current editor quotes the
    column, the older builder does not)."""
    return column + """ IN (
  SELECT
    CASE WHEN trim(s[i]) = '"$user"' THEN user ELSE trim(s[i]) END
  FROM
    generate_series(
      array_lower(string_to_array(current_setting('search_path'),','),1),
      array_upper(string_to_array(current_setting('search_path'),','),1)
    ) as i,
    string_to_array(current_setting('search_path'),',') s
)"""


GF_SEARCH_PATH_SCHEMAS = gf_search_path_schemas("quote_ident(table_schema)")
GF_EXCLUDED = """('information_schema', 'pg_catalog', '_timescaledb_cache', '_timescaledb_catalog',
    '_timescaledb_internal', '_timescaledb_config', 'timescaledb_information', 'timescaledb_experimental')"""


def gf_show_tables():
    return f"""SELECT
    CASE WHEN {GF_SEARCH_PATH_SCHEMAS}
      THEN quote_ident(table_name)
      ELSE quote_ident(table_schema) || '.' || quote_ident(table_name)
    END AS "table"
    FROM information_schema.tables
    WHERE quote_ident(table_schema) NOT IN {GF_EXCLUDED}
    ORDER BY CASE WHEN {GF_SEARCH_PATH_SCHEMAS} THEN 0 ELSE 1 END, 1"""


def gf_get_schema(table):
    t = "'" + table.replace("'", "''") + "'"
    return f"""SELECT quote_ident(column_name) AS "column", data_type AS "type"
    FROM information_schema.columns
    WHERE
      CASE WHEN array_length(parse_ident({t}),1) = 2
        THEN quote_ident(table_schema) = (parse_ident({t}))[1]
          AND quote_ident(table_name) = (parse_ident({t}))[2]
        ELSE quote_ident(table_name) = {t}
          AND {GF_SEARCH_PATH_SCHEMAS}
      END"""


# the older builder's buildSchemaConstraint() (unquoted table_schema)
GF_LEGACY_SCHEMAS = gf_search_path_schemas("table_schema")


def gf_legacy_columns(table, kind):
    q = "SELECT quote_ident(column_name) FROM information_schema.columns WHERE "
    q += GF_LEGACY_SCHEMAS + " AND table_name = '" + table + "'"
    q += {
        "time": " AND data_type IN ('timestamp without time zone','timestamp with time zone','bigint','integer','double precision','real')",
        "metric": " AND data_type IN ('text','character','character varying')",
        "value": " AND data_type IN ('bigint','integer','double precision','real','numeric') AND column_name <> 'ts'",
        "group": " AND data_type IN ('text','character','character varying','uuid')",
    }[kind]
    return q + " ORDER BY column_name"


GF_FIND_METRIC_TABLE = """
SELECT
	quote_ident(table_name) as table_name,
	( SELECT
	    quote_ident(column_name) as column_name
	  FROM information_schema.columns c
    WHERE
      c.table_schema = t.table_schema AND
      c.table_name = t.table_name AND
      udt_name IN ('timestamptz','timestamp')
    ORDER BY ordinal_position LIMIT 1
  ) AS time_column,
  ( SELECT
      quote_ident(column_name) AS column_name
    FROM information_schema.columns c
    WHERE
      c.table_schema = t.table_schema AND
      c.table_name = t.table_name AND
      udt_name='float8'
    ORDER BY ordinal_position LIMIT 1
  ) AS value_column
FROM information_schema.tables t
WHERE """ + GF_LEGACY_SCHEMAS + """ AND
  EXISTS
  ( SELECT 1
    FROM information_schema.columns c
    WHERE
      c.table_schema = t.table_schema AND
      c.table_name = t.table_name AND
      udt_name IN ('timestamptz','timestamp')
  ) AND
  EXISTS
  ( SELECT 1
    FROM information_schema.columns c
    WHERE
      c.table_schema = t.table_schema AND
      c.table_name = t.table_name AND
      udt_name='float8'
  )
LIMIT 1
;"""

# $__timeFilter(ts) for the range 2026-01-01T10:00:00Z .. 2026-01-01T10:59:59.999Z (time.RFC3339Nano, UTC)
GF_TIME_FILTER = "ts BETWEEN '2026-01-01T10:00:00Z' AND '2026-01-01T10:59:59.999Z'"
B0 = 1767261600  # 2026-01-01 10:00:00 UTC


def test_grafana_version_and_timescaledb_probes(eco):
    with connect(eco) as c:
        num = int(c.execute("SHOW server_version_num").fetchone()[0])
        assert c.execute("SELECT current_setting('server_version_num')::int/100 as version").fetchall() == [(num // 100,)]
        assert num // 100 >= 906
        assert c.execute("SELECT extversion FROM pg_extension WHERE extname = 'timescaledb'").fetchall() == []


def test_grafana_search_path_and_schemas(eco):
    with connect(eco) as c:
        assert c.execute("SELECT current_setting('search_path')").fetchone()[0] == '"$user", public'
        rows = c.execute(f"""SELECT schema_name AS "name"
            FROM information_schema.schemata
            WHERE schema_name NOT IN ('information_schema', 'pg_catalog', 'pg_toast', '_timescaledb_cache',
                '_timescaledb_catalog', '_timescaledb_internal', '_timescaledb_config', 'timescaledb_information',
                'timescaledb_experimental')
            ORDER BY schema_name""").fetchall()
        assert rows == [("public",)]


def test_grafana_table_list(eco):
    """Tables on search_path come back unqualified (Grafana then writes FROM eco_metrics)."""
    with connect(eco) as c:
        tables = [r[0] for r in c.execute(gf_show_tables()).fetchall()]
    assert {"eco_metrics", "eco_orders", "eco_local"} <= set(tables)
    assert "public.eco_metrics" not in tables


def test_grafana_table_list_for_a_schema(eco):
    with connect(eco) as c:
        tables = [r[0] for r in c.execute("""SELECT quote_ident(table_name) AS "table"
            FROM information_schema.tables
            WHERE quote_ident(table_schema) = 'public'
            ORDER BY 1""").fetchall()]
    assert {"eco_metrics", "eco_orders", "eco_local", "eco_big_orders"} <= set(tables)


EXPECTED_GF_COLUMNS = {("ts", "timestamp with time zone"), ("host", "character varying"),
                       ("cpu", "double precision"), ("reqs", "bigint"), ("note", "text")}


@pytest.mark.parametrize("table", ["eco_metrics", "public.eco_metrics"])
def test_grafana_column_picker(eco, table):
    with connect(eco) as c:
        assert set(c.execute(gf_get_schema(table)).fetchall()) == EXPECTED_GF_COLUMNS


def test_grafana_legacy_table_query(eco):
    with connect(eco) as c:
        tables = [r[0] for r in c.execute(
            "SELECT quote_ident(table_name) FROM information_schema.tables WHERE "
            + GF_LEGACY_SCHEMAS + " ORDER BY table_name").fetchall()]
    assert {"eco_metrics", "eco_orders", "eco_local"} <= set(tables)


@pytest.mark.parametrize("kind,expected", [
    ("time", ["cpu", "reqs", "ts"]),
    ("metric", ["host", "note"]),
    ("value", ["cpu", "reqs"]),
    ("group", ["host", "note"]),
])
def test_grafana_legacy_column_queries(eco, kind, expected):
    with connect(eco) as c:
        assert [r[0] for r in c.execute(gf_legacy_columns("eco_metrics", kind)).fetchall()] == expected


def test_grafana_legacy_datatype_query(eco):
    with connect(eco) as c:
        assert c.execute("SELECT udt_name FROM information_schema.columns WHERE " + GF_LEGACY_SCHEMAS
                         + " AND table_name = 'eco_metrics' AND column_name = 'cpu'").fetchall() == [("float8",)]


def test_grafana_legacy_find_metric_table(eco):
    # The query ends in LIMIT 1 without ORDER BY: any table with a time and a float8 column
    # answers, with its first such columns (its select-list subqueries run per table row).
    with connect(eco) as c:
        rows = c.execute(GF_FIND_METRIC_TABLE).fetchall()
        assert len(rows) == 1
        table, time_column, value_column = rows[0]
        columns = c.execute("SELECT column_name, udt_name FROM information_schema.columns "
                            "WHERE table_name = %s ORDER BY ordinal_position", (table,)).fetchall()
    first = {}
    for name, udt in columns:
        kind = "time" if udt in ("timestamp", "timestamptz") else udt
        first.setdefault(kind, name)
    assert (time_column, value_column) == (first.get("time"), first.get("float8")), columns


@pytest.mark.xfail(strict=True, reason="known gap: pg_aggregate/pg_proc give avg numeric and max anyarray, so no float8 aggregate is listed")
def test_grafana_legacy_aggregate_query(eco):
    with connect(eco) as c:
        rows = c.execute("""SELECT DISTINCT proname FROM pg_aggregate
            INNER JOIN pg_proc ON pg_aggregate.aggfnoid = pg_proc.oid
            INNER JOIN pg_type ON pg_type.oid=pg_proc.prorettype
            WHERE pronargs=1 AND typname IN ('float8') AND aggkind='n' ORDER BY 1""").fetchall()
    assert {"avg", "max", "min", "sum", "stddev"} <= {r[0] for r in rows}


def test_grafana_variable_value_query(eco):
    with connect(eco) as c:
        rows = c.execute("SELECT DISTINCT quote_literal(host) FROM eco_metrics WHERE " + GF_TIME_FILTER
                         + " AND host IS NOT NULL ORDER BY 1 LIMIT 100").fetchall()
    assert rows == [("'a'",), ("'b'",)]


@pytest.mark.parametrize("binary", [False, True])  # Grafana's pgx backend reads results in binary
def test_grafana_time_series_queries(eco, binary):
    with connect(eco) as c:
        cur = c.cursor(binary=binary)
        # SELECT $__timeGroupAlias(ts, 1m), avg(cpu) AS "cpu" FROM eco_metrics WHERE $__timeFilter(ts) GROUP BY 1 ORDER BY 1
        cur.execute(f"""SELECT floor(extract(epoch from ts)/60)*60 AS "time", avg(cpu) AS "cpu"
                        FROM eco_metrics WHERE {GF_TIME_FILTER} GROUP BY 1 ORDER BY 1""")
        assert [d.name for d in cur.description] == ["time", "cpu"]
        assert [(float(t), v) for t, v in cur.fetchall()] == [(B0, 2.0), (B0 + 60, 5.0), (B0 + 120, 7.0)]
        # with a metric column: $__timeGroupAlias(ts, 5m), host AS metric, sum(reqs)
        cur.execute(f"""SELECT floor(extract(epoch from ts)/300)*300 AS "time", host AS metric, sum(reqs) AS "reqs"
                        FROM eco_metrics WHERE {GF_TIME_FILTER} GROUP BY 1, 2 ORDER BY 1, 2""")
        assert [(float(t), m, int(r)) for t, m, r in cur.fetchall()] == [(B0, "a", 70), (B0, "b", 30)]
        # $__time(ts) with $__timeFrom() / $__timeTo()
        cur.execute("""SELECT ts AS "time", cpu FROM eco_metrics
                       WHERE ts >= '2026-01-01T10:00:00Z' AND ts <= '2026-01-01T10:00:59.999Z' ORDER BY 1""")
        assert cur.fetchall() == [(datetime.datetime(2026, 1, 1, 10, 0, 5, tzinfo=UTC), 1.0),
                                  (datetime.datetime(2026, 1, 1, 10, 0, 55, tzinfo=UTC), 3.0)]
        # $__timeEpoch(ts) and $__timeFilter on a timestamp-without-time-zone column
        cur.execute(f"""SELECT extract(epoch from ts) as "time", v FROM eco_local WHERE {GF_TIME_FILTER} ORDER BY 1""")
        assert [(float(t), v) for t, v in cur.fetchall()] == [(B0 + 5, 1), (B0 + 59, 2), (B0 + 300, 4)]
        # $__unixEpochGroupAlias(epoch, 1m) with $__unixEpochFilter(epoch)
        cur.execute(f"""SELECT floor((epoch)/60)*60 AS "time", sum(v) AS v FROM eco_local
                        WHERE epoch >= {B0} AND epoch <= {B0 + 3599} GROUP BY 1 ORDER BY 1""")
        assert [(float(t), int(v)) for t, v in cur.fetchall()] == [(B0, 3), (B0 + 300, 4)]
