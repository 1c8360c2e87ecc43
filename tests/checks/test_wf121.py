"""WF121: half-created runs. beta.29: run row without run_created (real write path);
slot era: runs without their marker (hand-written rows: no slot-era release is on npm)."""

from __future__ import annotations

from tests import realworld as rw
from tests.checks.conftest import assert_fires, assert_in_flight
from tests.faults import fail_insert
from wfctl.world import ids


def run_without_run_created(world, db) -> str:
    run_id = rw.new_run_id()
    with db.connect() as conn, fail_insert(conn, "workflow_events", run_id, "run_created"):
        [result] = world.ops([rw.run_created(run_id)])
    assert not result["ok"]
    world.ok([rw.run_started(run_id)])  # the queue message still runs it
    return run_id


def test_fires_on_a_run_without_run_created(world, real_world, doctor) -> None:
    run_id = run_without_run_created(world, real_world)
    check = assert_fires(doctor, real_world, "WF121", run_id)
    assert "no run_created" in check["samples"][0]["detail"]


def test_in_flight_when_younger_than_min_age(world, real_world, doctor) -> None:
    run_without_run_created(world, real_world)
    assert_in_flight(doctor, real_world, "WF121")


def _insert_run(conn, run_id: str, spec: str = "7") -> None:
    conn.execute(
        "INSERT INTO workflow.workflow_runs (id, deployment_id, status, name, spec_version,"
        " input_cbor) VALUES (%s, 'postgres', 'running', %s, %s, %s)",
        (run_id, rw.WORKFLOW, spec, b"\xd8\x40\x46devl[]"),
    )


def _event(conn, run_id: str, event_id: str, kind: str) -> None:
    conn.execute(
        "INSERT INTO workflow.workflow_events (id, type, run_id, spec_version)"
        " VALUES (%s, %s, %s, 7)",
        (event_id, kind, run_id),
    )


def test_slot_era_states(slot_world, doctor) -> None:
    bare, restart, fine = rw.new_run_id(), rw.new_run_id(), rw.new_run_id()
    with slot_world.connect() as conn:
        _insert_run(conn, bare)  # (a) run row, no marker, no events
        _insert_run(conn, restart)  # (b) no marker, only wevt_ events, no run_created
        _event(conn, restart, ids.legacy_event_id(), "run_started")
        _insert_run(conn, fine)  # control: marker + run_created at slot 1
        conn.execute("INSERT INTO workflow.workflow_event_slots VALUES (%s)", (fine,))
        _event(conn, fine, ids.slot_event_id(1), "run_created")
    check = assert_fires(doctor, slot_world, "WF121", None)
    by_run = {s["run_id"]: s["detail"] for s in check["samples"]}
    assert set(by_run) == {bare, restart}
    assert "no slot marker" in by_run[bare] and "restart variant" in by_run[restart]
