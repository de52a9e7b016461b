#!/usr/bin/env python3
"""MATCH_RECOGNIZE through Brook and through Apache Flink (PyFlink), in one run.

The pattern is the V shape of Flink's MATCH_RECOGNIZE documentation, in its words (Flink
has no PREV over a partition's rows, so a fall is against `LAST(down.price, 1)`): per
symbol, a start row, one or more falling prices, then a rise (`PATTERN (strt down+ up)`,
ONE ROW PER MATCH, AFTER MATCH SKIP PAST LAST ROW). The events are ticks of KEYS symbols, each a random walk,
one millisecond apart, written once to a CSV file both engines read:

- Brook: a fresh server, the query as a materialized view over a stream (watermark 1 s
  behind), the file sent with psql's \\copy; the clock stops when the view has applied
  every row.
- Flink (local mini-cluster, parallelism 2, streaming mode): the same pattern over a CSV
  filesystem table (watermark 1 s behind) into a blackhole sink; the clock includes job
  start-up. The number of matches is counted by a second job and must equal Brook's.

Brook runs twice, over a tenth of the rows and over all of them: the peak memory of both
shows whether its state stays bounded (only partial matches alive) as the input grows.
Prints rows/s (per core: both engines use the machine's 2 cores), rows per second of the
Brook server's CPU time, peak memory, and the ratios; the raw figures go to
sql-tests/bench/results/.

    python3 sql-tests/bench/match_recognize_bench.py --brook target/release/brook [--rows 2000000]
"""
import argparse
import os
import random
import shutil
import tempfile
import time

from continuous_bench import PeakRss, psql, run_python_job
from nexmark_bench import cpu_seconds
from results import write_results
from synopses_bench import start_brook

KEYS = 1000

PATTERN = """MATCH_RECOGNIZE (
  PARTITION BY k ORDER BY ts
  MEASURES strt.ts AS start_ts, LAST(down.ts) AS bottom_ts, up.ts AS end_ts, strt.price - LAST(down.price) AS depth
  ONE ROW PER MATCH
  AFTER MATCH SKIP PAST LAST ROW
  PATTERN (strt down+ up)
  DEFINE down AS (LAST(down.price, 1) IS NULL AND down.price < strt.price)
              OR down.price < LAST(down.price, 1),
         up AS up.price > LAST(down.price, 1)
) AS m"""

BROOK_QUERY = f"SELECT k, start_ts, bottom_ts, end_ts, depth FROM ticks {PATTERN}"

FLINK_JOB = """
import sys, time
from pyflink.table import EnvironmentSettings, TableEnvironment
env = TableEnvironment.create(EnvironmentSettings.in_streaming_mode())
env.get_config().set("parallelism.default", "2")
env.execute_sql(f\"\"\"CREATE TABLE ticks (k INT, price BIGINT, ts TIMESTAMP(3),
  WATERMARK FOR ts AS ts - INTERVAL '1' SECOND)
  WITH ('connector' = 'filesystem', 'path' = '{sys.argv[1]}', 'format' = 'csv')\"\"\")
env.execute_sql(\"\"\"CREATE TABLE out_rows (k INT, start_ts TIMESTAMP(3), bottom_ts TIMESTAMP(3),
  end_ts TIMESTAMP(3), depth BIGINT) WITH ('connector' = 'blackhole')\"\"\")
query = "SELECT k, start_ts, bottom_ts, end_ts, depth FROM ticks " + sys.argv[2]
t0 = time.perf_counter()
env.execute_sql("INSERT INTO out_rows " + query).wait()
elapsed = time.perf_counter() - t0
rows = None
# The count's changelog reaches this client row by row; mini-batches keep it to a few
# updates (at 10 M ticks, 400 K updates took the client longer than the timed job).
env.get_config().set("table.exec.mini-batch.enabled", "true")
env.get_config().set("table.exec.mini-batch.allow-latency", "1 s")
env.get_config().set("table.exec.mini-batch.size", "100000")
with env.execute_sql("SELECT count(*) FROM (" + query + ")").collect() as it:
    for r in it:
        rows = r[0]
print(f"FLINK {elapsed} {rows}")
"""


