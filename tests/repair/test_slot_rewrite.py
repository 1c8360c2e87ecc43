"""Slot-era rewrites (`repair --allow-rewrite`): every damaged shape of #3656 and of a bad
hole, repaired, then judged by the slot oracle (tests/slot_oracle.py: the package's allocator,
its "not slot-numbered" refusal and its gap check, ported from the reference).

No slot-era release is on the registry. The healthy part of each log is written through
wfctl's own EventWriter (its slot numbering is the package's INSERT expression); the damage is
written by SQL, reproducing the foreign bug, as each helper says.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import psycopg
import pytest

from tests import realworld as rw
from tests import slot_oracle as oracle
from tests.conftest import Db
from tests.repair.conftest import outcomes
from wfctl.connection.db import Target, connect
from wfctl.connection.dsn import ResolvedDsn
from wfctl.repair import runner
from wfctl.world import codec, ids, model
from wfctl.world.writer import EventWriter

WRITER = EventWriter(slots=True)
ENCRYPTED = b"encr" + bytes(range(256)) * 2  # an encrypted step result, copied byte for byte


def _run_row(conn: psycopg.Connection[Any], spec: str, marked: bool) -> str:
    """The run row as the package inserts it (its first autocommit); the marker only when
    the second autocommit landed."""
    run_id = rw.new_run_id()
    conn.execute(
        "INSERT INTO workflow.workflow_runs (id, deployment_id, status, name, spec_version,"
        " input_cbor, execution_context_cbor, created_at) VALUES (%s, 'postgres', 'running',"
        " %s, %s, %s, %s, localtimestamp - interval '2 hours')",
        (run_id, rw.WORKFLOW, spec, codec.encode(b"devl[7]"), codec.encode({"t": "x"})),
    )
    if marked:
        conn.execute("INSERT INTO workflow.workflow_event_slots (run_id) VALUES (%s)", (run_id,))
    return run_id


def _append(
    conn: psycopg.Connection[Any],
    run_id: str,
    kind: str,
    corr: str | None = None,
    data: dict[str, Any] | None = None,
    spec: int = 7,
    first: bool = False,
) -> str:
    """A faithful slot write: wfctl's writer (the slot expression inside the INSERT)."""
    with conn.transaction():
        return WRITER.append(conn, run_id, kind, corr, data, spec, first_slot=first).id


def _foreign(conn: psycopg.Connection[Any], run_id: str, kind: str, corr: str | None,
             data: dict[str, Any] | None, minutes_ago: int, spec: int = 7) -> str:  # fmt: skip
    """The foreign bug (#3656): a writer that saw no marker took `allocateEventId`'s legacy
    branch and minted a wevt_ ULID. By SQL: wfctl's writer refuses to mix schemes."""
    event_id = ids.legacy_event_id()
    conn.execute(
        "INSERT INTO workflow.workflow_events (id, type, correlation_id, run_id, payload_cbor,"
        " spec_version, created_at) VALUES (%s, %s, %s, %s, %s, %s,"
        " localtimestamp - make_interval(mins => %s))",
        (event_id, kind, corr, run_id, codec.encode(data) if data else None, spec, minutes_ago),
    )
    return event_id


def _age(conn: psycopg.Connection[Any], run_id: str, minutes: int) -> None:
    """Move the writer's events back in time, so foreign events can interleave by created_at."""
    conn.execute(
        "UPDATE workflow.workflow_events SET created_at = created_at - make_interval(mins => %s)"
        " WHERE run_id = %s",
        (minutes, run_id),
    )


def _created_data() -> dict[str, Any]:
    return {"deploymentId": "postgres", "workflowName": rw.WORKFLOW, "input": b"devl[7]"}


