"""`wfctl runs cancel --where` and `wfctl runs wake` on a world written by the real package,
read back by the package afterwards."""

from __future__ import annotations

import json

import pytest

from tests import realworld as rw
from tests.conftest import Db, node_available
from tests.ops.support import age_run, jobs_of, rows_of, status_of
from tests.runtime.test_realread import read_back

pytestmark = pytest.mark.skipif(not node_available(), reason="node/npm not found")

CHECKOUT = "workflow//./src/checkout//main"


def _runs(run_cli, db: Db, *args: str) -> tuple[int, dict, str]:
    status, out, err = run_cli("--dsn", db.dsn, "--format", "json", "runs", *args)
    return status, (json.loads(out) if out.strip() else {}), err


def _spend(db: Db, run_id: str, error: str) -> None:
    """The state graphile leaves after the last failed attempt (reference §1.7)."""
    with db.connect() as conn:
        conn.execute(
            "UPDATE graphile_worker._private_jobs j SET attempts = max_attempts, last_error = %s"
            " WHERE convert_from(decode(j.payload->>'data','base64'),'UTF8')::jsonb->>'runId' = %s",
            (error, run_id),
        )


def test_bulk_cancel_by_filter(real_world: Db, run_cli) -> None:
    real = rw.RealWorld(real_world.dsn)
    stuck, ops = rw.new_run_ops(CHECKOUT)
    sleeping, sleep_ops = rw.sleeping_run_ops()
    fresh, fresh_ops = rw.new_run_ops(CHECKOUT)
    hooked, hook_ops = rw.hook_waiting_run_ops()
    done, done_ops = rw.completed_run_ops(1)
    real.ok(
        ops + sleep_ops + fresh_ops + hook_ops + done_ops
        + [rw.queue(rw.WORKFLOW, {"runId": sleeping})]
    )  # fmt: skip
    for run_id in (stuck, sleeping, done):
        age_run(real_world, run_id, created_days=1)
    assert run_cli("--dsn", real_world.dsn, "bootstrap")[0] == 0

    # guard rails: an empty filter, a terminal status, a bad term, RUN_ID with --where
    for args, needle in (
        (("cancel", "--where", ""), "KEY=VALUE"),
        (("cancel", "--where", "status=completed"), "only live runs"),
        (("cancel", "--where", "colour=red"), "unknown key"),
        (("cancel", "--where", "error=x"), "unknown key"),  # wake only
        (("cancel", stuck, "--where", "status=running"), "not both"),
        (("cancel",), "RUN_ID"),
        (("cancel", "--where", "status=running", "--apply"), "--reason"),
    ):
        status, _, err = _runs(run_cli, real_world, *args)
        assert status == 64 and needle in err, (args, err)
    status, _, err = _runs(run_cli, real_world, "wake")
    assert status == 64 and "empty filter" in err

    # dry run: count and sample, nothing written
    status, plan, _ = _runs(
        run_cli, real_world, "cancel", "--where", "workflow=*checkout*", "--where", "older-than=2h"
    )
    assert status == 0 and plan["applied"] is False
    assert plan["matched"] == 1 and plan["sample"][0]["run_id"] == stuck
    status, plan, _ = _runs(run_cli, real_world, "cancel", "--where", "older-than=2h")
    assert plan["matched"] == 2  # the completed run is never selected
    assert status_of(real_world, stuck) == "running"

    status, out, err = _runs(
        run_cli, real_world, "cancel", "--where", "older-than=2h", "--apply",
        "--reason", "INC-1 stuck", "--yes", "--batch", "1",
    )  # fmt: skip
    assert status == 0, err
    assert out["counts"] == {"cancelled": 2}
    assert [status_of(real_world, r) for r in (stuck, sleeping, fresh, hooked, done)] == [
        "cancelled", "cancelled", "running", "running", "completed",
    ]  # fmt: skip
    assert rows_of(real_world, sleeping)["workflow_waits"] == 0
    assert jobs_of(real_world, sleeping) == 0  # its live job went with it
    log = real_world.scalar(
        "SELECT json_agg(json_build_object('run', run_id, 'events', event_ids, 'reason', reason))"
        " FROM wfctl.repair_log WHERE code = 'cancel'"
    )
    assert sorted(e["run"] for e in log) == sorted([stuck, sleeping])
    assert all(e["reason"] == "INC-1 stuck" and len(e["events"]) == 1 for e in log)

    # the real package reads the cancelled runs: status and a last run_cancelled event
    got = read_back(real_world.dsn, [stuck, sleeping, fresh])
    assert all(r["ok"] for r in got.values()), got
    for run_id in (stuck, sleeping):
        assert got[run_id]["run"]["status"] == "cancelled"
        assert got[run_id]["events"][-1]["eventType"] == "run_cancelled"
        assert got[run_id]["events"][-1]["eventData"]["cancelReason"] == "INC-1 stuck"

    # again: nothing matches any more
    status, out, _ = _runs(
        run_cli, real_world, "cancel", "--where", "older-than=2h", "--apply", "--reason", "r",
        "--yes",
    )  # fmt: skip
    assert status == 0 and out["matched"] == 0


