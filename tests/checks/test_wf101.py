"""WF101: the step_created event insert fails after the step row committed (seed F1)."""

from __future__ import annotations

from tests import realworld as rw
from tests.checks.conftest import assert_fires, assert_in_flight
from tests.faults import fail_insert


def orphan_step(world, db) -> tuple[str, str]:
    run_id, step_id = world.new_run(), rw.new_step_id()
    with db.connect() as conn, fail_insert(conn, "workflow_events", run_id, "step_created"):
        [result] = world.ops([rw.step_created(run_id, step_id, rw.STEP, rw.devl("[1]"))])
    assert not result["ok"]
    return run_id, step_id


def test_fires_on_an_orphan_step_row(world, real_world, doctor) -> None:
    run_id, step_id = orphan_step(world, real_world)
    check = assert_fires(doctor, real_world, "WF101", step_id)
    assert check["samples"][0]["run_id"] == run_id
    # and the wedge is real: the runtime's lazy start is refused on every replay
    [lazy] = world.ops([rw.step_started_lazy(run_id, step_id, rw.STEP, rw.devl("[1]"))])
    assert lazy["error"] == "EntityConflictError" and "already created" in lazy["message"]


def test_in_flight_when_younger_than_min_age(world, real_world, doctor) -> None:
    orphan_step(world, real_world)
    assert_in_flight(doctor, real_world, "WF101")


def test_run_filter_and_terminal_runs(world, real_world, doctor) -> None:
    run_id, _ = orphan_step(world, real_world)
    other, _ = orphan_step(world, real_world)
    _, checks, _ = doctor(real_world, "--min-age", "0s", "--only", "WF101", "--run", run_id)
    assert [s["run_id"] for s in checks["WF101"]["samples"]] == [run_id]
    world.ok([rw.run_completed(run_id)])
    _, checks, _ = doctor(real_world, "--min-age", "0s", "--only", "WF101")
    assert {s["run_id"] for s in checks["WF101"]["samples"]} == {other}  # live scope
    _, checks, _ = doctor(real_world, "--min-age", "0s", "--only", "WF101", "--all")
    assert {s["run_id"] for s in checks["WF101"]["samples"]} == {run_id, other}
