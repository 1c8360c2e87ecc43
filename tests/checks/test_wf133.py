"""WF133: stranded run; jobs enqueued by the real package's `world.queue`."""

from __future__ import annotations

from tests import realworld as rw
from tests.checks.conftest import assert_fires, assert_in_flight


def test_wf133_stranded_run(world, real_world, doctor) -> None:
    stranded = world.new_run()
    has_job = world.new_run()
    world.ok([rw.queue(rw.WORKFLOW, {"runId": has_job})])
    _, hook_ops = rw.hook_waiting_run_ops()
    world.ok(hook_ops)
    check = assert_fires(doctor, real_world, "WF133", stranded)
    assert {s["run_id"] for s in check["samples"]} == {stranded}
    assert_in_flight(doctor, real_world, "WF133")


def test_wf133_not_applicable_without_graphile(wfctl_world, doctor) -> None:
    status, checks, _ = doctor(wfctl_world, "--only", "WF133")
    assert {c["status"] for c in checks.values()} == {"not_applicable"}
    assert status == 0
