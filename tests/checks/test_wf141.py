"""WF141: event logs no replay can consume."""

from __future__ import annotations

from tests import realworld as rw
from tests.checks.conftest import assert_fires
from wfctl.world import ids


def test_duplicate_terminal_events_and_run_created(wfctl_world, doctor) -> None:
    """The race a careless repair loses (a duplicate completion) is not reproducible on demand
    through the package, so these rows are written by hand."""
    run_id, step_id = rw.new_run_id(), rw.new_step_id()
    with wfctl_world.connect() as conn:
        conn.execute(
            "INSERT INTO workflow.workflow_runs (id, deployment_id, status, name, spec_version)"
            " VALUES (%s, 'postgres', 'running', %s, '5')",
            (run_id, rw.WORKFLOW),
        )
        clock = ids.MonotonicUlid()
        for kind, corr in [
            ("run_created", None),
            ("run_created", None),
            ("step_created", step_id),
            ("step_started", step_id),
            ("step_completed", step_id),
            ("step_completed", step_id),
            ("step_started", step_id),
        ]:
            conn.execute(
                "INSERT INTO workflow.workflow_events (id, type, correlation_id, run_id)"
                " VALUES (%s, %s, %s, %s)",
                ("wevt_" + clock.next(), kind, corr, run_id),
            )
    check = assert_fires(doctor, wfctl_world, "WF141", None)
    details = " | ".join(s["detail"] for s in check["samples"])
    assert "2 terminal events for one step" in details
    assert "step_started after the step's terminal event" in details
    assert "2 run_created events" in details
