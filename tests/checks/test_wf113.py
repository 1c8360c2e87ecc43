"""WF113: a run row terminal whose terminal event insert failed (F6)."""

from __future__ import annotations

import pytest

from tests import realworld as rw
from tests.checks.conftest import assert_fires, assert_in_flight
from tests.faults import fail_insert


@pytest.mark.parametrize("kind", ["run_completed", "run_failed", "run_cancelled"])
def test_fires_with_all_scope_only(world, real_world, doctor, kind) -> None:
    run_id = world.new_run()
    op = {
        "run_completed": rw.run_completed,
        "run_failed": rw.run_failed,
        "run_cancelled": rw.run_cancelled,
    }[kind](run_id)
    with real_world.connect() as conn, fail_insert(conn, "workflow_events", run_id, kind):
        [result] = world.ops([op])
    assert not result["ok"]
    _, checks, _ = doctor(real_world, "--min-age", "0s", "--only", "WF113")
    assert checks["WF113"]["count"] == 0  # terminal runs are outside the live scope
    check = assert_fires(doctor, real_world, "WF113", run_id, "--all")
    assert kind in check["samples"][0]["detail"]
    assert_fires(doctor, real_world, "WF113", run_id, "--run", run_id)
    assert_in_flight(doctor, real_world, "WF113", "--all")
