"""WF122 / WF123: slot numbering in marked runs. Hand-written rows: the slot-era releases
are not on the registry, so no real write path can produce these here."""

from __future__ import annotations

from tests import realworld as rw
from tests.checks.conftest import assert_fires
from wfctl.world import ids


def marked_run(conn, events: list[tuple[str, str]]) -> str:
    run_id = rw.new_run_id()
    conn.execute(
        "INSERT INTO workflow.workflow_runs (id, deployment_id, status, name, spec_version)"
        " VALUES (%s, 'postgres', 'running', %s, '7')",
        (run_id, rw.WORKFLOW),
    )
    conn.execute("INSERT INTO workflow.workflow_event_slots VALUES (%s)", (run_id,))
    for event_id, kind in events:
        conn.execute(
            "INSERT INTO workflow.workflow_events (id, type, run_id, spec_version)"
            " VALUES (%s, %s, %s, 7)",
            (event_id, kind, run_id),
        )
    return run_id


def test_wf122_fires_on_wevt_ids_in_a_marked_run(slot_world, doctor) -> None:
    with slot_world.connect() as conn:
        bad = marked_run(
            conn, [(ids.slot_event_id(1), "run_created"), (ids.legacy_event_id(), "run_started")]
        )
        good = marked_run(
            conn, [(ids.slot_event_id(1), "run_created"), (ids.slot_event_id(2), "run_started")]
        )
    check = assert_fires(doctor, slot_world, "WF122", None)
    assert {s["run_id"] for s in check["samples"]} == {bad}
    _, checks, _ = doctor(slot_world, "--min-age", "0s", "--only", "WF122,WF123", "--run", good)
    assert checks["WF122"]["count"] == checks["WF123"]["count"] == 0


def test_wf123_fires_on_holes_foreign_slot_one_and_bad_bodies(slot_world, doctor) -> None:
    with slot_world.connect() as conn:
        hole = marked_run(
            conn, [(ids.slot_event_id(1), "run_created"), (ids.slot_event_id(3), "run_started")]
        )
        foreign = marked_run(conn, [(ids.slot_event_id(1), "run_started")])
        body = marked_run(
            conn,
            [
                (ids.slot_event_id(1), "run_created"),
                ("evnt_00000000010000000000000002", "run_started"),
            ],
        )
    check = assert_fires(doctor, slot_world, "WF123", None)
    detail = {s["run_id"]: s["detail"] for s in check["samples"]}
    assert "1 hole(s)" in detail[hole]
    assert "slot 1 is run_started" in detail[foreign]
    assert "non-slot body" in detail[body]


def test_not_applicable_on_a_beta29_world(wfctl_world, doctor) -> None:
    _, checks, _ = doctor(wfctl_world, "--only", "WF122,WF123")
    assert checks["WF122"]["status"] == checks["WF123"]["status"] == "not_applicable"
