"""WF131, WF132, WF133: queue repairs through graphile-worker's own functions."""

from __future__ import annotations

import base64
import json
from datetime import timedelta
from typing import Any

from tests import realworld as rw
from tests.checks.test_wf112 import completed_wait_without_event
from tests.checks.test_wf131 import long_sleeper, loop_jobs
from tests.checks.test_wf133 import sleep_raced_with_hook
from tests.repair.conftest import events, outcomes
from wfctl.doctor.base import Finding
from wfctl.repair import runner
from wfctl.world import model
from wfctl.world.writer import EventWriter


def _live_jobs(db, run_id: str) -> list[dict]:
    with db.connect() as conn:
        rows = conn.execute(
            "SELECT j.id, j.key, j.payload, j.max_attempts, t.identifier"
            " FROM graphile_worker._private_jobs j"
            " JOIN graphile_worker._private_tasks t ON t.id = j.task_id"
            " WHERE j.attempts < j.max_attempts ORDER BY j.id"
        ).fetchall()
    out = []
    for job_id, key, payload, max_attempts, task in rows:
        body = json.loads(base64.b64decode(payload["data"]))
        if body.get("runId") == run_id:
            out.append(
                {
                    "id": job_id,
                    "key": key,
                    "payload": payload,
                    "body": body,
                    "max_attempts": max_attempts,
                    "task": task,
                }
            )
    return out


def test_wf133_enqueues_one_wake_up_in_the_package_format(world, real_world, apply) -> None:
    run_id = world.new_run()
    status, report = apply(real_world, "--only", "WF133")
    assert status == 0 and outcomes(report)["WF133"] == ["applied"]
    [job] = _live_jobs(real_world, run_id)
    assert job["task"] == "workflow_flows" and job["max_attempts"] == 3
    assert "\n" not in job["payload"]["data"]  # zod's base64() rejects line breaks
    assert job["payload"]["attempt"] == 1 and job["payload"]["id"] == rw.WORKFLOW
    assert job["key"] == job["payload"]["messageId"] and job["key"].startswith("msg_")
    assert job["body"]["runId"] == run_id
    status, again = apply(real_world, "--only", "WF133")
    assert again["items"] == []


def test_wf131_after_wf112_collapses_the_chains_to_one_wake_up(world, real_world, apply) -> None:
    run_id, wait_id = completed_wait_without_event(world, real_world, timedelta(minutes=2))
    loop_jobs(world, run_id, wait_id, 3)
    status, report = apply(real_world, "--only", "WF131")
    assert status == 2 and "repair WF112 first" in report["items"][0]["reason"]
    status, report = apply(real_world, "--only", "WF112,WF131")
    assert status == 0, report
    assert outcomes(report) == {"WF112": ["applied"], "WF131": ["applied"]}
    jobs = _live_jobs(real_world, run_id)
    assert len(jobs) == 1 and jobs[0]["key"].startswith("msg_")  # one fresh wake-up
    assert [e[1] for e in events(real_world, run_id, wait_id)].count("wait_completed") == 1
    with real_world.connect() as conn:
        failed = conn.execute(
            "SELECT count(*) FROM graphile_worker._private_jobs WHERE attempts = max_attempts"
            " AND last_error LIKE 'wfctl: superseded%%'"
        ).fetchone()[0]
    assert failed == 3


def test_wf132_keeps_one_key_less_job(world, real_world, apply, doctor_json) -> None:
    run_id = world.new_run()
    world.ok([rw.queue(rw.WORKFLOW, {"runId": run_id}) for _ in range(3)])
    first = _live_jobs(real_world, run_id)[0]["id"]
    status, report = apply(real_world, "--only", "WF132")
    assert status == 0 and outcomes(report)["WF132"] == ["applied"]
    assert [j["id"] for j in _live_jobs(real_world, run_id)] == [first]
    # the jobs wfctl failed on purpose are not "exhausted jobs" (WF134)
    assert doctor_json(real_world, "--run", run_id)["summary"]["findings"] == 0