def test_bulk_wake_redrives_dead_letters(real_world: Db, run_cli) -> None:
    real = rw.RealWorld(real_world.dsn)
    dead, ops = rw.new_run_ops()
    other_dead, other_ops = rw.new_run_ops()
    mixed, mixed_ops = rw.new_run_ops()  # one spent job and one with attempts left
    finished, done_ops = rw.completed_run_ops(1)
    real.ok(
        ops + other_ops + mixed_ops + done_ops
        + [rw.queue(rw.WORKFLOW, {"runId": r}) for r in (dead, other_dead, mixed, finished)]
    )  # fmt: skip
    _spend(real_world, dead, "fetch failed: ECONNREFUSED")
    _spend(real_world, other_dead, "HTTP 500")
    _spend(real_world, mixed, "HTTP 500")
    _spend(real_world, finished, "HTTP 500")
    real.ok([rw.queue(rw.WORKFLOW, {"runId": mixed})])
    assert run_cli("--dsn", real_world.dsn, "bootstrap")[0] == 0

    status, plan, _ = _runs(run_cli, real_world, "wake", "--where", "status=running")
    assert status == 0 and plan["matched"] == 2
    assert {s["run_id"] for s in plan["sample"]} == {dead, other_dead}
    status, plan, _ = _runs(run_cli, real_world, "wake", "--where", "error=ECONNREFUSED")
    assert [s["run_id"] for s in plan["sample"]] == [dead]
    assert "ECONNREFUSED" in plan["sample"][0]["detail"]

    status, out, err = _runs(
        run_cli, real_world, "wake", "--where", "error=ECONNREFUSED", "--apply",
        "--reason", "API back", "--yes",
    )  # fmt: skip
    assert status == 0 and out["counts"] == {"redriven": 1}, err
    row = real_world.scalar(
        "SELECT json_build_object('attempts', attempts, 'due', run_at <= now(), 'key', key)"
        " FROM graphile_worker._private_jobs j"
        " WHERE convert_from(decode(j.payload->>'data','base64'),'UTF8')::jsonb->>'runId' = %s",
        (dead,),
    )
    assert row["attempts"] == 0 and row["due"] is True
    # doctor no longer sees a dead letter for it; the other one is still reported
    status, report, _ = run_cli(
        "--dsn", real_world.dsn, "--format", "json", "doctor", "--only", "WF134", "--min-age", "0s",
        "--limit", "10",
    )  # fmt: skip
    runs = {f["run_id"] for c in json.loads(report)["checks"] for f in c["samples"]}
    assert dead not in runs and other_dead in runs
    assert real_world.scalar("SELECT count(*) FROM wfctl.repair_log WHERE code = 'wake'") == 1
