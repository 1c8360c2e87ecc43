"""WF123: broken slot numbering (hand-written rows, see slot_rows)."""

from __future__ import annotations

from tests.checks.conftest import assert_fires
from tests.checks.slot_rows import marked_run
from wfctl.world import ids


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
    _, checks, _ = doctor(wfctl_world, "--only", "WF123")
    assert checks["WF123"]["status"] == "not_applicable"
