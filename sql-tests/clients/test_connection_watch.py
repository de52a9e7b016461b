"""What the server does about a connection while its statement runs: a client that vanishes
gets its statement cancelled, and a running statement is never taken for idle time."""
import os
import time

import psycopg

import wire_protocol


def connect(b, **kw):
    return psycopg.connect(**b, **kw)


def activity(admin, pid):
    row = admin.execute("SELECT state, query FROM pg_stat_activity WHERE pid = %s", (pid,)).fetchone()
    return row


def cpu_seconds(pid):
    """The process's CPU time so far (user and system)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def wait_active(admin, pid):
    for _ in range(100):
        row = activity(admin, pid)
        if row and row[0] == "active":
            return
        time.sleep(0.05)
    raise AssertionError(f"backend {pid} never ran its statement")


def wait_gone(admin, pid):
    """Whether backend `pid` leaves pg_stat_activity within 10 s."""
    deadline = time.time() + 10
    while activity(admin, pid) is not None and time.time() < deadline:
        time.sleep(0.1)
    return activity(admin, pid) is None


def test_a_vanished_clients_query_is_cancelled(brook, brook_pid):
    """A client killed while its query computes (no CancelRequest, no Terminate): the server
    cancels the query, and stops computing, within a second or so. Before, a query whose
    work is inside one batch (jsonb containment of large documents) went on at a full core
    after the connection had ended — for a quarter of an hour in the case that was found."""
    # One comparison of a document of 12,000 objects with itself: tens of seconds of work
    # inside one function call.
    objects = ",".join(f'{{"k": {i}}}' for i in range(12000))
    with connect(brook, autocommit=True) as admin:
        admin.execute("CREATE TABLE vanished_docs (doc jsonb)")
        admin.execute("INSERT INTO vanished_docs VALUES (%s::jsonb)", (f"[{objects}]",))
        s = wire_protocol.Session(brook)
        s.send(wire_protocol.query("SELECT doc @> doc FROM vanished_docs"))
        wait_active(admin, s.pid)
        s.close()
        assert wait_gone(admin, s.pid), "the vanished client's query runs on"
        # The server is idle again: not a CPU-second spent over the next three seconds.
        time.sleep(0.5)
        before = cpu_seconds(brook_pid)
        time.sleep(3)
        spent = cpu_seconds(brook_pid) - before
        assert spent < 1.0, f"the server spent {spent:.1f} CPU-seconds in 3 s after the client left"


def test_a_vanished_clients_write_is_carried_out(brook):
    """A write the client sent whole runs to its end though the client left, as in
    PostgreSQL: only a query, whose rows have nowhere to go, is cancelled."""
    with connect(brook, autocommit=True) as admin:
        admin.execute("CREATE TABLE vanished (x int)")
        s = wire_protocol.Session(brook)
        s.send(wire_protocol.query("INSERT INTO vanished SELECT length(pg_sleep(1.5)) + 7"))
        wait_active(admin, s.pid)
        s.close()
        assert wait_gone(admin, s.pid)
        assert admin.execute("SELECT x FROM vanished").fetchall() == [(7,)]


def test_a_statement_running_in_a_block_is_not_idle_time(brook):
    """idle_in_transaction_session_timeout counts only time waiting for the client. A
    statement sent with the extended protocol (psycopg with parameters) that ran past it
    inside a transaction block got FATAL 25P03 (before the fix); PostgreSQL runs it."""
    with connect(brook) as c:
        c.execute("SET idle_in_transaction_session_timeout = 1000")
        c.commit()
        c.execute("SELECT 1")  # opens the block
        assert c.execute("SELECT pg_sleep(%s), %s::int", (2, 7)).fetchone()[1] == 7
        c.execute("SELECT pg_sleep(2)")
        assert c.execute("SELECT 2").fetchone()[0] == 2
        c.rollback()
        # Idle in the block past the limit still ends the connection.
        c.execute("SELECT 1")
        time.sleep(2.5)
        try:
            c.execute("SELECT 1")
            raise AssertionError("an idle block outlived idle_in_transaction_session_timeout")
        except psycopg.Error as e:
            assert e.sqlstate in ("25P03", None), e
