#!/usr/bin/env python3
"""Cost of keeping LAG over a whole stream up to date, as the stream grows.

A materialized view `SELECT ts, v, lag(v) OVER (ORDER BY ts) FROM feed` (one partition:
the whole stream) is kept while rows arrive in time order. At each size the feed is
filled by COPY, then COMMITS commits of ROWS rows each are inserted and the server's CPU
time (utime + stime of its process, from /proc) per commit is taken once the view has
caught up (its query's row counters in brook_continuous_queries(), polled; the polls' CPU
measured apart and taken out). Flat means a
commit costs the same at every size; before Brook evaluated only the rows a new row reads,
a commit re-evaluated the whole stream.

    python3 sql-tests/bench/lag_bench.py --brook target/release/brook [--sizes 10000,100000,1000000]
        [--runs 3] [--compare path/to/older/brook] [--watermark]

With --watermark the stream's event time is a timestamp with `WATERMARK FOR ts AS ts` (rows
behind the last one are late), so the window keeps only the row lag reads; without, it is
microseconds in a bigint and every row is kept. Prints, per binary and size, the median and
range over the runs of server CPU µs per commit, and the view's state bytes (its query's
`state_bytes`) and the server's resident memory at that size; raw figures go to
sql-tests/bench/results/lag-<date>-<commit>.json.
"""
import argparse
import datetime
import os
import statistics
import tempfile
import time

import psycopg

from results import write_results
from synopses_bench import start_brook

COMMITS = 100
ROWS = 10


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    ticks = os.sysconf("SC_CLK_TCK")
    return (int(fields[11]) + int(fields[12])) / ticks


PROGRESS = "SELECT rows_in, rows_out FROM brook_continuous_queries() WHERE name = 'lagged'"


def wait_for(conn, want, timeout=1800):
    """Polls the view's query until it has taken and given `want` rows; returns how many
    polls it took. (A poll reads the query's counters: counting the view's rows cost 1.1 s
    of server CPU at 10 M rows, more than 100 commits, and buried them in its noise.)"""
    deadline = time.time() + timeout
    polls = 0
    while time.time() < deadline:
        rows_in, rows_out = conn.execute(PROGRESS).fetchone()
        polls += 1
        if rows_in >= want and rows_out >= want:
            return polls
        time.sleep(0.01)
    raise RuntimeError(f"view stuck below {want} rows")


def poll_cost(conn, pid, n=20):
    """Server CPU seconds of one poll, to take out of the commits' figure."""
    before = cpu_seconds(pid)
    for _ in range(n):
        conn.execute(PROGRESS).fetchone()
    return (cpu_seconds(pid) - before) / n


EPOCH = datetime.datetime(2023, 11, 14, 22, 13, 20)


def copy_rows(conn, start, n, watermark):
    """Rows start .. start + n, in time order (a microsecond apart), in one COPY (one
    commit)."""
    if watermark:
        step = datetime.timedelta(microseconds=1)
        data = "".join(f"{EPOCH + i * step}\t{i}\n" for i in range(start, start + n))
    else:
        data = "".join(f"{1_700_000_000_000_000 + i}\t{i}\n" for i in range(start, start + n))
    with conn.cursor().copy("COPY feed_raw FROM STDIN") as cp:
        cp.write(data)


STATE = "SELECT state_bytes FROM brook_continuous_queries() WHERE name = 'lagged'"


def rss_bytes(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    return 0


def one_run(binary, sizes, watermark):
    with tempfile.TemporaryDirectory() as work:
        proc, port = start_brook(binary, work, "lag")
        try:
            conn = psycopg.connect(host="127.0.0.1", port=port, user="brook", dbname="brook",
                                   autocommit=True)
            if watermark:
                conn.execute("CREATE STREAM feed_raw (us timestamp, v bigint, "
                             "WATERMARK FOR us AS us)")
            else:
                # Event time as microseconds since the epoch.
                conn.execute("CREATE STREAM feed_raw (us bigint, v bigint)")
            conn.execute(
                "CREATE MATERIALIZED VIEW lagged AS SELECT us, v, lag(v) OVER (ORDER BY us) "
                "AS prev FROM feed_raw")
            have = 0
            out, state, rss = {}, {}, {}
            for size in sizes:
                while have < size:
                    n = min(50_000, size - have)
                    copy_rows(conn, have, n, watermark)
                    have += n
                wait_for(conn, have)
                (n,) = conn.execute("SELECT count(*) FROM lagged").fetchone()
                if n != have:
                    raise RuntimeError(f"the view has {n} rows, the stream {have}")
                per_poll = poll_cost(conn, proc.pid)
                before = cpu_seconds(proc.pid)
                for _ in range(COMMITS):
                    copy_rows(conn, have, ROWS, watermark)
                    have += ROWS
                polls = wait_for(conn, have)
                spent = cpu_seconds(proc.pid) - before - polls * per_poll
                out[size] = max(spent, 0.0) / COMMITS * 1e6
                state[size] = conn.execute(STATE).fetchone()[0]
                rss[size] = rss_bytes(proc.pid)
            return out, state, rss
        finally:
            proc.kill()
            proc.wait()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--brook", required=True)
    ap.add_argument("--compare", help="an older brook binary, measured the same way")
    ap.add_argument("--sizes", default="10000,100000,1000000")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--watermark", action="store_true",
                    help="a timestamp event time with a watermark (bounded window state)")
    args = ap.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    binaries = [("brook", args.brook)] + ([("compare", args.compare)] if args.compare else [])
    runs = []
    for label, binary in binaries:
        per_size = {s: [] for s in sizes}
        states = {s: [] for s in sizes}
        rsss = {s: [] for s in sizes}
        for r in range(args.runs):
            got, state, rss = one_run(binary, sizes, args.watermark)
            runs.append({"binary": label, "path": binary, "run": r, "cpu_us_per_commit": got,
                         "state_bytes": state, "rss_bytes": rss})
            for s, v in got.items():
                per_size[s].append(v)
                states[s].append(state[s])
                rsss[s].append(rss[s])
        for s in sizes:
            vals = per_size[s]
            print(f"{label:8} rows={s:>9,}  server CPU per commit of {ROWS} rows: "
                  f"median {statistics.median(vals):9.0f} µs  "
                  f"range {min(vals):.0f}-{max(vals):.0f}  "
                  f"state {statistics.median(states[s]):,.0f} B  "
                  f"RSS {statistics.median(rsss[s]) / 2**20:.0f} MiB "
                  f"({min(rsss[s]) / 2**20:.0f}-{max(rsss[s]) / 2**20:.0f})")
        first, last = per_size[sizes[0]], per_size[sizes[-1]]
        print(f"{label:8} cost at {sizes[-1]:,} rows / cost at {sizes[0]:,} rows: "
              f"{statistics.median(last) / statistics.median(first):.2f}")
    write_results("lag", {"sizes": sizes, "commits": COMMITS, "rows_per_commit": ROWS,
                          "runs": args.runs, "watermark": args.watermark}, runs)


if __name__ == "__main__":
    main()
