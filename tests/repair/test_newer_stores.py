"""Stores written by releases after beta.40 read right: spec >= 9 runs (the log is
authoritative), runs emptied by retention (`expired_at`), spec 7 `noop` fillers, and the
0026 `seq_in_band` column on markers. Each shape sits beside a control that does report, so
every test here fails if the rule is removed.

Rows are written by SQL: no release after beta.29 is on the registry. The shapes follow the
upstream text (spec-version table; retention deletes a finished run's data and sets
expired_at; migration 0026 adds `workflow_event_slots.seq_in_band int NOT NULL DEFAULT 1`).
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import psycopg

from tests import realworld as rw
from tests import slot_oracle as oracle
from wfctl.connection.db import Target, connect
from wfctl.connection.dsn import ResolvedDsn
from wfctl.doctor.base import Finding
from wfctl.repair import runner
from wfctl.world import codec, ids, model
from wfctl.world.writer import EventWriter

ROW_CODES = {"WF101", "WF111", "WF113"}


def _run(conn: psycopg.Connection[Any], spec: str, status: str = "running",
         marked: bool = True, expired: bool = False) -> str:  # fmt: skip
    run_id = rw.new_run_id()
    conn.execute(
        "INSERT INTO workflow.workflow_runs (id, deployment_id, status, name, spec_version,"
        " input_cbor, created_at, completed_at, expired_at) VALUES (%s, 'postgres', %s, %s, %s,"
        " %s, localtimestamp - interval '3 hours',"
        " CASE WHEN %s <> 'running' THEN localtimestamp - interval '2 hours' END,"
        " CASE WHEN %s THEN localtimestamp - interval '1 hour' END)",
        (run_id, status, rw.WORKFLOW, spec, codec.encode(b"devl[1]"), status, expired),
    )
    if marked:
        conn.execute("INSERT INTO workflow.workflow_event_slots (run_id) VALUES (%s)", (run_id,))
    return run_id


def _events(conn: psycopg.Connection[Any], run_id: str, kinds: list[str], spec: int) -> None:
    for n, kind in enumerate(kinds, start=1):
        conn.execute(
            "INSERT INTO workflow.workflow_events (id, type, run_id, spec_version)"
            " VALUES (%s, %s, %s, %s)",
            (ids.slot_event_id(n), kind, run_id, spec),
        )


def _steps(conn: psycopg.Connection[Any], run_id: str, spec: int) -> None:
    """A step row with no step_created, and a completed one with no step_completed."""
    for status in ("pending", "completed"):
        conn.execute(
            "INSERT INTO workflow.workflow_steps (run_id, step_id, step_name, status, attempt,"
            " input_cbor, output_cbor, spec_version, created_at, completed_at) VALUES"
            " (%s, %s, %s, %s, 1, %s, %s, %s, localtimestamp - interval '2 hours',"
            " CASE WHEN %s = 'completed' THEN localtimestamp - interval '2 hours' END)",
            (run_id, rw.new_step_id(), rw.STEP, status, codec.encode(b"devl[1]"),
             codec.encode(b"devl[2]"), spec, status),
        )  # fmt: skip


def _codes_for(doctor_json: Any, db: Any, run_id: str) -> set[str]:
    report = doctor_json(db, "--all", "--run", run_id)
    return {c["code"] for c in report["checks"] if c["count"]}


def test_spec_9_rows_are_not_findings_and_are_never_healed(slot_world, doctor_json, apply) -> None:
    with slot_world.connect() as conn:
        v9 = _run(conn, "9", status="completed")
        _events(conn, v9, ["run_created", "run_started"], 9)
        _steps(conn, v9, 9)
        v7 = _run(conn, "7", status="completed")
        _events(conn, v7, ["run_created", "run_started"], 7)
        _steps(conn, v7, 7)
    assert _codes_for(doctor_json, slot_world, v7) >= ROW_CODES  # the control reports
    assert _codes_for(doctor_json, slot_world, v9) == set()
    status, report = apply(slot_world, "--all", "--run", v9)
    assert status == 0 and report["items"] == []
    with slot_world.connect() as conn:
        n = conn.execute(
            "SELECT count(*) FROM workflow.workflow_events WHERE run_id = %s", (v9,)
        ).fetchone()[0]
        step_id = conn.execute(
            "SELECT step_id FROM workflow.workflow_steps WHERE run_id = %s AND status = 'pending'",
            (v9,),
        ).fetchone()[0]
    assert n == 2
    # Whatever reports such a finding (an older doctor, a hand-made list), repair refuses it.
    with connect(Target(ResolvedDsn(slot_world.dsn, "test")), autocommit=True) as conn:
        world = model.inspect(conn, with_drift=False)
        finding = Finding("WF101", v9, step_id, None, False, "step row without step_created")
        options = runner.RepairOptions(min_age=timedelta(0))
        writer = EventWriter(slots=True)
        [item] = runner._apply_run(
            conn, world, writer, options, v9, [finding], "test", runner.LockedJobs()
        )
    assert item.outcome == "refused" and "log is authoritative" in item.reason


def test_runs_emptied_by_retention_are_not_corruption(slot_world, doctor_json) -> None:
    """Retention deleted a finished run's events but kept the run listable (expired_at):
    no missing-event, missing-creation or hole findings. The control, not expired, has all."""
    shapes = {}
    with slot_world.connect() as conn:
        for expired in (True, False):
            run_id = _run(conn, "7", status="completed", expired=expired)
            _events(conn, run_id, ["step_started"], 7)  # slot 1 left, no run_created
            conn.execute(
                "UPDATE workflow.workflow_events SET id = %s WHERE run_id = %s",
                (ids.slot_event_id(4), run_id),
            )
            _steps(conn, run_id, 7)
            shapes[expired] = run_id
    assert _codes_for(doctor_json, slot_world, shapes[False]) >= ROW_CODES | {"WF121", "WF123"}
    assert _codes_for(doctor_json, slot_world, shapes[True]) == set()


def test_noop_fillers_hold_their_position(slot_world, doctor_json) -> None:
    """A spec 7 log with `noop` fillers is dense: no WF123 hole, no WF141 oddity, and the
    oracle (the package's reader) accepts it; a spec 6 log cannot carry them."""
    with slot_world.connect() as conn:
        v7 = _run(conn, "7")
        _events(conn, v7, ["run_created", "noop", "run_started", "noop"], 7)
        holed = _run(conn, "7")
        _events(conn, holed, ["run_created", "noop", "run_started", "noop"], 7)
        conn.execute(
            "DELETE FROM workflow.workflow_events WHERE run_id = %s AND id = %s",
            (holed, ids.slot_event_id(2)),
        )
        v6 = _run(conn, "6")
        _events(conn, v6, ["run_created", "noop", "run_started"], 6)
        assert _codes_for(doctor_json, slot_world, v7) == set()
        assert "WF123" in _codes_for(doctor_json, slot_world, holed)  # a real hole still is
        oracle.check_run(conn, v7)
        try:
            oracle.check_run(conn, v6)
        except oracle.OracleError as exc:
            assert "cannot hold noop" in str(exc)
        else:
            raise AssertionError("a spec 6 reader accepted a noop")


def test_a_marker_created_by_repair_writes_seq_in_band(slot_world, apply) -> None:
    """0026 gives the marker a state column; the marker a repair creates carries the value
    the package's own creation writes (1), whichever way the column's default was declared."""
    with slot_world.connect() as conn:
        conn.execute(
            "ALTER TABLE workflow.workflow_event_slots"
            " ADD COLUMN seq_in_band int NOT NULL DEFAULT 1"
        )
        run_id = _run(conn, "7", marked=False)
    status, report = apply(slot_world, "--only", "WF121")
    assert status == 0, report
    with slot_world.connect() as conn:
        seq = conn.execute(
            "SELECT seq_in_band FROM workflow.workflow_event_slots WHERE run_id = %s", (run_id,)
        ).fetchone()
        assert seq == (1,)
        oracle.check_run(conn, run_id)
