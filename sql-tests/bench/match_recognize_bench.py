#!/usr/bin/env python3
"""MATCH_RECOGNIZE benchmark: the V shape of Flink's documentation (a start row, falling
prices, then a rise) per key, through Brook and through Apache Flink (PyFlink, local
mini-cluster), over the same CSV in one run.

Data: 1,000 keys, prices per key in V shapes of 6 to 12 events, event time increasing.
Brook: a materialized view with MATCH_RECOGNIZE over a stream, fed with psql's \\copy (COPY
FROM STDIN over the wire, fsync on); the clock stops when the view has applied every row.
Flink: the same query over a CSV filesystem source into a blackhole sink (parallelism 2,
streaming mode). Prints rows/s, peak memory (Brook's resident set; Flink's JVM plus Python),
the ratios, and checks that both found the same number of matches. With --scale it also
runs Brook over 10x fewer rows first, to show that its memory does not grow with the input.

    pip install apache-flink   # once
    python3 sql-tests/bench/match_recognize_bench.py --brook target/release/brook [--rows 10000000]
"""
import argparse
import os
import shutil
import sys
import tempfile
import time

from continuous_bench import PeakRss, psql, run_python_job, start_brook
from results import write_results

KEYS = 1000

QUERY = """SELECT * FROM {src} MATCH_RECOGNIZE (
  PARTITION BY k ORDER BY ts
  MEASURES FIRST(strt.ts) AS start_ts, LAST(down.price) AS bottom, LAST(up.ts) AS end_ts
  ONE ROW PER MATCH AFTER MATCH SKIP PAST LAST ROW
  PATTERN (strt down+ up)
  DEFINE down AS down.price < PREV(down.price), up AS up.price > PREV(up.price))"""


def make_csv(path, rows):
    base = 1_767_225_600  # 2026-01-01 00:00:00 UTC
    with open(path, "w") as f:
        for i in range(rows):
            k, j = i % KEYS, i // KEYS
            period = 6 + k % 7
            phase = j % period
            price = 100 + abs(phase - (period - 2))  # falls to the bottom, then one rise
            t = base + i // 1000
            ts = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(t))
            f.write(f"{k},{price},{ts}.{i % 1000:03d}\n")


def run_brook(binary, work, csv):
    proc, port = start_brook(binary, os.path.join(work, f"brook-{os.path.basename(csv)}"))
    try:
        psql(port, "CREATE STREAM s (k integer, price integer, ts timestamp, WATERMARK FOR ts AS ts)")
        psql(port, "CREATE MATERIALIZED VIEW m AS " + QUERY.format(src="s"))
        rss = PeakRss(proc.pid)
        t0 = time.perf_counter()
        psql(port, f"\\copy s FROM '{csv}' WITH (FORMAT csv)")
        matches = int(psql(port, "SELECT count(*) FROM m"))  # waits until every row is applied
        elapsed = time.perf_counter() - t0
        return elapsed, rss.mib(), matches
    finally:
        proc.kill()


FLINK_JOB = """
import sys, time
from pyflink.table import EnvironmentSettings, TableEnvironment
env = TableEnvironment.create(EnvironmentSettings.in_streaming_mode())
env.get_config().set("parallelism.default", "2")
env.execute_sql(f\"\"\"CREATE TABLE src (k INT, price INT, ts TIMESTAMP(3), WATERMARK FOR ts AS ts)
  WITH ('connector' = 'filesystem', 'path' = '{sys.argv[1]}', 'format' = 'csv')\"\"\")
env.execute_sql(\"\"\"CREATE TABLE out_rows (k INT, start_ts TIMESTAMP(3), bottom INT, end_ts TIMESTAMP(3))
  WITH ('connector' = 'blackhole')\"\"\")
query = sys.argv[2]
t0 = time.perf_counter()
env.execute_sql("INSERT INTO out_rows " + query).wait()
elapsed = time.perf_counter() - t0
rows = None
with env.execute_sql("SELECT count(*) FROM (" + query + ")").collect() as it:
    for r in it:
        rows = r[0]
print(f"FLINK {elapsed} {rows}")
"""


def run_flink(work, csv):
    m, peak = run_python_job(work, FLINK_JOB, [csv, QUERY.format(src="src")], r"FLINK ([\d.]+) (\d+)")
    return float(m.group(1)), peak, int(m.group(2))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=10_000_000)
    ap.add_argument("--brook", default=os.environ.get("BROOK_BIN", "target/release/brook"))
    ap.add_argument("--no-flink", action="store_true", help="run Brook only")
    ap.add_argument("--scale", action="store_true", help="also run Brook over rows / 10")
    args = ap.parse_args()
    work = tempfile.mkdtemp(prefix="brook-mrbench-")
    try:
        runs = []
        if args.scale:
            small = os.path.join(work, "small.csv")
            make_csv(small, args.rows // 10)
            os.sync()
            s_t, s_mem, s_matches = run_brook(args.brook, work, small)
            print(f"  Brook over {args.rows // 10:,} rows: {args.rows / 10 / s_t:,.0f} rows/s, peak {s_mem:,.0f} MiB, {s_matches} matches")
            runs.append({"system": "brook", "rows": args.rows // 10, "seconds": s_t,
                         "rows_per_s": args.rows / 10 / s_t, "peak_mib": s_mem, "matches": s_matches})
        csv = os.path.join(work, "events.csv")
        make_csv(csv, args.rows)
        os.sync()  # the input's own write-back must not land in either engine's time
        b_t, b_mem, b_matches = run_brook(args.brook, work, csv)
        print(f"MATCH_RECOGNIZE V shape per key ({KEYS} keys) over {args.rows:,} rows:")
        print(f"  Brook (COPY over the wire + view) : {args.rows / b_t:>12,.0f} rows/s  ({b_t:.1f} s)  peak {b_mem:,.0f} MiB  {b_matches} matches")
        runs.append({"system": "brook", "rows": args.rows, "seconds": b_t, "rows_per_s": args.rows / b_t,
                     "peak_mib": b_mem, "matches": b_matches})
        if not args.no_flink:
            f_t, f_mem, f_matches = run_flink(work, csv)
            print(f"  PyFlink (CSV file, parallelism 2)  : {args.rows / f_t:>12,.0f} rows/s  ({f_t:.1f} s)  peak {f_mem:,.0f} MiB  {f_matches} matches")
            print(f"  Brook / Flink: {f_t / b_t:.2f}x throughput, {b_mem / f_mem:.2f}x memory")
            runs.append({"system": "pyflink", "rows": args.rows, "seconds": f_t, "rows_per_s": args.rows / f_t,
                         "peak_mib": f_mem, "matches": f_matches,
                         "brook_throughput_ratio": f_t / b_t, "brook_memory_ratio": b_mem / f_mem})
            assert b_matches == f_matches, (b_matches, f_matches)
        write_results("match_recognize", {"rows": args.rows, "keys": KEYS, "query": QUERY,
                                          "no_flink": args.no_flink, "brook": args.brook}, runs)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
