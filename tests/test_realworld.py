"""The harness against the REAL package: clean writes land as documented, and each fault
tears exactly the write the reference says is non-atomic, for the targeted run only.

These tests pin the rows the doctor checks will be judged against, so they assert on the
database, not on the driver's summaries (those are only checked to agree with it).
"""

from __future__ import annotations

import base64
import json
import signal
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from tests import realworld as rw
from tests.faults import (
    MESSAGE,
    drop_faults,
    fail_insert,
    installed_faults,
    slow_insert,
    terminate,
    wait_for_sleeper,
)
from wfctl.world import codec
from wfctl.world.ids import is_legacy_event_id, ulid_time, wait_row_key

EVENT_QUERY = (
    "SELECT id, type, correlation_id, payload, payload_cbor, spec_version"
    " FROM workflow.workflow_events WHERE run_id = %s ORDER BY id"
)


@pytest.fixture
def world(real_world: Any) -> rw.RealWorld:
    return rw.RealWorld(real_world.dsn)


@pytest.fixture
def conn(real_world: Any) -> Any:
    with real_world.connect() as connection:
        yield connection
        drop_faults(connection)


def events(conn: Any, run_id: str) -> list[tuple[Any, ...]]:
    return conn.execute(EVENT_QUERY, (run_id,)).fetchall()


def types(conn: Any, run_id: str, correlation_id: str | None = None) -> list[str]:
    return [e[1] for e in events(conn, run_id) if correlation_id in (None, e[2])]


def assert_fault(result: dict[str, Any], table: str = "workflow_events") -> None:
    """The driver reported our trigger's error (wrapped by drizzle) instead of crashing."""
    assert result["ok"] is False
    assert result["cause"]["code"] == "P0001"
    assert result["cause"]["message"].startswith(MESSAGE)
    assert f"workflow.{table}" in result["cause"]["message"]


def test_clean_world_rows_are_as_documented(world: rw.RealWorld, conn: Any) -> None:
    runs, ops = rw.clean_world_ops()
    lazy_run, lazy_step = rw.new_run_id(), rw.new_step_id()
    ops += [rw.run_created(lazy_run), rw.run_started(lazy_run)]
    ops += rw.step_ops(lazy_run, lazy_step, lazy=True)
    results = world.ok(ops)

    # The driver's summaries agree with the rows.
    for op, result in zip(ops, results, strict=True):
        assert result["event"]["eventType"] == op["event"]["eventType"]
        assert conn.execute(
            "SELECT type FROM workflow.workflow_events WHERE id = %s", (result["event"]["eventId"],)
        ).fetchone() == (op["event"]["eventType"],)
    assert results[-2]["stepCreated"] is True  # the lazy start created the step

    statuses = dict(conn.execute("SELECT id, status FROM workflow.workflow_runs").fetchall())
    assert statuses == {
        runs["completed"]: "completed",
        runs["running_step_completed"]: "running",
        runs["sleeping"]: "running",
        runs["hook_waiting"]: "running",
        lazy_run: "running",
    }
    run = conn.execute(
        "SELECT deployment_id, name, spec_version, input_cbor, output_cbor, completed_at"
        " FROM workflow.workflow_runs WHERE id = %s",
        (runs["completed"],),
    ).fetchone()
    assert run[:3] == ("postgres", rw.WORKFLOW, "5")  # spec_version is varchar
    assert codec.decode(run[3]) == b"devl[]"
    assert codec.decode(run[4]) == b"devl[null]"
    assert run[5] is not None

    completed = events(conn, runs["completed"])
    assert [e[1] for e in completed] == [
        "run_created",
        "run_started",
        *["step_created", "step_started", "step_completed"] * 2,
        "run_completed",
    ]
    for event_id, _, _, payload, _, spec in completed:
        assert is_legacy_event_id(event_id) and payload is None and spec == 5
    assert ulid_time(completed[0][0]) is not None
    by_type = {e[1]: e for e in completed}
    assert codec.decode(by_type["run_created"][4]) == {
        "deploymentId": "postgres",
        "workflowName": rw.WORKFLOW,
        "input": b"devl[]",
    }
    assert by_type["run_started"][4] is None  # stored without eventData
    assert codec.decode(by_type["step_created"][4]) == {
        "stepName": rw.STEP,
        "input": b"devl[[],{}]",
    }
    assert by_type["step_started"][4] is None
    assert codec.decode(by_type["step_completed"][4]) == {"stepName": rw.STEP, "result": b"devl[1]"}
    assert codec.decode(by_type["run_completed"][4]) == {"output": b"devl[null]"}
    # Terminal runs lose their waits and hooks; steps stay.
    for table in ("workflow_waits", "workflow_hooks"):
        count = conn.execute(
            f"SELECT count(*) FROM workflow.{table} WHERE run_id = %s", (runs["completed"],)
        ).fetchone()
        assert count == (0,)
    steps = conn.execute(
        "SELECT status, attempt, step_name, input_cbor, output_cbor, started_at, completed_at"
        " FROM workflow.workflow_steps WHERE run_id = %s",
        (runs["completed"],),
    ).fetchall()
    assert len(steps) == 2
    for status, attempt, name, input_cbor, output_cbor, started, done in steps:
        assert (status, attempt, name) == ("completed", 1, rw.STEP)
        assert codec.decode(input_cbor) == b"devl[[],{}]"
        assert codec.decode(output_cbor) == b"devl[1]"
        assert started is not None and done is not None

    # The sleeper: wait row keyed `<run_id>-<correlation_id>`, resumeAt as a CBOR date.
    wait_id, wait_run, wait_status, resume_at = conn.execute(
        "SELECT wait_id, run_id, status, resume_at FROM workflow.workflow_waits"
    ).fetchone()
    sleeper = events(conn, runs["sleeping"])
    wait_event = next(e for e in sleeper if e[1] == "wait_created")
    assert (wait_run, wait_status) == (runs["sleeping"], "waiting")
    assert wait_id == wait_row_key(runs["sleeping"], wait_event[2])
    resume = codec.decode(wait_event[4])["resumeAt"]
    assert isinstance(resume, datetime) and resume > datetime.now(UTC)
    assert abs(resume.replace(tzinfo=None) - resume_at) < timedelta(milliseconds=1)

    hook = conn.execute(
        "SELECT run_id, hook_id, token, owner_id, project_id, environment, is_webhook, is_system"
        " FROM workflow.workflow_hooks"
    ).fetchone()
    hook_event = events(conn, runs["hook_waiting"])[-1]
    assert hook_event[1] == "hook_created" and hook[1] == hook_event[2]
    assert hook[0] == runs["hook_waiting"] and hook[3:] == ("", "", "", False, False)
    assert codec.decode(hook_event[4]) == {"token": hook[2], "isWebhook": False}

    # The lazy start: one transaction wrote the row, a synthetic step_created, step_started.
    assert types(conn, lazy_run, lazy_step) == ["step_created", "step_started", "step_completed"]


