#!/usr/bin/env python3
"""Continuous-query benchmark: a tumbling 1-second SUM per key over the same CSV, through
Brook and through Apache Flink (PyFlink, local mini-cluster), in one run.

Brook: a materialized view `SELECT window_start, k, sum(v) FROM TUMBLE(s, ts, 1 s) ... EMIT ON
WINDOW CLOSE` over a stream, fed with psql's \\copy (COPY FROM STDIN over the wire, fsync on);
the clock stops when the view has applied every row. Flink: the same query over a CSV
filesystem source into a blackhole sink (parallelism 2, streaming mode). Prints rows/s, peak
memory (Brook's resident set; Flink's JVM plus Python) and the ratios, and checks that both
produced the same number of window rows.

    python3 -m venv /var/tmp/flink && /var/tmp/flink/bin/pip install apache-flink   # once
    export FLINK_PYTHON=/var/tmp/flink/bin/python3
    python3 sql-tests/bench/continuous_bench.py --brook target/release/brook [--rows 10000000]
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time

from results import write_results

KEYS = 100
ROWS_PER_SECOND = 100_000  # event time: 100 K events per second of event time


def make_csv(path, rows):
    base = 1_767_225_600  # 2026-01-01 00:00:00 UTC
    with open(path, "w") as f:
        for i in range(rows):
            t = base + i // ROWS_PER_SECOND
            ms = (i % ROWS_PER_SECOND) * 1000 // ROWS_PER_SECOND
            ts = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(t))
            f.write(f"{i * 7919 % KEYS},{i % 1000},{ts}.{ms:03d}\n")


def psql(port, sql):
    return subprocess.run(
        ["psql", "-X", "-At", "-v", "ON_ERROR_STOP=1", "-h", "127.0.0.1", "-p", str(port), "-U", "brook", "-d", "brook", "-c", sql],
        check=True, capture_output=True, text=True,
    ).stdout.strip()


class PeakRss:
    """Samples the summed resident set of a process tree every 50 ms."""

    def __init__(self, pid):
        self.pid, self.peak, self.stop = pid, 0, False
        self.t = threading.Thread(target=self.run, daemon=True)
        self.t.start()

    def tree(self):
        pids, todo = [], [self.pid]
        while todo:
            p = todo.pop()
            pids.append(p)
            try:
                with open(f"/proc/{p}/task/{p}/children") as f:
                    todo.extend(int(c) for c in f.read().split())
            except OSError:
                pass
        return pids

    def run(self):
        while not self.stop:
            total = 0
            for p in self.tree():
                try:
                    with open(f"/proc/{p}/status") as f:
                        for line in f:
                            if line.startswith("VmRSS:"):
                                total += int(line.split()[1])
                except OSError:
                    pass
            self.peak = max(self.peak, total)
            time.sleep(0.05)

    def mib(self):
        self.stop = True
        self.t.join()
        return self.peak / 1024


def start_brook(binary, data):
    """Start a Brook server on a free port over data directory `data`: (process, port)."""
    proc = subprocess.Popen([binary, "serve", "--listen", "127.0.0.1:0", "--data-dir", data],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    for line in proc.stdout:
        m = re.search(r"listening on 127\.0\.0\.1:(\d+)", line)
        if m:
            return proc, int(m.group(1))
    proc.kill()
    raise RuntimeError("brook did not start")


def run_brook(binary, work, csv, rows):
    proc, port = start_brook(binary, os.path.join(work, "brook"))
    try:
        psql(port, "CREATE STREAM s (k integer, v bigint, ts timestamp, WATERMARK FOR ts AS ts)")
        psql(port, "CREATE MATERIALIZED VIEW agg AS SELECT window_start, k, sum(v) AS total "
                   "FROM TUMBLE(s, ts, INTERVAL '1 second') GROUP BY window_start, window_end, k "
                   "EMIT ON WINDOW CLOSE")
        rss = PeakRss(proc.pid)
        t0 = time.perf_counter()
        psql(port, f"\\copy s FROM '{csv}' WITH (FORMAT csv)")
        windows = int(psql(port, "SELECT count(*) FROM agg"))  # waits until every row is applied
        elapsed = time.perf_counter() - t0
        return elapsed, rss.mib(), windows
    finally:
        proc.kill()


FLINK_JOB = """
import sys, time
from pyflink.table import EnvironmentSettings, TableEnvironment
env = TableEnvironment.create(EnvironmentSettings.in_streaming_mode())
env.get_config().set("parallelism.default", "2")
env.execute_sql(f\"\"\"CREATE TABLE src (k INT, v BIGINT, ts TIMESTAMP(3), WATERMARK FOR ts AS ts)
  WITH ('connector' = 'filesystem', 'path' = '{sys.argv[1]}', 'format' = 'csv')\"\"\")
env.execute_sql(\"\"\"CREATE TABLE out_rows (window_start TIMESTAMP(3), k INT, total BIGINT)
  WITH ('connector' = 'blackhole')\"\"\")
t0 = time.perf_counter()
env.execute_sql(\"\"\"INSERT INTO out_rows SELECT window_start, k, SUM(v) FROM
  TABLE(TUMBLE(TABLE src, DESCRIPTOR(ts), INTERVAL '1' SECOND)) GROUP BY window_start, window_end, k\"\"\").wait()
elapsed = time.perf_counter() - t0
n = env.execute_sql(\"\"\"SELECT count(*) FROM (SELECT window_start, k FROM
  TABLE(TUMBLE(TABLE src, DESCRIPTOR(ts), INTERVAL '1' SECOND)) GROUP BY window_start, window_end, k)\"\"\").collect()
rows = None
with n as it:
    for r in it:
        rows = r[0]
print(f"FLINK {elapsed} {rows}")
"""


def run_python_job(work, source, args, pattern):
    """Run a PyFlink job script; returns the match of `pattern` in its output and the job's
    peak resident memory (MiB)."""
    job = os.path.join(work, "flink_job.py")
    with open(job, "w") as f:
        f.write(source)
    # PyFlink pins an old pyarrow; installed beside the client tests' packages it breaks
    # them (ADBC), so it may live in a virtualenv of its own: FLINK_PYTHON names its python.
    python = os.environ.get("FLINK_PYTHON", sys.executable)
    proc = subprocess.Popen([python, job, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    rss = PeakRss(proc.pid)
    out, err = proc.communicate()
    peak = rss.mib()
    m = re.search(pattern, out)
    if not m:
        raise RuntimeError(f"PyFlink job failed:\n{out}\n{err[-3000:]}")
    return m, peak


def run_flink(work, csv):
    m, peak = run_python_job(work, FLINK_JOB, [csv], r"FLINK ([\d.]+) (\d+)")
    return float(m.group(1)), peak, int(m.group(2))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=10_000_000)
    ap.add_argument("--brook", default=os.environ.get("BROOK_BIN", "target/release/brook"))
    ap.add_argument("--no-flink", action="store_true", help="run Brook only")
    args = ap.parse_args()
    work = tempfile.mkdtemp(prefix="brook-cbench-")
    try:
        csv = os.path.join(work, "events.csv")
        make_csv(csv, args.rows)
        os.sync()  # the input's own write-back must not land in either engine's time
        b_t, b_mem, b_windows = run_brook(args.brook, work, csv, args.rows)
        print(f"Tumbling 1-second SUM per key ({KEYS} keys) over {args.rows:,} rows:")
        print(f"  Brook (COPY over the wire + view) : {args.rows / b_t:>12,.0f} rows/s  ({b_t:.1f} s)  peak {b_mem:,.0f} MiB  {b_windows} window rows")
        runs = [{"system": "brook", "seconds": b_t, "rows_per_s": args.rows / b_t,
                 "peak_mib": b_mem, "window_rows": b_windows}]
        if not args.no_flink:
            f_t, f_mem, f_windows = run_flink(work, csv)
            print(f"  PyFlink (CSV file, parallelism 2)  : {args.rows / f_t:>12,.0f} rows/s  ({f_t:.1f} s)  peak {f_mem:,.0f} MiB  {f_windows} window rows")
            print(f"  Brook / Flink: {f_t / b_t:.2f}x throughput, {b_mem / f_mem:.2f}x memory")
            runs.append({"system": "pyflink", "seconds": f_t, "rows_per_s": args.rows / f_t,
                         "peak_mib": f_mem, "window_rows": f_windows,
                         "brook_throughput_ratio": f_t / b_t, "brook_memory_ratio": b_mem / f_mem})
            # Brook emits closed windows only: the last second stays open (its watermark).
            assert b_windows in (f_windows, f_windows - KEYS), (b_windows, f_windows)
        write_results("continuous", {"rows": args.rows, "keys": KEYS,
                                     "rows_per_event_second": ROWS_PER_SECOND,
                                     "no_flink": args.no_flink, "brook": args.brook}, runs)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
