"""psycopg 3: execute, parameters, executemany, COPY, server-side cursors, errors."""
import datetime
import decimal

import psycopg
import pytest


def connect(b):
    return psycopg.connect(host=b["host"], port=b["port"], user=b["user"], dbname=b["dbname"], autocommit=True)


def test_select_literal_types(brook):
    with connect(brook) as c:
        cur = c.execute("SELECT 1, 'x', 1.5::float8, true, DATE '2026-01-02', TIMESTAMP '2026-01-01 10:00:00'")
        assert cur.fetchone() == (1, "x", 1.5, True, datetime.date(2026, 1, 2), datetime.datetime(2026, 1, 1, 10, 0))
        assert [d.name for d in cur.description] == ["?column?", "?column?", "float8", "bool", "date", "timestamp"]


def test_parameters_executemany_and_copy(brook):
    with connect(brook) as c:
        c.execute("CREATE TABLE py_items (id int PRIMARY KEY, name text, price numeric(10,2))")
        c.execute("INSERT INTO py_items VALUES (%s, %s, %s)", (1, "apple", decimal.Decimal("1.50")))
        with c.cursor() as cur:
            cur.executemany("INSERT INTO py_items VALUES (%s, %s, %s)", [(2, "pear", None), (3, "fig", decimal.Decimal("2.25"))])
        with c.cursor() as cur:
            with cur.copy("COPY py_items (id, name, price) FROM STDIN") as cp:
                for i in range(4, 1004):
                    cp.write_row((i, f"item{i}", decimal.Decimal(i) / 4))
        assert c.execute("SELECT count(*) FROM py_items").fetchone()[0] == 1003
        assert c.execute("SELECT name, price FROM py_items WHERE id = %s", (1,)).fetchone() == ("apple", decimal.Decimal("1.50"))
        rows = []
        with c.cursor() as cur:
            with cur.copy("COPY (SELECT id, name FROM py_items WHERE id < 3 ORDER BY id) TO STDOUT") as cp:
                for row in cp.rows():
                    rows.append(row)
        assert rows == [("1", "apple"), ("2", "pear")]


def test_server_side_cursor(brook):
    with connect(brook) as c:
        c.execute("CREATE TABLE py_big AS SELECT * FROM (VALUES (1), (2), (3), (4), (5)) AS v(x)")
    with psycopg.connect(host=brook["host"], port=brook["port"], user="brook", dbname="brook") as c:
        with c.cursor(name="walk") as cur:
            cur.itersize = 2
            cur.execute("SELECT x FROM py_big ORDER BY x")
            assert [r[0] for r in cur] == [1, 2, 3, 4, 5]


def test_errors_carry_sqlstate(brook):
    with connect(brook) as c:
        with pytest.raises(psycopg.errors.UndefinedTable):
            c.execute("SELECT * FROM no_such_table")
        with pytest.raises(psycopg.errors.SyntaxError):
            c.execute("SELEC 1")
        c.execute("CREATE TABLE py_pk (id int PRIMARY KEY)")
        c.execute("INSERT INTO py_pk VALUES (1)")
        with pytest.raises(psycopg.errors.UniqueViolation):
            c.execute("INSERT INTO py_pk VALUES (1)")
        with pytest.raises(psycopg.errors.InvalidTextRepresentation):
            c.execute("INSERT INTO py_pk VALUES ('abc')")
        # the connection keeps working after errors
        assert c.execute("SELECT count(*) FROM py_pk").fetchone()[0] == 1


def test_transaction_block_and_failed_state(brook):
    with psycopg.connect(host=brook["host"], port=brook["port"], user="brook", dbname="brook") as c:
        c.execute("SELECT 1")
        with pytest.raises(psycopg.errors.DivisionByZero):
            c.execute("SELECT 1/0")
        with pytest.raises(psycopg.errors.InFailedSqlTransaction):
            c.execute("SELECT 1")
        c.rollback()
        assert c.execute("SELECT 2").fetchone()[0] == 2


def test_cancel_stops_a_running_query(brook):
    import threading
    with connect(brook) as c:
        timer = threading.Timer(0.5, c.cancel)
        timer.start()
        try:
            with pytest.raises(psycopg.errors.QueryCanceled):
                c.execute("SELECT count(*) FROM generate_series(1, 20000000000) AS g(x) WHERE x % 7 = 3")
        finally:
            timer.cancel()
        assert c.execute("SELECT 42").fetchone()[0] == 42
        # with a parameter the statement runs over the extended protocol
        timer = threading.Timer(0.5, c.cancel)
        timer.start()
        try:
            with pytest.raises(psycopg.errors.QueryCanceled):
                c.execute("SELECT count(*) FROM generate_series(1, 20000000000) AS g(x) WHERE x %% %s = 3", (7,))
        finally:
            timer.cancel()
        assert c.execute("SELECT 43").fetchone()[0] == 43


