#!/usr/bin/env python3
"""Nexmark q0, q1, q2, q4, q5, q7, q8 through Brook and through Apache Flink, in one run.

The events come from Brook's built-in generator (`nexmark(kind, events)`, the Nexmark
spec's generator with a fixed base time, so every run has the same rows), written once to
CSV files. Each query then reads the same CSV:

- Brook: a fresh server, the query as a materialized view over streams (person is a table,
  as in sql-tests/slt/nexmark.slt), the inputs sent with psql's \\copy (COPY over the wire);
  the clock stops when the view has applied every row.
- Flink (PyFlink, local mini-cluster, parallelism 2, streaming mode): the Nexmark project's
  SQL for the query over CSV filesystem tables (watermark 4 s behind, as Brook's streams
  declare) into a blackhole sink; the clock includes job start-up.

Prints, per query, Brook's events/s over the query's own inputs (bids for q0-q2, q5, q7;
auctions and bids for q4; persons and auctions for q8), per core (both engines use the
machine's 2 cores), per second of the Brook server's CPU time (psql's reading and sending of
the file left out), and PyFlink's over the same inputs with the ratio. A second Brook run
sends the whole event stream (persons, auctions and bids, each into its stream, whether the
query reads it or not) and sets that per-core rate against the per-core figure the Nexmark
project's README publishes for Flink 1.13: those figures count every event the generator
makes, read by the query or filtered out by it. One untimed Brook run (the whole stream)
comes first, so the first use of the machine's memory does not fall on the first query.

    pip install apache-flink   # once
    python3 sql-tests/bench/nexmark_bench.py --brook target/release/brook [--events 2000000]
"""
import argparse
import json
import os
import shutil
import tempfile
import time

from continuous_bench import PeakRss, psql, run_python_job
from results import write_results
from synopses_bench import start_brook

COLUMNS = {
    "person": "id bigint, name text, email_address text, credit_card text, city text, "
              "state text, date_time timestamp, extra text",
    "auction": "id bigint, item_name text, description text, initial_bid bigint, reserve bigint, "
               "date_time timestamp, expires timestamp, seller bigint, category bigint, extra text",
    "bid": "auction bigint, bidder bigint, price bigint, channel text, url text, "
           "date_time timestamp, extra text",
}
WATERMARK = "WATERMARK FOR date_time AS date_time - INTERVAL '4 seconds'"

# Brook SQL, as in sql-tests/slt/nexmark.slt.
BROOK = {
    "q0": "SELECT auction, bidder, price, date_time, extra FROM bid",
    "q1": "SELECT auction, bidder, 0.908 * price AS price, date_time, extra FROM bid",
    "q2": "SELECT auction, price FROM bid WHERE auction % 123 = 0",
    "q4": "SELECT q.category, avg(q.final) AS avg_final FROM (SELECT max(b.price) AS final, "
          "a.category FROM auction a, bid b WHERE a.id = b.auction AND b.date_time BETWEEN "
          "a.date_time AND a.expires GROUP BY a.id, a.category) q GROUP BY q.category",
    "q5": "SELECT ab.auction, ab.num, ab.starttime FROM (SELECT auction, count(*) AS num, "
          "window_start AS starttime, window_end AS endtime FROM HOP(bid, date_time, INTERVAL '2 seconds', "
          "INTERVAL '10 seconds') GROUP BY auction, window_start, window_end) AS ab JOIN (SELECT "
          "max(cb.num) AS maxn, cb.starttime, cb.endtime FROM (SELECT count(*) AS num, window_start AS "
          "starttime, window_end AS endtime FROM HOP(bid, date_time, INTERVAL '2 seconds', INTERVAL "
          "'10 seconds') GROUP BY auction, window_start, window_end) AS cb GROUP BY cb.starttime, "
          "cb.endtime) AS mb ON ab.starttime = mb.starttime AND ab.endtime = mb.endtime AND ab.num "
          ">= mb.maxn EMIT ON WINDOW CLOSE",
    "q7": "SELECT b.auction, b.price, b.bidder, b.date_time, b.extra FROM bid b JOIN (SELECT "
          "max(price) AS maxprice, window_end AS date_time FROM TUMBLE(bid, date_time, INTERVAL "
          "'10 seconds') GROUP BY window_start, window_end) b1 ON b.price = b1.maxprice WHERE "
          "b.date_time BETWEEN b1.date_time - INTERVAL '10 seconds' AND b1.date_time",
    "q8": "SELECT p.id, p.name, p.starttime FROM (SELECT id, name, window_start AS starttime, "
          "window_end AS endtime FROM TUMBLE(person, date_time, INTERVAL '10 seconds') GROUP BY id, "
          "name, window_start, window_end) p JOIN (SELECT seller, window_start AS starttime, "
          "window_end AS endtime FROM TUMBLE(auction, date_time, INTERVAL '10 seconds') GROUP BY "
          "seller, window_start, window_end) a ON p.id = a.seller AND p.starttime = a.starttime AND "
          "p.endtime = a.endtime",
}
INPUTS = {"q0": ["bid"], "q1": ["bid"], "q2": ["bid"], "q4": ["auction", "bid"], "q5": ["bid"],
          "q7": ["bid"], "q8": ["person", "auction"]}

