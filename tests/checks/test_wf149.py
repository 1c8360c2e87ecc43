"""WF149: a run's attributes differ from the fold of its log (run_created + attr_set)."""

from __future__ import annotations

from typing import Any

from tests import realworld as rw
from tests.checks.conftest import assert_fires, assert_in_flight
from tests.conftest import Db
from tests.faults import fail_insert


def attr_set(run_id: str, corr: str, **changes: str | None) -> rw.Op:
    """A workflow-writer attr_set as core beta.39's setAttributes() sends it."""
    data = {
        "changes": [{"key": k, "value": v} for k, v in changes.items()],
        "writer": {"type": "workflow"},
    }
    return rw.create(run_id, "attr_set", corr, data)


def torn_attr_set(world: rw.RealWorld, db: Db, cancel: bool = True) -> str:
    """A run whose second attr_set lost its event: the package UPDATEs the row's attributes,
    then the event insert fails (a trigger, as a crash or a lost connection would). The run
    is then cancelled, as an operator does with a run stuck retrying, so no redelivery of
    the write ever heals it (the package refuses attr_set on a terminal run)."""
    run_id = rw.new_run_id()
    world.ok([rw.run_created(run_id, attributes={"team": "a"}), rw.run_started(run_id)])
    world.ok([attr_set(run_id, "attr_01", phase="init", tmp="x")])
    with db.connect() as conn, fail_insert(conn, "workflow_events", run_id, "attr_set"):
        [torn] = world.ops([attr_set(run_id, "attr_02", phase="done", tmp=None)])
    assert not torn["ok"] and "wfctl_fault" in torn["cause"]["message"], torn
    if cancel:
        world.ok([rw.run_cancelled(run_id)])
    return run_id


def attributes(db: Db, run_id: str) -> dict[str, Any]:
    with db.connect() as conn:
        row = conn.execute(
            "SELECT attributes FROM workflow.workflow_runs WHERE id = %s", (run_id,)
        ).fetchone()
    assert row is not None
    return dict(row[0])


def test_attr_set_torn_by_a_failed_event_insert(world, real_world, doctor) -> None:
    run_id = torn_attr_set(world, real_world, cancel=False)
    # the row is ahead of the log: phase=done, tmp deleted; the log still says init, tmp=x
    assert attributes(real_world, run_id) == {"team": "a", "phase": "done"}
    assert_in_flight(doctor, real_world, "WF149")  # the event insert may still be landing
    check = assert_fires(doctor, real_world, "WF149", "attributes")
    detail = check["samples"][0]["detail"]
    assert "'phase': 'done' on the row, 'init' by the log" in detail
    assert "'tmp': absent on the row, 'x' by the log" in detail


def test_a_cancelled_run_keeps_it_out_of_the_live_scope(world, real_world, doctor) -> None:
    run_id = torn_attr_set(world, real_world)
    # the package refuses the redelivered write on the terminal run: it never heals itself
    [late] = world.ops([attr_set(run_id, "attr_02", phase="done", tmp=None)])
    assert late["error"] == "EntityConflictError", late
    status, checks, _ = doctor(real_world, "--min-age", "0s", "--only", "WF149")
    assert checks["WF149"]["count"] == 0 and status == 0  # live scope: not a live run
    check = assert_fires(doctor, real_world, "WF149", "attributes", "--all")
    assert check["samples"][0]["run_id"] == run_id


def test_a_redelivered_write_heals_and_healthy_runs_are_silent(world, real_world, doctor):
    """The package's own redelivery (same correlation id) re-applies the change and journals
    it; creation attributes, sets and deletions all fold to what the row holds."""
    run_id = torn_attr_set(world, real_world, cancel=False)
    world.ok([attr_set(run_id, "attr_02", phase="done", tmp=None)])
    other = rw.new_run_id()
    world.ok(
        [
            rw.run_created(other, attributes={"a": "1", "b": "2"}),
            rw.run_started(other),
            attr_set(other, "attr_01", b=None, c="3"),
            attr_set(other, "attr_02", a="4"),
            rw.run_completed(other),
        ]
    )
    world.clean_world()
    status, checks, _ = doctor(real_world, "--min-age", "0s", "--all", "--only", "WF149")
    assert checks["WF149"]["count"] == 0 and checks["WF149"]["in_flight"] == 0, checks
    assert status == 0
    assert attributes(real_world, other) == {"a": "4", "c": "3"}


def test_a_hand_emptied_row_is_found_from_run_created(world, real_world, doctor) -> None:
    """No attr_set at all: the run_created payload alone makes the run a candidate."""
    run_id = rw.new_run_id()
    world.ok([rw.run_created(run_id, attributes={"team": "a"}), rw.run_started(run_id)])
    with real_world.connect() as conn:
        conn.execute("UPDATE workflow.workflow_runs SET attributes = '{}' WHERE id = %s", (run_id,))
    check = assert_fires(doctor, real_world, "WF149", "attributes")
    assert "'team': absent on the row, 'a' by the log" in check["samples"][0]["detail"]
