#!/usr/bin/env python3
"""End-to-end latency of continuous results: COPY -> visible to FETCH, at a fixed rate.

A writer thread COPYs RATE events/s into a stream in commits every TICK seconds (each row
carries its commit's send time in microseconds); a reader holds a continuous cursor over the
stream and FETCHes what is ready, taking each row's latency as receive time minus send time
(same process, same clock). Two queries, one after the other, DURATION seconds each:

  pass-through   SELECT sent_us FROM s WHERE v >= 0
  aggregate      SELECT k, max(sent_us) FROM s GROUP BY k    (an updating result: the
                 latency of each inserted row of the changelog)

Prints p50/p90/p99/max and the rate the writer achieved. The latency includes Python's side
(building the COPY text, psycopg), so it is an upper bound on the server's share.

    pip install psycopg[binary]   # once
    python3 sql-tests/bench/latency_bench.py --brook target/release/brook [--rate 100000]
"""
import argparse
import os
import shutil
import statistics
import tempfile
import threading
import time

import psycopg

from results import write_results
from synopses_bench import start_brook

TICK = 0.01  # seconds between commits
KEYS = 100


def now_us():
    return time.time_ns() // 1000


def writer(port, rate, duration, stop, sent):
    """COPY `rate` rows/s in commits every TICK until `duration` passes; counts rows sent."""
    per_tick = max(1, int(rate * TICK))
    with psycopg.connect(host="127.0.0.1", port=port, user="brook", dbname="brook",
                         autocommit=True) as conn:
        start = time.perf_counter()
        tick = 0
        while not stop.is_set():
            due = start + tick * TICK
            wait = due - time.perf_counter()
            if wait > 0:
                time.sleep(wait)
            if time.perf_counter() - start >= duration:
                break
            t = now_us()
            base = tick * per_tick
            data = "".join(f"{(base + i) % KEYS}\t{base + i}\t{t}\n" for i in range(per_tick))
            with conn.cursor().copy("COPY s FROM STDIN") as cp:
                cp.write(data)
            sent[0] += per_tick
            tick += 1
        sent[1] = time.perf_counter() - start


def measure(port, query, latency_of, rate, duration):
    """Latencies (ms) of the rows `query` yields while the writer runs."""
    lat = []
    with psycopg.connect(host="127.0.0.1", port=port, user="brook", dbname="brook") as conn:
        cur = conn.cursor()
        cur.execute(f"DECLARE c CURSOR FOR {query}")
        stop = threading.Event()
        sent = [0, 0.0]
        w = threading.Thread(target=writer, args=(port, rate, duration, stop, sent))
        w.start()
        idle = 0
        while w.is_alive() or idle < 3:
            cur.execute("FETCH ALL FROM c WITH (timeout = '200ms')")
            rows = cur.fetchall()
            t = now_us()
            idle = 0 if rows else idle + 1
            for r in rows:
                v = latency_of(r)
                if v is not None:
                    lat.append((t - v) / 1000.0)
        w.join()
        cur.execute("CLOSE c")
    return lat, sent[0] / sent[1] if sent[1] else 0.0


def pct(values, p):
    values = sorted(values)
    return values[min(len(values) - 1, int(p / 100.0 * len(values)))]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--brook", required=True)
    ap.add_argument("--rate", type=int, default=100_000)
    ap.add_argument("--duration", type=float, default=10.0)
    args = ap.parse_args()
    work = tempfile.mkdtemp(prefix="brook-latency-")
    proc, port = start_brook(args.brook, work, "latency")
    try:
        with psycopg.connect(host="127.0.0.1", port=port, user="brook", dbname="brook",
                             autocommit=True) as conn:
            conn.execute("CREATE STREAM s (k integer, v bigint, sent_us bigint)")
        print(f"End-to-end latency, COPY -> FETCH, {args.rate:,} events/s in commits every "
              f"{TICK * 1000:.0f} ms, {args.duration:.0f} s per query:")
        cases = [
            ("pass-through", "SELECT sent_us FROM s WHERE v >= 0", lambda r: r[0]),
            # Changelog rows: only inserts carry a new max (deletes retract the old one).
            ("aggregate", "SELECT k, max(sent_us) FROM s GROUP BY k",
             lambda r: r[1] if r[-1] == 1 else None),
        ]
        runs = []
        for name, query, latency_of in cases:
            lat, achieved = measure(port, query, latency_of, args.rate, args.duration)
            if not lat:
                print(f"  {name:<13} no rows")
                runs.append({"system": "brook", "case": name, "query": query, "rows": 0,
                             "writer_events_per_s": achieved})
                continue
            print(f"  {name:<13} p50 {pct(lat, 50):6.2f} ms  p90 {pct(lat, 90):6.2f} ms  "
                  f"p99 {pct(lat, 99):6.2f} ms  max {max(lat):7.2f} ms  "
                  f"({len(lat):,} rows, writer at {achieved:,.0f} events/s, "
                  f"mean {statistics.fmean(lat):.2f} ms)")
            runs.append({"system": "brook", "case": name, "query": query, "rows": len(lat),
                         "writer_events_per_s": achieved, "p50_ms": pct(lat, 50),
                         "p90_ms": pct(lat, 90), "p99_ms": pct(lat, 99), "max_ms": max(lat),
                         "mean_ms": statistics.fmean(lat)})
        write_results("latency", {"rate": args.rate, "duration_s": args.duration,
                                  "tick_s": TICK, "keys": KEYS, "brook": args.brook}, runs)
    finally:
        proc.kill()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
