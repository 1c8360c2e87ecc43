"""`doctor --incremental` reports what a full `doctor --all` reports on the same world, pass
after pass, while the world changes between passes (new faults written through the real
package, a torn update on an old run, a finding cleared by a deletion alone)."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest

from tests import realworld as rw
from tests.checks.slot_rows import marked_run
from tests.conftest import Db, node_available
from tests.faults import drop_faults, fail_insert

pytestmark = pytest.mark.skipif(not node_available(), reason="node/npm not found")


def _findings(run_cli, db: Db, *args: str) -> tuple[set[tuple], str]:
    status, out, err = run_cli(
        "--dsn", db.dsn, "--format", "json", "doctor", "--min-age", "0s", "--limit", "100000",
        *args,
    )  # fmt: skip
    assert status in (0, 2), err
    report = json.loads(out)
    found = {
        (c["code"], s["run_id"], s["entity_id"], s["in_flight"])
        for c in report["checks"]
        for s in c["samples"]
    }
    counts = {c["code"]: (c["count"], c["in_flight"], c["status"]) for c in report["checks"]}
    return found | {("counts", json.dumps(counts, sort_keys=True), None, None)}, err


def _same(run_cli, db: Db) -> str:
    """One incremental pass; its findings must be the full --all findings."""
    incremental, err = _findings(run_cli, db, "--incremental", "--clock-skew", "0s")
    full, _ = _findings(run_cli, db, "--all")
    assert incremental == full
    assert "watermark saved" in err
    return err


def test_incremental_equals_all_pass_after_pass(real_world: Db, run_cli) -> None:
    world = rw.RealWorld(real_world.dsn)
    clean = world.clean_world()
    sleeping, hooked = clean["sleeping"], clean["hook_waiting"]
    with real_world.connect() as conn:
        run = world.new_run()
        step = rw.new_step_id()
        with fail_insert(conn, "workflow_events", run, "step_created"):
            world.ops([rw.step_created(run, step, rw.STEP, rw.devl("[1]"))])
        drop_faults(conn)
    assert "full pass" in _same(run_cli, real_world)

    # nothing changed: an empty scope but for the flagged run
    assert "1 runs since" in _same(run_cli, real_world)

    with real_world.connect() as conn:
        # new faults through the real package
        other = world.new_run()
        wait = rw.new_wait_id()
        with fail_insert(conn, "workflow_events", other, "wait_created"):
            world.ops([rw.wait_created(other, wait, rw.utcnow() + timedelta(hours=1))])
        half = rw.new_run_id()
        with fail_insert(conn, "workflow_events", half, "run_created"):
            world.ops([rw.run_created(half)])
        drop_faults(conn)
        # a torn write on an old, clean run: its wait row completes without wait_completed
        # (the row is all that changes: no event, nothing created)
        conn.execute(
            "UPDATE workflow.workflow_waits SET status = 'completed',"
            " completed_at = now() AT TIME ZONE 'UTC', updated_at = now() AT TIME ZONE 'UTC'"
            " WHERE run_id = %s",
            (sleeping,),
        )
        # a torn run end: the row turns terminal, no run_completed (live at the last pass)
        conn.execute(
            "UPDATE workflow.workflow_runs SET status = 'completed',"
            " completed_at = now() AT TIME ZONE 'UTC', updated_at = now() AT TIME ZONE 'UTC'"
            " WHERE id = %s",
            (hooked,),
        )
        # the first finding cleared by a deletion alone (no event, no row update)
        conn.execute("DELETE FROM workflow.workflow_steps WHERE step_id = %s", (step,))
    _same(run_cli, real_world)
    found, _ = _findings(run_cli, real_world, "--all")
    codes = {(code, run_id) for code, run_id, _, _ in found}
    assert {("WF112", sleeping), ("WF113", hooked), ("WF102", other), ("WF121", half)} <= codes
    assert ("WF101", run) not in codes

    # more clean runs, nothing else: still equal
    world.clean_world()
    _same(run_cli, real_world)
    # the watermark went into schema wfctl as wfctl manages it: the audit log is there too
    assert real_world.scalar("SELECT to_regclass('wfctl.repair_log')::text") == "wfctl.repair_log"


def test_incremental_refuses_a_scope_and_writes_only_when_asked(wfctl_world: Db, run_cli) -> None:
    status, _, err = run_cli("--dsn", wfctl_world.dsn, "doctor", "--incremental", "--run", "x")
    assert status == 64 and "--incremental" in err
    assert run_cli("--dsn", wfctl_world.dsn, "doctor", "--all")[0] == 0
    assert wfctl_world.scalar("SELECT to_regclass('wfctl.doctor_watermark')::text") is None
    assert run_cli("--dsn", wfctl_world.dsn, "doctor", "--incremental")[0] == 0
    assert wfctl_world.scalar("SELECT count(*) FROM wfctl.doctor_watermark") == 1


def _slot(n: int) -> str:
    return "evnt_" + str(n).zfill(26)


def _slot_run(conn, status: str, spec: str | None, types: list[tuple[str, str | None]]) -> str:
    """A marked slot-era run whose events take slots 1..n (hand-written: no slot-era release
    is on the registry)."""
    run_id = marked_run(conn, [], status, spec)
    _append(conn, run_id, 1, types)
    return run_id


def _append(conn, run_id: str, first: int, types: list[tuple[str, str | None]]) -> None:
    for n, (kind, correlation) in enumerate(types, start=first):
        conn.execute(
            "INSERT INTO workflow.workflow_events (id, type, correlation_id, run_id, spec_version)"
            " VALUES (%s, %s, %s, %s, 7)",
            (_slot(n), kind, correlation, run_id),
        )


def test_incremental_on_a_slot_world_finds_writes_to_ended_runs(slot_world: Db, run_cli) -> None:
    """Slot ids carry no time: new events are probed per run (open, fresh, legacy-spec runs),
    never by scanning the events; the writes the package allows on an ended run are seen."""
    step = rw.new_step_id()
    hook = "hook_" + rw.new_run_id().removeprefix("wrun_")
    with slot_world.connect() as conn:
        done = [("run_created", None), ("run_started", None), ("run_completed", None)]
        _slot_run(conn, "completed", "7", done)  # clean, ended: never touched again
        # ended, but its step is still pending: the package lets that step complete later
        ended = _slot_run(conn, "completed", "7", [*done[:2], ("step_created", step), done[2]])
        conn.execute(
            "INSERT INTO workflow.workflow_steps (run_id, step_id, step_name, status, attempt)"
            " VALUES (%s, %s, 'step//x', 'pending', 0)",
            (ended, step),
        )
        legacy = _slot_run(conn, "completed", None, done)  # spec NULL: a legacy run
        conn.commit()
    assert "full pass" in _same(run_cli, slot_world)
    with slot_world.connect() as conn:
        conn.execute(
            "UPDATE workflow.workflow_steps SET status = 'completed' WHERE step_id = %s", (step,)
        )
        _append(conn, ended, 5, [("step_completed", step)])
        _append(conn, legacy, 4, [("hook_received", hook)])
        # a run made and broken between two passes: a gap in its slots
        fresh = marked_run(conn, [], "completed")
        _append(conn, fresh, 1, done[:1])
        _append(conn, fresh, 3, done[1:])
        conn.commit()
    _same(run_cli, slot_world)
    found, _ = _findings(run_cli, slot_world, "--all")
    flagged = {run_id for _, run_id, _, _ in found}
    assert {ended, legacy, fresh} <= flagged