def test_pg_stat_activity_and_pg_cancel_backend(brook):
    """A second connection sees the first one's running statement in pg_stat_activity and
    cancels it with pg_cancel_backend(pid), as an administrator does in PostgreSQL."""
    import threading
    import time

    long = "SELECT count(*) FROM generate_series(1, 20000000000) AS g(x) WHERE x % 7 = 3"
    with connect(brook) as busy, psycopg.connect(
        host=brook["host"], port=brook["port"], user=brook["user"], dbname=brook["dbname"],
        autocommit=True, application_name="watcher",
    ) as admin:
        busy_pid = busy.info.backend_pid
        failure = []

        def run():
            try:
                busy.execute(long)
                failure.append("the long statement was not cancelled")
            except psycopg.errors.QueryCanceled:
                pass

        t = threading.Thread(target=run)
        t.start()
        row = None
        for _ in range(100):
            row = admin.execute(
                "SELECT state, query, usename FROM pg_stat_activity WHERE pid = %s", (busy_pid,)
            ).fetchone()
            if row and row[0] == "active":
                break
            time.sleep(0.05)
        assert row == ("active", long, "brook"), row
        me = admin.execute(
            "SELECT application_name, state FROM pg_catalog.pg_stat_activity WHERE pid = pg_backend_pid()"
        ).fetchone()
        assert me == ("watcher", "active"), me
        # The address and the port apart, as PostgreSQL shows them (the address held
        # "127.0.0.1:41800"); a running statement's transaction began when it did.
        where = admin.execute(
            "SELECT client_addr, client_port, xact_start = query_start, wait_event "
            "FROM pg_stat_activity WHERE pid = %s", (busy_pid,)
        ).fetchone()
        assert where[0] == "127.0.0.1" and 0 < where[1] < 65536 and where[2:] == (True, None), where
        assert admin.execute("SELECT pg_cancel_backend(%s)", (busy_pid,)).fetchone()[0] is True
        t.join(timeout=30)
        assert not t.is_alive() and not failure, failure
        assert admin.execute("SELECT pg_cancel_backend(99999999)").fetchone()[0] is False
        assert busy.execute("SELECT 1").fetchone()[0] == 1
        state = admin.execute("SELECT state FROM pg_stat_activity WHERE pid = %s", (busy_pid,)).fetchone()[0]
        assert state == "idle", state


def test_pg_terminate_backend_ends_the_connection(brook):
    """pg_terminate_backend(pid) cancels the connection's statement and closes it with FATAL
    57P01, as PostgreSQL does; the server and other connections go on."""
    import time

    with connect(brook) as victim, connect(brook) as admin:
        pid = victim.info.backend_pid
        assert victim.execute("SELECT 1").fetchone()[0] == 1
        assert admin.execute("SELECT pg_terminate_backend(%s)", (pid,)).fetchone()[0] is True
        assert admin.execute("SELECT pg_terminate_backend(99999999)").fetchone()[0] is False
        ended = None
        for _ in range(50):
            try:
                victim.execute("SELECT 1")
            except psycopg.OperationalError as e:
                ended = e
                break
            time.sleep(0.05)
        assert ended is not None, "the terminated connection still answers"
        assert victim.closed or victim.broken
        for _ in range(50):
            gone = admin.execute("SELECT count(*) FROM pg_stat_activity WHERE pid = %s", (pid,)).fetchone()[0]
            if gone == 0:
                break
            time.sleep(0.05)
        assert gone == 0
        assert admin.execute("SELECT 1").fetchone()[0] == 1


def test_pg_terminate_backend_stops_a_running_statement(brook):
    """A statement running on a terminated connection fails with 57P01 (AdminShutdown), not
    57014 as a cancel would."""
    import threading
    import time

    long = "SELECT count(*) FROM generate_series(1, 20000000000) AS g(x) WHERE x % 7 = 3"
    with connect(brook) as busy, connect(brook) as admin:
        pid = busy.info.backend_pid
        errors = []

        def run():
            try:
                busy.execute(long)
            except psycopg.Error as e:
                errors.append(e)

        t = threading.Thread(target=run)
        t.start()
        for _ in range(100):
            row = admin.execute("SELECT state FROM pg_stat_activity WHERE pid = %s", (pid,)).fetchone()
            if row and row[0] == "active":
                break
            time.sleep(0.05)
        assert admin.execute("SELECT pg_terminate_backend(%s)", (pid,)).fetchone()[0] is True
        t.join(timeout=30)
        assert not t.is_alive()
        assert len(errors) == 1 and errors[0].sqlstate == "57P01", errors


def test_copy_to_stdout_in_binary_format(brook):
    """COPY (query) TO STDOUT (FORMAT binary) — the path polars/connectorx read by default —
    decoded by psycopg's binary copy with the column types."""
    import uuid
    with connect(brook) as c:
        c.execute("CREATE TABLE bin_out (id int, big bigint, name text, x float8, price numeric(10,2), ok bool, d date, at timestamp, u uuid)")
        c.execute(
            "INSERT INTO bin_out VALUES (1, 9000000000, 'a', 1.5, 2.25, true, '2026-01-02', '2026-01-02 03:04:05', 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11'),"
            " (2, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL)"
        )
        with c.cursor() as cur:
            with cur.copy("COPY (SELECT * FROM bin_out ORDER BY id) TO STDOUT (FORMAT binary)") as cp:
                cp.set_types(["int4", "int8", "text", "float8", "numeric", "bool", "date", "timestamp", "uuid"])
                rows = list(cp.rows())
        assert rows[0] == (
            1, 9000000000, "a", 1.5, decimal.Decimal("2.25"), True, datetime.date(2026, 1, 2),
            datetime.datetime(2026, 1, 2, 3, 4, 5), uuid.UUID("a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11"),
        )
        assert rows[1] == (2,) + (None,) * 8
        # an empty result: header and trailer in one message, as PostgreSQL sends them
        with c.cursor() as cur:
            with cur.copy("COPY (SELECT id FROM bin_out WHERE id > 5) TO STDOUT (FORMAT binary)") as cp:
                cp.set_types(["int4"])
                assert list(cp.rows()) == []


