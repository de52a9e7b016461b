"""Sketches built by Brook are DataSketches sketches: the Python `datasketches` package (the
C++ library) reads Brook's bytes, builds identical sketches from the same values, and Brook
reads sketches built in Python."""
import datasketches as ds
import psycopg


def connect(b):
    return psycopg.connect(host=b["host"], port=b["port"], user=b["user"], dbname=b["dbname"], autocommit=True)


N = 50_000


def values():
    """The rows the table below holds: (x, s, f) for i in 1..N."""
    return [(i % 7919, "w%d" % (i % 311), i * 0.25) for i in range(1, N + 1)]


def load(conn):
    conn.execute("DROP TABLE IF EXISTS ds_t")
    conn.execute("CREATE TABLE ds_t (x bigint, s text, f double precision)")
    conn.execute(
        f"INSERT INTO ds_t SELECT i % 7919, 'w' || (i % 311), i * 0.25 FROM generate_series(1, {N}) AS g(i)"
    )


def one(conn, sql, *params):
    return conn.execute(sql, params).fetchone()[0]


def test_hll_and_cpc_bytes_are_read_and_match_python_built_sketches(brook):
    with connect(brook) as c:
        load(c)
        hll_bytes = one(c, "SELECT hll_sketch_agg(x, 12) FROM ds_t")
        cpc_bytes = one(c, "SELECT cpc_sketch_agg(s, 11) FROM ds_t")
        brook_hll = one(c, "SELECT estimate(hll_sketch_agg(x, 12)) FROM ds_t")
        brook_cpc = one(c, "SELECT estimate(cpc_sketch_agg(s, 11)) FROM ds_t")
    hll = ds.hll_sketch.deserialize(bytes(hll_bytes))
    cpc = ds.cpc_sketch.deserialize(bytes(cpc_bytes))
    assert hll.get_estimate() == brook_hll
    assert cpc.get_estimate() == brook_cpc
    # Same values, same hashing: Python's own sketches agree exactly.
    py_hll, py_cpc = ds.hll_sketch(12, ds.HLL_8), ds.cpc_sketch(11)
    for x, s, _ in values():
        py_hll.update(x)
        py_cpc.update(s)
    assert py_hll.get_estimate() == brook_hll
    assert py_cpc.get_estimate() == brook_cpc
    assert abs(brook_hll - 7919) < 0.05 * 7919


def test_theta_kll_and_frequent_items_bytes_are_read(brook):
    with connect(brook) as c:
        load(c)
        theta = ds.compact_theta_sketch.deserialize(bytes(one(c, "SELECT theta_sketch_agg(x) FROM ds_t")))
        # KLL compacts with random bits: keep one sketch, then read it both ways.
        c.execute("DROP TABLE IF EXISTS ds_kll")
        c.execute("CREATE TABLE ds_kll AS SELECT kll_sketch_agg(f) AS k FROM ds_t")
        kll = ds.kll_doubles_sketch.deserialize(bytes(one(c, "SELECT k FROM ds_kll")))
        freq = ds.frequent_strings_sketch.deserialize(bytes(one(c, "SELECT frequent_items_sketch_agg(s) FROM ds_t")))
        brook_theta = one(c, "SELECT estimate(theta_sketch_agg(x)) FROM ds_t")
        brook_median = one(c, "SELECT quantile(k, 0.5) FROM ds_kll")
    assert theta.get_estimate() == brook_theta
    py_theta = ds.update_theta_sketch(12)
    for x, _, _ in values():
        py_theta.update(x)
    assert py_theta.compact().get_estimate() == brook_theta
    assert kll.n == N
    assert kll.get_quantile(0.5) == brook_median
    assert abs(brook_median - N * 0.25 / 2) < 0.02 * N * 0.25
    assert freq.total_weight == N
    # Every word occurs N/311 times (±1); the bound holds for each.
    for s in ("w0", "w7", "w310"):
        exact = sum(1 for _, w, _ in values() if w == s)
        assert freq.get_lower_bound(s) <= exact <= freq.get_upper_bound(s)


def test_brook_reads_and_merges_sketches_built_in_python(brook):
    py = ds.hll_sketch(12, ds.HLL_8)
    for i in range(100_000, 103_000):
        py.update(i)
    with connect(brook) as c:
        load(c)
        assert one(c, "SELECT estimate(%s::bytea)", py.serialize_compact()) == py.get_estimate()
        c.execute("DROP TABLE IF EXISTS ds_sk")
        c.execute("CREATE TABLE ds_sk (h bytea)")
        c.execute("INSERT INTO ds_sk VALUES (%s)", (py.serialize_compact(),))
        c.execute("INSERT INTO ds_sk SELECT hll_sketch_agg(x, 12) FROM ds_t")
        merged = one(c, "SELECT estimate(hll_union_agg(h)) FROM ds_sk")
    union = ds.hll_union(12)
    union.update(py)
    brook_side = ds.hll_sketch(12, ds.HLL_8)
    for x, _, _ in values():
        brook_side.update(x)
    union.update(brook_side)
    assert abs(merged - union.get_estimate()) <= 1e-9 * merged
    assert abs(merged - (3000 + 7919)) < 0.05 * (3000 + 7919)


def test_bad_sketch_bytes_are_22p03(brook):
    with connect(brook) as c:
        try:
            c.execute("SELECT estimate(%s::bytea)", (b"\x02\x01\x07garbage",))
            raise AssertionError("garbage accepted")
        except psycopg.Error as e:
            assert e.sqlstate == "22P03", e
        # The session keeps working.
        assert one(c, "SELECT 1") == 1


def test_budget_reports_its_bound_in_a_notice_and_explain_shows_the_sketch(brook):
    with connect(brook) as c:
        load(c)
        notices = []
        c.add_notice_handler(lambda d: notices.append(d.message_primary))
        exact = one(c, "SELECT count(DISTINCT x) FROM ds_t")
        assert notices == []
        approx = one(c, "SELECT count(DISTINCT x) FROM ds_t WITH ERROR 0.01 CONFIDENCE 0.95")
        assert abs(approx - exact) <= 0.01 * exact
        assert len(notices) == 1
        assert "HLL sketch, lg_k=16" in notices[0] and "1% at 95% confidence" in notices[0], notices
        plan = "\n".join(r[1] for r in c.execute("EXPLAIN SELECT count(DISTINCT x) FROM ds_t WITH ERROR 0.01"))
        assert "hll_sketch_agg(ds_t.x, 16)" in plan, plan
        # mode() becomes a frequent-items sketch; its bound (on the answer's count) is a NOTICE.
        notices.clear()
        assert one(c, "SELECT mode() WITHIN GROUP (ORDER BY least(x %% 5, 2)) FROM ds_t WITH ERROR 0.01") == 2 == \
            one(c, "SELECT mode() WITHIN GROUP (ORDER BY least(x %% 5, 2)) FROM ds_t")
        assert len(notices) == 1 and "frequent-items sketch, lg_map_size=" in notices[0], notices
        plan = "\n".join(r[1] for r in c.execute("EXPLAIN SELECT mode() WITHIN GROUP (ORDER BY x) FROM ds_t WITH ERROR 0.01"))
        assert "approx_mode(ds_t.x, Decimal128(0.01,2,2))" in plan, plan
        # Prepared (extended protocol) statements take the clause and parameters too.
        got = c.execute("SELECT count(DISTINCT x) FROM ds_t WHERE x < %s WITH ERROR 0.01", (100,), prepare=True).fetchone()[0]
        assert got == 100