def poisoned_run_started(conn: psycopg.Connection[Any]) -> tuple[str, str]:
    """Marker and run_created committed after a peer wrote run_started with a wevt_ id (the
    first seed comment of #3656): slot 1 run_created, then wevt_ events."""
    run_id = _run_row(conn, "7", marked=True)
    step = rw.new_step_id()
    started = _foreign(conn, run_id, "run_started", None, None, minutes_ago=90)
    _append(conn, run_id, "run_created", None, _created_data(), first=True)
    _age(conn, run_id, 0)
    _foreign(conn, run_id, "step_created", step, {"stepName": rw.STEP, "input": b"devl[1]"}, 80)
    # A second step whose row landed and whose step_created did not (WF101): its append
    # needs a log the writer can number, so it waits for the rewrite in the same transaction.
    conn.execute(
        "INSERT INTO workflow.workflow_steps (run_id, step_id, step_name, status, attempt,"
        " input_cbor, spec_version, created_at) VALUES (%s, %s, %s, 'pending', 0, %s, 7,"
        " localtimestamp - interval '70 minutes')",
        (run_id, rw.new_step_id(), rw.STEP, codec.encode(b"devl[2]")),
    )
    return run_id, started


def poisoned_tail(conn: psycopg.Connection[Any]) -> tuple[str, str]:
    """A healthy slot log whose tail was written by a peer that read the run without its
    marker: evnt_ 1..3, then wevt_ step_started / step_completed (encrypted result)."""
    run_id = _run_row(conn, "7", marked=True)
    step = rw.new_step_id()
    _append(conn, run_id, "run_created", None, _created_data(), first=True)
    _append(conn, run_id, "run_started")
    _append(conn, run_id, "step_created", step, {"stepName": rw.STEP, "input": b"devl[1]"})
    _age(conn, run_id, 100)
    _foreign(conn, run_id, "step_started", step, {"attempt": 1}, 50)
    _foreign(conn, run_id, "step_completed", step, {"stepName": rw.STEP, "result": ENCRYPTED}, 40)
    return run_id, step


def restart_shape(conn: psycopg.Connection[Any]) -> tuple[str, str]:
    """The process-restart shape (third seed comment): run row only, then, after the restart,
    reenqueueActiveRuns wrote run_started, step_* with wevt_ ids; no marker, no run_created.
    wfctl's writer does the same on a run without marker and without evnt_ ids (the legacy
    branch), so it writes these faithfully."""
    run_id = _run_row(conn, "7", marked=False)
    step = rw.new_step_id()
    _append(conn, run_id, "run_started")
    _append(conn, run_id, "step_created", step, {"stepName": rw.STEP, "input": b"devl[1]"})
    _append(conn, run_id, "step_started", step, {"attempt": 1})
    _append(conn, run_id, "step_completed", step, {"stepName": rw.STEP, "result": ENCRYPTED})
    return run_id, step


def holed(conn: psycopg.Connection[Any], spec: int) -> str:
    """A dense log whose slot 3 was deleted (a duplicate removed by hand): by SQL."""
    run_id = _run_row(conn, str(spec), marked=True)
    step = rw.new_step_id()
    _append(conn, run_id, "run_created", None, _created_data(), spec=spec, first=True)
    _append(conn, run_id, "run_started", spec=spec)
    _append(conn, run_id, "step_created", step, {"stepName": rw.STEP, "input": b"x"}, spec)
    _append(conn, run_id, "step_started", step, {"attempt": 1}, spec)
    conn.execute(
        "DELETE FROM workflow.workflow_events WHERE run_id = %s AND id = %s",
        (run_id, ids.slot_event_id(3)),
    )
    return run_id


def foreign_slot_one(conn: psycopg.Connection[Any]) -> str:
    """Died between marker and run_created; the next writer took slot 1 (F7(c))."""
    run_id = _run_row(conn, "7", marked=True)
    _append(conn, run_id, "run_started")
    return run_id


def legacy_restart(conn: psycopg.Connection[Any]) -> str:
    """A spec-2 run (a Python SDK's stamp) without run_created in a slot-era world: by the
    evidence rule a legacy run, so its log stays wevt_ and it gets no marker."""
    run_id = _run_row(conn, "2", marked=False)
    _append(conn, run_id, "run_started", spec=2)
    return run_id


def healthy(conn: psycopg.Connection[Any]) -> str:
    run_id = _run_row(conn, "7", marked=True)
    _append(conn, run_id, "run_created", None, _created_data(), first=True)
    _append(conn, run_id, "run_started")
    return run_id


