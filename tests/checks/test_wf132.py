"""WF132: recovery job pile-up; jobs enqueued by the real package's `world.queue`."""

from __future__ import annotations

from tests import realworld as rw
from tests.checks.conftest import assert_fires, assert_in_flight


def test_wf132_key_less_pile_up(world, real_world, doctor) -> None:
    run_id = world.new_run()
    world.ok([rw.queue(rw.WORKFLOW, {"runId": run_id}) for _ in range(3)])  # three restarts
    check = assert_fires(doctor, real_world, "WF132", run_id)
    assert "3 pending key-less" in check["samples"][0]["detail"]
    assert_in_flight(doctor, real_world, "WF132")


def test_wf132_not_applicable_without_graphile(wfctl_world, doctor) -> None:
    status, checks, _ = doctor(wfctl_world, "--only", "WF132")
    assert {c["status"] for c in checks.values()} == {"not_applicable"}
    assert status == 0