# Flink SQL: the Nexmark project's queries (window TVFs), into a blackhole sink.
FLINK = {
    "q0": "SELECT auction, bidder, price, date_time, extra FROM bid",
    "q1": "SELECT auction, bidder, 0.908 * price AS price, date_time, extra FROM bid",
    "q2": "SELECT auction, price FROM bid WHERE MOD(auction, 123) = 0",
    "q4": "SELECT Q.category, AVG(Q.final) FROM (SELECT MAX(B.price) AS final, A.category FROM "
          "auction A, bid B WHERE A.id = B.auction AND B.date_time BETWEEN A.date_time AND "
          "A.expires GROUP BY A.id, A.category) Q GROUP BY Q.category",
    "q5": "SELECT AuctionBids.auction, AuctionBids.num FROM (SELECT auction, count(*) AS num, "
          "window_start AS starttime, window_end AS endtime FROM TABLE(HOP(TABLE bid, "
          "DESCRIPTOR(date_time), INTERVAL '2' SECOND, INTERVAL '10' SECOND)) GROUP BY auction, "
          "window_start, window_end) AS AuctionBids JOIN (SELECT max(CountBids.num) AS maxn, "
          "CountBids.starttime, CountBids.endtime FROM (SELECT count(*) AS num, window_start AS "
          "starttime, window_end AS endtime FROM TABLE(HOP(TABLE bid, DESCRIPTOR(date_time), "
          "INTERVAL '2' SECOND, INTERVAL '10' SECOND)) GROUP BY auction, window_start, window_end) "
          "AS CountBids GROUP BY CountBids.starttime, CountBids.endtime) AS MaxBids ON "
          "AuctionBids.starttime = MaxBids.starttime AND AuctionBids.endtime = MaxBids.endtime AND "
          "AuctionBids.num >= MaxBids.maxn",
    "q7": "SELECT B.auction, B.price, B.bidder, B.date_time, B.extra FROM bid B JOIN (SELECT "
          "MAX(price) AS maxprice, window_end AS date_time FROM TABLE(TUMBLE(TABLE bid, "
          "DESCRIPTOR(date_time), INTERVAL '10' SECOND)) GROUP BY window_start, window_end) B1 ON "
          "B.price = B1.maxprice WHERE B.date_time BETWEEN B1.date_time - INTERVAL '10' SECOND AND "
          "B1.date_time",
    "q8": "SELECT P.id, P.name, P.starttime FROM (SELECT id, name, window_start AS starttime, "
          "window_end AS endtime FROM TABLE(TUMBLE(TABLE person, DESCRIPTOR(date_time), INTERVAL "
          "'10' SECOND)) GROUP BY id, name, window_start, window_end) P JOIN (SELECT seller, "
          "window_start AS starttime, window_end AS endtime FROM TABLE(TUMBLE(TABLE auction, "
          "DESCRIPTOR(date_time), INTERVAL '10' SECOND)) GROUP BY seller, window_start, window_end) "
          "A ON P.id = A.seller AND P.starttime = A.starttime AND P.endtime = A.endtime",
}
# Flink 1.13's throughput per core in the Nexmark project's README (8 workers of 8 cores,
# 100 M events from its generator, all three kinds counted for every query).
PUBLISHED_PER_CORE = {"q0": 155_020, "q1": 157_940, "q2": 175_210, "q4": 34_330,
                      "q5": 22_140, "q7": 12_330, "q8": 146_140}
