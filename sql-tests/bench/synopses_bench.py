#!/usr/bin/env python3
"""Synopsis benchmark, in one run on this machine:

(a) update cost per value of HLL, CPC, theta, KLL and frequent items in the Python
    `datasketches` package (the C++ library behind a Python call per value, and its numpy
    batch update where it has one) — set next to `cargo bench -p brook-synopses --bench
    update` (Brook's `Synopsis::add` against the raw Rust crate);
(b) a continuous COUNT(DISTINCT) per key, exact against a 1% error budget (`WITH ERROR
    0.01`), over ROWS rows with DISTINCT distinct values, as a materialized view over a stream
    fed by COPY over the wire: throughput, the view's operator state and the server's peak
    resident memory;
(c) ingest throughput while maintaining 100, 1,000 and 10,000 keyed synopses
    (`CREATE SYNOPSIS ... USING hll(v) PARTITION BY k`), COPY to every update visible;
(d) with --cargo-benches, the criterion benches too: Brook's update cost against the raw crate
    (`--bench update`) and the DFT correlation search against naive all-pairs on 500 and
    5,000 series (`--bench correlation`; a release build, slow the first time).

    pip install datasketches numpy   # once
    python3 sql-tests/bench/synopses_bench.py --brook target/release/brook [--rows 10000000]
"""
import argparse
import os
import random
import re
import shutil
import subprocess
import tempfile
import time

from continuous_bench import PeakRss, psql
from results import write_results


