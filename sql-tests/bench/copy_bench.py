#!/usr/bin/env python3
"""COPY ingest benchmark: the same CSV into PostgreSQL (a table) and into Brook (a table and
a stream), in one run, through psql's \\copy (COPY ... FROM STDIN over the wire).

Prints rows/s for each and Brook's ratio to PostgreSQL. Both fsync their commits.

    python3 sql-tests/bench/copy_bench.py [--rows 1000000] [--brook target/release/brook]
"""
import argparse
import os
import pwd
import re
import shutil
import socket
import subprocess
import tempfile
import time

from results import write_results


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def make_csv(path, rows):
    with open(path, "w") as f:
        for i in range(rows):
            f.write(f"{i},SYM{i % 500},{100 + (i % 1000) / 8},{i % 97},2026-01-01 00:{(i // 60) % 60:02d}:{i % 60:02d}\n")


def psql(port, user, db, sql):
    return subprocess.run(
        ["psql", "-X", "-q", "-v", "ON_ERROR_STOP=1", "-h", "127.0.0.1", "-p", str(port), "-U", user, "-d", db, "-c", sql],
        check=True, capture_output=True, text=True,
    ).stdout


def scalar(port, user, db, sql):
    return subprocess.run(
        ["psql", "-X", "-At", "-h", "127.0.0.1", "-p", str(port), "-U", user, "-d", db, "-c", sql],
        check=True, capture_output=True, text=True,
    ).stdout.strip()


def timed_copy(port, user, db, rel, csv):
    t0 = time.perf_counter()
    psql(port, user, db, f"\\copy {rel} FROM '{csv}' WITH (FORMAT csv)")
    return time.perf_counter() - t0


DDL = "(id bigint, sym text, px double precision, qty integer, at timestamp)"


def start_postgres(workdir):
    bindir = sorted(d for d in os.listdir("/usr/lib/postgresql"))[-1]
    bindir = f"/usr/lib/postgresql/{bindir}/bin"
    data = os.path.join(workdir, "pg")
    os.makedirs(data)
    pg = pwd.getpwnam("postgres")
    os.chown(workdir, pg.pw_uid, pg.pw_gid)
    os.chown(data, pg.pw_uid, pg.pw_gid)
    run_as = ["runuser", "-u", "postgres", "--"]
    subprocess.run(run_as + [f"{bindir}/initdb", "-D", data, "-A", "trust", "-U", "postgres"], check=True, capture_output=True)
    port = free_port()
    subprocess.run(
        run_as + [f"{bindir}/pg_ctl", "-D", data, "-l", os.path.join(data, "log"), "-w", "-o", f"-p {port} -k {data} -c listen_addresses=127.0.0.1", "start"],
        check=True, capture_output=True,
    )
    return port, (run_as + [f"{bindir}/pg_ctl", "-D", data, "-m", "fast", "stop"])


def start_brook(binary, workdir):
    data = os.path.join(workdir, "brook")
    proc = subprocess.Popen([binary, "serve", "--listen", "127.0.0.1:0", "--data-dir", data],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    for line in proc.stdout:
        m = re.search(r"listening on 127\.0\.0\.1:(\d+)", line)
        if m:
            return int(m.group(1)), proc
    raise RuntimeError("brook did not start")


def peak_rss_mib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--brook", default=os.environ.get("BROOK_BIN", "target/release/brook"))
    args = ap.parse_args()
    work = tempfile.mkdtemp(prefix="brook-bench-")
    os.chmod(work, 0o755)
    csv = os.path.join(work, "data.csv")
    make_csv(csv, args.rows)
    os.chmod(csv, 0o644)
    size_mb = os.path.getsize(csv) / 1e6
    pg_port, pg_stop = start_postgres(work)
    brook_port, brook = start_brook(args.brook, work)
    try:
        psql(pg_port, "postgres", "postgres", f"CREATE TABLE t {DDL}")
        psql(brook_port, "brook", "brook", f"CREATE TABLE t {DDL}")
        psql(brook_port, "brook", "brook", f"CREATE STREAM s {DDL}")
        pg_t = timed_copy(pg_port, "postgres", "postgres", "t", csv)
        br_t = timed_copy(brook_port, "brook", "brook", "t", csv)
        br_s = timed_copy(brook_port, "brook", "brook", "s", csv)
        for port, user, db, rel in [(pg_port, "postgres", "postgres", "t"), (brook_port, "brook", "brook", "t"), (brook_port, "brook", "brook", "s")]:
            n = int(scalar(port, user, db, f"SELECT count(*) FROM {rel}"))
            assert n == args.rows, f"{rel}: {n} rows"
        rss = peak_rss_mib(brook.pid)
        print(f"COPY of {args.rows:,} rows ({size_mb:.0f} MB CSV) over the wire, fsync on:")
        print(f"  PostgreSQL table : {args.rows / pg_t:>12,.0f} rows/s  ({pg_t:.2f} s)")
        print(f"  Brook table      : {args.rows / br_t:>12,.0f} rows/s  ({br_t:.2f} s)  ratio {pg_t / br_t:.2f}x")
        print(f"  Brook stream     : {args.rows / br_s:>12,.0f} rows/s  ({br_s:.2f} s)  ratio {pg_t / br_s:.2f}x")
        print(f"  Brook peak RSS   : {rss:.0f} MiB")
        write_results(
            "copy",
            {"rows": args.rows, "csv_mb": size_mb, "brook": args.brook},
            [
                {"system": "postgresql", "target": "table", "seconds": pg_t,
                 "rows_per_s": args.rows / pg_t},
                {"system": "brook", "target": "table", "seconds": br_t,
                 "rows_per_s": args.rows / br_t, "ratio_to_postgresql": pg_t / br_t,
                 "server_peak_rss_mib": rss},
                {"system": "brook", "target": "stream", "seconds": br_s,
                 "rows_per_s": args.rows / br_s, "ratio_to_postgresql": pg_t / br_s,
                 "server_peak_rss_mib": rss},
            ],
        )
    finally:
        brook.kill()
        subprocess.run(pg_stop, capture_output=True)
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
