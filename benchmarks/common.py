"""What several benchmarks share: a throwaway server with a `bench` database, and timing one
`wfctl` command the way an operator runs it (a new process: interpreter start included)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import psycopg

ROOT = Path(__file__).resolve().parent.parent


@dataclass
class BenchServer:
    dsn: str  # the `bench` database
    version: str  # server_version
    fsync: str


@contextmanager
def throwaway_server(prefix: str) -> Iterator[BenchServer]:
    """A pgserver PostgreSQL in a new temporary folder with an empty `bench` database; the
    server is stopped and the folder removed on exit."""
    import pgserver

    data = Path(tempfile.mkdtemp(prefix=prefix))
    server = pgserver.get_server(str(data), cleanup_mode="stop")
    try:
        base = str(server.get_uri())
        with psycopg.connect(base, autocommit=True) as conn:
            conn.execute("CREATE DATABASE bench")
            version = str(conn.execute("SHOW server_version").fetchone()[0])  # type: ignore[index]
            fsync = str(conn.execute("SHOW fsync").fetchone()[0])  # type: ignore[index]
        yield BenchServer(psycopg.conninfo.make_conninfo(base, dbname="bench"), version, fsync)
    finally:
        server.cleanup()
        shutil.rmtree(data, ignore_errors=True)


def wfctl(dsn: str, *args: str) -> tuple[float, subprocess.CompletedProcess[str]]:
    """`wfctl --dsn DSN --format json ARGS...` in a new process: (wall seconds, result)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "wfctl", "--dsn", dsn, "--format", "json", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
    )
    return time.perf_counter() - started, done
