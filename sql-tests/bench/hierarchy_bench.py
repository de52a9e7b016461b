#!/usr/bin/env python3
"""Hierarchical sensor aggregation (Titan's use case, Theodolite's UC4 shape), kept up to date.

SENSORS sensors sit in HIERARCHIES hierarchies of DEPTH group levels each (every group has
FANOUT children; the hierarchies assign sensors to groups differently). A materialized view
keeps every group's total over the last reading of each sensor below it, at any depth, with
`WITH RECURSIVE` (the query of docs/continuous.md):

    WITH RECURSIVE anc(sensor, grp) AS (SELECT child, parent FROM groups UNION ALL
        SELECT a.sensor, g.parent FROM anc a JOIN groups g ON g.child = a.grp),
    lv AS (SELECT sensor, last_value(power ORDER BY ts) AS power FROM readings GROUP BY sensor)
    SELECT grp, sum(power) AS total, count(*) AS sensors FROM anc JOIN lv USING (sensor)
    GROUP BY grp

Per run, on a fresh server:

1. throughput: READINGS readings are offered as fast as one client sends them (COPY commits
   of one reading per sensor), while a second connection moves a subtree (a first-level
   group to another parent) every second; measured from the first row sent until a
   sentinel reading sent last shows in the root's total. Readings/s and readings per server
   CPU-second. The view is then checked against totals computed here from the readings
   and the moved hierarchy (every group), so a fast wrong answer fails the run.
2. latency: while a loader offers half the readings/s of phase 1, PROBES times a probe sensor's new
   reading until the root's total holds it, and PROBES times a subtree move until the new
   parent's sensor count holds the moved sensors.
3. peer: the same query asked ad hoc after a change — on Brook (a plain view of the same
   text, over every reading so far) and on PostgreSQL (the same groups and readings, `lv`
   written with DISTINCT ON as PostgreSQL has no last_value aggregate), median of RECOMPUTES.
   That is what a database without incremental views pays for a fresh answer; the ratio
   to Brook's update latency is reported.

    python3 sql-tests/bench/hierarchy_bench.py --brook target/release/brook [--runs 3]
        [--readings 2000000] [--sensors 10000]

Prints the median and range over the runs; raw figures go to
sql-tests/bench/results/hierarchy-<date>-<commit>.json.
"""
import argparse
import random
import statistics
import subprocess
import tempfile
import threading
import time

import psycopg

from copy_bench import peak_rss_mib, start_postgres
from lag_bench import cpu_seconds
from results import write_results
from synopses_bench import start_brook

HIERARCHIES = 3
DEPTH = 4
FANOUT = 10
PROBE = "probe"
# Readings of ordinary sensors stay below this, so a total's multiple of it names the
# probe's last value whatever the other sensors read.
PROBE_UNIT = 1e7
# The latency phase's load: this share of the throughput phase's readings/s (a load the
# server keeps up with, so latency is not a queue's length), at most LOAD_RATE.
LOAD_SHARE = 0.5
LOAD_RATE = 200_000
# Seconds of readings the loader has to offer in the latency phase (it stops when they run
# out).
LOAD_SECONDS = 40
PROBES = 30
RECOMPUTES = 5

ANC = ("WITH RECURSIVE anc(sensor, grp) AS (SELECT child, parent FROM groups UNION ALL "
       "SELECT a.sensor, g.parent FROM anc a JOIN groups g ON g.child = a.grp)")
BROOK_LV = ("lv AS (SELECT sensor, last_value(power ORDER BY ts) AS power FROM readings "
            "GROUP BY sensor)")
PG_LV = ("lv AS (SELECT DISTINCT ON (sensor) sensor, power FROM readings "
         "ORDER BY sensor, ts DESC)")
TOTALS = ("SELECT grp, sum(power) AS total, count(*) AS sensors FROM anc JOIN lv "
          "USING (sensor) GROUP BY grp")