def test_lists_bind_as_arrays(brook):
    # a list bound as a parameter is the array of its items (it was one text '{a,b}')
    with connect(brook) as c:
        assert c.execute("SELECT %s::text[]", (["a", "b,c", None],)).fetchone()[0] == ["a", "b,c", None]
        assert c.execute("SELECT 2 = ANY(%s)", ([1, 2, 3],)).fetchone()[0] is True
        assert c.execute("SELECT cardinality(%s::int[])", ([4, 5, 6],)).fetchone()[0] == 3
        # psycopg sends a list of str untyped: `x = ANY(%s)` types it as an array of x's type
        # (it was bound as one text and failed with array_has(Utf8, Utf8)); pgcli asks so.
        c.execute("CREATE TABLE any_names (name text)")
        c.execute("INSERT INTO any_names VALUES ('a'), ('b'), ('c')")
        got = c.execute("SELECT name FROM any_names WHERE name = ANY(%s) ORDER BY name", (["a", "c", "z"],)).fetchall()
        assert got == [("a",), ("c",)], got
        kinds = c.execute("SELECT count(*) FROM pg_catalog.pg_class WHERE relkind = ANY(%s) AND relname = 'any_names'", (["r", "p"],)).fetchone()[0]
        assert kinds == 1, kinds


def test_array_columns_through_parameters_and_copy(brook):
    """Array columns: lists bound in text and binary, read back in both formats, and
    COPY in and out in text, CSV and binary."""
    with connect(brook) as c:
        c.execute("CREATE TABLE py_arrays (id int, v int[], t text[], at timestamp[])")
        ts = datetime.datetime(2026, 1, 2, 3, 4, 5)
        c.execute("INSERT INTO py_arrays VALUES (%s, %s, %s, %s)", (1, [1, None, 3], ["a b", 'q"x', None], [ts]))
        c.execute("INSERT INTO py_arrays VALUES (%b, %b, %b, %b)", (2, [4], [], None))
        with c.cursor() as cur:
            with cur.copy("COPY py_arrays FROM STDIN") as cp:
                cp.write_row((3, [5, 6], ["c,d"], []))
            with cur.copy("COPY py_arrays FROM STDIN (FORMAT csv)") as cp:
                cp.write(b'4,{7},"{""e""}",\n')
            with cur.copy("COPY py_arrays FROM STDIN (FORMAT binary)") as cp:
                cp.set_types(["int4", "int4[]", "text[]", "timestamp[]"])
                cp.write_row((5, [8, None], ["f"], [ts]))
        expected = [
            (1, [1, None, 3], ["a b", 'q"x', None], [ts]),
            (2, [4], [], None),
            (3, [5, 6], ["c,d"], []),
            (4, [7], ["e"], None),
            (5, [8, None], ["f"], [ts]),
        ]
        for binary in (False, True):
            got = c.execute("SELECT * FROM py_arrays ORDER BY id", binary=binary).fetchall()
            assert got == expected, (binary, got)
        with c.cursor() as cur:
            with cur.copy("COPY (SELECT * FROM py_arrays ORDER BY id) TO STDOUT (FORMAT binary)") as cp:
                cp.set_types(["int4", "int4[]", "text[]", "timestamp[]"])
                assert list(cp.rows()) == expected
        with c.cursor() as cur:
            with cur.copy("COPY (SELECT id, t FROM py_arrays WHERE id = 1) TO STDOUT") as cp:
                text = b"".join(bytes(b) for b in cp)
        assert text == b'1\t{"a b","q\\\\"x",NULL}\n', text
        # a malformed array in COPY names its line; a nested one is refused by name
        with pytest.raises(psycopg.errors.InvalidTextRepresentation, match="malformed array literal"):
            with c.cursor() as cur:
                with cur.copy("COPY py_arrays (id, v) FROM STDIN") as cp:
                    cp.write(b"9\t{1}\n9\t1,2\n")
        with pytest.raises(psycopg.errors.FeatureNotSupported):
            with c.cursor() as cur:
                with cur.copy("COPY py_arrays (id, v) FROM STDIN") as cp:
                    cp.write(b"9\t{{1},{2}}\n")
        assert c.execute("SELECT count(*) FROM py_arrays").fetchone()[0] == 5


def test_sequences_serial_copy_and_sqlstates(brook):
    """A SERIAL column takes its values in COPY too; the sequence errors carry PostgreSQL's
    SQLSTATEs."""
    with connect(brook) as c:
        c.autocommit = True
        c.execute("CREATE TABLE pg_serial (id bigserial PRIMARY KEY, v text)")
        with c.cursor().copy("COPY pg_serial (v) FROM STDIN") as cp:
            for v in ["a", "b", "c"]:
                cp.write_row((v,))
        c.execute("INSERT INTO pg_serial (v) VALUES (%s)", ("d",))
        assert c.execute("SELECT id, v FROM pg_serial ORDER BY id").fetchall() == [
            (1, "a"), (2, "b"), (3, "c"), (4, "d")]
        c.execute("CREATE SEQUENCE pg_short MAXVALUE 2")
        c.execute("CREATE TABLE pg_always (id int GENERATED ALWAYS AS IDENTITY, v int)")
        cases = {
            "SELECT currval('pg_short')": "55000",
            "SELECT nextval('pg_short') FROM generate_series(1, 3)": "2200H",
            "SELECT nextval('pg_missing')": "42P01",
            "SELECT nextval('pg_serial')": "42809",
            "SELECT setval('pg_short', 5)": "22003",
            "INSERT INTO pg_always VALUES (1, 1)": "428C9",
            "DROP SEQUENCE pg_serial_id_seq": "2BP01",
            "SELECT nextval('a b')": "42602",
        }
        for sql, code in cases.items():
            with pytest.raises(psycopg.Error) as err:
                c.execute(sql)
            assert err.value.sqlstate == code, (sql, err.value)
        c.execute("DROP TABLE pg_serial, pg_always")
        c.execute("DROP SEQUENCE pg_short")


