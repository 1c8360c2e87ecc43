"""WF102: the wait_created event insert fails after the wait row committed (F2)."""

from __future__ import annotations

from datetime import timedelta

from tests import realworld as rw
from tests.checks.conftest import assert_fires, assert_in_flight
from tests.faults import fail_insert


def orphan_wait(world, db) -> tuple[str, str]:
    run_id, wait_id = world.new_run(), rw.new_wait_id()
    with db.connect() as conn, fail_insert(conn, "workflow_events", run_id, "wait_created"):
        [result] = world.ops([rw.wait_created(run_id, wait_id, rw.utcnow() + timedelta(hours=1))])
    assert not result["ok"]
    return run_id, wait_id


def test_fires_on_an_orphan_wait_row(world, real_world, doctor) -> None:
    run_id, wait_id = orphan_wait(world, real_world)
    check = assert_fires(doctor, real_world, "WF102", wait_id)
    assert check["samples"][0]["run_id"] == run_id
    # it never heals: a re-sent wait_created is refused and writes nothing
    [again] = world.ops([rw.wait_created(run_id, wait_id, rw.utcnow() + timedelta(hours=1))])
    assert again["error"] == "EntityConflictError"
    assert_fires(doctor, real_world, "WF102", wait_id)


def test_in_flight_when_younger_than_min_age(world, real_world, doctor) -> None:
    orphan_wait(world, real_world)
    assert_in_flight(doctor, real_world, "WF102")