class Hierarchy:
    """The groups table as this script keeps it: parent of every node, per hierarchy."""

    def __init__(self, sensors, seed):
        rnd = random.Random(seed)
        self.parent = {}
        self.level1 = []
        for h in range(HIERARCHIES):
            order = list(range(sensors))
            rnd.shuffle(order)
            # Level l has ceil(n / FANOUT^l) groups; the top level is one root.
            children = [f"s{i}" for i in order]
            for level in range(1, DEPTH + 1):
                last = level == DEPTH
                groups = 1 if last else (len(children) + FANOUT - 1) // FANOUT
                names = [f"h{h}/l{level}/{g}" for g in range(groups)]
                for i, c in enumerate(children):
                    self.parent[(h, c)] = names[0] if last else names[i // FANOUT]
                if level == 1:
                    self.level1.append(names)
                children = names
        for h in range(HIERARCHIES):
            self.parent[(h, f"s{PROBE}")] = f"h{h}/l1/0"

    def root(self, h):
        return f"h{h}/l{DEPTH}/0"

    def rows(self):
        return [(child, parent) for (_h, child), parent in self.parent.items()]

    def move(self, rnd):
        """Moves a random first-level group to another second-level parent; returns
        (child, new parent)."""
        h = rnd.randrange(HIERARCHIES)
        child = rnd.choice(self.level1[h])
        parents = sorted({p for (hh, c), p in self.parent.items()
                          if hh == h and c.startswith(f"h{h}/l1/")})
        new = rnd.choice([p for p in parents if p != self.parent[(h, child)]] or parents)
        self.parent[(h, child)] = new
        return child, new

    def totals(self, last):
        """Every group's (total, sensors) over the sensors' last values."""
        out = {}
        for (h, node), _p in self.parent.items():
            if not node.startswith("s") or node not in last:
                continue
            at = node
            while (h, at) in self.parent:
                at = self.parent[(h, at)]
                t, n = out.get(at, (0.0, 0))
                out[at] = (t + last[node], n + 1)
        return out


def ts_text(i):
    """The i-th microsecond after 2026-01-01 00:00:00 (under a day)."""
    s, us = divmod(i, 1_000_000)
    return f"2026-01-01 {s // 3600:02}:{s // 60 % 60:02}:{s % 60:02}.{us:06}"


def readings_payloads(sensors, total, start, seed):
    """COPY payloads of one reading per sensor each (a shuffled round), `total` readings from
    tick `start`; returns (payloads, last value per sensor)."""
    rnd = random.Random(seed)
    names = [f"s{i}" for i in range(sensors)]
    payloads, last, tick = [], {}, start
    while total > 0:
        rnd.shuffle(names)
        lines = []
        for name in names[:total]:
            v = rnd.randrange(1, 1000) / 100
            lines.append(f"{name}\t{v}\t{ts_text(tick)}\n")
            last[name] = v
            tick += 1
        total -= len(lines)
        payloads.append("".join(lines))
    return payloads, last, tick


def copy(conn, payload):
    with conn.cursor().copy("COPY readings FROM STDIN") as cp:
        cp.write(payload)


class Probe:
    """The probe sensor: a reading of value n * PROBE_UNIT, then the root's total polled
    until it shows n."""

    def __init__(self, conn, root):
        self.conn, self.root, self.n, self.tick = conn, root, 0, None

    def send(self, tick):
        self.n += 1
        self.conn.execute("INSERT INTO readings VALUES (%s, %s, %s::timestamp)",
                          (f"s{PROBE}", self.n * PROBE_UNIT, ts_text(tick)))

    def wait(self, timeout=600):
        deadline = time.time() + timeout
        while time.time() < deadline:
            row = self.conn.execute("SELECT total FROM totals WHERE grp = %s",
                                    (self.root,)).fetchone()
            if row and row[0] is not None and round(row[0] // PROBE_UNIT) == self.n:
                return
            time.sleep(0.0005)
        raise RuntimeError(f"the root's total did not show probe reading {self.n}")


def connect(port, user="brook", dbname="brook"):
    return psycopg.connect(host="127.0.0.1", port=port, user=user, dbname=dbname,
                           autocommit=True)


def set_up(conn, hier):
    conn.execute("CREATE TABLE groups (child text, parent text)")
    with conn.cursor().copy("COPY groups FROM STDIN") as cp:
        for child, parent in hier.rows():
            cp.write_row((child, parent))


def check(conn, hier, last):
    want = hier.totals(last)
    got = {g: (t, n) for g, t, n in conn.execute("SELECT grp, total, sensors FROM totals")}
    if set(got) != set(want):
        raise RuntimeError(f"the view has {len(got)} groups, {len(want)} expected")
    for g, (t, n) in want.items():
        gt, gn = got[g]
        if gn != n or abs(gt - t) > 1e-6 * max(1.0, abs(t)):
            raise RuntimeError(f"group {g}: view ({gt}, {gn}), expected ({t}, {n})")
    return len(want)


def mover(port, hier, lock, stop, moves):
    conn = connect(port)
    rnd = random.Random(11)
    while not stop.wait(1.0):
        with lock:
            child, new = hier.move(rnd)
        t0 = time.perf_counter()
        conn.execute("UPDATE groups SET parent = %s WHERE child = %s", (new, child))
        moves.append(time.perf_counter() - t0)
    conn.close()


def loader(port, payloads, rate, stop):
    """Offers the payloads at `rate` readings/s until stopped."""
    conn = connect(port)
    per = len(payloads[0].splitlines())
    start, sent = time.perf_counter(), 0
    for p in payloads:
        if stop.is_set():
            break
        copy(conn, p)
        sent += per
        ahead = start + sent / rate - time.perf_counter()
        if ahead > 0:
            time.sleep(ahead)
    conn.close()


def brook_run(binary, args, work):
    hier = Hierarchy(args.sensors, seed=1)
    proc, port = start_brook(binary, work, "brook")
    try:
        conn = connect(port)
        set_up(conn, hier)
        conn.execute("CREATE STREAM readings (sensor text, power double precision, "
                     "ts timestamp, WATERMARK FOR ts AS ts)")
        conn.execute(f"CREATE MATERIALIZED VIEW totals AS {ANC}, {BROOK_LV} {TOTALS}")
        conn.execute(f"CREATE VIEW totals_now AS {ANC}, {BROOK_LV} {TOTALS}")
        payloads, last, tick = readings_payloads(args.sensors, args.readings, 0, seed=2)
        probe = Probe(conn, hier.root(0))

        # 1. Throughput, a subtree moved every second meanwhile.
        lock, stop, moves = threading.Lock(), threading.Event(), []
        t = threading.Thread(target=mover, args=(port, hier, lock, stop, moves))
        cpu0, t0 = cpu_seconds(proc.pid), time.perf_counter()
        t.start()
        for p in payloads:
            copy(conn, p)
        sent_s = time.perf_counter() - t0
        probe.send(tick)
        tick += 1
        probe.wait()
        wall = time.perf_counter() - t0
        stop.set()
        t.join()
        cpu = cpu_seconds(proc.pid) - cpu0
        # A move committed after the sentinel is in the view once a later probe is.
        probe.send(tick)
        tick += 1
        probe.wait()
        last[f"s{PROBE}"] = probe.n * PROBE_UNIT
        groups = check(conn, hier, last)
        rss_after_load = peak_rss_mib(proc.pid)

        # 2. Latency under a steady load.
        rate = min(LOAD_RATE, int(args.readings / wall * LOAD_SHARE))
        load, _last, tick = readings_payloads(args.sensors, rate * LOAD_SECONDS, tick, seed=3)
        stop_load = threading.Event()
        lt = threading.Thread(target=loader, args=(port, load, rate, stop_load))
        lt.start()
        time.sleep(2)
        reading_lat, move_lat = [], []
        rnd = random.Random(5)
        mconn = connect(port)
        for _ in range(PROBES):
            t1 = time.perf_counter()
            probe.send(tick + 10_000_000_000)  # later than any load reading
            probe.wait()
            reading_lat.append(time.perf_counter() - t1)
            tick += 1
            with lock:
                child, new = hier.move(rnd)
            want = conn.execute("SELECT sensors FROM totals WHERE grp = %s",
                                (new,)).fetchone()
            want = (want[0] if want else 0) + FANOUT
            t1 = time.perf_counter()
            mconn.execute("UPDATE groups SET parent = %s WHERE child = %s", (new, child))
            while True:
                row = conn.execute("SELECT sensors FROM totals WHERE grp = %s",
                                   (new,)).fetchone()
                if row and row[0] >= want:
                    break
                time.sleep(0.0005)
            move_lat.append(time.perf_counter() - t1)
            time.sleep(0.2)
        stop_load.set()
        lt.join()
        mconn.close()

        # 3. The same query ad hoc over every reading so far.
        adhoc = []
        for _ in range(RECOMPUTES):
            t1 = time.perf_counter()
            conn.execute("SELECT * FROM totals_now").fetchall()
            adhoc.append(time.perf_counter() - t1)
        return {
            "readings": args.readings, "sensors": args.sensors, "groups": groups,
            "send_s": sent_s, "wall_s": wall, "server_cpu_s": cpu,
            "readings_per_s": args.readings / wall,
            "readings_per_cpu_s": args.readings / cpu,
            "latency_load_per_s": rate,
            "moves_during_load": len(moves),
            "move_statement_s": statistics.median(moves) if moves else None,
            "reading_latency_s": reading_lat, "move_latency_s": move_lat,
            "adhoc_s": adhoc, "peak_rss_mib_after_load": rss_after_load,
            "peak_rss_mib": peak_rss_mib(proc.pid),
        }
    finally:
        proc.kill()
        proc.wait()


def postgres_run(args, work):
    """The same groups and readings on PostgreSQL; the query's time ad hoc."""
    hier = Hierarchy(args.sensors, seed=1)
    port, stop_cmd = start_postgres(work)
    try:
        conn = connect(port, user="postgres", dbname="postgres")
        set_up(conn, hier)
        conn.execute("CREATE TABLE readings (sensor text, power double precision, "
                     "ts timestamp)")
        payloads, _last, _tick = readings_payloads(args.sensors, args.readings, 0, seed=2)
        for p in payloads:
            copy(conn, p)
        conn.execute("ANALYZE")
        times = []
        for _ in range(RECOMPUTES):
            t1 = time.perf_counter()
            conn.execute(f"{ANC}, {PG_LV} {TOTALS}").fetchall()
            times.append(time.perf_counter() - t1)
        return {"adhoc_s": times}
    finally:
        subprocess.run(stop_cmd, capture_output=True)


def med(xs):
    return statistics.median(xs)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--brook", required=True)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--readings", type=int, default=2_000_000)
    ap.add_argument("--sensors", type=int, default=10_000)
    ap.add_argument("--no-postgres", action="store_true")
    args = ap.parse_args()
    runs = []
    for r in range(args.runs):
        with tempfile.TemporaryDirectory() as work:
            b = brook_run(args.brook, args, work)
            p = None if args.no_postgres else postgres_run(args, work)
        runs.append({"run": r, "brook": b, "postgresql": p})
        print(f"run {r}: {b['readings_per_s']:,.0f} readings/s "
              f"({b['readings_per_cpu_s']:,.0f} per server CPU-s), reading→root "
              f"{med(b['reading_latency_s']) * 1e3:.1f} ms, move→totals "
              f"{med(b['move_latency_s']) * 1e3:.1f} ms, ad hoc Brook "
              f"{med(b['adhoc_s']) * 1e3:.0f} ms"
              + (f", PostgreSQL {med(p['adhoc_s']) * 1e3:.0f} ms" if p else "")
              + f", peak RSS {b['peak_rss_mib']:.0f} MiB", flush=True)

    def summary(label, vals, fmt):
        print(f"{label}: median {fmt(med(vals))} (range {fmt(min(vals))}–{fmt(max(vals))})")

    bs = [r["brook"] for r in runs]
    summary("readings/s", [b["readings_per_s"] for b in bs], lambda v: f"{v:,.0f}")
    summary("readings per server CPU-second", [b["readings_per_cpu_s"] for b in bs],
            lambda v: f"{v:,.0f}")
    summary("reading → root total, ms", [med(b["reading_latency_s"]) * 1e3 for b in bs],
            lambda v: f"{v:.1f}")
    summary("subtree move → totals, ms", [med(b["move_latency_s"]) * 1e3 for b in bs],
            lambda v: f"{v:.1f}")
    summary("Brook ad hoc, ms", [med(b["adhoc_s"]) * 1e3 for b in bs], lambda v: f"{v:.0f}")
    summary("peak RSS, MiB", [b["peak_rss_mib"] for b in bs], lambda v: f"{v:.0f}")
    if not args.no_postgres:
        pg = [med(r["postgresql"]["adhoc_s"]) for r in runs]
        summary("PostgreSQL ad hoc, ms", [v * 1e3 for v in pg], lambda v: f"{v:.0f}")
        summary("PostgreSQL ad hoc / Brook reading→root",
                [p / med(b["reading_latency_s"]) for p, b in zip(pg, bs)],
                lambda v: f"{v:.1f}×")
    write_results("hierarchy", {"sensors": args.sensors, "readings": args.readings,
                                "hierarchies": HIERARCHIES, "depth": DEPTH,
                                "fanout": FANOUT, "load_share": LOAD_SHARE,
                                "probes": PROBES, "recomputes": RECOMPUTES}, runs)


if __name__ == "__main__":
    main()