def test_queue_writes_one_unclaimed_job(world: rw.RealWorld, conn: Any) -> None:
    run_id, ops = rw.new_run_ops()
    result = world.ok([*ops, rw.queue(rw.WORKFLOW, {"runId": run_id})])[-1]
    row = conn.execute(
        "SELECT j.key, j.payload, j.attempts, j.max_attempts, j.locked_at, t.identifier"
        " FROM graphile_worker._private_jobs j"
        " JOIN graphile_worker._private_tasks t ON t.id = j.task_id"
    ).fetchone()
    key, payload, attempts, max_attempts, locked_at, task = row
    assert key == payload["messageId"] == result["messageId"]
    # No runner claimed it: the driver keeps graphile's runner from starting.
    assert (task, attempts, max_attempts, locked_at) == ("workflow_flows", 0, 3, None)
    assert payload["id"] == rw.WORKFLOW and payload["attempt"] == 1
    assert json.loads(base64.b64decode(payload["data"])) == {"runId": run_id}


def test_f1_step_row_without_step_created(world: rw.RealWorld, conn: Any) -> None:
    run_id, ops = rw.new_run_ops()  # the client mints the id, so the fault can name it first
    step_id = rw.new_step_id()
    with fail_insert(conn, "workflow_events", run_id, "step_created") as fault:
        *_, created, lazy = world.ops(
            [*ops, rw.step_created(run_id, step_id), rw.step_started_lazy(run_id, step_id)]
        )
        assert fault.matches() == 1
    assert_fault(created)
    # The driver carried on: the lazy start hits the orphan (the F1 wedge).
    assert lazy == {
        "ok": False,
        "error": "EntityConflictError",
        "message": f'Step "{step_id}" already created',
    }
    row = conn.execute(
        "SELECT status, attempt, input_cbor FROM workflow.workflow_steps WHERE step_id = %s",
        (step_id,),
    ).fetchone()
    assert row[:2] == ("pending", 0) and codec.decode(row[2]) == b"devl[[],{}]"
    assert types(conn, run_id, step_id) == []
    # A plain step_created heals it (reference §3.4).
    world.ok([rw.step_created(run_id, step_id)])
    assert types(conn, run_id, step_id) == ["step_created"]


