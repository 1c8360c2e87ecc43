"""Helpers for the `wfctl migrate` tests: data, checksums, processes, the real migrator."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psycopg

from tests.conftest import ROOT, install_real_package, psycopg_to_url
from wfctl.world import catalog

FIXTURES = ROOT / "tests" / "fixtures" / "packages"
SHIPPED = FIXTURES / "shipped"
GUARDED = FIXTURES / "guarded"
LATER = FIXTURES / "later"
UNKNOWN = FIXTURES / "unknown"
ADVISORY_KEY = (2003199860, 1835624306)
BETA29_TABLES = catalog.expected("beta29")["tables"]


def fill(conn: psycopg.Connection[Any], runs: int = 200, events_per_run: int = 20) -> None:
    """Runs, steps, hooks and `wevt_` events, as generated data (one statement each)."""
    conn.execute(
        "INSERT INTO workflow.workflow_runs (id, deployment_id, status, name)"
        " SELECT 'wrun_' || lpad(g::text, 8, '0'), 'postgres', 'running', 'workflow//w'"
        " FROM generate_series(1, %s) g",
        (runs,),
    )
    conn.execute(
        "INSERT INTO workflow.workflow_events (id, type, correlation_id, run_id, spec_version)"
        " SELECT 'wevt_' || lpad(r::text, 8, '0') || lpad(e::text, 6, '0'),"
        "        CASE WHEN e = 1 THEN 'run_created' ELSE 'step_started' END,"
        "        CASE WHEN e = 1 THEN NULL ELSE 'step_' || r || '_' || e END,"
        "        'wrun_' || lpad(r::text, 8, '0'), 2"
        " FROM generate_series(1, %s) r, generate_series(1, %s) e",
        (runs, events_per_run),
    )
    conn.execute(
        "INSERT INTO workflow.workflow_steps (run_id, step_id, step_name, status, attempt)"
        " SELECT 'wrun_' || lpad(g::text, 8, '0'), 'step_' || g, 'step//s', 'running', 1"
        " FROM generate_series(1, %s) g",
        (runs,),
    )
    conn.execute(
        "INSERT INTO workflow.workflow_hooks"
        " (run_id, hook_id, token, owner_id, project_id, environment)"
        " SELECT 'wrun_' || lpad(g::text, 8, '0'), 'hook_' || g, 'tok' || g, '', '', ''"
        " FROM generate_series(1, %s) g",
        (runs,),
    )
    conn.execute("ANALYZE workflow.workflow_events")


def checksums(conn: psycopg.Connection[Any]) -> dict[str, tuple[int, str]]:
    """Row count and md5 of every beta.29 table over its beta.29 columns (order-independent)."""
    out = {}
    for name, table in BETA29_TABLES.items():
        if not name.startswith("workflow."):
            continue
        cols = ", ".join(f'"{c[0]}"' for c in table["columns"])
        row = conn.execute(
            f"SELECT count(*), coalesce(md5(string_agg(t, '|' ORDER BY t)), '')"
            f" FROM (SELECT ROW({cols})::text AS t FROM {name}) s"
        ).fetchone()
        assert row is not None
        out[name] = (row[0], row[1])
    return out


def drizzle_rows(conn: psycopg.Connection[Any]) -> list[tuple[str, int]]:
    return [
        (r[0], r[1])
        for r in conn.execute(
            "SELECT hash, created_at FROM workflow_drizzle.workflow_migrations ORDER BY id"
        )
    ]


def wfctl_env() -> dict[str, str]:
    env = {**os.environ, "NO_COLOR": "1"}
    for var in ("WFCTL_DATABASE_URL", "WORKFLOW_POSTGRES_URL", "DATABASE_URL"):
        env.pop(var, None)
    return env


def spawn(dsn: str, *args: str) -> subprocess.Popen[str]:
    """`python -m wfctl --dsn DSN migrate ARGS` as a separate process (to kill it)."""
    return subprocess.Popen(
        [sys.executable, "-m", "wfctl", "--dsn", dsn, "migrate", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=wfctl_env(),
        cwd=ROOT,
    )


def wait_for(predicate: Callable[[], Any], timeout: float = 15.0, what: str = "") -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what or predicate}")


def building_pid(dsn: str) -> int | None:
    """The backend running a CREATE INDEX CONCURRENTLY on this database, if any."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        row = conn.execute(
            "SELECT pid FROM pg_stat_progress_create_index WHERE datname = current_database()"
        ).fetchone()
    return None if row is None else int(row[0])


