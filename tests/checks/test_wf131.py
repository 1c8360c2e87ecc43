"""WF131: runaway wait-continuation chains; jobs enqueued by the real package's `world.queue`."""

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


def test_wf131_not_applicable_without_graphile(wfctl_world, doctor) -> None:
    status, checks, _ = doctor(wfctl_world, "--only", "WF131")
    assert {c["status"] for c in checks.values()} == {"not_applicable"}
    assert status == 0