def test_copy_progress_and_application_name_in_the_activity_views(brook):
    """pg_stat_progress_copy shows a COPY FROM STDIN's rows so far while it runs, and
    pg_stat_activity the application_name the session set since it connected."""
    import time

    with connect(brook) as loader, connect(brook) as admin:
        loader.execute("CREATE TABLE progress_t (i int, s text)")
        loader.execute("SET application_name = 'loader'")
        pid = loader.info.backend_pid
        assert admin.execute(
            "SELECT application_name FROM pg_stat_activity WHERE pid = %s", (pid,)
        ).fetchone()[0] == "loader"
        chunk = "".join(f"{i}\trow {i}\n" for i in range(50000))
        with loader.cursor().copy("COPY progress_t FROM STDIN") as copy:
            copy.write(chunk)
            row = None
            for _ in range(100):
                row = admin.execute(
                    "SELECT command, type, tuples_processed, bytes_processed, relname "
                    "FROM pg_stat_progress_copy WHERE pid = %s", (pid,)
                ).fetchone()
                if row and row[2] > 0:
                    break
                time.sleep(0.05)
            assert row is not None and row[0:2] == ("COPY FROM", "PIPE"), row
            assert 0 < row[2] <= 50000 and row[3] > 0 and row[4] == "public.progress_t", row
        assert admin.execute(
            "SELECT count(*) FROM pg_stat_progress_copy WHERE pid = %s", (pid,)
        ).fetchone()[0] == 0
        assert admin.execute("SELECT count(*) FROM progress_t").fetchone()[0] == 50000


def test_show_and_explain_tags_carry_no_row_count(brook):
    """PostgreSQL's CommandComplete for SHOW is `SHOW` and for EXPLAIN `EXPLAIN` (no count,
    unlike SELECT's), in the extended and the simple protocol."""
    with connect(brook) as c:
        cur = c.cursor()
        for sql, tag in (("SHOW server_version", "SHOW"), ("EXPLAIN SELECT 1", "EXPLAIN"),
                         ("SELECT 1", "SELECT 1")):
            cur.execute(sql)
            assert cur.statusmessage == tag
            assert c.pgconn.exec_(sql.encode()).command_status.decode() == tag


def test_move_tags_count_the_rows_moved_over(brook):
    """MOVE's tag is `MOVE n`, the rows passed over (PostgreSQL's count)."""
    with connect(brook) as conn:
        conn.execute("CREATE TABLE py_moved (i int)")
        conn.execute("INSERT INTO py_moved SELECT generate_series(1, 10)")
        with conn.transaction(), conn.cursor() as c:
            c.execute("DECLARE mv CURSOR FOR SELECT i FROM py_moved ORDER BY i")
            for move, tag in [
                ("MOVE 3 IN mv", "MOVE 3"),
                ("MOVE ABSOLUTE 7 IN mv", "MOVE 1"),
                ("MOVE FORWARD ALL IN mv", "MOVE 3"),
                ("MOVE NEXT IN mv", "MOVE 0"),
            ]:
                c.execute(move)
                assert c.statusmessage == tag, move


def test_transaction_commands_out_of_place_warn_as_postgresql(brook):
    """COMMIT outside a block and BEGIN inside one are WARNINGs with their SQLSTATEs (25P01,
    25001), as PostgreSQL sends them; DROP ... IF EXISTS of nothing stays a NOTICE."""
    seen = []
    with connect(brook) as conn:
        conn.add_notice_handler(lambda d: seen.append((d.severity_nonlocalized, d.sqlstate, d.message_primary)))
        conn.execute("COMMIT")
        conn.execute("BEGIN")
        conn.execute("BEGIN")
        conn.execute("ROLLBACK")
        conn.execute("DROP TABLE IF EXISTS py_no_such_table")
    assert seen == [
        ("WARNING", "25P01", "there is no transaction in progress"),
        ("WARNING", "25001", "there is already a transaction in progress"),
        ("NOTICE", "00000", 'table "py_no_such_table" does not exist, skipping'),
    ]