def queue_and_log(db) -> list[tuple[Any, ...]]:
    """Every job (all columns a repair could change), every event, every audit row."""
    with db.connect() as conn:
        jobs = conn.execute(
            "SELECT id, key, attempts, max_attempts, last_error, run_at, locked_at, revision"
            " FROM graphile_worker._private_jobs ORDER BY id"
        ).fetchall()
        log = conn.execute("SELECT id, type FROM workflow.workflow_events ORDER BY id").fetchall()
        audit = conn.execute("SELECT id FROM wfctl.repair_log").fetchall()
    return [*jobs, *log, *audit]


def test_healthy_long_sleeps_are_never_written_to(world, real_world, apply, repair) -> None:
    """The shape seen on real worlds: two sleepers, two live hop chains each, attempt 1.
    Doctor is clean, and neither a dry run nor `repair --apply --all` writes anything."""
    long_sleeper(world)
    long_sleeper(world)
    before = queue_and_log(real_world)
    status, report = repair(real_world, *("--min-age", "0s", "--force-min-age"), "--all")
    assert status == 0 and report["items"] == [], report
    status, report = apply(real_world, "--all")
    assert status == 0 and report["items"] == [], report
    assert queue_and_log(real_world) == before


def test_wf131_repair_refuses_a_healthy_chain_under_lock(world, real_world) -> None:
    """Even handed a WF131 finding (a stale report, a race), the repair re-proves under the
    wait's row lock that the chain makes no progress, and refuses a healthy one."""
    run_id, wait_id = long_sleeper(world)
    before = queue_and_log(real_world)
    finding = Finding("WF131", run_id, wait_id, None, False, "stale report")
    options = runner.RepairOptions(min_age=timedelta(0))
    with real_world.connect() as conn:
        world_model = model.inspect(conn, with_drift=False)
        writer = EventWriter(slots=world_model.has_event_slots)
        [item] = runner._apply_run(
            conn, world_model, writer, options, run_id, [finding], "test", runner.LockedJobs()
        )
    assert item.outcome == "refused" and item.reason.startswith("healthy:"), item
    assert queue_and_log(real_world) == before


def test_wf133_wakes_a_hooked_run_whose_wait_fell_due(world, real_world, apply) -> None:
    """vw#3743: a sleep raced against a hook, its continuation lost: one wake-up, once."""
    run_id, _ = sleep_raced_with_hook(world, -timedelta(minutes=2))
    status, report = apply(real_world, "--only", "WF133")
    assert status == 0 and outcomes(report) == {"WF133": ["applied"]}, report
    [job] = _live_jobs(real_world, run_id)
    assert job["key"].startswith("msg_") and job["body"]["runId"] == run_id
    status, again = apply(real_world, "--only", "WF133")
    assert status == 0 and again["items"] == []


def test_wf133_refuses_when_a_job_appeared_meanwhile(world, real_world) -> None:
    """Found stranded, then a worker restart re-enqueued it before the repair ran: refused,
    nothing written."""
    run_id, _ = sleep_raced_with_hook(world, -timedelta(minutes=2))
    finding = Finding("WF133", run_id, run_id, None, False, "stranded")
    world.ok([rw.queue(rw.WORKFLOW, {"runId": run_id})])  # meanwhile
    before = queue_and_log(real_world)
    with real_world.connect() as conn:
        world_model = model.inspect(conn, with_drift=False)
        writer = EventWriter(slots=world_model.has_event_slots)
        [item] = runner._apply_run(
            conn, world_model, writer, runner.RepairOptions(min_age=timedelta(0)), run_id,
            [finding], "test", runner.LockedJobs(),
        )  # fmt: skip
    assert item.outcome == "refused" and "live job" in item.reason, item
    assert queue_and_log(real_world) == before
