"""WF122: wevt_ ids inside a slot-numbered run (hand-written rows, see slot_rows)."""

from __future__ import annotations

from tests.checks.conftest import assert_fires
from tests.checks.slot_rows import marked_run
from wfctl.world import ids


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


def test_not_applicable_on_a_beta29_world(wfctl_world, doctor) -> None:
    _, checks, _ = doctor(wfctl_world, "--only", "WF122")
    assert checks["WF122"]["status"] == "not_applicable"