def test_if_not_exists_notices_carry_the_sqlstate_of_the_error_they_skip(brook):
    """CREATE ... IF NOT EXISTS of an existing object is a NOTICE with the SQLSTATE its
    error would have had (42P07 relation, 42P06 schema, 42701 column), as PostgreSQL sends
    it; a missing object's IF EXISTS notice is 00000 (were all silent, or 00000)."""
    seen = []
    with connect(brook) as conn:
        conn.execute("CREATE TABLE py_nx (id int)")
        conn.execute("CREATE SCHEMA py_nx_s")
        conn.add_notice_handler(lambda d: seen.append((d.sqlstate, d.message_primary)))
        for sql in [
            "CREATE TABLE IF NOT EXISTS py_nx (x int)",
            "CREATE STREAM IF NOT EXISTS py_nx (x int)",
            "CREATE TABLE IF NOT EXISTS py_nx AS SELECT 1 AS x",
            "CREATE MATERIALIZED VIEW IF NOT EXISTS py_nx AS SELECT id FROM py_nx",
            "CREATE SEQUENCE IF NOT EXISTS py_nx",
            "CREATE INDEX IF NOT EXISTS py_nx ON py_nx (id)",
            "CREATE SCHEMA IF NOT EXISTS py_nx_s",
            "ALTER TABLE py_nx ADD COLUMN IF NOT EXISTS id int",
            "ALTER TABLE IF EXISTS py_nx_missing ADD COLUMN x int",
        ]:
            conn.execute(sql)
        conn.execute("DROP TABLE py_nx")
        conn.execute("DROP SCHEMA py_nx_s")
    with connect(brook) as conn:
        conn.add_notice_handler(lambda d: seen.append((d.sqlstate, d.message_primary)))
        # client_min_messages hides what is below it, as PostgreSQL's does.
        conn.execute("SET client_min_messages = warning")
        conn.execute("DROP TABLE IF EXISTS py_nx_missing")
        conn.execute("COMMIT")
        conn.execute("SET client_min_messages = error")
        conn.execute("COMMIT")
        with pytest.raises(psycopg.errors.InvalidParameterValue):
            conn.execute("SET client_min_messages = fatal")
        conn.execute("SET client_min_messages = 'WARNING'")
        assert conn.execute("SHOW client_min_messages").fetchone() == ("warning",)
    exists = ("42P07", 'relation "py_nx" already exists, skipping')
    assert seen == [exists] * 6 + [
        ("42P06", 'schema "py_nx_s" already exists, skipping'),
        ("42701", 'column "id" of relation "py_nx" already exists, skipping'),
        ("00000", 'relation "py_nx_missing" does not exist, skipping'),
        ("25P01", "there is no transaction in progress"),
    ]


def test_drop_if_exists_of_nothing_says_so(brook):
    """DROP ... IF EXISTS of a missing index or schema and DROP COLUMN IF EXISTS of a
    missing column send PostgreSQL's notice (00000), as DROP TABLE IF EXISTS did; they
    were silent."""
    seen = []
    with connect(brook) as conn:
        conn.execute("CREATE TABLE py_dx (id int)")
        conn.add_notice_handler(lambda d: seen.append((d.sqlstate, d.message_primary)))
        for sql in [
            "DROP INDEX IF EXISTS py_dx_missing",
            "DROP SCHEMA IF EXISTS py_dx_missing",
            "ALTER TABLE py_dx DROP COLUMN IF EXISTS nope",
            "DROP TABLE IF EXISTS py_dx_missing",
        ]:
            conn.execute(sql)
        conn.execute("DROP TABLE py_dx")
    assert seen == [
        ("00000", 'index "py_dx_missing" does not exist, skipping'),
        ("00000", 'schema "py_dx_missing" does not exist, skipping'),
        ("00000", 'column "nope" of relation "py_dx" does not exist, skipping'),
        ("00000", 'table "py_dx_missing" does not exist, skipping'),
    ]


def test_result_columns_are_named_as_postgresql_names_them(brook):
    """SHOW names its column as PostgreSQL names the parameter; set_config's is set_config."""
    with connect(brook) as conn, conn.cursor() as c:
        for sql, name in [
            ("SHOW timezone", "TimeZone"),
            ("SHOW datestyle", "DateStyle"),
            ("SHOW search_path", "search_path"),
            ("SELECT set_config('my.x', 'a', false)", "set_config"),
            ("SELECT current_role", "current_role"),
            # operators are ?column? (were the functions they become: json_get_json, ...)
            ("""SELECT '{"a":1}'::jsonb -> 'a'""", "?column?"),
            ("""SELECT '{"a":1}'::jsonb ->> 'a'""", "?column?"),
            ("""SELECT '{"a":1}'::jsonb #> '{a}'""", "?column?"),
            ("""SELECT '{"a":1}'::jsonb ? 'a'""", "?column?"),
            ("SELECT ARRAY[1, 2] @> ARRAY[1]", "?column?"),
            ("SELECT 1 = ANY (ARRAY[1, 2])", "?column?"),
            ("""SELECT jsonb_extract_path_text('{"a":1}', 'a')""", "jsonb_extract_path_text"),
            ("SELECT json_array_length('[1, 2]')", "json_array_length"),
        ]:
            c.execute(sql)
            assert c.description[0].name == name, sql
        # two outputs of one alias are both named so (the second was `__brook_col_1`)
        c.execute("SELECT 1 AS a, 2 AS a, 3 AS \"A\"")
        assert [d.name for d in c.description] == ["a", "a", "A"]
        # an alias beside a qualified column of its name (was 42702-like "ambiguous"),
        # a column beside `*` (was `__alias_x`), and `*` of a USING join (its column first)
        c.execute("CREATE TABLE names_a (x int, k int)")
        c.execute("CREATE TABLE names_b (k int, y int)")
        try:
            c.execute("INSERT INTO names_a VALUES (1, 1), (2, 2)")
            c.execute("INSERT INTO names_b VALUES (2, 20), (3, 30)")
            c.execute("SELECT x + 1 AS k, names_a.k FROM names_a ORDER BY k DESC")
            assert [d.name for d in c.description] == ["k", "k"]
            assert c.fetchall() == [(3, 2), (2, 1)]
            c.execute("SELECT *, x FROM names_a ORDER BY 1")
            assert [d.name for d in c.description] == ["x", "k", "x"]
            c.execute("SELECT *, names_b.k FROM names_a FULL JOIN names_b USING (k) ORDER BY 1")
            assert [d.name for d in c.description] == ["k", "x", "y", "k"]
            assert c.fetchall() == [(1, 1, None, None), (2, 2, 20, 2), (3, None, 30, 3)]
        finally:
            c.execute("DROP TABLE names_a")
            c.execute("DROP TABLE names_b")