def snapshot(db: Db, run_id: str) -> list[tuple[Any, ...]]:
    """Everything but the id, per event: what a rewrite must keep."""
    with db.connect() as conn:
        return conn.execute(
            "SELECT type, correlation_id, payload_cbor, payload, spec_version, created_at"
            " FROM workflow.workflow_events WHERE run_id = %s ORDER BY created_at, type",
            (run_id,),
        ).fetchall()


def log(db: Db, run_id: str) -> list[tuple[str, str]]:
    with db.connect() as conn:
        rows = conn.execute(
            "SELECT id, type FROM workflow.workflow_events WHERE run_id = %s ORDER BY id",
            (run_id,),
        ).fetchall()
    return [(r[0], r[1]) for r in rows]


def verdict(db: Db, run_id: str) -> str:
    """'ok', or what the package would answer (its message, or the database error)."""
    with db.connect() as conn:
        try:
            oracle.check_run(conn, run_id)
        except (oracle.OracleError, psycopg.Error) as exc:
            return str(exc).splitlines()[0]
    return "ok"


@dataclass(frozen=True)
class Shapes:
    """One run of every shape, plus the ids a test follows inside some of them."""

    started: str
    started_wevt: str
    tail: str
    tail_step: str
    restart: str
    restart_step: str
    hole7: str
    hole6: str
    slot_one: str
    legacy: str
    fine: str


def build_shapes(db: Db) -> Shapes:
    with db.connect() as conn:
        started, started_wevt = poisoned_run_started(conn)
        tail, tail_step = poisoned_tail(conn)
        restart, restart_step = restart_shape(conn)
        return Shapes(
            started, started_wevt, tail, tail_step, restart, restart_step,
            holed(conn, 7), holed(conn, 6), foreign_slot_one(conn), legacy_restart(conn),
            healthy(conn),
        )  # fmt: skip


def test_oracle_refuses_each_damaged_shape(slot_world) -> None:
    """The oracle is a judge only if it fails what the package fails."""
    sh = build_shapes(slot_world)
    started, tail, restart, hole7, hole6 = sh.started, sh.tail, sh.restart, sh.hole7, sh.hole6
    slot_one, fine = sh.slot_one, sh.fine
    assert verdict(slot_world, started).startswith("Event id is not slot-numbered: wevt_")
    assert verdict(slot_world, tail).startswith("Event id is not slot-numbered: wevt_")
    assert "does not start with run_created" in verdict(slot_world, restart)
    assert "gap in the event numbering at slot 3" in verdict(slot_world, hole7)
    assert "gap in the event numbering at slot 3" in verdict(slot_world, hole6)
    assert "does not start with run_created" in verdict(slot_world, slot_one)
    assert verdict(slot_world, fine) == "ok"
    with slot_world.connect() as conn, pytest.raises(psycopg.errors.InvalidTextRepresentation):
        oracle.create_event(conn, tail, "run_started")  # the world's own 22P02


