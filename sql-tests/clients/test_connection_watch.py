"""What the server does about a connection while its statement runs: a client that vanishes
gets its statement cancelled, and a running statement is never taken for idle time."""
import socket
import struct
import time

import psycopg


def connect(b, **kw):
    return psycopg.connect(**b, **kw)


def activity(admin, pid):
    row = admin.execute("SELECT state, query FROM pg_stat_activity WHERE pid = %s", (pid,)).fetchone()
    return row


def raw_session(b):
    """A protocol-level connection (startup, then the pid from BackendKeyData), so the test
    can send a query and close the socket without a Terminate, as a killed client does."""
    s = socket.create_connection((b["host"], b["port"]))
    params = f"user\0{b['user']}\0database\0{b['dbname']}\0\0".encode()
    s.sendall(struct.pack("!ii", 8 + len(params), 196608) + params)
    pid, buf = None, b""
    while True:
        while len(buf) < 5 or len(buf) < 1 + struct.unpack("!i", buf[1:5])[0]:
            chunk = s.recv(65536)
            assert chunk, "the server closed the connection during startup"
            buf += chunk
        kind, length = buf[0:1], struct.unpack("!i", buf[1:5])[0]
        body, buf = buf[5 : 1 + length], buf[1 + length :]
        if kind == b"K":
            pid = struct.unpack("!i", body[:4])[0]
        if kind == b"Z":
            return s, pid
        assert kind != b"E", body


def send_query(s, sql):
    q = sql.encode() + b"\0"
    s.sendall(b"Q" + struct.pack("!i", 4 + len(q)) + q)


def test_a_vanished_clients_statement_is_cancelled(brook):
    """A client killed while its statement runs (no CancelRequest, no Terminate): the server
    cancels the statement within a second or so, rather than running it to its end (before:
    the statement ran on for its full minute, and a quadratic one over large documents for
    a quarter of an hour). The cancelled INSERT writes nothing."""
    with connect(brook, autocommit=True) as admin:
        admin.execute("CREATE TABLE vanished (x int)")
        s, pid = raw_session(brook)
        send_query(s, "INSERT INTO vanished SELECT length(pg_sleep(60))")
        for _ in range(100):
            row = activity(admin, pid)
            if row and row[0] == "active":
                break
            time.sleep(0.05)
        assert row and row[0] == "active", row
        s.close()
        started = time.time()
        while time.time() - started < 10:
            if activity(admin, pid) is None:
                break
            time.sleep(0.1)
        assert activity(admin, pid) is None, "the vanished client's statement runs on"
        assert admin.execute("SELECT count(*) FROM vanished").fetchone()[0] == 0


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