def test_multi_row_values_type_literals_by_their_column(brook):
    """A quoted literal in a multi-row INSERT VALUES takes its column's type, as in
    PostgreSQL: 'Infinity' beside 1 in a float column was 22P02 (the VALUES column was
    typed integer from the other row)."""
    with connect(brook) as c:
        c.execute("CREATE TABLE py_inf (id int, x float8, d interval)")
        c.execute("INSERT INTO py_inf VALUES (1, 'Infinity', '1 day'), (2, 1, '2 hours'), (3, '-Infinity', NULL)")
        rows = c.execute("SELECT id, x FROM py_inf ORDER BY id").fetchall()
        assert rows == [(1, float("inf")), (2, 1.0), (3, float("-inf"))]


def test_json_parameters_are_json(brook):
    """Parameters bound as json / jsonb (psycopg's Json and Jsonb) are of those types: `||`
    merges, `-` deletes, and a literal compared with one is read as jsonb (they were text:
    `$1 || $2` concatenated the text, `$1 - 'a'` was XX000)."""
    from psycopg.types.json import Json, Jsonb

    with connect(brook) as c:
        c.execute("CREATE TABLE py_docs (k int, doc jsonb)")
        c.execute("INSERT INTO py_docs VALUES (%s, %s)", (1, Jsonb({"b": 2, "a": 1})))
        assert c.execute("SELECT %s || %s", (Jsonb({"a": 1}), Jsonb({"b": 2}))).fetchone()[0] == {"a": 1, "b": 2}
        assert c.execute("SELECT %s - 'a'", (Jsonb({"a": 1, "c": 3}),)).fetchone()[0] == {"c": 3}
        assert c.execute("SELECT doc || %s FROM py_docs", (Jsonb({"z": 0}),)).fetchone()[0] == {"a": 1, "b": 2, "z": 0}
        assert c.execute("SELECT k FROM py_docs WHERE doc = %s", (Jsonb({"a": 1, "b": 2}),)).fetchone()[0] == 1
        assert c.execute("SELECT pg_typeof(%s), pg_typeof(%s)", (Json([1]), Jsonb([1]))).fetchone() == ("json", "jsonb")
        c.execute("UPDATE py_docs SET doc = doc - %s", ("b",))
        assert c.execute("SELECT doc FROM py_docs").fetchone()[0] == {"a": 1}
        with pytest.raises(psycopg.errors.InvalidTextRepresentation):
            c.execute("SELECT %s::jsonb", ("{not json",))


def test_numbers_in_exponent_notation_and_beyond_a_real(brook):
    """COPY reads `1e1` into a numeric column (Arrow's decimal parser refused it: 22003) and
    refuses a value a real cannot hold (it stored Infinity); numeric results come back as
    Decimal with every digit (1.0 / 3 at PostgreSQL's scale)."""
    with connect(brook) as c:
        c.execute("CREATE TABLE py_sci (n numeric, r real)")
        with c.cursor() as cur:
            with cur.copy("COPY py_sci FROM STDIN") as cp:
                cp.write(b"1e1\t1.5\n-1.5e-3\t2\n")
        assert c.execute("SELECT n FROM py_sci ORDER BY n").fetchall() == [
            (decimal.Decimal("-0.0015"),),
            (decimal.Decimal("10"),),
        ]
        with pytest.raises(psycopg.errors.NumericValueOutOfRange):
            with c.cursor() as cur:
                with cur.copy("COPY py_sci FROM STDIN") as cp:
                    cp.write(b"1\t3.5e38\n")
        assert c.execute("SELECT count(*) FROM py_sci").fetchone()[0] == 2
        third = c.execute("SELECT 1.0 / 3, %s * 2", (decimal.Decimal("0.1"),)).fetchone()
        assert third == (decimal.Decimal("0.33333333333333333333"), decimal.Decimal("0.2"))


def test_session_time_zone_reads_and_shows_local_times(brook):
    """In a session of another zone than UTC, COPY text and parameters are read as
    PostgreSQL reads them (local times; a time the zone has twice is standard time; an
    aware datetime keeps its instant) and instants come back in the zone."""
    import datetime
    import zoneinfo

    with connect(brook) as conn, conn.cursor() as c:
        c.execute("SET TimeZone = 'America/New_York'")
        c.execute("CREATE TABLE tz_copy (id int, t timestamptz)")
        try:
            with c.copy("COPY tz_copy FROM STDIN") as cp:
                cp.write("1\t2026-07-01 12:00\n2\t2026-11-01 01:30\n3\t2026-07-01 12:00+00\n")
            utc = datetime.timezone.utc
            c.execute(
                "INSERT INTO tz_copy VALUES (4, %s)",
                [datetime.datetime(2026, 7, 1, 16, 0, tzinfo=utc)],
            )
            c.execute("SELECT id, t::text FROM tz_copy ORDER BY id")
            assert c.fetchall() == [
                (1, "2026-07-01 12:00:00-04"),
                (2, "2026-11-01 01:30:00-05"),
                (3, "2026-07-01 08:00:00-04"),
                (4, "2026-07-01 12:00:00-04"),
            ]
            c.execute("SELECT t FROM tz_copy WHERE id = 1")
            (t,) = c.fetchone()
            assert t == datetime.datetime(2026, 7, 1, 16, 0, tzinfo=utc)
            assert t.tzinfo == zoneinfo.ZoneInfo("America/New_York")
        finally:
            c.execute("DROP TABLE tz_copy")