def test_apply_all_allow_rewrite_heals_every_shape(slot_world, apply, repair, doctor_json) -> None:
    sh = build_shapes(slot_world)
    started, started_wevt, tail, tail_step = sh.started, sh.started_wevt, sh.tail, sh.tail_step
    restart, restart_step, hole7, hole6 = sh.restart, sh.restart_step, sh.hole7, sh.hole6
    slot_one, legacy, fine = sh.slot_one, sh.legacy, sh.fine
    rewritten = (started, tail, restart, hole6, slot_one)
    before = {r: snapshot(slot_world, r) for r in (*rewritten, hole7, legacy, fine)}
    fine_log = log(slot_world, fine)

    status, report = apply(slot_world, "--all", "--allow-rewrite")
    assert status == 0, report
    assert set(outcomes(report)["WF122"]) == set(outcomes(report)["WF101"]) == {"applied"}
    assert doctor_json(slot_world, "--all")["summary"]["findings"] == 0

    # Renumbered runs: same events (ids aside), one run_created added where it was missing.
    for run_id in rewritten:
        after = snapshot(slot_world, run_id)
        added = [e for e in after if e not in before[run_id]]
        assert all(e in after for e in before[run_id]), run_id
        expected = {started: ["step_created"], tail: [], hole6: []}.get(run_id, ["run_created"])
        assert [e[0] for e in added] == expected
    assert [t for _, t in log(slot_world, started)][:3] == ["run_created", "run_started",
                                                           "step_created"]  # fmt: skip
    assert [t for _, t in log(slot_world, restart)] == [
        "run_created", "run_started", "step_created", "step_started", "step_completed"
    ]  # fmt: skip
    with slot_world.connect() as conn:
        payload = conn.execute(
            "SELECT payload_cbor FROM workflow.workflow_events WHERE run_id = %s"
            " AND correlation_id = %s AND type = 'step_completed'",
            (tail, tail_step),
        ).fetchone()[0]
        markers = conn.execute(
            "SELECT count(*) FROM workflow.workflow_event_slots WHERE run_id = ANY(%s)",
            ([restart, legacy],),
        ).fetchone()[0]
    assert codec.decode(payload)["result"] == ENCRYPTED
    assert markers == 1  # the restart run got its marker; the legacy run stays legacy
    # A spec-7 hole is filled with noop; the others keep their ids.
    assert log(slot_world, hole7)[2] == (ids.slot_event_id(3), "noop")
    assert next(e for e in snapshot(slot_world, hole7) if e not in before[hole7])[0] == "noop"
    assert [t for _, t in log(slot_world, hole6)] == [
        "run_created", "run_started", "step_started"
    ]  # fmt: skip
    assert log(slot_world, legacy)[0][0].startswith("wevt_")  # placed before its first event
    assert log(slot_world, fine) == fine_log and snapshot(slot_world, fine) == before[fine]
    assert started_wevt not in [i for i, _ in log(slot_world, started)]
    assert restart_step in {e[1] for e in snapshot(slot_world, restart)}

    for run_id in (*rewritten, hole7, legacy, fine):
        assert verdict(slot_world, run_id) == "ok", run_id
    with slot_world.connect() as conn:  # and the world's own allocator appends after it
        n = len(log(slot_world, tail))
        assert oracle.create_event(conn, tail, "step_started", tail_step) == ids.slot_event_id(
            n + 1
        )

    status, again = apply(slot_world, "--all", "--allow-rewrite")
    assert not [i for i in again["items"] if i["outcome"] == "applied"], again
    # the step_started appended above sorts after its step's completion: doctor calls that
    # WF141 (report only), and the apply's verdict is doctor's
    assert status == 2 and again["after"] == {"WF141": 1}, again
    with slot_world.connect() as conn:
        audits = conn.execute(
            "SELECT code, details FROM wfctl.repair_log WHERE run_id = %s", (tail,)
        ).fetchall()
    moves = [a for c, d in audits for a in d["actions"] if a.startswith("renumber ")]
    assert [c for c, _ in audits] == ["WF122"] and len(moves) == 2  # the old -> new map


def test_without_allow_rewrite_nothing_is_renumbered(slot_world, apply, repair) -> None:
    with slot_world.connect() as conn:
        tail, _ = poisoned_tail(conn)
        restart, _ = restart_shape(conn)
        # A dense slot log whose marker alone is missing (by SQL: the writer would number a
        # marker-less run legacy): restoring the marker rewrites nothing, no flag needed.
        lost = _run_row(conn, "7", marked=False)
        for n, kind in enumerate(("run_created", "run_started"), start=1):
            conn.execute(
                "INSERT INTO workflow.workflow_events (id, type, run_id, payload_cbor,"
                " spec_version) VALUES (%s, %s, %s, %s, 7)",
                (ids.slot_event_id(n), kind, lost, codec.encode(_created_data())),
            )
    logs = {r: log(slot_world, r) for r in (tail, restart, lost)}
    status, report = apply(slot_world)
    assert status == 2
    reasons = {i["code"]: i["reason"] for i in report["items"] if i["outcome"] == "refused"}
    assert "--allow-rewrite" in reasons["WF122"] and "--allow-rewrite" in reasons["WF121"]
    assert {i["run_id"] for i in report["items"] if i["outcome"] == "applied"} == {lost}
    assert all(log(slot_world, r) == logs[r] for r in logs)
    with slot_world.connect() as conn:
        oracle.check_run(conn, lost)
    _, plan = repair(slot_world, "--allow-rewrite", "--min-age", "0s", "--force-min-age")
    lines = [a for i in plan["items"] for a in i["actions"]]
    assert any(a.startswith("renumber wevt_") for a in lines)
    assert all(log(slot_world, r) == logs[r] for r in logs)  # a dry run writes nothing


