"""WF135: dead workers' locks, shown by doctor, released by age with --unlock-older-than.

Locks are set the way graphile-worker 0.16.6 records them (locked_by, locked_at on the job
row); the real runtime's live and killed workers are in tests/repair/test_real_locks.py.
"""

from __future__ import annotations

from typing import Any

from tests import realworld as rw
from tests.checks.test_wf101 import orphan_step
from tests.checks.test_wf135 import lock, two_locked_runs
from tests.faults import ROW_LOCK, held
from tests.repair.conftest import events, outcomes


def locks(db) -> list[tuple[Any, ...]]:
    with db.connect() as conn:
        return conn.execute(
            "SELECT id, locked_by, locked_at, run_at FROM graphile_worker._private_jobs ORDER BY id"
        ).fetchall()


def audit(db) -> list[tuple[Any, ...]]:
    with db.connect() as conn:
        return conn.execute(
            "SELECT code, run_id, entity_id, details ->> 'locked_by' FROM wfctl.repair_log"
            " ORDER BY id"
        ).fetchall()


def test_unlock_older_than_shows_then_releases_only_old_locks(
    world, real_world, repair, apply
) -> None:
    dead_run, _, dead_job, live_job = two_locked_runs(world, real_world)
    before = locks(real_world)

    # blocked: the repair names the holder and the way out
    status, report = apply(real_world, "--only", "WF101")
    assert status == 2 and "--unlock-older-than AGE" in report["items"][0]["reason"]
    assert report["unlock_older_than"] == "40m"  # one age for every lock listed

    # the dry run shows exactly the lock it would release, and writes nothing
    status, report = repair(real_world, "--unlock-older-than", "30m", "--only", "WF101")
    planned = [i for i in report["items"] if i["code"] == "WF135"]
    assert [(i["entity_id"], i["outcome"]) for i in planned] == [(str(dead_job), "planned")]
    assert "held by worker-dead for 40m" in planned[0]["actions"][0]
    assert locks(real_world) == before and audit(real_world) == []

    status, report = apply(real_world, "--unlock-older-than", "30m", "--only", "WF101")
    assert status == 0, report
    assert outcomes(report) == {"WF135": ["applied"], "WF101": ["applied"]}
    after = {row[0]: row for row in locks(real_world)}
    assert after[dead_job][1:3] == (None, None)  # released
    assert after[live_job] == next(r for r in before if r[0] == live_job)  # untouched
    assert audit(real_world)[0] == ("WF135", dead_run, str(dead_job), "worker-dead")
    assert [e[1] for e in events(real_world, dead_run) if e[1] == "step_created"]
    # nothing left to release: a second apply writes nothing
    status, report = apply(real_world, "--unlock-older-than", "30m", "--only", "WF101")
    assert [i for i in report["items"] if i["code"] == "WF135"] == []


def test_one_suggested_age_covers_every_lock_listed(world, real_world, apply) -> None:
    """Locks held 10 and 9 minutes: the report suggests 9m, and that one value releases both
    (an age per lock, copied from the first, left the younger run unrepaired)."""
    runs = [orphan_step(world, real_world)[0] for _ in range(2)]
    world.ok([rw.queue(rw.WORKFLOW, {"runId": run}) for run in runs])
    for run, minutes in zip(runs, (10, 9), strict=True):
        lock(real_world, run, f"worker-dead-{minutes}", minutes)
    status, report = apply(real_world, "--only", "WF101")
    assert status == 2 and outcomes(report) == {"WF101": ["refused", "refused"]}
    assert report["unlock_older_than"] == "9m"
    status, report = apply(real_world, "--only", "WF101", "--unlock-older-than", "9m")
    assert status == 0, report
    assert outcomes(report) == {"WF135": ["applied", "applied"], "WF101": ["applied", "applied"]}


def test_unlock_older_than_below_the_floor_is_a_usage_error(
    world, real_world, run_cli, repair
) -> None:
    _, _, dead_job, live_job = two_locked_runs(world, real_world)
    before = locks(real_world)
    status, out, err = run_cli(
        "--dsn", real_world.dsn, "repair", "--apply", "--yes", "--reason", "t",
        "--unlock-older-than", "1m",
    )  # fmt: skip
    assert status == 64 and "5 minute floor" in err and out == ""
    assert locks(real_world) == before and audit(real_world) == []
    # every worker known stopped (a test harness, a maintenance window): --force-min-age
    _, report = repair(real_world, "--unlock-older-than", "0s", "--force-min-age")
    planned = {i["entity_id"] for i in report["items"] if i["code"] == "WF135"}
    assert planned == {str(dead_job), str(live_job)}
    assert locks(real_world) == before


def test_unlock_older_than_with_run_releases_only_that_runs_locks(
    world, real_world, repair, apply
) -> None:
    _, _, first_job, _ = two_locked_runs(world, real_world)
    other_run, _, other_job, _ = two_locked_runs(world, real_world)
    _, report = apply(real_world, "--unlock-older-than", "30m", "--run", other_run)
    released = [(i["entity_id"], i["outcome"]) for i in report["items"] if i["code"] == "WF135"]
    assert released == [(str(other_job), "applied")], report
    by_id = {row[0]: row for row in locks(real_world)}
    assert by_id[first_job][1] == "worker-dead"  # another run's lock: untouched
    assert [row[1] for row in audit(real_world) if row[0] == "WF135"] == [other_run]


def test_lock_released_with_the_heal_or_alone_when_the_heal_is_refused(
    world, real_world, apply
) -> None:
    """A stale lock of a run with a finding goes in that run's repair transaction (one xid
    with the heal); when the heal is refused (another session holds the run row), the lock
    is still released, on its own, as asked."""
    dead_run, _, dead_job, _ = two_locked_runs(world, real_world)
    with held(real_world.dsn, ROW_LOCK, (dead_run,)):
        status, report = apply(
            real_world, "--lock-timeout", "200", "--unlock-older-than", "30m", "--only", "WF101"
        )
    assert status == 2 and outcomes(report) == {"WF135": ["applied"], "WF101": ["refused"]}
    assert {row[0]: row for row in locks(real_world)}[dead_job][1:3] == (None, None)
    assert [row[0] for row in audit(real_world)] == ["WF135"]

    other_run, *_ = two_locked_runs(world, real_world)
    status, report = apply(real_world, "--unlock-older-than", "30m", "--run", other_run)
    assert status == 0 and outcomes(report) == {"WF135": ["applied"], "WF101": ["applied"]}
    with real_world.connect() as conn:
        xids = conn.execute(
            "SELECT DISTINCT xmin::text FROM wfctl.repair_log WHERE run_id = %s", (other_run,)
        ).fetchall()
    assert len(xids) == 1, xids