def test_copy_reads_times_as_postgresql_reads_them(brook):
    with connect(brook) as c:
        c.execute("CREATE TABLE py_times (id int, t time)")
        with c.cursor() as cur:
            with cur.copy("COPY py_times FROM STDIN") as cp:
                cp.write(b"1\t0130\n2\t1:30 pm\n3\t13:14:15+00\n4\t\\N\n")
        rows = c.execute("SELECT id, t FROM py_times ORDER BY id").fetchall()
        assert rows == [
            (1, datetime.time(1, 30)),
            (2, datetime.time(13, 30)),
            (3, datetime.time(13, 14, 15)),
            (4, None),
        ]
        with pytest.raises(psycopg.errors.InvalidDatetimeFormat) as e:
            with c.cursor() as cur:
                with cur.copy("COPY py_times FROM STDIN") as cp:
                    cp.write(b"5\t0130\n6\t1\n")
        assert 'invalid input syntax for type time: "1" (COPY py_times, line 2, column t)' in str(e.value)
        assert c.execute("SELECT count(*) FROM py_times").fetchone()[0] == 4


def test_copy_rounds_to_declared_precisions(brook):
    """COPY text and binary into timestamp(0)/timestamptz(2)/time(1) columns stores the
    values rounded as PostgreSQL rounds them (they were kept to the microsecond)."""
    utc = datetime.timezone.utc
    with connect(brook) as c:
        c.execute("CREATE TABLE py_precisions (id int, a timestamp(0), b timestamptz(2), c time(1))")
        with c.cursor() as cur:
            with cur.copy("COPY py_precisions FROM STDIN") as cp:
                cp.write(b"1\t2026-01-01 10:00:00.678\t2026-01-01 10:00:00.555+00\t10:00:00.66\n")
            with cur.copy("COPY py_precisions FROM STDIN (FORMAT binary)") as cp:
                cp.set_types(["int4", "timestamp", "timestamptz", "time"])
                cp.write_row((2, datetime.datetime(2026, 1, 1, 10, 0, 0, 500000),
                              datetime.datetime(2026, 1, 1, 10, 0, 0, 4999, tzinfo=utc),
                              datetime.time(10, 0, 0, 949999)))
        rows = c.execute("SELECT id, a, b, c FROM py_precisions ORDER BY id").fetchall()
        assert rows == [
            (1, datetime.datetime(2026, 1, 1, 10, 0, 1),
             datetime.datetime(2026, 1, 1, 10, 0, 0, 560000, tzinfo=utc), datetime.time(10, 0, 0, 700000)),
            (2, datetime.datetime(2026, 1, 1, 10, 0, 1),
             datetime.datetime(2026, 1, 1, 10, 0, 0, 0, tzinfo=utc), datetime.time(10, 0, 0, 900000)),
        ]


def test_copy_reads_datetime_input_as_postgresql(brook):
    """COPY text and csv read dates and timestamps in PostgreSQL's forms (month names,
    MDY, compact digits, zone abbreviations, `today`); a bad one names its line and is
    22008 or 22007 (they were Arrow's parse errors)."""
    utc = datetime.timezone.utc
    with connect(brook) as c:
        c.execute("CREATE TABLE py_datetime_input (id int, d date, ts timestamp, tz timestamptz)")
        with c.cursor() as cur:
            with cur.copy("COPY py_datetime_input FROM STDIN") as cp:
                cp.write(b"1\tJan 2 2024\t1/2/2024 10:00 pm\t2024-01-02 10:00 PST\n")
                cp.write(b"2\t20240103\t2024-1-3 1:02:03.1234567\t2024-01-03 24:00:00+01\n")
            with cur.copy("COPY py_datetime_input FROM STDIN (FORMAT csv)") as cp:
                cp.write(b'3,today,"Tuesday, January 2, 2024 3:04:05 PM",epoch\n')
        rows = c.execute("SELECT id, d = current_date, ts, tz FROM py_datetime_input ORDER BY id").fetchall()
        assert rows == [
            (1, False, datetime.datetime(2024, 1, 2, 22, 0), datetime.datetime(2024, 1, 2, 18, 0, tzinfo=utc)),
            (2, False, datetime.datetime(2024, 1, 3, 1, 2, 3, 123457),
             datetime.datetime(2024, 1, 3, 23, 0, tzinfo=utc)),
            (3, True, datetime.datetime(2024, 1, 2, 15, 4, 5), datetime.datetime(1970, 1, 1, tzinfo=utc)),
        ]
        for line, state in [(b"4\t2000-02-30\t\\N\t\\N\n", "22008"), (b"4\t\\N\tJan 2 2024 XYZ\t\\N\n", "22007")]:
            with pytest.raises(psycopg.Error) as err:
                with c.cursor() as cur:
                    with cur.copy("COPY py_datetime_input FROM STDIN") as cp:
                        cp.write(b"5\t2024-01-01\t\\N\t\\N\n" + line)
            assert err.value.sqlstate == state
            assert "line 2" in str(err.value), str(err.value)
        assert c.execute("SELECT count(*) FROM py_datetime_input").fetchone() == (3,)
        # Times outside nanoseconds' range (Arrow's parser read text through them): a
        # column keeps them; an expression that takes one in is 22008, not a cast error.
        with c.cursor() as cur:
            with cur.copy("COPY py_datetime_input (id, ts, tz) FROM STDIN") as cp:
                cp.write(b"6\t9999-12-31\t0001-01-01 00:00+00\n")
        assert c.execute("SELECT ts, tz FROM py_datetime_input WHERE id = 6").fetchone() == (
            datetime.datetime(9999, 12, 31), datetime.datetime(1, 1, 1, tzinfo=utc))
        with pytest.raises(psycopg.Error) as err:
            c.execute("SELECT id FROM py_datetime_input WHERE ts = '9999-12-31'")
        assert err.value.sqlstate == "22008", str(err.value)


