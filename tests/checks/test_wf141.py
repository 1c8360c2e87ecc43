"""WF141: event logs no replay can consume."""

from __future__ import annotations

from tests import realworld as rw
from tests.checks.conftest import assert_fires, hand_written_log


def test_duplicate_terminal_events_and_run_created(wfctl_world, doctor) -> None:
    """The race a careless repair loses (a duplicate completion) is not reproducible on demand
    through the package, so these rows are written by hand."""
    run_id, step_id = rw.new_run_id(), rw.new_step_id()
    hand_written_log(
        wfctl_world,
        run_id,
        [
            ("run_created", None),
            ("run_created", None),
            ("step_created", step_id),
            ("step_started", step_id),
            ("step_completed", step_id),
            ("step_completed", step_id),
            ("step_started", step_id),
        ],
    )
    check = assert_fires(doctor, wfctl_world, "WF141", None)
    details = " | ".join(s["detail"] for s in check["samples"])
    assert "2 terminal events for one step" in details
    assert "step_started after the step's terminal event" in details
    assert "2 run_created events" in details