FLINK_TYPES = {"bigint": "BIGINT", "text": "STRING", "timestamp": "TIMESTAMP(3)"}

FLINK_JOB = """
import json, sys, time
from pyflink.table import EnvironmentSettings, TableEnvironment
tables, query, columns = json.loads(sys.argv[1]), sys.argv[2], sys.argv[3]
env = TableEnvironment.create(EnvironmentSettings.in_streaming_mode())
env.get_config().set("parallelism.default", "2")
for name, (path, schema) in tables.items():
    env.execute_sql(f"CREATE TABLE {name} ({schema}, WATERMARK FOR date_time AS date_time - INTERVAL '4' SECOND) "
                    f"WITH ('connector' = 'filesystem', 'path' = '{path}', 'format' = 'csv')")
env.execute_sql(f"CREATE TABLE sink ({columns}) WITH ('connector' = 'blackhole')")
t0 = time.perf_counter()
env.execute_sql(f"INSERT INTO sink {query}").wait()
print(f"FLINK {time.perf_counter() - t0}")
"""


def flink_schema(columns):
    out = []
    for col in columns.split(", "):
        name, typ = col.split(" ")
        out.append(f"{name} {FLINK_TYPES[typ]}")
    return ", ".join(out)


def generate(binary, work, events):
    """CSV files of the first `events` Nexmark events; returns {kind: (path, rows)}."""
    proc, port = start_brook(binary, work, "gen")
    try:
        files = {}
        for kind in COLUMNS:
            path = os.path.join(work, f"{kind}.csv")
            psql(port, f"\\copy (SELECT * FROM nexmark('{kind}', {events})) TO '{path}' WITH (FORMAT csv)")
            with open(path) as f:
                rows = sum(1 for _ in f)
            files[kind] = (path, rows)
        return files
    finally:
        proc.kill()


