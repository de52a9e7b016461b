"""Continuous results through psycopg 3: push over COPY, server-side cursors over streams."""
import threading
import time

import psycopg
import pytest


def connect(b, autocommit=True):
    return psycopg.connect(host=b["host"], port=b["port"], user=b["user"], dbname=b["dbname"], autocommit=autocommit)


def wait_for(pred, seconds=10.0):
    deadline = time.time() + seconds
    while time.time() < deadline:
        if pred():
            return True
        time.sleep(0.005)
    return False


def test_copy_emit_changes_pushes_rows_until_cancel(brook):
    with connect(brook) as w:
        w.execute("CREATE STREAM py_push (k text, v integer)")
        w.execute("INSERT INTO py_push VALUES ('a', 1), ('a', 2)")
        reader = connect(brook)
        got, errors = [], []

        def read():
            try:
                with reader.cursor() as cur:
                    with cur.copy("COPY (SELECT k, sum(v) FROM py_push GROUP BY k EMIT CHANGES) TO STDOUT") as cp:
                        for row in cp.rows():
                            got.append(row)
            except psycopg.Error as e:
                errors.append(e)

        t = threading.Thread(target=read)
        t.start()
        # History first: the group's sum over both rows.
        assert wait_for(lambda: ("a", "3", "1") in got), got
        w.execute("INSERT INTO py_push VALUES ('b', 10)")
        # Pushed while the COPY is still open: no 8 KiB of buffering in between.
        assert wait_for(lambda: ("b", "10", "1") in got), got
        w.execute("INSERT INTO py_push VALUES ('a', 4)")
        assert wait_for(lambda: ("a", "7", "1") in got), got
        assert ("a", "3", "-1") in got
        reader.cancel()
        t.join(10)
        assert not t.is_alive()
        assert len(errors) == 1 and isinstance(errors[0], psycopg.errors.QueryCanceled)
        # The connection is usable after the cancel.
        assert reader.execute("SELECT 1").fetchone()[0] == 1
        reader.close()


def test_named_cursor_over_a_stream_fetches_as_rows_arrive(brook):
    with connect(brook) as w:
        w.execute("CREATE STREAM py_ticks (sym text, px double precision)")
        w.execute("INSERT INTO py_ticks VALUES ('X', 1.5)")
        with connect(brook, autocommit=False) as c:
            c.execute("SET brook.fetch_timeout = '100ms'")
            with c.cursor(name="live") as cur:
                cur.execute("SELECT sym, px * 2 AS px2 FROM py_ticks WHERE px > 1")
                assert cur.description[1].name == "px2"
                assert cur.fetchmany(10) == [("X", 3.0)]
                # Nothing new: an empty batch at the timeout, not an error or the end.
                assert cur.fetchmany(10) == []
                w.execute("INSERT INTO py_ticks VALUES ('Y', 0.5), ('Z', 4.0)")
                rows = []
                assert wait_for(lambda: rows.extend(cur.fetchmany(10)) or rows)
                assert rows == [("Z", 8.0)]


def test_unsupported_continuous_query_names_the_reason(brook):
    with connect(brook) as c:
        c.execute("CREATE STREAM py_bad (x integer)")
        with pytest.raises(psycopg.errors.FeatureNotSupported) as e:
            c.execute("DECLARE bad CURSOR WITH HOLD FOR SELECT x FROM py_bad ORDER BY x")
        assert "ORDER BY" in str(e.value)
