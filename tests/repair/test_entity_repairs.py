"""WF101, WF102, WF103, WF111, WF112, WF113, WF121: after --apply the finding is gone, the
event is exactly what the runtime expects, a second --apply does nothing, the audit has it."""

from __future__ import annotations

from datetime import timedelta

import pytest

from tests import realworld as rw
from tests.checks.test_wf101 import orphan_step
from tests.checks.test_wf102 import orphan_wait
from tests.checks.test_wf103 import orphan_hook
from tests.checks.test_wf111 import finished_step_without_event
from tests.checks.test_wf112 import completed_wait_without_event
from tests.checks.test_wf121 import run_without_run_created
from tests.repair.conftest import FORCE, events, outcomes
from wfctl.world import codec, ids


def _apply_and_verify(apply, db, code: str, run_id: str) -> dict:
    status, report = apply(db, "--only", code)
    assert status == 0, report
    assert outcomes(report)[code] == ["applied"], report
    assert report["after"].get(code, 0) == 0
    status, again = apply(db, "--only", code)
    assert status == 0 and again["items"] == []  # idempotent: nothing left to do
    return report


def test_wf101_appends_step_created_and_the_lazy_start_is_then_accepted(world, real_world, apply):
    run_id, step_id = orphan_step(world, real_world)
    _apply_and_verify(apply, real_world, "WF101", run_id)
    [event] = [e for e in events(real_world, run_id, step_id) if e[1] == "step_created"]
    assert event[0].startswith("wevt_")
    assert codec.decode(event[3]) == {"stepName": rw.STEP, "input": rw.devl("[1]")}
    assert event[4] == 5
    # the real package now treats the step as created: a plain start succeeds
    world.ok([rw.step_started(run_id, step_id)])


def test_wf102_appends_wait_created_with_the_rows_resume_at(world, real_world, apply) -> None:
    run_id, wait_id = orphan_wait(world, real_world)
    _apply_and_verify(apply, real_world, "WF102", run_id)
    [event] = events(real_world, run_id, wait_id)
    assert event[1] == "wait_created" and "resumeAt" in codec.decode(event[3])
    world.ok([rw.wait_completed(run_id, wait_id)])  # the package can now complete it


def test_wf103_appends_hook_created(world, real_world, apply) -> None:
    run_id, hook_id = orphan_hook(world, real_world)
    _apply_and_verify(apply, real_world, "WF103", run_id)
    [event] = events(real_world, run_id, hook_id)
    assert codec.decode(event[3])["token"] == f"tok-{hook_id[-8:]}"


@pytest.mark.parametrize(
    ("kind", "key", "value"),
    [
        ("step_completed", "result", rw.devl("[42]")),
        ("step_failed", "error", rw.devl('["boom"]')),
        ("step_retrying", "error", rw.devl('["again"]')),
    ],
)
def test_wf111_appends_the_outcome_with_exact_bytes(world, real_world, apply, kind, key, value):
    run_id, step_id = finished_step_without_event(world, real_world, kind)
    _apply_and_verify(apply, real_world, "WF111", run_id)
    last = events(real_world, run_id, step_id)[-1]
    assert last[1] == kind
    data = codec.decode(last[3])
    assert data["stepName"] == rw.STEP and data[key] == value  # bytes, never double-wrapped


def test_wf112_copies_resume_at_from_wait_created(world, real_world, apply) -> None:
    run_id, wait_id = completed_wait_without_event(world, real_world)
    _apply_and_verify(apply, real_world, "WF112", run_id)
    created, completed = events(real_world, run_id, wait_id)
    assert completed[1] == "wait_completed"
    assert codec.decode(completed[3])["resumeAt"] == codec.decode(created[3])["resumeAt"]
    assert completed[0] > created[0]  # appended at the tail


def test_wf113_appends_the_terminal_event(world, real_world, apply) -> None:
    from tests.faults import fail_insert

    run_id = world.new_run()
    with real_world.connect() as conn, fail_insert(conn, "workflow_events", run_id, "run_failed"):
        world.ops([rw.run_failed(run_id, rw.devl('["x"]'), "USER_ERROR")])
    status, report = apply(real_world, "--only", "WF113", "--all")
    assert status == 0 and outcomes(report)["WF113"] == ["applied"]
    last = events(real_world, run_id)[-1]
    assert last[1] == "run_failed"
    assert codec.decode(last[3]) == {"error": rw.devl('["x"]'), "errorCode": "USER_ERROR"}


