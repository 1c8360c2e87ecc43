"""WF111: a step row completed / failed / retrying whose event insert failed (F5)."""

from __future__ import annotations

import pytest

from tests import realworld as rw
from tests.checks.conftest import assert_fires, assert_in_flight
from tests.faults import fail_insert


def finished_step_without_event(world, db, kind: str) -> tuple[str, str]:
    run_id, step_id = world.new_run(), rw.new_step_id()
    world.ok(rw.step_ops(run_id, step_id)[:2])  # created + started
    op = {
        "step_completed": rw.step_completed(run_id, step_id, rw.STEP, rw.devl("[42]")),
        "step_failed": rw.step_failed(run_id, step_id, rw.STEP, rw.devl('["boom"]')),
        "step_retrying": rw.step_retrying(
            run_id, step_id, rw.devl('["again"]'), rw.utcnow(), step_name=rw.STEP
        ),
    }[kind]
    with db.connect() as conn, fail_insert(conn, "workflow_events", run_id, kind):
        [result] = world.ops([op])
    assert not result["ok"]
    return run_id, step_id


@pytest.mark.parametrize("kind", ["step_completed", "step_failed", "step_retrying"])
def test_fires_when_the_outcome_event_is_missing(world, real_world, doctor, kind) -> None:
    _, step_id = finished_step_without_event(world, real_world, kind)
    check = assert_fires(doctor, real_world, "WF111", step_id)
    assert kind in check["samples"][0]["detail"]


def test_the_run_is_wedged(world, real_world) -> None:
    run_id, step_id = finished_step_without_event(world, real_world, "step_completed")
    [again] = world.ops([rw.step_started(run_id, step_id)])
    assert again["error"] == "EntityConflictError" and "terminal" in again["message"]


def test_in_flight_when_younger_than_min_age(world, real_world, doctor) -> None:
    finished_step_without_event(world, real_world, "step_completed")
    assert_in_flight(doctor, real_world, "WF111")
