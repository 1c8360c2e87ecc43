"""Fixtures for the per-code doctor tests: a real-package world, the driver, doctor as JSON.

Each family is produced the way production produces it: rows written by the real package's
`events.create` (tests/realworld.py) with one statement failed by a trigger (tests/faults.py).
Where no write path on the registry can produce a shape (the slot era), rows are written by
hand, and the test says so.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests import realworld as rw
from tests.conftest import Db
from tests.faults import drop_faults


@pytest.fixture
def world(real_world: Db) -> rw.RealWorld:
    yield rw.RealWorld(real_world.dsn)
    with real_world.connect() as conn:
        drop_faults(conn)


@pytest.fixture
def doctor(run_cli: Any) -> Any:
    """doctor(db, *args) -> (exit status, {code: check dict}, full report)."""

    def run(db: Db, *args: str) -> tuple[int, dict[str, dict[str, Any]], dict[str, Any]]:
        status, out, err = run_cli("--dsn", db.dsn, "--format", "json", "doctor", *args)
        assert out, err
        report = json.loads(out)
        return status, {c["code"]: c for c in report["checks"]}, report

    return run


def live_jobs(world: rw.RealWorld, runs: dict[str, str], waits: dict[str, str]) -> None:
    """Give live runs the wake-up jobs a real deployment has: a key-less {runId} job, or a
    wait continuation keyed by the wait id. Runs waiting on a hook have none (by design)."""
    ops = []
    for run_id in runs.values():
        if run_id in waits:
            ops.append(
                rw.queue(
                    rw.WORKFLOW,
                    {"runId": run_id},
                    {"idempotencyKey": waits[run_id], "delaySeconds": 3600},
                )
            )
        else:
            ops.append(rw.queue(rw.WORKFLOW, {"runId": run_id}))
    world.ok(ops)


def clean_controls(
    db: Db, live: dict[str, str] | None = None, *, world: rw.RealWorld | None = None
) -> dict[str, str]:
    """The package's healthy controls (`RealWorld.clean_world`) with the queue jobs a
    deployment gives live runs, also to the `live` runs made elsewhere; {label: run_id}.
    `world`: another release's package (tests/releases; on 4.1.1 the first queue call also
    installs graphile_worker); default beta.29's."""
    world = world or rw.RealWorld(db.dsn)
    runs = world.clean_world()
    with db.connect() as conn:
        waits = dict(
            conn.execute(
                "SELECT run_id, substring(wait_id FROM length(run_id) + 2) FROM"
                " workflow.workflow_waits WHERE status = 'waiting'"
            ).fetchall()
        )
    alive = {k: v for k, v in runs.items() if k != "completed" and "hook" not in k}
    live_jobs(world, {**alive, **(live or {})}, waits)
    return runs


def assert_fires(doctor: Any, db: Db, code: str, entity: str | None, *args: str) -> dict[str, Any]:
    """Past --min-age the finding is actionable: the check's severity, count, sample, exit."""
    status, checks, _ = doctor(db, "--min-age", "0s", "--only", code, *args)
    check = checks[code]
    assert check["count"] >= 1, check
    assert check["status"] == check["severity"]
    if entity is not None:
        assert entity in {s["entity_id"] for s in check["samples"]}, check["samples"]
    expected = {"critical": 2, "warning": 1, "info": 0}[check["severity"]]
    assert status == expected
    return check


def assert_in_flight(doctor: Any, db: Db, code: str, *args: str) -> None:
    """Younger than the default --min-age (10 minutes), the same state is only in flight."""
    status, checks, _ = doctor(db, "--only", code, *args)
    assert checks[code]["count"] == 0 and checks[code]["in_flight"] >= 1, checks[code]
    assert checks[code]["status"] == "in_flight"
    assert status == 0


def hand_written_log(db: Db, run_id: str, log: list[tuple[str, str | None]]) -> None:
    """A running run and its events (type, correlation id) in this order, by SQL: for shapes
    no package path writes on demand (each caller says why)."""
    from wfctl.world import ids

    with db.connect() as conn:
        conn.execute(
            "INSERT INTO workflow.workflow_runs (id, deployment_id, status, name, spec_version)"
            " VALUES (%s, 'postgres', 'running', %s, '5')",
            (run_id, rw.WORKFLOW),
        )
        clock = ids.MonotonicUlid()
        for kind, corr in log:
            conn.execute(
                "INSERT INTO workflow.workflow_events (id, type, correlation_id, run_id)"
                " VALUES (%s, %s, %s, %s)",
                ("wevt_" + clock.next(), kind, corr, run_id),
            )
