"""Queue families (WF131-WF134), with jobs enqueued by the real package's `world.queue`."""

from __future__ import annotations

import time

from tests import realworld as rw
from tests.checks.conftest import assert_fires, assert_in_flight


def test_wf131_several_live_continuations_for_one_wait(world, real_world, doctor) -> None:
    run_id, wait_id = world.new_run(), rw.new_wait_id()
    now = int(time.time())
    # beta.39 continuation keys for an overdue wait: wait_<ULID>:<unix second>; lost
    # responses leave one chain per second.
    world.ok(
        [
            rw.queue(rw.WORKFLOW, {"runId": run_id}, {"idempotencyKey": f"{wait_id}:{now - s}"})
            for s in range(3)
        ]
    )
    check = assert_fires(doctor, real_world, "WF131", wait_id)
    assert "3 live wake-up job(s)" in check["samples"][0]["detail"]
    assert_in_flight(doctor, real_world, "WF131")


def test_wf131_attempt_threshold(world, real_world, doctor) -> None:
    run_id, wait_id = world.new_run(), rw.new_wait_id()
    world.ok([rw.queue(rw.WORKFLOW, {"runId": run_id}, {"idempotencyKey": wait_id})])
    _, checks, _ = doctor(real_world, "--min-age", "0s", "--only", "WF131")
    assert checks["WF131"]["count"] == 0  # one chain at attempt 1 is normal
    assert_fires(doctor, real_world, "WF131", wait_id, "--attempt-threshold", "0")


def test_wf132_key_less_pile_up(world, real_world, doctor) -> None:
    run_id = world.new_run()
    world.ok([rw.queue(rw.WORKFLOW, {"runId": run_id}) for _ in range(3)])  # three restarts
    check = assert_fires(doctor, real_world, "WF132", run_id)
    assert "3 pending key-less" in check["samples"][0]["detail"]
    assert_in_flight(doctor, real_world, "WF132")


def test_wf133_stranded_run(world, real_world, doctor) -> None:
    stranded = world.new_run()
    has_job = world.new_run()
    world.ok([rw.queue(rw.WORKFLOW, {"runId": has_job})])
    _, hook_ops = rw.hook_waiting_run_ops()
    world.ok(hook_ops)
    check = assert_fires(doctor, real_world, "WF133", stranded)
    assert {s["run_id"] for s in check["samples"]} == {stranded}
    assert_in_flight(doctor, real_world, "WF133")


def test_wf134_exhausted_job_for_a_live_run(world, real_world, doctor) -> None:
    run_id = world.new_run()
    world.ok([rw.queue(rw.WORKFLOW, {"runId": run_id})])
    # graphile sets attempts = max_attempts after the last failed delivery; the harness never
    # starts a runner (no flow route here), so that last step is done by hand.
    with real_world.connect() as conn:
        conn.execute(
            "UPDATE graphile_worker._private_jobs SET attempts = max_attempts,"
            " last_error = 'fetch failed'"
        )
    check = assert_fires(doctor, real_world, "WF134", None)
    assert (
        check["samples"][0]["run_id"] == run_id and "fetch failed" in check["samples"][0]["detail"]
    )
    # an exhausted job wakes nothing: the run is stranded too
    assert_fires(doctor, real_world, "WF133", run_id)


def test_queue_checks_not_applicable_without_graphile(wfctl_world, doctor) -> None:
    status, checks, _ = doctor(wfctl_world, "--only", "WF131,WF132,WF133,WF134")
    assert {c["status"] for c in checks.values()} == {"not_applicable"}
    assert status == 0
