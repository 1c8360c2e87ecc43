"""WF103: the hook_created event insert fails after the hook row committed (F3, info)."""

from __future__ import annotations

from tests import realworld as rw
from tests.checks.conftest import assert_fires, assert_in_flight
from tests.faults import fail_insert


def orphan_hook(world, db) -> tuple[str, str]:
    run_id, hook_id = world.new_run(), rw.new_hook_id()
    with db.connect() as conn, fail_insert(conn, "workflow_events", run_id, "hook_created"):
        [result] = world.ops([rw.hook_created(run_id, hook_id, f"tok-{hook_id[-8:]}")])
    assert not result["ok"]
    return run_id, hook_id


def test_fires_as_info_and_heals_upstream(world, real_world, doctor) -> None:
    run_id, hook_id = orphan_hook(world, real_world)
    check = assert_fires(doctor, real_world, "WF103", hook_id)
    assert check["severity"] == "info"
    world.ok([rw.hook_created(run_id, hook_id, f"tok-{hook_id[-8:]}")])  # the package heals it
    _, checks, _ = doctor(real_world, "--min-age", "0s", "--only", "WF103")
    assert checks["WF103"]["count"] == 0


def test_in_flight_when_younger_than_min_age(world, real_world, doctor) -> None:
    orphan_hook(world, real_world)
    assert_in_flight(doctor, real_world, "WF103")
