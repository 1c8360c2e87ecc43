"""Repairs that must leave a log every replay consumes: a restored creation event goes before
an ended entity's events (not after its completion, WF143), and WF104 frees a finished run's
leftover rows. Produced through the real package's write path (tests/realworld.py)."""

from __future__ import annotations

from tests import realworld as rw
from tests.checks.test_wf104 import hook_row_outlives_its_run
from tests.checks.test_wf143 import completed_wait_without_wait_created
from tests.repair.conftest import events, outcomes


def test_wait_created_restored_before_the_wait_completed(world, real_world, apply, doctor_json):
    with real_world.connect() as conn:
        run_id, wait_id = completed_wait_without_wait_created(world, conn)
    status, report = apply(real_world, "--only", "WF102")
    assert status == 0 and outcomes(report) == {"WF102": ["applied"]}, report
    [item] = report["items"]
    assert any("placed before the entity's first event" in a for a in item["actions"])
    assert [e[1] for e in events(real_world, run_id, wait_id)] == [
        "wait_created",
        "wait_completed",
    ]
    checks = {c["code"]: c for c in doctor_json(real_world, "--all")["checks"]}
    assert checks["WF102"]["count"] == 0 and checks["WF143"]["count"] == 0
    # idempotent: a second apply finds nothing
    status, again = apply(real_world, "--only", "WF102")
    assert status == 0 and again["items"] == []


def test_leftover_hook_row_of_a_finished_run_is_deleted(world, real_world, apply, doctor_json):
    with real_world.connect() as conn:
        run_id, hook_id = hook_row_outlives_its_run(world, conn)
    status, report = apply(real_world, "--only", "WF104")
    assert status == 0 and outcomes(report) == {"WF104": ["applied"]}, report
    assert report["items"][0]["event_ids"] == [f"row:{hook_id}:delete_leftover_hook"]
    with real_world.connect() as conn:
        left = conn.execute(
            "SELECT count(*) FROM workflow.workflow_hooks WHERE run_id = %s", (run_id,)
        ).fetchone()[0]
        audit = conn.execute(
            "SELECT count(*) FROM wfctl.repair_log WHERE code = 'WF104' AND run_id = %s",
            (run_id,),
        ).fetchone()[0]
    assert left == 0 and audit == 1
    checks = {c["code"]: c for c in doctor_json(real_world, "--all")["checks"]}
    assert checks["WF104"]["count"] == 0
    # the token is free again: a new run creating it owns it (no hook_conflict)
    other = world.new_run()
    token = f"late-{hook_id[-8:]}"
    created = world.ok([rw.hook_created(other, rw.new_hook_id(), token)])
    assert "conflict" not in str(created[0]).lower()
    status, again = apply(real_world, "--only", "WF104")
    assert status == 0 and again["items"] == []
