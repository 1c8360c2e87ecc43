"""WF133: stranded run; jobs enqueued by the real package's `world.queue`."""

from __future__ import annotations

from datetime import timedelta

from tests import realworld as rw
from tests.checks.conftest import assert_fires, assert_in_flight


def sleep_raced_with_hook(world, due_in: timedelta) -> tuple[str, str]:
    """`Promise.race([sleep(...), hook])`: a running run with a hook row and a waiting wait,
    and no job (the continuation was lost, vw#3743)."""
    run_id, ops = rw.hook_waiting_run_ops()
    wait_id = rw.new_wait_id()
    world.ok([*ops, rw.wait_created(run_id, wait_id, rw.utcnow() + due_in)])
    return run_id, wait_id


def test_wf133_stranded_run(world, real_world, doctor) -> None:
    stranded = world.new_run()
    has_job = world.new_run()
    world.ok([rw.queue(rw.WORKFLOW, {"runId": has_job})])
    _, hook_ops = rw.hook_waiting_run_ops()
    world.ok(hook_ops)
    check = assert_fires(doctor, real_world, "WF133", stranded)
    assert {s["run_id"] for s in check["samples"]} == {stranded}
    assert_in_flight(doctor, real_world, "WF133")


def test_wf133_overdue_wait_with_no_job_strands_a_hooked_run(world, real_world, doctor) -> None:
    stranded, wait_id = sleep_raced_with_hook(world, -timedelta(minutes=2))
    check = assert_fires(doctor, real_world, "WF133", stranded)
    assert (
        "overdue since" in check["samples"][0]["detail"]
        and wait_id in check["samples"][0]["detail"]
    )
    assert_in_flight(doctor, real_world, "WF133")  # due 2 min ago: younger than --min-age


def test_wf133_hooked_run_with_a_future_wait_or_a_job_is_not_stranded(
    world, real_world, doctor
) -> None:
    sleep_raced_with_hook(world, timedelta(hours=1))  # the hook may still come; not due yet
    has_job, wait_id = sleep_raced_with_hook(world, -timedelta(minutes=2))
    world.ok([rw.queue(rw.WORKFLOW, {"runId": has_job}, {"idempotencyKey": wait_id})])
    status, checks, _ = doctor(real_world, "--min-age", "0s", "--only", "WF133")
    assert checks["WF133"]["count"] == 0 and status == 0, checks


def test_wf133_not_applicable_without_graphile(wfctl_world, doctor) -> None:
    status, checks, _ = doctor(wfctl_world, "--only", "WF133")
    assert {c["status"] for c in checks.values()} == {"not_applicable"}
    assert status == 0
