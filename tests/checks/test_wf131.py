"""WF131: runaway wait-continuation chains; jobs enqueued by the real package's `world.queue`.

Runaway means no progress: a continuation enqueued after its wait fell due. A healthy long
sleep with several hop chains (the shape seen on real worlds: keys wait_<id>:hop-32 and
wait_<id>:hop-518387 after a restart with another WORKFLOW_WAIT_CONTINUATION_MAX_DELAY_SECONDS)
is not a finding, whatever the job count or the attempt counter.
"""

from __future__ import annotations

import time
from datetime import timedelta

from tests import realworld as rw
from tests.checks.conftest import assert_fires, assert_in_flight
from tests.checks.test_wf112 import completed_wait_without_event


def loop_jobs(world: rw.RealWorld, run_id: str, wait_id: str, n: int) -> None:
    """beta.39's F4 loop: every delivery re-observes the overdue wait and enqueues a 1 s
    continuation keyed wait_<ULID>:<unix second>; lost responses leave one chain per second."""
    now = int(time.time())
    world.ok(
        [
            rw.queue(
                rw.WORKFLOW,
                {"runId": run_id},
                {"idempotencyKey": f"{wait_id}:{now - s}", "delaySeconds": 1},
            )
            for s in range(n)
        ]
    )


def long_sleeper(world: rw.RealWorld) -> tuple[str, str]:
    """A healthy run sleeping for 6 days with two hop chains (hop-32, hop-518387), each at
    attempt 1: the shape seen on real worlds after a restart with another max delay."""
    run_id, ops = rw.sleeping_run_ops(timedelta(days=6))
    world.ok(ops)
    [wait_id] = [
        op["event"]["correlationId"]
        for op in ops
        if op.get("event", {}).get("eventType") == "wait_created"
    ]
    world.ok(
        [
            rw.queue(
                rw.WORKFLOW,
                {"runId": run_id},
                {"idempotencyKey": f"{wait_id}:hop-{hop}", "delaySeconds": delay},
            )
            for hop, delay in ((32, 82_800), (518_387, 1))
        ]
    )
    return run_id, wait_id


def test_wf131_fires_on_continuations_enqueued_after_the_deadline(
    world, real_world, doctor
) -> None:
    run_id, wait_id = completed_wait_without_event(world, real_world, timedelta(minutes=2))
    loop_jobs(world, run_id, wait_id, 3)
    check = assert_fires(doctor, real_world, "WF131", wait_id)
    detail = check["samples"][0]["detail"]
    assert "re-enqueued after its deadline" in detail and "3 live continuation job(s)" in detail
    assert_in_flight(doctor, real_world, "WF131")  # due 2 min ago: younger than --min-age 10m


def test_wf131_a_waiting_wait_re_enqueued_past_its_deadline_fires(
    world, real_world, doctor
) -> None:
    run_id, wait_id = world.new_run(), rw.new_wait_id()
    world.ok([rw.wait_created(run_id, wait_id, rw.utcnow() - timedelta(minutes=1))])
    loop_jobs(world, run_id, wait_id, 1)
    assert_fires(doctor, real_world, "WF131", wait_id)


def test_wf131_healthy_long_sleep_with_two_hop_chains_is_clean(world, real_world, doctor) -> None:
    long_sleeper(world)
    status, checks, _ = doctor(real_world, "--min-age", "0s", "--only", "WF131,WF133")
    assert checks["WF131"]["count"] == 0 and checks["WF131"]["in_flight"] == 0, checks
    assert checks["WF133"]["count"] == 0
    assert status == 0


def test_wf131_continuation_enqueued_before_the_deadline_is_a_backlog_not_a_runaway(
    world, real_world, doctor
) -> None:
    """The wait fell due while the workers were down: its continuation was enqueued before
    the deadline and is simply not delivered yet. That is a backlog, not a runaway."""
    run_id, wait_id = world.new_run(), rw.new_wait_id()
    world.ok(
        [
            rw.wait_created(run_id, wait_id, rw.utcnow() + timedelta(seconds=2)),
            rw.queue(rw.WORKFLOW, {"runId": run_id}, {"idempotencyKey": wait_id}),
            rw.sleep(3000),
        ]
    )
    status, checks, _ = doctor(real_world, "--min-age", "0s", "--only", "WF131")
    assert checks["WF131"]["count"] == 0 and status == 0, checks


def test_wf131_not_applicable_without_graphile(wfctl_world, doctor) -> None:
    status, checks, _ = doctor(wfctl_world, "--only", "WF131")
    assert {c["status"] for c in checks.values()} == {"not_applicable"}
    assert status == 0
