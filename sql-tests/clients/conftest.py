"""Starts one Brook server (fresh data directory, free port) for the Python client tests."""
import os
import re
import shutil
import subprocess
import tempfile
import time

import pytest


@pytest.fixture(scope="session")
def brook(brook_process):
    """The server's connection parameters."""
    return brook_process[0]


@pytest.fixture(scope="session")
def brook_pid(brook_process):
    """The server's process id (to watch its CPU time)."""
    return brook_process[1].pid


@pytest.fixture(scope="session")
def brook_process():
    data = tempfile.mkdtemp(prefix="brook-py-")
    proc = subprocess.Popen(
        [os.environ["BROOK_BIN"], "serve", "--listen", "127.0.0.1:0", "--data-dir", data],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env={**os.environ, "BROOK_LOG": "warn"},
        text=True,
    )
    port = None
    deadline = time.time() + 30
    while time.time() < deadline:
        line = proc.stdout.readline()
        m = re.search(r"brook listening on 127\.0\.0\.1:(\d+)", line or "")
        if m:
            port = int(m.group(1))
            break
    assert port, "brook did not start"
    yield {"host": "127.0.0.1", "port": port, "user": "brook", "dbname": "brook"}, proc
    proc.kill()
    proc.wait()
    shutil.rmtree(data, ignore_errors=True)