def test_wf121_restores_run_created_before_the_first_event(world, real_world, apply) -> None:
    run_id = run_without_run_created(world, real_world)
    _apply_and_verify(apply, real_world, "WF121", run_id)
    log = events(real_world, run_id)
    assert [e[1] for e in log][:2] == ["run_created", "run_started"]  # it sorts first
    data = codec.decode(log[0][3])
    assert data["workflowName"] == rw.WORKFLOW and data["deploymentId"] == "postgres"
    assert data["input"] == b"devl[]"


def test_wf121_places_run_created_past_an_id_another_run_holds(world, real_world, apply) -> None:
    """The package mints ids +1 within a millisecond, so the id just below a run's first event
    is often another run's (beta.29 keys events by id alone): the restored run_created must
    not take `first - 1` (it did, and the insert met the key: "could not allocate")."""
    run_id = run_without_run_created(world, real_world)
    other = rw.new_run_id()
    world.ok([rw.run_created(other)])
    with real_world.connect() as conn:
        (first,) = conn.execute(
            "SELECT min(id) FROM workflow.workflow_events WHERE run_id = %s", (run_id,)
        ).fetchone()
        below = "wevt_" + ids.ulid_text(ids.ulid_value(first[5:]) - 1)
        conn.execute(
            "UPDATE workflow.workflow_events SET id = %s WHERE run_id = %s", (below, other)
        )
    _apply_and_verify(apply, real_world, "WF121", run_id)
    log = events(real_world, run_id)
    assert [e[1] for e in log][:2] == ["run_created", "run_started"]
    assert log[0][0] < first and log[0][0] != below


def test_audit_log_records_each_repair(world, real_world, apply, run_cli) -> None:
    import json

    run_id, step_id = orphan_step(world, real_world)
    _, report = apply(real_world, "--only", "WF101")
    status, out, _ = run_cli(
        "--dsn", real_world.dsn, "--format", "json", "repair", "log", "--run", run_id
    )
    assert status == 0
    [entry] = json.loads(out)
    assert entry["code"] == "WF101" and entry["entity_id"] == step_id
    assert entry["reason"] == "test" and entry["db_user"] == "postgres"
    assert entry["event_ids"] == report["items"][0]["event_ids"]


def test_dry_run_prints_the_plan_and_writes_nothing(world, real_world, repair) -> None:
    from tests.test_doctor import _checksums

    orphan_step(world, real_world)
    completed_wait_without_event(world, real_world)
    before = _checksums(real_world)
    status, report = repair(real_world, *FORCE)
    assert status == 0
    assert set(outcomes(report)) >= {"WF101", "WF112"}
    assert {o for v in outcomes(report).values() for o in v} <= {"planned", "skipped"}
    plan = " ".join(a for i in report["items"] for a in i["actions"])
    assert "append step_created" in plan and "id scheme: legacy" in plan and "guard:" in plan
    assert _checksums(real_world) == before


def test_too_young_is_skipped_and_nothing_written(world, real_world, repair) -> None:
    run_id, step_id = orphan_step(world, real_world)
    status, report = repair(real_world, "--apply", "--yes", "--reason", "t", "--only", "WF101")
    assert status == 0
    [item] = report["items"]
    assert item["outcome"] == "skipped" and "too young" in item["reason"]
    assert events(real_world, run_id, step_id) == []


def test_min_age_floor_and_reason_are_enforced(world, real_world, run_cli) -> None:
    status, _, err = run_cli("--dsn", real_world.dsn, "repair", "--min-age", "10s")
    assert status == 64 and "floor" in err
    status, _, err = run_cli("--dsn", real_world.dsn, "repair", "--apply", "--yes")
    assert status == 64 and "--reason" in err


def test_wait_for_resume_at_is_timedelta_safe(world, real_world, apply) -> None:
    # a wait far in the future keeps its exact instant through the repair
    run_id, wait_id = world.new_run(), rw.new_wait_id()
    from tests.faults import fail_insert

    resume = rw.utcnow() + timedelta(days=30)
    with real_world.connect() as conn, fail_insert(conn, "workflow_events", run_id, "wait_created"):
        world.ops([rw.wait_created(run_id, wait_id, resume)])
    apply(real_world, "--only", "WF102")
    [event] = events(real_world, run_id, wait_id)
    got = codec.decode(event[3])["resumeAt"]
    assert abs((got - resume).total_seconds()) < 0.001
