"""Repairs in a slot-era world: events take the run's next slot; a half-created run gets its
marker and run_created at slot 1. Rows are written by hand: no slot-era release is on npm."""

from __future__ import annotations

from tests import realworld as rw
from tests.repair.conftest import events, outcomes
from wfctl.world import codec, ids


def _run(conn, run_id: str, marked: bool, slots: list[str]) -> None:
    conn.execute(
        "INSERT INTO workflow.workflow_runs (id, deployment_id, status, name, spec_version,"
        " input_cbor, created_at) VALUES (%s, 'postgres', 'running', %s, '7', %s,"
        " localtimestamp - interval '1 hour')",
        (run_id, rw.WORKFLOW, codec.encode(b"devl[7]")),
    )
    if marked:
        conn.execute("INSERT INTO workflow.workflow_event_slots VALUES (%s)", (run_id,))
    for n, kind in enumerate(slots, start=1):
        conn.execute(
            "INSERT INTO workflow.workflow_events (id, type, run_id, spec_version)"
            " VALUES (%s, %s, %s, 7)",
            (ids.slot_event_id(n), kind, run_id),
        )


def test_wf101_appends_at_the_next_slot(slot_world, apply) -> None:
    run_id, step_id = rw.new_run_id(), rw.new_step_id()
    with slot_world.connect() as conn:
        _run(conn, run_id, True, ["run_created", "run_started"])
        conn.execute(
            "INSERT INTO workflow.workflow_steps (run_id, step_id, step_name, status, attempt,"
            " input_cbor, spec_version, created_at) VALUES (%s, %s, %s, 'pending', 0, %s, 7,"
            " localtimestamp - interval '1 hour')",
            (run_id, step_id, rw.STEP, codec.encode(b"devl[1]")),
        )
    status, report = apply(slot_world, "--only", "WF101")
    assert status == 0 and outcomes(report)["WF101"] == ["applied"]
    log = events(slot_world, run_id)
    assert [e[0] for e in log] == [ids.slot_event_id(n) for n in (1, 2, 3)]
    assert log[2][1] == "step_created" and log[2][4] == 7


def test_wf121_marker_and_run_created_at_slot_one(slot_world, apply, doctor_json) -> None:
    run_id = rw.new_run_id()
    with slot_world.connect() as conn:
        _run(conn, run_id, False, [])
    status, report = apply(slot_world, "--only", "WF121")
    assert status == 0 and outcomes(report)["WF121"] == ["applied"]
    [created] = events(slot_world, run_id)
    assert created[0] == ids.slot_event_id(1) and created[1] == "run_created"
    data = codec.decode(created[3])
    assert data["input"] == b"devl[7]" and data["workflowName"] == rw.WORKFLOW
    with slot_world.connect() as conn:
        marker = conn.execute(
            "SELECT count(*) FROM workflow.workflow_event_slots WHERE run_id = %s", (run_id,)
        ).fetchone()[0]
    assert marker == 1
    assert doctor_json(slot_world, "--run", run_id)["summary"]["findings"] == 0


def test_wf121_restart_variant_is_refused_without_rewrite(slot_world, apply) -> None:
    run_id = rw.new_run_id()
    with slot_world.connect() as conn:
        _run(conn, run_id, False, [])
        conn.execute(
            "INSERT INTO workflow.workflow_events (id, type, run_id, spec_version)"
            " VALUES (%s, 'run_started', %s, 7)",
            (ids.legacy_event_id(), run_id),
        )
    status, report = apply(slot_world, "--only", "WF121")
    assert status == 2 and "--allow-rewrite" in report["items"][0]["reason"]
    assert len(events(slot_world, run_id)) == 1
