"""The guards: a live writer, a concurrent repair, moved state, locks, locked jobs."""

from __future__ import annotations

import subprocess
import sys
import time

from tests import realworld as rw
from tests.checks.test_wf101 import orphan_step
from tests.checks.test_wf103 import orphan_hook
from tests.checks.test_wf112 import completed_wait_without_event
from tests.faults import ROW_LOCK, held, slow_insert, wait_for_sleeper
from tests.repair.conftest import FORCE, events, outcomes
from wfctl.connection.db import Target
from wfctl.connection.dsn import ResolvedDsn
from wfctl.repair import runner
from wfctl.world import model


def test_a_slow_original_insert_is_never_duplicated(world, real_world, apply, repair) -> None:
    """The wait row is completed; its wait_completed insert is still sleeping in a trigger.
    The age gate is what protects: within --min-age the repair skips; once the original lands
    there is exactly one wait_completed."""
    run_id, wait_id = world.new_run(), rw.new_wait_id()
    world.ok([rw.wait_created(run_id, wait_id, rw.utcnow())])
    with (
        real_world.connect() as conn,
        slow_insert(conn, "workflow_events", run_id, "wait_completed", seconds=3),
    ):
        writer = world.spawn([rw.wait_completed(run_id, wait_id)])
        wait_for_sleeper(conn)
        status, report = repair(
            real_world, "--apply", "--yes", "--reason", "race", "--min-age", "1m"
        )
        assert status == 0
        assert [i["outcome"] for i in report["items"] if i["code"] == "WF112"] == ["skipped"]
        assert world.collect(writer)[0]["ok"]
    kinds = [e[1] for e in events(real_world, run_id, wait_id)]
    assert kinds.count("wait_completed") == 1


def test_two_concurrent_applies_write_one_event(world, real_world) -> None:
    run_id, wait_id = completed_wait_without_event(world, real_world)
    cmd = [
        sys.executable,
        "-m",
        "wfctl",
        "--dsn",
        real_world.dsn,
        "repair",
        "--apply",
        "--yes",
        "--reason",
        "twice",
        *FORCE,
        "--only",
        "WF112",
    ]
    procs = [
        subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for _ in range(2)
    ]
    results = [p.communicate(timeout=60) for p in procs]
    codes = sorted(p.returncode for p in procs)
    assert codes[0] == 0 and codes[1] in (0, 2), results
    kinds = [e[1] for e in events(real_world, run_id, wait_id)]
    assert kinds.count("wait_completed") == 1
    with real_world.connect() as conn:
        audits = conn.execute(
            "SELECT count(*) FROM wfctl.repair_log WHERE run_id = %s", (run_id,)
        ).fetchone()[0]
    assert audits == 1


def _stale_apply(real_world, findings):
    target = Target(ResolvedDsn(real_world.dsn, "test"))
    from wfctl.connection.db import connect
    from wfctl.world.writer import EventWriter

    with connect(target, autocommit=True) as conn:
        world = model.inspect(conn, with_drift=False)
        opts = runner.RepairOptions(min_age=runner.timedelta(0))
        return runner._apply_run(
            conn,
            world,
            EventWriter(slots=False),
            opts,
            findings[0].run_id,
            findings,
            "stale",
            runner.LockedJobs(),
        )


def _findings(real_world, code):
    target = Target(ResolvedDsn(real_world.dsn, "test"))
    from wfctl.connection.db import connect

    with connect(target, autocommit=True) as conn:
        world = model.inspect(conn, with_drift=False)
        opts = runner.RepairOptions(min_age=runner.timedelta(0), only=(code,))
        return runner.detect(conn, world, opts)


def test_state_moved_between_detection_and_lock_is_refused(world, real_world) -> None:
    run_id, hook_id = orphan_hook(world, real_world)
    stale = _findings(real_world, "WF103")
    world.ok([rw.hook_created(run_id, hook_id, f"tok-{hook_id[-8:]}")])  # the package heals it
    [item] = _stale_apply(real_world, stale)
    assert item.outcome == "refused" and "state moved" in item.reason
    assert [e[1] for e in events(real_world, run_id, hook_id)] == ["hook_created"]


def test_lock_timeout_is_refused_and_writes_nothing(world, real_world, run_cli) -> None:
    run_id, step_id = orphan_step(world, real_world)
    with held(real_world.dsn, ROW_LOCK, (run_id,)):
        started = time.monotonic()
        status, out, _ = run_cli(
            "--dsn",
            real_world.dsn,
            "--lock-timeout",
            "200",
            "repair",
            "--apply",
            "--yes",
            "--reason",
            "t",
            *FORCE,
            "--only",
            "WF101",
        )
        assert time.monotonic() - started < 20
    assert status == 2 and "lock timeout" in out
    assert events(real_world, run_id, step_id) == []


def test_a_locked_queue_job_means_a_live_writer(world, real_world, apply) -> None:
    run_id, step_id = orphan_step(world, real_world)
    world.ok([rw.queue(rw.WORKFLOW, {"runId": run_id})])
    with real_world.connect() as conn:  # a worker holds the run's job right now
        conn.execute(
            "UPDATE graphile_worker._private_jobs SET locked_at = now(), locked_by = 'worker-7'"
        )
    status, report = apply(real_world, "--only", "WF101")
    assert status == 2
    assert outcomes(report)["WF101"] == ["refused"]
    assert "locked by worker-7" in report["items"][0]["reason"]
    assert events(real_world, run_id, step_id) == []


def test_unlock_dead_worker_releases_its_job_then_repairs(world, real_world, apply) -> None:
    run_id, step_id = orphan_step(world, real_world)
    world.ok([rw.queue(rw.WORKFLOW, {"runId": run_id})])
    with real_world.connect() as conn:
        conn.execute(
            "UPDATE graphile_worker._private_jobs SET locked_at = now() - interval '5 minutes',"
            " locked_by = 'worker-dead'"
        )
    status, report = apply(real_world, "--only", "WF101")
    assert status == 2
    reason = report["items"][0]["reason"]
    assert "locked by worker-dead since" in reason and "(5m)" in reason
    assert "--unlock-older-than AGE" in reason and report["unlock_older_than"] == "5m"
    status, report = apply(real_world, "--only", "WF101", "--unlock-dead-worker", "worker-dead")
    assert status == 0 and outcomes(report) == {"WF135": ["applied"], "WF101": ["applied"]}
    assert [e[1] for e in events(real_world, run_id, step_id)] == ["step_created"]
