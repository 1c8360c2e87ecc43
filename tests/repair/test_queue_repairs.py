"""WF131, WF132, WF133: queue repairs through graphile-worker's own functions."""

from __future__ import annotations

import base64
import json
import time

from tests import realworld as rw
from tests.checks.test_wf112 import completed_wait_without_event
from tests.repair.conftest import events, outcomes


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
    run_id, wait_id = completed_wait_without_event(world, real_world)
    now = int(time.time())
    world.ok(
        [
            rw.queue(rw.WORKFLOW, {"runId": run_id}, {"idempotencyKey": f"{wait_id}:{now - s}"})
            for s in range(3)
        ]
    )
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
