"""Source worlds with runs in flight, made by a 4.x release's REAL runtime (tests/node/v4 with
the release's pinned core: 4.1.1 with core 4.2.4, 4.3.7 with core 4.8.9), for the upgrade
tests: 3 runs asleep (`nap`, a short sleep), 3 waiting on a hook (`hooked`, explicit tokens)
and 2 mid-step (`nap`: its first step's start, or its completion, held in the database by a
trigger, then the runtime SIGKILLed and the held backends terminated, so the step is logged
`step_created` (and `step_started`) and its job is left locked by the dead worker, as a
crashed worker leaves it).

Only workflows both builds register (tests/node/v4/workflows/corpus.ts and
tests/node/runtime/workflows/corpus.ts: `nap`, `hooked`; beta.29's has no `pair`). Built once
per session and release as a template database; each test clones it.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg

from tests import realworld as rw
from tests.conftest import Server, _create_db, install_real_package, release_setup
from tests.faults import drop_faults, slow_insert, terminate
from tests.judge import KITS, Runtime, build_runtime, run_status, wait_until
from wfctl.migrate.package import load as load_package

MODULE = "corpus"  # tests/node/v4/workflows/corpus.ts (the same source in tests/node/runtime)
SLEEP_S = 20  # the sleepers' sleep: long enough to be asleep at the upgrade, short for a test
SETTLE = 60.0
TERMINAL = {"completed", "failed", "cancelled"}


@dataclass(frozen=True)
class Flight:
    """One run in flight: its label, id, hook token (if any) and the value it must return."""

    label: str
    run_id: str
    value: Any
    token: str | None = None


@dataclass
class SourceWorld:
    release: str
    template: str
    runs: list[Flight]
    dead_workers: list[str]  # the SIGKILLed runtime's graphile workers (hold the mid-step jobs)

    def run(self, label: str) -> Flight:
        return next(f for f in self.runs if f.label == label)


def has_event(dsn: str, run_id: str, event_type: str) -> bool:
    with psycopg.connect(dsn, autocommit=True) as conn:
        row = conn.execute(
            "SELECT 1 FROM workflow.workflow_events WHERE run_id = %s AND type = %s",
            (run_id, event_type),
        ).fetchone()
    return row is not None


def _sleepers(conn: psycopg.Connection[Any]) -> list[int]:
    rows = conn.execute(
        "SELECT pid FROM pg_stat_activity WHERE datname = current_database()"
        " AND wait_event = 'PgSleep' AND pid <> pg_backend_pid()"
    ).fetchall()
    return [int(r[0]) for r in rows]


def build_source(server: Server, release: str, log_dir: Path) -> SourceWorld:
    """The release's own setup, then its runtime driving the runs into flight."""
    db = _create_db(server, prefix="tmpl_inflight_" + re.sub(r"\W", "_", release))
    release_setup(db.dsn, release)
    folder, _ = build_runtime(KITS[release])
    runs: list[Flight] = []
    rt = Runtime(db.dsn, log_dir, name=f"source-{release}", folder=folder).start(timeout=60)
    try:
        for i in range(3):
            run_id = rt.start_run("nap", [i, SLEEP_S], module=MODULE)
            runs.append(Flight(f"asleep{i}", run_id, {"a": i + 1, "b": i + 11}))
            token = f"inflight-{release}-{i}"
            run_id = rt.start_run("hooked", [10 + i, token], module=MODULE)
            runs.append(Flight(f"hook{i}", run_id, {"total": 10 + i + 100}, token))
        for f in runs:
            kind = "hook_created" if f.token else "wait_created"
            wait_until(lambda f=f, k=kind: has_event(db.dsn, f.run_id, k), SETTLE, f.label)
        mid, started = rw.new_run_id(), rw.new_run_id()
        with psycopg.connect(db.dsn, autocommit=True) as conn:
            # `midstep`: the step's start (its row set running) sleeps in the database;
            # `midstep_started`: the step started (step_started logged), its completion (the
            # row set completed, before step_completed) sleeps. The crash below kills both, so
            # nothing of the held writes commits.
            slow_insert(conn, "workflow_steps", mid, None, 600, on="UPDATE", status="running")
            slow_insert(conn, "workflow_steps", started, None, 600, on="UPDATE",
                        status="completed")  # fmt: skip
            rt.start_run("nap", [40, SLEEP_S], mid, module=MODULE)
            rt.start_run("nap", [50, SLEEP_S], started, module=MODULE)
            wait_until(lambda: len(_sleepers(conn)) >= 2, SETTLE, "both steps to be held")
            rt.kill()
            for pid in _sleepers(conn):
                terminate(conn, pid)
            wait_until(lambda: not _sleepers(conn), SETTLE, "the held backends to exit")
            drop_faults(conn)
            dead = [
                str(r[0])
                for r in conn.execute(
                    "SELECT DISTINCT locked_by FROM graphile_worker._private_jobs"
                    " WHERE locked_by IS NOT NULL"
                )
            ]
        runs.append(Flight("midstep", mid, {"a": 41, "b": 51}))
        runs.append(Flight("midstep_started", started, {"a": 51, "b": 61}))
    finally:
        rt.kill()
    assert dead, "the dead workers hold the mid-step jobs"
    assert has_event(db.dsn, started, "step_started")
    assert not has_event(db.dsn, started, "step_completed")
    assert not has_event(db.dsn, mid, "step_started")
    return SourceWorld(release, db.name, runs, dead)