def make_csv(path, rows, seed=11):
    """Ticks of KEYS symbols in turn, 1 ms apart, each symbol's price a random walk."""
    rnd = random.Random(seed)
    prices = [1000] * KEYS
    base = 1_767_225_600_000  # 2026-01-01 00:00:00 UTC in ms
    with open(path, "w") as f:
        for i in range(rows):
            k = i % KEYS
            prices[k] = max(1, prices[k] + rnd.choice((-3, -2, -1, 1, 2, 3)))
            ms = base + i
            ts = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(ms // 1000)) + f".{ms % 1000:03d}"
            f.write(f"{k},{prices[k]},{ts}\n")


def run_brook(binary, work, csv):
    """(seconds, peak MiB, matches, server CPU-s) for the view over the stream fed `csv`."""
    proc, port = start_brook(binary, work, "brook")
    try:
        psql(port, "CREATE STREAM ticks (k int, price bigint, ts timestamp, "
                   "WATERMARK FOR ts AS ts - INTERVAL '1 second')")
        psql(port, f"CREATE MATERIALIZED VIEW v AS {BROOK_QUERY}")
        rss = PeakRss(proc.pid)
        cpu0 = cpu_seconds(proc.pid)
        t0 = time.perf_counter()
        psql(port, f"\\copy ticks FROM '{csv}' WITH (FORMAT csv)")
        matches = int(psql(port, "SELECT count(*) FROM v"))  # waits until every row is applied
        elapsed = time.perf_counter() - t0
        return elapsed, rss.mib(), matches, cpu_seconds(proc.pid) - cpu0
    finally:
        proc.kill()
        proc.wait()
        shutil.rmtree(os.path.join(work, "brook"), ignore_errors=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--brook", default=os.environ.get("BROOK_BIN", "target/release/brook"))
    ap.add_argument("--rows", type=int, default=2_000_000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--no-flink", action="store_true", help="run Brook only")
    args = ap.parse_args()
    work = tempfile.mkdtemp(prefix="brook-mr-")
    try:
        small, full = os.path.join(work, "small.csv"), os.path.join(work, "ticks.csv")
        make_csv(small, args.rows // 10)
        make_csv(full, args.rows)
        os.sync()  # the inputs' own write-back must not land in either engine's time
        print(f"MATCH_RECOGNIZE V shape, {KEYS} symbols, {args.rows:,} ticks "
              f"(memory also at {args.rows // 10:,}):")
        runs = []
        for run in range(args.runs):
            _, small_mem, _, _ = run_brook(args.brook, work, small)
            b_t, b_mem, b_matches, b_cpu = run_brook(args.brook, work, full)
            entry = {"system": "brook", "run": run, "rows": args.rows, "seconds": b_t,
                     "rows_per_s": args.rows / b_t, "rows_per_core_s": args.rows / b_t / 2,
                     "server_cpu_s": b_cpu, "rows_per_cpu_s": args.rows / b_cpu,
                     "peak_mib": b_mem, "peak_mib_tenth": small_mem, "matches": b_matches}
            runs.append(entry)
            line = (f"  run {run}: Brook {args.rows / b_t:>11,.0f} rows/s ({args.rows / b_t / 2:>10,.0f} "
                    f"per core, {args.rows / b_cpu:>10,.0f} per CPU-s), peak {b_mem:,.0f} MiB "
                    f"({small_mem:,.0f} MiB at a tenth), {b_matches:,} matches")
            if not args.no_flink:
                m, f_mem = run_python_job(work, FLINK_JOB, [full, PATTERN], r"FLINK ([\d.]+) (\d+)")
                f_t, f_matches = float(m.group(1)), int(m.group(2))
                if f_matches != b_matches:
                    raise SystemExit(f"Flink found {f_matches} matches, Brook {b_matches}")
                runs.append({"system": "pyflink", "run": run, "rows": args.rows, "seconds": f_t,
                             "rows_per_s": args.rows / f_t, "peak_mib": f_mem,
                             "matches": f_matches, "brook_ratio": f_t / b_t,
                             "memory_ratio": f_mem / b_mem})
                line += (f"   Flink {args.rows / f_t:>10,.0f} rows/s, peak {f_mem:,.0f} MiB"
                         f"   Brook/Flink {f_t / b_t:5.2f}x, memory {b_mem / f_mem:4.2f}x")
            print(line, flush=True)
        write_results("match_recognize", {"rows": args.rows, "keys": KEYS, "runs": args.runs,
                                          "brook": args.brook, "no_flink": args.no_flink,
                                          "pattern": PATTERN}, runs)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