def test_f4_completed_wait_without_wait_completed(world: rw.RealWorld, conn: Any) -> None:
    run_id, ops = rw.new_run_ops()
    wait_id, resume = rw.new_wait_id(), rw.utcnow() + timedelta(seconds=1)
    with fail_insert(conn, "workflow_events", run_id, "wait_completed"):
        *_, completed, again = world.ops(
            [
                *ops,
                rw.wait_created(run_id, wait_id, resume),
                rw.wait_completed(run_id, wait_id, resume),
                rw.wait_completed(run_id, wait_id, resume),  # the runtime's re-send
            ]
        )
    assert_fault(completed)
    assert again["error"] == "EntityConflictError" and "already completed" in again["message"]
    row = conn.execute(
        "SELECT status, completed_at FROM workflow.workflow_waits WHERE wait_id = %s",
        (wait_row_key(run_id, wait_id),),
    ).fetchone()
    assert row[0] == "completed" and row[1] is not None
    assert types(conn, run_id, wait_id) == ["wait_created"]


def test_f5_completed_step_without_step_completed(world: rw.RealWorld, conn: Any) -> None:
    run_id, ops = rw.new_run_ops()
    step_id = rw.new_step_id()
    with fail_insert(conn, "workflow_events", run_id, "step_completed"):
        *_, done, restart = world.ops(
            [
                *ops,
                rw.step_created(run_id, step_id),
                rw.step_started(run_id, step_id),
                rw.step_completed(run_id, step_id, result_bytes=b"devl[42]"),
                rw.step_started(run_id, step_id),  # the replay re-dispatches the step
            ]
        )
    assert_fault(done)
    assert restart["error"] == "EntityConflictError" and "terminal" in restart["message"]
    row = conn.execute(
        "SELECT status, output_cbor, completed_at FROM workflow.workflow_steps WHERE step_id = %s",
        (step_id,),
    ).fetchone()
    assert row[0] == "completed" and codec.decode(row[1]) == b"devl[42]" and row[2] is not None
    assert types(conn, run_id, step_id) == ["step_created", "step_started"]


def test_other_torn_writes(world: rw.RealWorld, conn: Any) -> None:
    """One node process, one fault per run: the rest of the non-atomic writes of §3.4."""
    names = ("wait", "hook", "failed", "cancelled", "retry")
    setup: list[rw.Op] = []
    base: dict[str, str] = {}
    for name in names:
        base[name], ops = rw.new_run_ops()
        setup += ops
    orphan_run = rw.new_run_id()
    wait_id, hook_id, step_id = rw.new_wait_id(), rw.new_hook_id(), rw.new_step_id()
    setup += [rw.step_created(base["retry"], step_id), rw.step_started(base["retry"], step_id)]
    later = rw.utcnow() + timedelta(minutes=5)
    plan = [
        (orphan_run, "run_created", rw.run_created(orphan_run)),
        (base["wait"], "wait_created", rw.wait_created(base["wait"], wait_id, later)),
        (base["hook"], "hook_created", rw.hook_created(base["hook"], hook_id, "tok-orphan")),
        (base["failed"], "run_failed", rw.run_failed(base["failed"])),
        (base["cancelled"], "run_cancelled", rw.run_cancelled(base["cancelled"], "bye")),
        (
            base["retry"],
            "step_retrying",
            rw.step_retrying(base["retry"], step_id, retry_after=later),
        ),
    ]
    for run_id, event_type, _ in plan:
        fail_insert(conn, "workflow_events", run_id, event_type)  # once each
    resend = [
        rw.wait_created(base["wait"], wait_id, later),  # refused: never heals (F2)
        rw.hook_created(base["hook"], hook_id, "tok-orphan"),  # heals (F3)
    ]
    results = world.ops([*setup, *(op for _, _, op in plan), *resend])
    assert all(r["ok"] for r in results[: len(setup)])
    for result in results[len(setup) : -2]:
        assert_fault(result)
    wait_again, hook_again = results[-2:]
    assert wait_again["error"] == "EntityConflictError"
    assert "already exists" in wait_again["message"]
    assert hook_again["ok"] is True

    def one(query: str, run_id: str) -> Any:
        return conn.execute(query, (run_id,)).fetchone()

    run_status = "SELECT status FROM workflow.workflow_runs WHERE id = %s"
    assert one(run_status, orphan_run) == ("pending",)
    assert events(conn, orphan_run) == []
    waits = "SELECT status FROM workflow.workflow_waits WHERE run_id = %s"
    assert one(waits, base["wait"]) == ("waiting",)
    assert "wait_created" not in types(conn, base["wait"])
    hooks = "SELECT hook_id FROM workflow.workflow_hooks WHERE run_id = %s"
    assert one(hooks, base["hook"]) == (hook_id,)
    assert types(conn, base["hook"], hook_id) == ["hook_created"]  # only the re-sent one
    failed = one(
        "SELECT status, error_code, error_cbor FROM workflow.workflow_runs WHERE id = %s",
        base["failed"],
    )
    assert failed[:2] == ("failed", "USER_ERROR") and codec.decode(failed[2]) == b'devl["boom"]'
    assert types(conn, base["failed"]) == ["run_created", "run_started"]
    assert one(run_status, base["cancelled"]) == ("cancelled",)
    assert types(conn, base["cancelled"]) == ["run_created", "run_started"]
    step = one(
        "SELECT status, retry_after, error_cbor FROM workflow.workflow_steps WHERE run_id = %s",
        base["retry"],
    )
    assert step[0] == "pending" and step[1] is not None
    assert codec.decode(step[2]) == b'devl["retry"]'
    assert types(conn, base["retry"], step_id) == ["step_created", "step_started"]