def backend_gone(dsn: str, pid: int) -> bool:
    with psycopg.connect(dsn, autocommit=True) as conn:
        row = conn.execute("SELECT count(*) FROM pg_stat_activity WHERE pid = %s", (pid,))
        return row.fetchone() == (0,)


def key_index_state(dsn: str) -> str | None:
    with psycopg.connect(dsn, autocommit=True) as conn:
        row = conn.execute(
            "SELECT CASE WHEN indisvalid THEN 'valid' ELSE 'invalid' END FROM pg_index"
            " WHERE indexrelid = to_regclass('workflow.workflow_events_run_id_id_idx')"
        ).fetchone()
    return None if row is None else str(row[0])


class Blocker:
    """Another session holding a lock on workflow_events in an open transaction."""

    def __init__(self, dsn: str, statement: str) -> None:
        self.conn = psycopg.connect(dsn, application_name="test-blocker")
        self.conn.execute(statement)
        row = self.conn.execute("SELECT pg_backend_pid()").fetchone()
        assert row is not None
        self.pid = int(row[0])

    def release(self) -> None:
        if not self.conn.closed:
            self.conn.commit()
            self.conn.close()

    def release_after(self, seconds: float) -> threading.Thread:
        thread = threading.Thread(target=lambda: (time.sleep(seconds), self.release()))
        thread.start()
        return thread


class Writer(threading.Thread):
    """Inserts events one autocommit statement at a time until stopped; records every outcome."""

    def __init__(self, dsn: str, run_id: str = "wrun_writer") -> None:
        super().__init__(name="event-writer", daemon=True)
        self.dsn = dsn
        self.run_id = run_id
        self.stop = threading.Event()
        self.ok = 0
        self.errors: list[str] = []
        self.max_latency = 0.0

    def run(self) -> None:
        with psycopg.connect(self.dsn, autocommit=True, application_name="test-writer") as conn:
            n = 0
            while not self.stop.is_set():
                n += 1
                started = time.monotonic()
                try:
                    self.insert(conn, n)
                    self.ok += 1
                except psycopg.Error as exc:
                    self.errors.append(str(exc))
                self.max_latency = max(self.max_latency, time.monotonic() - started)
                time.sleep(0.002)

    def insert(self, conn: psycopg.Connection[Any], n: int) -> None:
        """The n-th write: an event (a subclass writes to another table)."""
        conn.execute(
            "INSERT INTO workflow.workflow_events (id, type, run_id, correlation_id)"
            " VALUES (%s, 'step_started', %s, %s)",
            (f"wevt_w{n:09d}", self.run_id, f"step_w{n}"),
        )


def real_migrator(dsn: str, package: Path, tmp: Path) -> subprocess.CompletedProcess[str]:
    """Run drizzle's own migrator (the package's) over DIR's journal, as its bootstrap does.

    The fixture folders hold only the slot-era files; drizzle reads every journal entry's
    file, so the real beta.29 package's 0000-0017 files are copied next to them.
    """
    node = install_real_package()
    real = node / "node_modules" / "@workflow" / "world-postgres" / "src" / "drizzle" / "migrations"
    folder = tmp / f"migrations-{package.name}"
    shutil.rmtree(folder, ignore_errors=True)
    shutil.copytree(package / "src" / "drizzle" / "migrations", folder)
    for f in real.glob("*.sql"):
        shutil.copy(f, folder / f.name)
    code = (
        "import { drizzle } from 'drizzle-orm/node-postgres';"
        "import { migrate } from 'drizzle-orm/node-postgres/migrator';"
        "import pg from 'pg';"
        "const [url, folder] = process.argv.slice(1);"
        "const pool = new pg.Pool({ connectionString: url });"
        "await migrate(drizzle(pool), { migrationsFolder: folder,"
        " migrationsTable: 'workflow_migrations', migrationsSchema: 'workflow_drizzle' });"
        "await pool.end();"
    )
    return subprocess.run(
        ["node", "--input-type=module", "-e", code, psycopg_to_url(dsn), str(folder)],
        cwd=node,
        capture_output=True,
        text=True,
        timeout=120,
    )
