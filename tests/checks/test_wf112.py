"""WF112: a wait row completed whose wait_completed insert failed (F4)."""

from __future__ import annotations

from datetime import timedelta

from tests import realworld as rw
from tests.checks.conftest import assert_fires, assert_in_flight
from tests.faults import fail_insert


def completed_wait_without_event(
    world, db, overdue: timedelta = timedelta(seconds=1)
) -> tuple[str, str]:
    run_id, wait_id = world.new_run(), rw.new_wait_id()
    resume_at = rw.utcnow() - overdue
    world.ok([rw.wait_created(run_id, wait_id, resume_at)])
    with db.connect() as conn, fail_insert(conn, "workflow_events", run_id, "wait_completed"):
        [result] = world.ops([rw.wait_completed(run_id, wait_id, resume_at)])
    assert not result["ok"]
    return run_id, wait_id


def test_fires_on_a_completed_wait_without_its_event(world, real_world, doctor) -> None:
    run_id, wait_id = completed_wait_without_event(world, real_world)
    check = assert_fires(doctor, real_world, "WF112", wait_id)
    assert check["samples"][0]["run_id"] == run_id
    [again] = world.ops([rw.wait_completed(run_id, wait_id)])
    assert again["error"] == "EntityConflictError" and "already completed" in again["message"]


def test_in_flight_when_younger_than_min_age(world, real_world, doctor) -> None:
    completed_wait_without_event(world, real_world)
    assert_in_flight(doctor, real_world, "WF112")
