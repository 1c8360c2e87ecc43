"""Repairs that must leave a log every replay consumes: a restored creation event goes before
an ended entity's events (not after its completion, WF143), and WF104 frees a finished run's
leftover rows. Produced through the real package's write path (tests/realworld.py)."""

from __future__ import annotations

from collections.abc import Callable

from tests import realworld as rw
from tests.checks.test_wf104 import hook_row_outlives_its_run
from tests.checks.test_wf143 import completed_wait_without_wait_created
from tests.faults import fail_insert
from tests.repair.conftest import FORCE, events, outcomes
from wfctl.world import ids


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


def _failed_by_late_start(world: rw.RealWorld, db, error_code: str, hook: bool = False) -> str:
    """A run written through the real package, a late step_started after its step's
    completion (by SQL: a clock-skewed peer's id, see test_revive_judge.py), then the
    run_failed the runtime writes when it cannot replay it (through the package)."""
    run_id, step_id = world.new_run(), rw.new_step_id()
    ops = [rw.step_created(run_id, step_id), rw.step_started(run_id, step_id)]
    ops += [rw.step_completed(run_id, step_id)]
    if hook:
        ops.append(rw.hook_created(run_id, rw.new_hook_id(), f"tok-{step_id[-8:]}"))
    world.ok(ops)
    with db.connect() as conn:
        conn.execute(
            "INSERT INTO workflow.workflow_events (id, type, correlation_id, run_id, spec_version)"
            " VALUES (%s, 'step_started', %s, %s, 5)",
            (ids.legacy_event_id(), step_id, run_id),
        )
    world.ok([rw.run_failed(run_id, error_code=error_code)])
    return run_id


def test_revival_only_for_exactly_a_replay_failure(world, real_world, apply, repair):
    user = _failed_by_late_start(world, real_world, "USER_ERROR")
    hooked = _failed_by_late_start(world, real_world, "CORRUPTED_EVENT_LOG", hook=True)
    good = _failed_by_late_start(world, real_world, "CORRUPTED_EVENT_LOG")
    # a dry run plans it and writes nothing
    _, plan = repair(real_world, "--all", "--only", "WF141", "--allow-revive", *FORCE)
    assert {i["run_id"]: i["outcome"] for i in plan["items"]}[good] == "planned"
    status, report = apply(real_world, "--all", "--only", "WF141", "--allow-revive")
    by_run = {i["run_id"]: i for i in report["items"]}
    assert status != 0  # two refusals
    assert by_run[user]["outcome"] == "refused" and "USER_ERROR" in by_run[user]["reason"]
    assert by_run[hooked]["outcome"] == "refused" and "hook" in by_run[hooked]["reason"]
    assert by_run[good]["outcome"] == "applied", by_run[good]
    with real_world.connect() as conn:
        rows = dict(
            conn.execute(
                "SELECT id, status::text FROM workflow.workflow_runs WHERE id = ANY(%s)",
                ([user, hooked, good],),
            ).fetchall()
        )
    assert rows == {user: "failed", hooked: "failed", good: "running"}
    assert any(w.startswith("job:") and w.endswith(":added") for w in by_run[good]["event_ids"])
    kinds = [e[1] for e in events(real_world, good)]
    assert "run_failed" not in kinds and kinds[-1] == "step_completed"
    assert kinds.count("step_started") == 2
    # nothing left to revive
    status, again = apply(real_world, "--all", "--only", "WF141", "--allow-revive", "--run", good)
    assert status == 0 and again["items"] == []


def _torn_step_then(
    world: rw.RealWorld, db, after: Callable[[str], list], before: Callable[[str], list]
) -> tuple[str, str, str]:
    """Through the real write path: a step (with `before(run_id)` ops beside it) whose
    step_completed event insert fails (row completed, no event; WF111), then
    `after(run_id)` ops and a next step's creation; returns (run, step, next step)."""
    run_id, step_id, next_id = world.new_run(), rw.new_step_id(), rw.new_step_id()
    world.ok([rw.step_created(run_id, step_id), *before(run_id), rw.step_started(run_id, step_id)])
    with (
        db.connect() as conn,
        fail_insert(conn, "workflow_events", run_id, "step_completed"),
    ):
        assert not world.ops([rw.step_completed(run_id, step_id)])[0]["ok"]
    world.ok([*after(run_id), rw.step_created(run_id, next_id)])
    return run_id, step_id, next_id


def test_completion_placed_before_the_step_created_after_it(world, real_world, apply):
    run_id, step_id, next_id = _torn_step_then(world, real_world, lambda run: [], lambda run: [])
    status, report = apply(real_world, "--only", "WF111")
    assert status == 0 and outcomes(report) == {"WF111": ["applied"]}, report
    order = [(e[1], e[2]) for e in events(real_world, run_id)]
    assert order.index(("step_completed", step_id)) < order.index(("step_created", next_id))


def test_completion_refused_when_another_outcome_sorts_between(world, real_world, apply):
    """The step raced against a sleep (both requested together); the wait completed after the
    lost completion and the next step was created then: the code may have created it because
    of the wait, not the step. Refused, nothing written."""
    wait_id = rw.new_wait_id()
    when = rw.utcnow()

    def sleep(run: str) -> list:
        return [rw.wait_created(run, wait_id, when)]

    def sleep_done(run: str) -> list:
        return [rw.wait_completed(run, wait_id, when)]

    run_id, _, _ = _torn_step_then(world, real_world, sleep_done, sleep)
    before = events(real_world, run_id)
    status, report = apply(real_world, "--only", "WF111")
    [item] = report["items"]
    assert status != 0 and item["outcome"] == "refused", report
    assert "other outcome" in item["reason"] and "step_created" in item["reason"]
    assert events(real_world, run_id) == before
