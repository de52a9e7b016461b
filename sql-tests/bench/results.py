"""Raw benchmark figures as JSON files, shared by the scripts in sql-tests/bench/.

write_results("nexmark", params, runs) writes
sql-tests/bench/results/nexmark-<YYYY-MM-DD>-<short commit>.json (with -2, -3, ... appended
when that run's file already exists) holding the date, the commit, the machine, the script's
parameters and its runs as the script measured them. The path goes to stderr, so what a
script prints on stdout stays as it was.
"""
import datetime
import json
import os
import platform
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
RESULTS_DIR = os.path.join(HERE, "results")


def git(*args):
    """Output of a git command in this checkout, or None when git or the repository is missing."""
    try:
        out = subprocess.run(["git", *args], cwd=HERE, capture_output=True, text=True, check=True)
    except (OSError, subprocess.CalledProcessError):
        return None
    return out.stdout.strip()


def machine():
    """What the figures depend on: processors usable here (as `nproc` counts them), platform."""
    try:
        nproc = len(os.sched_getaffinity(0))
    except AttributeError:
        nproc = os.cpu_count()
    info = {
        "nproc": nproc,
        "platform": platform.platform(),
        "machine": platform.machine(),
        "python": platform.python_version(),
    }
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemTotal:"):
                    info["mem_total_mib"] = int(line.split()[1]) // 1024
    except OSError:
        pass
    return info


def write_results(bench_name, params, runs):
    """Write one run of a benchmark script; returns the file's path."""
    now = datetime.datetime.now(datetime.timezone.utc)
    date = now.date().isoformat()
    commit = git("rev-parse", "--short", "HEAD") or "unknown"
    status = git("status", "--porcelain", "--untracked-files=no")
    doc = {
        "bench": bench_name,
        "date": date,
        "time_utc": now.strftime("%H:%M:%S"),
        "commit": commit,
        "uncommitted_changes": None if status is None else bool(status),
        "machine": machine(),
        "params": params,
        "runs": runs,
    }
    os.makedirs(RESULTS_DIR, exist_ok=True)
    stem = f"{bench_name}-{date}-{commit}"
    path = os.path.join(RESULTS_DIR, f"{stem}.json")
    n = 1
    while os.path.exists(path):
        n += 1
        path = os.path.join(RESULTS_DIR, f"{stem}-{n}.json")
    with open(path, "w") as f:
        json.dump(doc, f, indent=2)
        f.write("\n")
    print(f"raw figures: {os.path.relpath(path)}", file=sys.stderr)
    return path