def start_brook(binary, work, name):
    data = os.path.join(work, name)
    proc = subprocess.Popen([binary, "serve", "--listen", "127.0.0.1:0", "--data-dir", data],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    for line in proc.stdout:
        m = re.search(r"listening on 127\.0\.0\.1:(\d+)", line)
        if m:
            return proc, int(m.group(1))
    raise RuntimeError("brook did not start")


def make_csv(path, rows, keys, distinct, seed=7):
    rnd = random.Random(seed)
    with open(path, "w") as f:
        for i in range(rows):
            f.write(f"{i % keys},{rnd.randrange(distinct)}\n")


def python_updates(n=1_000_000):
    import datasketches as ds
    import numpy as np
    values = list(range(n))
    out = []
    for name, make in [
        ("hll", lambda: ds.hll_sketch(12, ds.HLL_8)),
        ("cpc", lambda: ds.cpc_sketch(11)),
        ("theta", lambda: ds.update_theta_sketch(12)),
        ("kll", lambda: ds.kll_doubles_sketch(200)),
        ("frequent", lambda: ds.frequent_items_sketch(10)),
    ]:
        s = make()
        t0 = time.perf_counter()
        for v in values:
            s.update(v)
        per_value = (time.perf_counter() - t0) / n * 1e9
        batch = None
        if name == "kll":
            s = make()
            arr = np.arange(n, dtype=np.float64)
            t0 = time.perf_counter()
            s.update(arr)
            batch = (time.perf_counter() - t0) / n * 1e9
        out.append((name, per_value, batch))
    return out


def continuous_distinct(binary, work, csv, rows, budget):
    proc, port = start_brook(binary, work, "distinct-" + ("approx" if budget else "exact"))
    try:
        psql(port, "CREATE STREAM s (k integer, v bigint)")
        clause = " WITH ERROR 0.01" if budget else ""
        psql(port, f"CREATE MATERIALIZED VIEW d AS SELECT k, count(DISTINCT v) AS n FROM s GROUP BY k{clause}")
        rss = PeakRss(proc.pid)
        t0 = time.perf_counter()
        psql(port, f"\\copy s FROM '{csv}' WITH (FORMAT csv)")
        total = int(psql(port, "SELECT sum(n) FROM d"))  # waits until every row is applied
        elapsed = time.perf_counter() - t0
        state = int(psql(port, "SELECT state_bytes FROM brook_continuous_queries() WHERE name = 'd'"))
        return rows / elapsed, state, rss.mib(), total
    finally:
        proc.kill()


def keyed_synopses(binary, work, csv, rows, keys):
    proc, port = start_brook(binary, work, f"keyed-{keys}")
    try:
        psql(port, "CREATE STREAM s (k integer, v bigint)")
        psql(port, "CREATE SYNOPSIS u ON s USING hll(v) PARTITION BY k")
        rss = PeakRss(proc.pid)
        t0 = time.perf_counter()
        psql(port, f"\\copy s FROM '{csv}' WITH (FORMAT csv)")
        copied = time.perf_counter() - t0
        # Applied means visible to a reader: every key's sketch counts its rows.
        while int(psql(port, "SELECT coalesce(sum(rows_seen), 0) FROM u")) < rows:
            time.sleep(0.02)
        elapsed = time.perf_counter() - t0
        n = int(psql(port, "SELECT synopses FROM brook_synopses() WHERE name = 'u'"))
        mem = int(psql(port, "SELECT memory_bytes FROM brook_synopses() WHERE name = 'u'"))
        return rows / copied, rows / elapsed, n, mem, rss.mib()
    finally:
        proc.kill()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--brook", default=os.environ.get("BROOK_BIN", "target/release/brook"))
    ap.add_argument("--rows", type=int, default=10_000_000)
    ap.add_argument("--distinct", type=int, default=1_000_000)
    ap.add_argument("--keys", type=int, default=10)
    ap.add_argument("--cargo-benches", action="store_true",
                    help="also run the criterion benches of (a) and (d)")
    args = ap.parse_args()
    work = tempfile.mkdtemp(prefix="brook-sbench-")
    try:
        runs = []
        print("(a) Python datasketches, ns per update (1 M values):")
        for name, per_value, batch in python_updates():
            runs.append({"part": "a", "system": "python-datasketches", "sketch": name,
                         "ns_per_update": per_value, "numpy_batch_ns_per_update": batch})
            extra = f"   numpy batch: {batch:6.1f} ns" if batch is not None else ""
            print(f"  {name:9s} {per_value:7.1f} ns{extra}")

        csv = os.path.join(work, "distinct.csv")
        make_csv(csv, args.rows, args.keys, args.distinct)
        print(f"(b) continuous count(DISTINCT v) per key: {args.rows:,} rows, {args.keys} keys, "
              f"{args.distinct:,} distinct values")
        exact = continuous_distinct(args.brook, work, csv, args.rows, budget=False)
        approx = continuous_distinct(args.brook, work, csv, args.rows, budget=True)
        for label, (rate, state, peak, total) in [("exact", exact), ("1% budget", approx)]:
            runs.append({"part": "b", "system": "brook", "mode": label, "rows_per_s": rate,
                         "state_bytes": state, "peak_rss_mib": peak, "sum_of_counts": total})
            print(f"  {label:10s} {rate:>12,.0f} rows/s  state {state / 2**20:8.1f} MiB  "
                  f"peak RSS {peak:7.0f} MiB  sum of counts {total:,}")
        print(f"  budget / exact: {approx[0] / exact[0]:.2f}x throughput, "
              f"{exact[1] / max(approx[1], 1):.0f}x less state, {exact[2] / approx[2]:.2f}x less peak RSS, "
              f"error {abs(approx[3] - exact[3]) / exact[3] * 100:.2f}%")

        print(f"(c) ingest while maintaining keyed HLL synopses ({args.rows:,} rows):")
        for keys in (100, 1_000, 10_000):
            kcsv = os.path.join(work, f"keys-{keys}.csv")
            make_csv(kcsv, args.rows, keys, args.distinct)
            copy_rate, rate, n, mem, peak = keyed_synopses(args.brook, work, kcsv, args.rows, keys)
            runs.append({"part": "c", "system": "brook", "keys": keys,
                         "updates_per_s_applied": rate, "copy_rows_per_s": copy_rate,
                         "sketches": n, "memory_bytes": mem, "peak_rss_mib": peak})
            print(f"  {keys:>6,} synopses: {rate:>12,.0f} updates/s applied (COPY alone done at "
                  f"{copy_rate:,.0f} rows/s)  {n:,} sketches  {mem / 2**20:.1f} MiB  peak RSS {peak:.0f} MiB")
            os.remove(kcsv)
        # The criterion benches below keep their figures in criterion's own reports.
        write_results("synopses", {"rows": args.rows, "distinct": args.distinct,
                                   "keys": args.keys, "python_values": 1_000_000,
                                   "cargo_benches": args.cargo_benches, "brook": args.brook},
                      runs)
        if args.cargo_benches:
            for bench in ("update", "correlation"):
                print(f"(a)/(d) cargo bench -p brook-synopses --bench {bench}:", flush=True)
                subprocess.run(["cargo", "bench", "-p", "brook-synopses", "--bench", bench], check=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
