"""Hand-written slot-era rows for WF121-WF123: the slot-era releases are not on the
registry, so no real write path can produce these here."""

from __future__ import annotations

from tests import realworld as rw


def marked_run(
    conn, events: list[tuple[str, str]], status: str = "running", spec: str | None = "7"
) -> str:
    run_id = rw.new_run_id()
    conn.execute(
        "INSERT INTO workflow.workflow_runs (id, deployment_id, status, name, spec_version)"
        " VALUES (%s, 'postgres', %s, %s, %s)",
        (run_id, status, rw.WORKFLOW, spec),
    )
    conn.execute("INSERT INTO workflow.workflow_event_slots VALUES (%s)", (run_id,))
    for event_id, kind in events:
        conn.execute(
            "INSERT INTO workflow.workflow_events (id, type, run_id, spec_version)"
            " VALUES (%s, %s, %s, 7)",
            (event_id, kind, run_id),
        )
    return run_id