def test_current_time_functions_name_their_columns_as_postgresql(brook):
    """localtimestamp, localtime, current_timestamp(p), current_time become calls of
    Brook's functions; their result columns keep PostgreSQL's names."""
    with connect(brook) as c:
        cur = c.execute(
            "SELECT localtimestamp, localtime, current_timestamp(0), current_time, localtimestamp(2)"
        )
        assert [d.name for d in cur.description] == [
            "localtimestamp", "localtime", "current_timestamp", "current_time", "localtimestamp",
        ]
        row = cur.fetchone()
        assert isinstance(row[0], datetime.datetime) and row[0].tzinfo is None
        assert isinstance(row[1], datetime.time)
        assert row[2].microsecond == 0


def test_time_zone_default_is_the_startup_packets(brook):
    """SET TIME ZONE DEFAULT / LOCAL and RESET TIME ZONE go back to the zone the startup
    packet gave, as PostgreSQL's do (they went to UTC)."""
    with psycopg.connect(
        host=brook["host"], port=brook["port"], user=brook["user"], dbname=brook["dbname"],
        autocommit=True, options="-c TimeZone=Asia/Tokyo",
    ) as c:
        for back in ["SET TIME ZONE DEFAULT", "SET TIME ZONE LOCAL", "SET timezone TO DEFAULT", "RESET TIME ZONE"]:
            c.execute("SET TIME ZONE 'Europe/Paris'")
            c.execute(back)
            assert c.execute("SHOW TimeZone").fetchone()[0] == "Asia/Tokyo", back
            assert c.execute("SELECT extract(timezone FROM now())::int").fetchone()[0] == 9 * 3600


def test_unconstrained_numeric_never_rounds_input_silently(brook):
    """A value with more decimals than Brook's unconstrained numeric keeps (10) is refused
    with 22003 naming the line, in COPY text, csv and binary and as a parameter, rather
    than stored rounded; a declared scale rounds as PostgreSQL's does; a parameter cast to
    numeric keeps its digits."""
    Decimal = decimal.Decimal
    with connect(brook) as c:
        c.execute("CREATE TABLE py_loose (n numeric, d numeric(5,2))")
        with c.cursor() as cur:
            with cur.copy("COPY py_loose FROM STDIN") as cp:
                cp.write(b"1.1234567890\t1.125\n1.5e-9\t1.123456789012345678\n")
        assert c.execute("SELECT n, d FROM py_loose ORDER BY n").fetchall() == [
            (Decimal("0.0000000015"), Decimal("1.12")),
            (Decimal("1.123456789"), Decimal("1.13")),
        ]
        copies = [
            ("COPY py_loose FROM STDIN", b"1\t1\n1.123456789012\t1\n", '"1.123456789012" has 12 decimal digits'),
            ("COPY py_loose FROM STDIN (FORMAT csv)", b"1,1\n1e-11,1\n", '"1e-11" has 11 decimal digits'),
        ]
        for sql, data, words in copies:
            with pytest.raises(psycopg.Error) as err:
                with c.cursor() as cur:
                    with cur.copy(sql) as cp:
                        cp.write(data)
            assert err.value.sqlstate == "22003"
            assert words in str(err.value) and "line 2" in str(err.value), str(err.value)
        with pytest.raises(psycopg.Error) as err:
            with c.cursor() as cur:
                with cur.copy("COPY py_loose (n) FROM STDIN (FORMAT binary)") as cp:
                    cp.set_types(["numeric"])
                    cp.write_row([Decimal("2.5")])
                    cp.write_row([Decimal("0.000000000001")])
        assert err.value.sqlstate == "22003", str(err.value)
        with pytest.raises(psycopg.Error) as err:
            c.execute("INSERT INTO py_loose VALUES (%s, 1)", [Decimal("1.123456789012")])
        assert err.value.sqlstate == "22003"
        assert c.execute("SELECT count(*) FROM py_loose").fetchone() == (2,)
        got = c.execute("SELECT %s::numeric * 2", [Decimal("1.123456789012")]).fetchone()
        assert got == (Decimal("2.246913578024"),)


def test_binary_numerics_keep_every_digit(brook):
    """A binary numeric (COPY FORMAT binary, a binary parameter) is read with every digit:
    it went through a 28-digit decimal, so 1234567890123456789012345678.1234567891 arrived
    as ...678.1 and 1E-38 as 0."""
    Decimal = decimal.Decimal
    big = Decimal("1234567890123456789012345678.1234567891")
    with connect(brook) as c:
        c.execute("CREATE TABLE py_binary_numeric (n numeric(38,10), tiny numeric(38,38))")
        with c.cursor(binary=True) as cur:
            with cur.copy("COPY py_binary_numeric FROM STDIN (FORMAT binary)") as cp:
                cp.set_types(["numeric", "numeric"])
                cp.write_row([big, Decimal("1E-38")])
                cp.write_row([Decimal("-0.0000000001"), Decimal("0")])
            got = cur.execute("SELECT n::text, tiny::text FROM py_binary_numeric ORDER BY n").fetchall()
            # (A scale of 20 or more prints without trailing zeros: docs/limits.md.)
            assert got == [("-0.0000000001", "0"),
                           (str(big), "0.00000000000000000000000000000000000001")]
            assert cur.execute("SELECT %s::numeric(38,10)::text", [big]).fetchone() == (str(big),)