def cpu_seconds(pid):
    """CPU time (user + system) the process has used so far."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def run_brook(binary, work, q, files, kinds):
    """Run `q` as a view while `kinds` are sent in that order; (seconds, MiB, rows, CPU-s)."""
    proc, port = start_brook(binary, work, f"brook-{q}")
    try:
        for kind, cols in COLUMNS.items():
            if kind == "person":
                psql(port, f"CREATE TABLE person ({cols})")
            else:
                psql(port, f"CREATE STREAM {kind} ({cols}, {WATERMARK})")
        psql(port, f"CREATE MATERIALIZED VIEW {q} AS {BROOK[q]}")
        rss = PeakRss(proc.pid)
        cpu0 = cpu_seconds(proc.pid)
        t0 = time.perf_counter()
        for kind in kinds:
            psql(port, f"\\copy {kind} FROM '{files[kind][0]}' WITH (FORMAT csv)")
        rows = int(psql(port, f"SELECT count(*) FROM {q}"))  # waits until every row is applied
        elapsed = time.perf_counter() - t0
        return elapsed, rss.mib(), rows, cpu_seconds(proc.pid) - cpu0
    finally:
        proc.kill()
        proc.wait()  # the next run of the query starts afresh in the same directory
        shutil.rmtree(os.path.join(work, f"brook-{q}"), ignore_errors=True)


def sink_columns(q):
    """The blackhole sink's columns: the query's output, typed as Flink infers them."""
    return {
        "q0": "auction BIGINT, bidder BIGINT, price BIGINT, date_time TIMESTAMP(3), extra STRING",
        "q1": "auction BIGINT, bidder BIGINT, price DECIMAL(23, 3), date_time TIMESTAMP(3), extra STRING",
        "q2": "auction BIGINT, price BIGINT",
        "q4": "category BIGINT, final BIGINT",
        "q5": "auction BIGINT, num BIGINT",
        "q7": "auction BIGINT, price BIGINT, bidder BIGINT, date_time TIMESTAMP(3), extra STRING",
        "q8": "id BIGINT, name STRING, starttime TIMESTAMP(3)",
    }[q]


def run_flink(work, q, files):
    tables = {k: (files[k][0], flink_schema(COLUMNS[k])) for k in INPUTS[q]}
    m, peak = run_python_job(work, FLINK_JOB, [json.dumps(tables), FLINK[q], sink_columns(q)],
                             r"FLINK ([\d.]+)")
    return float(m.group(1)), peak


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--brook", default=os.environ.get("BROOK_BIN", "target/release/brook"))
    ap.add_argument("--events", type=int, default=2_000_000)
    ap.add_argument("--queries", default="q0,q1,q2,q4,q5,q7,q8")
    ap.add_argument("--no-flink", action="store_true", help="run Brook only")
    args = ap.parse_args()
    work = tempfile.mkdtemp(prefix="brook-nexmark-")
    try:
        files = generate(args.brook, work, args.events)
        os.sync()  # the inputs' own write-back must not land in either engine's time
        print(f"Nexmark, first {args.events:,} events (" +
              ", ".join(f"{rows:,} {kind}s" for kind, (_, rows) in files.items()) +
              "), CSV read by both; events/s (per core: / 2; per CPU-s: / the Brook "
              "server's CPU time, psql's own excluded; whole stream: all three kinds sent):")
        total = sum(rows for _, rows in files.values())
        # One untimed run first: on a virtual machine the first use of memory after boot (or
        # after generating the input) costs several times what later uses do, which would
        # fall on whichever query happens to run first.
        run_brook(args.brook, work, "q0", files, list(files))
        runs = []
        for q in args.queries.split(","):
            events = sum(files[k][1] for k in INPUTS[q])
            b_t, b_mem, b_rows, b_cpu = run_brook(args.brook, work, q, files, INPUTS[q])
            w_t, _, w_rows, _ = run_brook(args.brook, work, q, files, list(files))
            if w_rows != b_rows:
                raise SystemExit(f"{q}: {w_rows} rows with the whole stream, {b_rows} without")
            whole_core = total / w_t / 2
            runs.append({"system": "brook", "query": q, "inputs": INPUTS[q], "events": events,
                         "seconds": b_t, "events_per_s": events / b_t,
                         "events_per_core_s": events / b_t / 2, "server_cpu_s": b_cpu,
                         "events_per_cpu_s": events / b_cpu, "peak_mib": b_mem, "rows": b_rows})
            runs.append({"system": "brook", "query": q, "inputs": list(files),
                         "whole_stream": True, "events": total, "seconds": w_t,
                         "events_per_s": total / w_t, "events_per_core_s": whole_core,
                         "rows": w_rows, "flink_published_per_core": PUBLISHED_PER_CORE[q],
                         "vs_flink_published": whole_core / PUBLISHED_PER_CORE[q]})
            line = (f"  {q}: Brook {events / b_t:>11,.0f} /s ({events / b_t / 2:>10,.0f} per core, "
                    f"{events / b_cpu:>10,.0f} per CPU-s, {b_mem:>5,.0f} MiB, {b_rows:,} rows); "
                    f"whole stream {total / w_t:>11,.0f} /s ({whole_core:>10,.0f} per core = "
                    f"{whole_core / PUBLISHED_PER_CORE[q]:5.2f}x Flink's published)")
            if not args.no_flink:
                f_t, f_mem = run_flink(work, q, files)
                line += (f"   Flink {events / f_t:>10,.0f} /s ({f_mem:>5,.0f} MiB)"
                         f"   Brook/Flink {f_t / b_t:5.2f}x")
                runs.append({"system": "pyflink", "query": q, "inputs": INPUTS[q],
                             "events": events, "seconds": f_t, "events_per_s": events / f_t,
                             "peak_mib": f_mem, "brook_ratio": f_t / b_t})
            print(line, flush=True)
        write_results("nexmark", {"events": args.events, "queries": args.queries.split(","),
                                  "no_flink": args.no_flink, "brook": args.brook,
                                  "input_rows": {k: rows for k, (_, rows) in files.items()}},
                      runs)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