def test_a_write_during_the_rewrite_refuses_it(slot_world) -> None:
    """The run's events are locked and re-read before commit: an event inserted between
    plan and commit (here by a trigger that fires on the rewrite's own marker insert) makes
    the rewrite refuse and undo itself."""
    with slot_world.connect() as conn:
        run_id, _ = restart_shape(conn)
        conn.execute(
            "CREATE FUNCTION workflow.sneak() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN"
            " INSERT INTO workflow.workflow_events (id, type, run_id) VALUES"
            " ('wevt_7ZZZZZZZZZZZZZZZZZZZZZZZZZ', 'step_started', NEW.run_id); RETURN NEW; END $$;"
            " CREATE TRIGGER sneak AFTER INSERT ON workflow.workflow_event_slots"
            " FOR EACH ROW EXECUTE FUNCTION workflow.sneak()"
        )
    before = log(slot_world, run_id)
    with connect(Target(ResolvedDsn(slot_world.dsn, "test")), autocommit=True) as conn:
        world = model.inspect(conn, with_drift=False)
        options = runner.RepairOptions(min_age=timedelta(0), allow_rewrite=True, run_ids=(run_id,))
        report = runner.repair(conn, world, options, apply=True, reason="race")
    [item] = report.items
    assert item.outcome == "refused" and "during the rewrite" in item.reason
    assert log(slot_world, run_id) == before


def test_a_run_with_a_running_job_is_refused(slot_world, apply) -> None:
    """A queue job of the run locked by a live worker: the rewrite refuses (graphile's tables
    in their minimal shape, as repair/hold_run_jobs reads them)."""
    with slot_world.connect() as conn:
        run_id, _ = poisoned_tail(conn)
        conn.execute(
            "CREATE SCHEMA graphile_worker;"
            " CREATE TABLE graphile_worker._private_tasks (id int PRIMARY KEY, identifier text);"
            " CREATE TABLE graphile_worker._private_jobs (id bigint PRIMARY KEY, task_id int,"
            " payload json, key text, run_at timestamptz DEFAULT now(), attempts int DEFAULT 0,"
            " max_attempts int DEFAULT 49, locked_at timestamptz, locked_by text,"
            " created_at timestamptz DEFAULT now(), last_error text);"
            " INSERT INTO graphile_worker._private_tasks VALUES (1, 'workflow_flows')"
        )
        waiting, _ = poisoned_tail(conn)  # its job waits for a retry: not running
        for job_id, run, locked in ((1, run_id, "now()"), (2, waiting, "NULL")):
            body = f'{{"runId": "{run}"}}'.encode().hex()
            conn.execute(
                "INSERT INTO graphile_worker._private_jobs (id, task_id, payload, locked_at,"
                " locked_by) VALUES (%s, 1, json_build_object('data', encode(decode(%s, 'hex'),"
                f" 'base64')), {locked}, CASE WHEN {locked} IS NULL THEN NULL ELSE 'worker-live'"
                " END)",
                (job_id, body),
            )
    before = log(slot_world, run_id)
    status, report = apply(slot_world, "--allow-rewrite", "--only", "WF122")
    by_run = {i["run_id"]: i for i in report["items"]}
    assert status == 2 and "worker-live" in by_run[run_id]["reason"]
    assert log(slot_world, run_id) == before
    # The waiting job was held for the rewrite's transaction, then left as it was.
    assert by_run[waiting]["outcome"] == "applied"
    with slot_world.connect() as conn:
        oracle.check_run(conn, waiting)
        job = conn.execute("SELECT locked_at, attempts FROM graphile_worker._private_jobs"
                           " WHERE id = 2").fetchone()  # fmt: skip
    assert job == (None, 0)