def clone(server: Server, template: str, prefix: str) -> str:
    """A database cloned from the template; returns its DSN."""
    return _create_db(server, template, prefix=prefix).dsn


@contextlib.contextmanager
def serving(dsn: str, log_dir: Path, kit: str, **env: str) -> Iterator[Runtime]:
    """The kit's runtime serving the world until the block ends."""
    folder, _ = build_runtime(KITS[kit])
    rt = Runtime(dsn, log_dir, env=env, name=f"target-{kit}", folder=folder).start(timeout=60)
    try:
        yield rt
    finally:
        rt.stop()


def finish(rt: Runtime, dsn: str, runs: list[Flight], timeout: float = 120.0) -> dict[str, str]:
    """Deliver every hook ({"n": 100}), let the sleeps end; {label: final status}."""
    for f in runs:
        if f.token:
            rt.resume_hook(f.token, {"n": 100})
    wait_until(
        lambda: all(run_status(dsn, f.run_id) in TERMINAL for f in runs), timeout, "every run's end"
    )
    return {f.label: str(run_status(dsn, f.run_id)) for f in runs}


def finish_skipped_migrations(dsn: str) -> list[str]:
    """Apply what the beta.29 package's own migrator skipped on a 4.3.x world (drizzle applies
    only entries newer than the newest recorded row, so 0011-0014 never run there): each
    skipped file of the installed package, its statements in one transaction, recorded as
    drizzle records it. What `wfctl migrate` finishes on the road; done here with the package's
    own SQL so these tests prove the runs, not the road. Returns the tags applied."""
    package = load_package(install_real_package() / "node_modules" / "@workflow" / "world-postgres")
    applied = []
    with psycopg.connect(dsn) as conn:
        recorded = {
            str(r[0]) for r in conn.execute("SELECT hash FROM workflow_drizzle.workflow_migrations")
        }
        for entry in package.entries:
            migration = package.migration(entry)
            if migration.sha256 in recorded:
                continue
            for chunk in migration.chunks():
                conn.execute(chunk)  # type: ignore[call-overload]  # the package's own SQL text
            conn.execute(
                "INSERT INTO workflow_drizzle.workflow_migrations (hash, created_at)"
                " VALUES (%s, %s)",
                (migration.sha256, migration.when),
            )
            applied.append(entry.tag)
        conn.commit()
    return applied
