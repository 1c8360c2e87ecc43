"""Real worker processes (`python -m wfctl worker tests.worker.flows`) on a real world."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psycopg
import pytest

from tests.worker import flows
from wfctl.runtime import executor as ex
from wfctl.runtime.store import Store

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(params=["beta29", "slot"])
def world(request: pytest.FixtureRequest) -> Any:
    name = "wfctl_world" if request.param == "beta29" else "slot_world"
    return request.getfixturevalue(name)


@pytest.fixture
def beta_world(wfctl_world: Any) -> Any:
    return wfctl_world


def prepare(db: Any) -> None:
    with db.connect() as conn:
        conn.execute(flows.EFFECTS_DDL)


@dataclass
class WorkerProc:
    """One `wfctl worker` process; its stderr goes to a file (read with `.log()`)."""

    dsn: str
    log_path: Path
    args: list[str]
    proc: subprocess.Popen[bytes] | None = None
    starts: int = 0
    exits: list[int] = field(default_factory=list)

    def start(self) -> WorkerProc:
        env = {**os.environ, "WFCTL_EFFECTS_DSN": self.dsn, "PYTHONUNBUFFERED": "1"}
        for var in ("WFCTL_DATABASE_URL", "WORKFLOW_POSTGRES_URL", "DATABASE_URL"):
            env.pop(var, None)
        with self.log_path.open("ab") as log:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "wfctl", "--dsn", self.dsn, "-v", "worker", *self.args],
                cwd=ROOT,
                env=env,
                stdout=subprocess.DEVNULL,
                stderr=log,
            )
        self.starts += 1
        return self

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def kill(self) -> None:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGKILL)
        self.exits.append(self.proc.wait(10))

    def term(self, timeout: float = 30) -> int:
        assert self.proc is not None
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        code = self.proc.wait(timeout)
        self.exits.append(code)
        return code

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def worker_id(self, timeout: float = 15) -> str:
        """The id this process registered (`<host>:<pid>:<ulid>`)."""
        deadline = time.monotonic() + timeout
        needle = f":{self.pid}:"
        while time.monotonic() < deadline:
            for line in self.log().splitlines():
                if "serving queue" in line and needle in line:
                    return line.split("wfctl worker: ", 1)[1].split(" ", 1)[0]
            time.sleep(0.05)
        raise AssertionError(f"worker {self.pid} did not start:\n{self.log()}")


def _worker_processes(tmp_path: Path, module: str) -> Iterator[Callable[..., WorkerProc]]:
    """`make(dsn, *args)` starts a `wfctl worker` serving `module`; all killed at teardown."""
    made: list[WorkerProc] = []

    def make(dsn: str, *args: str) -> WorkerProc:
        w = WorkerProc(dsn, tmp_path / f"worker-{len(made)}.log", [module, *args])
        made.append(w)
        return w.start()

    yield make
    for w in made:
        if w.alive():
            assert w.proc is not None
            w.proc.kill()
            w.proc.wait(10)


@pytest.fixture
def workers(tmp_path: Path) -> Iterator[Callable[..., WorkerProc]]:
    """Workers serving tests.worker.flows."""
    yield from _worker_processes(tmp_path, "tests.worker.flows")


@pytest.fixture
def cworkers(tmp_path: Path) -> Iterator[Callable[..., WorkerProc]]:
    """Workers serving tests.worker.clientflows (the client and stranded-run tests)."""
    yield from _worker_processes(tmp_path, "tests.worker.clientflows")


def start(conn: psycopg.Connection[Any], workflow: Any, *args: Any) -> str:
    return ex.create(workflow, list(args), conn=conn, queue="default").run_id


def statuses(conn: psycopg.Connection[Any], run_ids: list[str]) -> dict[str, str]:
    rows = conn.execute(
        "SELECT id, status::text FROM workflow.workflow_runs WHERE id = ANY(%s)", (run_ids,)
    ).fetchall()
    return {str(r[0]): str(r[1]) for r in rows}


def wait_until(check: Callable[[], bool], timeout: float, what: str, step: float = 0.05) -> float:
    began = time.monotonic()
    while time.monotonic() - began < timeout:
        if check():
            return time.monotonic() - began
        time.sleep(step)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}")


def lease_owner(conn: psycopg.Connection[Any], run_id: str) -> str | None:
    row = conn.execute(
        "SELECT lease_owner FROM wfctl.run_queue WHERE run_id = %s", (run_id,)
    ).fetchone()
    return None if row is None or row[0] is None else str(row[0])


def effects(conn: psycopg.Connection[Any], key: str) -> list[tuple[str, int]]:
    rows = conn.execute(
        "SELECT step, pid FROM public.effects WHERE key = %s ORDER BY id", (key,)
    ).fetchall()
    return [(str(r[0]), int(r[1])) for r in rows]


def resume(conn: psycopg.Connection[Any], token: str, payload: bytes) -> bool:
    try:
        Store(conn).resume_hook(token, payload)
    except LookupError:
        return False
    return True


def doctor_clean(run_cli: Any, dsn: str) -> None:
    """No corruption. WF136 (a run nothing drives: liveness, not corruption) is left out:
    these tests stop runs in the middle on purpose (tests/worker/test_stranded.py checks it)."""
    from wfctl.doctor.registry import CHECKS

    codes = ",".join(c.code for c in CHECKS if c.code != "WF136")
    status, out, err = run_cli(
        "--dsn", dsn, "--format", "json", "doctor", "--all", "--min-age", "0s", "--only", codes
    )
    assert status == 0, out + err


def double_terminals(conn: psycopg.Connection[Any]) -> list[Any]:
    """Entities (runs, steps, waits, hooks) with more than one terminal event."""
    return conn.execute(
        """
        SELECT run_id, coalesce(correlation_id, ''), kind, count(*) FROM (
            SELECT run_id, correlation_id,
                   CASE WHEN type::text IN ('run_completed', 'run_failed', 'run_cancelled')
                        THEN 'run'
                        WHEN type::text IN ('step_completed', 'step_failed') THEN 'step'
                        WHEN type::text = 'wait_completed' THEN 'wait'
                        WHEN type::text = 'hook_disposed' THEN 'hook' END AS kind
            FROM workflow.workflow_events
        ) e WHERE kind IS NOT NULL
        GROUP BY 1, 2, 3 HAVING count(*) > 1
        """
    ).fetchall()
