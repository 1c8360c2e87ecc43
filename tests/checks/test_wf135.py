"""WF135: a queue job held by a silent worker: doctor names the holder and since when.

Locks are set the way graphile-worker 0.16.6 records a claim (locked_by, locked_at, attempts
on the job row); a real runtime's live and killed workers are in tests/repair/test_real_locks.py.
"""

from __future__ import annotations

from tests import realworld as rw
from tests.checks.conftest import assert_fires
from tests.checks.test_wf101 import orphan_step


def lock(db, run_id: str, worker: str, minutes_ago: int) -> int:
    """Lock the run's job as a worker that claimed it `minutes_ago` (graphile's columns)."""
    with db.connect() as conn:
        row = conn.execute(
            "UPDATE graphile_worker._private_jobs SET locked_by = %s,"
            " locked_at = now() - make_interval(mins => %s), attempts = attempts + 1"
            " WHERE convert_from(decode(payload ->> 'data', 'base64'), 'UTF8')::jsonb"
            " ->> 'runId' = %s RETURNING id",
            (worker, minutes_ago, run_id),
        ).fetchone()
    assert row is not None
    return int(row[0])


def two_locked_runs(world, db) -> tuple[str, str, int, int]:
    """An orphan step (WF101) whose job a dead worker locked 40 min ago, and a healthy run
    whose job a worker took 2 min ago."""
    dead_run, _ = orphan_step(world, db)
    live_run = world.new_run()
    world.ok(
        [rw.queue(rw.WORKFLOW, {"runId": dead_run}), rw.queue(rw.WORKFLOW, {"runId": live_run})]
    )
    return (
        dead_run,
        live_run,
        lock(db, dead_run, "worker-dead", 40),
        lock(db, live_run, "worker-live", 2),
    )


def test_doctor_shows_who_holds_the_lock_and_since_when(world, real_world, doctor) -> None:
    dead_run, _, dead_job, _ = two_locked_runs(world, real_world)
    check = assert_fires(doctor, real_world, "WF135", str(dead_job))
    [sample] = [s for s in check["samples"] if s["entity_id"] == str(dead_job)]
    assert sample["run_id"] == dead_run
    assert "locked by worker-dead since" in sample["detail"] and "(40m" in sample["detail"]
    assert "other client session(s)" in sample["detail"]
    # the doctor's own helper sessions (--jobs) are not counted as workers
    for jobs in ("1", "3"):
        check = assert_fires(doctor, real_world, "WF135", str(dead_job), "--all", "--jobs", jobs)
        [again] = [s for s in check["samples"] if s["entity_id"] == str(dead_job)]
        sessions = again["detail"].split("; ")[-1]
        assert sessions == sample["detail"].split("; ")[-1], (jobs, sessions)
    # at the default --min-age (10 min) neither is a finding: both runs wrote events within
    # the last 10 minutes, the sign of a live delivery (the 2-minute lock is not old anyway)
    status, checks, _ = doctor(real_world, "--only", "WF135")
    assert checks["WF135"]["count"] == 0 and status == 0


def test_wf135_not_applicable_without_graphile(wfctl_world, doctor) -> None:
    status, checks, _ = doctor(wfctl_world, "--only", "WF135")
    assert {c["status"] for c in checks.values()} == {"not_applicable"}
    assert status == 0