def test_faults_hit_only_their_run_and_count_exactly(world: rw.RealWorld, conn: Any) -> None:
    (target, target_ops), (bystander, bystander_ops) = rw.new_run_ops(), rw.new_run_ops()
    steps = [rw.new_step_id() for _ in range(3)]
    other = rw.new_step_id()
    fault = fail_insert(conn, "workflow_events", target, "step_created", times=1, skip=1)
    # UPDATE faults filtered by the new status: the row write fails, so nothing is torn.
    fail_insert(conn, "workflow_steps", target, on="UPDATE", status="completed", times=None)
    fail_insert(conn, "workflow_runs", target, on="UPDATE", status="completed", times=None)
    results = world.ops(
        [
            *target_ops,
            *bystander_ops,
            rw.step_created(bystander, other),
            rw.step_started(bystander, other),
            rw.step_completed(bystander, other),
            rw.run_completed(bystander),
            *(rw.step_created(target, s) for s in steps),
            rw.step_completed(target, steps[0]),
            rw.run_completed(target),
        ]
    )
    assert fault.matches() == 3  # the bystander never matched
    assert all(r["ok"] for r in results[:8])  # the bystander is untouched
    assert [r["ok"] for r in results[8:11]] == [True, False, True]  # skip 1, fail 1, pass
    assert_fault(results[11], "workflow_steps")
    assert_fault(results[12], "workflow_runs")
    assert types(conn, bystander)[-2:] == ["step_completed", "run_completed"]
    assert [e[2] for e in events(conn, target) if e[1] == "step_created"] == [steps[0], steps[2]]
    assert conn.execute(
        "SELECT status FROM workflow.workflow_steps WHERE step_id = %s", (steps[0],)
    ).fetchone() == ("pending",)

    assert drop_faults(conn) == 7  # three triggers, three sequences, the shared function
    assert installed_faults(conn) == []
    world.ok([rw.step_completed(target, steps[0]), rw.run_completed(target)])
    assert types(conn, target)[-2:] == ["step_completed", "run_completed"]


def test_crash_inside_the_window(world: rw.RealWorld, conn: Any) -> None:
    """The production mechanism: the writer dies while its event INSERT is in flight."""
    run_id, ops = rw.new_run_ops()
    step_id = rw.new_step_id()
    slow_insert(conn, "workflow_events", run_id, "step_completed", seconds=60)
    ops += [
        rw.step_created(run_id, step_id),
        rw.step_started(run_id, step_id),
        rw.step_completed(run_id, step_id),
    ]
    proc = world.spawn(ops)
    try:
        pid = wait_for_sleeper(conn)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    # Without this the sleeping INSERT would commit after the sleep: no corruption.
    terminate(conn, pid)
    assert [r["ok"] for r in world.collect(proc)] == [True] * 4  # step_completed never answered
    drop_faults(conn)
    status = conn.execute(
        "SELECT status FROM workflow.workflow_steps WHERE step_id = %s", (step_id,)
    ).fetchone()
    assert status == ("completed",)
    assert types(conn, run_id, step_id) == ["step_created", "step_started"]
